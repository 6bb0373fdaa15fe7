"""User history covariates, strictly from the past (no leakage).

For job *j* of user *u* and type *y* submitted at time s_j, over the user's other jobs *i* of the same
cluster and type:

* ``user_prior_jobs`` = #{i : s_i < s_j} — earlier submissions (known at submission);
* ``user_prior_median_run_s`` = median of run_s_i over {i started, e_i < s_j} — only jobs that had
  already *ended* when j was submitted (NaN if none);
* ``user_prior_fail_frac`` = #{i : e_i < s_j, i FAILED} / #{i : e_i < s_j} (NaN if none).

A job whose own end lies after s_j can never leak into j's covariates.
"""
from __future__ import annotations

import heapq

import numpy as np
import pandas as pd


def _group_codes(jobs: pd.DataFrame, cols) -> np.ndarray:
    return jobs.groupby(list(cols), sort=False, observed=True).ngroup().to_numpy()


def user_history(jobs: pd.DataFrame) -> pd.DataFrame:
    """The three user-history covariates (see module docstring), aligned on ``jobs.index``."""
    cnt, med, fail = prior_history(jobs, ["cluster", "user", "type"])
    return pd.DataFrame({"user_prior_jobs": cnt, "user_prior_median_run_s": med,
                         "user_prior_fail_frac": fail}, index=jobs.index)


def prior_history(jobs: pd.DataFrame, group_cols) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For each job, over the other jobs of its group (``group_cols``): earlier submissions, the
    median run time of the started jobs that ended before its submission and their failed share
    (the definitions of the module docstring with (cluster, user, type) replaced by the group)."""
    n = len(jobs)
    out_cnt = np.zeros(n, dtype=np.int64)
    out_med = np.full(n, np.nan)
    out_fail = np.full(n, np.nan)
    if n == 0:
        return out_cnt, out_med, out_fail
    g = _group_codes(jobs, list(group_cols))
    sub = jobs["submit_s"].to_numpy(dtype=float)
    end = jobs["end_s"].to_numpy(dtype=float)
    # a job without an end time has not ended before any submission: place it after all of them (a NaN
    # inside the per-group sort keys would break the binary searches below)
    end = np.where(np.isnan(end), np.nanmax(np.r_[sub, end]) + 1.0, end)
    run = jobs["run_s"].to_numpy(dtype=float)
    if "run_censored" in jobs.columns:  # (a censored run time is no observed run time)
        run = np.where(jobs["run_censored"].fillna(False).to_numpy(dtype=bool), np.nan, run)
    failed = (jobs["analysis_state"] == "FAILED").to_numpy()

    # earlier submissions: rank within group by submit time, ties share the smaller count
    order_s = np.lexsort((sub, g))
    gs, ss = g[order_s], sub[order_s]
    starts = np.r_[0, np.flatnonzero(np.diff(gs)) + 1]
    grp_start = np.repeat(starts, np.diff(np.r_[starts, n]))
    # position of the first job in the group with the same submit time (strictly earlier count)
    key = gs.astype(float) * (np.nanmax(ss) - np.nanmin(ss) + 1e6) + (ss - np.nanmin(ss))
    first_same = np.searchsorted(key, key, side="left")
    out_cnt[order_s] = first_same - grp_start

    # ended jobs sorted by end time per group; prefix counts / failures / running medians
    order_e = np.lexsort((end, g))
    ge, ee, re_, fe = g[order_e], end[order_e], run[order_e], failed[order_e]
    span = np.nanmax(np.r_[ee, ss]) - np.nanmin(np.r_[ee, ss]) + 1e6
    t0 = np.nanmin(np.r_[ee, ss])
    ekey = ge.astype(float) * span + (ee - t0)
    e_starts = np.searchsorted(ge, np.arange(g.max() + 1), side="left")
    cum_fail = np.r_[0, np.cumsum(fe)]
    # running median over started jobs in end order: prefix_med[k] = median of first k started runs
    started_e = ~np.isnan(re_)
    cum_started = np.r_[0, np.cumsum(started_e)]
    prefix_med = np.full(n + 1, np.nan)
    lo: list[float] = []  # max-heap (negated)
    hi: list[float] = []
    cur_g = -1
    for k in range(n):
        if ge[k] != cur_g:
            cur_g, lo, hi = ge[k], [], []
        if started_e[k]:
            x = re_[k]
            if lo and x > -lo[0]:
                heapq.heappush(hi, x)
            else:
                heapq.heappush(lo, -x)
            if len(lo) > len(hi) + 1:
                heapq.heappush(hi, -heapq.heappop(lo))
            elif len(hi) > len(lo):
                heapq.heappush(lo, -heapq.heappop(hi))
        prefix_med[k + 1] = (-lo[0] if len(lo) > len(hi) else (-lo[0] + hi[0]) / 2) if lo else np.nan
    # query: number of the group's jobs that ended strictly before each submission
    qkey = g.astype(float) * span + (sub - t0)
    pos = np.searchsorted(ekey, qkey, side="left")  # index in order_e of first end >= submit
    base = e_starts[g]
    k_ended = pos - base
    has = k_ended > 0
    out_fail[has] = (cum_fail[pos] - cum_fail[base])[has] / k_ended[has]
    # median: the prefix median at position pos is valid only within the group (prefix restarts per
    # group in the loop above), and only if some started job ended before
    n_started = cum_started[pos] - cum_started[base]
    ok = has & (n_started > 0)
    out_med[ok] = prefix_med[pos[ok]]
    return out_cnt, out_med, out_fail
