"""Slurm accounting: ``sacct --parsable2`` output with its header line.

Typical extract (one line per job and per job step, ``|``-separated, header first)::

    sacct -a -S 2024-01-01 -E now --parsable2 \\
      --format=JobID,JobIDRaw,User,Partition,QOS,JobName,State,Submit,Start,End,NNodes,AllocCPUS,ReqCPUS,AllocTRES,ReqTRES,ReqMem

Columns are found by name (any order, any case; unknown ones ignored; ``--parsable``'s trailing
``|`` tolerated). Required: ``JobID`` (or ``JobIDRaw``), ``State``, ``Submit``. Mapping:

=================  ============================================================================
AcmeTrace          from
=================  ============================================================================
job_id             ``JobID`` (array tasks ``123_4`` kept as such; heterogeneous components
                   ``123+0``, ``123+1`` folded into one job ``123``)
user               ``User``
type               the ``--type-map`` rules on Partition/QOS/JobName, else the partition (the
                   source's own category; QOS when there is no partition)
state              ``State`` first word (``CANCELLED by 1234`` → CANCELLED); COMPLETING,
                   CONFIGURING, RESIZING, SIGNALING, STAGE_OUT → RUNNING; STOPPED → SUSPENDED;
                   REQUEUE_HOLD/REQUEUE_FED/RESV_DEL_HOLD → PENDING; REVOKED → CANCELLED;
                   SPECIAL_EXIT → FAILED; a FAILED job with an OUT_OF_MEMORY step → OUT_OF_MEMORY
gpu_num            ``AllocTRES`` (``ReqTRES`` when nothing is allocated, e.g. PENDING):
                   ``gres/gpu=N``, else the sum of typed ``gres/gpu:<type>=N``; 0 without GPUs
node_num           ``NNodes``
cpu_num            ``AllocCPUS`` (``ReqCPUS`` or TRES ``cpu=`` when 0/absent)
mem_per_pod_GB     TRES ``mem=`` (K/M/G/T suffixes) per node, GB
submit/start/end   ``Submit``/``Start``/``End``; ``Unknown``/``None``/empty = not known. The
                   timestamps are the local time of the Slurm database: ``timezone`` sets that
                   zone (default UTC, with a warning); explicit offsets are honoured
extras             ``partition``, ``qos``, ``job_name``, ``account``, ``array_job_id``,
                   ``restart_of`` (earlier attempts of a requeued job listed with ``--duplicates``)
=================  ============================================================================

Step lines (``123.batch``, ``123.extern``, ``123.0``, ``123_4.batch``, ``123+0.0``) fold into their
job; a step whose job is not in the file is quarantined (``orphan_step``). A pending array record
``123_[5-9,12%2]`` (the ``%`` throttle ignored) is expanded into one PENDING job per task. With
``--duplicates``, earlier records of a requeued job id become attempts ``123@1``, ``123@2`` (state as
recorded, usually REQUEUED) linked by ``restart_of``; the last record keeps the id. Quarantined:
lines with the wrong number of fields (``wrong_field_count``), unparsable timestamps
(``unparsable_timestamp``), empty job ids (``missing_job_id``), unparsable array ranges
(``bad_array_range``).

This module holds :func:`read` (the column mapping and the state/id logic); the field parsers
(timestamps, numbers, TRES, array ranges, special ids) are in :mod:`.slurm_fields`.
"""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd

from acmemodel.errors import TraceFormatError
from acmemodel.trace.importers import _common as C
from acmemodel.trace.importers.slurm_fields import (  # noqa: F401  (re-exported: these lived here)
    _MISSING_TIME, _TIME_FMT, expand_array_range, _attempts, _check_file, _few, _floats_slow, _magic, _MEM_UNIT,
    _n_distinct, _np, _num, _raw, _raw_rows_of, _special_ids, _times, _to_frame, _tres,
)

STATE_ALIASES: dict[str, str] = {
    "COMPLETING": "RUNNING", "CONFIGURING": "RUNNING", "RESIZING": "RUNNING", "SIGNALING": "RUNNING",
    "STAGE_OUT": "RUNNING", "STOPPED": "SUSPENDED", "REQUEUE_HOLD": "PENDING", "REQUEUE_FED": "PENDING",
    "RESV_DEL_HOLD": "PENDING", "REVOKED": "CANCELLED", "SPECIAL_EXIT": "FAILED",
    # squeue/sacct short codes
    "CD": "COMPLETED", "CA": "CANCELLED", "F": "FAILED", "TO": "TIMEOUT", "NF": "NODE_FAIL",
    "OOM": "OUT_OF_MEMORY", "BF": "BOOT_FAIL", "DL": "DEADLINE", "PR": "PREEMPTED", "RQ": "REQUEUED",
    "S": "SUSPENDED", "R": "RUNNING", "PD": "PENDING", "CG": "RUNNING", "CF": "RUNNING",
}
_FIELDS = {  # canonical name → accepted header spellings (lower case)
    "jobid": ("jobid",), "jobidraw": ("jobidraw",), "user": ("user",), "partition": ("partition",),
    "qos": ("qos",), "jobname": ("jobname",), "state": ("state",), "submit": ("submit",),
    "start": ("start",), "end": ("end",), "nnodes": ("nnodes",), "alloccpus": ("alloccpus",),
    "reqcpus": ("reqcpus",), "alloctres": ("alloctres",), "reqtres": ("reqtres",), "reqmem": ("reqmem",),
    "account": ("account",),
}


def read(path, *, timezone: str | None = None, type_map=None) -> C.Imported:
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.csv as pcsv

    path = Path(path)
    _check_file(path)
    warnings: list[str] = []
    tz = C.timezone_offset(timezone)
    if timezone is None:
        warnings.append(f"{path}: sacct timestamps are the Slurm database's local time; no timezone "
                        "given, read as UTC (pass timezone=/--timezone)")
    compression = "gzip" if _magic(path, 2) == b"\x1f\x8b" else None
    with pa.input_stream(str(path), compression=compression) as f:
        head = f.read(65536).decode("utf-8-sig", errors="replace")
    first = head.splitlines()[0] if head.strip() else ""
    if "|" not in first:
        raise TraceFormatError(f"{path}: not sacct --parsable2 output: the first line must be the "
                               "'|'-separated header (JobID|...|State|Submit|...)")
    names = [h.strip() for h in first.split("|")]
    trailing = names and names[-1] == ""  # --parsable: every line ends with '|'
    if trailing:
        names = names[:-1]
    col = {}
    for i, h in enumerate(names):
        for k, spell in _FIELDS.items():
            if h.lower() in spell and k not in col:
                col[k] = i
    if "jobid" not in col and "jobidraw" in col:
        col["jobid"] = col["jobidraw"]
    missing = [n for n in ("jobid", "state", "submit") if n not in col]
    if missing:
        raise TraceFormatError(f"{path}: sacct header lacks {', '.join(x.capitalize() for x in missing)} "
                               f"(found: {', '.join(names[:30])})")
    read_names = [f"c{i}" for i in range(len(names) + (1 if trailing else 0))]
    wanted = sorted(set(col.values()))

    # times and counts are converted by the (multithreaded) CSV reader; a column with a value it cannot
    # convert is re-read as text and parsed value by value (only the offending rows are quarantined)
    types = {n: pa.string() for n in read_names}
    for k in ("submit", "start", "end"):
        if k in col:
            types[read_names[col[k]]] = pa.timestamp("s")
    for k in ("nnodes", "alloccpus", "reqcpus"):
        if k in col:
            types[read_names[col[k]]] = pa.float64()

    def do_read(threads: bool):
        bad: list[tuple] = []

        def handler(row):
            bad.append((row.number, row.text, row.actual_columns, row.expected_columns))
            return "skip"

        t = pcsv.read_csv(
            pa.input_stream(str(path), compression=compression),
            read_options=pcsv.ReadOptions(column_names=read_names, skip_rows=1, use_threads=threads),
            parse_options=pcsv.ParseOptions(delimiter="|", quote_char=False, invalid_row_handler=handler,
                                            ignore_empty_lines=False),
            convert_options=pcsv.ConvertOptions(
                column_types=types, include_columns=[read_names[i] for i in wanted], strings_can_be_null=False,
                null_values=list(_MISSING_TIME), timestamp_parsers=[pcsv.ISO8601]),
        )
        return t, bad

    try:
        for _ in range(8):
            try:
                table, bad = do_read(path.stat().st_size >= 1 << 20)  # small: one thread (files.py)
                break
            except pa.ArrowInvalid as e:
                m = re.search(r"In CSV column #(\d+): (?:Row #\d+: )?CSV conversion error", str(e))
                if not m or int(m.group(1)) >= len(read_names) or types[read_names[int(m.group(1))]] == pa.string():
                    raise
                types[read_names[int(m.group(1))]] = pa.string()
        if bad and any(b[0] is None for b in bad):
            table, bad = do_read(False)
    except (OSError, EOFError) as e:
        raise TraceFormatError(f"{path}: unreadable file or compression ({e})") from None
    except pa.ArrowInvalid as e:
        raise TraceFormatError(f"{path}: not readable as sacct output ({str(e).splitlines()[0]})") from None
    bad = [b for b in bad if b[1].strip()]
    q = C.Quarantine(str(path))
    q.add([b[0] for b in bad], "wrong_field_count",
          [f"{b[2]} fields, expected {b[3]}" for b in bad], [b[1] for b in bad])
    n_read = table.num_rows
    bad_lines = np.array(sorted(b[0] for b in bad), dtype=np.int64)
    lines = np.arange(2, n_read + 2, dtype=np.int64)
    if len(bad_lines):
        offs = bad_lines - 2 - np.arange(len(bad_lines))
        lines = lines + np.searchsorted(offs, np.arange(n_read), side="right")

    picked: dict[str, object] = {}  # columns of the job rows, taken when first used

    def column(k):
        if k not in col:
            return None
        if k not in picked:
            c = table.column(read_names[col[k]])
            picked[k] = c if job_rows is None else c.filter(job_rows)  # (a mask: cheaper than take)
        return picked[k]

    job_rows = None

    jid = pc.utf8_trim_whitespace(column("jobid"))
    # blank lines (read as one empty field): skipped, not records
    empty = np.asarray(pc.equal(pc.utf8_length(jid), 0).to_numpy(zero_copy_only=False), dtype=bool)
    if empty.any():
        others = [column(k) for k in ("state", "submit") if k in col]
        all_empty = empty.copy()
        for o in others:
            e = (o.is_null() if not pa.types.is_string(o.type)
                 else pc.equal(pc.utf8_length(pc.utf8_trim_whitespace(o)), 0))
            all_empty &= np.asarray(e.to_numpy(zero_copy_only=False), dtype=bool)
        n_blank = int(all_empty.sum())
        idx = np.flatnonzero(empty & ~all_empty)
        q.add(lines[idx], "missing_job_id", "JobID is empty", _raw(table, read_names, wanted, idx))
        keep = ~empty
        table, lines, jid = table.filter(pa.array(keep)), lines[keep], jid.filter(pa.array(keep))
        picked.clear()
    else:
        n_blank = 0
    records_in = table.num_rows + len(bad) + int(empty.sum()) - n_blank

    # ---- steps fold into their jobs
    is_step = np.asarray(pc.match_substring(jid, ".").to_numpy(zero_copy_only=False), dtype=bool)
    n_steps = int(is_step.sum())
    oom_jobs = set()
    n_orphans = 0
    if n_steps:
        sidx = np.flatnonzero(is_step)
        step_ids = jid.take(pa.array(sidx))
        step_base = pc.list_element(pc.split_pattern(step_ids, ".", max_splits=1), 0)
        # a step's job is normally the job line above it: check that first, hash only the others
        row = np.arange(len(is_step))
        last_job = np.maximum.accumulate(np.where(is_step, -1, row))[sidx]
        near = np.asarray(pc.equal(step_base, jid.take(pa.array(np.maximum(last_job, 0))))
                          .to_numpy(zero_copy_only=False), dtype=bool) & (last_job >= 0)
        orphan = np.zeros(n_steps, dtype=bool)
        if not near.all():
            far = np.flatnonzero(~near)
            found = pc.is_in(step_base.take(pa.array(far)), value_set=jid.filter(pa.array(~is_step)))
            orphan[far] = ~np.asarray(found.to_numpy(zero_copy_only=False), dtype=bool)
        if orphan.any():
            oi = sidx[orphan]
            q.add(lines[oi], "orphan_step", [f"step {j} has no job line {b}" for j, b in zip(
                step_ids.filter(pa.array(orphan)).to_pylist(), step_base.filter(pa.array(orphan)).to_pylist())],
                _raw(table, read_names, wanted, oi))
        st_steps = pc.utf8_upper(pc.utf8_trim_whitespace(column("state").take(pa.array(sidx))))
        oom = np.asarray(pc.starts_with(st_steps, "OUT_OF_MEMORY").to_numpy(zero_copy_only=False), dtype=bool)
        if oom.any():
            oom_jobs = set(step_base.filter(pa.array(oom)).to_pylist())
        job_rows = pa.array(~is_step)
        picked.clear()
        lines, jid = lines[~is_step], jid.filter(job_rows)
        n_orphans = int(orphan.sum())
    n = len(jid)

    # ---- states, normalised and mapped on their few distinct values ("CANCELLED by 1234" → CANCELLED)
    st_dict = pc.dictionary_encode(column("state"))
    if isinstance(st_dict, pa.ChunkedArray):
        st_dict = st_dict.combine_chunks()
    raw_cats = st_dict.dictionary.to_pylist()
    words = [(c or "").strip().upper().split(" ")[0] for c in raw_cats]
    uniq = sorted(set(words))
    pos = {w: i for i, w in enumerate(uniq)}
    cats = np.array(uniq, dtype=object)
    idx = pa.array(np.array([pos[w] for w in words], dtype=np.int32)).take(st_dict.indices)
    mapped = pa.array([STATE_ALIASES.get(c, c) for c in cats], type=pa.string())
    state = pc.take(mapped, idx)
    if oom_jobs:
        fo = pc.and_(pc.equal(state, "FAILED"), pc.is_in(jid, value_set=pa.array(sorted(oom_jobs))))
        state = pc.if_else(fo, "OUT_OF_MEMORY", state)
    raw_counts = np.bincount(np.asarray(idx.to_numpy(zero_copy_only=False)), minlength=len(cats))
    state_counts = {str(c): {"state": STATE_ALIASES.get(c, c), "rows": int(k)} for c, k in zip(cats, raw_counts)}
    if any(str(c or "").strip().upper().startswith("CANCELLED BY") for c in raw_cats):
        state_counts.setdefault("CANCELLED", {})["note"] = "'CANCELLED by <uid>' read as CANCELLED"

    # ---- times
    times, fails = {}, {}
    for k in ("submit", "start", "end"):
        c = column(k)
        if c is None:
            times[k] = np.full(n, np.nan)
            fails[k] = np.zeros(n, dtype=bool)
        else:
            times[k], fails[k] = _times(c, tz)

    # ---- resources: AllocTRES, then ReqTRES for the rows it leaves open (pending jobs...)
    tres = column("alloctres")
    rtres = column("reqtres")
    pending = np.asarray(pc.equal(state, "PENDING").to_numpy(zero_copy_only=False), dtype=bool)
    if tres is not None:
        gpu, tcpu, mem = _tres(tres)
    else:
        gpu, tcpu, mem = np.full(n, np.nan), np.full(n, np.nan), np.full(n, np.nan)
    cpu = _num(column("alloccpus"), n)
    if "reqcpus" in col:
        miss = np.isnan(cpu) | (cpu == 0)
        if miss.any():
            cpu = np.where(miss, _num(column("reqcpus"), n), cpu)
    cpu = np.where(np.isnan(cpu) | (cpu == 0), np.where(np.isnan(tcpu), cpu, tcpu), cpu)
    if rtres is not None:
        need = np.isnan(gpu) | ((gpu == 0) & pending) | np.isnan(mem) | np.isnan(cpu) | (cpu == 0)
        if need.any():
            idx = np.flatnonzero(need)
            rg, rc, rm = _tres(rtres.take(pa.array(idx)))
            g0, c0, m0 = gpu[idx], cpu[idx], mem[idx]
            gpu[idx] = np.where(np.isnan(g0) | ((g0 == 0) & (rg > 0) & pending[idx]), rg, g0)
            cpu[idx] = np.where((np.isnan(c0) | (c0 == 0)) & ~np.isnan(rc), rc, c0)
            mem[idx] = np.where(np.isnan(m0), rm, m0)
    gpu = np.where(np.isnan(gpu), 0.0, gpu)
    nodes = _num(column("nnodes"), n)
    nodes = np.where(np.isnan(nodes), 1.0, nodes)
    mem_node = mem / np.maximum(nodes, 1.0)

    def strings(k):
        c = column(k)
        return None if c is None else pc.utf8_trim_whitespace(c).combine_chunks()

    cols = {"job_id": jid.combine_chunks(),
            "user": strings("user") if "user" in col else pa.array(np.full(n, "unknown", dtype=object)),
            "state": state, "gpu_num": pa.array(gpu), "node_num": pa.array(nodes), "cpu_num": pa.array(cpu),
            "mem_per_pod_GB": pa.array(mem_node),
            "submit": times["submit"], "start": times["start"], "end": times["end"]}
    for k, src in (("partition", "partition"), ("qos", "qos"), ("job_name", "jobname"), ("account", "account")):
        if src in col:
            cols[k] = strings(src)
    fail = fails["submit"] | fails["start"] | fails["end"]

    # ---- unparsable timestamps
    if fail.any():
        fi = np.flatnonzero(fail)
        which = [", ".join(k.capitalize() for k in ("submit", "start", "end") if fails[k][i]) for i in fi]
        q.add(lines[fi], "unparsable_timestamp", [f"{w} is not a timestamp" for w in which],
              _raw_rows_of(path, compression, lines[fi]))
        keep = ~fail
        cols = {k: (v[keep] if isinstance(v, np.ndarray) else v.filter(pa.array(keep))) for k, v in cols.items()}
        lines = lines[keep]

    # ---- special ids (few rows, in pandas): array ranges 123_[5-9], het components 123+k, requeues
    ids = cols["job_id"]
    special = np.asarray(pc.match_substring_regex(ids, r"[\[+]").to_numpy(zero_copy_only=False), dtype=bool)
    n_unique = _n_distinct(ids, column("jobidraw") if "jobid" in col and "jobidraw" in col else None)
    n_expanded = n_het = n_attempts = 0
    extra_cols = {"array_job_id": None, "restart_of": None}
    if special.any() or n_unique < len(ids):
        frame = _to_frame(cols, lines)
        if special.any():
            frame, n_expanded, n_het = _special_ids(frame, special, q, path, compression)
        frame["restart_of"] = None
        if frame["job_id"].duplicated().any():
            frame, n_attempts = _attempts(frame)
        lines = frame.pop("_line").to_numpy(np.int64)
        cols = {k: (frame[k].to_numpy(float) if frame[k].dtype.kind == "f" else
                    pa.array(frame[k].astype(object).where(frame[k].notna(), None).to_numpy(object), type=pa.string()))
                for k in frame.columns}
        if frame["restart_of"].notna().any():
            extra_cols["restart_of"] = cols.pop("restart_of")
        else:
            cols.pop("restart_of")
        ids = cols["job_id"]
    arr = np.asarray(pc.match_substring(ids, "_").to_numpy(zero_copy_only=False), dtype=bool)
    if arr.any():
        ai = np.flatnonzero(arr)
        base = np.full(len(ids), None, dtype=object)
        base[ai] = np.asarray(pc.list_element(pc.split_pattern(ids.take(pa.array(ai)), "_", max_splits=1), 0)
                              .to_numpy(zero_copy_only=False), dtype=object)
        extra_cols["array_job_id"] = pa.array(base, type=pa.string())

    # ---- types
    tmap = C.TypeMap.parse(type_map)
    fields = {"partition": cols.get("partition"), "qos": cols.get("qos"), "name": cols.get("job_name")}
    if "partition" in cols:
        default, default_label = cols["partition"], "partition"
    elif "qos" in cols:
        default, default_label = cols["qos"], "QOS"
    else:
        default, default_label = pa.array(np.full(len(ids), "Other", dtype=object), type=pa.string()), "(none: Other)"
    types, type_counts = tmap.apply_arrow(fields, default, default_label)
    if not tmap.rules:
        warnings.append(f"{path}: no --type-map rules: job types are the {default_label} values")

    out_cols = {"job_id": ids, "user": cols["user"], "type": types, "state": cols["state"],
                "gpu_num": cols["gpu_num"], "node_num": cols["node_num"], "cpu_num": cols["cpu_num"],
                "mem_per_pod_GB": cols["mem_per_pod_GB"],
                "submit_time": C.seconds_to_arrow_ts(_np(cols["submit"])),
                "start_time": C.seconds_to_arrow_ts(_np(cols["start"])),
                "end_time": C.seconds_to_arrow_ts(_np(cols["end"]))}
    for k in ("partition", "qos", "job_name", "account"):
        if k in cols:
            out_cols[k] = cols[k]
    for k, v in extra_cols.items():
        if v is not None:
            out_cols[k] = v
    out = pa.table({k: (pa.array(v) if isinstance(v, np.ndarray) else v) for k, v in out_cols.items()})
    rejected = q.frame()
    report = {
        "format": "slurm", "file": str(path), "records_in": int(records_in),
        "accepted_rows": int(out.num_rows), "folded": int(n_steps - n_orphans + n_het),
        "expanded_array_tasks": int(n_expanded), "requeue_attempts": int(n_attempts),
        "rejected": q.counts(), "timezone": tz,
        "mapping": {
            "job_id": "JobID" if "jobid" in col and names[col["jobid"]].lower() == "jobid" else "JobIDRaw",
            "gpu_num": "AllocTRES gres/gpu (ReqTRES if unallocated)" if tres is not None else
                       ("ReqTRES gres/gpu" if rtres is not None else "none (no TRES column): 0"),
            "cpu_num": "AllocCPUS" if "alloccpus" in col else ("ReqCPUS" if "reqcpus" in col else "TRES cpu"),
            "node_num": "NNodes" if "nnodes" in col else "none: 1",
            "mem_per_pod_GB": "TRES mem / NNodes",
            "type": f"type-map rules, else {default_label}",
            "times": f"Submit/Start/End, local time {tz}",
        },
        "types": type_counts, "states": state_counts,
    }
    # records in = accepted rows − expanded array tasks + folded records + rejected
    return C.Imported(format="slurm", path=str(path), table=out, lines=np.asarray(lines, np.int64),
                      rejected=rejected, cluster=C.cluster_from_path(path), timezone=tz, report=report,
                      warnings=warnings)


