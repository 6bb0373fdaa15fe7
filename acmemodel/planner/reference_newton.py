"""NumPy/SciPy twin of the frozen baseline optimiser ``_core.ckpt_optimize_newton`` (``checkpoint_newton.c``).

The optimiser ``checkpoint.c`` shipped before the current one (commit 7c304df, ~2.6e3 Weibull
optimisations/s), kept callable (C and twin) only so that ``benchmarks/bench_solver.py`` measures the
speed-up of the current kernel over it in the same run: maximise ``φ(τ) = τ E[N](τ)`` on
``[1e-3 min(C, E[F]), min(W, 1e3 E[F])]`` by a safeguarded Newton iteration from Daly's interval for
``E[F]``, then a guard scan at √2 steps for a better local maximum, skipping what the bounds of
:meth:`acmemodel.planner.reference._Renewal.saved_bound` and ``U τ/(τ + C)`` exclude. The renewal sums
are those of :mod:`acmemodel.planner.reference` (the same values to rounding).
"""
from __future__ import annotations

import math

import numpy as np
from scipy import optimize

from acmemodel.planner.reference import (
    DNF_CKPT_GE_MTTF, EPS, EXPONENTIAL, OK, ROOT2, _Dist, _expected_time_one, _Renewal, check_ckpt_values,
)

NEWTON_DONE = 1e-9    # a Newton step below this relative size is the last one (quadratic convergence)


def _daly(C: float, M: float) -> float:
    r = C / (2.0 * M)
    return math.sqrt(2.0 * C * M) * (1.0 + math.sqrt(r) / 3.0 + r / 9.0) - C if C < 2.0 * M else M


def _local_max(ren: _Renewal, t: float, lo: float, hi: float) -> tuple[float, float]:
    """Safeguarded Newton on ``φ'(τ) = 0`` from ``t`` within ``[lo, hi]``: a Newton step when
    ``φ'' < 0`` and it stays inside the bracket of known signs (``φ'(lo) > 0 > φ'(hi)``), else the
    geometric midpoint of the bracket, or a step ×4 / ÷4 uphill while one side is unknown. Returns
    ``(τ, φ(τ))``; ``hi`` (``lo``) when φ still rises (falls) there."""
    gmin, gmax = lo, hi
    lo_known = hi_known = False
    ph = 0.0
    for _ in range(200):
        ph, g, gp = ren.phi(t)
        if g == 0.0:
            return t, ph
        if g > 0:
            if t >= gmax:
                return gmax, ph
            lo, lo_known = t, True
        else:
            if t <= gmin:
                return gmin, ph
            hi, hi_known = t, True
        tn = t - g / gp if gp < 0 else math.nan
        if not (lo < tn < hi):
            if lo_known and hi_known:
                tn = math.sqrt(lo * hi)
            elif g > 0:
                tn = min(4.0 * t, gmax)
            else:
                tn = max(0.25 * t, gmin)
        # converged: a Newton step of relative size δ leaves an error ~δ² (below rounding for δ ≤ 1e-9)
        if abs(tn - t) <= NEWTON_DONE * t or (lo_known and hi_known and hi - lo <= 4.0 * EPS * hi):
            return tn, ph
        t = tn
    return t, ph


def _optimize_general(d: _Dist, W: float, C: float, rn, rw) -> float:
    """Maximise ``φ(τ) = τ E[N](τ)`` on ``[1e-3 min(C, E[F]), min(W, 1e3 E[F])]`` (see checkpoint.c):
    local Newton from Daly's interval, then a guard scan for a better local maximum that skips what the
    bounds exclude — below τ: ``φ(τ) ≤ U τ/(τ + C)``; above t, with ``D = (F − R)^+``, ``x = t + C``:
    ``φ(s) ≤ E[D; D ≥ x]`` for all ``s ≥ t`` (:meth:`_Renewal.saved_bound`); ``φ(s) ≤ s E[N](t) ≤ φ*``
    for ``s ≤ t φ*/φ(t)`` (E[N] decreases in τ); and, once ``x ≥ y_m`` (the mode of D's density, which
    decreases beyond it), ``φ(s) = E[D; D ≥ x_s] − C E[N] − E[D − x_s N; D ≥ x_s] ≤ B(x_s)`` with
    ``B(x) = E[D; D ≥ x] − (x/2) G(y_m + 2x)``, ``G(y) = P(D ≥ y)`` (the work lost rounding down to a
    checkpoint is at least ``x²/2`` times the density at the end of every bin past ``y_m``), and
    ``B' = −x (f_D(x) − f_D(y_m + 2x)) − G/2 < 0``, so ``B(x) ≤ φ*`` excludes every ``s ≥ t``.
    Elsewhere it steps by √2 (the resolution of the old kernel's grid)."""
    ren = _Renewal(d, C, rn, rw)
    gmin = 1e-3 * min(C, d.mean)
    gmax = min(1e3 * d.mean, W)
    if gmin >= gmax:
        gmin = 0.5 * gmax
    t0 = min(max(_daly(C, d.mean), gmin), gmax)
    tb, best = _local_max(ren, t0, gmin, gmax)
    for _ in range(8):  # restarts when the scan finds a better point
        better = None
        t = tb * ROOT2
        while t < gmax and better is None:
            ph = ren.phi(t)[0]
            if ph > best:
                better = t
                break
            x = t + C
            e3 = ren.saved_bound(t)
            if e3 <= best or (x >= d.mode and e3 - 0.5 * x * ren.surv_d(d.mode + 2.0 * x) <= best):
                break  # nothing above t can beat the best
            nxt = t * max(ROOT2, best / ph) if ph > 0 else gmax
            if nxt >= gmax and t * (best / ph if ph > 0 else math.inf) < gmax:
                if ren.phi(gmax)[0] > best:
                    better = gmax
                break
            t = nxt
        t = tb / ROOT2
        while better is None and t > gmin and ren.U * t / (t + C) > best:
            if ren.phi(t)[0] > best:
                better = t
            t /= ROOT2
        if better is None:
            break
        t2, p2 = _local_max(ren, better, gmin, gmax)
        if not p2 > best:
            break
        tb, best = t2, p2
    _optimize_general.last_evals = ren.evals
    return tb


def _optimize_one(d: _Dist, W, C, rn, rw) -> float:
    if d.family == EXPONENTIAL:
        hi = min(d.M, W)

        def f(t):
            u, v = t / d.M, (t + C) / d.M
            return math.expm1(v) - u * math.exp(v)

        if f(hi) >= 0:
            return hi
        return optimize.brentq(f, 0.0, hi, xtol=1e-300, rtol=4 * np.finfo(float).eps, maxiter=500)
    return _optimize_general(d, W, C, rn, rw)


def ckpt_optimize_newton(work, ckpt, family, params, r_nodes, r_weights):
    """Twin of ``_core.ckpt_optimize_newton``: ``(tau*, E[T](tau*), status)`` per scenario."""
    work, ckpt = (np.asarray(a, dtype=float) for a in (work, ckpt))
    params, r_nodes, r_weights = (np.asarray(a, dtype=float) for a in (params, r_nodes, r_weights))
    check_ckpt_values(None, work, ckpt, family, params, r_nodes, r_weights)
    n = work.size
    tau = np.full(n, np.nan)
    et = np.full(n, np.inf)
    st = np.empty(n, dtype=np.int32)
    for i in range(n):
        d = _Dist(family, params[i])
        if ckpt[i] >= d.mean:
            st[i] = DNF_CKPT_GE_MTTF
            continue
        t = _optimize_one(d, work[i], ckpt[i], r_nodes[i], r_weights[i])
        et[i], st[i] = _expected_time_one(d, t, work[i], ckpt[i], r_nodes[i], r_weights[i])
        if st[i] == OK:
            tau[i] = t
    return tau, et, st
