"""Goodness-of-fit statistics that the models compute about themselves (per-cell diagnostics).

:func:`ks_distance` lives here, in the models layer, so that a model can report how well a cell
fits without importing the evaluation package (which sits above the models); the evaluation
metrics re-export it (:mod:`acmemodel.evaluation.metrics`).
"""
from __future__ import annotations

from typing import Callable

import numpy as np
from scipy import stats

__all__ = ["ks_distance", "ecdf_steps"]

#: with ``monotone=True``, above this many distinct values :func:`ks_distance` evaluates the CDF at every
#: :data:`KS_STRIDE`-th value first and then only where the bound of its monotonicity leaves the supremum open
KS_PRUNE_MIN = 4096
KS_STRIDE = 32
#: slack of that bound (a computed CDF may be non-monotone by rounding, ~1e-16)
_KS_SLACK = 1e-9


def ecdf_steps(x, censored=None):
    """(support points, F̂ right limits, F̂ left limits) of the ECDF of ``x`` or, when ``censored`` marks
    right-censored values, of the Kaplan–Meier estimate: what :func:`ks_distance` compares a CDF with (compute
    it once to compare several CDFs with the same sample, ``steps=``)."""
    x = np.asarray(x, dtype=float).ravel()
    return _ecdf_steps(x, None if censored is None else np.asarray(censored, dtype=bool).ravel())


def _ecdf_steps(x: np.ndarray, censored: np.ndarray | None):
    """(support points, F̂ right limits, F̂ left limits) of the ECDF or Kaplan–Meier estimate."""
    if censored is None or not np.any(censored):
        v, cnt = np.unique(x, return_counts=True)
        right = np.cumsum(cnt) / x.size
        left = np.concatenate([[0.0], right[:-1]])
        return v, right, left
    c = np.asarray(censored, dtype=bool)
    res = stats.ecdf(stats.CensoredData(uncensored=x[~c], right=x[c]))
    v, right = res.cdf.quantiles, res.cdf.probabilities
    left = np.concatenate([[0.0], right[:-1]])
    return v, right, left


def ks_distance(x, cdf: Callable[[np.ndarray], np.ndarray], censored=None, *, steps=None,
                monotone: bool = False) -> float:
    """Kolmogorov–Smirnov distance ``D = sup_x |F̂(x) − F(x)|``.

    ``F̂`` is the empirical CDF of ``x`` (ties handled by comparing both one-sided limits at each
    distinct value), or the Kaplan–Meier estimate when ``censored`` marks right-censored values
    (then the supremum runs over the KM jump points). ``cdf`` is the model CDF (vectorised callable).
    For integer-valued data against a continuous ``F``, ``D`` includes the discretisation gap.
    Returns NaN for an empty sample.

    ``steps``: :func:`ecdf_steps` of ``(x, censored)``, computed once for several CDFs of one sample.
    ``monotone=True`` (``cdf`` is non-decreasing, as a CDF is): above :data:`KS_PRUNE_MIN` distinct values
    ``F`` is evaluated at every :data:`KS_STRIDE`-th of them first; between two such values ``a < b`` both
    ``F(v)`` and ``F(v−)`` lie in ``[F(a), F(b)]``, so a value whose ``F̂`` limits are within that range's
    reach of less than the supremum found so far cannot hold the supremum and is not evaluated. The
    result is the same supremum (each value is evaluated by the same ``cdf``); the cost is a fraction
    of the CDF evaluations of a large sample (e.g. a kernel-smoothed law on a million distinct waits).
    """
    x = np.asarray(x, dtype=float).ravel()
    if x.size == 0:
        return float("nan")
    c = None if censored is None else np.asarray(censored, dtype=bool).ravel()
    if c is not None and c.all():
        return float("nan")
    v, right, left = _ecdf_steps(x, c) if steps is None else steps
    if monotone and v.size > KS_PRUNE_MIN:
        return _ks_pruned(v, right, left, cdf)
    F = np.asarray(cdf(v), dtype=float)
    # model CDF left limit at v equals F(v) for continuous F; for atoms use F just below v
    F_left = np.asarray(cdf(np.nextafter(v, -np.inf)), dtype=float)
    return float(max(np.max(np.abs(right - F)), np.max(np.abs(left - F_left))))


def _ks_pruned(v: np.ndarray, right: np.ndarray, left: np.ndarray, cdf) -> float:
    """:func:`ks_distance` with ``monotone=True`` on the ECDF steps ``(v, right, left)`` (its docstring)."""
    n = v.size
    idx = np.unique(np.r_[np.arange(0, n, KS_STRIDE), n - 1])
    F = np.asarray(cdf(v[idx]), dtype=float)
    FL = np.asarray(cdf(np.nextafter(v[idx], -np.inf)), dtype=float)
    d = float(max(np.max(np.abs(right[idx] - F)), np.max(np.abs(left[idx] - FL))))
    # the bracket [F(a), F(b)] of every value between two evaluated ones (k: its interval)
    k = np.searchsorted(idx, np.arange(n), side="right") - 1
    inner = np.ones(n, bool)
    inner[idx] = False
    k = np.minimum(k, idx.size - 2)
    lo, hi = F[k], F[k + 1]
    bound = np.maximum(np.maximum(right - lo, hi - right), np.maximum(left - lo, hi - left))
    todo = np.flatnonzero(inner & (bound + _KS_SLACK >= d))
    if todo.size:
        Ft = np.asarray(cdf(v[todo]), dtype=float)
        FLt = np.asarray(cdf(np.nextafter(v[todo], -np.inf)), dtype=float)
        d = max(d, float(np.max(np.abs(right[todo] - Ft))), float(np.max(np.abs(left[todo] - FLt))))
    return d
