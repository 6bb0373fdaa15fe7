"""The one builder of a job table: :func:`jobs_from_times` turns per-job instants and attributes into
the columns of ``Trace.jobs`` (:data:`~acmemodel.trace.schema.JOB_COLUMNS`).

Every producer of a job table uses it — the trace reader, the calibration's pseudo-trace, the
synthesised traces of ``reproduce`` and the synthetic test jobs — so that the derived columns mean the
same everywhere:

* ``started = isfinite(start_s)``; ``run_s = end_s − start_s`` (NaN if never started);
* ``queue_s = start_s − submit_s``, or for a job that never started ``end_s − submit_s`` with
  ``queue_censored = True`` (a wait right-censored at the cancel);
* ``gpu_time_s = gpu_num × run_s`` GPU-seconds (0 if never started);
* ``analysis_state = STATE_MAP[state]`` (TIMEOUT, NODE_FAIL → FAILED) unless given;
* ``node_num`` defaults to ``max(1, ⌈gpu_num / 8⌉)`` (8 GPUs per node on both clusters);
* ``run_censored`` (the job was still running at extraction: ``run_s`` is right-censored) False
  unless given;
* ``cpu_num``, ``fail_time_s``, ``mem_per_pod_GB``, ``shared_mem_per_pod`` are NaN unless given: a
  builder that does not know them says so instead of inventing a value.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from acmemodel.trace.schema import JOB_COLUMNS, STATE_MAP

__all__ = ["jobs_from_times"]

#: GPUs per node of the AcmeTrace clusters (as :data:`acmemodel.clusters.GPUS_PER_NODE`)
_GPUS_PER_NODE = 8


def _column(value: Any, n: int, dtype=None) -> np.ndarray:
    """``value`` as a length-``n`` array (a scalar is repeated)."""
    if np.ndim(value) == 0 and not isinstance(value, (pd.Series, pd.Index, np.ndarray)):
        a = np.empty(n, dtype=object if dtype is None else dtype)
        a.fill(value)
        return a
    if isinstance(value, (pd.Series, pd.Index)):
        value = value.to_numpy()
    a = np.asarray(value) if dtype is None else np.asarray(value, dtype=dtype)
    if len(a) != n:
        raise ValueError(f"jobs_from_times: a column has {len(a)} values for {n} jobs")
    return a


def _times(seconds: np.ndarray) -> pd.Series:
    """UTC timestamps of Unix seconds (NaN -> NaT). The NaNs are converted as 0 and masked afterwards: pandas
    < 3 reads uninitialised memory at the NaN entries of a float array converted with ``unit=`` and then
    raises a FloatingPointError now and then (pandas-dev/pandas#58419)."""
    s = np.asarray(seconds, dtype=float)
    nan = np.isnan(s)
    t = pd.Series(pd.to_datetime(np.where(nan, 0.0, s), unit="s", utc=True))
    if nan.any():
        t[nan] = pd.NaT
    return t


def jobs_from_times(*, cluster, submit_s, start_s, end_s, gpu_num, type, state, user,
                    job_id=None, analysis_state=None, node_num=None, cpu_num=None, fail_time_s=None,
                    mem_per_pod_GB=None, shared_mem_per_pod=None, run_censored=None,
                    source_file: Any = "<generated>",
                    source_line=None, times: dict[str, pd.Series] | None = None) -> pd.DataFrame:
    """A job table in the trace contract from per-job instants (Unix seconds, UTC) and attributes.

    Parameters
    ----------
    cluster, type, state, user, source_file : a value for every job or one per job.
    submit_s, start_s, end_s : float seconds since the epoch, UTC; ``start_s`` NaN for a job that never
        started (then ``end_s`` is when it left the queue).
    gpu_num : requested GPUs (int); 0 is a CPU job.
    job_id : strings (default ``"<cluster>-<row>"``); an Arrow-backed pandas array is kept as is.
    analysis_state, node_num, cpu_num, fail_time_s, mem_per_pod_GB, shared_mem_per_pod : optional
        columns (defaults in the module docstring).
    source_line : default ``row + 2`` (line 1 is a header).
    times : the ``submit_time``/``start_time``/``end_time`` series when the caller already has them
        (the reader), else built from the seconds.

    Raises ``ValueError`` for a state outside :data:`~acmemodel.trace.schema.STATE_MAP` when
    ``analysis_state`` is not given, or for columns of different lengths.
    """
    sub = np.asarray(submit_s, dtype=np.float64)
    n = len(sub)
    start = _column(start_s, n, np.float64)
    end = _column(end_s, n, np.float64)
    gpu = _column(gpu_num, n, np.int64)
    state_a = _column(state, n)
    cluster_a = _column(cluster, n)
    if analysis_state is None:
        codes, cats = pd.factorize(pd.Series(state_a, dtype=object).astype(str))
        bad = [s for s in cats if s not in STATE_MAP]
        if bad:
            raise ValueError(f"jobs_from_times: unknown state(s) {', '.join(map(repr, bad))}; known: "
                             f"{', '.join(STATE_MAP)}")
        analysis_a = np.array([STATE_MAP[s] for s in cats], dtype=object)[codes]
    else:
        analysis_a = _column(analysis_state, n)
    started = np.isfinite(start)
    run = end - start  # NaN if never started
    queue = np.where(started, start - sub, end - sub)
    gpu_time = np.where(started, gpu * np.nan_to_num(run), 0.0) if not started.all() else gpu * run
    if job_id is None:
        job_id = np.array([f"{c}-{i}" for c, i in zip(cluster_a, range(n))], dtype=object)
    elif not isinstance(job_id, pd.api.extensions.ExtensionArray):
        job_id = _column(job_id, n)

    def opt(v, dtype=np.float64):
        return np.full(n, np.nan) if v is None else _column(v, n, dtype)

    times = times or {}
    cols = {
        "cluster": cluster_a,
        "job_id": job_id,
        "user": _column(user, n),
        "type": _column(type, n),
        "state": state_a,
        "analysis_state": analysis_a,
        "gpu_num": gpu,
        "node_num": (np.maximum(1, -(-gpu // _GPUS_PER_NODE)) if node_num is None
                     else _column(node_num, n, np.int64)),
        "cpu_num": opt(cpu_num),
        "is_gpu": gpu > 0,
        "submit_time": times["submit_time"] if "submit_time" in times else _times(sub),
        "start_time": times["start_time"] if "start_time" in times else _times(start),
        "end_time": times["end_time"] if "end_time" in times else _times(end),
        "submit_s": sub, "start_s": start, "end_s": end,
        "started": started,
        "run_s": run,
        "queue_s": queue,
        "queue_censored": ~started,
        "run_censored": np.zeros(n, dtype=bool) if run_censored is None else _column(run_censored, n, bool),
        "gpu_time_s": gpu_time,
        "fail_time_s": opt(fail_time_s),
        "mem_per_pod_GB": opt(mem_per_pod_GB),
        "shared_mem_per_pod": opt(shared_mem_per_pod),
        "source_file": _column(source_file, n),
        "source_line": (np.arange(n, dtype=np.int64) + 2 if source_line is None
                        else _column(source_line, n, np.int64)),
    }
    # copy=False: one block per column, no consolidation copy of large arrays
    return pd.DataFrame({c: cols[c] for c in JOB_COLUMNS}, copy=False)
