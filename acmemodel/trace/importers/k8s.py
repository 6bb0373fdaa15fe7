"""Kubernetes pod / instance lists: Alibaba GPU 2023 ``openb_pod_list_*.csv``, Alibaba GPU 2025
``disaggregated_DLRM_trace.csv`` and other pod exports.

Columns are found by name (any case) through these aliases (first one present wins):

==================  ========================================================================
field               accepted column names
==================  ========================================================================
name                name, pod, pod_name, instance_sn, instance, instance_name, instance_id
pod_phase           pod_phase, phase, status (optional: see *Lifecycle*)
creation_time       creation_time, creationtimestamp, submit_time
scheduled_time      scheduled_time, start_time, starttime
deletion_time       deletion_time, finish_time, end_time, deletiontimestamp
user                user, namespace, app_name, app (the app owning the instance)
job_name            app_name, app (kept as the extra column ``job_name``)
type (default)      qos, role (the source's own category; ``--type-map`` rules see qos/name/
                    partition; ``role`` is also offered to rules as ``partition``)
num_gpu             num_gpu, gpu_request, gpu
gpu_milli           gpu_milli (per-GPU share in 1/1000)
CPUs                cpu_milli (millicores) or cpu_request (cores)
memory              memory_mib (MiB) or memory_request (GiB)
==================  ========================================================================

Only ``name`` (or a row number when no name column exists: ``row<line>``) and ``creation_time`` or
``deletion_time`` are required.

Times
-----
Plain numbers are seconds since an origin: ``origin`` (``--origin``: a timestamp or Unix
seconds; the trace start of openb / DLRM, which publish seconds since the trace start). Without it
the origin is 1970-01-01 UTC (with a warning), so dates fall in 1970 but every duration is right.
ISO timestamps are accepted too (naive ones in ``timezone``). The **trace start** is the origin for
numeric times, else the earliest timestamp in the file.

Lifecycle: ended vs alive
-------------------------
The **extraction time** ``t_x`` is ``extracted_at`` (``--extracted-at``) or, when not given, the
latest timestamp in the file. A pod is *ended* when its deletion time is known and before ``t_x``;
otherwise (no deletion time, or one at/after ``t_x`` — openb writes the trace end there) it is
*alive at extraction* and right-censored at ``t_x``. The last observed phase alone does not decide:

==============================  ==========================================================
phase (last observed)           AcmeTrace state
==============================  ==========================================================
Succeeded / Failed              COMPLETED / FAILED
Running, ended                  CANCELLED (deleted while running: ended from outside)
Running, alive                  RUNNING (run time right-censored at t_x)
Pending, ended                  CANCELLED, never started (wait right-censored at deletion)
Pending, alive                  PENDING (wait right-censored at t_x)
no phase column, ended          CANCELLED (the instance was deleted; the log does not say how
                                its work ended)
no phase column, alive          RUNNING if scheduled (or left-truncated), else PENDING
other phases                    quarantined (``unknown_phase``)
==============================  ==========================================================

Left truncation
---------------
A row with an empty creation time (and a known deletion or scheduled time, or a row of a file whose
instances all lack one) existed before the trace began: it is **kept**, not quarantined, and marked
``left_truncated`` (extra column ``entry_time`` = the trace start, the time it entered
observation). Its ``submit_time`` is the entry time (the creation is unknown, so its wait is
unknown: ``queue_s`` NaN). Its ``start_time`` is the scheduled time when known, else the entry time
(the run began before the trace: its age at entry is unknown). The trace layer turns these into
``Trace.jobs`` columns ``left_truncated`` and ``entry_age_s``; models use them as delayed-entry
observations or leave them out of a fit, counted (see :mod:`acmemodel.trace`). A row created before
the trace start (ISO times with an ``origin``) is left-truncated the same way. A row created before
the trace start but scheduled after it has a whole run: only its wait is unknown (extra column
``queue_unknown`` = 1, ``queue_s`` NaN); it is not marked left-truncated.

Mapping of the other columns: ``gpu_num`` = num_gpu (a shared GPU, ``gpu_milli`` < 1000, still
counts as one; the fraction ``num_gpu × gpu_milli / 1000`` is kept as ``gpu_fraction``),
``node_num`` 1, ``cpu_num`` cores, ``mem_per_pod_GB`` GiB.

Report: ``records_in = accepted_rows + folded + rejected`` (``left_truncated`` counts the accepted
rows that entered left-truncated; ``right_censored`` those alive at extraction; ``ended_while_running``
the Running pods deleted before ``t_x``).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from acmemodel.trace.importers import _common as C
from acmemodel.trace.importers.helios import _Raw, drop_blank, read_csv_text

ALIASES = {"name": ("name", "pod", "pod_name", "instance_sn", "instance", "instance_name", "instance_id"),
           "pod_phase": ("pod_phase", "phase", "status"),
           "creation_time": ("creation_time", "creationtimestamp", "submit_time"),
           "scheduled_time": ("scheduled_time", "start_time", "starttime"),
           "deletion_time": ("deletion_time", "finish_time", "end_time", "deletiontimestamp"),
           "user": ("user", "namespace", "app_name", "app"),
           "app": ("app_name", "app"),
           "qos": ("qos",), "role": ("role",),
           "num_gpu": ("num_gpu", "gpu_request", "gpu"), "gpu_milli": ("gpu_milli",),
           "cpu_milli": ("cpu_milli",), "cpu_cores": ("cpu_request",),
           "memory_mib": ("memory_mib",), "memory_gib": ("memory_request",),
           "gpu_spec": ("gpu_spec",)}


def read(path, *, timezone: str | None = None, type_map=None, origin=None, extracted_at=None) -> C.Imported:
    """Read one pod/instance list (module docstring). ``origin``: the time of second 0 of numeric times
    (timestamp or Unix seconds; default 1970-01-01 UTC); ``extracted_at``: the extraction time (default
    the latest timestamp in the file)."""
    path = Path(path)
    df = read_csv_text(path)
    lines = np.arange(2, len(df) + 2, dtype=np.int64)
    df, lines = drop_blank(df, lines)
    low = {c.lower(): c for c in df.columns}
    src: dict[str, str] = {}

    def col(k):
        for a in ALIASES.get(k, (k,)):
            if a in low:
                src[k] = low[a]
                return df[low[a]].str.strip().to_numpy(object)
        return None

    have = [k for k in ("creation_time", "deletion_time") if col(k) is not None]
    if not have:
        C.require_columns(path, [], ("creation_time",), "Kubernetes pod/instance list")
    n = len(df)
    tz = C.timezone_offset(timezone)
    warnings = []
    q = C.Quarantine(str(path))
    raw = _Raw(df)
    t0 = 0.0 if origin is None else C.time_seconds(origin, "origin")
    times, fail = {}, np.zeros(n, dtype=bool)
    numeric_times = False
    for k in ("creation_time", "scheduled_time", "deletion_time"):
        v = col(k)
        if v is None:
            times[k] = np.full(n, np.nan)
            continue
        num, bad = C.numeric(v)
        present = np.array([str(x).strip() != "" for x in v], dtype=bool)
        if present.any() and bad.sum() * 2 < present.sum():  # seconds (the odd non-number is bad)
            times[k] = num + t0
            fail |= bad
            numeric_times = True
        else:
            times[k], b = C.parse_local_times(v, tz)
            fail |= b
    if numeric_times and origin is None:
        warnings.append(f"{path}: pod times are plain seconds; read as seconds since 1970-01-01 UTC "
                        "(openb/DLRM: since the trace start; pass --origin to date them)")
    q.add(lines[fail], "unparsable_timestamp", "a time is neither seconds nor a timestamp", raw[fail])
    cre, sch, dele = times["creation_time"], times["scheduled_time"], times["deletion_time"]
    allt = np.concatenate([cre, sch, dele])
    allt = allt[np.isfinite(allt)]
    # trace start: the origin of numeric times, else the earliest timestamp (else the origin given)
    start0 = t0 if (numeric_times or origin is not None or not len(allt)) else float(allt.min())
    t_x = float(allt.max()) if extracted_at is None and len(allt) else (
        C.time_seconds(extracted_at, "extracted_at") if extracted_at is not None else np.nan)

    # left truncation: created before the trace start (empty creation time, or one before the origin);
    # scheduled inside the trace, only the wait is cut (queue unknown), the run is whole
    with np.errstate(invalid="ignore"):
        before = ~fail & (np.isnan(cre) | (cre < start0))
        wait_cut = before & np.isfinite(sch) & (sch >= start0)
    trunc = before & ~wait_cut
    ended = np.isfinite(dele) & (dele < t_x)
    alive = ~ended
    phase_col = col("pod_phase")
    if phase_col is not None:
        phase = np.array([str(x).strip().lower() for x in phase_col], dtype=object)
    else:
        phase = np.full(n, "", dtype=object)
    state = np.full(n, None, dtype=object)
    scheduled = np.isfinite(sch) | trunc
    state[phase == "succeeded"] = "COMPLETED"
    state[phase == "failed"] = "FAILED"
    run_ph = phase == "running"
    pend_ph = phase == "pending"
    state[run_ph & ended] = "CANCELLED"
    state[run_ph & alive] = "RUNNING"
    state[pend_ph & ended] = "CANCELLED"
    state[pend_ph & alive] = "PENDING"
    if phase_col is None:
        state[ended] = "CANCELLED"
        state[alive & scheduled] = "RUNNING"
        state[alive & ~scheduled] = "PENDING"
    unk = np.array([s is None for s in state]) & ~fail
    if phase_col is not None:
        q.add(lines[unk], "unknown_phase", [f"pod_phase = {p!r}" for p in phase_col[unk]], raw[unk])
    ok = ~fail & ~unk
    # an unfinished pod's end is the trace layer's censoring (t_x); a pending pod never started
    # (a deletion at/after t_x: censored at t_x, which the trace layer then also takes as its extraction time)
    end = np.where(alive & np.isin(state, ["RUNNING", "PENDING"]), np.where(np.isfinite(dele), t_x, np.nan), dele)
    start = sch.copy()
    submit = cre.copy()
    if before.any():
        submit[before] = start0
        # the run began before the trace (unknown when): entry at the trace start, age unknown
        start[trunc & np.isnan(sch)] = start0
        # (scheduled before the trace start, known: the submit time, unknown, is put at the start)
        early = trunc & np.isfinite(sch) & (sch < start0)
        submit[early] = sch[early]
    pend_never = pend_ph & ended  # deleted while pending: never started
    start[pend_never] = np.nan
    if extracted_at is not None:
        late = ok & alive & np.isfinite(dele) & (dele > t_x)
        if late.any():
            warnings.append(f"{path}: {int(late.sum())} pod(s) deleted after the extraction time: "
                            "read as alive at extraction (censored there)")

    def num(k, scale=1.0, default=np.nan):
        v = col(k)
        return C.numeric(v)[0] * scale if v is not None else np.full(n, default)

    num_gpu = num("num_gpu", default=0.0)
    milli = num("gpu_milli", default=1000.0)
    frac = num_gpu * np.where(np.isnan(milli), 1000.0, milli) / 1000.0
    cpu = num("cpu_milli", 1 / 1000.0) if col("cpu_milli") is not None else num("cpu_cores")
    mem = num("memory_mib", 1 / 1024.0) if col("memory_mib") is not None else num("memory_gib")
    qos, role, app = col("qos"), col("role"), col("app")
    names = col("name")
    if names is None:
        names = np.array([f"row{ln}" for ln in lines], dtype=object)
        src["name"] = "row<line>"
    user = col("user")
    tmap = C.TypeMap.parse(type_map)
    if qos is not None:
        default, label = qos, "QoS"
    elif role is not None:
        default, label = role, "role"
    else:
        default, label = np.full(n, "Other", dtype=object), "(none: Other)"
    types, tcounts = tmap.apply({"qos": qos, "name": app if app is not None else names, "partition": role},
                                default, label)
    entry = np.where(trunc, start0, np.nan)
    out = {"job_id": names, "user": user if user is not None else np.full(n, "unknown", dtype=object),
           "type": types, "state": state, "gpu_num": num_gpu, "node_num": np.ones(n), "cpu_num": cpu,
           "mem_per_pod_GB": mem, "submit_time": submit, "start_time": start, "end_time": end,
           "gpu_fraction": np.array([repr(float(x)) if np.isfinite(x) else None for x in frac], dtype=object)}
    if app is not None:
        out["job_name"] = app
    if role is not None:
        out["partition"] = role
    if qos is not None:
        out["qos"] = qos
    if col("gpu_spec") is not None:
        out["gpu_spec"] = col("gpu_spec")
    if (trunc & ok).any():
        out["entry_time"] = C.entry_time_strings(entry)
    if (wait_cut & ok).any():
        out["queue_unknown"] = C.queue_unknown_strings(wait_cut)
    out = {k: v[ok] for k, v in out.items()}
    table = C.make_table(out)
    n_ok = int(ok.sum())
    report = {"format": "k8s", "file": str(path), "records_in": int(n), "accepted_rows": n_ok,
              "folded": 0, "rejected": q.counts(), "timezone": tz,
              "left_truncated": int((trunc & ok).sum()),
              "unknown_waits": int((wait_cut & ok).sum()),
              "right_censored": int((alive & ok & np.isin(state, ["RUNNING", "PENDING"])).sum()),
              "ended_while_running": int((run_ph & ended & ok).sum()),
              "trace_start_utc": C.iso_utc(start0), "extracted_at_utc": C.iso_utc(t_x),
              "mapping": {"job_id": src.get("name", "name"),
                          "submit/start/end": "creation/scheduled/deletion time"
                                              + (f" + origin {C.iso_utc(t0)}" if numeric_times else ""),
                          "state": ("pod_phase, ended vs alive from deletion < extraction time"
                                    if phase_col is not None else "no phase: deleted before extraction "
                                    "→ CANCELLED, else RUNNING/PENDING (censored)"),
                          "gpu_num": f"{src.get('num_gpu', 'none: 0')} (gpu_fraction = num_gpu*gpu_milli/1000)",
                          "cpu_num": "cpu_milli/1000" if "cpu_milli" in src else src.get("cpu_cores", "none"),
                          "mem_per_pod_GB": ("memory_mib/1024" if "memory_mib" in src
                                             else src.get("memory_gib", "none") + " (GiB)"),
                          "left truncation": "empty creation time → kept, entry at the trace start",
                          "type": f"type-map rules on qos/name/partition(role), else {label}"},
              "types": tcounts,
              "states": {p or "(none)": int((phase == p).sum()) for p in sorted(set(phase.tolist()))}}
    return C.Imported(format="k8s", path=str(path), table=table, lines=lines[ok], rejected=q.frame(),
                      cluster=C.cluster_from_path(path), timezone=tz, report=report, warnings=warnings)
