"""Shared machinery of the duration models (:class:`RuntimeModel`, :class:`QueueModel`).

Per cell the duration ``X`` (seconds) is a **hurdle** distribution::

    P(X <= t)  for t < a:   π0 · 1{t >= x0}                      (atom)
    P(X <= t)  for t >= a:  π0 + (1 − π0) · F(t − a)              (continuous part)

* ``a`` is the atom threshold (``0`` for run time: zero-second runs; ``1 s`` for queueing delay:
  immediate starts), ``x0`` the median of the observations ``<= a`` (where the atom sits);
* ``π0 = (n_atom + ½) / (n + 1)``: the atom probability, Jeffreys-smoothed so that a held-out atom
  observation never has probability zero (differs from the MLE ``n_atom/n`` by < 1/n);
* ``F`` is one family of :mod:`acmemodel.models.distributions` fitted to the excesses ``x − a``
  of the observations above ``a``. Right-censored observations (queued jobs cancelled after
  ``c > a`` seconds) count as "not atom" and enter ``F``'s likelihood through ``log S(c − a)``;
  censored values ``c <= a`` carry (almost) no information and are ignored (counted in ``note``).

Family selection: **held-out log-likelihood** (default) — fit every candidate on 3/4 of the cell's
observations (in time order, every 4th observation held out), score the mean log-likelihood of the
held-out quarter, then apply the one-standard-error rule: among the candidates whose mean held-out
log-likelihood is within one paired standard error of the best, take the one with the fewest
parameters (lognormal, Weibull, gamma, log-logistic: 2; mixture: 5; empirical: most), and among
equally simple ones the largest log-likelihood over all the cell's observations (the AIC/BIC
comparison for equal dimension, more powerful than the held-out quarter alone). The chosen family
is then refitted on all observations. Why held-out likelihood rather than BIC: the empirical
(kernel ECDF) candidate has no honest parameter count, and held-out likelihood measures exactly what
the model is used for (predicting new jobs), including the penalty for overfitting; the 1-SE rule
keeps simple families when the data cannot tell them apart. ``selection="bic"`` is available
(``BIC = −2ℓ + k·log n``; the empirical family then is only a fallback).

Speed: a cell with more than ``max_fit_jobs`` (default 20 000) continuous observations is thinned
to that many by systematic sampling in time order before family fitting and selection; the atom
probability, the goodness of fit (KS) and the stored empirical quantiles use all observations.

Sparse and degenerate cells (the ``note`` column of ``summary()`` says which rule applied):

* fewer than ``min_family_jobs`` (20) continuous observations: the continuous part is borrowed from
  the parent cell (the next cell on the back-off chain) — a cell may still own its atom;
* all continuous values equal (e.g. every job ran exactly 5 s): a lognormal with ``mu = log(v)`` and
  ``sigma = 0.01`` (a 1 % spread around the value);
* no continuous values at all (every run took 0 s): continuous part from the parent, or, at the
  root, no continuous part (``π0 = 1``);
* a candidate family that fails to fit is skipped and named in ``note``.
"""
from __future__ import annotations

import json
import math
import warnings
from typing import Any, ClassVar, Sequence

import numpy as np
import pandas as pd

from acmemodel.models.gof import ks_distance
from acmemodel.features.keys import CELL_KEYS, Cell, gpu_bucket
from acmemodel.models.base import BaseModel, unjson_float
from acmemodel.models.cells import CellEntry, CellTable, Resolved
from acmemodel.models.duration_mix import DurationMixture
from acmemodel.models.distributions import (
    Empirical, Family, LogNormal, family_from_dict, get_family,
)

#: quantile levels of the stored empirical distribution of each cell (for plot and checks)
EMPIRICAL_LEVELS = np.round(np.linspace(0.01, 0.99, 99), 2)
MIN_FAMILY_JOBS = 20
DEGENERATE_SIGMA = 0.01


def _complexity(f: Family) -> int:
    return f.n_params


def _brief_params(f: Family | None) -> dict[str, float]:
    if f is None:
        return {}
    if isinstance(f, Empirical):
        return {"h": round(f.h, 4), "m": int(f.atoms.size)}
    return {k: float(f"{v:.6g}") for k, v in f.params.items()}


class DurationCell:
    """The fitted hurdle distribution of one cell (see module docstring).

    Attributes: ``n`` (observations), ``n_atom``, ``n_censored`` (censored values above the threshold,
    used in the likelihood), ``n_censored_ignored``, ``p_atom`` (π0), ``atom_value`` (x0, seconds),
    ``threshold`` (a, seconds), ``family`` (a :class:`Family` or None), ``source`` ("fit",
    "degenerate", "parent", "none"), ``scores`` {family: held-out mean loglik or BIC}, ``ks``,
    ``quantiles`` (empirical quantiles of all observations at :data:`EMPIRICAL_LEVELS`), ``note``.
    """

    def __init__(self, *, n, n_atom, n_censored, n_censored_ignored, p_atom, atom_value, threshold,
                 family, source, scores, ks, quantiles, note, selection="heldout"):
        self.n = int(n)
        self.n_atom = int(n_atom)
        self.n_censored = int(n_censored)
        self.n_censored_ignored = int(n_censored_ignored)
        self.p_atom = float(p_atom)
        self.atom_value = float(atom_value)
        self.threshold = float(threshold)
        self.family = family
        self.source = source
        self.scores = dict(scores)
        self.ks = float(ks)
        self.quantiles = np.asarray(quantiles, dtype=float)
        self.note = note
        self.selection = selection

    # ------------------------------------------------------------------ distribution
    def cdf(self, x) -> np.ndarray:
        x = np.asarray(x, dtype=float)
        out = np.where(x >= self.atom_value, self.p_atom, 0.0)
        if self.family is not None:
            ex = x - self.threshold
            cont = np.where(ex > 0, self.family.cdf(np.where(ex > 0, ex, 1.0)), 0.0)
            out = out + (1 - self.p_atom) * cont
        elif self.p_atom < 1:  # pragma: no cover - p_atom == 1 whenever family is None
            out = out + (1 - self.p_atom) * (x > self.threshold)
        return out

    def quantile(self, q) -> np.ndarray:
        q = np.asarray(q, dtype=float)
        if np.any((q < 0) | (q > 1)) or np.any(np.isnan(q)):
            raise ValueError("q must be in [0, 1]")
        out = np.full(q.shape, self.atom_value, dtype=float)
        if self.family is not None:
            cont = q > self.p_atom
            if np.any(cont):
                r = (q[cont] - self.p_atom) / (1 - self.p_atom)
                out[cont] = self.threshold + self.family.ppf(np.clip(r, 0, 1))
        return out

    def median(self) -> float:
        return float(self.quantile(0.5))

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        n = int(n)
        out = np.full(n, self.atom_value, dtype=float)
        if self.family is not None:
            cont = rng.random(n) >= self.p_atom
            k = int(cont.sum())
            if k:
                out[cont] = self.threshold + self.family.sample(k, rng)
        return out

    def loglik(self, x, censored=None) -> np.ndarray:
        """Per-observation log-likelihood under the hurdle model: ``log π0`` for ``x <= a``;
        ``log(1 − π0) + log f(x − a)`` above; censored ``c > a``: ``log(1 − π0) + log S(c − a)``;
        censored ``c <= a``: 0 (no information)."""
        x = np.asarray(x, dtype=float).ravel()
        c = np.zeros(x.shape, bool) if censored is None else np.asarray(censored, bool).ravel()
        out = np.empty(x.shape, dtype=float)
        atom = x <= self.threshold
        with np.errstate(divide="ignore"):
            out[atom & ~c] = math.log(self.p_atom) if self.p_atom > 0 else -np.inf
            out[atom & c] = 0.0
            above = ~atom
            l1p = math.log1p(-self.p_atom) if self.p_atom < 1 else -np.inf
            if self.family is None:
                out[above] = -np.inf
            else:
                ex = x[above] - self.threshold
                out[above] = l1p + self.family.loglik(ex, c[above])
        return out

    # ------------------------------------------------------------------ serialisation
    def to_dict(self) -> dict[str, Any]:
        return {
            "n": self.n, "n_atom": self.n_atom, "n_censored": self.n_censored,
            "n_censored_ignored": self.n_censored_ignored, "p_atom": self.p_atom,
            "atom_value": self.atom_value, "threshold": self.threshold,
            "family": None if self.family is None else self.family.to_dict(),
            "source": self.source, "scores": self.scores, "ks": self.ks,
            "quantiles": [None if not np.isfinite(v) else round(float(v), 6) for v in self.quantiles],
            "note": self.note, "selection": self.selection,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "DurationCell":
        d = dict(d)
        fam = d.pop("family")
        d["family"] = None if fam is None else family_from_dict(fam)
        d["quantiles"] = [unjson_float(v) for v in d["quantiles"]]
        d["scores"] = {k: unjson_float(v) for k, v in d["scores"].items()}
        d["ks"] = unjson_float(d["ks"])
        return cls(**d)


def _select_family(x: np.ndarray, c: np.ndarray, families: Sequence[str], selection: str,
                   notes: list[str]) -> tuple[Family, dict[str, float]]:
    """Fit the candidate families to continuous excesses ``x`` (> 0) and pick one (module doc).

    ``notes`` receives the candidates that failed and any warning raised by the *chosen* fit."""
    n = x.size
    scores: dict[str, float] = {}
    fitted: dict[str, Family] = {}
    warned: dict[str, str] = {}
    failed: list[str] = []

    def try_fit(name, xx, cc):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            try:
                f = get_family(name).fit(xx, cc)
            except (ValueError, FloatingPointError, ArithmeticError, np.linalg.LinAlgError):
                failed.append(name)
                return None
        if w:
            warned[name] = str(w[-1].message).splitlines()[0][:80]
        else:
            warned.pop(name, None)
        return f

    def finish(choice: str, final: Family, sc: dict[str, float]):
        bad = sorted(set(failed) - {choice})
        if bad:
            notes.append(f"not fittable: {', '.join(bad)}")
        if choice in warned:
            notes.append(warned[choice])
        return final, sc

    hold = (np.arange(n) % 4) == 3
    if selection == "heldout" and n >= 2 * MIN_FAMILY_JOBS and not c[~hold].all():
        lls, total = {}, {}
        for name in families:
            f = try_fit(name, x[~hold], c[~hold])
            if f is None:
                continue
            ll = f.loglik(x[hold], c[hold])
            if not np.all(np.isfinite(ll)):
                failed.append(name)
                continue
            lls[name] = ll
            fitted[name] = f
            scores[name] = float(ll.mean())
            total[name] = float(ll.sum() + f.loglik(x[~hold], c[~hold]).sum())
        if not lls:
            raise ValueError("no candidate family could be fitted")
        best = max(scores, key=scores.get)
        ok = []
        for name, ll in lls.items():
            diff = lls[best] - ll
            se = float(diff.std(ddof=1) / math.sqrt(diff.size)) if diff.size > 1 else 0.0
            if diff.mean() <= se:
                ok.append(name)
        # fewest parameters first; among equally simple families the larger log-likelihood over all
        # the cell's values (for equal dimension this is the AIC/BIC comparison, which is more
        # powerful than the quarter held out)
        choice = min(ok, key=lambda nm: (_complexity(fitted[nm]), -total[nm]))
        final = try_fit(choice, x, c) or fitted[choice]
        return finish(choice, final, scores)
    # BIC (also used for small cells where a 1/4 hold-out would be too small)
    bics = {}
    for name in families:
        f = try_fit(name, x, c)
        if f is None:
            continue
        ll = f.loglik(x, c)
        if not np.all(np.isfinite(ll)):
            failed.append(name)
            continue
        fitted[name] = f
        bics[name] = float(-2 * ll.sum() + f.n_params * math.log(n))
    if not bics:
        raise ValueError("no candidate family could be fitted")
    param = {k: v for k, v in bics.items() if k != "empirical"}
    pool = param or bics
    choice = min(pool, key=pool.get)
    if selection == "heldout":
        notes.append(f"BIC used: only {n} continuous observations" if n < 2 * MIN_FAMILY_JOBS
                     else "BIC used: the 3/4 training part would be all censored")
    return finish(choice, fitted[choice], bics)


def fit_duration_cell(x: np.ndarray, censored: np.ndarray | None, *, threshold: float,
                      families: Sequence[str], selection: str = "heldout", max_fit_jobs: int = 20000,
                      parent: DurationCell | None = None, parent_label: str = "") -> DurationCell:
    """Fit the hurdle distribution of one cell (see module docstring). ``x`` in seconds, time order."""
    x = np.asarray(x, dtype=float)
    c = np.zeros(x.shape, bool) if censored is None else np.asarray(censored, bool)
    n = x.size
    notes: list[str] = []
    atom = (x <= threshold) & ~c
    cens_ignored = (x <= threshold) & c
    cont = x > threshold
    n_atom = int(atom.sum())
    n_cont = int(cont.sum())
    n_eff = n_atom + n_cont
    if cens_ignored.any():
        notes.append(f"{int(cens_ignored.sum())} censored waits <= {threshold:g}s ignored")
    atom_value = float(np.quantile(x[atom], 0.5, method="inverted_cdf")) if n_atom else 0.0
    atom_value = min(max(atom_value, 0.0), threshold) if threshold > 0 else 0.0
    p_atom = (n_atom + 0.5) / (n_eff + 1) if n_cont else 1.0
    ex, ec = x[cont] - threshold, c[cont]
    n_unc = int((~ec).sum())
    family: Family | None = None
    scores: dict[str, float] = {}
    source = "fit"
    if n_unc == 0:
        if parent is not None and parent.family is not None:
            family, source = parent.family, "parent"
            notes.append(f"no uncensored values > {threshold:g}s: continuous part from {parent_label}")
            if n_cont == 0:
                p_atom = (n_atom + 0.5) / (n_eff + 1)
        else:
            source = "none"
            p_atom = 1.0
            notes.append(f"all values <= {threshold:g}s: atom only")
    elif n_unc < MIN_FAMILY_JOBS and parent is not None and parent.family is not None:
        family, source = parent.family, "parent"
        notes.append(f"sparse: {n_unc} values > {threshold:g}s; continuous part from {parent_label}")
    else:
        lx = np.log(ex[~ec])
        if float(lx.max() - lx.min()) < 1e-9:
            family, source = LogNormal(mu=float(lx[0]), sigma=DEGENERATE_SIGMA), "degenerate"
            notes.append(f"degenerate: all values = {float(ex[~ec][0]) + threshold:g}s; "
                         f"lognormal sigma={DEGENERATE_SIGMA}")
        elif n_unc < MIN_FAMILY_JOBS:
            family, source = LogNormal.fit(ex, ec), "fit"
            notes.append(f"sparse root: {n_unc} values; lognormal only")
        else:
            if n_cont > max_fit_jobs:
                idx = np.linspace(0, n_cont - 1, max_fit_jobs).round().astype(np.int64)
                fx, fc = ex[idx], ec[idx]
                notes.append(f"families fitted on {max_fit_jobs} of {n_cont} values (systematic)")
            else:
                fx, fc = ex, ec
            try:
                family, scores = _select_family(fx, fc, families, selection, notes)
            except ValueError as e:
                notes.append(str(e))
                family, source = LogNormal.fit(ex, ec), "fit"
    cell = DurationCell(n=n, n_atom=n_atom, n_censored=int(ec.sum()),
                        n_censored_ignored=int(cens_ignored.sum()), p_atom=p_atom, atom_value=atom_value,
                        threshold=threshold, family=family, source=source, scores=scores, ks=np.nan,
                        quantiles=np.full(EMPIRICAL_LEVELS.size, np.nan), note="; ".join(notes),
                        selection=selection)
    # goodness of fit and empirical quantiles on all observations (KM when censored). The model
    # claims only P(X <= a) for the atom, not where inside [0, a] the values lie, so for the KS
    # distance the observed atom values are placed at x0 like the model's atom.
    keep = ~cens_ignored
    xs, cs = np.maximum(x[keep], 0.0), c[keep]
    if xs.size and not cs.all():
        xk = np.where(xs <= threshold, atom_value, xs)
        cell.ks = ks_distance(xk, cell.cdf, cs if cs.any() else None)
        cell.quantiles = _empirical_quantiles(xs, cs)
    return cell


def _empirical_quantiles(x: np.ndarray, c: np.ndarray) -> np.ndarray:
    if not c.any():
        return np.quantile(x, EMPIRICAL_LEVELS, method="inverted_cdf")
    from scipy import stats
    res = stats.ecdf(stats.CensoredData(uncensored=x[~c], right=x[c]))
    qs, ps = res.cdf.quantiles, res.cdf.probabilities
    idx = np.searchsorted(ps, EMPIRICAL_LEVELS - 1e-12, side="left")
    out = np.full(EMPIRICAL_LEVELS.size, np.nan)
    ok = idx < qs.size
    out[ok] = qs[idx[ok]]
    return out


def _single_blas_thread():
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - threadpoolctl ships with scikit-learn
        import contextlib
        return contextlib.nullcontext()
    return threadpool_limits(limits=1, user_api="blas")


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
        with _single_blas_thread():
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

