"""The trace layer: read AcmeTrace job files into one validated table.

``load_trace(paths, cluster=None) -> Trace`` reads Seren-schema and Kalos-schema files (``.csv``,
``.csv.gz``, ``.parquet``; any column order; UTF-8 BOM, CRLF and trailing blank lines tolerated) into
``Trace.jobs``, one row per accepted job, with these normalised columns:

=================  ==========================================================================
column             meaning
=================  ==========================================================================
cluster            cluster name (``cluster=`` argument, else the file name, else the schema)
job_id, user       as in the file (strings; ``job_id`` in the Arrow-backed pandas string dtype
                   :data:`STR_DTYPE`, the other string columns object)
type               job type (Eval, Pretrain, SFT, MLLM, Debug, Other; unknown values kept)
state              original final state (COMPLETED, CANCELLED, FAILED, TIMEOUT, NODE_FAIL)
analysis_state     COMPLETED | CANCELLED | FAILED — TIMEOUT and NODE_FAIL count as FAILED
gpu_num, node_num  requested GPUs and nodes (int64); ``gpu_num == 0`` is a CPU job
cpu_num            requested CPUs (float64, NaN when the file has no such column)
is_gpu             ``gpu_num > 0``
submit_time, ...   ``submit_time, start_time, end_time`` as ``datetime64[ns, UTC]``
submit_s, ...      ``submit_s, start_s, end_s``: the same instants in Unix seconds (float64, UTC)
started            the job got resources (``start_time`` present)
run_s              run time ``end − start`` in seconds (NaN if never started)
queue_s            queueing delay ``start − submit`` s; for a job cancelled while queued
                   ``end − submit`` with ``queue_censored = True`` (a right-censored wait)
gpu_time_s         ``gpu_num × run_s`` GPU-seconds (0 if never started)
fail_time_s        Kalos: ``fail_time − start_time`` s where ``fail_time`` is given, else NaN
mem_per_pod_GB,    Kalos resource columns (NaN for Seren rows)
shared_mem_per_pod
source_file        path of the file the row came from
source_line        1-based line number in that file (the header is line 1)
=================  ==========================================================================

Run time and queue are always computed from the timestamps. The files' own ``duration``, ``queue`` and
``gpu_time`` columns are only cross-checked, and disagreements counted by kind in
``Trace.inconsistencies``: the published Kalos rows have ``duration = end − submit`` (queue
included), which is counted as ``duration_includes_queue`` and never "fixed" by trusting the column.

Rows that cannot be used are set aside in ``Trace.rejected`` (file, line, reason, raw row — the line
as written in the file, or the values as read for parquet) — never silently dropped; the reasons are
:class:`Reason`. Whole-file problems raise :class:`~acmemodel.errors.TraceFormatError` naming the file.
Tolerated with a warning: blank lines between rows (skipped; line numbers stay those of the file),
bytes that are not UTF-8 (replaced by U+FFFD), header names in another case (``JOB_ID``), non-CANCELLED
rows without ``start_time`` (kept as never started). ``cluster=`` names of known clusters are
case-insensitive (``seren`` → Seren).

Fast path: a clean CSV is parsed by pyarrow straight into typed columns. If any value fails to
convert (a bad number or timestamp, a timestamp without zone offset), the file is re-read as text and
each column is parsed value by value, so that only the offending rows are quarantined.

Speed (a 1M-row file within 2x of pyarrow's bare ``read_csv``, ``benchmarks/bench_load.py``): columns
go from Arrow to numpy one by one (no whole-table pandas conversion); ``user``/``type``/``state`` are
dictionary-encoded in a background thread (Arrow releases the GIL) and validated and mapped on their
few distinct values; ``job_id`` stays Arrow-backed; checks that cannot fail on a column Arrow already
typed are skipped; duplicate ids are ruled out on their integer values, or else by an Arrow sort.
"""
from __future__ import annotations

import enum
import gzip
import os
import re
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np
import pandas as pd

from acmemodel.clusters import CLUSTER_TZ, utc_offset_seconds  # noqa: F401  (cluster → "+08:00")
from acmemodel.errors import DataWarning, TraceFormatError

#: the job types of AcmeTrace
KNOWN_TYPES: tuple[str, ...] = ("Eval", "Pretrain", "SFT", "MLLM", "Debug", "Other")
#: final states of AcmeTrace jobs and their analysis state
STATE_MAP: dict[str, str] = {
    "COMPLETED": "COMPLETED", "CANCELLED": "CANCELLED", "FAILED": "FAILED",
    "TIMEOUT": "FAILED", "NODE_FAIL": "FAILED",
}
ANALYSIS_STATES: tuple[str, ...] = ("COMPLETED", "CANCELLED", "FAILED")

SEREN_COLUMNS: tuple[str, ...] = (
    "job_id", "user", "node_num", "gpu_num", "cpu_num", "type", "state", "submit_time", "start_time",
    "end_time", "duration", "queue", "gpu_time")
KALOS_COLUMNS: tuple[str, ...] = (
    "job_id", "user", "node_num", "gpu_num", "cpu_num", "mem_per_pod_GB", "shared_mem_per_pod", "type",
    "state", "submit_time", "start_time", "end_time", "fail_time", "stop_time", "duration", "queue",
    "gpu_time")
KALOS_ONLY: tuple[str, ...] = ("mem_per_pod_GB", "shared_mem_per_pod", "fail_time", "stop_time")
#: columns without which a file cannot be read
REQUIRED_COLUMNS: tuple[str, ...] = (
    "job_id", "user", "node_num", "gpu_num", "type", "state", "submit_time", "start_time", "end_time")
TIME_COLUMNS = ("submit_time", "start_time", "end_time", "fail_time", "stop_time")
NUMERIC_COLUMNS = ("node_num", "gpu_num", "cpu_num", "duration", "queue", "gpu_time", "mem_per_pod_GB",
                   "shared_mem_per_pod")


def _str_dtype() -> pd.StringDtype:
    try:  # pandas >= 2.3: the "str" dtype of pandas 3 (Arrow storage, NaN for missing, numpy bool results)
        return pd.StringDtype("pyarrow", na_value=np.nan)
    except TypeError:  # pandas 2.1-2.2: the same semantics under its earlier name
        return pd.StringDtype("pyarrow_numpy")


#: dtype of ``Trace.jobs["job_id"]``: Arrow-backed strings (no Python object per row)
STR_DTYPE = _str_dtype()

#: tolerance (s) when cross-checking the files' duration/queue columns against the timestamps
CHECK_TOL_S = 1.0

JOB_COLUMNS: tuple[str, ...] = (
    "cluster", "job_id", "user", "type", "state", "analysis_state", "gpu_num", "node_num", "cpu_num",
    "is_gpu", "submit_time", "start_time", "end_time", "submit_s", "start_s", "end_s", "started", "run_s",
    "queue_s", "queue_censored", "gpu_time_s", "fail_time_s", "mem_per_pod_GB", "shared_mem_per_pod",
    "source_file", "source_line")


class Reason(str, enum.Enum):
    """Why a row was quarantined."""

    FIELD_COUNT = "wrong_field_count"
    MISSING_JOB_ID = "missing_job_id"
    BAD_TIMESTAMP = "unparsable_timestamp"
    MISSING_TIMESTAMP = "missing_timestamp"
    BAD_GPU_NUM = "invalid_gpu_num"
    BAD_NODE_NUM = "invalid_node_num"
    UNKNOWN_STATE = "unknown_state"
    END_BEFORE_START = "end_before_start"
    START_BEFORE_SUBMIT = "start_before_submit"
    DUPLICATE_JOB_ID = "duplicate_job_id"


@dataclass
class FileInfo:
    """What was read from one file."""

    path: str
    cluster: str
    schema: str  # "seren" or "kalos"
    rows: int = 0  # data rows seen (accepted + rejected)
    accepted: int = 0
    rejected: int = 0
    extra_columns: list[str] = field(default_factory=list)
    missing_optional: list[str] = field(default_factory=list)
    fast_path: bool = True
    #: records in the file (header included) as the CSV reader counted them; 0 for parquet
    _records: int = field(default=0, repr=False, compare=False)

    def as_dict(self) -> dict:
        return {"path": self.path, "cluster": self.cluster, "schema": self.schema, "rows": self.rows,
                "accepted": self.accepted, "rejected": self.rejected}


@dataclass
class Trace:
    """A loaded trace: accepted jobs, quarantined rows and what was noticed while reading.

    Attributes
    ----------
    jobs : DataFrame, one row per accepted job (columns in the module docstring)
    rejected : DataFrame ``file, line, reason, detail, raw`` — the quarantine
    files : list of :class:`FileInfo`
    inconsistencies : dict kind → count of rows whose own ``duration``/``queue``/``gpu_time`` column
        disagrees with the timestamps by more than ``CHECK_TOL_S`` (plus the sub-kind
        ``duration_includes_queue``)
    warnings : list of human-readable warnings (unknown types, missing optional columns...)
    timezones : cluster → UTC offset string of its local time (for calendar features)
    extras : DataFrame of columns found in files beyond the known schemas (index = jobs.index)
    """

    jobs: pd.DataFrame
    rejected: pd.DataFrame
    files: list[FileInfo] = field(default_factory=list)
    inconsistencies: dict[str, int] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    timezones: dict[str, str] = field(default_factory=dict)
    extras: pd.DataFrame | None = None

    @property
    def clusters(self) -> list[str]:
        return sorted(self.jobs["cluster"].unique().tolist())

    def gpu_jobs(self) -> pd.DataFrame:
        """Accepted jobs that requested at least one GPU (the paper's per-type statistics)."""
        return self.jobs[self.jobs["is_gpu"]]

    def cpu_jobs(self) -> pd.DataFrame:
        return self.jobs[~self.jobs["is_gpu"]]

    def rejected_by_reason(self) -> dict[str, int]:
        if len(self.rejected) == 0:
            return {}
        return {str(k): int(v) for k, v in self.rejected["reason"].value_counts().sort_index().items()}

    def __len__(self) -> int:
        return len(self.jobs)

    def __repr__(self) -> str:
        return (f"Trace({len(self.jobs)} jobs, {len(self.rejected)} rejected, "
                f"clusters={self.clusters}, files={len(self.files)})")


# ---------------------------------------------------------------------------------------------- api
def load_trace(paths: str | os.PathLike | Iterable[str | os.PathLike], cluster: str | Sequence[str] | None = None,
               ) -> Trace:
    """Read one or more AcmeTrace job files into a :class:`Trace`.

    Parameters
    ----------
    paths : a path or a list of paths (``.csv``, ``.csv.gz``/``.gz``, ``.parquet``).
    cluster : cluster name for every file, or one name per file. Default: from the file name
        (``*seren*`` → Seren, ``*kalos*`` → Kalos), else from the schema (Kalos columns → Kalos,
        otherwise Seren) with a warning.

    Raises
    ------
    TraceFormatError
        naming the file: missing, empty, header without rows, missing required column, unreadable
        compression or format.
    """
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    paths = [Path(p) for p in paths]
    if not paths:
        raise TraceFormatError("load_trace: no trace files given")
    if cluster is None or isinstance(cluster, str):
        clusters = [cluster] * len(paths)
    else:
        clusters = list(cluster)
        if len(clusters) != len(paths):
            raise ValueError(f"cluster: {len(clusters)} names for {len(paths)} files")
    clusters = [None if c is None else _cluster_name(c) for c in clusters]

    frames, rejects, infos, extras, type_counts, int_ids = [], [], [], [], [], []
    warn: list[str] = []
    incons: dict[str, int] = {"duration": 0, "queue": 0, "gpu_time": 0, "duration_includes_queue": 0}
    tzs: dict[str, str] = {}
    for path, cl in zip(paths, clusters):
        jobs, rej, info, extra, inc, w, tz, tc, ii = _read_one(path, cl)
        frames.append(jobs)
        type_counts.append(tc)
        int_ids.append(ii)
        rejects.append(rej)
        infos.append(info)
        extras.append(extra)
        warn.extend(w)
        for k, v in inc.items():
            incons[k] = incons.get(k, 0) + v
        tzs.setdefault(info.cluster, tz)
    jobs = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
    extra_df = pd.concat(extras, ignore_index=True) if len(extras) > 1 else extras[0]
    rejected = pd.concat(rejects, ignore_index=True) if len(rejects) > 1 else rejects[0]

    # duplicate job ids across the whole input (first occurrence kept), per cluster
    dup = _duplicated_ids(jobs, int_ids, len({i.cluster for i in infos}))
    if dup.any():
        first = jobs.loc[~dup].set_index(["cluster", "job_id"])[["source_file", "source_line"]]
        d = jobs.loc[dup]
        firsts = first.reindex(pd.MultiIndex.from_arrays([d["cluster"], d["job_id"]]))
        where = [f"line {ln}" if ff == f else f"{ff} line {ln}"
                 for ff, ln, f in zip(firsts["source_file"], firsts["source_line"], d["source_file"])]
        dup_rej = _rejected_frame(d["source_file"].to_numpy(), d["source_line"].to_numpy(),
                                  Reason.DUPLICATE_JOB_ID,
                                  [f"job_id {j!r} already at {w}" for j, w in zip(d["job_id"], where)],
                                  _raw_rows(d, _RAW_JOB_COLUMNS))
        rejected = pd.concat([rejected, dup_rej], ignore_index=True)
        order = {p: i for i, p in enumerate(str(p) for p in paths)}
        rejected = (rejected.assign(_f=rejected["file"].map(order))
                    .sort_values(["_f", "line"], kind="stable").drop(columns="_f").reset_index(drop=True))
        for info in infos:
            n = int((d["source_file"] == info.path).sum())
            info.accepted -= n
            info.rejected += n
        jobs = jobs.loc[~dup].reset_index(drop=True)
        extra_df = extra_df.loc[~dup].reset_index(drop=True)

    if dup.any():
        counts = jobs["type"].value_counts().to_dict()
    else:  # per-file counts of the accepted rows (made from the few distinct values, not 1M strings)
        counts = {}
        for tc in type_counts:
            for k, v in tc.items():
                counts[k] = counts.get(k, 0) + v
    unknown = sorted(set(counts) - set(KNOWN_TYPES))
    if unknown:
        warn.append("unrecognised job type value(s) kept as their own category: "
                    + ", ".join(f"{t!r} ({counts[t]} rows)" for t in unknown))
    if len(rejected):
        rejected = _original_text(rejected, infos)
    for w in warn:
        warnings.warn(w, DataWarning, stacklevel=2)
    jobs = _with_chain_columns(jobs, extra_df)
    return Trace(jobs=jobs, rejected=rejected, files=infos, inconsistencies=incons, warnings=warn,
                 timezones=tzs, extras=extra_df)


#: restart-chain columns a synthetic trace carries beyond the published schema (acmemodel.synth)
CHAIN_FILE_COLUMNS: tuple[str, ...] = ("chain_id", "attempt", "prev_job_id", "restart_gap_s")


def _with_chain_columns(jobs: pd.DataFrame, extras: pd.DataFrame) -> pd.DataFrame:
    """``jobs`` plus the typed restart-chain columns when every file carried them (``attempt`` and
    ``prev_job_id``; :func:`acmemodel.features.chains.restart_chains` then uses the links as
    written instead of inferring them): ``chain_id`` (int, −1 if empty), ``attempt`` (int, 1 if
    empty), ``prev_job_id`` (str, ``""`` = first attempt), ``restart_gap_s`` (float)."""
    if extras is None or not {"attempt", "prev_job_id"} <= set(extras.columns) or len(extras) != len(jobs):
        return jobs
    ex = extras.reset_index(drop=True)
    att = pd.to_numeric(ex["attempt"], errors="coerce")
    if att.isna().any():  # a file without the columns (NaN after concat) or unparsable values
        return jobs
    jobs = jobs.copy(deep=False)
    jobs["attempt"] = att.to_numpy(dtype=np.int64)
    jobs["prev_job_id"] = ex["prev_job_id"].fillna("").astype(str).to_numpy(dtype=object)
    if "chain_id" in ex.columns:
        jobs["chain_id"] = pd.to_numeric(ex["chain_id"], errors="coerce").fillna(-1).to_numpy(dtype=np.int64)
    if "restart_gap_s" in ex.columns:
        jobs["restart_gap_s"] = pd.to_numeric(ex["restart_gap_s"], errors="coerce").to_numpy(dtype=float)
    return jobs


# ------------------------------------------------------------------------------------------ reading
def _cluster_name(name) -> str:
    """A ``cluster=`` name, trimmed; a known cluster in its canonical spelling (``seren`` → Seren)."""
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"cluster: expected a non-empty cluster name, got {name!r}")
    name = name.strip()
    for c in CLUSTER_TZ:
        if c.lower() == name.lower():
            return c
    return name


def _cluster_from_name(path: Path) -> str | None:
    name = path.name.lower()
    for c in CLUSTER_TZ:
        if c.lower() in name:
            return c
    return None


def _open_text_head(path: Path, nbytes: int = 65536) -> str:
    """The first bytes of a (possibly gzipped) file as text, for header sniffing."""
    try:
        with open(path, "rb") as f:
            magic = f.read(2)
        if magic == b"\x1f\x8b":
            with gzip.open(path, "rb") as f:
                raw = f.read(nbytes)
        else:
            with open(path, "rb") as f:
                raw = f.read(nbytes)
    except (OSError, EOFError, gzip.BadGzipFile) as e:
        raise TraceFormatError(f"{path}: unreadable compressed file ({e})") from None
    return raw.decode("utf-8-sig", errors="replace")


def _read_table(path: Path, notes: list[str] | None = None):
    """Read a file into a pyarrow Table (typed if possible) + bad-field-count rows + fast flag.

    ``notes`` receives warnings (bytes that are not UTF-8, replaced by U+FFFD)."""
    import pyarrow as pa
    import pyarrow.csv as pcsv

    if not path.exists():
        raise TraceFormatError(f"{path}: no such file")
    if path.is_dir():
        raise TraceFormatError(f"{path}: is a directory, not a trace file")
    if path.stat().st_size == 0:
        raise TraceFormatError(f"{path}: empty file")
    if path.suffix.lower() == ".parquet":
        import pyarrow.parquet as pq  # (only here: its import alone costs tens of ms)

        try:
            table = pq.read_table(path)
        except (pa.ArrowException, OSError) as e:
            raise TraceFormatError(f"{path}: not a readable parquet file ({e})") from None
        return table.rename_columns(_canonical_names(table.column_names)), [], True

    with open(path, "rb") as f:
        magic = f.read(6)
    for sig, what in _OTHER_FORMATS:
        if magic.startswith(sig):
            raise TraceFormatError(f"{path}: {what}; give a .csv, .csv.gz or .parquet file")
    head = _open_text_head(path)
    if not head.strip():
        raise TraceFormatError(f"{path}: empty file")
    if "\x00" in head:
        raise TraceFormatError(f"{path}: not a text (CSV) file: it holds NUL bytes")
    # column names from our own read of the header line: surrounding blanks and quotes are dropped
    header = _canonical_names([h.strip().strip('"').strip() for h in head.splitlines()[0].split(",")])
    _check_columns(path, header)

    col_types = {}
    for c in header:
        if c in TIME_COLUMNS:
            col_types[c] = pa.timestamp("ns", tz="UTC")
        elif c in NUMERIC_COLUMNS:
            col_types[c] = pa.float64()
        else:  # (user/type/state are dictionary-encoded after the read: cheaper than in the reader)
            col_types[c] = pa.string()

    compression = "gzip" if _is_gzip(path) else None
    block_size = 1 << 20  # (pyarrow's default; raised when a row is longer than a block)
    repaired = None  # the file's bytes with invalid UTF-8 replaced (rare path)

    def read(types, threads=True):
        bad: list[tuple] = []

        def handler(row):
            bad.append((row.number, row.text, row.actual_columns, row.expected_columns))
            return "skip"

        if repaired is not None:
            src = pa.BufferReader(repaired)
        else:
            src = pa.input_stream(str(path), compression=compression)
        table = pcsv.read_csv(
            src,
            read_options=pcsv.ReadOptions(use_threads=threads, column_names=header, skip_rows=1,
                                          block_size=block_size),
            # (blank lines are read as rows of empty fields, so that row k is line k + 2; they are
            # dropped in _drop_blank_rows)
            parse_options=pcsv.ParseOptions(invalid_row_handler=handler, ignore_empty_lines=False),
            convert_options=pcsv.ConvertOptions(column_types=types, strings_can_be_null=False,
                                                null_values=[""], quoted_strings_can_be_null=False),
        )
        return table, bad

    fast = True
    try:
        # a column with a value Arrow cannot convert is re-read as text (and parsed value by value
        # later), one column at a time: the other columns keep their typed fast path
        for _ in range(len(header) + 8):
            try:
                table, bad = read(col_types)
                break
            except pa.ArrowInvalid as e:
                if "straddl" in str(e) and block_size < (1 << 31) // 4:  # a row longer than a block
                    block_size *= 8
                    continue
                if "invalid UTF8" in str(e) and repaired is None:
                    repaired, n_bad = _utf8_repaired(path, compression)
                    if notes is not None:
                        notes.append(f"{path}: not valid UTF-8 text; {n_bad} undecodable byte(s) "
                                     "replaced by U+FFFD")
                    continue
                m = re.search(r"In CSV column #(\d+): CSV conversion error", str(e))
                if not m or int(m.group(1)) >= len(header) or col_types[header[int(m.group(1))]] == pa.string():
                    raise
                fast = False
                col_types[header[int(m.group(1))]] = pa.string()
        if bad and any(b[0] is None for b in bad):
            # line numbers are only known when reading single-threaded: re-read (rare path)
            table, bad = read(col_types, threads=False)
    except (OSError, EOFError) as e:
        raise TraceFormatError(f"{path}: unreadable file or compression ({e})") from None
    except pa.ArrowInvalid as e:
        raise TraceFormatError(f"{path}: not a readable CSV file ({str(e).splitlines()[0]})") from None
    return table, bad, fast


#: leading bytes of formats that are not read (with what to tell the user)
_OTHER_FORMATS = (
    (b"PAR1", "a parquet file without the .parquet suffix (rename it)"),
    (b"BZh", "bzip2-compressed, which is not supported"),
    (b"\xfd7zXZ", "xz-compressed, which is not supported"),
    (b"PK\x03\x04", "a zip archive, which is not supported (unzip it)"),
    (b"\x28\xb5\x2f\xfd", "zstd-compressed, which is not supported"),
)


def _utf8_repaired(path: Path, compression: str | None):
    """The file's bytes (decompressed) with invalid UTF-8 sequences replaced by U+FFFD, and how many
    bytes were replaced."""
    opener = gzip.open if compression == "gzip" else open
    with opener(path, "rb") as f:
        raw = f.read()
    text = raw.decode("utf-8", errors="replace")
    fixed = text.encode("utf-8")
    n_bad = text.count("\ufffd") - raw.count("\ufffd".encode("utf-8"))
    return fixed, n_bad


def _is_gzip(path: Path) -> bool:
    with open(path, "rb") as f:
        return f.read(2) == b"\x1f\x8b"


def _canonical_names(header: Sequence[str]) -> list[str]:
    """Header names; a known column in another case (``Job_ID``) under its schema name."""
    known = {c.lower(): c for c in (*KALOS_COLUMNS, *SEREN_COLUMNS)}
    return [known.get(h.lower(), h) if isinstance(h, str) else h for h in header]


def _check_columns(path: Path, header: Sequence[str]) -> None:
    missing = [c for c in REQUIRED_COLUMNS if c not in header]
    if missing:
        hint = ""
        if len(header) == 1 and any(d in str(header[0]) for d in "\t;|"):
            hint = "; the file must be comma-separated"
        found = ", ".join(str(h) for h in header[:20]).encode("unicode_escape").decode("ascii")
        raise TraceFormatError(
            f"{path}: missing required column(s) {', '.join(missing)} (found: {found[:500]}){hint}")
    seen = set()
    for c in header:
        if c in seen:
            raise TraceFormatError(f"{path}: column {c!r} appears twice in the header")
        seen.add(c)


def _read_one(path: Path, cluster: str | None):
    warn: list[str] = []
    table, bad, fast = _read_table(path, warn)
    header = table.column_names
    _check_columns(path, header)
    schema = "kalos" if any(c in header for c in KALOS_ONLY) else "seren"
    if cluster is None:
        cluster = _cluster_from_name(path)
        if cluster is None:
            cluster = "Kalos" if schema == "kalos" else "Seren"
            warn.append(f"{path}: cluster not given and not in the file name; assumed {cluster} "
                        f"from the {schema} schema (pass cluster= to set it)")
    known = set(KALOS_COLUMNS) | set(SEREN_COLUMNS)
    extra_cols = [c for c in header if c not in known]
    optional = [c for c in (KALOS_COLUMNS if schema == "kalos" else SEREN_COLUMNS)
                if c not in header and c not in REQUIRED_COLUMNS]
    if optional:
        warn.append(f"{path}: optional column(s) {', '.join(optional)} absent"
                    + ("; the cross-check of the file's own values is skipped for them"
                       if {"duration", "queue", "gpu_time"} & set(optional) else ""))
    info = FileInfo(path=str(path), cluster=cluster, schema=schema, extra_columns=extra_cols,
                    missing_optional=optional, fast_path=fast)
    n = table.num_rows
    if path.suffix.lower() != ".parquet":
        info._records = 1 + n + len(bad)
    # line numbers of the rows: data row k is line k + 2, shifted past skipped bad rows
    bad_lines = np.array(sorted(b[0] for b in bad), dtype=np.int64)
    lines = np.arange(2, n + 2, dtype=np.int64)
    if len(bad_lines):
        # the k-th good row sits at the smallest line L with L - 2 - (#bad lines < L) == k
        offs = bad_lines - 2 - np.arange(len(bad_lines))  # good rows before each bad line
        lines = lines + np.searchsorted(offs, np.arange(n), side="right")
    # blank (or blank-only) lines: skipped, not quarantined, after they served the line numbering
    n_space = len(bad)
    bad = [b for b in bad if b[1].strip()]
    n_space -= len(bad)  # (lines of blanks only)
    table, lines, n_blank = _drop_blank_rows(table, lines)
    n_blank += n_space
    n = table.num_rows
    if n_blank:
        warn.append(f"{path}: {n_blank} blank line(s) (or lines of empty fields) between the rows skipped")
    if table.num_rows == 0 and not bad:
        raise TraceFormatError(f"{path}: header has no data rows")
    # user/type/state are dictionary-encoded (and normalised on their dictionaries) in a background
    # thread: Arrow releases the GIL, so this runs beside the numeric work of the main thread.
    factors = _Background(_factorize_columns, table)
    table, int_ids = _normalise_job_ids(table)
    tz = CLUSTER_TZ.get(cluster) or _sniff_offset(path) or "+00:00"

    # The columns are taken from the Arrow table one by one (no whole-table pandas conversion); the
    # table stays around so that the few quarantined rows can be shown as read (see _raw_frame).
    p = _parse_columns(table, tz, path, warn)
    p["job_id_int"] = int_ids
    jobs, rej_mask, reasons, details, inc, type_counts, int_ids = _build_jobs(
        p, factors, cluster, str(path), lines, table)

    rej = [_rejected_frame(np.full(len(bad), str(path), dtype=object),
                           np.array([b[0] for b in bad], dtype=np.int64), Reason.FIELD_COUNT,
                           [f"{b[2]} fields, expected {b[3]}" for b in bad], [b[1] for b in bad])]
    keep = ~rej_mask
    if rej_mask.any():
        idx = np.flatnonzero(rej_mask)
        rej.append(pd.DataFrame({
            "file": str(path), "line": lines[idx], "reason": reasons, "detail": details,
            "raw": _raw_rows(_raw_frame(table, idx), header),
        }))
    rejected = pd.concat(rej, ignore_index=True).sort_values("line", kind="stable").reset_index(drop=True)
    if extra_cols:
        extra = _raw_frame(table.select(extra_cols), None, decode=False)
        extra = (extra.loc[keep] if not keep.all() else extra).reset_index(drop=True)
    else:
        extra = pd.DataFrame(index=jobs.index)
    del table
    info.rows = n + len(bad)
    info.accepted = len(jobs)
    info.rejected = len(rejected)
    if info.accepted == 0:
        warn.append(f"{path}: no row was accepted ({info.rejected} rejected)")
    never = ~jobs["started"].to_numpy()
    if never.any():  # kept as never started (no run time, wait censored at the end), but unexpected
        odd = jobs["state"].to_numpy()[never]
        odd = odd[odd != "CANCELLED"]
        if len(odd):
            warn.append(f"{path}: {len(odd)} row(s) with state {', '.join(sorted(set(odd)))} but no start_time; "
                        "kept as never started (no run time, wait censored at end_time)")
    if isinstance(int_ids, _Background):
        int_ids = int_ids.result()
    return jobs, rejected, info, extra, inc, warn, tz, type_counts, int_ids


def _original_text(rejected: pd.DataFrame, infos: Sequence[FileInfo]) -> pd.DataFrame:
    """``raw`` of the quarantined CSV rows replaced by their lines as written in the file (one pass
    over each file with such rows, only when there are some). Kept as parsed when the file's
    physical lines are not its records (a quoted value holding a newline)."""
    raw = rejected["raw"].to_numpy(dtype=object).copy()
    changed = False
    for info in infos:
        if not info._records:
            continue
        rows = np.flatnonzero((rejected["file"] == info.path).to_numpy())
        if not len(rows):
            continue
        want = {int(ln): [] for ln in rejected["line"].to_numpy()[rows]}
        for i, ln in zip(rows, rejected["line"].to_numpy()[rows]):
            want[int(ln)].append(i)
        found: dict[int, str] = {}
        path = Path(info.path)
        try:
            opener = gzip.open if _is_gzip(path) else open
            n_lines = 0
            with opener(path, "rb") as f:
                for n_lines, line in enumerate(f, start=1):
                    if n_lines in want:
                        found[n_lines] = line.decode("utf-8", errors="replace").rstrip("\r\n").lstrip("\ufeff")
        except (OSError, EOFError):
            continue
        if n_lines != info._records:  # records spanning lines: the numbers are not physical lines
            continue
        for ln, idx in want.items():
            if ln in found:
                raw[idx] = found[ln]
                changed = True
    return rejected.assign(raw=raw) if changed else rejected


def _drop_blank_rows(table, lines: np.ndarray):
    """The table and line numbers without the rows whose every field is empty (blank lines, read as
    such rows), and how many of them were not trailing. Cheap when ``job_id`` is never empty (the usual case)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if "job_id" not in table.column_names or table.num_rows == 0:
        return table, lines, 0
    jid = table.column("job_id")
    if not (pa.types.is_string(jid.type) or pa.types.is_large_string(jid.type)):
        return table, lines, 0  # (typed by a parquet writer: no blank lines)
    if not jid.null_count and pc.min(pc.utf8_length(jid)).as_py() != 0:
        return table, lines, 0
    cand = np.flatnonzero(np.asarray(pc.fill_null(pc.equal(jid, ""), True).to_numpy(zero_copy_only=False)))
    rows = table.take(pa.array(cand, type=pa.int64()))
    blank = np.ones(len(cand), dtype=bool)
    for col in rows.columns:
        empty = col.is_null()
        if pa.types.is_string(col.type) or pa.types.is_large_string(col.type):
            empty = pc.or_(empty, pc.fill_null(pc.equal(pc.utf8_trim_whitespace(col), ""), True))
        blank &= np.asarray(empty.to_numpy(zero_copy_only=False), dtype=bool)
    if not blank.any():
        return table, lines, 0
    keep = np.ones(table.num_rows, dtype=bool)
    keep[cand[blank]] = False
    n_trailing = table.num_rows - (int(np.flatnonzero(keep)[-1]) + 1 if keep.any() else 0)
    return table.filter(pa.array(keep)), lines[keep], int(blank.sum()) - n_trailing


def _raw_frame(table, idx: np.ndarray | None, decode: bool = True) -> pd.DataFrame:
    """Rows ``idx`` (all if None) of the (normalised) Arrow table as pandas values.

    The values as read, for the quarantine's ``raw``/``detail`` (dictionary columns decoded to
    strings) and for the extras.
    """
    import pyarrow as pa

    if idx is not None:
        table = _normalise_strings(table.take(pa.array(idx, type=pa.int64())))
    for i, f in enumerate(table.schema):
        if decode and pa.types.is_dictionary(f.type):
            table = table.set_column(i, f.name, table.column(i).cast(f.type.value_type))
    str_dtype = pd.StringDtype("pyarrow")
    return table.to_pandas(split_blocks=True,
                           types_mapper={pa.string(): str_dtype, pa.large_string(): str_dtype}.get)


def _norm_values(arr, upper: bool):
    """Trimmed (and for ``state`` upper-cased) strings, in Arrow (vectorised C++, not Python)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if not pa.types.is_string(arr.type) and not pa.types.is_large_string(arr.type):
        arr = pc.cast(arr, pa.string())
    arr = pc.utf8_trim_whitespace(arr)
    return pc.utf8_upper(arr) if upper else arr


def _all_distinct(col) -> bool:
    """True when no value of the column repeats (sorted in Arrow, neighbours compared; no Python
    object per value). False when unsure (nulls, a column too large for one chunk)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if col.null_count > 1:
        return False
    try:
        c = col.combine_chunks()
        if len(c) < 2:
            return True
        s = c.take(pc.sort_indices(c))
        return not pc.any(pc.equal(s.slice(1), s.slice(0, len(s) - 1))).as_py()
    except pa.ArrowException:  # (e.g. too large for one chunk): the caller checks otherwise
        return False


def _normalise_job_ids(table):
    """The table with ``job_id`` trimmed, and the ids as int64 when all are integer literals (else None).

    Ids that Arrow casts to integers hold no blank (the cast accepts digits and a sign only), so the
    trim is skipped for them.
    """
    import pyarrow as pa

    col = table.column("job_id")

    def as_int(c):
        if c.null_count:
            return None
        try:
            return np.asarray(c.cast(pa.int64()).to_numpy())
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            return None

    if pa.types.is_string(col.type) or pa.types.is_large_string(col.type):
        ints = as_int(col)
        if ints is not None:
            return table, ints
    table = _normalise_strings(table, ("job_id",))
    return table, as_int(table.column("job_id"))


def _normalise_strings(table, names: Sequence[str] = ("job_id", "user", "type", "state")):
    """Trim the key string columns and upper-case ``state``.

    Dictionary-encoded columns are normalised on their (small) dictionaries only.
    """
    import pyarrow as pa

    for name in names:
        if name not in table.column_names:
            continue
        i = table.column_names.index(name)
        col = table.column(i)
        up = name == "state"
        if pa.types.is_dictionary(col.type):
            chunks = [pa.DictionaryArray.from_arrays(ch.indices, _norm_values(ch.dictionary, up))
                      for ch in col.chunks]
            col = pa.chunked_array(chunks, type=pa.dictionary(col.type.index_type, pa.string()))
        else:
            col = _norm_values(col, up)
        table = table.set_column(i, name, col)
    return table


_OFFSET_RE = re.compile(r"\d{2}:\d{2}:\d{2}(?:\.\d+)?([+-]\d{2}:?\d{2}|Z)")


def _sniff_offset(path: Path) -> str | None:
    if path.suffix.lower() == ".parquet":
        return None
    m = _OFFSET_RE.search(_open_text_head(path, 8192))
    if not m:
        return None
    off = m.group(1)
    return "+00:00" if off == "Z" else (off if ":" in off else off[:3] + ":" + off[3:])


_NAT = np.iinfo(np.int64).min  # numpy/pandas NaT as int64


@dataclass
class _Time:
    """A parsed time column: ``i8`` ns since the epoch UTC (``_NAT`` where missing), ``na`` mask or None
    (no value missing), ``fail`` mask of present but unparsable values or None (cannot fail), ``ts`` the
    pandas series when it was built on the way (else made from ``i8`` on demand)."""

    i8: np.ndarray
    na: np.ndarray | None
    fail: np.ndarray | None
    ts: pd.Series | None = None

    def seconds(self) -> np.ndarray:
        v = self.i8.astype(np.float64)
        v /= 1e9
        if self.na is not None:
            v[self.na] = np.nan
        return v

    def series(self, keep: np.ndarray | None) -> pd.Series:
        if self.ts is not None:
            s = self.ts.reset_index(drop=True)
            return s if keep is None else s[keep].reset_index(drop=True)
        i8 = self.i8 if keep is None else self.i8[keep]
        return pd.Series(_writable(i8), dtype="datetime64[ns, UTC]")


def _writable(a: np.ndarray) -> np.ndarray:
    """Arrays viewed zero-copy on Arrow buffers are read-only: copy those (small, single-chunk files)."""
    return a if a.flags.writeable else a.copy()


def _arrow_i8(col) -> tuple[np.ndarray, np.ndarray | None]:
    """int64 values of an Arrow timestamp/number column with nulls as ``_NAT`` (+ null mask or None)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    v = col.cast(pa.int64())
    if v.null_count:
        na = np.asarray(v.is_null().to_numpy(zero_copy_only=False), dtype=bool)
        v = pc.fill_null(v, _NAT)
        return np.asarray(v.to_numpy()), na
    return np.asarray(v.to_numpy()), None


def _factorize(col, upper: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """``(values, codes)`` of a string column, normalised (trimmed; upper-cased if ``upper``): object
    array of its distinct values (missing → ``""``, the last entry) and the int code of each row.

    The column is dictionary-encoded (unless it already is) and normalised on its dictionary only.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    if col.num_chunks == 0:
        return np.array([""], dtype=object), np.zeros(0, dtype=np.intp)
    def unified(c):  # the chunks re-coded on one common dictionary
        return pa.table({"c": c}).unify_dictionaries().column(0).chunks

    if pa.types.is_dictionary(col.type):
        chunks = unified(col)
    else:
        try:  # one chunk: one dictionary, no unification
            chunks = [pc.dictionary_encode(col.combine_chunks())]
        except (pa.ArrowInvalid, pa.ArrowCapacityError):  # (too large for one chunk)
            chunks = unified(pc.dictionary_encode(col))
    dic = _norm_values(chunks[0].dictionary, upper)
    idx = pa.chunked_array([ch.indices for ch in chunks], type=chunks[0].type.index_type)
    if idx.null_count:
        idx = pc.fill_null(idx, len(dic))
    codes = np.asarray(idx.to_numpy()).astype(np.intp)  # (intp: fancy indexing without a conversion)
    cats = np.empty(len(dic) + 1, dtype=object)
    cats[:-1] = dic.to_numpy(zero_copy_only=False)
    cats[-1] = ""
    if dic.null_count:
        cats[:-1][dic.is_null().to_numpy(zero_copy_only=False)] = ""
    return cats, codes


class _Background:
    """Run ``fn(*args)`` in a thread; :meth:`result` joins it (and re-raises its exception)."""

    def __init__(self, fn, *args):
        import threading

        self._value = self._error = None
        self._thread = threading.Thread(target=self._run, args=(fn, args), daemon=True)
        self._thread.start()

    def _run(self, fn, args):
        try:
            self._value = fn(*args)
        except BaseException as e:  # re-raised in the caller's thread
            self._error = e

    def result(self):
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._value


def _factorize_columns(table) -> dict:
    """:func:`_factorize` of the ``user``, ``type`` and ``state`` columns present in the table."""
    return {c: _factorize(table.column(c), upper=c == "state")
            for c in ("user", "type", "state") if c in table.column_names}


def _parse_columns(table, tz: str, path: Path, warn: list[str]) -> dict:
    """Typed columns of the table, keyed by name, with masks of values present but unparsable.

    time column → :class:`_Time`; numeric → ``(float64 values, fail mask or None)``; ``job_id`` → the
    arrow column (``user``/``type``/``state``: see :func:`_factorize_columns`). Masks are None where
    the check cannot fail (a column Arrow already typed).
    """
    import pyarrow as pa

    out: dict = {}
    str_dtype = pd.StringDtype("pyarrow")
    for c in table.column_names:
        col = table.column(c)
        if c in TIME_COLUMNS:
            t = col.type
            if pa.types.is_timestamp(t) and t.unit == "ns" and t.tz in ("UTC", "+00:00"):
                i8, na = _arrow_i8(col)  # fast path: already UTC ns
                out[c] = _Time(i8, na, None)
                continue
            s = col.to_pandas(types_mapper={pa.string(): str_dtype, pa.large_string(): str_dtype}.get)
            fail = None
            if isinstance(s.dtype, pd.DatetimeTZDtype):
                ts = s.dt.tz_convert("UTC")
            elif pd.api.types.is_datetime64_any_dtype(s):  # naive (parquet): local time of the cluster
                ts = s.dt.tz_localize(_tzinfo(tz)).dt.tz_convert("UTC")
                warn.append(f"{path}: column {c} has no time zone; read as local time {tz}")
            else:
                ts, fail = _parse_time_strings(s, tz, path, c, warn)
            na = ts.isna().to_numpy()
            i8 = ts.to_numpy(dtype="datetime64[ns]").view("int64")
            out[c] = _Time(i8, na if na.any() else None, fail, ts)
        elif c in NUMERIC_COLUMNS:
            if pa.types.is_floating(col.type) or (pa.types.is_integer(col.type) and not col.null_count):
                out[c] = (_writable(np.asarray(col.to_numpy(), dtype=float)), None)  # (nulls → NaN)
            else:
                s = col.to_pandas(types_mapper={pa.string(): str_dtype, pa.large_string(): str_dtype}.get)
                if pd.api.types.is_numeric_dtype(s):
                    out[c] = (s.to_numpy(dtype=float), None)
                else:
                    txt = s.astype("string").str.strip()
                    v = pd.to_numeric(txt, errors="coerce").to_numpy(dtype=float)
                    present = txt.notna().to_numpy() & (txt != "").fillna(False).to_numpy()
                    out[c] = (v, present & np.isnan(v))
        elif c == "job_id":
            out[c] = col
    return out


def _tzinfo(offset: str):
    import datetime as dt

    return dt.timezone(dt.timedelta(seconds=utc_offset_seconds(offset)))


def _parse_time_strings(s: pd.Series, tz: str, path: Path, col: str, warn: list[str]):
    """Parse ISO-8601 strings; strings without a zone offset are local time ``tz``."""
    txt = s.astype("string").str.strip()
    present = (txt.notna() & (txt != "")).to_numpy(dtype=bool)
    result = pd.Series(pd.NaT, index=s.index, dtype="datetime64[ns, UTC]")
    if present.any():
        vals = txt[present]
        has_off = vals.str.contains(r"(?:[+-]\d{2}:?\d{2}|Z)$", regex=True).fillna(False).to_numpy()
        if has_off.any():
            result.loc[vals.index[has_off]] = pd.to_datetime(
                vals[has_off], utc=True, errors="coerce", format="ISO8601")
        if (~has_off).any():
            naive = pd.to_datetime(vals[~has_off], errors="coerce", format="ISO8601")
            ok = naive.notna()
            if ok.any():
                warn.append(f"{path}: {int(ok.sum())} value(s) of {col} have no time zone; read as "
                            f"local time {tz}")
                result.loc[naive.index[ok]] = naive[ok].dt.tz_localize(_tzinfo(tz)).dt.tz_convert("UTC")
    fail = present & result.isna().to_numpy()
    return result, fail


def _build_jobs(p: dict, factors: "_Background", cluster: str, path: str, lines: np.ndarray, table):
    """Validate the parsed columns, flag rows to quarantine and assemble the accepted jobs.

    ``factors`` yields the :func:`_factorize_columns` of the table (computed in the background).
    Returns ``(jobs, rej_mask, reason, detail, inconsistencies, type_counts, int_ids)``: ``jobs`` holds
    the accepted rows only; ``reason``/``detail`` are for the flagged rows (in row order);
    ``type_counts`` {type: accepted rows}; ``int_ids`` the accepted job ids as int64 when every id is
    an integer literal (for a cheap uniqueness check), else a :class:`_Background` yielding
    :func:`_all_distinct` of the file's ids.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    n = len(lines)
    # reasons as small integer codes (0 = accepted); texts only for the flagged rows
    reasons = list(Reason)
    code = np.zeros(n, dtype=np.int8)
    detail: dict[int, str] = {}
    flagged = False

    def flag(mask, r: Reason, text):
        nonlocal flagged
        if mask is None or not mask.any():  # (None: the check cannot fail)
            return
        m = mask & (code == 0) if flagged else mask  # first reason wins
        if not m.any():
            return
        flagged = True
        code[m] = reasons.index(r) + 1
        idx = np.flatnonzero(m)
        texts = text(idx) if callable(text) else [text] * len(idx)
        detail.update(zip(idx.tolist(), texts))

    # --- the checks (masks computed first, then applied in the order of precedence below)
    jid = p["job_id"]
    if jid.null_count:
        jid = pc.fill_null(jid, "")
    all_int_ids = p["job_id_int"]  # integer ids (then none is empty): cheap uniqueness check later
    empty_id = None
    if all_int_ids is None and n and pc.min(pc.utf8_length(jid)).as_py() == 0:
        empty_id = np.asarray(pc.equal(jid, "").to_numpy(zero_copy_only=False), dtype=bool)

    def whole_numbers(c):
        """(int64 values, mask of values missing, negative or not whole)."""
        v, fail = p[c]
        with np.errstate(invalid="ignore"):
            iv = v.astype(np.int64)
            bad = ~(v >= 0)  # missing (NaN) or negative
            bad |= iv != v  # not a whole number (or beyond int64)
        if fail is not None:
            bad |= fail
        if bad.any():  # the exact rule on the few flagged values: fail | NaN | < 0 | finite non-integer
            i = np.flatnonzero(bad)
            vb = v[i]
            with np.errstate(invalid="ignore"):
                # (also infinite or beyond int64, where the cast above gave garbage)
                bad[i] = (np.isnan(vb) | (vb < 0) | ~(vb < 2.0 ** 63) | (np.round(vb) != vb)
                          | (fail[i] if fail is not None else False))
        return iv, bad

    gpu, bad_gpu = whole_numbers("gpu_num")
    node, bad_node = whole_numbers("node_num")

    submit, start, end = p["submit_time"], p["start_time"], p["end_time"]
    submit_s, start_s, end_s = submit.seconds(), start.seconds(), end.seconds()
    not_started = start.na  # None: every job started
    with np.errstate(invalid="ignore"):
        end_before_start = end_s < start_s  # (NaN compares False: only started jobs)
        start_before_submit = start_s < submit_s
        end_before_submit = None if not_started is None else not_started & (end_s < submit_s)

    # --- derived columns (for every row; the rejected ones are dropped below)
    run_s = end_s - start_s  # NaN if never started
    queue_s = start_s - submit_s
    gpu_time = gpu * run_s
    if not_started is not None:  # a wait censored at the cancel; no GPU time
        np.subtract(end_s, submit_s, out=queue_s, where=not_started)
        gpu_time[not_started] = 0.0
    fail_s = p["fail_time"].seconds() - start_s if "fail_time" in p else np.full(n, np.nan)

    # the file's own duration/queue/gpu_time against the timestamps (counted on accepted rows below)
    def off(col, ref, tol):
        # rows where the file's value is finite and |value - ref| > tol (NaN compares False)
        x = np.subtract(col, ref)
        np.abs(x, out=x)
        m = x > tol
        m &= x != np.inf
        return m

    deviates = {}
    with np.errstate(invalid="ignore"):
        if "duration" in p:
            deviates["duration"] = off(p["duration"][0], run_s, CHECK_TOL_S)
        if "queue" in p:
            deviates["queue"] = off(p["queue"][0], queue_s, CHECK_TOL_S)
        if "gpu_time" in p:
            tol = np.maximum(gpu, 1).astype(np.float64)
            tol *= CHECK_TOL_S
            deviates["gpu_time"] = off(p["gpu_time"][0], gpu_time, tol)

    f = factors.result()
    # non-integer ids: are they all distinct? (an Arrow sort, in the background once that is free)
    distinct = _Background(_all_distinct, jid) if all_int_ids is None else None
    st_cats, st_codes = f["state"]
    an_cats = np.array([STATE_MAP.get(s) for s in st_cats], dtype=object)
    unknown_cat = np.array([a is None for a in an_cats], dtype=bool)

    flag(empty_id, Reason.MISSING_JOB_ID, "job_id is empty")
    for c in ("submit_time", "start_time", "end_time", "fail_time", "stop_time"):
        if c in p:
            flag(p[c].fail, Reason.BAD_TIMESTAMP, f"{c} is not a timestamp")
    flag(submit.na, Reason.MISSING_TIMESTAMP, "submit_time is empty")
    flag(end.na, Reason.MISSING_TIMESTAMP, "end_time is empty")
    for c, r, bad in (("gpu_num", Reason.BAD_GPU_NUM, bad_gpu), ("node_num", Reason.BAD_NODE_NUM, bad_node)):
        def text(idx, c=c):
            vals = _raw_frame(table.select([c]), idx)[c].to_numpy()
            return np.array([f"{c} = {_value_text(x)!r}" for x in vals], dtype=object)

        flag(bad, r, text)
    if unknown_cat.any():
        flag(unknown_cat[st_codes], Reason.UNKNOWN_STATE,
             lambda idx: np.array([f"state = {x!r}" for x in st_cats[st_codes[idx]]], dtype=object))
    flag(end_before_start, Reason.END_BEFORE_START, "end_time < start_time")
    flag(start_before_submit, Reason.START_BEFORE_SUBMIT, "start_time < submit_time")
    flag(end_before_submit, Reason.END_BEFORE_START, "end_time < submit_time")

    rej_mask = code > 0 if flagged else np.zeros(n, dtype=bool)
    keep = ~rej_mask if flagged else None  # None: every row accepted (no filtering copy)

    def take(a):
        return a if keep is None else a[keep]

    ty_cats, ty_codes = f["type"]
    ty_cats = ty_cats.copy()
    ty_cats[ty_cats == ""] = "Unknown"
    us_cats, us_codes = f["user"]
    ty_codes_k, st_codes_k = take(ty_codes), take(st_codes)
    n_keep = len(ty_codes_k)

    type_counts: dict[str, int] = {}
    for name, k in zip(ty_cats, np.bincount(ty_codes_k, minlength=len(ty_cats))):
        if k:
            type_counts[name] = type_counts.get(name, 0) + int(k)

    int_ids = take(all_int_ids) if all_int_ids is not None else distinct
    if all_int_ids is None and keep is not None:  # (the rejected rows may hold the non-integer ids)
        try:
            int_ids = np.asarray(jid.filter(pa.array(keep)).cast(pa.int64()).to_numpy())
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            pass

    def const(value):
        a = np.empty(n_keep, dtype=object)
        a.fill(value)
        return a

    def fnan(c):
        return _writable(take(p[c][0])) if c in p else np.full(n_keep, np.nan)

    started = np.ones(n_keep, dtype=bool) if not_started is None else take(~not_started)
    gpu_k = take(gpu)
    cols = {
        "cluster": const(cluster),
        "job_id": pd.array(jid if keep is None else jid.filter(pa.array(keep)), dtype=STR_DTYPE),
        "user": us_cats[take(us_codes)],
        "type": ty_cats[ty_codes_k],
        "state": st_cats[st_codes_k],
        "analysis_state": an_cats[st_codes_k],
        "gpu_num": gpu_k,
        "node_num": take(node),
        "cpu_num": fnan("cpu_num"),
        "is_gpu": gpu_k > 0,
        "submit_time": submit.series(keep), "start_time": start.series(keep), "end_time": end.series(keep),
        "submit_s": take(submit_s), "start_s": take(start_s), "end_s": take(end_s),
        "started": started,
        "run_s": take(run_s),
        "queue_s": take(queue_s),
        "queue_censored": ~started,
        "gpu_time_s": take(gpu_time),
        "fail_time_s": take(fail_s),
        "mem_per_pod_GB": fnan("mem_per_pod_GB"),
        "shared_mem_per_pod": fnan("shared_mem_per_pod"),
        "source_file": const(path),
        "source_line": take(lines),
    }
    # copy=False: one block per column, no consolidation copy of the 1M-row arrays
    jobs = pd.DataFrame(cols, copy=False)
    # reason and detail of the flagged rows only, in row order
    flagged_rows = np.flatnonzero(rej_mask)
    reason = np.array([None] + [r.value for r in reasons], dtype=object)[code[flagged_rows]]
    detail_arr = np.array([detail[i] for i in flagged_rows.tolist()], dtype=object)

    # cross-check counts: accepted rows of started jobs only
    inc = {"duration": 0, "queue": 0, "gpu_time": 0, "duration_includes_queue": 0}
    for kind, m in deviates.items():
        if not m.any():
            continue
        if flagged:
            m &= ~rej_mask
        if not_started is not None:
            m &= ~not_started
        inc[kind] = int(np.count_nonzero(m))
        if kind == "duration" and inc[kind]:
            i = np.flatnonzero(m)
            with np.errstate(invalid="ignore"):
                inc["duration_includes_queue"] = int(np.count_nonzero(
                    np.abs(p["duration"][0][i] - (end_s[i] - submit_s[i])) <= CHECK_TOL_S))
    return jobs, rej_mask, reason, detail_arr, inc, type_counts, int_ids


def _duplicated_ids(jobs: pd.DataFrame, int_ids: Sequence[np.ndarray | bool] = (),
                    n_clusters: int | None = None) -> np.ndarray:
    """Rows whose (cluster, job_id) appeared earlier (first occurrence kept); a uniqueness check first.

    ``int_ids``: per file, the accepted ids as integers when they all are integer literals, else
    whether all the file's ids are distinct (bool). Distinct integers imply distinct strings, so an
    increasing (or hash-unique) integer sequence proves there is no duplicate without hashing a
    million strings; so does a single file of distinct ids.
    """
    no_dup = np.zeros(len(jobs), dtype=bool)
    if len(int_ids) == 1 and int_ids[0] is True:
        return no_dup
    if int_ids and all(isinstance(ii, np.ndarray) for ii in int_ids):
        ids = np.concatenate(int_ids) if len(int_ids) > 1 else int_ids[0]
        if len(ids) < 2 or bool((ids[1:] > ids[:-1]).all()) or pd.Series(ids).is_unique:
            return no_dup
    if n_clusters is None:
        n_clusters = jobs["cluster"].nunique()
    if n_clusters <= 1 and jobs["job_id"].is_unique:
        return no_dup
    return jobs.duplicated(subset=["cluster", "job_id"], keep="first").to_numpy()


def _value_text(x) -> str:
    """A value as read, for a quarantine detail: missing → ``''``, a whole float without ``.0``."""
    if x is None or x is pd.NA or (isinstance(x, float) and np.isnan(x)):
        return ""
    if isinstance(x, float) and x.is_integer() and abs(x) < 1e15:
        return str(int(x))
    return str(x)


def _rejected_frame(files, lines, reason: Reason, details, raws) -> pd.DataFrame:
    return pd.DataFrame({"file": files, "line": np.asarray(lines, dtype=np.int64), "reason": reason.value,
                         "detail": list(details), "raw": list(raws)})


_RAW_JOB_COLUMNS = ("job_id", "user", "node_num", "gpu_num", "cpu_num", "type", "state", "submit_time",
                    "start_time", "end_time")


def _raw_rows(df: pd.DataFrame, columns: Sequence[str]) -> list[str]:
    """A rejected row as comma-separated text of ``columns`` (values as read or parsed)."""
    cols = list(columns)
    out = []
    for row in df[cols].itertuples(index=False, name=None):
        out.append(",".join("" if (v is None or (isinstance(v, float) and np.isnan(v)) or v is pd.NaT)
                            else str(v) for v in row))
    return out
