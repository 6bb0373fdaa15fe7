"""``acmemodel convert``: another scheduler's log or public trace → one AcmeTrace file.

The output is the AcmeTrace Kalos schema (``mem_per_pod_GB`` included; ``duration`` and ``gpu_time``
on the run-time basis, ``end − start``) in submission order, a ``cluster`` column with the cluster's
name, plus the source columns the importer found (``job_name``, ``partition``, ``qos``, ``vc``,
``restart_of``, ...) as extra columns, each kept with its row whatever the input order, so every
command reads it (``load_trace`` keeps them in ``Trace.extras``; the run-time predictor
uses them). Unfinished jobs keep their state (RUNNING, SUSPENDED, PENDING) with ``end_time`` = the
extraction time, so they load back censored there.

The cluster itself travels with the file as data (:class:`acmemodel.clusters.ClusterSpec`: name, GPUs,
GPUs per node, zone, partitions): a sidecar ``<out>.cluster.yaml`` beside a CSV, the schema metadata of
a Parquet file. ``load_trace`` reads it back; ``fit`` stores it in the bundle. Sizes the log does not
state and ``--gpus``/``--gpus-per-node`` do not give stay unknown.
"""
from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import List, Optional

import typer

from acmemodel.cli._app import app, print_json
from acmemodel.cli._common import console as _console
from acmemodel.cli._common import describe_size
from acmemodel.formats import CONVERT_FORMATS


#: the ``--from`` choices: the names of the format registry (:mod:`acmemodel.formats`; no importer is imported)
From = Enum("From", {name: name for name in CONVERT_FORMATS}, type=str)


#: extras written after the AcmeTrace columns (when the importer found them)
EXTRA_ORDER = ("job_name", "partition", "qos", "vc", "account", "array_job_id", "restart_of", "think_time_s",
               "gpu_fraction", "gpu_spec", "entry_time", "queue_unknown")


def convert(paths, fmt: str, out: Path, *, cluster: str | None = None, timezone: str | None = None,
            extracted_at=None, type_map=None, origin=None, gpus: int | None = None,
            gpus_per_node: int | None = None):
    """Import ``paths`` and write ``out`` (``.csv``/``.csv.gz``/``.parquet``) with its cluster
    description (sidecar ``<out>.cluster.yaml``, or Parquet schema metadata); returns (trace, summary).

    ``gpus``/``gpus_per_node`` describe the cluster (checked against the log: no job may ask for more
    GPUs than the cluster has, nor more per node than a node holds). Rows are written in submission
    order, every extra column moved with its row (``job_id`` is checked against the table written)."""
    import dataclasses
    import warnings

    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    from acmemodel.errors import DataWarning
    from acmemodel.export._common import rounded_times
    from acmemodel.export._text import int_strings
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
    for opt, v in (("--gpus", gpus), ("--gpus-per-node", gpus_per_node)):
        if v is not None and not 0 < v < 2 ** 31:
            raise ValueError(f"{opt}: expected a positive number of GPUs, got {v}")
    if gpus is not None and gpus_per_node is not None and gpus % gpus_per_node:
        raise ValueError(f"--gpus: {gpus:,} GPUs is not a whole number of {gpus_per_node}-GPU nodes "
                         "(--gpus-per-node)")
    cl = cluster or (Path(paths[0]).name.split(".")[0] if to_stdout else out.name.split(".")[0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)
        trace = load_trace(paths, cluster=cl, format=fmt, timezone=timezone, extracted_at=extracted_at,
                           type_map=type_map, origin=origin)
    if len(trace.jobs) == 0:
        raise ValueError(f"no job was accepted from {', '.join(map(str, paths))} "
                         f"({len(trace.rejected):,} rejected): nothing to write")
    cl = trace.clusters[0]
    tz = trace.timezones.get(cl, "+00:00")
    # rows in submission order, the extras permuted with them (the writer keeps an ordered table as is)
    order = np.argsort(trace.jobs["submit_s"].to_numpy(dtype=float), kind="stable")
    jobs = trace.jobs.iloc[order].reset_index(drop=True)
    ex = trace.extras.iloc[order].reset_index(drop=True) if trace.extras is not None else None
    spec = _described(trace.cluster_spec(cl), jobs, gpus, gpus_per_node, fmt)
    trace.cluster_specs[cl] = spec
    table = acmetrace_table(jobs, cluster=cl, schema="kalos", timezone=tz)
    written_ids = table.column("job_id").to_numpy(zero_copy_only=False).astype(str)
    if not np.array_equal(written_ids, jobs["job_id"].to_numpy(dtype=str)):
        raise RuntimeError("convert: the written rows are not in the order of the jobs (an internal error)")
    # duration and gpu_time on the run-time basis (end − start, 0 if never started), as load_trace
    # recomputes them: the Kalos convention (end − submit) belongs to Kalos's published files only
    _, st, st_miss, en, _ = rounded_times(jobs)
    dur = np.where(st_miss, 0, en - np.where(st_miss, 0, st))
    for col, vals in (("duration", int_strings(dur)),
                      ("gpu_time", int_strings(jobs["gpu_num"].to_numpy(dtype="int64") * dur, float_suffix=True))):
        table = table.set_column(table.column_names.index(col), col, pa.array(vals, type=pa.large_string()))
    table = table.append_column("cluster", pa.array([cl] * len(jobs), type=pa.large_string()))
    for c in EXTRA_ORDER:
        if ex is not None and c in ex.columns:
            v = ex[c].astype(object).where(ex[c].notna(), None).to_numpy(object)
            a = pa.array([None if x is None else str(x) for x in v], type=pa.large_string())
            table = table.append_column(c, pc.fill_null(a, pa.scalar("", pa.large_string())) if a.null_count else a)
    if to_stdout:  # CSV on stdout (the report goes to stderr); the rows carry the cluster column
        import sys

        import pyarrow.csv as pcsv

        sink = pa.BufferOutputStream()
        pcsv.write_csv(table, sink, pcsv.WriteOptions(quoting_style="needed"))
        sys.stdout.buffer.write(sink.getvalue().to_pybytes())
        sys.stdout.flush()
        described = "stdout (the rows' cluster column; a stream has no sidecar)"
    elif name.endswith(".parquet"):
        import json

        out.parent.mkdir(parents=True, exist_ok=True)
        import pyarrow.parquet as pq

        from acmemodel.clusters import PARQUET_KEY

        meta = dict(table.schema.metadata or {})
        meta[PARQUET_KEY] = json.dumps(spec.to_dict()).encode("utf-8")
        pq.write_table(table.replace_schema_metadata(meta), out)
        described = f"{out} (Parquet metadata)"
    else:
        import pyarrow.csv as pcsv

        from acmemodel.clusters import write_sidecar

        out.parent.mkdir(parents=True, exist_ok=True)
        stream = pa.CompressedOutputStream(str(out), "gzip") if name.endswith(".gz") else pa.OSFile(str(out), "wb")
        with stream as f:
            pcsv.write_csv(table, f, pcsv.WriteOptions(quoting_style="needed"))
        described = str(write_sidecar(spec, out))
    j = jobs
    summary = {
        "format": fmt, "out": str(out), "cluster": cl, "timezone": tz,
        "cluster_description": {**spec.to_dict(), "written_to": described},
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
    return dataclasses.replace(trace, jobs=jobs, extras=ex), summary


#: formats whose jobs carry no node count (``node_num`` is a placeholder 1): no per-node check
NO_NODE_COUNT = ("swf",)


def _described(spec, jobs, gpus: int | None, gpus_per_node: int | None, fmt: str):
    """``spec`` with the ``--gpus``/``--gpus-per-node`` given, checked against the jobs: ValueError
    naming the option, the job and its file line when a job asks for more than the cluster holds
    (per node only where the log records nodes, not SWF)."""
    import dataclasses

    import numpy as np

    g = jobs["gpu_num"].to_numpy(dtype="int64")
    n = np.maximum(jobs["node_num"].to_numpy(dtype="int64"), 1)

    def where(i: int) -> str:
        r = jobs.iloc[i]
        return f"job {r['job_id']} ({r['source_file']} line {int(r['source_line'])})"

    changes, src = {}, []
    if gpus is not None:
        i = int(np.argmax(g))
        if g[i] > gpus:
            raise ValueError(f"--gpus: {gpus:,} GPUs contradicts the log: {where(i)} asks for {int(g[i]):,} GPUs")
        changes["gpus"] = int(gpus)
        src.append("--gpus")
    if gpus_per_node is not None and fmt in NO_NODE_COUNT:
        changes["gpus_per_node"] = int(gpus_per_node)
        src.append("--gpus-per-node")
    elif gpus_per_node is not None:
        per = -(-g // n)
        i = int(np.argmax(per))
        if per[i] > gpus_per_node:
            raise ValueError(f"--gpus-per-node: {gpus_per_node} contradicts the log: {where(i)} asks for "
                             f"{int(g[i]):,} GPUs on {int(n[i]):,} node(s), {int(per[i])} per node")
        changes["gpus_per_node"] = int(gpus_per_node)
        src.append("--gpus-per-node")
    if not changes:
        return spec
    if "gpus" in changes and "gpus_per_node" not in changes and spec.gpus_per_node is not None \
            and changes["gpus"] % spec.gpus_per_node:
        changes["gpus_per_node"] = None  # (the log's per-node figure does not divide the size given)
    if "gpus_per_node" in changes and "gpus" not in changes and spec.gpus is not None \
            and spec.gpus % changes["gpus_per_node"]:
        raise ValueError(f"--gpus-per-node: the log's {spec.gpus:,} GPUs are not a whole number of "
                         f"{changes['gpus_per_node']}-GPU nodes; give --gpus too")
    return dataclasses.replace(spec, **changes, source=f"convert {' '.join(src)}"
                               + (f"; {spec.source}" if spec.source else ""))


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
    origin: Optional[str] = typer.Option(None, "--origin", help="Time of second 0 of inputs whose times are "
                                         "seconds since the trace start (k8s pod/instance lists; ISO time, "
                                         "UTC unless it has an offset, or Unix seconds). Default: "
                                         "1970-01-01 UTC."),
    gpus: Optional[int] = typer.Option(None, "--gpus", help="GPUs of the cluster (written in its description; "
                                       "forecast caps and plan --init use it). Default: from the log when it "
                                       "says (SWF MaxProcs), else unknown."),
    gpus_per_node: Optional[int] = typer.Option(None, "--gpus-per-node", help="GPUs per node of the cluster."),
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
    import tempfile

    from acmemodel.cli._common import err_console, stdin_file

    if json_out and str(out) == "-":
        raise ValueError("--json and -o - both write to stdout; give one")
    with tempfile.TemporaryDirectory() as tmp:
        paths = [stdin_file(tmp, "stdin" + _SUFFIX.get(src.value, ".csv")) if str(p) == "-" else p for p in paths]
        trace, s = convert(paths, src.value, out, cluster=cluster or ("stdin" if str(out) == "-" and any(
            p.name.startswith("stdin") and p.parent == Path(tmp) for p in paths) else None),
            timezone=timezone, extracted_at=extracted_at, type_map=type_map, origin=origin, gpus=gpus,
            gpus_per_node=gpus_per_node)
    if json_out:
        print_json(s)
        return
    console = err_console if str(out) == "-" else _console
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
    d = s["cluster_description"]
    t.add_row("cluster size", describe_size(d))
    if d["partitions"]:
        t.add_row("partitions", ", ".join(d["partitions"]))
    t.add_row("description", d["written_to"])
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
