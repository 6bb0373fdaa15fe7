"""One duration cell of :class:`RuntimeModel` / :class:`QueueModel`: the hurdle distribution, its fit
and the family selection (the model over many cells is :class:`~acmemodel.models._duration.DurationModel`).

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
comparison for equal dimension, more powerful than the held-out quarter alone). **Hierarchical
tie-break**: when the family the *parent cell* chose (the next cell on the back-off chain, fitted
first, on more data) is among those candidates, it is taken instead — where a cell's own data cannot
tell the families apart, the coarser cell's choice says which shape the cells share. (Without it,
Kalos's debug cells of 79–144 runs each took smooth families that each passed the gate at their
size but all missed the same steep step that the type-level data showed, so that their mixture
missed the type's run-time curve by KS 0.07.) A **goodness-of-fit
gate** comes first: a candidate whose KS distance to all the cell's observations exceeds the smallest
candidate's by more than ``KS_GATE/√n`` (1.63/√n, the Kolmogorov 99 % point) is not eligible — the
held-out likelihood barely weighs the upper tail, where a misfit family (e.g. a lognormal with KS
0.095 on 569 cancelled pretraining runs, whose p90 came out 40 % short) loses much of a cell's mean,
i.e. of its GPU time; comparing with the best candidate rather than with 0 leaves out the
discretisation gap that integer seconds put into every candidate's KS alike. The chosen family
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

import math
import warnings
from typing import Any, Sequence

import numpy as np

from acmemodel.models.base import unjson_float
from acmemodel.models.distributions import Empirical, KaplanMeierTail, LogNormal, get_family
from acmemodel.models.family import Family, family_from_dict
from acmemodel.models.gof import ecdf_steps, ks_distance

__all__ = ["DurationCell", "fit_duration_cell", "EMPIRICAL_LEVELS", "MIN_FAMILY_JOBS", "DEGENERATE_SIGMA"]

#: quantile levels of the stored empirical distribution of each cell (for plot and checks)
EMPIRICAL_LEVELS = np.round(np.linspace(0.01, 0.99, 99), 2)
MIN_FAMILY_JOBS = 20
#: KS gate of the family selection (module docstring): 1.63 = the Kolmogorov distribution's 99 % point
KS_GATE = 1.63
DEGENERATE_SIGMA = 0.01


def _complexity(f: Family) -> int:
    return f.n_params


def _brief_params(f: Family | None) -> dict[str, float]:
    if f is None:
        return {}
    if isinstance(f, Empirical):
        return {"h": round(f.h, 4), "m": int(f.atoms.size)}
    if isinstance(f, KaplanMeierTail):
        return {"s_lo": round(f.s_lo, 4), "s_hi": round(f.s_hi, 4), "m": int(f.knots.size - 1)}
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
        self.own_p_atom = float(p_atom)
        self.atom_value = float(atom_value)
        self.threshold = float(threshold)
        self.family = family
        self.source = source
        self.scores = dict(scores)
        self.ks = float(ks)
        self.quantiles = np.asarray(quantiles, dtype=float)
        self.note = note
        self.selection = selection
        # partial pooling with the parent cell (:mod:`acmemodel.models._duration`): the answer is
        # ``pool_w · own + (1 − pool_w) · parent``; 1 = the cell's own fit (no parent)
        self.pool_w = 1.0
        self.pool_parent: "DurationCell | None" = None

    # ------------------------------------------------------------------ distribution
    def own_cdf(self, x) -> np.ndarray:
        x = np.asarray(x, dtype=float)
        out = np.where(x >= self.atom_value, self.own_p_atom, 0.0)
        if self.family is not None:
            ex = x - self.threshold
            cont = np.where(ex > 0, self.family.cdf(np.where(ex > 0, ex, 1.0)), 0.0)
            out = out + (1 - self.own_p_atom) * cont
        elif self.own_p_atom < 1:  # pragma: no cover - p_atom == 1 whenever family is None
            out = out + (1 - self.own_p_atom) * (x > self.threshold)
        return out

    def own_quantile(self, q) -> np.ndarray:
        q = np.asarray(q, dtype=float)
        if np.any((q < 0) | (q > 1)) or np.any(np.isnan(q)):
            raise ValueError("q must be in [0, 1]")
        out = np.full(q.shape, self.atom_value, dtype=float)
        if self.family is not None:
            cont = q > self.own_p_atom
            if np.any(cont):
                r = (q[cont] - self.own_p_atom) / (1 - self.own_p_atom)
                out[cont] = self.threshold + self.family.ppf(np.clip(r, 0, 1))
        return out

    def own_sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        n = int(n)
        out = np.full(n, self.atom_value, dtype=float)
        if self.family is not None:
            cont = rng.random(n) >= self.own_p_atom
            k = int(cont.sum())
            if k:
                out[cont] = self.threshold + self.family.sample(k, rng)
        return out

    def own_loglik(self, x, censored=None) -> np.ndarray:
        """Per-observation log-likelihood under the hurdle model: ``log π0`` for ``x <= a``;
        ``log(1 − π0) + log f(x − a)`` above; censored ``c > a``: ``log(1 − π0) + log S(c − a)``;
        censored ``c <= a``: 0 (no information)."""
        x = np.asarray(x, dtype=float).ravel()
        c = np.zeros(x.shape, bool) if censored is None else np.asarray(censored, bool).ravel()
        out = np.empty(x.shape, dtype=float)
        atom = x <= self.threshold
        with np.errstate(divide="ignore"):
            out[atom & ~c] = math.log(self.own_p_atom) if self.own_p_atom > 0 else -np.inf
            out[atom & c] = 0.0
            above = ~atom
            l1p = math.log1p(-self.own_p_atom) if self.own_p_atom < 1 else -np.inf
            if self.family is None:
                out[above] = -np.inf
            else:
                ex = x[above] - self.threshold
                out[above] = l1p + self.family.loglik(ex, c[above])
        return out

    # ------------------------------------------------------------------ pooled answer
    @property
    def pooled(self) -> bool:
        """True when the cell's answer mixes in its parent (``pool_w < 1``)."""
        return self.pool_parent is not None and self.pool_w < 1.0

    def _mix(self):
        from acmemodel.models.duration_mix import DurationMixture

        return DurationMixture([_Own(self), self.pool_parent], [self.pool_w, 1.0 - self.pool_w])

    @property
    def p_atom(self) -> float:
        """``P(X <= a)`` of the cell's answer (own atom probability pooled with the parent's)."""
        if not self.pooled:
            return self.own_p_atom
        return self.pool_w * self.own_p_atom + (1.0 - self.pool_w) * self.pool_parent.p_atom

    def cdf(self, x) -> np.ndarray:
        """``P(X <= x)``: ``w · F_own(x) + (1 − w) · F_parent(x)`` (``w = pool_w``)."""
        if not self.pooled:
            return self.own_cdf(x)
        return self.pool_w * self.own_cdf(x) + (1.0 - self.pool_w) * np.asarray(self.pool_parent.cdf(x), float)

    def quantile(self, q) -> np.ndarray:
        """The ``q``-quantile(s) (s) of the pooled answer (bisection on its CDF when pooled)."""
        if not self.pooled:
            return self.own_quantile(q)
        return self._mix().quantile(q)

    def median(self) -> float:
        return float(self.quantile(0.5))

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` draws (s): each from the own law with probability ``pool_w``, else from the parent's."""
        if not self.pooled:
            return self.own_sample(n, rng)
        return self._mix().sample(n, rng)

    def loglik(self, x, censored=None) -> np.ndarray:
        """Per-observation log-likelihood ``log(w · p_own + (1 − w) · p_parent)`` (see :meth:`own_loglik`)."""
        if not self.pooled:
            return self.own_loglik(x, censored)
        a = self.own_loglik(x, censored)
        b = np.asarray(self.pool_parent.loglik(x, censored), float)
        with np.errstate(divide="ignore"):
            return np.logaddexp(a + math.log(self.pool_w) if self.pool_w > 0 else -np.inf,
                                b + math.log1p(-self.pool_w))

    # ------------------------------------------------------------------ serialisation
    def to_dict(self) -> dict[str, Any]:
        return {
            "n": self.n, "n_atom": self.n_atom, "n_censored": self.n_censored,
            "n_censored_ignored": self.n_censored_ignored, "p_atom": self.own_p_atom,
            "atom_value": self.atom_value, "threshold": self.threshold,
            "family": None if self.family is None else self.family.to_dict(),
            "source": self.source, "scores": self.scores, "ks": self.ks,
            "quantiles": [None if not np.isfinite(v) else round(float(v), 6) for v in self.quantiles],
            "note": self.note, "selection": self.selection,
            # the parent is linked again by the model that loads the cell (its cell is the table's)
            "pool_w": self.pool_w,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "DurationCell":
        d = dict(d)
        fam = d.pop("family")
        d["family"] = None if fam is None else family_from_dict(fam)
        d["quantiles"] = [unjson_float(v) for v in d["quantiles"]]
        d["scores"] = {k: unjson_float(v) for k, v in d["scores"].items()}
        d["ks"] = unjson_float(d["ks"])
        w = float(d.pop("pool_w", 1.0))  # (bundles written before pooling: the own fit)
        out = cls(**d)
        out.pool_w = w
        return out


class _Own:
    """The cell's own (unpooled) law, as a component of its pooled mixture."""

    def __init__(self, cell: DurationCell):
        self.cell = cell
        self.n = cell.n

    @property
    def p_atom(self) -> float:
        return self.cell.own_p_atom

    def cdf(self, x):
        return self.cell.own_cdf(x)

    def quantile(self, q):
        return self.cell.own_quantile(q)

    def sample(self, n, rng):
        return self.cell.own_sample(n, rng)

    def loglik(self, x, censored=None):
        return self.cell.own_loglik(x, censored)


def gof_eligible(ks: dict[str, float], ok: Sequence[str], n: int) -> list[str]:
    """The goodness-of-fit gate of the family selection (module docstring): the candidates of ``ok``
    (those within one standard error of the best held-out likelihood) whose KS distance ``ks[name]``
    is at most ``min(ks) + KS_GATE/√n``; when none of them is, every candidate within that bound."""
    gate = min(ks.values()) + KS_GATE / math.sqrt(n)
    return [nm for nm in ok if ks[nm] <= gate] or [nm for nm in ks if ks[nm] <= gate]


def _select_family(x: np.ndarray, c: np.ndarray, families: Sequence[str], selection: str,
                   notes: list[str], parent_family: str | None = None) -> tuple[Family, dict[str, float]]:
    """Fit the candidate families to continuous excesses ``x`` (> 0) and pick one (module doc).

    ``parent_family``: the family the parent cell chose, which wins among the candidates this cell's
    data cannot tell apart. ``notes`` receives the candidates that failed and any warning raised by
    the *chosen* fit."""
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
        if not lls:
            raise ValueError("no candidate family could be fitted")
        best = max(scores, key=scores.get)
        ok = []
        for name, ll in lls.items():
            diff = lls[best] - ll
            se = float(diff.std(ddof=1) / math.sqrt(diff.size)) if diff.size > 1 else 0.0
            if diff.mean() <= se:
                ok.append(name)
        # goodness-of-fit gate: a candidate whose KS distance to all the cell's values exceeds the
        # smallest candidate's by more than KS_GATE / sqrt(n) misfits the shape where another fits
        # (the held-out likelihood barely weighs the upper tail, which holds the GPU time)
        steps = ecdf_steps(x, c if c.any() else None)  # (the sample's ECDF, once for every candidate)
        ok = gof_eligible({nm: ks_distance(x, _OnceCdf(fitted[nm].cdf), steps=steps, monotone=True) for nm in lls},
                          ok, n)
        # the parent's family when this cell cannot tell it from the others (module docstring)
        if parent_family in ok:
            choice = parent_family
            return finish(choice, try_fit(choice, x, c) or fitted[choice], scores)
        # fewest parameters first; among equally simple families the larger log-likelihood over all
        # the cell's values (for equal dimension this is the AIC/BIC comparison, which is more
        # powerful than the quarter held out). That total is computed only for the families it
        # decides between (the empirical family's, on three quarters of a cell, was most of a fit).
        k_min = min(_complexity(fitted[nm]) for nm in ok)
        simplest = [nm for nm in ok if _complexity(fitted[nm]) == k_min]
        for nm in simplest if len(simplest) > 1 else ():
            total[nm] = float(lls[nm].sum() + fitted[nm].loglik(x[~hold], c[~hold]).sum())
        choice = simplest[0] if len(simplest) == 1 else min(simplest, key=lambda nm: -total[nm])
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


def _fit_only(name: str, x: np.ndarray, c: np.ndarray) -> Family:
    """Family ``name`` fitted to ``x`` (censored ``c``), its warnings silenced; ``ValueError`` when it
    cannot be fitted (the caller falls back to the lognormal, as after a failed selection)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return get_family(name).fit(x, c)
        except (FloatingPointError, ArithmeticError, np.linalg.LinAlgError) as e:
            raise ValueError(f"{name} could not be fitted: {e}") from None


def fit_duration_cell(x: np.ndarray, censored: np.ndarray | None, *, threshold: float,
                      families: Sequence[str], selection: str = "heldout", max_fit_jobs: int = 20000,
                      parent: DurationCell | None = None, parent_label: str = "",
                      select: bool = True, diagnostics: bool = True) -> DurationCell:
    """Fit the hurdle distribution of one cell (see module docstring). ``x`` in seconds, time order.

    ``select=False``: no family selection — ``families[0]`` is fitted to the (thinned) continuous values,
    which is what the selection ends with when that family wins (``scores`` stay empty). ``diagnostics=False``:
    no KS distance and no empirical quantiles (NaN). Both serve the pooling choice's refit on the earlier
    jobs (:mod:`acmemodel.models._duration`), which needs each cell's law only."""
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
                if select:
                    family, scores = _select_family(
                        fx, fc, families, selection, notes,
                        parent_family=None if parent is None or parent.family is None
                        or parent.source == "degenerate" else parent.family.name)
                else:
                    family = _fit_only(families[0], fx, fc)
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
    if diagnostics and xs.size and not cs.all():
        xk = np.where(xs <= threshold, atom_value, xs)
        cell.ks = ks_distance(xk, _OnceCdf.of_cell(cell), cs if cs.any() else None, monotone=True)
        cell.quantiles = _empirical_quantiles(xs, cs)
    return cell


class _OnceCdf:
    """A cell's CDF for :func:`ks_distance`, which asks for ``F(v)`` and then for the left limits ``F(v−)`` at
    ``nextafter(v, −inf)``: the hurdle's only jump is at the atom's value (its continuous part is continuous
    from 0 at the threshold), so the left limits are the values just computed except there (and, to be safe,
    at the threshold), where they are evaluated. Halves the KS cost of a large cell (a million distinct
    dequantised waits); any other call is evaluated as asked."""

    def __init__(self, cdf, jumps: Sequence[float] = ()):
        self.cdf, self.jumps = cdf, tuple(jumps)
        self._v = self._f = None

    @classmethod
    def of_cell(cls, cell: DurationCell) -> "_OnceCdf":
        return cls(cell.cdf, (cell.atom_value, cell.threshold))

    def __call__(self, x):
        x = np.asarray(x, dtype=float)
        v = self._v
        if v is not None and x.shape == v.shape and np.array_equal(x, np.nextafter(v, -np.inf)):
            out = self._f.copy()
            jump = np.isin(v, self.jumps)
            if jump.any():
                out[jump] = self.cdf(x[jump])
            self._v = self._f = None
            return out
        self._v, self._f = x, np.asarray(self.cdf(x), dtype=float)
        return self._f


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
