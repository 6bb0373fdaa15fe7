"""NumPy twin of ``quadrature.c``: the Gauss rule of a discrete measure (restart-time nodes).

The ``n``-point Gauss rule of ``μ = Σ_q w_q δ(r_q)`` (nodes ``ρ_k``, weights ``v_k > 0`` summing to
``Σ w_q``) integrates every polynomial of degree ``< 2n`` exactly against ``μ``. Lanczos on ``diag(t)``,
``t = (r − c)/s`` (centred, scaled to [−1, 1]), from ``√(w/W)`` with full reorthogonalisation gives the
Jacobi matrix of ``μ``; its eigenvalues are the nodes and ``W`` times the squared first components of
its eigenvectors the weights (Golub & Welsch 1969). The C kernel solves the small eigenproblem by
implicit QL, here :func:`scipy.linalg.eigh_tridiagonal` (the same rule to rounding).
"""
from __future__ import annotations

import math

import numpy as np
from scipy import linalg


def lanczos(r: np.ndarray, w: np.ndarray, n: int, reorth: int = 1) -> tuple[np.ndarray, np.ndarray, float, float, float]:
    """``(alpha, beta, W, c, s)``: up to ``n`` recurrence coefficients (fewer when the Krylov space is
    exhausted: the measure has that many points), ``beta[0] = 0``, for nodes ``r`` (ascending);
    ``reorth``: 1 = one modified Gram-Schmidt pass per step (as the C kernel's few-point cluster
    rules), else that many classical passes (long rules)."""
    r, w = np.asarray(r, dtype=float), np.asarray(w, dtype=float)
    Q = r.size
    W = float(sum(float(v) for v in w))
    c = 0.5 * (r[0] + r[-1])
    s = 0.5 * (r[-1] - r[0]) if r[-1] > r[0] else 1.0
    t = (r - c) / s
    V = [np.sqrt(w / W)]
    alpha, beta = [], [0.0]
    while len(alpha) < n:
        v = V[-1]
        a = float(np.dot(t, v * v))
        alpha.append(a)
        if len(alpha) == Q:
            break
        u = (t - a) * v - (beta[-1] * V[-2] if len(V) > 1 else 0.0)
        if reorth == 1:  # full reorthogonalisation, vector by vector as the C kernel
            for vj in V:
                u = u - float(np.dot(vj, u)) * vj
        else:  # classical Gram-Schmidt, reorth passes (long rules: "twice is enough")
            Vm = np.array(V)
            for _ in range(reorth):
                u = u - Vm.T @ (Vm @ u)
        b = math.sqrt(float(np.dot(u, u)))
        if not b > 1e-13:
            break
        beta.append(b)
        V.append(u / b)
    return np.array(alpha), np.array(beta), W, c, s


def gauss_rule(r, w, n: int, reorth: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """``(nodes, weights)`` of the (at most) ``n``-point Gauss rule of ``Σ_q w_q δ(r_q)``, nodes ascending."""
    alpha, beta, W, c, s = lanczos(r, w, n, reorth)
    k = alpha.size
    if k == 1:
        return np.array([c + s * alpha[0]]), np.array([W])
    ev, vec = linalg.eigh_tridiagonal(alpha, beta[1:k])
    return c + s * ev, W * vec[0] ** 2
