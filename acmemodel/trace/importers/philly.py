"""Philly ``cluster_job_log`` (Microsoft Philly traces): a JSON array, one entry per logical job::

    {"status": "Pass", "vc": "ee9e8c", "jobid": "application_1506638472019_10238", "user": "b38e7d",
     "submitted_time": "2017-10-03 02:41:03",
     "attempts": [{"start_time": "2017-10-03 02:41:15", "end_time": "2017-10-03 03:11:30",
                   "detail": [{"ip": "m1", "gpus": ["gpu0", "gpu1"]}]}, ...]}

Every attempt becomes one job: a job with one attempt keeps its ``jobid``; with several, attempt k is
``<jobid>@k`` and links to attempt k−1 through ``restart_of`` (a restart chain). Attempt 1 is
submitted at ``submitted_time``, attempt k > 1 at the end of attempt k − 1 (Philly retries at once;
the gap until its start is its queueing). ``gpu_num`` = the attempt's GPUs (sum of ``len(gpus)``
over ``detail``), ``node_num`` = ``len(detail)``. ``status``: Pass → COMPLETED, Killed → CANCELLED,
Failed → FAILED for the last attempt; earlier attempts are FAILED (they were retried); Running →
RUNNING, Queued/Waiting → PENDING. Times are local (``timezone``, default UTC with a warning);
``None`` = unknown. A job that never got an attempt has no end time and is quarantined
(``never_scheduled``) unless it is still queued (PENDING, censored). ``type``: ``--type-map`` rules
on ``vc``, else the vc. Entries that are not objects with ``jobid`` and ``submitted_time`` are
quarantined (``bad_record``); a line number is the entry's position (1-based) in the array.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from acmemodel.errors import TraceFormatError
from acmemodel.trace.importers import _common as C

STATUS = {"pass": "COMPLETED", "killed": "CANCELLED", "failed": "FAILED", "running": "RUNNING",
          "queued": "PENDING", "waiting": "PENDING"}


def read(path, *, timezone: str | None = None, type_map=None) -> C.Imported:
    path = Path(path)
    if not path.exists():
        raise TraceFormatError(f"{path}: no such file")
    if path.is_dir() or path.stat().st_size == 0:
        raise TraceFormatError(f"{path}: empty file or a directory")
    try:
        data = json.loads(path.read_text(encoding="utf-8", errors="replace"))
    except json.JSONDecodeError as e:
        raise TraceFormatError(f"{path}: not JSON ({e.msg} at line {e.lineno})") from None
    if isinstance(data, dict):
        data = [data]
    if not isinstance(data, list):
        raise TraceFormatError(f"{path}: expected a JSON array of jobs")
    warnings = []
    if timezone is None:
        warnings.append(f"{path}: Philly times have no zone; read as UTC (pass timezone=)")
    tz = C.timezone_offset(timezone)
    q = C.Quarantine(str(path))
    rows: dict[str, list] = {k: [] for k in ("job_id", "user", "vc", "state", "gpu_num", "node_num", "submit",
                                             "start", "end", "restart_of", "line")}
    n_att = 0
    for k, e in enumerate(data, start=1):
        raw = json.dumps(e)[:500]
        if not isinstance(e, dict) or not e.get("jobid") or "submitted_time" not in e:
            q.add([k], "bad_record", "not a job object with jobid and submitted_time", [raw])
            continue
        status = STATUS.get(str(e.get("status", "")).strip().lower())
        if status is None:
            q.add([k], "unknown_state", f"status = {e.get('status')!r}", [raw])
            continue
        sub, bad = C.parse_local_times([e.get("submitted_time")], tz)
        atts = e.get("attempts") or []
        parsed = []
        ok = not bad[0] and np.isfinite(sub[0])
        for a in atts if ok else []:
            if not isinstance(a, dict):
                ok = False
                break
            st, b1 = C.parse_local_times([a.get("start_time")], tz)
            en, b2 = C.parse_local_times([a.get("end_time")], tz)
            if b1[0] or b2[0]:
                ok = False
                break
            det = a.get("detail") or []
            gpus = sum(len(d.get("gpus") or []) for d in det if isinstance(d, dict))
            parsed.append((st[0], en[0], gpus, len(det)))
        if not ok:
            q.add([k], "unparsable_timestamp", "submitted_time or an attempt time is not a timestamp", [raw])
            continue
        if not parsed:
            if status in ("PENDING", "RUNNING"):
                parsed = [(np.nan, np.nan, 0, 1)]
                status = "PENDING"
            else:
                q.add([k], "never_scheduled", f"status {e.get('status')} without attempts: no end time", [raw])
                continue
        jid = str(e["jobid"])
        multi = len(parsed) > 1
        n_att += len(parsed) - 1
        for i, (st, en, g, nn) in enumerate(parsed, start=1):
            last = i == len(parsed)
            rows["job_id"].append(f"{jid}@{i}" if multi else jid)
            rows["user"].append(str(e.get("user", "unknown")))
            rows["vc"].append(str(e.get("vc", "")))
            rows["state"].append(status if last else "FAILED")
            rows["gpu_num"].append(float(g))
            rows["node_num"].append(float(max(nn, 1)))
            rows["submit"].append(sub[0] if i == 1 else parsed[i - 2][1])
            rows["start"].append(st)
            rows["end"].append(en)
            rows["restart_of"].append(f"{jid}@{i - 1}" if i > 1 else None)
            rows["line"].append(k)
    vc = np.array(rows["vc"], dtype=object)
    tmap = C.TypeMap.parse(type_map)
    types, tcounts = tmap.apply({"vc": vc}, vc, "vc")
    out = {"job_id": np.array(rows["job_id"], dtype=object), "user": np.array(rows["user"], dtype=object),
           "type": types, "state": np.array(rows["state"], dtype=object),
           "gpu_num": np.array(rows["gpu_num"]), "node_num": np.array(rows["node_num"]),
           "cpu_num": np.full(len(vc), np.nan), "submit_time": np.array(rows["submit"], dtype=float),
           "start_time": np.array(rows["start"], dtype=float), "end_time": np.array(rows["end"], dtype=float),
           "vc": vc}
    if any(r is not None for r in rows["restart_of"]):
        out["restart_of"] = np.array(rows["restart_of"], dtype=object)
    report = {"format": "philly", "file": str(path), "records_in": len(data),
              "accepted_rows": len(rows["job_id"]) - n_att, "attempt_rows_added": n_att, "folded": 0,
              "rejected": q.counts(), "timezone": tz,
              "mapping": {"job_id": "jobid (@k per attempt)", "gpu_num": "sum of len(detail[].gpus)",
                          "node_num": "len(detail)", "state": "status (earlier attempts FAILED)",
                          "type": "type-map rules on vc, else vc"},
              "types": tcounts}
    return C.Imported(format="philly", path=str(path), table=C.make_table(out),
                      lines=np.array(rows["line"], dtype=np.int64), rejected=q.frame(),
                      cluster=C.cluster_from_path(path.parent if path.stem == "cluster_job_log" else path),
                      timezone=tz, report=report, warnings=warnings)
