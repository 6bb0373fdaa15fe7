"""``acmemodel synth``: a synthetic workload of one cluster, as an AcmeTrace file (exact schema) or in
a cluster simulator's input format (``--format swf|helios|philly|batsim``, via :mod:`acmemodel.export`)."""
from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Optional

import typer

from acmemodel.cli._app import app, print_json
from acmemodel.cli._common import SEED_MAX, bundle_cluster, check_output_not_input, console, counted_backoffs
from acmemodel.cli.export import Fmt


#: output formats of ``acmemodel synth``: those of ``acmemodel export`` (airesim: the bundle's failure and
#: restart models as AIReSim parameters, the synthetic job sizes choosing the simulated job)
SynthFormat = Enum("SynthFormat", [(f.name, f.value) for f in Fmt], type=str)


def parse_mix(text: str | None) -> dict[str, float] | None:
    """``"Eval=0.7,Pretrain=0.05"`` → ``{"Eval": 0.7, "Pretrain": 0.05}`` (ValueError naming --mix)."""
    if text is None or not text.strip():
        return None
    out: dict[str, float] = {}
    for part in text.split(","):
        name, sep, val = part.partition("=")
        name = name.strip()
        try:
            if not sep or not name:
                raise ValueError
            out[name] = float(val)
        except ValueError:
            raise ValueError(f"--mix: cannot read {part.strip()!r}; use TYPE=SHARE[,TYPE=SHARE...], "
                             "e.g. Eval=0.7,Pretrain=0.05") from None
    return out


@app.command("synth")
def synth_cmd(
    out: Path = typer.Option(..., "-o", "--output", help="acmetrace: the CSV file to write (.csv or .csv.gz); "
                             "other formats: the output directory (created)."),
    fmt: SynthFormat = typer.Option(SynthFormat.acmetrace, "--format", "-f", metavar="FORMAT",
                                    show_choices=False, help="acmetrace (default): one AcmeTrace CSV; swf, helios, philly, batsim, "
                                         "airesim: simulator inputs as written by `acmemodel export` (restart "
                                         "chains encoded; helios in the bundle's calibrated partitions)."),
    bundle: Optional[Path] = typer.Option(
        None, "--bundle", help="Fitted bundle (acmemodel fit); default: the embedded default bundle."),
    days: float = typer.Option(30.0, "--days", help="Length of the synthetic trace in days."),
    cluster: Optional[str] = typer.Option(None, "--cluster", help="Cluster of the bundle whose models to use "
                                          "(default: the bundle's only cluster; the default bundle: Seren)."),
    seed: int = typer.Option(0, "--seed", min=0, max=SEED_MAX, help="Random seed (same seed, same file)."),
    scale: float = typer.Option(1.0, "--scale", help="Multiply every arrival intensity."),
    mix: Optional[str] = typer.Option(None, "--mix", help="Job-share override, e.g. Eval=0.7,Pretrain=0.05 "
                                                          "(unlisted types share the rest)."),
    gpu_scale: float = typer.Option(1.0, "--gpu-scale", help="Multiply GPU requests (whole nodes above 8)."),
    start: Optional[str] = typer.Option(None, "--start", help="First day, local time (default 2023-03-01)."),
    restart_prob: Optional[float] = typer.Option(
        None, "--restart-prob",
        help="Probability a failed Pretrain job is resubmitted (default: the bundle's restart model, "
             "per cluster x type)."),
    queue: str = typer.Option("none", "--queue",
                              help="none: every job starts at submission; sim: waits from the cluster simulator "
                                   "(the bundle's calibrated policy and start-up latency when it has one)."),
    gpus: Optional[int] = typer.Option(None, "--gpus", help="Cluster GPUs for --queue sim, and the cluster size "
                                       "written by swf (MaxProcs, MaxNodes), batsim (nb_res) and helios "
                                       "(vc_config nodes); default: the size in the bundle's description of "
                                       "the cluster."),
    rebase_to: Optional[str] = typer.Option(
        None, "--rebase-to", help="helios: the simulators' experiment window the jobs are placed in (Sept, "
                                  "July, or e.g. Venus_Sept; default Sept: synthetic dates are arbitrary)."),
    batsim_profile: Optional[str] = typer.Option(
        None, "--batsim-profile", help="batsim: delay-profile type name, 'delay' (Batsim 1.3-4.x, default) or "
                                       "'DelayProfile' (Batsim >= 5)."),
    json_out: bool = typer.Option(False, "--json", help="Print a JSON summary of what was written."),
    yes: bool = typer.Option(False, "--yes", help="Run even when the estimated memory exceeds half of "
                                                  "this machine's memory."),
) -> None:
    """Generate arrivals, GPU counts, (state, run time) and Pretrain restart chains from a bundle and
    write them as an AcmeTrace file (default) or, with --format, in a simulator's input format.
    Queueing is not simulated by default (every job starts at submission); --queue sim replays the
    jobs on the cluster simulator: with the policy the bundle calibrated for the cluster (pretraining
    reservation, Eval last, best effort, start-up latency; as `acmemodel reproduce`), else FIFO + EASY
    backfill on one partition."""
    import time

    import numpy as np

    from acmemodel.synth import (cluster_queue, resolve_bundle, simulate_jobs, to_acmetrace, trace_file_kind,
                                 write_acmetrace)

    if not (days > 0):
        raise ValueError(f"--days must be > 0, got {days}")
    if not (scale >= 0):
        raise ValueError(f"--scale must be >= 0, got {scale}")
    if not (gpu_scale > 0):
        raise ValueError(f"--gpu-scale must be > 0, got {gpu_scale}")
    if queue not in ("none", "sim"):
        raise ValueError(f"--queue must be 'none' or 'sim', got {queue!r}")
    if gpus is not None and gpus <= 0:
        raise ValueError(f"--gpus must be > 0, got {gpus}")
    from acmemodel.planner.config_fields import MAX_CLUSTER_GPUS

    if gpus is not None and gpus > MAX_CLUSTER_GPUS:
        raise ValueError(f"--gpus must be at most {MAX_CLUSTER_GPUS:,}, got {gpus:,}")
    if gpus is not None and queue == "sim" and gpus % 8:
        raise ValueError(f"--gpus must be a multiple of 8 (GPUs per node) for --queue sim, got {gpus:,}")
    if rebase_to is not None and fmt.value != "helios":
        raise ValueError("--rebase-to is used by --format helios only")
    if batsim_profile is not None and fmt.value != "batsim":
        raise ValueError("--batsim-profile is used by --format batsim only")
    if batsim_profile is not None and batsim_profile not in ("delay", "DelayProfile"):
        raise ValueError(f"--batsim-profile must be 'delay' or 'DelayProfile', got {batsim_profile!r}")
    check_output_not_input(out, [bundle])
    if fmt is SynthFormat.acmetrace:
        trace_file_kind(out)
    t = time.perf_counter()
    b = resolve_bundle(bundle)
    cluster, spec = bundle_cluster(b, cluster, bundle)
    _check_size(b, cluster, days, scale, yes)
    fill, policy, place = None, None, "bundle"
    if gpus is None and spec is not None:
        gpus_known = spec.gpus
    else:
        gpus_known = gpus
    if queue == "sim":
        if gpus_known is None:
            raise ValueError(f"--gpus: the size of cluster {cluster} is unknown (the bundle's description of it "
                             "has no GPU count); pass --gpus for --queue sim")
        total = gpus_known
        from acmemodel.reproduction.run import policy_queue

        if b.calibration(cluster).get("policy"):  # Acme's policy, as reproduce runs it
            fill, policy = policy_queue(b, cluster, total_gpus=total, seed=seed)
            place = int(policy["partitions"].get("pretrain", 0)) or None
        else:
            fill = cluster_queue(total_gpus=total, **({"gpus_per_node": spec.gpus_per_node}
                                                      if spec is not None and spec.gpus_per_node else {}))
    with counted_backoffs() as backoffs:  # model back-offs: counted, not printed raw
        jobs = simulate_jobs(b, days=days, cluster=cluster, seed=seed, start=start, scale=scale,
                             mix=parse_mix(mix), gpu_scale=gpu_scale, restart_prob=restart_prob, fill_queue=fill,
                             pretrain_gpus=place)
    timezone = b["arrival"].timezones_.get(cluster)
    if fmt is SynthFormat.acmetrace:
        path = write_acmetrace(to_acmetrace(jobs, cluster=cluster, timezone=timezone), out)
        files, written = [str(path)], {}
        if spec is not None:  # (the synthetic trace loads back as the same cluster, with its size)
            from acmemodel.clusters import write_sidecar

            files.append(str(write_sidecar(spec, path)))
    else:
        written = _export(jobs, fmt.value, out, cluster=cluster, timezone=timezone, gpus=gpus_known,
                          gpus_per_node=spec.gpus_per_node if spec is not None else None, bundle=b,
                          rebase_to=rebase_to, batsim_profile=batsim_profile, gpus_given=gpus is not None)
        path, files = out, written["files"]
    secs = time.perf_counter() - t
    by_type = jobs.groupby("type").size().to_dict()
    doc = {
        "output": str(path), "format": fmt.value, "files": files, "cluster": cluster, "rows": int(len(jobs)),
        "days": days, "seed": seed,
        "bundle": str(bundle) if bundle else "default",
        "first_submit_utc": (None if not len(jobs) else
                             np.datetime_as_string(np.datetime64(int(jobs["submit_s"].min()), "s")) + "Z"),
        "jobs_by_type": {str(k): int(v) for k, v in by_type.items()},
        "gpu_jobs": int((jobs["gpu_num"] > 0).sum()),
        "restart_attempts": int((jobs["attempt"] > 1).sum()),
        "states": {str(k): int(v) for k, v in jobs["state"].value_counts().items()},
        "queue": ("not simulated (queue = 0, start_time = submit_time)" if fill is None else
                  f"cluster simulator, {gpus_known:,} GPUs, " + (
                      "FIFO + EASY backfill" if policy is None else _policy_text(policy))),
        "queue_policy": policy,
        "queue_s": (None if fill is None else
                    {k: float(v) for k, v in jobs["queue_s"].describe(percentiles=[.5, .9]).items()
                     if k in ("mean", "50%", "90%", "max")}),
        "seconds": round(secs, 3),
        "model_backoffs": backoffs,
    }
    if written:
        doc["written"] = {k: written[k] for k in ("jobs", "attempts", "restarts", "dropped", "notes")}
    if json_out:
        print_json(doc)
        return
    console.print(f"wrote [bold]{path}[/bold] ({fmt.value}): {len(jobs):,} {cluster} jobs over {days:g} days "
                  f"({doc['restart_attempts']:,} restart attempts) in {secs:.1f} s")
    for f in files if written else []:
        console.print(f"  {f}")
    for k, v in (written or {}).get("dropped", {}).items():
        if v:
            console.print(f"  omitted {v} {k.replace('_', ' ')}")
    console.print("jobs by type: " + ", ".join(f"{k} {v:,}" for k, v in sorted(by_type.items())))
    if backoffs:
        console.print(f"{len(backoffs):,} sparse model cell(s) answered from coarser cells (--json lists them)")
    console.print("queue not simulated: every job starts at submission (queue = 0)." if fill is None else
                  f"queue: {doc['queue']}; mean wait {doc['queue_s']['mean']:.0f} s, "
                  f"p90 {doc['queue_s']['90%']:.0f} s")


def _policy_text(policy: dict) -> str:
    """One line for the calibrated policy a --queue sim run simulated."""
    parts = policy["partitions"]
    lanes = ", ".join(f"{k} {v:,}" for k, v in parts.items() if v)
    be = policy.get("best_effort_types")
    return (f"the bundle's calibrated policy (GPUs: {lanes}; Eval last; "
            + (f"best effort on idle reserved GPUs: {', '.join(be)}; " if policy.get("best_effort") and be else "")
            + ("start-up latency" if policy.get("latency") else "no latency") + ")")


def _export(jobs, fmt: str, out: Path, *, cluster: str, timezone: str | None, gpus: int | None,
            gpus_per_node: int | None = None, bundle=None, rebase_to: str | None = None,
            batsim_profile: str | None = None, gpus_given: bool = False) -> dict:
    """Write the synthetic jobs (their restart-chain columns included) with ``acmemodel.export.write``,
    with the options ``acmemodel export`` gives the format: helios in the bundle's calibrated partitions
    and placed in an experiment window (``rebase_to``, default Sept), batsim's profile type, airesim from
    the bundle's failure and restart models. ``gpus`` (``--gpus``, else the cluster's description) sets the
    cluster size of the formats that record one (nodes: ``gpus / gpus_per_node`` when the node size is
    known)."""
    from acmemodel.export import options, write

    valid = set(options(fmt))
    opts: dict = {"cluster": cluster}
    if timezone and "timezones" in valid:
        opts["timezones"] = {cluster: timezone}
    if gpus is not None:
        size = {"total_gpus": int(gpus)}
        if gpus_per_node:
            size["total_nodes"] = -(-int(gpus) // int(gpus_per_node))
        opts.update({k: v for k, v in size.items() if k in valid})
    if fmt == "helios":
        opts["rebase_to"] = rebase_to or "Sept"
        if not gpus_given:  # (a --gpus cluster is split by GPU time: the calibrated layout is the bundle's size's)
            from acmemodel.cli.export import bundle_partitions

            jobs, layout = bundle_partitions(jobs, bundle, cluster)
            if layout is not None:
                opts.update(vc="partition", vc_nodes=layout,
                            vc_source="the bundle's calibrated policy (as synth --queue sim simulates it)")
    if fmt == "batsim" and batsim_profile is not None:
        opts["profile_type"] = batsim_profile
    if fmt == "airesim":
        from acmemodel.synth import resolve_bundle

        b = resolve_bundle(bundle)
        opts = {"cluster": cluster, "failure": b["failure"], "restart": b.get("restart")}
    return write(jobs, fmt, out, **opts)


def _check_size(b, cluster: str, days: float, scale: float, yes: bool) -> None:
    """Refuse, before any work, a synthetic trace too long for timestamps or too big for memory
    (:mod:`acmemodel.limits`; ``--yes`` insists on the memory check only)."""
    from acmemodel.cli._fmt import num
    from acmemodel.limits import BYTES_PER_HOUR, BYTES_PER_JOB, check_memory, expected_jobs

    if days > 100 * 365.25:
        raise ValueError(f"--days must be at most 36,525 (100 years; timestamps end in 2262), got {days:,.6g}")
    arrival = b["arrival"]
    if cluster not in arrival.clusters_:
        return  # simulate_jobs names the known clusters
    n = expected_jobs(arrival, cluster, days, scale)
    cells = sum(1 for c in arrival.cells_ if c[0] == cluster)
    need = n * BYTES_PER_JOB + days * 24 * max(cells, 1) * BYTES_PER_HOUR
    check_memory(f"synth --days {num(days)} --scale {num(scale)}", need,
                 detail=f"about {n:,.0f} jobs at {BYTES_PER_JOB:,} bytes each", yes=yes)
