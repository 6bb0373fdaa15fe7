"""NumPy/SciPy twin of every C kernel of ``acmemodel._solver._core`` (same signatures, same returns).

The twins are the readable statement of what the C code computes and are used by the tests
(``tests/test_checkpoint.py``, ``tests/test_montecarlo.py``) and ``benchmarks/bench_solver.py``:

* :func:`ckpt_terms`, :func:`ckpt_expected_time`, :func:`ckpt_optimize` — the renewal-reward
  checkpoint model of ``checkpoint.c`` (deterministic: agree with C to ~1e-12 relative). The optimum
  uses :func:`scipy.optimize.brentq` on the same bracket rule.
* :func:`mc_run` — the run simulator of ``montecarlo.c``, one replica at a time, one checkpoint segment
  at a time (no event skipping), with NumPy ``Generator`` streams seeded by ``(seed, replica)``: the same
  model but different random numbers, so it agrees with C within sampling error only.

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
from scipy import optimize, special

EXPONENTIAL, WEIBULL, PIECEWISE = 0, 1, 2
OK, DNF_CKPT_GE_MTTF, DNF_NO_PROGRESS, DNF_WALL_CAP = 0, 1, 2, 3
STOP = 1e-17      # direct sums stop at a term below this fraction of the sum
EM_EPS = 0.02     # Euler-Maclaurin once the summand changes by less than this per step
EM_NMIN = 16      # ... after at least this many direct terms
NCAP = 10_000_000


# ------------------------------------------------------------------------------------ distributions
class _Dist:
    """One failure-time distribution (a row of the kernel's ``params``)."""

    def __init__(self, family: int, p: np.ndarray):
        p = np.asarray(p, dtype=float)
        self.family = family
        if family == EXPONENTIAL:
            self.M = p[0]
            self.mean = p[0]
        elif family == WEIBULL:
            self.k, self.lam = p[0], p[1]
            self.mean = self.lam * math.gamma(1.0 + 1.0 / self.k)
        elif family == PIECEWISE:
            m = p.size // 2
            self.b, self.h = p[:m], p[m:]
            self.H = np.concatenate([[0.0], np.cumsum(self.h[:-1] * np.diff(self.b))])
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
    """Direct terms while the summand changes fast, then Euler-Maclaurin (see checkpoint.c)."""
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


def ckpt_terms(tau, ckpt, family, params, r_nodes, r_weights):
    """Twin of ``_core.ckpt_terms``: ``(E[F], E[N](tau), dE[N]/dtau)`` for one scenario."""
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
        if ckpt[i] >= d.mean:
            st[i] = DNF_CKPT_GE_MTTF
            continue
        t = _optimize_one(d, work[i], ckpt[i], r_nodes[i], r_weights[i])
        et[i], st[i] = _expected_time_one(d, t, work[i], ckpt[i], r_nodes[i], r_weights[i])
        if st[i] == OK:
            tau[i] = t
    return tau, et, st


# ------------------------------------------------------------------------------------ Monte Carlo
def _draw_restart(kind: int, a: float, b: float, u2: float, u3: float) -> float:
    if kind == 1:
        return math.exp(a + b * math.sqrt(-2.0 * math.log(u2)) * math.cos(2.0 * math.pi * u3))
    if kind == 2:
        return -a * math.log(u2)
    return a


def mc_run(n_rep, seed, work, tau, ckpt, max_wall, family, params, type_prob, restart_kind, restart_a,
           restart_b, n_threads=1):
    """Twin of ``_core.mc_run`` (see module docstring): dict of per-replica arrays.

    Keys: ``wall``, ``lost``, ``restart``, ``ckpt`` (seconds), ``n_fail``, ``finished`` (bool),
    ``type_loss`` (n, J) seconds of lost work + restart per failure type, ``type_count`` (n, J).
    ``n_threads`` is accepted for signature compatibility and ignored.
    """
    d = _Dist(family, params)
    p = np.asarray(type_prob, dtype=float)
    cdf = np.cumsum(p) / p.sum()
    cdf[-1] = 1.0
    kinds = np.asarray(restart_kind, dtype=int)
    ra, rb = np.asarray(restart_a, dtype=float), np.asarray(restart_b, dtype=float)
    J = p.size
    ratio = work / tau
    nseg = max(1, int(math.ceil(ratio - 1e-12 * ratio)))
    seg_len = [tau] * (nseg - 1) + [work - (nseg - 1) * tau]
    out = {k: np.zeros(n_rep) for k in ("wall", "lost", "restart", "ckpt")}
    out["n_fail"] = np.zeros(n_rep, dtype=np.int64)
    out["finished"] = np.zeros(n_rep, dtype=bool)
    out["type_loss"] = np.zeros((n_rep, J))
    out["type_count"] = np.zeros((n_rep, J), dtype=np.int32)
    for r in range(n_rep):
        rng = np.random.default_rng([int(seed), r])
        t = lost = rs = ck = 0.0
        nf = 0
        seg = 0
        next_fail = d.inv_cumhaz(-math.log(1.0 - rng.random()))
        finished = False
        while t <= max_wall:
            end = t + seg_len[seg] + ckpt  # this segment and its checkpoint
            if end <= next_fail:
                t = end
                ck += ckpt
                seg += 1
                if seg == nseg:
                    finished = True
                    break
                continue
            pending = next_fail - t
            lost += pending
            t = next_fail
            while True:
                u1, u2, u3, u4 = 1.0 - rng.random(4)
                nf += 1
                j = min(int(np.searchsorted(cdf, u1, side="right")), J - 1)
                out["type_count"][r, j] += 1
                R = _draw_restart(kinds[j], ra[j], rb[j], u2, u3)
                F = d.inv_cumhaz(-math.log(u4))
                if F >= R:
                    rs += R
                    out["type_loss"][r, j] += pending + R
                    next_fail = t + F
                    t += R
                    break
                rs += F
                out["type_loss"][r, j] += pending + F
                t += F
                pending = 0.0
                if t > max_wall:
                    break
        out["wall"][r], out["lost"][r], out["restart"][r], out["ckpt"][r] = t, lost, rs, ck
        out["n_fail"][r] = nf
        out["finished"][r] = finished
    return out
