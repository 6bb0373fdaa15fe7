"""Forecasting one daily series, and choosing the method by rolling-origin backtest.

The methods (ETS, SARIMAX, seasonal naive, the trend + weekday GLM; ``auto``) and the backtest
scores (MASE, MAPE, WAPE, coverage, width) are described in :mod:`acmemodel.models.forecast`, whose
:class:`~acmemodel.models.forecast.DemandForecaster` applies them to every cluster × type series.
Here: :func:`forecast_series` (one series, one method), :func:`rolling_origin_backtest` and
:func:`select_method`; every name stays importable from :mod:`acmemodel.models.forecast`.
"""
from __future__ import annotations

import warnings
from typing import Any, Iterable

import numpy as np
import pandas as pd
from scipy import stats

from acmemodel.errors import ConvergenceWarning

__all__ = ["forecast_series", "rolling_origin_backtest", "select_method", "METHODS", "CANDIDATES", "SEASON"]

#: every ``method`` value; ``"auto"`` picks one of :data:`CANDIDATES` per series
METHODS = ("auto", "ets", "sarimax", "seasonal_naive", "glm")
#: the methods ``"auto"`` chooses from
CANDIDATES = ("ets", "sarimax", "seasonal_naive", "glm")
#: the season (days) of every method
SEASON = 7


# ---------------------------------------------------------------------- forecasting one series
def _snaive(z: np.ndarray, h: int, level: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    n = len(z)
    s = min(SEASON, n)
    i = np.arange(h)
    f = z[n - s + (i % s)]
    d = z[s:] - z[:-s] if n > s else np.zeros(1)
    sigma = float(np.std(d, ddof=1)) if len(d) > 1 else 0.0
    k = i // s + 1
    q = stats.norm.ppf(0.5 + level / 2)
    w = q * sigma * np.sqrt(k)
    return f, f - w, f + w


def _glm_design(t: np.ndarray, n: int) -> np.ndarray:
    """Intercept, trend ``t/n`` (held flat beyond ``2n``: at most one history length of
    extrapolation), six day-of-week indicators (``t mod 7``)."""
    tt = np.minimum(t, 2 * n - 1) / n
    dow = np.zeros((len(t), SEASON - 1))
    r = t % SEASON
    for d in range(1, SEASON):
        dow[:, d - 1] = r == d
    return np.column_stack([np.ones(len(t)), tt, dow])


def _glm(y: np.ndarray, h: int, level: float) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """The ``"glm"`` method on the original scale (module docstring); None when the fit fails."""
    # (the modules themselves: statsmodels.api imports all of statsmodels, ~1 s)
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
        if alpha > 1e-6:
            res = GLM(y, X, family=families.NegativeBinomial(alpha=alpha)).fit()
        else:
            res = pois
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
    z = np.log1p(y)  # continuous (GPU-hours): log-linear least squares, its prediction interval
    res = OLS(z, X).fit()
    pr = res.get_prediction(Xf).summary_frame(alpha=2 * a)
    f, lo, hi = (pr[c].to_numpy() for c in ("mean", "obs_ci_lower", "obs_ci_upper"))
    return np.expm1(f), np.expm1(lo), np.expm1(hi)


def forecast_series(y, h: int, *, method: str = "ets", level: float = 0.9, log: bool = True
                    ) -> pd.DataFrame:
    """Forecast ``h`` steps of one daily series ``y`` → DataFrame ``forecast, lower, upper,
    method`` (the method actually used; module docstring). ``method="auto"`` selects by
    :func:`select_method` first."""
    return _forecast(y, h, method=method, level=level, log=log)[0]


def _forecast(y, h: int, *, method: str, level: float, log: bool, start_params=None
              ) -> tuple[pd.DataFrame, Any]:
    """:func:`forecast_series` plus the fitted parameters of ETS/SARIMAX (``start_params``: a warm
    start for the optimiser, e.g. the previous backtest origin's estimate; None otherwise)."""
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level!r}")
    h = int(h)
    if h < 1:
        raise ValueError(f"horizon (days) must be >= 1, got {h}")
    y = np.asarray(y, dtype=float)
    if len(y) == 0:
        raise ValueError("cannot forecast an empty series")
    y = np.maximum(np.nan_to_num(y), 0.0)
    if method == "auto":
        method = select_method(y, level=level, log=log)[0]
    z = np.log1p(y) if log else y
    used, params = method, None
    if method != "seasonal_naive" and (len(z) < 2 * SEASON or np.ptp(z) == 0):
        used = "seasonal_naive"
    out = None
    if used == "glm":
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                out = _glm(y, h, level)
            except Exception:  # singular design, failed IRLS: fall back below
                out = None
        if out is None or not all(np.all(np.isfinite(v)) for v in out):
            used, out = "seasonal_naive", None
        else:
            f, lo, hi = out
    if used == "seasonal_naive":
        f, lo, hi = _snaive(z, h, level)
        if log:
            f, lo, hi = np.expm1(f), np.expm1(lo), np.expm1(hi)
    elif used in ("ets", "sarimax"):
        from acmemodel.models.blas import single_thread_blas as _single_thread_blas

        zs = pd.Series(z)
        with warnings.catch_warnings(record=True) as caught, _single_thread_blas():
            warnings.simplefilter("always")
            if used == "ets":
                from statsmodels.tsa.exponential_smoothing.ets import ETSModel

                mod = ETSModel(zs, error="add", trend=None, seasonal="add", seasonal_periods=SEASON)
                res = _fit_warm(mod, start_params)
                sf = res.get_prediction(start=len(z), end=len(z) + h - 1).summary_frame(alpha=1 - level)
                f, lo, hi = (sf[c].to_numpy() for c in ("mean", "pi_lower", "pi_upper"))
            else:
                from statsmodels.tsa.statespace.sarimax import SARIMAX

                res = _fit_warm(SARIMAX(zs, order=(1, 0, 0), seasonal_order=(0, 1, 1, SEASON)), start_params)
                sf = res.get_forecast(h).summary_frame(alpha=1 - level)
                f, lo, hi = (sf[c].to_numpy() for c in ("mean", "mean_ci_lower", "mean_ci_upper"))
        if any("converge" in str(w.message).lower() for w in caught):
            warnings.warn(f"{used} forecast: optimiser did not converge", ConvergenceWarning, stacklevel=2)
        params = np.asarray(res.params, dtype=float)
        if not (np.all(np.isfinite(f)) and np.all(np.isfinite(lo)) and np.all(np.isfinite(hi))):
            used, params = "seasonal_naive", None
            f, lo, hi = _snaive(z, h, level)
        if log:
            f, lo, hi = np.expm1(f), np.expm1(lo), np.expm1(hi)
    with np.errstate(over="ignore", invalid="ignore"):
        f, lo, hi = (np.nan_to_num(np.maximum(v, 0.0), nan=0.0, posinf=np.finfo(float).max)
                     for v in (f, lo, hi))
    lo = np.minimum(lo, f)
    hi = np.maximum(hi, f)
    return pd.DataFrame({"forecast": f, "lower": lo, "upper": hi, "method": used}), params


def _fit_warm(mod, start_params):
    """``mod.fit`` from ``start_params`` when they have the right length and are finite, else from the
    model's own start values."""
    if start_params is not None and np.all(np.isfinite(start_params)):
        try:
            if len(start_params) == len(mod.start_params):
                return mod.fit(disp=False, start_params=start_params)
        except Exception:  # a start the optimiser rejects: cold start
            pass
    return mod.fit(disp=False)


# ---------------------------------------------------------------------- backtest and selection
def _origins(n: int, horizon: int, step: int, min_train: int, max_origins: int | None) -> list[int]:
    o = list(range(min_train, n - horizon + 1, step))
    return o[-max_origins:] if max_origins else o


def _backtest_one(y: np.ndarray, method: str, origins: list[int], horizon: int, level: float, log: bool
                  ) -> list[dict]:
    """Per origin: forecast/lower/upper/actual arrays and the MASE scale of the data before it."""
    out, params = [], None
    for o in origins:
        fc, p = _forecast(y[:o], horizon, method=method, level=level, log=log, start_params=params)
        params = p if p is not None else params
        tr = y[:o]
        scale = float(np.mean(np.abs(tr[SEASON:] - tr[:-SEASON]))) if len(tr) > SEASON else float("nan")
        out.append({"f": fc["forecast"].to_numpy(), "lo": fc["lower"].to_numpy(),
                    "hi": fc["upper"].to_numpy(), "y": y[o:o + horizon], "scale": scale})
    return out


def _scores(per_origin: list[dict]) -> dict:
    """MASE, MAPE, WAPE, coverage, width, n over a method's origins (:func:`rolling_origin_backtest`)."""
    if not per_origin:
        return {"mase": float("nan"), "mape": float("nan"), "wape": float("nan"), "coverage": float("nan"),
                "width": float("nan"), "n": 0}
    f = np.concatenate([p["f"] for p in per_origin])
    lo = np.concatenate([p["lo"] for p in per_origin])
    hi = np.concatenate([p["hi"] for p in per_origin])
    y = np.concatenate([p["y"] for p in per_origin])
    sc = np.concatenate([np.full(len(p["y"]), p["scale"]) for p in per_origin])
    ae = np.abs(f - y)
    ok = np.isfinite(sc) & (sc > 0)
    pos = y > 0
    my = float(np.mean(y))
    return {"mase": float(np.mean(ae[ok] / sc[ok])) if ok.any() else float("nan"),
            "mape": float(np.mean(ae[pos] / y[pos])) if pos.any() else float("nan"),
            "wape": float(ae.sum() / y.sum()) if y.sum() > 0 else float("nan"),
            "coverage": float(np.mean((y >= lo) & (y <= hi))),
            "width": float(np.mean(hi - lo) / my) if my > 0 else float("nan"),
            "n": int(len(y))}


def rolling_origin_backtest(y, *, horizon: int = 7, step: int = 7, min_train: int = 28,
                            methods: Iterable[str] = ("ets", "seasonal_naive"), level: float = 0.9,
                            log: bool = True, max_origins: int | None = None) -> pd.DataFrame:
    """Rolling-origin evaluation of one series: origins ``min_train, min_train + step, ...`` while
    ``origin + horizon <= len(y)`` (the last ``max_origins`` of them when given); each method
    forecasts ``horizon`` days from each origin using the data before it. Returns one row per
    method: ``mase`` (module docstring), ``mape`` (mean |ŷ − y|/y over days with y > 0), ``wape``
    (Σ|ŷ − y| / Σy, robust to near-zero days), ``coverage`` (share of days inside the interval),
    ``width`` (mean interval width / mean y), ``n`` (forecast days), ``origins``. No origins (a
    history shorter than ``min_train + horizon``): NaN scores and ``n = origins = 0``."""
    y = np.asarray(y, dtype=float)
    horizon, step, min_train = int(horizon), int(step), int(min_train)
    if horizon < 1 or step < 1 or min_train < 1:
        raise ValueError("horizon, step and min_train must be >= 1")
    origins = _origins(len(y), horizon, step, min_train, max_origins)
    rows = []
    for m in methods:
        rows.append({"method": m, **_scores(_backtest_one(y, m, origins, horizon, level, log)),
                     "origins": len(origins)})
    return pd.DataFrame(rows, columns=["method", "mase", "mape", "wape", "coverage", "width", "n", "origins"])


def select_method(y, *, candidates: Iterable[str] = CANDIDATES, horizon: int = 7, step: int = 7,
                  min_train: int = 28, max_origins: int | None = 6, level: float = 0.9, log: bool = True
                  ) -> tuple[str, pd.DataFrame]:
    """The ``"auto"`` choice for one series: ``(method, backtest)``, the candidate with the smallest
    rolling-origin MASE (:func:`rolling_origin_backtest` over the last ``max_origins`` weekly origins;
    seasonal naive wins ties and is chosen when there is no origin). ``backtest`` has one row per
    candidate plus ``"auto"`` (the chosen method's scores: an in-sample selection, never worse than
    seasonal naive by construction) and ``"auto_causal"`` (the honest out-of-sample version: at each
    origin the method with the best MASE on the *earlier* origins, seasonal naive at the first)."""
    y = np.maximum(np.nan_to_num(np.asarray(y, dtype=float)), 0.0)
    cands = list(dict.fromkeys(candidates))
    if "seasonal_naive" not in cands:
        cands.append("seasonal_naive")
    origins = _origins(len(y), int(horizon), int(step), int(min_train), max_origins)
    per = {m: _backtest_one(y, m, origins, int(horizon), level, log) for m in cands}
    rows = [{"method": m, **_scores(per[m]), "origins": len(origins)} for m in cands]
    bt = pd.DataFrame(rows)
    mase = bt.set_index("method")["mase"]
    if not origins or not np.isfinite(mase).any():
        choice = "seasonal_naive"
    else:
        best = float(np.nanmin(mase.to_numpy()))
        tied = [m for m in cands if np.isfinite(mase[m]) and mase[m] <= best * (1 + 1e-9)]
        choice = "seasonal_naive" if "seasonal_naive" in tied else tied[0]
    causal = []
    for k in range(len(origins)):
        if k == 0:
            pick = "seasonal_naive"
        else:
            prior = {m: _scores(per[m][:k])["mase"] for m in cands}
            fin = {m: v for m, v in prior.items() if np.isfinite(v)}
            pick = min(fin, key=lambda m: (fin[m], m != "seasonal_naive")) if fin else "seasonal_naive"
        causal.append(per[pick][k])
    extra = pd.DataFrame([{"method": "auto", **_scores(per[choice]), "origins": len(origins)},
                          {"method": "auto_causal", **_scores(causal), "origins": len(origins)}])
    return choice, pd.concat([bt, extra], ignore_index=True)
