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


def _num(x) -> float | None:
    x = float(x)
    return x if np.isfinite(x) else None


def _group_stats(g: pd.DataFrame, by: str, n_total: int, gpu_total: float, full: bool) -> dict:
    out = {}
    for key, grp in g.groupby(by, sort=True, observed=True):
        started = grp[grp["started"]]
        finished = _finished(started)
        row = {
            "jobs": int(len(grp)),
            "job_share": _num(len(grp) / n_total) if n_total else None,
            "gpu_time_share": _num(grp["gpu_time_s"].sum() / gpu_total) if gpu_total > 0 else None,
        }
        if full:
            row.update({
                "median_run_s": _num(finished["run_s"].median()) if len(finished) else None,
                "median_queue_s": _median(started["queue_s"]),
                "mean_gpus": _num(grp["gpu_num"].mean()),
                "gpu_time_s": _num(grp["gpu_time_s"].sum()),
            })
        out[str(key)] = row
    return out


def _median(x: pd.Series) -> float | None:
    """Median of the known values (None when there is none: e.g. every wait unknown)."""
    x = x.dropna()
    return _num(x.median()) if len(x) else None


def _finished(started: pd.DataFrame) -> pd.DataFrame:
    """Started jobs whose whole run time is known: not censored at extraction, not left-truncated."""
    m = np.ones(len(started), dtype=bool)
    for c in ("run_censored", "left_truncated"):
        if c in started:
            m &= ~started[c].to_numpy(dtype=bool)
    return started[m]


def _quantiles(x: pd.Series) -> dict:
    x = x.dropna()
    if len(x) == 0:
        return {}
    return {f"p{int(round(q * 100))}": _num(v) for q, v in zip(QUANTILES, np.quantile(x, QUANTILES))}


def describe(trace: Trace, *, gpu_edges=DEFAULT_GPU_EDGES) -> dict:
    """The ``describe --json`` document of a trace (see the module docstring for every field)."""
    doc: dict = {
        "files": [f.as_dict() for f in trace.files],
        "rejected": {"total": int(len(trace.rejected)), "by_reason": trace.rejected_by_reason()},
        "inconsistencies": {k: int(v) for k, v in trace.inconsistencies.items()},
        "value_problems": {c: {k: int(v) for k, v in d.items()}
                           for c, d in getattr(trace, "value_problems", {}).items()},
        "warnings": list(trace.warnings),
        "extracted_at_utc": (None if getattr(trace, "extracted_at_s", None) is None else
                             pd.Timestamp(trace.extracted_at_s, unit="s", tz="UTC").isoformat()),
        "clusters": {},
    }
    # only the columns read below: every group and filter then copies these 11, not all of them
    jobs = trace.jobs
    jobs = jobs[[c for c in _USED if c in jobs.columns]]
    for cluster, cj in jobs.groupby("cluster", sort=True):
        g = cj[cj["is_gpu"]].copy()
        c = cj[~cj["is_gpu"]]
        n, total = len(g), float(g["gpu_time_s"].sum())
        g["gpu_bucket"] = pd.Categorical(gpu_bucket(g["gpu_num"].to_numpy(), gpu_edges),
                                         categories=bucket_labels(gpu_edges))
        started = g[g["started"]]
        rc = cj["run_censored"].to_numpy(dtype=bool) if "run_censored" in cj else np.zeros(len(cj), bool)
        finished = _finished(started)
        lt = cj["left_truncated"].to_numpy(dtype=bool) if "left_truncated" in cj else np.zeros(len(cj), bool)
        unknown_wait = cj["started"].to_numpy(dtype=bool) & np.isnan(cj["queue_s"].to_numpy(dtype=float))
        doc["clusters"][str(cluster)] = {
            "jobs": int(len(cj)),
            "gpu_jobs": int(n),
            "cpu_jobs": int(len(c)),
            "unfinished": {"running": int(rc.sum()), "pending": int((cj["state"] == "PENDING").sum())},
            "observation": {"left_truncated": int(lt.sum()), "unknown_waits": int(unknown_wait.sum())},
            "gpu_time_s": _num(total),
            "median_run_s": _num(finished["run_s"].median()) if len(finished) else None,
            "median_queue_s": _median(started["queue_s"]),
            "mean_gpus": _num(g["gpu_num"].mean()) if n else None,
            "run_s_quantiles": _quantiles(finished["run_s"]),
            "queue_s_quantiles": _quantiles(started["queue_s"]),
            "by_type": _group_stats(g, "type", n, total, True),
            "by_state": _group_stats(g, "state", n, total, False),
            "by_analysis_state": _group_stats(g, "analysis_state", n, total, False),
            "by_gpu_bucket": _group_stats(g, "gpu_bucket", n, total, True),
            "cpu": {
                "jobs": int(len(c)),
                "median_run_s": _num(c.loc[c["started"], "run_s"].median()) if c["started"].any() else None,
                "median_queue_s": _median(c.loc[c["started"], "queue_s"]),
                "by_analysis_state": {str(k): int(v) for k, v in c["analysis_state"].value_counts().items()},
            },
        }
    return doc
