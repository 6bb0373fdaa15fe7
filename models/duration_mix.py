"""The answer of a duration model for a key that leaves some cell keys out: a count-weighted mixture
of the fitted cells under it (:class:`DurationMixture`).

A query that does not give, say, ``gpus`` is about *any* job of the given cluster, type and state, so
its distribution is the mixture over the GPU buckets of the fitted data,

    F(x | key) = Σ_b w_b · F(x | key, b),     w_b = n(key, b) / Σ_b' n(key, b'),

with ``n`` the fitted job counts (see :meth:`acmemodel.models.cells.CellTable.query`). The mixture has
the interface of :class:`~acmemodel.models._duration.DurationCell` that the queries use: ``cdf``,
``quantile`` (by bisection on the mixture CDF, between the smallest and the largest component
quantile), ``median``, ``sample`` (multinomial split over the components), ``loglik`` (log of the
weighted sum of the component likelihoods) and ``p_atom`` (the weighted atom probability).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
from scipy import special

__all__ = ["DurationMixture"]


#: points of the shared grid that narrows many quantile brackets at once (:meth:`quantile`)
_GRID = 2048

class DurationMixture:
    """``Σ w_i · component_i`` of duration cells (weights normalised to 1)."""

    def __init__(self, components: Sequence, weights: Sequence[float]):
        w = np.asarray(weights, dtype=float)
        if len(components) == 0 or len(components) != len(w) or not np.all(w >= 0) or w.sum() <= 0:
            raise ValueError("a mixture needs components and non-negative weights of positive sum")
        self.components = list(components)
        self.weights = w / w.sum()

    @property
    def n(self) -> int:
        return int(sum(getattr(c, "n", 0) for c in self.components))

    @property
    def p_atom(self) -> float:
        return float(sum(w * c.p_atom for w, c in zip(self.weights, self.components)))

    def cdf(self, x) -> np.ndarray:
        x = np.asarray(x, dtype=float)
        return sum(w * np.asarray(c.cdf(x), dtype=float) for w, c in zip(self.weights, self.components))

    def quantile(self, q) -> np.ndarray:
        q = np.asarray(q, dtype=float)
        if np.any((q < 0) | (q > 1)) or np.any(np.isnan(q)):
            raise ValueError("q must be in [0, 1]")
        if len(self.components) == 1:
            return self.components[0].quantile(q)
        qs = np.stack([np.asarray(c.quantile(q), dtype=float) for c in self.components])
        lo, hi = np.min(qs, axis=0), np.max(qs, axis=0)
        lo, hi = np.broadcast_to(lo, q.shape).copy(), np.broadcast_to(hi, q.shape).copy()
        # inf{x : F(x) >= q} lies in [lo, hi]. Many levels at once (a stratified draw): the brackets are
        # first narrowed on one shared grid of F (one cdf call of _GRID points instead of a bisection
        # step per level), then shrunk (on the log scale where positive) until each bracket is
        # relatively 1e-12 wide or absolutely 1e-9 s: by the Illinois variant of regula falsi (the
        # point where the chord of F crosses q; the end kept twice has its miss halved), every third
        # step a bisection, a chord point kept 0.4 tolerance from the ends, at most 240 steps (at least the 80 halvings of a plain bisection; a smooth F
        # closes in about a dozen steps instead of ~40). Each step is one cdf call, as a bisection step.
        out = hi.copy()
        finite = np.isfinite(hi) & np.isfinite(lo)
        if finite.sum() > _GRID // 4:
            lo, hi = self._grid_brackets(q, lo, hi, finite)
        flo, fhi, side = np.full(q.shape, np.nan), np.full(q.shape, np.nan), np.zeros(q.shape, dtype=np.int8)
        for it in range(240):
            pos = finite & (lo > 0)
            open_ = finite & ((hi - lo) > np.maximum(1e-12 * np.abs(hi), 1e-9))
            if not open_.any():
                break
            if it == 0:  # F − q at both ends
                flo[open_] = self.cdf(lo[open_]) - q[open_]
                fhi[open_] = self.cdf(hi[open_]) - q[open_]
            mid = np.where(pos, np.sqrt(np.where(pos, lo * hi, 1.0)), 0.5 * (lo + hi))
            if it % 3 != 2:  # the chord's crossing, where it is strictly inside the bracket
                with np.errstate(divide="ignore", invalid="ignore"):
                    t = -flo / (fhi - flo)
                    sl = np.log(np.where(pos, lo, 1.0))
                    chord = np.where(pos, np.exp(sl + t * (np.log(np.where(pos, hi, 1.0)) - sl)), lo + t * (hi - lo))
                good = (flo < 0) & (fhi >= 0) & np.isfinite(chord)
                # at least 0.4 of the tolerance from either end: a chord that lands on the end it converges
                # to closes the bracket at the next step (F's rounding noise cannot hold it open)
                tol = 0.4 * np.maximum(1e-12 * np.abs(hi), 1e-9)
                mid = np.where(good, np.clip(chord, lo + tol, hi - tol), mid)
                illinois = good
            else:
                illinois = np.zeros(q.shape, dtype=bool)
            fx = np.zeros(q.shape)
            fx[open_] = self.cdf(mid[open_]) - q[open_]
            ok = fx >= 0
            up, down = open_ & ok, open_ & ~ok
            halve_lo = up & illinois & (side == 1)
            halve_hi = down & illinois & (side == -1)
            flo = np.where(halve_lo, 0.5 * flo, np.where(down, fx, flo))
            fhi = np.where(halve_hi, 0.5 * fhi, np.where(up, fx, fhi))
            side = np.where(up, np.where(illinois, 1, 0), np.where(down, np.where(illinois, -1, 0), side)).astype(np.int8)
            hi = np.where(up, mid, hi)
            lo = np.where(down, mid, lo)
        out = np.where(finite, np.where(self.cdf(lo) >= q, lo, hi), out)
        return out

    def _grid_brackets(self, q, lo, hi, finite):
        """[lo, hi] narrowed to the cell of a shared grid (geometric where positive) where F reaches q."""
        a, b = float(np.min(lo[finite])), float(np.max(hi[finite]))
        g = (np.geomspace(a, b, _GRID) if a > 0 else np.linspace(a, b, _GRID))
        F = self.cdf(g)
        F = np.maximum.accumulate(F)  # (a CDF: monotone; guards rounding)
        k = np.searchsorted(F, q, side="left")  # first grid point with F >= q
        glo = np.where(k > 0, g[np.clip(k - 1, 0, _GRID - 1)], -np.inf)
        ghi = np.where(k < _GRID, g[np.clip(k, 0, _GRID - 1)], np.inf)
        return (np.where(finite, np.maximum(lo, glo), lo), np.where(finite, np.minimum(hi, ghi), hi))

    def median(self) -> float:
        return float(self.quantile(0.5))

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        n = int(n)
        k = rng.multinomial(n, self.weights)
        out = np.concatenate([c.sample(int(m), rng) for c, m in zip(self.components, k)]) if n else np.zeros(0)
        return rng.permutation(out)

    def loglik(self, x, censored=None) -> np.ndarray:
        parts = np.stack([np.asarray(c.loglik(x, censored), dtype=float) for c in self.components])
        with np.errstate(divide="ignore"):
            return special.logsumexp(parts + np.log(self.weights)[:, None], axis=0)
