"""``acmemodel export``: write a trace in a cluster simulator's input format."""
from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import List, Optional

import typer

from acmemodel.cli._app import app, print_json
from acmemodel.cli._common import check_output_not_input, console, load_traces
from acmemodel.errors import ConfigError


class Fmt(str, Enum):
    acmetrace = "acmetrace"
    swf = "swf"
    helios = "helios"
    philly = "philly"
    batsim = "batsim"
    airesim = "airesim"


def parse_pairs(items: Optional[List[str]], name: str, *, as_int: bool = False) -> dict | None:
    """``["Pretrain=pretrain", ...]`` → dict; ConfigError naming the option on bad input."""
    if not items:
        return None
    out = {}
    for it in items:
        k, sep, v = str(it).partition("=")
        if not sep or not k.strip() or not v.strip():
            raise ConfigError(f"{name}: expected KEY=VALUE, got {it!r}")
        if as_int:
            try:
                v = int(v)
            except ValueError:
                raise ConfigError(f"{name}: {k}={v!r} is not an integer") from None
        out[k.strip()] = v if as_int else v.strip()
    return out


@app.command("export")
def export_cmd(
    paths: Optional[List[Path]] = typer.Argument(None, help="Trace files (AcmeTrace CSV/parquet); none = the "
                                                 "shipped sample (airesim: the default bundle, no trace)"),
    fmt: Fmt = typer.Option(..., "--format", "-f", metavar="FORMAT", show_choices=False,
                            help="Output format: acmetrace, swf, helios, philly, batsim or airesim."),
    out: Path = typer.Option(..., "--out", "-o", help="Output directory (created)."),
    cluster: Optional[str] = typer.Option(None, "--cluster", help="Cluster name for the files and the only "
                                          "cluster exported (default: all, names from the files)."),
    rebase: bool = typer.Option(False, "--rebase", help="helios/philly: shift timestamps (whole weeks) onto "
                                "the simulators' hard-coded epoch (2020-04-01 / 2017-10-01)."),
    rebase_to: Optional[str] = typer.Option(None, "--rebase-to", help="helios: place the trace in the "
                                            "simulators' experiment window (Sept, July, or e.g. Venus_Sept)."),
    vc_large: Optional[int] = typer.Option(None, "--vc-large", help="helios: jobs of at least this many GPUs "
                                           "go to the pretrain partition whatever their type (default 256; "
                                           "0: by type only)."),
    bundle: Optional[Path] = typer.Option(None, "--bundle", help="airesim: fitted bundle with 'failure' "
                                          "(and 'restart') models; default: fit them on the trace files "
                                          "given, else the default bundle (as plan/checkpoint). helios: the "
                                          "bundle whose calibrated partitions are written (default: the "
                                          "default bundle's)."),
    gpus: Optional[int] = typer.Option(None, "--gpus", help="airesim: GPUs of the simulated job (default: "
                                       "the GPU count with most GPU time among the trace's Pretrain jobs, else the model's largest job)."),
    recovery: Optional[str] = typer.Option(None, "--recovery", help="airesim: recovery time after a failure "
                                           "(e.g. 20m) instead of the restart model's mean."),
    vc: Optional[List[str]] = typer.Option(None, "--vc", help="helios/philly: TYPE=PARTITION (repeatable); "
                                           "default Pretrain=pretrain, others shared."),
    vc_nodes: Optional[List[str]] = typer.Option(None, "--vc-nodes", help="helios: PARTITION=NODES for "
                                                 "vc_config.csv (repeatable), e.g. a planned quota split."),
    batsim_profile: Optional[str] = typer.Option(None, "--batsim-profile", help="batsim: delay-profile type "
                                                 "name, 'delay' (Batsim 1.3-4.x, default) or 'DelayProfile' "
                                                 "(Batsim >= 5)."),
    include_cpu: Optional[bool] = typer.Option(None, "--include-cpu/--no-cpu", help="Keep CPU-only jobs "
                                               "(default: kept for acmetrace/helios, omitted for swf/philly)."),
    json_out: bool = typer.Option(False, "--json", help="Print what was written (files, jobs, attempts, "
                                  "time span) as JSON."),
    yes: bool = typer.Option(False, "--yes", help="Write even when the estimated memory exceeds half of "
                                                  "this machine's memory."),
) -> None:
    """Export a trace as AcmeTrace CSV, SWF v2.2, Helios/Lucid, Philly, Batsim or an AIReSim config."""
    from acmemodel.export import write

    name = fmt.value
    if bundle is not None and name not in ("airesim", "helios"):
        raise ConfigError("--bundle is used by --format airesim and helios only")
    if (gpus is not None or recovery is not None) and name != "airesim":
        raise ConfigError("--gpus/--recovery are used by --format airesim only")
    if (vc or vc_nodes) and name not in ("helios", "philly"):
        raise ConfigError("--vc/--vc-nodes are used by --format helios/philly only")
    if vc_nodes and name != "helios":
        raise ConfigError("--vc-nodes is used by --format helios only")
    if (rebase_to is not None or vc_large is not None) and name != "helios":
        raise ConfigError("--rebase-to/--vc-large are used by --format helios only")
    if rebase_to is not None and rebase:
        raise ConfigError("give --rebase or --rebase-to, not both")
    if batsim_profile is not None and name != "batsim":
        raise ConfigError("--batsim-profile is used by --format batsim only")
    if batsim_profile is not None and batsim_profile not in ("delay", "DelayProfile"):
        raise ConfigError(f"--batsim-profile must be 'delay' or 'DelayProfile', got {batsim_profile!r}")
    if include_cpu is not None and name in ("acmetrace", "batsim", "airesim"):
        raise ConfigError(f"--include-cpu/--no-cpu does not apply to --format {name}")
    if bundle is not None:
        check_output_not_input(out, [bundle], "--out/-o")
    opts: dict = {}
    jobs = None
    if name == "airesim":
        failure = restart = None
        if bundle is not None or not paths:
            # a given bundle, or (no trace files) the default bundle the planner uses
            from acmemodel.synth import resolve_bundle

            b = resolve_bundle(bundle)
            failure = b["failure"]
            restart = b.get("restart")
        if paths:
            jobs = _load(paths, cluster)
        from acmemodel.planner.config_fields import parse_duration

        recovery_s = parse_duration(recovery, "--recovery", allow_zero=True) if recovery is not None else None
        from acmemodel.export.airesim import empirical_restart_seconds

        # the trace's restarts give the recovery time (airesim_params): then no restart model is fitted
        trace_restarts = (jobs is not None and recovery_s is None and restart is None
                          and empirical_restart_seconds(jobs) is not None)
        if failure is None or (restart is None and recovery_s is None and not trace_restarts):
            if jobs is None:
                raise ConfigError(f"bundle {bundle} has no 'restart' model: give trace files or --recovery")
            failure, restart = _fit_reliability(jobs, failure, restart, 0.0 if trace_restarts else recovery_s)
        opts.update(failure=failure, restart=restart, gpus=gpus, cluster=cluster, recovery_s=recovery_s)
    else:
        jobs = _load(paths, cluster)
        if name == "philly":
            _check_philly_size(jobs, yes)
        if name == "batsim":
            opts["profile_type"] = batsim_profile
        if name == "helios":
            opts.update(rebase_to=rebase_to, large_gpus=vc_large)
        opts.update(cluster=cluster, rebase=rebase or None, include_cpu=include_cpu,
                    vc=parse_pairs(vc, "--vc"), vc_nodes=parse_pairs(vc_nodes, "--vc-nodes", as_int=True))
        opts.update(_size_options(jobs, name, cluster))
        if name == "helios" and not (vc or vc_nodes or vc_large is not None):
            jobs, layout = bundle_partitions(jobs, bundle, cluster)
            if layout is not None:  # the partitions the bundle's calibrated policy simulates
                opts.update(vc="partition", vc_nodes=layout, timezones=dict(jobs.attrs.get("timezones", {})),
                            vc_source="the bundle's calibrated policy (as acmemodel reproduce and "
                                      "synth --queue sim simulate it)")
    from acmemodel.export._common import protect

    with protect(list(paths or []) + ([bundle / "bundle.json" if bundle.is_dir() else bundle] if bundle else [])):
        res = write(jobs, name, out, **opts)
    if json_out:
        print_json(res)
        return
    span = res["time_span"]
    if name == "airesim":
        console.print("wrote AIReSim parameters: " + ", ".join(f"{k}={v}" for k, v in res["params"].items()))
        prov = res["provenance"]
        console.print(f"  job of {prov['gpus']:,} GPUs ({prov.get('gpus_source', 'given')}); job MTTF "
                      f"{prov['job_mttf_s'] / 3600:,.1f} h"
                      + (f", mean restart {prov['recovery_s'] / 60:,.1f} min" if prov.get("recovery_s") is not None
                         else ""))
        console.print("  run: python -m airesim.run --params config.yaml --adaptive")
        for f in res["files"]:
            console.print(f"  {f}")
        return
    console.print(f"wrote {name}: {res['jobs']:,} jobs, {res['attempts']:,} attempts "
                  f"({res['restarts']:,} restarts) of {', '.join(res['clusters']) or '-'}"
                  + (f", {span['start_utc']} .. {span['end_utc']}" if span["start_utc"] else ""))
    for k, v in res["dropped"].items():
        if v:
            console.print(f"  omitted {v:,} {k.replace('_', ' ')}")
    for f in res["files"]:
        console.print(f"  {f}")
    for n in res["notes"]:
        console.print(f"[yellow]note:[/yellow] {n}")


def _check_philly_size(trace, yes: bool) -> None:
    """Philly's ``detail`` lists every GPU of every node of every attempt: refuse, before writing, a
    trace whose GPU counts would expand beyond memory (``gpu_num = 1e9`` is 125 M node entries)."""
    import numpy as np

    from acmemodel.limits import BYTES_PER_NODE_ENTRY, check_memory

    g = np.nan_to_num(trace.jobs["gpu_num"].to_numpy(dtype=float))
    g = g[g > 0]
    nodes = np.maximum(1.0, np.ceil(g / 8.0))
    need = float(g.sum()) * 70.0 + float(nodes.sum()) * BYTES_PER_NODE_ENTRY  # ~70 bytes per GPU name
    check_memory("export --format philly", need,
                 detail=f"{g.sum():,.0f} GPU entries on {nodes.sum():,.0f} node entries; largest job "
                        f"{g.max() if len(g) else 0:,.0f} GPUs", yes=yes)


def _size_options(trace, fmt: str, cluster: str | None) -> dict:
    """``total_gpus``/``total_nodes`` of the exported cluster from the trace's own description (when it
    holds one cluster, or ``--cluster`` names it, and the size is known) for the formats that record a
    size; else nothing (the writer then uses the largest job, never another cluster's size)."""
    from acmemodel.export import options

    valid = set(options(fmt))
    names = [cluster] if cluster else trace.clusters
    spec = trace.cluster_specs.get(names[0]) if len(names) == 1 else None
    out: dict = {}
    if spec is not None and spec.gpus is not None and "total_gpus" in valid:
        out["total_gpus"] = int(spec.gpus)
    if spec is not None and spec.nodes is not None and "total_nodes" in valid:
        out["total_nodes"] = int(spec.nodes)
    return out


def bundle_partitions(trace, bundle: Optional[Path], cluster: Optional[str] = None):
    """``(jobs, {cluster: {partition: nodes}})``: the trace's jobs with a ``partition`` column from the
    policy the bundle (default: the shipped one) calibrated for each cluster of the trace -- the reserved
    ``pretrain`` partition, an evaluation quota if any, the ``shared`` rest, jobs routed as
    ``acmemodel reproduce`` routes them -- or ``(trace, None)`` when a cluster has no calibrated policy
    (then the export's own default split applies)."""
    import numpy as np

    from acmemodel.clusters import GPUS_PER_NODE
    from acmemodel.reproduction.run import _home_partitions, queue_policy
    from acmemodel.synth import resolve_bundle

    df = trace.jobs if hasattr(trace, "jobs") else trace
    tz = dict(getattr(trace, "timezones", {}) or {})
    clusters = sorted(df["cluster"].astype(str).unique()) if "cluster" in df.columns else []
    if cluster is not None:
        clusters = [c for c in clusters if c == cluster]
    if not clusters:
        return trace, None
    b = resolve_bundle(bundle)
    layout, home = {}, None
    for cl in clusters:
        if not b.calibration(cl).get("policy"):
            return trace, None
        parts = queue_policy(b, cl)["partitions"]
        m = df["cluster"].astype(str).to_numpy() == cl
        h = _home_partitions(df[m], parts)
        if "pretrain" in parts:  # a partition without GPUs of its own (Kalos: the reservation is the whole
            for p, g in parts.items():  # cluster) runs best effort on the reserved GPUs: there in the export
                if not g:
                    h = np.where(h == p, "pretrain", h)
        if home is None:
            home = np.full(len(df), "shared", dtype=object)
        home[m] = h
        layout[cl] = {p: int(g) // GPUS_PER_NODE for p, g in parts.items() if g}
    out = df.assign(partition=home)
    out.attrs["timezones"] = tz
    return out, layout


def _load(paths: Optional[List[Path]], cluster: Optional[str]):
    """Load the traces; ``--cluster`` names a single file's cluster and selects what is exported."""
    paths = list(paths or [])
    return load_traces(paths, cluster if len(paths) == 1 else None)


def _fit_reliability(trace, failure, restart, recovery_s):
    """Fit the failure model (and the restart model unless a recovery time is given) on the trace."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (model back-offs, GLM convergence: not the user's to read here)
        if failure is None:
            from acmemodel.models.failure import FailureModel

            failure = FailureModel(compare=False).fit(trace.jobs)
        if restart is None and recovery_s is None:
            from acmemodel.models.restart import RestartModel

            restart = RestartModel().fit(trace.jobs, timezones=trace.timezones)
    return failure, restart
