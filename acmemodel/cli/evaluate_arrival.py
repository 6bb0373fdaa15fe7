"""``acmemodel evaluate arrival``: the arrival model card — the held-out month's counts against the
training mean rate and the seasonal naive (paired differences ± SE, verdicts, forecast interval coverage)."""
from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from acmemodel.cli._app import evaluate_app, print_json
from acmemodel.cli._common import SEED_MAX, CLUSTER, TRACE_PATHS, check_trace_span, console, load_traces


@evaluate_app.command("arrival")
def evaluate_arrival_cmd(
    paths: Optional[List[Path]] = TRACE_PATHS,
    test_days: float = typer.Option(30.0, "--test-days", help="Held-out days at the end of each cluster."),
    seed: int = typer.Option(0, "--seed", min=0, max=SEED_MAX, help="Seed of the sampled held-out window."),
    cluster: Optional[str] = CLUSTER,
    no_forecast: bool = typer.Option(False, "--no-forecast", help="Skip the forecast metrics."),
    json_out: bool = typer.Option(False, "--json", help="Print JSON: the card {comparisons, intervals}, "
                                  "split info and results [{model, metric, cell, value}]."),
    detail: bool = typer.Option(False, "--detail", help="Also print the sample-based tables (KS, profiles, "
                                "dispersion) and the forecast errors per series."),
) -> None:
    """The arrival model card: fit on all but the last month, score the held-out month. The model's
    expected jobs per hour and per day against the training mean rate and the seasonal naive (last
    training week): Poisson log score and absolute errors, the paired gain ± its standard error and the
    verdict ("use the baseline" when it wins); the ETS demand forecast against the seasonal naive; the
    coverage of the forecasts' 90 % intervals. --detail adds KS of inter-arrival times and batch sizes,
    profile errors and dispersion (observed vs sampled) against a homogeneous Poisson process."""
    from acmemodel.cli._fmt import CompactTable as Table

    from acmemodel.evaluation.arrival import evaluate_arrival, render_arrival_card
    from acmemodel.evaluation.card import json_safe

    trace = load_traces(paths, cluster)
    check_trace_span(trace, "evaluate arrival")
    res = evaluate_arrival(trace, test_days=test_days, seed=seed, forecast=not no_forecast)
    if json_out:
        print_json({"card": json_safe(res.attrs.get("card", {})), "split": res.attrs.get("split", {}),
                    "results": res.to_dict("records")})
        return
    console.print(render_arrival_card(res.attrs.get("card", {}), res.attrs.get("split")))
    console.print("gain > 0 favours the model; logscore: Poisson log-probability of the hour's count (nats); "
                  "errors in jobs (GPU-hours for GPU-h/d).")
    if not detail:
        return
    arr = res[~res["cell"].str.count("/").ge(2)]
    p = arr.pivot_table(index=["cell", "metric"], columns="model", values="value", sort=False)
    metrics = ["jobs", "ks_interarrival", "ks_batch_size", "hourly_profile_err", "weekly_profile_err",
               "dispersion_index", "count_ratio"]
    tab = Table(title="arrivals in the held-out window")
    for c, j in (("cell", "left"), ("metric", "left"), ("observed", "right"), ("compound\nNHPP", "right"),
                 ("homogeneous\nPoisson", "right")):
        tab.add_column(c, justify=j, no_wrap=True)

    def fmt(v, m):
        return "" if v != v else (f"{v:,.0f}" if m == "jobs" else f"{v:.3f}")

    cells = list(dict.fromkeys(arr["cell"]))
    for cell in cells:
        for i, m in enumerate(metrics):
            if (cell, m) not in p.index:
                continue
            r = p.loc[(cell, m)]
            tab.add_row(cell if i == 0 else "", m,
                        *[fmt(r.get(mod, float("nan")), m) for mod in ("observed", "compound_nhpp",
                                                                         "homogeneous_poisson")],
                        end_section=(m == metrics[-1]))
    console.print(tab)
    console.print("KS: two-sample KS distance (lower is better); profile errors: Σ|obs − model| / Σ obs of "
                  "mean jobs per local hour / weekday; count_ratio: expected / observed jobs.")
    fc = res[res["cell"].str.count("/").ge(2)]
    if len(fc):
        q = fc.pivot_table(index="cell", columns=["metric", "model"], values="value", sort=False)
        ft = Table(title="forecast of the held-out days (90 % intervals)")
        ft.add_column("series", no_wrap=True)
        for c in ("MAPE\nets", "MAPE\nsnaive", "WAPE\nets", "WAPE\nsnaive", "cover\nets", "cover\nsnaive"):
            ft.add_column(c, justify="right")
        for cell, r in q.iterrows():
            ft.add_row(cell, *[f"{r[(m, mod)]:.2f}" for m in ("mape", "wape", "coverage")
                               for mod in ("ets", "seasonal_naive")])
        console.print(ft)
    for cl, s in res.attrs.get("split", {}).items():
        console.print(f"{cl}: cutoff {s['cutoff_utc']}, {s['train_jobs']:,} train / {s['test_jobs']:,} test jobs")
