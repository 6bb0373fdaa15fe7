"""NumPy/SciPy twin of the baseline checkpoint optimiser ``_core.ckpt_optimize_grid`` (``checkpoint_grid.c``).

This is the kernel the package shipped before the sums of ``checkpoint.c`` (now ``checkpoint_sums.c``) were rewritten, kept callable
(C and twin) only so that ``benchmarks/bench_solver.py`` can print the speed-up of the current kernel
over it in the same run. Same model, older algorithm: a geometric grid of ratio √2 on
``[1e-3 min(C, E[F]), min(W, 1e3 E[F])]`` then Brent's method on ``φ'(τ)``; Weibull sums term by term
while ``x h(t) > 0.02`` (and for at least 16 terms), then Euler-Maclaurin through the B4 term.
"""
from __future__ import annotations

import math

import numpy as np
from scipy import optimize

from acmemodel.planner.reference import (  # noqa: F401
    DNF_CKPT_GE_MTTF, DNF_NO_PROGRESS, EXPONENTIAL, OK, WEIBULL, _Dist,
)

STOP = 1e-17      # direct sums stop at a term below this fraction of the sum
EM_EPS = 0.02     # Euler-Maclaurin once the summand changes by less than this per step
EM_NMIN = 16      # ... after at least this many direct terms
NCAP = 10_000_000


def _weibull_derivs(d: _Dist, t: float):
    """(S, S', S''', f, f', f'', f''') of a Weibull at t (f = h S)."""
    k = d.k
    z = (t / d.lam) ** k
    S = math.exp(-z)
    h = k * z / t
    h1 = (k - 1.0) * h / t
    h2 = (k - 2.0) * h1 / t
    h3 = (k - 3.0) * h2 / t
    return (S, -h * S, (-h ** 3 + 3 * h * h1 - h2) * S, h * S, (h1 - h * h) * S,
            (h2 - 3 * h * h1 + h ** 3) * S, (h3 - 4 * h * h2 - 3 * h1 * h1 + 6 * h * h * h1 - h ** 4) * S)


def _weibull_em(d: _Dist, r: float, x: float, n0: float, n1: float | None) -> tuple[float, float]:
    """Euler-Maclaurin (through B4) for Σ_{i=n0}^{n1} S(r+ix) and Σ i f(r+ix); n1=None: infinity."""
    def ends(n):
        a = r + n * x
        I = d.tail_integral(a)
        S, S1, S3, f, f1, f2, f3 = _weibull_derivs(d, a)
        return (I / x, ((a - r) * S + I) / x ** 2, S, n * f, x * S1, x ** 3 * S3,
                f + n * x * f1, 3 * x * x * f2 + n * x ** 3 * f3)

    e0 = ends(n0)
    e1 = ends(n1) if n1 is not None else (0.0,) * 8
    sS = (e0[0] - e1[0]) + 0.5 * (e0[2] + e1[2]) + (e1[4] - e0[4]) / 12.0 - (e1[5] - e0[5]) / 720.0
    sIF = (e0[1] - e1[1]) + 0.5 * (e0[3] + e1[3]) + (e1[6] - e0[6]) / 12.0 - (e1[7] - e0[7]) / 720.0
    return sS, sIF


def _weibull_sums(d: _Dist, r: float, x: float) -> tuple[float, float]:
    """Direct terms while the summand changes fast, then Euler-Maclaurin (see checkpoint_sums.c)."""
    k = d.k
    sumS = sumIF = 0.0
    i = 1
    while True:
        t = r + i * x
        s = float(d.surv(t))
        fd = float(d.hazard(t)) * s if s > 0 else 0.0
        sumS += s
        sumIF += i * fd
        if s <= STOP * sumS:
            return sumS, sumIF
        if i + 1 >= EM_NMIN and (k > 1 or i + 1 > NCAP or x * float(d.hazard(r + (i + 1) * x)) <= EM_EPS):
            i += 1
            break
        i += 1
    if k <= 1:
        a, b = _weibull_em(d, r, x, float(i), None)
        return sumS + a, sumIF + b
    t1 = d.lam * (EM_EPS * d.lam / (k * x)) ** (1.0 / (k - 1.0))
    n1 = min(math.floor((t1 - r) / x), 1e15)
    if n1 > i + 1.0:
        a, b = _weibull_em(d, r, x, float(i), float(n1))
        sumS += a
        sumIF += b
        i = int(n1) + 1
    # direct terms until negligible (vectorised in blocks)
    while i <= NCAP:
        ii = np.arange(i, i + 256, dtype=float)
        t = r + ii * x
        s = d.surv(t)
        fd = np.where(s > 0, d.hazard(t) * s, 0.0)
        cs = sumS + np.cumsum(s)
        stop = np.nonzero(s <= STOP * cs)[0]
        n = stop[0] + 1 if stop.size else ii.size
        sumS += float(s[:n].sum())
        sumIF += float((ii[:n] * fd[:n]).sum())
        if stop.size:
            break
        i += 256
    return sumS, sumIF


def _geometric_sums(delta: float, c: float | None) -> tuple[float, float]:
    """(Σ_{m<c} q^m, Σ_{m<c} m q^m), q = e^{−δ}; c None = infinity."""
    if c is None:
        omq = -math.expm1(-delta)
        return 1.0 / omq, math.exp(-delta) / omq ** 2
    if delta == 0.0:
        return c, 0.5 * c * (c - 1.0)
    if c * delta < 0.05 and c <= 4096:
        m = np.arange(int(c), dtype=float)
        qm = np.exp(-delta) ** m
        return float(qm.sum()), float((m * qm).sum())
    omq = -math.expm1(-delta)
    A = -math.expm1(-c * delta) / omq
    return A, (math.exp(-delta) * A - c * math.exp(-c * delta)) / omq


def _first_index_at(r: float, x: float, b: float) -> float:
    i = max(1.0, math.ceil((b - r) / x))
    while i > 1.0 and r + (i - 1.0) * x >= b:
        i -= 1.0
    while r + i * x < b:
        i += 1.0
    return i


def _piecewise_sums(d: _Dist, r: float, x: float) -> tuple[float, float]:
    """Inside piece j the terms S(r + i x) form a geometric series of ratio e^{−h_j x}: exact sums."""
    sumS = sumIF = 0.0
    m = d.b.size
    for j in range(m):
        ilo = _first_index_at(r, x, d.b[j])
        c = None
        if j < m - 1:
            c = _first_index_at(r, x, d.b[j + 1]) - ilo
            if c <= 0:
                continue
        S_lo = math.exp(-(d.H[j] + d.h[j] * (r + ilo * x - d.b[j])))
        if S_lo == 0.0:
            break
        A, B = _geometric_sums(d.h[j] * x, c)
        sumS += S_lo * A
        sumIF += d.h[j] * S_lo * (ilo * A + B)
    return sumS, sumIF


def _sums_node(d: _Dist, r: float, x: float) -> tuple[float, float]:
    """(Σ_i S(r + i x), Σ_i i f(r + i x)) for one restart node (general families)."""
    if d.family == WEIBULL:
        return _weibull_sums(d, r, x)
    return _piecewise_sums(d, r, x)


def _renewal_terms(d: _Dist, tau: float, C: float, rn, rw) -> tuple[float, float]:
    x = tau + C
    rn = np.asarray(rn, dtype=float)
    rw = np.asarray(rw, dtype=float)
    if d.family == EXPONENTIAL:
        L = float(np.sum(rw * np.exp(-rn / d.M)))
        em = math.expm1(x / d.M)
        return L / em, -L * math.exp(x / d.M) / (d.M * em * em)
    en = dd = 0.0
    for r, w in zip(rn, rw):
        if w == 0:
            continue
        s, sf = _sums_node(d, float(r), x)
        en += w * s
        dd += w * sf
    return en, -dd


def ckpt_terms_grid(tau, ckpt, family, params, r_nodes, r_weights):
    """Twin of ``_core.ckpt_terms_grid``: ``(E[F], E[N](tau), dE[N]/dtau)`` for one scenario."""
    d = _Dist(family, params)
    en, den = _renewal_terms(d, float(tau), float(ckpt), r_nodes, r_weights)
    return d.mean, en, den


def _expected_time_one(d: _Dist, tau, W, C, rn, rw) -> tuple[float, int]:
    te = min(tau, W)
    if C >= d.mean:
        return math.inf, DNF_CKPT_GE_MTTF
    with np.errstate(over="ignore", divide="ignore"):
        if d.family == EXPONENTIAL:
            L = float(np.sum(rw * np.exp(-np.asarray(rn) / d.M)))
            et = W * d.M * np.expm1((te + C) / d.M) / (te * L) if L > 0 else math.inf
        else:
            en, _ = _renewal_terms(d, te, C, rn, rw)
            et = W * d.mean / (te * en) if en > 0 else math.inf
    et = float(et)
    if not math.isfinite(et) or et <= 0:
        return math.inf, DNF_NO_PROGRESS
    return et, OK


def ckpt_expected_time_grid(tau, work, ckpt, family, params, r_nodes, r_weights):
    """Twin of ``_core.ckpt_expected_time_grid``: ``(E[T] per scenario, status per scenario)``."""
    tau, work, ckpt = (np.asarray(a, dtype=float) for a in (tau, work, ckpt))
    params, r_nodes, r_weights = (np.asarray(a, dtype=float) for a in (params, r_nodes, r_weights))
    n = work.size
    if family == EXPONENTIAL:  # vectorised closed form
        M = params[:, 0]
        te = np.minimum(tau, work)
        with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
            L = np.sum(r_weights * np.exp(-r_nodes / M[:, None]), axis=1)
            et = work * M * np.expm1((te + ckpt) / M) / (te * L)
        status = np.where(ckpt >= M, DNF_CKPT_GE_MTTF,
                          np.where(np.isfinite(et) & (et > 0), OK, DNF_NO_PROGRESS)).astype(np.int32)
        return np.where(status == OK, et, np.inf), status
    et = np.empty(n)
    st = np.empty(n, dtype=np.int32)
    for i in range(n):
        d = _Dist(family, params[i])
        et[i], st[i] = _expected_time_one(d, tau[i], work[i], ckpt[i], r_nodes[i], r_weights[i])
    return et, st


def _dphi(d, tau, C, rn, rw):
    if d.family == EXPONENTIAL:
        u, v = tau / d.M, (tau + C) / d.M
        return math.expm1(v) - u * math.exp(v)
    en, den = _renewal_terms(d, tau, C, rn, rw)
    return en + tau * den


def _phi(d, tau, C, rn, rw):
    en, _ = _renewal_terms(d, tau, C, rn, rw)
    return tau * en


def _optimize_one(d: _Dist, W, C, rn, rw) -> float:
    def f(t):
        return _dphi(d, t, C, rn, rw)

    if d.family == EXPONENTIAL:
        hi = min(d.M, W)
        if f(hi) >= 0:
            return hi
        return optimize.brentq(f, 0.0, hi, xtol=1e-300, rtol=4 * np.finfo(float).eps, maxiter=500)
    ratio = math.sqrt(2.0)
    gmin = 1e-3 * min(C, d.mean)
    gmax = min(1e3 * d.mean, W)
    if gmin >= gmax:
        gmin = 0.5 * gmax
    last = int(math.ceil(math.log(gmax / gmin) / math.log(ratio)))
    grid = gmin * ratio ** np.arange(last + 1, dtype=float)
    grid[last] = gmax
    vals = np.array([_phi(d, t, C, rn, rw) for t in grid])
    ib = int(np.argmax(vals))
    prev = gmin / ratio if ib == 0 else grid[ib - 1]
    if ib == last:
        if f(gmax) >= 0:
            return gmax
        nxt = gmax
    else:
        nxt = grid[ib + 1]
    flo, fhi = f(prev), f(nxt)
    if flo > 0 and fhi < 0:
        return optimize.brentq(f, prev, nxt, xtol=1e-300, rtol=4 * np.finfo(float).eps, maxiter=500)
    res = optimize.minimize_scalar(lambda t: -_phi(d, t, C, rn, rw), bounds=(prev, nxt),
                                   method="bounded", options={"xatol": 1e-10 * nxt})
    return float(res.x)


def ckpt_optimize_grid(work, ckpt, family, params, r_nodes, r_weights):
    """Twin of ``_core.ckpt_optimize_grid``: ``(tau*, E[T](tau*), status)`` per scenario."""
    work, ckpt = (np.asarray(a, dtype=float) for a in (work, ckpt))
    params, r_nodes, r_weights = (np.asarray(a, dtype=float) for a in (params, r_nodes, r_weights))
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


