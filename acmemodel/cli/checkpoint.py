"""``acmemodel checkpoint``: optimal checkpoint interval of one run, compared with Young and Daly."""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from acmemodel.cli._app import app, print_json
from acmemodel.cli._common import console, identifiability_note, print_identifiability
from acmemodel.cli._fmt import num


@app.command("checkpoint")
def checkpoint_cmd(
    gpus: int = typer.Option(..., "--gpus", help="GPUs of the run."),
    ckpt_cost: Optional[str] = typer.Option(
        None, "--ckpt-cost", help="Blocking checkpoint cost, e.g. 60s (required unless --reliability publishes "
                                  "one)."),
    restart: Optional[str] = typer.Option(
        None, "--restart", help="Restart time after a failure, e.g. 20m (default with --bundle: the bundle's "
                                "restart model)."),
    mttf: Optional[str] = typer.Option(None, "--mttf", help="The job's mean time to failure at --gpus, e.g. 8h."),
    weibull_shape: Optional[float] = typer.Option(
        None, "--weibull-shape", help="Weibull failures with this shape and the same mean (default exponential)."),
    bundle: Optional[Path] = typer.Option(
        None, "--bundle", help="Fitted bundle: MTTF at --gpus and Weibull shape from its failure model "
                               "(default without --mttf: the embedded default bundle)."),
    work: str = typer.Option("30d", "--work", help="Failure-free compute of the run, e.g. 30d."),
    reliability: Optional[str] = typer.Option(
        None, "--reliability", help="Failure rate: acme-2023, meta-rsc1, meta-rsc2, llama3-405b or "
                                    "a preset file of 'convert --from failures' or a fitted bundle (sets MTTF at --gpus and, where published, restart and checkpoint cost)."),
    json_out: bool = typer.Option(False, "--json", help="Print the result as JSON."),
) -> None:
    """Recommended checkpoint interval, expected overhead, ETTR and GPU-hours lost per day.

    Model: renewal reward; exponential failures give Daly's complete model
    E[T] = M e^(R/M) (e^((τ+C)/M) − 1) W/τ, Weibull failures are summed numerically. The interval
    minimises E[T]; Young's √(2CM) and Daly's higher-order estimate are shown for comparison.
    """
    # Light modules only (no pandas, no scipy.stats): the explicit --mttf optimum starts in about the
    # time of `import numpy`; the planner (and the bundle's models) is imported where a bundle or a
    # preset is used (benchmarks/bench_startup.py).
    from acmemodel.planner.config_fields import parse_duration
    from acmemodel.planner.energy import PowerModel
    from acmemodel.planner.reliability import get_preset
    from acmemodel.planner.run.checkpoint import optimal_interval
    from acmemodel.planner.run.processes import RestartTime, make_failure_process

    if gpus < 1:
        raise ValueError(f"--gpus must be a positive integer, got {gpus}")
    preset = None if reliability is None else get_preset(reliability, "--reliability")
    if preset is not None and (mttf is not None or weibull_shape is not None):
        raise ValueError("--reliability sets the failure rate: do not combine it with --mttf/--weibull-shape")
    if ckpt_cost is None:
        if preset is None or preset.ckpt_cost_s is None:
            raise ValueError("--ckpt-cost is required (e.g. --ckpt-cost 60s)"
                             + ("" if preset is None else f"; preset {preset.name} publishes none"))
        ckpt_cost = preset.ckpt_cost_s
    C = parse_duration(ckpt_cost, "--ckpt-cost")
    W = parse_duration(work, "--work")
    R = None if restart is None else parse_duration(restart, "--restart", allow_zero=True)
    if mttf is not None and bundle is not None:
        raise ValueError("give either --mttf (with optional --weibull-shape) or --bundle, not both")
    if weibull_shape is not None and mttf is None:
        raise ValueError("--weibull-shape needs --mttf (with --bundle the shape comes from its failure model)")
    if mttf is not None:
        if R is None:
            raise ValueError("--restart is required with --mttf (e.g. --restart 20m)")
        M = parse_duration(mttf, "--mttf")
        fail = make_failure_process(M, weibull_shape)
        res = optimal_interval(work=W, ckpt_cost=C, failure=fail, restart=RestartTime.fixed(R))
        source = "mttf"
        restart_desc = RestartTime.fixed(R).describe()
    else:
        from acmemodel.planner.config import Assumptions, FailureSpec, RestartSpec
        from acmemodel.planner.planner import Planner

        # acme-2023 is the default bundle's fitted failure model, whichever bundle is given
        planner = Planner(None if preset is not None and preset.uses_bundle else bundle)
        assumptions = Assumptions(
            failures=FailureSpec() if preset is None else FailureSpec(reliability=preset.name, preset=preset),
            restart=RestartSpec(time_s=R))
        fail = planner.failure_process(gpus, assumptions)
        res = planner.checkpoint(gpus, ckpt_cost=C, work=W, config=assumptions)
        source = f"bundle {bundle}" if bundle is not None else "default bundle"
        if preset is not None:
            source = f"reliability preset {preset.name} ({preset.source})"
        restart_desc = planner.failure_mix(gpus, assumptions).restart_distribution().describe() if R is None \
            else RestartTime.fixed(R).describe()
        restart_desc = {"mean_s": restart_desc.get("mean_s"), "kind": restart_desc.get("kind")}
    doc = res.to_dict(gpus)
    doc["failure_process"] = fail.describe()
    doc["restart"] = restart_desc
    doc["source"] = source
    power = PowerModel()
    if doc.get("gpu_hours_lost_per_day") is not None:
        doc["energy_lost_per_day"] = power.price(doc["gpu_hours_lost_per_day"])
    doc["power_model"] = power.to_dict()
    note = None if mttf is not None else identifiability_note(planner.bundle)
    if note:
        doc["identifiability"] = note
    if json_out:
        print_json(doc)
        return
    _print_human(doc)
    print_identifiability(note)


def _print_human(d: dict) -> None:
    from acmemodel.cli._fmt import dur, table

    console.print(f"[bold]Checkpoint plan[/bold] for {num(d['gpus'])} GPUs, {dur(d['work_s'], 3)} of work "
                  f"({d['source']})", highlight=False)
    console.print(f"job MTTF {dur(d['mttf_s'], 3)} ({d['failure_process']['family']}), checkpoint cost "
                  f"{dur(d['ckpt_cost_s'])}, mean restart {dur(d['restart_mean_s'])}", highlight=False)
    if not d["finishes"]:
        console.print(f"[red]Does not finish:[/red] {d['reason']}")
        return
    run = d["gpu_hours_lost_run"]
    t = table(None, ["", "value"], right=set())
    t.show_header = False
    t.add_row("recommended interval", f"{dur(d['interval_s'], 3)} of work between checkpoints")
    t.add_row("expected wall time", f"{dur(d['expected_wall_time_s'], 4)} (overhead "
                                    f"{100 * d['overhead_fraction']:.2f} % of the work)")
    t.add_row("ETTR", f"{d['ettr']:.4f}")
    t.add_row("GPU-h lost per day", f"{num(d['gpu_hours_lost_per_day'])} = failures "
                                    f"{num(d['gpu_hours_lost_per_day_failures'])} + checkpoints "
                                    f"{num(d['gpu_hours_lost_per_day_checkpoint'])}")
    t.add_row("GPU-h lost, whole run", f"{num(run['total'])} = failures {num(run['failures'])} + "
                                       f"checkpoints {num(run['checkpoint'])}")
    e = d.get("energy_lost_per_day") or {}
    if e.get("kwh") is not None:
        t.add_row("energy lost per day", f"{num(e['kwh'])} kWh, {num(e['tco2e'])} tCO₂e "
                                         f"({d['power_model']['kwh_per_gpu_hour']:.3f} kWh per busy GPU-h, "
                                         f"PUE {d['power_model']['pue']:g})")
    console.print(t)
    c = table("Interval comparison", ["rule", "interval", "expected wall time", "vs optimal"])
    for name, tau, et in (("optimal", d["interval_s"], d["expected_wall_time_s"]),
                          ("Young √(2CM)", d["young_interval_s"], d["young_expected_wall_time_s"]),
                          ("Daly higher-order", d["daly_interval_s"], d["daly_expected_wall_time_s"])):
        rel = "" if et is None or name == "optimal" else f"+{(et / d['expected_wall_time_s'] - 1) * 100:.3f} %"
        c.add_row(name, dur(tau, 4), "–" if et is None else dur(et, 5), rel)
    console.print(c)
    console.print("failures = work re-done after failures + restart time; checkpoints = the blocking cost of "
                  "the W/τ checkpoints", highlight=False)
