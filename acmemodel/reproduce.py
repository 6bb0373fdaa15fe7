"""``acmemodel reproduce``: does a bundle reproduce the published AcmeTrace statistics?

:func:`reproduce` synthesises a Seren-scale and a Kalos-scale six-month trace from a bundle and
compares it, side by side, with what was published about the real trace
(``acmemodel/datasets/data/reference/``, see its README):

1. **Synthesis** — :func:`acmemodel.synth.simulate_jobs` (arrivals, GPU counts, state and run time,
   restart chains) over :data:`DAYS` days from 2023-03-01 local time, with the arrival intensities
   multiplied by ``scale / bundle scale`` (``scale`` = fraction of the real job volume; a calibrated
   bundle records the volume it was fitted at in ``provenance["scale"]``, any other bundle counts as
   fitted at full volume). Failed jobs are resubmitted as ``simulate_jobs`` does (with the bundle's
   ``RestartModel.resubmit_probability`` per cluster × type).
2. **Queueing** — the waits are the cluster simulator's
   (:func:`acmemodel.planner.cluster_sim.simulate_cluster`: gang scheduling on 8-GPU nodes, FIFO with
   EASY backfill per partition) on the cluster's published size (``clusters.csv``: Seren 2,288 GPUs,
   Kalos 2,416). Partition layout (:data:`PARTITIONS`): the paper attributes the long evaluation
   queues to GPUs *reserved for pretraining*, so most GPUs form a reserved ``pretrain`` partition
   (Seren 1,536 = 67 %: room for one 1,024-GPU run next to smaller ones at the ~61 % load that
   Seren's 69.5 % Pretrain share of GPU time puts on it; Kalos 2,048 = 85 %, where Pretrain holds
   95 % of the GPU time) and the rest is ``shared`` by every other type. A non-pretraining job
   larger than the shared partition (Seren/Kalos Debug runs of up to 1,024 GPUs) runs in the
   pretraining partition, as it could only have on the real cluster. CPU jobs get no
   wait (the simulator schedules GPUs only).

   **Acme's policy** (:func:`queue_policy`): a calibrated bundle records, per cluster, the policy its
   calibration chose (``provenance["calibration"][cluster]["policy"]``: the reservation size, the
   priorities by type — evaluation below the rest — and whether best-effort jobs fill idle reserved
   GPUs, preemptibly); the simulator runs it, and every GPU job gets a **start-up latency** drawn
   from the bundle's queue model (:meth:`~acmemodel.models.queue.QueueModel.sample_latency`, per
   cluster × type), added once to its contention wait. A bundle without a recorded policy uses
   :data:`PARTITIONS`, FIFO, no best effort and no latency. The cluster size is not scaled, so below ``scale`` ≈ 1
   the cluster is under-loaded and the waits are too short: queue comparisons are meaningful at full
   scale only.
3. **Description** — :func:`acmemodel.describe.describe` of the synthetic trace, in the package's
   trace contract. Published Kalos ``duration`` and ``gpu_time`` include the queue (``end −
   submit``; reference README), so for Kalos every published duration-based number — the duration
   CDFs, median/mean run time, GPU-time shares by type and by state — is compared with the synthetic
   ``queue + run`` (``"basis": "queue+run"``); Seren with the run time (``end − start``).

Comparisons (percent values are percentage points of 100):

* ``shares`` — job-count and GPU-time share per type (``workload_mix.csv``), ``diff_pp``;
* ``states`` — final-state rates (COMPLETED / CANCELLED / FAILED, TIMEOUT and NODE_FAIL counted as
  FAILED) by job count and by GPU time (``cluster_summary.csv``), ``diff_pp``;
* ``summary`` — median and mean run time and queue (s), mean GPUs per job, GPU-job count
  (published × scale), with the relative difference; the issue sets no bar for these;
* ``queue_by_type`` — per type the share of GPU jobs with wait ≤ 1, 10, 100, 1,000 s (and the other
  published points of ``queue_wait_by_type.csv``: paper Fig. 6 b/d read off the plot), the median
  and the mean wait, next to the published values (bar 5 pp); ``queue_checks`` — Eval has the lowest
  ≤ 1 s share and the largest mean wait; the cluster median/mean wait within 50 % of
  ``cluster_summary.csv``;
* ``gpu_time_by_size`` — the published facts on GPU time by job size (single-GPU jobs < 2 % of GPU
  time, jobs of > 8 GPUs < 7 % of jobs, Kalos jobs of ≥ 256 GPUs > 96 % of GPU time), as bounds;
* ``curves`` — the Kolmogorov–Smirnov distance between the synthetic sample and each published CDF:
  ``duration_cdf_by_type`` (cluster × type), ``gpu_job_duration_cdf_by_cluster`` and
  ``gpu_count_cdf_by_jobs``. A published CDF is known only at its points x_i (powers of two for the
  durations; the plotted vertices of the stepwise GPU-count curve), so the KS distance is
  ``max_i |F_sample(x_i) − F_pub(x_i)|`` with ``F_sample(x)`` the fraction of the sample ≤ x — a
  lower bound of the sup distance between the curves. ``ks_crit95 = 1.358 / sqrt(n)`` is the
  distance a sample of n jobs *drawn from the published curve itself* exceeds with probability 5 %
  (asymptotic, continuous case): a KS above the bar but below it is sampling noise.

Quality bar (issue 7, :data:`QUALITY_BAR`): KS ≤ 0.05 and shares within 2 percentage points; each
row carries ``within_bar`` and an ``explanation`` (else None) where a known reason applies
(:func:`_explanations`): the Seren figures vs ``cluster_summary.csv`` (~10 %, reference README); a type
whose GPU-time share the calibration could not reach (its calibration report has the GPU-count/duration
rank correlation at the ±0.95 bound); and, labelled "model limitation", the Kalos waits and durations
(published durations include a wait the simulator does not produce) and an overloaded synthetic cluster
(synthetic GPU time above the cluster's capacity: unbounded queues).
"""
from __future__ import annotations

import math
import time
import warnings
from pathlib import Path
from typing import Mapping

import numpy as np
import pandas as pd

from acmemodel.clusters import CLUSTER_TZ, cluster_gpus

__all__ = ["reproduce", "synthesize_cluster", "to_trace", "ks_at_points", "curve_points", "queue_policy",
           "queue_by_type", "gpu_time_by_size", "DAYS", "PARTITIONS", "QUALITY_BAR", "CLUSTERS", "WAIT_POINTS"]

#: length of the synthetic traces (days from 2023-03-01 local time; the trace covers Mar–Aug 2023)
DAYS = 184.0
#: clusters reproduced
CLUSTERS: tuple[str, ...] = ("Seren", "Kalos")
#: reserved partitions per cluster (GPUs); ``shared`` gets the rest (module docstring)
PARTITIONS: dict[str, dict[str, int]] = {"Seren": {"pretrain": 1536}, "Kalos": {"pretrain": 2048}}
#: the issue's quality bar: KS distance and share difference in percentage points; queue fractions in pp and
#: medians/means as a relative difference
QUALITY_BAR = {"ks": 0.05, "share_pp": 2.0, "queue_pp": 5.0, "queue_rel": 0.5}
#: wait thresholds (s) of the per-type queue table
WAIT_POINTS: tuple[float, ...] = (1.0, 10.0, 100.0, 1000.0)
#: 95 % asymptotic Kolmogorov critical value coefficient (ks_crit95 = KS95 / sqrt(n))
KS95 = 1.3581

_STATES = ("COMPLETED", "CANCELLED", "FAILED")
_STATE_COLS = {"COMPLETED": "complete", "CANCELLED": "cancel", "FAILED": "fail"}

SEREN_SOURCES_NOTE = (
    "the Seren figure curves (per-type duration CDFs, GPU-count CDF, workload mix) and cluster_summary.csv were "
    "drawn from slightly different extracts of the trace (figures: median duration ~134 s, ~6.4 GPUs/job; "
    "summary: 122 s, 5.68): the calibration targets the figures for shapes and the summary for counts and "
    "state rates, so ~10% disagreement with the other source is the floor (reference/README.md)")
KALOS_QUEUE_NOTE = (
    "model limitation, not a source contradiction: a 17 s median wait on a lightly loaded cluster is most likely "
    "scheduling/start-up latency (Kubernetes pod creation), which a contention simulator does not model; below "
    "full scale the waits are also too short because the cluster size is not scaled")

KALOS_DURATION_NOTE = (
    "model limitation, not a source contradiction: the published Kalos durations include the wait (end - submit; "
    "median wait 17 s). The calibration fitted the run time as published total minus a wait coupled to it; here "
    "the wait is the simulator's (about 0 on a lightly loaded cluster) or, with --queue model, an independent "
    "draw, so queue + run does not rebuild the published total")


# ----------------------------------------------------------------------------------------- KS
def ks_at_points(sample, x, cdf) -> tuple[float, float]:
    """KS distance between a sample and a CDF known at points: ``max_i |F_n(x_i) − cdf_i|``.

    ``x`` are the published abscissae, ``cdf`` the published CDF there (fractions in [0, 1]);
    ``F_n(x)`` is the fraction of ``sample`` ≤ x. Returns ``(ks, x at the maximum)``; NaN for an
    empty sample.
    """
    s = np.sort(np.asarray(sample, dtype=float))
    x = np.asarray(x, dtype=float)
    cdf = np.asarray(cdf, dtype=float)
    if len(s) == 0 or len(x) == 0:
        return float("nan"), float("nan")
    f = np.searchsorted(s, x, side="right") / len(s)
    d = np.abs(f - cdf)
    i = int(np.argmax(d))
    return float(d[i]), float(x[i])


def curve_points() -> list[dict]:
    """Every published CDF of the two clusters: ``name, kind, cluster, type, x, cdf`` (fractions)."""
    from acmemodel.datasets.reference import load_reference

    out = []
    dur = load_reference("duration_cdf_by_type")
    for (cl, ty), g in dur[dur["cluster"].isin(CLUSTERS)].groupby(["cluster", "type"], sort=False):
        out.append({"name": f"duration/{cl}/{ty}", "kind": "duration_cdf_by_type", "cluster": cl, "type": ty,
                    "x": g["x_s"].to_numpy(float), "cdf": g["cdf_percent"].to_numpy(float) / 100})
    tot = load_reference("gpu_job_duration_cdf_by_cluster")
    for cl, g in tot[tot["cluster"].isin(CLUSTERS)].groupby("cluster", sort=False):
        out.append({"name": f"duration/{cl}", "kind": "gpu_job_duration_cdf_by_cluster", "cluster": cl,
                    "type": None, "x": g["x_s"].to_numpy(float), "cdf": g["cdf_percent"].to_numpy(float) / 100})
    gc = load_reference("gpu_count_cdf_by_jobs")
    for cl, g in gc[gc["cluster"].isin(CLUSTERS)].groupby("cluster", sort=False):
        out.append({"name": f"gpu_count/{cl}", "kind": "gpu_count_cdf_by_jobs", "cluster": cl, "type": None,
                    "x": g["x_gpus"].to_numpy(float), "cdf": g["cdf_percent"].to_numpy(float) / 100})
    return out


# ----------------------------------------------------------------------------------------- synthesis
def _bundle_scale(bundle) -> float:
    s = (bundle.provenance or {}).get("scale")
    try:
        s = float(s)
    except (TypeError, ValueError):
        return 1.0
    return s if s > 0 and math.isfinite(s) else 1.0


def _restart_prob(bundle, cluster: str) -> float | None:
    """The resubmission probability of failed Pretrain jobs (``RestartModel.resubmit_probability``,
    what :func:`simulate_jobs` uses), or None without a restart model."""
    rm = bundle.get("restart") if hasattr(bundle, "get") else None
    if rm is None or not hasattr(rm, "resubmit_probability"):
        return None
    return float(rm.resubmit_probability(cluster=cluster, type="Pretrain"))


def _partition_layout(cluster: str, total: int, partitions: Mapping[str, int] | None) -> dict[str, int]:
    parts = dict(PARTITIONS.get(cluster, {}) if partitions is None else partitions)
    parts = {k: int(v) for k, v in parts.items()}
    if "shared" not in parts:
        parts["shared"] = total - sum(parts.values())
    if parts["shared"] < 0:
        raise ValueError(f"partitions={partitions} use more than the {total} GPUs of {cluster}")
    return parts


def _home_partitions(df: pd.DataFrame, parts: dict[str, int]) -> np.ndarray:
    """Pretrain → ``pretrain``; every other type → ``shared``, unless larger than it (module docstring)."""
    gpus = df["gpu_num"].to_numpy()
    if "pretrain" not in parts:
        return np.full(len(df), "shared", dtype=object)
    home = np.where(df["type"].astype(str).to_numpy() == "Pretrain", "pretrain", "shared").astype(object)
    home[gpus > parts["shared"]] = "pretrain"
    return home


def queue_policy(bundle, cluster: str, partitions: Mapping[str, int] | None = None) -> dict:
    """The queueing policy simulated for ``cluster`` (module docstring): ``{"partitions": {name: GPUs},
    "priorities": {type: int}, "best_effort": bool, "best_effort_types": [type] or None (None: every
    type not at home in the reservation), "latency": bool, "source": str}``. ``partitions``
    overrides the reservation."""
    total = cluster_gpus(cluster)
    cal = ((getattr(bundle, "provenance", None) or {}).get("calibration") or {}).get(cluster) or {}
    pol = cal.get("policy")
    if pol:
        parts = {"pretrain": int(pol["reservation_gpus"])} if partitions is None else dict(partitions)
        out = {"priorities": {str(k): int(v) for k, v in (pol.get("priorities") or {}).items()},
               "best_effort": bool(pol.get("best_effort", False)), "latency": bool(pol.get("latency", True)),
               "best_effort_types": (None if pol.get("best_effort_types") is None
                                     else [str(t) for t in pol["best_effort_types"]]),
               "source": "bundle calibration"}
    else:
        parts = None if partitions is None else dict(partitions)
        out = {"priorities": {}, "best_effort": False, "latency": False, "best_effort_types": None,
               "source": "default (no calibrated policy)"}
    out["partitions"] = _partition_layout(cluster, total, parts)
    return out


def _queue_filler(cluster: str, total: int, parts: dict[str, int], info: dict, *, mode: str = "simulator",
                  queue_model=None, seed: int = 0, policy: dict | None = None):
    """``fill_queue`` callable for :func:`simulate_jobs`.

    ``mode="simulator"``: the cluster simulator's waits (module docstring). ``mode="model"``: waits
    drawn from the bundle's queue model per cluster × type × GPU count, independent of the load (a
    diagnostic: what the comparisons look like with the calibrated wait distribution). CPU jobs wait 0;
    a job the simulator drops (no run time) or cannot fit gets NaN (never starts).
    """
    from acmemodel.errors import DataWarning
    from acmemodel.planner.cluster_sim import simulate_cluster

    def fill(df: pd.DataFrame) -> np.ndarray:
        t = time.perf_counter()
        gpus = df["gpu_num"].to_numpy()
        home = _home_partitions(df, parts)
        run = df["run_s"].to_numpy(float)
        span = max(float(df["submit_s"].max() - df["submit_s"].min()), 1.0) if len(df) else 1.0
        gt = np.where(np.isfinite(run), gpus * np.nan_to_num(run), 0.0)
        info["offered_load"] = {p: float(gt[home == p].sum() / (g * span)) if g else None for p, g in parts.items()}
        if mode == "model":
            from acmemodel.features.keys import type_bucket_groups

            rng = np.random.default_rng([int(seed), 17])
            wait = np.zeros(len(df))
            g = np.flatnonzero(gpus > 0)
            for ty, _b, idx in type_bucket_groups(df["type"].to_numpy()[g], gpus[g]):
                rows = g[idx]
                wait[rows] = queue_model.sample(len(rows), rng, cluster=cluster, type=ty, gpus=int(gpus[rows[0]]))
            wait[~np.isfinite(run)] = np.nan
            info.update({"queue": "model", "seconds": round(time.perf_counter() - t, 3)})
            return wait
        d = df[["submit_s", "run_s", "gpu_num", "type"]].copy()
        d["partition"] = home
        pol = policy or {}
        if pol.get("latency") and queue_model is not None:
            d["latency_s"] = sample_latency(queue_model, cluster, d["type"].astype(str).to_numpy(),
                                            np.random.default_rng([int(seed), 29]))
        reserved = "pretrain" if "pretrain" in parts else None
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DataWarning)
            res = simulate_cluster(d, total_gpus=total, partitions=parts, reserved_partition=reserved,
                                   priorities=pol.get("priorities") or None,
                                   best_effort_on_reserved=bool(pol.get("best_effort")) and reserved is not None,
                                   best_effort_types=pol.get("best_effort_types"))
        wait = np.full(len(df), np.nan)
        pos = df.index.get_indexer(res.jobs.index)
        wait[pos] = res.jobs["wait_s"].to_numpy(float)
        wait[gpus == 0] = 0.0
        rj = res.jobs
        info.update({"queue": "simulator", "seconds": round(time.perf_counter() - t, 3),
                     "simulated_jobs": int(len(rj)), "unschedulable": int(len(res.unschedulable)),
                     "preempted_jobs": int((rj["preemptions"] > 0).sum()),
                     "preemptions": int(rj["preemptions"].sum()),
                     "lost_gpu_h": float((rj["lost_s"] * rj["gpu_num"]).sum() / 3600.0),
                     "mean_latency_s": float(rj["latency_s"].mean()) if len(rj) else None,
                     "mean_contention_s": float(rj["contention_s"].mean()) if len(rj) else None,
                     "utilization": {p: float(u) for p, u in res.utilization["utilization"].items()}})
        return wait

    return fill


def sample_latency(queue_model, cluster: str, types: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One start-up latency (s) per job of ``types`` from the queue model's latency part (zeros if none)."""
    out = np.zeros(len(types))
    if getattr(queue_model, "latency_", None) is None:
        return out
    for ty in np.unique(types):
        m = np.flatnonzero(types == ty)
        out[m] = queue_model.sample_latency(len(m), rng, cluster=cluster, type=str(ty))
    return np.round(out)


def synthesize_cluster(bundle, cluster: str, *, scale: float = 1.0, seed: int = 0, days: float = DAYS,
                       partitions: Mapping[str, int] | None = None, queue: str = "simulator"
                       ) -> tuple[pd.DataFrame, dict]:
    """One cluster's synthetic trace (``simulate_jobs`` columns) with queue times (``queue``:
    ``"simulator"`` or ``"model"``, see :func:`_queue_filler`), plus info (arrival scale, partitions,
    offered load and utilisation per partition, timing)."""
    from acmemodel.synth import simulate_jobs

    if not (scale > 0 and math.isfinite(scale)):
        raise ValueError(f"scale must be a positive number, got {scale!r}")
    total = cluster_gpus(cluster)
    policy = queue_policy(bundle, cluster, partitions)
    parts = policy["partitions"]
    if queue not in ("simulator", "model"):
        raise ValueError(f"queue must be 'simulator' or 'model', got {queue!r}")
    qm = bundle.get("queue") if hasattr(bundle, "get") else None
    if queue == "model" and qm is None:
        raise ValueError("queue='model' needs a bundle with a 'queue' model")
    sim: dict = {}
    arrival_scale = scale / _bundle_scale(bundle)
    t = time.perf_counter()
    jobs = simulate_jobs(bundle, days=days, cluster=cluster, seed=seed, scale=arrival_scale,
                         fill_queue=_queue_filler(cluster, total, parts, sim, mode=queue, queue_model=qm, seed=seed,
                                                  policy=policy))
    info = {"total_gpus": total, "partitions": parts, "arrival_scale": arrival_scale, "days": days,
            "policy": {k: v for k, v in policy.items() if k != "partitions"},
            "restart_prob": _restart_prob(bundle, cluster), "queue": sim,
            "seconds": round(time.perf_counter() - t, 3)}
    return jobs, info


def to_trace(jobs: pd.DataFrame, timezones: Mapping[str, str] | None = None):
    """:func:`simulate_jobs` output (one or more clusters) as a :class:`~acmemodel.trace.Trace` in the
    package's trace contract (run and queue from the timestamps; a job that never started has
    ``run_s`` NaN and a censored wait ``end − submit``)."""
    from acmemodel.trace import Trace, jobs_from_times

    n = len(jobs)
    cluster = jobs["cluster"].astype(str).to_numpy(object)
    out = jobs_from_times(
        cluster=cluster,
        job_id=np.char.add(np.char.add(cluster.astype(str), "-"), np.arange(n).astype(str)).astype(object),
        user=jobs["user"].astype(str).to_numpy(object), type=jobs["type"].astype(str).to_numpy(object),
        state=jobs["state"].astype(str).to_numpy(object), gpu_num=jobs["gpu_num"].to_numpy(np.int64),
        node_num=jobs["node_num"].to_numpy(np.int64) if "node_num" in jobs else None,
        submit_s=jobs["submit_s"].to_numpy(float), start_s=jobs["start_s"].to_numpy(float),
        end_s=jobs["end_s"].to_numpy(float), source_file="<acmemodel reproduce>")
    tz = dict(timezones or {c: CLUSTER_TZ.get(c, "+00:00") for c in pd.unique(cluster)})
    return Trace(jobs=out, rejected=pd.DataFrame(columns=["reason"]), timezones=tz)


def _published_semantics(trace, cluster: str = "Kalos"):
    """The ``cluster`` rows as the published Kalos files count them: ``run_s`` and ``gpu_time_s`` from
    ``end − submit``."""
    from acmemodel.trace import Trace

    j = trace.jobs[trace.jobs["cluster"] == cluster].copy()
    total = j["end_s"] - j["submit_s"]
    j["run_s"] = np.where(j["started"], total, np.nan)
    j["gpu_time_s"] = np.where(j["started"], j["gpu_num"] * total, 0.0)
    return Trace(jobs=j, rejected=trace.rejected, timezones=trace.timezones)


def _duration(jobs: pd.DataFrame, includes_queue: bool) -> np.ndarray:
    """The published ``duration`` column of each GPU job: ``end − submit`` (Kalos) or ``end − start``
    (Seren; 0 for a job that never started, as the synthetic files write it)."""
    if includes_queue:
        return (jobs["end_s"] - jobs["submit_s"]).to_numpy(float)
    return np.nan_to_num(jobs["run_s"].to_numpy(float), nan=0.0)


# ----------------------------------------------------------------------------------------- comparison
def _pp(x) -> float | None:
    return None if x is None or not math.isfinite(float(x)) else 100.0 * float(x)


def _diff(a, b) -> float | None:
    return None if a is None or b is None else b - a


def _explanations(bundle, cluster: str) -> dict:
    """Known contradictions / unreachable targets of the published sources, keyed by comparison."""
    cal = ((bundle.provenance or {}).get("calibration") or {}).get(cluster) or {}
    out: dict = {}
    for ty, rep in (cal.get("types") or {}).items():
        rho = rep.get("rho_gpus_duration")
        if rho is not None and abs(float(rho)) >= 0.95 - 1e-9 and ty != "Pretrain":
            out[("gpu_time_share", ty)] = (
                f"calibration limit: with the published {cluster} {ty} GPU-count box plot and duration CDF the "
                f"calibration could not reach the published share of its GPU-time total (GPU-count/duration rank "
                f"correlation stopped at its bound, {float(rho):+.2f}); the total is anchored on Pretrain, see the "
                f"bundle's calibration report")
    if cluster == "Seren":
        out["summary"] = SEREN_SOURCES_NOTE
    if cluster == "Kalos" and not (cal.get("policy") or {}).get("latency"):
        out["queue"] = KALOS_QUEUE_NOTE
        out["kalos_duration"] = KALOS_DURATION_NOTE
    return out


def queue_by_type(cluster: str, jobs: pd.DataFrame) -> tuple[list[dict], list[dict]]:
    """Per-type queue rows and the ordering/cluster checks (module docstring) of one cluster's synthetic
    jobs (``simulate_jobs`` columns; GPU jobs that started)."""
    from acmemodel.datasets import load_reference

    bar_pp, bar_rel = QUALITY_BAR["queue_pp"], QUALITY_BAR["queue_rel"]
    pub = load_reference("queue_wait_by_type").query("cluster == @cluster")
    summ = load_reference("cluster_summary").set_index("id").loc[cluster]
    g = jobs[(jobs["gpu_num"] > 0) & np.isfinite(jobs["start_s"].to_numpy(float))]
    w_all = g["queue_s"].to_numpy(float)
    types = g["type"].astype(str).to_numpy()
    rows = []
    order = [t for t in load_reference("workload_mix").query("cluster == @cluster")["type"]]
    for ty in order:
        w = w_all[types == ty]
        pts = sorted(set(WAIT_POINTS) | set(pub.loc[pub["type"] == ty, "x_s"].astype(float)))
        for x in pts:
            p = pub[(pub["type"] == ty) & (pub["x_s"].astype(float) == x)]
            pv = float(p["cdf_percent"].iloc[0]) if len(p) else None
            rep = 100.0 * float(np.mean(w <= x)) if len(w) else None
            d = _diff(pv, rep)
            rows.append({"type": ty, "statistic": f"<= {x:g} s (%)", "x_s": x, "published": pv, "reproduced": rep,
                         "diff": d, "within_bar": None if d is None else abs(d) <= bar_pp, "n": int(len(w))})
        for stat, f in (("median_s", np.median), ("mean_s", np.mean)):
            rows.append({"type": ty, "statistic": stat, "x_s": None, "published": None,
                         "reproduced": float(f(w)) if len(w) else None, "diff": None, "within_bar": None,
                         "n": int(len(w))})
    checks = []
    by = {ty: w_all[types == ty] for ty in order if np.any(types == ty)}
    if "Eval" in by and len(by) > 1:
        f1 = {ty: float(np.mean(w <= 1.0)) for ty, w in by.items()}
        mean = {ty: float(np.mean(w)) for ty, w in by.items()}
        checks.append({"check": "Eval has the lowest <= 1 s share",
                       "value": f"Eval {100 * f1['Eval']:.1f}% vs min other "
                                f"{100 * min(v for k, v in f1.items() if k != 'Eval'):.1f}%",
                       "passed": bool(f1["Eval"] <= min(f1.values()))})
        checks.append({"check": "Eval has the largest mean wait",
                       "value": f"Eval {mean['Eval']:,.0f} s vs max other "
                                f"{max(v for k, v in mean.items() if k != 'Eval'):,.0f} s",
                       "passed": bool(mean["Eval"] >= max(mean.values()))})
    for name, col, f in (("median wait", "med_que_time_gpu", np.median), ("mean wait", "avg_que_time_gpu", np.mean)):
        pv, rep = float(summ[col]), float(f(w_all)) if len(w_all) else float("nan")
        rel = abs(rep - pv) / pv if pv else None
        checks.append({"check": f"cluster {name} within {100 * bar_rel:.0f}% of {pv:g} s",
                       "value": f"{rep:,.1f} s", "passed": bool(rel is not None and rel <= bar_rel)})
    return rows, checks


def gpu_time_by_size(cluster: str, jobs: pd.DataFrame, *, includes_queue: bool) -> list[dict]:
    """The published facts on GPU time by job size as bounds (module docstring); GPU time on the
    published basis (Kalos ``end − submit``)."""
    g = jobs[jobs["gpu_num"] > 0]
    gpus = g["gpu_num"].to_numpy(float)
    gt = gpus * _duration(g, includes_queue)
    tot = gt.sum()
    rows = []

    def add(fact, value, bound, upper):
        ok = value < bound if upper else value > bound
        rows.append({"fact": fact, "published": f"{'<' if upper else '>'} {bound:g}%", "reproduced": value,
                     "within_bar": bool(ok)})

    add("GPU time of 1-GPU jobs (%)", 100 * gt[gpus == 1].sum() / tot, 2.0, True)
    add("jobs of > 8 GPUs (% of jobs)", 100 * float(np.mean(gpus > 8)), 7.0, True)
    if cluster == "Kalos":
        add("GPU time of >= 256-GPU jobs (%)", 100 * gt[gpus >= 256].sum() / tot, 96.0, False)
    for lo, hi in ((1, 1), (2, 8), (9, 64), (65, 255), (256, None)):
        m = (gpus >= lo) & (gpus <= (hi if hi is not None else np.inf))
        rows.append({"fact": f"GPU time of {lo}{'' if hi == lo else ('+' if hi is None else f'-{hi}')} GPU jobs (%)",
                     "published": None, "reproduced": 100 * gt[m].sum() / tot, "within_bar": None})
    return rows


def _compare_cluster(cluster: str, doc: dict, doc_pub: dict, jobs: pd.DataFrame, scale: float,
                     expl: dict, curves: list[dict], *, total_gpus: int, days: float) -> dict:
    from acmemodel.datasets import load_reference

    bar_pp, bar_ks = QUALITY_BAR["share_pp"], QUALITY_BAR["ks"]
    kalos = cluster == "Kalos"
    basis = "queue+run" if kalos else "run"
    mix = load_reference("workload_mix").query("cluster == @cluster")
    summ = load_reference("cluster_summary").set_index("id").loc[cluster]
    c, cp = doc["clusters"].get(cluster, {}), doc_pub["clusters"].get(cluster, {})
    by_type, by_type_pub = c.get("by_type", {}), cp.get("by_type", {})

    shares = []
    for _, r in mix.iterrows():
        t = r["type"]
        for metric, col, src in (("job_share", "job_count_percent", by_type),
                                 ("gpu_time_share", "gpu_time_percent", by_type_pub)):
            pub = float(r[col])
            rep = _pp((src.get(t) or {}).get(metric, 0.0))
            d = _diff(pub, rep)
            shares.append({"type": t, "metric": metric, "published": pub, "reproduced": rep, "diff_pp": d,
                           "within_bar": d is not None and abs(d) <= bar_pp,
                           "basis": basis if metric == "gpu_time_share" else "count",
                           "explanation": expl.get((metric, t))})

    states = []
    st_count = c.get("by_analysis_state", {})
    st_gt = cp.get("by_analysis_state", {})
    for s in _STATES:
        k = _STATE_COLS[s]
        for b, col, src, metric in (("count", f"{k}_rate_gpu", st_count, "job_share"),
                                    ("gpu_time", f"{k}_rate_gpu_time", st_gt, "gpu_time_share")):
            pub = _pp(summ[col])
            rep = _pp((src.get(s) or {}).get(metric, 0.0))
            d = _diff(pub, rep)
            states.append({"state": s, "basis": b if b == "count" else f"gpu_time ({basis})", "published": pub,
                           "reproduced": rep, "diff_pp": d, "within_bar": d is not None and abs(d) <= bar_pp,
                           "explanation": None})

    g = jobs[jobs["gpu_num"] > 0]
    started = g[np.isfinite(g["start_s"].to_numpy(float))]
    run_pub_basis = (started["end_s"] - started["submit_s"]) if kalos else started["run_s"]
    queue = started["queue_s"]
    pub_gt = float(summ[["complete_gpu_time", "cancel_gpu_time", "fail_gpu_time"]].sum())
    capacity = float(total_gpus) * days * 86400.0
    rows = [
        ("gpu_jobs", float(summ["gpu_job_num"]) * scale, float(len(g)), "count (published x scale)"),
        ("median_run_s", float(summ["med_run_time_gpu"]), float(run_pub_basis.median()), basis),
        ("mean_run_s", float(summ["avg_run_time_gpu"]), float(run_pub_basis.mean()), basis),
        ("median_queue_s", float(summ["med_que_time_gpu"]), float(queue.median()), "start - submit"),
        ("mean_queue_s", float(summ["avg_que_time_gpu"]), float(queue.mean()), "start - submit"),
        ("mean_gpus", float(summ["avg_gpu_num"]), float(g["gpu_num"].mean()), "GPUs per GPU job"),
        ("utilization", pub_gt / capacity, float((g["gpu_num"] * _duration(g, kalos)).sum()) / capacity,
         f"GPU time ({basis}) / (GPUs x {days:g} days)"),
    ]
    util = rows[-1][2]
    overloaded = None
    if util > 1.0:
        overloaded = (f"model limitation, not a source contradiction: the synthetic workload asks for {util:.2f} x the "
                      f"cluster's GPU time (published {pub_gt / capacity:.2f}), so the simulated queue grows "
                      f"without bound and the queue statistics are meaningless until the synthetic GPU time matches")
    summary = []
    for name, pub, rep, b in rows:
        rel = (rep - pub) / pub if pub and math.isfinite(rep) else None
        note = None
        if cluster == "Seren" and name in ("median_run_s", "mean_run_s", "mean_gpus"):
            note = expl.get("summary")
        if kalos and name in ("median_queue_s", "mean_queue_s"):
            note = expl.get("queue")
        if name in ("median_queue_s", "mean_queue_s", "utilization") and overloaded:
            note = overloaded
        summary.append({"name": name, "published": pub, "reproduced": rep if math.isfinite(rep) else None,
                        "rel_diff": rel, "basis": b, "within_bar": None, "explanation": note})
    if kalos:
        summary.append({"name": "median_run_s (end - start)", "published": None,
                        "reproduced": c.get("median_run_s"), "rel_diff": None, "basis": "run",
                        "within_bar": None, "explanation": "not published (the Kalos files include the queue)"})

    curve_rows = []
    dur = _duration(g, kalos)
    types = g["type"].astype(str).to_numpy()
    for cv in curves:
        if cv["cluster"] != cluster:
            continue
        if cv["kind"] == "gpu_count_cdf_by_jobs":
            sample, b = g["gpu_num"].to_numpy(float), "gpus"
        elif cv["type"] is None:
            sample, b = dur, basis
        else:
            sample, b = dur[types == cv["type"]], basis
        ks, at = ks_at_points(sample, cv["x"], cv["cdf"])
        n = int(len(sample))
        within = bool(math.isfinite(ks) and ks <= bar_ks)
        e = None
        if not within and kalos and cv["kind"] != "gpu_count_cdf_by_jobs":
            e = expl.get("kalos_duration")
        curve_rows.append({"name": cv["name"], "kind": cv["kind"], "type": cv["type"], "basis": b,
                           "ks": ks if math.isfinite(ks) else None, "at_x": at if math.isfinite(at) else None,
                           "n": n, "ks_crit95": KS95 / math.sqrt(n) if n else None, "within_bar": within,
                           "explanation": e, "_sample": sample, "_x": cv["x"], "_cdf": cv["cdf"]})
    qrows, qchecks = queue_by_type(cluster, jobs)
    return {"shares": shares, "states": states, "summary": summary, "curves": curve_rows,
            "queue_by_type": qrows, "queue_checks": qchecks,
            "gpu_time_by_size": gpu_time_by_size(cluster, jobs, includes_queue=kalos)}


# ----------------------------------------------------------------------------------------- plots
def plot_curve(row: dict, ax, *, cluster: str = "") -> None:
    """Overlay of one published CDF (points) and the synthetic sample's empirical CDF on ``ax``."""
    s = np.sort(np.asarray(row["_sample"], float))
    x, cdf = np.asarray(row["_x"], float), np.asarray(row["_cdf"], float)
    if len(s):
        pos = s[s > 0]
        lo = max(min(x.min(), pos.min() if len(pos) else x.min()), 0.5)
        grid = np.unique(np.clip(np.r_[s, x], lo, None))
        f = np.searchsorted(s, grid, side="right") / len(s)
        ax.step(grid, f, where="post", label=f"synthetic (n={len(s):,})", color="tab:blue")
    gpu = row["kind"] == "gpu_count_cdf_by_jobs"
    ax.plot(x, cdf, "o-" if not gpu else "o", ms=3, label="published", color="tab:orange",
            drawstyle="default")
    if gpu:
        ax.set_xscale("log", base=2)
        ax.set_xlabel("GPUs requested")
    else:  # ticks in s/min/h/d, not 2^21 s
        from acmemodel.plotting import duration_axis

        duration_axis(ax, label=f"duration ({row['basis']})")
    ax.set_ylim(0, 1.02)
    ax.set_ylabel("CDF (fraction of GPU jobs)")
    ks = row["ks"]
    ax.set_title(f"{row['name']}  KS={ks:.3f}" if ks is not None else row["name"], fontsize=9)
    ax.legend(fontsize=8, loc="lower right")
    ax.grid(alpha=0.3)


def _write_plots(clusters: dict, directory: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    directory.mkdir(parents=True, exist_ok=True)
    for name, c in clusters.items():
        for row in c["curves"]:
            fig, ax = plt.subplots(figsize=(5.5, 3.8))
            try:
                plot_curve(row, ax, cluster=name)
                path = directory / (row["name"].replace("/", "_") + ".png")
                fig.tight_layout()
                fig.savefig(path, dpi=100)
                row["plot"] = str(path)
            finally:
                plt.close(fig)


# ----------------------------------------------------------------------------------------- driver
def reproduce(bundle=None, *, scale: float = 1.0, seed: int = 0, days: float = DAYS,
              clusters: tuple[str, ...] = CLUSTERS, partitions: Mapping[str, Mapping[str, int]] | None = None,
              queue: str = "simulator", plots: str | Path | None = None, return_jobs: bool = False,
              progress=None) -> dict:
    """Synthesise each cluster from ``bundle`` and compare with the published statistics (module
    docstring). ``bundle``: a Bundle, a path, or None (the shipped default). ``scale``: fraction of the
    real job volume (1.0 ≈ 1.1 M jobs). ``partitions``: {cluster: {partition: GPUs}} overriding
    :data:`PARTITIONS`. ``queue``: ``"simulator"`` (default) or ``"model"`` (waits from the bundle's
    queue model, a diagnostic). ``plots``: directory for PNG overlays of every curve.
    ``progress(done, total, description)``: called before each step (a cluster's synthesis, the
    comparison, the plots) and at the end.

    Returns the JSON document ``{"clusters": {NAME: {"shares", "states", "summary", "curves",
    "simulation"}}, "quality_bar", "ks_definition", "scale", "seed", "days", "bundle", "seconds"}``
    (with ``return_jobs=True`` also ``"jobs"``: the synthetic trace contract table).
    """
    from acmemodel.describe import describe
    from acmemodel.synth import resolve_bundle

    t0 = time.perf_counter()
    if not (isinstance(scale, (int, float)) and math.isfinite(scale) and 0 < scale <= 10):
        raise ValueError(f"scale must be in (0, 10], got {scale!r}")
    bad = [c for c in clusters if c not in CLUSTERS]
    if bad:
        raise ValueError(f"clusters must be among {CLUSTERS}, got {bad}")
    b = resolve_bundle(bundle)
    curves = curve_points()
    frames, infos = [], {}
    steps = len(clusters) + 1 + (plots is not None)
    step = progress if progress is not None else (lambda *a: None)
    for i, cl in enumerate(clusters):
        step(i, steps, f"synthesising {cl}")
        jobs, info = synthesize_cluster(b, cl, scale=scale, seed=int(seed) + 7919 * i, days=days,
                                        partitions=(partitions or {}).get(cl), queue=queue)
        frames.append(jobs)
        infos[cl] = info
    step(len(clusters), steps, "comparing with the published statistics")
    jobs = pd.concat(frames, ignore_index=True)
    trace = to_trace(jobs)
    doc = describe(trace)
    doc_pub = describe(_published_semantics(trace)) if "Kalos" in clusters else doc
    out: dict = {"clusters": {}}
    for cl, fr in zip(clusters, frames):
        res = _compare_cluster(cl, doc, doc_pub if cl == "Kalos" else doc, fr, scale, _explanations(b, cl),
                               curves, total_gpus=infos[cl]["total_gpus"], days=days)
        res["simulation"] = infos[cl]
        out["clusters"][cl] = res
    if "Seren" in clusters:
        from acmemodel.planner.energy import seren_may_check

        i = clusters.index("Seren")
        out["energy"] = {"Seren May 2023": seren_may_check(frames[i], capacity_gpus=infos["Seren"]["total_gpus"],
                                                           scale=scale)}
    if plots is not None:
        step(len(clusters) + 1, steps, "writing plots")
        _write_plots(out["clusters"], Path(plots))
    step(steps, steps, "done")
    for c in out["clusters"].values():
        for row in c["curves"]:
            for k in ("_sample", "_x", "_cdf"):
                row.pop(k, None)
        c["passed"] = {k: int(sum(bool(r["within_bar"]) for r in c[k] if r["within_bar"] is not None))
                       for k in ("shares", "states", "curves", "queue_by_type", "gpu_time_by_size")}
        c["passed"]["queue_checks"] = int(sum(r["passed"] for r in c["queue_checks"]))
        c["compared"] = {k: sum(1 for r in c[k] if r["within_bar"] is not None)
                         for k in ("shares", "states", "curves", "queue_by_type", "gpu_time_by_size")}
        c["compared"]["queue_checks"] = len(c["queue_checks"])
    out.update({
        "bundle": getattr(b, "name", None), "bundle_scale": _bundle_scale(b), "scale": scale, "seed": seed,
        "queue": queue,
        "days": days, "quality_bar": dict(QUALITY_BAR),
        "ks_definition": "max over the published points x_i of |F_sample(x_i) - F_published(x_i)|, "
                         "F_sample(x) = fraction of synthetic GPU jobs <= x",
        "seconds": round(time.perf_counter() - t0, 3),
    })
    if return_jobs:
        out["jobs"] = trace.jobs
    return out
