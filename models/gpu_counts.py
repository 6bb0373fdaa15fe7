"""Distribution of the number of GPUs a job requests, per cluster × type.

Math
----
For a cell *c* = (cluster, type) with ``N_c`` jobs of which ``n_c(g)`` requested ``g`` GPUs
(``g = 0`` is a CPU job), the fitted probability mass function is an empirical pmf with
*hierarchical additive (Dirichlet) smoothing*::

    p_base(g)    = uniform over the powers of two 1, 2, 4, ..., 2^ceil(log2 max g)
    p_cluster(g) = (n_cluster(g) + b * p_base(g)) / (N_cluster + b)        b = ``base_smoothing``
    p_c(g)       = (n_c(g)       + a * p_cluster(g)) / (N_c + a)            a = ``smoothing``

i.e. each cell borrows ``a`` pseudo-jobs (default 1) from its cluster's pooled distribution, which
borrows ``b`` pseudo-jobs (default 1) from a uniform distribution over power-of-two sizes. A size
seen in another type of the same cluster therefore keeps a small non-zero probability in a sparse
cell, and a power-of-two size never seen at all keeps a tiny one (powers of two dominate real
requests); sizes observed in the cell are essentially unchanged when ``N_c >> a``. The smoothing is
the only modelling assumption; with ``smoothing=0`` and ``base_smoothing=0`` the pmf is the raw
empirical one.

Key semantics (as every model, :meth:`acmemodel.models.cells.CellTable.query`): a key not given is
marginalised — ``type=None`` is the cluster's pooled pmf, ``cluster=None`` the job-count-weighted
mixture of the clusters' pmfs; a cluster or type value never seen raises ``ValueError`` naming the key
and the known values; a type seen in other clusters but not in this one backs off to the cluster's
pooled pmf with a :class:`~acmemodel.errors.DataWarning`.
"""
from __future__ import annotations

import warnings
from typing import Any, Mapping

import numpy as np
import pandas as pd

from acmemodel.errors import DataWarning
from acmemodel.models.base import BaseModel, register

__all__ = ["GpuCountModel", "scale_gpu_counts"]


def scale_gpu_counts(gpus, scale: float, *, node_gpus: int = 8, max_gpus: int | None = None) -> np.ndarray:
    """Scale GPU requests by ``scale`` keeping them schedulable.

    ``g' = max(1, round(g * scale))`` for GPU jobs, rounded further to a multiple of ``node_gpus``
    when ``g'`` exceeds one node (jobs larger than a node take whole nodes); CPU jobs (``g = 0``)
    stay CPU jobs; ``max_gpus`` caps the result. ``scale = 1`` returns the input unchanged.
    """
    scale = float(scale)
    if not np.isfinite(scale) or scale <= 0:
        raise ValueError(f"gpu scale must be a positive finite number, got {scale!r}")
    g = np.asarray(gpus, dtype=np.int64)
    if scale == 1.0 and max_gpus is None:
        return g.copy()
    x = np.maximum(1, np.rint(g * scale)).astype(np.int64)
    big = x > node_gpus
    x[big] = np.rint(x[big] / node_gpus).astype(np.int64) * node_gpus
    if max_gpus is not None:
        x = np.minimum(x, int(max_gpus))
    return np.where(g == 0, 0, x)


def _base_support(max_g: int) -> np.ndarray:
    top = int(np.ceil(np.log2(max(int(max_g), 1))))
    return 2 ** np.arange(top + 1, dtype=np.int64)


def _smooth(values: np.ndarray, counts: np.ndarray, prior_values: np.ndarray, prior_p: np.ndarray,
            a: float) -> tuple[np.ndarray, np.ndarray]:
    """``(n(g) + a * prior(g)) / (N + a)`` over the union of both supports."""
    support = np.union1d(values, prior_values)
    n = np.zeros(len(support))
    n[np.searchsorted(support, values)] = counts
    pr = np.zeros(len(support))
    pr[np.searchsorted(support, prior_values)] = prior_p
    tot = n.sum() + a
    p = (n + a * pr) / tot if tot > 0 else pr
    keep = p > 0
    return support[keep], p[keep] / p[keep].sum()


@register
class GpuCountModel(BaseModel):
    """Smoothed empirical distribution of requested GPUs per cluster × type (see module docstring).

    Parameters
    ----------
    smoothing : pseudo-jobs ``a`` a cell borrows from its cluster's pooled pmf (>= 0).
    base_smoothing : pseudo-jobs ``b`` the cluster pmf borrows from the power-of-two base (>= 0).
    """

    def __init__(self, *, smoothing: float = 1.0, base_smoothing: float = 1.0):
        self.smoothing = smoothing
        self.base_smoothing = base_smoothing

    # ------------------------------------------------------------------ fitting
    def _validate(self) -> None:
        for name in ("smoothing", "base_smoothing"):
            v = getattr(self, name)
            if not isinstance(v, (int, float)) or not np.isfinite(v) or v < 0:
                raise ValueError(f"{name} must be a finite number >= 0, got {v!r}")

    def fit(self, trace_or_jobs, *, timezones=None) -> "GpuCountModel":
        """Fit from a :class:`~acmemodel.trace.Trace` or a jobs DataFrame
        (columns ``cluster``, ``type``, ``gpu_num``). Returns self.
        ``timezones`` (cluster → UTC offset) is accepted so that every model has the one signature
        ``fit(trace_or_jobs, *, timezones=None)``; this model has no calendar covariate and does not use it."""
        self._validate()
        jobs = getattr(trace_or_jobs, "jobs", trace_or_jobs)
        for col in ("cluster", "type", "gpu_num"):
            if col not in jobs.columns:
                raise ValueError(f"jobs lack the column {col!r}")
        if len(jobs) == 0:
            raise ValueError("GpuCountModel.fit: no jobs")
        g = jobs["gpu_num"].to_numpy(dtype=np.int64)
        if np.any(g < 0):
            raise ValueError("gpu_num must be >= 0")
        df = pd.DataFrame({"cluster": jobs["cluster"].astype(str).to_numpy(),
                           "type": jobs["type"].astype(str).to_numpy(), "g": g})
        counts = df.groupby(["cluster", "type", "g"], sort=True).size()
        self.counts_ = {}
        for (cl, ty, gg), n in counts.items():
            self.counts_.setdefault(cl, {}).setdefault(ty, {})[int(gg)] = int(n)
        self._build()
        self.n_fit_ = int(len(jobs))
        return self

    @classmethod
    def from_pmfs(cls, pmfs: Mapping[tuple[str, str], Mapping[int, float]], *, pseudo_jobs: float = 1e6,
                  **params) -> "GpuCountModel":
        """Build a model from known pmfs ``{(cluster, type): {gpus: probability}}``.

        The pmfs are stored as ``pseudo_jobs`` fractional counts per cell (large, so smoothing is
        negligible); used to calibrate from published statistics and in tests.
        """
        obj = cls(**params)
        obj._validate()
        obj.counts_ = {}
        for (cl, ty), pmf in pmfs.items():
            ps = np.array([float(p) for p in pmf.values()])
            if np.any(ps < 0) or ps.sum() <= 0:
                raise ValueError(f"pmf of {(cl, ty)} must be non-negative with a positive sum")
            for gg, p in pmf.items():
                if int(gg) < 0:
                    raise ValueError(f"gpu count must be >= 0, got {gg!r}")
                obj.counts_.setdefault(str(cl), {}).setdefault(str(ty), {})[int(gg)] = \
                    float(p) / ps.sum() * pseudo_jobs
        obj._build()
        obj.n_fit_ = int(round(pseudo_jobs * sum(len(v) for v in obj.counts_.values())))
        return obj

    def _build(self) -> None:
        """Compute the smoothed pmfs (``pmfs_``) and cumulative tables from ``counts_``."""
        a, b = float(self.smoothing), float(self.base_smoothing)
        self.pmfs_: dict[tuple[str, str | None], tuple[np.ndarray, np.ndarray]] = {}
        for cl, by_type in self.counts_.items():
            pooled: dict[int, float] = {}
            for d in by_type.values():
                for gg, n in d.items():
                    pooled[gg] = pooled.get(gg, 0) + n
            v = np.array(sorted(pooled), dtype=np.int64)
            c = np.array([pooled[x] for x in v], dtype=float)
            base_v = _base_support(v.max() if len(v) else 1)
            base_p = np.full(len(base_v), 1.0 / len(base_v))
            cv, cp = _smooth(v, c, base_v, base_p, b)
            self.pmfs_[(cl, None)] = (cv, cp)
            for ty, d in by_type.items():
                tv = np.array(sorted(d), dtype=np.int64)
                tc = np.array([d[x] for x in tv], dtype=float)
                self.pmfs_[(cl, ty)] = _smooth(tv, tc, cv, cp, a)
        self._cdfs = {k: (v, np.cumsum(p)) for k, (v, p) in self.pmfs_.items()}

    # ------------------------------------------------------------------ queries
    @property
    def clusters_(self) -> list[str]:
        self._check_fitted()
        return sorted(self.counts_)

    def types(self, cluster: str) -> list[str]:
        """Types with data in ``cluster``."""
        self._check_fitted()
        return sorted(self.counts_.get(cluster, {}))

    def _cell(self, cluster: str | None, type: str | None) -> tuple[str | None, str | None]:
        self._check_fitted()
        from acmemodel.models.cells import check_key_values

        check_key_values({"cluster": cluster, "type": type},
                         {"cluster": list(self.counts_),
                          "type": sorted({t for d in self.counts_.values() for t in d})}, "GpuCountModel")
        if cluster is None and len(self.counts_) == 1:
            cluster = next(iter(self.counts_))
        if type is None or cluster is None:
            return cluster, type
        if type not in self.counts_[cluster]:
            done = self.__dict__.setdefault("_warned", set())
            if (cluster, type) not in done:  # once per model and cell
                done.add((cluster, type))
                warnings.warn(f"GpuCountModel: no jobs of type {type!r} in {cluster}; "
                              "using the cluster's pooled GPU-count distribution", DataWarning, stacklevel=3)
            return cluster, None
        return cluster, type

    def _pmf(self, cell: tuple[str | None, str | None]) -> tuple[np.ndarray, np.ndarray]:
        """(GPU values, probabilities) of a cell; ``cluster=None``: the clusters' pmfs mixed with weights
        their job counts (of the type, if given)."""
        if cell[0] is not None:
            return self.pmfs_[cell]
        ty = cell[1]
        parts = []
        for cl, by_type in self.counts_.items():
            n = sum(sum(d.values()) for t, d in by_type.items() if ty is None or t == ty)
            if n > 0:
                parts.append((n, self.pmfs_[(cl, ty if ty in by_type else None)]))
        tot = sum(n for n, _ in parts)
        mix: dict[int, float] = {}
        for n, (v, p) in parts:
            for x, px in zip(v.tolist(), p.tolist()):
                mix[x] = mix.get(x, 0.0) + n / tot * px
        v = np.array(sorted(mix), dtype=np.int64)
        return v, np.array([mix[x] for x in v.tolist()], dtype=float)

    def pmf(self, *, cluster: str | None = None, type: str | None = None) -> pd.Series:
        """Smoothed pmf of requested GPUs, a Series indexed by GPU count (keys not given: marginalised)."""
        v, p = self._pmf(self._cell(cluster, type))
        return pd.Series(p, index=pd.Index(v, name="gpu_num"), name="p")

    def mean_gpus(self, *, cluster: str | None = None, type: str | None = None) -> float:
        """Expected GPUs per job of the cell."""
        v, p = self._pmf(self._cell(cluster, type))
        return float(np.dot(v, p))

    def sample(self, n: int, rng: np.random.Generator, *, cluster: str | None = None,
               type: str | None = None, scale: float = 1.0) -> np.ndarray:
        """``n`` GPU counts (int64) of the cell; ``scale`` applies :func:`scale_gpu_counts`."""
        if not isinstance(rng, np.random.Generator):
            raise ValueError(f"rng must be a numpy Generator, got {rng.__class__.__name__}")
        n = int(n)
        if n < 0:
            raise ValueError(f"n must be >= 0, got {n}")
        cell = self._cell(cluster, type)
        if cell in self._cdfs:
            v, cdf = self._cdfs[cell]
        else:
            v, p = self._pmf(cell)
            cdf = np.cumsum(p)
        idx = np.minimum(np.searchsorted(cdf, rng.random(n), side="right"), len(v) - 1)
        out = v[idx]
        return out if scale == 1.0 else scale_gpu_counts(out, scale)

    def sample_cells(self, clusters, types, rng: np.random.Generator, *, scale: float = 1.0) -> np.ndarray:
        """One GPU count per row of the aligned ``clusters`` / ``types`` arrays (vectorised by cell)."""
        cl = pd.Categorical(np.asarray(clusters, dtype=object))
        ty = pd.Categorical(np.asarray(types, dtype=object))
        out = np.zeros(len(cl), dtype=np.int64)
        codes = cl.codes.astype(np.int64) * (len(ty.categories) + 1) + ty.codes
        order = np.argsort(codes, kind="stable")
        sc = codes[order]
        bounds = np.flatnonzero(np.diff(sc)) + 1
        for grp in np.split(order, bounds):
            if len(grp) == 0:
                continue
            i = grp[0]
            out[grp] = self.sample(len(grp), rng, cluster=str(cl[i]), type=str(ty[i]))
        return out if scale == 1.0 else scale_gpu_counts(out, scale)

    # ------------------------------------------------------------------ reporting
    def summary(self) -> pd.DataFrame:
        """One row per cluster × type × GPU count: ``n`` (observed jobs), ``p_empirical``, ``p``
        (smoothed). Rows with ``n = 0`` are sizes that only the smoothing gives mass to."""
        self._check_fitted()
        rows = []
        for cl, by_type in self.counts_.items():
            for ty, d in by_type.items():
                tot = sum(d.values())
                v, p = self.pmfs_[(cl, ty)]
                for gg, pp in zip(v, p):
                    n = d.get(int(gg), 0)
                    rows.append({"cluster": cl, "type": ty, "gpu_num": int(gg), "n": n,
                                 "p_empirical": n / tot if tot else np.nan, "p": float(pp)})
        return pd.DataFrame(rows, columns=["cluster", "type", "gpu_num", "n", "p_empirical", "p"])

    def plot(self, ax=None, *, cluster: str | None = None, type: str | None = None, **kwargs):
        """Bar chart of the smoothed pmf (log2 x-axis) with the empirical frequencies as dots."""
        import matplotlib.pyplot as plt

        if ax is None:
            _, ax = plt.subplots()
        cl, ty = self._cell(cluster, type)
        v, p = self.pmfs_[(cl, ty)]
        x = np.where(v == 0, 0.5, v).astype(float)
        ax.bar(x, p, width=x * 0.3, label="smoothed pmf", **kwargs)
        d = self.counts_[cl].get(ty, {}) if ty else {}
        if d:
            tot = sum(d.values())
            ev = np.array(sorted(d))
            ax.plot(np.where(ev == 0, 0.5, ev), [d[k] / tot for k in ev], "k.", label="empirical")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("GPUs requested (0 = CPU job, drawn at 0.5)")
        ax.set_ylabel("probability")
        ax.set_title(f"GPU count {cl}/{ty or '*'}")
        ax.legend()
        return ax

    # ------------------------------------------------------------------ serialisation
    def _fitted_to_dict(self) -> dict[str, Any]:
        return {"counts": {cl: {ty: {str(g): n for g, n in d.items()} for ty, d in bt.items()}
                           for cl, bt in self.counts_.items()},
                "n_fit": self.n_fit_}

    def _fitted_from_dict(self, d: dict[str, Any], artifacts: dict[str, str]) -> None:
        self.counts_ = {cl: {ty: {int(g): n for g, n in dd.items()} for ty, dd in bt.items()}
                        for cl, bt in d["counts"].items()}
        self._build()
        self.n_fit_ = int(d["n_fit"])
