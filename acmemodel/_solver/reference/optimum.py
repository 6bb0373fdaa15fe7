"""NumPy/SciPy twin of the checkpoint optimiser ``_core.ckpt_optimize`` (``checkpoint.c``; its Newton ascent
is in :mod:`.ascent`, its ripple search in :mod:`.ripple`, as in ``checkpoint_ascent.c`` and
``checkpoint_ripple.c``).

Maximises ``φ(τ) = τ E[N](τ)`` (the expected work saved per failure cycle; ``E[T] = W E[F] / φ``) on
``[1e-3 min(C, E[F]), min(W, 1e3 E[F])]`` with the renewal sums of :mod:`acmemodel._solver.reference.checkpoint`:

1. safeguarded Newton on ``φ'(τ) = 0`` (analytic ``φ''``) from Daly's interval for the mean
   ``U / G0`` (``U = E[(F − R)^+]``, ``G0 = P(F > R)``: the MTTF that ``φ ≈ τ U / (τ + C) − τ G0 / 2``
   implies; Weibull k ≥ 1: the maximum of that model with the next Euler-Maclaurin term, :func:`_em_start`),
   returning the last point evaluated (E[T] there is the result, no further evaluation);
2. the guard scan of the previous kernel for a better local maximum at √2 steps, skipping what the
   bounds exclude; Weibull: a sample is evaluated only where the
   Euler-Maclaurin bound :meth:`~acmemodel._solver.reference.checkpoint._Renewal.weibull_bound` does not already put
   it below the best (the bound then stands for φ there); piecewise hazard: the midpoint-rule bound of
   :mod:`.bounds` clears samples without an evaluation, else shorter steps and a probe of the
   sharpest kink between samples where a ripple as large as the gap could hide a peak
   (:func:`.ripple.guard_ratio`, :func:`.ripple.kink_peak`);
3. piecewise hazard only: a ripple search. φ is then a smooth function plus a ripple with kinks where
   ``r + i x`` crosses a break (:func:`.ripple.ripple`), so local maxima lie a ripple period apart near the
   best one; φ and φ' are sampled at a quarter of the shortest period over the window where the smooth
   part is within the ripple of its maximum, peaks a model predicts between samples are evaluated
   (:func:`.ripple._kink_between`), and Newton runs from the best sampled candidates
   (:func:`.ripple._sample_candidate`), each within its sampled neighbours (and, on each side of the best
   point, from by the kink within half a step where φ' is predicted to point away from it the most
   (:func:`.ripple._split_probe`), or from half a step, where φ' does); a window capped at ±15 % also has its
   outer bands out to the guard scan's √2 sampled (:func:`.ripple.outer_period`); the search repeats around
   any better point found (up to 3 rounds).
"""
from __future__ import annotations

import math

import numpy as np
from scipy import optimize

from acmemodel._solver.reference.ascent import KINK_EPS, _local_max
from acmemodel._solver.reference.bounds import piecewise_guard
from acmemodel._solver.reference.checkpoint import (
    DNF_CKPT_GE_MTTF, DNF_NO_PROGRESS, EPS, EXPONENTIAL, OK, ROOT2, WEIBULL, _Dist, _expected_time_one, _Renewal,
    check_ckpt_values,
)
from acmemodel._solver.reference.ripple import _ripple_search, guard_ratio, kink_peak


SHRINK_MAX = 2.0 ** -0.125   # guard scan down: a bound interval [lo, t] is used when lo <= t / 2^(1/8)


def _daly(C: float, M: float) -> float:
    r = C / (2.0 * M)
    return math.sqrt(2.0 * C * M) * (1.0 + math.sqrt(r) / 3.0 + r / 9.0) - C if C < 2.0 * M else M


def _kink_probe(ren: _Renewal, lo: float, hi: float, best: float, ph: float, gmin: float,
                gmax: float) -> float | None:
    """Just below the kink of :func:`kink_peak` in ``(lo, hi)`` if φ there beats ``best``; else, where φ
    there beats the sample's ``ph`` and a ripple there still exceeds the gap (another kink's peak can be
    next to it), the local maximum the Newton ascent reaches from it if that beats ``best``; else None."""
    tk = kink_peak(ren, lo, hi)
    if not tk > 0.0:
        return None
    t = tk * (1.0 - KINK_EPS)
    pk = ren.phi(t, want=0)[0]
    if pk > best:
        return t
    if not pk > ph or not guard_ratio(ren, t, pk, best)[1]:
        return None
    t2, p2, _ = _local_max(ren, t, gmin, gmax)
    return t2 if p2 > best else None


def _down_bound(ren: _Renewal, t: float, ym: float, best: float) -> float:
    """Below ``t``: ``E[N](s) = Σ_{i≥1} G(i x) ≤ U/x − G(c)/2``, since ``U/x`` is the sum over the bins
    ``[i x, (i+1) x]``, i ≥ 0, of ``G``'s mean there, each above ``G((i+1) x)`` and, where ``G`` is
    convex (beyond ``ym``: the density of ``D`` decreases), by at least ``(x/2) f_D((i+1) x)``, which sums
    to at least ``G(c)/2``, ``c = x`` for ``ym = 0`` else ``ym + 2x``. On ``[lo, t]`` (``x_s ≤ x_t``,
    ``G(c_s) ≥ G(c_t)``): ``φ(s) ≤ t U/x_t − lo G(c_t)/2 ≤ best`` for ``lo = 2 (t U/x_t − best)/G(c_t)``,
    returned (``t`` when ``G(c_t) = 0``)."""
    x = t + ren.C
    gc = ren.surv_d(ym + 2.0 * x if ym > 0.0 else x)
    return 2.0 * (t * ren.U / x - best) / gc if gc > 0.0 else t


def _em_start(ren: _Renewal, t0: float) -> float:
    """Weibull k ≥ 1: the Newton ascent's start. Euler-Maclaurin at ``y = 0`` gives ``E[N] = U/x − G0/2 +
    x f_D(0)/12 + O(x³ f_D'')``, ``f_D(0) = Σ_q w_q f(r_q)`` (finite for k ≥ 1), so the model's maximum
    solves ``U C/x² − G0/2 + (x + τ) f_D(0)/12 = 0``: Newton on it from Daly's interval ``t0`` (its root
    without the ``f_D(0)`` term); ``t0`` itself unless the model is concave there and the iteration
    converges within a factor 2 of ``t0``. Within 3e-3 of the optimum in 75-97 % of bench_solver's
    scenarios with k ≥ 1 (Daly's: 0-19 %): one evaluation fewer; for k < 1 f is singular at 0 and Daly's
    start is the better one."""
    d, C = ren.d, ren.C
    f0 = 0.0
    for r, w in zip(ren.r, ren.w):
        z = (float(r) / d.lam) ** d.k
        f0 += float(w) * (d.k / d.lam * (float(r) / d.lam) ** (d.k - 1.0) * math.exp(-z))
    t = t0
    for _ in range(30):
        x = t + C
        g = ren.U * C / (x * x) - 0.5 * ren.G0 + (x + t) * f0 / 12.0
        gp = -2.0 * ren.U * C / (x * x * x) + f0 / 6.0
        if not gp < 0.0:
            return t0
        tn = t - g / gp
        if not 0.5 * t0 < tn < 2.0 * t0:
            return t0
        if abs(tn - t) <= 1e-12 * tn:
            return tn
        t = tn
    return t0


def _optimize_general(d: _Dist, W: float, C: float, rn, rw) -> tuple[float, float]:
    """``(τ*, φ(τ*))`` for Weibull / piecewise-hazard failures (see the module docstring)."""
    ren = _Renewal(d, C, rn, rw)
    gmin = 1e-3 * min(C, d.mean)
    gmax = min(1e3 * d.mean, W)
    if gmin >= gmax:
        gmin = 0.5 * gmax
    meff = ren.U / ren.G0 if ren.G0 > 0 else d.mean
    t0 = _daly(C, meff) if C < meff else _daly(C, d.mean)
    wb = d.family == WEIBULL
    if wb and d.k >= 1.0:
        t0 = _em_start(ren, t0)
    t0 = min(max(t0, gmin), gmax)
    tb, best, pp = _local_max(ren, t0, gmin, gmax)
    ph = 0.0
    for _ in range(8):  # restarts when the guard scan finds a better point
        better = None
        t, first = tb * ROOT2, True
        while t < gmax and better is None:
            x = t + C  # the bounds hold for every s >= t, t included: checked before φ(t) is evaluated
            ub, e3 = ren.weibull_bound(t) if wb else (-1.0, ren.saved_bound(t))
            if e3 <= best or (x >= d.mode and e3 - 0.5 * x * ren.surv_d(d.mode + 2.0 * x) <= best):
                break  # nothing above t can beat the best
            if not wb:
                ub, quiet = piecewise_guard(ren, t, best)
                if ub < best and (quiet or not first):  # φ(s) <= s E[N](t) <= s ub/t <= best on [t, t best/ub]:
                    lim = t * best / ub  # no evaluation; quiet: the scan would step by √2 without kink probes
                    nxt, first = max(lim, t * ROOT2) if quiet else lim, False
                    if lim < gmax <= nxt:
                        if ren.phi(gmax, want=0)[0] > best:
                            better = gmax
                        break
                    t = nxt
                    continue
            if wb and ub <= best:
                ph = ub  # φ(t) ≤ ub ≤ best: no evaluation; the steps below from the bound
            else:
                ph = ren.phi(t, want=0)[0]
                if ph > best:
                    better = t
                    break
            rs, rip = guard_ratio(ren, t, ph, best)
            nxt = t * max(rs, best / ph) if ph > 0 else gmax
            if rip:  # a ripple as large as the gap: the sharpest kinks before and after t too
                if first:
                    better = _kink_probe(ren, tb, t, best, ph, gmin, gmax)
                if better is None:
                    better = _kink_probe(ren, t, min(nxt, gmax), best, ph, gmin, gmax)
                if better is not None:
                    break
            first = False
            if nxt >= gmax and t * (best / ph if ph > 0 else math.inf) < gmax:
                if ren.phi(gmax, want=0)[0] > best:
                    better = gmax
                break
            t = nxt
        t, first = tb / ROOT2, True
        while better is None and t > gmin and ren.U * t / (t + C) > best:
            lo = _down_bound(ren, t, d.mode, best)  # no better point on [lo, t]
            if lo <= t * SHRINK_MAX:
                t = lo
                continue
            if not wb:
                ub, quiet = piecewise_guard(ren, t, best)
                if quiet:  # φ(t) <= ub < best and the scan's step from φ(t) is √2 without kink probes
                    first = False
                    t /= ROOT2
                    continue
            if not (wb and ren.weibull_bound(t)[0] <= best):  # the bound, else φ(t)
                ph = ren.phi(t, want=0)[0]
                if ph > best:
                    better = t
                    break
            rs, rip = guard_ratio(ren, t, ph, best)
            if rip:
                if first:
                    better = _kink_probe(ren, t, tb, best, ph, gmin, gmax)
                if better is None:
                    better = _kink_probe(ren, max(t / rs, gmin), t, best, ph, gmin, gmax)
                if better is not None:
                    break
            first = False
            t /= rs
        if better is None:
            break
        t2, p2, pp2 = _local_max(ren, better, gmin, gmax)
        if not p2 > best:
            break
        tb, best, pp = t2, p2, pp2
    if gmin < tb < gmax:
        tb, best = _ripple_search(ren, tb, best, pp, gmin, gmax)
    _optimize_general.last_evals = ren.evals
    return tb, best


def ckpt_optimize(work, ckpt, family, params, r_nodes, r_weights):
    """Twin of ``_core.ckpt_optimize``: ``(tau*, E[T](tau*), status)`` per scenario."""
    work, ckpt = (np.asarray(a, dtype=float) for a in (work, ckpt))
    params, r_nodes, r_weights = (np.asarray(a, dtype=float) for a in (params, r_nodes, r_weights))
    check_ckpt_values(None, work, ckpt, family, params, r_nodes, r_weights)
    n = work.size
    tau = np.full(n, np.nan)
    et = np.full(n, np.inf)
    st = np.empty(n, dtype=np.int32)
    for i in range(n):
        d = _Dist(family, params[i])
        W, C = float(work[i]), float(ckpt[i])
        if C >= d.mean:
            st[i] = DNF_CKPT_GE_MTTF
            continue
        if family == EXPONENTIAL:
            hi = min(d.M, W)

            def f(t):
                u, v = t / d.M, (t + C) / d.M
                return math.expm1(v) - u * math.exp(v)

            t = hi if f(hi) >= 0 else optimize.brentq(f, 0.0, hi, xtol=1e-300, rtol=4 * EPS, maxiter=500)
            et[i], st[i] = _expected_time_one(d, t, W, C, r_nodes[i], r_weights[i])
        else:  # E[T] = W E[F] / (τ E[N]) from the evaluation at τ (as _expected_time_one computes it)
            t, best = _optimize_general(d, W, C, r_nodes[i], r_weights[i])
            e = W * d.mean / best if best > 0 else math.inf
            et[i], st[i] = (e, OK) if math.isfinite(e) and e > 0 else (math.inf, DNF_NO_PROGRESS)
        if st[i] == OK:
            tau[i] = t
    return tau, et, st
