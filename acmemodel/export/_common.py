"""Shared machinery of the export writers: input normalisation, restart chains, whole-second times,
fast CSV writing, sidecar READMEs, virtual clusters and the result record (the text columns --
vectorised timestamp and number formatting as Arrow strings -- are in :mod:`._text`, re-exported here).

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
import re
import warnings
from pathlib import Path
from typing import Any, Iterable, Mapping, NamedTuple

import numpy as np
import pandas as pd

from acmemodel.clusters import GPUS_PER_NODE, cluster_info, utc_offset_seconds
from acmemodel.errors import DataWarning
from acmemodel.trace import KNOWN_TYPES, STATE_MAP
from acmemodel.export._text import cat, time_span, to_arrow

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
        raise ValueError(f"jobs has {int(df['submit_s'].isna().sum()):,} row(s) without a submit time")
    if df["end_s"].isna().any():
        raise ValueError(f"jobs has {int(df['end_s'].isna().sum()):,} row(s) without an end time")
    bad = (df["end_s"] < df["submit_s"]) | (df["start_s"] < df["submit_s"]) | (df["end_s"] < df["start_s"])
    if bad.any():
        raise ValueError(f"jobs has {int(bad.sum()):,} row(s) whose times are out of order "
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
    "inferred": "inference: acmemodel.features.chains.restart_chains (same cluster, user, type and GPU count; "
                "per cluster x type x GPU bucket the likelihood ratio of the gap after the failure against the gap "
                "after COMPLETED jobs, or in thin strata a window, linking while the estimated precision is >= 0.95)",
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
        if not mask.all():  # (all rows of that cluster, e.g. one synthetic cluster: no copy of them)
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
