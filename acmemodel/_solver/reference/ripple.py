"""NumPy twin of ``checkpoint_ripple.c``: under a piecewise-constant hazard, the ripple of ``φ(τ)`` (kinks
where ``r + i x`` crosses a break), the guard scan's step and kink probes, and the ripple search of the
checkpoint optimiser (:mod:`.optimum`, step 3 of its module docstring).
"""
from __future__ import annotations

import math

import numpy as np

from acmemodel._solver.reference.ascent import KINK_EPS, UPHILL, _local_max
from acmemodel._solver.reference.checkpoint import PIECEWISE, ROOT2, _Renewal


RIPPLE_SMALL = 1e-9    # piecewise: a ripple below this relative size of φ is ignored
RIPPLE_IGNORE = 2e-7   # ... and the smallest breaks' ripples up to this total do not set the step
RIPPLE_WIN = 0.15      # ... the window searched around the best point is at most ±15 %
RIPPLE_K = 24          # ... with at most this many samples on each side
RIPPLE_KO = 8          # ... and outside it, out to the guard scan's √2, at most this many a side (capped window)
SPLIT_KINKS = 128  # _split_probe: at most this many kinks within half a step (the nearest kept)


def _near_kinks(ren: _Renewal, anchor: float, lo: float, hi: float) -> list[tuple[float, float]]:
    """The kinks of φ in ``(lo, hi)``, at most ``SPLIT_KINKS``, nearest to ``anchor`` first: ``[(τ, jump of
    φ' there as τ grows), ...]`` (``S(r_q + i x)`` crosses ``b_j`` at ``x = (b_j − r_q)/i``, φ' jumping by
    ``τ w_q i S(b_j) (h_{j−1} − h_j)``)."""
    d = ren.d
    xlo, xhi = lo + ren.C, hi + ren.C
    SH = np.exp(-d.H)
    kinks: list[tuple[float, float]] = []  # (τ, jump) by distance from the anchor
    for j in range(1, d.b.size):
        dh = float(d.h[j - 1] - d.h[j])
        if dh == 0.0:
            continue
        for r, w in zip(ren.r, ren.w):
            if not r + xlo < d.b[j]:
                break
            dd = float(d.b[j] - r)
            i = math.floor(dd / xlo)
            while i >= 1.0:  # the kinks dd / i above xlo, nearest to xlo first
                xk = dd / i
                if xk >= xhi:
                    break
                if xk > xlo:
                    t = xk - ren.C
                    dist = abs(t - anchor)
                    if not (len(kinks) == SPLIT_KINKS and not dist < abs(kinks[-1][0] - anchor)):
                        if len(kinks) == SPLIT_KINKS:
                            kinks.pop()
                        a = len(kinks)
                        while a > 0 and abs(kinks[a - 1][0] - anchor) > dist:
                            a -= 1
                        kinks.insert(a, (t, t * float(w) * i * float(SH[j]) * dh))
                i -= 1.0
    return kinks


def _peak_probe(ren: _Renewal, ta: float, va: float, ga: float, ppa: float, tend: float) -> tuple[float, float]:
    """``(τ, predicted φ)`` of the peak between a sample at ``ta`` (φ = ``va``, φ' = ``ga``, φ'' = ``ppa``)
    and ``tend`` that a model predicts, ``(−1, −inf)`` for none: walking from ``ta`` towards ``tend``
    through the kinks (:func:`_near_kinks`), φ' follows ``ga + ppa (t − ta)`` plus the jumps passed and φ
    its integral; a peak is a kink where the predicted φ' turns from towards ``tend`` to away from it
    (returned just on ta's side) or a point between kinks where it crosses 0 so (φ'' < 0): the one
    predicted highest."""
    up = tend > ta
    dr = 1.0 if up else -1.0
    pos, sl, v, est, tk = ta, ga, va, -math.inf, -1.0
    kinks = _near_kinks(ren, ta, *((ta, tend) if up else (tend, ta)))
    for b in range(len(kinks) + 1):
        end = kinks[b][0] if b < len(kinks) else tend
        dt = end - pos
        if dr * sl > 0 and ppa < 0 and dr * (sl + ppa * dt) < 0:  # a smooth maximum in this segment
            d = -sl / ppa
            vm = v + sl * d + 0.5 * ppa * d * d
            if vm > est:
                est, tk = vm, pos + d
        if b == len(kinks):
            break
        t, jump = kinks[b]
        v += sl * dt + 0.5 * ppa * dt * dt
        sl += ppa * dt
        after = sl + jump if up else sl - jump  # φ' past the kink going towards tend
        if dr * sl > 0 and dr * after < 0 and v > est:
            est, tk = v, t * (1.0 - dr * KINK_EPS)
        sl, pos = after, t
    return tk, est


def _split_probe(ren: _Renewal, t0: float, pp0: float, side: int, h: float) -> float:
    """Piecewise hazard: where a maximum of φ at ``t0`` (``φ'(t0) = 0``, ``φ''(t0) = pp0``) may be split in
    two by a valley within ``h`` of it (side 0: above t0, 1: below); −1 for no kink there. As x grows past
    ``(b_j − r_q)/i``, ``S(r_q + i x)`` crosses ``b_j`` and φ' jumps by ``τ w_q i S(b_j) (h_{j−1} − h_j)``;
    between kinks ``φ' ≈ pp0 (t − t0)``. The kinks in the range, nearest first, give the predicted φ'
    just before and just past each (above: ``pp0 (t_k − t0)`` + the jumps up to ``t_k``; below:
    ``pp0 (t_k − t0)`` − the jumps from ``t_k``; past it with its own jump); returns the point (the kink
    × (1 ∓ KINK_EPS)) where it points away from t0 the most (just before a kink: where t0 is a kink peak,
    φ falls into a convex valley past it and rises again to the next)."""
    kinks = _near_kinks(ren, t0, *((t0 - h, t0) if side else (t0, t0 + h)))
    cum, bestv, tk = 0.0, -math.inf, -1.0
    for t, jump in kinks:  # just before each kink (from t0), then just past it
        for past in (0, 1):
            if past:
                cum += jump
            v = cum - pp0 * (t - t0) if side else pp0 * (t - t0) + cum  # −φ' below, φ' above
            if v > bestv:
                bestv, tk = v, t * (1.0 - KINK_EPS if side == past else 1.0 + KINK_EPS)
    return tk


def ripple(ren: _Renewal, tau: float, ph: float) -> tuple[float, float]:
    """``(amp, period)``: relative peak-to-peak size of the ripple of φ near ``tau`` under a piecewise
    hazard and the shortest ripple period (seconds of τ) among the breaks that set the search step.

    ``u ↦ S(r + u x)`` has a kink where ``r + u x`` crosses a break ``b_j`` (its slope jumps by
    ``x S(b_j) |h_j − h_{j−1}|``); in the Euler-Maclaurin form of ``Σ_i S(r + i x)`` a kink at ``u0``
    adds ``B̃2({u0})/2`` times that jump, whose range over ``{u0}`` is 1/8. So φ differs from a smooth
    function of τ by at most ``τ x/8 Σ_j |Δh_j| S(b_j) P(R + x < b_j)``, with period ``x²/(b_j − r)``.
    The smallest breaks' ripples, together below ``RIPPLE_IGNORE``, do not set the period (a local
    maximum they make is within their size of the point sampled near it)."""
    if ren.d.family != PIECEWISE or not ph > 0:
        return 0.0, math.inf
    a, P = _break_ripples(ren, tau, ph)
    return float(sum(a[1:])), _live_period(a, P, RIPPLE_IGNORE)


def _break_ripples(ren: _Renewal, tau: float, ph: float) -> tuple[np.ndarray, np.ndarray]:
    """Per break ``j ≥ 1`` of the piecewise hazard (index 0 unused: 0 and ∞), at ``tau`` with ``φ = ph``: its
    ripple ``a_j = τ x |h_j − h_{j−1}| S(b_j) P(R + x < b_j) / (8 φ)`` and period ``P_j = x²/(b_j − r_0)``
    (``x = τ + C``; :func:`ripple`)."""
    d = ren.d
    x = tau + ren.C
    m = d.b.size
    a, P = np.zeros(m), np.full(m, math.inf)
    for j in range(1, m):
        Wj = 0.0
        for r, w in zip(ren.r, ren.w):
            if not r + x < d.b[j]:
                break
            Wj += w
        a[j] = tau * x * abs(d.h[j] - d.h[j - 1]) * math.exp(-d.H[j]) * Wj / (8.0 * ph)
        P[j] = x * x / (d.b[j] - ren.r[0])
    return a, P


def outer_period(ren: _Renewal, tau: float, ph: float, thr: float) -> float:
    """The shortest ripple period (seconds of τ) among the breaks whose ripple ``a_j`` (as in
    :func:`ripple`, at ``tau`` with ``φ = ph``) is at least ``thr``; infinity for none."""
    a, P = _break_ripples(ren, tau, ph)
    return min((P[j] for j in range(1, a.size) if a[j] >= thr), default=math.inf)


GUARD_MIN = 2.0 ** (1.0 / 16.0)  # piecewise guard scan: at most 8 samples a √2 (guard_ratio)


def guard_ratio(ren: _Renewal, tau: float, ph: float, best: float) -> float:
    """The guard scan's ratio to its next sample from ``tau`` (φ = ``ph`` < ``best``) under a piecewise
    hazard (√2 otherwise): √2 suits a smooth φ, but a ripple (:func:`ripple`) as large as the gap
    ``1 − ph/best`` can lift a point between the samples above the best (a large wear-out jump makes a
    peak where a checkpoint of the heaviest restart node ends just before it). The breaks whose ripples
    ``a_j``, with the smaller ones, exceed the gap are sampled at a quarter of their shortest period:
    ``1 + period/(4 τ)`` within ``[GUARD_MIN, √2]``. Returns ``(ratio, rippled)``: rippled (the ripple
    exceeds the gap) also has the scan probe the sharpest kink between its samples (:func:`kink_peak`)."""
    d = ren.d
    gap = 1.0 - ph / best
    if d.family != PIECEWISE or not ph > 0 or not gap > 0:
        return ROOT2, False
    a, P = _break_ripples(ren, tau, ph)
    if not sum(a[1:]) > gap:
        return ROOT2, False
    P = _live_period(a, P, gap)
    return min(max(1.0 + 0.25 * P / tau, GUARD_MIN), ROOT2), True


def kink_peak(ren: _Renewal, lo: float, hi: float) -> float:
    """Piecewise hazard: the kink in ``(lo, hi)`` where φ' falls the most, any index ``i`` (``S(r_q + i x)``
    crosses ``b_j`` at ``x = (b_j − r_q)/i``, φ' falling by ``τ w_q i S(b_j) (h_j − h_{j−1})`` where the
    hazard increases; per node and break the largest ``i`` in the range); −1 for none. A wear-out jump
    makes φ a sawtooth there with its peak at the kink, which samples can miss."""
    d = ren.d
    xlo, xhi = lo + ren.C, hi + ren.C
    best, tk = 0.0, -1.0
    for j in range(1, d.b.size):
        dh = float(d.h[j] - d.h[j - 1])
        if not dh > 0.0:
            continue
        for r, w in zip(ren.r, ren.w):
            if not r + xlo < d.b[j]:
                break
            dd = float(d.b[j] - r)
            i = math.ceil(dd / xlo) - 1.0
            if i < 1.0:
                continue
            xk = dd / i
            if not (xlo < xk < xhi):
                continue
            v = (xk - ren.C) * float(w) * i * math.exp(-d.H[j]) * dh
            if v > best:
                best, tk = v, xk - ren.C
    return tk
RIPPLE_DROP = 0.5  # the ripple search's step: the share of the smooth drop / gap the set-aside ripples may fill


def _live_period(a: np.ndarray, P: np.ndarray, thr: float) -> float:
    """The shortest period ``P_j`` among the breaks left when the smallest ripples ``a_j``, while together
    at most ``thr``, are set aside (infinity for none)."""
    order = np.argsort(a, kind="stable")
    cum, out = 0.0, math.inf
    for j in order:
        if not a[j] > 0.0:
            continue
        if cum + a[j] <= thr:
            cum += a[j]
            continue
        out = min(out, P[j])
    return out


def _ripple_samples(ren: _Renewal, t0: float, best: float, kappa: float, step: float, win: float, K: int,
                    gmin: float, gmax: float):
    """φ (and φ') sampled outwards from ``t0`` (``φ(t0) = best``) to ``t0 (1 ± win)``: ``(cand, line, c0)``,
    the indices in ``line`` of the two best candidates other than t0 (:func:`_sample_candidate`), best
    first, the samples ``[(φ, τ, φ', φ''), ...]`` ascending in τ and t0's index there. The step after a sample at ``t0 (1 + d)`` with value ``v`` is a quarter of the
    shortest period among the breaks whose ripples are not needed there (as in :func:`guard_ratio`):
    a point there beats the best only by a lift above ``g = min(κ d²/2, 1 − v/best)`` (the smooth part's
    drop, the window's own model, and the sample's gap), so the smallest ripples, while together at most
    ``RIPPLE_DROP g``, do not set the step (a margin for the model: with all of g, 1 of 400 seeded broad
    hazards ended 8.9e-6 above a dense grid); never below ``step`` (the window's step, set by the ripples above
    RIPPLE_IGNORE) and at most ``K`` samples a side."""
    a, P = _break_ripples(ren, t0, best)
    seq: list[list[tuple[float, float, float]]] = [[], []]
    for si, sg in enumerate((-1.0, 1.0)):
        dd, v = 0.0, best
        while dd < win and len(seq[si]) < K:
            thr = max(RIPPLE_IGNORE, RIPPLE_DROP * min(0.5 * kappa * dd * dd, 1.0 - v / best))
            dd += max(step, 0.25 * _live_period(a, P, thr) / t0)
            t = t0 * (1.0 + sg * dd)
            v, g, gp = ren.phi(t, want=1) if gmin < t < gmax else (-1.0, 0.0, 0.0)
            seq[si].append((v, t, g, gp))
    line = seq[0][::-1] + [(best, t0, 0.0, 0.0)] + seq[1]
    c0 = len(seq[0])
    cand: list[tuple[float, int]] = []  # (estimated height, index)
    for k in range(len(line)):
        v = None if k == c0 else _sample_candidate(line, c0, k)
        if v is None:
            continue
        if not cand or v > cand[0][0]:
            cand.insert(0, (v, k))
        elif len(cand) < 2 or v > cand[1][0]:
            cand[1:] = [(v, k)]
        del cand[2:]
    return [k for _, k in cand], line, c0


def _sample_bracket(line: list[tuple[float, float, float, float]], k: int) -> tuple[float, float]:
    """The neighbours of sample ``k`` not above it, ``(τ below, τ above)`` (0 for an unknown side): they
    bracket the local maximum an ascent from it looks for."""
    v = line[k][0]
    return (line[k - 1][1] if k > 0 and line[k - 1][0] <= v else 0.0,
            line[k + 1][1] if k < len(line) - 1 and line[k + 1][0] <= v else 0.0)


def _kink_between(ren: _Renewal, line: list[tuple[float, float, float, float]], c0: int,
                  best: float) -> list[float]:
    """Peaks hidden between two samples of ``line`` (``(φ, τ, φ', φ'')`` ascending), at most 3 (one
    evaluation at each decides): where φ rises at both samples k, k + 1 (or falls at both), neither t0,
    a maximum between them needs kinks there (a kink peak where φ' falls, or a smooth maximum past one
    where it rises): the :func:`_peak_probe` from the end sloping into the pair with the highest
    predicted height, if that beats ``best`` (pairs whose first-order rise ``φ + |φ'| Δτ`` does not are
    skipped); and next to t0, where the neighbouring sample slopes up towards it, the
    :func:`_peak_probe` between them short of t0's own kink (φ rising to t0 through a peak and a valley:
    seen 5.6e-5 and 3.9e-5 above the best)."""
    bt, be = -1.0, best
    for k in range(len(line) - 1):
        (va, _, ga, _), (vb, _, gb, _) = line[k], line[k + 1]
        if k == c0 or k + 1 == c0 or not va > 0 or not vb > 0:
            continue
        if not ((ga > 0 and gb > 0) or (ga < 0 and gb < 0)):
            continue
        a, o = (k, k + 1) if ga > 0 else (k + 1, k)  # the end whose slope points into the pair
        if not line[a][0] + abs(line[a][2]) * (line[k + 1][1] - line[k][1]) > be:
            continue  # the first-order rise from that end: too low, skip the model
        tk, est = _peak_probe(ren, line[a][1], line[a][0], line[a][2], line[a][3], line[o][1])
        if tk > 0.0 and est > be:
            be, bt = est, tk
    out = [bt] if bt > 0.0 else []
    t0 = line[c0][1]
    if c0 > 0 and line[c0 - 1][0] > 0 and line[c0 - 1][2] > 0:
        va, ta, ga, ppa = line[c0 - 1]
        tk = _peak_probe(ren, ta, va, ga, ppa, t0 * (1.0 - 4.0 * KINK_EPS))[0]
        if tk > 0.0:
            out.append(tk)
    if c0 + 1 < len(line) and line[c0 + 1][0] > 0 and line[c0 + 1][2] < 0:
        va, ta, ga, ppa = line[c0 + 1]
        tk = _peak_probe(ren, ta, va, ga, ppa, t0 * (1.0 + 4.0 * KINK_EPS))[0]
        if tk > 0.0:
            out.append(tk)
    return out


def _sample_candidate(line: list[tuple[float, float, float, float]], c0: int, k: int):
    """The estimated height when sample ``k`` of ``line`` (``(φ, τ, φ', φ'')`` ascending in τ, t0 at
    ``c0``) starts a candidate local maximum, else None. A sampled local maximum (neither neighbour above
    it) is one, as is a sample whose uphill neighbour (φ' points there) is not above it or lies past the
    samples: a maximum lies between them (a sawtooth peak between quarter-period samples, both of whose
    neighbours may be higher). Not when the uphill neighbour is t0 (its own maximum, probed apart). The
    height: where φ' changes sign towards
    the uphill neighbour u, where the tangents at k and u meet (exact for a tent), else φ(k)."""
    v, t, g, _ = line[k]
    n = len(line)
    if not v > 0:
        return None
    lo_ok = k == 0 or line[k - 1][0] <= v
    hi_ok = k == n - 1 or line[k + 1][0] <= v
    if lo_ok and hi_ok:
        return v
    u = k + 1 if g > 0 else k - 1 if g < 0 else None
    if u is None or u == c0 or (0 <= u < n and not line[u][0] <= v):
        return None
    est = v
    if 0 <= u < n and line[u][0] > 0 and line[u][2] * g < 0:
        vu, tu, gu, _ = line[u]
        ts = min(max((vu - v + g * t - gu * tu) / (g - gu), min(t, tu)), max(t, tu))
        est = v + g * (ts - t)
    return est


def _ripple_search(ren: _Renewal, tb: float, best: float, pp: float, gmin: float,
                   gmax: float) -> tuple[float, float]:
    """The smooth part of φ drops by ``κ d²/2`` (relative) at ``tb (1 + d)``, κ from the leading terms
    ``φ ≈ τ U/(τ + C) − τ G0/2`` (``κ = 2 U C tb² / ((tb + C)³ φ)``; φ'' at tb carries the ripple's own
    curvature), so only ``|d| ≤ √(2 amp/κ)`` can hold a better maximum: sample there, Newton from the
    best sampled candidates (:func:`_sample_candidate`), each within its sampled neighbours, after the
    kink peak :func:`_kink_between` finds, and, on each side, from the first of: by the kink within half
    a step where φ' is predicted to point away from tb the most (:func:`_split_probe`: a valley there can
    split tb's maximum), and ``tb ± step tb/2``, where φ' points away from tb; and search again around any
    better point found (up to 3 rounds). Returns ``(τ, φ(τ))``."""
    for rnd in range(3):
        amp, period = ripple(ren, tb, best)
        if not amp > RIPPLE_SMALL or not math.isfinite(period):
            return tb, best
        x = tb + ren.C
        t0, pp0, best0 = tb, pp, best
        kappa = 2.0 * ren.U * ren.C * tb * tb / (x * x * x * best)
        win = math.sqrt(2.0 * amp / kappa) if kappa * RIPPLE_WIN * RIPPLE_WIN > 2.0 * amp else RIPPLE_WIN
        step = 0.25 * period / tb
        K = int(math.ceil(win / step))
        if K > RIPPLE_K:
            K = RIPPLE_K
            step = win / K
        cand, line, c0 = _ripple_samples(ren, t0, best, kappa, step, win, K, gmin, gmax)
        moved = 0.0
        for tk in _kink_between(ren, line, c0, best):  # sawtooth peaks hidden between samples
            if gmin < tk < gmax:
                pk, _, ppk = ren.phi(tk)
                if pk > best:
                    tb, best, pp, moved = tk, pk, ppk, abs(tk / t0 - 1.0)
        for i, k in enumerate(cand + [None, None]):  # the sampled candidates, then one probe a side
            if k is not None:  # from the sample (its φ, φ', φ''), between its neighbours
                v, t, g, gp = line[k]
                first, br = (v, g, gp), _sample_bracket(line, k)
            else:  # by the kink raising φ' the most within half a step, then half a step
                br = None
                sign = 1.0 if i == len(cand) else -1.0
                half = 0.5 * step * t0
                tk = _split_probe(ren, t0, pp0, 0 if sign > 0 else 1, half)
                probes = ([tk] if tk > 0.0 else []) + [t0 + sign * half]
                for t in probes:
                    if gmin < t < gmax:
                        first = ren.phi(t)
                        if first[1] * sign > 0:
                            break
                else:
                    continue
            t2, p2, pp2 = _local_max(ren, t, gmin, gmax, first, br, 1.0 + step if i < len(cand) else UPHILL)
            if p2 > best:
                tb, best, pp, moved = t2, p2, pp2, abs(t2 / t0 - 1.0)
        if rnd == 0 and kappa * RIPPLE_WIN * RIPPLE_WIN < 2.0 * amp:
            # the window was capped: a ripple this large can make maxima anywhere between the guard
            # scan's √2 samples, so the bands out to them are sampled too (a quarter of the shortest
            # period among the breaks whose ripple a_j is at least a quarter of the smooth drop at the
            # window's edge, at most RIPPLE_KO points a side) and Newton runs from the best sampled maximum
            bs, bt, bbr, bso = -1.0, 0.0, [0.0, 0.0], 0.0
            for side in (0, 1):
                lim = 1.0 - 1.0 / ROOT2 if side else ROOT2 - 1.0
                so = 0.25 * outer_period(ren, t0, best0, 0.125 * kappa * RIPPLE_WIN * RIPPLE_WIN) / t0
                if not (so > 0 and math.isfinite(so)):
                    so = (lim - RIPPLE_WIN) / RIPPLE_KO
                n = int(math.ceil((lim - RIPPLE_WIN) / so))
                if n > RIPPLE_KO:
                    n = RIPPLE_KO
                    so = (lim - RIPPLE_WIN) / n
                prev2 = prev = -1.0
                tp = tp2 = 0.0
                for i in range(n + 2):  # i = n + 1 flushes the last sample
                    d = RIPPLE_WIN + i * so
                    t = t0 * (1.0 + (-d if side else d))
                    v = ren.phi(t, want=0)[0] if i <= n and gmin < t < gmax else -1.0
                    if i >= 1 and prev > 0 and prev >= v and (i == 1 or prev > prev2) and prev > bs:
                        bs, bt = prev, tp
                        # its neighbours in the band bracket its local maximum (the inner one of the
                        # band's first sample is not sampled; past the last, the range's end)
                        bbr[1 - side] = t if i <= n else 0.0
                        bbr[side] = tp2 if i >= 2 else 0.0
                        bso = so
                    prev2, prev, tp2, tp = prev, v, tp, t
            if bs > 0:
                t2, p2, pp2 = _local_max(ren, bt, gmin, gmax, None, tuple(bbr), 1.0 + bso)
                if p2 > best:
                    tb, best, pp, moved = t2, p2, pp2, abs(t2 / t0 - 1.0)
        if not moved > 0.0:
            break
    return tb, best
