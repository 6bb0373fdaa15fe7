"""Cluster simulator for quotas: a thin front over the C kernel ``acmemodel._solver._cluster.simulate``.

:func:`simulate_cluster` replays a job list (a trace, or a workload sampled from the arrival and runtime models) on
a cluster of ``total_gpus`` GPUs in nodes of ``gpus_per_node``, split into partitions of whole nodes -- typically a
reserved pretraining partition, a shared pool and optionally a guaranteed (dedicated) evaluation lane -- and returns
per-job start times and waits plus the summaries the planner needs: the queue-delay distribution per job type,
utilization per partition and pretraining throughput.

Scheduling rules (fully specified in :mod:`acmemodel._solver.reference.cluster`, the pure-Python twin that the C
kernel reproduces exactly):

* gang scheduling of whole jobs; a job of ``g <= gpus_per_node`` GPUs is packed on one node (best fit), a larger job
  takes ``ceil(g / gpus_per_node)`` fully free nodes and holds all their GPUs;
* inside each partition by priority (``priorities``: type -> integer, higher first; Acme's policy puts evaluation
  below the rest) and FIFO by submit time within a priority, with EASY backfill (run-time estimates = actual run
  times, so the head's reservation is exact); at most ``backfill_depth`` queued jobs are examined per pass;
* each job runs only in its partition (the evaluation lane is dedicated to evaluation jobs); with
  ``best_effort_on_reserved`` jobs of the other partitions may also run on idle GPUs of the reserved partition as
  **preemptible** best-effort jobs: they never delay the reserved queue's head, are evicted (killed and requeued at
  their FIFO position, progress lost) when a reserved-partition job needs their GPUs, and their wait is counted up to
  the start of the run that completes;
* a job that can never fit its partition is reported in :attr:`ClusterSimResult.unschedulable` and not simulated;
* **start-up latency** (optional ``latency_s`` column, seconds >= 0): the wait a job has even on an idle cluster (pod
  creation on Kubernetes, the scheduling cycle on Slurm). A job holds its GPUs from its dispatch by the scheduler for
  ``latency_s + run_s``; its run starts ``latency_s`` after the dispatch of the run that completes. So
  ``wait_s = contention_s + latency_s`` with ``contention_s`` = dispatch - submit (the simulator's queueing): the
  latency is added exactly once to the contention wait, also for jobs that were evicted and re-dispatched (each
  dispatch holds GPUs for the latency, but only the final one's latency is part of the wait).
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field, replace
from typing import Mapping

import numpy as np
import pandas as pd

from acmemodel.errors import DataWarning
from acmemodel._solver import _cluster

__all__ = ["ClusterSimResult", "simulate_cluster", "prepare_jobs", "default_routing"]

_REQUIRED = ("submit_s", "run_s", "gpu_num", "type")


def default_routing(types, partitions) -> dict:
    """Type -> partition map used when neither ``routing`` nor a ``partition`` column is given.

    ``Pretrain`` goes to ``"pretrain"`` and ``Eval`` to ``"eval"`` when those partitions exist; every other type (and
    these when their partition is absent) goes to ``"shared"``.
    """
    out = {}
    for t in types:
        if t == "Pretrain" and "pretrain" in partitions:
            out[t] = "pretrain"
        elif t == "Eval" and "eval" in partitions:
            out[t] = "eval"
        else:
            out[t] = "shared"
    return out


def prepare_jobs(jobs) -> tuple[pd.DataFrame, int]:
    """Validate a job list and keep the simulable rows.

    ``jobs`` is a DataFrame (or a mapping of equal-length arrays, or a Trace: its ``jobs`` table) with ``submit_s``
    (s), ``run_s`` (s), ``gpu_num`` and ``type`` (optionally ``partition`` and ``latency_s``); one cluster only. Rows with ``gpu_num == 0`` (CPU jobs) or a missing ``run_s`` (trace jobs
    that never started) are dropped. Returns the kept rows (original index preserved) and the number dropped.
    Raises ValueError on a missing column, non-finite submit times, negative run times or negative GPU counts.
    """
    if not isinstance(jobs, (pd.DataFrame, Mapping)) and isinstance(getattr(jobs, "jobs", None), pd.DataFrame):
        jobs = jobs.jobs  # an acmemodel Trace
    if isinstance(jobs, Mapping) and not isinstance(jobs, pd.DataFrame):
        jobs = pd.DataFrame({k: np.asarray(v) for k, v in jobs.items()})
    if not isinstance(jobs, pd.DataFrame):
        raise ValueError(f"jobs must be a DataFrame or a mapping of arrays, got {type(jobs).__name__}")
    missing = [c for c in _REQUIRED if c not in jobs.columns]
    if missing:
        raise ValueError(f"jobs is missing column(s) {missing}; need {list(_REQUIRED)}")
    if "cluster" in jobs.columns and jobs["cluster"].nunique() > 1:
        raise ValueError(f"jobs mixes clusters {sorted(jobs['cluster'].unique())}; simulate one cluster at a time")
    submit = pd.to_numeric(jobs["submit_s"], errors="coerce").to_numpy(np.float64)
    run = pd.to_numeric(jobs["run_s"], errors="coerce").to_numpy(np.float64)
    gpus = pd.to_numeric(jobs["gpu_num"], errors="coerce").to_numpy(np.float64)
    if not np.all(np.isfinite(submit)):
        raise ValueError("jobs.submit_s must be finite for every job")
    if np.any(run < 0):
        raise ValueError(f"jobs.run_s must be >= 0, got min {np.nanmin(run)}")
    if np.any(~np.isfinite(gpus)) or np.any(gpus < 0) or np.any(gpus != np.round(gpus)):
        raise ValueError("jobs.gpu_num must be non-negative integers")
    keep = (gpus > 0) & np.isfinite(run)
    out = jobs.loc[keep, [c for c in (*_REQUIRED, "partition", "latency_s") if c in jobs.columns]].copy()
    if "latency_s" in out.columns:
        lat = pd.to_numeric(out["latency_s"], errors="coerce").to_numpy(np.float64)
        if not np.all(np.isfinite(lat)) or np.any(lat < 0):
            raise ValueError("jobs.latency_s must be finite and >= 0 for every GPU job with a run time")
        out["latency_s"] = lat
    out["submit_s"] = submit[keep]
    out["run_s"] = run[keep]
    out["gpu_num"] = gpus[keep].astype(np.int64)
    out["type"] = out["type"].astype(str)
    return out, int((~keep).sum())


@dataclass
class ClusterSimResult:
    """Outcome of :func:`simulate_cluster`.

    Attributes
    ----------
    jobs : DataFrame, one row per simulated job (index of the input): ``submit_s``, ``run_s``, ``gpu_num``, ``type``,
        ``partition`` (home), ``start_s`` / ``end_s`` (the completed run, s), ``wait_s = start_s - submit_s`` (s,
        includes time lost to evictions and the start-up latency), ``latency_s`` (start-up latency, s; 0 without
        the input column), ``contention_s = wait_s - latency_s`` (s, dispatch of the completed run - submit),
        ``priority``, ``first_start_s`` (first dispatch + latency), ``ran_in`` (partition of the completed run -- differs
        from ``partition`` for best-effort runs), ``preemptions``, ``lost_s`` (run seconds thrown away),
        ``schedulable`` (False: never fits its partition; times NaN).
    queue_s : DataFrame indexed by type: ``count``, ``mean``, ``p50``, ``p90``, ``p99``, ``max`` of ``wait_s`` (s) over
        schedulable jobs submitted inside the window.
    utilization : DataFrame indexed by partition: ``gpus``, ``busy_gpu_s`` (allocated GPU-seconds by the partition's
        own jobs in the window, start-up latency included: GPUs are held from dispatch), ``best_effort_gpu_s`` (by
        best-effort jobs, evicted runs included),
        ``utilization = (busy + best_effort) / (gpus * window length)``.
    pretrain_throughput : float, GPU-seconds of pretraining work (requested GPUs x run seconds of completed runs of
        type ``pretrain_type``, clipped to the window) per second of window.
    unschedulable : Index of input rows that can never fit their partition.
    window : (t0, t1) seconds used for the utilization and throughput (default: first to last submit).
    """

    jobs: pd.DataFrame
    queue_s: pd.DataFrame
    utilization: pd.DataFrame
    pretrain_throughput: float
    unschedulable: pd.Index
    window: tuple
    partitions: dict
    n_dropped: int = 0
    backend: str = "c"
    settings: dict = field(default_factory=dict)

    def summary(self) -> pd.DataFrame:
        """Per-type queue-delay table (seconds) -- the same as :attr:`queue_s`."""
        return self.queue_s

    def wait_quantile(self, job_type: str, q: float) -> float:
        """Quantile ``q`` of the waits (s) of jobs of ``job_type`` submitted in the window (inf if any such job is
        unschedulable, NaN if there is none)."""
        return pooled_wait_quantile([self], job_type, q)

    def to_dict(self) -> dict:
        """JSON-ready summary: ``queue_s`` {type: {p50, p90, mean, max, count}}, ``utilization`` {partition: frac},
        ``pretrain_throughput``, ``partitions`` {name: gpus}, ``unschedulable`` count, ``window``."""
        q = {t: {k: _num(v) for k, v in row.items()} for t, row in self.queue_s.to_dict("index").items()}
        return {
            "queue_s": q,
            "utilization": {p: _num(v) for p, v in self.utilization["utilization"].items()},
            "pretrain_throughput": _num(self.pretrain_throughput),
            "partitions": dict(self.partitions),
            "unschedulable": int(len(self.unschedulable)),
            "window": [float(self.window[0]), float(self.window[1])],
        }


def _num(v):
    v = float(v)
    return v if math.isfinite(v) else None


def _check_partitions(total_gpus, gpus_per_node, partitions) -> dict:
    if not isinstance(total_gpus, (int, np.integer)) or total_gpus < 1:
        raise ValueError(f"total_gpus must be a positive integer, got {total_gpus!r}")
    if not isinstance(gpus_per_node, (int, np.integer)) or gpus_per_node < 1:
        raise ValueError(f"gpus_per_node must be a positive integer, got {gpus_per_node!r}")
    if total_gpus % gpus_per_node:
        raise ValueError(f"total_gpus={total_gpus} must be a multiple of gpus_per_node={gpus_per_node}")
    parts = dict(partitions or {})
    for name, g in parts.items():
        if not isinstance(g, (int, np.integer)) or g < 0 or g % gpus_per_node:
            raise ValueError(f"partitions[{name!r}]={g!r} must be a non-negative multiple of "
                             f"gpus_per_node={gpus_per_node}")
    used = sum(int(g) for g in parts.values())
    if used > total_gpus:
        raise ValueError(f"partitions={parts} use {used} GPUs, more than total_gpus={total_gpus}")
    if "shared" not in parts:
        parts["shared"] = total_gpus - used
    elif used != total_gpus:
        raise ValueError(f"partitions={parts} sum to {used} GPUs, not total_gpus={total_gpus} "
                         "(omit 'shared' to give it the remainder)")
    return {k: int(v) for k, v in parts.items()}


@dataclass(frozen=True)
class SchedulingPolicy:
    """How the simulated cluster schedules its queues (the rules are in the module docstring), parsed once
    from wherever it is stated and handed to :func:`simulate_cluster` / :func:`~acmemodel.sim.quota.find_quota`
    as keyword arguments (:meth:`kwargs`).

    ``backfill``: EASY backfill inside each partition; ``best_effort_on_reserved``: other partitions' jobs
    run preemptibly on idle GPUs of the reserved partition, ``best_effort_types`` the types allowed to
    (``None``: all not routed there); ``priorities``: {type: integer}, higher first, FIFO within one;
    ``routing``: {type: partition}."""

    backfill: bool = True
    best_effort_on_reserved: bool = False
    best_effort_types: tuple | None = None
    priorities: Mapping[str, int] | None = None
    routing: Mapping[str, str] | None = None

    @classmethod
    def from_config(cls, cluster) -> "SchedulingPolicy":
        """From a planner configuration's ``cluster`` section (its ``backfill``, ``best_effort_on_reserved``,
        ``best_effort_types``, ``priorities`` and ``routing`` fields)."""
        bet = cluster.best_effort_types
        return cls(backfill=bool(cluster.backfill), best_effort_on_reserved=bool(cluster.best_effort_on_reserved),
                   best_effort_types=None if bet is None else tuple(bet),
                   priorities=dict(cluster.priorities) or None, routing=dict(cluster.routing) or None)

    @classmethod
    def from_calibration(cls, policy: Mapping, *, reserved: bool = True) -> "SchedulingPolicy":
        """From a calibrated policy record (a bundle's ``provenance["calibration"][cluster]["policy"]``:
        ``priorities``, ``best_effort``, ``best_effort_types``); best effort needs a reserved partition."""
        bet = policy.get("best_effort_types")
        return cls(best_effort_on_reserved=bool(policy.get("best_effort")) and reserved,
                   best_effort_types=None if bet is None else tuple(bet),
                   priorities=dict(policy.get("priorities") or {}) or None)

    def with_priority_like(self, new_type: str, like: str) -> "SchedulingPolicy":
        """The policy with ``new_type`` at ``like``'s priority (when ``like`` has one and ``new_type`` none)."""
        if not self.priorities or like not in self.priorities or new_type in self.priorities:
            return self
        return replace(self, priorities={**self.priorities, new_type: self.priorities[like]})

    def kwargs(self) -> dict:
        """The keyword arguments of :func:`simulate_cluster` that state this policy."""
        out = {"backfill": self.backfill, "best_effort_on_reserved": self.best_effort_on_reserved}
        if self.priorities:
            out["priorities"] = dict(self.priorities)
        if self.best_effort_types is not None:
            out["best_effort_types"] = list(self.best_effort_types)
        if self.routing:
            out["routing"] = dict(self.routing)
        return out


def _backend_arg(backend: str) -> str:
    """The kernel switch ``backend``: "c" or "numpy"."""
    if backend not in ("c", "numpy"):
        raise ValueError(f"backend must be 'c' or 'numpy', got {backend!r}")
    return backend


def simulate_cluster(jobs, *, total_gpus: int, gpus_per_node: int = 8, partitions: dict | None = None,
                     routing: dict | None = None, backfill: bool = True, best_effort_on_reserved: bool = False,
                     reserved_partition: str | None = "pretrain", best_effort_types=None,
                     backfill_depth: int | None = 1000, window: tuple | None = None,
                     pretrain_type: str = "Pretrain", priorities: Mapping[str, int] | None = None,
                     backend: str = "c") -> ClusterSimResult:
    """Simulate the cluster on a job list; see the module docstring for the rules.

    Parameters
    ----------
    jobs : DataFrame or mapping of arrays with ``submit_s`` (s), ``run_s`` (s), ``gpu_num``, ``type`` and optionally
        ``partition`` (overrides ``routing``) and ``latency_s`` (start-up latency, s; module docstring). CPU jobs and
        jobs without a run time are dropped (``n_dropped``).
    total_gpus, gpus_per_node : cluster size; ``total_gpus`` must be a multiple of ``gpus_per_node``.
    partitions : {name: GPUs}, each a multiple of ``gpus_per_node``; ``"shared"`` gets the remainder if omitted.
        Default ``{"shared": total_gpus}``.
    routing : {type: partition name}; unlisted types use :func:`default_routing`.
    backfill : EASY backfill inside each partition (else strict FIFO).
    best_effort_on_reserved : let jobs of other partitions run preemptibly on idle GPUs of ``reserved_partition``.
    best_effort_types : types allowed to run best-effort (default: all types not routed to the reserved partition).
    backfill_depth : queued jobs examined per backfill pass (None = unlimited).
    window : (t0, t1) seconds for utilization, throughput and the wait statistics (default first..last submit).
    priorities : {type: integer}; higher is served first in every queue (and among best-effort candidates), FIFO
        within a priority; unlisted types get 0. Default None: all equal (plain FIFO).
    backend : ``"c"`` (the C kernel) or ``"numpy"`` (the pure-Python twin, for testing) — the same switch as
        the checkpoint and Monte Carlo kernels.
    """
    backend = _backend_arg(backend)
    if backfill_depth is not None and (not isinstance(backfill_depth, (int, np.integer)) or backfill_depth < 0):
        raise ValueError(f"backfill_depth must be a non-negative integer or None, got {backfill_depth!r}")
    parts = _check_partitions(total_gpus, gpus_per_node, partitions if partitions is not None else {})
    names = list(parts)
    df, n_dropped = prepare_jobs(jobs)
    if "partition" in df.columns:
        home = df["partition"].astype(str)
    else:
        route = default_routing(sorted(df["type"].unique()), parts)
        route.update(routing or {})
        home = df["type"].map(route)
    unknown = sorted(set(home.unique()) - set(names))
    if unknown:
        raise ValueError(f"jobs are routed to unknown partition(s) {unknown}; partitions are {names}")
    pidx = {p: i for i, p in enumerate(names)}
    part = home.map(pidx).to_numpy(np.int64)
    if best_effort_on_reserved:
        if reserved_partition not in parts:
            raise ValueError(f"best_effort_on_reserved needs reserved_partition={reserved_partition!r} among "
                             f"partitions {names}")
    reserved = pidx.get(reserved_partition, -1) if reserved_partition is not None else -1
    if best_effort_types is None:
        be_ok = part != reserved
    else:
        be_ok = df["type"].isin(list(best_effort_types)).to_numpy() & (part != reserved)

    prio = np.zeros(len(df), dtype=np.int64)
    if priorities:
        for t, v in priorities.items():
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
                raise ValueError(f"priorities[{t!r}] must be an integer, got {v!r}")
        prio = df["type"].map({str(k): int(v) for k, v in priorities.items()}).fillna(0).to_numpy(np.int64)
    lat = df["latency_s"].to_numpy(np.float64) if "latency_s" in df.columns else np.zeros(len(df))
    hold = df["run_s"].to_numpy(np.float64) + lat

    order = np.argsort(df["submit_s"].to_numpy(), kind="stable")
    submit = df["submit_s"].to_numpy(np.float64)[order]
    if window is None:
        window = (float(submit[0]), float(submit[-1])) if len(submit) else (0.0, 0.0)
    w0, w1 = float(window[0]), float(window[1])
    if not w0 <= w1:
        raise ValueError(f"window={window} must satisfy t0 <= t1")
    args = (submit, hold[order], df["gpu_num"].to_numpy(np.int64)[order],
            part[order], be_ok[order].astype(np.uint8),
            np.array([parts[p] // gpus_per_node for p in names], dtype=np.int64), int(gpus_per_node))
    kw = dict(reserved=int(reserved), backfill=bool(backfill), best_effort=bool(best_effort_on_reserved),
              backfill_depth=-1 if backfill_depth is None else int(backfill_depth), w0=w0, w1=w1,
              prio=prio[order] if priorities else None)
    if backend == "c":
        raw = _cluster.simulate(*args, **kw)
    else:
        from acmemodel._solver.reference.cluster import simulate_reference
        raw = simulate_reference(*args, **kw)
    inv = np.empty_like(order)
    inv[order] = np.arange(len(order))

    # (the result's columns built as arrays and the frame made once: a frame grown column by column is copied
    # whole to consolidate its blocks at its first row selection, about 1 s per million jobs)
    sub_s = df["submit_s"].to_numpy()
    start_s = raw["start"][inv] + lat
    wait_s = start_s - sub_s
    ran = raw["ran_in"][inv]
    schedulable = raw["status"][inv] == 0
    out = pd.DataFrame({
        "submit_s": sub_s, "run_s": df["run_s"].to_numpy(), "gpu_num": df["gpu_num"].to_numpy(),
        "type": df["type"].to_numpy(), "partition": home.to_numpy(), "start_s": start_s, "end_s": raw["end"][inv],
        "wait_s": wait_s, "latency_s": lat, "contention_s": wait_s - lat, "priority": prio,
        "first_start_s": raw["first_start"][inv] + lat,
        "ran_in": np.where(ran >= 0, np.array(names, dtype=object)[np.maximum(ran, 0)], None),
        "preemptions": raw["preempt"][inv].astype(np.int64), "lost_s": raw["lost"][inv],
        "schedulable": schedulable}, index=df.index)
    unsched = out.index[~schedulable]
    if len(unsched):
        warnings.warn(f"{len(unsched)} job(s) can never fit their partition and were not simulated "
                      f"(see ClusterSimResult.unschedulable)", DataWarning, stacklevel=2)

    span = w1 - w0
    busy = raw["busy"]
    util = pd.DataFrame({"gpus": [parts[p] for p in names], "busy_gpu_s": busy[:, 0],
                         "best_effort_gpu_s": busy[:, 1]}, index=pd.Index(names, name="partition"))
    denom = util["gpus"].to_numpy(np.float64) * span
    with np.errstate(invalid="ignore", divide="ignore"):
        util["utilization"] = np.where(denom > 0, (busy[:, 0] + busy[:, 1]) / np.where(denom > 0, denom, 1), np.nan)

    pre = (out["type"].to_numpy() == pretrain_type) & schedulable
    lo = np.maximum(start_s[pre], w0)
    hi = np.minimum(out["end_s"].to_numpy()[pre], w1)
    work = float(np.sum(out["gpu_num"].to_numpy()[pre] * np.clip(hi - lo, 0, None)))
    throughput = work / span if span > 0 else float("nan")

    res = ClusterSimResult(jobs=out, queue_s=pd.DataFrame(), utilization=util, pretrain_throughput=throughput,
                           unschedulable=unsched, window=(w0, w1), partitions=parts, n_dropped=n_dropped,
                           backend=backend, settings=dict({k: v for k, v in kw.items() if k != "prio"},
                                                        gpus_per_node=int(gpus_per_node),
                                                        reserved_partition=reserved_partition,
                                                        priorities=dict(priorities or {})))
    res.queue_s = _queue_table(out, w0, w1)
    return res


def _in_window(jobs: pd.DataFrame, w0: float, w1: float) -> pd.Series:
    return (jobs["submit_s"] >= w0) & (jobs["submit_s"] <= w1)


def _queue_table(jobs: pd.DataFrame, w0: float, w1: float) -> pd.DataFrame:
    m = (_in_window(jobs, w0, w1) & jobs["schedulable"]).to_numpy()
    sel = pd.DataFrame({"type": jobs["type"].to_numpy()[m], "wait_s": jobs["wait_s"].to_numpy()[m]})
    rows = {}
    for t, w in sel.groupby("type")["wait_s"]:
        v = w.to_numpy(np.float64)
        rows[t] = {"count": len(v), "mean": v.mean(), "p50": np.quantile(v, 0.5), "p90": np.quantile(v, 0.9),
                   "p99": np.quantile(v, 0.99), "max": v.max()}
    cols = ["count", "mean", "p50", "p90", "p99", "max"]
    return pd.DataFrame.from_dict(rows, orient="index", columns=cols).rename_axis("type")


def pooled_wait_quantile(results, job_type: str, q: float) -> float:
    """Quantile q of the pooled waits of ``job_type`` over several results (common random numbers: replicas).

    Unschedulable jobs of that type count as infinite waits (so an undersized partition never meets a target).
    """
    waits = []
    for r in results:
        j = r.jobs[_in_window(r.jobs, *r.window) & (r.jobs["type"] == job_type)]
        waits.append(np.where(j["schedulable"].to_numpy(), j["wait_s"].to_numpy(np.float64), np.inf))
    return wait_quantile(np.concatenate(waits) if waits else np.array([]), q)


def wait_quantile(waits, q: float) -> float:
    """numpy's default (linear) quantile ``q`` of waits where ``inf`` = never starts, except that touching an
    infinite wait gives inf instead of nan (``np.quantile([1, 2, inf], 0.5)`` is nan); nan if empty."""
    v = np.sort(np.asarray(waits, dtype=np.float64))
    if len(v) == 0:
        return float("nan")
    pos = q * (len(v) - 1)
    lo, hi = int(np.floor(pos)), int(np.ceil(pos))
    if np.isinf(v[hi]):
        return float("inf")
    return float(v[lo] + (v[hi] - v[lo]) * (pos - lo))


_wait_quantile = pooled_wait_quantile  # (the earlier private name)
