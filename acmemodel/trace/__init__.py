"""The trace layer: read AcmeTrace job files into one validated table (package :mod:`acmemodel.trace`).

``load_trace(paths, cluster=None) -> Trace`` reads Seren-schema and Kalos-schema files (``.csv``,
``.csv.gz``, ``.parquet``; any column order; UTF-8 BOM, CRLF and trailing blank lines tolerated) into
``Trace.jobs``, one row per accepted job, with these normalised columns:

=================  ==========================================================================
column             meaning
=================  ==========================================================================
cluster            cluster name (``cluster=`` argument, else the file's sidecar/metadata or
                   ``cluster`` column, else the file name)
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
run_censored       the job was still running (RUNNING/SUSPENDED) when the trace was extracted:
                   ``end_time`` is the extraction time and ``run_s`` a right-censored run time
left_truncated     (only when a file carries ``entry_time``) the job existed before the trace began:
                   observed from ``entry_time`` on, ``queue_s`` NaN, ``run_s`` only the part from
                   ``start_time`` (the entry time when the start is unknown)
entry_age_s        (with ``left_truncated``) the run's age at its entry, ``entry − start`` s, when
                   the start is known (a delayed entry); NaN when it is not
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

The cluster is data (:class:`acmemodel.clusters.ClusterSpec`: name, GPUs, GPUs per node, zone,
partitions): ``Trace.cluster_specs`` holds it per cluster, from the file's sidecar
``<file>.cluster.yaml`` or Parquet schema metadata (written by ``acmemodel convert``), an importer's log
(SWF ``MaxProcs``, partitions seen), or the published table for Seren and Kalos. A size nobody stated
stays unknown (``None``).

Fast path: a clean CSV is parsed by pyarrow straight into typed columns. If any value fails to
convert (a bad number or timestamp, a timestamp without zone offset), the file is re-read as text and
each column is parsed value by value, so that only the offending rows are quarantined.

Speed (a 1M-row file within 2x of pyarrow's bare ``read_csv``, ``benchmarks/bench_load.py``): columns
go from Arrow to numpy one by one (no whole-table pandas conversion); ``user``/``type``/``state`` are
dictionary-encoded in a background thread (Arrow releases the GIL) and validated and mapped on their
few distinct values; ``job_id`` stays Arrow-backed; checks that cannot fail on a column Arrow already
typed are skipped; duplicate ids are ruled out on their integer values, or else by an Arrow sort.

Other schedulers' logs and public GPU traces (Slurm ``sacct``, SWF, Helios, Philly, PAI 2020,
Kubernetes pod lists) are read with ``load_trace(paths, format=NAME)`` through
:mod:`.importers`, which map them onto these columns (plus their ``job_name``/``partition``/``qos``/
``vc``/``restart_of`` in ``Trace.extras``) and report what they mapped how (``Trace.imports``). Jobs
unfinished at extraction (RUNNING, SUSPENDED, PENDING) are kept as right-censored observations
(``run_censored`` / ``queue_censored``, censoring time ``Trace.extracted_at_s``). Rows that existed
before the trace began are kept as left-truncated (``left_truncated``), and waits a source does not
record (SWF ``-1``) are missing (``queue_s`` NaN), never 0: see ``docs/observation.md``.

Modules: :mod:`.schema` (the contract: columns, :class:`Reason`, :class:`Trace`), :mod:`.readers`
(file sniffing, the Arrow read, :func:`load_trace`), :mod:`.arrow` (Arrow → numpy conversion),
:mod:`.validation` (row checks, quarantine), :mod:`.sample` (:func:`load_sample`, the shipped
sample), :mod:`.jobs` (:func:`jobs_from_times`, the one builder
of a job table used by the reader, the calibration, ``reproduce`` and the synthetic test jobs).
"""
from __future__ import annotations

from acmemodel.clusters import CLUSTER_TZ, utc_offset_seconds  # noqa: F401  (cluster → "+08:00")
from acmemodel.trace.jobs import jobs_from_times
from acmemodel.trace.readers import load_trace
from acmemodel.trace.sample import load_sample
from acmemodel.trace.schema import (
    ANALYSIS_STATES, CHECK_TOL_S, JOB_COLUMNS, KALOS_COLUMNS, KALOS_ONLY, KNOWN_TYPES, NUMERIC_COLUMNS,
    REQUIRED_COLUMNS, SEREN_COLUMNS, STATE_MAP, STR_DTYPE, TIME_COLUMNS, UNFINISHED_STATES, FileInfo, Reason,
    Trace,
)

__all__ = ["load_trace", "load_sample", "Trace", "FileInfo", "Reason", "jobs_from_times", "JOB_COLUMNS", "KNOWN_TYPES",
           "STATE_MAP", "ANALYSIS_STATES", "SEREN_COLUMNS", "KALOS_COLUMNS", "KALOS_ONLY", "REQUIRED_COLUMNS",
           "TIME_COLUMNS", "NUMERIC_COLUMNS", "UNFINISHED_STATES", "STR_DTYPE", "CHECK_TOL_S", "CLUSTER_TZ", "utc_offset_seconds"]
