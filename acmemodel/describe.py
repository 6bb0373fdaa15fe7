"""The paper's characterisation tables for any trace (``acmemodel describe``).

Per cluster, over GPU jobs (``gpu_num > 0``; CPU jobs are counted separately):

* ``jobs`` — count; ``job_share`` = jobs of the group / GPU jobs of the cluster;
* ``gpu_time_share`` = Σ gpu_num × run_s of the group / the cluster's total, run time from the
  timestamps (``end − start``), never the file's own ``duration`` column;
* ``median_run_s`` — median run time (s) of the group's jobs that started;
* ``median_queue_s`` — median queueing delay ``start − submit`` (s) of the group's jobs that started
  (waits of jobs cancelled while queued are censored and left out of the median);
* ``mean_gpus`` — mean requested GPUs.

``by_state`` uses the original final state (TIMEOUT and NODE_FAIL separately);
``by_analysis_state`` merges them into FAILED as the paper's failure rates do.

Jobs unfinished when the trace was extracted are counted in ``unfinished`` (``running``: RUNNING or
SUSPENDED, run time censored; ``pending``: never started, wait censored; ``extracted_at_utc`` the
censoring time). Their censored run times are left out of the run-time medians and quantiles (which
are over finished jobs), their censored waits out of the queue statistics.

``observation`` counts the jobs observed only in part: ``left_truncated`` (existed before the trace
began, e.g. instances without a creation time: their run time is known only from the trace start, so
they are left out of the run-time medians and quantiles, and their wait is unknown) and
``unknown_waits`` (started jobs whose wait the source does not record, e.g. SWF wait −1: left out of
the queue statistics, never counted as 0).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from acmemodel.features.keys import DEFAULT_GPU_EDGES, bucket_labels, gpu_bucket
from acmemodel.trace import Trace

QUANTILES = (0.1, 0.25, 0.5, 0.75, 0.9, 0.99)


#: the job-table columns :func:`describe` reads
_USED = ("cluster", "type", "state", "analysis_state", "gpu_num", "gpu_time_s", "is_gpu", "started",
         "run_censored", "run_s", "queue_s", "left_truncated")
#: the string columns of :data:`_USED` (read as codes into their sorted values)
_STRING_COLUMNS = ("cluster", "type", "state", "analysis_state")


def _num(x) -> float | None:
    x = float(x)
    return x if np.isfinite(x) else None


def _median(x: np.ndarray) -> float | None:
    """Median of the non-missing values (pandas' ``Series.median``), None for no rows."""
    return _num(pd.Series(x).median()) if len(x) else None


def _group_stats(cols: dict, codes: np.ndarray, keys, n_total: int, gpu_total: float, full: bool) -> dict:
    """Per group (``codes`` into ``keys``; -1: no group) of the rows ``cols`` (column arrays): counts,
    shares and, with ``full``, medians and means. The rows are selected from the arrays group by group
    (no copy of a frame)."""
    out = {}
    started = cols["started"]
    finished = cols["finished"]
    for k, key in enumerate(keys):
        m = codes == k
        n = int(m.sum())
        if n == 0:
            continue
        gt = pd.Series(cols["gpu_time_s"][m])
        row = {
            "jobs": n,
            "job_share": _num(n / n_total) if n_total else None,
            "gpu_time_share": _num(gt.sum() / gpu_total) if gpu_total > 0 else None,
        }
        if full:
            row.update({
                "median_run_s": _median(cols["run_s"][m & finished]),
                "median_queue_s": _median(cols["queue_s"][m & started]),
                "mean_gpus": _num(pd.Series(cols["gpu_num"][m]).mean()),
                "gpu_time_s": _num(gt.sum()),
            })
        out[str(key)] = row
    return out


def _by(codes: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(codes, sorted distinct keys) of the values present in a key column given as ``codes`` into the sorted
    ``labels`` (:func:`_strings`); missing keys: code -1, as groupby drops them."""
    codes = np.asarray(codes)
    uniq = np.unique(codes[codes >= 0])
    small = np.int8 if len(uniq) < 127 else np.int16 if len(uniq) < 32767 else np.int32 if len(uniq) < 2**31 - 1 \
        else np.int64  # (a code per job: the smallest type that holds them)
    remap = np.full(len(labels) + 1, -1, dtype=small)
    remap[uniq] = np.arange(len(uniq))
    return remap[codes], np.asarray(labels)[uniq]


def _strings(col) -> tuple[np.ndarray, np.ndarray]:
    """(codes, sorted labels) of a string column: a categorical's own codes when its categories are sorted
    (a streamed trace's, :func:`acmemodel.trace.stream.summarise_csv`), else ``pd.factorize(sort=True)``;
    missing values: code -1."""
    if isinstance(col.dtype, pd.CategoricalDtype):
        cats = col.cat.categories
        if cats.is_monotonic_increasing:
            return col.cat.codes.to_numpy(), np.asarray(cats, dtype=object)
    codes, keys = pd.factorize(col.to_numpy(), sort=True)
    return codes, np.asarray(keys, dtype=object)


def _bucket_codes(gpus: np.ndarray, edges, names) -> np.ndarray:
    """Code of each job's GPU bucket in ``names`` (:func:`gpu_bucket` of each distinct GPU count, then looked
    up: no string per job)."""
    uniq = np.sort(pd.unique(np.asarray(gpus)))
    if not len(uniq):
        return np.zeros(0, dtype=np.int8)
    code_of = np.asarray(pd.Categorical(gpu_bucket(uniq, edges), categories=names).codes)
    return code_of[np.searchsorted(uniq, gpus)]


def _values(codes: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """The strings of ``codes`` (None where missing)."""
    return np.append(np.asarray(labels, dtype=object), None)[codes]


def _quantiles(x) -> dict:
    x = np.asarray(x, dtype=float)
    x = x[~np.isnan(x)]  # (a copy of its own: np.quantile may partition it in place)
    if len(x) == 0:
        return {}
    return {f"p{int(round(q * 100))}": _num(v)
            for q, v in zip(QUANTILES, np.quantile(x, QUANTILES, overwrite_input=True))}


def describe(trace: Trace, *, gpu_edges=DEFAULT_GPU_EDGES) -> dict:
    """The ``describe --json`` document of a trace (see the module docstring for every field)."""
    by_reason = trace.rejected_by_reason()
    doc: dict = {
        "files": [f.as_dict() for f in trace.files],
        "rejected": {"total": int(trace.n_rejected if hasattr(trace, "n_rejected") else len(trace.rejected)),
                     "by_reason": by_reason},
        "inconsistencies": {k: int(v) for k, v in trace.inconsistencies.items()},
        "value_problems": {c: {k: int(v) for k, v in d.items()}
                           for c, d in getattr(trace, "value_problems", {}).items()},
        "warnings": list(trace.warnings),
        "extracted_at_utc": (None if getattr(trace, "extracted_at_s", None) is None else
                             pd.Timestamp(trace.extracted_at_s, unit="s", tz="UTC").isoformat()),
        "clusters": {},
    }
    # The columns are read as arrays (no copy of the job table), the string columns as codes into their
    # sorted values, and every group is a mask over them: the peak memory is the trace plus a few arrays of
    # one column each.
    jobs = trace.jobs
    col, labels = {}, {}
    for c in _USED:
        if c not in jobs.columns:
            continue
        if c in _STRING_COLUMNS:
            col[c], labels[c] = _strings(jobs[c])
        else:
            col[c] = jobs[c].to_numpy()
    cl_codes, clusters = _by(col["cluster"], labels["cluster"])
    bucket_names = bucket_labels(gpu_edges)
    pending = int(np.flatnonzero(labels["state"] == "PENDING")[0]) if (labels["state"] == "PENDING").any() else -2
    for ci, cluster in enumerate(clusters):
        in_c = cl_codes == ci
        whole = bool(in_c.all())

        def pick(a, mask):
            return a if mask is None else a[mask]

        cmask = None if whole else in_c
        is_gpu = np.asarray(pick(col["is_gpu"], cmask), dtype=bool)
        started_c = np.asarray(pick(col["started"], cmask), dtype=bool)
        rc = (np.asarray(pick(col["run_censored"], cmask), dtype=bool) if "run_censored" in col
              else np.zeros(len(is_gpu), bool))
        # begun before the trace: the run time is known only from the trace start (not a whole run)
        lt = (np.asarray(pick(col["left_truncated"], cmask), dtype=bool) if "left_truncated" in col
              else np.zeros(len(is_gpu), bool))
        unknown_wait = started_c & np.isnan(np.asarray(pick(col["queue_s"], cmask), dtype=float))
        gmask = np.flatnonzero(in_c)[is_gpu] if not whole else is_gpu
        g = {c: col[c][gmask] for c in ("gpu_num", "gpu_time_s", "run_s", "queue_s", "type", "state",
                                         "analysis_state")}
        g["started"] = started_c[is_gpu]
        g["finished"] = g["started"] & ~rc[is_gpu] & ~lt[is_gpu]
        n = int(is_gpu.sum())
        total = float(pd.Series(g["gpu_time_s"]).sum())
        bucket = _bucket_codes(g["gpu_num"], gpu_edges, bucket_names)
        c_run = pick(col["run_s"], cmask)[~is_gpu]
        c_queue = pick(col["queue_s"], cmask)[~is_gpu]
        c_started = started_c[~is_gpu]
        state_c = pick(col["state"], cmask)
        doc["clusters"][str(cluster)] = {
            "jobs": len(is_gpu),
            "gpu_jobs": n,
            "cpu_jobs": int(len(is_gpu) - n),
            "unfinished": {"running": int(rc.sum()), "pending": int((state_c == pending).sum())},
            "observation": {"left_truncated": int(lt.sum()), "unknown_waits": int(unknown_wait.sum())},
            "gpu_time_s": _num(total),
            "median_run_s": _median(g["run_s"][g["finished"]]),
            "median_queue_s": _median(g["queue_s"][g["started"]]),
            "mean_gpus": _num(pd.Series(g["gpu_num"]).mean()) if n else None,
            "run_s_quantiles": _quantiles(g["run_s"][g["finished"]]),
            "queue_s_quantiles": _quantiles(g["queue_s"][g["started"]]),
            "by_type": _group_stats(g, *_by(g["type"], labels["type"]), n, total, True),
            "by_state": _group_stats(g, *_by(g["state"], labels["state"]), n, total, False),
            "by_analysis_state": _group_stats(g, *_by(g["analysis_state"], labels["analysis_state"]), n, total,
                                              False),
            "by_gpu_bucket": _group_stats(g, bucket, bucket_names, n, total, True),
            "cpu": {
                "jobs": int(len(is_gpu) - n),
                "median_run_s": _median(c_run[c_started & ~lt[~is_gpu]]) if c_started.any() else None,
                "median_queue_s": _median(c_queue[c_started]) if c_started.any() else None,
                "by_analysis_state": {str(k): int(v) for k, v in
                                      pd.Series(_values(pick(col["analysis_state"], cmask)[~is_gpu],
                                                        labels["analysis_state"]))
                                      .value_counts().items()},
            },
        }
    return doc
