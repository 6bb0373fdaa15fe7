"""Quota search over the cluster simulator: the smallest evaluation lane, or the largest pretraining reservation,
that meets a queue target such as "evaluation p90 wait <= 600 s".

Method: the candidate quotas are ``lo, lo + step, ..., hi`` GPUs (``step`` a multiple of the node size). Every
candidate is simulated on the *same* workload replicas (common random numbers: the job lists are sampled once, before
the search, so differences between candidates come from the quota alone). The queue metric -- quantile ``quantile``
of the pooled waits of ``target_type`` jobs over the replicas, unschedulable jobs counting as infinite waits -- is
taken to be monotone in the quota (more evaluation GPUs: shorter evaluation waits; a larger pretraining reservation
leaves a smaller shared pool: longer waits). The search brackets the answer by galloping from the cheap end
(``lo`` for the lane, ``hi`` for the reservation; offsets 1, 2, 4, ... steps) and then bisects the bracket down to
one step, so it needs O(log(candidates)) simulations. The returned quota meets the target and its neighbour one step
towards the cheap end does not (both were simulated).

**Latency floor.** With start-up latency (a ``latency_s`` column) every job waits at least its latency, whatever
the quota: ``wait_i = contention_i + latency_i >= latency_i``, so the quantile of the waits is at least the same
quantile of the latencies, ``floor = Q_q(latency_s of the target type's jobs in the window)`` (pooled over the
replicas like the waits). When the target is below that floor no quota can meet it: the search simulates the
cheap and the generous end only (to show the trade-off) and says so in ``reason`` instead of blaming capacity.

Evaluated points that contradict monotonicity (FIFO/backfill
scheduling anomalies are possible) are flagged with a :class:`~acmemodel.errors.DataWarning`.
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from acmemodel.errors import DataWarning
from acmemodel.sim.cluster import (_backend_arg, _in_window, default_routing, prepare_jobs, simulate_cluster,
                                   wait_quantile)
from acmemodel.sim.cluster import pooled_wait_quantile as _wait_quantile  # (module name patched by tests)
from acmemodel.sim.cluster import pooled_wait_quantile as _report_quantile  # the trade-off columns (not the search metric)

__all__ = ["QuotaResult", "find_quota"]

_SEARCHES = {"eval_lane": "eval", "pretrain_reservation": "pretrain"}


@dataclass
class QuotaResult:
    """Outcome of :func:`find_quota`.

    ``quota_gpus`` is the answer (None when no candidate meets the target, then ``feasible`` is False and ``reason``
    says why); ``achieved_wait_s`` the metric there (s); ``neighbour_gpus`` / ``neighbour_wait_s`` the adjacent
    candidate one step towards the cheap end, which misses the target (None if the answer is the cheap end itself);
    ``partitions`` the full layout {name: GPUs} at the answer; ``evaluations`` one row per simulated candidate in
    evaluation order (``gpus``, ``wait_s``, ``meets``, ``pretrain_throughput`` GPU-s/s averaged over replicas,
    ``partitions``, and the p50/p90 waits of the target type and of ``pretrain_type``: ``target_p50_s``,
    ``target_p90_s``, ``pretrain_p50_s``, ``pretrain_p90_s``); ``monotone`` False if the evaluated points contradict the assumed monotonicity;
    ``latency_floor_s`` the smallest ``quantile``-wait no quota can beat (s; the same quantile of the target
    type's start-up latencies, 0 without a ``latency_s`` column; module docstring) and ``below_latency_floor``
    True when the target is below it (then no quota is feasible).
    """

    search: str
    partition: str
    quota_gpus: int | None
    feasible: bool
    target_type: str
    quantile: float
    target_wait_s: float
    achieved_wait_s: float | None
    neighbour_gpus: int | None
    neighbour_wait_s: float | None
    partitions: dict | None
    evaluations: pd.DataFrame
    monotone: bool = True
    reason: str = ""
    candidates: tuple = field(default=())
    latency_floor_s: float = 0.0
    below_latency_floor: bool = False

    def summary(self) -> pd.DataFrame:
        """The simulated candidates (:attr:`evaluations`) sorted by GPUs."""
        return self.evaluations.sort_values("gpus").reset_index(drop=True)

    def to_dict(self) -> dict:
        """JSON-ready dict (infinite waits become None)."""

        def num(v):
            return None if v is None or not math.isfinite(float(v)) else float(v)

        return {
            "search": self.search, "partition": self.partition, "quota_gpus": self.quota_gpus,
            "feasible": self.feasible, "target_type": self.target_type, "quantile": self.quantile,
            "target_wait_s": self.target_wait_s, "achieved_wait_s": num(self.achieved_wait_s),
            "neighbour_gpus": self.neighbour_gpus, "neighbour_wait_s": num(self.neighbour_wait_s),
            "partitions": self.partitions, "monotone": self.monotone, "reason": self.reason,
            "latency_floor_s": num(self.latency_floor_s), "below_latency_floor": bool(self.below_latency_floor),
            "evaluations": [{"gpus": int(r.gpus), "wait_s": num(r.wait_s), "meets": bool(r.meets),
                             "pretrain_throughput": num(r.pretrain_throughput),
                             "target_p50_s": num(r.target_p50_s), "target_p90_s": num(r.target_p90_s),
                             "pretrain_p50_s": num(r.pretrain_p50_s), "pretrain_p90_s": num(r.pretrain_p90_s)}
                            for r in self.evaluations.itertuples()],
        }


def _replicas(jobs, n_replicas, seed):
    if callable(jobs):
        if not isinstance(n_replicas, (int, np.integer)) or n_replicas < 1:
            raise ValueError(f"n_replicas must be a positive integer, got {n_replicas!r}")
        seqs = np.random.SeedSequence(seed).spawn(int(n_replicas))
        return [jobs(np.random.default_rng(s)) for s in seqs]
    if isinstance(jobs, (list, tuple)):
        if not jobs:
            raise ValueError("jobs is an empty list of replicas")
        return list(jobs)
    return [jobs]


class QuotaFitError(ValueError):
    """The fixed partitions leave no room for a quota candidate: the message says what does not fit
    (the GPUs left, the largest job of the shared pool and of the searched partition) and what would
    (the largest fixed partitions or the smallest cluster that leave room)."""


def _no_room(name, fixed, total_gpus, room, g_shared, g_own, lo, step) -> None:
    """Raise :class:`QuotaFitError`: the fixed partitions leave ``room`` GPUs, the searched partition
    needs at least ``lo`` and the shared pool ``g_shared`` (its largest job)."""
    own = max(lo, -(-g_own // step) * step)  # the searched partition must hold its largest job
    need = own + g_shared
    fixed_txt = ", ".join(f"{k} {v:,}" for k, v in fixed.items()) or "none"
    what = (f"the fixed partitions ({fixed_txt}) leave {max(room, 0):,} of {total_gpus:,} GPUs for {name!r} "
            f"and 'shared', but the largest shared job needs {g_shared:,} GPUs and {name!r} at least {own:,}"
            + (" (its largest job)" if own > lo else ""))
    would = []
    for k, v in fixed.items():
        others = sum(x for kk, x in fixed.items() if kk != k)
        fit = (total_gpus - others - need) // step * step
        if fit >= 0:
            would.append(f"{k} at most {fit:,} GPUs")
    would.append(f"a cluster of at least {sum(fixed.values()) + need:,} GPUs")
    if g_shared > 0:
        would.append(f"routing the {g_shared:,}-GPU shared jobs to another partition (cluster.routing)")
    raise QuotaFitError(f"{what}; would fit: " + ", or ".join(would))


def _max_alloc(gpus: np.ndarray, gpn: int) -> int:
    """GPUs of the smallest partition (in whole nodes) that holds every job of ``gpus``; 0 if there is none."""
    if len(gpus) == 0:
        return 0
    g = int(gpus.max())
    return gpn if g <= gpn else -(-g // gpn) * gpn


def find_quota(jobs, *, total_gpus: int, gpus_per_node: int = 8, search: str = "eval_lane",
               target_type: str = "Eval", quantile: float = 0.9, target_wait_s: float = 600.0,
               partitions: dict | None = None, step: int | None = None, lo: int | None = None, hi: int | None = None,
               n_replicas: int = 1, seed: int | None = 0, backend: str = "c",
               pretrain_type: str = "Pretrain",
               **sim_kwargs) -> QuotaResult:
    """Find the quota that meets ``quantile``-wait of ``target_type`` jobs <= ``target_wait_s`` seconds.

    Parameters
    ----------
    jobs : a job list (DataFrame / mapping of arrays, see :func:`simulate_cluster`), a list of them (replicas), or a
        callable ``jobs(rng) -> job list`` sampled ``n_replicas`` times with independent streams from ``seed``. The
        replicas are fixed before the search (common random numbers).
    search : ``"eval_lane"`` -- smallest dedicated ``"eval"`` partition; or ``"pretrain_reservation"`` -- largest
        reserved ``"pretrain"`` partition.
    partitions : the other, fixed partitions (e.g. ``{"pretrain": 1024}`` for a lane search, ``{"eval": 128}`` for a
        reservation search); ``"shared"`` always gets the remaining GPUs.
    step : candidate spacing in GPUs (default ``gpus_per_node``; must be a multiple of it).
    lo, hi : candidate range in GPUs. Defaults: the lane from one step up to leaving the shared pool room for its
        largest job; the reservation from the smallest that holds every pretraining job up to the same upper limit.
    sim_kwargs : passed to :func:`simulate_cluster` (``routing``, ``backfill``, ``best_effort_on_reserved``, ...).
    """
    if search not in _SEARCHES:
        raise ValueError(f"search must be one of {sorted(_SEARCHES)}, got {search!r}")
    if not 0.0 < float(quantile) < 1.0:
        raise ValueError(f"quantile must be in (0, 1), got {quantile!r}")
    if not float(target_wait_s) >= 0.0:
        raise ValueError(f"target_wait_s must be >= 0, got {target_wait_s!r}")
    if not isinstance(gpus_per_node, (int, np.integer)) or gpus_per_node < 1:
        raise ValueError(f"gpus_per_node must be a positive integer, got {gpus_per_node!r}")
    if not isinstance(total_gpus, (int, np.integer)) or total_gpus < 1 or total_gpus % gpus_per_node:
        raise ValueError(f"total_gpus must be a positive multiple of gpus_per_node={gpus_per_node}, got {total_gpus!r}")
    step = gpus_per_node if step is None else step
    if not isinstance(step, (int, np.integer)) or step < 1 or step % gpus_per_node:
        raise ValueError(f"step must be a positive multiple of gpus_per_node={gpus_per_node}, got {step!r}")
    backend = _backend_arg(backend)
    for k in ("partitions", "total_gpus", "gpus_per_node", "backend"):
        if k in sim_kwargs:
            raise ValueError(f"{k} is set by find_quota; do not pass it in sim_kwargs")
    name = _SEARCHES[search]
    fixed = {k: int(v) for k, v in (partitions or {}).items() if k not in (name, "shared")}
    if "shared" in (partitions or {}) or name in (partitions or {}):
        raise ValueError(f"partitions must not contain 'shared' or the searched partition {name!r}: {partitions}")
    for k, v in fixed.items():
        if v < 0 or v % gpus_per_node:
            raise ValueError(f"partitions[{k!r}]={v} must be a non-negative multiple of gpus_per_node")

    reps = _replicas(jobs, n_replicas, seed)
    prepared = [prepare_jobs(r)[0] for r in reps]
    if not any((p["type"] == target_type).any() for p in prepared):
        raise ValueError(f"target_type={target_type!r} has no jobs in the workload")

    # routing does not depend on partition sizes, only on which partitions exist
    names = {**fixed, name: step, "shared": 0}
    routing = sim_kwargs.get("routing") or {}

    def home(p):
        if "partition" in p.columns:
            return p["partition"].astype(str)
        route = default_routing(sorted(p["type"].unique()), names)
        route.update(routing)
        return p["type"].map(route)

    homes = [home(p) for p in prepared]
    g_shared = _max_alloc(np.concatenate([p["gpu_num"].to_numpy()[h.to_numpy() == "shared"]
                                          for p, h in zip(prepared, homes)]), gpus_per_node)
    g_own = _max_alloc(np.concatenate([p["gpu_num"].to_numpy()[h.to_numpy() == name]
                                       for p, h in zip(prepared, homes)]), gpus_per_node)
    room = total_gpus - sum(fixed.values())
    if room <= 0:
        _no_room(name, fixed, total_gpus, room, g_shared, g_own,
                 step if search == "eval_lane" else max(step, -(-g_own // step) * step), step)
    if lo is None:
        lo = step if search == "eval_lane" else max(step, -(-g_own // step) * step)
    if hi is None:
        hi = (room - g_shared) // step * step
        if hi < lo:
            _no_room(name, fixed, total_gpus, room, g_shared, g_own, lo, step)
    for k, v in (("lo", lo), ("hi", hi)):
        if not isinstance(v, (int, np.integer)) or v < 0 or v % gpus_per_node:
            raise ValueError(f"{k}={v!r} must be a non-negative multiple of gpus_per_node={gpus_per_node}")
    if hi > room:
        raise ValueError(f"hi={hi} exceeds the {room} GPUs left by partitions={fixed}")
    if lo > hi:
        raise QuotaFitError(f"no candidate quota: lo={lo} > hi={hi} GPUs (total_gpus={total_gpus}, fixed "
                         f"partitions={fixed}, largest shared job needs {g_shared}, largest {name} job {g_own})")
    m = (hi - lo) // step
    cheap_first = search == "eval_lane"

    def gpus_at(u):  # u = 0 is the cheap end, u grows towards the generous end
        return lo + u * step if cheap_first else hi - u * step

    cache = {}
    rows = []
    floor = {}

    def latency_floor(res) -> float:
        lat = [r.jobs.loc[_in_window(r.jobs, *r.window) & (r.jobs["type"] == target_type), "latency_s"]
               .to_numpy(np.float64) for r in res]
        v = wait_quantile(np.concatenate(lat) if lat else np.array([]), float(quantile))
        return 0.0 if not math.isfinite(v) else float(v)

    def evaluate(u):
        g = gpus_at(u)
        if g not in cache:
            layout = {**fixed, name: int(g), "shared": int(room - g)}
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DataWarning)  # unschedulable jobs are inf waits here
                res = [simulate_cluster(p, total_gpus=total_gpus, gpus_per_node=gpus_per_node, partitions=layout,
                                        backend=backend, pretrain_type=pretrain_type, **sim_kwargs)
                       for p in prepared]
            w = _wait_quantile(res, target_type, float(quantile))
            floor.setdefault("s", latency_floor(res))  # the same jobs and latencies at every candidate
            cache[g] = w
            row = {"gpus": int(g), "wait_s": w, "meets": bool(w <= target_wait_s),
                   "pretrain_throughput": float(np.mean([r.pretrain_throughput for r in res])),
                   "partitions": layout}
            for ty, tag in ((target_type, "target"), (pretrain_type, "pretrain")):
                for q in (0.5, 0.9):
                    row[f"{tag}_p{int(q * 100)}_s"] = _report_quantile(res, ty, q)
            rows.append(row)
        return cache[g] <= target_wait_s

    # bracket: gallop from the cheap end until the target is met
    bad, good = None, None
    if evaluate(0):
        good = 0
    elif floor["s"] > target_wait_s:  # no quota beats the start-up latency: show both ends, search no further
        if m > 0:
            evaluate(m)
        bad = m
    else:
        bad, u = 0, 1
        while u <= m:
            if evaluate(u):
                good = u
                break
            bad = u
            if u == m:
                break
            u = min(2 * u, m)
    # bisect (bad, good) down to adjacent candidates
    if good is not None and bad is not None:
        while good - bad > 1:
            mid = (good + bad) // 2
            if evaluate(mid):
                good = mid
            else:
                bad = mid

    ev = pd.DataFrame(rows, columns=["gpus", "wait_s", "meets", "pretrain_throughput", "partitions",
                                     "target_p50_s", "target_p90_s", "pretrain_p50_s", "pretrain_p90_s"])
    monotone = _is_monotone(ev, increasing_good=cheap_first)
    if not monotone:
        warnings.warn(f"quota search {search}: the simulated {target_type} p{quantile * 100:g} waits are not "
                      f"monotone in the quota; the bisection result may not be the global optimum",
                      DataWarning, stacklevel=2)
    common = dict(search=search, partition=name, target_type=target_type, quantile=float(quantile),
                  target_wait_s=float(target_wait_s), evaluations=ev, monotone=monotone,
                  candidates=tuple(gpus_at(u) for u in range(m + 1)), latency_floor_s=floor["s"],
                  below_latency_floor=bool(floor["s"] > target_wait_s))
    if good is None:
        g_end = gpus_at(m)
        what = "largest evaluation lane" if cheap_first else "smallest pretraining reservation"
        lbl = f"{target_type} p{quantile * 100:g}"
        if floor["s"] > target_wait_s:
            reason = (f"the target is below the latency floor: the start-up latency alone gives {lbl} "
                      f"{_human_s(floor['s'])} > target {_human_s(target_wait_s)}, so no quota can meet it "
                      f"(the {what}, {g_end:,} GPUs, gives {_human_s(cache[g_end])}); lower the latency or "
                      f"raise the target")
        else:
            reason = (f"even the {what} ({g_end:,} GPUs) gives {lbl} wait {_human_s(cache[g_end])} > target "
                      f"{_human_s(target_wait_s)}" + (f" (latency floor {_human_s(floor['s'])})"
                                                       if floor["s"] > 0 else ""))
        return QuotaResult(quota_gpus=None, feasible=False, achieved_wait_s=None, neighbour_gpus=None,
                           neighbour_wait_s=None, partitions=None, reason=reason, **common)
    g = gpus_at(good)
    nb = gpus_at(bad) if bad is not None else None
    return QuotaResult(quota_gpus=int(g), feasible=True, achieved_wait_s=cache[g], neighbour_gpus=nb,
                       neighbour_wait_s=cache[nb] if nb is not None else None,
                       partitions={**fixed, name: int(g), "shared": int(room - g)}, **common)


def _human_s(s: float) -> str:
    """A wait in seconds as ``"42 s"``, ``"10.8 min"``, ``"2.5 h"`` (``inf`` for a never-starting job)."""
    if not math.isfinite(s):
        return "inf"
    if s < 90:
        return f"{s:.0f} s"
    if s < 5400:
        return f"{s / 60:.1f} min"
    return f"{s / 3600:,.1f} h"


def _is_monotone(ev: pd.DataFrame, increasing_good: bool) -> bool:
    """True if the waits never rise with the lane (fall with the reservation) across evaluated candidates."""
    if len(ev) < 2:
        return True
    e = ev.sort_values("gpus")
    w = e["wait_s"].to_numpy(np.float64)
    w = np.where(np.isnan(w), np.inf, w)
    d = np.diff(w) if not increasing_good else -np.diff(w)
    with np.errstate(invalid="ignore"):
        return bool(np.all((d >= 0) | (np.isinf(w[1:]) & np.isinf(w[:-1]))))
