"""Calibration of the default bundle (``acme-2023``) to the published AcmeTrace statistics.

The raw trace is not available, only what was published about it (``datasets/data/reference/``). The
calibration has two steps, both deterministic given the seed:

1. :func:`published_jobs` builds, per cluster, a *pseudo-trace*: a jobs table in the package's
   contract whose marginals are fitted to the published numbers —

   * **counts**: GPU and CPU job counts of ``cluster_summary.csv`` (times ``scale``);
   * **type mix**: job-count shares of ``workload_mix.csv``;
   * **GPU counts** per type: the box-plot quartiles and whiskers of ``gpu_count_box_by_type.csv``
     (log-linear quantile function, rounded to powers of two) plus the outlier markers of
     ``gpu_count_outliers_by_type.csv`` at their published frequencies, then mapped by rank onto the
     published cluster-wide GPU-count CDF (``gpu_count_cdf_by_jobs.csv``), so that the overall
     distribution is the published one and each type keeps its place in the order of sizes;
   * **durations** per type: stratified draws from the inverse of the published CDF
     (``duration_cdf_by_type.csv``, log-linear between points). Kalos curves include the queue
     (``duration = end − submit``): there the run time is the published total minus a queue draw
     truncated at the total, so queue + run reproduces the published curve exactly;
   * **GPU time by type**: within each type the rank correlation ρ between GPU count and duration
     (Gaussian copula) is solved by bisection so that the type's GPU time is its published share
     (``workload_mix.csv``) of the published total GPU time (``cluster_summary.csv``); where no ρ in
     [−0.95, 0.95] reaches it (Seren MLLM, Kalos Eval) ρ stays at the bound and the report says so;
   * **GPU time by job size**: the types' duration scores are shifted by size class (a second and
     third copula parameter, each type's ρ re-solved so its duration curve and GPU time stay): the jobs
     of ≤ ``small_job_gpus`` GPUs shortened to their assumed share, and the jobs of ≥ ``large_job_gpus``
     lengthened by one shift common to the types with jobs on both sides, so that they hold the
     published share (Seren ≥ 768 GPUs ≈ 30 %, Kalos ≥ 256 GPUs > 96 %; :class:`Assumptions`). These
     targets count the infrastructure failures below (in expectation: a planned run ``d`` of a large
     job lasts ``E[min(d, T)]``), whose M_ref is then solved in expectation, alternately with the shifts
     (:func:`acmemodel.calibrate_pseudo.size_duration_pairing`);
   * **final states**: a multinomial logit in the standardised log GPU time z,
     ``P(FAILED) ∝ exp(a_f + b_f z)``, ``P(CANCELLED) ∝ exp(a_c + b_c z)``, ``P(COMPLETED) ∝ 1``,
     with (a_f, b_f, a_c, b_c) solved so that the state rates by count *and* by GPU time match
     ``cluster_summary.csv`` (failures come out early and small, cancellations long and large);
     in the passes after the second (below) the targets are moved by the fixed-point iteration;
   * **infrastructure failures** of large jobs (≥ 64 GPUs): a Weibull failure process with mean time
     to failure M(g) = M_ref (g/g_ref)^(−α), α = 1 (independent per-GPU failures; an assumption),
     g_ref the failure table's large-job GPU demand, and M_ref solved so that these failures carry
     the table's Infrastructure share (≈ 82 %) of the published failed GPU time. A job it hits before
     its planned end fails then; the state logit below is solved for the remaining jobs;
   * **queue**: by default (``Assumptions.queue_policy``) the waits of the cluster simulator running
     Acme's policy — the pretraining reservation, priorities by type with evaluation last,
     best-effort use of idle reserved GPUs — plus a start-up latency, both chosen by
     :mod:`acmemodel.calibrate_queue` on the pseudo-trace's own jobs to reproduce the published
     per-type queue shares and the median/mean wait (Kalos: the wait is independent of the job's run,
     as in the simulator, and the run-time law is the deconvolution of the published total law by
     that wait law, :func:`acmemodel.calibrate_queue.deconvolve_run`);
     the chosen policy, the latency laws and the search are in the report (``policy``,
     ``latency``, ``policy_search``).
     Without it: an atom at ≤ 1 s plus a lognormal solved to the published median and mean queue,
     Eval waiting ``eval_queue_factor`` times longer than the rest (an assumption);
   * **arrivals** and **restarts**: not published — documented assumptions in
     :class:`Assumptions` (working-hours profile, evaluation bursts, resubmission of failed training
     jobs), overridable.

2. :func:`calibrate` fits every model family of the package on that pseudo-trace with its ordinary
   ``fit`` and returns the :class:`~acmemodel.models.bundle.Bundle`. With the queue policy it does so
   in passes: (1) the workload models, on which (2) the policy is chosen for the synthetic workload,
   the pseudo-trace's waits rebuilt and every model refitted; then (3, 4) the **fixed-point iteration
   of the targets** (:class:`Assumptions` ``fixed_point_*``): the fitted bundle is drawn as
   :func:`acmemodel.reproduction.run.reproduce` draws it (Seren 6, Kalos 32 six-month traces), its GPU-job
   state rates by count and GPU time and its types' GPU-time shares are measured on the published
   basis, ``½ (published − synthetic)`` is added to the offsets of the pseudo-trace's targets (the
   state logit's and the copula's), and the pseudo-trace is rebuilt (same draws) and refitted. Fitting
   a pseudo-trace and drawing from the fit does not return its GPU time by state: a few long large-job
   runs hold it and the failure model, not the run-time cell, draws their failures
   (:mod:`acmemodel.joblife`), and through a few large jobs' states, so the iteration need not settle:
   every fitted candidate (offsets 0, then each step's) is measured and the one nearest the published
   values (:func:`acmemodel.calibrate_synthetic.fixed_point_score`) is the bundle. The report keeps every candidate's offsets,
   synthetic values and score and which was chosen (``calibration.<cluster>.fixed_point``); MLE on stratified draws of a
   published curve is the minimum-distance fit of the family to the curve. Two exceptions: the
   failure model is fitted on the jobs of ≥ 64 GPUs (its ``min_gpus`` parameter: only their
   failures carry size information in the pseudo-trace; synth draws failures from it for those
   jobs), and the restart model's gap is the failure table's published time-to-restart prior (its
   resubmission probability per cluster × type is fitted on the pseudo-trace's restart chains,
   which the pseudo-trace carries as explicit ``restart_of`` links in ``Trace.extras``). ``acmemodel calibrate``
   writes it; the shipped ``acme-2023`` bundle is exactly its output at the default settings
(``acmemodel calibrate -o acmemodel/datasets/data/acme-2023``). The output is a function of its inputs
only (:func:`calibration_inputs`: version, published tables, this code, scale, seed, assumptions, estimator
settings; their SHA-256 is in the provenance): equal inputs give a byte-identical bundle.

Where the two Seren sources disagree (figure curves: median ≈ 134 s, 6.4 GPUs/job; summary table:
122 s, 5.68) the run-time and GPU-count shapes target the figures and the counts and state rates
target the summary table; expect ~10 % disagreement with the other source.

The published inputs and samplers (inverse CDFs, GPU-count samplers, copula, state and queue
solvers, the infrastructure-failure reference) are in :mod:`acmemodel.calibrate_inputs`.
"""
from __future__ import annotations

from dataclasses import asdict

import numpy as np
import pandas as pd
from acmemodel.clusters import CLUSTER_TZ, published_duration_includes_queue, utc_offset_seconds
from acmemodel.calibrate_inputs import (
    Assumptions, Workers, _summary, _to_contract, TARGET_OFFSET_MAX, TYPE_SHARE,
)
from acmemodel.calibrate_pseudo import (
    assign_gpu_counts, cpu_jobs, draw_jobs, final_states, gpu_submissions, hurdle_queue, infrastructure_failures,
    restart_chains, simulated_waits, size_duration_pairing, type_counts, type_parts,
)
from acmemodel.datasets.published import load_reference
from acmemodel.features.keys import DEFAULT_GPU_EDGES
from acmemodel.models import DEFAULT_MODELS as _REGISTRY_DEFAULT
from acmemodel.calibrate_synthetic import (
    fixed_point_score, synthetic_queue_calibration, synthetic_state_calibration,
)

START = "2023-03-01"


def published_jobs(cluster: str, *, scale: float = 1.0, seed: int = 2023,
                   assumptions: Assumptions | None = None,
                   queue_calibration: dict | None = None,
                   target_offsets: dict[str, float] | None = None, workers=None) -> tuple[pd.DataFrame, dict]:
    """The calibrated pseudo-trace of one cluster (jobs contract columns) and a calibration report.

    ``scale`` multiplies the published job counts (1.0 = the real six-month volume).
    ``queue_calibration``: ``{"policy", "latency"}`` (see :mod:`acmemodel.calibrate_queue`) to use
    instead of choosing them (``Assumptions.queue_policy``); with either, the GPU jobs' waits are the
    simulator's on that policy plus latency draws.
    ``target_offsets``: {``fail``, ``cancel``, ``fail_gt``, ``cancel_gt``, ``gt_share:<type>``: fraction}
    added to the published state rates that the state logit targets and to the published GPU-time shares
    of the types that the copula's ρ targets (renormalised to sum to 1)
    (:func:`acmemodel.calibrate_inputs.fixed_point_offsets`, the calibration's fixed-point step; default
    none). The steps are those of :mod:`acmemodel.calibrate_pseudo`, in this order (one generator).
    ``workers`` (:class:`acmemodel.calibrate_inputs.Workers`): processes for the policy search's simulations
    (the same result with any number).
    """
    if cluster not in CLUSTER_TZ:
        raise ValueError(f"cluster must be one of {', '.join(CLUSTER_TZ)}; got {cluster!r}")
    if not 0 < scale <= 10:
        raise ValueError(f"scale must be in (0, 10], got {scale!r}")
    a = assumptions or Assumptions()
    rng = np.random.default_rng([seed, list(CLUSTER_TZ).index(cluster)])
    summ = _summary(cluster)
    mix = load_reference("workload_mix").query("cluster == @cluster")
    curves = load_reference("duration_cdf_by_type").query("cluster == @cluster")
    off = float(utc_offset_seconds(CLUSTER_TZ[cluster]))
    t0 = pd.Timestamp(START, tz="UTC").timestamp() - off
    n_gpu = max(int(round(summ["gpu_job_num"] * scale)), 50)
    n_cpu = int(round(summ["cpu_job_num"] * scale))
    includes_queue = published_duration_includes_queue(cluster)  # Kalos: end − submit
    report: dict = {"cluster": cluster, "scale": scale, "gpu_jobs": n_gpu, "cpu_jobs": n_cpu,
                    "assumptions": asdict(a), "types": {}}

    # --- type counts, GPU-time targets (moved by the fixed-point step's type shares), GPU counts
    types = mix["type"].to_numpy()
    counts = type_counts(mix["job_count_percent"].to_numpy(float), n_gpu)
    gt_share = dict(zip(types, mix["gpu_time_percent"].to_numpy(float) / 100.0))
    t_off = dict(target_offsets or {})
    if any(k.startswith(TYPE_SHARE) for k in t_off):
        raw = {t: max(v + float(t_off.get(f"{TYPE_SHARE}{t}", 0.0)), 1e-4) for t, v in gt_share.items()}
        report["type_targets"] = {"published": dict(gt_share), "targets": {t: v / sum(raw.values()) for t, v in raw.items()}}
        gt_share = report["type_targets"]["targets"]
    parts = type_parts(cluster, types, counts, curves, scale, rng)
    assign_gpu_counts(cluster, parts, types, rng)

    # --- the GPU-count x duration joint (rho per type for its GPU time, the size classes' shifts) and the
    #     infrastructure failures of large jobs; then the other jobs' final states
    total_gt = float(summ["complete_gpu_time"] + summ["cancel_gpu_time"] + summ["fail_gpu_time"]) * scale
    joint, rho, small, large, m_ref = size_duration_pairing(parts, types, gt_share, total_gt, a, cluster, summ, report)
    jobs = draw_jobs(joint, types, rho, small, large, report, rng)
    hit, dur, gtime = infrastructure_failures(jobs, a, cluster, summ, report, rng, m_ref=m_ref)
    final_states(jobs, hit, dur, gtime, summ, t_off, report, rng)

    # --- waits (hurdle draw), submissions and users, restart chains, simulated waits
    queue, run = hurdle_queue(jobs, a, cluster, summ, includes_queue, report, rng)
    sub, user = gpu_submissions(jobs, a, cluster, t0, off, rng)
    n = len(jobs)
    gpu = pd.DataFrame({"type": jobs["type"], "gpu_num": jobs["gpu_num"], "state": jobs["state"],
                        "user": user, "submit_s": sub, "queue_s": queue, "run_s": run,
                        "uid": np.arange(n, dtype=np.int64), "prev_uid": -1, "attempt": 1})
    gpu = restart_chains(gpu, a, report, rng)
    gpu = simulated_waits(gpu, cluster, seed=seed, includes_queue=includes_queue,
                          queue_calibration=queue_calibration, a=a, report=report, workers=workers)

    # --- CPU jobs; everything in the trace contract
    cpu = cpu_jobs(cluster, n_cpu, a, summ, t0, off, int(gpu["uid"].max()) + 1, rng)
    out = _to_contract(pd.concat([gpu, cpu], ignore_index=True), cluster, rng)
    # the restart links travel in the report, not in DataFrame.attrs (pandas compares attrs with == when
    # it combines frames, which an array cannot answer)
    report["restart_of"] = out.attrs.pop("restart_of", np.full(len(out), "", dtype=object))
    return out, report

# ------------------------------------------------------------------------------ the bundle
#: models of the default bundle (the per-job predictor needs real user histories: not calibrated)
DEFAULT_MODELS: tuple[str, ...] = tuple(m for m in _REGISTRY_DEFAULT if m != "predictor")
DEFAULT_SCALE = 1.0
DEFAULT_SEED = 2023
#: late-regime covariates of the default bundle's failure model: the late (size-scaled) hazard gets a
#: cluster level, so each cluster's large jobs fail at their own rate (the early, defective share already
#: has cluster and type levels: failures per cluster × type, as the generative model of
#: :mod:`acmemodel.joblife` asks). Pooled over clusters, Kalos's large jobs inherited Seren's late
#: failures: in synthetic Kalos workloads failures then held 19 % of GPU time against 8 % in its
#: pseudo-trace (12 % with the cluster level; 20 draws of the pseudo-trace's large jobs). A type level
#: as well is not identified: types without late failures leave the MTTF at 1,024 GPUs an interval
#: spanning 10^9×
FAILURE_LATE_COVARIATES = ("cluster",)


def published_trace(*, scale: float = DEFAULT_SCALE, seed: int = DEFAULT_SEED,
                    assumptions: Assumptions | None = None, queue_calibration: dict | None = None,
                    target_offsets: dict | None = None, workers=None):
    """The calibrated pseudo-trace of both clusters as a :class:`~acmemodel.trace.Trace` + reports
    (``queue_calibration``: {cluster: {"policy", "latency"}} to impose instead of choosing them;
    ``target_offsets``: {cluster: offsets of the state rates and type shares}, :func:`published_jobs`)."""
    from acmemodel.trace import Trace

    frames, reports, links = [], {}, []
    qc = {cl: (queue_calibration or {}).get(cl) for cl in CLUSTER_TZ}
    a = assumptions or Assumptions()
    if workers is not None and workers.n > 1 and not (a.queue_policy and any(v is None for v in qc.values())):
        # no policy search inside (the policies are given, or none is searched): one worker per cluster
        done = workers.map(published_jobs, [(cl,) for cl in CLUSTER_TZ], kwargs=[
            dict(scale=scale, seed=seed, assumptions=assumptions, queue_calibration=qc[cl],
                 target_offsets=(target_offsets or {}).get(cl)) for cl in CLUSTER_TZ])
    else:  # the policy searches' simulations use the workers
        done = [published_jobs(cl, scale=scale, seed=seed, assumptions=assumptions, queue_calibration=qc[cl],
                               target_offsets=(target_offsets or {}).get(cl), workers=workers) for cl in CLUSTER_TZ]
    for cluster, (j, rep) in zip(CLUSTER_TZ, done):
        links.append(rep.pop("restart_of"))
        frames.append(j)
        reports[cluster] = rep
    jobs = pd.concat(frames, ignore_index=True)
    # the pseudo-trace's restart chain, as an imported trace's explicit links (features.chains)
    extras = pd.DataFrame({"restart_of": np.concatenate(links)}, index=jobs.index)
    return Trace(jobs=jobs, rejected=pd.DataFrame(), timezones=dict(CLUSTER_TZ), extras=extras), reports


#: the calibration's own code: part of its inputs (:func:`calibration_inputs`)
CALIBRATION_SOURCES = ("calibrate.py", "calibrate_inputs.py", "calibrate_pseudo.py", "calibrate_queue.py",
                       "calibrate_synthetic.py")


def estimator_settings(assumptions: Assumptions | None = None, models=DEFAULT_MODELS) -> dict[str, dict]:
    """Constructor settings of the models the calibration fits where they differ from the defaults
    (``fit_bundle``'s ``params``), recorded in the bundle's provenance as ``estimators`` and reused by
    ``acmemodel fit --like BUNDLE``. The failure model is fitted on large jobs only (``min_gpus``): in
    the pseudo-trace only their failures carry size information (the infrastructure process); small
    jobs' failures follow the published duration curves, which are not conditioned on size; its late
    hazard has a cluster level (:data:`FAILURE_LATE_COVARIATES`). The restart model is the published
    time-to-restart prior of the failure table (restart gaps were not published in trace form)."""
    a = assumptions or Assumptions()
    models = list(models)
    params = {"restart": {"method": "prior"}} if "restart" in models else {}
    if "failure" in models:  # the failure model's domain is its own parameter (refits keep it)
        params["failure"] = {"min_gpus": float(a.infra_min_gpus), "late_covariates": list(FAILURE_LATE_COVARIATES)}
    if "runtime" in models:
        rt = {}
        if a.large_job_gpus:
            edges = large_class_edges(a.large_job_gpus)
            if edges != tuple(DEFAULT_GPU_EDGES):
                rt["gpu_edges"] = list(edges)
        if a.runtime_pooling != "heldout":
            rt["pooling"] = a.runtime_pooling
        if rt:
            params["runtime"] = rt
    return params


def large_class_edges(large_job_gpus) -> tuple:
    """The runtime model's GPU-bucket edges with a size class of jobs of >= ``g`` GPUs per cluster
    (:attr:`Assumptions.large_job_gpus`): the default edges plus ``g − 1`` where ``g`` does not already start
    a bucket (``g − 1`` an edge) or close one (``g`` an edge: the class is that bucket's top and the buckets
    above). The pseudo-trace gives those jobs the long runs; one cell pooling them with smaller jobs (Seren's
    257–1,024-GPU bucket: 512 with 768 and 1,024) draws every size from the same law and gives the long runs
    back to the small jobs (Seren's >= 768-GPU jobs 31–35 % of GPU time in the pseudo-trace, about 17 % in
    a synth of its fit). Seren 768: (1, 8, 64, 256, 767, 1024)."""
    edges = set(int(e) for e in DEFAULT_GPU_EDGES)
    for g in large_job_gpus.values():
        g = int(g)
        if g not in edges and g - 1 not in edges:
            edges.add(g - 1)
    return tuple(sorted(edges))


def calibration_inputs(*, scale: float = DEFAULT_SCALE, seed: int = DEFAULT_SEED,
                       assumptions: Assumptions | None = None, models=DEFAULT_MODELS) -> dict:
    """Everything the calibration's output is a function of, and its digest: package version, SHA-256 of
    the published tables and of the calibration's own modules (:data:`CALIBRATION_SOURCES`), scale, seed,
    assumptions, models and estimator settings. ``{"inputs": {...}, "sha256": hex}``; the bundle's
    provenance records both (``calibration_inputs``, ``calibration_inputs_sha256``), so a test can check
    that a shipped bundle was made by the current calibration without re-running it."""
    import hashlib
    import json
    from importlib import resources

    from acmemodel._version import __version__
    from acmemodel.datasets.published import REFERENCE_TABLES, _data_path

    hashes = {}
    for name in (*REFERENCE_TABLES, "failure_table"):
        rel = f"reference/{name}.csv" if name != "failure_table" else "failure_table.csv"
        with _data_path(rel).open("rb") as f:
            hashes[rel] = hashlib.sha256(f.read()).hexdigest()
    code = {fn: hashlib.sha256(resources.files("acmemodel").joinpath(fn).read_bytes()).hexdigest()
            for fn in CALIBRATION_SOURCES}
    a = assumptions or Assumptions()
    inputs = {"package_version": __version__, "reference_sha256": hashes, "code_sha256": code,
              "scale": float(scale), "seed": int(seed), "assumptions": asdict(a), "models": list(models),
              "estimators": estimator_settings(a, models)}
    text = json.dumps(inputs, sort_keys=True, default=str, separators=(",", ":"))
    return {"inputs": inputs, "sha256": hashlib.sha256(text.encode()).hexdigest()}


def calibration_stages(assumptions: Assumptions | None = None, models=DEFAULT_MODELS) -> list[str]:
    """The stages :func:`calibrate` reports to ``progress`` (in order)."""
    a = assumptions or Assumptions()
    two_pass = a.queue_policy and a.policy_on_synthetic and {"arrival", "runtime"} <= set(models)
    out = ["pseudo-trace", "fitting the first pass" if two_pass else "fitting"]
    if two_pass:
        out.append("queue policy search")
        steps = a.fixed_point_iterations if any(v > 0 for v in a.fixed_point_traces.values()) else 0
        for it in range(steps + 1):
            out += [f"candidate {it}: pseudo-trace and fit"] + ([f"candidate {it}: synthetic traces"] if steps else [])
    return out


def calibrate(*, scale: float = DEFAULT_SCALE, seed: int = DEFAULT_SEED, assumptions: Assumptions | None = None,
              models=DEFAULT_MODELS, log=None, progress=None, workers: int | None = None):
    """Fit the default bundle to the published statistics (module docstring); returns the Bundle.

    ``scale`` is the fraction of the real job volume materialised for fitting (1.0 for the shipped
    default): the arrival model's intensities are those of that volume, so a smaller scale (used by
    the tests for speed) gives proportionally lower arrival rates and nothing else.
    ``progress(done, total, description)`` is called at each of :func:`calibration_stages` and at the
    end; ``log(message)`` gets the details (search lines, fixed-point scores).

    Deterministic: equal inputs (:func:`calibration_inputs`) give a byte-identical saved bundle — the
    provenance holds no fit times and the bundle no creation time (``created_utc`` null) — whatever the
    number of ``workers`` (processes for the policy searches' simulations and the fixed point's synthetic
    traces, each with its own seed, merged in a fixed order; default
    :func:`acmemodel.calibrate_inputs.default_workers`, 1: all in this process).
    """
    with Workers(workers) as pool:
        return _calibrate(scale=scale, seed=seed, assumptions=assumptions, models=models, log=log,
                          progress=progress, workers=pool)


def _calibrate(*, scale, seed, assumptions, models, log, progress, workers):
    """:func:`calibrate` with its worker pool."""
    from acmemodel.pipeline import fit_bundle

    a = assumptions or Assumptions()
    models = list(models)
    stages = calibration_stages(a, models)
    stage = [0]

    def step(description=None):
        if progress is not None:
            progress(stage[0], len(stages), description or (stages[stage[0]] if stage[0] < len(stages) else "done"))
        stage[0] += 1

    step()
    trace, reports = published_trace(scale=scale, seed=seed, assumptions=assumptions, workers=workers)
    digest = calibration_inputs(scale=scale, seed=seed, assumptions=a, models=models)
    params = estimator_settings(a, models)
    from acmemodel.features.names import jobs_with_extras

    def fit(trace, reports, models=models):
        provenance = {
            "source": "calibration to published AcmeTrace statistics (acmemodel.calibrate)",
            "package_version": digest["inputs"]["package_version"],
            "reference_sha256": digest["inputs"]["reference_sha256"],
            "scale": scale, "seed": seed,
            "assumptions": asdict(a),
            "estimators": {m: dict(p) for m, p in params.items() if m in models},
            "calibration_inputs_sha256": digest["sha256"],
            "calibration_inputs": {k: v for k, v in digest["inputs"].items()
                                   if k not in ("reference_sha256", "assumptions", "estimators")},
            "calibration": reports,
            "model_notes": {
                "failure": f"fitted on GPU jobs with >= {a.infra_min_gpus} GPUs of the pseudo-trace",
                "restart": "published prior (failure table, time to restart per reason)",
            },
        }
        b = fit_bundle(jobs_with_extras(trace), trace.timezones, models=models, provenance=provenance,
                       name="acme-2023", params={m: p for m, p in params.items() if m in models}, subsets={},
                       log=log, processes=workers.n)
        b.provenance.pop("fit_seconds", None)  # wall times: not a function of the inputs
        b.created_utc = None
        # measured (the fixed point's synthetic traces) and returned as saved: what reproduce and synth load, the
        # same whatever number of processes fitted it
        return b.as_saved()

    two_pass = a.queue_policy and a.policy_on_synthetic and {"arrival", "runtime"} <= set(models)
    # the first pass only needs what synth draws a workload from
    step()
    bundle = fit(trace, reports, [m for m in models if m in ("arrival", "runtime", "restart", "failure")]
                 if two_pass else models)
    if two_pass:
        step()
        qc = synthetic_queue_calibration(bundle, reports, days=a.days, seed=seed, log=log, workers=workers)
        offsets, history, best = None, [], None
        steps = a.fixed_point_iterations if any(v > 0 for v in a.fixed_point_traces.values()) else 0
        for it in range(steps + 1):
            step()
            trace, reports = published_trace(scale=scale, seed=seed, assumptions=assumptions, queue_calibration=qc,
                                             target_offsets=offsets, workers=workers)
            for cl, q in qc.items():
                reports[cl]["policy_score_terms"] = q["terms"]
                reports[cl]["policy_workload"] = (f"synthetic workload of the first-pass bundle ({a.days:g} days, "
                                                  f"seed {seed + 1}); first pass (pseudo-trace): {q.get('first_pass')}")
            bundle = fit(trace, reports)
            if steps == 0:
                break
            step()
            # the targets' fixed-point iteration (Assumptions.fixed_point_*): every fitted candidate is measured
            # as reproduce draws it and the one nearest the published values is kept (the synthetic shares
            # respond to the targets through a few large jobs' states, so the iteration need not settle)
            states = synthetic_state_calibration(bundle, days=a.days, seed=seed + 1000 * it, traces=a.fixed_point_traces,
                                                 step=a.fixed_point_step, log=log, workers=workers)
            score = fixed_point_score(states)
            history.append({cl: {"offsets": dict((offsets or {}).get(cl, {})), "synthetic": st["synthetic"],
                                 "score": score} for cl, st in states.items()})
            if log is not None:
                log(f"fixed point, candidate {it}: score {score:.2f}")
            if best is None or score < best[0]:
                best = (score, it, bundle)
            offsets = {cl: {k: float(np.clip((offsets or {}).get(cl, {}).get(k, 0.0) + v, -TARGET_OFFSET_MAX,
                                             TARGET_OFFSET_MAX))
                            for k, v in st["offsets"].items()} for cl, st in states.items()}
        if best is not None:
            bundle = best[2]
            for cl in CLUSTER_TZ:
                bundle.provenance["calibration"][cl]["fixed_point"] = {
                    "chosen": best[1], "candidates": [h[cl] for h in history]}
    stage[0] = len(stages)
    step("done")
    return bundle
