"""Alibaba PAI 2020 (``cluster-trace-gpu-v2020``): ``pai_job_table.csv`` joined with the
``pai_task_table.csv`` beside it.

Both files ship without a header (a header line is accepted too); their columns are, in order::

    pai_job_table:  job_name, inst_id, user, status, start_time, end_time
    pai_task_table: job_name, task_name, inst_num, status, start_time, end_time,
                    plan_cpu, plan_mem, plan_gpu, gpu_type

Give the job table; the task table is read from the same directory (``pai_task_table.csv[.gz]``).
One job per job-table row:

==================  ==========================================================================
AcmeTrace           from
==================  ==========================================================================
job_id              job_name
user                user
submit_time         job start_time (PAI records the job's creation there)
start_time          the earliest task start_time (none if no task started)
end_time            job end_time (empty for Running/Waiting jobs)
state               status: Terminated → COMPLETED, Failed → FAILED, Running → RUNNING,
                    Waiting → PENDING, Interrupted → CANCELLED
gpu_num             ⌈Σ inst_num × plan_gpu / 100⌉ over the job's tasks (plan_gpu is a percentage
                    of a GPU: 25 = a quarter); the exact fraction kept as ``gpu_fraction``
cpu_num             Σ inst_num × plan_cpu / 100 (plan_cpu: percent of a core)
mem_per_pod_GB      max plan_mem (GB per instance)
node_num            Σ inst_num (instances)
type                ``--type-map`` rules on the job's task names (``name``), else its first task name
                    (worker, ps, tensorflow, PyTorchWorker, ...)
==================  ==========================================================================

Times are seconds from an undisclosed origin; they are read as Unix seconds (warned). Quarantined:
rows with the wrong number of fields (``wrong_field_count``), non-numeric times (``unparsable_timestamp``),
jobs without tasks (``no_tasks``: no resources known).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from acmemodel.errors import TraceFormatError
from acmemodel.trace.importers import _common as C

JOB_COLUMNS = ("job_name", "inst_id", "user", "status", "start_time", "end_time")
TASK_COLUMNS = ("job_name", "task_name", "inst_num", "status", "start_time", "end_time", "plan_cpu", "plan_mem",
                "plan_gpu", "gpu_type")
STATUS = {"terminated": "COMPLETED", "failed": "FAILED", "running": "RUNNING", "waiting": "PENDING",
          "interrupted": "CANCELLED"}


def _read(path: Path, names, q: C.Quarantine | None):
    import csv
    import gzip

    if not path.exists():
        raise TraceFormatError(f"{path}: no such file")
    if path.stat().st_size == 0:
        raise TraceFormatError(f"{path}: empty file")
    with open(path, "rb") as f:
        gz = f.read(2) == b"\x1f\x8b"
    opener = gzip.open if gz else open
    rows, lines, raws = [], [], []
    with opener(path, "rt", encoding="utf-8", errors="replace", newline="") as f:
        for ln, rec in enumerate(csv.reader(f), start=1):
            if not rec or not any(x.strip() for x in rec):
                continue
            if ln == 1 and rec[0].strip().lower() == "job_name":
                continue  # a header line
            if len(rec) != len(names):
                if q is not None:
                    q.add([ln], "wrong_field_count", f"{len(rec)} fields, expected {len(names)}", [",".join(rec)])
                continue
            rows.append(rec)
            lines.append(ln)
            raws.append(",".join(rec))
    df = pd.DataFrame(rows, columns=list(names), dtype=object)
    df["_line"] = np.array(lines, dtype=np.int64)
    df["_raw"] = raws
    return df


def read(path, *, timezone: str | None = None, type_map=None) -> C.Imported:
    path = Path(path)
    if "task" in path.name and "job" not in path.name:
        raise TraceFormatError(f"{path}: give pai_job_table.csv; the task table is read beside it")
    task_path = None
    for cand in (path.with_name(path.name.replace("job_table", "task_table")),
                 path.parent / "pai_task_table.csv", path.parent / "pai_task_table.csv.gz"):
        if cand != path and cand.exists():
            task_path = cand
            break
    if task_path is None:
        raise TraceFormatError(f"{path}: no pai_task_table.csv beside the job table (it holds the resources)")
    q = C.Quarantine(str(path))
    jobs = _read(path, JOB_COLUMNS, q)
    tasks = _read(task_path, TASK_COLUMNS, None)
    tz = C.timezone_offset(timezone)
    warnings = [f"{path}: PAI times are seconds from an undisclosed origin; read as Unix seconds"]
    n_in = len(jobs) + sum(q.counts().values())
    for c in ("inst_num", "plan_cpu", "plan_mem", "plan_gpu", "start_time", "end_time"):
        tasks[c] = pd.to_numeric(tasks[c].str.strip(), errors="coerce")
    tasks["gpu"] = tasks["inst_num"].fillna(1) * tasks["plan_gpu"].fillna(0) / 100.0
    tasks["cpu"] = tasks["inst_num"].fillna(1) * tasks["plan_cpu"].fillna(0) / 100.0
    agg = tasks.groupby("job_name", sort=False).agg(
        gpu=("gpu", "sum"), cpu=("cpu", "sum"), mem=("plan_mem", "max"), inst=("inst_num", "sum"),
        start=("start_time", "min"), first_task=("task_name", "first"))
    names = (tasks[["job_name", "task_name"]].drop_duplicates().sort_values(["job_name", "task_name"])
             .groupby("job_name", sort=False)["task_name"].agg(" ".join))
    agg["task_names"] = names.reindex(agg.index)
    sub, bad_s = C.numeric(jobs["start_time"].to_numpy(object))
    end, bad_e = C.numeric(jobs["end_time"].to_numpy(object))
    bad = bad_s | bad_e | np.isnan(sub)
    lines = jobs["_line"].to_numpy(np.int64)
    raws = jobs["_raw"].to_numpy(object)
    q.add(lines[bad], "unparsable_timestamp", "start_time/end_time is not a number of seconds", raws[bad])
    a = agg.reindex(jobs["job_name"].str.strip())
    no_task = a["gpu"].isna().to_numpy() & ~bad
    q.add(lines[no_task], "no_tasks", "job_name not in the task table", raws[no_task])
    ok = ~bad & ~no_task
    status = jobs["status"].str.strip().str.lower().map(STATUS).fillna(jobs["status"].str.strip()).to_numpy(object)
    gfrac = a["gpu"].to_numpy(float)
    start = a["start"].to_numpy(float)
    start = np.where(np.isfinite(start) & (start < sub), sub, start)  # (a task can't start before the job)
    tmap = C.TypeMap.parse(type_map)
    types, tcounts = tmap.apply({"name": a["task_names"].to_numpy(object)}, a["first_task"].to_numpy(object),
                                "first task name")
    out = {"job_id": jobs["job_name"].str.strip().to_numpy(object), "user": jobs["user"].str.strip().to_numpy(object),
           "type": types, "state": status, "gpu_num": np.ceil(np.round(gfrac, 6)),
           "node_num": np.maximum(a["inst"].fillna(1).to_numpy(float), 1.0), "cpu_num": a["cpu"].to_numpy(float),
           "mem_per_pod_GB": a["mem"].to_numpy(float), "submit_time": sub, "start_time": start, "end_time": end,
           "job_name": a["task_names"].to_numpy(object),
           "gpu_fraction": np.array([repr(round(float(x), 6)) if np.isfinite(x) else None for x in gfrac], dtype=object)}
    out = {k: v[ok] for k, v in out.items()}
    report = {"format": "pai2020", "file": str(path), "task_file": str(task_path), "records_in": int(n_in),
              "accepted_rows": int(ok.sum()), "folded": 0, "tasks_read": int(len(tasks)), "rejected": q.counts(),
              "timezone": tz,
              "mapping": {"submit_time": "job start_time", "start_time": "earliest task start_time",
                          "gpu_num": "ceil(sum inst_num*plan_gpu/100)", "cpu_num": "sum inst_num*plan_cpu/100",
                          "state": "status", "type": "type-map rules on task names, else first task name"},
              "types": tcounts}
    return C.Imported(format="pai2020", path=str(path), table=C.make_table(out), lines=lines[ok],
                      rejected=q.frame(), cluster=C.cluster_from_path(path), timezone=tz, report=report,
                      warnings=warnings)
