"""Positive continuous distribution families for durations (run time, queueing delay), in seconds.

Every family describes a random duration ``X > 0`` (seconds) and is fitted by maximum likelihood,
optionally with **right-censored** observations (a queued job cancelled after ``c`` seconds says only
``X > c``). The log-likelihood of data ``x_i`` with censoring indicators ``c_i`` is

    ℓ(θ) = Σ_{i uncensored} log f(x_i; θ) + Σ_{i censored} log S(x_i; θ),     S = 1 − F.

A point mass at zero (zero-second runs, immediate starts) is *not* part of a family: the cell model
(:mod:`acmemodel.models._duration`) puts it in front as an explicit atom; families reject ``x <= 0``.

Three families are *log-location-scale*: ``Y = log X = m + s·Z`` with ``Z`` a standard variate —

==================  =========================  ==========================================
family              Z (log scale)              natural parameters
==================  =========================  ==========================================
:class:`LogNormal`     standard normal            ``mu = m``, ``sigma = s``
:class:`Weibull`       smallest extreme value     shape ``k = 1/s``, scale ``lam = e^m`` (s)
:class:`LogLogistic`   standard logistic          scale ``alpha = e^m`` (s), shape ``beta = 1/s``
==================  =========================  ==========================================

so they share one implementation (density ``f(x) = g(z)/(s·x)``, ``z = (log x − m)/s``).
:class:`Gamma`, :class:`LogNormalMixture2` and the nonparametric :class:`Empirical` (kernel-smoothed
log-space ECDF) complete the candidate set. All share the :class:`Family` interface: ``fit`` (a
classmethod returning a fitted instance), ``logpdf``, ``logsf``, ``cdf``, ``sf``, ``ppf``/``quantile``,
``sample(n, rng)``, ``loglik(x, censored)``, ``n_params``, ``to_dict``/``from_dict``.

Closed-form or one-dimensional MLEs are used where they exist (lognormal; Weibull profile equation;
gamma shape Newton iteration); the rest use L-BFGS on an unconstrained parametrisation, or EM for the
mixture. Everything is vectorised numpy/scipy.special; a fit on 20 000 values takes milliseconds.
"""
from __future__ import annotations

import math
import warnings
from typing import Any, ClassVar

import numpy as np
from scipy import optimize, special, stats

from acmemodel.errors import ConvergenceWarning

_LOG_2PI = math.log(2 * math.pi)

__all__ = [
    "Family", "LogNormal", "Weibull", "Gamma", "LogLogistic", "LogNormalMixture2", "Empirical",
    "FAMILIES", "family_from_dict", "get_family",
]


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


# ====================================================================== log-location-scale families
class _LogLocationScale(Family):
    """``log X = m + s·Z`` with a standard variate ``Z`` (density ``g``, cdf ``G``).

    ``f(x) = g(z) / (s·x)``, ``F(x) = G(z)``, ``z = (log x − m)/s``. Subclasses give the standard
    functions ``_lg`` (log g), ``_ls`` (log(1 − G)), ``_G``, ``_Ginv`` and the derivatives
    ``_dlg``, ``_dls`` (w.r.t. z) used by the generic censored MLE, plus the (m, s) ↔ natural map.
    """

    # -- natural <-> (m, s)
    def _ms(self) -> tuple[float, float]:  # pragma: no cover - abstract
        raise NotImplementedError

    @classmethod
    def _from_ms(cls, m: float, s: float) -> "_LogLocationScale":  # pragma: no cover
        raise NotImplementedError

    # -- standard variate
    @staticmethod
    def _lg(z):  # pragma: no cover
        raise NotImplementedError

    @staticmethod
    def _ls(z):  # pragma: no cover
        raise NotImplementedError

    @staticmethod
    def _G(z):  # pragma: no cover
        raise NotImplementedError

    @staticmethod
    def _Ginv(q):  # pragma: no cover
        raise NotImplementedError

    def _z(self, x) -> np.ndarray:
        m, s = self._ms()
        return (_safe_log(x) - m) / s

    def logpdf(self, x) -> np.ndarray:
        x = np.asarray(x, dtype=float)
        m, s = self._ms()
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            y = _safe_log(x)
            out = self._lg((y - m) / s) - math.log(s) - y
        return np.where(x > 0, out, -np.inf)

    def logsf(self, x) -> np.ndarray:
        x = np.asarray(x, dtype=float)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            out = self._ls(self._z(x))
        return np.where(x > 0, out, 0.0)

    def cdf(self, x) -> np.ndarray:
        x = np.asarray(x, dtype=float)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            out = self._G(self._z(x))
        return np.where(x > 0, out, 0.0)

    def sf(self, x) -> np.ndarray:
        return np.exp(self.logsf(x))

    def ppf(self, q) -> np.ndarray:
        q = self._check_q(q)
        m, s = self._ms()
        with np.errstate(divide="ignore", over="ignore"):
            return np.exp(m + s * self._Ginv(q))

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        m, s = self._ms()
        u = rng.random(int(n))
        with np.errstate(divide="ignore", over="ignore"):
            return np.exp(m + s * self._Ginv(u))

    # -- fitting
    @classmethod
    def _start(cls, y: np.ndarray) -> tuple[float, float]:
        m = float(np.median(y))
        s = float(np.std(y))
        return m, max(s, 1e-3)

    @classmethod
    def _fit_ms(cls, y: np.ndarray, c: np.ndarray, m0: float, s0: float) -> tuple[float, float]:
        """Generic censored MLE of (m, log s) by L-BFGS with the analytic gradient."""
        yu, yc = y[~c], y[c]
        scale = max(float(np.std(y)), 1e-3)  # work on standardised data for conditioning
        centre = float(np.mean(y))
        yu_ = (yu - centre) / scale
        yc_ = (yc - centre) / scale

        def nll(theta):
            m, eta = theta
            s = math.exp(eta)
            zu = (yu_ - m) / s
            zc = (yc_ - m) / s
            with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
                lgu, dlgu = cls._lg(zu), cls._dlg(zu)
                lsc, dlsc = cls._ls(zc), cls._dls(zc)
            f = yu_.size * eta - lgu.sum() - lsc.sum()
            gm = (dlgu.sum() + dlsc.sum()) / s
            ge = yu_.size + (dlgu * zu).sum() + (dlsc * zc).sum()
            if not np.isfinite(f):
                return 1e300, np.zeros(2)
            return f, np.array([gm, ge])

        x0 = np.array([(m0 - centre) / scale, math.log(max(s0, 1e-6) / scale)])
        res = optimize.minimize(nll, x0, jac=True, method="L-BFGS-B",
                                options={"maxiter": 500, "gtol": 1e-8})
        if not res.success and not np.isfinite(res.fun):  # pragma: no cover - defensive
            warnings.warn(f"{cls.__name__} fit did not converge: {res.message}", ConvergenceWarning,
                          stacklevel=3)
        m, eta = res.x
        return float(centre + scale * m), float(scale * math.exp(eta))

    @classmethod
    def _fit(cls, x, c, **options):
        y = np.log(x)
        m0, s0 = cls._start(y[~c])
        m, s = cls._fit_ms(y, c, m0, s0)
        return cls._from_ms(m, s)


class LogNormal(_LogLocationScale):
    """Lognormal: ``log X ~ Normal(mu, sigma²)``.

    ``f(x) = φ((log x − mu)/sigma) / (sigma·x)``; median ``e^mu`` seconds. Uncensored MLE in closed
    form: ``mu = mean(log x)``, ``sigma = sd(log x)`` (ddof 0); censored: L-BFGS.
    """

    name = "lognormal"
    param_names = ("mu", "sigma")

    def _validate(self):
        self._positive("sigma")

    def _ms(self):
        return self.mu, self.sigma

    @classmethod
    def _from_ms(cls, m, s):
        return cls(mu=m, sigma=s)

    _lg = staticmethod(lambda z: -0.5 * z * z - 0.5 * _LOG_2PI)
    _dlg = staticmethod(lambda z: -z)
    _ls = staticmethod(lambda z: special.log_ndtr(-z))
    _dls = staticmethod(lambda z: -np.exp(-0.5 * z * z - 0.5 * _LOG_2PI - special.log_ndtr(-z)))
    _G = staticmethod(special.ndtr)
    _Ginv = staticmethod(special.ndtri)

    @classmethod
    def _fit(cls, x, c, sigma_floor: float = 1e-6, **options):
        y = np.log(x)
        mu, sigma = float(np.mean(y[~c])), float(np.std(y[~c]))
        if c.any():
            mu, sigma = cls._fit_ms(y, c, mu, max(sigma, 1e-3))
        return cls(mu=mu, sigma=max(sigma, sigma_floor))


class Weibull(_LogLocationScale):
    """Weibull: ``F(x) = 1 − exp(−(x/lam)^k)``, shape ``k``, scale ``lam`` (seconds).

    ``log X`` is smallest-extreme-value with location ``log lam`` and scale ``1/k``. MLE (with right
    censoring, ``d`` = number uncensored) solves the profile equation in ``k``

        Σ_all x_i^k log x_i / Σ_all x_i^k − 1/k − (1/d) Σ_unc log x_i = 0,

    whose left side increases in ``k`` (one root, found by Brent's method on ``log k``); then
    ``lam^k = Σ_all x_i^k / d``.
    """

    name = "weibull"
    param_names = ("k", "lam")

    def _validate(self):
        self._positive("k", "lam")

    def _ms(self):
        return math.log(self.lam), 1.0 / self.k

    @classmethod
    def _from_ms(cls, m, s):
        return cls(k=1.0 / s, lam=math.exp(m))

    _lg = staticmethod(lambda z: z - np.exp(z))
    _dlg = staticmethod(lambda z: 1.0 - np.exp(z))
    _ls = staticmethod(lambda z: -np.exp(z))
    _dls = staticmethod(lambda z: -np.exp(z))
    _G = staticmethod(lambda z: -np.expm1(-np.exp(z)))
    _Ginv = staticmethod(lambda q: np.log(-np.log1p(-q)))

    @classmethod
    def _fit(cls, x, c, **options):
        y = np.log(x)
        d = int((~c).sum())
        ybar = float(y[~c].mean())
        ymax = float(y.max())
        if float(y.max() - y.min()) < 1e-12:
            raise ValueError("Weibull fit: all values equal (degenerate sample)")

        def g(u):
            k = math.exp(u)
            w = np.exp(k * (y - ymax))
            return float((w * y).sum() / w.sum()) - 1.0 / k - ybar

        lo, hi = -5.0, 3.0
        while g(lo) > 0 and lo > -30:
            lo -= 5.0
        while g(hi) < 0 and hi < 12:
            hi += 3.0
        u = optimize.brentq(g, lo, hi, xtol=1e-12)
        k = math.exp(u)
        loglam = (special.logsumexp(k * y) - math.log(d)) / k
        return cls(k=k, lam=math.exp(loglam))


class LogLogistic(_LogLocationScale):
    """Log-logistic (Fisk): ``F(x) = 1 / (1 + (x/alpha)^(−beta))``, scale ``alpha`` (seconds, the
    median), shape ``beta``. ``log X`` is logistic with location ``log alpha`` and scale ``1/beta``.
    MLE (with censoring) by L-BFGS on ``(log alpha, log(1/beta))`` with the analytic gradient.
    """

    name = "loglogistic"
    param_names = ("alpha", "beta")

    def _validate(self):
        self._positive("alpha", "beta")

    def _ms(self):
        return math.log(self.alpha), 1.0 / self.beta

    @classmethod
    def _from_ms(cls, m, s):
        return cls(alpha=math.exp(m), beta=1.0 / s)

    _lg = staticmethod(lambda z: -np.abs(z) - 2.0 * np.log1p(np.exp(-np.abs(z))))
    _dlg = staticmethod(lambda z: -np.tanh(0.5 * z))
    _ls = staticmethod(lambda z: -np.logaddexp(0.0, z))
    _dls = staticmethod(lambda z: -special.expit(z))
    _G = staticmethod(special.expit)
    _Ginv = staticmethod(special.logit)

    @classmethod
    def _start(cls, y):
        q25, m, q75 = np.quantile(y, [0.25, 0.5, 0.75])
        s = (q75 - q25) / (2 * math.log(3.0))
        return float(m), float(max(s, 1e-3))


# ====================================================================== gamma
class Gamma(Family):
    """Gamma: ``f(x) = x^(k−1) e^(−x/theta) / (Γ(k) theta^k)``, shape ``k``, scale ``theta`` (s).

    Uncensored MLE: with ``s = log(mean x) − mean(log x)``, ``k`` solves ``log k − ψ(k) = s``
    (Minka's starting value, then Newton), ``theta = mean(x)/k``. Censored: L-BFGS on
    ``(log k, log theta)`` starting from the uncensored estimate.
    """

    name = "gamma"
    param_names = ("k", "theta")

    def _validate(self):
        self._positive("k", "theta")

    def logpdf(self, x):
        x = np.asarray(x, dtype=float)
        with np.errstate(divide="ignore", invalid="ignore"):
            xs = np.where(x > 0, x, 1.0) / self.theta
            out = (self.k - 1) * np.log(xs) - xs - special.gammaln(self.k) - math.log(self.theta)
        return np.where(x > 0, out, -np.inf)

    def cdf(self, x):
        x = np.asarray(x, dtype=float)
        return special.gammainc(self.k, np.maximum(x, 0.0) / self.theta)

    def sf(self, x):
        x = np.asarray(x, dtype=float)
        return special.gammaincc(self.k, np.maximum(x, 0.0) / self.theta)

    def logsf(self, x):
        x = np.asarray(x, dtype=float)
        return stats.gamma.logsf(np.maximum(x, 0.0), self.k, scale=self.theta)

    def ppf(self, q):
        q = self._check_q(q)
        return special.gammaincinv(self.k, q) * self.theta

    def sample(self, n, rng):
        return rng.gamma(self.k, self.theta, int(n))

    @staticmethod
    def _shape_mle(s: float) -> float:
        if s <= 0:
            raise ValueError("Gamma fit: all values equal (degenerate sample)")
        k = (3 - s + math.sqrt((s - 3) ** 2 + 24 * s)) / (12 * s)
        for _ in range(50):
            f = math.log(k) - special.digamma(k) - s
            fp = 1 / k - special.polygamma(1, k)
            step = f / fp
            k_new = k - step
            if k_new <= 0:
                k_new = k / 2
            if abs(k_new - k) < 1e-12 * k:
                k = k_new
                break
            k = k_new
        return k

    @classmethod
    def _fit(cls, x, c, **options):
        xu = x[~c]
        scale = float(np.exp(np.mean(np.log(x))))  # geometric mean: keeps theta ≈ O(1) numerically
        z = xu / scale
        s = math.log(z.mean()) - float(np.log(z).mean())
        if not s > 1e-12:
            raise ValueError("Gamma fit: all values equal (degenerate sample)")
        k = cls._shape_mle(s)
        theta = float(z.mean()) / k
        if c.any():
            zall = x / scale
            zu, zc = zall[~c], zall[c]

            def nll(t):
                kk, th = math.exp(t[0]), math.exp(t[1])
                lp = ((kk - 1) * np.log(zu) - zu / th).sum() \
                    - zu.size * (special.gammaln(kk) + kk * math.log(th))
                ls = stats.gamma.logsf(zc, kk, scale=th).sum()
                v = -(lp + ls)
                return v if np.isfinite(v) else 1e300

            res = optimize.minimize(nll, [math.log(k), math.log(theta)], method="L-BFGS-B")
            k, theta = math.exp(res.x[0]), math.exp(res.x[1])
        return cls(k=k, theta=theta * scale)


# ====================================================================== mixture
class LogNormalMixture2(Family):
    """Two-component lognormal mixture: ``log X ~ w·N(mu1, sigma1²) + (1−w)·N(mu2, sigma2²)``.

    Captures bimodal run times (e.g. jobs that crash in seconds vs. jobs that run for hours).
    Fitted by EM on ``log x`` (tied values merged into weighted points); censored observations enter
    the E-step through ``S_j(c)`` and the M-step through the truncated-normal moments
    ``E[Y | Y > c]``, ``E[Y² | Y > c]``.
    EM stops when the log-likelihood gain per observation falls below ``tol`` (1e-6 nats).
    Identified by ``mu1 <= mu2``; ``sigma`` is floored at ``sigma_floor`` (default 0.05) so that a
    component cannot collapse onto ties (integer-second data). Non-convergence within ``max_iter``
    emits :class:`~acmemodel.errors.ConvergenceWarning`. ``cdf`` is exact; ``ppf`` inverts it
    numerically (grid + Newton).
    """

    name = "lognormal_mix2"
    param_names = ("w", "mu1", "sigma1", "mu2", "sigma2")

    def _validate(self):
        self._positive("sigma1", "sigma2")
        if not 0 < self.w < 1:
            raise ValueError(f"LogNormalMixture2 parameter w must be in (0, 1), got {self.w!r}")

    def _comp(self):
        return (np.array([self.w, 1 - self.w]), np.array([self.mu1, self.mu2]),
                np.array([self.sigma1, self.sigma2]))

    def _logpdf_y(self, y):
        w, mu, sg = self._comp()
        z = (y[..., None] - mu) / sg
        return special.logsumexp(np.log(w) - 0.5 * z * z - 0.5 * _LOG_2PI - np.log(sg), axis=-1)

    def logpdf(self, x):
        x = np.asarray(x, dtype=float)
        y = _safe_log(x)
        with np.errstate(invalid="ignore"):
            out = self._logpdf_y(np.where(x > 0, y, 0.0)) - np.where(x > 0, y, 0.0)
        return np.where(x > 0, out, -np.inf)

    def cdf(self, x):
        x = np.asarray(x, dtype=float)
        w, mu, sg = self._comp()
        y = np.where(x > 0, _safe_log(np.where(x > 0, x, 1.0)), -np.inf)
        return (w * special.ndtr((y[..., None] - mu) / sg)).sum(-1)

    def logsf(self, x):
        x = np.asarray(x, dtype=float)
        w, mu, sg = self._comp()
        y = np.where(x > 0, _safe_log(np.where(x > 0, x, 1.0)), -np.inf)
        return special.logsumexp(np.log(w) + special.log_ndtr(-(y[..., None] - mu) / sg), axis=-1)

    def sf(self, x):
        return np.exp(self.logsf(x))

    def ppf(self, q):
        q = self._check_q(q)
        w, mu, sg = self._comp()
        lo, hi = float((mu - 9 * sg).min()), float((mu + 9 * sg).max())
        grid = np.linspace(lo, hi, 4001)
        F = (w * special.ndtr((grid[:, None] - mu) / sg)).sum(-1)
        qq = np.clip(q, 1e-300, 1 - 1e-16)
        y = np.interp(qq, F, grid)
        for _ in range(3):  # Newton polish on the log scale
            z = (y[..., None] - mu) / sg
            Fy = (w * special.ndtr(z)).sum(-1)
            fy = (w * np.exp(-0.5 * z * z) / (sg * math.sqrt(2 * math.pi))).sum(-1)
            y = y - np.where(fy > 1e-300, (Fy - qq) / np.maximum(fy, 1e-300), 0.0)
        out = np.exp(y)
        out = np.where(q <= 0, 0.0, out)
        return np.where(q >= 1, np.inf, out)

    def sample(self, n, rng):
        n = int(n)
        first = rng.random(n) < self.w
        z = rng.standard_normal(n)
        return np.exp(np.where(first, self.mu1 + self.sigma1 * z, self.mu2 + self.sigma2 * z))

    @classmethod
    def _fit(cls, x, c, sigma_floor: float = 0.05, max_iter: int = 200, tol: float = 1e-6, **options):
        y = np.log(x)
        # ties (integer-second data) are merged into weighted points: exact and much faster
        yu, wu = np.unique(y[~c], return_counts=True)
        yc, wc = np.unique(y[c], return_counts=True)
        wu = wu.astype(float)
        wc = wc.astype(float)
        n = float(wu.sum() + wc.sum())
        if yu.size < 4:
            raise ValueError("LogNormalMixture2 fit: fewer than 4 distinct values")
        ys = y[~c]
        q = np.quantile(ys, [0.2, 0.8])
        sd = max(float(np.std(ys)), sigma_floor)
        w = 0.5
        mu = [float(q[0]), float(q[1])]
        sg = [max(sd / 2, sigma_floor)] * 2
        prev = -np.inf
        converged = False
        has_c = yc.size > 0
        for _ in range(max_iter):
            # E-step (log densities per component, responsibilities of component 1)
            l1 = math.log(w) - 0.5 * ((yu - mu[0]) / sg[0]) ** 2 - math.log(sg[0])
            l2 = math.log1p(-w) - 0.5 * ((yu - mu[1]) / sg[1]) ** 2 - math.log(sg[1])
            d = l2 - l1
            r1 = special.expit(-d)
            ll = float((wu * (l1 + np.logaddexp(0.0, d))).sum()) - 0.5 * _LOG_2PI * float(wu.sum())
            if has_c:
                zc1, zc2 = (yc - mu[0]) / sg[0], (yc - mu[1]) / sg[1]
                c1 = math.log(w) + special.log_ndtr(-zc1)
                c2 = math.log1p(-w) + special.log_ndtr(-zc2)
                dc = c2 - c1
                rc1 = special.expit(-dc)
                ll += float((wc * (c1 + np.logaddexp(0.0, dc))).sum())
            if ll - prev < tol * n:
                converged = True
                break
            prev = ll
            # M-step (censored values: truncated-normal moments E[Y|Y>c], E[Y²|Y>c])
            new_mu, new_sg, nks = [], [], []
            for j, (rj, zc) in enumerate(((r1, None), (1 - r1, None))):
                a = wu * rj
                nk, s1, s2 = a.sum(), (a * yu).sum(), (a * yu * yu).sum()
                if has_c:
                    zc = zc1 if j == 0 else zc2
                    rcj = rc1 if j == 0 else 1 - rc1
                    lam = np.exp(-0.5 * zc * zc - 0.5 * _LOG_2PI - special.log_ndtr(-zc))
                    ey = mu[j] + sg[j] * lam
                    ey2 = mu[j] ** 2 + sg[j] ** 2 * (1 + zc * lam) + 2 * mu[j] * sg[j] * lam
                    b = wc * rcj
                    nk, s1, s2 = nk + b.sum(), s1 + (b * ey).sum(), s2 + (b * ey2).sum()
                nk = max(float(nk), 1e-12)
                m_ = float(s1) / nk
                new_mu.append(m_)
                new_sg.append(math.sqrt(max(float(s2) / nk - m_ * m_, sigma_floor ** 2)))
                nks.append(nk)
            mu, sg = new_mu, new_sg
            w = float(np.clip(nks[0] / (nks[0] + nks[1]), 1e-6, 1 - 1e-6))
        if not converged:
            warnings.warn(f"LogNormalMixture2 EM did not converge in {max_iter} iterations",
                          ConvergenceWarning, stacklevel=3)
        if mu[0] > mu[1]:
            mu, sg, w = mu[::-1], sg[::-1], 1 - w
        return cls(w=w, mu1=mu[0], sigma1=sg[0], mu2=mu[1], sigma2=sg[1])


# ====================================================================== empirical
class Empirical(Family):
    """Kernel-smoothed empirical distribution on the log scale (nonparametric fallback).

    ``F(x) = (1/m) Σ_j Φ((log x − a_j)/h)``: a Gaussian kernel of bandwidth ``h`` (log-seconds)
    around ``m ≤ max_atoms`` (default 200) atoms ``a_j`` = empirical quantiles of ``log x`` at
    levels ``(j − ½)/m`` (Kaplan–Meier quantiles, ``scipy.stats.ecdf``, when some observations
    are censored; KM mass beyond the last observation sits at the largest value). So it is the
    log-space ECDF smoothed, with Gaussian (i.e. lognormal-like) tails beyond the data, a proper
    density for held-out likelihood, and a bounded JSON size. ``h`` is Silverman's rule
    ``0.9·min(sd, IQR/1.349)·n^(−1/5)`` floored at ``h_floor`` (default 0.05).
    ``n_params = m + 1`` (for BIC, which therefore all but excludes it).
    """

    name = "empirical"
    param_names = ("h",)

    def __init__(self, *, atoms, h: float):
        atoms = np.sort(np.asarray(atoms, dtype=float).ravel())
        if atoms.size == 0 or not np.all(np.isfinite(atoms)):
            raise ValueError("Empirical parameter atoms must be a non-empty list of finite log-seconds")
        self.atoms = atoms
        super().__init__(h=h)
        self._grid = None

    def _validate(self):
        self._positive("h")

    @property
    def params(self):
        return {"h": self.h, "atoms": self.atoms.tolist()}

    @property
    def n_params(self):
        return int(self.atoms.size) + 1

    def __repr__(self):
        return f"Empirical(m={self.atoms.size}, h={self.h:.4g}, median={self.median():.4g})"

    def _logpdf_y(self, y):
        z = (y[..., None] - self.atoms) / self.h
        return special.logsumexp(-0.5 * z * z, axis=-1) - math.log(self.atoms.size * self.h) - 0.5 * _LOG_2PI

    def logpdf(self, x):
        x = np.asarray(x, dtype=float)
        y = np.where(x > 0, _safe_log(np.where(x > 0, x, 1.0)), 0.0)
        out = self._chunked(lambda v: self._logpdf_y(v) - v, y)
        return np.where(x > 0, out, -np.inf)

    def _chunked(self, fn, y, chunk: int = 20000):
        y = np.asarray(y, dtype=float)
        flat = y.ravel()
        if flat.size <= chunk:
            return fn(flat).reshape(y.shape)
        return np.concatenate([fn(flat[i:i + chunk]) for i in range(0, flat.size, chunk)]).reshape(y.shape)

    def _cdf_y(self, y):
        return special.ndtr((y[..., None] - self.atoms) / self.h).mean(-1)

    def cdf(self, x):
        x = np.asarray(x, dtype=float)
        y = np.where(x > 0, _safe_log(np.where(x > 0, x, 1.0)), -np.inf)
        return self._chunked(self._cdf_y, y)

    def logsf(self, x):
        x = np.asarray(x, dtype=float)
        y = np.where(x > 0, _safe_log(np.where(x > 0, x, 1.0)), -np.inf)

        def f(v):
            return special.logsumexp(special.log_ndtr(-(v[..., None] - self.atoms) / self.h), axis=-1) \
                - math.log(self.atoms.size)
        return self._chunked(f, y)

    def sf(self, x):
        return np.exp(self.logsf(x))

    def ppf(self, q):
        q = self._check_q(q)
        if self._grid is None:
            g = np.linspace(self.atoms[0] - 8 * self.h, self.atoms[-1] + 8 * self.h, 4001)
            self._grid = (g, self._cdf_y(g))
        g, F = self._grid
        y = np.interp(np.clip(q, 0, 1), F, g)
        for _ in range(2):
            z = (y[..., None] - self.atoms) / self.h
            Fy = special.ndtr(z).mean(-1)
            fy = np.exp(-0.5 * z * z).mean(-1) / (self.h * math.sqrt(2 * math.pi))
            y = y - np.where(fy > 1e-300, (Fy - q) / np.maximum(fy, 1e-300), 0.0)
        out = np.exp(y)
        out = np.where(q <= 0, 0.0, out)
        return np.where(q >= 1, np.inf, out)

    def sample(self, n, rng):
        n = int(n)
        idx = rng.integers(0, self.atoms.size, n)
        return np.exp(self.atoms[idx] + self.h * rng.standard_normal(n))

    @classmethod
    def _fit(cls, x, c, max_atoms: int = 200, h_floor: float = 0.05, **options):
        y = np.log(x)
        n = y.size
        m = int(min(max_atoms, n))
        levels = (np.arange(m) + 0.5) / m
        if c.any():
            res = stats.ecdf(stats.CensoredData(uncensored=y[~c], right=y[c]))
            qs, ps = res.cdf.quantiles, res.cdf.probabilities
            idx = np.searchsorted(ps, levels, side="left")
            atoms = qs[np.minimum(idx, qs.size - 1)]
            atoms = np.where(idx >= qs.size, y.max(), atoms)
            yu = y[~c]
        else:
            atoms = np.quantile(y, levels)
            yu = y
        sd = float(np.std(yu))
        q25, q75 = np.quantile(yu, [0.25, 0.75])
        spread = min(sd, (q75 - q25) / 1.349) if q75 > q25 else sd
        h = max(0.9 * spread * n ** (-0.2), h_floor)
        return cls(atoms=atoms, h=h)

    def to_dict(self):
        return {"family": self.name, "h": self.h, "atoms": [round(float(a), 6) for a in self.atoms]}


# ====================================================================== registry
FAMILIES: dict[str, type[Family]] = {
    cls.name: cls for cls in (LogNormal, Weibull, Gamma, LogLogistic, LogNormalMixture2, Empirical)
}


def get_family(name: str) -> type[Family]:
    """The family class called ``name`` (ValueError listing the valid names otherwise)."""
    try:
        return FAMILIES[name]
    except KeyError:
        raise ValueError(f"unknown distribution family {name!r}; valid: {', '.join(FAMILIES)}") from None


def family_from_dict(d: dict[str, Any]) -> Family:
    """Rebuild a family instance from :meth:`Family.to_dict` output."""
    d = dict(d)
    cls = get_family(d.pop("family"))
    if cls is Empirical:
        return Empirical(atoms=d["atoms"], h=d["h"])
    return cls(**{k: float(v) for k, v in d.items()})
