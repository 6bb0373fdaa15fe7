"""Split-conformal calibration of the p10–p90 interval of
:class:`~acmemodel.models.predictor.RuntimePredictor`, censoring-aware and online.

Scores (log scale ``y = ln(1 + run_s)``; each tail on its own, Romano, Patterson & Candès 2019): the
**upper** score of a job is ``y − hi`` (> 0: it ran past its upper bound ``hi``), the **lower** score
``lo − y`` (> 0: it ended before its lower bound ``lo``). The tail offset ``Q`` is the
⌈(n+1)·level⌉-th smallest of n scores (:func:`tail_offset`); ``[lo − Q_lo, hi + Q_hi]`` then misses
each tail of a new exchangeable job with probability ≤ 1 − level.

**Censoring: a job counts once its tail is decided.** A job still running when the window is read
(at time ``s``) has run ``e = s − start`` so far: its run time is only known to exceed ``e``. Scoring
only the jobs that ended would keep the short ones and drop the long ones (those still running), and
the upper offset would come out too small. Instead a job counts for a tail once the outcome of that
tail is known *whatever its run time*, i.e. from ``start + (e^bound − 1)`` on (its bound read in
seconds): by then it has either ended (score exact) or is still running past the bound (upper score
``≥ ln(1 + e) − hi > 0``, a known miss; lower score ``≤ lo − ln(1 + e) < 0``, a known hit) — the bound
stands in for the score. A job started more recently than its bound is left out of that tail whether
or not it ended, so the window is not tilted to short jobs (:func:`decided_scores`). Every
offset in the widening direction is then estimated on an unselected sample (a still-running job's
upper score is replaced by a lower bound, which can only understate an offset whose order statistic it
is — rare: it takes a job that is still running yet below the offset).

**Online recalibration** (adaptive / rolling conformal inference, Gibbs & Candès 2021;
:func:`online_offsets`): when the jobs being predicted carry their outcomes (a backtest, a replay),
each job's offsets are re-estimated at its submission time from the latest ``window`` jobs of the same
frame whose tail was decided before that moment (from :data:`ONLINE_MIN` of them on): what a scheduler
knows then. They replace the calibration offsets only on evidence that the interval no longer holds
its level: a window with more misses than a calibrated interval allows (:data:`DRIFT_Z` binomial SE;
widening) or fewer (:data:`NARROW_Z` SE, stricter; narrowing) — its module docstring.

:func:`ipcw_weights` gives the inverse-probability-of-censoring weights that the model card's IPCW
coverage uses.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

__all__ = ["tail_offset", "decided_scores", "online_offsets", "online_choice", "ipcw_weights", "IPCW_FLOOR",
           "ONLINE_MIN", "job_outcomes", "reading_time", "interval_around"]

#: fewest decided jobs for the online recalibration of a job's interval
ONLINE_MIN = 50
#: one-sided z of the online drift tests: a window's misses beyond ``n(1 − level) + z·sqrt(n·level·(1 − level))``;
#: a candidate point predictor better than the calibration windows' choice by z paired SE
DRIFT_Z = 2.0
#: one-sided z of the online narrowing test: a window's misses below ``n(1 − level) − z·sqrt(n·level·(1 − level))``
#: (stricter than :data:`DRIFT_Z`: a window of a bursty trace is a noisy estimate, and narrowing on
#: noise under-covers — at 2 SE the Alibaba DLRM log's later instances were covered 0.671, at 3 SE 0.786)
NARROW_Z = 3.0
#: smallest censoring survival used in :func:`ipcw_weights` (caps a weight at 20)
IPCW_FLOOR = 0.05


def tail_offset(score: np.ndarray, level: float) -> float:
    """Split-conformal offset of one tail: the ⌈(n+1)·level⌉-th smallest of ``score`` (capped at n);
    ``bound + Q`` then holds a new exchangeable job's score with probability >= ``level``."""
    score = np.asarray(score, float)
    n = score.size
    if n == 0:
        raise ValueError("conformal calibration needs at least one job")
    k = min(n, math.ceil((n + 1) * level))
    return float(np.partition(score, k - 1)[k - 1])


def decided_scores(at_s: float, start_s: np.ndarray, end_s: np.ndarray, ended: np.ndarray,
                   lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Lower and upper conformity scores, read at time ``at_s``, of the jobs whose tail is decided by
    then (module docstring): ``lo − y`` of the jobs started at least ``e^lo − 1`` seconds before
    ``at_s``, ``y − hi`` of those started at least ``e^hi − 1`` before. A job that has not ended by
    ``at_s`` (``ended`` False, or ``end_s > at_s``) scores its bound, ``lo − ln(1 + e)`` /
    ``ln(1 + e) − hi`` with ``e = at_s − start`` the seconds it has run. ``lo``, ``hi``: log of ``1 +``
    seconds."""
    start_s = np.asarray(start_s, float)
    end_s = np.asarray(end_s, float)
    done = np.asarray(ended, bool) & np.isfinite(end_s) & (end_s <= at_s)
    e = np.log1p(np.maximum(at_s - start_s, 0.0))
    v = np.where(done, np.log1p(np.maximum(end_s - start_s, 0.0)), e)
    out = []
    for bound, sign in ((np.asarray(lo, float), -1.0), (np.asarray(hi, float), 1.0)):
        keep = np.isfinite(start_s) & np.isfinite(bound) & (start_s + np.expm1(np.maximum(bound, 0.0)) <= at_s)
        out.append(sign * (v[keep] - bound[keep]))
    return out[0], out[1]


def online_offsets(start_s: np.ndarray, end_s: np.ndarray, ended: np.ndarray, lo: np.ndarray,
                   hi: np.ndarray, at_s: np.ndarray, window: int, lo_level: float, hi_level: float,
                   min_jobs: int = ONLINE_MIN) -> tuple[np.ndarray, np.ndarray]:
    """Online tail offsets (module docstring): for each reading time ``at_s[j]``, the split-conformal
    offsets (:func:`tail_offset`) of the latest ``window`` jobs whose lower / upper tail was decided by
    then (:func:`decided_scores`: started at least the bound before it).

    ``start_s``, ``end_s`` (s; ``end_s`` is read only where ``ended``), ``lo``, ``hi`` (the interval,
    log of ``1 +`` seconds) describe the jobs of the frame. Returns ``(q_lo, q_hi)`` per reading time:
    NaN where fewer than ``min_jobs`` jobs were decided."""
    start_s = np.asarray(start_s, float)
    ended = np.asarray(ended, bool)
    end_s = np.where(ended, np.asarray(end_s, float), np.inf)
    y = np.log1p(np.maximum(end_s - start_s, 0.0))
    at_s = np.asarray(at_s, float)
    at = np.where(np.isfinite(at_s), at_s, -np.inf)
    out = []
    for bound, sign, level in ((np.asarray(lo, float), -1.0, lo_level), (np.asarray(hi, float), 1.0, hi_level)):
        dec = start_s + np.expm1(np.maximum(bound, 0.0))     # decided whatever the run time
        idx = np.flatnonzero(np.isfinite(dec))
        idx = idx[np.argsort(dec[idx], kind="stable")]
        k = np.searchsorted(dec[idx], at, side="right")
        q = np.full(at_s.size, np.nan)
        for kk in np.unique(k[k >= min_jobs]):
            rows = idx[max(0, kk - int(window)):kk]
            here = k == kk
            # (reading times sharing a window: the still-running jobs' bounds read at the earliest one —
            # the elapsed time only grows, so each stays a bound on the score)
            t = at[here].min()
            v = np.where(end_s[rows] <= t, y[rows], np.log1p(np.maximum(t - start_s[rows], 0.0)))
            score = sign * (v - bound[rows])
            # recalibrate on evidence of drift only: more misses than the binomial noise of a
            # calibrated interval allows (DRIFT_Z standard errors: widen), or fewer (NARROW_Z: narrow)
            n = score.size
            excess = (np.sum(score > 0) - n * (1 - level)) / math.sqrt(n * level * (1 - level))
            if excess > DRIFT_Z or excess < -NARROW_Z:
                q[here] = tail_offset(score, level)
        out.append(q)
    return out[0], out[1]


def online_choice(start_s: np.ndarray, end_s: np.ndarray, ended: np.ndarray, points: np.ndarray,
                  at_s: np.ndarray, window: int, default: np.ndarray, min_jobs: int = ONLINE_MIN) -> np.ndarray:
    """The point predictor of each job chosen online: the column of ``points`` (jobs × candidates, log
    of ``1 +`` seconds) with the smallest mean absolute error over the latest ``window`` jobs whose
    errors were *decided* at the reading time ``at_s[j]`` — started at least the largest of their
    candidates' predictions before it (in seconds): by then a job has ended (``|y − p|`` exact) or is
    still running past every prediction, where ``|y − p| = y − p`` for every candidate and the unknown
    ``y`` is common to them all, so the elapsed log time stands in for it without changing the ranking.
    A job started more recently counts for none (whether it ended or not: no tilt to short jobs).
    The choice leaves ``default`` (the choice of the calibration windows; kept where fewer than
    ``min_jobs`` were decided) only for a candidate whose paired gain over it on the window exceeds
    ``DRIFT_Z`` standard errors (the best such one)."""
    start_s = np.asarray(start_s, float)
    ended = np.asarray(ended, bool)
    end_s = np.where(ended, np.asarray(end_s, float), np.inf)
    y = np.log1p(np.maximum(end_s - start_s, 0.0))
    P = np.asarray(points, float)
    at = np.where(np.isfinite(np.asarray(at_s, float)), np.asarray(at_s, float), -np.inf)
    dec = start_s + np.expm1(np.maximum(P.max(axis=1), 0.0))
    idx = np.flatnonzero(np.isfinite(dec))
    idx = idx[np.argsort(dec[idx], kind="stable")]
    k = np.searchsorted(dec[idx], at, side="right")
    out = np.asarray(default).copy()
    for kk in np.unique(k[k >= min_jobs]):
        rows = idx[max(0, kk - int(window)):kk]
        here = k == kk
        t = at[here].min()
        v = np.where(end_s[rows] <= t, y[rows], np.log1p(np.maximum(t - start_s[rows], 0.0)))
        err = np.abs(v[:, None] - P[rows])
        d = out[here][0]
        # leave the calibration windows' choice only for a candidate better by DRIFT_Z paired SE
        gain = err[:, [d]] - err
        se = gain.std(axis=0, ddof=1) / math.sqrt(len(rows)) if len(rows) > 1 else np.full(P.shape[1], np.inf)
        ok = gain.mean(axis=0) > DRIFT_Z * se
        if ok.any():
            out[here] = int(np.argmax(np.where(ok, gain.mean(axis=0), -np.inf)))
    return out


def ipcw_weights(ended, censored) -> np.ndarray:
    """Inverse-probability-of-censoring weights ``w_i = 1 / max(Ĝ(y_i−), IPCW_FLOOR)`` of the ended
    durations ``ended`` (s), with ``Ĝ(t) = P(C > t)`` the Kaplan–Meier survival of the censoring
    time estimated from all jobs (an ended job is a censored observation of its censoring time,
    a job still running an observed one: the reverse Kaplan–Meier). ``censored``: the durations
    (s) at extraction of the jobs still running."""
    from scipy import stats

    y = np.asarray(ended, dtype=float)
    c = np.asarray(censored, dtype=float)
    if c.size == 0 or y.size == 0:
        return np.ones(y.size)
    g = stats.ecdf(stats.CensoredData(uncensored=c, right=y)).sf
    # G(y−): the survival just before y (a censoring at exactly y does not remove job i from view)
    gy = g.evaluate(np.nextafter(y, -np.inf))
    return 1.0 / np.maximum(gy, IPCW_FLOOR)


def job_outcomes(jobs: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Start (s), end (s) and whether each job has ended with a known run time (started, not
    ``run_censored``); without ``start_s`` the start is read as ``end_s − run_s``."""
    run = pd.to_numeric(jobs["run_s"], errors="coerce").to_numpy(dtype=float) if "run_s" in jobs.columns \
        else np.full(len(jobs), np.nan)
    end = jobs["end_s"].to_numpy(dtype=float) if "end_s" in jobs.columns else np.full(len(jobs), np.nan)
    start = jobs["start_s"].to_numpy(dtype=float) if "start_s" in jobs.columns else end - run
    ended = np.isfinite(start) & np.isfinite(end) & np.isfinite(run)
    if "run_censored" in jobs.columns:
        ended &= ~jobs["run_censored"].fillna(False).to_numpy(dtype=bool)
    if "started" in jobs.columns:
        ended &= jobs["started"].fillna(False).to_numpy(dtype=bool)
    return start, np.where(ended, start + np.maximum(run, 0.0), np.nan), ended


def interval_around(raw: np.ndarray, b: np.ndarray, name: str, offsets, mid: int) -> np.ndarray:
    """The quantiles of jobs predicted by candidate ``name``: the boosters' (``"model"``) with their
    conformal offsets, or the point ``b`` with its conformal residual quantiles around it."""
    lo_off, hi_off = offsets
    p = raw.copy()
    if name == "model":
        if lo_off or hi_off:   # conformal widening (or narrowing) of the outer interval, kept non-crossing
            p[:, 0] = np.minimum(p[:, 0] - lo_off, p[:, 1])
            p[:, -1] = np.maximum(p[:, -1] + hi_off, p[:, -2])
        return p
    p[:, mid] = b
    p[:, 0] = np.minimum(b - lo_off, b)
    p[:, -1] = np.maximum(b + hi_off, b)
    return np.sort(p, axis=1)


def reading_time(jobs: pd.DataFrame) -> float:
    """The latest time the training jobs' outcomes are known at: the latest end (or, for a job still
    running, ``start + run_s``, its run time so far)."""
    if not len(jobs) or "run_s" not in jobs.columns:
        return float("inf")
    run = pd.to_numeric(jobs["run_s"], errors="coerce").to_numpy(dtype=float)
    start = jobs["start_s"].to_numpy(dtype=float) if "start_s" in jobs.columns else None
    if start is None:
        return float("inf")
    t = start + np.maximum(run, 0.0)
    return float(np.nanmax(t)) if np.isfinite(t).any() else float("inf")
