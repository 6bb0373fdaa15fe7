"""Standard Workload Format v2.2 (Parallel Workloads Archive).

Header comments (``; Key: value``) are read for ``UnixStartTime`` (the epoch of the submit times, a
UTC instant; missing → 0 with a warning), ``TimeZoneString`` (the zone of the site: a named zone such
as ``US/Pacific`` becomes the trace's time zone *by name*, so local times — calendar features — follow
its daylight-saving rules (zoneinfo), e.g. the NASA iPSC log's PDT → PST change on 1993-10-31; the
UTC instants never depend on it; ``timezone=`` / ``--timezone`` overrides it with a fixed offset),
``MaxProcs`` (reported) and a ``Queues:`` legend ``1 Eval, 2 Pretrain, ...`` (as written by
``acmemodel export --format swf``). Each data line has 18 whitespace-separated numbers, ``-1`` =
unknown:

==============================  ============================================================
AcmeTrace                       from SWF field
==============================  ============================================================
job_id                          1 job number
submit_time                     UnixStartTime + 2 submit time
start_time                      submit + 3 wait time; none when the job never ran (allocated
                                processors −1 and run time 0 or −1). Wait −1 = **unknown**: the
                                start is taken as the submit time (the earliest it can be; the
                                NASA iPSC log says its submit times are start times) and the
                                wait is missing (extra column ``queue_unknown`` = 1 → ``queue_s``
                                NaN, never 0; counted as ``unknown_waits`` in the report and by
                                ``describe``; the queue models leave these jobs out)
end_time                        start + 4 run time; for a job that never ran submit + wait
gpu_num                         5 allocated processors, else 8 requested processors (SWF
                                processors are the trace's unit of allocation: GPUs for GPU
                                traces)
node_num                        1 (SWF has no node count)
cpu_num                         unknown (NaN)
mem_per_pod_GB                  10 requested memory (KB per processor) × processors, GB
user                            ``u<12 user ID>``
state                           11 status: 1 COMPLETED, 0 FAILED, 5 CANCELLED; partial executions
                                2 → REQUEUED, 3 → COMPLETED, 4 → FAILED; −1 (unknown) → COMPLETED,
                                counted and warned
type                            ``--type-map`` rules on the queue (``qos``) / partition fields, else
                                the header's queue legend, else ``queue<N>``
restart_of                      17 preceding job number (a restart chain link); 18 think time
                                kept as ``think_time_s``
==============================  ============================================================

Quarantined: lines with other than 18 fields or non-numeric fields (``bad_record``), a missing
submit time (``missing_timestamp``), a negative run time of a job that ran (``bad_run_time``).
"""
from __future__ import annotations

import gzip
import re
from pathlib import Path

import numpy as np
import pandas as pd

from acmemodel.errors import TraceFormatError
from acmemodel.trace.importers import _common as C

STATUS = {1: "COMPLETED", 0: "FAILED", 5: "CANCELLED", 2: "REQUEUED", 3: "COMPLETED", 4: "FAILED"}


def _open(path: Path):
    with open(path, "rb") as f:
        gz = f.read(2) == b"\x1f\x8b"
    return gzip.open(path, "rt", encoding="utf-8", errors="replace") if gz else \
        open(path, encoding="utf-8", errors="replace")


def read(path, *, timezone: str | None = None, type_map=None) -> C.Imported:
    path = Path(path)
    if not path.exists():
        raise TraceFormatError(f"{path}: no such file")
    if path.is_dir() or path.stat().st_size == 0:
        raise TraceFormatError(f"{path}: empty file or a directory, not an SWF file")
    header: dict[str, str] = {}
    rows, lines, raws = [], [], []
    q = C.Quarantine(str(path))
    warnings: list[str] = []
    records = 0
    with _open(path) as f:
        for ln, line in enumerate(f, start=1):
            s = line.strip()
            if not s:
                continue
            if s.startswith(";"):
                m = re.match(r";\s*([A-Za-z]+)\s*:\s*(.*)$", s)
                if m and m.group(1) not in header:
                    header[m.group(1)] = m.group(2).strip()
                continue
            records += 1
            parts = s.split()
            vals = None
            if len(parts) == 18:
                try:
                    vals = [float(x) for x in parts]
                except ValueError:
                    vals = None
            if vals is None:
                q.add([ln], "bad_record", f"{len(parts)} fields, expected 18 numbers", [s])
                continue
            rows.append(vals)
            lines.append(ln)
            raws.append(s)
    if not records:
        raise TraceFormatError(f"{path}: no SWF job lines (only comments or blank lines)")
    F = np.array(rows, dtype=float).reshape(-1, 18)
    lines = np.array(lines, dtype=np.int64)
    t0 = header.get("UnixStartTime")
    try:
        t0 = float(t0) if t0 is not None else None
    except ValueError:
        t0 = None
    if t0 is None:
        warnings.append(f"{path}: no UnixStartTime in the header; submit times read as seconds since "
                        "1970-01-01 UTC")
        t0 = 0.0
    tzname = header.get("TimeZoneString")
    tz = C.timezone_offset(timezone) if timezone is not None else _zone_of(tzname)

    def fld(k):  # 1-based SWF field, -1 → NaN
        v = F[:, k - 1].copy()
        v[v == -1] = np.nan
        return v

    submit = fld(2) + t0
    wait, run, alloc, req = fld(3), fld(4), fld(5), fld(8)
    ran = ~(np.isnan(alloc) & (np.isnan(run) | (run == 0)))
    wait_unknown = ran & np.isnan(wait)
    start = np.where(ran, submit + np.where(wait_unknown, 0.0, wait), np.nan)
    end = np.where(ran, start + run, submit + wait)
    status = F[:, 10].astype(np.int64)
    state = np.array([STATUS.get(int(x), "COMPLETED") for x in status], dtype=object)
    unknown = ~np.isin(status, list(STATUS))
    if unknown.any():
        warnings.append(f"{path}: {int(unknown.sum())} job(s) with status {sorted(set(status[unknown].tolist()))} "
                        "(unknown) read as COMPLETED")
    gpus = np.where(np.isnan(alloc), req, alloc)
    gpus = np.where(np.isnan(gpus), 0.0, gpus)
    mem = fld(10) * gpus / 1024 ** 2
    bad_sub = np.isnan(submit)
    bad_run = ran & (run < 0)
    q.add(lines[bad_sub], "missing_timestamp", "submit time is -1", [raws[i] for i in np.flatnonzero(bad_sub)])
    q.add(lines[bad_run & ~bad_sub], "bad_run_time", "negative run time",
          [raws[i] for i in np.flatnonzero(bad_run & ~bad_sub)])
    ok = ~(bad_sub | bad_run)
    legend = _legend(header.get("Queues", ""))
    queue = F[:, 14].astype(np.int64)
    part = F[:, 15].astype(np.int64)
    default = np.array([legend.get(int(x), f"queue{int(x)}") if x != -1 else "Other" for x in queue], dtype=object)
    qos = np.array([str(int(x)) if x != -1 else "" for x in queue], dtype=object)
    partition = np.array([str(int(x)) if x != -1 else "" for x in part], dtype=object)
    tmap = C.TypeMap.parse(type_map)
    types, type_counts = tmap.apply({"qos": qos, "partition": partition}, default,
                                    "queue legend" if legend else "queue number")
    jid = np.array([str(int(x)) for x in F[:, 0]], dtype=object)
    prev = np.array([str(int(x)) if x > 0 else None for x in F[:, 16]], dtype=object)
    cols = {"job_id": jid, "user": np.array([f"u{int(x)}" if x != -1 else "unknown" for x in F[:, 11]], dtype=object),
            "type": types, "state": state, "gpu_num": gpus, "node_num": np.ones(len(F)),
            "cpu_num": np.full(len(F), np.nan), "mem_per_pod_GB": mem,
            "submit_time": submit, "start_time": start, "end_time": end,
            "qos": qos, "partition": partition, "restart_of": prev, "think_time_s": fld(18),
            "queue_unknown": C.queue_unknown_strings(wait_unknown)}
    cols = {k: (v[ok] if isinstance(v, np.ndarray) else v) for k, v in cols.items()}
    if not any(p is not None for p in cols["restart_of"]):
        del cols["restart_of"]
    if not any(p is not None for p in cols["queue_unknown"]):
        del cols["queue_unknown"]
    cols["think_time_s"] = np.array([None if np.isnan(x) else repr(float(x)) for x in cols["think_time_s"]],
                                    dtype=object)
    table = C.make_table(cols)
    report = {"format": "swf", "file": str(path), "records_in": int(records), "accepted_rows": int(ok.sum()),
              "folded": 0, "rejected": q.counts(), "timezone": tz,
              "unknown_waits": int((wait_unknown & ok).sum()),
              "header": {k: header[k] for k in ("UnixStartTime", "TimeZoneString", "MaxProcs", "MaxNodes")
                         if k in header},
              "mapping": {"gpu_num": "allocated processors (field 5), else requested (8)",
                          "submit_time": "UnixStartTime + field 2", "start_time": "submit + wait (3)",
                          "end_time": "start + run (4)", "state": "status (11)",
                          "queue": "wait (3); -1 = unknown → missing (start = submit)",
                          "time zone": (f"{tz} (zoneinfo rules, DST-aware)" if "/" in tz else tz),
                          "restart_of": "preceding job number (17)",
                          "type": "type-map rules on queue/partition, else " + ("the header's queue legend"
                                                                               if legend else "queue<N>")},
              "types": type_counts,
              "states": {str(k): int(v) for k, v in pd.Series(status).value_counts().sort_index().items()}}
    return C.Imported(format="swf", path=str(path), table=table, lines=lines[ok], rejected=q.frame(),
                      cluster=C.cluster_from_path(path), timezone=tz, report=report, warnings=warnings)


def _legend(text: str) -> dict[int, str]:
    """``queue number = job type code: 1 Eval, 2 Pretrain`` → {1: "Eval", 2: "Pretrain"}."""
    if ":" in text:
        text = text.split(":", 1)[1]
    out = {}
    for m in re.finditer(r"(\d+)\s+([A-Za-z][\w.-]*)", text):
        out[int(m.group(1))] = m.group(2)
    return out


def _zone_of(tzname: str | None) -> str:
    """The trace's time zone from ``TimeZoneString``: an IANA zone name (validated with zoneinfo) is kept
    as the name, so local times follow its daylight-saving rules; ``UTC+08:00``-like strings become a
    fixed offset; anything else (or nothing) UTC."""
    if not tzname:
        return "+00:00"
    name = tzname.strip()
    try:
        from zoneinfo import ZoneInfo

        ZoneInfo(name)
        return name
    except Exception:  # noqa: BLE001 (not a zone name: a fixed offset, else UTC)
        m = re.fullmatch(r"(?:UTC|GMT)?([+-]\d{1,2}(?::?\d{2})?)", name)
        return C.timezone_offset(m.group(1)) if m else "+00:00"
