"""Kubernetes pod lists, e.g. Alibaba GPU 2023 ``openb_pod_list_*.csv``.

openb schema: ``name, cpu_milli, memory_mib, num_gpu, gpu_milli, gpu_spec, qos, pod_phase,
creation_time, deletion_time, scheduled_time`` with times in seconds (openb: since the trace start;
read as Unix seconds, so dates fall in 1970 — shift with ``epoch`` if the origin is known). Other pod
exports work when they use these names or the aliases ``pod``/``pod_name``, ``phase``/``status``,
``start_time`` (scheduled), ``finish_time``/``end_time`` (deletion), ``user``/``namespace``; ISO
timestamps are accepted too (naive ones in ``timezone``).

==================  =====================================================================
AcmeTrace           from
==================  =====================================================================
job_id              name
user                user, else namespace, else ``unknown``
submit/start/end    creation_time / scheduled_time / deletion_time (empty = unknown)
state               pod_phase: Succeeded → COMPLETED, Failed → FAILED, Running → RUNNING,
                    Pending → PENDING (a Running or Pending pod's deletion time is where its
                    run or wait is censored); anything else is quarantined (``unknown_phase``)
gpu_num             num_gpu; a shared GPU (``gpu_milli`` < 1000) still counts as one; the
                    fraction ``num_gpu × gpu_milli / 1000`` is kept as ``gpu_fraction``
cpu_num             cpu_milli / 1000
mem_per_pod_GB      memory_mib / 1024
type                ``--type-map`` rules on qos/name, else the QoS class (LS, BE, Burstable, ...)
==================  =====================================================================
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from acmemodel.trace.importers import _common as C
from acmemodel.trace.importers.helios import _Raw, drop_blank, read_csv_text

PHASE = {"succeeded": "COMPLETED", "failed": "FAILED", "running": "RUNNING", "pending": "PENDING"}
ALIASES = {"name": ("name", "pod", "pod_name"), "pod_phase": ("pod_phase", "phase", "status"),
           "creation_time": ("creation_time", "creationtimestamp", "submit_time"),
           "scheduled_time": ("scheduled_time", "start_time", "starttime"),
           "deletion_time": ("deletion_time", "finish_time", "end_time", "deletiontimestamp"),
           "user": ("user", "namespace")}


def read(path, *, timezone: str | None = None, type_map=None, epoch: float = 0.0) -> C.Imported:
    path = Path(path)
    df = read_csv_text(path)
    lines = np.arange(2, len(df) + 2, dtype=np.int64)
    df, lines = drop_blank(df, lines)
    low = {c.lower(): c for c in df.columns}

    def col(k):
        for a in ALIASES.get(k, (k,)):
            if a in low:
                return df[low[a]].str.strip().to_numpy(object)
        return None

    C.require_columns(path, [k for k in ("name", "pod_phase", "creation_time") if col(k) is not None],
                      ("name", "pod_phase", "creation_time"), "Kubernetes pod list")
    tz = C.timezone_offset(timezone)
    warnings = []
    q = C.Quarantine(str(path))
    raw = _Raw(df)
    times, fail = {}, np.zeros(len(df), dtype=bool)
    numeric_times = False
    for k in ("creation_time", "scheduled_time", "deletion_time"):
        v = col(k)
        if v is None:
            times[k] = np.full(len(df), np.nan)
            continue
        num, bad = C.numeric(v)
        present = np.array([str(x).strip() != "" for x in v], dtype=bool)
        if present.any() and bad.sum() * 2 < present.sum():  # seconds (the odd non-number is bad)
            times[k] = num + epoch
            fail |= bad
            numeric_times = True
        else:
            times[k], b = C.parse_local_times(v, tz)
            fail |= b
    if numeric_times and epoch == 0.0:
        warnings.append(f"{path}: pod times are plain seconds; read as seconds since 1970-01-01 UTC "
                        "(openb: since the trace start)")
    q.add(lines[fail], "unparsable_timestamp", "a time is neither seconds nor a timestamp", raw[fail])
    phase = np.array([str(x).strip().lower() for x in col("pod_phase")], dtype=object)
    state = np.array([PHASE.get(p) for p in phase], dtype=object)
    unk = np.array([s is None for s in state]) & ~fail
    q.add(lines[unk], "unknown_phase", [f"pod_phase = {p!r}" for p in col("pod_phase")[unk]], raw[unk])
    ok = ~fail & ~unk
    n = len(df)
    num_gpu = C.numeric(col("num_gpu"))[0] if col("num_gpu") is not None else np.zeros(n)
    milli = C.numeric(col("gpu_milli"))[0] if col("gpu_milli") is not None else np.full(n, 1000.0)
    frac = num_gpu * np.where(np.isnan(milli), 1000.0, milli) / 1000.0
    cpu = C.numeric(col("cpu_milli"))[0] / 1000.0 if col("cpu_milli") is not None else np.full(n, np.nan)
    mem = C.numeric(col("memory_mib"))[0] / 1024.0 if col("memory_mib") is not None else np.full(n, np.nan)
    qos = col("qos")
    names = col("name")
    user = col("user")
    tmap = C.TypeMap.parse(type_map)
    default = qos if qos is not None else np.full(n, "Other", dtype=object)
    types, tcounts = tmap.apply({"qos": qos, "name": names}, default, "QoS" if qos is not None else "(none: Other)")
    out = {"job_id": names, "user": user if user is not None else np.full(n, "unknown", dtype=object),
           "type": types, "state": state, "gpu_num": num_gpu, "node_num": np.ones(n), "cpu_num": cpu,
           "mem_per_pod_GB": mem, "submit_time": times["creation_time"], "start_time": times["scheduled_time"],
           "end_time": times["deletion_time"],
           "gpu_fraction": np.array([repr(float(x)) if np.isfinite(x) else None for x in frac], dtype=object)}
    if qos is not None:
        out["qos"] = qos
    if col("gpu_spec") is not None:
        out["gpu_spec"] = col("gpu_spec")
    out = {k: v[ok] for k, v in out.items()}
    report = {"format": "k8s", "file": str(path), "records_in": int(n), "accepted_rows": int(ok.sum()),
              "folded": 0, "rejected": q.counts(), "timezone": tz,
              "mapping": {"job_id": "name", "submit/start/end": "creation/scheduled/deletion time",
                          "state": "pod_phase", "gpu_num": "num_gpu (gpu_fraction = num_gpu*gpu_milli/1000)",
                          "cpu_num": "cpu_milli/1000", "mem_per_pod_GB": "memory_mib/1024",
                          "type": "type-map rules on qos/name, else QoS"},
              "types": tcounts,
              "states": {p: int((phase == p).sum()) for p in sorted(set(phase.tolist()))}}
    return C.Imported(format="k8s", path=str(path), table=C.make_table(out), lines=lines[ok], rejected=q.frame(),
                      cluster=C.cluster_from_path(path), timezone=tz, report=report, warnings=warnings)
