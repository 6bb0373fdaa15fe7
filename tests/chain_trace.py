"""A synthetic trace with known restart chains whose users also resubmit completed configurations
(tests of :mod:`acmemodel.features.chains`' inference).

The behaviour follows what issue 35 measured on a held-out trace: a failed Pretrain job is restarted
with the same user and GPU count after a gap of 43 s to 1.6 h (log-normal, median 9.5 min), and users
also resubmit configurations that COMPLETED — some users often, most rarely, after a gap of minutes to
a day (they look at the result first: log-normal, median 1.5 h). Fresh submissions of every
user arrive as a Poisson process over the span; SFT and evaluation jobs of the same users add
other keys. The truth is the ``true_prev`` column: the row position of the attempt each row restarts
(−1 for fresh submissions and resubmissions of completed work).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

RESTART_GAP_MEDIAN_S = 570.0
RESTART_GAP_RANGE_S = (43.0, 5760.0)
RESUBMIT_GAP_MEDIAN_S = 5400.0


def chain_trace(days: float = 60.0, users: int = 80, seed: int = 0, *,
                resubmit_median_s: float = RESUBMIT_GAP_MEDIAN_S, resubmit_sigma: float = 1.3,
                pretrain_per_key: float = 6.0, p_fail_pretrain: float = 0.35,
                resubmit_beta: tuple[float, float] = (0.6, 1.6)) -> pd.DataFrame:
    """Jobs (``cluster, job_id, user, type, gpu_num, state, analysis_state, submit_s, start_s, end_s,
    run_s, queue_s, true_prev``) sorted by submission; see the module docstring. The keywords vary
    the behaviour for robustness studies: the resubmission gap law of completed configurations
    (log-normal, median and sigma of its log), fresh Pretrain submissions per key (Poisson mean over
    the span), the Pretrain failure probability and the Beta law of each user's resubmission
    probability."""
    rng = np.random.default_rng(seed)
    span = days * 86400.0
    rows = []  # (user, type, gpus, submit, run, queue, state, prev)

    def attempt(u, ty, g, t, prev, p_fail, p_restart, p_resub, depth=0):
        q = float(rng.exponential(120.0 if ty != "Pretrain" else 600.0))
        run = float(rng.lognormal(np.log(7200.0 if ty == "Pretrain" else 1800.0), 1.0))
        failed = rng.random() < p_fail
        state = str(rng.choice(["FAILED", "FAILED", "NODE_FAIL", "TIMEOUT"])) if failed else "COMPLETED"
        if failed:
            run *= float(rng.uniform(0.05, 1.0))
        i = len(rows)
        rows.append((u, ty, g, t, run, q, state, prev))
        end = t + q + run
        if depth >= 8:
            return
        if failed and rng.random() < p_restart:
            lo, hi = RESTART_GAP_RANGE_S
            gap = float(np.clip(rng.lognormal(np.log(RESTART_GAP_MEDIAN_S), 1.0), lo, hi))
            if end + gap < span:
                attempt(u, ty, g, end + gap, i, p_fail, p_restart, p_resub, depth + 1)
        elif not failed and rng.random() < p_resub:
            gap = float(rng.lognormal(np.log(resubmit_median_s), resubmit_sigma))
            if end + gap < span:  # a new logical job of the same configuration: no chain link
                attempt(u, ty, g, end + gap, -1, p_fail, p_restart, p_resub, depth + 1)

    sizes = np.array([8, 16, 32, 64, 128, 256, 512, 1024])
    for u in range(users):
        name = f"u{u:03d}"
        # most users rarely resubmit a completed configuration, a few do it often
        p_resub = float(rng.beta(*resubmit_beta))
        for g in rng.choice(sizes, size=int(rng.integers(1, 4)), replace=False):
            n = int(rng.poisson(pretrain_per_key))
            for t in np.sort(rng.uniform(0, span, n)):
                attempt(name, "Pretrain", int(g), float(t), -1, p_fail_pretrain, 0.85, p_resub)
        for t in np.sort(rng.uniform(0, span, int(rng.poisson(10)))):
            attempt(name, "SFT", int(rng.choice([1, 4, 8])), float(t), -1, 0.25, 0.6, p_resub)
        for t in np.sort(rng.uniform(0, span, int(rng.poisson(30)))):
            attempt(name, "Eval", 1, float(t), -1, 0.1, 0.3, p_resub)
    df = pd.DataFrame(rows, columns=["user", "type", "gpu_num", "submit_s", "run_s", "queue_s", "state",
                                     "true_prev"])
    df["cluster"] = "Seren"
    df["analysis_state"] = df["state"].replace({"TIMEOUT": "FAILED", "NODE_FAIL": "FAILED"})
    df["start_s"] = df["submit_s"] + df["queue_s"]
    df["end_s"] = df["start_s"] + df["run_s"]
    return _in_submit_order(df)


def link_scores(true_prev: np.ndarray, inferred_prev: np.ndarray) -> tuple[float, float, int, int]:
    """(precision, recall, true links, inferred links) of inferred against true previous attempts."""
    t, i = np.asarray(true_prev), np.asarray(inferred_prev)
    tp = int(((t == i) & (t >= 0)).sum())
    n_t, n_i = int((t >= 0).sum()), int((i >= 0).sum())
    return tp / max(n_i, 1), tp / max(n_t, 1), n_t, n_i


def inject_restarts(jobs: pd.DataFrame, seed: int = 0, p_fail: float = 0.15, p_restart: float = 0.85
                    ) -> pd.DataFrame:
    """A real log's jobs (``cluster, user, type, gpu_num, submit_s, run_s``) with failures injected at
    random: each job (and each restart) fails with ``p_fail`` (its run cut to 5-100 %) and a failed
    one is restarted with ``p_restart`` after the restart gap law of :func:`chain_trace`, same key.
    The log's own users then submit after a job ends whatever its outcome (the limit of the chain
    inference). Columns as :func:`chain_trace`'s, ``true_prev`` the truth."""
    rng = np.random.default_rng(seed)
    rows = []
    lo, hi = RESTART_GAP_RANGE_S
    for r in jobs[["cluster", "user", "type", "gpu_num", "submit_s", "run_s"]].itertuples(index=False):
        t, prev = float(r.submit_s), -1
        for _ in range(9):
            run = float(r.run_s)
            failed = rng.random() < p_fail
            if failed:
                run *= float(rng.uniform(0.05, 1.0))
            rows.append((r.cluster, r.user, r.type, r.gpu_num, t, run, "FAILED" if failed else "COMPLETED", prev))
            if not (failed and rng.random() < p_restart):
                break
            prev = len(rows) - 1
            t = t + run + float(np.clip(rng.lognormal(np.log(RESTART_GAP_MEDIAN_S), 1.0), lo, hi))
    df = pd.DataFrame(rows, columns=["cluster", "user", "type", "gpu_num", "submit_s", "run_s",
                                     "analysis_state", "true_prev"])
    df["state"] = df["analysis_state"]
    df["queue_s"] = 0.0
    df["start_s"] = df["submit_s"]
    df["end_s"] = df["submit_s"] + df["run_s"]
    return _in_submit_order(df)


def _in_submit_order(df: pd.DataFrame) -> pd.DataFrame:
    """The rows in submission order (stable), ``true_prev`` renumbered to the new positions, job ids ``j0…``."""
    order = np.argsort(df["submit_s"].to_numpy(), kind="stable")
    pos = np.empty(len(df), dtype=np.int64)
    pos[order] = np.arange(len(df))
    df = df.iloc[order].reset_index(drop=True)
    tp = df["true_prev"].to_numpy()
    df["true_prev"] = np.where(tp >= 0, pos[np.maximum(tp, 0)], -1)
    df["job_id"] = [f"j{k}" for k in range(len(df))]
    return df
