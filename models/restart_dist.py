"""Time-to-restart distributions and the published prior of the restart model: per-row predictive
distributions (:class:`RestartDistribution`: gamma or log-normal), their weighted mixture
(:class:`MixtureDistribution`, one distribution for the planner) and the paper's failure-table prior
(:func:`prior_table`, :func:`prior_distribution`). The model is :mod:`acmemodel.models.restart`.
"""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np
import pandas as pd
from scipy import optimize, stats

PRIOR_SIGMA_MIN = 0.5
PRIOR_MINUTES_FLOOR = 0.05


class RestartDistribution:
    """Per-row distributions of a time (seconds) of one family.

    ``family="gamma"``: parameters ``shape``, ``scale``; ``family="lognormal"``: ``median``, ``sigma``
    (of log time). All methods are vectorised over rows; ``quantile(q)`` returns rows × len(q) for a
    sequence ``q`` and a vector for a scalar ``q``; ``sample(n, rng)`` returns rows × n.
    """

    def __init__(self, family: str, source: str = "", **params):
        if family not in ("gamma", "lognormal"):
            raise ValueError(f"family must be 'gamma' or 'lognormal', got {family!r}")
        self.family = family
        self.source = source
        self.params = {k: np.atleast_1d(np.asarray(v, float)) for k, v in params.items()}
        n = {len(v) for v in self.params.values()}
        if len(n) != 1:
            raise ValueError("distribution parameter arrays must have equal length")

    def __len__(self) -> int:
        return len(next(iter(self.params.values())))

    def _frozen(self):
        # (built once: a frozen scipy distribution costs ~0.1 ms to make, and MixtureDistribution.quantile's
        # root search calls cdf some 40 times per quantile)
        f = self.__dict__.get("_fz")
        if f is None:
            p = self.params
            if self.family == "gamma":
                f = stats.gamma(a=p["shape"], scale=p["scale"])
            else:
                f = stats.lognorm(s=p["sigma"], scale=p["median"])
            self._fz = f
        return f

    def mean(self) -> np.ndarray:
        """Mean (seconds) per row."""
        return self._frozen().mean()

    def median(self) -> np.ndarray:
        """Median (seconds) per row."""
        return self._frozen().median()

    def quantile(self, q):
        """Quantile(s) ``q`` ∈ (0, 1) per row (seconds)."""
        qa = np.asarray(q, float)
        if np.any((qa <= 0) | (qa >= 1)):
            raise ValueError(f"q must be in (0, 1), got {q!r}")
        if qa.ndim == 0:
            return self._frozen().ppf(float(qa))
        f = self._frozen()
        return np.column_stack([f.ppf(v) for v in qa])

    def cdf(self, x) -> np.ndarray:
        """P(T ≤ x) per row (x broadcast against the rows)."""
        return self._frozen().cdf(np.asarray(x, float))

    def interval(self, level: float = 0.8) -> tuple[np.ndarray, np.ndarray]:
        """Central ``level`` interval per row (seconds)."""
        if not 0 < level < 1:
            raise ValueError(f"level must be in (0, 1), got {level!r}")
        return self.quantile((1 - level) / 2), self.quantile((1 + level) / 2)

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """Draws (rows × n) seconds."""
        _check_rng_n(n, rng)
        p = self.params
        if self.family == "gamma":
            return rng.gamma(p["shape"][:, None], p["scale"][:, None], size=(len(self), int(n)))
        return p["median"][:, None] * np.exp(p["sigma"][:, None] * rng.standard_normal((len(self), int(n))))

    def mixture(self, weights=None) -> "MixtureDistribution":
        """The mixture of the rows (equal weights by default)."""
        return MixtureDistribution(self, weights)

    def to_frame(self, quantiles: Sequence[float] = (0.1, 0.5, 0.9)) -> pd.DataFrame:
        """mean and quantiles per row as a DataFrame (seconds)."""
        out = {"mean_s": self.mean()}
        for q in quantiles:
            out[f"q{int(round(q * 100)):02d}_s"] = self.quantile(q)
        return pd.DataFrame(out)


class MixtureDistribution:
    """A finite mixture of the rows of a :class:`RestartDistribution` (a scalar distribution, seconds).

    ``mean() = Σ w_i mean_i``; ``cdf(x) = Σ w_i F_i(x)``; quantiles solve ``cdf(x) = q`` (Brent on
    log x); ``sample(n, rng)`` draws a component by weight, then a value.
    """

    def __init__(self, rows: RestartDistribution, weights=None):
        self.rows = rows
        w = np.ones(len(rows)) if weights is None else np.asarray(weights, float)
        if w.shape != (len(rows),) or np.any(w < 0) or w.sum() <= 0:
            raise ValueError("weights must be non-negative, one per row, not all zero")
        self.weights = w / w.sum()
        self.source = rows.source

    def mean(self) -> float:
        return float(self.weights @ self.rows.mean())

    def cdf(self, x):
        xa = np.asarray(x, float)
        F = self.rows._frozen().cdf(np.atleast_1d(xa)[:, None])
        out = F @ self.weights
        return float(out[0]) if xa.ndim == 0 else out

    def quantile(self, q):
        qa = np.atleast_1d(np.asarray(q, float))
        if np.any((qa <= 0) | (qa >= 1)):
            raise ValueError(f"q must be in (0, 1), got {q!r}")
        lo_all = self.rows.quantile(min(1e-9, qa.min()))
        hi_all = self.rows.quantile(max(1 - 1e-9, qa.max()))
        lo, hi = math.log(max(np.min(lo_all), 1e-12)), math.log(max(np.max(hi_all), 1e-9))
        out = []
        for v in qa:
            if hi - lo < 1e-12:
                out.append(math.exp(lo))
                continue
            f = lambda lx: self.cdf(math.exp(lx)) - v  # noqa: E731
            out.append(math.exp(optimize.brentq(f, lo - 1e-9, hi + 1e-9, xtol=1e-10)))
        return out[0] if np.ndim(q) == 0 else np.asarray(out)

    def median(self) -> float:
        return float(self.quantile(0.5))

    def interval(self, level: float = 0.8) -> tuple[float, float]:
        if not 0 < level < 1:
            raise ValueError(f"level must be in (0, 1), got {level!r}")
        return float(self.quantile((1 - level) / 2)), float(self.quantile((1 + level) / 2))

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        _check_rng_n(n, rng)
        idx = rng.choice(len(self.weights), size=int(n), p=self.weights)
        p = self.rows.params
        if self.rows.family == "gamma":
            return rng.gamma(p["shape"][idx], p["scale"][idx])
        return p["median"][idx] * np.exp(p["sigma"][idx] * rng.standard_normal(int(n)))

    def __repr__(self) -> str:
        return (f"MixtureDistribution({self.rows.family}, {len(self.weights)} components, "
                f"source={self.source!r}, mean={self.mean():.4g} s, median={self.median():.4g} s)")


def _check_rng_n(n, rng) -> None:
    if not isinstance(rng, np.random.Generator):
        raise ValueError("rng must be a numpy.random.Generator")
    if int(n) != n or n < 0:
        raise ValueError(f"n must be a non-negative integer, got {n!r}")


# ============================================================================ published prior
def prior_table() -> pd.DataFrame:
    """Per-reason log-normal of the published time to restart (seconds): reason, category, num,
    median_s, mean_s, mu, sigma (module docstring)."""
    from acmemodel.datasets.published import load_failure_table
    from acmemodel.models.failure_types import lognormal_from_median_mean

    tab = load_failure_table()
    med = np.maximum(tab["time_to_restart_median_min"].to_numpy(float), PRIOR_MINUTES_FLOOR) * 60.0
    avg = np.maximum(tab["time_to_restart_avg_min"].to_numpy(float), PRIOR_MINUTES_FLOOR) * 60.0
    mu, sigma = lognormal_from_median_mean(med, avg, PRIOR_SIGMA_MIN)
    return pd.DataFrame({"reason": tab["reason"], "category": tab["category"],
                         "num": tab["num"].to_numpy(float), "median_s": med, "mean_s": avg,
                         "mu": mu, "sigma": sigma})


def prior_distribution(category: str | None = None, *, reason: str | None = None,
                       gpus: float | None = None) -> MixtureDistribution:
    """Published time-to-restart prior (total, seconds) of a reason, a category, or all failures.

    Weights over reasons: ``num_r`` (times the GPU-demand likelihood of the failure-type prior when
    ``gpus`` is given, i.e. ``P(r | gpus)``).
    """
    from acmemodel.datasets.published import FAILURE_CATEGORIES
    from acmemodel.models.failure_types import failure_type_mix

    pt = prior_table()
    if reason is not None:
        if reason not in set(pt["reason"]):
            raise ValueError(f"unknown failure reason {reason!r}; known: {', '.join(pt['reason'])}")
        sel = pt["reason"] == reason
    elif category is not None:
        if category not in FAILURE_CATEGORIES:
            raise ValueError(f"category must be one of {FAILURE_CATEGORIES} or None, got {category!r}")
        sel = pt["category"] == category
    else:
        sel = np.ones(len(pt), bool)
    sub = pt[np.asarray(sel)]
    w = sub["num"].to_numpy(float)
    if gpus is not None and len(sub) > 1:
        mix = failure_type_mix(gpus=gpus)  # P(r | gpus) ∝ num_r · f(gpus | r)
        w = mix[sub["reason"]].to_numpy(float)
        if w.sum() <= 0:  # pragma: no cover - a likelihood underflow
            w = sub["num"].to_numpy(float)
    rows = RestartDistribution("lognormal", source="prior", median=sub["median_s"], sigma=sub["sigma"])
    return MixtureDistribution(rows, w)
