"""Scoring rules and goodness-of-fit metrics (plain functions on numpy arrays).

Distribution metrics (lower is better unless stated):

* :func:`acmemodel.models.gof.ks_distance` (defined with the models, which use it) — Kolmogorov–Smirnov distance ``D = sup_x |F̂_n(x) − F(x)|`` between the
  empirical CDF of a sample (Kaplan–Meier when some observations are right-censored) and a model CDF;
  :func:`pit_ks` — the same for probability-integral-transform values against Uniform(0, 1), which
  pools jobs whose predictive distributions differ (``u_i = F_i(x_i)``).
* :func:`crps_samples`, :func:`crps_grid` — continuous ranked probability score
  ``CRPS(F, x) = ∫ (F(z) − 1{z ≥ x})² dz`` in the unit of ``x``.
* :func:`heldout_loglik` — mean held-out log-likelihood per observation (nats; *higher* is better).

Quantile metrics:

* :func:`pinball_loss` — ``mean ρ_α(y − q)``, ``ρ_α(u) = max(α·u, (α − 1)·u)``;
* :func:`interval_coverage` — fraction of ``y`` inside ``[lo, hi]`` (a p10–p90 interval should
  cover 0.8);
* :func:`mae_log` — mean absolute error of log run time, ``mean |ln(1 + y) − ln(1 + ŷ)|``.

Censored test jobs: :func:`acmemodel.models.predictor_conformal.ipcw_weights` — inverse-probability-of-censoring weights ``1/Ĝ(y−)`` of
the ended jobs (``Ĝ`` the Kaplan–Meier survival of the censoring times), so that a mean over the
ended jobs estimates the mean over all jobs when some were still running at extraction (Robins &
Rotnitzky 1992; the ended ones alone over-represent short runs).

"Log run time" in this package is ``ln(1 + seconds)`` so that zero-second runs stay finite.
"""
from __future__ import annotations

import numpy as np

from acmemodel.models.gof import ks_distance

__all__ = ["pit_ks", "crps_samples", "crps_grid", "heldout_loglik", "pinball_loss",
           "interval_coverage", "mae_log", "log_time"]


def log_time(seconds) -> np.ndarray:
    """``ln(1 + seconds)``: the log scale used for run-time errors (finite at zero)."""
    return np.log1p(np.maximum(np.asarray(seconds, dtype=float), 0.0))


def pit_ks(u) -> float:
    """KS distance of PIT values ``u_i = F_i(x_i)`` from Uniform(0, 1) (calibration; 0 is perfect)."""
    u = np.asarray(u, dtype=float).ravel()
    u = u[np.isfinite(u)]
    if u.size == 0:
        return float("nan")
    return ks_distance(u, lambda t: np.clip(t, 0.0, 1.0))


def crps_samples(samples, x) -> np.ndarray:
    """CRPS of the distribution represented by ``samples`` at each observation ``x``.

    ``CRPS(F, x) = E|X − x| − ½ E|X − X'|`` with ``X, X' ~ F`` iid, estimated from the ``m`` samples
    (the energy form; ``E|X − X'| = (2/m²) Σ_i (2i − m − 1) s_(i)`` over the sorted samples).
    Vectorised: O((m + n) log m). Returns an array shaped like ``x`` (same unit as ``x``).
    """
    s = np.sort(np.asarray(samples, dtype=float).ravel())
    x = np.asarray(x, dtype=float)
    m = s.size
    if m == 0:
        raise ValueError("samples is empty")
    csum = np.concatenate([[0.0], np.cumsum(s)])
    k = np.searchsorted(s, x, side="right")  # number of samples <= x
    e_abs = (k * x - csum[k] + (csum[m] - csum[k]) - (m - k) * x) / m
    i = np.arange(1, m + 1)
    e_pair = 2.0 * np.sum((2 * i - m - 1) * s) / (m * m)
    return e_abs - 0.5 * e_pair


def crps_grid(cdf_values, grid, x) -> np.ndarray:
    """CRPS ``∫ (F(z) − 1{z ≥ x})² dz`` for a CDF tabulated on an increasing ``grid``.

    ``cdf_values[j] = F(grid[j])``; the integral is taken by the trapezoid rule over the grid, so
    the grid must cover the bulk of ``F`` and the observations (mass outside it is ignored).
    Returns an array shaped like ``x``.
    """
    g = np.asarray(grid, dtype=float)
    F = np.asarray(cdf_values, dtype=float)
    if g.ndim != 1 or g.shape != F.shape or np.any(np.diff(g) <= 0):
        raise ValueError("grid must be 1-D increasing and cdf_values the same shape")
    x = np.asarray(x, dtype=float)
    dz = np.diff(g)
    # ∫ F² over (-, x) + ∫ (1 − F)² over (x, +): with cumulative trapezoids and a partial interval
    a = F * F
    b = (1 - F) ** 2
    ca = np.concatenate([[0.0], np.cumsum(0.5 * (a[1:] + a[:-1]) * dz)])
    cb = np.concatenate([[0.0], np.cumsum(0.5 * (b[1:] + b[:-1]) * dz)])
    xc = np.clip(x, g[0], g[-1])
    Fx = np.interp(xc, g, F)
    j = np.clip(np.searchsorted(g, xc, side="right") - 1, 0, g.size - 2)
    part_a = ca[j] + 0.5 * (a[j] + Fx * Fx) * (xc - g[j])
    part_b = (cb[-1] - cb[j + 1]) + 0.5 * ((1 - Fx) ** 2 + b[j + 1]) * (g[j + 1] - xc)
    return part_a + part_b


def heldout_loglik(loglik_values) -> float:
    """Mean held-out log-likelihood per observation, ``(1/n) Σ log p(x_i)`` (nats; higher is better).

    ``loglik_values`` are per-observation log densities (or log probabilities for atoms, log
    survival for censored values) from a model fitted on *other* data. ``-inf`` is kept (a model
    that gives an observed value zero density deserves it).
    """
    v = np.asarray(loglik_values, dtype=float).ravel()
    return float(np.mean(v)) if v.size else float("nan")


def pinball_loss(y, q_pred, alpha: float) -> float:
    """Pinball (quantile) loss ``mean ρ_α(y − q)``, ``ρ_α(u) = max(α·u, (α − 1)·u)``."""
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha!r}")
    u = np.asarray(y, dtype=float) - np.asarray(q_pred, dtype=float)
    return float(np.mean(np.maximum(alpha * u, (alpha - 1) * u)))


def interval_coverage(y, lo, hi) -> float:
    """Fraction of observations with ``lo <= y <= hi``."""
    y = np.asarray(y, dtype=float)
    return float(np.mean((y >= np.asarray(lo, dtype=float)) & (y <= np.asarray(hi, dtype=float))))


def mae_log(y_true, y_pred) -> float:
    """Mean absolute error of log run time: ``mean |ln(1 + y) − ln(1 + ŷ)|`` (y in seconds)."""
    return float(np.mean(np.abs(log_time(y_true) - log_time(y_pred))))


