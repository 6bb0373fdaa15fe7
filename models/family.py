"""The interface of a positive duration distribution (:class:`Family`) and the data helpers the
families share; the families themselves are in :mod:`acmemodel.models.distributions` (parametric)
and :mod:`acmemodel.models.distributions_mix` (log-normal mixture, empirical).
"""
from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

_LOG_2PI = math.log(2 * math.pi)


def _as_data(x, censored=None) -> tuple[np.ndarray, np.ndarray]:
    x = np.asarray(x, dtype=float).ravel()
    if censored is None:
        c = np.zeros(x.shape, dtype=bool)
    else:
        c = np.asarray(censored, dtype=bool).ravel()
        if c.shape != x.shape:
            raise ValueError(f"censored must have the shape of x {x.shape}, got {c.shape}")
    if x.size == 0:
        raise ValueError("x is empty: cannot fit a distribution to no data")
    if not np.all(np.isfinite(x)):
        raise ValueError("x must be finite (drop NaN/inf durations before fitting)")
    if np.any(x <= 0):
        raise ValueError(f"x must be > 0 (got min {x.min()!r}); zero durations belong to the cell "
                         "model's atom, not to a continuous family")
    if c.all():
        raise ValueError("all observations are censored: the MLE does not exist")
    return x, c


class Family:
    """Base of the duration families (see module docstring).

    Subclasses declare ``name``, ``param_names`` and implement ``_fit``, ``logpdf``, ``logsf``,
    ``cdf``, ``ppf`` and ``sample``. Instances are immutable parameter holders; ``fit`` is a
    classmethod returning a new fitted instance.
    """

    name: ClassVar[str] = ""
    param_names: ClassVar[tuple[str, ...]] = ()

    def __init__(self, **params: float):
        missing = set(self.param_names) - set(params)
        extra = set(params) - set(self.param_names)
        if missing or extra:
            raise ValueError(f"{type(self).__name__} takes parameters {self.param_names}, "
                             f"got {tuple(params)}")
        for k, v in params.items():
            v = float(v)
            if not math.isfinite(v):
                raise ValueError(f"{type(self).__name__} parameter {k} must be finite, got {v!r}")
            setattr(self, k, v)
        self._validate()

    def _validate(self) -> None:  # pragma: no cover - overridden
        pass

    def _positive(self, *names: str) -> None:
        for n in names:
            if not getattr(self, n) > 0:
                raise ValueError(f"{type(self).__name__} parameter {n} must be > 0, got {getattr(self, n)!r}")

    # ------------------------------------------------------------------ interface
    @property
    def params(self) -> dict[str, float]:
        """The parameters as a dict (seconds for scales, dimensionless shapes)."""
        return {k: getattr(self, k) for k in self.param_names}

    @property
    def n_params(self) -> int:
        """Number of free parameters (used by BIC)."""
        return len(self.param_names)

    @classmethod
    def fit(cls, x, censored=None, **options) -> "Family":
        """Maximum-likelihood fit to durations ``x`` (seconds, > 0); ``censored[i]`` marks ``x[i]``
        as a right-censored observation (``X > x[i]``). Returns a fitted instance."""
        x, c = _as_data(x, censored)
        return cls._fit(x, c, **options)

    @classmethod
    def _fit(cls, x: np.ndarray, c: np.ndarray, **options) -> "Family":  # pragma: no cover
        raise NotImplementedError

    def logpdf(self, x) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def logsf(self, x) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def cdf(self, x) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def ppf(self, q) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:  # pragma: no cover
        raise NotImplementedError

    def pdf(self, x) -> np.ndarray:
        return np.exp(self.logpdf(x))

    def sf(self, x) -> np.ndarray:
        """Survival function ``S(x) = P(X > x)``."""
        return 1.0 - self.cdf(x)

    def quantile(self, q) -> np.ndarray:
        """Alias of :meth:`ppf`: the ``q``-quantile in seconds."""
        return self.ppf(q)

    def median(self) -> float:
        return float(self.ppf(0.5))

    def loglik(self, x, censored=None) -> np.ndarray:
        """Per-observation log-likelihood: ``log f(x)`` if uncensored, ``log S(x)`` if censored."""
        x = np.asarray(x, dtype=float)
        if censored is None:
            return self.logpdf(x)
        c = np.asarray(censored, dtype=bool)
        out = np.empty(x.shape, dtype=float)
        out[~c] = self.logpdf(x[~c])
        out[c] = self.logsf(x[c])
        return out

    def to_dict(self) -> dict[str, Any]:
        """``{"family": name, **params}`` (JSON-safe)."""
        return {"family": self.name, **self.params}

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if cls.__dict__.get("name"):
            _REGISTRY[cls.name] = cls

    @staticmethod
    def from_dict(d: dict[str, Any]) -> "Family":
        return family_from_dict(d)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{k}={v:.6g}' for k, v in self.params.items())})"

    @staticmethod
    def _check_q(q) -> np.ndarray:
        q = np.asarray(q, dtype=float)
        if np.any((q < 0) | (q > 1)) or np.any(np.isnan(q)):
            raise ValueError("q must be in [0, 1]")
        return q


def _safe_log(x) -> np.ndarray:
    x = np.asarray(x, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(x > 0, np.log(np.where(x > 0, x, 1.0)), -np.inf)


#: family name → class, filled as the families are defined (:meth:`Family.__init_subclass__`)
_REGISTRY: dict[str, type[Family]] = {}


def family_from_dict(d: dict[str, Any]) -> Family:
    """Rebuild a family instance from :meth:`Family.to_dict` output."""
    d = dict(d)
    name = d.pop("family")
    cls = _REGISTRY.get(name)
    if cls is None:
        raise ValueError(f"unknown distribution family {name!r}; valid: {', '.join(_REGISTRY)}")
    if name == "empirical":
        return cls(atoms=d["atoms"], h=d["h"])
    if hasattr(cls, "from_params"):  # (families whose parameters include lists)
        return cls.from_params(d)
    return cls(**{k: float(v) for k, v in d.items()})
