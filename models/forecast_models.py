"""One forecasting method fitted on one daily series: the statsforecast models, the naive
baselines in numpy, the count GLM (the methods of :mod:`acmemodel.models.forecast_methods`).

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
* ``"weekday_median"`` — the median (on ``z``) of the same weekday over the last ``MEDIAN_WEEKS`` = 8
  weeks (fewer when the history is shorter): a robust seasonal baseline, one odd day does not move it;
* ``"glm"`` — statsmodels: a negative-binomial GLM (job counts) or log-linear least squares (other
  series) with weekday effects and a linear trend (held flat beyond one history length ahead);
* ``"ensemble"`` — the median (on ``z``, day by day) of every candidate's forecast: no choice to make,
  robust to the one member that runs away (an extrapolated trend at 4 weeks); ``auto``'s default on
  thin evidence. A
  forecast of more than one day is *anchored*: ``ẑ = (1 − w) · median + w · ẑ_weekday_median`` with
  ``w`` = :data:`ANCHOR_WEIGHT` = 1/2 (equal weights, not tuned), when ``weekday_median`` is a member
  and the last week's level agrees with the 8 weeks before it (:func:`anchor_weight`), else ``w = 0``.
  Weeks ahead, the weekday profile over the last 8 weeks is the forecast a noisy, stable series
  regresses to, while the median of the candidates still carries the last days' level and the noisier
  members' weekly shapes (on the LANL failures per day the 8-week weekday median beat the plain
  median ensemble at 4 weeks: WAPE 0.310 vs 0.320 over 32 windows); after a level shift (a cluster
  ramping up) the 8-week profile is the wrong level, and the anchor is dropped. A one-day forecast in
  the *level regime* (:func:`level_regime`: over the last 8 weeks before the origin the naive
  baselines' own track record, :func:`baseline_track_record`, has the better of naive and the window
  average beating every weekday baseline by more than one SE — no usable weekly pattern) is the median
  of the members other than the weekday baselines, which would pull it towards old days (a running load
  such as GPU-hours in use, where the last value wins);
* ``"combo"`` — the mean (on ``z``) of the ``COMBO_SIZE`` = 3 candidates with the lowest backtest WAPE;
* ``"auto"`` — per series, a naive baseline, replaced by a model, the ensemble or the combination
  only when that beats it on earlier origins by more than one SE (the ensemble when the evidence is
  too thin for that test), chosen by the time-honest backtest
  (:mod:`acmemodel.models.forecast_backtest`).

:data:`BASELINES` are the naive methods a capacity planner would use instead (naive, seasonal naive,
window average, weekday mean, weekday median).

Outlier days (:func:`clean_outliers`). The models (``ets``, ``arima``, ``theta``, ``mstl``) are fitted,
and rolled forward, on ``z`` with its outlier days replaced — a one-day burst of submissions (a
campaign, a retried array job) otherwise pulls an ETS level or an STL trend for weeks. A day is an
outlier when its residual ``e_t = z_t − m_t − s_{t mod 7}`` lies more than ``OUTLIER_K`` = 4 robust
standard deviations (``1.4826 × MAD`` of ``e``) from the median residual, ``m_t`` being the centred
7-day rolling median of ``z`` (held at the ends) and ``s`` the weekday medians of ``z − m`` (a Hampel
filter around a weekday profile); it is replaced by ``m_t + s_{t mod 7}``. Only the data a fit is given are looked at
(nothing after the forecast origin), histories shorter than 4 weeks are left as they are, and the
naive baselines always see the raw series.
"""
from __future__ import annotations

import warnings

import numpy as np
from scipy import stats

__all__ = ["METHODS", "CANDIDATES", "BASELINES", "SEASON", "HORIZONS", "COMBO_SIZE", "ANCHOR_WEIGHT", "clean_outliers",
           "weekly_structure", "ensemble_z", "anchor_weight", "LEVEL_BASELINES", "WEEKDAY_BASELINES",
           "baseline_track_record", "level_regime"]

#: every ``method`` value
METHODS = ("auto", "ets", "arima", "theta", "mstl", "seasonal_naive", "naive", "window_average", "weekday_mean",
           "weekday_median", "glm", "ensemble", "combo")
#: the methods ``"auto"`` chooses from by default (and ``combo`` averages the best of)
CANDIDATES = ("ets", "theta", "mstl", "seasonal_naive", "naive", "window_average", "weekday_mean", "weekday_median")
#: the naive baselines
BASELINES = ("naive", "seasonal_naive", "window_average", "weekday_mean", "weekday_median")
#: the season (days)
SEASON = 7
#: the backtest horizons (days): rolling 1 day ahead, and 4 weeks
HORIZONS = (1, 28)
#: members of the combination
COMBO_SIZE = 3
#: methods without parameters: the 1-day rolling forecast recomputes them on y[:d]
_PARAMETER_FREE = ("seasonal_naive", "naive", "window_average", "weekday_mean", "weekday_median")
#: weeks of the robust seasonal baseline ``weekday_median``
MEDIAN_WEEKS = 8
#: weight of the weekday median in the ensemble of a multi-day forecast (:func:`ensemble_z`)
ANCHOR_WEIGHT = 0.5
#: a last week further than this many standard errors from the weeks before it is a level shift
LEVEL_SHIFT_SD = 2.0
#: the naive baselines that follow the level (no weekly pattern) and those that repeat a weekday profile,
#: compared by :func:`level_regime`
LEVEL_BASELINES = ("naive", "window_average")
WEEKDAY_BASELINES = ("seasonal_naive", "weekday_mean", "weekday_median")
#: weeks of history :func:`level_regime` compares them on
REGIME_WEEKS = 8
#: an outlier day lies more than this many robust SDs from the weekday profile (:func:`clean_outliers`)
OUTLIER_K = 4.0


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
    return method not in ("window_average", "weekday_mean", "weekday_median", "ensemble")


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
            (method in ("weekday_mean", "weekday_median", "window_average") and n < SEASON):
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
    if method == "weekday_median":
        k = min(MEDIAN_WEEKS, n // SEASON)
        wk = np.median(z[n - k * SEASON:].reshape(k, SEASON), axis=0)
        return wk[i % SEASON], nan, nan
    raise ValueError(method)


def weekly_structure(y, *, log: bool = True, alpha: float = 0.05) -> dict:
    """Does the daily series have a weekly pattern? A weekday-effect F-test on the detrended series:
    ``z = log(1 + y)`` (``y`` when ``log=False``) minus its centred 7-day moving average (classical
    decomposition; the first and last three days drop out), grouped by ``t mod 7``; one-way ANOVA
    (scipy ``f_oneway``). Returns ``{"f", "p", "strength", "weekly", "days"}``: the F statistic, its
    p-value, the seasonal strength ``max(0, 1 − Var(e) / Var(s + e))`` (Hyndman & Athanasopoulos, FPP3
    §4.3; ``s`` the weekday means of the detrended series, ``e`` the rest; > 0.64 is strong) and
    ``weekly = p < alpha``. Fewer than three weeks: NaN and ``weekly=False``."""
    y = np.maximum(np.nan_to_num(np.asarray(y, dtype=float)), 0.0)
    n = len(y)
    nan = {"f": float("nan"), "p": float("nan"), "strength": float("nan"), "weekly": False, "days": int(n)}
    if n < 3 * SEASON:
        return nan
    z = np.log1p(y) if log else y
    ma = np.convolve(z, np.ones(SEASON) / SEASON, mode="valid")  # centred: day t = 3 .. n-4
    r = z[SEASON // 2: n - SEASON // 2] - ma
    dow = (np.arange(len(r)) + SEASON // 2) % SEASON
    groups = [r[dow == d] for d in range(SEASON)]
    if min(len(g) for g in groups) < 2 or np.ptp(r) == 0:
        return nan
    f, p = stats.f_oneway(*groups)
    s = np.array([g.mean() for g in groups])[dow]
    e = r - s
    v = float(np.var(s + e))
    strength = max(0.0, 1.0 - float(np.var(e)) / v) if v > 0 else 0.0
    return {"f": float(f), "p": float(p), "strength": strength, "weekly": bool(p < alpha), "days": int(n)}


def anchor_weight(z: np.ndarray, k_sd: float = LEVEL_SHIFT_SD) -> float:
    """The weekday median's weight in a multi-day ensemble forecast from the history ``z`` (on the
    log scale): :data:`ANCHOR_WEIGHT`, or 0 after a level shift — when the mean of the last 7 days
    differs from the anchor's level (the mean over the weekdays of the weekday-median profile of the
    last ``k`` ≤ 8 weeks) by more than ``k_sd`` robust standard errors, ``1.4826 · MAD(weekly means) ·
    √(1 + 1/k)``. Robust because the history that holds a shift also inflates a plain standard
    deviation of its weekly means (3 busy weeks after 5 empty ones). Fewer than 3 full weeks:
    :data:`ANCHOR_WEIGHT` (no test possible)."""
    z = np.asarray(z, dtype=float)
    n = len(z)
    k = min(MEDIAN_WEEKS, n // SEASON)
    if k < 3:
        return ANCHOR_WEIGHT
    X = z[n - k * SEASON:].reshape(k, SEASON)
    w = X.mean(axis=1)
    level = float(np.median(X, axis=0).mean())
    se = 1.4826 * float(np.median(np.abs(w - np.median(w)))) * np.sqrt(1.0 + 1.0 / k)
    d = abs(float(w[-1]) - level)
    if not se > 0:
        return ANCHOR_WEIGHT if d == 0 else 0.0
    return ANCHOR_WEIGHT if d <= k_sd * se else 0.0


def baseline_track_record(z: np.ndarray, log: bool = True) -> dict:
    """The naive baselines' one-day-ahead absolute errors over the history itself: for every day ``t``
    from day 7 on, ``|ŷ_t − y_t|`` on the original scale where ``ŷ_t`` is the baseline computed from
    ``z[:t]`` alone (the same definitions as :func:`_baseline`: the last value, the mean of the last 7
    days, the value 7 days before, the mean of the same weekday over the last ≤ 4 weeks, its median
    over the last ≤ 8 weeks). Returns ``{method: errors}`` for :data:`LEVEL_BASELINES` and
    :data:`WEEKDAY_BASELINES` plus ``"_y"`` (the actuals), arrays of length ``len(z)`` (NaN before day
    7). Day ``t``'s entry uses nothing after ``t``: a window at origin ``o`` may read entries ``< o``."""
    z = np.asarray(z, dtype=float)
    n = len(z)
    y = _back(z, log)
    out = {m: np.full(n, np.nan) for m in LEVEL_BASELINES + WEEKDAY_BASELINES}
    out["_y"] = y
    if n <= SEASON:
        return out
    t = np.arange(SEASON, n)
    lag = np.full((MEDIAN_WEEKS, len(t)), np.nan)   # z[t − 7j], j = 1..8 (NaN before the series)
    for j in range(1, MEDIAN_WEEKS + 1):
        ok = t - SEASON * j >= 0
        lag[j - 1, ok] = z[t[ok] - SEASON * j]
    cs = np.concatenate([[0.0], np.cumsum(z)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        f = {"naive": z[t - 1], "window_average": (cs[t] - cs[t - SEASON]) / SEASON, "seasonal_naive": lag[0],
             "weekday_mean": np.nanmean(lag[:4], axis=0), "weekday_median": np.nanmedian(lag, axis=0)}
    for m, v in f.items():
        out[m][t] = np.abs(_back(v, log) - y[t])
    return out


def level_regime(record: dict, o: int | None = None, weeks: int = REGIME_WEEKS) -> str | None:
    """Does the history before day ``o`` (the whole record when None) say a level baseline forecasts it
    better than any weekday profile — no usable weekly pattern? From :func:`baseline_track_record`
    over the last ``weeks`` weeks before ``o`` (weeks counted back from ``o``, at least two, the last
    may be partial): the best of :data:`LEVEL_BASELINES` (lowest WAPE there) when it beats the best of
    :data:`WEEKDAY_BASELINES` by more than one standard error of the paired WAPE difference, the weeks
    as independent clusters (:func:`~acmemodel.models.forecast_backtest.wape_and_se`'s formula); else
    None. A series with a weekly pattern keeps its weekday baselines ahead (or within one SE); a running
    load that drifts from day to day (GPU-hours in use) does not."""
    y = record["_y"]
    o = len(y) if o is None else int(o)
    lo = max(SEASON, o - SEASON * int(weeks))
    if o - lo <= SEASON:  # one week and a day at least: two blocks
        return None
    blk = (o - 1 - np.arange(lo, o)) // SEASON
    b = np.bincount(blk, weights=y[lo:o])
    if not b.sum() > 0:
        return None
    tot = {m: np.bincount(blk, weights=record[m][lo:o]) for m in LEVEL_BASELINES + WEEKDAY_BASELINES}
    bl = min(LEVEL_BASELINES, key=lambda m: tot[m].sum())
    bw = min(WEEKDAY_BASELINES, key=lambda m: tot[m].sum())
    d = tot[bl] - tot[bw]
    m = len(d)
    w = d.sum() / b.sum()
    se = np.sqrt(m / (m - 1) * np.sum((d - w * b) ** 2)) / b.sum()
    return bl if w + se < 0 else None


def ensemble_z(members: dict, multi_day: bool, z: np.ndarray | None = None, *, level: str | None | bool = True,
               log: bool = True) -> np.ndarray:
    """The ``ensemble`` forecast on ``z`` from its members' forecasts ``{method: array}`` (the same
    shape each): their median, day by day; for a forecast of more than one day (``multi_day``) averaged
    with the weekday median's forecast, weight :func:`anchor_weight` of the history ``z`` (module
    docstring; :data:`ANCHOR_WEIGHT` when ``z`` is None). A one-day forecast in the *level regime* is
    the median of the members that are not weekday baselines (:data:`WEEKDAY_BASELINES`): ``level`` is
    the level baseline the regime names (any true value), None (no level regime), or True (the default)
    to decide with :func:`level_regime` from the history ``z``."""
    if not multi_day:
        if level is True:
            level = level_regime(baseline_track_record(z, log)) if z is not None else None
        if level:
            members = {m: v for m, v in members.items() if m not in WEEKDAY_BASELINES} or members
    med = np.median(np.stack(list(members.values())), axis=0)
    if multi_day and "weekday_median" in members:
        w = ANCHOR_WEIGHT if z is None else anchor_weight(z)
        return (1.0 - w) * med + w * np.asarray(members["weekday_median"], float)
    return med


def clean_outliers(z: np.ndarray, k: float = OUTLIER_K) -> np.ndarray:
    """``z`` with its outlier days replaced by the weekday profile around the local level (module
    docstring); unchanged when shorter than 4 weeks or when no day is an outlier. The weekday of day
    ``t`` is ``t mod 7`` (the series' own positions)."""
    z = np.asarray(z, dtype=float)
    n = len(z)
    if n < 4 * SEASON:
        return z
    import pandas as pd

    # a full week in every window (a partial one is biased by the weekday pattern): the first and last
    # three days take the level of the nearest full window
    m = pd.Series(z).rolling(SEASON, center=True).median().bfill().ffill().to_numpy()
    r = z - m
    dow = np.arange(n) % SEASON
    s = np.array([np.median(r[dow == d]) for d in range(SEASON)])
    e = r - s[dow]
    c = np.median(e)
    sd = 1.4826 * np.median(np.abs(e - c))
    if not sd > 0:
        return z
    bad = np.abs(e - c) > k * sd
    if not bad.any():
        return z
    out = z.copy()
    out[bad] = (m + s[dow])[bad]
    return out


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
                self.model.fit(clean_outliers(z))
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
                    res = self.model.forward(y=clean_outliers(z), h=h,
                                             **({} if self.method == "mstl" else {"level": lv}))
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


def _back(v: np.ndarray, log: bool) -> np.ndarray:
    with np.errstate(over="ignore", invalid="ignore"):
        out = np.expm1(v) if log else v
    return np.maximum(np.nan_to_num(out, nan=0.0, posinf=np.finfo(float).max), 0.0)

