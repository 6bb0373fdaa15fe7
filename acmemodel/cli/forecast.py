"""``acmemodel forecast``: daily job counts and GPU-hours per cluster × type (from a trace), or one plain
daily series (CSV ``date,value``), N days ahead, with the backtest that chose the method."""
from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from acmemodel.cli._app import app, print_json
from acmemodel.cli._common import CLUSTER, TRACE_PATHS, check_trace_span, console, load_traces
from acmemodel.cli._fmt import num, progress, table

_SHORT = {"seasonal_naive": "snaive", "window_average": "win7", "weekday_mean": "wkday", "weekday_median": "wkmed",
          "auto": "auto", "ensemble": "ens", "combo": "combo", "ets": "ets", "arima": "arima", "theta": "theta",
          "mstl": "mstl", "naive": "naive", "glm": "glm"}
#: column names of a plain daily series (first: dates, second: values), case-insensitive
_SERIES_COLUMNS = (("date", "value"), ("ds", "y"))


def _series_header(path: Path) -> tuple[str, str] | None:
    """The (date, value) column names when the file's header names a plain daily series, else None."""
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            head = fh.readline()
    except OSError:
        return None
    cols = [c.strip().strip('"').lower() for c in head.strip().split(",")]
    for d, v in _SERIES_COLUMNS:
        if d in cols and v in cols:
            return d, v
    return None


def read_daily_series(path: Path):
    """Read a CSV ``date,value`` (or ``ds,y``) → ``(dates, values, quarantine)``. Rows whose date or
    value cannot be read, negative values and repeated dates are quarantined (reason → count); days
    missing between the first and last date are filled by linear interpolation (counted as
    ``filled``). Raises ValueError naming the file, column or row when nothing usable remains."""
    import numpy as np
    import pandas as pd

    names = _series_header(path)
    if names is None:
        raise ValueError(f"{path}: a plain daily series needs the columns 'date,value' (or 'ds,y')")
    df = pd.read_csv(path, dtype=str, keep_default_na=False)
    df.columns = [c.strip().lower() for c in df.columns]
    dcol, vcol = names
    q: dict[str, int] = {}
    d = pd.to_datetime(df[dcol].str.strip(), errors="coerce", format="mixed")
    v = pd.to_numeric(df[vcol].str.strip(), errors="coerce")
    bad_d, bad_v = d.isna(), v.isna() & ~d.isna()
    neg = (v < 0) & ~bad_d
    for reason, m in ((f"unreadable {dcol}", bad_d), (f"unreadable {vcol}", bad_v), (f"negative {vcol}", neg)):
        if m.any():
            q[reason] = int(m.sum())
    ok = ~(bad_d | bad_v | neg)
    if getattr(d.dt, "tz", None) is not None:
        d = d.dt.tz_localize(None)
    s = pd.DataFrame({"date": d[ok].dt.normalize(), "value": v[ok].astype(float)})
    dup = s["date"].duplicated()
    if dup.any():
        q[f"repeated {dcol} (first kept)"] = int(dup.sum())
    s = s[~dup].sort_values("date")
    if len(s) == 0:
        first = int(np.flatnonzero(~ok.to_numpy())[0]) + 2 if (~ok).any() else 2
        raise ValueError(f"{path}: no usable row (first bad row: line {first}, column '{dcol}' or '{vcol}')")
    full = pd.date_range(s["date"].iloc[0], s["date"].iloc[-1], freq="D")
    if len(full) > 36600:
        raise ValueError(f"{path}: column '{dcol}' spans {len(full):,} days (more than 100 years)")
    s = s.set_index("date").reindex(full)
    miss = int(s["value"].isna().sum())
    if miss:
        q["filled (missing day, interpolated)"] = miss
        s["value"] = s["value"].interpolate(limit_direction="both")
    return full, s["value"].to_numpy(dtype=float), q


@app.command("forecast")
def forecast_cmd(
    paths: Optional[List[Path]] = TRACE_PATHS,
    days: int = typer.Option(30, "--days", help="Days to forecast after the last full day of the history."),
    method: str = typer.Option("auto", "--method",
                               help="auto (per series: a naive baseline unless a model, the ensemble or the "
                                    "combination beats it in the time-honest backtest) | ensemble | combo | ets | arima | theta | mstl | seasonal_naive | "
                                    "naive | window_average | weekday_mean | weekday_median | glm"),
    level: float = typer.Option(0.9, "--level", help="Prediction-interval level."),
    demand: str = typer.Option("running", "--demand",
                               help="GPU-hours: 'running' (held per day) or 'submitted' (by submit day)."),
    cluster: Optional[str] = CLUSTER,
    gpus: Optional[int] = typer.Option(None, "--gpus",
                                       help="Cluster size bounding GPU-hours/day (default: the size in the "
                                            "trace's cluster description, else the trace's peak GPUs in use, "
                                            "said so)."),
    types: Optional[str] = typer.Option(None, "--type", help="Comma-separated types (default: all + ALL)."),
    series: bool = typer.Option(False, "--series",
                                help="The file is one plain daily series, CSV 'date,value' (detected from "
                                     "its header when not given)."),
    weeks: int = typer.Option(8, "--weeks", help="Weekly backtest origins (the latest ones)."),
    backtest: bool = typer.Option(True, "--backtest/--no-backtest",
                                  help="Report the rolling-origin backtest (1 day and 4 weeks ahead)."),
    json_out: bool = typer.Option(False, "--json",
                                  help="Print JSON: forecast rows, backtest rows {model, metric, cell, horizon, "
                                       "value}, choices and verdicts."),
) -> None:
    """Forecast daily jobs and GPU-hours per type (or one plain daily series) with prediction intervals.
    'auto' picks, per series, among statsforecast's ETS, Theta, MSTL, the naive baselines and the mean
    of the best three, by a rolling-origin backtest where every forecast uses only earlier data;
    intervals are calibrated on held-out origins; the types sum to the total."""
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
    if not 1 <= weeks <= 520:
        raise ValueError(f"--weeks must be in 1..520, got {weeks}")
    if not 0 < level < 1:
        raise ValueError(f"--level must be in (0, 1), got {level}")
    paths = list(paths or [])
    is_series = series or (len(paths) == 1 and paths[0].suffix.lower() == ".csv" and paths[0].is_file()
                           and _series_header(paths[0]) is not None)
    quarantine: dict[str, int] = {}
    unknown: set = set()
    if is_series:
        if len(paths) != 1:
            raise ValueError("--series takes exactly one CSV file 'date,value'")
        if not paths[0].is_file():
            raise ValueError(f"{paths[0]}: no such file")
        dates, values, quarantine = read_daily_series(paths[0])
        f = DemandForecaster(method=method, level=level, demand=demand, weeks=weeks)
        type_sel = None
    else:
        trace = load_traces(paths, cluster)
        check_trace_span(trace, "forecast")
        capacity, unknown = _capacity(trace, gpus)
        f = DemandForecaster(method=method, level=level, demand=demand, capacity=capacity, weeks=weeks)
        type_sel = [t.strip() for t in types.split(",")] if types else None
    with warnings.catch_warnings(), progress("selecting a forecaster per series", enabled=not json_out) as upd:
        warnings.simplefilter("ignore")
        if is_series:
            f.fit_series(dates, values, name=paths[0].stem, progress=upd)
        else:
            f.fit(trace, progress=upd)
            if gpus is None:  # (the bound came from the trace's own cluster description, not the command line)
                f.capacity_source_.update({c: "cluster description" for c in (capacity or {})})
        fc = f.forecast(days, type=type_sel)
        note = f.backtest_note() if backtest else None
        bt = f.backtest(type=type_sel) if backtest else None
    summ = f.summary()
    verdicts = _verdicts(f) if backtest else {}
    if json_out:
        fcj = fc.assign(date=fc["date"].dt.strftime("%Y-%m-%d"))
        print_json({"days": days, "method": method, "level": level, "demand": None if is_series else demand,
                    "input": "series" if is_series else "trace", "quarantine": quarantine,
                    "history": summ.assign(first=lambda d: d["first"].dt.strftime("%Y-%m-%d"),
                                           last=lambda d: d["last"].dt.strftime("%Y-%m-%d"))
                    .to_dict("records"),
                    "capacity": {c: {"gpus": f.capacity_[c], "source": f.capacity_source_[c],
                                     "cluster_size_known": c not in unknown,
                                     "gpu_hours_per_day": f.bound(c, "gpu_hours"),
                                     "jobs_per_day": f.bound(c, "jobs")} for c in f.capacity_},
                    "choice": dict(f.choice_), "members": dict(f.members_), "interval": dict(f.interval_),
                    "verdict": verdicts,
                    "forecast": fcj.to_dict("records"),
                    "backtest": [] if bt is None else bt.to_dict("records"),
                    "backtest_note": note})
        return
    if quarantine:
        console.print("rows set aside: " + ", ".join(f"{k}: {num(v)}" for k, v in quarantine.items()),
                      highlight=False)
    _print_forecast(f, fc, summ, days, level, demand, is_series)
    for cl in sorted(unknown):
        console.print(f"note: the size of cluster {cl} is unknown (not in its description; pass --gpus, or "
                      f"convert --gpus); running GPU-hours are bounded by the trace's peak of "
                      f"{num(f.capacity_.get(cl, 0))} GPUs in use, a lower bound of the size",
                      markup=False, highlight=False)
    if note is not None:
        console.print(note, highlight=False)
    if bt is not None and len(bt):
        _print_backtest(f, bt, method, verdicts, is_series)


def _verdicts(f) -> dict:
    from acmemodel.models.forecast_methods import verdict

    if f.selection_ is None:
        return {}
    out = {}
    for cell, g in f.selection_.groupby("cell", sort=True):
        out[cell] = {f"{h}d": verdict(g, h) for h in sorted(g["horizon"].unique())
                     if int(g[(g["horizon"] == h) & (g["method"] == "auto")]["windows"].iloc[0]) > 0}
    return out


def _capacity(trace, gpus: int | None) -> tuple[dict | None, set]:
    """Cluster → GPUs bounding the forecast: ``--gpus`` for every cluster, else each cluster's own
    description (``Trace.cluster_specs``); also the clusters whose size is unknown (bounded by the
    trace's peak in use, which the command says)."""
    names = [str(c) for c in trace.jobs["cluster"].astype(str).unique()]
    if gpus is not None:
        return {c: int(gpus) for c in names}, set()
    cap, unknown = {}, set()
    for c in names:
        spec = trace.cluster_specs.get(c)
        if spec is not None and spec.gpus is not None:
            cap[c] = int(spec.gpus)
        else:
            unknown.add(c)
    return cap or None, unknown


def _print_forecast(f, fc, summ, days, level, demand, is_series) -> None:
    hist = summ.set_index(["cluster", "type", "metric"])
    for cl, gc in fc.groupby("cluster", sort=True):
        if is_series:
            tab = table(f"{cl}: {days}-day forecast, {level:.0%} intervals",
                        ["series", "mean/d", "interval", "hist mean/d", "last 7 d", "method"])
            g = gc
            tab.add_row(cl, num(g["forecast"].mean()), _iv(g), num(hist.loc[(cl, "ALL", "value"), "mean_per_day"]),
                        num(hist.loc[(cl, "ALL", "value"), "last7_mean"]), _short_method(g["method"].iloc[0]))
            console.print(tab)
            console.print("means over the forecast days of the daily median and bounds", highlight=False)
            continue
        src = f.capacity_source_[cl]
        bound = f.bound(cl, "gpu_hours")
        cap = (f"GPU-h/day bounded by {num(f.capacity_[cl])} GPUs × 24 h = {num(bound)} ({src})"
               if bound != float("inf") else "GPU-h/day not bounded (submitted demand)")
        tab = table(f"{cl}: {days}-day forecast, {level:.0%} intervals, GPU-hours {demand}",
                    ["type", "jobs/d", "interval", "GPU-h/d", "interval", "hist jobs/d", "methods"])
        for ty, g in gc.groupby("type", sort=True):
            j, h = g[g["metric"] == "jobs"], g[g["metric"] == "gpu_hours"]
            ms = "/".join(dict.fromkeys(_short_method(m) for m in (j["method"].iloc[0], h["method"].iloc[0])))
            tab.add_row(ty, num(j["forecast"].mean()), _iv(j), num(h["forecast"].mean()), _iv(h),
                        num(hist.loc[(cl, ty, "jobs"), "mean_per_day"]), ms)
        console.print(tab)
        console.print(f"means over the days of the daily median and bounds; methods: jobs/GPU-h (one name when both "
                      f"agree); {cap}; the types are reconciled to sum to ALL", highlight=False)


def _short_method(m: str) -> str:
    if m.startswith("combo("):
        return "combo"
    return _SHORT.get(m, m)


def _iv(g) -> str:
    return f"{num(g['lower'].mean(), 2)}–{num(g['upper'].mean(), 2)}"


def _fmt(v, se=None) -> str:
    if v is None or v != v:
        return "–"
    return f"{v:.3f}" if se is None or se != se else f"{v:.3f}±{se:.3f}"


def _print_backtest(f, bt, method, verdicts, is_series) -> None:
    """Per series of type ALL (every series of a plain one): each candidate's WAPE (± SE) and MASE at 1 day
    (rolling) and 4 weeks; then one line per series: the choice and the verdict against the baselines."""
    p = bt.pivot_table(index=["cell", "model"], columns=["metric", "horizon"], values="value", dropna=False,
                       sort=False)
    cells = list(dict.fromkeys(bt["cell"]))
    show = [c for c in cells if is_series or c.split("/")[1] == "ALL"]
    for cell in show:
        sub = p.loc[cell]
        hz = sorted({h for (_, h) in sub.columns})
        cols = ["model"]
        for h in hz:
            lab = "1 d" if h == 1 else f"{h // 7} wk"
            cols += [f"WAPE {lab}", f"MASE {lab}"]
        cols += ["cover"]
        tab = table(f"{cell}: time-honest backtest", cols)
        for model, r in sub.iterrows():
            vals = []
            for h in hz:
                vals += [_fmt(r.get(("wape", h)), r.get(("wape_se", h))), _fmt(r.get(("mase", h)))]
            cover = r.get(("coverage", hz[-1]))
            tab.add_row(_SHORT.get(model, model), *vals, "–" if cover is None or cover != cover else f"{cover:.2f}")
        console.print(tab)
    console.print("WAPE = Σ|error| / Σ actual (± SE over windows), MASE < 1 beats last week's value; each forecast "
                  "uses only earlier data; auto and combo choose on windows that ended before theirs; cover = "
                  "share of days inside the interval (longest horizon)", highlight=False)
    if verdicts:
        tab = table("choice and verdict (auto against the naive baselines)", ["series", "choice", "1 day", "4 weeks"])
        for cell, v in verdicts.items():
            ch = f.choice_.get(cell, "–")
            tab.add_row(cell, _SHORT.get(ch, ch), v.get("1d", "–"), v.get("28d", "–"))
        console.print(tab)
    elif method != "auto":
        console.print(f"method {method} compared with the naive baselines above", highlight=False)
