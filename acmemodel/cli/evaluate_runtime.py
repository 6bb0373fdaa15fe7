"""``acmemodel evaluate runtime``: time-ordered backtest of the run-time models against baselines."""
from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from acmemodel.cli._app import evaluate_app, print_json
from acmemodel.cli._common import CLUSTER, CUTOFF, TEST_FRACTION, TRACE_PATHS, check_holdout, console, load_traces


@evaluate_app.command("runtime")
def evaluate_runtime_cmd(
    paths: Optional[List[Path]] = TRACE_PATHS,
    json_out: bool = typer.Option(False, "--json",
                                  help="Print JSON: results [{model, metric, cell, value, n}] and info."),
    test_fraction: Optional[float] = TEST_FRACTION,
    cutoff: Optional[str] = CUTOFF,
    cluster: Optional[str] = CLUSTER,
    min_cell_jobs: int = typer.Option(30, "--min-cell-jobs",
                                      help="Report a cluster/type cell from this many test jobs."),
    per_cell: bool = typer.Option(False, "--per-cell", help="Also print one table per cluster/type cell."),
    no_queue: bool = typer.Option(False, "--no-queue", help="Skip the queueing-delay models."),
) -> None:
    """Fit on the earlier jobs, score the later ones: RuntimeModel, RuntimePredictor (p10/p50/p90) and
    QueueModel against the global, per-cell-median and user-median baselines (pooled cell "all")."""
    from acmemodel.evaluation.backtest import runtime_backtest

    check_holdout(test_fraction, cutoff, min_cell_jobs)
    trace = load_traces(paths, cluster)
    res = runtime_backtest(trace, test_fraction=test_fraction, cutoff=cutoff, min_cell_jobs=min_cell_jobs,
                           include_queue=not no_queue)
    if json_out:
        print_json(res.to_json())
        return
    verdict = res.info.get("predictor_vs_best_baseline", {})
    if verdict.get("text"):
        console.print(("" if verdict.get("beats") else "[bold]") + verdict["text"]
                      + ("" if verdict.get("beats") else "[/bold]"), markup=True)
    console.print(res.table("all"))
    if per_cell:
        for cell in dict.fromkeys(res.results.cell):
            if cell != "all":
                console.print(res.table(cell))
    console.print(f"split at {res.info['cutoff_utc']}; log-seconds = ln(1 + run s); coverage of the "
                  "p10–p90 interval should be ≈ 0.8; bold = best per metric.")
    for k, what in (("n_train_left_truncated_excluded", "left-truncated training jobs left out of the "
                     "run-time fit (begun before the trace: age unknown)"),):
        if res.info.get(k):
            console.print(f"{res.info[k]:,} {what}")
    if res.info.get("queue_skipped"):
        console.print(f"queue models not evaluated: {res.info['queue_skipped']}", markup=False)
