"""NumPy/SciPy twin of every C kernel of ``acmemodel._solver._core`` (same signatures, same returns).

The twins are the readable statement of what the C code computes and are used by the tests
(``tests/test_checkpoint.py``, ``tests/test_montecarlo.py``) and ``benchmarks/bench_solver.py``:

* :func:`ckpt_terms`, :func:`ckpt_expected_time`, :func:`ckpt_optimize` — the renewal-reward
  checkpoint model of ``checkpoint.c`` (deterministic: agree with C to ~1e-12 relative), the same
  sums (direct terms then Euler–Maclaurin through B20; geometric series per hazard piece, node by
  node here where the C kernel sums the nodes of a piece together) and the same optimiser (in
  :mod:`.optimum`: safeguarded Newton, bounded guard scan, ripple search
  under a piecewise hazard); exponential: :func:`scipy.optimize.brentq`.
* ``mc_run`` (in :mod:`.montecarlo`) — the run simulator of ``montecarlo.c``, one
  replica at a time, one checkpoint segment at a time (no event skipping), with NumPy ``Generator``
  streams seeded by ``(seed, replica)``: the same model but different random numbers, so it agrees
  with C within sampling error only.

Model (see ``checkpoint.c``): failures form a renewal process whose clock restarts at each failure;
``F`` is the time between failures (mean ``E[F]``), a restart ``R`` follows each failure (failures
possible during it), checkpoints of cost ``C`` every ``tau`` s of work (``x = tau + C``). With
``E[N](tau) = Σ_q w_q Σ_{i≥1} S(r_q + i x)`` completed checkpoints per cycle,
``E[T](tau) = W E[F] / (tau E[N])``, which for exponential failures is Daly's complete model
``M e^{R/M} (e^{(tau+C)/M} − 1) W / tau``.
"""
from __future__ import annotations

import math

import numpy as np
from scipy import special

from acmemodel._solver.reference import quadrature

EXPONENTIAL, WEIBULL, PIECEWISE = 0, 1, 2
OK, DNF_CKPT_GE_MTTF, DNF_NO_PROGRESS, DNF_WALL_CAP = 0, 1, 2, 3
STOP = 1e-17      # direct sums stop at a term below this fraction of the sum
EM_EPS = 1.0      # Euler-Maclaurin once the summand changes by less than this per step (x h(t) <= EM_EPS)
EM_DMIN = 5.0     # ... and the start t is at least this many steps x from the singular point t = 0
NCAP = 10_000_000
EPS = float(np.finfo(float).eps)


# ------------------------------------------------------------------------------------ distributions
class _Dist:
    """One failure-time distribution (a row of the kernel's ``params``)."""

    def __init__(self, family: int, p: np.ndarray):
        p = np.asarray(p, dtype=float)
        self.family = family
        if family == EXPONENTIAL:
            self.M = p[0]
            self.mean = p[0]
            self.mode = 0.0
        elif family == WEIBULL:
            self.k, self.lam = p[0], p[1]
            self.mean = self.lam * math.gamma(1.0 + 1.0 / self.k)
            self.mode = self.lam * ((self.k - 1.0) / self.k) ** (1.0 / self.k) if self.k > 1.0 else 0.0
        elif family == PIECEWISE:
            m = p.size // 2
            self.b, self.h = p[:m], p[m:]
            self.H = np.concatenate([[0.0], np.cumsum(self.h[:-1] * np.diff(self.b))])
            self.hmin_from = np.minimum.accumulate(self.h[::-1])[::-1]  # least hazard from piece j on
            up = np.nonzero(self.h[1:] > self.h[:-1])[0]
            self.mode = float(self.b[up[-1] + 1]) if up.size else 0.0
            s = np.exp(-self.H)
            d = np.diff(self.b)
            with np.errstate(divide="ignore", invalid="ignore"):
                inner = np.where(self.h[:-1] > 0, -s[:-1] * np.expm1(-self.h[:-1] * d) / self.h[:-1],
                                 s[:-1] * d)
            self.mean = float(inner.sum() + s[-1] / self.h[-1])
        else:
            raise ValueError(f"family must be 0, 1 or 2, got {family!r}")

    def _piece(self, t):
        return np.searchsorted(self.b, t, side="right") - 1

    def cumhaz(self, t):
        t = np.asarray(t, dtype=float)
        if self.family == EXPONENTIAL:
            return t / self.M
        if self.family == WEIBULL:
            return (t / self.lam) ** self.k
        j = self._piece(t)
        return self.H[j] + self.h[j] * (t - self.b[j])

    def hazard(self, t):
        t = np.asarray(t, dtype=float)
        if self.family == EXPONENTIAL:
            return np.full_like(t, 1.0 / self.M)
        if self.family == WEIBULL:
            return self.k / self.lam * (t / self.lam) ** (self.k - 1.0)
        return self.h[self._piece(t)]

    def surv(self, t):
        return np.exp(-self.cumhaz(t))

    def tail_integral(self, a: float) -> float:
        """∫_a^∞ S(t) dt."""
        if self.family == EXPONENTIAL:
            return self.M * math.exp(-a / self.M)
        if self.family == WEIBULL:
            z = (a / self.lam) ** self.k
            return self.lam / self.k * special.gamma(1.0 / self.k) * special.gammaincc(1.0 / self.k, z)
        j = int(self._piece(a))
        tot, start = 0.0, a
        for i in range(j, self.b.size):
            sb = float(self.surv(a)) if i == j else math.exp(-self.H[i])
            if i == self.b.size - 1:
                tot += sb / self.h[i]
            else:
                d = self.b[i + 1] - start
                tot += -sb * math.expm1(-self.h[i] * d) / self.h[i] if self.h[i] > 0 else sb * d
                start = self.b[i + 1]
        return tot

    def inv_cumhaz(self, e: float) -> float:
        if self.family == EXPONENTIAL:
            return e * self.M
        if self.family == WEIBULL:
            return self.lam * e ** (1.0 / self.k)
        j = int(np.searchsorted(self.H, e, side="right") - 1)
        while j < self.b.size - 1 and self.h[j] == 0:
            j += 1
        return self.b[j] + (e - self.H[j]) / self.h[j]


# ------------------------------------------------------------------------------------ checkpoint
#: Bernoulli numbers B_2 .. B_20 of the Euler-Maclaurin corrections (EM_P = 10 terms)
BERNOULLI = (1.0 / 6.0, -1.0 / 30.0, 1.0 / 42.0, -1.0 / 30.0, 5.0 / 66.0, -691.0 / 2730.0, 7.0 / 6.0,
             -3617.0 / 510.0, 43867.0 / 798.0, -174611.0 / 330.0)
EM_P = len(BERNOULLI)
NTAY = 2 * EM_P + 2   # Taylor coefficients c_0..c_{2P+1} of S at the Euler-Maclaurin start
PRUNE = 1e-18         # a restart node is skipped when w I(r)/x (a bound on its sum) is below this x E[N]
CLUSTER_DELTA = 0.05  # Weibull: nodes within DELTA min(r_0 + x, 1/h) of the least r_0 ...
CLUSTER_N = 4         # ... are summed as their Gauss rule of this many points ...
CLUSTER_MIN = 6       # ... when there are at least this many
CLUSTER_Z = 10.0      # ... h: the hazard at r_0 + x, or (k > 1) at z = (t / lambda)^k = Z if that is later
ROOT2 = math.sqrt(2.0)
EM_MINRUN = 24.0  # k > 1: Euler-Maclaurin between i and n1 only when n1 − i exceeds this
TAIL_NEGLIGIBLE = 46.0  # k > 1: z(t1) − z(a) beyond this (S ratio < 1e-20): no upper Euler-Maclaurin end


def _weibull_taylor(d: _Dist, a: float, x: float) -> np.ndarray:
    """``ĉ_n`` with ``S(a + v x) = Σ_n ĉ_n v^n`` (n < NTAY): ``S(a) exp(−y(v))``,
    ``y(v) = z((1 + v x/a)^k − 1) = Σ_{n≥1} z C(k, n) (x/a)^n v^n``; ``n e_n = −Σ_j j y_j e_{n−j}``."""
    k = d.k
    z = (a / d.lam) ** k
    rho = x / a
    y = np.zeros(NTAY)
    b, p = 1.0, 1.0
    for n in range(1, NTAY):
        b *= (k - n + 1) / n
        p *= rho
        y[n] = z * b * p
    e = np.zeros(NTAY)
    e[0] = 1.0
    for n in range(1, NTAY):
        s = 0.0
        for j in range(1, n + 1):
            s += j * y[j] * e[n - j]
        e[n] = -s / n
    return math.exp(-z) * e


def _em_end(d: _Dist, r: float, x: float, n: float, tol: float = 0.0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """At the index ``n`` (t = a = r + n x), for ``g0(u) = S(r+ux)``, ``g1(u) = u f(r+ux)``,
    ``g2(u) = u² f'(r+ux)``: the tail integrals ``J = ∫_n^∞ g``, the halves ``H = g(n)/2`` and the
    corrections ``K = Σ_p B_2p/(2p) ĝ_{2p−1}`` (ĝ_j: Taylor coefficients in ``u − n``), so that
    ``Σ_{i≥n} g(i) = J + H − K`` and ``Σ_{i=n0}^{n1} g(i) = J(n0) − J(n1) + H(n0) + H(n1) + K(n1) − K(n0)``
    up to the remainder ``≈ 2 ζ(16) (ε/2π)^16`` of the sum (ε: relative change of g per step). The sum
    over p stops after two consecutive g0 terms below ``STOP`` of ``J0 + H0`` or below ``tol`` (the
    node's error budget from E[N], :meth:`_Renewal.terms`; a node far from the branch point of S with a
    slowly varying hazard needs a few)."""
    a = r + n * x
    c = _weibull_taylor(d, a, x)
    I = d.tail_integral(a)
    S, fa = c[0], -c[1] / x
    m = np.arange(NTAY - 1, dtype=float)
    F = np.zeros(NTAY)
    F[:NTAY - 1] = -(m + 1) * c[1:] / x                               # f(a + v x) = Σ F_m v^m
    F2 = np.zeros(NTAY)
    F2[:NTAY - 2] = -(m[:-1] + 1) * (m[:-1] + 2) * c[2:] / (x * x)   # f'(a + v x)
    g0 = c
    g1 = n * F + np.concatenate([[0.0], F[:-1]])
    g2 = n * n * F2 + 2 * n * np.concatenate([[0.0], F2[:-1]]) + np.concatenate([[0.0, 0.0], F2[:-2]])
    w = (a - r) * S + I
    J = np.array([I / x, w / x ** 2, (-(a - r) ** 2 * fa - 2.0 * w) / x ** 3])
    H = 0.5 * np.array([g0[0], g1[0], g2[0]])
    K = np.zeros(3)
    small_prev = False
    lim = max(STOP * (J[0] + H[0]), tol)
    for p, B in enumerate(BERNOULLI, start=1):  # stop after two g0 terms below lim
        for q, g in enumerate((g0, g1, g2)):
            K[q] += B / (2 * p) * g[2 * p - 1]
        small = abs(B / (2 * p) * g0[2 * p - 1]) <= lim
        if small and small_prev:
            break
        small_prev = small
    return J, H, K


def _weibull_direct(d: _Dist, t: float, i: float) -> tuple[float, float, float, float]:
    """(S, i f, i² f', x-free hazard h) at ``t = r + i x``."""
    z = (t / d.lam) ** d.k
    s = math.exp(-z)
    h = d.k * z / t
    f = h * s
    f1 = ((d.k - 1.0) * h / t - h * h) * s
    return s, i * f, i * i * f1, h


def _em_upper_index(d: _Dist, r: float, x: float) -> float:
    """k > 1: ``n1 = min(floor((t1 − r)/x), 1e15)``, ``t1 = λ (EM_EPS λ/(k x))^(1/(k−1))`` the point where
    ``x h(t1) = EM_EPS`` (as ``checkpoint_sums.c``). For k near 1 the exponent ``1/(k−1)`` is huge and
    ``t1`` exceeds the float range (C: ``inf``, then capped to 1e15). The cap is decided first, from
    ``log t1`` with a factor 2 margin: if ``log t1 > log(r + 2e15 x)`` (far beyond float rounding of the
    log, ~1e-13 relative) then ``(t1 − r)/x > 1e15`` and n1 = 1e15, the C result; otherwise ``t1 <
    2.0001 (r + 2e15 x)`` is finite and is computed by the unchanged direct formula, bit for bit the value
    used before (so in-range values do not change)."""
    k = d.k
    base = EM_EPS * d.lam / (k * x)
    if math.log(d.lam) + math.log(base) / (k - 1.0) > math.log(r + 2e15 * x):
        return 1e15
    t1 = d.lam * base ** (1.0 / (k - 1.0))
    return min(math.floor((t1 - r) / x), 1e15)


def _weibull_sums(d: _Dist, r: float, x: float, tol: float = 0.0) -> np.ndarray:
    """``(Σ_i S(r+ix), Σ_i i f(r+ix), Σ_i i² f'(r+ix))``, i ≥ 1: direct terms until ``t ≥ EM_DMIN x``
    and ``x h(t) ≤ EM_EPS``, then Euler-Maclaurin through B20 to infinity (k ≤ 1) or up to where
    ``x h = EM_EPS`` followed by direct terms (k > 1). A term or correction below ``tol`` (the node's
    error budget from E[N]) ends its sum too, as one below ``STOP`` of the node's own sum does."""
    k = d.k
    acc = np.zeros(3)
    i = 1
    while True:
        t = r + i * x
        s, a1, a2, h = _weibull_direct(d, t, float(i))
        if t >= EM_DMIN * x and (x * h <= EM_EPS or k > 1.0) and i <= NCAP:
            break
        acc += (s, a1, a2)
        if s <= STOP * acc[0] or s <= tol or i > NCAP:
            return acc
        i += 1
    if k <= 1.0:
        J, H, K = _em_end(d, r, x, float(i), tol)
        return acc + J + H - K
    n1 = _em_upper_index(d, r, x)
    if n1 - i <= EM_MINRUN:
        pass  # a short run to t1: term by term with the rest (cheaper than two Euler-Maclaurin ends)
    elif ((r + n1 * x) / d.lam) ** k - ((r + i * x) / d.lam) ** k > TAIL_NEGLIGIBLE:
        J, H, K = _em_end(d, r, x, float(i), tol)  # S(t1) < 1e-20 S(a): the range is [i, infinity)
        return acc + J + H - K
    else:
        J0, H0, K0 = _em_end(d, r, x, float(i), tol)
        J1, H1, K1 = _em_end(d, r, x, float(n1), tol)
        acc += (J0 - J1) + (H0 + H1) + (K1 - K0)
        i = int(n1) + 1
    while i <= NCAP:
        t = r + i * x
        s, a1, a2, _ = _weibull_direct(d, t, float(i))
        acc += (s, a1, a2)
        if s <= STOP * acc[0] or s <= tol:
            break
        i += 1
    return acc


def _geometric_sums(delta: float, c: float | None, omq: float | None = None) -> tuple[float, float, float]:
    """``(Σ_{m<c} q^m, Σ m q^m, Σ m² q^m)``, ``q = e^{−δ}``, ``omq = 1 − q`` (computed if not given);
    ``c`` None = infinity. Closed forms: ``(1−q) B = A − 1 − (c−1) q^c``, ``(1−q) D = 2B − A + 1 − (c−1)² q^c``."""
    if omq is None:
        omq = -math.expm1(-delta)
    q = 1.0 - omq
    rq = 1.0 / omq if omq > 0.0 else math.inf  # the C kernel: one division per piece (1/0 = inf there)
    if c is None:
        return rq, q * rq * rq, q * (1.0 + q) * (rq * rq * rq)
    if delta == 0.0:
        return c, 0.5 * c * (c - 1.0), (c - 1.0) * c * (2.0 * c - 1.0) / 6.0
    if c * delta < 0.05 and c <= 4096:
        m = np.arange(int(c), dtype=float)
        qm = np.exp(-delta) ** m
        return float(qm.sum()), float((m * qm).sum()), float((m * m * qm).sum())
    em = math.expm1(-c * delta)
    qc = 1.0 + em
    A = -em * rq
    B = (A - 1.0 - (c - 1.0) * qc) * rq
    D = (2.0 * B - A + 1.0 - (c - 1.0) ** 2 * qc) * rq
    return A, B, D


def _first_index_at(r: float, x: float, b: float) -> float:
    """First index ``i ≥ 1`` with ``r + i x ≥ b``."""
    i = max(1.0, math.ceil((b - r) / x))
    while i > 1.0 and r + (i - 1.0) * x >= b:
        i -= 1.0
    while r + i * x < b:
        i += 1.0
    return i


def _piecewise_sums(d: _Dist, r: float, x: float) -> np.ndarray:
    """Inside piece j the terms ``S(r + i x)`` form a geometric series of ratio ``e^{−h_j x}`` and
    ``f = h_j S``, ``f' = −h_j² S``: exact sums piece by piece; stops once the rest is below
    ``STOP`` of the sum (bounded by ``S_lo / (1 − e^{−h_min x})``, ``h_min`` the least hazard to come)."""
    acc = np.zeros(3)
    m = d.b.size
    for j in range(m):
        ilo = _first_index_at(r, x, d.b[j])
        c = None
        if j < m - 1:
            c = _first_index_at(r, x, d.b[j + 1]) - ilo
            if c <= 0:
                continue
        S_lo = math.exp(-(d.H[j] + d.h[j] * (r + ilo * x - d.b[j])))
        hm = d.hmin_from[j]
        if S_lo == 0.0 or (hm > 0 and S_lo <= STOP * acc[0] * -math.expm1(-hm * x)):
            break
        A, B, D = _geometric_sums(d.h[j] * x, c)
        hj = d.h[j]
        acc += (S_lo * A, hj * S_lo * (ilo * A + B), -hj * hj * S_lo * (ilo * ilo * A + 2 * ilo * B + D))
    return acc


def _sums_node(d: _Dist, r: float, x: float, tol: float = 0.0) -> np.ndarray:
    """``(Σ_i S(r + i x), Σ_i i f(r + i x), Σ_i i² f'(r + i x))`` for one restart node (Weibull: ``tol``
    the absolute error budget of its sums, :meth:`_Renewal.terms`)."""
    if d.family == WEIBULL:
        return _weibull_sums(d, r, x, tol)
    return _piecewise_sums(d, r, x)


class _Renewal:
    """One scenario's renewal terms ``E[N](τ)`` and its first two τ-derivatives (general families).

    Restart nodes are visited in increasing ``r``; a node whose bound ``w I(r) / x`` on its share of
    ``E[N]`` (``Σ_i S(r + i x) ≤ I(r)/x``, ``I(r) = ∫_r^∞ S``, S decreasing) is below ``PRUNE`` of the
    running sum is skipped. Weibull: a node's sums stop at terms below ``STOP`` of the running E[N]
    (over its weight) as well as below ``STOP`` of its own sum: the error budget is relative to E[N],
    not to each node's share (a node of share 1e-6 needs no 1e-17 of itself). ``U = Σ w I(r) =
    E[(F − R)^+]`` bounds the work saved per cycle.
    """

    def __init__(self, d: _Dist, C: float, rn, rw):
        rn = np.asarray(rn, dtype=float)
        rw = np.asarray(rw, dtype=float)
        order = np.argsort(rn, kind="stable")
        keep = rw[order] > 0
        self.d, self.C = d, C
        self.r = rn[order][keep]
        self.w = rw[order][keep]
        self.I = np.array([d.tail_integral(float(r)) for r in self.r])
        self.U = float(np.sum(self.w * self.I))
        self.G0 = float(np.sum(self.w * d.surv(self.r)))  # P(F > R)
        self.evals = 0
        self._cp, self._cluster = 0, None

    def cluster(self, x: float, bound: bool = False) -> int:
        """Weibull: the number ``p`` of leading nodes within ``CLUSTER_DELTA · min(r_0 + x, 1/h)`` of the
        least ``r_0`` (at least ``CLUSTER_MIN``, else 0), whose ``CLUSTER_N``-point Gauss rule
        (:mod:`.quadrature`, kept in ``self._cluster``) stands for them in functions of ``r + x``:
        ``u ↦ Σ_i S(u + i x)`` is analytic for ``u > −x`` and varies on the scale ``1/h``, so the rule's
        error is ~5e-16 of their share (see ``checkpoint_sums.c``). ``h``: the hazard at ``r_0 + x`` or
        (``k > 1``) at ``z = (t/λ)^k = CLUSTER_Z`` if that is later. ``bound`` (the guard scan's bounds,
        at x far from the evaluations'): the current rule is kept when its prefix is no longer than ``p``
        (its nodes lie within the limit at x, so its error bound holds), instead of a new rule."""
        d = self.d
        if d.family != WEIBULL or self.r.size < CLUSTER_MIN:
            return 0
        t1 = self.r[0] + x
        tz = d.lam * CLUSTER_Z ** (1.0 / d.k)
        th = tz if d.k > 1.0 and tz > t1 else t1
        h = d.k / d.lam * (th / d.lam) ** (d.k - 1.0)
        lim = self.r[0] + CLUSTER_DELTA * (1.0 / h if h * t1 > 1.0 else t1)
        p = int(np.sum(self.r <= lim))
        if p < CLUSTER_MIN:
            return 0
        if bound and 0 < self._cp <= p:
            return self._cp
        if p != self._cp:
            self._cluster = quadrature.gauss_rule(self.r[:p], self.w[:p], CLUSTER_N)
            self._cp = p
        return p

    def _nodes(self, x: float, skip_zero: bool):
        """(r, w) pairs for a function of ``r + x``: the cluster rule, then the other nodes (without those
        whose ``I(r) = 0``, underflow, when ``skip_zero``: the bounds, which keep the current rule as
        :meth:`cluster` with ``bound``); the I's of the others for pruning."""
        p = self.cluster(x, bound=skip_zero)
        rule = list(zip(*self._cluster)) if p else []
        rest = [(r, w, I) for r, w, I in zip(self.r[p:], self.w[p:], self.I[p:]) if not (skip_zero and I == 0.0)]
        return rule, rest

    def saved_bound(self, tau: float) -> float:
        """Upper bound on ``φ(s)`` for every ``s ≥ τ``: ``φ(s) = s E[N](s) ≤ E[D; D ≥ x]`` with
        ``D = (F − R)^+``, ``x = τ + C`` (``s N ≤ D`` and ``N = 0`` unless ``D ≥ x``), decreasing in τ;
        ``E[D; D ≥ x] = Σ_q w_q (x S(r_q + x) + I(r_q + x))`` (Weibull: the cluster rule for the leading
        nodes, nodes with ``I(r_q) = 0`` skipped)."""
        x = tau + self.C
        d = self.d
        rule, rest = self._nodes(x, True)
        s = 0.0
        for r, w in rule + [(r, w) for r, w, _ in rest]:
            s += w * (x * float(d.surv(r + x)) + d.tail_integral(float(r + x)))
        return float(s)

    def weibull_bound(self, tau: float) -> tuple[float, float]:
        """Weibull: ``(ub, e3)``, an upper bound ``ub`` on ``φ(τ)`` without a renewal sum and ``e3 =
        E[D; D ≥ x]`` (:meth:`saved_bound`) from the same terms. Euler-Maclaurin to first order with
        ``g(u) = G(u x)``: ``E[N] = J/x + G(x)/2 + x f_D(x)/12 + R``, ``J = E[(D − x)^+] = Σ w I(r + x)``,
        ``|R| ≤ (1/12) ∫|g''| = (x/12) TV(f_D on [x, ∞)) ≤ (x/12) Σ_q w_q TV(f on [r_q + x, ∞))``; f is
        unimodal (mode ``y*``: the Weibull mode for k > 1, else 0), so ``f(a) + TV = 2 f(max(a, y*))``
        and ``φ(τ) ≤ τ (J/x + G/2 + (x/6) Σ_q w_q f(max(r_q + x, y*)))`` (within ~1 % of φ near the
        optimum: the error is the second-order rounding term). Nodes as in :meth:`saved_bound`."""
        d = self.d
        x = tau + self.C
        ym = d.mode
        fm = 0.0
        if ym > 0.0:
            zm = (ym / d.lam) ** d.k
            fm = d.k * zm * math.exp(-zm) / ym
        rule, rest = self._nodes(x, True)
        G = J = F = 0.0
        for r, w in rule + [(r, w) for r, w, _ in rest]:
            a = float(r + x)
            z = (a / d.lam) ** d.k
            S = math.exp(-z)
            G += w * S
            J += w * d.tail_integral(a)
            F += w * (d.k * z * S / a if a >= ym else fm)
        return float(tau * (J / x + 0.5 * G + x * F / 6.0)), float(x * G + J)

    def surv_d(self, y: float) -> float:
        """``G(y) = P(D ≥ y) = Σ_q w_q S(r_q + y)`` (y > 0; as :meth:`saved_bound`)."""
        rule, rest = self._nodes(y, True)
        s = 0.0
        for r, w in rule + [(r, w) for r, w, _ in rest]:
            s += w * float(self.d.surv(r + y))
        return float(s)

    def terms(self, tau: float) -> tuple[float, float, float]:
        """``(E[N], dE[N]/dτ, d²E[N]/dτ²)`` at ``τ`` (``x = τ + C``); Weibull: the leading nodes by
        their cluster rule (:meth:`cluster`)."""
        self.evals += 1
        x = tau + self.C
        acc = np.zeros(3)
        rule, rest = self._nodes(x, False)
        for r, w in rule:
            acc += w * _sums_node(self.d, float(r), x, STOP * acc[0] / w)
        for r, w, I in rest:
            if w * I / x <= PRUNE * acc[0]:
                continue
            acc += w * _sums_node(self.d, float(r), x, STOP * acc[0] / w)
        return float(acc[0]), -float(acc[1]), -float(acc[2])

    def phi(self, tau: float, want: int = 2) -> tuple[float, float, float]:
        """``(φ, φ', φ'')`` of ``φ(τ) = τ E[N](τ)``, the expected work saved per failure cycle (``want``:
        the C kernel's flag for the derivatives it needs; the twin computes all three)."""
        en, d1, d2 = self.terms(tau)
        return tau * en, en + tau * d1, 2.0 * d1 + tau * d2


def _renewal_terms(d: _Dist, tau: float, C: float, rn, rw) -> tuple[float, float, float]:
    x = tau + C
    rn = np.asarray(rn, dtype=float)
    rw = np.asarray(rw, dtype=float)
    if d.family == EXPONENTIAL:
        L = float(np.sum(rw * np.exp(-rn / d.M)))
        em = math.expm1(x / d.M)
        ex = math.exp(x / d.M)
        return L / em, -L * ex / (d.M * em * em), L * ex * (ex + 1.0) / (d.M * d.M * em ** 3)
    return _Renewal(d, C, rn, rw).terms(tau)


def ckpt_terms(tau, ckpt, family, params, r_nodes, r_weights):
    """Twin of ``_core.ckpt_terms``: ``(E[F], E[N](τ), dE[N]/dτ, d²E[N]/dτ²)`` for one scenario."""
    d = _Dist(family, params)
    en, d1, d2 = _renewal_terms(d, float(tau), float(ckpt), r_nodes, r_weights)
    return d.mean, en, d1, d2


def _expected_time_one(d: _Dist, tau, W, C, rn, rw) -> tuple[float, int]:
    te = min(tau, W)
    if C >= d.mean:
        return math.inf, DNF_CKPT_GE_MTTF
    with np.errstate(over="ignore", divide="ignore"):
        if d.family == EXPONENTIAL:
            L = float(np.sum(rw * np.exp(-np.asarray(rn) / d.M)))
            et = W * d.M * np.expm1((te + C) / d.M) / (te * L) if L > 0 else math.inf
        else:
            en = _renewal_terms(d, te, C, rn, rw)[0]
            et = W * d.mean / (te * en) if en > 0 else math.inf
    et = float(et)
    if not math.isfinite(et) or et <= 0:
        return math.inf, DNF_NO_PROGRESS
    return et, OK


def check_ckpt_values(tau, work, ckpt, family, params, r_nodes, r_weights) -> None:
    """The value checks of ``_core`` (module.c ``check_ckpt_values``): ValueError naming the argument,
    the row and the rule, for the first invalid value."""
    P = params.shape[1]
    for i in range(work.size):
        if tau is not None and tau[i] < 0:
            raise ValueError(f"tau[{i}] must be a checkpoint interval >= 0 s")
        if not (work[i] > 0 and math.isfinite(work[i])):
            raise ValueError(f"work[{i}] must be > 0 s (finite)")
        if not (ckpt[i] >= 0 and math.isfinite(ckpt[i])):
            raise ValueError(f"ckpt[{i}] must be a checkpoint cost >= 0 s (finite)")
        p = params[i]
        if family == EXPONENTIAL:
            if not (p[0] > 0 and math.isfinite(p[0])):
                raise ValueError(f"params[{i}]: exponential failures need a mean time to failure M > 0 (finite)")
        elif family == WEIBULL:
            if P < 2 or not (p[0] > 0 and p[1] > 0 and math.isfinite(p[0]) and math.isfinite(p[1])):
                raise ValueError(f"params[{i}]: Weibull failures need shape k > 0 and scale lambda > 0 (finite)")
        else:
            m = P // 2
            if m < 1 or 2 * m != P:
                raise ValueError(f"params: a piecewise hazard needs 2m columns (m breakpoints, m hazards), got {P}")
            if p[0] != 0.0:
                raise ValueError(f"params[{i}]: the first breakpoint of a piecewise hazard must be 0")
            for j in range(m):
                if not (p[m + j] >= 0 and math.isfinite(p[m + j])) or (j > 0 and not p[j] >= p[j - 1]):
                    raise ValueError(f"params[{i}]: piecewise hazard piece {j}: breakpoints must not decrease "
                                     "and hazards must be finite and >= 0")
            if not p[2 * m - 1] > 0:
                raise ValueError(f"params[{i}]: the last hazard of a piecewise hazard must be > 0 (else a run "
                                 "may never fail and E[T] has no finite bound)")
        rn, rw = r_nodes[i], r_weights[i]
        if not (np.all(rn >= 0) and np.all(np.isfinite(rn)) and np.all(rw >= 0) and np.all(np.isfinite(rw))):
            q = int(np.flatnonzero(~((rn >= 0) & np.isfinite(rn) & (rw >= 0) & np.isfinite(rw)))[0])
            raise ValueError(f"r_nodes/r_weights[{i}, {q}]: restart times must be >= 0 s and weights >= 0 (finite)")
        if not rw.sum() > 0:
            raise ValueError(f"r_weights[{i}] must have a positive sum")


def ckpt_expected_time(tau, work, ckpt, family, params, r_nodes, r_weights):
    """Twin of ``_core.ckpt_expected_time``: ``(E[T] per scenario, status per scenario)``."""
    tau, work, ckpt = (np.asarray(a, dtype=float) for a in (tau, work, ckpt))
    params, r_nodes, r_weights = (np.asarray(a, dtype=float) for a in (params, r_nodes, r_weights))
    check_ckpt_values(tau, work, ckpt, family, params, r_nodes, r_weights)
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
