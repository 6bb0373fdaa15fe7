"""``acmemodel sweep CONFIG --grid GRID -o OUT.parquet``: a planner configuration over a grid of axes, on Dask."""
from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Optional

import typer

from acmemodel.cli._app import app, print_json
from acmemodel.cli._common import SEED_MAX, console
from acmemodel.cli._dask import close_client, dask_client

#: what a sweep's tasks import on a worker (the planner, the models, the workload sampler: about 1 s of CPU),
#: imported once in the process the local workers are forked from (:func:`acmemodel.cli._dask.dask_client`)
WORKER_MODULES = ("acmemodel.planner.sweep.runner", "acmemodel.synth")

@app.command("sweep")
def sweep_cmd(
    config: Path = typer.Argument(..., help="Planner configuration (.yaml/.yml/.toml), the base of every point."),
    grid: Path = typer.Option(..., "--grid", help="Grid of axes (YAML/TOML): axes: {NAME: {values: [...]} | "
                                                  "{range: {start, stop, num|step}}}."),
    out: Path = typer.Option(..., "-o", "--out", help="Output Parquet file (one row per point)."),
    plots: Optional[Path] = typer.Option(None, "--plots", help="Write heat maps and the Pareto front (PNG) here."),
    workers: Optional[int] = typer.Option(None, "--workers", help="Run on a local Dask cluster of N worker processes."),
    scheduler: Optional[str] = typer.Option(
        None, "--scheduler", help="Run on an existing Dask cluster: the scheduler address, e.g. tcp://host:8786."),
    resume: bool = typer.Option(False, "--resume", help="Keep the points already computed in OUT (and OUT.partial/)."),
    yes: bool = typer.Option(False, "--yes", help="Run grids of more than 1,000,000 points."),
    bundle: Optional[Path] = typer.Option(None, "--bundle", help="Fitted bundle (default: the embedded default)."),
    seed: Optional[int] = typer.Option(None, "--seed", min=0, max=SEED_MAX, help="Sweep seed (default: the grid's, else simulation.seed)."),
    reliability: Optional[str] = typer.Option(
        None, "--reliability", help="Failure rate of the base config: acme-2023, meta-rsc1, meta-rsc2, "
                                    "llama3-405b or a preset file of 'convert --from failures' or a fitted bundle (a grid axis failures.reliability varies it)."),
    json_out: bool = typer.Option(False, "--json", help="Print the summary as JSON."),
) -> None:
    """One row per grid point: completion time, failures, ETTR, GPU-hours lost by cause and failure
    category, checkpoint interval, Eval queue wait and quotas. Points run in-process, on a local Dask
    cluster (--workers) or an existing one (--scheduler); each point's seed comes from the sweep seed and
    the point, so the rows do not depend on where they ran."""
    from acmemodel.planner.sweep.runner import plan_sweep, sweep
    from acmemodel.planner.sweep.plots import plot_sweep

    if plots is not None and plots.exists() and not plots.is_dir():
        raise ValueError(f"--plots: {plots} is an existing file, not a directory")
    if out.exists() and out.is_dir():
        raise ValueError(f"-o/--out: {out} is a directory; give a .parquet file path")
    if seed is not None and seed < 0:
        raise ValueError(f"--seed must be >= 0, got {seed}")
    from acmemodel.planner.reliability import preset_spec

    reliability = preset_spec(reliability)
    plan = plan_sweep(config, grid, seed=seed, allow_large=yes, reliability=reliability)  # bad grid: one error line, before any work
    _check_workload_size(config, plan, bundle, reliability, yes)
    client, cluster = dask_client(workers, scheduler, trim_memory=False, preload=WORKER_MODULES)
    t0 = time.perf_counter()
    try:
        from acmemodel.synth import sample_workload

        df = sweep(config, grid, client=client, bundle=bundle, seed=seed, out=out, resume=resume,
                   progress=not json_out, allow_large=yes, sampler=sample_workload, reliability=reliability)
    except KeyboardInterrupt:
        sys.stderr.write(f"interrupted: finished points are in {out.name}.partial/; rerun with --resume\n")
        raise typer.Exit(130)
    finally:
        close_client(client, cluster)
    elapsed = time.perf_counter() - t0
    written = plot_sweep(df, df.attrs.get("acmemodel.sweep", {}), plots) if plots is not None else []
    n_ok = int((df["status"] == "ok").sum())
    errors = df.loc[df["status"] != "ok", ["point", "error"]]
    summary = {"out": str(out), "n_points": int(len(df)), "ok": n_ok, "errors": int(len(errors)),
               "axes": [a.name for a in plan["axes"]], "seed": plan["seed"], "elapsed_s": elapsed,
               "points_per_s": len(df) / elapsed if elapsed > 0 else None, "plots": written,
               "first_errors": errors.head(5).to_dict("records")}
    if json_out:
        print_json(summary)
        return
    _print_human(summary, df)


def _check_workload_size(config, plan, bundle, reliability, yes: bool) -> None:
    """Refuse, before any point runs, a grid whose largest workload (the largest replicas, days and scale
    of the axes and the base config) would not fit in memory: as ``plan`` checks one config
    (:mod:`acmemodel.limits`; ``--yes`` insists)."""
    from acmemodel.limits import BYTES_PER_JOB, check_memory, expected_jobs
    from acmemodel.planner.config import ClusterConfig

    cfg = ClusterConfig.load(config, reliability=reliability)
    wl = cfg.workload
    big = {"replicas": wl.replicas, "days": wl.days, "scale": wl.scale}
    for a in plan["axes"]:
        key = a.name.split(".", 1)[1] if a.name.startswith("workload.") else None
        if key in big:
            nums = [v for v in a.values if isinstance(v, (int, float)) and not isinstance(v, bool)]
            big[key] = max([big[key], *nums])
    if big["replicas"] <= 1 and big["days"] <= 366 and big["scale"] <= 10:
        return  # (small: no need to load the bundle for the estimate)
    try:
        from acmemodel.planner.planner import Planner
        from acmemodel.synth import resolve_bundle

        b = resolve_bundle(bundle)
        Planner(b)._check_config_against_bundle(cfg, cluster=True)  # (names workload.cluster: the bundle's own)
        arrival = b["arrival"]
        jobs = expected_jobs(arrival, wl.cluster, big["days"], big["scale"]) if wl.cluster in arrival.clusters_ \
            else 0.0
    except Exception:  # no arrival model: the points report it
        return
    from acmemodel.cli._fmt import num

    check_memory(f"the grid's largest workload ({big['replicas']:,} replica(s), {num(big['days'])} days, scale "
                 f"{num(big['scale'])})", jobs * big["replicas"] * 2 * BYTES_PER_JOB,
                 detail=f"about {jobs:,.0f} jobs per replica, held twice while simulated", yes=yes)


def _print_human(s: dict, df) -> None:
    from rich.table import Table

    from acmemodel.planner.sweep.plots import axis_text

    t = Table(title=f"sweep: {s['n_points']:,} points over {len(s['axes'])} axes", width=80)
    t.add_column("", overflow="fold")
    t.add_column("value", overflow="fold")
    t.add_row("output", s["out"])
    t.add_row("points ok / failed", f"{s['ok']:,} / {s['errors']:,}")
    t.add_row("time", f"{s['elapsed_s']:.1f} s ({s['points_per_s']:,.1f} points/s)")
    if "gpu_h_lost" in df.columns and s["ok"]:
        ok = df[df["status"] == "ok"]
        best = ok.loc[ok["gpu_h_lost"].astype(float).idxmin()]
        t.add_row("least GPU-h lost", f"{best['gpu_h_lost']:,.0f} GPU-h at "
                  + ", ".join(f"{a}={axis_text(best[a], a)}" for a in s["axes"]))
    for e in s["first_errors"][:3]:
        t.add_row(f"point {e['point']} failed", str(e["error"]))
    for p in s["plots"]:
        t.add_row("plot", p)
    console.print(t)
