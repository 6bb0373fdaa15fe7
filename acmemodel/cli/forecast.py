"""``acmemodel forecast``: daily job counts and GPU-hours per cluster × type, N days ahead."""
from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from acmemodel.cli._app import app, print_json
from acmemodel.cli._common import CLUSTER, TRACE_PATHS, console, load_traces


@app.command("forecast")
def forecast_cmd(
    paths: Optional[List[Path]] = TRACE_PATHS,
    days: int = typer.Option(30, "--days", help="Days to forecast after the last full day of the trace."),
    method: str = typer.Option("ets", "--method", help="ets | sarimax | seasonal_naive"),
    level: float = typer.Option(0.9, "--level", help="Prediction-interval level."),
    demand: str = typer.Option("running", "--demand",
                               help="GPU-hours: 'running' (held per day) or 'submitted' (by submit day)."),
    cluster: Optional[str] = CLUSTER,
    types: Optional[str] = typer.Option(None, "--type", help="Comma-separated types (default: all + ALL)."),
    backtest: bool = typer.Option(True, "--backtest/--no-backtest",
                                  help="Rolling-origin backtest vs seasonal-naive (7-day horizon, weekly origins)."),
    json_out: bool = typer.Option(False, "--json",
                                  help="Print JSON: forecast rows, backtest rows {model, metric, cell, value}."),
) -> None:
    """Forecast daily jobs and GPU-hours per type with prediction intervals (ETS on log(1+y) with
    weekly seasonality), and compare it with the seasonal-naive forecast on rolling origins."""
    import warnings

    from rich.table import Table

    from acmemodel.models.forecast import DemandForecaster

    if days < 1:
        raise ValueError(f"--days must be >= 1, got {days}")
    trace = load_traces(paths, cluster)
    f = DemandForecaster(method=method, level=level, demand=demand).fit(trace)
    type_sel = [t.strip() for t in types.split(",")] if types else None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fc = f.forecast(days, type=type_sel)
        bt = f.backtest(type=type_sel) if backtest else None
    if json_out:
        fcj = fc.assign(date=fc["date"].dt.strftime("%Y-%m-%d"))
        print_json({"days": days, "method": method, "level": level, "demand": demand,
                    "history": f.summary().assign(first=lambda d: d["first"].dt.strftime("%Y-%m-%d"),
                                                  last=lambda d: d["last"].dt.strftime("%Y-%m-%d"))
                    .to_dict("records"),
                    "forecast": fcj.to_dict("records"),
                    "backtest": [] if bt is None else bt.to_dict("records")})
        return
    tab = Table(title=f"{days}-day forecast ({method}, {level:.0%} intervals; GPU-hours {demand})")
    for c in ("cluster", "type", "jobs/day", "jobs\ninterval", "GPU-h/day", "GPU-h\ninterval", "history\njobs/day"):
        tab.add_column(c, justify="right" if c not in ("cluster", "type") else "left", no_wrap=True)
    hist = f.summary().set_index(["cluster", "type", "metric"])
    for (cl, ty), g in fc.groupby(["cluster", "type"], sort=True):
        j, h = g[g["metric"] == "jobs"], g[g["metric"] == "gpu_hours"]
        tab.add_row(cl, ty, f"{j['forecast'].mean():,.1f}", f"{j['lower'].mean():,.1f}–{j['upper'].mean():,.1f}",
                    f"{h['forecast'].mean():,.0f}", f"{h['lower'].mean():,.0f}–{h['upper'].mean():,.0f}",
                    f"{hist.loc[(cl, ty, 'jobs'), 'mean_per_day']:,.1f}")
    console.print(tab)
    console.print("values are means over the forecast days of the daily median forecast and interval bounds")
    if bt is not None:
        p = bt.pivot_table(index="cell", columns=["metric", "model"], values="value")
        bt_tab = Table(title="rolling-origin backtest (7-day horizon): MAPE, WAPE and interval coverage")
        bt_tab.add_column("series", no_wrap=True)
        models = [method] + (["seasonal_naive"] if method != "seasonal_naive" else [])
        short = {"seasonal_naive": "snaive"}
        for k in ("MAPE", "WAPE", "cover"):
            for m in models:
                bt_tab.add_column(f"{k}\n{short.get(m, m)}", justify="right")
        for cell, r in p.iterrows():
            bt_tab.add_row(cell, *[f"{r[('mape', m)]:.2f}" for m in models],
                           *[f"{r[('wape', m)]:.2f}" for m in models],
                           *[f"{r[('coverage', m)]:.2f}" for m in models])
        console.print(bt_tab)
