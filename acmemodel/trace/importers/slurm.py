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

from acmemodel.errors import TraceFormatError
from acmemodel.trace.importers import _common as C
from acmemodel.trace.importers.slurm_fields import (
    _MISSING_TIME, _attempts, _check_file, _magic, _n_distinct, _np, _num, _raw, _raw_rows_of, _special_ids, _times,
    _to_frame, _tres,
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
    """Read one ``sacct --parsable2`` file (module docstring) into an :class:`~._common.Imported`."""
    path = Path(path)
    _check_file(path)
    warnings: list[str] = []
    tz = C.timezone_offset(timezone)
    if timezone is None:
        warnings.append(f"{path}: sacct timestamps are the Slurm database's local time; no timezone "
                        "given, read as UTC (pass timezone=/--timezone)")
    s = _Sacct(path)
    q = C.Quarantine(str(path))
    n_bad = s.read(q)
    jid, n_empty, n_blank = s.drop_empty_ids(q)
    records_in = s.table.num_rows + n_bad + n_empty - n_blank
    jid, n_steps, n_orphans, oom_jobs = s.fold_steps(jid, q)
    state, state_counts = _states(s.column("state"), jid, oom_jobs)
    cols, fails = _job_columns(s, jid, state, tz)
    cols, lines = _drop_unparsable_times(cols, fails, s.lines, q, s)
    ids, cols, lines, extra_cols, counts = _special_and_repeated_ids(cols, lines, q, s)
    types, type_counts, default_label = _types(cols, ids, type_map)
    if not C.TypeMap.parse(type_map).rules:
        warnings.append(f"{path}: no --type-map rules: job types are the {default_label} values")
    out = _output_table(ids, cols, types, extra_cols)
    report = {
        "format": "slurm", "file": str(path), "records_in": int(records_in),
        "accepted_rows": int(out.num_rows), "folded": int(n_steps - n_orphans + counts["het"]),
        "expanded_array_tasks": int(counts["expanded"]), "requeue_attempts": int(counts["attempts"]),
        "rejected": q.counts(), "timezone": tz, "mapping": _mapping(s, default_label, tz),
        "types": type_counts, "states": state_counts,
    }
    # records in = accepted rows − expanded array tasks + folded records + rejected
    return C.Imported(format="slurm", path=str(path), table=out, lines=np.asarray(lines, np.int64),
                      rejected=q.frame(), cluster=C.cluster_from_path(path), timezone=tz, report=report,
                      warnings=warnings)


class _Sacct:
    """One sacct file being read: its header (the column of each known field), the Arrow table of the
    wanted columns, the physical line of each row, and the job rows once the steps are folded."""

    def __init__(self, path: Path):
        import pyarrow as pa

        self.path = path
        self.compression = "gzip" if _magic(path, 2) == b"\x1f\x8b" else None
        with pa.input_stream(str(path), compression=self.compression) as f:
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
        self.names, self.col = names, col
        self.read_names = [f"c{i}" for i in range(len(names) + (1 if trailing else 0))]
        self.wanted = sorted(set(col.values()))
        self.table = self.lines = None
        self.job_rows = None       # mask of the job rows (None: every row), once the steps are folded
        self._picked: dict[str, object] = {}  # columns of the job rows, taken when first used

    def column(self, k):
        """The column of field ``k`` over the job rows (``None`` when the header lacks it)."""
        if k not in self.col:
            return None
        if k not in self._picked:
            c = self.table.column(self.read_names[self.col[k]])
            self._picked[k] = c if self.job_rows is None else c.filter(self.job_rows)  # (a mask: cheaper than take)
        return self._picked[k]

    def raw(self, idx) -> list[str]:
        return _raw(self.table, self.read_names, self.wanted, idx)

    def _csv(self, types: dict, threads: bool):
        import pyarrow as pa
        import pyarrow.csv as pcsv

        bad: list[tuple] = []

        def handler(row):
            bad.append((row.number, row.text, row.actual_columns, row.expected_columns))
            return "skip"

        t = pcsv.read_csv(
            pa.input_stream(str(self.path), compression=self.compression),
            read_options=pcsv.ReadOptions(column_names=self.read_names, skip_rows=1, use_threads=threads),
            parse_options=pcsv.ParseOptions(delimiter="|", quote_char=False, invalid_row_handler=handler,
                                            ignore_empty_lines=False),
            convert_options=pcsv.ConvertOptions(
                column_types=types, include_columns=[self.read_names[i] for i in self.wanted],
                strings_can_be_null=False, null_values=list(_MISSING_TIME), timestamp_parsers=[pcsv.ISO8601]),
        )
        return t, bad

    def read(self, q: C.Quarantine) -> int:
        """Read the table; rows with a wrong field count are quarantined. Returns how many.

        Times and counts are converted by the (multithreaded) CSV reader; a column with a value it
        cannot convert is re-read as text and parsed value by value (only the offending rows are
        quarantined)."""
        import pyarrow as pa

        col, read_names, path = self.col, self.read_names, self.path
        types = {n: pa.string() for n in read_names}
        for k in ("submit", "start", "end"):
            if k in col:
                types[read_names[col[k]]] = pa.timestamp("s")
        for k in ("nnodes", "alloccpus", "reqcpus"):
            if k in col:
                types[read_names[col[k]]] = pa.float64()
        try:
            for _ in range(8):
                try:
                    table, bad = self._csv(types, path.stat().st_size >= 1 << 20)  # small: one thread (files.py)
                    break
                except pa.ArrowInvalid as e:
                    m = re.search(r"In CSV column #(\d+): (?:Row #\d+: )?CSV conversion error", str(e))
                    if not m or int(m.group(1)) >= len(read_names) or types[read_names[int(m.group(1))]] == pa.string():
                        raise
                    types[read_names[int(m.group(1))]] = pa.string()
            if bad and any(b[0] is None for b in bad):
                table, bad = self._csv(types, False)
        except (OSError, EOFError) as e:
            raise TraceFormatError(f"{path}: unreadable file or compression ({e})") from None
        except pa.ArrowInvalid as e:
            raise TraceFormatError(f"{path}: not readable as sacct output ({str(e).splitlines()[0]})") from None
        bad = [b for b in bad if b[1].strip()]
        q.add([b[0] for b in bad], "wrong_field_count",
              [f"{b[2]} fields, expected {b[3]}" for b in bad], [b[1] for b in bad])
        n_read = table.num_rows
        bad_lines = np.array(sorted(b[0] for b in bad), dtype=np.int64)
        lines = np.arange(2, n_read + 2, dtype=np.int64)
        if len(bad_lines):
            offs = bad_lines - 2 - np.arange(len(bad_lines))
            lines = lines + np.searchsorted(offs, np.arange(n_read), side="right")
        self.table, self.lines = table, lines
        return len(bad)

    def drop_empty_ids(self, q: C.Quarantine):
        """Rows without a JobID: blank lines (read as one empty field) are skipped, not records; the others
        are quarantined. Returns ``(job ids, rows without an id, blank lines)``."""
        import pyarrow as pa
        import pyarrow.compute as pc

        jid = pc.utf8_trim_whitespace(self.column("jobid"))
        empty = np.asarray(pc.equal(pc.utf8_length(jid), 0).to_numpy(zero_copy_only=False), dtype=bool)
        if not empty.any():
            return jid, 0, 0
        all_empty = empty.copy()
        for o in [self.column(k) for k in ("state", "submit") if k in self.col]:
            e = (o.is_null() if not pa.types.is_string(o.type)
                 else pc.equal(pc.utf8_length(pc.utf8_trim_whitespace(o)), 0))
            all_empty &= np.asarray(e.to_numpy(zero_copy_only=False), dtype=bool)
        n_blank = int(all_empty.sum())
        idx = np.flatnonzero(empty & ~all_empty)
        q.add(self.lines[idx], "missing_job_id", "JobID is empty", self.raw(idx))
        keep = ~empty
        self.table, self.lines = self.table.filter(pa.array(keep)), self.lines[keep]
        self._picked.clear()
        return jid.filter(pa.array(keep)), int(empty.sum()), n_blank

    def fold_steps(self, jid, q: C.Quarantine):
        """Step lines fold into their jobs (a step without its job line is quarantined; an
        OUT_OF_MEMORY step makes its FAILED job OUT_OF_MEMORY). Returns ``(job ids, steps, orphan steps,
        jobs with an OOM step)``."""
        import pyarrow as pa
        import pyarrow.compute as pc

        is_step = np.asarray(pc.match_substring(jid, ".").to_numpy(zero_copy_only=False), dtype=bool)
        n_steps = int(is_step.sum())
        if not n_steps:
            return jid, 0, 0, set()
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
            q.add(self.lines[oi], "orphan_step", [f"step {j} has no job line {b}" for j, b in zip(
                step_ids.filter(pa.array(orphan)).to_pylist(), step_base.filter(pa.array(orphan)).to_pylist())],
                self.raw(oi))
        st_steps = pc.utf8_upper(pc.utf8_trim_whitespace(self.column("state").take(pa.array(sidx))))
        oom = np.asarray(pc.starts_with(st_steps, "OUT_OF_MEMORY").to_numpy(zero_copy_only=False), dtype=bool)
        oom_jobs = set(step_base.filter(pa.array(oom)).to_pylist()) if oom.any() else set()
        self.job_rows = pa.array(~is_step)
        self._picked.clear()
        self.lines = self.lines[~is_step]
        return jid.filter(self.job_rows), n_steps, int(orphan.sum()), oom_jobs


def _states(raw_state, jid, oom_jobs: set):
    """States normalised and mapped on their few distinct values ("CANCELLED by 1234" → CANCELLED; a
    FAILED job with an OOM step → OUT_OF_MEMORY). Returns ``(state column, {raw state: rows, state})``."""
    import pyarrow as pa
    import pyarrow.compute as pc

    st_dict = pc.dictionary_encode(raw_state)
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
    return state, state_counts


def _resources(s: _Sacct, state, n: int):
    """(GPUs, CPUs, nodes, memory per node GB): AllocTRES, then ReqTRES for the rows it leaves open
    (pending jobs...); CPUs from AllocCPUS, ReqCPUS, then TRES; nodes from NNodes (else 1)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    tres, rtres = s.column("alloctres"), s.column("reqtres")
    pending = np.asarray(pc.equal(state, "PENDING").to_numpy(zero_copy_only=False), dtype=bool)
    if tres is not None:
        gpu, tcpu, mem = _tres(tres)
    else:
        gpu, tcpu, mem = np.full(n, np.nan), np.full(n, np.nan), np.full(n, np.nan)
    cpu = _num(s.column("alloccpus"), n)
    if "reqcpus" in s.col:
        miss = np.isnan(cpu) | (cpu == 0)
        if miss.any():
            cpu = np.where(miss, _num(s.column("reqcpus"), n), cpu)
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
    nodes = _num(s.column("nnodes"), n)
    nodes = np.where(np.isnan(nodes), 1.0, nodes)
    return gpu, cpu, nodes, mem / np.maximum(nodes, 1.0)


def _job_columns(s: _Sacct, jid, state, tz: str):
    """The columns of the job rows (ids, user, state, resources, times in seconds and the optional
    partition/QOS/name/account) and the rows whose Submit/Start/End did not parse."""
    import pyarrow as pa
    import pyarrow.compute as pc

    n = len(jid)
    times, fails = {}, {}
    for k in ("submit", "start", "end"):
        c = s.column(k)
        if c is None:
            times[k] = np.full(n, np.nan)
            fails[k] = np.zeros(n, dtype=bool)
        else:
            times[k], fails[k] = _times(c, tz)
    gpu, cpu, nodes, mem_node = _resources(s, state, n)

    def strings(k):
        c = s.column(k)
        return None if c is None else pc.utf8_trim_whitespace(c).combine_chunks()

    cols = {"job_id": jid.combine_chunks(),
            "user": strings("user") if "user" in s.col else pa.array(np.full(n, "unknown", dtype=object)),
            "state": state, "gpu_num": pa.array(gpu), "node_num": pa.array(nodes), "cpu_num": pa.array(cpu),
            "mem_per_pod_GB": pa.array(mem_node),
            "submit": times["submit"], "start": times["start"], "end": times["end"]}
    for k, src in (("partition", "partition"), ("qos", "qos"), ("job_name", "jobname"), ("account", "account")):
        if src in s.col:
            cols[k] = strings(src)
    return cols, fails


def _drop_unparsable_times(cols: dict, fails: dict, lines, q: C.Quarantine, s: _Sacct):
    """Quarantine the rows whose Submit/Start/End is not a timestamp (with their original text)."""
    import pyarrow as pa

    fail = fails["submit"] | fails["start"] | fails["end"]
    if not fail.any():
        return cols, lines
    fi = np.flatnonzero(fail)
    which = [", ".join(k.capitalize() for k in ("submit", "start", "end") if fails[k][i]) for i in fi]
    q.add(lines[fi], "unparsable_timestamp", [f"{w} is not a timestamp" for w in which],
          _raw_rows_of(s.path, s.compression, lines[fi]))
    keep = ~fail
    cols = {k: (v[keep] if isinstance(v, np.ndarray) else v.filter(pa.array(keep))) for k, v in cols.items()}
    return cols, lines[keep]


def _special_and_repeated_ids(cols: dict, lines, q: C.Quarantine, s: _Sacct):
    """Special ids (few rows, in pandas): array ranges 123_[5-9] expanded, het components 123+k folded,
    requeued attempts of one id chained (``restart_of``); the array job of every array task. Returns
    ``(ids, cols, lines, {"array_job_id", "restart_of"}, {"expanded", "het", "attempts"})``."""
    import pyarrow as pa
    import pyarrow.compute as pc

    ids = cols["job_id"]
    special = np.asarray(pc.match_substring_regex(ids, r"[\[+]").to_numpy(zero_copy_only=False), dtype=bool)
    n_unique = _n_distinct(ids, s.column("jobidraw") if "jobid" in s.col and "jobidraw" in s.col else None)
    counts = {"expanded": 0, "het": 0, "attempts": 0}
    extra_cols = {"array_job_id": None, "restart_of": None}
    if special.any() or n_unique < len(ids):
        frame = _to_frame(cols, lines)
        if special.any():
            frame, counts["expanded"], counts["het"] = _special_ids(frame, special, q, s.path, s.compression)
        frame["restart_of"] = None
        if frame["job_id"].duplicated().any():
            frame, counts["attempts"] = _attempts(frame)
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
    return ids, cols, lines, extra_cols, counts


def _types(cols: dict, ids, type_map):
    """Job types: the type-map rules on partition/QOS/name, else the partition (else QOS, else Other).
    Returns ``(types, {type: rows}, what the default is)``."""
    import pyarrow as pa

    tmap = C.TypeMap.parse(type_map)
    fields = {"partition": cols.get("partition"), "qos": cols.get("qos"), "name": cols.get("job_name")}
    if "partition" in cols:
        default, default_label = cols["partition"], "partition"
    elif "qos" in cols:
        default, default_label = cols["qos"], "QOS"
    else:
        default, default_label = pa.array(np.full(len(ids), "Other", dtype=object), type=pa.string()), "(none: Other)"
    types, type_counts = tmap.apply_arrow(fields, default, default_label)
    return types, type_counts, default_label


def _output_table(ids, cols: dict, types, extra_cols: dict):
    """The imported table: the AcmeTrace columns, then the extras found."""
    import pyarrow as pa

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
    return pa.table({k: (pa.array(v) if isinstance(v, np.ndarray) else v) for k, v in out_cols.items()})


def _mapping(s: _Sacct, default_label: str, tz: str) -> dict:
    """Where each AcmeTrace column came from (the report's ``mapping``)."""
    col = s.col
    return {
        "job_id": "JobID" if "jobid" in col and s.names[col["jobid"]].lower() == "jobid" else "JobIDRaw",
        "gpu_num": "AllocTRES gres/gpu (ReqTRES if unallocated)" if "alloctres" in col else
                   ("ReqTRES gres/gpu" if "reqtres" in col else "none (no TRES column): 0"),
        "cpu_num": "AllocCPUS" if "alloccpus" in col else ("ReqCPUS" if "reqcpus" in col else "TRES cpu"),
        "node_num": "NNodes" if "nnodes" in col else "none: 1",
        "mem_per_pod_GB": "TRES mem / NNodes",
        "type": f"type-map rules, else {default_label}",
        "times": f"Submit/Start/End, local time {tz}",
    }
