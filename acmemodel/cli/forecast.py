"""``acmemodel forecast``: daily job counts and GPU-hours per cluster × type, N days ahead."""
from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from acmemodel.cli._app import app, print_json
from acmemodel.cli._common import CLUSTER, TRACE_PATHS, check_trace_span, console, load_traces
from acmemodel.cli._fmt import num, progress, table

_SHORT = {"seasonal_naive": "snaive", "sarimax": "sarimax", "ets": "ets", "glm": "glm", "auto": "auto",
          "auto_causal": "causal"}


@app.command("forecast")
def forecast_cmd(
    paths: Optional[List[Path]] = TRACE_PATHS,
    days: int = typer.Option(30, "--days", help="Days to forecast after the last full day of the trace."),
    method: str = typer.Option("auto", "--method",
                               help="auto (per series: lowest backtest MASE) | ets | sarimax | "
                                    "seasonal_naive | glm"),
    level: float = typer.Option(0.9, "--level", help="Prediction-interval level."),
    demand: str = typer.Option("running", "--demand",
                               help="GPU-hours: 'running' (held per day) or 'submitted' (by submit day)."),
    cluster: Optional[str] = CLUSTER,
    gpus: Optional[int] = typer.Option(None, "--gpus",
                                       help="Cluster size bounding GPU-hours/day (default: the published "
                                            "size, else the trace's peak GPUs in use)."),
    types: Optional[str] = typer.Option(None, "--type", help="Comma-separated types (default: all + ALL)."),
    backtest: bool = typer.Option(True, "--backtest/--no-backtest",
                                  help="Rolling-origin backtest vs seasonal-naive (7-day horizon, weekly origins)."),
    json_out: bool = typer.Option(False, "--json",
                                  help="Print JSON: forecast rows, backtest rows {model, metric, cell, value}."),
) -> None:
    """Forecast daily jobs and GPU-hours per type with prediction intervals. 'auto' picks, per series,
    among ETS, SARIMAX, seasonal naive and a count GLM (weekly seasonality + trend) by rolling-origin
    MASE; intervals are bounded by what the cluster can run and the types sum to the total."""
    import warnings

    from acmemodel.models.forecast import METHODS, DemandForecaster

    if days < 1:
        raise ValueError(f"--days must be >= 1, got {days}")
    if days > 3660:
        raise ValueError(f"--days must be at most 3,660 (ten years), got {days:,}")
    if method not in METHODS:
        raise ValueError(f"--method must be one of {', '.join(METHODS)}, got {method!r}")
    if gpus is not None and not 0 < gpus < 2 ** 53:
        raise ValueError(f"--gpus must be a positive number of GPUs, got {gpus}")
    trace = load_traces(paths, cluster)
    check_trace_span(trace, "forecast")
    capacity = None
    if gpus is not None:
        capacity = {str(c): int(gpus) for c in trace.jobs["cluster"].astype(str).unique()}
    f = DemandForecaster(method=method, level=level, demand=demand, capacity=capacity)
    with warnings.catch_warnings(), progress("selecting a forecaster per series", enabled=not json_out) as upd:
        warnings.simplefilter("ignore")
        f.fit(trace, progress=upd)
        type_sel = [t.strip() for t in types.split(",")] if types else None
        fc = f.forecast(days, type=type_sel)
        note = f.backtest_note() if backtest else None
        bt = f.backtest(type=type_sel) if backtest and note is None else None
    summ = f.summary()
    if json_out:
        fcj = fc.assign(date=fc["date"].dt.strftime("%Y-%m-%d"))
        print_json({"days": days, "method": method, "level": level, "demand": demand,
                    "history": summ.assign(first=lambda d: d["first"].dt.strftime("%Y-%m-%d"),
                                           last=lambda d: d["last"].dt.strftime("%Y-%m-%d"))
                    .to_dict("records"),
                    "capacity": {c: {"gpus": f.capacity_[c], "source": f.capacity_source_[c],
                                     "gpu_hours_per_day": f.bound(c, "gpu_hours"),
                                     "jobs_per_day": f.bound(c, "jobs")} for c in f.capacity_},
                    "choice": dict(f.choice_),
                    "forecast": fcj.to_dict("records"),
                    "backtest": [] if bt is None else bt.to_dict("records"),
                    "backtest_note": note})
        return
    _print_forecast(f, fc, summ, days, method, level, demand)
    if note is not None:
        console.print(note)
    elif bt is not None and len(bt):
        _print_backtest(bt, method, f.choice_)


def _print_forecast(f, fc, summ, days, method, level, demand) -> None:
    hist = summ.set_index(["cluster", "type", "metric"])
    for cl, gc in fc.groupby("cluster", sort=True):
        src = f.capacity_source_[cl]
        bound = f.bound(cl, "gpu_hours")
        cap = (f"GPU-h/day bounded by {num(f.capacity_[cl])} GPUs × 24 h = {num(bound)} ({src})"
               if bound != float("inf") else "GPU-h/day not bounded (submitted demand)")
        tab = table(f"{cl}: {days}-day forecast, {level:.0%} intervals, GPU-hours {demand}",
                    ["type", "jobs/d", "interval", "GPU-h/d", "interval", "hist jobs/d", "methods"])
        for ty, g in gc.groupby("type", sort=True):
            j, h = g[g["metric"] == "jobs"], g[g["metric"] == "gpu_hours"]
            ms = "/".join(dict.fromkeys(_SHORT.get(m, m) for m in (j["method"].iloc[0], h["method"].iloc[0])))
            tab.add_row(ty, num(j["forecast"].mean()), _iv(j), num(h["forecast"].mean()), _iv(h),
                        num(hist.loc[(cl, ty, "jobs"), "mean_per_day"]), ms)
        console.print(tab)
        console.print(f"means over the days of the daily median and bounds; methods: jobs/GPU-h (one name when both agree); {cap}; "
                      "the types are reconciled to sum to ALL", highlight=False)


def _iv(g) -> str:
    return f"{num(g['lower'].mean(), 2)}–{num(g['upper'].mean(), 2)}"


def _print_backtest(bt, method, choice: dict) -> None:
    p = bt.pivot_table(index="cell", columns=["metric", "model"], values="value", dropna=False)
    models = list(dict.fromkeys(bt["model"]))
    if method == "auto":
        show = [m for m in ("ets", "sarimax", "seasonal_naive", "glm", "auto_causal") if m in models]
        title = "rolling-origin backtest (7-day horizon, latest weekly origins): MASE"
        caption = ("MASE < 1: better than last week's value on the history; choice = lowest MASE "
                   "(snaive wins ties); causal = auto choosing on earlier origins only")
        cols = ["series", "metric", *[_SHORT[m] for m in show], "choice"]
    else:
        show = [m for m in dict.fromkeys((method, "seasonal_naive")) if m in models]
        title = "rolling-origin backtest (7-day horizon, weekly origins)"
        caption = "MASE (< 1 beats last week's value), WAPE = Σ|error| / Σ actual, cover = share in interval"
        cols = ["series", "metric", *[f"MASE {_SHORT[m]}" for m in show], *[f"WAPE {_SHORT[m]}" for m in show],
                "cover"]
    tab = table(title, cols)

    def val(r, k, m):
        v = r.get((k, m))
        return "–" if v is None or v != v else f"{v:.2f}"

    for cell, r in p.iterrows():
        cl, ty, met = cell.rsplit("/", 2)
        met = "GPU-h" if met == "gpu_hours" else met
        if method == "auto":
            tab.add_row(f"{cl}/{ty}", met, *[val(r, "mase", m) for m in show],
                        _SHORT.get(choice.get(cell, ""), "–"))
        else:
            tab.add_row(f"{cl}/{ty}", met, *[val(r, "mase", m) for m in show], *[val(r, "wape", m) for m in show],
                        val(r, "coverage", method))
    console.print(tab)
    console.print(caption, highlight=False)
