"""AcmeTrace CSV: the native format, in the exact column order and value formats of the
published ``trace_seren.csv`` / ``trace_kalos.csv`` (AcmeTrace README example rows).

Seren schema::

    job_id,user,node_num,gpu_num,cpu_num,type,state,submit_time,start_time,end_time,duration,queue,gpu_time
    5778432,u5907,1,8,128,Other,FAILED,2023-03-01 00:18:22+08:00,2023-03-01 00:18:54+08:00,2023-03-01 00:20:51+08:00,117,32,936.0

Kalos schema::

    job_id,user,node_num,gpu_num,cpu_num,mem_per_pod_GB,shared_mem_per_pod,type,state,submit_time,start_time,
    end_time,fail_time,stop_time,duration,queue,gpu_time

Value formats (as published):

* timestamps ``YYYY-MM-DD HH:MM:SS+HH:MM`` in the cluster's local time (Seren ``+08:00``, Kalos
  ``+00:00``), whole seconds;
* Seren ``duration = end − start`` (integer s), ``queue = start − submit`` (integer s),
  ``gpu_time = gpu_num × duration`` (GPU-seconds, written as a float ``936.0``);
* Kalos ``duration = end − submit`` — **queueing included**, as in the published Kalos files
  (their README says end − start, but both published example rows are end − submit and their
  ``gpu_time`` uses it); ``queue = start − submit`` written as a float (``10.0``);
  ``gpu_time = gpu_num × duration`` (float). :func:`acmemodel.load_trace` recomputes run time from
  the timestamps, so the file reads back to the same ``run_s``;
* Kalos ``fail_time`` = ``start + fail_time_s`` where known (else empty; if the frame has no
  ``fail_time_s`` column at all, FAILED rows get ``end_time`` as in the published rows),
  ``stop_time`` = ``end_time`` on CANCELLED rows (published pattern), empty otherwise;
  ``mem_per_pod_GB`` / ``shared_mem_per_pod`` from same-named columns when present, else empty.

Jobs that never started (``start_s`` NaN): ``start_time`` empty, ``duration`` 0 (Seren; Kalos keeps
end − submit), ``queue`` = end − submit (the wait until cancellation), ``gpu_time`` 0.0 for Seren.

Rounding: every timestamp is rounded to the nearest second (half to even) and durations are
computed from the rounded timestamps.

Restart chains: jobs that carry their chain as data (synthetic traces; :func:`carries_chain`) get
four more columns after the schema's — ``chain_id``, ``attempt``, ``prev_job_id`` (job id of the
attempt this one restarts, empty on first attempts), ``restart_gap_s`` (whole seconds, empty on
first attempts) — which :func:`acmemodel.load_trace` keeps, so the chain survives the file.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

import numpy as np
import pandas as pd

from acmemodel.clusters import ClusterSpec, acme_cluster, utc_offset_seconds, write_sidecar
from acmemodel.export import _common as C
from acmemodel.export import _text as T
from acmemodel.trace import KALOS_COLUMNS as KALOS_SCHEMA, SEREN_COLUMNS as SEREN_SCHEMA

SEREN_COLUMNS: list[str] = list(SEREN_SCHEMA)
KALOS_COLUMNS: list[str] = list(KALOS_SCHEMA)


def _schema_for(cluster: str, schema: str | None) -> str:
    if schema is not None:
        s = str(schema).lower()
        if s not in ("seren", "kalos"):
            raise ValueError(f"schema must be 'seren' or 'kalos', got {schema!r}")
        return s
    return "kalos" if str(cluster).lower().startswith("kalos") else "seren"


def _float_col(df: pd.DataFrame, name: str) -> np.ndarray:
    if name not in df.columns:
        return np.full(len(df), None, dtype=object)
    v = pd.to_numeric(df[name], errors="coerce").to_numpy(dtype=float)
    return T.float_strings(v)


def format_rows(df: pd.DataFrame, schema: str, offset_s: int, *, fail_known: bool = True
                ) -> tuple[list[str], list[np.ndarray], float]:
    """Columns (header, string arrays) of one cluster's rows in ``schema``; also the max rounding
    adjustment in seconds. ``fail_known=False`` (the jobs had no ``fail_time_s`` column) writes
    ``fail_time = end_time`` on FAILED rows."""
    suffix = C.format_offset(offset_s)
    sub, st, st_miss, en, adj = C.rounded_times(df)
    started = ~st_miss
    gpus = df["gpu_num"].to_numpy(dtype="int64")
    t_sub = T.format_times(sub, offset_s=offset_s, suffix=suffix)
    t_st = T.format_times(st, st_miss, offset_s=offset_s, suffix=suffix)
    t_en = T.format_times(en, offset_s=offset_s, suffix=suffix)
    queue = np.where(started, st - sub, en - sub)
    common = {
        "job_id": df["job_id"].to_numpy(dtype=object),
        "user": df["user"].to_numpy(dtype=object),
        "node_num": T.int_strings(df["node_num"].to_numpy()),
        "gpu_num": T.int_strings(gpus),
        "cpu_num": T.num_strings(df["cpu_num"]),
        "type": df["type"].to_numpy(dtype=object),
        "state": df["state"].astype(str).to_numpy(dtype=object),
        "submit_time": t_sub, "start_time": t_st, "end_time": t_en,
    }
    if schema == "seren":
        duration = np.where(started, en - st, 0)
        common.update(duration=T.int_strings(duration), queue=T.int_strings(queue),
                      gpu_time=T.int_strings(gpus * duration, float_suffix=True))
        return SEREN_COLUMNS, [common[c] for c in SEREN_COLUMNS], adj
    duration = en - sub
    state = df["state"].astype(str).to_numpy()
    if fail_known and "fail_time_s" in df.columns:
        ft = df["fail_time_s"].to_numpy(dtype=float)
        fmiss = np.isnan(ft) | st_miss
        fsec = np.rint(np.where(fmiss, 0, df["start_s"].fillna(0).to_numpy() + np.where(np.isnan(ft), 0, ft)))
        fail = T.format_times(fsec.astype("int64"), fmiss, offset_s=offset_s, suffix=suffix)
    else:
        fmiss = state != "FAILED"
        fail = T.format_times(en, fmiss, offset_s=offset_s, suffix=suffix)
    stop = T.format_times(en, state != "CANCELLED", offset_s=offset_s, suffix=suffix)
    common.update(mem_per_pod_GB=T.num_strings(df["mem_per_pod_GB"]) if "mem_per_pod_GB" in df.columns
                  else np.full(len(df), None, dtype=object),
                  shared_mem_per_pod=_float_col(df, "shared_mem_per_pod"),
                  fail_time=fail, stop_time=stop, duration=T.int_strings(duration),
                  queue=T.int_strings(queue, float_suffix=True),
                  gpu_time=T.int_strings(gpus * duration, float_suffix=True))
    return KALOS_COLUMNS, [common[c] for c in KALOS_COLUMNS], adj


def carries_chain(jobs: Any) -> bool:
    """Whether the caller's jobs carry their restart chain as data (``attempt`` and ``prev_job_id``
    or ``prev_index``: synthetic traces, or a trace loaded from a file with those columns)."""
    cols = jobs.jobs.columns if hasattr(jobs, "jobs") else jobs.columns
    return "attempt" in cols and ("prev_job_id" in cols or "prev_index" in cols)


def chain_file_columns(df: pd.DataFrame) -> tuple[list[str], list[Any]]:
    """The restart-chain columns written after the schema's (``chain_id``, ``attempt``,
    ``prev_job_id`` — empty on first attempts — and ``restart_gap_s`` in whole seconds, empty on
    first attempts), as :func:`acmemodel.load_trace` reads them back."""
    n = len(df)
    if "prev_job_id" in df.columns:
        prev = df["prev_job_id"].astype(object).where(df["prev_job_id"].notna(), "").astype(str).to_numpy(dtype=object)
    else:
        pos = C.prev_positions(df)
        ids = df["job_id"].astype(str).to_numpy(dtype=object)
        prev = np.where(pos >= 0, ids[np.maximum(pos, 0)] if n else ids, "").astype(object)
    chain = (pd.to_numeric(df["chain_id"], errors="coerce").fillna(-1).to_numpy(dtype="int64")
             if "chain_id" in df.columns else np.arange(n, dtype="int64"))
    gap = (pd.to_numeric(df["restart_gap_s"], errors="coerce").to_numpy(dtype=float)
           if "restart_gap_s" in df.columns else np.full(n, np.nan))
    gmiss = ~np.isfinite(gap)
    cols = [T.int_strings(chain), T.int_strings(df["attempt"].to_numpy(dtype="int64")), prev,
            T.int_strings(np.rint(np.where(gmiss, 0.0, gap)).astype("int64"), gmiss)]
    return ["chain_id", "attempt", "prev_job_id", "restart_gap_s"], cols


def _has_fail_times(jobs: Any) -> bool:
    """Whether the caller's jobs carry ``fail_time_s`` (before :func:`_common.normalize_jobs` adds it)."""
    return "fail_time_s" in (jobs.jobs.columns if hasattr(jobs, "jobs") else jobs.columns)


def acmetrace_table(jobs: Any, *, cluster: str | None = None, schema: str | None = None,
                    timezone: str | None = None) -> "pa.Table":
    """One cluster's jobs in the AcmeTrace schema as a ``pyarrow.Table`` of string columns in file
    order, every value a string as in the published files (``""`` where a field is empty).

    ``cluster`` selects the rows (needed when the jobs hold several clusters); ``schema`` as in
    :func:`write_acmetrace`; ``timezone`` (``"+08:00"``) defaults to the trace's, then the
    cluster's published zone. The same formatter :func:`write_acmetrace` writes files with.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    df, tzs = C.normalize_jobs(jobs)
    if len(df) == 0:  # the header alone (e.g. a synthetic trace with no arrivals)
        names = KALOS_COLUMNS if _schema_for(cluster or "", schema) == "kalos" else SEREN_COLUMNS
        return pa.table({c: pa.array([], type=pa.large_string()) for c in names})
    groups = C.split_clusters(df, cluster)
    if len(groups) != 1:
        raise ValueError(f"jobs hold several clusters {[g for g, _ in groups]}; pass cluster=")
    name, sub = groups[0]
    off = utc_offset_seconds(timezone) if timezone is not None else C.cluster_offsets([name], tzs)[name]
    header, cols, _ = format_rows(sub, _schema_for(name, schema), off, fail_known=_has_fail_times(jobs))
    if carries_chain(jobs):
        h2, c2 = chain_file_columns(sub)
        header, cols = list(header) + h2, list(cols) + c2
    empty = pa.scalar("", type=pa.large_string())
    arrays = [T.to_arrow(c) for c in cols]
    return pa.table({h: pc.fill_null(a, empty) if a.null_count else a for h, a in zip(header, arrays)})


def write_acmetrace(jobs: Any, out: str | Path, *, cluster: str | None = None, schema: str | None = None,
                    timezones: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Write ``jobs`` as AcmeTrace CSV, one ``trace_<cluster>.csv`` per cluster, plus ``README.md``.

    Parameters
    ----------
    jobs : jobs DataFrame of the Trace contract (or a ``Trace``).
    out : output directory (created).
    cluster : export only this cluster (case-insensitive).
    schema : ``"seren"`` or ``"kalos"``; default by cluster name (Kalos* → kalos, else seren).
    timezones : cluster → UTC offset (``"+08:00"``); default the trace's, then the published zones.
    """
    no_fail_col = not _has_fail_times(jobs)
    with_chain = carries_chain(jobs)
    df, chain_src, out, groups, offsets = C.prepare(jobs, out, cluster=cluster, timezones=timezones)
    files, notes, rows, desc, chains = [], [], 0, [], 0
    stems = C.safe_names([g for g, _ in groups])
    for name, sub in groups:
        sch = _schema_for(name, schema)
        header, cols, adj = format_rows(sub, sch, offsets[name], fail_known=not no_fail_col)
        if with_chain:
            h2, c2 = chain_file_columns(sub)
            header, cols = list(header) + h2, list(cols) + c2
        path = C.out_path(out, f"trace_{stems[name]}.csv")
        C.write_csv(path, header, cols)
        files.append(path)
        if str(name).strip():  # (a blank cluster name has nothing to carry)
            files.append(write_sidecar(_file_spec(jobs, name, sch, offsets[name]), path))
        rows += len(sub)
        chains += _n_chains(sub)
        desc.append(f"- `{path.name}` (and its cluster description `{path.name}.cluster.yaml`): {len(sub):,} jobs "
                    f"of cluster **{name}**, {sch.capitalize()} schema, "
                    f"local time {C.format_offset(offsets[name])}; largest rounding of a timestamp "
                    f"{adj:.3f} s.")
    sections = [
        ("Files", "\n".join(desc)),
        ("Restart chains", C.chain_note(chain_src, rows - chains) + (
            " Written as the columns chain_id, attempt, prev_job_id, restart_gap_s after the schema's."
            if with_chain else "")),
        ("Format", _FORMAT_NOTES),
    ]
    files.append(C.write_readme(out, "AcmeTrace CSV export", sections))
    return C.result("acmetrace", out, files, jobs=chains, attempts=rows, df=df if cluster is None else
                    pd.concat([g for _, g in groups]), clusters=[g for g, _ in groups], notes=notes)


def _file_spec(jobs: Any, name: str, schema: str, offset_s: int) -> ClusterSpec:
    """The description written beside an exported file (its sidecar, as ``convert`` writes one): the trace's
    own description of the cluster (``Trace.cluster_specs``), else Acme's published one, else the name
    alone; the zone the file is written in; ``duration`` counting the queue exactly in the Kalos schema."""
    import dataclasses

    spec = (getattr(jobs, "cluster_specs", None) or {}).get(name) or acme_cluster(name) or ClusterSpec(name=name)
    return dataclasses.replace(spec, timezone=C.format_offset(offset_s), duration_includes_queue=schema == "kalos",
                               source=spec.source or "acmemodel export")


def _n_chains(sub: pd.DataFrame) -> int:
    return int(sub["chain_id"].nunique())


_FORMAT_NOTES = """\
Column order and value formats of the published AcmeTrace files (`trace_seren.csv`, `trace_kalos.csv`).

- Times: `YYYY-MM-DD HH:MM:SS+HH:MM`, the cluster's local time (Seren +08:00, Kalos +00:00), whole
  seconds. Every timestamp was rounded to the nearest second (half to even); `duration` and `queue`
  were computed from the rounded timestamps.
- Units: `duration`, `queue` in seconds; `gpu_time` in GPU-seconds (`gpu_num × duration`).
- Seren: `duration = end_time − start_time`, `queue = start_time − submit_time` (integers).
- Kalos: `duration = end_time − submit_time` — it INCLUDES the queueing time, as in the published Kalos
  files (their README says end − start; their example rows and `gpu_time` use end − submit). `queue` is
  written as a float (`10.0`). Run time is `end_time − start_time`; `acmemodel.load_trace` recomputes it.
- Kalos `fail_time` = start + time-to-failure where known; `stop_time` = `end_time` on CANCELLED rows;
  `mem_per_pod_GB`, `shared_mem_per_pod` are empty unless the jobs carried them.
- Jobs that never started: empty `start_time`; `queue` = end − submit (the wait until cancellation);
  Seren `duration` 0 and `gpu_time` 0.0.
"""
