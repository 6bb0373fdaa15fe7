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
   (:func:`acmemodel.sim.cluster.simulate_cluster`: gang scheduling on 8-GPU nodes, FIFO with
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
   calibration chose (``provenance["calibration"][cluster]["policy"]``: the reservation size, an
   evaluation quota ``eval_gpus`` — a lane only Eval jobs use, and then their only one — or none, the
   priorities by type — evaluation below the rest — and whether best-effort jobs fill idle reserved
   GPUs, preemptibly); the simulator runs it, and every GPU job gets a **start-up latency** drawn
   from the bundle's queue model (:meth:`~acmemodel.models.queue.QueueModel.sample_latency`, per
   cluster × type), added once to its contention wait. A bundle without a recorded policy uses
   :data:`PARTITIONS`, FIFO, no best effort and no latency. The cluster size is not scaled, so below ``scale`` ≈ 1
   the cluster is under-loaded and the waits are too short: queue comparisons are meaningful at full
   scale only.
   **Replicas** (``replicas``, default :data:`REPLICAS`: Seren 4, Kalos 32): steps 1–2 are run R times per cluster with
   independent seeds (:func:`replica_seed`) and every comparison below pools the R traces (counts are
   compared with published × scale × R). One trace's GPU time by state rests on a few hundred large
   runs — in Kalos about a thousand jobs of ≥ 256 GPUs hold > 96 % of the GPU time and about 15 of their
   failures the failed share — so between seeds of one trace Kalos's GPU-time state shares vary with a
   standard deviation of 2.6–3.7 pp, more than the 2 pp bar; pooling R traces divides it by √R and the
   figures estimate what the bundle produces on average, not one draw.
3. **Description** — the figures :func:`acmemodel.describe.describe` gives of the synthetic trace in the
   package's trace contract (shares of the GPU jobs and of their GPU time by type and final state, the
   median run time), computed from the pooled replicas (see "Memory" below). Published Kalos ``duration`` and ``gpu_time`` include the queue (``end −
   submit``; reference README), so for Kalos every published duration-based number — the duration
   CDFs, median/mean run time, GPU-time shares by type and by state — is compared with the synthetic
   ``queue + run`` (``"basis": "queue+run"``); Seren with the run time (``end − start``).

Comparisons (percent values are percentage points of 100):

* ``shares`` — job-count and GPU-time share per type (``workload_mix.csv``), ``diff_pp``;
* ``states`` — final-state rates (COMPLETED / CANCELLED / FAILED, TIMEOUT and NODE_FAIL counted as
  FAILED) by job count and by GPU time (``cluster_summary.csv``), ``diff_pp``, and ``se_pp``: the
  share's standard error over iid draws of the synthetic jobs (ratio estimator on GPU time; the noise
  of one trace where few runs hold the GPU time, :func:`acmemodel.reproduction.compare._state_share_se`);
* ``summary`` — median and mean run time and queue (s), mean GPUs per job, GPU-job count
  (published × scale), with the relative difference; the issue sets no bar for these;
* ``queue_by_type`` — per type the share of GPU jobs with wait ≤ 1, 10, 100, 1,000 s (and the other
  published points of ``queue_wait_by_type.csv``: paper Fig. 6 b/d read off the plot), the median
  and the mean wait, next to the published values (bar 5 pp); ``queue_checks`` — Eval has the lowest
  ≤ 1 s share and the largest mean wait; the cluster median/mean wait within 50 % of
  ``cluster_summary.csv``;
* ``gpu_time_by_size`` — the published facts on GPU time by job size (single-GPU jobs < 2 % of GPU
  time, jobs of > 8 GPUs < 7 % of jobs, Kalos jobs of ≥ 256 GPUs > 96 % of GPU time), as bounds, and
  Seren's GPU-time shares of jobs of ≤ 511 GPUs (≈ 64 %) and ≥ 768 GPUs (≈ 30 %) within 5 pp
  (``reproduction.compare.SIZE_SHARES``);
* ``failure_rate`` — the bundle's large-job infrastructure failures per 1,000 node-days (its failure
  model's MTTF at 1,024 GPUs) against the rate derived from the published failed GPU time and failure
  table (:func:`~acmemodel.reproduction.compare.published_failure_rate`) and its 95 % Poisson interval;
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

Memory (streaming): the replicas are drawn one at a time and each is cut at once to what the comparisons
read (:class:`~acmemodel.reproduction.compare.PooledJobs`: per GPU job its GPU count, type, state,
start, duration and GPU time on the published basis, wait and run time, ~60 bytes), so the peak is one
replica's synthesis plus that, not every replica's full tables (:func:`acmemodel.limits.reproduce_memory`).
The pooled arrays are the concatenated replicas' values in order, so every check and figure is the one
of the concatenated traces (medians and KS distances included, not from a sketch).
``return_jobs=True`` keeps every replica's full table to return it.

Layout: this module holds the synthesis (steps 1–2) and the driver; the comparison tables, the KS
distance and the quality bar are in :mod:`acmemodel.reproduction.compare`, the overlay plots in
:mod:`acmemodel.reproduction.plots`.
"""
from __future__ import annotations

import math
import time
import warnings
from pathlib import Path
from typing import Mapping

import numpy as np
import pandas as pd

from acmemodel.clusters import CLUSTER_TZ, GPUS_PER_NODE, cluster_gpus
from acmemodel.reproduction.compare import (
    CLUSTERS, QUALITY_BAR, PooledJobs, _compare_cluster, _explanations, curve_points, failure_rate_check,
)
from acmemodel.reproduction.plots import _write_plots
from acmemodel.errors import DataWarning
from acmemodel.features.keys import type_bucket_groups
from acmemodel.joblife import in_reservation
from acmemodel.planner.energy import seren_may_check
from acmemodel.sim.cluster import SchedulingPolicy, simulate_cluster
from acmemodel.synth import resolve_bundle, simulate_jobs
from acmemodel.trace import Trace, jobs_from_times

__all__ = ["reproduce", "synthesize_cluster", "replica_seed", "REPLICAS", "to_trace", "queue_policy", "policy_queue",
           "DAYS", "PARTITIONS"]

#: length of the synthetic traces (days from 2023-03-01 local time; the trace covers Mar–Aug 2023)
DAYS = 184.0
#: reserved partitions per cluster (GPUs); ``shared`` gets the rest (module docstring)
PARTITIONS: dict[str, dict[str, int]] = {"Seren": {"pretrain": 1536}, "Kalos": {"pretrain": 2048}}


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
    """Pretrain and pretraining-scale jobs (:func:`acmemodel.joblife.in_reservation`) → ``pretrain``; Eval →
    ``eval`` (the evaluation quota, when the policy has one) unless larger than it; every other job →
    ``shared``, unless larger than it (module docstring)."""
    gpus = df["gpu_num"].to_numpy()
    ty = df["type"].astype(str).to_numpy()
    home = np.full(len(df), "shared", dtype=object)
    if parts.get("eval"):
        home[(ty == "Eval") & (gpus <= parts["eval"])] = "eval"
    if "pretrain" not in parts:
        return home

    home[in_reservation(ty, gpus)] = "pretrain"
    home[(home == "shared") & (gpus > parts["shared"])] = "pretrain"
    return home


def queue_policy(bundle, cluster: str, partitions: Mapping[str, int] | None = None) -> dict:
    """The queueing policy simulated for ``cluster`` (module docstring): ``{"partitions": {name: GPUs},
    "priorities": {type: int}, "best_effort": bool, "best_effort_types": [type] or None (None: every
    type not at home in the reservation), "latency": bool, "source": str}``. ``partitions``
    overrides the reservation."""
    total = cluster_gpus(cluster)
    pol = bundle.calibration(cluster).get("policy")
    if pol:
        if partitions is None:
            parts = {"pretrain": int(pol["reservation_gpus"])}
            if int(pol.get("eval_gpus") or 0):
                parts["eval"] = int(pol["eval_gpus"])  # the evaluation quota (only Eval runs there)
        else:
            parts = dict(partitions)
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
    def fill(df: pd.DataFrame) -> np.ndarray:
        t = time.perf_counter()
        gpus = df["gpu_num"].to_numpy()
        home = _home_partitions(df, parts)
        run = df["run_s"].to_numpy(float)
        span = max(float(df["submit_s"].max() - df["submit_s"].min()), 1.0) if len(df) else 1.0
        gt = np.where(np.isfinite(run), gpus * np.nan_to_num(run), 0.0)
        info["offered_load"] = {p: float(gt[home == p].sum() / (g * span)) if g else None for p, g in parts.items()}
        if mode == "model":
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
                                   **SchedulingPolicy.from_calibration(pol, reserved=reserved is not None).kwargs())
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


def policy_queue(bundle, cluster: str, *, total_gpus: int | None = None, seed: int = 0, info: dict | None = None):
    """``(fill_queue, policy)`` for :func:`acmemodel.synth.simulate_jobs`: the cluster simulator running the
    policy ``bundle`` calibrated for ``cluster`` (:func:`queue_policy`: reservation, priorities, best
    effort, start-up latency from the bundle's queue model), as ``reproduce`` simulates it. On a cluster of
    ``total_gpus`` other than the published size, every partition but ``shared`` keeps its fraction of the
    GPUs (whole nodes, at least one). ``policy["partitions"]`` is the layout simulated; ``info`` (a dict)
    receives the simulation's figures."""
    pol = queue_policy(bundle, cluster)
    published = cluster_gpus(cluster)
    total = int(total_gpus or published)
    parts = dict(pol["partitions"])
    if total != published:
        node = GPUS_PER_NODE
        parts = {k: max(node, int(round(v * total / published / node)) * node) for k, v in parts.items() if k != "shared"}
        parts["shared"] = total - sum(parts.values())
        if parts["shared"] < 0:
            raise ValueError(f"total_gpus={total} is too small for the calibrated policy's partitions")
        pol = dict(pol, partitions=parts)
    fill = _queue_filler(cluster, total, parts, info if info is not None else {}, queue_model=bundle.get("queue"), seed=seed,
                         policy=pol)
    return fill, pol


def sample_latency(queue_model, cluster: str, types: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One start-up latency (s) per job of ``types`` from the queue model's latency part (zeros if none),
    rounded to whole seconds (the traces' resolution); stratified within each type
    (:meth:`~acmemodel.models.queue.QueueModel.sample_latency`), as synth stratifies the run times."""
    out = np.zeros(len(types))
    if getattr(queue_model, "latency_", None) is None:
        return out
    codes, uniq = pd.factorize(np.asarray(types), sort=True)    # sorted like np.unique: same draws
    for k, ty in enumerate(uniq):
        m = np.flatnonzero(codes == k)
        out[m] = queue_model.sample_latency(len(m), rng, cluster=cluster, type=str(ty), stratified=True,
                                            whole_seconds=True)
    return out


def synthesize_cluster(bundle, cluster: str, *, scale: float = 1.0, seed: int = 0, days: float = DAYS,
                       partitions: Mapping[str, int] | None = None, queue: str = "simulator"
                       ) -> tuple[pd.DataFrame, dict]:
    """One cluster's synthetic trace (``simulate_jobs`` columns) with queue times (``queue``:
    ``"simulator"`` or ``"model"``, see :func:`_queue_filler`), plus info (arrival scale, partitions,
    offered load and utilisation per partition, timing)."""
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





# ----------------------------------------------------------------------------------------- driver
#: synthetic traces per cluster that :func:`reproduce` pools by default (module docstring, "Replicas"): Kalos's
#: GPU time rests on ~1,000 large jobs per trace and a trace takes about a second to draw
REPLICAS: dict[str, int] = {"Seren": 4, "Kalos": 32}


def _replicas(replicas, clusters) -> dict[str, int]:
    """{cluster: R} from :func:`reproduce`'s ``replicas`` (an integer, a mapping, or None), validated."""
    if replicas is None:
        replicas = REPLICAS
    if isinstance(replicas, Mapping):
        bad = sorted(set(replicas) - set(CLUSTERS))
        if bad:
            raise ValueError(f"replicas names unknown clusters {bad}; known: {list(CLUSTERS)}")
        out = {c: replicas.get(c, REPLICAS.get(c, 1)) for c in clusters}
    else:
        out = {c: replicas for c in clusters}
    for c, r in out.items():
        if not (isinstance(r, (int, np.integer)) and not isinstance(r, bool) and 1 <= r <= 256):
            raise ValueError(f"replicas ({c}) must be an integer in [1, 256], got {r!r}")
    return {c: int(r) for c, r in out.items()}


def replica_seed(seed: int, cluster_index: int, replica: int) -> int:
    """Seed of replica ``replica`` of the ``cluster_index``-th cluster: ``seed + 7919 i + 104729 r``
    (replica 0 is the single trace of ``replicas=1``)."""
    return int(seed) + 7919 * int(cluster_index) + 104729 * int(replica)


def reproduce(bundle=None, *, scale: float = 1.0, seed: int = 0, days: float = DAYS,
              clusters: tuple[str, ...] = CLUSTERS, partitions: Mapping[str, Mapping[str, int]] | None = None,
              queue: str = "simulator", plots: str | Path | None = None, return_jobs: bool = False,
              progress=None, replicas: int | Mapping[str, int] | None = None) -> dict:
    """Synthesise each cluster from ``bundle`` and compare with the published statistics (module
    docstring). ``bundle``: a Bundle, a path, or None (the shipped default). ``scale``: fraction of the
    real job volume (1.0 ≈ 1.1 M jobs). ``partitions``: {cluster: {partition: GPUs}} overriding
    :data:`PARTITIONS`. ``queue``: ``"simulator"`` (default) or ``"model"`` (waits from the bundle's
    queue model, a diagnostic). ``plots``: directory for PNG overlays of every curve.
    ``progress(done, total, description)``: called before each step (a cluster's synthesis, the
    comparison, the plots) and at the end. ``replicas``: independent synthetic traces per cluster
    (seeds :func:`replica_seed`), pooled for every comparison (module docstring, "Replicas"); an integer
    for every cluster or {cluster: R}; None: :data:`REPLICAS`.

    Returns the JSON document ``{"clusters": {NAME: {"shares", "states", "summary", "curves",
    "simulation"}}, "quality_bar", "ks_definition", "scale", "seed", "replicas" ({cluster: R}), "days", "bundle",
    "seconds"}``
    (with ``return_jobs=True`` also ``"jobs"``: the synthetic trace contract table).
    """
    t0 = time.perf_counter()
    if not (isinstance(scale, (int, float)) and math.isfinite(scale) and 0 < scale <= 10):
        raise ValueError(f"scale must be in (0, 10], got {scale!r}")
    bad = [c for c in clusters if c not in CLUSTERS]
    if bad:
        raise ValueError(f"clusters must be among {CLUSTERS}, got {bad}")
    reps_of = _replicas(replicas, clusters)
    b = resolve_bundle(bundle)
    curves = curve_points()
    infos, full = {}, []
    n_synth = sum(reps_of.values())
    steps = n_synth + 1 + (plots is not None)
    step = progress if progress is not None else (lambda *a: None)
    done = 0
    out: dict = {"clusters": {}}
    pooled: dict[str, PooledJobs] = {}
    for i, cl in enumerate(clusters):
        # Streaming: each replica is cut to what the comparisons read (PooledJobs, ~60 bytes a GPU job) as
        # soon as it is drawn, and its full table dropped (module docstring, "Memory"); only return_jobs
        # keeps every replica.
        pooled[cl], reps_info, replicas = PooledJobs(cl), [], reps_of[cl]
        for r in range(replicas):
            step(done, steps, f"synthesising {cl}" + (f" ({r + 1}/{replicas})" if replicas > 1 else ""))
            done += 1
            jobs, info = synthesize_cluster(b, cl, scale=scale, seed=replica_seed(seed, i, r), days=days,
                                            partitions=(partitions or {}).get(cl), queue=queue)
            if r == 0 and cl == "Seren":
                out["energy"] = {"Seren May 2023": seren_may_check(jobs, capacity_gpus=info["total_gpus"],
                                                                   scale=scale)}
            pooled[cl].add(jobs)
            reps_info.append(info)
            if return_jobs:
                full.append(jobs)
            del jobs
        infos[cl] = dict(reps_info[0], replicas=replicas,
                         seeds=[replica_seed(seed, i, r) for r in range(replicas)],
                         seconds=round(sum(inf["seconds"] for inf in reps_info), 3))
    step(n_synth, steps, "comparing with the published statistics")
    for cl in clusters:
        # pooled replicas: R traces of `days` days at `scale` each (counts against published x scale x R)
        res = _compare_cluster(cl, pooled.pop(cl), scale * reps_of[cl], _explanations(b, cl), curves,
                               total_gpus=infos[cl]["total_gpus"], days=days * reps_of[cl])
        if plots is None:  # (the samples are kept for the plots only)
            for row in res["curves"]:
                row.pop("_sample", None)
        res["simulation"] = infos[cl]
        fr_check = failure_rate_check(b, cl)
        res["failure_rate"] = [] if fr_check is None else [fr_check]
        out["clusters"][cl] = res
    if plots is not None:
        step(n_synth + 1, steps, "writing plots")
        _write_plots(out["clusters"], Path(plots))
    step(steps, steps, "done")
    for c in out["clusters"].values():
        for row in c["curves"]:
            for k in ("_sample", "_x", "_cdf"):
                row.pop(k, None)
        c["passed"] = {k: int(sum(bool(r["within_bar"]) for r in c[k] if r["within_bar"] is not None))
                       for k in ("shares", "states", "curves", "queue_by_type", "gpu_time_by_size", "failure_rate")}
        c["passed"]["queue_checks"] = int(sum(r["passed"] for r in c["queue_checks"]))
        c["compared"] = {k: sum(1 for r in c[k] if r["within_bar"] is not None)
                         for k in ("shares", "states", "curves", "queue_by_type", "gpu_time_by_size", "failure_rate")}
        c["compared"]["queue_checks"] = len(c["queue_checks"])
    out.update({
        "bundle": getattr(b, "name", None), "bundle_scale": _bundle_scale(b), "scale": scale, "seed": seed,
        "replicas": reps_of, "queue": queue,
        "days": days, "quality_bar": dict(QUALITY_BAR),
        "ks_definition": "max over the published points x_i of |F_sample(x_i) - F_published(x_i)|, "
                         "F_sample(x) = fraction of synthetic GPU jobs <= x",
        "seconds": round(time.perf_counter() - t0, 3),
    })
    if return_jobs:
        out["jobs"] = to_trace(pd.concat(full, ignore_index=True)).jobs
    return out
