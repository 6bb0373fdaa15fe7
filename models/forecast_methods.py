"""Forecasting one daily series: a given method or the time-honest choice of
:mod:`acmemodel.models.forecast_backtest`, with its interval, and the verdict in words.

Layout: the methods themselves (statsforecast, the naive baselines, the GLM) are in
:mod:`acmemodel.models.forecast_models`; the backtest, the scores and the causal choice in
:mod:`acmemodel.models.forecast_backtest`; this module forecasts from them.
"""
from __future__ import annotations

from typing import Iterable, Sequence

import numpy as np
import pandas as pd

from acmemodel.models.forecast_backtest import SeriesBacktest, _blocks, backtest_series
from acmemodel.models.forecast_models import CANDIDATES, COMBO_SIZE, METHODS, SEASON, _back, _Fitted, ensemble_z

__all__ = ["forecast_series", "forecast_fixed", "selection_horizon", "backtest_settings", "verdict", "select_method",
           "SHORT_DAYS"]


# ---------------------------------------------------------------------- forecasting one series
def _forecast_z(z: np.ndarray, h: int, method: str, level: float, log: bool, members: Sequence[str] = ()):
    if method == "combo":
        parts = [_Fitted(m, z, level, log).predict(h) for m in members]
        return tuple(np.mean([p[i] for p in parts], axis=0) for i in range(3))
    if method == "ensemble":  # its interval: conformal, else seasonal naive's width (forecast_fixed)
        f = ensemble_z({m: _Fitted(m, z, level, log).predict(h)[0] for m in members}, h > 1, z, log=log)
        return f, np.full(h, np.nan), np.full(h, np.nan)
    return _Fitted(method, z, level, log).predict(h)


def forecast_series(y, h: int, *, method: str = "auto", level: float = 0.9, log: bool = True,
                    candidates: Iterable[str] = CANDIDATES, selection: SeriesBacktest | None = None
                    ) -> pd.DataFrame:
    """Forecast ``h`` days after the series ``y`` → DataFrame ``forecast, lower, upper, method``.
    ``method="auto"``, ``"combo"`` or ``"ensemble"`` (and ``selection=None``) run :func:`backtest_series` first; the
    interval is the kind the backtest found nearer ``level`` (module docstring). Series shorter than two
    weeks or constant: seasonal naive."""
    return _forecast(y, h, method=method, level=level, log=log, candidates=candidates, selection=selection)[0]


def _validate(method, level, h):
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level!r}")
    if int(h) < 1:
        raise ValueError(f"horizon (days) must be >= 1, got {h}")


#: a history shorter than this (days) is backtested from day 14 (:func:`backtest_settings`)
SHORT_DAYS = 120


def backtest_settings(n: int) -> dict:
    """The backtest's settings for a history of ``n`` days: the defaults of :func:`backtest_series`
    (28 training days; auto/combo need 2 earlier 4-week windows or 14 earlier days) from
    :data:`SHORT_DAYS` days on; a shorter series trains from day 14 and lets auto/combo choose from the
    first window with one earlier window (auto's default, the ensemble, needs none)."""
    if n >= SHORT_DAYS:
        return {"min_train": 28, "min_prior": 2, "min_prior_days": 14}
    return {"min_train": 14, "min_prior": 1, "min_prior_days": 1}


def selection_horizon(h: int, n: int, min_train: int | None = None) -> int:
    """The backtest horizon a forecast of ``h`` days is chosen on: 28 (4 weeks) when the history
    allows two 4-week windows and ``h > 1``, else 1 (``min_train``: by default that of
    :func:`backtest_settings`)."""
    mt = backtest_settings(n)["min_train"] if min_train is None else int(min_train)
    return 28 if h > 1 and n >= mt + 28 + SEASON else 1


def _forecast(y, h: int, *, method: str, level: float, log: bool, candidates=CANDIDATES,
              selection: SeriesBacktest | None = None) -> tuple[pd.DataFrame, SeriesBacktest | None]:
    _validate(method, level, h)
    h = int(h)
    y = _clean(y)
    used, members, iv = method, [], None
    if not _too_short(y, log):
        if method in ("auto", "combo", "ensemble", "window_average", "weekday_mean", "weekday_median") and \
                selection is None:
            cands = tuple(candidates)
            if method == "combo" and len(cands) < COMBO_SIZE:
                cands = CANDIDATES
            if method in ("window_average", "weekday_mean", "weekday_median"):  # no interval of their own
                cands = (method,)
            selection = backtest_series(y, methods=cands, level=level, log=log,
                                        horizons=(selection_horizon(h, len(y)),), **backtest_settings(len(y)))
        if selection is not None:
            hs = selection_horizon(h, len(y))
            hs = hs if hs in selection.choice else next(iter(selection.choice))
            if method == "auto":
                used = selection.choice[hs]
            if used == "combo":
                members = selection.combo_members.get(hs) or _top_members(selection, hs)
            if used == "ensemble":
                members = selection.combo_members.get(hs) or list(selection.methods)
            iv = selection.interval.get(hs) if used == selection.choice.get(hs) else None
    return forecast_fixed(y, h, method=used, level=level, log=log, members=members, interval=iv), selection


def _clean(y) -> np.ndarray:
    y = np.asarray(y, dtype=float)
    if len(y) == 0:
        raise ValueError("cannot forecast an empty series")
    return np.maximum(np.nan_to_num(y), 0.0)


def _too_short(y: np.ndarray, log: bool) -> bool:
    return len(y) < 2 * SEASON or np.ptp(y) == 0


def forecast_fixed(y, h: int, *, method: str, level: float = 0.9, log: bool = True,
                   members: Sequence[str] = (), interval: dict | None = None) -> pd.DataFrame:
    """Forecast ``h`` days with a given method (``combo``: the mean of ``members``) and interval
    (``{"kind": "conformal", "q": [radius per horizon week on z]}``, else the model's own; beyond the
    last week the radius grows as ``√week``; a method without its own interval borrows seasonal naive's
    width). Series shorter than two weeks or constant: seasonal naive."""
    h = int(h)
    y = _clean(y)
    z = np.log1p(y) if log else y
    if _too_short(y, log):
        method, members, interval = "seasonal_naive", (), None
    if method in ("combo", "ensemble") and not members:
        if method == "combo":
            raise ValueError("combo needs its members")
        members = CANDIDATES
    f, lo, hi = _forecast_z(z, h, method, level, log, members)
    if interval is not None and interval.get("kind") == "conformal" and interval.get("q"):
        q = np.asarray(interval["q"], dtype=float)
        blk = _blocks(h)
        last = len(q) - 1
        rad = np.where(blk <= last, q[np.minimum(blk, last)], q[last] * np.sqrt((blk + 1) / (last + 1)))
        if np.all(np.isfinite(rad)):
            lo, hi = f - rad, f + rad
    if not (np.all(np.isfinite(lo)) and np.all(np.isfinite(hi))):
        fs, lo2, hi2 = _forecast_z(z, h, "seasonal_naive", level, log)
        lo2 = np.where(np.isfinite(lo2), lo2, fs)
        hi2 = np.where(np.isfinite(hi2), hi2, fs)
        lo = np.where(np.isfinite(lo), lo, f - (fs - lo2))
        hi = np.where(np.isfinite(hi), hi, f + (hi2 - fs))
    f, lo, hi = _back(f, log), _back(lo, log), _back(hi, log)
    lo = np.minimum(lo, f)
    hi = np.maximum(hi, f)
    name = method if method != "combo" else "combo(" + "+".join(members) + ")"
    return pd.DataFrame({"forecast": f, "lower": lo, "upper": hi, "method": name})


def _top_members(sel: SeriesBacktest, h: int) -> list[str]:
    s = sel.scores[(sel.scores["horizon"] == h) & sel.scores["method"].isin(sel.methods)]
    s = s.sort_values("wape", kind="stable")
    return s["method"].head(COMBO_SIZE).tolist()


def select_method(y, *, candidates: Iterable[str] = CANDIDATES, horizon: int = 28, weeks: int = 12,
                  min_train: int = 28, level: float = 0.9, log: bool = True) -> tuple[str, pd.DataFrame]:
    """The ``"auto"`` choice for one series on the given backtest horizon: ``(method, scores)``
    (:func:`backtest_series`; seasonal naive when there is no window)."""
    bt = backtest_series(y, methods=candidates, horizons=(int(horizon),), weeks=weeks, min_train=min_train,
                         level=level, log=log)
    return bt.choice[int(horizon)], bt.scores


def verdict(scores: pd.DataFrame, horizon: int, model: str = "auto") -> str:
    """The backtest in words for one series and horizon: how ``model`` compares with seasonal naive and
    the best naive baseline (paired WAPE difference, one standard error as the tie band)."""
    s = scores[(scores["horizon"] == horizon) & (scores["method"] == model)]
    if s.empty or not np.isfinite(s["wape"].iloc[0]) or int(s["windows"].iloc[0]) == 0:
        return "no evaluation window"
    r = s.iloc[0]
    sn = scores[(scores["horizon"] == horizon) & (scores["method"] == "seasonal_naive")]["wape"].iloc[0]
    best = str(r["best_naive"])
    d, se = float(r["diff_best_naive"]), float(r["diff_best_naive_se"])
    tol = se if np.isfinite(se) else 0.0
    if d > tol:
        return f"{best.replace('_', ' ')} wins: use the baseline (WAPE +{d:.3f} ± {tol:.3f})"
    rel = (float(r["wape"]) - sn) / sn if sn > 0 else float("nan")
    ds, dss = float(r["diff_snaive"]), float(r["diff_snaive_se"])
    if ds > (dss if np.isfinite(dss) else 0.0):
        return f"seasonal naive wins (WAPE +{ds:.3f} ± {dss:.3f})"
    if d < -tol:
        return f"{model} wins: WAPE {rel:+.0%} vs seasonal naive, {d:+.3f} ± {tol:.3f} vs {best.replace('_', ' ')}"
    return f"tie with {best.replace('_', ' ')} (within one SE); {rel:+.0%} vs seasonal naive"

