"""The time-honest rolling-origin backtest of one daily series, the scores, the causal choice
of method (a naive baseline unless a model, the median ensemble or the combination beats it on earlier
origins) and the conformal radii.

Backtest (:func:`backtest_series`). Fit origins ``o`` are the last ``weeks`` days ``n − 7k`` (``k =
1..weeks``) with at least ``min_train`` days before them. At each fit origin every method is fitted on
``y[:o]`` only and forecasts (a) the 28 days ``y[o:o+28]`` (the 4-week horizon; windows with
``o + 28 <= n``) and (b) each of the 7 days ``d = o .. o+6`` one day ahead from ``y[:d]`` (the rolling
1-day horizon: the parameters fitted at ``o`` are applied to the data up to ``d`` by statsforecast's
``forward``, parameter-free methods are recomputed). Nothing after a forecast's origin is used.

Time-honest choice. At a window starting at ``o`` (horizon ``h``) the *prior* windows are those that
ended by then (``o' + h <= o``). ``ensemble`` is the median (on ``z``, day by day) of every candidate's
forecast, anchored to the weekday median at the 4-week horizon
(:func:`~acmemodel.models.forecast_models.ensemble_z`): it needs no choice, so it exists at every
window. ``combo`` at ``o`` is the mean of the 3 methods with the lowest WAPE on the prior windows.
``auto`` at ``o`` starts from a naive baseline and leaves it only on evidence from before ``o``
(:func:`_choose`):

* the *baseline* (:func:`_base_baseline`): at the 1-day horizon, when over the 8 weeks before ``o`` the
  best naive baseline's one-day-ahead record is a level one (naive or window average: a running load
  that drifts, no usable weekly pattern), that one; otherwise — and at the 4-week horizon — the 8-week
  weekday median, the robust weekly baseline (on sparse counts, whose best absolute-error forecast is a
  median, the only baseline that forecasts the many zero days, where any mean-like forecast loses).
  No noisy arg-min over the five baselines: picking the best of five on a few earlier windows chases
  noise and loses to the one that turns out best;
* a *switch* to a model, ``ensemble`` or ``combo``: the one that beats the baseline by the most on the
  prior windows among those that beat it by more than one standard error of the paired WAPE
  difference (``one_se=True``, default; the plain lowest WAPE otherwise), backed by at least
  :data:`MIN_BLOCKS` = 4 independent blocks of prior evidence (weeks for the 1-day horizon; 28-day
  stretches of origins for the 4-week one, whose weekly windows overlap), the SE computed over those
  blocks;
* with fewer blocks than that (short histories, the first windows) the evidence cannot carry a one-SE
  test: ``auto`` is ``ensemble`` unless the baseline had the lower WAPE on the prior windows (the
  ensemble with none): the median of the candidates is the robust default of the "forecast
  combination puzzle" (equal-weight combinations are hard to beat, and a median ignores the
  one member whose trend runs away at 4 weeks).

``auto`` and ``combo`` need at least ``min_prior`` prior
windows (``min_prior_days`` = 14 for the 1-day horizon) and are scored only on the windows where they
exist (the *evaluation* windows); every method's score is reported on the same windows. The forecast
from the end of the history uses every backtest window, all of which precede it.

At the 1-day horizon the ensemble of a window is, in the level regime of the data before its origin
(:func:`~acmemodel.models.forecast_models.level_regime`), the median of the candidates other than the
weekday baselines; and
``auto`` forecasts the last value (``naive``) when its method's 1-day forecasts of the two days just
before the origin both missed their conformal radius on the same side (:func:`_shift_guard`: an
outage or a step in the load), the pick then reading ``naive``.

Scores per method and horizon: ``wape = Σ|ŷ − y| / Σy`` (days pooled over windows) with its standard
error (ratio estimator, windows as independent clusters: ``SE = √(m/(m−1) Σ(a_i − W b_i)²) / Σb_i``,
``a_i``, ``b_i`` the window's absolute errors and actuals); ``mase`` = mean ``|ŷ − y| / s`` with ``s``
the mean absolute weekly difference of the data before the origin; ``coverage`` of the intervals;
the paired WAPE difference to seasonal naive and to the best naive baseline (the one of
:data:`BASELINES` with the lowest WAPE on the same windows, chosen in hindsight: the hardest
comparison) with its standard error (the same formula on ``a_i − a_i^ref``).

Intervals (level ``L``, default 0.9): the model's own (statsforecast's, on ``z``; none for the window
averages) and split-conformal ones: ``ẑ ± q`` where ``q`` is the ``⌈(m+1)L⌉``-th smallest ``|z − ẑ|``
among the ``m`` residuals of the method's prior windows at the same horizon block (day 1 for the
1-day horizon; week 1–4 of the 4-week one). Each kind's coverage is measured on the evaluation
windows; the forecast uses the kind whose coverage is nearer ``L`` (conformal on ties).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Iterable, Sequence

import numpy as np
import pandas as pd

from acmemodel.models.forecast_models import (BASELINES, CANDIDATES, COMBO_SIZE, HORIZONS, LEVEL_BASELINES, METHODS,
                                              REGIME_WEEKS, SEASON, WEEKDAY_BASELINES, _back, _Fitted,
                                              _has_own_interval, anchor_weight, baseline_track_record,
                                              ensemble_z, level_regime)

__all__ = ["backtest_series", "SeriesBacktest", "wape_and_se", "paired_diff_se"]

#: independent blocks of prior evidence (weeks of 1-day forecasts; 4-week stretches of 4-week windows)
#: a switch away from the ensemble needs
MIN_BLOCKS = 4
#: consecutive same-side misses of the 1-day forecast that switch ``auto`` to the last value (:func:`_shift_guard`)
SHIFT_MISSES = 2


def _window_scores(F: np.ndarray, Y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per window: Σ|ŷ − y| and Σy (on the original scale)."""
    return np.nansum(np.abs(F - Y), axis=1), np.nansum(Y, axis=1)


def wape_and_se(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    """WAPE ``Σa / Σb`` and its cluster (window) standard error (module docstring)."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    m = len(a)
    if m == 0 or b.sum() <= 0:
        return float("nan"), float("nan")
    w = a.sum() / b.sum()
    if m < 2:
        return float(w), float("nan")
    se = math.sqrt(m / (m - 1) * float(np.sum((a - w * b) ** 2))) / b.sum()
    return float(w), float(se)


def paired_diff_se(a1: np.ndarray, a2: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    """``WAPE_1 − WAPE_2`` on the same windows and its cluster standard error."""
    d = np.asarray(a1, float) - np.asarray(a2, float)
    return wape_and_se(d, b) if len(d) else (float("nan"), float("nan"))


def _conformal_q(res: np.ndarray, level: float) -> float:
    """Split-conformal radius: the ``⌈(m+1)L⌉``-th smallest of ``m`` absolute residuals (inf when
    ``m`` is too small for the level)."""
    r = np.sort(np.abs(res[np.isfinite(res)]))
    m = len(r)
    k = math.ceil((m + 1) * level)
    return float(r[k - 1]) if 1 <= k <= m else float("inf")


def _blocks(h: int) -> np.ndarray:
    """Horizon block of each step (0-based): the week of the horizon."""
    return np.arange(h) // SEASON


@dataclass
class _Horizon:
    """Backtest arrays of one horizon: per window (rows) and step (columns), on ``z``."""
    h: int
    origins: np.ndarray                 # window start (index of the first forecast day)
    Y: np.ndarray                       # actuals, original scale
    Z: np.ndarray                       # actuals on z
    scale: np.ndarray                   # MASE scale per window
    Fz: dict = field(default_factory=dict)   # method -> (windows, h) forecasts on z
    Lz: dict = field(default_factory=dict)   # own lower
    Hz: dict = field(default_factory=dict)   # own upper
    Zhist: np.ndarray | None = None          # the whole series on z (a window at o may look at [:o] only)
    rec: dict | None = None                  # 1-day horizon: baseline_track_record(Zhist) (entries < o only)


@dataclass
class SeriesBacktest:
    """The result of :func:`backtest_series` (module docstring). ``scores``: one row per horizon ×
    method (the candidates, ``ensemble``, ``combo`` and ``auto``): ``wape``, ``wape_se``, ``mase``, ``coverage``
    (the chosen interval kind), ``coverage_conformal``, ``coverage_model``, ``windows``, ``days``;
    ``choice``: the method for a forecast after the history (per horizon); ``combo_members``: the members
    of the chosen ``combo`` or ``ensemble`` (empty otherwise);
    ``interval``: per horizon ``{"kind", "q"}`` (``q``: conformal radius on ``z`` per horizon block);
    ``windows``: every backtest forecast (``horizon, method, origin, step, forecast, actual``; ``origin``
    = index of the first forecast day, ``pick`` = auto's choice there; NaN where combo/auto do not exist)."""
    scores: pd.DataFrame
    choice: dict
    combo_members: dict
    interval: dict
    n: int
    level: float
    methods: tuple
    windows: pd.DataFrame


def _prior_mask(origins: np.ndarray, h: int, k: int) -> np.ndarray:
    return origins + h <= origins[k]


def backtest_series(y, *, methods: Iterable[str] = CANDIDATES, horizons: Sequence[int] = HORIZONS,
                    weeks: int = 12, min_train: int = 28, min_prior: int = 2, min_prior_days: int = 14,
                    level: float = 0.9, log: bool = True, one_se: bool = True) -> SeriesBacktest:
    """Time-honest rolling-origin backtest of one daily series (module docstring). ``min_prior``: prior
    4-week windows before auto/combo choose (``min_prior_days``: prior 1-day windows)."""
    methods, H = _backtest_forecasts(y, methods, horizons, weeks, min_train, level, log)
    return _scored(H, methods, len(y), level, log, min_prior, min_prior_days, one_se)


def _backtest_forecasts(y, methods, horizons, weeks, min_train, level, log) -> tuple[tuple, dict]:
    """Every method's backtest forecasts (on ``z``), per horizon: ``(methods, {h: _Horizon})``."""
    y = np.maximum(np.nan_to_num(np.asarray(y, dtype=float)), 0.0)
    methods = tuple(dict.fromkeys(m for m in methods if m not in ("auto", "combo", "ensemble")))
    for m in methods:
        if m not in METHODS:
            raise ValueError(f"method must be one of {METHODS}, got {m!r}")
    if "seasonal_naive" not in methods:
        methods = methods + ("seasonal_naive",)
    z_all = np.log1p(y) if log else y.copy()
    n = len(y)
    fit_origins = [n - SEASON * k for k in range(int(weeks), 0, -1) if n - SEASON * k >= int(min_train)]
    H = {}
    for h in horizons:
        if h == 1:
            starts = np.array([d for o in fit_origins for d in range(o, min(o + SEASON, n))], dtype=int)
        else:
            starts = np.array([o for o in fit_origins if o + h <= n], dtype=int)
        idx = starts[:, None] + np.arange(h)[None, :] if len(starts) else np.zeros((0, h), int)
        Y = y[idx] if len(starts) else np.zeros((0, h))
        sc = np.array([_mase_scale(y[:s]) for s in starts]) if len(starts) else np.zeros(0)
        H[h] = _Horizon(h, starts, Y, z_all[idx] if len(starts) else np.zeros((0, h)), sc, Zhist=z_all)
        for m in methods:
            H[h].Fz[m] = np.full((len(starts), h), np.nan)
            H[h].Lz[m] = np.full((len(starts), h), np.nan)
            H[h].Hz[m] = np.full((len(starts), h), np.nan)
    for m in methods:
        for o in fit_origins:
            fit = _Fitted(m, z_all[:o], level, log)
            for h, hz in H.items():
                if h == 1:
                    for i in np.flatnonzero((hz.origins >= o) & (hz.origins < o + SEASON)):
                        d = int(hz.origins[i])
                        f, lo, hi = fit.forward1(z_all[:d])
                        hz.Fz[m][i, 0], hz.Lz[m][i, 0], hz.Hz[m][i, 0] = f, lo, hi
                else:
                    i = np.flatnonzero(hz.origins == o)
                    if len(i):
                        f, lo, hi = fit.predict(h)
                        hz.Fz[m][i[0]], hz.Lz[m][i[0]], hz.Hz[m][i[0]] = f, lo, hi
    return methods, H


def _scored(H: dict, methods: tuple, n: int, level, log, min_prior, min_prior_days, one_se) -> SeriesBacktest:
    """Scores, the causal choice and the intervals from the backtest forecasts (module docstring)."""
    rows, choice, members, interval, wins = [], {}, {}, {}, []
    for h, hz in H.items():
        r, c, mem, iv, fc = _score_horizon(hz, methods, level, log, int(min_prior if h > 1 else min_prior_days),
                                           bool(one_se))
        rows.extend(r)
        choice[h], members[h], interval[h] = c, mem, iv
        W = len(hz.origins)
        pick = [p if p is not None else "" for p in fc.pop("_pick")]
        for m, F in fc.items():
            wins.append(pd.DataFrame({"horizon": h, "method": m, "origin": np.repeat(hz.origins, h),
                                      "step": np.tile(np.arange(1, h + 1), W), "forecast": F.ravel(),
                                      "actual": hz.Y.ravel(),
                                      "pick": np.repeat(pick, h) if m == "auto" else ""}))
    cols = ["horizon", "method", "wape", "wape_se", "mase", "coverage", "coverage_conformal", "coverage_model",
            "windows", "days", "diff_snaive", "diff_snaive_se", "diff_best_naive", "diff_best_naive_se", "best_naive"]
    wcols = ["horizon", "method", "origin", "step", "forecast", "actual", "pick"]
    windows = pd.concat(wins, ignore_index=True) if wins else pd.DataFrame(columns=wcols)
    return SeriesBacktest(pd.DataFrame(rows, columns=cols), choice, members, interval, n, float(level), methods,
                          windows)


def _mase_scale(tr: np.ndarray) -> float:
    return float(np.mean(np.abs(tr[SEASON:] - tr[:-SEASON]))) if len(tr) > SEASON else float("nan")



def _rank(hz: _Horizon, methods, mask: np.ndarray, log: bool) -> list[tuple[float, int, str]]:
    """Methods by WAPE over the windows in ``mask`` (ties: the order of ``methods``, baselines first)."""
    out = []
    b = np.nansum(hz.Y[mask])
    for j, m in enumerate(methods):
        a = np.nansum(np.abs(_back(hz.Fz[m][mask], log) - hz.Y[mask]))
        w = a / b if b > 0 else (0.0 if a == 0 else float("inf"))
        out.append((w, j, m))
    return sorted(out)


def _tie_order(methods) -> tuple:
    """Baselines first (a tie goes to the simpler method), seasonal naive first of all."""
    return tuple(sorted(methods, key=lambda m: (m != "seasonal_naive", m not in BASELINES)))


def _abs_err(hz: _Horizon, Fz: np.ndarray, mask: np.ndarray, log: bool) -> np.ndarray:
    """Per window in ``mask``: Σ|ŷ − y| over its days."""
    return np.nansum(np.abs(_back(Fz[mask], log) - hz.Y[mask]), axis=1)


def _beats(hz, Fz, m1, m2, mask, log, one_se) -> bool:
    """``m1`` has a lower WAPE than ``m2`` on the windows in ``mask`` (by more than one standard
    error of the paired difference when ``one_se``, which then needs evidence from at least
    :data:`MIN_BLOCKS` independent blocks). The SE of this decision takes as independent units blocks
    of ``max(h, 7)`` days of origins (:func:`_evidence_blocks`): the days of one week (1-day horizon)
    share their week's errors, and 4-week windows at weekly origins overlap by three weeks, so counting
    each window as independent would let a switch ride on noise; an SE from two or three blocks is
    itself too noisy to trust."""
    if mask.sum() == 0:
        return False
    blk = _evidence_blocks(hz.origins[mask], hz.h)
    if one_se and blk.max() + 1 < MIN_BLOCKS:
        return False
    a1, a2 = _abs_err(hz, Fz[m1], mask, log), _abs_err(hz, Fz[m2], mask, log)
    b = np.nansum(hz.Y[mask], axis=1)
    a1, a2, b = (np.bincount(blk, weights=v) for v in (a1, a2, b))
    d, se = paired_diff_se(a1, a2, b)
    if not np.isfinite(d):
        return False
    if not one_se:
        return d < 0
    return bool(np.isfinite(se) and d + se < 0)


def _evidence_blocks(origins: np.ndarray, h: int) -> np.ndarray:
    """Block index (0-based, consecutive) of each window: origins grouped by ``max(h, 7)`` days."""
    g = np.asarray(origins, dtype=np.int64) // max(int(h), SEASON)
    return np.unique(g, return_inverse=True)[1].astype(np.int64)


def _base_baseline(hz: _Horizon, order, origin: int) -> str:
    """The naive baseline ``auto`` falls back to for a forecast from ``origin`` (module docstring): at the
    1-day horizon, when over the last :data:`~acmemodel.models.forecast_models.REGIME_WEEKS` weeks
    before ``origin`` the best naive baseline (1-day errors of :func:`~acmemodel.models.forecast_models.
    baseline_track_record`, summed) is a level one (naive, window average), that one; else (a weekly
    pattern, or the 4-week horizon) the 8-week weekday median, the robust weekly baseline (the median
    of the same weekday: on sparse counts, whose best absolute-error forecast is a median, it is far
    ahead of any mean)."""
    wk = "weekday_median" if "weekday_median" in order else "seasonal_naive"
    if hz.h != 1 or hz.rec is None:
        return wk
    lo = max(SEASON, int(origin) - SEASON * REGIME_WEEKS)
    if int(origin) - lo < SEASON:
        return wk
    tot = {m: float(np.nansum(hz.rec[m][lo:int(origin)])) for m in LEVEL_BASELINES + WEEKDAY_BASELINES}
    bl = min(LEVEL_BASELINES, key=lambda m: tot[m])
    bw = min(WEEKDAY_BASELINES, key=lambda m: tot[m])
    return bl if tot[bl] < tot[bw] and bl in order else wk


def _choose(hz, Fz, order, mask, mask_combo, log, one_se, origin: int) -> str:
    """The method for a forecast from ``origin`` after the windows in ``mask`` (module docstring): the
    baseline of :func:`_base_baseline`, replaced by the model, ``ensemble`` or ``combo`` (on
    ``mask_combo``, the windows where combo existed) that beats it by the most among those that beat it
    by more than one SE (``one_se``; the plain lowest WAPE otherwise); with fewer than
    :data:`MIN_BLOCKS` blocks of evidence, ``ensemble`` unless the baseline had the lower WAPE."""
    base = _base_baseline(hz, order, origin)
    if one_se:
        blk = _evidence_blocks(hz.origins[mask], hz.h) if mask.any() else np.zeros(0, np.int64)
        if len(blk) == 0 or blk.max() + 1 < MIN_BLOCKS:
            return base if _beats(hz, Fz, base, "ensemble", mask, log, False) else "ensemble"
    best, gain = base, 0.0
    for m in [m for m in order if m not in BASELINES] + ["ensemble", "combo"]:
        mk = mask_combo if m == "combo" else mask
        if m == "combo" and not (mk.any() and np.isfinite(Fz["combo"][mk]).all()):
            continue
        if _beats(hz, Fz, m, base, mk, log, one_se):
            g = _wape(hz, Fz[m], mk, log) - _wape(hz, Fz[base], mk, log)
            if g < gain or best == base:
                best, gain = m, g
    return best


def _wape(hz: _Horizon, F: np.ndarray, mask: np.ndarray, log: bool) -> float:
    """WAPE of the forecasts ``F`` (on ``z``) over the windows in ``mask``."""
    b = np.nansum(hz.Y[mask])
    return float(np.nansum(np.abs(_back(F[mask], log) - hz.Y[mask])) / b) if b > 0 else float("inf")


def _shift_guard(origins: np.ndarray, resid: np.ndarray, q: float, day: int, misses: int = SHIFT_MISSES) -> bool:
    """The 1-day level-shift guard: True when the 1-day forecasts of the ``misses`` days just before
    ``day`` (windows at origins ``day − misses .. day − 1``) all missed their conformal radius ``q`` on
    the same side (``resid`` = forecast − actual on ``z``, one row per window). Two misses in a row
    beyond a 90 % radius, both too high or both too low, is rare for a calibrated forecast (≈ 0.25 %
    when independent) and is what an outage or a step in the load looks like: the last value then
    carries the new level, while every fitted model, the cleaned history and the weekday profiles still
    carry the old one for days."""
    if not (np.isfinite(q) and q > 0):  # no radius yet, or a degenerate one (a sparse count forecast 0)
        return False
    idx = [np.flatnonzero(origins == day - j) for j in range(1, misses + 1)]
    if any(len(i) == 0 for i in idx):
        return False
    r = np.array([resid[i[0], 0] for i in idx])
    return bool(np.all(np.isfinite(r)) and np.all(np.abs(r) > q) and (np.all(r > 0) or np.all(r < 0)))


def _score_horizon(hz: _Horizon, methods, level, log, min_prior, one_se=True):
    h, W = hz.h, len(hz.origins)
    order = _tie_order(methods)
    blocks = _blocks(h)
    names = list(methods) + ["ensemble", "combo", "auto"]
    Fz = dict(hz.Fz)
    Lz, Hz = dict(hz.Lz), dict(hz.Hz)
    for nm in ("ensemble", "combo", "auto"):
        Fz[nm] = np.full((W, h), np.nan)
        Lz[nm] = np.full((W, h), np.nan)
        Hz[nm] = np.full((W, h), np.nan)
    hz.rec = baseline_track_record(hz.Zhist, log) if h == 1 and hz.Zhist is not None else None
    if W:
        if h == 1:  # the level regime per window, from the baselines' record before its origin
            lev = np.array([level_regime(hz.rec, o) is not None for o in hz.origins])
            Fz["ensemble"] = ensemble_z({m: Fz[m] for m in methods}, False, level=None)
            if lev.any():
                Fz["ensemble"][lev] = ensemble_z({m: Fz[m][lev] for m in methods}, False, level="level")
        else:  # the median; anchored per window below
            Fz["ensemble"] = ensemble_z({m: Fz[m] for m in methods}, False, level=None)
        if h > 1 and "weekday_median" in methods:   # anchored per window, from the data before its origin
            w = np.array([anchor_weight(hz.Zhist[:o]) for o in hz.origins])[:, None]
            Fz["ensemble"] = (1.0 - w) * Fz["ensemble"] + w * Fz["weekday_median"]
    singles = list(methods) + ["ensemble"]
    # conformal intervals of every single method at each window, from its prior windows' residuals
    Cq = {m: np.full((W, h), np.inf) for m in names}
    resid = {m: Fz[m] - hz.Z for m in singles}
    evaluable = np.zeros(W, dtype=bool)
    pick = [None] * W
    for k in range(W):
        prior = _prior_mask(hz.origins, h, k)
        for m in singles:
            for b in np.unique(blocks):
                Cq[m][k, blocks == b] = _conformal_q(resid[m][prior][:, blocks == b].ravel(), level)
        if prior.sum() < min_prior:
            continue
        evaluable[k] = True
        ranked = _rank(hz, order, prior, log)
        top = [m for _, _, m in ranked[:COMBO_SIZE]]
        Fz["combo"][k] = np.mean([Fz[m][k] for m in top], axis=0)
        Lz["combo"][k] = np.mean([Lz[m][k] for m in top], axis=0)
        Hz["combo"][k] = np.mean([Hz[m][k] for m in top], axis=0)
        pick[k] = top
    # combo's conformal radius from its own (causal) prior residuals; then auto = best of singles + combo
    resid["combo"] = Fz["combo"] - hz.Z
    for k in range(W):
        prior = _prior_mask(hz.origins, h, k) & evaluable
        for b in np.unique(blocks):
            Cq["combo"][k, blocks == b] = _conformal_q(resid["combo"][prior][:, blocks == b].ravel(), level)
    auto_pick = [None] * W
    for k in range(W):
        if not evaluable[k]:
            continue
        prior = _prior_mask(hz.origins, h, k)
        best_m = _choose(hz, Fz, order, prior, prior & evaluable, log, one_se, int(hz.origins[k]))
        if h == 1 and "naive" in methods and _shift_guard(hz.origins, resid[best_m], Cq[best_m][k, 0], hz.origins[k]):
            best_m = "naive"
        auto_pick[k] = best_m
        Fz["auto"][k], Lz["auto"][k], Hz["auto"][k] = Fz[best_m][k], Lz[best_m][k], Hz[best_m][k]
        Cq["auto"][k] = Cq[best_m][k]
    ev = evaluable
    rows = []
    b_ev = hz.Y[ev]
    for m in names:
        F = _back(Fz[m][ev], log)
        a, bb = _window_scores(F, b_ev)
        w, se = wape_and_se(a, bb)
        sc = np.repeat(hz.scale[ev][:, None], h, axis=1)
        okm = np.isfinite(sc) & (sc > 0)
        ae = np.abs(F - b_ev)
        mase = float(np.mean(ae[okm] / sc[okm])) if okm.any() else float("nan")
        zc = Fz[m][ev]
        q = Cq[m][ev]
        lo_c, hi_c = _back(zc - q, log), _back(zc + q, log)
        fin = np.isfinite(q)  # a radius needs enough prior residuals
        cov_c = float(np.mean(((b_ev >= lo_c) & (b_ev <= hi_c))[fin])) if fin.any() else float("nan")
        lo_m, hi_m = Lz[m][ev], Hz[m][ev]
        if np.all(np.isfinite(lo_m)) and np.all(np.isfinite(hi_m)) and ev.any():
            cov_m = float(np.mean((b_ev >= _back(lo_m, log)) & (b_ev <= _back(hi_m, log))))
        else:
            cov_m = float("nan")
        best_cov = cov_c if not np.isfinite(cov_m) or abs(cov_c - level) <= abs(cov_m - level) else cov_m
        rows.append({"horizon": h, "method": m, "wape": w, "wape_se": se, "mase": mase, "coverage": best_cov,
                     "coverage_conformal": cov_c, "coverage_model": cov_m, "windows": int(ev.sum()),
                     "days": int(ev.sum() * h), "_a": a, "_b": bb})
    # paired differences (same windows) against seasonal naive and the best naive baseline (in hindsight)
    by = {r["method"]: r for r in rows}
    base = [m for m in BASELINES if m in by and np.isfinite(by[m]["wape"])]
    best_naive = min(base, key=lambda m: (by[m]["wape"], m != "seasonal_naive")) if base else "seasonal_naive"
    for r in rows:
        for tag, ref in (("snaive", "seasonal_naive"), ("best_naive", best_naive)):
            d, dse = paired_diff_se(r["_a"], by[ref]["_a"], by[ref]["_b"]) if ref in by else (np.nan, np.nan)
            r[f"diff_{tag}"], r[f"diff_{tag}_se"] = d, dse
        r["best_naive"] = best_naive
    for r in rows:
        r.pop("_a"), r.pop("_b")
    # the choice for a forecast after the history: every window precedes it
    allw = np.ones(W, dtype=bool)
    fc = {m: _back(Fz[m], log) for m in names}
    fc["_pick"] = auto_pick
    if W == 0:  # no evidence: the default, the ensemble (its interval borrows seasonal naive's width)
        return rows, "ensemble", list(methods), {"kind": "model", "q": []}, fc
    ranked = _rank(hz, order, allw, log)
    top = [m for _, _, m in ranked[:COMBO_SIZE]]
    choice = _choose(hz, Fz, order, allw, ev, log, one_se, len(hz.Zhist))
    if h == 1 and "naive" in methods:
        r_c = resid[choice] if choice != "combo" else np.where(ev[:, None], resid["combo"], np.nan)
        if _shift_guard(hz.origins, r_c, _conformal_q(r_c[np.isfinite(r_c[:, 0])].ravel(), level),
                        int(hz.origins[-1]) + 1):
            choice = "naive"
    # interval kind: the one whose coverage (of the chosen method, evaluation windows) is nearer the level
    row = next(r for r in rows if r["method"] == choice)
    cov_c, cov_m = row["coverage_conformal"], row["coverage_model"]
    kind = "conformal" if (not np.isfinite(cov_m) or (np.isfinite(cov_c) and abs(cov_c - level) <= abs(
        cov_m - level))) else "model"
    r_final = resid[choice] if choice != "combo" else resid["combo"]
    mask_final = allw if choice != "combo" else ev
    qs = [_conformal_q(r_final[mask_final][:, blocks == b].ravel(), level) for b in np.unique(blocks)]
    if kind == "conformal" and not all(np.isfinite(qs)) and _has_own_interval(choice) and choice != "combo":
        kind = "model"
    members = top if choice == "combo" else (list(methods) if choice == "ensemble" else [])
    return rows, choice, members, {"kind": kind, "q": [float(v) for v in qs]}, fc


