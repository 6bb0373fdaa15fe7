"""NumPy twin of the run simulator ``_core.mc_run`` of ``montecarlo.c`` (see :mod:`.checkpoint` for the
checkpoint kernels' twins and the model): one replica at a time, one checkpoint segment at a time (no
event skipping), with NumPy ``Generator`` streams seeded by ``(seed, replica)`` -- the same model with
different random numbers, so it agrees with C within sampling error only.
"""
from __future__ import annotations

import math

import numpy as np

from acmemodel._solver.reference.checkpoint import _Dist


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
