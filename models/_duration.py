"""Shared machinery of the duration models (:class:`RuntimeModel`, :class:`QueueModel`): the base class
:class:`DurationModel` (observations per cell, fit of every cell, back-off, queries by key, summary,
plot, serialisation).

Per cell the duration ``X`` (seconds) is a **hurdle** distribution (an atom at ``x0`` with probability
``π0`` below the threshold ``a``, a fitted family ``F`` of the excess above it), one
:class:`~acmemodel.models.duration_cell.DurationCell` each; its formula, the family selection
(held-out log-likelihood with the one-standard-error rule, or BIC), the thinning of large cells and
the rules for sparse and degenerate cells are in :mod:`acmemodel.models.duration_cell`, whose names
(``DurationCell``, ``fit_duration_cell``, ``EMPIRICAL_LEVELS`` ...) stay importable from here.
"""
from __future__ import annotations

import json
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from acmemodel.features.keys import CELL_KEYS, Cell, gpu_bucket
from acmemodel.models.base import BaseModel
from acmemodel.models.blas import single_thread_blas
from acmemodel.models.cells import CellEntry, CellTable, Resolved
from acmemodel.models.duration_mix import DurationMixture
from acmemodel.models.distributions import get_family
from acmemodel.models.duration_cell import (  # noqa: F401  (re-exported: they lived here)
    DEGENERATE_SIGMA, EMPIRICAL_LEVELS, MIN_FAMILY_JOBS, DurationCell, _brief_params, _complexity,
    _empirical_quantiles, _select_family, fit_duration_cell,
)


# ====================================================================== the model base
class DurationModel(BaseModel):
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
                if "gpu_bucket" in jobs.columns:
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
        thr = self._threshold()
        fams = tuple(self.families)

        def fit_fn(sub: pd.DataFrame, cell: Cell, parent: CellEntry | None):
            return fit_duration_cell(
                sub["x"].to_numpy(), sub["censored"].to_numpy(), threshold=thr, families=fams,
                selection=self.selection, max_fit_jobs=int(self.max_fit_jobs),
                parent=None if parent is None else parent.value,
                parent_label="" if parent is None else parent.cell.label())

        # the per-cell problems are tiny: BLAS threads (L-BFGS) only add contention (≈10× slower
        # on a loaded 2-core machine), so they are limited to one for the duration of the fit
        with single_thread_blas():
            self.cells_ = CellTable(tuple(self.keys), order=tuple(self.backoff),
                                    min_jobs=int(self.min_jobs),
                                    min_jobs_coarsest=self.min_jobs_coarsest,
                                    gpu_edges=tuple(self.gpu_edges)).fit(frame, fit_fn, self._exclude_cells())
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
            "ks": v.ks if fitted else np.nan, "source": v.source,
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
        return {"n_fit": self.n_fit_, "cells": self.cells_.to_dict(lambda v: v.to_dict())}

    def _fitted_from_dict(self, d: dict[str, Any], artifacts: dict[str, str]) -> None:
        self.cells_ = CellTable.from_dict(d["cells"], DurationCell.from_dict)
        self.n_fit_ = int(d["n_fit"])

