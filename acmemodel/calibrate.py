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
from scipy import optimize, special, stats

from acmemodel.clusters import CLUSTER_TZ, published_duration_includes_queue, utc_offset_seconds
from acmemodel.calibrate_inputs import (
    Assumptions, _arrivals, _copula_base, _copula_second, _gpu_sampler, _inverse_cdf, _published_gpu_quantile,
    STATE_RATE_COLUMNS, _queue_params, _ranks, _solve_states, _stratified, _summary, _to_contract,
    infra_reference, TARGET_OFFSET_MAX, TYPE_SHARE,
)
from acmemodel.datasets.published import load_failure_table, load_reference
from acmemodel.models.failure_types import lognormal_from_median_mean
from acmemodel.models import DEFAULT_MODELS as _REGISTRY_DEFAULT
from acmemodel.calibrate_synthetic import (
    fixed_point_score, synthetic_queue_calibration, synthetic_state_calibration,
)

START = "2023-03-01"


def published_jobs(cluster: str, *, scale: float = 1.0, seed: int = 2023,
                   assumptions: Assumptions | None = None,
                   queue_calibration: dict | None = None,
                   target_offsets: dict[str, float] | None = None) -> tuple[pd.DataFrame, dict]:
    """The calibrated pseudo-trace of one cluster (jobs contract columns) and a calibration report.

    ``scale`` multiplies the published job counts (1.0 = the real six-month volume).
    ``queue_calibration``: ``{"policy", "latency"}`` (see :mod:`acmemodel.calibrate_queue`) to use
    instead of choosing them (``Assumptions.queue_policy``); with either, the GPU jobs' waits are the
    simulator's on that policy plus latency draws.
    ``target_offsets``: {``fail``, ``cancel``, ``fail_gt``, ``cancel_gt``, ``gt_share:<type>``: fraction}
    added to the published state rates that the state logit targets and to the published GPU-time shares
    of the types that the copula's ρ targets (renormalised to sum to 1)
    (:func:`acmemodel.calibrate_inputs.fixed_point_offsets`, the calibration's fixed-point step; default
    none).
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

    # --- type counts (largest remainder) and per-type GPU counts and durations
    share = mix["job_count_percent"].to_numpy(float)
    share = share / share.sum()
    counts = np.floor(share * n_gpu).astype(int)
    counts[np.argsort(-(share * n_gpu - counts))[: n_gpu - counts.sum()]] += 1
    types = mix["type"].to_numpy()
    gt_share = dict(zip(types, mix["gpu_time_percent"].to_numpy(float) / 100.0))
    t_off = dict(target_offsets or {})
    if any(k.startswith(TYPE_SHARE) for k in t_off):  # the fixed-point step's type shares (renormalised)
        raw = {t: max(v + float(t_off.get(f"{TYPE_SHARE}{t}", 0.0)), 1e-4) for t, v in gt_share.items()}
        gt_share = {t: v / sum(raw.values()) for t, v in raw.items()}
        report["type_targets"] = {"published": dict(zip(types, mix["gpu_time_percent"].to_numpy(float) / 100.0)),
                                  "targets": gt_share}
    parts = {}
    for t, k in zip(types, counts):
        parts[t] = dict(n=int(k), qdur=_inverse_cdf(curves[curves["type"] == t]),
                        gpus=_gpu_sampler(cluster, t, int(round(k / scale))), seed=rng.integers(2**32))

    # GPU counts: per type from the box plots, then mapped by rank onto the published overall
    # GPU-count CDF (gpu_count_cdf_by_jobs), so the cluster-wide distribution is the published one
    # while each type keeps its place in the ordering of sizes; each type's counts are then fixed
    # and only their pairing with durations varies with rho
    box_g = {t: parts[t]["gpus"](_stratified(rng, parts[t]["n"]), rng) for t in types}
    pooled = np.concatenate([box_g[t] for t in types]).astype(float)
    order = np.lexsort((rng.uniform(0, 1, len(pooled)), pooled))
    mapped = np.empty(len(pooled))
    mapped[order] = _published_gpu_quantile(cluster, (np.arange(len(pooled)) + 0.5) / len(pooled))
    start = 0
    for t in types:
        k = parts[t]["n"]
        parts[t]["g_sorted"] = np.sort(mapped[start:start + k]).astype(np.int64)
        start += k

    small_max = a.small_job_gpus.get(cluster)

    base = {}  # per type: its copula draws that do not depend on rho and its GPU counts in copula order

    def draw(t, rho, delta=0.0):
        p = parts[t]
        if t not in base:  # (the same generator state for every rho: drawn once)
            b = _copula_base(np.random.default_rng(p["seed"]), p["n"])
            base[t] = b, p["g_sorted"][_ranks(stats.norm.cdf(b[0]))]
        b, g = base[t]
        ud = _copula_second(b, rho)
        if delta and small_max is not None:  # small jobs' duration scores shifted down by delta
            zd = stats.norm.ppf(ud) - delta * (g <= small_max)
            ud = (_ranks(zd) + 1.0) / (len(zd) + 1.0)
        return g, p["qdur"](ud)

    sums = {}  # (type, rho, delta) -> (GPU time, small jobs' GPU time) of draw(): the solvers evaluate the
    #            ends of their brackets before brentq evaluates them again

    def gt_sums(t, rho, delta):
        key = (t, float(rho), float(delta))
        if key not in sums:
            g, d = draw(t, rho, delta)
            gd = g * d
            sums[key] = (float(gd.sum()), float(gd[g <= small_max].sum()) if small_max is not None else 0.0)
        return sums[key]

    def solve_rho(t, target, delta=0.0):
        def f(r):
            return gt_sums(t, r, delta)[0] - target

        lo, hi = f(-0.95), f(0.95)
        if lo >= 0:
            return -0.95
        if hi <= 0:
            return 0.95
        return float(optimize.brentq(f, -0.95, 0.95, xtol=1e-3))

    # --- GPU-time calibration: each type's rank correlation rho solved by bisection so that its GPU
    #     time is its published share of the published total GPU time (cluster_summary, x scale)
    total_gt = float(summ["complete_gpu_time"] + summ["cancel_gpu_time"] + summ["fail_gpu_time"]) * scale
    rho = {t: solve_rho(t, gt_share[t] * total_gt) for t in types}
    delta = {t: 0.0 for t in types}
    # --- GPU time by job size (Assumptions.small_job_gpus / small_job_gt_share): where the jobs of
    #     <= small_max GPUs hold more than the assumed share, each type with small and larger jobs gets a
    #     shift delta of its small jobs' duration scores (a second copula parameter) and rho is re-solved,
    #     so its total stays and its small jobs' GPU time is scaled by one common factor
    if small_max is not None:
        def small_gt(t, r, dl):
            return gt_sums(t, r, dl)[1]

        cap = float(a.small_job_gt_share[cluster]) * total_gt
        now = {t: small_gt(t, rho[t], 0.0) for t in types}
        mixed = [t for t in types if 0 < (parts[t]["g_sorted"] <= small_max).mean() < 1]
        fixed_small = sum(v for t, v in now.items() if t not in mixed)
        adj = sum(now[t] for t in mixed)
        if sum(now.values()) > cap and adj > 0:
            factor = max((cap - fixed_small) / adj, 0.05)
            for t in mixed:
                goal = factor * now[t]
                for _ in range(5):  # alternate: delta for the small jobs' GPU time, rho for the total
                    def fs(dl, t=t, goal=goal):
                        return small_gt(t, rho[t], dl) - goal
                    delta[t] = 4.0 if fs(4.0) > 0 else (0.0 if fs(0.0) <= 0 else
                                                         float(optimize.brentq(fs, 0.0, 4.0, xtol=1e-3)))
                    rho[t] = solve_rho(t, gt_share[t] * total_gt, delta[t])
            report["small_jobs"] = {"max_gpus": small_max, "share_before": sum(now.values()) / total_gt,
                                    "share_target": float(a.small_job_gt_share[cluster]),
                                    "share_after": sum(small_gt(t, rho[t], delta[t]) for t in types) / total_gt,
                                    "factor": factor}
    frames = []
    for t in types:
        g, d = draw(t, rho[t], delta[t])
        frames.append(pd.DataFrame({"type": t, "gpu_num": g, "dur": d}))
        report["types"][t] = {"jobs": parts[t]["n"], "rho_gpus_duration": rho[t], "small_job_shift": delta[t]}
    jobs = pd.concat(frames, ignore_index=True)
    jobs = jobs.sample(frac=1.0, random_state=int(rng.integers(2**31))).reset_index(drop=True)
    n = len(jobs)

    dur = jobs["dur"].to_numpy(float)
    g_arr = jobs["gpu_num"].to_numpy(float)

    # --- infrastructure failures of large jobs (first): a Weibull process per job with mean time to
    #     failure M(g) = M_ref (g / g_ref)^(-alpha); a job it hits before its planned end fails there.
    #     M_ref is solved so that these failures carry the failure table's Infrastructure share of the
    #     published failed GPU time (or taken from the assumptions when given)
    ft = load_failure_table()
    infra_share = float(ft.loc[ft["category"] == "Infrastructure", "failed_gpu_time_share_percent"].sum() / 100)
    _, g_ref = infra_reference(a)
    big = g_arr >= a.infra_min_gpus
    unit = (np.maximum(g_arr, 1.0) / g_ref) ** (-a.infra_alpha) * rng.weibull(a.infra_shape, n) \
        / special.gamma(1.0 + 1.0 / a.infra_shape)

    def infra(m_ref):
        t_inf = m_ref * unit
        hit = big & (t_inf < dur)
        d = np.where(hit, t_inf, dur)
        gt = g_arr * np.maximum(d, 1.0)
        return hit, d, gt

    target_infra = infra_share * summ["fail_rate_gpu_time"]
    if a.infra_mttf_ref_s is not None:
        m_ref = float(a.infra_mttf_ref_s)
    else:
        def f(log_m):
            hit, _, gt = infra(np.exp(log_m))
            return gt[hit].sum() / gt.sum() - target_infra
        # the share rises then falls with M_ref (tiny M: every big job dies at once, cheaply; huge M:
        # no failures); take the root on the falling branch (the rarer-failure solution)
        grid = np.linspace(np.log(60.0), np.log(1e9), 40)
        vals = np.array([f(x) for x in grid])
        top = int(np.argmax(vals))
        if vals[top] <= 0:
            m_ref = float(np.exp(grid[top]))
            report.setdefault("notes", []).append(
                "infrastructure failures cannot reach the target share of failed GPU time; "
                "M_ref set where the share is largest")
        else:
            m_ref = float(np.exp(optimize.brentq(f, grid[top], grid[-1], xtol=1e-4)))
    hit, dur, gtime = infra(m_ref)
    n_hit, g_hit, g_tot = int(hit.sum()), float(gtime[hit].sum()), float(gtime.sum())
    report["infrastructure"] = {"mttf_ref_s": m_ref, "g_ref": g_ref, "alpha": a.infra_alpha,
                                "shape": a.infra_shape, "failures": n_hit,
                                "failed_gpu_time_share_target": target_infra}

    # --- final states of the other jobs: logit in standardised log GPU time, solved so that the whole
    #     table matches the published state rates by count and by GPU time
    rest = ~hit
    lz = np.log(gtime)
    z = (lz - lz[rest].mean()) / lz[rest].std()
    rate = {k: float(summ[col]) + float(t_off.get(k, 0.0)) for k, col in STATE_RATE_COLUMNS.items()}
    targets = {"fail": (rate["fail"] * n - n_hit) / (n - n_hit),
               "cancel": rate["cancel"] * n / (n - n_hit),
               "fail_gt": (rate["fail_gt"] * g_tot - g_hit) / (g_tot - g_hit),
               "cancel_gt": rate["cancel_gt"] * g_tot / (g_tot - g_hit)}
    if t_off:
        report["state_targets"] = {"published": {k: float(summ[c]) for k, c in STATE_RATE_COLUMNS.items()},
                                   "offsets": {k: float(t_off.get(k, 0.0)) for k in STATE_RATE_COLUMNS},
                                   "targets": rate}
    th = _solve_states(z[rest], gtime[rest], gtime[rest], targets)
    ef = np.exp(np.clip(th[0] + th[1] * z, -50, 50))
    ec = np.exp(np.clip(th[2] + th[3] * z, -50, 50))
    pf, pc = ef / (1 + ef + ec), ec / (1 + ef + ec)
    u = rng.uniform(0, 1, n)
    state = np.where(u < pf, "FAILED", np.where(u < pf + pc, "CANCELLED", "COMPLETED")).astype(object)
    v = rng.uniform(0, 1, n)
    state[(state == "FAILED") & (v < 0.01)] = "TIMEOUT"
    state[(state == "FAILED") & (v > 0.995)] = "NODE_FAIL"
    state[hit] = np.where(rng.uniform(0, 1, n_hit) < 0.15, "NODE_FAIL", "FAILED")
    jobs["state"] = state
    jobs["dur"] = dur
    report["state_logit"] = dict(zip(("a_fail", "b_fail", "a_cancel", "b_cancel"), map(float, th)))

    # --- queue: hurdle (atom ≤ 1 s + lognormal) matched to the published median and mean
    factor = np.where(jobs["type"].to_numpy() == "Eval", a.eval_queue_factor, 1.0)
    atom = a.queue_atom.get(cluster, 0.3)
    mu_q, sg_q = _queue_params(atom, summ["med_que_time_gpu"], summ["avg_que_time_gpu"], factor, rng)
    is_atom = rng.uniform(0, 1, n) < atom
    queue = np.where(is_atom, rng.integers(0, 2, n), np.exp(mu_q + sg_q * rng.standard_normal(n)) * factor)
    dur = jobs["dur"].to_numpy(float)
    if includes_queue:
        # published total = queue + run: long waits go with long totals (Gaussian-copula rank coupling,
        # rho = queue_total_rho), and a wait never exceeds the total
        zq = stats.rankdata(dur) / (n + 1)
        zq = a.queue_total_rho * stats.norm.ppf(zq) + np.sqrt(1 - a.queue_total_rho ** 2) * rng.standard_normal(n)
        queue = np.sort(queue)[stats.rankdata(zq, method="ordinal").astype(int) - 1]
        queue = np.minimum(queue, dur)
        run = dur - queue
    else:
        run = dur
    report["queue_lognormal"] = {"atom": atom, "mu": mu_q, "sigma": sg_q}

    # --- arrivals (Eval in bursts) and users
    sub = np.empty(n)
    is_eval = (jobs["type"] == "Eval").to_numpy()
    sub[is_eval], _ = _arrivals(rng, int(is_eval.sum()), a, a.eval_batch_mean.get(cluster, 1.0), t0, off)
    sub[~is_eval], _ = _arrivals(rng, int((~is_eval).sum()), a, 1.0, t0, off)
    uw = 1.0 / np.arange(1, a.users + 1) ** 1.1
    users = np.array([f"u{cluster[0].lower()}{i:04d}" for i in range(a.users)], dtype=object)
    user = rng.choice(users, size=n, p=uw / uw.sum())
    # a burst belongs to one user: propagate the first job's user along close eval submissions
    order = np.argsort(sub, kind="stable")
    ev_sorted = order[is_eval[order]]
    gaps = np.diff(sub[ev_sorted])
    new_burst = np.r_[True, gaps > 30 * a.burst_gap_s]
    head = ev_sorted[np.maximum.accumulate(np.where(new_burst, np.arange(len(ev_sorted)), 0))]
    user[ev_sorted] = user[head]

    gpu = pd.DataFrame({"type": jobs["type"], "gpu_num": jobs["gpu_num"], "state": jobs["state"],
                        "user": user, "submit_s": sub, "queue_s": queue, "run_s": run,
                        "uid": np.arange(n, dtype=np.int64), "prev_uid": -1, "attempt": 1})
    next_uid = n
    # --- restarts of failed training jobs (same user, type and GPUs), up to three attempts
    extra, cur = [], gpu[gpu["state"].isin(["FAILED", "TIMEOUT", "NODE_FAIL"])
                        & ((gpu["type"] == "Pretrain")
                           | (gpu["type"].isin(["SFT", "MLLM"]) & (gpu["gpu_num"] >= 32)))]
    for _ in range(3):
        cur = cur[rng.uniform(0, 1, len(cur)) < a.restart_prob]
        if cur.empty:
            break
        nxt = cur.copy()
        # the chain is recorded (prev_uid, attempt) and written as the trace's chain columns
        nxt["prev_uid"] = cur["uid"].to_numpy()
        nxt["attempt"] = cur["attempt"].to_numpy() + 1
        nxt["uid"] = next_uid + np.arange(len(nxt), dtype=np.int64)
        next_uid += len(nxt)
        gap = np.exp(np.log(a.restart_gap_median_s) + a.restart_gap_sigma * rng.standard_normal(len(cur)))
        nxt["submit_s"] = (cur["submit_s"] + cur["queue_s"] + cur["run_s"] + gap).to_numpy()
        donors = gpu.loc[gpu["type"].isin(nxt["type"].unique())]
        # the next attempt's run and state: a job of the same type drawn from the calibrated table
        idx = np.concatenate([rng.choice(np.flatnonzero((donors["type"] == t).to_numpy()), size=int(m))
                              for t, m in nxt["type"].value_counts().sort_index().items()])
        ordered = nxt.sort_values("type", kind="stable")
        ordered["run_s"] = donors["run_s"].to_numpy()[idx]
        ordered["state"] = donors["state"].to_numpy()[idx]
        ordered["queue_s"] = donors["queue_s"].to_numpy()[idx]
        extra.append(ordered)
        cur = ordered[ordered["state"].isin(["FAILED", "TIMEOUT", "NODE_FAIL"])]
    if extra:
        added = pd.concat(extra, ignore_index=True)
        # restarts are part of the published job counts: remove as many jobs of the same type that are
        # not part of a chain (drawn at random), so the type mix stays as published
        in_chain = set(np.concatenate([e.index.to_numpy() for e in extra]).tolist())
        drop = []
        for t, m in added["type"].value_counts().items():
            pool = gpu.index[(gpu["type"] == t).to_numpy() & ~gpu.index.isin(list(in_chain))
                             & ~gpu["state"].isin(["FAILED", "TIMEOUT", "NODE_FAIL"]).to_numpy()]
            drop.append(rng.choice(pool, size=min(int(m), len(pool)), replace=False))
        gpu = pd.concat([gpu.drop(index=np.concatenate(drop)), added], ignore_index=True)
        report["restart_attempts"] = int(len(added))

    # --- waits from the cluster simulator on the calibrated policy + start-up latency
    if queue_calibration is None and a.queue_policy:
        from acmemodel.calibrate_queue import calibrate_queue_jobs

        # on the pseudo-trace itself: reservation sizes and best effort (the evaluation quotas are searched by
        # calibrate() on the fitted bundle's synthetic workload)
        queue_calibration = calibrate_queue_jobs(gpu.reset_index(drop=True), cluster, seed=seed, lanes=())
    if queue_calibration is not None:
        from acmemodel.calibrate_queue import simulate_pseudo_waits

        g2 = gpu.reset_index(drop=True)
        if includes_queue:  # the published total is what the simulated wait is taken from
            g2 = g2.assign(run_s=g2["queue_s"] + g2["run_s"])
        g2 = simulate_pseudo_waits(g2, cluster, queue_calibration["policy"], queue_calibration["latency"],
                                   seed=seed, includes_queue=includes_queue)
        gpu = gpu.reset_index(drop=True)
        gpu["submit_s"] = g2["submit_s"].to_numpy(float)  # pretraining chains placed in the reservation
        gpu["queue_s"] = g2["queue_s"].to_numpy(float)
        gpu["run_s"] = g2["run_s"].to_numpy(float)
        report["policy"] = queue_calibration["policy"]
        report["latency"] = queue_calibration["latency"]
        report["policy_search"] = queue_calibration.get("search")
        report.pop("queue_lognormal", None)

    # --- CPU jobs: lognormal run time from the published median/mean, published state rates
    mu_c, sg_c = lognormal_from_median_mean(summ["med_run_time_cpu"], summ["avg_run_time_cpu"], 0.0)
    pcs = np.array([summ["complete_rate_cpu"], summ["cancel_rate_cpu"], summ["fail_rate_cpu"]], float)
    cpu = pd.DataFrame({
        # CPU-job types were not published: data processing and debugging (an assumption)
        "type": rng.choice(np.array(["Other", "Debug"], dtype=object), size=n_cpu, p=[0.85, 0.15]),
        "gpu_num": np.zeros(n_cpu, np.int64),
        "state": rng.choice(np.array(["COMPLETED", "CANCELLED", "FAILED"], dtype=object), size=n_cpu,
                            p=pcs / pcs.sum()),
        "user": rng.choice(users, size=n_cpu, p=uw / uw.sum()),
        "submit_s": _arrivals(rng, n_cpu, a, 1.0, t0, off)[0],
        "queue_s": np.where(rng.uniform(0, 1, n_cpu) < 0.6, 0.0,
                            np.exp(np.log(max(summ["med_que_time_cpu"], 1.0)) + 1.5 * rng.standard_normal(n_cpu))),
        "run_s": np.exp(mu_c + sg_c * rng.standard_normal(n_cpu)),
        "uid": next_uid + np.arange(n_cpu, dtype=np.int64), "prev_uid": -1, "attempt": 1,
    })
    df = pd.concat([gpu, cpu], ignore_index=True)
    out = _to_contract(df, cluster, rng)
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
                    target_offsets: dict | None = None):
    """The calibrated pseudo-trace of both clusters as a :class:`~acmemodel.trace.Trace` + reports
    (``queue_calibration``: {cluster: {"policy", "latency"}} to impose instead of choosing them;
    ``target_offsets``: {cluster: offsets of the state rates and type shares}, :func:`published_jobs`)."""
    from acmemodel.trace import Trace

    frames, reports, links = [], {}, []
    for cluster in CLUSTER_TZ:
        j, rep = published_jobs(cluster, scale=scale, seed=seed, assumptions=assumptions,
                                queue_calibration=(queue_calibration or {}).get(cluster),
                                target_offsets=(target_offsets or {}).get(cluster))
        links.append(rep.pop("restart_of"))
        frames.append(j)
        reports[cluster] = rep
    jobs = pd.concat(frames, ignore_index=True)
    # the pseudo-trace's restart chain, as an imported trace's explicit links (features.chains)
    extras = pd.DataFrame({"restart_of": np.concatenate(links)}, index=jobs.index)
    return Trace(jobs=jobs, rejected=pd.DataFrame(), timezones=dict(CLUSTER_TZ), extras=extras), reports


#: the calibration's own code: part of its inputs (:func:`calibration_inputs`)
CALIBRATION_SOURCES = ("calibrate.py", "calibrate_inputs.py", "calibrate_queue.py")


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
    return params


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
              models=DEFAULT_MODELS, log=None, progress=None):
    """Fit the default bundle to the published statistics (module docstring); returns the Bundle.

    ``scale`` is the fraction of the real job volume materialised for fitting (1.0 for the shipped
    default): the arrival model's intensities are those of that volume, so a smaller scale (used by
    the tests for speed) gives proportionally lower arrival rates and nothing else.
    ``progress(done, total, description)`` is called at each of :func:`calibration_stages` and at the
    end; ``log(message)`` gets the details (search lines, fixed-point scores).

    Deterministic: equal inputs (:func:`calibration_inputs`) give a byte-identical saved bundle — the
    provenance holds no fit times and the bundle no creation time (``created_utc`` null).
    """
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
    trace, reports = published_trace(scale=scale, seed=seed, assumptions=assumptions)
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
                       log=log)
        b.provenance.pop("fit_seconds", None)  # wall times: not a function of the inputs
        b.created_utc = None
        return b

    two_pass = a.queue_policy and a.policy_on_synthetic and {"arrival", "runtime"} <= set(models)
    # the first pass only needs what synth draws a workload from
    step()
    bundle = fit(trace, reports, [m for m in models if m in ("arrival", "runtime", "restart", "failure")]
                 if two_pass else models)
    if two_pass:
        step()
        qc = synthetic_queue_calibration(bundle, reports, days=a.days, seed=seed, log=log)
        offsets, history, best = None, [], None
        steps = a.fixed_point_iterations if any(v > 0 for v in a.fixed_point_traces.values()) else 0
        for it in range(steps + 1):
            step()
            trace, reports = published_trace(scale=scale, seed=seed, assumptions=assumptions, queue_calibration=qc,
                                             target_offsets=offsets)
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
                                                 step=a.fixed_point_step, log=log)
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
