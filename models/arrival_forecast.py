"""Forecast of expected arrivals per hour after the fit window of an
:class:`~acmemodel.models.arrival.ArrivalModel`: the daily level from the daily forecasters, the hours
from the NHPP's weekly profile (:meth:`~acmemodel.models.arrival.ArrivalModel.forecast_counts`).

The NHPP's intensity beyond its fit window holds the log-linear trend at its last value, so a level
that moved in the last days of the window (a cluster ramping up, a quiet holiday week) is carried
into the future at its fitted, averaged value. Here the level is forecast instead: for a cell with
jobs per local day ``y_1 .. y_n`` over the fit window, the total of local day ``n + k`` is
``F_k`` = :func:`~acmemodel.models.forecast_methods.forecast_series` ``(y, k_max)`` (default the median
ensemble of the daily methods on ``log(1 + y)``: ETS, Theta, MSTL and the naive baselines), and an
hour bin ``b`` of that day gets ``μ_b = F_k · λ_b / Σ_{b' ∈ day} λ_b'`` with ``λ`` the NHPP's expected
batches of the bin (its hour-of-week profile times the held trend; a bin cut by the window's ends
counts its part). Days inside the fit window keep the NHPP's own expected jobs ``λ_b · E[batch
size]``, and so does a cell without a daily history (one built by ``from_rates``/``merge``).
"""
from __future__ import annotations

import warnings

import numpy as np

from acmemodel.clusters import utc_offset_seconds
from acmemodel.models.arrival_glm import _hour_bins

__all__ = ["forecast_bins"]

DAY_S = 86400.0


def forecast_bins(model, c: tuple[str, str], start: float, end: float, method: str = "ensemble"
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(lo, hi, μ)`` per local hour bin of ``[start, end)`` for the cell ``c`` (module docstring)."""
    from acmemodel.models.forecast_methods import forecast_series

    cell = model.cells_[c]
    lo, hi, lam = model._cell_bins(c, start, end)
    mu = lam * cell["mean_batch_size"]
    daily = cell.get("daily_jobs")
    if daily is None or len(daily) == 0:
        return lo, hi, mu
    off = utc_offset_seconds(model.timezones_[c[0]])
    h = _hour_bins(start, end, off)[0]
    day = h // 24
    last = int(cell["day0"]) + len(daily) - 1
    fut = day > last
    if not fut.any():
        return lo, hi, mu
    d_first, d_last = int(day[fut].min()), int(day[fut].max())
    # the NHPP's expected batches over each whole future local day (the hour shares' denominators)
    flo, fhi, flam = model._cell_bins(c, d_first * DAY_S - off, (d_last + 1) * DAY_S - off)
    fday = np.floor((flo + off) / DAY_S).astype(np.int64) - d_first
    tot = np.bincount(fday, weights=flam, minlength=d_last - d_first + 1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        F = forecast_series(np.asarray(daily, float), d_last - last, method=method)["forecast"].to_numpy()
    k = day[fut] - last - 1
    t = tot[day[fut] - d_first]
    share = np.where(t > 0, lam[fut] / np.where(t > 0, t, 1.0), (hi[fut] - lo[fut]) / DAY_S)
    mu = mu.copy()
    mu[fut] = F[k] * share
    return lo, hi, mu
