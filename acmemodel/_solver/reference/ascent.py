"""NumPy twin of ``checkpoint_ascent.c``: step 1 of the checkpoint optimiser (:mod:`.optimum`), the
safeguarded Newton ascent to a local maximum of ``φ(τ) = τ E[N](τ)``, stepping onto the kink where φ'
jumps under a piecewise hazard; the ripple search (:mod:`.ripple`) runs it from its candidates.
"""
from __future__ import annotations

import math

import numpy as np

from acmemodel._solver.reference.checkpoint import EPS, PIECEWISE, _Renewal


NEWTON_DONE = 1e-9     # a Newton step below this relative size is not taken: the point is the optimum
KINK_EPS = 1e-10     # piecewise: a kink maximum is located to this relative distance ...
KINK_NEAR = 1e-4     # ... once the Newton bracket around it is this narrow (relative)
ASCENT_TOL = 1e-12   # Newton ascent: a point within this (relative) below the best counts as better (rounding)


def _kink_in(ren: _Renewal, lo: float, hi: float) -> float:
    """Piecewise hazard: the kink of φ in ``(lo, hi)`` where φ' falls the most (−1 for none): ``S(r_q + i x)``
    has a kink at ``x = (b_j − r_q)/i`` where φ' jumps by ``τ w_q i S(b_j) (h_{j−1} − h_j)``, downwards (a
    possible maximum at the kink) where the hazard increases."""
    d = ren.d
    xlo, xhi = lo + ren.C, hi + ren.C
    SH = np.exp(-d.H)
    best, tk = 0.0, -1.0
    for j in range(1, d.b.size):
        dh = float(d.h[j] - d.h[j - 1])
        if not dh > 0.0:
            continue
        for r, w in zip(ren.r, ren.w):
            if not r + xlo < d.b[j]:
                break
            dd = float(d.b[j] - r)
            i = math.floor(dd / xhi) + 1.0
            xk = dd / i
            if not (xlo < xk < xhi):
                continue  # at most one i: (lo, hi) is narrower than x / i here
            wt = float(w) * i * float(SH[j]) * dh
            if wt > best:
                best, tk = wt, xk - ren.C
    return tk
UPHILL = 4.0  # _local_max: the ratio of its steps into an unbounded side (C's ACME_UPHILL)


def _local_max(ren: _Renewal, t: float, lo: float, hi: float,
               first: tuple[float, float, float] | None = None,
               bracket: tuple[float, float] | None = None, uphill: float = UPHILL) -> tuple[float, float, float]:
    """Safeguarded Newton ascent to a local maximum of φ from ``t`` within ``[lo, hi]`` (``first``: φ,
    φ', φ'' at ``t`` if known; ``bracket``: points below and above ``t`` where φ is known to be at most
    φ(t), 0 for an unknown side, between which the ascent stays; ``uphill``: the ratio of its steps into
    an unbounded side, ``UPHILL`` unless the caller knows the scale of φ's features, and then no step,
    Newton's included, goes further). The best point ``tb`` and a bracket ``lo < tb < hi`` with φ(lo), φ(hi)
    ≤ φ(tb) (or the range's ends) hold a local maximum at least as high, on the side φ'(tb) points to.
    Each step evaluates Newton's point ``tb − φ'/φ''`` when ``φ'' < 0`` and it falls on that side, else
    the side's geometric midpoint, or a step uphill by ×/÷ ``uphill`` while that side is unbounded; a better point
    becomes ``tb`` (the old one a bound; within ``ASCENT_TOL`` below counts as better: rounding decides
    there), a worse one bounds its side, so φ never ends below its start
    (Newton on φ' = 0 alone could step over a valley onto a lower maximum). Returns ``(τ, φ(τ), φ''(τ))``
    of ``tb``; stops when the next step would be below ``NEWTON_DONE`` relative (quadratic convergence:
    within ~1e-9 of the root, E[T] within ~1e-18), or at ``hi`` (``lo``) when φ still rises (falls)
    there. Piecewise hazard: when Newton cannot land in a side narrower than ``KINK_NEAR``, φ' may jump
    there at a kink (:func:`_kink_in`); φ' ``KINK_EPS`` either side of it decides: a maximum at the kink
    is returned, else both points narrow the bracket."""
    gmin, gmax = lo, hi
    lo_known = hi_known = False
    if bracket is not None and lo < bracket[0] < t:
        lo, lo_known = bracket[0], True
    if bracket is not None and t < bracket[1] < hi:
        hi, hi_known = bracket[1], True
    tb = t
    pb, gb, ppb = first if first is not None else ren.phi(t)

    def update(t, ph, g, gp):
        nonlocal tb, pb, gb, ppb, lo, hi, lo_known, hi_known
        if ph > pb - ASCENT_TOL * abs(pb):
            if t > tb:
                lo, lo_known = tb, True
            else:
                hi, hi_known = tb, True
            tb, pb, gb, ppb = t, ph, g, gp
        elif t > tb:
            hi, hi_known = t, True
        else:
            lo, lo_known = t, True

    for _ in range(200):
        if gb == 0.0 or (gb > 0 and tb >= gmax) or (gb < 0 and tb <= gmin):
            break
        a, b, known = (tb, hi, hi_known) if gb > 0 else (lo, tb, lo_known)
        if not known and uphill < UPHILL:  # the caller's scale: no step past it into the unknown
            if gb > 0 and b > uphill * tb:
                b = uphill * tb
            if gb < 0 and a < tb / uphill:
                a = tb / uphill
        tn = tb - gb / ppb if ppb < 0 else math.nan
        if not (a < tn < b) and known and ren.d.family == PIECEWISE and b - a <= KINK_NEAR * b:
            # φ' changes sign where Newton cannot land: φ' on both sides of the kink where it falls the
            # most; a maximum there ends the search, else both points narrow the bracket
            tk = _kink_in(ren, a, b)
            ka, kb = tk * (1.0 - KINK_EPS), tk * (1.0 + KINK_EPS)
            if tk > 0.0 and a < ka and kb < b:
                pa, ga, ppa = ren.phi(ka)
                pk, gk, ppk = ren.phi(kb)
                update(ka, pa, ga, ppa)
                update(kb, pk, gk, ppk)
                if ga > 0 and gk < 0 and tb in (ka, kb):
                    break
                continue
        if not (a < tn < b):
            if known:
                tn = math.sqrt(a * b)
            elif gb > 0:
                tn = min(uphill * tb, gmax)
            else:
                tn = max(tb / uphill, gmin)
        if abs(tn - tb) <= NEWTON_DONE * tb or (known and b - a <= 4.0 * EPS * b):
            break
        update(tn, *ren.phi(tn))
    return tb, pb, ppb
