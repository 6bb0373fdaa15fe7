"""Daily workload forecasts: job counts and GPU-hour demand per cluster × type, with intervals.

Series (:func:`daily_series`), per cluster and type (plus ``type = "ALL"``), over the cluster's
*local* calendar days fully covered by the trace (a first/last day counts as covered when the
trace misses at most its first/last two hours):

* ``jobs`` — jobs submitted that day;
* ``gpu_hours`` — GPU-hours of demand that day. ``demand="running"`` (default): GPU-hours actually
  held that day, each job's ``gpu_num × [start, end)`` split across the days it overlaps (what a
  capacity plan must provide); ``demand="submitted"``: the whole ``gpu_time_s`` of the jobs
  submitted that day.

Methods (:mod:`acmemodel.models.forecast_models`): statsforecast's AutoETS, AutoARIMA, AutoTheta,
MSTL, the naive baselines (naive, seasonal naive, 7-day window average, weekday mean and median), a
count GLM (statsmodels), the median ensemble, the combination of the best three, and ``"auto"``
(default): per series, a naive baseline unless a model, the ensemble or the combination beats it by
more than one SE in a time-honest rolling-origin backtest (every forecast uses only data before its
origin; :mod:`acmemodel.models.forecast_backtest`), with intervals calibrated on the backtest's held-out
windows (split-conformal or the model's own, whichever covers nearer the level). Series shorter than
two weeks, or constant, are forecast by seasonal naive.

Physical bounds and coherence (:meth:`DemandForecaster.forecast`): with ``demand="running"`` no
day can hold more than the cluster's capacity ``G × 24`` GPU-hours (``G``: the ``capacity``
parameter, else the published GPU count of a known cluster, else the peak number of GPUs held
at once in the trace). Job counts are bounded by ``count_cap × `` the largest daily count of the
cluster's history (all types). The per-type forecasts are then reconciled top-down with
forecast proportions (FPP3 §11.3): each type's forecast and bounds are scaled by
``ALL / Σ types`` so that the types sum to the all-types forecast, and no type's bound exceeds
the all-types bound.

Layout: this module holds the daily series and :class:`DemandForecaster`; for one series, the
methods are in :mod:`acmemodel.models.forecast_models`, the backtest and the choice in
:mod:`acmemodel.models.forecast_backtest`, forecasting from them in
:mod:`acmemodel.models.forecast_methods`. A plain daily series (not a trace) is fitted with
:meth:`DemandForecaster.fit_series`.
"""
from __future__ import annotations

import math
from typing import Any, Iterable, Mapping

import numpy as np
import pandas as pd

from acmemodel.clusters import cluster_info, cluster_timezones, utc_offset_seconds
from acmemodel.models.base import BaseModel, register
from acmemodel.models.forecast_backtest import backtest_series
from acmemodel.models.forecast_methods import (  # noqa: F401  (re-exported)
    backtest_settings, forecast_fixed, forecast_series, select_method, selection_horizon,
)
from acmemodel.models.forecast_models import BASELINES, CANDIDATES, HORIZONS, METHODS, SEASON  # noqa: F401

__all__ = ["DemandForecaster", "daily_series", "forecast_series", "backtest_series", "select_method",
           "peak_concurrent_gpus", "METHODS", "CANDIDATES", "BASELINES", "METRICS"]

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
        # a left-truncated row's submit time is the trace start, not a submission: it counts in the
        # GPU-hours it ran, not in the jobs submitted
        fresh = ok & ~(jc["left_truncated"].fillna(False).to_numpy(dtype=bool) if "left_truncated" in jc
                       else np.zeros(len(jc), dtype=bool))
        groups = [(t, types == t) for t in sorted(set(types))]
        if include_total:
            groups.append(("ALL", np.ones(len(jc), dtype=bool)))
        for ty, m in groups:
            dj = np.floor((sub[m & fresh] + off) / DAY).astype(np.int64) - d0
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
                gt = np.nan_to_num(jc["gpu_time_s"].to_numpy(dtype=float)[m & fresh])
                dall = np.floor((sub[m & fresh] + off) / DAY).astype(np.int64) - d0
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
    """Daily job-count and GPU-hour forecasts per cluster × type (math in the module docstring and in
    :mod:`acmemodel.models.forecast_methods`), or of one plain daily series (:meth:`fit_series`).

    Parameters
    ----------
    method : ``"auto"`` (default: per series, a naive baseline unless a model, the ensemble or the
        combination beats it in the time-honest backtest) or one of :data:`METHODS`.
    level : prediction-interval level (default 0.9).
    demand : ``"running"`` (GPU-hours held per day, default) or ``"submitted"``.
    log : model ``log(1 + y)`` (default True).
    capacity : cluster → GPUs; bounds running GPU-hours at ``GPUs × 24`` per day. Default: the
        published count of a known cluster, else the trace's peak GPUs held at once. May be None.
    count_cap : job counts are bounded by ``count_cap ×`` the cluster's largest daily count (all
        types) in the history (default 2).
    weeks : weekly backtest fit origins (the latest ones; default 8).
    candidates : the methods ``auto`` chooses from (default :data:`CANDIDATES`).

    Fitted state: ``series_`` (the daily history), ``metrics_`` (its value columns), ``capacity_``
    and ``capacity_source_``, ``count_bound_``; with ``method="auto"``: ``choice_`` (``"cluster/type/
    metric"`` → method), ``members_`` (the combination's members), ``interval_`` (the interval kind and
    conformal radii) and ``selection_`` (the backtest: ``cell, horizon, method, wape, wape_se, mase,
    coverage, coverage_conformal, coverage_model, windows, days``). Forecasts are refitted from the
    history on demand.
    """

    def __init__(self, *, method: str = "auto", level: float = 0.9, demand: str = "running", log: bool = True,
                 capacity: Mapping[str, int] | None = None, count_cap: float = 2.0, weeks: int = 8,
                 candidates: Iterable[str] | None = None):
        self.method = method
        self.level = level
        self.demand = demand
        self.log = log
        self.capacity = capacity
        self.count_cap = count_cap
        self.weeks = weeks
        self.candidates = candidates

    def _validate(self) -> None:
        if self.method not in METHODS:
            raise ValueError(f"method must be one of {METHODS}, got {self.method!r}")
        if not 0 < float(self.level) < 1:
            raise ValueError(f"level must be in (0, 1), got {self.level!r}")
        if self.demand not in ("running", "submitted"):
            raise ValueError(f"demand must be 'running' or 'submitted', got {self.demand!r}")
        if not (isinstance(self.count_cap, (int, float)) and self.count_cap >= 1):
            raise ValueError(f"count_cap must be a number >= 1, got {self.count_cap!r}")
        if not (isinstance(self.weeks, int) and self.weeks >= 1):
            raise ValueError(f"weeks must be a positive integer, got {self.weeks!r}")
        bad = set(self._candidates()) - (set(METHODS) - {"auto", "combo", "ensemble"})
        if bad:
            raise ValueError(f"candidates must be among {METHODS[1:-2]}, got {sorted(bad)}")
        for k, v in (self.capacity or {}).items():
            if not (isinstance(v, (int, np.integer)) and not isinstance(v, bool) and 0 < v < 2 ** 53):
                raise ValueError(f"capacity[{k!r}] must be a positive number of GPUs, got {v!r}")

    def _candidates(self) -> tuple:
        return tuple(self.candidates) if self.candidates is not None else CANDIDATES

    def fit(self, trace_or_jobs, *, timezones: Mapping[str, str] | None = None, progress=None
            ) -> "DemandForecaster":
        """Build the daily series of a Trace or jobs DataFrame, the capacity bounds and, for
        ``method="auto"``, the per-series choice (``progress(done, total)`` after each series)."""
        self._validate()
        self.series_ = daily_series(trace_or_jobs, timezones, demand=self.demand)
        self.metrics_ = list(METRICS)
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
        self._select_all(progress)
        return self

    def fit_series(self, dates, values, *, name: str = "series", progress=None) -> "DemandForecaster":
        """Fit on one plain daily series (``dates``: consecutive calendar days; ``values``: numbers
        >= 0) under the metric ``"value"`` of cluster ``name``, type ``"ALL"``; no capacity bound."""
        self._validate()
        d = pd.to_datetime(pd.Series(dates)).dt.normalize()
        v = np.asarray(values, dtype=float)
        if len(d) != len(v) or len(d) == 0:
            raise ValueError("fit_series: dates and values must be non-empty and of the same length")
        if not (np.diff(d.to_numpy()).astype("timedelta64[D]").astype(int) == 1).all():
            raise ValueError("fit_series: dates must be consecutive calendar days")
        if not np.all(np.isfinite(v)) or (v < 0).any():
            raise ValueError("fit_series: values must be finite numbers >= 0")
        self.series_ = pd.DataFrame({"cluster": str(name), "type": "ALL", "date": d.to_numpy(), "value": v})
        self.metrics_ = ["value"]
        self.n_fit_ = int(len(v))
        self.capacity_, self.capacity_source_ = {}, {}
        self.count_bound_ = {}
        self._select_all(progress)
        return self

    def _set_count_bound(self) -> None:
        s = self.series_
        self.count_bound_ = {cl: float(self.count_cap) * max(1.0, float(g.loc[g["type"] == "ALL", "jobs"].max()))
                             for cl, g in s.groupby("cluster", sort=True)}

    def _cells(self):
        for (cl, ty), g in self.series_.groupby(["cluster", "type"], sort=True):
            for met in self.metrics_:
                yield f"{cl}/{ty}/{met}", cl, ty, met, g[met].to_numpy()

    def _select_all(self, progress=None) -> None:
        """Per series: the backtest at both horizons; with ``auto`` the choice on the horizon
        :func:`selection_horizon` gives (4 weeks when the history allows, else 1 day)."""
        self.choice_, self.members_, self.interval_, self.selection_ = {}, {}, {}, None
        if self.method != "auto":
            return
        rows = []
        cells = list(self._cells())
        for i, (cell, _cl, _ty, _met, y) in enumerate(cells):
            bt = backtest_series(y, methods=self._candidates(), horizons=HORIZONS, weeks=int(self.weeks),
                                 level=float(self.level), log=self.log, **backtest_settings(len(y)))
            hs = selection_horizon(28, len(y))
            hs = hs if hs in bt.choice else 1
            self.choice_[cell] = bt.choice[hs]
            self.members_[cell] = list(bt.combo_members[hs])
            self.interval_[cell] = dict(bt.interval[hs])
            rows.append(bt.scores.assign(cell=cell))
            if progress is not None:
                progress(i + 1, len(cells))
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
        metrics = self.metrics_ if metric is None else ([metric] if isinstance(metric, str) else list(metric))
        bad = set(metrics) - set(self.metrics_)
        if bad:
            raise ValueError(f"metric must be in {tuple(self.metrics_)}, got {sorted(bad)}")
        return s, metrics

    def bound(self, cluster: str, metric: str) -> float:
        """The physical upper bound of one day of ``metric`` on ``cluster`` (module docstring):
        ``capacity × 24`` GPU-hours for running demand, ``count_bound_`` jobs, inf otherwise."""
        self._check_fitted()
        if metric == "gpu_hours":
            return float(self.capacity_[cluster]) * 24.0 if self.demand == "running" and \
                self.capacity_.get(cluster) else float("inf")
        if metric == "jobs":
            return self.count_bound_.get(cluster, float("inf"))
        return float("inf")

    def _method_for(self, cell: str, method: str | None) -> str:
        m = method or self.method
        if m == "auto":
            return self.choice_.get(cell, "seasonal_naive") if method is None else "auto"
        return m

    def forecast(self, days: int = 30, *, cluster=None, type=None, metric=None, method: str | None = None
                 ) -> pd.DataFrame:
        """Forecast the next ``days`` days after the history: long DataFrame ``cluster, type, metric,
        date, forecast, lower, upper, method``, bounded by capacity and reconciled across types."""
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
                cell = f"{cl}/{ty}/{met}"
                m = self._method_for(cell, method)
                y = g[met].to_numpy()
                if method is None and self.method == "auto" and cell in self.choice_:
                    fc = forecast_fixed(y, days, method=m, level=float(self.level), log=self.log,
                                        members=self.members_.get(cell, ()), interval=self.interval_.get(cell))
                else:
                    fc = forecast_series(y, days, method=m, level=float(self.level), log=self.log,
                                         candidates=self._candidates())
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

    def backtest(self, *, cluster=None, type=None, metric=None) -> pd.DataFrame:
        """The time-honest rolling-origin backtest of every series at 1 day and 4 weeks
        (:func:`~acmemodel.models.forecast_backtest.backtest_series`): tidy rows ``model, metric, cell,
        horizon, value`` with ``cell = "cluster/type/series"``, ``horizon`` in days, metrics ``wape``,
        ``wape_se``, ``mase``, ``coverage``, ``coverage_conformal``, ``coverage_model``, ``windows``,
        ``days``. Models: the candidates, ``combo``, ``auto`` (with ``method="auto"``; the fit's
        backtest), or the model's method and the naive baselines. Horizons without an evaluation
        window are left out (:meth:`backtest_note`)."""
        s, metrics = self._select(cluster, type, metric)
        keys = ("wape", "wape_se", "mase", "coverage", "coverage_conformal", "coverage_model", "windows", "days")
        rows = []
        for (cl, ty), g in s.groupby(["cluster", "type"], sort=True):
            for met in metrics:
                cell = f"{cl}/{ty}/{met}"
                if self.method == "auto" and self.selection_ is not None:
                    bt = self.selection_[self.selection_["cell"] == cell]
                else:
                    ms = tuple(dict.fromkeys((self.method,) + BASELINES))
                    y = g[met].to_numpy()
                    bt = backtest_series(y, methods=ms, horizons=HORIZONS, weeks=int(self.weeks),
                                         level=float(self.level), log=self.log, **backtest_settings(len(y))).scores
                    bt = bt[bt["method"].isin(ms)]
                for r in bt.itertuples(index=False):
                    if int(r.windows) == 0:
                        continue
                    for k in keys:
                        rows.append({"model": r.method, "metric": k, "cell": cell, "horizon": int(r.horizon),
                                     "value": float(getattr(r, k))})
        return pd.DataFrame(rows, columns=["model", "metric", "cell", "horizon", "value"])

    def backtest_note(self) -> str | None:
        """A one-line note when the history is too short for a 4-week backtest window (or any), else None."""
        self._check_fitted()
        n = int(self.series_.groupby(["cluster", "type"]).size().max())
        mt = backtest_settings(n)["min_train"]
        need1, need28 = (mt + 3 * SEASON, mt + 28 + 2 * SEASON) if mt == 28 else (mt + SEASON, mt + 28 + SEASON)
        if n >= need28:
            return None
        if n >= need1:
            return (f"4-week backtest skipped: the history has {n} day(s), a 4-week backtest needs {need28}; "
                    "the choice is made on the 1-day-ahead backtest")
        return (f"backtest skipped: the history has {n} complete day(s); a rolling-origin backtest needs at least "
                f"{need1} ({mt} to train, a week of 1-day forecasts)"
                + ("; 'auto' uses the ensemble" if self.method == "auto" else ""))

    def summary(self) -> pd.DataFrame:
        """One row per series: days of history, mean per day over the whole history and the last
        7 days, the method used (``auto``: the choice) and the daily upper bound."""
        self._check_fitted()
        rows = []
        for cell, cl, ty, met, v in self._cells():
            g = self.series_[(self.series_["cluster"] == cl) & (self.series_["type"] == ty)]
            rows.append({"cluster": cl, "type": ty, "metric": met, "days": len(v),
                         "first": g["date"].min(), "last": g["date"].max(),
                         "mean_per_day": float(v.mean()), "last7_mean": float(v[-7:].mean()),
                         "method": self._method_for(cell, None), "bound_per_day": self.bound(cl, met)})
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
             "date": s["date"].dt.strftime("%Y-%m-%d").tolist(), "metrics": list(self.metrics_),
             "n_fit": self.n_fit_, "capacity": dict(self.capacity_), "capacity_source": dict(self.capacity_source_),
             "choice": dict(self.choice_), "members": dict(self.members_),
             "interval": {k: {"kind": v["kind"], "q": [float(x) for x in v["q"]]}
                          for k, v in self.interval_.items()}}
        for m in self.metrics_:
            d[m] = s[m].to_numpy()
        if self.selection_ is not None:
            d["selection"] = {c: self.selection_[c].tolist() for c in self.selection_.columns}
        return d

    def _fitted_from_dict(self, d: dict[str, Any], artifacts: dict[str, str]) -> None:
        from acmemodel.models.base import unjson_float

        self.metrics_ = list(d.get("metrics") or METRICS)
        self.series_ = pd.DataFrame({"cluster": d["cluster"], "type": d["type"], "date": pd.to_datetime(d["date"]),
                                     **{m: np.asarray(d[m], dtype=float) for m in self.metrics_}})
        self.n_fit_ = int(d["n_fit"])
        self.capacity_ = {str(k): int(v) for k, v in (d.get("capacity") or {}).items()}
        self.capacity_source_ = {str(k): str(v) for k, v in (d.get("capacity_source") or {}).items()}
        if "jobs" in self.metrics_:
            self._set_count_bound()
        else:
            self.count_bound_ = {}
        self.choice_ = {str(k): str(v) for k, v in (d.get("choice") or {}).items()}
        self.members_ = {str(k): [str(x) for x in v] for k, v in (d.get("members") or {}).items()}
        self.interval_ = {str(k): {"kind": str(v["kind"]), "q": [unjson_float(x) for x in v["q"]]}
                          for k, v in (d.get("interval") or {}).items()}
        sel = d.get("selection")
        if sel:
            df = pd.DataFrame(sel)
            for c in ("wape", "wape_se", "mase", "coverage", "coverage_conformal", "coverage_model"):
                df[c] = [unjson_float(v) for v in df[c]]
            self.selection_ = df
        else:
            self.selection_ = None
        if self.method == "auto" and not self.choice_:
            self._select_all()
