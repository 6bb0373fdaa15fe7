"""The laws a failure model hands the planner, as duration :class:`~acmemodel.models.family.Family`
objects: the parametric families of :mod:`acmemodel.models.distributions` (the two-regime model's late
regime is a :class:`~acmemodel.models.distributions.Weibull`, its early one a
:class:`~acmemodel.models.distributions.LogNormal`) and :class:`PiecewiseHazardLaw`, the
piecewise-constant hazard a survival model exports for the planner's C kernel.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from acmemodel.models.family import Family


class PiecewiseHazardLaw(Family):
    """Time to failure with hazard ``h_j`` (1/s) on ``[b_j, b_{j+1})``, ``b_0 = 0``, the last piece open
    (``h > 0``): ``S(t) = exp(−H(t))``, ``H(t) = Σ_j h_j · |[b_j, b_{j+1}) ∩ [0, t)|``.

    Parameters: ``start_s`` (the breaks ``b_j``, seconds, increasing, ``b_0 = 0``) and ``hazard_per_s``
    (the rates; negative or non-finite ones read as 0). Not fitted here: built from a model's hazard
    table (:meth:`from_table`).
    """

    name = "piecewise"
    param_names = ("start_s", "hazard_per_s")

    def __init__(self, start_s, hazard_per_s):  # (list-valued parameters: no Family.__init__)
        b = np.asarray(start_s, float).ravel()
        h = np.asarray(hazard_per_s, float).ravel()
        h = np.where(np.isfinite(h), np.maximum(h, 0.0), 0.0)
        if b.size == 0 or b.size != h.size or b[0] != 0 or np.any(np.diff(b) <= 0) or not np.all(np.isfinite(b)):
            raise ValueError("start_s must be increasing finite breaks from 0, one per hazard_per_s")
        if h[-1] <= 0:
            raise ValueError("the last piece's hazard must be > 0")
        self.start_s, self.hazard_per_s = b, h
        self._H = np.concatenate([[0.0], np.cumsum(h[:-1] * np.diff(b))])

    @classmethod
    def from_table(cls, table) -> "PiecewiseHazardLaw":
        """From a hazard table (columns ``start_s``, ``hazard_per_s``; e.g. ``FailureModel.hazard_table``)."""
        return cls(table["start_s"].to_numpy(float), table["hazard_per_s"].to_numpy(float))

    @classmethod
    def from_params(cls, d: dict[str, Any]) -> "PiecewiseHazardLaw":
        return cls(d["start_s"], d["hazard_per_s"])

    @property
    def params(self) -> dict[str, Any]:
        return {"start_s": self.start_s.tolist(), "hazard_per_s": self.hazard_per_s.tolist()}

    def cumhazard(self, x) -> np.ndarray:
        x = np.maximum(np.asarray(x, float), 0.0)
        j = np.searchsorted(self.start_s, x, side="right") - 1
        return self._H[j] + self.hazard_per_s[j] * (x - self.start_s[j])

    def logsf(self, x) -> np.ndarray:
        return -self.cumhazard(x)

    def logpdf(self, x) -> np.ndarray:
        x = np.asarray(x, float)
        j = np.searchsorted(self.start_s, np.maximum(x, 0.0), side="right") - 1
        with np.errstate(divide="ignore"):
            return np.log(self.hazard_per_s[j]) - self.cumhazard(x)

    def cdf(self, x) -> np.ndarray:
        return -np.expm1(-self.cumhazard(x))

    def ppf(self, q) -> np.ndarray:
        e = -np.log1p(-self._check_q(q))           # H(t) = e
        j = np.searchsorted(self._H, e, side="right") - 1
        while True:                                 # skip zero-hazard pieces
            flat = (self.hazard_per_s[j] == 0) & (j < self.hazard_per_s.size - 1)
            if not np.any(flat):
                break
            j = np.where(flat, j + 1, j)
        return self.start_s[j] + (e - self._H[j]) / self.hazard_per_s[j]

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        return self.ppf(-np.expm1(-rng.standard_exponential(int(n))))

    def __repr__(self) -> str:
        return f"PiecewiseHazardLaw({self.start_s.size} pieces, last {self.hazard_per_s[-1]:.3g}/s)"
