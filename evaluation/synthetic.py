"""Synthetic jobs DataFrames with the Trace contract columns (tests and benchmarks only).

:func:`synthetic_jobs` draws ``n`` jobs whose structure mimics AcmeTrace qualitatively — evaluation
jobs of seconds to minutes, pretraining jobs of hours, about half of evaluation jobs starting within
a second, state depending on the type, users with their own run-time scale — from *known*
distributions, so that models can be checked against the truth. It is not a calibrated workload
model (use ``acmemodel synth`` for that).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from acmemodel.clusters import GPUS_PER_NODE
from acmemodel.trace.jobs import jobs_from_times

__all__ = ["synthetic_jobs", "SYNTH_TYPES"]

#: type → (share of GPU jobs, median run s of COMPLETED, log-sd, P(FAILED), P(CANCELLED),
#:         P(immediate start), median wait s of the others, GPU choices)
SYNTH_TYPES = {
    "Eval": (0.60, 90.0, 1.2, 0.10, 0.08, 0.50, 300.0, (1, 1, 1, 2, 4, 8)),
    "Pretrain": (0.05, 6 * 3600.0, 1.5, 0.30, 0.25, 0.10, 1800.0, (64, 128, 256, 512, 1024)),
    "SFT": (0.10, 1800.0, 1.3, 0.20, 0.15, 0.20, 600.0, (8, 16, 32, 64)),
    "Debug": (0.15, 120.0, 1.5, 0.30, 0.30, 0.40, 60.0, (1, 2, 8)),
    "MLLM": (0.05, 3600.0, 1.6, 0.25, 0.20, 0.20, 900.0, (8, 16, 64)),
    "Other": (0.05, 300.0, 2.0, 0.20, 0.20, 0.30, 300.0, (1, 8)),
}


def synthetic_jobs(n: int = 10000, seed: int = 0, *, days: float = 180.0, n_users: int = 200,
                   cpu_fraction: float = 0.1, zero_run_fraction: float = 0.01,
                   queue_cancel_fraction: float = 0.03, clusters=("Seren", "Kalos")) -> pd.DataFrame:
    """``n`` synthetic jobs (contract columns of :mod:`acmemodel.trace`), sorted by submit time.

    Run time of a started job: lognormal with the type's median (×0.2 for FAILED, ×0.5 for
    CANCELLED) times a per-user factor ``exp(N(0, 0.5²))``, plus ``zero_run_fraction`` exact-zero
    runs. Wait: 0 s with the type's immediate-start probability, else 1 + lognormal(median, sd 1.5).
    A ``queue_cancel_fraction`` of jobs is cancelled while queued at a uniform fraction of its
    wait (right-censored ``queue_s``, ``queue_censored`` True, never started).
    """
    rng = np.random.default_rng(seed)
    n = int(n)
    names = list(SYNTH_TYPES)
    share = np.array([SYNTH_TYPES[t][0] for t in names])
    tidx = rng.choice(len(names), size=n, p=share / share.sum())
    typ = np.array(names, dtype=object)[tidx]
    cluster = np.array(clusters, dtype=object)[rng.integers(0, len(clusters), n)]
    user_id = rng.integers(0, n_users, n)
    user_factor = np.exp(rng.normal(0, 0.5, n_users))[user_id]
    med = np.array([SYNTH_TYPES[t][1] for t in names])[tidx]
    lsd = np.array([SYNTH_TYPES[t][2] for t in names])[tidx]
    pf = np.array([SYNTH_TYPES[t][3] for t in names])[tidx]
    pc = np.array([SYNTH_TYPES[t][4] for t in names])[tidx]
    pim = np.array([SYNTH_TYPES[t][5] for t in names])[tidx]
    wmed = np.array([SYNTH_TYPES[t][6] for t in names])[tidx]
    gpus = np.empty(n, dtype=np.int64)
    for i, t in enumerate(names):
        m = tidx == i
        gpus[m] = rng.choice(np.array(SYNTH_TYPES[t][7]), size=int(m.sum()))
    gpus[rng.random(n) < cpu_fraction] = 0
    u = rng.random(n)
    state = np.where(u < pf, "FAILED", np.where(u < pf + pc, "CANCELLED", "COMPLETED")).astype(object)
    orig = state.copy()
    r = rng.random(n)
    orig[(state == "FAILED") & (r < 0.05)] = "TIMEOUT"
    orig[(state == "FAILED") & (r > 0.98)] = "NODE_FAIL"
    smult = np.where(state == "FAILED", 0.2, np.where(state == "CANCELLED", 0.5, 1.0))
    run = np.exp(np.log(med * smult * user_factor) + lsd * rng.standard_normal(n))
    run = np.round(run)
    run[rng.random(n) < zero_run_fraction] = 0.0
    wait = np.where(rng.random(n) < pim, 0.0,
                    1.0 + np.round(np.exp(np.log(wmed) + 1.5 * rng.standard_normal(n))))
    qcancel = (rng.random(n) < queue_cancel_fraction) & (wait > 0)
    state[qcancel] = "CANCELLED"
    orig[qcancel] = "CANCELLED"
    submit = 1.6775e9 + np.sort(rng.random(n)) * days * 86400.0
    submit = np.round(submit)
    started = ~qcancel
    qs = np.where(qcancel, np.floor(wait * rng.random(n)), wait)
    start = np.where(started, submit + wait, np.nan)
    end = np.where(started, start + run, submit + qs)
    node = np.maximum(1, np.ceil(gpus / GPUS_PER_NODE)).astype(np.int64)
    return jobs_from_times(
        cluster=cluster.astype(str).astype(object), job_id=[f"j{i}" for i in range(n)],
        user=np.char.add("u", user_id.astype(str)).astype(object), type=typ.astype(str).astype(object),
        state=orig.astype(str).astype(object), analysis_state=state.astype(str).astype(object),
        gpu_num=gpus, node_num=node, cpu_num=(node * 16).astype(float),
        submit_s=submit, start_s=start, end_s=end, source_file="synthetic")
