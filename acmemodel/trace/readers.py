"""Reading AcmeTrace files: :func:`load_trace`, which reads each file (:mod:`.files`: checks and
sniffing, the Arrow CSV/parquet read with its fast and fallback paths), turns its rows into accepted
jobs (:mod:`.validation`) and quarantined rows, censors the jobs still running at the extraction time,
attaches the chain columns, and merges the files.
"""
from __future__ import annotations

import os
import warnings
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np
import pandas as pd

from acmemodel.errors import DataWarning, TraceFormatError
from acmemodel.trace.schema import KNOWN_TYPES, UNFINISHED_STATES, FileInfo, Reason, Trace
from acmemodel.trace.validation import _RAW_JOB_COLUMNS, _duplicated_ids, _raw_rows, _rejected_frame
from acmemodel.trace.files import _cluster_name, _original_text, _read_one, file_cluster_spec


# ---------------------------------------------------------------------------------------------- api
#: the files a directory given to :func:`load_trace` contributes (AcmeTrace format)
TRACE_SUFFIXES = (".csv", ".csv.gz", ".gz", ".parquet")


def expand_trace_paths(paths, format: str = "acmetrace") -> list[Path]:
    """Paths with each directory replaced by its trace files (for the AcmeTrace format: ``*.csv``,
    ``*.csv.gz``, ``*.parquet``, ``*.gz``; for an importer: every regular file not starting with ``.``),
    sorted by name, and each glob pattern (``*``, ``?``, ``[``) by its matches, sorted; a pattern or a
    directory with no match is a :class:`TraceFormatError` naming it. Other paths pass unchanged (a
    missing file is reported by the reader)."""
    import glob

    out: list[Path] = []
    acme = str(format or "acmetrace").lower() == "acmetrace"
    for p in paths:
        p = Path(p)
        if p.is_dir():
            files = sorted(f for f in p.iterdir() if f.is_file() and not f.name.startswith(".") and (
                not acme or f.name.lower().endswith(TRACE_SUFFIXES)))
            if not files:
                raise TraceFormatError(f"{p}: a directory with no trace file inside")
            out.extend(files)
        elif not p.exists() and any(c in str(p) for c in "*?["):
            files = sorted(Path(f) for f in glob.glob(str(p)) if Path(f).is_file())
            if not files:
                raise TraceFormatError(f"{p}: no file matches this pattern")
            out.extend(files)
        else:
            out.append(p)
    return out


def cluster_per_file(cluster, n_files: int) -> list:
    """The cluster name of each of ``n_files`` files: ``cluster`` (one name, or None: each file's own) for every
    file, or one name per file; names checked (``_cluster_name``)."""
    if cluster is None or isinstance(cluster, str):
        clusters = [cluster] * n_files
    else:
        clusters = list(cluster)
        if len(clusters) != n_files:
            raise ValueError(f"cluster: {len(clusters)} names for {n_files} files")
    return [None if c is None else _cluster_name(c) for c in clusters]


def load_trace(paths: str | os.PathLike | Iterable[str | os.PathLike], cluster: str | Sequence[str] | None = None,
               *, format: str = "acmetrace", timezone: str | None = None, extracted_at=None,
               type_map=None, origin=None) -> Trace:
    """Read one or more job files (AcmeTrace, or another format through an importer) into a :class:`Trace`.

    Parameters
    ----------
    paths : a path or a list of paths (``.csv``, ``.csv.gz``/``.gz``, ``.parquet``; for other formats
        the files that format uses, see :mod:`acmemodel.trace.importers`); a directory stands for its
        trace files and a glob pattern for its matches (:func:`expand_trace_paths`).
    cluster : cluster name for every file, or one name per file. Default: the file's own description
        (sidecar ``<file>.cluster.yaml`` or Parquet metadata, as ``convert`` writes them), else its
        ``cluster`` column, else the file name (``*seren*`` → Seren, ``*kalos*`` → Kalos), else the file
        name before its first dot with a warning — never an Acme cluster assumed from the columns;
        imported formats: the file name's stem. ``Trace.cluster_specs`` holds what is known of each
        cluster (:class:`acmemodel.clusters.ClusterSpec`).
    format : ``acmetrace`` (default) or an importer: ``slurm``, ``swf``, ``helios``, ``philly``,
        ``pai2020``, ``k8s`` (:data:`acmemodel.trace.importers.FORMATS`).
    timezone : UTC offset (``+08:00``) of naive local timestamps in imported files (default: the
        format's own rule, else UTC with a warning).
    extracted_at : when the trace was extracted (a timestamp string, ``pd.Timestamp`` or Unix
        seconds): unfinished jobs (RUNNING/SUSPENDED/PENDING without an end) are right-censored at
        it. Default: the latest timestamp in the files.
    type_map : rules mapping an imported job's partition/QoS/name/VC to a job type
        (:class:`acmemodel.trace.importers.TypeMap` or its rule strings).
    origin : time of second 0 of formats whose times are seconds since the trace start (k8s pod and
        instance lists; a timestamp or Unix seconds). Default 1970-01-01 UTC.

    Left truncation and unknown waits: a file (imported or AcmeTrace) may carry the extra columns
    ``entry_time`` (non-empty on rows that existed before the trace began: the time they entered
    observation) and ``queue_unknown`` (``1`` where the source does not record the wait). They become
    ``Trace.jobs`` columns ``left_truncated`` (bool), ``entry_age_s`` (age of the run at its entry,
    ``entry − start`` s, NaN when unknown) and ``queue_s`` NaN (see :func:`_truncation_columns`).


    Raises
    ------
    TraceFormatError
        naming the file: missing, empty, header without rows, missing required column, unreadable
        compression or format.
    """
    if isinstance(paths, (str, bytes, os.PathLike)):
        paths = [paths]
    if paths is None or not hasattr(paths, "__iter__"):
        raise TraceFormatError(f"load_trace: paths must be a file path or a list of them, got {paths!r}")
    paths = list(paths)
    for p in paths:
        if not isinstance(p, (str, bytes, os.PathLike)):
            raise TraceFormatError(f"load_trace: paths must be file paths, got {p!r}")
    paths = [Path(os.fsdecode(p)) for p in paths]
    paths = expand_trace_paths(paths, format)
    if not paths:
        raise TraceFormatError("load_trace: no trace files given")
    clusters = cluster_per_file(cluster, len(paths))

    frames, rejects, infos, extras, type_counts, int_ids = [], [], [], [], [], []
    warn: list[str] = []
    incons: dict[str, int] = {"duration": 0, "queue": 0, "gpu_time": 0, "duration_includes_queue": 0}
    tzs: dict[str, str] = {}
    fmt = str(format or "acmetrace").lower()
    reports: list[dict] = []
    specs: dict = {}
    for path, cl in zip(paths, clusters):
        imported, spec = None, None
        if fmt != "acmetrace":
            from acmemodel.trace import importers

            imported = importers.read(fmt, path, timezone=timezone, type_map=type_map, origin=origin,
                                      extracted_at=extracted_at)
            reports.append(imported.report)
            warn.extend(imported.warnings)
        else:
            spec = file_cluster_spec(path)
            if cl is None and spec is not None:
                cl = _cluster_name(spec.name)
        jobs, rej, info, extra, inc, w, tz, tc, ii = _read_one(path, cl, imported)
        if spec is not None:
            tz = spec.timezone
            _check_capacity(spec, jobs, path)
        specs.setdefault(info.cluster, _file_spec(spec, info.cluster, tz, imported, extra, jobs))
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
    jobs, extra_df, rejected, t_ext = _censor_unfinished(jobs, extra_df, rejected, infos, extracted_at)
    jobs = _truncation_columns(jobs, extra_df)
    if len(rejected):
        rejected = _original_text(rejected, infos)
    for w in warn:
        warnings.warn(w, DataWarning, stacklevel=2)
    jobs = _with_chain_columns(jobs, extra_df)
    problems: dict[str, dict[str, int]] = {}
    for info in infos:
        for c, d in info.value_problems.items():
            for k, v in d.items():
                problems.setdefault(c, {})[k] = problems.get(c, {}).get(k, 0) + v
    return Trace(jobs=jobs, rejected=rejected, files=infos, inconsistencies=incons, warnings=warn,
                 timezones=tzs, extras=extra_df, extracted_at_s=t_ext, imports=reports,
                 value_problems=problems, cluster_specs=specs)


def _check_capacity(spec, jobs: pd.DataFrame, path: Path) -> None:
    """A file's own description must hold its jobs: no job asks for more GPUs than ``gpus``
    (:class:`TraceFormatError` naming the description, the field and the job). (Not checked per node: a
    converted SWF log's ``node_num`` is a placeholder 1.)"""
    if not len(jobs) or spec.gpus is None:
        return
    from acmemodel.clusters import sidecar_path

    side = sidecar_path(path)
    where = str(side) if side.is_file() and path.suffix.lower() != ".parquet" else f"{path}: metadata"
    g = jobs["gpu_num"].to_numpy(dtype=np.int64)
    i = int(np.argmax(g))
    if g[i] > spec.gpus:
        r = jobs.iloc[i]
        raise TraceFormatError(f"{where}: gpus = {spec.gpus:,} contradicts the trace: job {r['job_id']} "
                               f"(line {int(r['source_line'])}) asks for {int(g[i]):,} GPUs")


#: at most this many distinct partition (or VC) names make a cluster's partition list
MAX_PARTITIONS = 64


def _file_spec(spec, name: str, tz: str, imported, extra: pd.DataFrame, jobs: pd.DataFrame):
    """The :class:`~acmemodel.clusters.ClusterSpec` of one file's cluster ``name``: the file's own
    (sidecar or Parquet metadata; renamed when ``cluster=`` renamed it), else the published one of Seren
    or Kalos, else what the log says: the zone, the partitions (or VCs) of its jobs and, for SWF, the
    header's ``MaxProcs``/``MaxNodes`` when they hold every job. Unknown sizes stay ``None``."""
    import dataclasses

    from acmemodel.clusters import ClusterSpec, acme_cluster

    if spec is not None:
        return spec if spec.name == name else dataclasses.replace(spec, name=name)
    if imported is None and (acme := acme_cluster(name)) is not None and acme.name == name:
        return acme
    parts: tuple = ()
    for col in ("partition", "vc"):
        if extra is not None and col in extra.columns:
            # (distinct values first: a column of a million job rows holds a few partitions)
            v = {str(x).strip() for x in pd.unique(extra[col].dropna())} - {""}
            if 0 < len(v) <= MAX_PARTITIONS:
                parts = tuple(sorted(v))
                break
    gpus = per_node = None
    source = []
    hdr = (imported.report.get("header") or {}) if imported is not None else {}
    biggest = int(jobs["gpu_num"].max()) if len(jobs) else 0
    try:
        procs = int(float(hdr.get("MaxProcs"))) if hdr.get("MaxProcs") is not None else None
        nodes = int(float(hdr.get("MaxNodes"))) if hdr.get("MaxNodes") is not None else None
    except (TypeError, ValueError):
        procs = nodes = None
    if procs and procs > 0 and procs >= biggest:
        gpus = procs
        source.append("SWF header MaxProcs")
        if nodes and nodes > 0 and procs % nodes == 0:
            per_node = procs // nodes
            source.append("MaxNodes")
    tzname = hdr.get("TimeZoneString") if isinstance(hdr.get("TimeZoneString"), str) else None
    return ClusterSpec(name=name, gpus=gpus, gpus_per_node=per_node, timezone=tz, tzname=tzname,
                       partitions=parts, source=(" and ".join(source) if source else
                                                 f"the log ({imported.format if imported is not None else 'trace file'})"
                                                 ""))


def _extraction_seconds(value) -> float:
    """``extracted_at`` as Unix seconds (a number, an ISO string — UTC unless it has an offset — or a
    Timestamp)."""
    from acmemodel.trace.importers._common import time_seconds

    return time_seconds(value, "extracted_at")


def _censor_unfinished(jobs: pd.DataFrame, extra: pd.DataFrame, rejected: pd.DataFrame,
                       infos: Sequence[FileInfo], extracted_at):
    """Unfinished jobs (:data:`UNFINISHED_STATES`) censored at the extraction time.

    A RUNNING/SUSPENDED job without ``end_time`` gets ``end_time`` = the extraction time ``t_x`` (the
    last time it was seen running) and ``run_s = t_x − start`` with ``run_censored``; a PENDING job
    without ``end_time`` gets ``queue_s = t_x − submit`` with ``queue_censored`` (never started). An
    unfinished job *with* an end time (an AcmeTrace file written by ``convert``) is censored there.
    ``t_x`` defaults to the latest timestamp in the files. An unfinished job submitted (or started)
    after ``t_x`` is quarantined (``after_extraction``). Returns (jobs, extras, rejected, t_x or None).
    """
    if not len(jobs):
        return jobs, extra, rejected, None
    unf = jobs["state"].isin(UNFINISHED_STATES).to_numpy(dtype=bool)  # (hash lookup, not a sort)
    if not unf.any():
        return jobs, extra, rejected, None
    sub = jobs["submit_s"].to_numpy(dtype=float)
    sta = jobs["start_s"].to_numpy(dtype=float)
    end = jobs["end_s"].to_numpy(dtype=float)
    if extracted_at is None:
        t_x = float(np.nanmax(np.concatenate([sub, sta, end])))
    else:
        t_x = _extraction_seconds(extracted_at)
    fill = unf & np.isnan(end)
    with np.errstate(invalid="ignore"):
        late = fill & ((sub > t_x) | (sta > t_x))
    if late.any():
        d = jobs.loc[late]
        when = pd.Timestamp(t_x, unit="s", tz="UTC").isoformat()
        rej = _rejected_frame(d["source_file"].to_numpy(), d["source_line"].to_numpy(), Reason.AFTER_EXTRACTION,
                              [f"{s} job submitted or started after the extraction time {when}"
                               for s in d["state"]], _raw_rows(d, _RAW_JOB_COLUMNS))
        rejected = pd.concat([rejected, rej], ignore_index=True)
        for info in infos:
            k = int((d["source_file"] == info.path).sum())
            info.accepted -= k
            info.rejected += k
        keep = ~late
        jobs = jobs.loc[keep].reset_index(drop=True)
        extra = extra.loc[keep].reset_index(drop=True)
        fill, unf = fill[keep], unf[keep]
    idx = np.flatnonzero(fill)
    if len(idx):
        cols = {c: jobs.columns.get_loc(c) for c in ("end_s", "end_time", "run_s", "queue_s", "gpu_time_s")}
        jobs.iloc[idx, cols["end_s"]] = t_x
        jobs.iloc[idx, cols["end_time"]] = pd.Timestamp(int(round(t_x * 1e9)), unit="ns", tz="UTC")
        started = jobs["started"].to_numpy(dtype=bool)
        s_i = started[idx]
        sta = jobs["start_s"].to_numpy(dtype=float)
        sub = jobs["submit_s"].to_numpy(dtype=float)
        run = jobs["run_s"].to_numpy(dtype=float).copy()
        q = jobs["queue_s"].to_numpy(dtype=float).copy()
        gt = jobs["gpu_time_s"].to_numpy(dtype=float).copy()
        run[idx[s_i]] = t_x - sta[idx[s_i]]
        gt[idx[s_i]] = jobs["gpu_num"].to_numpy(dtype=float)[idx[s_i]] * run[idx[s_i]]
        q[idx[~s_i]] = t_x - sub[idx[~s_i]]
        gt[idx[~s_i]] = 0.0
        jobs["run_s"], jobs["queue_s"], jobs["gpu_time_s"] = run, q, gt
    started = jobs["started"].to_numpy(dtype=bool)
    jobs["run_censored"] = unf & started
    jobs["queue_censored"] = jobs["queue_censored"].to_numpy(dtype=bool) | (unf & ~started)
    return jobs, extra, rejected, t_x


def _truncation_columns(jobs: pd.DataFrame, extra: pd.DataFrame | None) -> pd.DataFrame:
    """Left truncation and unknown waits from the extra columns ``entry_time`` / ``queue_unknown``.

    A row with an ``entry_time`` existed before the trace began (e.g. an instance whose creation time
    is empty because it was created before the trace start): ``left_truncated`` True; it is observed
    from ``entry_time`` on, its wait is unknown (``queue_s`` NaN) and its run time ``run_s`` is only
    the part from ``start_time`` (the entry time when the start is unknown) to its end.
    ``entry_age_s`` = ``entry − start`` when the start is known and before the entry (a delayed-entry
    observation: the run is known to have lasted at least that long when it entered), NaN when the
    start is unknown (``start_time`` = ``entry_time``: the age at entry is not known). A row with
    ``queue_unknown`` = 1 has ``queue_s`` NaN (e.g. SWF wait −1). Without these columns the table is
    returned unchanged (no ``left_truncated`` column)."""
    if extra is None or not len(jobs) or len(extra) != len(jobs):
        return jobs
    has_e, has_q = "entry_time" in extra.columns, "queue_unknown" in extra.columns
    if not (has_e or has_q):
        return jobs
    jobs = jobs.copy(deep=False)
    q = jobs["queue_s"].to_numpy(dtype=float).copy()
    if has_e:
        txt = extra["entry_time"].astype(object).where(extra["entry_time"].notna(), "").astype(str).str.strip()
        et = pd.to_datetime(txt.where(txt != "", None), utc=True, errors="coerce", format="ISO8601")
        entry = np.where(et.isna().to_numpy(), np.nan, et.to_numpy(dtype="datetime64[ns]").astype(np.int64) / 1e9)
        lt = np.isfinite(entry)
        start = jobs["start_s"].to_numpy(dtype=float)
        with np.errstate(invalid="ignore"):
            jobs["entry_age_s"] = np.where(lt & (start < entry), entry - start, np.nan)
        jobs["left_truncated"] = lt
        q[lt] = np.nan
    if has_q:
        qu = extra["queue_unknown"].astype(object).fillna("").astype(str).str.strip().str.lower()
        q[qu.isin(["1", "true", "yes"]).to_numpy(dtype=bool)] = np.nan
    jobs["queue_s"] = q
    return jobs


#: restart-chain columns a synthetic trace carries beyond the published schema (acmemodel.synth)
CHAIN_FILE_COLUMNS: tuple[str, ...] = ("chain_id", "attempt", "prev_job_id", "restart_gap_s")


def _with_chain_columns(jobs: pd.DataFrame, extras: pd.DataFrame) -> pd.DataFrame:
    """``jobs`` plus the typed restart-chain columns when every file carried them (``attempt`` and
    ``prev_job_id``; :func:`acmemodel.features.chains.restart_chains` then uses the links as
    written instead of inferring them): ``chain_id`` (int, −1 if empty), ``attempt`` (int),
    ``prev_job_id`` (str, ``""`` = first attempt), ``restart_gap_s`` (float, NaN if empty)."""
    if extras is None or not {"attempt", "prev_job_id"} <= set(extras.columns) or len(extras) != len(jobs):
        return jobs
    ex = extras.reset_index(drop=True)
    att = _to_numbers(ex["attempt"])
    if att.isna().any():  # a file without the columns (NaN after concat) or unparsable values
        return jobs
    jobs = jobs.copy(deep=False)
    jobs["attempt"] = att.to_numpy(dtype=np.int64)
    jobs["prev_job_id"] = ex["prev_job_id"].fillna("").astype(str).to_numpy(dtype=object)
    if "chain_id" in ex.columns:
        jobs["chain_id"] = _to_numbers(ex["chain_id"]).fillna(-1).to_numpy(dtype=np.int64)
    if "restart_gap_s" in ex.columns:
        jobs["restart_gap_s"] = _to_numbers(ex["restart_gap_s"]).to_numpy(dtype=float)
    return jobs




def _to_numbers(col: pd.Series) -> pd.Series:
    """``pd.to_numeric(col, errors="coerce")`` up to the dtype (float64 here where pandas may say int64:
    the callers take whole numbers or floats from it): through Arrow's cast when every value is an
    integer literal of at most 15 digits or empty (empty -> NaN; the written chain columns), which is
    ~5x faster on a million rows; anything else goes to pandas."""
    import pyarrow as pa
    import pyarrow.compute as pc

    v = col.to_numpy()
    if v.dtype == object and len(v):
        try:
            a = pa.array(v, type=pa.string(), from_pandas=True)
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            a = None
        if a is not None and a.null_count == 0:
            empty = pc.equal(a, "")
            ok = pc.or_(empty, pc.match_substring_regex(a, r"^-?[0-9]{1,15}$"))
            if pc.all(ok).as_py():
                num = pc.cast(pc.if_else(empty, pa.scalar(None, pa.string()), a), pa.int64())
                return pd.Series(num.to_numpy(zero_copy_only=False).astype(float), index=col.index)
    return pd.to_numeric(col, errors="coerce")
