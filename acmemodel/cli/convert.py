"""``acmemodel convert``: another scheduler's log or public trace → one AcmeTrace file.

The output is the AcmeTrace Kalos schema (``mem_per_pod_GB`` included) plus the source columns the
importer found (``job_name``, ``partition``, ``qos``, ``vc``, ``restart_of``, ...) as extra columns,
so every command reads it (``load_trace`` keeps them in ``Trace.extras``; the run-time predictor
uses them). Unfinished jobs keep their state (RUNNING, SUSPENDED, PENDING) with ``end_time`` = the
extraction time, so they load back censored there.
"""
from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import List, Optional

import typer

from acmemodel.cli._app import app, print_json
from acmemodel.cli._common import console


class From(str, Enum):
    slurm = "slurm"
    swf = "swf"
    helios = "helios"
    philly = "philly"
    pai2020 = "pai2020"
    k8s = "k8s"
    failures = "failures"


#: extras written after the AcmeTrace columns (when the importer found them)
EXTRA_ORDER = ("job_name", "partition", "qos", "vc", "account", "array_job_id", "restart_of", "think_time_s",
               "gpu_fraction", "gpu_spec", "entry_time", "queue_unknown")


def convert(paths, fmt: str, out: Path, *, cluster: str | None = None, timezone: str | None = None,
            extracted_at=None, type_map=None, origin=None):
    """Import ``paths`` and write ``out`` (``.csv``/``.csv.gz``/``.parquet``); returns (trace, summary)."""
    import warnings

    import pyarrow as pa
    import pyarrow.compute as pc

    from acmemodel.errors import DataWarning
    from acmemodel.export.acmetrace import acmetrace_table
    from acmemodel.trace import load_trace

    name = out.name.lower()
    if not (name.endswith(".csv") or name.endswith(".csv.gz") or name.endswith(".parquet")):
        raise ValueError(f"-o/--out: {out} must end in .csv, .csv.gz or .parquet")
    if out.exists() and out.is_dir():
        raise ValueError(f"-o/--out: {out} is a directory")
    if any(Path(p).resolve() == out.resolve() for p in paths):
        raise ValueError(f"-o/--out: {out} is one of the input files")
    cl = cluster or out.name.split(".")[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)
        trace = load_trace(paths, cluster=cl, format=fmt, timezone=timezone, extracted_at=extracted_at,
                           type_map=type_map, origin=origin)
    if len(trace.jobs) == 0:
        raise ValueError(f"no job was accepted from {', '.join(map(str, paths))} "
                         f"({len(trace.rejected)} rejected): nothing to write")
    tz = trace.timezones.get(cl, "+00:00")
    # rows in submit order (as the writer puts them), the extra columns taken in the same order
    import numpy as np

    order = np.argsort(trace.jobs["submit_s"].to_numpy(dtype=float), kind="stable")
    table = acmetrace_table(trace.jobs.iloc[order], cluster=cl, schema="kalos", timezone=tz)
    ex = None if trace.extras is None else trace.extras.iloc[order].reset_index(drop=True)
    for c in EXTRA_ORDER:
        if ex is not None and c in ex.columns:
            v = ex[c].astype(object).where(ex[c].notna(), None).to_numpy(object)
            a = pa.array([None if x is None else str(x) for x in v], type=pa.large_string())
            table = table.append_column(c, pc.fill_null(a, pa.scalar("", pa.large_string())) if a.null_count else a)
    out.parent.mkdir(parents=True, exist_ok=True)
    if name.endswith(".parquet"):
        import pyarrow.parquet as pq

        pq.write_table(table, out)
    else:
        import pyarrow.csv as pcsv

        stream = pa.CompressedOutputStream(str(out), "gzip") if name.endswith(".gz") else pa.OSFile(str(out), "wb")
        with stream as f:
            pcsv.write_csv(table, f, pcsv.WriteOptions(quoting_style="needed"))
    j = trace.jobs
    summary = {
        "format": fmt, "out": str(out), "cluster": cl, "timezone": tz,
        "records_in": int(sum(r.get("records_in", 0) for r in trace.imports)),
        "jobs_written": int(len(j)), "rejected": int(len(trace.rejected)),
        "rejected_by_reason": trace.rejected_by_reason(),
        "running": int(j["run_censored"].sum()) if "run_censored" in j else 0,
        "pending": int((j["state"] == "PENDING").sum()),
        "extracted_at_utc": (None if trace.extracted_at_s is None else
                             __import__("pandas").Timestamp(trace.extracted_at_s, unit="s", tz="UTC").isoformat()),
        "extra_columns": [c for c in EXTRA_ORDER if ex is not None and c in ex.columns],
        "imports": trace.imports, "warnings": trace.warnings,
    }
    summary["accounting"] = accounting(trace)
    return trace, summary


def accounting(trace) -> dict:
    """The record accounting of an import: ``records_in = accepted + folded + quarantined −
    expanded`` (every record of the input files is a written job, a record folded into another row,
    or a quarantined row; ``expanded`` = rows added by splitting one record, sacct array ranges and
    Philly attempts), with the written jobs split into ``left_truncated`` (entered observation at the
    trace start) and ``right_censored`` (unfinished at extraction) and ``unknown_waits`` (queue not
    recorded). ``balanced``: the identity holds."""
    import numpy as np

    j = trace.jobs
    rin = int(sum(r.get("records_in", 0) for r in trace.imports))
    folded = int(sum(r.get("folded", 0) for r in trace.imports))
    expanded = int(sum(r.get("expanded_array_tasks", 0) + r.get("attempt_rows_added", 0) for r in trace.imports))
    lt = int(j["left_truncated"].sum()) if "left_truncated" in j else 0
    rc = int((j["run_censored"] | j["queue_censored"] & j["state"].isin(["PENDING"])).sum()) if len(j) else 0
    started = j["started"].to_numpy(dtype=bool) if len(j) else np.zeros(0, bool)
    unknown_waits = int((started & np.isnan(j["queue_s"].to_numpy(dtype=float))).sum()) if len(j) else 0
    acc, quar = int(len(j)), int(len(trace.rejected))
    return {"records_in": rin, "accepted": acc - lt, "left_truncated": lt, "folded": folded,
            "quarantined": quar, "expanded": expanded, "right_censored": rc, "unknown_waits": unknown_waits,
            "balanced": rin == acc + folded + quar - expanded}


@app.command("convert")
def convert_cmd(
    paths: List[Path] = typer.Argument(..., help="Input files of the --from format (pai2020: pai_job_table.csv, "
                                       "its pai_task_table.csv is read beside it)."),
    src: From = typer.Option(..., "--from", help="Input format."),
    out: Path = typer.Option(..., "--out", "-o", help="Output AcmeTrace file: .csv, .csv.gz or .parquet."),
    cluster: Optional[str] = typer.Option(None, "--cluster", help="Cluster name (default: the output file's "
                                          "name before its first dot, as load_trace will read it)."),
    timezone: Optional[str] = typer.Option(None, "--timezone", help="UTC offset of naive local timestamps "
                                           "in the input (e.g. +08:00)."),
    extracted_at: Optional[str] = typer.Option(None, "--extracted-at", help="When the input was extracted "
                                               "(ISO time, UTC unless it has an offset): running/pending "
                                               "jobs are censored there. Default: the latest timestamp."),
    type_map: Optional[List[str]] = typer.Option(None, "--type-map", help="FIELD:REGEX=TYPE rules (repeatable "
                                                 "or comma-separated; FIELD partition|qos|name|vc, omitted = any): "
                                                 "e.g. 'name:^eval=Eval'. Unmatched jobs keep the source's category."),
    origin: Optional[str] = typer.Option(None, "--origin", help="Time of second 0 of inputs whose times are "
                                         "seconds since the trace start (k8s pod/instance lists; ISO time, "
                                         "UTC unless it has an offset, or Unix seconds). Default: "
                                         "1970-01-01 UTC."),
    json_out: bool = typer.Option(False, "--json", help="Print the conversion report as JSON."),
) -> None:
    """Convert a Slurm sacct extract, an SWF file, a Helios/Philly/PAI trace or a Kubernetes pod list
    into the AcmeTrace schema; report what was mapped how and what was quarantined. ``--from failures``:
    a node failure log → uptime intervals (-o .csv/.parquet) or a reliability preset (-o .json)."""
    from rich.table import Table

    if src is From.failures:  # a node failure log: uptime intervals or a reliability preset
        from acmemodel.cli.convert_failures import convert_failures, print_report

        print_report(convert_failures(paths, out, name=cluster, extracted_at=extracted_at), json_out)
        return
    trace, s = convert(paths, src.value, out, cluster=cluster, timezone=timezone, extracted_at=extracted_at,
                       type_map=type_map, origin=origin)
    if json_out:
        print_json(s)
        return
    t = Table(title=f"convert --from {src.value} → {out.name}", title_justify="left")
    t.add_column("what")
    t.add_column("value", overflow="fold")
    a = s["accounting"]
    t.add_row("records in", f"{s['records_in']:,} = {a['accepted']:,} accepted + {a['left_truncated']:,} "
              f"left-truncated + {a['folded']:,} folded + {a['quarantined']:,} quarantined"
              + (f" − {a['expanded']:,} expanded" if a["expanded"] else ""))
    t.add_row("jobs written", f"{s['jobs_written']:,}")
    t.add_row("rejected", f"{s['rejected']:,}" + (" (" + ", ".join(f"{k} {v:,}" for k, v in
                                                                   s["rejected_by_reason"].items()) + ")"
                                                    if s["rejected"] else ""))
    t.add_row("unfinished", f"{s['running']:,} running, {s['pending']:,} pending (censored at "
              f"{s['extracted_at_utc'] or '—'})")
    if a["left_truncated"] or a["unknown_waits"]:
        t.add_row("observation", f"{a['left_truncated']:,} left-truncated (entered at the trace start), "
                  f"{a['unknown_waits']:,} unknown waits")
    t.add_row("cluster / zone", f"{s['cluster']} / {s['timezone']}")
    maps = {}
    for r in s["imports"]:
        maps.update(r.get("mapping", {}))
    for k, v in maps.items():
        t.add_row(f"  {k}", str(v))
    types = {}
    for r in s["imports"]:
        for k, v in r.get("types", {}).items():
            types[k] = types.get(k, 0) + v
    t.add_row("types by", ", ".join(f"{k}: {v:,}" for k, v in types.items()))
    if s["extra_columns"]:
        t.add_row("extra columns", ", ".join(s["extra_columns"]))
    console.print(t)
    for w in s["warnings"]:
        console.print(f"warning: {w}", markup=False)
