"""NumPy twin of the checkpoint kernel's piecewise-hazard guard bound (``piecewise_bound`` in
``checkpoint.c``): an upper bound on ``φ(τ) = τ E[N](τ)`` from closed forms, no renewal sum.

Per restart node ``r`` let ``g(y) = S(r + y)`` (``x = τ + C``). Midpoint rule on the bins
``[(i − ½) x, (i + ½) x]``: where ``g`` is convex on a bin, ``x g(i x) ≤ ∫_bin g``. A piecewise-constant
hazard makes ``S`` convex inside each piece (``S'' = h_j² S``) and at a break where the hazard falls;
where it rises (``h_j > h_{j−1}``) the slope of ``S`` drops by ``J_j = (h_j − h_{j−1}) S(b_j)``. Adding
``J_j (y − y_j)^+`` for each such kink in a bin makes ``g`` convex there, and the ramp's own midpoint
error is at most ``J_j x²/8``, so

    Σ_{i≥1} S(r + i x) ≤ I(r + x/2)/x + (x/8) Σ_{j: b_j ≥ r + x/2} (h_j − h_{j−1})^+ S(b_j),

``I(a) = ∫_a^∞ S``. Summed over the nodes with their weights and times τ it bounds φ(τ); it exceeds φ
by about ``τ x f/24`` (the midpoint rule's curvature term) plus the rising breaks' ``x²/8`` terms.
"""
from __future__ import annotations

import math

import numpy as np

BOUND_MARGIN = 1e-12  # relative margin over the bound's rounding


def piecewise_bound(ren, tau: float) -> float:
    """Upper bound on ``φ(τ)`` under a piecewise-constant hazard (see the module docstring) for the
    renewal terms ``ren`` (:class:`acmemodel._solver.reference.checkpoint._Renewal`), times ``1 + BOUND_MARGIN``."""
    d = ren.d
    x = tau + ren.C
    rise = np.maximum(d.h[1:] - d.h[:-1], 0.0) * np.exp(-d.H[1:])  # J_j / ... at b_1 .. b_{m-1}
    s = 0.0
    for r, w in zip(ren.r, ren.w):
        a = float(r) + 0.5 * x
        kink = float(np.sum(rise[d.b[1:] >= a]))
        s += float(w) * (d.tail_integral(a) / x + 0.125 * x * kink)
    return tau * s * (1.0 + BOUND_MARGIN)


def ripple_numerator(ren, tau: float) -> float:
    """``φ`` times the summed ripple ``Σ_j a_j`` of :func:`acmemodel._solver.reference.ripple.ripple`:
    ``Σ_j τ x |h_j − h_{j−1}| S(b_j) P(R + x < b_j) / 8``."""
    d = ren.d
    x = tau + ren.C
    A = 0.0
    for j in range(1, d.b.size):
        Wj = 0.0
        for r, w in zip(ren.r, ren.w):
            if not r + x < d.b[j]:
                break
            Wj += w
        A += tau * x * abs(d.h[j] - d.h[j - 1]) * math.exp(-d.H[j]) * Wj / 8.0
    return A


def piecewise_guard(ren, tau: float, best: float) -> tuple[float, bool]:
    """``(ub, quiet)`` at a guard sample ``τ``: ``ub`` = :func:`piecewise_bound`; ``quiet``: for every
    ``φ(τ)`` in ``[lb, ub]``, ``lb = τ Σ_q w_q I(r_q + x)/x ≤ φ(τ)`` (S decreasing: ``S(r + i x)`` is at
    least its mean over the next bin), the guard scan's ripple test ``A/φ > 1 − φ/best`` (``A`` =
    :func:`ripple_numerator`) is false, so the scan would step by √2 without probing kinks: ``φ − φ²/best``
    is concave in φ, its minimum over the interval at an end."""
    ub = piecewise_bound(ren, tau)
    if not ub < best:
        return ub, False
    x = tau + ren.C
    lb = tau * sum(float(w) * ren.d.tail_integral(float(r) + x) for r, w in zip(ren.r, ren.w)) / x
    lb *= 1.0 - 1e-9
    A = ripple_numerator(ren, tau) * (1.0 + 1e-9)
    quiet = lb > 0 and A < min(lb - lb * lb / best, ub - ub * ub / best)
    return ub, quiet
