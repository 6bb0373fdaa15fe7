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

Layout: this module holds the daily series and :class:`DemandForecaster`; forecasting one series and
the backtest/selection are in :mod:`acmemodel.models.forecast_methods` (names re-exported here).

:func:`rolling_origin_backtest` compares methods on rolling origins: MASE (mean absolute error
scaled by the in-sample mean absolute weekly difference ``mean |y_t − y_{t−7}|`` of the data before
each origin; < 1 beats the one-week-ago forecast on the history), MAPE (over days with ``y > 0``),
WAPE, interval coverage and mean interval width.
"""
from __future__ import annotations

import math
from typing import Any, Iterable, Mapping

import numpy as np
import pandas as pd

from acmemodel.clusters import cluster_info, cluster_timezones, utc_offset_seconds
from acmemodel.models.base import BaseModel, register
from acmemodel.models.forecast_methods import (  # noqa: F401  (re-exported: these lived here)
    CANDIDATES, forecast_series, METHODS, rolling_origin_backtest, SEASON, select_method, _backtest_one,
    _fit_warm, _forecast, _glm, _glm_design, _origins, _scores, _snaive,
)

__all__ = ["DemandForecaster", "daily_series", "forecast_series", "rolling_origin_backtest",
           "select_method", "peak_concurrent_gpus", "METHODS", "CANDIDATES", "METRICS"]

METRICS = ("jobs", "gpu_hours")
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
