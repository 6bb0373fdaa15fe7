"""Restart chains and evaluation batches.

Restart chains
--------------
A FAILED job *f* (analysis state, so TIMEOUT and NODE_FAIL too) of user *u*, type *y* and *g* GPUs on
cluster *c* is followed by its *next attempt* *n*: the first job of the same (c, u, y, g) submitted at
or after f's end, provided ``submit_n − end_f ≤ window_s`` (default 24 h). Each job is the next attempt
of at most one failure (the latest-ending candidate wins). A ``restart_of`` column (the job id of the
previous attempt, from imported traces: SWF preceding-job links, Philly attempts, Slurm requeues)
gives explicit links, which replace the rule's for the jobs it names. Linked jobs form a chain:

* ``chain_id`` — id of the logical job (every job has one; a job with no links is a chain of one);
* ``attempt`` — 1 for the first attempt, k for the k-th;
* ``prev_index`` / ``next_index`` — row labels of the neighbouring attempts (−1 if none);
* ``restart_gap_s`` — on an attempt k ≥ 2: ``submit_k − end_{k−1}`` seconds (the time to restart,
  until resubmission); NaN on first attempts;
* ``next_restart_gap_s``, ``next_queue_s`` — the same gap and the next attempt's queueing delay, on
  the failed row that was restarted (NaN otherwise). Time to restart = gap + queue.

Batches
-------
Jobs of one (cluster, user, type) whose submissions follow each other by at most ``gap_s`` (default
60 s) form a batch (an evaluation burst after a checkpoint): ``batch_id`` and ``batch_size``.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

DEFAULT_WINDOW_S = 24 * 3600.0
DEFAULT_BATCH_GAP_S = 60.0


def _codes(jobs: pd.DataFrame, cols) -> np.ndarray:
    return jobs.groupby(list(cols), sort=False, observed=True).ngroup().to_numpy()


def restart_chains(jobs: pd.DataFrame, window_s: float = DEFAULT_WINDOW_S) -> pd.DataFrame:
    """Chain columns of the module docstring, aligned on ``jobs.index``."""
    if window_s <= 0:
        raise ValueError(f"window_s must be > 0, got {window_s!r}")
    n = len(jobs)
    g = _codes(jobs, ["cluster", "user", "type", "gpu_num"]) if n else np.zeros(0, int)
    sub = jobs["submit_s"].to_numpy(dtype=float)
    end = jobs["end_s"].to_numpy(dtype=float)
    failed = (jobs["analysis_state"] == "FAILED").to_numpy()
    nxt = np.full(n, -1, dtype=np.int64)
    if n and failed.any():
        t0 = np.nanmin(np.r_[sub, end])
        span = np.nanmax(np.r_[sub, end]) - t0 + window_s + 1e6
        order = np.lexsort((sub, g))
        skey = g[order].astype(float) * span + (sub[order] - t0)
        f_idx = np.flatnonzero(failed)
        fkey = g[f_idx].astype(float) * span + (end[f_idx] - t0)
        pos = np.searchsorted(skey, fkey, side="left")
        valid = pos < n
        cand = np.full(len(f_idx), -1, dtype=np.int64)
        cand[valid] = order[pos[valid]]
        ok = valid & (g[np.maximum(cand, 0)] == g[f_idx]) & (cand != f_idx)
        ok &= (sub[np.maximum(cand, 0)] - end[f_idx]) <= window_s
        f_ok, c_ok = f_idx[ok], cand[ok]
        # each candidate restarts at most one failure: keep the latest-ending failure
        o = np.lexsort((-end[f_ok], c_ok))
        f_ok, c_ok = f_ok[o], c_ok[o]
        first = np.ones(len(c_ok), dtype=bool)
        first[1:] = c_ok[1:] != c_ok[:-1]
        nxt[f_ok[first]] = c_ok[first]
    if n and "restart_of" in jobs.columns:  # explicit links of imported traces replace the rule
        ro = jobs["restart_of"].astype(object)
        has = (ro.notna() & (ro.astype(str).str.len() > 0)).to_numpy(dtype=bool)
        if has.any():
            cl = jobs["cluster"].astype(str).to_numpy(object)
            key = pd.Index(cl + "\x1f" + jobs["job_id"].astype(str).to_numpy(object))
            rows = np.flatnonzero(has)
            tgt = key.get_indexer(pd.Index(cl[rows] + "\x1f" + ro.to_numpy(object)[rows].astype(str)))
            ok = (tgt >= 0) & (tgt != rows)
            src, dst = tgt[ok], rows[ok]
            nxt[np.isin(nxt, dst)] = -1
            nxt[src] = dst
    prev = np.full(n, -1, dtype=np.int64)
    has_next = nxt >= 0
    prev[nxt[has_next]] = np.flatnonzero(has_next)

    # attempt numbers and chain heads: walk the prev links one step per pass (passes = longest chain)
    head = np.arange(n, dtype=np.int64)
    attempt = np.ones(n, dtype=np.int64)
    p = prev.copy()
    while True:
        active = p >= 0
        if not active.any():
            break
        idx = np.flatnonzero(active)
        attempt[idx] += 1  # one more predecessor
        head[idx] = p[idx]
        p_new = p.copy()
        p_new[idx] = prev[p[idx]]
        p = p_new
    # head now holds the first attempt of each chain; renumber densely
    _, chain_id = np.unique(head, return_inverse=True)

    labels = jobs.index.to_numpy()
    restart_gap = np.full(n, np.nan)
    hp = prev >= 0
    restart_gap[hp] = sub[hp] - end[prev[hp]]
    next_gap = np.full(n, np.nan)
    next_queue = np.full(n, np.nan)
    next_gap[has_next] = sub[nxt[has_next]] - end[has_next]
    q = jobs["queue_s"].to_numpy(dtype=float)
    next_queue[has_next] = q[nxt[has_next]]
    return pd.DataFrame({
        "chain_id": chain_id.astype(np.int64),
        "attempt": attempt,
        "prev_index": np.where(hp, labels[np.maximum(prev, 0)], -1) if n else prev,
        "restart_gap_s": restart_gap,
        "next_index": np.where(has_next, labels[np.maximum(nxt, 0)], -1) if n else nxt,
        "next_restart_gap_s": next_gap,
        "next_queue_s": next_queue,
    }, index=jobs.index)


def batches(jobs: pd.DataFrame, gap_s: float = DEFAULT_BATCH_GAP_S) -> pd.DataFrame:
    """``batch_id`` and ``batch_size`` (see module docstring), aligned on ``jobs.index``."""
    if gap_s < 0:
        raise ValueError(f"gap_s must be >= 0, got {gap_s!r}")
    n = len(jobs)
    if n == 0:
        return pd.DataFrame({"batch_id": np.zeros(0, np.int64), "batch_size": np.zeros(0, np.int64)},
                            index=jobs.index)
    g = _codes(jobs, ["cluster", "user", "type"])
    sub = jobs["submit_s"].to_numpy(dtype=float)
    order = np.lexsort((sub, g))
    gs, ss = g[order], sub[order]
    new = np.r_[True, (gs[1:] != gs[:-1]) | (np.diff(ss) > gap_s)]
    bid_sorted = np.cumsum(new) - 1
    size = np.bincount(bid_sorted)
    batch_id = np.empty(n, dtype=np.int64)
    batch_id[order] = bid_sorted
    return pd.DataFrame({"batch_id": batch_id, "batch_size": size[batch_id]}, index=jobs.index)
