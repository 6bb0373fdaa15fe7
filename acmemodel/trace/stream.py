"""Read a large trace one file at a time into a compact job table (the out-of-core ``fit``, issue 34).

:func:`load_trace` holds every file's full job table (about 550 bytes per job, 1 kB at its peak) and the
quarantined rows' raw text. :func:`stream_trace` instead reads one file at a time with :func:`load_trace`
(the same parsing, validation, quarantine and censoring, so every accepted row is the row the whole-trace
read gives), drops the columns no model reads and keeps the string columns as categoricals
(:func:`read_part`): about 110 bytes per job (measured on AcmeTrace Parquet files). Of the quarantined
rows only their number per reason is kept. :func:`expand` gives the models a frame with the dtypes
:func:`load_trace` gives.

What is done across files, as :func:`load_trace` does it over the whole input:

* duplicate job ids of a cluster: the first occurrence (in file order) is kept, the others are counted
  as quarantined (``duplicate_job_id``);
* the extraction time of unfinished jobs (default: the latest timestamp in *all* files): a file with
  unfinished jobs whose own latest timestamp is earlier is read again with the global one;
* the cluster description and time zone of a cluster: its first file's.

The unit of reading is a file: its full table is held while it is read (about 1 kB per job of that file),
so a trace in many files of moderate size (e.g. one per cluster x month) reads in bounded memory; one
file of 10M jobs does not (split it first). ``map_fn`` runs the per-file reads elsewhere (a Dask
client's ``map``): the parts come back in file order, so the table is the same.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
import pandas as pd

#: the columns of a Trace's ``extras`` that the models read (as :func:`acmemodel.features.names.jobs_with_extras`)
EXTRA_COLUMNS = ("job_name", "partition", "qos", "vc", "restart_of")


@dataclass
class Part:
    """One file read by :func:`read_part`: its compact job table (as independent columns, ``n`` rows) and what
    the trace records of it."""

    jobs: dict
    n: int
    info: object
    rejected: dict
    timezone: str
    spec: object
    extracted_at_s: float | None
    has_unfinished: bool
    latest_s: float


@dataclass
class StreamedTrace:
    """The trace as :func:`stream_trace` reads it: ``jobs`` compact (categorical strings), ``files``
    (:class:`~acmemodel.trace.schema.FileInfo` per file), ``rejected_by_reason`` (reason → rows),
    ``timezones`` and ``cluster_specs`` per cluster, ``reread`` (files read a second time for the global
    extraction time)."""

    jobs: pd.DataFrame
    files: list
    rejected_by_reason: dict
    timezones: dict
    cluster_specs: dict
    extracted_at_s: float | None = None
    reread: list = field(default_factory=list)

    @property
    def n_rejected(self) -> int:
        return int(sum(self.rejected_by_reason.values()))


def compact(jobs: pd.DataFrame) -> pd.DataFrame:
    """``jobs`` with every object column of strings without missing values as a categorical (in place)."""
    for c in jobs.columns:
        col = jobs[c]
        if col.dtype == object and len(col) and col.notna().all():
            jobs[c] = col.astype("category")
    return jobs


def expand(jobs: pd.DataFrame, columns: Sequence[str] | None = None) -> pd.DataFrame:
    """The compact table (or its ``columns``) with categoricals back as object strings: the dtypes
    :func:`load_trace` gives. Every column is a new array of its own (one block per column, no view of
    ``jobs``): the compact table can be freed while this one lives."""
    cols = [c for c in (columns if columns is not None else jobs.columns) if c in jobs.columns]
    out = {}
    for c in cols:
        col = jobs[c]
        if isinstance(col.dtype, pd.CategoricalDtype):
            out[c] = col.astype(object).to_numpy()
        elif isinstance(col.dtype, np.dtype):
            out[c] = col.to_numpy().copy()
        else:  # (an extension array, e.g. Arrow strings: its own buffers)
            out[c] = col.array.copy()
    return pd.DataFrame(out, index=jobs.index, copy=False)


def _columns(jobs: pd.DataFrame) -> dict:
    """A part's compact table as independent columns (categoricals as ``(codes, categories)``): freeing one
    column frees its memory (a DataFrame's columns of one dtype share one block, freed only with all of them)."""
    out = {}
    for c in jobs.columns:
        col = jobs[c]
        if isinstance(col.dtype, pd.CategoricalDtype):
            out[c] = (col.cat.codes.to_numpy().copy(), col.cat.categories)
        elif isinstance(col.dtype, np.dtype):
            out[c] = col.to_numpy().copy()
        else:
            out[c] = col.array.copy()
    return out


class _ReadAllocators:
    """The allocators while files are read, so that what a file's read frees goes back to the system:

    * Arrow's allocations on the system allocator: the default (mimalloc) keeps the memory of every file's
      read for reuse (buffers made here keep their pool, so restoring the default afterwards is safe);
    * glibc's mmap threshold fixed at 1 MiB (``mallopt(M_MMAP_THRESHOLD)``): by default it grows with each
      freed block up to 32 MiB, after which a file's column arrays (about 1 MB each) come from the heap,
      whose holes between the kept columns are never returned; on exit it is set to 32 MiB (the dynamic
      threshold's ceiling).

    Measured on 96 files of 31,000 jobs: resident memory after the read 1,124 -> 634 MB, its peak 1,378 ->
    891 MB (the compact table: 308 MB, the libraries: 205 MB)."""

    depth = 0  # (re-entrant: the outermost sets and restores)

    def __enter__(self):
        import pyarrow as pa

        if _ReadAllocators.depth == 0:
            _ReadAllocators.old = pa.default_memory_pool()
            pa.set_memory_pool(pa.system_memory_pool())
            _mmap_threshold(1 << 20)
        _ReadAllocators.depth += 1
        return self

    def __exit__(self, *exc):
        import pyarrow as pa

        _ReadAllocators.depth -= 1
        if _ReadAllocators.depth == 0:
            pa.set_memory_pool(_ReadAllocators.old)
            _mmap_threshold(32 << 20)
        return False


def _mmap_threshold(nbytes: int) -> None:
    """glibc ``mallopt(M_MMAP_THRESHOLD, nbytes)``; nothing elsewhere."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").mallopt(-3, int(nbytes))  # (M_MMAP_THRESHOLD = -3)
    except (OSError, AttributeError):  # not glibc
        pass


def _trim() -> None:
    """Hand freed heap memory back to the system (glibc ``malloc_trim``; nothing elsewhere)."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc
        pass


def read_part(path, cluster: str | None = None, *, extracted_at=None, drop: Sequence[str] = ()) -> Part:
    """Read one file with :func:`load_trace` and keep its compact job table (see the module docstring)."""
    with _ReadAllocators():
        part = _read_part(path, cluster, extracted_at=extracted_at, drop=drop)
    _trim()
    return part


def _read_part(path, cluster, *, extracted_at, drop) -> Part:
    from acmemodel.trace.readers import load_trace
    from acmemodel.trace.schema import UNFINISHED_STATES

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (the per-file warnings are the whole-trace read's; fit ignores them)
        t = load_trace([path], cluster=cluster, extracted_at=extracted_at)
    jobs = t.jobs
    ex = t.extras
    if ex is not None and len(ex):
        for c in EXTRA_COLUMNS:
            if c in ex.columns and c not in jobs.columns:
                jobs[c] = ex[c].astype(object).where(ex[c].notna(), None).to_numpy(object)
    has_unf = bool(jobs["state"].isin(UNFINISHED_STATES).any()) if len(jobs) else False
    latest = float(np.nanmax(jobs[["submit_s", "start_s", "end_s"]].to_numpy(float))) if len(jobs) else -np.inf
    jobs = jobs.drop(columns=[c for c in drop if c in jobs.columns and c != "source_file"])
    reasons = t.rejected["reason"].astype(str).value_counts().to_dict() if len(t.rejected) else {}
    info = t.files[0]
    tz, spec, t_ext = t.timezones.get(info.cluster, "+00:00"), t.cluster_specs.get(info.cluster), t.extracted_at_s
    n = len(jobs)
    cols = _columns(compact(jobs))
    del jobs, t
    return Part(jobs=cols, n=n, info=info, rejected={str(k): int(v) for k, v in reasons.items()},
                timezone=tz, spec=spec, extracted_at_s=t_ext, has_unfinished=has_unf, latest_s=latest)


def stream_trace(paths, cluster: str | Sequence[str] | None = None, *, extracted_at=None,
                 drop: Sequence[str] = (), map_fn: Callable | None = None,
                 progress: Callable[[int, int], None] | None = None) -> StreamedTrace:
    """Read ``paths`` (files, directories, globs: :func:`~acmemodel.trace.readers.expand_trace_paths`) one
    file at a time into a :class:`StreamedTrace` (module docstring). ``cluster`` as in :func:`load_trace`;
    ``drop``: columns not kept; ``map_fn(function, paths, clusters)`` → parts in order (default: in this
    process, one file at a time); ``progress(done, total)`` after each file (in-process only)."""
    from acmemodel.errors import TraceFormatError
    from acmemodel.trace.readers import cluster_per_file, expand_trace_paths

    if isinstance(paths, (str, Path)):
        paths = [paths]
    files = expand_trace_paths([Path(p) for p in paths])
    if not files:
        raise TraceFormatError("no trace files given")
    clusters = cluster_per_file(cluster, len(files))

    def read_all(which, ext):
        if map_fn is not None:
            return list(map_fn(_read_part_args, [(files[i], clusters[i], ext, tuple(drop)) for i in which]))
        out = []
        for k, i in enumerate(which):
            out.append(read_part(files[i], clusters[i], extracted_at=ext, drop=drop))
            if progress is not None:
                progress(k + 1, len(which))
        return out

    with _ReadAllocators():
        return _stream(files, clusters, read_all, extracted_at, drop)


def _stream(files, clusters, read_all, extracted_at, drop) -> StreamedTrace:
    from acmemodel.trace.schema import Reason

    parts = read_all(range(len(files)), extracted_at)
    reread = []
    if extracted_at is None:  # unfinished jobs are censored at the latest timestamp of the whole input
        t_x = max((p.latest_s for p in parts), default=-np.inf)
        again = [i for i, p in enumerate(parts) if p.has_unfinished and p.latest_s < t_x]
        if again:
            for i, p in zip(again, read_all(again, float(t_x))):
                parts[i] = p
            reread = [str(files[i]) for i in again]
    frames, n_rows = [p.jobs for p in parts], [p.n for p in parts]
    for p in parts:
        p.jobs = None
    jobs = _concat(frames, n_rows)
    _trim()
    rejected: dict[str, int] = {}
    for p in parts:
        for k, v in p.rejected.items():
            rejected[k] = rejected.get(k, 0) + v
    infos = [p.info for p in parts]
    if "job_id" in jobs.columns and len(jobs):
        dup = jobs.duplicated(subset=["cluster", "job_id"], keep="first").to_numpy()
        if dup.any():
            src = jobs["source_file"].astype(str).to_numpy()[dup] if "source_file" in jobs.columns else None
            key = Reason.DUPLICATE_JOB_ID.value if hasattr(Reason.DUPLICATE_JOB_ID, "value") else "duplicate_job_id"
            rejected[str(key)] = rejected.get(str(key), 0) + int(dup.sum())
            if src is not None:
                for info in infos:
                    n = int((src == str(info.path)).sum())
                    info.accepted -= n
                    info.rejected += n
            jobs = jobs.loc[~dup].reset_index(drop=True)
    if "source_file" in drop and "source_file" in jobs.columns:  # (kept until the duplicates were counted)
        jobs = jobs.drop(columns="source_file")
    tzs, specs = {}, {}
    for p in parts:
        tzs.setdefault(p.info.cluster, p.timezone)
        if p.spec is not None:
            specs.setdefault(p.info.cluster, p.spec)
    t_ext = max((p.extracted_at_s for p in parts if p.extracted_at_s is not None), default=None)
    return StreamedTrace(jobs=jobs, files=infos, rejected_by_reason=rejected, timezones=tzs, cluster_specs=specs,
                         extracted_at_s=t_ext, reread=reread)


def _concat(parts: list, n_rows: list) -> pd.DataFrame:
    """One table from the parts' columns (:func:`_columns`), column by column, each part's column freed once it
    is copied (the peak is the table plus one column, not twice the table). Categoricals stay categorical (one
    union of the categories per column; the codes remapped); a column missing in some parts or categorical in
    some only is concatenated as pandas concatenates it. Empties ``parts``."""
    cols: list = []
    for d in parts:
        cols += [c for c in d if c not in cols]
    out = {}
    for c in cols:
        pieces = [d.pop(c, None) for d in parts]
        if all(isinstance(p, tuple) for p in pieces):
            cats = pd.Index(sorted(set().union(*(p[1] for p in pieces))))
            codes = np.concatenate([np.append(cats.get_indexer(p[1]), -1)[p[0]] for p in pieces])
            out[c] = pd.Categorical.from_codes(codes, dtype=pd.CategoricalDtype(cats))
        elif all(isinstance(p, np.ndarray) for p in pieces) and len({p.dtype for p in pieces}) == 1:
            out[c] = np.concatenate(pieces)
        else:
            series = []
            for p, n in zip(pieces, n_rows):
                if p is None:
                    series.append(pd.Series([np.nan] * n, dtype=object))
                elif isinstance(p, tuple):
                    series.append(pd.Series(pd.Categorical.from_codes(p[0], categories=p[1])).astype(object))
                else:
                    series.append(pd.Series(p))
            out[c] = pd.concat(series, ignore_index=True).array
        del pieces
    parts.clear()
    return pd.DataFrame(out, copy=False)


def _read_part_args(args) -> Part:
    path, cluster, ext, drop = args
    return read_part(path, cluster, extracted_at=ext, drop=drop)


# --- describe of a large CSV file, read in chunks of lines (issue 34) ----------------------------------------------

#: ``describe`` reads the CSV files of an input of at least this many bytes in chunks (:func:`summarise_csv`);
#: a smaller input is read whole (the same output)
DESCRIBE_STREAM_BYTES = 64 << 20
#: bytes of a CSV file per chunk (whole lines: about 130,000 AcmeTrace rows)
CHUNK_BYTES = 16 << 20
#: the job columns ``describe`` reads (:data:`acmemodel.describe._USED`)
DESCRIBE_COLUMNS = ("cluster", "type", "state", "analysis_state", "gpu_num", "gpu_time_s", "is_gpu", "started",
                    "run_censored", "run_s", "queue_s", "left_truncated")


@dataclass
class TraceSummary:
    """What :func:`acmemodel.describe.describe` reads of a trace, as :func:`summarise_csv` gathers it chunk by
    chunk: ``jobs`` (only :data:`DESCRIBE_COLUMNS`, the strings categorical with sorted categories), ``files``
    (:class:`~acmemodel.trace.schema.FileInfo` per file), ``rejected_by_reason()`` and ``n_rejected`` (the
    quarantine's counts; not its rows), ``inconsistencies``, ``value_problems``, ``warnings``,
    ``extracted_at_s``, ``timezones``, ``cluster_specs``."""

    jobs: pd.DataFrame
    files: list
    by_reason: dict
    inconsistencies: dict
    value_problems: dict
    warnings: list
    extracted_at_s: float | None
    timezones: dict
    cluster_specs: dict
    chunks: int = 0

    @property
    def n_rejected(self) -> int:
        return int(sum(self.by_reason.values()))

    def rejected_by_reason(self) -> dict:
        return dict(sorted(self.by_reason.items()))


class _WholeRead(Exception):
    """The input needs the whole read (something a chunk's read cannot give as the whole read does)."""


def summarise_csv(paths, cluster: str | None = None, *, min_bytes: int = DESCRIBE_STREAM_BYTES,
                  chunk_bytes: int = CHUNK_BYTES):
    """The :class:`TraceSummary` of plain CSV trace files read in chunks of whole lines, each chunk through
    :func:`acmemodel.trace.load_trace` (the same parsing, validation, quarantine and censoring), keeping of
    each chunk's accepted jobs only :data:`DESCRIBE_COLUMNS` in compact dtypes: the memory of one chunk's read
    plus about 40 bytes per job, not the whole job table. None when the input is better read whole (then
    ``describe`` does that, with the same output): smaller than ``min_bytes``, a file that is not a plain
    ``.csv``, that holds a quote (a quoted field may span lines), that has a cluster description (sidecar) or
    no cluster known from ``cluster`` or its name; or when a chunk's read tells something that only the whole
    read words the same way: a warning other than absent optional columns (blank lines, unknown types,
    unusable values, ...), a job id seen in an earlier chunk (a duplicate across chunks), a chunk that cannot
    be read. What is done across chunks is done as the whole read does it: the counts are summed; unfinished
    jobs are censored at the latest timestamp of all files (a chunk with unfinished jobs whose own latest
    timestamp is earlier is read again with it)."""
    import tempfile

    from acmemodel.errors import AcmeModelError
    from acmemodel.trace.csvbytes import _is_gzip
    from acmemodel.trace.files import _cluster_from_name, _cluster_name, _sniff_offset, file_cluster_spec
    from acmemodel.trace.readers import expand_trace_paths

    if isinstance(paths, (str, Path)):
        paths = [paths]
    try:
        files = expand_trace_paths([Path(p) for p in paths])
    except (AcmeModelError, OSError, ValueError):
        return None
    if not files or any(not f.is_file() or f.suffix.lower() != ".csv" for f in files):
        return None
    if sum(f.stat().st_size for f in files) < min_bytes:
        return None
    names = []
    for f in files:
        if _is_gzip(f) or _holds_quote(f) or file_cluster_spec(f) is not None:
            return None
        cl = _cluster_name(cluster) if cluster is not None else _cluster_from_name(f)
        if cl is None:
            return None
        names.append(cl)
    try:
        with tempfile.TemporaryDirectory(prefix="acmemodel_describe_") as tmp, _ReadAllocators():
            return _summarise(files, names, Path(tmp), chunk_bytes, _sniff_offset)
    except _WholeRead:
        _trim()
        return None


def _holds_quote(path: Path, block: int = 1 << 24) -> bool:
    """Whether the file holds a ``"``, read in blocks of 16 MiB (a memory map of the whole file would count
    every page of it in the resident memory)."""
    with open(path, "rb") as f:
        while True:
            b = f.read(block)
            if not b:
                return False
            if b'"' in b:
                return True


def _summarise(files, names, tmp: Path, chunk_bytes: int, sniff) -> TraceSummary:
    from acmemodel.clusters import CLUSTER_TZ

    chunks = []  # (file index, chunk path, Part-like record)
    k = 0
    for i, (f, cl) in enumerate(zip(files, names)):
        off = sniff(f)
        size = f.stat().st_size
        with open(f, "rb") as src:
            header = src.readline()
            rest = b""
            while True:
                block = src.read(chunk_bytes)
                data = rest + block
                # whole lines; the file's last chunk takes its end (a last line without a newline included)
                cut = data.rfind(b"\n") + 1 if block and src.tell() < size else len(data)
                rest = data[cut:]
                if cut:
                    p = tmp / f"chunk{k:05d}.csv"
                    p.write_bytes(header + data[:cut])
                    if cl not in CLUSTER_TZ and sniff(p) != off:
                        raise _WholeRead  # (a naive timestamp's zone as the whole file's: sniffed from its head)
                    chunks.append([i, p, _read_chunk(p, f, cl, None)])
                    k += 1
                del data
                if not block:
                    break
    # unfinished jobs are censored at the latest timestamp of the whole input
    t_x = max((c[2]["latest"] for c in chunks), default=-np.inf)
    for c in chunks:
        if c[2]["unfinished"] and c[2]["latest"] < t_x:
            c[2] = _read_chunk(c[1], files[c[0]], names[c[0]], float(t_x))
    # a job id in two chunks of a cluster: the whole read quarantines the later one (not done here). Each
    # chunk's hashed ids are distinct (a duplicate inside a chunk is its read's): one sort of them all
    for cl in set(names):
        ids = [c[2]["ids"] for c in chunks if names[c[0]] == cl]
        n_ids = sum(len(h) for h in ids)
        ids = np.sort(np.concatenate(ids)) if ids else np.zeros(0, np.uint64)
        if len(ids) != n_ids or (len(ids) > 1 and not (ids[1:] != ids[:-1]).all()):
            raise _WholeRead
        del ids
    for c in chunks:
        c[2]["ids"] = None
    from acmemodel.trace.schema import FileInfo

    infos, by_reason, incons, problems, warn = [], {}, {}, {}, []
    tzs: dict = {}
    specs: dict = {}
    for i, (f, cl) in enumerate(zip(files, names)):
        mine = [c[2] for c in chunks if c[0] == i]
        first = mine[0]["info"]
        info = FileInfo(path=str(f), cluster=first.cluster, schema=first.schema,
                        extra_columns=list(first.extra_columns), missing_optional=list(first.missing_optional),
                        fast_path=all(m["info"].fast_path for m in mine))
        for m in mine:
            info.rows += m["info"].rows
            info.accepted += m["info"].accepted
            info.rejected += m["info"].rejected
            for c, d in m["info"].value_problems.items():
                for key, v in d.items():
                    info.value_problems.setdefault(c, {})[key] = info.value_problems.get(c, {}).get(key, 0) + v
        infos.append(info)
        for w in mine[0]["warnings"]:
            warn.append(w)
        tzs.setdefault(info.cluster, mine[0]["timezone"])
        # what the log says of its cluster (e.g. the partitions of an unknown cluster's jobs): the same in every
        # chunk, else only the whole read words it as the whole file's
        if any(m["spec"] != mine[0]["spec"] for m in mine):
            raise _WholeRead
        if mine[0]["spec"] is not None:
            specs.setdefault(info.cluster, mine[0]["spec"])
        for m in mine:
            for key, v in m["by_reason"].items():
                by_reason[key] = by_reason.get(key, 0) + v
            for key, v in m["inconsistencies"].items():
                incons[key] = incons.get(key, 0) + v
    for info in infos:
        for c, d in info.value_problems.items():
            for key, v in d.items():
                problems.setdefault(c, {})[key] = problems.get(c, {}).get(key, 0) + v
    t_ext = max((c[2]["extracted_at_s"] for c in chunks if c[2]["extracted_at_s"] is not None), default=None)
    parts, n_rows = [c[2]["jobs"] for c in chunks], [c[2]["n"] for c in chunks]
    for c in chunks:
        c[2]["jobs"] = None
    jobs = _concat(parts, n_rows)
    _trim()
    return TraceSummary(jobs=jobs, files=infos, by_reason=by_reason, inconsistencies=incons,
                        value_problems=problems, warnings=warn, extracted_at_s=t_ext, timezones=tzs,
                        cluster_specs=specs, chunks=len(chunks))


def _read_chunk(chunk: Path, original: Path, cluster: str, extracted_at) -> dict:
    """One chunk through :func:`load_trace`: its compact :data:`DESCRIBE_COLUMNS` (:func:`_columns`), counts,
    warnings (the chunk's file name replaced by the original's; :class:`_WholeRead` for any but absent optional
    columns), hashed job ids, and what the censoring across chunks needs."""
    from acmemodel.errors import AcmeModelError
    from acmemodel.trace.readers import load_trace
    from acmemodel.trace.schema import UNFINISHED_STATES

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t = load_trace([chunk], cluster=cluster, extracted_at=extracted_at)
    except AcmeModelError:
        raise _WholeRead from None
    warn = [w.replace(str(chunk), str(original)) for w in t.warnings]
    if any(not (w.startswith(f"{original}: optional column(s) ") and w.count(str(original)) == 1) for w in warn):
        raise _WholeRead
    jobs = t.jobs
    ids = pd.util.hash_array(jobs["job_id"].astype(str).to_numpy(object)) if len(jobs) else np.zeros(0, np.uint64)
    has_unf = bool(jobs["state"].isin(UNFINISHED_STATES).any()) if len(jobs) else False
    latest = float(np.nanmax(jobs[["submit_s", "start_s", "end_s"]].to_numpy(float))) if len(jobs) else -np.inf
    out = {"jobs": _columns(compact(jobs[[c for c in DESCRIBE_COLUMNS if c in jobs.columns]].copy())),
           "n": len(jobs), "info": t.files[0], "by_reason": t.rejected_by_reason(),
           "inconsistencies": dict(t.inconsistencies), "warnings": warn, "timezone": t.timezones.get(cluster),
           "spec": t.cluster_specs.get(cluster),
           "extracted_at_s": t.extracted_at_s, "unfinished": has_unf, "latest": latest, "ids": np.unique(ids)}
    del t, jobs
    _trim()
    return out
