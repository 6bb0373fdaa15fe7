"""The laws of the failure model as duration :class:`~acmemodel.models.family.Family` objects: the
late regime's family (:class:`LateRegime`: ``Weibull`` by default, ``LogNormal`` or ``LogLogistic``,
with the size and covariate effects on its scale), the early regime's ``LogNormal``, and
:class:`PiecewiseHazardLaw`, the piecewise-constant hazard a survival model exports for the planner's C
kernel. The failure model hands the planner one of these families (its ``failure_law``).
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from acmemodel.models.distributions import LogLogistic, LogNormal, Weibull
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


# ====================================================================== the late regime's law
class LateRegime:
    """The law of the two-regime model's late regime: a log-location-scale :class:`Family` (``Weibull``,
    ``LogNormal`` or ``LogLogistic``) of standard variate ``z = k·log(t/t_ref) + ν`` with
    ``ν = b0 + α·log(g/g_ref) + β_x`` (so ``log scale = log t_ref − ν/k`` and ``s = 1/k``). For the Weibull
    ``z`` is the log cumulative hazard: a proportional-hazards model whose rate grows as ``g^α``; for
    the others an accelerated-failure-time model whose time scale shrinks as ``g^(−α/k)``.

    Used by the likelihood (:class:`acmemodel.models.failure_mle._Mixture`) and the queries of
    :class:`~acmemodel.models.failure.FailureModel`: the per-row log density and log survival, their
    derivative in ``z``, the mean, sampling and the :class:`Family` of one key (:meth:`family`).
    """

    def __init__(self, family: str = "weibull"):
        if family not in LATE_FAMILIES:
            raise ValueError(f"late_family must be one of {', '.join(LATE_FAMILIES)}, got {family!r}")
        self.name = family
        self.cls = LATE_FAMILIES[family]

    def components(self, k: float, lk: float, y, nu, logt):
        """Per row ``(log f, log S, aux)`` at ``y = log(t/t_ref)``; ``aux`` is handed to :meth:`dz`."""
        z = np.minimum(k * y + nu, 700.0)
        return lk - logt + self.cls._lg(z), self.cls._ls(z), z

    def dz(self, E, aux):
        """d log-likelihood / dz per row (events: of log f; censored rows: of log S)."""
        return np.where(E, self.cls._dlg(aux), self.cls._dls(aux))

    def surv_dens(self, k: float, y, nu, t):
        """``(S, f)`` at ``y = log(t/t_ref)`` (rows of ``nu`` × times of ``t``)."""
        z = np.minimum(k * y + nu, 700.0)
        return np.exp(self.cls._ls(z)), k / t * np.exp(self.cls._lg(z))

    def mean(self, t_ref: float, nu, k: float):
        """The mean (s): ``t_ref·exp(−ν/k)·E[exp(Z/k)]``."""
        s = 1.0 / k
        if self.name == "lognormal":
            factor = math.exp(0.5 * s * s)
        elif self.name == "loglogistic":
            factor = math.pi * s / math.sin(math.pi * s) if s < 1 else math.inf
        else:  # pragma: no cover - WeibullPH overrides
            raise NotImplementedError
        return t_ref * np.exp(-nu / k) * factor

    def times(self, rng: np.random.Generator, n: int, t_ref: float, nu, k: float):
        """``n`` draws (s) for rows of ``nu`` (one per draw)."""
        return t_ref * np.exp((self.cls._Ginv(rng.random(n)) - nu) / k)

    def family(self, k: float, mean_s: float) -> Family:
        """The :class:`Family` of shape ``k`` whose mean is ``mean_s``."""
        log_scale = math.log(mean_s / float(self.mean(1.0, 0.0, k)))
        return self.cls._from_ms(log_scale, 1.0 / k)


class WeibullPH(LateRegime):
    """The Weibull late regime, written as the proportional-hazards model it is: ``H = exp(z)``,
    ``log f = ν + log k + k·y − log t − H``, ``log S = −H`` (the arithmetic of the original two-regime
    model, so a default fit is unchanged to the last bit)."""

    def __init__(self):
        super().__init__("weibull")

    def components(self, k, lk, y, nu, logt):
        H = np.exp(np.minimum(k * y + nu, 700.0))
        return nu + lk + k * y - logt - H, -H, H

    def dz(self, E, aux):
        return np.where(E, 1.0 - aux, -aux)

    def surv_dens(self, k, y, nu, t):
        H = np.exp(np.minimum(k * y + nu, 700.0))
        S = np.exp(-H)
        return S, k / t * H * S

    def mean(self, t_ref, nu, k):
        return t_ref * np.exp(-nu / k) * math.gamma(1 + 1 / k)

    def times(self, rng, n, t_ref, nu, k):
        # H(t) = (t/t_ref)^k e^nu = Exp(1)
        return t_ref * (rng.exponential(size=n) * np.exp(-nu)) ** (1 / k)

    def family(self, k, mean_s):
        return Weibull(k=k, lam=mean_s / math.gamma(1.0 + 1.0 / k))


#: the late-regime families a FailureModel can fit
LATE_FAMILIES: dict[str, type] = {"weibull": Weibull, "lognormal": LogNormal, "loglogistic": LogLogistic}


def late_regime(family: str = "weibull") -> LateRegime:
    """The late regime of ``family`` (:data:`LATE_FAMILIES`)."""
    return WeibullPH() if family == "weibull" else LateRegime(family)
