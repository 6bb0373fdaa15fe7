"""``acmemodel describe``: the paper's characterisation tables for any trace."""
from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import List, Optional

import typer
from rich.markup import escape
from acmemodel.cli._fmt import CompactTable as Table

from acmemodel.cli._app import app, print_json
from acmemodel.cli._common import console, describe_size, load_traces


class By(str, Enum):
    type = "type"
    state = "state"
    gpu_bucket = "gpu-bucket"


def _pct(x) -> str:
    return "–" if x is None else f"{100 * x:.1f}%"


def _sec(x) -> str:
    if x is None:
        return "–"
    if x < 120:
        return f"{x:.0f} s"
    if x < 7200:
        return f"{x / 60:.1f} min"
    return f"{x / 3600:.1f} h"


@app.command("describe")
def describe_cmd(
    paths: Optional[List[Path]] = typer.Argument(None, help="AcmeTrace files (.csv, .csv.gz, .parquet); "
                                                  "none = the shipped sample"),
    json_out: bool = typer.Option(False, "--json", help="Print a JSON document instead of tables."),
    rejects: Optional[Path] = typer.Option(None, "--rejects", help="Write quarantined rows with reasons to this CSV."),
    by: Optional[List[By]] = typer.Option(None, "--by", help="Tables to show: type, state, gpu-bucket (repeatable)."),
    cluster: Optional[str] = typer.Option(None, "--cluster", help="Cluster name for all files (default: from file name)."),
) -> None:
    """Job counts, shares of jobs and GPU time, run and queue times per cluster, by type/state/GPU size."""
    from acmemodel.describe import describe

    if rejects is not None and any(rejects.resolve() == Path(p).resolve() for p in (paths or [])):
        raise ValueError(f"--rejects: {rejects} is one of the input trace files; it would be overwritten")
    trace = None
    if rejects is None and paths and all(str(p) != "-" for p in paths):
        from acmemodel.trace.stream import summarise_csv

        # a large CSV input: read in chunks of lines, only describe's columns kept (the same document)
        trace = summarise_csv(paths, cluster)
    if trace is None:
        trace = load_traces(paths, cluster)
    doc = describe(trace)
    for name, c in doc["clusters"].items():
        spec = trace.cluster_specs.get(name)
        if spec is not None:
            c["description"] = spec.to_dict()
    if rejects is not None:
        trace.rejected.to_csv(rejects, index=False)
    if json_out:
        print_json(doc)
        return
    _render(doc, [b.value for b in (by or [By.type, By.state])])


def _render(doc: dict, by: list[str]) -> None:
    files = Table(title="Files")
    for c in ("path", "cluster", "schema", "rows", "accepted", "rejected"):
        files.add_column(c, justify="right" if c in ("rows", "accepted", "rejected") else "left")
    for f in doc["files"]:
        files.add_row(escape(f["path"]), escape(f["cluster"]), f["schema"], f"{f['rows']:,}", f"{f['accepted']:,}", f"{f['rejected']:,}")
    console.print(files)
    rej = doc["rejected"]
    if rej["total"]:
        console.print(f"[yellow]Quarantined rows: {rej['total']}[/yellow] "
                      + ", ".join(f"{k}={v}" for k, v in rej["by_reason"].items()))
    inc = {k: v for k, v in doc["inconsistencies"].items() if v}
    if inc:
        console.print("File columns that disagree with the timestamps (run time and queue are recomputed): "
                      + ", ".join(f"{k}={v}" for k, v in inc.items()))
    vp = doc.get("value_problems") or {}
    if vp:
        console.print("Unusable optional values (kept as missing; the rows are accepted): "
                      + "; ".join(f"{escape(c)}: " + ", ".join(f"{v:,} {k}" for k, v in d.items())
                                  for c, d in vp.items()))
    for w in doc["warnings"]:
        console.print(f"[yellow]warning:[/yellow] {escape(w)}")  # (data values may look like markup)
    for name, c in doc["clusters"].items():
        console.print(f"\n[bold]{escape(name)}[/bold]: {c['gpu_jobs']:,} GPU jobs, {c['cpu_jobs']:,} CPU jobs; "
                      f"GPU time {c['gpu_time_s'] / 3600:,.0f} GPU-h; median run {_sec(c['median_run_s'])}, "
                      f"median queue {_sec(c['median_queue_s'])}, mean GPUs {c['mean_gpus'] or 0:.2f}")
        d = c.get("description")
        if d:
            console.print(f"  cluster: {escape(describe_size(d))}; zone {d['timezone']}"
                          + (f" ({escape(d['tzname'])})" if d.get("tzname") else "")
                          + (f"; partitions {escape(', '.join(d['partitions']))}" if d["partitions"] else ""))
        u = c.get("unfinished", {})
        if u.get("running") or u.get("pending"):
            console.print(f"  unfinished at extraction ({doc.get('extracted_at_utc') or '—'}): "
                          f"{u['running']:,} running (run time censored), {u['pending']:,} pending "
                          "(wait censored); run medians are over finished jobs")
        o = c.get("observation", {})
        parts = []
        if o.get("left_truncated"):
            parts.append(f"left-truncated: {o['left_truncated']:,} (existed before the trace began; "
                         "run medians leave them out)")
        if o.get("unknown_waits"):
            parts.append(f"unknown waits: {o['unknown_waits']:,} (not counted as 0)")
        if parts:
            console.print("  " + "; ".join(parts))
        q = c["run_s_quantiles"]
        if q:
            console.print("  run time quantiles: " + ", ".join(f"{k} {_sec(v)}" for k, v in q.items()))
        q = c["queue_s_quantiles"]
        if q:
            console.print("  queue quantiles:    " + ", ".join(f"{k} {_sec(v)}" for k, v in q.items()))
        for b in by:
            key = {"type": "by_type", "state": "by_state", "gpu-bucket": "by_gpu_bucket"}[b]
            rows = c[key]
            t = Table(title=f"{escape(name)} GPU jobs by {b}")
            t.add_column(b)
            cols = ["jobs", "job share", "GPU-time share"]
            full = b != "state"
            if full:
                cols += ["median run", "median queue", "mean GPUs"]
            for col in cols:
                t.add_column(col, justify="right")
            for k, r in rows.items():
                vals = [f"{int(r['jobs']):,}", _pct(r["job_share"]), _pct(r["gpu_time_share"])]
                if full:
                    vals += [_sec(r["median_run_s"]), _sec(r["median_queue_s"]),
                             "–" if r["mean_gpus"] is None else f"{r['mean_gpus']:.1f}"]
                t.add_row(escape(str(k)), *vals)
            console.print(t)
