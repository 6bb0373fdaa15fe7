"""Daily workload forecasts: job counts and GPU-hour demand per cluster × type, with intervals.

Series (:func:`daily_series`), per cluster and type (plus ``type = "ALL"``), over the cluster's
*local* calendar days fully covered by the trace (a first/last day counts as covered when the
trace misses at most its first/last two hours):

* ``jobs`` — jobs submitted that day;
* ``gpu_hours`` — GPU-hours of demand that day. ``demand="running"`` (default): GPU-hours actually
  held that day, each job's ``gpu_num × [start, end)`` split across the days it overlaps (what a
  capacity plan must provide); ``demand="submitted"``: the whole ``gpu_time_s`` of the jobs
  submitted that day.

Methods. ETS, SARIMAX and seasonal naive work on ``z = log(1 + y)`` (forecasts stay positive,
multiplicative weekly patterns become additive; back-transformed medians ``exp(ẑ) − 1``):

* ``"ets"`` — statsmodels ``ETSModel`` ETS(A,N,A): additive error, no trend, additive weekly
  seasonality (period 7); analytic prediction intervals;
* ``"sarimax"`` — statsmodels ``SARIMAX`` (1,0,0)×(0,1,1)₇;
* ``"seasonal_naive"`` — ``ẑ_{T+h} = z_{T+h−7k}``, ``k = ⌈h/7⌉``; interval
  ``± q · σ · √k`` with σ the standard deviation of the weekly differences ``z_t − z_{t−7}``
  (Hyndman & Athanasopoulos, *FPP3* §5.5);
* ``"glm"`` — a regression with weekly seasonality and a linear trend,
  ``log μ_t = β₀ + β₁ t/n + Σ_{d=1..6} γ_d [t mod 7 = d]``. Series of whole numbers (job counts):
  a negative-binomial GLM (log link; dispersion α by moments from the Poisson fit, Poisson when
  α ≈ 0), intervals from the negative-binomial quantiles at the forecast mean; other series
  (GPU-hours): ordinary least squares of ``z`` on the same design with its prediction intervals.
  The trend is extrapolated at most one history length ahead (held flat after);
* ``"auto"`` (default) — per series, the candidate (ETS, SARIMAX, seasonal naive, GLM) with the
  smallest rolling-origin MASE (:func:`select_method`); seasonal naive wins ties and is used
  when the history is too short for a backtest.

Series shorter than two weeks, or constant, are forecast by the seasonal-naive method (constant
series: zero-width intervals).

Physical bounds and coherence (:meth:`DemandForecaster.forecast`): with ``demand="running"`` no
day can hold more than the cluster's capacity ``G × 24`` GPU-hours (``G``: the ``capacity``
parameter, else the published GPU count of a known cluster, else the peak number of GPUs held
at once in the trace). Job counts are bounded by ``count_cap × `` the largest daily count of the
cluster's history (all types). The per-type forecasts are then reconciled top-down with
forecast proportions (FPP3 §11.3): each type's forecast and bounds are scaled by
``ALL / Σ types`` so that the types sum to the all-types forecast, and no type's bound exceeds
the all-types bound.

:func:`rolling_origin_backtest` compares methods on rolling origins: MASE (mean absolute error
scaled by the in-sample mean absolute weekly difference ``mean |y_t − y_{t−7}|`` of the data before
each origin; < 1 beats the one-week-ago forecast on the history), MAPE (over days with ``y > 0``),
WAPE, interval coverage and mean interval width.
"""
from __future__ import annotations

import math
import warnings
from typing import Any, Iterable, Mapping

import numpy as np
import pandas as pd
from scipy import stats

from acmemodel.clusters import cluster_info, cluster_timezones, utc_offset_seconds
from acmemodel.errors import ConvergenceWarning
from acmemodel.models.base import BaseModel, register

__all__ = ["DemandForecaster", "daily_series", "forecast_series", "rolling_origin_backtest",
           "select_method", "peak_concurrent_gpus", "METHODS", "CANDIDATES", "METRICS"]

#: every ``method`` value; ``"auto"`` picks one of :data:`CANDIDATES` per series
METHODS = ("auto", "ets", "sarimax", "seasonal_naive", "glm")
#: the methods ``"auto"`` chooses from
CANDIDATES = ("ets", "sarimax", "seasonal_naive", "glm")
METRICS = ("jobs", "gpu_hours")
SEASON = 7
DAY = 86400.0
#: a local day at either end of the trace counts as covered when the trace misses at most this much of it
_EDGE_TOL_S = 2 * 3600.0


# ---------------------------------------------------------------------- daily series
def _weighted_min_sum(x: np.ndarray, w: np.ndarray, T: np.ndarray) -> np.ndarray:
    """``Σ_j w_j · min(T, x_j)`` for every ``T`` (sorting + cumulative sums, O(n log n))."""
    o = np.argsort(x)
    xs, ws = x[o], w[o]
    cw = np.r_[0.0, np.cumsum(ws)]
    cwx = np.r_[0.0, np.cumsum(ws * xs)]
    k = np.searchsorted(xs, T, side="left")  # x_j < T for the first k
    return cwx[k] + T * (cw[-1] - cw[k])


def daily_series(trace_or_jobs, timezones: Mapping[str, str] | None = None, *,
                 demand: str = "running", include_total: bool = True) -> pd.DataFrame:
    """Long table ``cluster, type, date, jobs, gpu_hours`` (``date`` = local calendar day, naive
    midnight), every covered day present for every type (zeros included); module docstring."""
    if demand not in ("running", "submitted"):
        raise ValueError(f"demand must be 'running' or 'submitted', got {demand!r}")
    jobs = getattr(trace_or_jobs, "jobs", trace_or_jobs)
    tzs = cluster_timezones(trace_or_jobs, timezones)
    need = ["cluster", "type", "submit_s", "gpu_num"] + (["start_s", "end_s"] if demand == "running"
                                                          else ["gpu_time_s"])
    for c in need:
        if c not in jobs.columns:
            raise ValueError(f"jobs lack the column {c!r}")
    frames = []
    for cl, jc in jobs.groupby("cluster", sort=True, observed=True):
        off = utc_offset_seconds(tzs.get(str(cl), "+00:00"))
        sub = jc["submit_s"].to_numpy(dtype=float)
        ok = np.isfinite(sub)
        if not ok.any():
            continue
        lo, hi = np.nanmin(sub) + off, np.nanmax(sub) + off
        d0, d1 = math.ceil((lo - _EDGE_TOL_S) / DAY), math.floor((hi + _EDGE_TOL_S) / DAY)
        if d1 <= d0:
            continue
        days = np.arange(d0, d1)
        edges_utc = np.r_[days, d1] * DAY - off
        types = jc["type"].astype(str).to_numpy()
        groups = [(t, types == t) for t in sorted(set(types))]
        if include_total:
            groups.append(("ALL", np.ones(len(jc), dtype=bool)))
        for ty, m in groups:
            dj = np.floor((sub[m & ok] + off) / DAY).astype(np.int64) - d0
            dj = dj[(dj >= 0) & (dj < len(days))]
            n_jobs = np.bincount(dj, minlength=len(days)).astype(float)
            if demand == "running":
                s = jc["start_s"].to_numpy(dtype=float)[m]
                e = jc["end_s"].to_numpy(dtype=float)[m]
                g = jc["gpu_num"].to_numpy(dtype=float)[m]
                v = np.isfinite(s) & np.isfinite(e) & (e > s) & (g > 0)
                F = (_weighted_min_sum(e[v], g[v], edges_utc) - _weighted_min_sum(s[v], g[v], edges_utc))
                gh = np.diff(F) / 3600.0
            else:
                gt = np.nan_to_num(jc["gpu_time_s"].to_numpy(dtype=float)[m & ok])
                dall = np.floor((sub[m & ok] + off) / DAY).astype(np.int64) - d0
                keep = (dall >= 0) & (dall < len(days))
                gh = np.bincount(dall[keep], weights=gt[keep], minlength=len(days)) / 3600.0
            frames.append(pd.DataFrame({"cluster": str(cl), "type": ty,
                                        "date": pd.to_datetime(days * DAY, unit="s"),
                                        "jobs": n_jobs, "gpu_hours": gh}))
    if not frames:
        raise ValueError("daily_series: the trace covers no complete local day")
    return pd.concat(frames, ignore_index=True)


def peak_concurrent_gpus(jobs: pd.DataFrame) -> int:
    """Largest number of GPUs held at once by the jobs (``gpu_num`` over ``[start_s, end_s)``); 0 when
    no job ran. A lower bound of the cluster's size when its hardware is not known."""
    s = jobs["start_s"].to_numpy(dtype=float) if "start_s" in jobs else np.array([])
    e = jobs["end_s"].to_numpy(dtype=float) if "end_s" in jobs else np.array([])
    g = jobs["gpu_num"].to_numpy(dtype=float) if "gpu_num" in jobs else np.array([])
    v = np.isfinite(s) & np.isfinite(e) & (e > s) & (g > 0)
    if not v.any():
        return 0
    t = np.r_[s[v], e[v]]
    w = np.r_[g[v], -g[v]]
    o = np.lexsort((w, t))  # at equal times, ends (negative) first
    return int(round(max(0.0, float(np.max(np.cumsum(w[o]))))))


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
    import statsmodels.api as sm

    n = len(y)
    X, Xf = _glm_design(np.arange(n), n), _glm_design(np.arange(n, n + h), n)
    a = 0.5 - level / 2
    if np.allclose(y, np.round(y)):  # counts: negative binomial (Poisson when not overdispersed)
        pois = sm.GLM(y, X, family=sm.families.Poisson()).fit()
        mu_in = pois.fittedvalues
        dof = max(n - X.shape[1], 1)
        alpha = max(0.0, float(np.sum(((y - mu_in) ** 2 - mu_in) / np.maximum(mu_in, 1e-9) ** 2) / dof))
        if alpha > 1e-6:
            res = sm.GLM(y, X, family=sm.families.NegativeBinomial(alpha=alpha)).fit()
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
    res = sm.OLS(z, X).fit()
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


# ---------------------------------------------------------------------- the model
@register
class DemandForecaster(BaseModel):
    """Daily job-count and GPU-hour forecasts per cluster × type (math in the module docstring).

    Parameters
    ----------
    method : ``"auto"`` (default: per series, the candidate with the best backtest MASE), ``"ets"``,
        ``"sarimax"``, ``"seasonal_naive"`` or ``"glm"``.
    level : prediction-interval level (default 0.9).
    demand : ``"running"`` (GPU-hours held per day, default) or ``"submitted"``.
    log : model ``log(1 + y)`` (default True; the GLM of counts uses its log link instead).
    capacity : cluster → GPUs; bounds running GPU-hours at ``GPUs × 24`` per day. Default: the
        published count of a known cluster, else the trace's peak GPUs held at once.
    count_cap : job counts are bounded by ``count_cap ×`` the cluster's largest daily count (all
        types) in the history (default 2).
    max_origins : weekly backtest origins ``"auto"`` selects on (the latest ones; default 6).

    Fitted state: ``series_`` (the daily history, :func:`daily_series`), ``capacity_`` (cluster →
    GPUs) and its ``capacity_source_``, ``count_bound_`` (cluster → jobs/day), and with
    ``method="auto"`` ``choice_`` (``"cluster/type/metric"`` → method) and ``selection_`` (the
    selection backtest: ``cell, method, mase, mape, wape, coverage, width, n, origins``). Forecasts
    are refitted from the history on demand (ETS fits take ~10 ms per series).
    """

    def __init__(self, *, method: str = "auto", level: float = 0.9, demand: str = "running", log: bool = True,
                 capacity: Mapping[str, int] | None = None, count_cap: float = 2.0, max_origins: int = 6):
        self.method = method
        self.level = level
        self.demand = demand
        self.log = log
        self.capacity = capacity
        self.count_cap = count_cap
        self.max_origins = max_origins

    def _validate(self) -> None:
        if self.method not in METHODS:
            raise ValueError(f"method must be one of {METHODS}, got {self.method!r}")
        if not 0 < float(self.level) < 1:
            raise ValueError(f"level must be in (0, 1), got {self.level!r}")
        if self.demand not in ("running", "submitted"):
            raise ValueError(f"demand must be 'running' or 'submitted', got {self.demand!r}")
        if not (isinstance(self.count_cap, (int, float)) and self.count_cap >= 1):
            raise ValueError(f"count_cap must be a number >= 1, got {self.count_cap!r}")
        if not (isinstance(self.max_origins, int) and self.max_origins >= 1):
            raise ValueError(f"max_origins must be a positive integer, got {self.max_origins!r}")
        for k, v in (self.capacity or {}).items():
            if not (isinstance(v, (int, np.integer)) and not isinstance(v, bool) and 0 < v < 2 ** 53):
                raise ValueError(f"capacity[{k!r}] must be a positive number of GPUs, got {v!r}")

    def fit(self, trace_or_jobs, *, timezones: Mapping[str, str] | None = None, progress=None
            ) -> "DemandForecaster":
        """Build the daily series of a Trace or jobs DataFrame, the capacity bounds and, for
        ``method="auto"``, the per-series choice (``progress(done, total)`` is called after each
        series' selection backtest)."""
        self._validate()
        self.series_ = daily_series(trace_or_jobs, timezones, demand=self.demand)
        jobs = getattr(trace_or_jobs, "jobs", trace_or_jobs)
        self.n_fit_ = int(len(jobs))
        self.capacity_, self.capacity_source_ = {}, {}
        for cl in sorted(self.series_["cluster"].unique()):
            given = (self.capacity or {}).get(cl)
            info = cluster_info(cl)
            if given is not None:
                self.capacity_[cl], self.capacity_source_[cl] = int(given), "given"
            elif info is not None and info.get("name") == cl:
                self.capacity_[cl], self.capacity_source_[cl] = int(info["gpus"]), "published"
            else:
                jc = jobs[jobs["cluster"].astype(str) == cl]
                self.capacity_[cl], self.capacity_source_[cl] = peak_concurrent_gpus(jc), "trace peak"
        self._set_count_bound()
        self.choice_, self.selection_ = {}, None
        if self.method == "auto":
            self._select_all(progress)
        return self

    def _set_count_bound(self) -> None:
        s = self.series_
        self.count_bound_ = {cl: float(self.count_cap) * max(1.0, float(g.loc[g["type"] == "ALL", "jobs"].max()))
                             for cl, g in s.groupby("cluster", sort=True)}

    def _select_all(self, progress=None) -> None:
        rows = []
        groups = list(self.series_.groupby(["cluster", "type"], sort=True))
        total, done = len(groups) * len(METRICS), 0
        for (cl, ty), g in groups:
            for met in METRICS:
                cell = f"{cl}/{ty}/{met}"
                choice, bt = select_method(g[met].to_numpy(), max_origins=int(self.max_origins),
                                           level=float(self.level), log=self.log)
                self.choice_[cell] = choice
                rows.append(bt.assign(cell=cell))
                done += 1
                if progress is not None:
                    progress(done, total)
        sel = pd.concat(rows, ignore_index=True)
        self.selection_ = sel[["cell"] + [c for c in sel.columns if c != "cell"]]

    def _select(self, cluster, type, metric):
        self._check_fitted()
        s = self.series_
        for col, v in (("cluster", cluster), ("type", type)):
            if v is not None:
                vals = [v] if isinstance(v, str) else list(v)
                bad = set(vals) - set(s[col].unique())
                if bad:
                    raise ValueError(f"unknown {col} {sorted(bad)}; have {sorted(s[col].unique())}")
                s = s[s[col].isin(vals)]
        metrics = METRICS if metric is None else ([metric] if isinstance(metric, str) else list(metric))
        bad = set(metrics) - set(METRICS)
        if bad:
            raise ValueError(f"metric must be in {METRICS}, got {sorted(bad)}")
        return s, metrics

    def bound(self, cluster: str, metric: str) -> float:
        """The physical upper bound of one day of ``metric`` on ``cluster`` (module docstring):
        ``capacity × 24`` GPU-hours for running demand, ``count_bound_`` jobs, inf otherwise."""
        self._check_fitted()
        if metric == "gpu_hours":
            return float(self.capacity_[cluster]) * 24.0 if self.demand == "running" and \
                self.capacity_.get(cluster) else float("inf")
        return self.count_bound_[cluster]

    def _method_for(self, cell: str, method: str | None) -> str:
        m = method or self.method
        if m == "auto":
            return self.choice_.get(cell, "seasonal_naive") if method is None else "auto"
        return m

    def forecast(self, days: int = 30, *, cluster=None, type=None, metric=None, method: str | None = None
                 ) -> pd.DataFrame:
        """Forecast the next ``days`` local days after the history: long DataFrame ``cluster, type,
        metric, date, forecast, lower, upper, method``, bounded by capacity and reconciled across
        types (module docstring)."""
        days = int(days)
        if days < 1:
            raise ValueError(f"days must be >= 1, got {days}")
        if method is not None and method not in METHODS:
            raise ValueError(f"method must be one of {METHODS}, got {method!r}")
        sel, metrics = self._select(cluster, type, metric)
        s = self.series_[self.series_["cluster"].isin(sel["cluster"].unique())]  # all types: reconciliation
        out = []
        for (cl, ty), g in s.groupby(["cluster", "type"], sort=True):
            dates = pd.date_range(g["date"].max() + pd.Timedelta(days=1), periods=days, freq="D")
            for met in metrics:
                fc = forecast_series(g[met].to_numpy(), days, method=self._method_for(f"{cl}/{ty}/{met}", method),
                                     level=float(self.level), log=self.log)
                fc.insert(0, "date", dates)
                fc.insert(0, "metric", met)
                fc.insert(0, "type", ty)
                fc.insert(0, "cluster", cl)
                out.append(fc)
        fc = self._reconcile(pd.concat(out, ignore_index=True))
        keep = fc["cluster"].isin(sel["cluster"].unique()) & fc["type"].isin(sel["type"].unique())
        return fc[keep].reset_index(drop=True)

    def _reconcile(self, fc: pd.DataFrame) -> pd.DataFrame:
        """Cap at :meth:`bound`, then scale the types to the all-types forecast (module docstring)."""
        fc = fc.copy()
        cols = ["forecast", "lower", "upper"]
        for (cl, met), g in fc.groupby(["cluster", "metric"], sort=False):
            cap = self.bound(cl, met)
            fc.loc[g.index, cols] = np.minimum(g[cols].to_numpy(), cap)
            g = fc.loc[g.index]
            is_all = g["type"] == "ALL"
            if not is_all.any():
                continue
            tot = g[is_all].set_index("date")
            parts = g[~is_all]
            if parts.empty:
                continue
            ssum = parts.groupby("date")["forecast"].sum()
            hist = self.series_[(self.series_["cluster"] == cl) & (self.series_["type"] != "ALL")]
            share = hist.groupby("type")[met].sum()
            share = share / share.sum() if share.sum() > 0 else share * 0
            d = parts["date"]
            t_f = d.map(tot["forecast"]).to_numpy()
            s_f = d.map(ssum).to_numpy()
            with np.errstate(divide="ignore", invalid="ignore"):
                factor = np.where(s_f > 0, t_f / s_f, np.nan)
            v = parts[cols].to_numpy()
            # no type forecast anything: distribute the total by the history's shares
            zero = ~np.isfinite(factor)
            scaled = v * np.where(zero, 1.0, factor)[:, None]
            if zero.any():
                sh = parts["type"].map(share).fillna(0.0).to_numpy()
                scaled[zero, 0] = (t_f * sh)[zero]
                scaled[zero, 2] = np.maximum(scaled[zero, 2], scaled[zero, 0])
            t_hi = d.map(tot["upper"]).to_numpy()
            scaled[:, 2] = np.minimum(scaled[:, 2], t_hi)
            scaled[:, 0] = np.minimum(scaled[:, 0], scaled[:, 2])
            scaled[:, 1] = np.minimum(scaled[:, 1], scaled[:, 0])
            fc.loc[parts.index, cols] = scaled
        return fc

    def backtest(self, *, horizon: int = 7, step: int = 7, min_train: int = 28,
                 methods: Iterable[str] | None = None, cluster=None, type=None, metric=None) -> pd.DataFrame:
        """Rolling-origin backtest (:func:`rolling_origin_backtest`) of every series: tidy rows
        ``model, metric, cell, value`` with ``cell = "cluster/type/series"`` and metrics ``mase``,
        ``mape``, ``wape``, ``coverage``, ``width``, ``n``. With ``method="auto"``: every candidate,
        ``auto`` (the chosen method's scores) and ``auto_causal`` (:func:`select_method`; the fit's
        selection backtest when the arguments are the defaults); otherwise the model's method and
        seasonal naive. Empty when the history is too short for one origin (:meth:`backtest_note`)."""
        s, metrics = self._select(cluster, type, metric)
        rows = []
        keys = ("mase", "mape", "wape", "coverage", "width", "n")
        for (cl, ty), g in s.groupby(["cluster", "type"], sort=True):
            for met in metrics:
                cell = f"{cl}/{ty}/{met}"
                y = g[met].to_numpy()
                if methods is None and self.method == "auto":
                    if self.selection_ is not None and (horizon, step, min_train) == (7, 7, 28) \
                            and cell in set(self.selection_["cell"]):
                        bt = self.selection_[self.selection_["cell"] == cell]
                    else:
                        bt = select_method(y, horizon=horizon, step=step, min_train=min_train,
                                           max_origins=int(self.max_origins), level=float(self.level),
                                           log=self.log)[1]
                else:
                    ms = list(methods) if methods is not None else list(dict.fromkeys([self.method, "seasonal_naive"]))
                    bt = rolling_origin_backtest(y, horizon=horizon, step=step, min_train=min_train, methods=ms,
                                                 level=float(self.level), log=self.log,
                                                 max_origins=None)
                if int(bt["origins"].max() if len(bt) else 0) == 0:
                    continue
                for r in bt.itertuples(index=False):
                    for k in keys:
                        rows.append({"model": r.method, "metric": k, "cell": cell, "value": float(getattr(r, k))})
        return pd.DataFrame(rows, columns=["model", "metric", "cell", "value"])

    def backtest_note(self, *, horizon: int = 7, min_train: int = 28) -> str | None:
        """A one-line note when the history is too short for any backtest origin, else None."""
        self._check_fitted()
        n = int(self.series_.groupby(["cluster", "type"]).size().max())
        if n >= min_train + horizon:
            return None
        return (f"backtest skipped: the history has {n} complete day(s); a rolling-origin backtest needs at "
                f"least {min_train + horizon} ({min_train} to train, {horizon} to test)"
                + ("; 'auto' uses seasonal naive" if self.method == "auto" else ""))

    def summary(self) -> pd.DataFrame:
        """One row per series: days of history, mean per day over the whole history and the last
        7 days, the method used (``auto``: the choice) and the daily upper bound."""
        self._check_fitted()
        rows = []
        for (cl, ty), g in self.series_.groupby(["cluster", "type"], sort=True):
            for met in METRICS:
                v = g[met].to_numpy()
                rows.append({"cluster": cl, "type": ty, "metric": met, "days": len(v),
                             "first": g["date"].min(), "last": g["date"].max(),
                             "mean_per_day": float(v.mean()), "last7_mean": float(v[-7:].mean()),
                             "method": self._method_for(f"{cl}/{ty}/{met}", None),
                             "bound_per_day": self.bound(cl, met)})
        return pd.DataFrame(rows)

    def plot(self, ax=None, *, cluster: str, type: str = "ALL", metric: str = "jobs", days: int = 30,
             history: int = 60, **kwargs):
        """History (last ``history`` days) and the ``days``-day forecast with its interval."""
        import matplotlib.pyplot as plt

        if ax is None:
            _, ax = plt.subplots(figsize=(9, 3))
        s, _ = self._select(cluster, type, metric)
        s = s.tail(history)
        ax.plot(s["date"], s[metric], "k.-", label="history")
        fc = self.forecast(days, cluster=cluster, type=type, metric=metric)
        line, = ax.plot(fc["date"], fc["forecast"], label=f"forecast ({fc['method'].iloc[0]})", **kwargs)
        ax.fill_between(fc["date"], fc["lower"], fc["upper"], alpha=0.3, color=line.get_color(),
                        label=f"{float(self.level):.0%} interval")
        ax.set_ylabel("jobs per day" if metric == "jobs" else "GPU-hours per day")
        ax.set_title(f"{cluster}/{type} {metric}")
        ax.legend()
        return ax

    def _fitted_to_dict(self) -> dict[str, Any]:
        s = self.series_
        d = {"cluster": s["cluster"].tolist(), "type": s["type"].tolist(),
             "date": s["date"].dt.strftime("%Y-%m-%d").tolist(),
             "jobs": s["jobs"].to_numpy(), "gpu_hours": s["gpu_hours"].to_numpy(), "n_fit": self.n_fit_,
             "capacity": dict(self.capacity_), "capacity_source": dict(self.capacity_source_),
             "choice": dict(self.choice_)}
        if self.selection_ is not None:
            d["selection"] = {c: self.selection_[c].tolist() for c in self.selection_.columns}
        return d

    def _fitted_from_dict(self, d: dict[str, Any], artifacts: dict[str, str]) -> None:
        from acmemodel.models.base import unjson_float

        self.series_ = pd.DataFrame({"cluster": d["cluster"], "type": d["type"],
                                     "date": pd.to_datetime(d["date"]),
                                     "jobs": np.asarray(d["jobs"], dtype=float),
                                     "gpu_hours": np.asarray(d["gpu_hours"], dtype=float)})
        self.n_fit_ = int(d["n_fit"])
        clusters = sorted(self.series_["cluster"].unique())
        self.capacity_ = {str(k): int(v) for k, v in (d.get("capacity") or {}).items()}
        self.capacity_source_ = {str(k): str(v) for k, v in (d.get("capacity_source") or {}).items()}
        for cl in clusters:  # bundles written before the capacity bound: the published count or unbounded
            if cl not in self.capacity_:
                info = cluster_info(cl)
                self.capacity_[cl] = int(info["gpus"]) if info is not None else 0
                self.capacity_source_[cl] = "published" if info is not None else "none"
        self._set_count_bound()
        self.choice_ = {str(k): str(v) for k, v in (d.get("choice") or {}).items()}
        sel = d.get("selection")
        if sel:
            df = pd.DataFrame(sel)
            for c in ("mase", "mape", "wape", "coverage", "width"):
                df[c] = [unjson_float(v) for v in df[c]]
            self.selection_ = df
        else:
            self.selection_ = None
        if self.method == "auto" and not self.choice_:
            self._select_all()
