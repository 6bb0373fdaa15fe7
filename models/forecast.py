"""Daily workload forecasts: job counts and GPU-hour demand per cluster × type, with intervals.

Series (:func:`daily_series`), per cluster and type (plus ``type = "ALL"``), over the cluster's
*local* calendar days fully covered by the trace (a first/last day counts as covered when the
trace misses at most its first/last two hours):

* ``jobs`` — jobs submitted that day;
* ``gpu_hours`` — GPU-hours of demand that day. ``demand="running"`` (default): GPU-hours actually
  held that day, each job's ``gpu_num × [start, end)`` split across the days it overlaps (what a
  capacity plan must provide); ``demand="submitted"``: the whole ``gpu_time_s`` of the jobs
  submitted that day.

Methods (on ``z = log(1 + y)``, so forecasts stay positive and multiplicative weekly patterns
become additive; forecasts are back-transformed medians ``exp(ẑ) − 1``):

* ``"ets"`` — statsmodels ``ETSModel`` ETS(A,N,A): additive error, no trend, additive weekly
  seasonality (period 7); analytic prediction intervals;
* ``"sarimax"`` — statsmodels ``SARIMAX`` (1,0,0)×(0,1,1)₇;
* ``"seasonal_naive"`` — ``ẑ_{T+h} = z_{T+h−7k}``, ``k = ⌈h/7⌉``; interval
  ``± q · σ · √k`` with σ the standard deviation of the weekly differences ``z_t − z_{t−7}``
  (Hyndman & Athanasopoulos, *FPP3* §5.5).

Series shorter than two weeks, or constant, are forecast by the seasonal-naive method (constant
series: zero-width intervals). :func:`rolling_origin_backtest` compares methods on rolling origins:
MAPE (over days with ``y > 0``), interval coverage and mean interval width.
"""
from __future__ import annotations

import math
import warnings
from typing import Any, Iterable, Mapping

import numpy as np
import pandas as pd
from scipy import stats

from acmemodel.clusters import cluster_timezones, utc_offset_seconds
from acmemodel.errors import ConvergenceWarning
from acmemodel.models.base import BaseModel, register

__all__ = ["DemandForecaster", "daily_series", "forecast_series", "rolling_origin_backtest",
           "METHODS", "METRICS"]

METHODS = ("ets", "sarimax", "seasonal_naive")
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


def forecast_series(y, h: int, *, method: str = "ets", level: float = 0.9, log: bool = True
                    ) -> pd.DataFrame:
    """Forecast ``h`` steps of one daily series ``y`` → DataFrame ``forecast, lower, upper,
    method`` (the method actually used; module docstring)."""
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
    z = np.log1p(y) if log else y
    used = method
    if method != "seasonal_naive" and (len(z) < 2 * SEASON or np.ptp(z) == 0):
        used = "seasonal_naive"
    if used == "seasonal_naive":
        f, lo, hi = _snaive(z, h, level)
    else:
        from acmemodel.models.blas import single_thread_blas as _single_thread_blas

        zs = pd.Series(z)
        with warnings.catch_warnings(record=True) as caught, _single_thread_blas():
            warnings.simplefilter("always")
            if used == "ets":
                from statsmodels.tsa.exponential_smoothing.ets import ETSModel

                res = ETSModel(zs, error="add", trend=None, seasonal="add", seasonal_periods=SEASON).fit(
                    disp=False)
                sf = res.get_prediction(start=len(z), end=len(z) + h - 1).summary_frame(alpha=1 - level)
                f, lo, hi = (sf[c].to_numpy() for c in ("mean", "pi_lower", "pi_upper"))
            else:
                from statsmodels.tsa.statespace.sarimax import SARIMAX

                res = SARIMAX(zs, order=(1, 0, 0), seasonal_order=(0, 1, 1, SEASON)).fit(disp=False)
                sf = res.get_forecast(h).summary_frame(alpha=1 - level)
                f, lo, hi = (sf[c].to_numpy() for c in ("mean", "mean_ci_lower", "mean_ci_upper"))
        if any("converge" in str(w.message).lower() for w in caught):
            warnings.warn(f"{used} forecast: optimiser did not converge", ConvergenceWarning, stacklevel=2)
        if not (np.all(np.isfinite(f)) and np.all(np.isfinite(lo)) and np.all(np.isfinite(hi))):
            used = "seasonal_naive"
            f, lo, hi = _snaive(z, h, level)
    if log:
        f, lo, hi = np.expm1(f), np.expm1(lo), np.expm1(hi)
    return pd.DataFrame({"forecast": np.maximum(f, 0), "lower": np.maximum(lo, 0),
                         "upper": np.maximum(hi, 0), "method": used})


def rolling_origin_backtest(y, *, horizon: int = 7, step: int = 7, min_train: int = 28,
                            methods: Iterable[str] = ("ets", "seasonal_naive"), level: float = 0.9,
                            log: bool = True) -> pd.DataFrame:
    """Rolling-origin evaluation of one series: origins ``min_train, min_train + step, ...`` while
    ``origin + horizon <= len(y)``; each method forecasts ``horizon`` days from each origin using the
    data before it. Returns one row per method: ``mape`` (mean |ŷ − y|/y over days with y > 0),
    ``wape`` (Σ|ŷ − y| / Σy, robust to near-zero days), ``coverage`` (share of days inside the
    interval), ``width`` (mean interval width / mean y),
    ``n`` (forecast days), ``origins``."""
    y = np.asarray(y, dtype=float)
    horizon, step, min_train = int(horizon), int(step), int(min_train)
    if horizon < 1 or step < 1 or min_train < 1:
        raise ValueError("horizon, step and min_train must be >= 1")
    origins = list(range(min_train, len(y) - horizon + 1, step))
    rows = []
    for m in methods:
        ape, cov, wid, ys, ae = [], [], [], [], []
        for o in origins:
            fc = forecast_series(y[:o], horizon, method=m, level=level, log=log)
            yt = y[o:o + horizon]
            pos = yt > 0
            ape.extend(np.abs(fc["forecast"].to_numpy()[pos] - yt[pos]) / yt[pos])
            ae.extend(np.abs(fc["forecast"].to_numpy() - yt))
            cov.extend((yt >= fc["lower"].to_numpy()) & (yt <= fc["upper"].to_numpy()))
            wid.extend(fc["upper"].to_numpy() - fc["lower"].to_numpy())
            ys.extend(yt)
        my = float(np.mean(ys)) if ys else float("nan")
        rows.append({"method": m, "mape": float(np.mean(ape)) if ape else float("nan"),
                     "wape": float(np.sum(ae) / np.sum(ys)) if ys and np.sum(ys) > 0 else float("nan"),
                     "coverage": float(np.mean(cov)) if cov else float("nan"),
                     "width": float(np.mean(wid) / my) if wid and my > 0 else float("nan"),
                     "n": len(cov), "origins": len(origins)})
    return pd.DataFrame(rows)


# ---------------------------------------------------------------------- the model
@register
class DemandForecaster(BaseModel):
    """Daily job-count and GPU-hour forecasts per cluster × type (math in the module docstring).

    Parameters
    ----------
    method : ``"ets"`` (default), ``"sarimax"`` or ``"seasonal_naive"``.
    level : prediction-interval level (default 0.9).
    demand : ``"running"`` (GPU-hours held per day, default) or ``"submitted"``.
    log : model ``log(1 + y)`` (default True).

    Fitted state: ``series_`` (the daily history, :func:`daily_series`); forecasts are refitted from
    it on demand (ETS fits take ~10 ms per series), so the saved model is the history plus parameters.
    """

    def __init__(self, *, method: str = "ets", level: float = 0.9, demand: str = "running", log: bool = True):
        self.method = method
        self.level = level
        self.demand = demand
        self.log = log

    def _validate(self) -> None:
        if self.method not in METHODS:
            raise ValueError(f"method must be one of {METHODS}, got {self.method!r}")
        if not 0 < float(self.level) < 1:
            raise ValueError(f"level must be in (0, 1), got {self.level!r}")
        if self.demand not in ("running", "submitted"):
            raise ValueError(f"demand must be 'running' or 'submitted', got {self.demand!r}")

    def fit(self, trace_or_jobs, *, timezones: Mapping[str, str] | None = None) -> "DemandForecaster":
        """Build the daily series of a Trace or jobs DataFrame."""
        self._validate()
        self.series_ = daily_series(trace_or_jobs, timezones, demand=self.demand)
        jobs = getattr(trace_or_jobs, "jobs", trace_or_jobs)
        self.n_fit_ = int(len(jobs))
        return self

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

    def forecast(self, days: int = 30, *, cluster=None, type=None, metric=None, method: str | None = None
                 ) -> pd.DataFrame:
        """Forecast the next ``days`` local days after the history: long DataFrame ``cluster, type,
        metric, date, forecast, lower, upper, method``."""
        days = int(days)
        if days < 1:
            raise ValueError(f"days must be >= 1, got {days}")
        s, metrics = self._select(cluster, type, metric)
        out = []
        for (cl, ty), g in s.groupby(["cluster", "type"], sort=True):
            dates = pd.date_range(g["date"].max() + pd.Timedelta(days=1), periods=days, freq="D")
            for met in metrics:
                fc = forecast_series(g[met].to_numpy(), days, method=method or self.method,
                                     level=float(self.level), log=self.log)
                fc.insert(0, "date", dates)
                fc.insert(0, "metric", met)
                fc.insert(0, "type", ty)
                fc.insert(0, "cluster", cl)
                out.append(fc)
        return pd.concat(out, ignore_index=True)

    def backtest(self, *, horizon: int = 7, step: int = 7, min_train: int = 28,
                 methods: Iterable[str] | None = None, cluster=None, type=None, metric=None) -> pd.DataFrame:
        """Rolling-origin backtest (:func:`rolling_origin_backtest`) of every series, the model's
        method against the seasonal-naive baseline: tidy rows ``model, metric, cell, value`` with
        ``cell = "cluster/type/series"`` and metrics ``mape``, ``wape``, ``coverage``, ``width``, ``n``."""
        s, metrics = self._select(cluster, type, metric)
        methods = list(methods) if methods is not None else list(dict.fromkeys([self.method, "seasonal_naive"]))
        rows = []
        for (cl, ty), g in s.groupby(["cluster", "type"], sort=True):
            for met in metrics:
                bt = rolling_origin_backtest(g[met].to_numpy(), horizon=horizon, step=step,
                                             min_train=min_train, methods=methods, level=float(self.level),
                                             log=self.log)
                for r in bt.itertuples(index=False):
                    for k in ("mape", "wape", "coverage", "width", "n"):
                        rows.append({"model": r.method, "metric": k, "cell": f"{cl}/{ty}/{met}",
                                     "value": float(getattr(r, k))})
        return pd.DataFrame(rows, columns=["model", "metric", "cell", "value"])

    def summary(self) -> pd.DataFrame:
        """One row per series: days of history, mean per day over the whole history and the last
        7 days."""
        self._check_fitted()
        rows = []
        for (cl, ty), g in self.series_.groupby(["cluster", "type"], sort=True):
            for met in METRICS:
                v = g[met].to_numpy()
                rows.append({"cluster": cl, "type": ty, "metric": met, "days": len(v),
                             "first": g["date"].min(), "last": g["date"].max(),
                             "mean_per_day": float(v.mean()), "last7_mean": float(v[-7:].mean())})
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
        return {"cluster": s["cluster"].tolist(), "type": s["type"].tolist(),
                "date": s["date"].dt.strftime("%Y-%m-%d").tolist(),
                "jobs": s["jobs"].to_numpy(), "gpu_hours": s["gpu_hours"].to_numpy(), "n_fit": self.n_fit_}

    def _fitted_from_dict(self, d: dict[str, Any], artifacts: dict[str, str]) -> None:
        self.series_ = pd.DataFrame({"cluster": d["cluster"], "type": d["type"],
                                     "date": pd.to_datetime(d["date"]),
                                     "jobs": np.asarray(d["jobs"], dtype=float),
                                     "gpu_hours": np.asarray(d["gpu_hours"], dtype=float)})
        self.n_fit_ = int(d["n_fit"])
