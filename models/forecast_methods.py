"""Forecasting one daily series on statsforecast, a time-honest rolling-origin backtest, the choice of
method, a combination, and intervals calibrated on held-out origins.

Methods (the models from Nixtla's ``statsforecast``; the naive baselines in numpy with statsforecast's
definitions, ~100× cheaper a call; ``glm`` from statsmodels; all work on ``z = log(1 + y)`` when
``log=True``, so forecasts stay positive and weekly patterns are multiplicative; back-transformed
``ŷ = exp(ẑ) − 1``, the median of a symmetric error on ``z``):

* ``"ets"`` — ``AutoETS(season_length=7, model="ANA")``: ETS(A,N,A) on ``z`` (additive error, no
  trend, additive weekly season: multiplicative on ``y``), smoothing parameters and initial states by
  likelihood (3× cheaper than letting AutoETS search error/season types, which on ``z`` rarely differ);
* ``"arima"`` — ``AutoARIMA(season_length=7)`` (stepwise, approximated search); ~0.4 s a fit on
  365 days, so not among the default candidates;
* ``"theta"`` — ``AutoTheta(season_length=7)`` (Theta / optimised / dynamic Theta by MSE);
* ``"mstl"`` — ``MSTL(season_length=7)``: STL weekly decomposition, ETS on the trend;
* ``"seasonal_naive"`` — ``SeasonalNaive(7)``: the value one week before;
* ``"naive"`` — ``Naive()``: the last value;
* ``"window_average"`` — ``WindowAverage(7)``: the mean of the last 7 days;
* ``"weekday_mean"`` — ``SeasonalWindowAverage(7, 4)``: the mean of the same weekday over the last 4 weeks;
* ``"glm"`` — statsmodels: a negative-binomial GLM (job counts) or log-linear least squares (other
  series) with weekday effects and a linear trend (held flat beyond one history length ahead);
* ``"combo"`` — the mean (on ``z``) of the ``COMBO_SIZE`` = 3 candidates with the lowest backtest WAPE;
* ``"auto"`` — per series, the best naive baseline, a model or the combination, chosen by the
  time-honest backtest below (a model or combo must beat the baseline by more than one SE).

:data:`BASELINES` are the naive methods a capacity planner would use instead (naive, seasonal naive,
window average, weekday mean).

Backtest (:func:`backtest_series`). Fit origins ``o`` are the last ``weeks`` days ``n − 7k`` (``k =
1..weeks``) with at least ``min_train`` days before them. At each fit origin every method is fitted on
``y[:o]`` only and forecasts (a) the 28 days ``y[o:o+28]`` (the 4-week horizon; windows with
``o + 28 <= n``) and (b) each of the 7 days ``d = o .. o+6`` one day ahead from ``y[:d]`` (the rolling
1-day horizon: the parameters fitted at ``o`` are applied to the data up to ``d`` by statsforecast's
``forward``, parameter-free methods are recomputed). Nothing after a forecast's origin is used.

Time-honest choice. At a window starting at ``o`` (horizon ``h``) the *prior* windows are those that
ended by then (``o' + h <= o``). ``combo`` at ``o`` is the mean of the 3 methods with the lowest WAPE on
the prior windows. ``auto`` at ``o`` is the naive baseline with the lowest WAPE on the prior windows,
replaced by the best model only when that beats it by more than one standard error of the paired
WAPE difference (``one_se=True``, default; the plain lowest WAPE otherwise), and by ``combo`` when
combo beats that pick the same way on the prior windows where combo existed; both need at least
``min_prior`` prior windows (``min_prior_days`` = 14 for the 1-day horizon) and are scored only on
the windows where they exist (the *evaluation* windows); every method's score is reported on the
same windows. The forecast from the end of the
history uses every backtest window, all of which precede it.

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
import warnings
from dataclasses import dataclass, field
from typing import Iterable, Sequence

import numpy as np
import pandas as pd
from scipy import stats

__all__ = ["forecast_series", "forecast_fixed", "selection_horizon", "verdict", "wape_and_se", "backtest_series",
           "select_method", "SeriesBacktest", "METHODS", "CANDIDATES", "BASELINES", "SEASON", "HORIZONS",
           "COMBO_SIZE"]

#: every ``method`` value
METHODS = ("auto", "ets", "arima", "theta", "mstl", "seasonal_naive", "naive", "window_average", "weekday_mean",
           "glm", "combo")
#: the methods ``"auto"`` chooses from by default (and ``combo`` averages the best of)
CANDIDATES = ("ets", "theta", "mstl", "seasonal_naive", "naive", "window_average", "weekday_mean")
#: the naive baselines
BASELINES = ("naive", "seasonal_naive", "window_average", "weekday_mean")
#: the season (days)
SEASON = 7
#: the backtest horizons (days): rolling 1 day ahead, and 4 weeks
HORIZONS = (1, 28)
#: members of the combination
COMBO_SIZE = 3
#: methods without parameters: the 1-day rolling forecast recomputes them on y[:d]
_PARAMETER_FREE = ("seasonal_naive", "naive", "window_average", "weekday_mean")


# ---------------------------------------------------------------------- one model, one fit
def _sf_model(method: str):
    import statsforecast.models as M

    if method == "ets":
        return M.AutoETS(season_length=SEASON, model="ANA")
    if method == "arima":
        return M.AutoARIMA(season_length=SEASON, approximation=True, max_p=2, max_q=2, max_P=1, max_Q=1)
    if method == "theta":
        return M.AutoTheta(season_length=SEASON)
    if method == "mstl":
        return M.MSTL(season_length=SEASON)
    if method == "seasonal_naive":
        return M.SeasonalNaive(season_length=SEASON)
    if method == "naive":
        return M.Naive()
    if method == "window_average":
        return M.WindowAverage(window_size=SEASON)
    if method == "weekday_mean":
        return M.SeasonalWindowAverage(season_length=SEASON, window_size=4)
    raise ValueError(f"no statsforecast model for {method!r}")


def _unpack(res: dict, level: float, h: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    key = _lvl(level)
    f = np.asarray(res["mean"], dtype=float)[:h]
    lo = np.asarray(res.get(f"lo-{key}", np.full(h, np.nan)), dtype=float)[:h]
    hi = np.asarray(res.get(f"hi-{key}", np.full(h, np.nan)), dtype=float)[:h]
    return f, lo, hi


def _lvl(level: float):
    v = round(100 * float(level), 6)
    return int(v) if v == int(v) else v


def _has_own_interval(method: str) -> bool:
    return method not in ("window_average", "weekday_mean")


def _glm_design(t: np.ndarray, n: int) -> np.ndarray:
    """Intercept, trend ``t/n`` (held flat beyond ``2n``), six day-of-week indicators (``t mod 7``)."""
    tt = np.minimum(t, 2 * n - 1) / n
    dow = np.zeros((len(t), SEASON - 1))
    r = t % SEASON
    for d in range(1, SEASON):
        dow[:, d - 1] = r == d
    return np.column_stack([np.ones(len(t)), tt, dow])


def _glm(y: np.ndarray, h: int, level: float) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """The ``"glm"`` method on the original scale (module docstring); None when the fit fails."""
    from statsmodels.genmod import families
    from statsmodels.genmod.generalized_linear_model import GLM
    from statsmodels.regression.linear_model import OLS

    n = len(y)
    X, Xf = _glm_design(np.arange(n), n), _glm_design(np.arange(n, n + h), n)
    a = 0.5 - level / 2
    if np.allclose(y, np.round(y)):  # counts: negative binomial (Poisson when not overdispersed)
        pois = GLM(y, X, family=families.Poisson()).fit()
        mu_in = pois.fittedvalues
        dof = max(n - X.shape[1], 1)
        alpha = max(0.0, float(np.sum(((y - mu_in) ** 2 - mu_in) / np.maximum(mu_in, 1e-9) ** 2) / dof))
        res = GLM(y, X, family=families.NegativeBinomial(alpha=alpha)).fit() if alpha > 1e-6 else pois
        mu = np.asarray(res.predict(Xf), dtype=float)
        if not np.all(np.isfinite(mu)):
            return None
        if alpha > 1e-6:
            r = 1.0 / alpha
            dist = stats.nbinom(r, r / (r + mu))
        else:
            dist = stats.poisson(mu)
        lo, med, hi = dist.ppf(a), dist.ppf(0.5), dist.ppf(1 - a)
        f = np.where(np.isfinite(med), med, mu)
        return f, np.nan_to_num(lo), np.where(np.isfinite(hi), hi, mu)
    z = np.log1p(y)
    res = OLS(z, X).fit()
    pr = res.get_prediction(Xf).summary_frame(alpha=2 * a)
    f, lo, hi = (pr[c].to_numpy() for c in ("mean", "obs_ci_lower", "obs_ci_upper"))
    return np.expm1(f), np.expm1(lo), np.expm1(hi)


def _baseline(method: str, z: np.ndarray, h: int, level: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The naive baselines on ``z`` (numpy; the same definitions as statsforecast's ``Naive``,
    ``SeasonalNaive``, ``WindowAverage(7)`` and ``SeasonalWindowAverage(7, 4)``, ~100× cheaper a call
    than theirs, which matters for the 1-day rolling backtest). Own intervals (naive and seasonal
    naive): ``± q σ √k`` with σ the standard deviation of the lag-1 (lag-7) differences and ``k`` the
    number of steps (of weeks) ahead (FPP3 §5.5); none for the averages."""
    n = len(z)
    i = np.arange(h)
    nan = np.full(h, np.nan)
    if n == 0:
        return np.zeros(h), nan, nan
    qn = stats.norm.ppf(0.5 + level / 2)
    if method == "naive" or (method == "seasonal_naive" and n < SEASON) or \
            (method == "weekday_mean" and n < SEASON) or (method == "window_average" and n < SEASON):
        f = np.full(h, z[-1])
        d = np.diff(z)
        sig = float(np.std(d, ddof=1)) if len(d) > 1 else float("nan")
        w = qn * sig * np.sqrt(i + 1)
        return f, f - w, f + w
    if method == "seasonal_naive":
        f = z[n - SEASON + (i % SEASON)]
        d = z[SEASON:] - z[:-SEASON]
        sig = float(np.std(d, ddof=1)) if len(d) > 1 else float("nan")
        w = qn * sig * np.sqrt(i // SEASON + 1)
        return f, f - w, f + w
    if method == "window_average":
        return np.full(h, float(np.mean(z[-SEASON:]))), nan, nan
    if method == "weekday_mean":
        k = min(4, n // SEASON)
        wk = z[n - k * SEASON:].reshape(k, SEASON).mean(axis=0)
        return wk[i % SEASON], nan, nan
    raise ValueError(method)


class _Fitted:
    """One method fitted on ``z[:o]``: ``predict(h)`` and ``forward(z[:d])`` (1 step), on ``z``."""

    def __init__(self, method: str, z: np.ndarray, level: float, log: bool):
        self.method, self.level, self.log, self.n = method, level, log, len(z)
        self.z = z
        self.ok = True
        self.model = None
        if method == "glm" or method in _PARAMETER_FREE:
            return
        self.model = _sf_model(method)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                self.model.fit(z)
        except Exception:  # a fit statsforecast rejects (too short, degenerate): seasonal naive instead
            self.ok = False

    def _fallback(self, z, h):
        return _Fitted("seasonal_naive", z, self.level, self.log).predict(h, z)

    def predict(self, h: int, z: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        z = self.z if z is None else z
        lv = [_lvl(self.level)]
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            if self.method == "glm":
                y = np.expm1(z) if self.log else z
                out = _glm(np.maximum(np.round(y, 9), 0.0), h, self.level)
                if out is None:
                    return self._fallback(z, h)
                f, lo, hi = out
                tr = (lambda v: np.log1p(np.maximum(v, 0.0))) if self.log else (lambda v: v)
                return tr(f), tr(lo), tr(hi)
            if self.method in _PARAMETER_FREE:
                return _baseline(self.method, z, h, self.level)
            if not self.ok:
                return self._fallback(z, h)
            try:
                if z is self.z:
                    res = self.model.predict(h=h, level=lv)
                else:  # MSTL's intervals cost a decomposition each: the 1-day rolling one uses conformal ones
                    res = self.model.forward(y=z, h=h, **({} if self.method == "mstl" else {"level": lv}))
                out = _unpack(res, self.level, h)
            except Exception:
                return self._fallback(z, h)
            if not np.all(np.isfinite(out[0])):
                return self._fallback(z, h)
            return out

    @staticmethod
    def _constant(z, h):
        v = float(z[-1]) if len(z) else 0.0
        return np.full(h, v), np.full(h, np.nan), np.full(h, np.nan)

    def forward1(self, z: np.ndarray) -> tuple[float, float, float]:
        """One-day-ahead forecast from ``z`` (the data up to the forecast's origin)."""
        if self.method == "glm":
            f, lo, hi = _Fitted("glm", z, self.level, self.log).predict(1)
        else:
            f, lo, hi = self.predict(1, z)
        return float(f[0]), float(lo[0]), float(hi[0])


# ---------------------------------------------------------------------- the backtest
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


@dataclass
class SeriesBacktest:
    """The result of :func:`backtest_series` (module docstring). ``scores``: one row per horizon ×
    method (the candidates, ``combo`` and ``auto``): ``wape``, ``wape_se``, ``mase``, ``coverage``
    (the chosen interval kind), ``coverage_conformal``, ``coverage_model``, ``windows``, ``days``;
    ``choice``: the method for a forecast after the history (per horizon); ``combo_members``;
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
    y = np.maximum(np.nan_to_num(np.asarray(y, dtype=float)), 0.0)
    methods = tuple(dict.fromkeys(m for m in methods if m not in ("auto", "combo")))
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
        H[h] = _Horizon(h, starts, Y, z_all[idx] if len(starts) else np.zeros((0, h)), sc)
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


def _back(v: np.ndarray, log: bool) -> np.ndarray:
    with np.errstate(over="ignore", invalid="ignore"):
        out = np.expm1(v) if log else v
    return np.maximum(np.nan_to_num(out, nan=0.0, posinf=np.finfo(float).max), 0.0)


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
    """``m1`` has a lower WAPE than ``m2`` on the windows in ``mask`` (by more than one standard error
    of the paired difference when ``one_se``; an undefined SE — fewer than two windows — is not enough)."""
    if mask.sum() == 0:
        return False
    b = np.nansum(hz.Y[mask], axis=1)
    d, se = paired_diff_se(_abs_err(hz, Fz[m1], mask, log), _abs_err(hz, Fz[m2], mask, log), b)
    if not np.isfinite(d):
        return False
    return d + (se if one_se else 0.0) < 0 if (not one_se or np.isfinite(se)) else False


def _choose(hz, Fz, order, mask, mask_combo, log, one_se) -> str:
    """The method for windows after ``mask``: the best naive baseline on ``mask``, replaced by the best
    model when that beats it (one-SE rule when ``one_se``), replaced by ``combo`` when combo beats that
    on ``mask_combo`` (the windows where combo existed)."""
    ranked = _rank(hz, order, mask, log)
    best = ranked[0][2]
    base = next((m for _, _, m in ranked if m in BASELINES), best)
    pick = best if best == base or _beats(hz, Fz, best, base, mask, log, one_se) else base
    if mask_combo.sum() >= 1 and np.isfinite(Fz["combo"][mask_combo]).all() and \
            _beats(hz, Fz, "combo", pick, mask_combo, log, one_se):
        pick = "combo"
    return pick


def _score_horizon(hz: _Horizon, methods, level, log, min_prior, one_se=True):
    h, W = hz.h, len(hz.origins)
    order = _tie_order(methods)
    blocks = _blocks(h)
    names = list(methods) + ["combo", "auto"]
    Fz = dict(hz.Fz)
    Lz, Hz = dict(hz.Lz), dict(hz.Hz)
    for nm in ("combo", "auto"):
        Fz[nm] = np.full((W, h), np.nan)
        Lz[nm] = np.full((W, h), np.nan)
        Hz[nm] = np.full((W, h), np.nan)
    # conformal intervals of every single method at each window, from its prior windows' residuals
    Cq = {m: np.full((W, h), np.inf) for m in names}
    resid = {m: Fz[m] - hz.Z for m in methods}
    evaluable = np.zeros(W, dtype=bool)
    pick = [None] * W
    for k in range(W):
        prior = _prior_mask(hz.origins, h, k)
        for m in methods:
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
        best_m = _choose(hz, Fz, order, prior, prior & evaluable, log, one_se)
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
    if W == 0:
        return rows, "seasonal_naive", [], {"kind": "model", "q": []}, fc
    ranked = _rank(hz, order, allw, log)
    top = [m for _, _, m in ranked[:COMBO_SIZE]]
    choice = _choose(hz, Fz, order, allw, ev, log, one_se)
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
    return rows, choice, (top if choice == "combo" else []), {"kind": kind, "q": [float(v) for v in qs]}, fc


# ---------------------------------------------------------------------- forecasting one series
def _forecast_z(z: np.ndarray, h: int, method: str, level: float, log: bool, members: Sequence[str] = ()):
    if method == "combo":
        parts = [_Fitted(m, z, level, log).predict(h) for m in members]
        return tuple(np.mean([p[i] for p in parts], axis=0) for i in range(3))
    return _Fitted(method, z, level, log).predict(h)


def forecast_series(y, h: int, *, method: str = "auto", level: float = 0.9, log: bool = True,
                    candidates: Iterable[str] = CANDIDATES, selection: SeriesBacktest | None = None
                    ) -> pd.DataFrame:
    """Forecast ``h`` days after the series ``y`` → DataFrame ``forecast, lower, upper, method``.
    ``method="auto"`` or ``"combo"`` (and ``selection=None``) run :func:`backtest_series` first; the
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


def selection_horizon(h: int, n: int, min_train: int = 28) -> int:
    """The backtest horizon a forecast of ``h`` days is chosen on: 28 (4 weeks) when the history
    allows two 4-week windows and ``h > 1``, else 1."""
    return 28 if h > 1 and n >= min_train + 28 + SEASON else 1


def _forecast(y, h: int, *, method: str, level: float, log: bool, candidates=CANDIDATES,
              selection: SeriesBacktest | None = None) -> tuple[pd.DataFrame, SeriesBacktest | None]:
    _validate(method, level, h)
    h = int(h)
    y = _clean(y)
    used, members, iv = method, [], None
    if not _too_short(y, log):
        if method in ("auto", "combo", "window_average", "weekday_mean") and selection is None:
            cands = tuple(candidates)
            if method == "combo" and len(cands) < COMBO_SIZE:
                cands = CANDIDATES
            if method in ("window_average", "weekday_mean"):  # no interval of their own: conformal ones
                cands = (method,)
            selection = backtest_series(y, methods=cands, level=level, log=log,
                                        horizons=(selection_horizon(h, len(y)),))
        if selection is not None:
            hs = selection_horizon(h, len(y))
            hs = hs if hs in selection.choice else next(iter(selection.choice))
            if method == "auto":
                used = selection.choice[hs]
            if used == "combo":
                members = selection.combo_members.get(hs) or _top_members(selection, hs)
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
    if method == "combo" and not members:
        raise ValueError("combo needs its members")
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
