"""Goodness-of-fit statistics that the models compute about themselves (per-cell diagnostics).

:func:`ks_distance` lives here, in the models layer, so that a model can report how well a cell
fits without importing the evaluation package (which sits above the models); the evaluation
metrics re-export it (:mod:`acmemodel.evaluation.metrics`).
"""
from __future__ import annotations

from typing import Callable

import numpy as np
from scipy import stats

__all__ = ["ks_distance"]


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


def ks_distance(x, cdf: Callable[[np.ndarray], np.ndarray], censored=None) -> float:
    """Kolmogorov–Smirnov distance ``D = sup_x |F̂(x) − F(x)|``.

    ``F̂`` is the empirical CDF of ``x`` (ties handled by comparing both one-sided limits at each
    distinct value), or the Kaplan–Meier estimate when ``censored`` marks right-censored values
    (then the supremum runs over the KM jump points). ``cdf`` is the model CDF (vectorised callable).
    For integer-valued data against a continuous ``F``, ``D`` includes the discretisation gap.
    Returns NaN for an empty sample.
    """
    x = np.asarray(x, dtype=float).ravel()
    if x.size == 0:
        return float("nan")
    c = None if censored is None else np.asarray(censored, dtype=bool).ravel()
    if c is not None and c.all():
        return float("nan")
    v, right, left = _ecdf_steps(x, c)
    F = np.asarray(cdf(v), dtype=float)
    # model CDF left limit at v equals F(v) for continuous F; for atoms use F just below v
    F_left = np.asarray(cdf(np.nextafter(v, -np.inf)), dtype=float)
    return float(max(np.max(np.abs(right - F)), np.max(np.abs(left - F_left))))
