"""Category-conditioned queueing-delay model: ``QueueModel``.

Queueing delay ``W`` (seconds; ``start − submit``) per cell — by default cluster × type × GPU-size
bucket — as a **hurdle** model: an explicit atom ``π0 = P(W <= atom_s)`` (default ``atom_s = 1``
second: in Seren about half of evaluation jobs start within a second) plus a continuous family for
the excess ``W − atom_s`` of the jobs that wait (minutes to hours). Jobs cancelled while still
queued (``queue_censored``) are **right-censored** waits: they contribute ``log S(c − atom_s)`` to
the continuous part's likelihood (censored MLE for every family: Weibull profile equation,
L-BFGS for the other log-location-scale families and the gamma, EM with truncated-normal moments for
the mixture, Kaplan–Meier atoms for the empirical family) and count as "not immediate" in ``π0``.
They are neither dropped nor treated as zeros. Family selection, back-off, sparse/degenerate
handling as in :mod:`acmemodel.models._duration`.

The final state is *not* a default key: it is decided after the wait, and every queued-then-
cancelled job is CANCELLED, so conditioning on it would confound waiting with cancelling.

**Two parts of the wait.** ``W = L + C``: the *start-up latency* ``L`` — the wait a job has even on
an idle cluster (Kubernetes pod creation on Kalos, the Slurm scheduling cycle on Seren) — and the
*contention* wait ``C`` (waiting for GPUs). ``L`` is estimated per cluster × type
(:class:`StartupLatencyModel`, the same hurdle families) from the jobs that started while enough GPUs
were **free**: a GPU job of ``g`` GPUs submitted at ``t`` counts as submitted to a free cluster when
(1) the cluster's idle GPUs at ``t`` — capacity minus the GPUs of the jobs running at ``t`` (start < t
<= end, from the trace's own timestamps) — are at least ``8 * ceil(g / 8) + free_margin_gpus`` (its
whole nodes plus a margin against fragmentation) **and** the whole nodes of every earlier GPU job of
the cluster and of its type still waiting at ``t`` (submitted before ``t``, not started before
``t``; a job cancelled in the queue waits until its end). Without the waiting jobs, idle GPUs held
back for a waiting job (a partition or priority class the job shares) would count as free and the
contention of the jobs queued behind it as latency; with them, jobs that are only in their own
start-up latency (they fit the idle GPUs) do not hide the cluster's idleness from the next one. The
queue is the job's type's: under Acme's policy the types are priority classes (evaluation below the
rest), so a backlog of evaluation jobs does not hold back a fine-tuning job; a type with no free job
backs off to the cluster's cell (reported). Capacity: ``cluster_gpus`` (default the
published sizes of Seren and Kalos, :func:`acmemodel.clusters.cluster_gpus`; other clusters: the
peak GPUs in use). On such jobs ``C`` ≈ 0, so their wait is the latency. The latency of a cluster ×
type is measured on its single-node jobs (``g <= 8``; multi-node jobs can still wait for whole free
nodes or be preempted, which a trace does not show) where it has at least ``min_jobs`` of them, else
on all its free jobs; its multi-node free jobs join when at least ``POOL_MIN_JOBS`` (20) of them wait
like the single-node ones (two-sample KS test not rejected at 1 %): Kalos's debug jobs are mostly
multi-node, and their 94 single-node free jobs alone put 20 % of the latencies at <= 10 s against
27 % of all 537. The cluster simulator draws
``L`` per job (:meth:`QueueModel.sample_latency`) and adds it once to its own contention wait
(:mod:`acmemodel.sim.cluster`). :meth:`QueueModel.summary` shows both parts per cell.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd

from acmemodel.features.keys import DEFAULT_BACKOFF, DEFAULT_GPU_EDGES
from acmemodel.models._duration import DurationModel
from acmemodel.models.base import register
from acmemodel.models.distributions import FAMILIES, uniforms

__all__ = ["QueueModel", "StartupLatencyModel", "free_at_submit", "LATENCY_FAMILIES"]

#: multi-node free jobs join a latency cell's fit when at least this many of them wait like the
#: single-node ones (two-sample KS test not rejected at POOL_ALPHA; module docstring)
POOL_MIN_JOBS = 20
POOL_ALPHA = 0.01

#: families of the latency part of :class:`QueueModel` (its cells' laws are drawn from, not extrapolated)
LATENCY_FAMILIES: tuple[str, ...] = ("empirical",)


#: a jobs column that, when present, is :func:`free_at_submit` of the rows as given (``QueueModel.fit`` then uses
#: it): the out-of-core fit (:func:`acmemodel.pipeline.fit_streamed`) computes it on every job of the trace and
#: fits the queue model on a sample, whose own occupancy would be a fraction of the cluster's
FREE_COLUMN = "free_at_submit"


def free_at_submit(jobs: pd.DataFrame, *, cluster_gpus=None, margin_gpus: int = 8,
                   gpus_per_node: int = 8, empty_queue: bool = True) -> np.ndarray:
    """Boolean per row of ``jobs``: a started GPU job submitted while enough GPUs were free (module
    docstring: idle GPUs at submit >= ``gpus_per_node * ceil(g / gpus_per_node) + margin_gpus``, plus,
    with ``empty_queue``, the whole nodes of the earlier-submitted GPU jobs of the cluster and type still
    waiting at submit).

    ``jobs`` needs ``cluster, gpu_num, submit_s, start_s, end_s``; ``cluster_gpus`` maps cluster ->
    GPUs (default: the published sizes; unknown clusters: the peak GPUs in use in the trace).
    """
    from acmemodel.clusters import cluster_gpus as published_gpus

    out = np.zeros(len(jobs), dtype=bool)
    cl_all = jobs["cluster"].astype(str).to_numpy()
    g_all = jobs["gpu_num"].to_numpy(dtype=float)
    sub_all = jobs["submit_s"].to_numpy(dtype=float)
    st_all = jobs["start_s"].to_numpy(dtype=float)
    en_all = jobs["end_s"].to_numpy(dtype=float)
    ty_all = jobs["type"].astype(str).to_numpy() if empty_queue and "type" in jobs.columns else None
    for cl in np.unique(cl_all):
        m = np.flatnonzero((cl_all == cl) & (g_all > 0))
        run = m[np.isfinite(st_all[m]) & np.isfinite(en_all[m])]
        if len(run) == 0:
            continue
        g, st, en = g_all[run], st_all[run], en_all[run]
        o_s, o_e = np.argsort(st, kind="stable"), np.argsort(en, kind="stable")
        s_sorted, e_sorted = st[o_s], en[o_e]
        cs, ce = np.r_[0.0, np.cumsum(g[o_s])], np.r_[0.0, np.cumsum(g[o_e])]

        def busy(t):
            return cs[np.searchsorted(s_sorted, t, side="left")] - ce[np.searchsorted(e_sorted, t, side="right")]

        cap = None
        if cluster_gpus is not None and cl in cluster_gpus:
            cap = float(cluster_gpus[cl])
        else:
            try:
                cap = float(published_gpus(cl))
            except (KeyError, ValueError):
                cap = float(np.max(busy(np.r_[st, en]))) if len(st) else 0.0
        nodes_g = gpus_per_node * np.ceil(g_all[m] / gpus_per_node)
        need = nodes_g + margin_gpus
        if empty_queue:
            # waiting at t: submitted before t and not started before t (never started: until its end),
            # among the jobs of the same type (one priority class; other types' queues do not hold it back);
            # their whole nodes are added to what the idle GPUs must hold
            ty_m = ty_all[m] if ty_all is not None else np.zeros(len(m), dtype=object)
            for ty in np.unique(ty_m):
                k = np.flatnonzero(ty_m == ty)
                mk = m[k]
                left = np.where(np.isfinite(st_all[mk]), st_all[mk], en_all[mk])
                o_sub, o_left = np.argsort(sub_all[mk], kind="stable"), np.argsort(left, kind="stable")
                c_sub = np.r_[0.0, np.cumsum(nodes_g[k][o_sub])]
                ok_left = np.isfinite(left[o_left])
                c_left = np.r_[0.0, np.cumsum(np.where(ok_left, nodes_g[k][o_left], 0.0))]
                t = sub_all[mk]
                w = (c_sub[np.searchsorted(sub_all[mk][o_sub], t, side="left")]
                     - c_left[np.searchsorted(left[o_left], t, side="left")])
                need[k] += np.maximum(w, 0.0)
        ok = np.isfinite(st_all[m]) & (cap - busy(sub_all[m]) >= need)
        out[m] = ok
    return out


def _same_latency(q: np.ndarray, codes: np.ndarray, ok: np.ndarray, small: np.ndarray) -> np.ndarray:
    """Per row: the multi-node free jobs (``ok & ~small``) of its group (``codes``: cluster × type) wait
    ``q`` like the group's single-node ones — at least ``POOL_MIN_JOBS`` of them and a two-sample KS test
    not rejected at ``POOL_ALPHA`` — so they are latency too and join the fit (module docstring)."""
    from scipy.stats import ks_2samp

    out = np.zeros(len(q), bool)
    for g in np.unique(codes[ok]):
        m = (codes == g) & ok
        a, b = q[m & small], q[m & ~small]
        if len(a) and len(b) >= POOL_MIN_JOBS and ks_2samp(a, b).pvalue >= POOL_ALPHA:
            out[codes == g] = True
    return out


#: above this many stratified latency draws the quantile function is interpolated between its exact values at this
#: many levels (:meth:`QueueModel.sample_latency`; an exact inversion of 400,000 Seren Eval draws takes ~9 s)
STRATIFIED_EXACT = 8192


#: :func:`_whole_second_quantiles` inverts level by level when its grid would have more than this many points per
#: draw (an exact inversion costs about 30 cdf evaluations per level, the grid one per point)
GRID_PER_DRAW = 25
#: the largest whole-second latency (s) :func:`_whole_second_quantiles` inverts on its grid of half-seconds (above it,
#: exactly level by level)
WHOLE_SECOND_GRID_MAX = 200_000


def _whole_second_quantiles(ppf, cdf, u: np.ndarray) -> np.ndarray:
    """``round(max(F⁻¹(u), 0))`` for the generalised inverse ``F⁻¹(u) = inf{x : F(x) >= u}``, exactly, without
    inverting ``F`` level by level: ``F⁻¹(u) <= h ⟺ u <= F(h)``, so the rounded value is the number of
    half-seconds ``h = ½, 1½, …`` with ``F(h) < u`` (one ``cdf`` call on that grid, up to the largest draw's
    whole second, at most :data:`WHOLE_SECOND_GRID_MAX`; draws above it are inverted exactly and rounded).
    Equal to rounding the exact inverse except for draws within rounding error of a half-second (NumPy's
    round-half-to-even on an exact tie, an event of probability 0)."""
    u = np.asarray(u, dtype=float)
    if not len(u):
        return np.zeros(0)
    top = float(np.max(np.asarray(ppf(np.array([np.max(u)])), dtype=float)))
    k = int(min(max(np.ceil(top), 0.0), WHOLE_SECOND_GRID_MAX)) if np.isfinite(top) else WHOLE_SECOND_GRID_MAX
    if k + 1 > GRID_PER_DRAW * len(u):  # few draws over a long range: level by level is cheaper
        return np.round(np.maximum(np.asarray(ppf(u), dtype=float), 0.0))
    h = np.arange(k + 1, dtype=float) + 0.5
    F = np.maximum.accumulate(np.asarray(cdf(h), dtype=float))  # (a CDF: monotone; guards rounding)
    out = np.searchsorted(F, u, side="left").astype(float)  # #{h : F(h) < u}
    beyond = u > F[-1]
    if beyond.any():
        out[beyond] = np.round(np.maximum(np.asarray(ppf(u[beyond]), dtype=float), 0.0))
    return out


#: :func:`_quantiles`' exact values at the stratum midpoints, per law (:func:`_law_fingerprint`): the same law is
#: inverted for every synthetic trace drawn from one bundle (the calibration's and reproduce's replicas, each a
#: fresh copy of the bundle in a worker process), at the same levels
_MIDPOINT_QUANTILES: dict = {}
_MIDPOINT_CACHE_SIZE = 64


def _law_fingerprint(law):
    """The SHA-256 of a fitted law's exact state (every attribute, recursively: arrays by dtype, shape and bytes,
    numbers by ``repr``, which round-trips), equal for a copy of the law (e.g. the same bundle sent to a worker
    process) and different for any other law; None where a part cannot be described (no memo then). Not the
    saved JSON, which rounds."""
    import hashlib

    h = hashlib.sha256()

    def feed(x, depth=0) -> bool:
        if depth > 12:
            return False
        if isinstance(x, np.ndarray):
            if x.dtype == object:
                return all(feed(v, depth + 1) for v in x.ravel())
            h.update(f"a{x.dtype.str}{x.shape}".encode())
            h.update(np.ascontiguousarray(x).tobytes())
            return True
        if x is None or isinstance(x, (bool, int, float, str, np.generic)):
            h.update(f"{type(x).__name__}:{x!r};".encode())
            return True
        if isinstance(x, (list, tuple)):
            h.update(f"{type(x).__name__}{len(x)}[".encode())
            return all(feed(v, depth + 1) for v in x)
        if isinstance(x, dict):
            h.update(f"d{len(x)}{{".encode())
            return all(feed(str(k), depth + 1) and feed(v, depth + 1) for k, v in sorted(x.items(), key=lambda kv: str(kv[0])))
        state = getattr(x, "__dict__", None)
        if state is None:
            return False
        h.update(f"o{type(x).__module__}.{type(x).__qualname__}".encode())
        return feed(state, depth + 1)

    return h.hexdigest() if feed(law) else None


def _quantiles(ppf, u: np.ndarray, law=None) -> np.ndarray:
    """``ppf(u)``, exact for at most :data:`STRATIFIED_EXACT` values, else linear between exact values at the
    midpoints ``(i + ½)/m`` of ``m = STRATIFIED_EXACT`` strata and exact outside ``[½/m, 1 − ½/m]`` (the
    midpoint values remembered per ``law``, the fitted law ``ppf`` inverts, :data:`_MIDPOINT_QUANTILES`)."""
    m = STRATIFIED_EXACT
    if len(u) <= m:
        return np.asarray(ppf(u), dtype=float)
    lv = (np.arange(m) + 0.5) / m
    fp = _law_fingerprint(law) if law is not None else None
    at = _MIDPOINT_QUANTILES.get(fp) if fp is not None else None
    if at is None:
        at = np.asarray(ppf(lv), dtype=float)
        if fp is not None:
            if len(_MIDPOINT_QUANTILES) >= _MIDPOINT_CACHE_SIZE:
                _MIDPOINT_QUANTILES.pop(next(iter(_MIDPOINT_QUANTILES)))
            _MIDPOINT_QUANTILES[fp] = at
    out = np.interp(u, lv, at)
    tail = (u < lv[0]) | (u > lv[-1])
    if tail.any():
        out[tail] = np.asarray(ppf(u[tail]), dtype=float)
    return out


@register
class StartupLatencyModel(DurationModel):
    """Start-up latency ``L`` (seconds): the wait of jobs submitted to a free cluster (module
    docstring), per cell (default cluster × type), as a hurdle: atom ``P(L <= atom_s)`` + a fitted
    continuous family for the excess (the families and back-off of :class:`QueueModel`).

    Fitted on the rows flagged by the boolean column ``free`` (see :func:`free_at_submit`); with
    ``single_node_gpus`` (default 8, None = every size) a cluster × type with at least ``min_jobs``
    free jobs of at most that many GPUs is fitted on those only (module docstring). Whole-second
    waits above the atom are dequantised (``w + U(-0.5, 0.5)``, fixed seed) before fitting, since a
    recorded ``w`` stands for a latency in ``[w - 0.5, w + 0.5)``. Back-off
    drops ``type`` before ``cluster`` (the latency is a property of the cluster's scheduler first).
    Fitted attributes: ``cells_``, ``n_fit_``.
    """

    POOL_ONE_SE = False  # (the best held-out k: :attr:`DurationModel.POOL_ONE_SE`)

    _required = ("cluster", "type", "gpu_num", "queue_s", "free")
    _kind = "start-up latency"

    def fit(self, trace_or_jobs, *, timezones=None) -> "StartupLatencyModel":
        """Fit on the free jobs (class docstring); also records ``types_seen_`` (every job type of the
        fitted GPU jobs): a type that had no job submitted to a free cluster is answered from its
        cluster's cell (a reported back-off), not refused as unknown. Returns self."""
        super().fit(trace_or_jobs, timezones=timezones)
        jobs = self._jobs_of(trace_or_jobs)
        rows = self._gpu_rows(jobs, np.ones(len(jobs), bool))
        self.types_seen_ = sorted(set(jobs.loc[rows, "type"].astype(str))) if "type" in jobs.columns else []
        return self

    def resolve(self, **key):
        """:meth:`DurationModel.resolve`, except that a ``type`` seen in the fitted jobs (``types_seen_``)
        with no free job drops ``type`` (the cluster's cell answers; one DataWarning names it)."""
        ty = key.get("type")
        if ty is not None and str(ty) in getattr(self, "types_seen_", ()):
            self._check_fitted()
            if str(ty) not in self.cells_.known_values().get("type", []):
                import warnings

                from acmemodel.errors import DataWarning

                warned = self.__dict__.setdefault("_no_free_warned", set())
                if str(ty) not in warned:
                    warned.add(str(ty))
                    warnings.warn(f"StartupLatencyModel: no {ty} job was submitted to a free cluster; its "
                                  "latency is answered from the cluster's cell (drops type)", DataWarning,
                                  stacklevel=2)
                key = {k: v for k, v in key.items() if k != "type"}
        return super().resolve(**key)

    def _fitted_to_dict(self) -> dict:
        d = super()._fitted_to_dict()
        d["types_seen"] = list(getattr(self, "types_seen_", []))
        return d

    def _fitted_from_dict(self, d: dict, artifacts: dict) -> None:
        super()._fitted_from_dict(d, artifacts)
        self.types_seen_ = [str(t) for t in d.get("types_seen") or []]

    def __init__(self, *, keys: Sequence[str] = ("cluster", "type"), min_jobs: int = 50,
                 min_jobs_coarsest: int | None = 10, backoff: Sequence[str] = ("state", "gpu_bucket", "type", "cluster"),
                 families: Sequence[str] = tuple(FAMILIES), selection: str = "heldout",
                 gpu_only: bool = True, gpu_edges: Sequence[int] = DEFAULT_GPU_EDGES,
                 max_fit_jobs: int = 20000, atom_s: float = 1.0, single_node_gpus: int | None = 8,
                 pooling: str = "heldout"):
        self.keys = keys
        self.min_jobs = min_jobs
        self.min_jobs_coarsest = min_jobs_coarsest
        self.backoff = backoff
        self.families = families
        self.selection = selection
        self.gpu_only = gpu_only
        self.gpu_edges = gpu_edges
        self.max_fit_jobs = max_fit_jobs
        self.atom_s = atom_s
        self.single_node_gpus = single_node_gpus
        self.pooling = pooling

    def _threshold(self) -> float:
        return float(self.atom_s)

    def _observations(self, jobs: pd.DataFrame) -> pd.DataFrame:
        ok = jobs["queue_s"].notna().to_numpy() & jobs["free"].fillna(False).astype(bool).to_numpy()
        if "queue_censored" in jobs.columns:
            ok &= ~jobs["queue_censored"].fillna(False).astype(bool).to_numpy()
        ok = self._gpu_rows(jobs, ok)
        if self.single_node_gpus is not None:
            # per cluster x type: its single-node free jobs where it has min_jobs of them, else all its free jobs
            small = jobs["gpu_num"].to_numpy(dtype=float) <= float(self.single_node_gpus)
            cols = [c for c in ("cluster", "type") if c in jobs.columns]
            if cols:
                codes = jobs.groupby([jobs[c].astype(str) for c in cols], sort=True).ngroup().to_numpy()
                cnt = np.bincount(codes, weights=ok & small)[codes]
                q = jobs["queue_s"].to_numpy(dtype=float)
                keep_all = (cnt < int(self.min_jobs)) | _same_latency(q, codes, ok, small)
                ok = ok & (small | keep_all)
        sub = jobs.loc[ok]
        x = np.maximum(sub["queue_s"].to_numpy(dtype=float), 0.0)
        # whole-second waits above the atom are dequantised (w -> w + U(-0.5, 0.5), fixed seed): a recorded
        # w stands for a latency in [w - 0.5, w + 0.5), and the model's draws are rounded back to seconds
        whole = (x >= self.atom_s + 1.0) & (x == np.round(x))
        x = np.where(whole, x + np.random.default_rng(0).uniform(-0.5, 0.5, len(x)), x)
        return self._frame(sub, x, np.zeros(len(sub), bool))


@register
class QueueModel(DurationModel):
    """Queueing delay (seconds) per cell: atom at ``<= atom_s`` + censored-MLE continuous part.

    Parameters (keyword-only) as :class:`~acmemodel.models.runtime.RuntimeModel`, except the
    default ``keys=("cluster", "type", "gpu_bucket")`` and ``atom_s`` (default 1.0 s): waits of
    at most this many seconds form the "immediate start" atom.

    ``latency`` (default True): also fit the start-up latency part (:class:`StartupLatencyModel`
    on the jobs submitted to a free cluster, module docstring) with ``free_margin_gpus`` and
    ``cluster_gpus`` ({cluster: GPUs}, default the published sizes) defining "free".

    Fitted attributes: ``cells_``, ``n_fit_`` (GPU jobs with a wait, censored ones included),
    ``latency_`` (the fitted :class:`StartupLatencyModel` or None), ``parts_`` (DataFrame per cluster
    × type: jobs, free jobs, mean and median total wait, latency mean/median, contention mean =
    total mean − latency mean, s). :meth:`p_immediate` gives ``π0`` of a cell.
    """

    POOL_ONE_SE = False  # (the best held-out k: :attr:`DurationModel.POOL_ONE_SE`)

    _required = ("cluster", "type", "gpu_num", "queue_s", "queue_censored")
    _kind = "queueing delay"

    def __init__(self, *, keys: Sequence[str] = ("cluster", "type", "gpu_bucket"),
                 min_jobs: int = 200, min_jobs_coarsest: int | None = 30,
                 backoff: Sequence[str] = DEFAULT_BACKOFF,
                 families: Sequence[str] = tuple(FAMILIES), selection: str = "heldout",
                 gpu_only: bool = True, gpu_edges: Sequence[int] = DEFAULT_GPU_EDGES,
                 max_fit_jobs: int = 20000, atom_s: float = 1.0, latency: bool = True,
                 free_margin_gpus: int = 8, cluster_gpus=None, pooling: str = "heldout"):
        self.keys = keys
        self.min_jobs = min_jobs
        self.min_jobs_coarsest = min_jobs_coarsest
        self.backoff = backoff
        self.families = families
        self.selection = selection
        self.gpu_only = gpu_only
        self.gpu_edges = gpu_edges
        self.max_fit_jobs = max_fit_jobs
        self.atom_s = atom_s
        self.latency = latency
        self.free_margin_gpus = free_margin_gpus
        self.cluster_gpus = cluster_gpus
        self.pooling = pooling

    def _validate_params(self) -> None:
        super()._validate_params()
        if not (isinstance(self.atom_s, (int, float)) and 0 <= self.atom_s < np.inf):
            raise ValueError(f"atom_s must be a finite number >= 0, got {self.atom_s!r}")
        if not isinstance(self.latency, bool):
            raise ValueError(f"latency must be True or False, got {self.latency!r}")
        if isinstance(self.free_margin_gpus, bool) or not isinstance(self.free_margin_gpus, (int, np.integer)) \
                or self.free_margin_gpus < 0:
            raise ValueError(f"free_margin_gpus must be a non-negative integer, got {self.free_margin_gpus!r}")

    def fit(self, trace_or_jobs, *, timezones=None) -> "QueueModel":
        """Fit the wait cells, then (``latency=True``) the start-up latency part (class docstring).
        Returns self; ``timezones`` as in every model's ``fit`` (no calendar covariate: unused)."""
        super().fit(trace_or_jobs, timezones=timezones)
        self.latency_ = None
        self.parts_ = pd.DataFrame()
        jobs = self._jobs_of(trace_or_jobs)
        if not self.latency or not {"start_s", "end_s", "submit_s"} <= set(jobs.columns):
            return self
        if FREE_COLUMN in jobs.columns:  # computed on the whole trace (the out-of-core fit fits on a sample)
            free = jobs[FREE_COLUMN].to_numpy(dtype=bool)
        else:
            free = free_at_submit(jobs, cluster_gpus=self.cluster_gpus, margin_gpus=int(self.free_margin_gpus))
        j = jobs.copy(deep=False)  # (the job table's columns shared, not copied: about 400 MB per million jobs)
        j["free"] = free
        # the latency law of a cell is the kernel-smoothed empirical law of its free jobs' waits: it is drawn
        # from, never extrapolated, and a two-lognormal mixture chosen by held-out likelihood misses the
        # hurdle + shifted-lognormal latency of a calibrated bundle by 4 pp at 100 s (n = 5,544)
        lat = StartupLatencyModel(families=LATENCY_FAMILIES, selection=self.selection, gpu_edges=self.gpu_edges,
                                  max_fit_jobs=self.max_fit_jobs, atom_s=self.atom_s, pooling=self.pooling)
        try:
            lat.fit(j)
        except ValueError:  # no job was ever submitted to a free cluster
            return self
        self.latency_ = lat
        self.parts_ = self._parts(j)
        return self

    def _parts(self, j: pd.DataFrame) -> pd.DataFrame:
        g = j[(j["gpu_num"] > 0) & j["queue_s"].notna()]
        rows = []
        for (cl, ty), sub in g.groupby([g["cluster"].astype(str), g["type"].astype(str)], sort=True):
            w = sub["queue_s"].to_numpy(float)
            lat = self.latency_.resolve(cluster=cl, type=ty).value
            lm = float(np.mean(lat.sample(4000, np.random.default_rng(0))))
            rows.append({"cluster": cl, "type": ty, "n": len(w), "n_free": int(sub["free"].sum()),
                         "wait_mean_s": float(w.mean()), "wait_median_s": float(np.median(w)),
                         "latency_median_s": float(lat.median()), "latency_mean_s": lm,
                         "contention_mean_s": max(float(w.mean()) - lm, 0.0)})
        return pd.DataFrame(rows)

    def sample_latency(self, n: int, rng: np.random.Generator, *, stratified: bool = False,
                       whole_seconds: bool = False, **key) -> np.ndarray:
        """``n`` start-up latencies (s) for cell ``key`` (``cluster``, ``type``); zeros if the model has
        no latency part. ``whole_seconds``: rounded to whole seconds (the traces' resolution), the same
        draws as rounding the latencies afterwards; stratified, at most :data:`STRATIFIED_EXACT` draws are
        then inverted on a grid of half-seconds (:func:`_whole_second_quantiles`) instead of level by level.

        ``stratified``: the ``n`` draws are ``F⁻¹(u_i)`` with one ``u_i`` in each stratum ``[i/n, (i+1)/n)``
        in random order, so each draw still has the latency law ``F`` while their empirical CDF is within
        ``1/n`` of ``F`` (an iid sample of the ~250 Kalos ``Other`` jobs misses ``F`` by ~3 pp at a
        point; the per-type queue shares ``reproduce`` compares are such points). Above
        :data:`STRATIFIED_EXACT` draws ``F⁻¹`` is interpolated linearly between its exact values at
        that many stratum midpoints (exact outside them)."""
        self._check_fitted()
        if getattr(self, "latency_", None) is None:
            return np.zeros(int(n))
        key = {k: v for k, v in key.items() if k in ("cluster", "type")}
        if not stratified or n < 2:
            out = np.maximum(self.latency_.sample(n, rng, **key), 0.0)
            return np.round(out) if whole_seconds else out
        u = uniforms(int(n), rng)
        ppf = lambda q: self.latency_.quantile(q, **key)  # noqa: E731
        if whole_seconds and len(u) <= STRATIFIED_EXACT:
            return _whole_second_quantiles(ppf, lambda x: self.latency_.cdf(x, **key), u)
        out = np.maximum(_quantiles(ppf, u, law=self.latency_.resolve(**key).value), 0.0)
        return np.round(out) if whole_seconds else out

    def summary(self) -> pd.DataFrame:
        """The wait cells (:meth:`DurationModel.summary`) with the two parts of the wait per cluster ×
        type (class docstring) joined on: ``latency_median_s``, ``latency_mean_s`` (start-up
        latency), ``contention_mean_s`` (mean wait − mean latency), ``n_free`` (jobs it was fitted on)."""
        df = super().summary()
        parts = getattr(self, "parts_", None)
        if parts is None or parts.empty or not {"cluster", "type"} <= set(df.columns):
            return df
        cols = ["cluster", "type", "n_free", "latency_median_s", "latency_mean_s", "contention_mean_s"]
        return df.merge(parts[cols], on=["cluster", "type"], how="left")

    def _fitted_to_dict(self) -> dict:
        d = super()._fitted_to_dict()
        lat = getattr(self, "latency_", None)
        d["latency"] = None if lat is None else lat.to_dict()
        parts = getattr(self, "parts_", None)
        d["parts"] = [] if parts is None else parts.to_dict("records")
        return d

    def _fitted_from_dict(self, d: dict, artifacts: dict) -> None:
        super()._fitted_from_dict(d, artifacts)
        self.latency_ = None if d.get("latency") is None else StartupLatencyModel.from_dict(d["latency"])
        self.parts_ = pd.DataFrame(d.get("parts") or [])

    def _threshold(self) -> float:
        return float(self.atom_s)

    def _observations(self, jobs: pd.DataFrame) -> pd.DataFrame:
        mask = self._gpu_rows(jobs, jobs["queue_s"].notna().to_numpy())
        sub = jobs.loc[mask]
        x = np.maximum(sub["queue_s"].to_numpy(dtype=float), 0.0)
        c = sub["queue_censored"].fillna(False).astype(bool).to_numpy()
        return self._frame(sub, x, c)

    def p_immediate(self, **key) -> float:
        """``π0``: probability that a job of cell ``key`` starts within ``atom_s`` seconds."""
        return self.resolve(**key).value.p_atom
