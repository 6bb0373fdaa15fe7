"""The trace layer: read AcmeTrace job files into one validated table.

``load_trace(paths, cluster=None) -> Trace`` reads Seren-schema and Kalos-schema files (``.csv``,
``.csv.gz``, ``.parquet``; any column order; UTF-8 BOM, CRLF and trailing blank lines tolerated) into
``Trace.jobs``, one row per accepted job, with these normalised columns:

=================  ==========================================================================
column             meaning
=================  ==========================================================================
cluster            cluster name (``cluster=`` argument, else the file name, else the schema)
job_id, user       as in the file (strings)
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

Rows that cannot be used are set aside in ``Trace.rejected`` (file, line, reason, raw row) — never
silently dropped; the reasons are :class:`Reason`. Whole-file problems raise
:class:`~acmemodel.errors.TraceFormatError` naming the file.

Fast path: a clean CSV is parsed by pyarrow straight into typed columns. If any value fails to
convert (a bad number or timestamp, a timestamp without zone offset), the file is re-read as text and
each column is parsed value by value, so that only the offending rows are quarantined.
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

from acmemodel.errors import DataWarning, TraceFormatError

#: cluster → UTC offset of its trace timestamps (paper Table 1 / AcmeTrace README)
CLUSTER_TZ: dict[str, str] = {"Seren": "+08:00", "Kalos": "+00:00"}

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

    frames, rejects, infos, extras = [], [], [], []
    warn: list[str] = []
    incons: dict[str, int] = {"duration": 0, "queue": 0, "gpu_time": 0, "duration_includes_queue": 0}
    tzs: dict[str, str] = {}
    for path, cl in zip(paths, clusters):
        jobs, rej, info, extra, inc, w, tz = _read_one(path, cl)
        frames.append(jobs)
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
    dup = _duplicated_ids(jobs)
    if dup.any():
        first = jobs.loc[~dup].set_index(["cluster", "job_id"])["source_line"]
        d = jobs.loc[dup]
        firsts = first.reindex(pd.MultiIndex.from_arrays([d["cluster"], d["job_id"]])).to_numpy()
        dup_rej = _rejected_frame(d["source_file"].to_numpy(), d["source_line"].to_numpy(),
                                  Reason.DUPLICATE_JOB_ID,
                                  [f"job_id {j!r} already at line {f}" for j, f in zip(d["job_id"], firsts)],
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

    unknown = sorted(set(jobs["type"].unique()) - set(KNOWN_TYPES))
    if unknown:
        counts = jobs["type"].value_counts()
        warn.append("unrecognised job type value(s) kept as their own category: "
                    + ", ".join(f"{t!r} ({counts[t]} rows)" for t in unknown))
    for w in warn:
        warnings.warn(w, DataWarning, stacklevel=2)
    return Trace(jobs=jobs, rejected=rejected, files=infos, inconsistencies=incons, warnings=warn,
                 timezones=tzs, extras=extra_df)


# ------------------------------------------------------------------------------------------ reading
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


def _read_table(path: Path):
    """Read a file into a pyarrow Table (typed if possible) + bad-field-count rows + fast flag."""
    import pyarrow as pa
    import pyarrow.csv as pcsv
    import pyarrow.parquet as pq

    if not path.exists():
        raise TraceFormatError(f"{path}: no such file")
    if path.is_dir():
        raise TraceFormatError(f"{path}: is a directory, not a trace file")
    if path.stat().st_size == 0:
        raise TraceFormatError(f"{path}: empty file")
    if path.suffix.lower() == ".parquet":
        try:
            return pq.read_table(path), [], True
        except (pa.ArrowException, OSError) as e:
            raise TraceFormatError(f"{path}: not a readable parquet file ({e})") from None

    head = _open_text_head(path)
    if not head.strip():
        raise TraceFormatError(f"{path}: empty file")
    header = [h.strip() for h in head.splitlines()[0].split(",")]
    _check_columns(path, header)

    col_types = {}
    for c in header:
        if c in TIME_COLUMNS:
            col_types[c] = pa.timestamp("ns", tz="UTC")
        elif c in NUMERIC_COLUMNS:
            col_types[c] = pa.float64()
        elif c in _DICT_COLUMNS:  # few distinct values: dictionary-encode (fast to convert)
            col_types[c] = pa.dictionary(pa.int32(), pa.string())
        else:
            col_types[c] = pa.string()

    def read(types, threads=True):
        bad: list[tuple] = []

        def handler(row):
            bad.append((row.number, row.text, row.actual_columns, row.expected_columns))
            return "skip"

        compression = "gzip" if _is_gzip(path) else None
        src = pa.input_stream(str(path), compression=compression)
        table = pcsv.read_csv(
            src,
            read_options=pcsv.ReadOptions(use_threads=threads),
            parse_options=pcsv.ParseOptions(invalid_row_handler=handler),
            convert_options=pcsv.ConvertOptions(column_types=types, strings_can_be_null=False,
                                                null_values=[""], quoted_strings_can_be_null=False),
        )
        return table, bad

    fast = True
    try:
        try:
            table, bad = read(col_types)
        except pa.ArrowInvalid as e:
            if "CSV conversion error" not in str(e) and "conversion" not in str(e).lower():
                raise
            fast = False
            table, bad = read({c: pa.string() for c in header})
        if bad and any(b[0] is None for b in bad):
            # line numbers are only known when reading single-threaded: re-read (rare path)
            table, bad = read(col_types if fast else {c: pa.string() for c in header}, threads=False)
    except (OSError, EOFError) as e:
        raise TraceFormatError(f"{path}: unreadable file or compression ({e})") from None
    except pa.ArrowInvalid as e:
        raise TraceFormatError(f"{path}: not a readable CSV file ({str(e).splitlines()[0]})") from None
    return table, bad, fast


def _is_gzip(path: Path) -> bool:
    with open(path, "rb") as f:
        return f.read(2) == b"\x1f\x8b"


def _check_columns(path: Path, header: Sequence[str]) -> None:
    missing = [c for c in REQUIRED_COLUMNS if c not in header]
    if missing:
        raise TraceFormatError(
            f"{path}: missing required column(s) {', '.join(missing)} "
            f"(found: {', '.join(header[:20])})")
    seen = set()
    for c in header:
        if c in seen:
            raise TraceFormatError(f"{path}: column {c!r} appears twice in the header")
        seen.add(c)


def _read_one(path: Path, cluster: str | None):
    table, bad, fast = _read_table(path)
    header = table.column_names
    _check_columns(path, header)
    schema = "kalos" if any(c in header for c in KALOS_ONLY) else "seren"
    warn: list[str] = []
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
    if table.num_rows == 0 and not bad:
        raise TraceFormatError(f"{path}: header has no data rows")

    n = table.num_rows
    # line numbers of the accepted rows: data row k is line k + 2, shifted past skipped bad rows
    bad_lines = np.array(sorted(b[0] for b in bad), dtype=np.int64)
    lines = np.arange(n, dtype=np.int64) + 2
    if len(bad_lines):
        # the k-th good row sits at the smallest line L with L - 2 - (#bad lines < L) == k
        offs = bad_lines - 2 - np.arange(len(bad_lines))  # good rows before each bad line
        lines = lines + np.searchsorted(offs, np.arange(n), side="right")
    table = _normalise_strings(table)
    import pyarrow as pa

    str_dtype = pd.StringDtype("pyarrow")
    df = table.to_pandas(split_blocks=True, self_destruct=True,
                         types_mapper={pa.string(): str_dtype, pa.large_string(): str_dtype}.get)
    del table
    tz = CLUSTER_TZ.get(cluster) or _sniff_offset(path) or "+00:00"

    parsed, fail = _parse_columns(df, fast, tz, path, warn)
    jobs, rej_mask, reasons, details, inc = _build_jobs(parsed, fail, cluster, str(path), lines, df)

    rej = [_rejected_frame(np.full(len(bad), str(path), dtype=object),
                           np.array([b[0] for b in bad], dtype=np.int64), Reason.FIELD_COUNT,
                           [f"{b[2]} fields, expected {b[3]}" for b in bad], [b[1] for b in bad])]
    if rej_mask.any():
        idx = np.flatnonzero(rej_mask)
        rej.append(pd.DataFrame({
            "file": str(path), "line": lines[idx], "reason": reasons[idx], "detail": details[idx],
            "raw": _raw_rows(df.iloc[idx], header),
        }))
    rejected = pd.concat(rej, ignore_index=True).sort_values("line", kind="stable").reset_index(drop=True)
    keep = ~rej_mask
    if not keep.all():  # (filtering a clean file would only copy it)
        jobs = jobs.loc[keep].reset_index(drop=True)
    extra = df.loc[keep, extra_cols].reset_index(drop=True) if extra_cols else pd.DataFrame(index=jobs.index)
    info.rows = n + len(bad)
    info.accepted = len(jobs)
    info.rejected = len(rejected)
    if info.accepted == 0:
        warn.append(f"{path}: no row was accepted ({info.rejected} rejected)")
    return jobs, rejected, info, extra, inc, warn, tz


_DICT_COLUMNS = ("user", "type", "state")


def _normalise_strings(table):
    """Trim the key string columns and upper-case ``state`` in Arrow (vectorised C++, not Python).

    Dictionary-encoded columns are normalised on their (small) dictionaries only.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    def norm(arr, upper):
        arr = pc.utf8_trim_whitespace(arr)
        return pc.utf8_upper(arr) if upper else arr

    for name in ("job_id", "user", "type", "state"):
        if name not in table.column_names:
            continue
        i = table.column_names.index(name)
        col = table.column(i)
        up = name == "state"
        if pa.types.is_dictionary(col.type):
            chunks = [pa.DictionaryArray.from_arrays(ch.indices, norm(ch.dictionary, up)) for ch in col.chunks]
            col = pa.chunked_array(chunks, type=col.type)
        else:
            if not pa.types.is_string(col.type) and not pa.types.is_large_string(col.type):
                col = pc.cast(col, pa.string())
            col = norm(col, up)
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


def _parse_columns(df: pd.DataFrame, fast: bool, tz: str, path: Path, warn: list[str]):
    """Typed columns + per-column masks of values that were present but could not be parsed."""
    out: dict[str, pd.Series | np.ndarray] = {}
    fail: dict[str, np.ndarray] = {}
    n = len(df)
    for c in df.columns:
        s = df[c]
        if c in TIME_COLUMNS:
            if isinstance(s.dtype, pd.DatetimeTZDtype):
                out[c] = s.dt.tz_convert("UTC")
                fail[c] = np.zeros(n, bool)
            elif pd.api.types.is_datetime64_any_dtype(s):  # naive (parquet): local time of the cluster
                out[c] = s.dt.tz_localize(_tzinfo(tz)).dt.tz_convert("UTC")
                fail[c] = np.zeros(n, bool)
                warn.append(f"{path}: column {c} has no time zone; read as local time {tz}")
            else:
                out[c], fail[c] = _parse_time_strings(s, tz, path, c, warn)
        elif c in NUMERIC_COLUMNS:
            if pd.api.types.is_numeric_dtype(s):
                out[c] = s.to_numpy(dtype=float)
                fail[c] = np.zeros(n, bool)
            else:
                txt = s.astype("string").str.strip()
                v = pd.to_numeric(txt, errors="coerce").to_numpy(dtype=float)
                present = txt.notna().to_numpy() & (txt != "").fillna(False).to_numpy()
                out[c] = v
                fail[c] = present & np.isnan(v)
        elif isinstance(s.dtype, pd.CategoricalDtype):
            cats = np.asarray(s.cat.categories, dtype=object)
            codes = s.cat.codes.to_numpy()
            v = cats[codes] if len(cats) else np.full(n, "", dtype=object)
            if len(cats) and (codes < 0).any():
                v[codes < 0] = ""  # missing value → empty string (flagged or defaulted later)
            out[c] = pd.Series(v, index=s.index)
        else:
            out[c] = s.astype(object).where(s.notna(), None) if s.dtype != object else s
    return out, fail


def _tzinfo(offset: str):
    import datetime as dt

    sign = -1 if offset.startswith("-") else 1
    hh, mm = offset[1:].split(":")
    return dt.timezone(sign * dt.timedelta(hours=int(hh), minutes=int(mm)))


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


def _seconds(ts: pd.Series) -> np.ndarray:
    """Unix seconds (float64) of a datetime64[ns, UTC] series; NaN for NaT."""
    v = ts.to_numpy(dtype="datetime64[ns]").view("int64").astype(np.float64) / 1e9
    v[ts.isna().to_numpy()] = np.nan
    return v


def _build_jobs(p: dict, fail: dict, cluster: str, path: str, lines: np.ndarray, raw: pd.DataFrame):
    n = len(lines)
    # reasons as small integer codes (0 = accepted); texts only for the flagged rows
    reasons = list(Reason)
    code = np.zeros(n, dtype=np.int8)
    detail: dict[int, str] = {}

    def flag(mask, r: Reason, text):
        m = mask & (code == 0)  # first reason wins
        if not m.any():
            return
        code[m] = reasons.index(r) + 1
        idx = np.flatnonzero(m)
        texts = text(m) if callable(text) else [text] * len(idx)
        detail.update(zip(idx.tolist(), texts))

    job_id = pd.Series(p["job_id"])
    empty_id = (job_id.isna() | (job_id == "")).to_numpy(dtype=bool)
    flag(empty_id, Reason.MISSING_JOB_ID, "job_id is empty")
    for c in ("submit_time", "start_time", "end_time", "fail_time", "stop_time"):
        if c in fail:
            flag(fail[c], Reason.BAD_TIMESTAMP, f"{c} is not a timestamp")
    submit, start, end = p["submit_time"], p["start_time"], p["end_time"]
    flag(submit.isna().to_numpy(), Reason.MISSING_TIMESTAMP, "submit_time is empty")
    flag(end.isna().to_numpy(), Reason.MISSING_TIMESTAMP, "end_time is empty")
    for c, r in (("gpu_num", Reason.BAD_GPU_NUM), ("node_num", Reason.BAD_NODE_NUM)):
        v = p[c]
        bad = fail[c] | np.isnan(v) | (v < 0) | (np.isfinite(v) & (np.round(v) != v))
        vals = raw[c].to_numpy()
        flag(bad, r, lambda m, c=c, vals=vals: np.array(
            [f"{c} = {'' if x is None else str(x)!r}" for x in vals[m]], dtype=object))
    state = _no_missing(p["state"])
    cats = pd.unique(state.to_numpy())  # few distinct values: map them, then broadcast
    analysis = pd.Series(state.to_numpy()).map(dict(zip(cats, (STATE_MAP.get(c) for c in cats))))
    if len(cats) <= 64:
        codes = pd.Categorical(state.to_numpy(), categories=cats).codes
        mapped = np.array([STATE_MAP.get(c) for c in cats], dtype=object)
        analysis = pd.Series(mapped[codes])
    unknown_state = analysis.isna().to_numpy()
    st_vals = state.to_numpy()
    flag(unknown_state, Reason.UNKNOWN_STATE,
         lambda m: np.array([f"state = {x!r}" for x in st_vals[m]], dtype=object))

    submit_s, start_s, end_s = _seconds(submit), _seconds(start), _seconds(end)
    started = ~np.isnan(start_s)
    with np.errstate(invalid="ignore"):
        flag(started & (end_s < start_s), Reason.END_BEFORE_START, "end_time < start_time")
        flag(started & (start_s < submit_s), Reason.START_BEFORE_SUBMIT, "start_time < submit_time")
        flag(~started & (end_s < submit_s), Reason.END_BEFORE_START, "end_time < submit_time")

    gpu = np.nan_to_num(p["gpu_num"], nan=0).astype(np.int64)
    node = np.nan_to_num(p["node_num"], nan=0).astype(np.int64)
    run_s = np.where(started, end_s - start_s, np.nan)
    queue_s = np.where(started, start_s - submit_s, end_s - submit_s)
    gpu_time = np.where(started, gpu * np.nan_to_num(run_s), 0.0)
    typ = _no_missing(p["type"])
    typ = typ.mask(typ == "", "Unknown")

    fail_s = np.full(n, np.nan)
    if "fail_time" in p:
        fail_s = _seconds(p["fail_time"]) - start_s

    cols = {
        "cluster": np.full(n, cluster, dtype=object),
        "job_id": job_id.fillna("") if empty_id.any() else job_id,
        "user": _no_missing(p["user"]),
        "type": typ,
        "state": state,
        "analysis_state": analysis,
        "gpu_num": gpu,
        "node_num": node,
        "cpu_num": p.get("cpu_num", np.full(n, np.nan)),
        "is_gpu": gpu > 0,
        "submit_time": submit, "start_time": start, "end_time": end,
        "submit_s": submit_s, "start_s": start_s, "end_s": end_s,
        "started": started,
        "run_s": run_s,
        "queue_s": queue_s,
        "queue_censored": ~started,
        "gpu_time_s": gpu_time,
        "fail_time_s": fail_s,
        "mem_per_pod_GB": p.get("mem_per_pod_GB", np.full(n, np.nan)),
        "shared_mem_per_pod": p.get("shared_mem_per_pod", np.full(n, np.nan)),
        "source_file": np.full(n, path, dtype=object),
        "source_line": lines,
    }
    # column-wise concat: no block consolidation of the object columns (several times faster)
    jobs = pd.concat([pd.Series(np.asarray(v) if not isinstance(v, pd.Series) else v.to_numpy(), name=k)
                      if not isinstance(v, pd.Series) or not isinstance(v.dtype, pd.DatetimeTZDtype)
                      else v.reset_index(drop=True).rename(k)
                      for k, v in cols.items()], axis=1, copy=False)
    rej_mask = code > 0
    reason = np.array([None] + [r.value for r in reasons], dtype=object)[code]
    detail_arr = np.full(n, None, dtype=object)
    if detail:
        detail_arr[np.fromiter(detail.keys(), dtype=np.int64)] = list(detail.values())
    detail = detail_arr

    # cross-check the file's own columns against the timestamps (accepted rows only)
    ok = ~rej_mask & started
    inc = {"duration": 0, "queue": 0, "gpu_time": 0, "duration_includes_queue": 0}
    with np.errstate(invalid="ignore"):
        if "duration" in p:
            d = p["duration"]
            bad = ok & np.isfinite(d) & (np.abs(d - run_s) > CHECK_TOL_S)
            inc["duration"] = int(bad.sum())
            inc["duration_includes_queue"] = int((bad & (np.abs(d - (end_s - submit_s)) <= CHECK_TOL_S)).sum())
        if "queue" in p:
            q = p["queue"]
            inc["queue"] = int((ok & np.isfinite(q) & (np.abs(q - queue_s) > CHECK_TOL_S)).sum())
        if "gpu_time" in p:
            g = p["gpu_time"]
            inc["gpu_time"] = int((ok & np.isfinite(g) & (np.abs(g - gpu_time) > CHECK_TOL_S * np.maximum(gpu, 1))).sum())
    return jobs, rej_mask, reason, detail, inc


def _duplicated_ids(jobs: pd.DataFrame) -> np.ndarray:
    """Rows whose (cluster, job_id) appeared earlier (first occurrence kept); a uniqueness check first."""
    if jobs["cluster"].nunique() <= 1 and jobs["job_id"].is_unique:
        return np.zeros(len(jobs), dtype=bool)
    return jobs.duplicated(subset=["cluster", "job_id"], keep="first").to_numpy()


def _no_missing(col) -> pd.Series:
    """An object string column with missing values as ``""`` (categoricals arrive without any)."""
    s = pd.Series(col).astype(object)
    return s.fillna("") if s.isna().any() else s


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
