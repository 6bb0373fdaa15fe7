"""Shared machinery of the export writers: input normalisation, restart chains, vectorised
timestamp formatting, fast CSV writing, sidecar READMEs and the result record.

Every writer takes the jobs DataFrame of the Trace contract (one row per job *attempt*) and
never mutates it. Times are handled as float Unix seconds (UTC) and rounded to whole seconds
in exactly one place (:func:`round_seconds`) so that derived durations are computed from the
rounded timestamps and stay consistent with them (``submit + wait + run == end`` exactly).
"""
from __future__ import annotations

import datetime as _dt
import gzip
from contextlib import contextmanager
from contextvars import ContextVar
import math
import re
import warnings
from pathlib import Path
from typing import Any, Iterable, Mapping, NamedTuple

import numpy as np
import pandas as pd

from acmemodel.clusters import GPUS_PER_NODE, cluster_info, utc_offset_seconds
from acmemodel.errors import DataWarning
from acmemodel.trace import KNOWN_TYPES, STATE_MAP

#: fixed codes of the published job types (SWF queue numbers, in the order of
#: :data:`acmemodel.trace.KNOWN_TYPES`); unknown types get 7, 8, ... in alphabetical order
TYPE_ORDER: tuple[str, ...] = KNOWN_TYPES

#: columns the writers need (the rest of the contract is derived when missing)
REQUIRED = ("cluster", "job_id", "user", "type", "gpu_num", "submit_s", "end_s")

CHAIN_COLUMNS = ("chain_id", "attempt", "prev_index", "restart_gap_s")


# --------------------------------------------------------------------------- time zones
def format_offset(offset_s: int) -> str:
    sign = "+" if offset_s >= 0 else "-"
    a = abs(int(offset_s))
    return f"{sign}{a // 3600:02d}:{(a % 3600) // 60:02d}"


def cluster_offsets(clusters: Iterable[str], timezones: Mapping[str, str] | None) -> dict[str, int]:
    """UTC offset (s) per cluster: ``timezones`` first, then the published zone, else UTC (+ a
    :class:`DataWarning`)."""
    out = {}
    tzs = {str(k).lower(): v for k, v in (timezones or {}).items()}
    for c in clusters:
        if str(c).lower() in tzs:
            out[c] = utc_offset_seconds(tzs[str(c).lower()])
        elif (info := cluster_info(c)) is not None:
            out[c] = utc_offset_seconds(info["tz"])
        else:
            warnings.warn(f"no time zone known for cluster {c!r}: writing local times in UTC (+00:00)",
                          DataWarning, stacklevel=3)
            out[c] = 0
    return out


# --------------------------------------------------------------------------- input normalisation
def normalize_jobs(jobs: Any) -> tuple[pd.DataFrame, dict[str, str]]:
    """Accept a jobs DataFrame (or a ``Trace``) and return ``(frame, timezones)``.

    The frame is a shallow copy with the contract columns the writers use, filled in where they
    can be derived: ``submit_s``/``start_s``/``end_s`` from the datetime columns, ``analysis_state``
    from ``state`` (TIMEOUT and NODE_FAIL → FAILED) or vice versa, ``node_num`` from
    ``gpu_num`` (8 GPUs per node), ``cpu_num`` as NaN, ``fail_time_s`` as NaN.
    Raises ``ValueError`` naming the missing columns.
    """
    timezones: dict[str, str] = {}
    if hasattr(jobs, "jobs") and isinstance(getattr(jobs, "jobs"), pd.DataFrame):
        timezones = dict(getattr(jobs, "timezones", {}) or {})
        jobs = jobs.jobs
    if not isinstance(jobs, pd.DataFrame):
        raise ValueError(f"jobs must be a pandas DataFrame or a Trace, got {type(jobs).__name__}")
    df = jobs.copy(deep=False)
    for col in ("submit", "start", "end"):
        if f"{col}_s" not in df.columns and f"{col}_time" in df.columns:
            t = pd.to_datetime(df[f"{col}_time"], utc=True)
            s = t.astype("int64").astype(float) / 1e9
            s[t.isna().to_numpy()] = np.nan
            df[f"{col}_s"] = s
    if "start_s" not in df.columns:
        df["start_s"] = np.nan
    if "state" not in df.columns and "analysis_state" not in df.columns:
        raise ValueError("jobs has neither a 'state' nor an 'analysis_state' column")
    if "state" not in df.columns:
        df["state"] = df["analysis_state"]
    if "analysis_state" not in df.columns:
        state = df["state"].astype(str)
        df["analysis_state"] = state.map(STATE_MAP).fillna(state)
    missing = [c for c in REQUIRED if c not in df.columns]
    if missing:
        raise ValueError(f"jobs is missing required column(s): {', '.join(missing)}")
    df["gpu_num"] = pd.to_numeric(df["gpu_num"]).fillna(0).astype("int64")
    if "node_num" not in df.columns:
        df["node_num"] = np.ceil(df["gpu_num"].to_numpy() / GPUS_PER_NODE).astype("int64")
    else:
        df["node_num"] = pd.to_numeric(df["node_num"]).fillna(0).astype("int64")
    if "cpu_num" not in df.columns:
        df["cpu_num"] = np.nan
    if "fail_time_s" not in df.columns:
        df["fail_time_s"] = np.nan
    if not df.index.is_unique:
        raise ValueError("jobs index must be unique (restart chains refer to rows by label)")
    for c in ("submit_s", "start_s", "end_s"):
        df[c] = pd.to_numeric(df[c]).astype(float)
    if df["submit_s"].isna().any():
        raise ValueError(f"jobs has {int(df['submit_s'].isna().sum())} row(s) without a submit time")
    if df["end_s"].isna().any():
        raise ValueError(f"jobs has {int(df['end_s'].isna().sum())} row(s) without an end time")
    bad = (df["end_s"] < df["submit_s"]) | (df["start_s"] < df["submit_s"]) | (df["end_s"] < df["start_s"])
    if bad.any():
        raise ValueError(f"jobs has {int(bad.sum())} row(s) whose times are out of order "
                         "(need submit <= start <= end)")
    if "queue_s" not in df.columns:
        df["queue_s"] = np.where(df["start_s"].notna(), df["start_s"] - df["submit_s"],
                                 df["end_s"] - df["submit_s"])
    for c in ("cluster", "job_id", "user", "type"):
        if pd.api.types.infer_dtype(df[c], skipna=False) != "string":  # a scan; no copy if already str
            df[c] = df[c].astype(str)
    return df, timezones


#: how each chain source is named in the writers' READMEs
CHAIN_SOURCES = {
    "columns": "the trace's own chain columns (chain_id / attempt / prev_job_id or prev_index)",
    "inferred": "inference: acmemodel.features.chains.restart_chains, the conservative rule (same "
                "cluster, user, type and GPU count; a window per cluster x type x key activity whose estimated precision, "
                "measured against COMPLETED jobs, is >= 0.95)",
    "none": "none (every job a single attempt)",
}


def chain_note(source: str, restarts: int) -> str:
    """The README sentence naming where the restart chains came from and how many restarts."""
    return f"Restart chains: {CHAIN_SOURCES.get(source, source)}; {int(restarts)} restart attempts."


def ensure_chains(df: pd.DataFrame) -> tuple[pd.DataFrame, str]:
    """Make sure ``df`` carries the restart-chain columns ``chain_id``, ``attempt``, ``prev_index``,
    ``restart_gap_s``.

    Uses the columns when present (a synthetic trace, or a loaded file with ``prev_job_id``),
    otherwise :func:`acmemodel.features.chains.restart_chains`' conservative inference; if that is
    unavailable every row is its own one-attempt chain (with a :class:`DataWarning`). Returns
    ``(frame, source)`` with source ``"columns"``, ``"inferred"`` or ``"none"``
    (:data:`CHAIN_SOURCES`).
    """
    if all(c in df.columns for c in CHAIN_COLUMNS):
        return df, "columns"
    try:
        from acmemodel.features.chains import restart_chains
    except ImportError:
        restart_chains = None
    if restart_chains is not None:
        ch = restart_chains(df)
        df = df.copy(deep=False)
        for c in CHAIN_COLUMNS:
            df[c] = ch[c].reindex(df.index)
        return df, ch.attrs.get("source", "inferred")
    warnings.warn("restart chains unavailable (acmemodel.features.chains not importable): every "
                  "job is exported as a single attempt", DataWarning, stacklevel=3)
    df = df.copy(deep=False)
    df["chain_id"] = np.arange(len(df))
    df["attempt"] = 1
    df["prev_index"] = np.nan
    df["restart_gap_s"] = np.nan
    return df, "none"


def prev_positions(sub: pd.DataFrame) -> np.ndarray:
    """Row position (within ``sub``) of each row's previous restart attempt, −1 if none or if that
    attempt is not in ``sub`` (``prev_index`` holds row labels; NaN or −1 mean none)."""
    n = len(sub)
    pos = np.full(n, -1, dtype="int64")
    if "prev_index" not in sub.columns or n == 0:
        return pos
    prev = sub["prev_index"].to_numpy()
    has = ~pd.isna(prev)
    if has.any() and not isinstance(prev[has][0], str):
        has &= np.asarray(pd.to_numeric(pd.Series(prev), errors="coerce").fillna(-1) != -1)
    if has.any():
        labels = pd.Index(prev[has])
        try:
            labels = labels.astype(sub.index.dtype)
        except (TypeError, ValueError):
            pass
        pos[has] = sub.index.get_indexer(labels)
    return pos


def split_clusters(df: pd.DataFrame, cluster: str | None = None) -> list[tuple[str, pd.DataFrame]]:
    """``[(cluster_name, rows)]`` sorted by submit time; ``cluster`` (case-insensitive) selects one."""
    if cluster is not None:
        mask = df["cluster"].str.lower() == str(cluster).lower()
        if not mask.any():
            raise ValueError(f"cluster={cluster!r} not in the jobs (have: "
                             f"{', '.join(sorted(df['cluster'].unique()))})")
        df = df[mask]
    if len(df) == 0:
        raise ValueError("no jobs to export")
    out = []
    # a set, not Series.unique(): pandas hashes object strings as C strings ('a\x00b' == 'a')
    names = set(df["cluster"].tolist())
    for name in sorted(names):
        sub = df if len(names) == 1 else df[df["cluster"] == name]
        t = sub["submit_s"].to_numpy()
        if len(t) > 1 and not (t[1:] >= t[:-1]).all():
            sub = sub.iloc[np.argsort(t, kind="stable")]
        out.append((name, sub))
    return out


class Prepared(NamedTuple):
    """What every writer starts from (:func:`prepare`)."""
    df: pd.DataFrame                  #: normalised jobs with restart-chain columns
    chains: str                       #: where the chains came from (:func:`ensure_chains`)
    out: Path                         #: the output directory (created)
    groups: list[tuple[str, pd.DataFrame]]  #: ``(cluster, rows sorted by submit)``
    offsets: dict[str, int]           #: cluster → UTC offset (s) of its local time


def prepare(jobs: Any, out: str | Path, *, cluster: str | None = None,
            timezones: Mapping[str, str] | None = None, local_time: bool = True) -> Prepared:
    """The common start of a writer: :func:`normalize_jobs`, ``timezones`` over the trace's,
    :func:`ensure_chains`, :func:`prepare_out`, :func:`split_clusters` and (``local_time``)
    :func:`cluster_offsets`."""
    df, tzs = normalize_jobs(jobs)
    tzs.update(timezones or {})
    df, chain_src = ensure_chains(df)
    out = prepare_out(out)
    groups = split_clusters(df, cluster)
    offsets = cluster_offsets([g for g, _ in groups], tzs) if local_time else {}
    return Prepared(df, chain_src, out, groups, offsets)


def drop_cpu_jobs(sub: pd.DataFrame, drop: bool = True) -> tuple[pd.DataFrame, int]:
    """``(rows, number of CPU-only jobs (gpu_num <= 0) in sub)``; the rows without them if ``drop``."""
    cpu = sub["gpu_num"].to_numpy() <= 0
    n = int(cpu.sum())
    return (sub[~cpu] if drop and n else sub), n


class GpuGroups:
    """Iterate the per-cluster ``(name, rows)`` groups of :func:`prepare` as ``(name, rows, n_cpu)``:
    without CPU-only jobs when ``drop`` (their number summed in :attr:`dropped`), skipping groups left
    empty unless ``keep_empty``."""

    def __init__(self, groups, drop: bool = True, keep_empty: bool = False):
        self.groups, self.drop, self.keep_empty = groups, drop, keep_empty
        self.dropped = 0

    def __iter__(self):
        for name, sub in self.groups:
            sub, n_cpu = drop_cpu_jobs(sub, self.drop)
            if self.drop:
                self.dropped += n_cpu
            if len(sub) or self.keep_empty:
                yield name, sub, n_cpu


def safe_name(s: str, *, lower: bool = True) -> str:
    """A file-name-safe version of a cluster name (lower case unless ``lower=False``): runs of
    characters other than letters, digits, ``_``, ``.``, ``-`` become ``_``; leading/trailing ``_`` and
    ``.`` are stripped, so the result is never empty, ``.``, ``..``, absolute or a path with ``/``;
    at most 100 characters (file names are limited to 255 bytes)."""
    n = re.sub(r"[^A-Za-z0-9_.-]+", "_", str(s))[:100].strip("_.")
    return (n.lower() if lower else n) or "cluster"


def safe_names(names: Iterable[str], *, lower: bool = True) -> dict[str, str]:
    """:func:`safe_name` of every cluster name, made unique (``_2``, ``_3``... on a clash, compared
    case-insensitively) so two clusters never write the same file."""
    out: dict[str, str] = {}
    used: set[str] = set()
    for name in names:
        base = cand = safe_name(name, lower=lower)
        i = 1
        while cand.lower() in used:
            i += 1
            cand = f"{base}_{i}"
        used.add(cand.lower())
        out[name] = cand
    return out


#: files the writers must not overwrite (the command's inputs; set with :func:`protect`)
_PROTECTED: ContextVar[frozenset] = ContextVar("acmemodel_export_protected", default=frozenset())


@contextmanager
def protect(paths: Iterable[str | Path]):
    """Within the block, :func:`out_path` refuses to return any of ``paths`` (resolved), e.g. the trace
    files an export reads from the same directory it writes to."""
    token = _PROTECTED.set(_PROTECTED.get() | {Path(p).resolve() for p in paths if p is not None})
    try:
        yield
    finally:
        _PROTECTED.reset(token)


def out_path(out: Path, *parts: str) -> Path:
    """``out / parts...``, refused (``ValueError``) if it resolves outside ``out`` (a ``..`` or an
    absolute part, or a symbolic link inside ``out`` pointing elsewhere) or onto a :func:`protect`-ed
    input. Every writer builds its file paths here."""
    out = Path(out)
    p = out.joinpath(*parts)
    root, real = out.resolve(), p.resolve()
    if real != root and root not in real.parents:
        raise ValueError(f"refusing to write {p}: it resolves outside the output directory {out} ({real})")
    if real in _PROTECTED.get():
        raise ValueError(f"refusing to write {p}: it is an input of this command; write elsewhere")
    return p


# --------------------------------------------------------------------------- times
def round_seconds(s: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """Round float seconds to whole seconds (half to even, ``numpy.rint``).

    Returns ``(int64 seconds with 0 where missing, missing mask, max |adjustment|)``.
    """
    s = np.asarray(s, dtype=float)
    miss = np.isnan(s)
    r = np.rint(np.where(miss, 0.0, s))
    adj = float(np.max(np.abs(r - np.where(miss, 0.0, s)))) if len(s) else 0.0
    return r.astype("int64"), miss, adj


class Times(NamedTuple):
    """Whole-second timestamps of a set of rows (:func:`rounded_times`)."""
    submit: np.ndarray       #: int64 Unix seconds
    start: np.ndarray        #: int64 Unix seconds, 0 where the job never started
    unstarted: np.ndarray    #: bool, the job never started (``start_s`` NaN)
    end: np.ndarray          #: int64 Unix seconds
    rounding_s: float        #: largest rounding adjustment over the three columns


def rounded_times(sub: pd.DataFrame) -> Times:
    """``submit_s``, ``start_s``, ``end_s`` of ``sub`` through :func:`round_seconds`."""
    s, _, a1 = round_seconds(sub["submit_s"].to_numpy())
    st, st_miss, a2 = round_seconds(sub["start_s"].to_numpy())
    en, _, a3 = round_seconds(sub["end_s"].to_numpy())
    return Times(s, st, st_miss, en, max(a1, a2, a3))


# --------------------------------------------------------------------------- strings (Arrow)
# Columns are built as Arrow large_string arrays: casting, concatenation and CSV writing then run in
# Arrow's C++ kernels instead of per-value Python calls (~10x faster on a million rows).
def to_arrow(col: Any) -> "pa.Array":
    """A string column as an Arrow ``large_string`` array (None/NaN → null)."""
    import pyarrow as pa

    if isinstance(col, pa.ChunkedArray):  # combine_chunks copies even a single chunk
        col = col.chunk(0) if col.num_chunks == 1 else col.combine_chunks()
    if isinstance(col, pa.Array):
        return col if col.type == pa.large_string() else col.cast(pa.large_string())
    if isinstance(col, pd.Series):
        col = col.to_numpy(dtype=object)
    return pa.array(np.asarray(col, dtype=object), type=pa.large_string(), from_pandas=True)


def cat(*parts: Any) -> "pa.Array":
    """Element-wise concatenation of string columns and constant strings (a null part → null)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    args = [pa.scalar(p, type=pa.large_string()) if isinstance(p, str) else to_arrow(p) for p in parts]
    if not any(isinstance(a, pa.Array) for a in args):
        raise ValueError("cat needs at least one column")
    return pc.binary_join_element_wise(*args, pa.scalar("", type=pa.large_string()))


def _validity(missing: np.ndarray | None):
    import pyarrow as pa

    if missing is None or not np.any(missing):
        return None, 0
    return pa.py_buffer(np.packbits(~np.asarray(missing, bool), bitorder="little")), int(np.sum(missing))


def time_bytes(sec: np.ndarray, *, offset_s: int = 0, suffix: str = "", sep: str = " ") -> np.ndarray:
    """``YYYY-MM-DD HH:MM:SS`` + ``suffix`` of integer Unix seconds shifted by ``offset_s`` (local
    wall-clock time), as an ``(n, 19 + len(suffix))`` uint8 matrix of ASCII bytes (one row a string).

    Two small lookup tables do the work: the ``YYYY-MM-DD`` text of every day in the range (a
    trace spans a few hundred days; :func:`numpy.datetime_as_string` on those) and the
    ``HH:MM:SS`` text of the 86,400 seconds of a day; each row is two gathers from them.
    """
    sec = np.asarray(sec, dtype="int64") + int(offset_s)
    n = len(sec)
    suf = np.frombuffer(suffix.encode("ascii"), dtype=np.uint8)
    out = np.empty((n, 19 + len(suf)), dtype=np.uint8)
    if n == 0:
        return out
    days, sod = np.divmod(sec, 86400)
    d0, d1 = int(days.min()), int(days.max())
    if d1 - d0 < max(4 * n, 1 << 16):
        day_values, day_idx = np.arange(d0, d1 + 1), days - d0
    else:  # sparse dates over a very long range
        day_values, day_idx = np.unique(days, return_inverse=True)
    text = np.datetime_as_string(day_values.astype("datetime64[D]"), unit="D").astype("U10")
    codes = text.view(np.uint32).reshape(len(text), 10)
    if not (codes < 128).all():  # years beyond 9999 or before 0 would not be fixed width
        raise ValueError("timestamps out of the range 0000..9999")
    out[:, :10] = codes.astype(np.uint8)[day_idx]
    out[:, 10:19] = _clock_table(sep)[sod]
    out[:, 19:] = suf
    return out


_CLOCK: dict[str, np.ndarray] = {}


def _clock_table(sep: str) -> np.ndarray:
    """``sep + "HH:MM:SS"`` of every second of a day, (86400, 9) uint8 (cached)."""
    if sep not in _CLOCK:
        h, rem = np.divmod(np.arange(86400), 3600)
        m, s = np.divmod(rem, 60)
        t = np.empty((86400, 9), dtype=np.uint8)
        t[:, 0] = ord(sep)
        for col, v in ((1, h), (4, m), (7, s)):
            t[:, col] = ord("0") + v // 10
            t[:, col + 1] = ord("0") + v % 10
        t[:, 3] = t[:, 6] = ord(":")
        _CLOCK[sep] = t
    return _CLOCK[sep]


def format_times(sec: np.ndarray, missing: np.ndarray | None = None, *, offset_s: int = 0,
                 suffix: str = "", sep: str = " ") -> "pa.Array":
    """Vectorised ``YYYY-MM-DD HH:MM:SS`` + ``suffix`` of integer Unix seconds shifted by
    ``offset_s`` (local wall-clock time) as an Arrow ``large_string`` array; missing entries are
    null. The fixed-width bytes of :func:`time_bytes` become the array's data buffer directly (no
    per-value Python objects).
    """
    import pyarrow as pa

    b = time_bytes(sec, offset_s=offset_s, suffix=suffix, sep=sep)
    n, w = b.shape
    if n == 0:
        return pa.array([], type=pa.large_string())
    offsets = np.arange(0, (n + 1) * w, w, dtype=np.int64)
    validity, nulls = _validity(missing)
    return pa.LargeStringArray.from_buffers(n, pa.py_buffer(offsets), pa.py_buffer(b), validity, nulls)


def int_strings(x: np.ndarray, missing: np.ndarray | None = None, *, float_suffix: bool = False) -> "pa.Array":
    """Integers as decimal strings (``"936"``, or ``"936.0"`` with ``float_suffix``); missing → null."""
    import pyarrow as pa

    x = np.asarray(x)
    arr = pa.array(x.astype("int64"), mask=None if missing is None else np.asarray(missing, bool))
    s = arr.cast(pa.large_string())
    return cat(s, ".0") if float_suffix else s


def float_strings(x: np.ndarray) -> "pa.Array":
    """Floats as Python's ``repr`` (``100.0``, ``2.5``; the published files' style); NaN → null."""
    x = np.asarray(x, dtype=float)
    out = np.empty(len(x), dtype=object)
    ok = ~np.isnan(x)
    values, codes = np.unique(x[ok], return_inverse=True)  # few distinct values in a trace column
    out[ok] = np.array([repr(float(v)) for v in values], dtype=object)[codes.ravel()]
    out[~ok] = None
    return to_arrow(out)


def short_float_strings(x: np.ndarray) -> "pa.Array":
    """Floats as their shortest round-trip text, integral values without a decimal point
    (``117``, ``12.25``, ``1e-07`` style from Arrow); for JSON numbers."""
    import pyarrow as pa

    x = np.asarray(x, dtype=float)
    integral = np.isfinite(x) & (x == np.floor(x)) & (np.abs(x) < 2 ** 53)
    ints = int_strings(np.where(integral, x, 0))
    floats = pa.array(x).cast(pa.large_string())
    import pyarrow.compute as pc

    return pc.if_else(pa.array(integral), ints, floats)


def num_strings(x: pd.Series) -> "pa.Array":
    """Integral numbers as ints (``128``), others as Python floats; NaN → null."""
    import pyarrow as pa
    import pyarrow.compute as pc

    v = pd.to_numeric(x, errors="coerce").to_numpy(dtype=float)
    miss = np.isnan(v)
    vv = np.where(miss, 0, v)
    integral = ~miss & (np.floor(vv) == vv)
    ints = int_strings(np.where(integral, vv, 0), miss)
    if integral.sum() == (~miss).sum():
        return ints
    rest = np.where(integral | miss, np.nan, v)
    return pc.if_else(pa.array(integral | miss), ints, float_strings(rest))


def iso_utc(s: float) -> str | None:
    if s is None or not math.isfinite(s):
        return None
    return _dt.datetime.fromtimestamp(s, tz=_dt.timezone.utc).isoformat().replace("+00:00", "Z")


def time_span(df: pd.DataFrame) -> dict[str, Any]:
    """First submit and last end (UTC ISO) and the span in seconds."""
    if len(df) == 0:
        return {"start_utc": None, "end_utc": None, "seconds": 0.0}
    t0 = float(df["submit_s"].min())
    t1 = float(np.nanmax(df["end_s"].to_numpy()))
    return {"start_utc": iso_utc(t0), "end_utc": iso_utc(t1), "seconds": t1 - t0}


def rebase_shift(first_submit_s: float, offset_s: int, epoch: str) -> int:
    """Seconds to add to every timestamp so the trace starts at the simulator's hard-coded epoch.

    The shift is a whole number of weeks, chosen so that local midnight of the first submission
    day lands in ``[epoch, epoch + 7 days)``: hour of day and day of week are preserved (the
    diurnal and weekly cycles of the trace stay where they were).
    """
    ep = pd.Timestamp(epoch)
    if ep.tzinfo is not None:
        ep = ep.tz_convert(None)
    ep_s = int(ep.value // 10**9)
    local_first = int(math.floor(first_submit_s)) + offset_s
    local_midnight = local_first - (local_first % 86400)
    week = 7 * 86400
    weeks = math.ceil((ep_s - local_midnight) / week)
    return int(weeks * week)


# --------------------------------------------------------------------------- files
def prepare_out(out: str | Path) -> Path:
    """``out`` as a directory (created); refuses an existing regular file."""
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise ValueError(f"output {out} exists and is not a directory (-o takes a directory)")
    out.mkdir(parents=True, exist_ok=True)
    return out


def write_csv(path: Path, header: list[str], columns: list[Any], *, header_line: str | None = None) -> Path:
    """Write string columns (Arrow arrays or arrays of str/None) as CSV: header verbatim, values
    unquoted, null → empty; a path ending in ``.gz`` is gzip-compressed. If a value contains a
    comma, quote or newline the pandas writer is used instead (it quotes only those values)."""
    import pyarrow as pa
    import pyarrow.csv as pacsv

    path = Path(path)
    gz = path.suffix == ".gz"
    hdr = (header_line if header_line is not None else ",".join(header)) + "\n"
    arrays = [to_arrow(c) for c in columns]
    table = pa.table({f"c{i}": a for i, a in enumerate(arrays)})
    with (pa.CompressedOutputStream(str(path), "gzip") if gz else pa.OSFile(str(path), "wb")) as f:
        f.write(hdr.encode())
        try:
            pacsv.write_csv(table, f, pacsv.WriteOptions(include_header=False, quoting_style="none"))
            return path
        except pa.ArrowInvalid:
            pass
    frame = pd.DataFrame({f"c{i}": a.to_pandas() for i, a in enumerate(arrays)})
    with (gzip.open(path, "wt", newline="") if gz else open(path, "w", newline="")) as f:
        f.write(hdr)
        frame.to_csv(f, index=False, header=False, lineterminator="\n")
    return path


def write_joined(f, arr: "pa.Array", sep: str, *, terminated: bool = False) -> None:
    """Write the strings of ``arr`` (no nulls) joined by ``sep`` to the binary file ``f``, straight
    from the Arrow data buffer. ``terminated=True``: every string already ends with ``sep`` (saves a
    copy); the last one is written without it."""
    if len(arr) == 0:
        return
    arr = to_arrow(arr) if terminated else cat(to_arrow(arr), sep)
    offsets = np.frombuffer(arr.buffers()[1], dtype=np.int64)[arr.offset: arr.offset + len(arr) + 1]
    data = arr.buffers()[2]
    f.write(memoryview(data)[int(offsets[0]): int(offsets[-1]) - len(sep.encode())])


def write_readme(out: Path, title: str, sections: list[tuple[str, str]], name: str = "README.md") -> Path:
    """Write the sidecar README (markdown) stating units, time zones, epochs and what was dropped."""
    from acmemodel._version import __version__

    lines = [f"# {title}", "",
             f"Written by acmemodel {__version__} on "
             f"{_dt.datetime.now(_dt.timezone.utc).isoformat(timespec='seconds')}.", ""]
    for head, body in sections:
        lines += [f"## {head}", "", body.rstrip(), ""]
    p = out_path(out, name)
    p.write_text("\n".join(lines))
    return p


def type_codes(types: Iterable[str]) -> dict[str, int]:
    """Stable type → code map: published types 1..6 (:data:`TYPE_ORDER`), others 7.. alphabetically."""
    codes = {t: i + 1 for i, t in enumerate(TYPE_ORDER)}
    extra = sorted(set(map(str, types)) - set(codes))
    for i, t in enumerate(extra):
        codes[t] = len(TYPE_ORDER) + 1 + i
    return codes


# --------------------------------------------------------------------------- virtual clusters
DEFAULT_VC = {"Pretrain": "pretrain"}
DEFAULT_VC_OTHER = "shared"


def assign_vc(df: pd.DataFrame, vc: Mapping[str, str] | str | None = None, *,
              vc_default: str = DEFAULT_VC_OTHER) -> tuple[np.ndarray, str]:
    """The quota partition (virtual cluster) of every row.

    * ``vc`` a column name present in ``df`` (e.g. ``"vc"``, ``"partition"``) → that column;
    * ``vc`` a mapping type → partition → mapped, unmapped types get ``vc_default``;
    * ``None`` → a ``vc``/``partition`` column if the frame has one, else the default split
      ``Pretrain → "pretrain"``, every other type → ``"shared"``.

    Returns ``(array of partition names, description)``.
    """
    if isinstance(vc, str):
        if vc not in df.columns:
            raise ValueError(f"vc={vc!r}: no such column in the jobs")
        return df[vc].astype(str).to_numpy(), f"from column {vc!r}"
    if vc is None:
        for col in ("vc", "partition"):
            if col in df.columns:
                return df[col].astype(str).to_numpy(), f"from column {col!r}"
        mapping, desc = DEFAULT_VC, "default: Pretrain → pretrain, every other type → shared"
    else:
        mapping = {str(k): str(v) for k, v in dict(vc).items()}
        desc = "by type: " + ", ".join(f"{k} → {v}" for k, v in mapping.items()) + f", others → {vc_default}"
    types = df["type"].astype(str)
    return types.map(mapping).fillna(vc_default).to_numpy(dtype=object), desc


def largest_remainder(weights: np.ndarray, total: int, minimum: np.ndarray) -> np.ndarray:
    """Integer split of ``total`` proportional to ``weights`` with per-entry ``minimum``
    (Hamilton's largest-remainder method on what is left after the minimums)."""
    weights = np.asarray(weights, dtype=float)
    minimum = np.asarray(minimum, dtype="int64")
    left = int(total) - int(minimum.sum())
    if left <= 0:
        return minimum.copy()
    w = weights / weights.sum() if weights.sum() > 0 else np.full(len(weights), 1 / len(weights))
    raw = w * left
    base = np.floor(raw).astype("int64")
    rem = left - int(base.sum())
    order = np.argsort(-(raw - base), kind="stable")
    base[order[:rem]] += 1
    return minimum + base


def result(fmt: str, out: Path, files: list[Path], *, jobs: int, attempts: int, df: pd.DataFrame,
           clusters: list[str], dropped: dict[str, int] | None = None, notes: list[str] | None = None,
           **extra: Any) -> dict[str, Any]:
    """The record every writer returns (printed by ``acmemodel export --json``)."""
    rec = {"format": fmt, "out": str(out), "files": [str(p) for p in files], "clusters": clusters,
           "jobs": int(jobs), "attempts": int(attempts), "restarts": int(attempts - jobs),
           "time_span": time_span(df), "dropped": {k: int(v) for k, v in (dropped or {}).items()},
           "notes": list(notes or [])}
    rec.update(extra)
    return rec
