"""``acmemodel evaluate runtime``: the model card of a trace — a time-ordered backtest of the run-time,
predictor and queue models against their baselines (paired differences ± SE, verdicts, coverage)."""
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
    detail: bool = typer.Option(False, "--detail", help="Also print every metric of every model (pooled)."),
    no_queue: bool = typer.Option(False, "--no-queue", help="Skip the queueing-delay models."),
) -> None:
    """The model card of a trace: fit on the earlier jobs, score the later ones. One table per model
    (RuntimeModel, RuntimePredictor, QueueModel) against its baselines (global law, cell and user
    running medians): the paired per-job gain ± its standard error and the verdict ("use the
    baseline" when it wins, "tie within one SE"), then the coverage of every p10–p90 interval."""
    from acmemodel.evaluation.backtest import render_runtime_card, runtime_backtest

    check_holdout(test_fraction, cutoff, min_cell_jobs)
    trace = load_traces(paths, cluster)
    res = runtime_backtest(trace, test_fraction=test_fraction, cutoff=cutoff, min_cell_jobs=min_cell_jobs,
                           include_queue=not no_queue)
    if json_out:
        print_json(res.to_json())
        return
    console.print(render_runtime_card(res.card, res.info))
    verdict = res.info.get("predictor_vs_best_baseline", {})
    if verdict.get("text"):
        console.print(("" if verdict.get("beats") else "[bold]") + verdict["text"]
                      + ("" if verdict.get("beats") else "[/bold]"), markup=True)
    if res.info.get("predictor_error"):
        console.print(f"RuntimePredictor not scored: {res.info['predictor_error']}")
    choice = res.info.get("predictor_choice")
    if choice:
        console.print(f"The predictor's point prediction is {choice!r}, chosen on its calibration windows "
                      "(earlier data only).")
    if detail or per_cell:
        console.print(res.table("all"))
    if per_cell:
        for cell in dict.fromkeys(res.results.cell):
            if cell != "all":
                console.print(res.table(cell))
    console.print("gain > 0 favours the model; log-seconds = ln(1 + run s); loglik in nats per job.")
    for k, what in (("n_train_left_truncated_excluded", "left-truncated training jobs left out of the "
                     "run-time fit (begun before the trace: age unknown)"),):
        if res.info.get(k):
            console.print(f"{res.info[k]:,} {what}")
    if res.info.get("queue_skipped"):
        console.print(f"queue models not evaluated: {res.info['queue_skipped']}", markup=False)
