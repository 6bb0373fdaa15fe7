"""``acmemodel plan CONFIG``: completion time, failure-weighted GPU-time loss and quotas for a cluster config."""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from acmemodel.cli._app import app, print_json
from acmemodel.cli._common import console, identifiability_note, print_identifiability


@app.command("plan")
def plan_cmd(
    config: Optional[Path] = typer.Argument(
        None, help="Cluster configuration (.yaml/.yml/.toml); default: the shipped example "
                   "(acmemodel/planner/examples/example.yaml)."),
    bundle: Optional[Path] = typer.Option(
        None, "--bundle", help="Fitted bundle (default: the embedded default bundle)."),
    report: Optional[Path] = typer.Option(None, "--report", help="Write an HTML report with plots here."),
    replicas: Optional[int] = typer.Option(None, "--replicas", help="Override simulation.replicas."),
    no_cluster: bool = typer.Option(False, "--no-cluster", help="Skip the cluster simulation and quota search."),
    json_out: bool = typer.Option(False, "--json", help="Print the plan as JSON."),
) -> None:
    """For each pretraining run: checkpoint interval, completion time (mean, p50, p90), expected failures,
    ETTR and GPU-time loss by cause and failure type; for the cluster: queue delays per job type and the
    recommended quotas."""
    from acmemodel.planner.config import ClusterConfig
    from acmemodel.planner.planner import Planner

    if config is None:
        from importlib import resources

        config = Path(str(resources.files("acmemodel.planner").joinpath("examples", "example.yaml")))
    cfg = ClusterConfig.load(config)
    if replicas is not None:
        if replicas < 1:
            raise ValueError(f"--replicas must be a positive integer, got {replicas}")
        cfg.simulation.replicas = int(replicas)
    result = Planner(bundle).plan(cfg, cluster=not no_cluster)
    if report is not None:
        result.report(report)
    doc = result.to_dict()
    if report is not None:
        doc["report"] = str(report)
    note = _note(bundle)
    if note:
        doc["identifiability"] = note
    if json_out:
        print_json(doc)
        return
    _print_human(doc)
    print_identifiability(note)


def _note(bundle) -> str | None:
    """The identifiability line of the bundle's failure model (the default bundle when none)."""
    from acmemodel.errors import AcmeModelError
    from acmemodel.synth import resolve_bundle

    try:
        return identifiability_note(resolve_bundle(bundle))
    except (AcmeModelError, ValueError, OSError):  # the plan itself already used the bundle
        return None


def _print_human(d: dict) -> None:
    day = 86400.0
    console.print(f"[bold]Plan {d['name']}[/bold]")
    for r in d["runs"]:
        if not r["finishes"]:
            console.print(f"  {r['name']} ({r['gpus']} GPUs): [red]does not finish[/red]: {r['reason']}")
            continue
        ct, loss = r["completion_time_s"], r["gpu_time_loss_gpu_h"]
        top = sorted(loss["by_failure_type"].items(), key=lambda kv: -kv[1])[:3]
        console.print(
            f"  {r['name']} ({r['gpus']} GPUs, {r['work_s'] / day:.3g} d of work): checkpoint every "
            f"{r['checkpoint_interval_s'] / 60:.3g} min ({r['checkpoint_interval_source']}); completion "
            f"{ct['mean'] / day:.4g} d (p50 {ct['p50'] / day:.4g}, p90 {ct['p90'] / day:.4g}); "
            f"{r['expected_failures']:.3g} failures; ETTR {r['ettr']:.3f}")
        console.print(f"    GPU-time loss {loss['total']:.4g} GPU-h = lost work {loss['lost_work']:.4g} + restart "
                      f"{loss['restart']:.4g} + checkpoint {loss['checkpoint']:.4g}; top types: "
                      + ", ".join(f"{k} {v:.3g}" for k, v in top))
    cl = d["cluster"]
    if not cl.get("available", True):
        console.print(f"  cluster: not simulated ({cl.get('reason')})")
    else:
        for t, q in cl["queue_s"].items():
            p50 = "inf" if q["p50"] is None else f"{q['p50'] / 60:.3g} min"
            p90 = "inf" if q["p90"] is None else f"{q['p90'] / 60:.3g} min"
            console.print(f"  queue {t:<20} p50 {p50:>10}  p90 {p90:>10}  ({q['count']} jobs)")
        qs = cl.get("quota_search")
        if qs is not None and not qs["feasible"]:
            console.print(f"  [red]quota target not met[/red]: {qs['reason']}")
    console.print("  quotas: " + ", ".join(f"{k}={'auto' if v is None else v}" for k, v in cl["quotas"].items()))
    for ev in d.get("evaluation") or []:
        fb = ("" if ev["feedback_p50_s"] is None else
              f"; feedback delay (Eval wait + batch) p50 {ev['feedback_p50_s'] / 60:,.1f} min, "
              f"p90 {ev['feedback_p90_s'] / 60:,.1f} min")
        console.print(f"  evaluation batch ({ev['policy']}, {ev['nodes']} node(s)): makespan "
                      f"{ev['makespan_s'] / 60:,.1f} min{fb}")
    if d.get("report"):
        console.print(f"  report: {d['report']}")
