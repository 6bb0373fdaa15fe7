"""Shared machinery of the duration models (:class:`RuntimeModel`, :class:`QueueModel`): the base class
:class:`DurationModel` (observations per cell, fit of every cell, back-off, queries by key, summary,
plot, serialisation).

Per cell the duration ``X`` (seconds) is a **hurdle** distribution (an atom at ``x0`` with probability
``π0`` below the threshold ``a``, a fitted family ``F`` of the excess above it), one
:class:`~acmemodel.models.duration_cell.DurationCell` each; its formula, the family selection
(held-out log-likelihood with the one-standard-error rule, or BIC), the thinning of large cells and
the rules for sparse and degenerate cells are in :mod:`acmemodel.models.duration_cell`, whose names
(``DurationCell``, ``fit_duration_cell``, ``EMPIRICAL_LEVELS`` ...) stay importable from here.

**Partial pooling** (``pooling="heldout"``, default). A cell never answers with its own fit alone:
its answer is the mixture with its parent's (the next fitted cell on the back-off chain, itself
pooled with its own parent, up to the all-wildcard cell),

    F_c(x) = w_c · F_c^own(x) + (1 − w_c) · F_parent(c)(x),      w_c = n_c / (n_c + k),

shrinkage by the cell's job count ``n_c`` with a prior worth ``k`` jobs: a 5-job cell answers
almost with its parent's law, a 50,000-job cell with its own. A cell holding all its parent's jobs
(e.g. cluster × type in a trace of one cluster) answers with its parent's law (``w_c = 0``): pooled
again with it, it would count the same jobs twice and undo the parent's shrinkage. ``k`` is chosen by **held-out
likelihood on later data**: the cells are fitted again on the earlier ``1 − POOL_HOLDOUT`` (80 %)
of the jobs in submission order (each with the family its fit on all jobs chose, for speed), and ``k`` from :data:`POOL_K_GRID` maximises the summed
log-likelihood of the latest 20 % (each job under the finest fitted cell of its key). Then, from
the coarsest level to the finest, each level of the lattice (i.e. the key it adds to its parent
level) is kept only if it improves the held-out fit on both scores the model card uses: the
paired per-job gain ``ℓ(cell) − ℓ(parent)`` of the held-out jobs of that level's cells must exceed
one standard error, and the paired CRPS gain on the log scale, ``CRPS(parent) − CRPS(cell)`` with
``CRPS(F, x) = ∫ (F(z) − 1{z ≥ ln(1 + x)})² dz`` (the pooled laws' CDFs on a grid of log-seconds,
ended jobs only), must not be below minus one standard error (a key the log score likes for a sharp
peak but whose cells put the bulk of the later jobs off-centre is not kept); otherwise the key is
**marginalised** — that level's cells answer with their parents' law (``w_c = 0``). ``k`` stays
the log score's choice (strictly proper and local; choosing it by the CRPS as well put NASA iPSC's
cells at k = 10,000, 0.05 nats worse on its later jobs).
Last, with the keys chosen, the final ``k`` follows the **one-standard-error rule towards more
pooling**, one grid step at most: the next larger ``k`` of the grid when its held-out log-likelihood
is within one paired standard error of the best ``k``'s — a more pooled model the latest training
jobs cannot tell from the best.
A cell split that is merely as good as its parent on the latest training jobs is the worse bet on
the jobs after them (Alibaba OpenB pods, default split: the best ``k`` 100 lost the CRPS to the
global law on the later pods, −0.028 ± 0.008; ``k`` 300, within one SE on the held-out jobs,
ties it, +0.000 ± 0.006, and gains more log-likelihood); a cell of thousands of jobs hardly moves.
``pool_`` records ``k`` (and ``k_best``), the gain ± SE of every level on both scores (at ``k_best``) and the keys marginalised; ``summary()``
shows each cell's ``pool_w``. Both steps compare fits on the *same* later jobs, so a cell split
that only fits noise, or that the last months no longer show (drift), is not kept.
"""
from __future__ import annotations

import json
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from acmemodel.features.keys import CELL_KEYS, DEFAULT_GPU_EDGES, Cell, gpu_bucket
from acmemodel.models.base import BaseModel
from acmemodel.models.blas import single_thread_blas
from acmemodel.models.cells import CellEntry, CellTable, Resolved, _key_categorical
from acmemodel.models.duration_mix import DurationMixture
from acmemodel.models.distributions import get_family
from acmemodel.models.duration_cell import EMPIRICAL_LEVELS, DurationCell, _brief_params, fit_duration_cell


#: prior weights ``k`` (in jobs) tried for the shrinkage ``w = n / (n + k)`` (module docstring)
POOL_K_GRID = (0.0, 3.0, 10.0, 30.0, 100.0, 300.0, 1000.0, 3000.0, 10000.0, 30000.0)
#: share of the (latest) jobs held out to choose ``k`` and the keys
POOL_HOLDOUT = 0.2
#: fewest held-out jobs for the choice (fewer: no pooling, every cell its own fit)
POOL_MIN_HOLDOUT = 30
#: grid points (log-seconds) on which the pooling choice tabulates the cells' CDFs for the CRPS
POOL_CRPS_GRID = 200
#: a log-likelihood below this (nats) counts as this in the choice (a zero density would decide alone)
_LL_FLOOR = -700.0


# ====================================================================== the model base
class DurationModel(BaseModel):
    #: the pooling's shrinkage by the one-SE rule towards more pooling (:func:`choose_pooling`; else the ``k`` of
    #: the best held-out likelihood): run times, where it turned a loss to one global law on a drifting real
    #: log into a tie (docs/runtime-card.md); not waits, where the held-out windows of a calibrated cluster
    #: cannot tell k = 100 from 300 and the stronger pooling moved the shipped default's wait fractions off
    #: the published ones (Kalos Pretrain / Debug ≤ 20 s 67 / 71 % → 62 / 64 %, published 70)
    POOL_ONE_SE: bool = True
    """Base of category-conditioned duration models (hurdle per cell + back-off).

    Subclasses set ``_threshold()`` and ``_observations(jobs)`` (→ frame with the key columns,
    ``x`` seconds, ``censored`` bool, in submission-time order).
    """

    _required: ClassVar[tuple[str, ...]] = ()
    _kind: ClassVar[str] = "duration"

    # --------------------------------------------------------------- validation
    def _validate_params(self) -> None:
        keys = tuple(self.keys)
        if any(k not in CELL_KEYS for k in keys) or len(set(keys)) != len(keys):
            raise ValueError(f"keys must be distinct names from {CELL_KEYS}, got {self.keys!r}")
        if any(k not in CELL_KEYS for k in self.backoff):
            raise ValueError(f"backoff must name keys from {CELL_KEYS}, got {self.backoff!r}")
        if not isinstance(self.min_jobs, (int, np.integer)) or self.min_jobs < 1:
            raise ValueError(f"min_jobs must be a positive integer, got {self.min_jobs!r}")
        mc = self.min_jobs_coarsest
        if mc is not None and (not isinstance(mc, (int, np.integer)) or mc < 1):
            raise ValueError(f"min_jobs_coarsest must be a positive integer or None, got {mc!r}")
        fams = tuple(self.families)
        if not fams:
            raise ValueError("families must name at least one family")
        for f in fams:
            get_family(f)
        if self.selection not in ("heldout", "bic"):
            raise ValueError(f"selection must be 'heldout' or 'bic', got {self.selection!r}")
        if not isinstance(self.max_fit_jobs, (int, np.integer)) or self.max_fit_jobs < 100:
            raise ValueError(f"max_fit_jobs must be an integer >= 100, got {self.max_fit_jobs!r}")
        if getattr(self, "pooling", "none") not in ("heldout", "none"):
            raise ValueError(f"pooling must be 'heldout' or 'none', got {self.pooling!r}")

    def _threshold(self) -> float:  # pragma: no cover - abstract
        raise NotImplementedError

    def _observations(self, jobs: pd.DataFrame) -> pd.DataFrame:  # pragma: no cover - abstract
        raise NotImplementedError

    @staticmethod
    def _jobs_of(trace_or_jobs) -> pd.DataFrame:
        jobs = getattr(trace_or_jobs, "jobs", trace_or_jobs)
        if not isinstance(jobs, pd.DataFrame):
            raise ValueError(f"expected a Trace or a jobs DataFrame, got {type(trace_or_jobs).__name__}")
        return jobs

    def _check_columns(self, jobs: pd.DataFrame) -> None:
        missing = [c for c in self._required if c not in jobs.columns]
        if missing:
            raise ValueError(f"jobs DataFrame lacks column(s) {missing} (see the Trace contract)")

    def _gpu_rows(self, jobs: pd.DataFrame, mask: np.ndarray) -> np.ndarray:
        """``mask`` restricted to GPU jobs (``is_gpu``, else ``gpu_num > 0``) when ``gpu_only``."""
        if not self.gpu_only:
            return mask
        g = jobs["is_gpu"] if "is_gpu" in jobs.columns else jobs["gpu_num"] > 0
        return mask & g.fillna(False).astype(bool).to_numpy()

    def key_frame(self, jobs: pd.DataFrame) -> pd.DataFrame:
        """The cell-key columns of ``jobs`` (``state`` from ``analysis_state``, ``gpu_bucket`` from
        ``gpu_num``), aligned on ``jobs.index``, as strings."""
        out = pd.DataFrame(index=jobs.index)
        for k in self.keys:
            if k == "gpu_bucket":
                # a precomputed column has the default edges (acmemodel.features): used only with those
                if "gpu_bucket" in jobs.columns and tuple(self.gpu_edges) == tuple(DEFAULT_GPU_EDGES):
                    out[k] = jobs["gpu_bucket"].astype(str)
                else:
                    out[k] = gpu_bucket(jobs["gpu_num"].to_numpy(), self.gpu_edges)
            elif k == "state":
                out[k] = jobs["analysis_state"].astype(str)
            else:
                out[k] = jobs[k].astype(str)
        return out

    def _frame(self, jobs: pd.DataFrame, x, censored) -> pd.DataFrame:
        f = self.key_frame(jobs)
        f["x"] = np.asarray(x, dtype=float)
        f["censored"] = np.asarray(censored, dtype=bool)
        if "submit_s" in jobs.columns:
            f["_t"] = jobs["submit_s"].to_numpy(dtype=float)
            f = f.sort_values("_t", kind="stable").drop(columns="_t")
        return f

    # --------------------------------------------------------------- fitting
    def fit(self, trace_or_jobs, *, timezones=None) -> "DurationModel":
        """Fit every cell (see the class docstring). Accepts a Trace or a jobs DataFrame. Returns self.
        ``timezones`` (cluster → UTC offset) is accepted so that every model has the one signature
        ``fit(trace_or_jobs, *, timezones=None)``; this model has no calendar covariate and does not use it."""
        self._validate_params()
        jobs = self._jobs_of(trace_or_jobs)
        self._check_columns(jobs)
        frame = self._observations(jobs)
        if len(frame) == 0:
            raise ValueError(f"{type(self).__name__}.fit: no jobs with a {self._kind} to fit "
                             f"(gpu_only={self.gpu_only})")
        # the key columns as categoricals of their strings, once: every CellTable of the fit (the cells, the
        # earlier jobs' cells, the held-out jobs' levels, the extra tables) groups on them, and each converting
        # a million strings again cost ~70 ms (the categoricals are the ones CellTable makes: same groups)
        for k in self.keys:
            if k in frame.columns:
                frame[k] = _key_categorical(frame[k])
        thr = self._threshold()
        fams = tuple(self.families)

        def fit_fn(sub: pd.DataFrame, cell: Cell, parent: CellEntry | None, families=None, inner=False):
            return fit_duration_cell(
                sub["x"].to_numpy(), sub["censored"].to_numpy(), threshold=thr, families=families or fams,
                selection=self.selection, max_fit_jobs=int(self.max_fit_jobs),
                parent=None if parent is None else parent.value,
                parent_label="" if parent is None else parent.cell.label(),
                select=not (inner and families), diagnostics=not inner)

        def fit_inner(sub: pd.DataFrame, cell: Cell, parent: CellEntry | None):
            # the earlier jobs' cells for the pooling choice: each with the family its full fit chose,
            # fitted once without a selection or diagnostics (the parameters from the earlier jobs only;
            # the family search and the KS distances are most of a fit's time)
            e = self.cells_.entries_.get(cell)
            fam = None if e is None or e.value.family is None else e.value.family.name
            return fit_fn(sub, cell, parent, (fam,) if fam in fams else None, inner=True)

        # the per-cell problems are tiny: BLAS threads (L-BFGS) only add contention (≈10× slower
        # on a loaded 2-core machine), so they are limited to one for the duration of the fit
        def table():
            return CellTable(tuple(self.keys), order=tuple(self.backoff), min_jobs=int(self.min_jobs),
                             min_jobs_coarsest=self.min_jobs_coarsest, gpu_edges=tuple(self.gpu_edges))

        with single_thread_blas():
            self.cells_ = table().fit(frame, fit_fn, self._exclude_cells(), columns=("x", "censored"))
            self.pool_ = {"k": None, "marginalised": [], "levels": [], "n_holdout": 0}
            if getattr(self, "pooling", "none") == "heldout" and len(self.cells_.entries_) > 1:
                n_hold = int(round(POOL_HOLDOUT * len(frame)))
                if n_hold >= POOL_MIN_HOLDOUT:
                    inner = table().fit(frame.iloc[:-n_hold], fit_inner, self._exclude_cells(),
                                        columns=("x", "censored"))
                    self.pool_ = choose_pooling(inner, frame.iloc[-n_hold:], one_se=self.POOL_ONE_SE)
        apply_pooling(self.cells_, self.pool_)
        self._fit_extra(frame)
        self.n_fit_ = len(frame)
        return self

    def _fit_extra(self, frame: pd.DataFrame) -> None:
        pass

    def _exclude_cells(self) -> dict[str, tuple[str, ...]]:
        """Key values whose cells are not fitted (see :meth:`CellTable.fit`)."""
        return {}

    # --------------------------------------------------------------- queries
    def resolve(self, **key):
        """The distribution answering ``key``: ``Resolved(cell, level, value, n)``.

        ``key``: ``cluster``, ``type``, ``state``, ``gpu_bucket`` or ``gpus``. Key semantics of
        :meth:`acmemodel.models.cells.CellTable.query`: a key not given is marginalised (``value`` is then
        a :class:`~acmemodel.models.duration_mix.DurationMixture` of the fitted cells under it, with
        their job counts as weights, and ``cell`` the query cell); an unknown value raises
        ``ValueError``; a back-off shows in ``cell``/``level`` > 0 and warns once."""
        self._check_fitted()
        a = self.cells_.query(type(self).__name__, **key)
        if len(a.parts) == 1:
            return a.parts[0]
        mix = DurationMixture([p.value for p in a.parts], a.weights)
        return Resolved(a.cell, a.level, mix, int(sum(p.n for p in a.parts)))

    def cdf(self, x, **key) -> np.ndarray:
        """``P(X <= x)`` for a job of cell ``key`` (x in seconds)."""
        return self.resolve(**key).value.cdf(x)

    def quantile(self, q, **key) -> np.ndarray:
        """The ``q``-quantile(s) in seconds for cell ``key``."""
        return self.resolve(**key).value.quantile(q)

    def median(self, **key) -> float:
        return self.resolve(**key).value.median()

    def sample(self, n: int, rng: np.random.Generator, **key) -> np.ndarray:
        """``n`` durations (seconds) drawn from the distribution of cell ``key``."""
        if not isinstance(rng, np.random.Generator):
            raise ValueError("rng must be a numpy Generator (np.random.default_rng(seed))")
        if int(n) != n or n < 0:
            raise ValueError(f"n must be a non-negative integer, got {n!r}")
        return self.resolve(**key).value.sample(int(n), rng)

    def loglik(self, x, censored=None, **key) -> np.ndarray:
        """Per-observation log-likelihood of durations ``x`` under cell ``key`` (hurdle model)."""
        return self.resolve(**key).value.loglik(x, censored)

    # --------------------------------------------------------------- report
    def summary(self) -> pd.DataFrame:
        """One row per fitted cell (``fitted`` True) and per observed finest cell that backed off
        (``fitted`` False): cell, level (keys dropped), n, p_atom, family, parameters, median (s),
        ks, resolved_cell, backoff_level, note."""
        self._check_fitted()
        rows = []
        for cell, e in self.cells_.entries_.items():
            v: DurationCell = e.value
            rows.append(self._row(cell, e.level, e.n, True, cell, 0, v))
        for cell, n in self.cells_.counts_.items():
            if cell in self.cells_.entries_:
                continue
            r = self.cells_.resolve(**cell._asdict())
            row = self._row(cell, 0, n, False, r.cell, r.level, r.value)
            row["note"] = f"n={n} < min_jobs: uses {r.cell.label()} (n={r.n})"
            rows.append(row)
        df = pd.DataFrame(rows)
        return df.sort_values(["fitted", "level", "cell"], ascending=[False, False, True],
                              kind="stable").reset_index(drop=True)

    def _row(self, cell, level, n, fitted, resolved, blevel, v: DurationCell) -> dict:
        return {
            "cell": cell.label(), **{k: getattr(cell, k) for k in CELL_KEYS if k in self.keys},
            "level": level, "n": n, "fitted": fitted,
            "p_atom": v.p_atom, "family": None if v.family is None else v.family.name,
            "parameters": json.dumps(_brief_params(v.family)), "median_s": v.median(),
            "ks": v.ks if fitted else np.nan, "source": v.source, "pool_w": v.pool_w,
            "resolved_cell": resolved.label(), "backoff_level": blevel, "note": v.note,
        }

    def plot(self, ax=None, **key):
        """Fitted CDF of cell ``key`` (line) over the cell's empirical CDF (steps) on a log-x axis."""
        import matplotlib.pyplot as plt

        from acmemodel.plotting import duration_axis

        r = self.resolve(**key)
        v: DurationCell = r.value
        if ax is None:
            _, ax = plt.subplots(figsize=(5, 3.5))
        if isinstance(v, DurationMixture):  # a marginalised key: no single cell's empirical CDF
            lo = max(float(v.quantile(0.001)), 0.5)
            hi = max(float(v.quantile(0.999)), lo * 10)
            xs = np.geomspace(lo / 2, hi, 400)
            ax.plot(xs, v.cdf(xs), label=f"mixture of {len(v.components)} cells")
            duration_axis(ax, label=self._kind)
            ax.set_ylabel("CDF")
            ax.set_ylim(0, 1)
            ax.set_title(f"{r.cell.label()} (marginalised, n={r.n})", fontsize=9)
            ax.legend(fontsize=8)
            return ax
        lo = max(float(np.nanmin(v.quantiles)) if np.isfinite(v.quantiles).any() else 1.0, 0.5)
        hi = float(v.quantile(0.999))
        hi = max(hi if np.isfinite(hi) else lo * 10, lo * 10)
        xs = np.geomspace(lo / 2, hi, 400)
        ax.plot(xs, v.cdf(xs), label=f"fitted ({v.family.name if v.family else 'atom'})")
        q = v.quantiles
        ok = np.isfinite(q)
        ax.step(np.maximum(q[ok], lo / 2), EMPIRICAL_LEVELS[ok], where="post", label="empirical", alpha=0.7)
        duration_axis(ax, label=self._kind)
        ax.set_ylabel("CDF")
        ax.set_ylim(0, 1)
        ax.set_title(f"{r.cell.label()} (back-off {r.level}, n={r.n})", fontsize=9)
        ax.legend(fontsize=8)
        return ax

    # --------------------------------------------------------------- serialisation
    def _fitted_to_dict(self) -> dict[str, Any]:
        return {"n_fit": self.n_fit_, "cells": self.cells_.to_dict(lambda v: v.to_dict()),
                "pool": getattr(self, "pool_", None)}

    def _fitted_from_dict(self, d: dict[str, Any], artifacts: dict[str, str]) -> None:
        self.cells_ = CellTable.from_dict(d["cells"], DurationCell.from_dict)
        self.n_fit_ = int(d["n_fit"])
        # (a bundle saved before pooling has no "pool": every cell its own fit, pool_w 1)
        self.pool_ = d.get("pool") or {"k": None, "marginalised": [], "levels": [], "n_holdout": 0}
        link_pool_parents(self.cells_)



# ====================================================================== partial pooling
def link_pool_parents(table: CellTable) -> None:
    """Point every cell's ``pool_parent`` at the value of its parent entry (the nearest fitted coarser
    cell on its back-off chain); the all-wildcard cell has none."""
    for cell, e in table.entries_.items():
        par = table._parent(cell)
        e.value.pool_parent = None if par is None else par.value
        if par is None:
            e.value.pool_w = 1.0


def _pool_weight(n: int, k: float) -> float:
    return 1.0 if k <= 0 else float(n) / (float(n) + float(k))


def _same_jobs(n, parent_n):
    """A cell holding as many jobs as its nearest fitted coarser cell holds the same jobs (a cell's
    jobs are a subset of its parent's), e.g. the cluster × type cell of a trace with one cluster: it
    answers with its parent's pooled law (``w = 0``) — pooling it again with that law would count
    the same jobs twice and undo the parent's shrinkage."""
    return (np.asarray(n) > 0) & (np.asarray(n) == np.asarray(parent_n))


def apply_pooling(table: CellTable, pool: dict[str, Any]) -> None:
    """Set ``pool_w = n / (n + k)`` on every fitted cell of ``table`` (0 on the marginalised levels,
    1 everywhere when ``pool["k"]`` is None) and link the parents (module docstring)."""
    k = pool.get("k")
    dropped = {tuple(lv) for lv in pool.get("marginalised_levels", [])}
    for cell, e in table.entries_.items():
        lk = tuple(kk for kk in table.keys if getattr(cell, kk) is not None)
        par = table._parent(cell)
        if k is None:
            w = 1.0
        elif lk in dropped or (par is not None and bool(_same_jobs(e.n, par.n))):
            w = 0.0
        else:
            w = _pool_weight(e.n, k)
        e.value.pool_w = w
    link_pool_parents(table)


def _own_loglik_levels(table: CellTable, hold: pd.DataFrame):
    """Per held-out job and lattice level: the own log-likelihood under that level's fitted cell
    (NaN where the job's cell at that level is not fitted), the cell's job count, and the cell's
    index in the returned list of fitted cell values (−1 where not fitted)."""
    L = len(table.levels)
    m = len(hold)
    own = np.full((m, L), np.nan)
    cnt = np.zeros((m, L))
    cid = np.full((m, L), -1, dtype=np.int64)
    values: list[DurationCell] = []
    x = hold["x"].to_numpy(float)
    c = hold["censored"].to_numpy(bool)
    keyf = pd.DataFrame({k: _key_categorical(hold[k]) for k in table.keys})
    for li, lk in enumerate(table.levels):
        groups = {(): np.arange(m)} if not lk else keyf.groupby(list(lk), sort=False, observed=True).indices
        for gkey, pos in groups.items():
            gkey = gkey if isinstance(gkey, tuple) else (gkey,)
            cell = Cell(**dict(zip(lk, map(str, gkey))))
            e = table.entries_.get(cell)
            if e is None:
                continue
            own[pos, li] = np.maximum(e.value.own_loglik(x[pos], c[pos]), _LL_FLOOR)
            cnt[pos, li] = e.n
            cid[pos, li] = len(values)
            values.append(e.value)
    return own, cnt, cid, values


class _CrpsChain:
    """The held-out jobs' log-scale CRPS (``∫ (F(z) − 1{z ≥ ln(1 + x)})² dz``, the card's
    ``crps_log``) under the pooled law of every lattice level, for any ``k`` and set of marginalised
    levels. The own CDF of every fitted cell is tabulated once on a grid of ``z = ln(1 + x)``; the
    pooled CDFs are mixed along each distinct chain of cells (a handful), and each job's CRPS is
    read off its chain's cumulative integrals (O(chains · grid + jobs) per level). Censored jobs
    have no CRPS (NaN)."""

    def __init__(self, hold: pd.DataFrame, cid: np.ndarray, values: list, n_grid: int = POOL_CRPS_GRID):
        x = np.maximum(hold["x"].to_numpy(float), 0.0)
        self.z = np.log1p(x)
        self.ok = ~hold["censored"].to_numpy(bool)
        # the grid runs from 0 (the atom) past the largest held-out value and past every cell's
        # 99.99 % point (found on the CDFs, stepping by 2 log-seconds: cheaper than the quantiles)
        top, cap = (float(self.z.max()) if self.z.size else 0.0) + 1.0, float(np.log1p(1e12))
        while top < cap and values and min(float(np.min(v.own_cdf(np.expm1(top)))) for v in values) < 0.9999:
            top = min(top + 2.0, cap)
        self.grid = np.linspace(0.0, top, int(n_grid))
        xs = np.expm1(self.grid)
        self.F = np.stack([np.asarray(v.own_cdf(xs), float) for v in values]) if values else \
            np.zeros((0, self.grid.size))
        self.chains, self.inv = np.unique(cid, axis=0, return_inverse=True)
        self.inv = np.asarray(self.inv).ravel()
        xc = np.clip(self.z, self.grid[0], self.grid[-1])
        dz = np.diff(self.grid)
        self.j = np.clip(np.searchsorted(self.grid, xc, side="right") - 1, 0, self.grid.size - 2)
        self.t = (xc - self.grid[self.j]) / dz[self.j]
        self.xc = xc
        self._memo: dict = {}  # (k, level, marginalised levels at or above it) → CRPS per job

    def _crps(self, F: np.ndarray) -> np.ndarray:
        """CRPS of each job under row ``inv`` of the chain-level CDFs ``F`` (chains × grid)."""
        g, dz = self.grid, np.diff(self.grid)
        a, b = F * F, (1.0 - F) ** 2
        zero = np.zeros((F.shape[0], 1))
        ca = np.concatenate([zero, np.cumsum(0.5 * (a[:, 1:] + a[:, :-1]) * dz, axis=1)], axis=1)
        cb = np.concatenate([zero, np.cumsum(0.5 * (b[:, 1:] + b[:, :-1]) * dz, axis=1)], axis=1)
        r, j, t, xc = self.inv, self.j, self.t, self.xc
        Fx = F[r, j] * (1.0 - t) + F[r, j + 1] * t
        part_a = ca[r, j] + 0.5 * (a[r, j] + Fx * Fx) * (xc - g[j])
        part_b = (cb[r, -1] - cb[r, j + 1]) + 0.5 * ((1.0 - Fx) ** 2 + b[r, j + 1]) * (g[j + 1] - xc)
        return np.where(self.ok, part_a + part_b, np.nan)

    def chain(self, cnt_of: np.ndarray, k: float, dropped: set[int]) -> np.ndarray:
        """CRPS of each job at each level under the pooled laws (NaN where the level is not fitted),
        the recursion of :func:`_pooled_chain` on CDFs: ``w · F_own + (1 − w) · F_parent``.
        ``cnt_of``: job count of each fitted cell."""
        U, L = self.chains.shape
        m = self.z.size
        out = np.full((m, L), np.nan)
        if U == 0 or self.F.shape[0] == 0:
            return out
        top = self.chains[:, L - 1]
        prev = np.where((top >= 0)[:, None], self.F[np.maximum(top, 0)], np.nan)
        def crps_at(li: int, F: np.ndarray) -> np.ndarray:
            # a level's pooled law depends on k and on the marginalised levels at or above it only
            key = (float(k), li, frozenset(d for d in dropped if d >= li))
            if key not in self._memo:
                self._memo[key] = np.where(self.chains[self.inv, li] >= 0, self._crps(F), np.nan)
            return self._memo[key]

        out[:, L - 1] = crps_at(L - 1, prev)
        pn = np.where(top >= 0, cnt_of[np.maximum(top, 0)], 0.0)
        for li in range(L - 2, -1, -1):
            ids = self.chains[:, li]
            fitted = ids >= 0
            n = np.where(fitted, cnt_of[np.maximum(ids, 0)], 0.0)
            if li in dropped:
                w = np.zeros(U)
            else:
                w = n / (n + k) if k > 0 else np.ones(U)
                w = np.where(_same_jobs(n, pn), 0.0, w)
            w = np.where(fitted, w, 0.0)
            pn = np.where(fitted, n, pn)
            own = self.F[np.maximum(ids, 0)]
            prev = np.where(fitted[:, None], w[:, None] * own + (1.0 - w[:, None]) * prev, prev)
            out[:, li] = crps_at(li, prev)
        return out


def _pooled_chain(own: np.ndarray, cnt: np.ndarray, k: float, dropped: set[int]) -> np.ndarray:
    """Pooled log-likelihood of each held-out job at each level (NaN where not fitted), coarsest
    level first: ``logaddexp(log w + own, log(1 − w) + pooled(parent))``."""
    m, L = own.shape
    out = np.full((m, L), np.nan)
    prev = own[:, L - 1].copy()
    out[:, L - 1] = prev
    pcnt = cnt[:, L - 1].copy()  # the job count of each job's nearest fitted coarser cell
    for li in range(L - 2, -1, -1):
        fitted = np.isfinite(own[:, li])
        if li in dropped:
            w = np.zeros(m)
        else:
            w = np.where(cnt[:, li] > 0, cnt[:, li] / (cnt[:, li] + k), 1.0) if k > 0 else np.ones(m)
            w = np.where(_same_jobs(cnt[:, li], pcnt), 0.0, w)
        pcnt = np.where(fitted, cnt[:, li], pcnt)
        with np.errstate(divide="ignore"):
            lw, l1w = np.log(w), np.log1p(-w)
        val = np.logaddexp(lw + np.where(fitted, own[:, li], 0.0), l1w + prev)
        val = np.where(w >= 1.0, own[:, li], val)
        prev = np.where(fitted, val, prev)
        out[:, li] = np.where(fitted, prev, np.nan)
    return out


def _finest(chain: np.ndarray) -> np.ndarray:
    """Each job's value at its finest fitted level (the query with every key given)."""
    ok = np.isfinite(chain)
    first = np.argmax(ok, axis=1)
    return chain[np.arange(chain.shape[0]), first]


def _paired(d: np.ndarray) -> tuple[float, float, int]:
    """Mean, standard error and count of the finite paired differences ``d``."""
    d = d[np.isfinite(d)]
    n = int(d.size)
    mean = float(d.mean()) if n else float("nan")
    se = float(d.std(ddof=1) / np.sqrt(n)) if n > 1 else float("inf")
    return mean, se, n


def _k_scores(own: np.ndarray, cnt: np.ndarray, dropped: set[int]) -> list[np.ndarray]:
    """Each held-out job's pooled log-likelihood at its finest fitted level, for every ``k`` of
    :data:`POOL_K_GRID`."""
    return [_finest(_pooled_chain(own, cnt, k, dropped)) for k in POOL_K_GRID]


def _best_k(vals: list[np.ndarray]) -> int:
    """Index of the ``k`` with the highest summed held-out log-likelihood (the log score is strictly
    proper and local: it rewards the shrinkage that puts the most probability where the later jobs
    fall)."""
    sums = [float(np.sum(v)) for v in vals]
    ib = 0
    for i, v in enumerate(sums):
        if v > sums[ib] + 1e-9:
            ib = i
    return ib


def _choose_k(own: np.ndarray, cnt: np.ndarray, dropped: set[int] | None = None, one_se: bool = False) -> float:
    """The ``k`` of :data:`POOL_K_GRID` with the highest summed held-out log-likelihood; with
    ``one_se`` the one-standard-error rule towards more pooling, one grid step (about ×3) at most:
    the next larger ``k`` when its paired per-job loss to the best is within one standard error of
    zero — a more pooled model the held-out jobs cannot tell from the best (the rule of the family
    selection too). One step only: on a small or mostly censored held-out window the whole grid can
    lie within one SE (a 3,250-job queue trace: best k 0, k 3,000 within one SE), and the rule would
    then pool away cells that the likelihood keeps apart."""
    vals = _k_scores(own, cnt, set() if dropped is None else dropped)
    ib = chosen = _best_k(vals)
    if one_se and ib + 1 < len(POOL_K_GRID):
        mean, se, n = _paired(vals[ib + 1] - vals[ib])
        if n > 1 and mean >= -se:
            chosen = ib + 1
    return float(POOL_K_GRID[chosen])


def choose_pooling(inner: CellTable, hold: pd.DataFrame, one_se: bool = True) -> dict[str, Any]:
    """Choose the shrinkage ``k`` and the kept keys on the held-out (later) jobs ``hold`` with the cells
    ``inner`` fitted on the earlier ones (module docstring). Returns the ``pool_`` record:
    ``{k, n_holdout, levels: [{keys, dropped_key, n, gain, se, crps_gain, crps_se, kept}],
    marginalised, marginalised_levels, heldout_loglik, heldout_crps}`` (gain: mean nats per held-out
    job over the parent; crps_gain: mean log-seconds of CRPS per held-out ended job, parent − cell)."""
    own, cnt, cid, values = _own_loglik_levels(inner, hold)
    cnt_of = np.array([float(v.n) for v in values])
    crps = _CrpsChain(hold, cid, values)
    L = own.shape[1]
    best_k = _choose_k(own, cnt)
    dropped: set[int] = set()
    levels = []
    for li in range(L - 2, -1, -1):
        chain = _pooled_chain(own, cnt, best_k, dropped)
        cchain = crps.chain(cnt_of, best_k, dropped)
        fitted = np.isfinite(own[:, li])
        par = np.full(own.shape[0], np.nan)
        cpar = np.full(own.shape[0], np.nan)
        for lj in range(li + 1, L):  # the nearest fitted coarser level = the parent
            take = np.isnan(par) & np.isfinite(chain[:, lj])
            par = np.where(take, chain[:, lj], par)
            cpar = np.where(take, cchain[:, lj], cpar)
        gain, se, n = _paired((chain[:, li] - par)[fitted])
        cgain, cse, cn = _paired((cpar - cchain[:, li])[fitted])
        # kept: the key improves the held-out loglik by more than one SE and does not worsen the
        # held-out CRPS by more than one SE (no held-out evidence: the key stays, shrunk)
        kept = bool(n < 2 or (gain > se and not (cn > 1 and cgain < -cse)))
        if not kept:
            dropped.add(li)
        key_added = [kk for kk in inner.levels[li] if kk not in inner.levels[li + 1]]
        levels.append({"keys": list(inner.levels[li]), "dropped_key": ",".join(key_added), "n": n,
                       "gain": gain if np.isfinite(gain) else None, "se": se if np.isfinite(se) else None,
                       "crps_gain": cgain if np.isfinite(cgain) else None,
                       "crps_se": cse if np.isfinite(cse) else None, "kept": kept})
    # the keys chosen, the shrinkage by the one-SE rule towards more pooling on the kept lattice
    # (module docstring); the key choice above stays with the best k, so that a level is not kept
    # for undoing its parent's extra shrinkage
    k_best, best_k = best_k, _choose_k(own, cnt, dropped, one_se=one_se)
    final = float(np.mean(_finest(_pooled_chain(own, cnt, best_k, dropped))))
    fc = _finest(crps.chain(cnt_of, best_k, dropped))
    fc = fc[np.isfinite(fc)]
    return {"k": float(best_k), "k_best": float(k_best), "n_holdout": int(own.shape[0]), "levels": levels,
            "marginalised": [lv["dropped_key"] for lv in levels if not lv["kept"] and lv["n"] > 0],
            "marginalised_levels": [inner.levels[li] for li in sorted(dropped)],
            "heldout_loglik": final, "heldout_crps": float(fc.mean()) if fc.size else None}
