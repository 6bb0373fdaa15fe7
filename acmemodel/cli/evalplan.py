"""``acmemodel evalplan [CONFIG]``: makespan of one checkpoint's evaluation batch, coupled vs decoupled."""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from acmemodel.cli._app import app, print_json
from acmemodel.cli._common import console


def _dur(s: float | None) -> str:
    """Seconds as a human duration (s below 2 min, min below 2 h, else h)."""
    if s is None:
        return "—"
    if s < 120:
        return f"{s:,.0f} s"
    if s < 7200:
        return f"{s / 60:,.1f} min"
    return f"{s / 3600:,.2f} h"


def _nodes_option(text: str | None) -> list[int] | None:
    if text is None:
        return None
    try:
        out = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise ValueError(f"--nodes must be a comma-separated list of positive integers, got {text!r}") from None
    if not out or any(n < 1 for n in out):
        raise ValueError(f"--nodes must be a comma-separated list of positive integers, got {text!r}")
    return out


#: at most this many node counts per plan, summing to at most :data:`MAX_NODE_SUM` nodes (the schedules
#: cost time in proportion to the nodes: about 0.15 ms of CPU per node and policy, so the limit is ~10 s)
MAX_NODE_COUNTS = 256
MAX_NODE_SUM = 50_000


def _check_nodes_work(nodes, where: str) -> None:
    """Refuse, before any scheduling, node counts whose schedules would take minutes."""
    nodes = list(dict.fromkeys(nodes or []))
    total = sum(int(x) for x in nodes)
    if len(nodes) > MAX_NODE_COUNTS or total > MAX_NODE_SUM:
        raise ValueError(f"{where}: {len(nodes):,} node counts summing to {total:,} nodes; plan at most "
                         f"{MAX_NODE_COUNTS:,} counts summing to at most {MAX_NODE_SUM:,} nodes at once")


@app.command("evalplan")
def evalplan_cmd(
    config: Optional[Path] = typer.Argument(
        None, help="Evaluation-batch configuration (.yaml/.toml; schema: acmemodel.planner.evalbatch.plan."
                   "EvalPlanConfig); default: the shipped 63-dataset batch of a 7B model."),
    nodes: Optional[str] = typer.Option(None, "--nodes", help="Node counts to plan, e.g. 1,2,4,8."),
    policy: Optional[str] = typer.Option(None, "--policy", help="coupled, decoupled or both."),
    datasets: Optional[Path] = typer.Option(
        None, "--datasets", help="CSV of per-dataset priors (dataset,preprocess_s,generate_s,metric_s)."),
    json_out: bool = typer.Option(False, "--json", help="Print the plan as JSON."),
    report: Optional[Path] = typer.Option(None, "--report", help="Write an HTML report with Gantt charts."),
) -> None:
    """Predict how long one checkpoint's evaluation batch takes on N nodes: makespan, speed-up of the
    decoupled policy, GPU-hours held vs used, GPU idle share, time to first and last result."""
    from acmemodel.planner.evalbatch.inputs import EvalBatch, check_nodes
    from acmemodel.planner.evalbatch.plan import EvalPlanConfig, EvalPlanner

    if report is not None and report.exists() and report.is_dir():
        raise ValueError(f"--report {report} is a directory")
    cfg = EvalPlanConfig.load(config) if config is not None else EvalPlanConfig.from_dict({})
    n = _nodes_option(nodes)
    if n is not None:
        cfg.nodes = [check_nodes(x) for x in n]
    _check_nodes_work(cfg.nodes, "--nodes" if n is not None else "nodes")
    if policy is not None:
        if policy not in ("coupled", "decoupled", "both"):
            raise ValueError(f"--policy must be coupled, decoupled or both, got {policy!r}")
        cfg.policy = policy
    if datasets is not None:
        cfg.batch = EvalBatch.from_csv(datasets)
    result = EvalPlanner().plan(cfg)
    doc = result.to_dict()
    if report is not None:
        doc["report"] = result.report(report)
    if json_out:
        print_json(doc)
        return
    _print_human(result, doc)


def _print_human(result, doc: dict) -> None:
    from rich.table import Table

    cfg = result.config
    hw = cfg.hardware
    console.print(f"[bold]Evaluation batch[/bold]: {len(cfg.batch):,} datasets ({cfg.batch.source}), "
                  f"{hw.model_size_gb:g} GB model, {hw.gpus_per_node} GPUs/node, storage "
                  f"{hw.storage_gbit_s:g} Gb/s per node")
    t = Table(show_edge=False, pad_edge=False)
    for c in ("nodes", "policy", "makespan", "speed-up", "first", "GPU-h held", "used", "idle"):
        t.add_column(c, justify="left" if c == "policy" else "right")
    for s in doc["schedules"]:
        sp = doc["speedup"].get(str(s["nodes"])) if s["policy"] == "decoupled" else None
        t.add_row(str(s["nodes"]), s["policy"], _dur(s["makespan_s"]), "—" if sp is None else f"{sp:.2f}×",
                  _dur(s["first_result_s"]), f"{s['gpu_hours_held']:,.1f}", f"{s['gpu_hours_used']:,.1f}",
                  f"{100 * s['gpu_idle_share']:.0f} %")
    console.print(t)
    console.print("first: time to the first result; held: GPU allocated to a trial; used: generation; "
                  "idle = 1 − used/held.")
    _print_overheads(cfg)
    if doc.get("report"):
        console.print(f"report: {doc['report']}")


def _print_overheads(cfg) -> None:
    """The stated cost parameters (:class:`EvalOverheads`), their values and where the defaults come from."""
    from rich.table import Table

    from acmemodel.planner.evalbatch.inputs import OVERHEAD_SOURCES, EvalOverheads

    ov, default = cfg.overheads, EvalOverheads()
    values = {"trial_startup_s": _dur(ov.trial_startup_s),
              "metric_threads": f"{ov.metric_threads:,} ({ov.metric_slots(cfg.hardware):,}/node)",
              "cpu_threads_per_node": f"{ov.cpu_threads_per_node:,}",
              "metric_queue_s": _dur(ov.metric_queue_s),
              "precursor_efficiency": f"{100 * ov.precursor_efficiency:.0f} % of link",
              "coupled_packing": ov.coupled_packing,
              "coupled_orders": f"{ov.coupled_orders:,}"}
    t = Table(show_edge=False, pad_edge=False, title="cost parameters (overheads:)", title_justify="left")
    for c in ("parameter", "value", "source of the default"):
        t.add_column(c, overflow="fold")
    for k, v in values.items():
        src = OVERHEAD_SOURCES[k] if getattr(ov, k) == getattr(default, k) else "set in the config"
        t.add_row(k, v, src)
    console.print(t)
