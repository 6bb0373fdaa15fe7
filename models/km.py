"""Kaplan–Meier and Aalen–Johansen estimators in NumPy, value for value those of lifelines.

The failure model stores a Kaplan–Meier curve per cell and a cumulative incidence per cause and
cell (:meth:`~acmemodel.models.failure.FailureModel.fit`): some 50 small fits per model, where
lifelines' ``KaplanMeierFitter`` / ``AalenJohansenFitter`` spend ~0.1 s each in pandas
bookkeeping. These functions compute the same numbers with the same floating-point operations in
the same order (tests/test_failure.py compares them with lifelines exactly), ~50× faster.

Kaplan–Meier (right-censored, unit weights, everyone at risk from time 0): on the sorted distinct
times t_i (0 included) with d_i events and n_i at risk,

    S(t_i) = exp(Σ_{j≤i} [log(n_j − d_j) − log n_j]),
    V_i   = Σ_{j≤i} d_j / (n_j (n_j − d_j))   (0 where n_j = d_j),

and the exponential-Greenwood band exp(−exp(log(−log S) ∓ z √V / log S)), 1 where undefined.

Aalen–Johansen cumulative incidence of cause k (codes > 0 are causes, 0 is censored):
F_k(t_i) = Σ_{1≤j≤i} d_kj / n_j · S(t_{j−1}), F_k(0) = 0, with S the all-cause Kaplan–Meier. As in
lifelines, event times tied between different causes are first jittered by U(−1, 1) × 10⁻⁴ s drawn
from ``numpy.random.RandomState(seed)`` (repeated, with the same draws, until no such tie is left).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats

#: lifelines' default jitter of tied event times of different causes (s)
JITTER_S = 1e-4


@dataclass(frozen=True)
class EventTable:
    """Per distinct time ``t`` (ascending, 0 included): ``removed`` (jobs whose time is t),
    ``observed`` (events at t) and ``at_risk`` (jobs with time ≥ t), integer counts."""

    t: np.ndarray
    removed: np.ndarray
    observed: np.ndarray
    at_risk: np.ndarray


def event_table(T, E) -> EventTable:
    """The event table of durations ``T`` (s) and event indicators ``E`` (any nonzero = event)."""
    T = np.asarray(T)
    ev = np.asarray(E).astype(bool)
    if len(T) == 0:
        raise ValueError("event_table: no durations")
    birth = min(0, T.min())
    t, inv = np.unique(np.r_[T, birth], return_inverse=True)
    inv = inv[:-1]
    removed = np.bincount(inv, minlength=len(t)).astype(np.int64)
    observed = np.bincount(inv, weights=ev, minlength=len(t)).astype(np.int64)
    entrance = np.zeros(len(t), np.int64)
    entrance[np.searchsorted(t, birth)] = len(T)
    gone = np.r_[0.0, np.cumsum(removed)[:-1].astype(float)]
    at_risk = (np.cumsum(entrance) - gone).astype(np.int64)
    return EventTable(t=t.astype(float), removed=removed, observed=observed, at_risk=at_risk)


def _nancumsum_keep(x: np.ndarray) -> np.ndarray:
    """pandas' ``Series.cumsum()``: NaN entries skipped, and NaN in the result where they were."""
    nan = np.isnan(x)
    out = np.cumsum(np.where(nan, 0.0, x))
    out[nan] = np.nan
    return out


def kaplan_meier(T, E, alpha: float = 0.05):
    """Kaplan–Meier survival of ``(T, E)`` with its exponential-Greenwood band (module docstring).

    Returns ``(t, S, lower, upper, table)``: the distinct times (s, ascending, 0 first), the survival,
    the band at level 1 − ``alpha`` and the :class:`EventTable`.
    """
    tab = event_table(T, E)
    pop, d = tab.at_risk, tab.observed
    with np.errstate(divide="ignore", invalid="ignore"):
        log_s = np.cumsum(np.log(pop - d) - np.log(pop))
        pu = pop.astype(np.uint64)
        v = d / (pu * (pu - d))
        v = np.where(v == np.inf, 0.0, v)
        var = _nancumsum_keep(v)
        S = np.exp(log_s)
        z = stats.norm.ppf(1 - alpha / 2)
        lv = np.log(S)
        lo = np.exp(-np.exp(np.log(-lv) - z * np.sqrt(var) / lv))
        hi = np.exp(-np.exp(np.log(-lv) + z * np.sqrt(var) / lv))
    lo = np.where(np.isnan(lo), 1.0, lo)
    hi = np.where(np.isnan(hi), 1.0, hi)
    return tab.t, S, lo, hi, tab


def _tied_causes(T: np.ndarray, C: np.ndarray) -> bool:
    """lifelines' tie test: some event's time is shared with another event while its (time, cause)
    pair is not (events only; codes > 0)."""
    ev = C != 0
    t, c = T[ev], C[ev]
    if len(t) < 2:
        return False
    _, ti, tn = np.unique(t, return_inverse=True, return_counts=True)
    dup_t = tn[ti] > 1
    if not dup_t.any():
        return False
    order = np.lexsort((c, t))
    ts, cs = t[order], c[order]
    new = np.r_[True, (ts[1:] != ts[:-1]) | (cs[1:] != cs[:-1])]
    grp = np.cumsum(new) - 1
    cnt = np.bincount(grp)
    dup_pair = np.empty(len(t), bool)
    dup_pair[order] = cnt[grp] > 1
    return bool(np.any(dup_t & ~dup_pair))


def jitter_ties(T, C, seed=None, jitter_level: float = JITTER_S) -> np.ndarray:
    """``T`` with lifelines' Aalen–Johansen jitter applied where event times of different causes
    tie (module docstring); ``T`` itself (as float) when none do."""
    T = np.asarray(T, dtype=float)
    C = np.asarray(C)
    if not _tied_causes(T, C):
        return T
    ev = C != 0
    T = T.copy()
    while True:
        shift = np.random.RandomState(seed).uniform(low=-1, high=1, size=int(ev.sum())) * jitter_level
        T[ev] = T[ev] + shift
        if not _tied_causes(T, C):
            return T


@dataclass(frozen=True)
class CumulativeIncidence:
    """One cause's Aalen–Johansen estimate on the distinct (jittered) times ``t``: ``F``, the
    all-cause ``observed`` events and ``at_risk`` counts, the cause's events ``observed_k``."""

    t: np.ndarray
    F: np.ndarray
    observed: np.ndarray
    observed_k: np.ndarray
    at_risk: np.ndarray


def aalen_johansen(T, C, cause: int, seed=None) -> CumulativeIncidence:
    """Aalen–Johansen cumulative incidence of ``cause`` (codes ``C``: 0 censored, > 0 causes) with
    lifelines' tie jitter (``seed``) — lifelines' ``AalenJohansenFitter(seed=seed)`` without its
    variance (see :func:`acmemodel.models.failure_curves.aj_confidence_band`)."""
    C = np.asarray(C)
    Tj = jitter_ties(T, C, seed)
    t, S, _, _, tab = kaplan_meier(Tj, C != 0)
    k = event_table(Tj, C == int(cause))
    lag = np.r_[np.nan, S[:-1]]
    F = _nancumsum_keep(k.observed / tab.at_risk * lag)
    F[0] = 0.0
    return CumulativeIncidence(t=t, F=F, observed=tab.observed, observed_k=k.observed, at_risk=tab.at_risk)
