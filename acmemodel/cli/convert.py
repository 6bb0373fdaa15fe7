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
from acmemodel.cli._common import console as _console


class From(str, Enum):
    slurm = "slurm"
    swf = "swf"
    helios = "helios"
    philly = "philly"
    pai2020 = "pai2020"
    k8s = "k8s"


#: extras written after the AcmeTrace columns (when the importer found them)
EXTRA_ORDER = ("job_name", "partition", "qos", "vc", "account", "array_job_id", "restart_of", "think_time_s",
               "gpu_fraction", "gpu_spec")


def convert(paths, fmt: str, out: Path, *, cluster: str | None = None, timezone: str | None = None,
            extracted_at=None, type_map=None):
    """Import ``paths`` and write ``out`` (``.csv``/``.csv.gz``/``.parquet``); returns (trace, summary)."""
    import warnings

    import pyarrow as pa
    import pyarrow.compute as pc

    from acmemodel.errors import DataWarning
    from acmemodel.export.acmetrace import acmetrace_table
    from acmemodel.trace import load_trace

    to_stdout = str(out) == "-"
    name = "stdout.csv" if to_stdout else out.name.lower()
    if not (name.endswith(".csv") or name.endswith(".csv.gz") or name.endswith(".parquet")):
        raise ValueError(f"-o/--out: {out} must end in .csv, .csv.gz or .parquet (or be - for stdout)")
    if not to_stdout and out.exists() and out.is_dir():
        raise ValueError(f"-o/--out: {out} is a directory")
    if not to_stdout and any(Path(p).resolve() == out.resolve() for p in paths):
        raise ValueError(f"-o/--out: {out} is one of the input files")
    cl = cluster or (Path(paths[0]).name.split(".")[0] if to_stdout else out.name.split(".")[0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)
        trace = load_trace(paths, cluster=cl, format=fmt, timezone=timezone, extracted_at=extracted_at,
                           type_map=type_map)
    if len(trace.jobs) == 0:
        raise ValueError(f"no job was accepted from {', '.join(map(str, paths))} "
                         f"({len(trace.rejected):,} rejected): nothing to write")
    tz = trace.timezones.get(cl, "+00:00")
    table = acmetrace_table(trace.jobs, cluster=cl, schema="kalos", timezone=tz)
    ex = trace.extras
    for c in EXTRA_ORDER:
        if ex is not None and c in ex.columns:
            v = ex[c].astype(object).where(ex[c].notna(), None).to_numpy(object)
            a = pa.array([None if x is None else str(x) for x in v], type=pa.large_string())
            table = table.append_column(c, pc.fill_null(a, pa.scalar("", pa.large_string())) if a.null_count else a)
    if to_stdout:  # CSV on stdout (the report goes to stderr)
        import sys

        import pyarrow.csv as pcsv

        sink = pa.BufferOutputStream()
        pcsv.write_csv(table, sink, pcsv.WriteOptions(quoting_style="needed"))
        sys.stdout.buffer.write(sink.getvalue().to_pybytes())
        sys.stdout.flush()
    elif name.endswith(".parquet"):
        out.parent.mkdir(parents=True, exist_ok=True)
        import pyarrow.parquet as pq

        pq.write_table(table, out)
    else:
        import pyarrow.csv as pcsv

        out.parent.mkdir(parents=True, exist_ok=True)
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
    return trace, summary


#: file suffix of the temporary copy of stdin per input format (the importers sniff names)
_SUFFIX = {"slurm": ".txt", "swf": ".swf", "k8s": ".json"}


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
    json_out: bool = typer.Option(False, "--json", help="Print the conversion report as JSON."),
) -> None:
    """Convert a Slurm sacct extract, an SWF file, a Helios/Philly/PAI trace or a Kubernetes pod list
    into the AcmeTrace schema; report what was mapped how and what was quarantined."""
    from rich.table import Table

    import tempfile

    from acmemodel.cli._common import err_console, stdin_file

    if json_out and str(out) == "-":
        raise ValueError("--json and -o - both write to stdout; give one")
    with tempfile.TemporaryDirectory() as tmp:
        paths = [stdin_file(tmp, "stdin" + _SUFFIX.get(src.value, ".csv")) if str(p) == "-" else p for p in paths]
        trace, s = convert(paths, src.value, out, cluster=cluster or ("stdin" if str(out) == "-" and any(
            p.name.startswith("stdin") and p.parent == Path(tmp) for p in paths) else None),
            timezone=timezone, extracted_at=extracted_at, type_map=type_map)
    if json_out:
        print_json(s)
        return
    console = err_console if str(out) == "-" else _console
    t = Table(title=f"convert --from {src.value} → {out.name}", title_justify="left")
    t.add_column("what")
    t.add_column("value", overflow="fold")
    t.add_row("records in", f"{s['records_in']:,}")
    t.add_row("jobs written", f"{s['jobs_written']:,}")
    t.add_row("rejected", f"{s['rejected']:,}" + (" (" + ", ".join(f"{k} {v:,}" for k, v in
                                                                   s["rejected_by_reason"].items()) + ")"
                                                    if s["rejected"] else ""))
    t.add_row("unfinished", f"{s['running']:,} running, {s['pending']:,} pending (censored at "
              f"{s['extracted_at_utc'] or '—'})")
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
