"""The key-level queries of :class:`~acmemodel.models.failure.FailureModel` (a mixin it inherits).

MTTF with its interval and size curve, survival, hazard, early-failure probability, the
piecewise-constant hazard table of the C kernel, sampling and the identifiability report, all for a
job of ``gpus`` GPUs and an optional key (``cluster=``, ``type=``). The math is in
:mod:`acmemodel.models.failure`; a key that is not given is averaged over the training mix of
(cluster, type) (the fitted combination weights ``combos_``), a value never seen in training raises
``ValueError`` naming the key and the known values.
"""
from __future__ import annotations

import warnings

import math

import numpy as np
import pandas as pd
from scipy import special, stats

from acmemodel.models.failure_mle import _check_component, _num_jac
from acmemodel.models.distributions import LogNormal
from acmemodel.models.failure_laws import PiecewiseHazardLaw
from acmemodel.models.family import Family

__all__ = ["FailureQueriesMixin", "IDENTIFIABILITY_SIZES", "MAX_MTTF_RATIO", "SUPPORT_MIN_EVENTS", "failure_support"]

#: GPU thresholds at which the fit counts failures (identifiability report)
IDENTIFIABILITY_SIZES: tuple[int, ...] = (8, 64, 256, 1024)
#: an MTTF interval wider than this ratio (upper / lower) is reported as poorly identified
MAX_MTTF_RATIO = 10.0


#: failures a cluster × GPU-bucket cell needs for its own failure support (else its bucket's, then all)
SUPPORT_MIN_EVENTS = 10


def failure_support(frame: pd.DataFrame) -> dict[str, float]:
    """Longest observed failure time (s) of a survival frame (``T``, ``E``, ``cluster``, ``gpu_bucket``),
    per ``"cluster/bucket"`` with at least :data:`SUPPORT_MIN_EVENTS` failures, per ``"*/bucket"`` (all
    clusters) likewise, and ``"*/*"`` over every failure."""
    ev = frame[frame["E"].to_numpy(bool)]
    out: dict[str, float] = {}
    if not len(ev):
        return out
    b = ev["gpu_bucket"].astype(str)
    for keys, name in ((["cluster", b], "{}/{}"), ([b], "*/{}")):
        g = ev.groupby(keys)["T"].agg(["max", "size"])
        for k, row in g[g["size"] >= SUPPORT_MIN_EVENTS].iterrows():
            k = k if isinstance(k, tuple) else (k,)
            out[name.format(*k)] = float(row["max"])
    out["*/*"] = float(ev["T"].max())
    return out


def _human_s(s: float) -> str:
    if not math.isfinite(s):
        return "inf"
    return f"{s / 3600:,.3g} h" if s < 86400 * 3 else f"{s / 86400:,.3g} d"


class FailureQueriesMixin:
    """MTTF, survival, hazard, sampling by key (needs the fitted state of :class:`FailureModel`)."""

    # ------------------------------------------------------------------ key-level accessors
    def _key_rows(self, key: dict):
        """(cluster levels, type levels, weights) of the (cluster, type) combos matching ``key``."""
        key = dict(key)
        bad = set(key) - {"cluster", "type"}
        if bad:
            raise ValueError(f"unknown key(s) {sorted(bad)}; the failure model takes cluster= and type=")
        c, t = key.get("cluster"), key.get("type")
        if c is not None and c not in self.design_.clusters:
            raise ValueError(f"cluster {c!r} was not seen in training; known: {self.design_.clusters}")
        if t is not None:
            if t not in self.design_.type_map:
                raise ValueError(f"type {t!r} was not seen in training; known: "
                                 f"{sorted(self.design_.type_map)}")
            t = self.design_.type_map[t]
        rows = [(cc, tt, w) for cc, tt, w in self.combos_
                if (c is None or cc == c) and (t is None or tt == t)]
        if not rows:  # a combination absent from training: use the covariates as given
            rows = [(c or self.design_.clusters[0], t or self.design_.types[0], 1.0)]
        cl = np.array([r[0] for r in rows], dtype=object)
        ty = np.array([r[1] for r in rows], dtype=object)
        w = np.array([r[2] for r in rows], float)
        return cl, ty, w / w.sum()

    def _key_design(self, gpus: np.ndarray, key: dict):
        cl, ty, w = self._key_rows(key)
        G = np.asarray(gpus, float)
        if np.any(~np.isfinite(G)) or np.any(G <= 0):
            raise ValueError(f"gpus must be positive and finite, got {gpus!r}")
        nc = len(cl)
        # rows: combos × gpus (combo-major)
        Z, X = self._matrices(np.repeat(cl, len(G)), np.repeat(ty, len(G)), np.tile(G, nc))
        return Z, X, w, nc, len(G)

    def _log_mttf(self, th, gpus, key, component) -> np.ndarray:
        Z, X, w, nc, ng = self._key_design(gpus, key)
        gam, mu, ls, lk, d = self._mix.unpack(th)
        k = math.exp(lk)
        m_L = self._mix.late.mean(self.t_ref, X @ d, k)
        if component == "late" or self.regimes == 1:
            m = m_L
        else:
            m_E = self.t_ref * math.exp(mu + 0.5 * math.exp(2 * ls))
            if component == "early":
                m = np.full(len(m_L), m_E)
            else:
                p = special.expit(Z @ gam)
                m = p * m_E + (1 - p) * m_L
        return np.log((w[:, None] * m.reshape(nc, ng)).sum(axis=0))

    def failure_type_mix(self, gpus=None, t=None, **kwargs):
        """Probabilities of the paper's failure reasons (or categories) for a job of ``gpus`` GPUs at
        elapsed run time ``t`` seconds: the published prior of
        :func:`acmemodel.models.failure_types.failure_type_mix` (the trace carries no failure reasons,
        so nothing is fitted). Keyword arguments (``level``, ``condition``, ``cluster``) as there."""
        from acmemodel.models.failure_types import failure_type_mix

        return failure_type_mix(gpus, t, **kwargs)

    def mttf(self, gpus, *, component: str = "late", **key):
        """Mean time to failure (seconds) of a job of ``gpus`` GPUs (scalar or array).

        ``component="late"`` (default, what a checkpointing planner needs): the mean of the late
        Weibull regime, ``η(g, x)·Γ(1 + 1/k)`` — the time a job that is past its first minutes runs
        until an infrastructure-type failure; ``"all"``: the mixture mean ``p·E_E + (1−p)·MTTF_L``;
        ``"early"``: the early component's mean. ``key``: ``cluster=``, ``type=`` (omitted ones are
        averaged over the training mix). Beyond the largest trace jobs this extrapolates the fitted
        power law (an assumption; see the module docstring).
        """
        self._check_fitted()
        component = _check_component(component)
        scalar = np.ndim(gpus) == 0
        out = np.exp(self._log_mttf(self.params_, np.atleast_1d(gpus), key, component))
        return float(out[0]) if scalar else out

    def mttf_curve(self, gpus=None, *, level: float = 0.95, component: str = "late",
                   **key) -> pd.DataFrame:
        """MTTF with delta-method intervals (log scale) for an array of GPU counts.

        Columns: ``gpus``, ``mttf_s``, ``lower_s``, ``upper_s``, ``mttf_h``, ``extrapolated`` (gpus
        beyond the largest job of the trace: the power law is assumed). Default ``gpus``: powers of two
        from 8 to 16,384.
        """
        self._check_fitted()
        if not 0 < level < 1:
            raise ValueError(f"level must be in (0, 1), got {level!r}")
        component = _check_component(component)
        g = np.asarray([2 ** i for i in range(3, 15)] if gpus is None else np.atleast_1d(gpus), float)
        lm = self._log_mttf(self.params_, g, key, component)
        J = _num_jac(lambda th: self._log_mttf(th, g, key, component), self.params_)
        se = np.sqrt(np.maximum(np.einsum("ij,jk,ik->i", J, self.cov_, J), 0.0))
        z = stats.norm.ppf(0.5 + level / 2)
        return pd.DataFrame({"gpus": g, "mttf_s": np.exp(lm), "lower_s": np.exp(lm - z * se),
                             "upper_s": np.exp(lm + z * se), "mttf_h": np.exp(lm) / 3600.0,
                             "extrapolated": g > self.max_gpus_})

    def mttf_interval(self, gpus: float, *, level: float = 0.95, component: str = "late",
                      **key) -> tuple[float, float]:
        """``(lower, upper)`` seconds of the MTTF of ``gpus`` GPUs (see :meth:`mttf_curve`)."""
        r = self.mttf_curve([gpus], level=level, component=component, **key).iloc[0]
        return float(r["lower_s"]), float(r["upper_s"])

    def identifiability(self, gpus: float | None = None, *, max_ratio: float = MAX_MTTF_RATIO) -> str | None:
        """One line when the size law is too uncertain to be useful, else ``None``: the 95 %
        interval of the late MTTF at ``gpus`` (default the largest fitted job, ``max_gpus_``)
        spans more than ``max_ratio`` (10×), named with its cause — how few failures the fit saw on
        large jobs (``events_by_gpus_``) — and the size exponent's interval."""
        self._check_fitted()
        g = float(self.max_gpus_ if gpus is None else gpus)
        lo, hi = self.mttf_interval(g)
        ratio = hi / lo if lo > 0 and math.isfinite(hi) else math.inf
        if ratio <= max_ratio:
            return None
        ev = getattr(self, "events_by_gpus_", {}) or {}
        sizes = [t for t in sorted(ev) if t <= g and t >= getattr(self, "min_gpus_", 1.0)]
        if sizes:
            t = sizes[-1]
            cause = f"only {ev[t]:,} failures on >= {t:,} GPUs ({self.n_events_:,} in all)"
        else:
            cause = f"only {self.n_events_:,} failures in all"
        span = "unbounded" if not math.isfinite(ratio) else f"{ratio:,.0f}x"
        return (f"failure model poorly identified: {cause}; MTTF at {g:,.0f} GPUs spans {span} "
                f"(95% {_human_s(lo)} to {_human_s(hi)}), alpha {self.alpha_:.2f} "
                f"[{self.alpha_ci_[0]:.2f}, {self.alpha_ci_[1]:.2f}]")

    def failure_support_s(self, gpus: float, cluster: str | None = None) -> float:
        """Longest failure time (s) the model saw for jobs of ``gpus`` GPUs (their GPU bucket) in
        ``cluster`` — the cluster × bucket cell with at least :data:`SUPPORT_MIN_EVENTS` failures, else
        the bucket over all clusters, else every failure; ``inf`` for a model saved without it. The
        synthetic generator (:mod:`acmemodel.joblife`) draws no failure beyond it: past the longest
        failure of the trace the hazard is an extrapolation, and a few multi-day failures of the largest
        jobs would hold much of a cluster's GPU time. The model's own queries (MTTF, survival, hazard)
        are not truncated."""
        from acmemodel.features.keys import gpu_bucket

        sup = getattr(self, "failure_support_", None) or {}
        if not sup:
            return math.inf
        b = str(gpu_bucket(np.array([max(float(gpus), 0.0)]), tuple(self.gpu_edges))[0])
        for k in (f"{cluster}/{b}", f"*/{b}", "*/*"):
            if k in sup:
                return float(sup[k])
        return math.inf

    def survival(self, t, gpus, *, component: str = "all", **key):
        """P(no failure by run time ``t`` s) for a job of ``gpus`` GPUs (t, gpus broadcast).

        ``component="all"``: the two-regime mixture; ``"late"``: the late Weibull regime only;
        ``"early"``: the early component. Omitted keys are averaged over the training mix.
        """
        S, _ = self._sf(t, gpus, component, key)
        return S

    def hazard(self, t, gpus, *, component: str = "all", **key):
        """Failure hazard (1/s) at run time ``t`` s for ``gpus`` GPUs: ``f(t)/S(t)`` of the population."""
        S, f = self._sf(t, gpus, component, key)
        with np.errstate(divide="ignore", invalid="ignore"):
            h = f / S
        return h

    def _sf(self, t, gpus, component, key):
        self._check_fitted()
        component = _check_component(component)
        t_a, g_a = np.broadcast_arrays(np.asarray(t, float), np.asarray(gpus, float))
        scalar = t_a.ndim == 0
        tt, gg = t_a.ravel(), g_a.ravel()
        if np.any(~np.isfinite(tt)) or np.any(tt < 0):
            raise ValueError(f"t must be finite and >= 0 seconds, got {t!r}")
        S = np.empty(len(tt))
        f = np.empty(len(tt))
        for gv in np.unique(gg):
            m = gg == gv
            Z, X, w, nc, _ = self._key_design(np.array([gv]), key)
            Sm, fm = self._surv_dens(self.params_, tt[m], Z, X, component)
            S[m] = w @ Sm
            f[m] = w @ fm
        S = S.reshape(t_a.shape)
        f = f.reshape(t_a.shape)
        if scalar:
            return float(S), float(f)
        return S, f

    def early_probability(self, gpus, **key):
        """p(g, x): probability that a job is *defective* (fails in the early regime)."""
        self._check_fitted()
        if self.regimes == 1:
            return 0.0 if np.ndim(gpus) == 0 else np.zeros(np.shape(gpus))
        scalar = np.ndim(gpus) == 0
        Z, X, w, nc, ng = self._key_design(np.atleast_1d(gpus), key)
        gam = self._mix.unpack(self.params_)[0]
        p = (w[:, None] * special.expit(Z @ gam).reshape(nc, ng)).sum(axis=0)
        return float(p[0]) if scalar else p

    def late_law(self, gpus: float, **key) -> Family:
        """The late regime at ``gpus`` GPUs as a duration family: the ``late_family`` law (by default the
        :class:`Weibull` of shape ``shape_``) whose mean is :meth:`mttf` (keys omitted are averaged over
        the training mix through the mean)."""
        self._check_fitted()
        return self._mix.late.family(float(self.shape_), float(self.mttf(gpus, **key)))

    def early_law(self) -> LogNormal | None:
        """The early (defective-job) regime as a duration family: ``LogNormal(mu = log t_ref + μ_E, σ_E)``
        (seconds); ``None`` for a one-regime model."""
        self._check_fitted()
        if self.regimes == 1:
            return None
        _, mu, ls, _, _ = self._mix.unpack(self.params_)
        return LogNormal(mu=math.log(self.t_ref) + float(mu), sigma=math.exp(float(ls)))

    def failure_law(self, gpus: float, *, kind: str = "weibull", **key) -> Family:
        """The model's own failure process for a job of ``gpus`` GPUs, handed to the planner as a duration
        :class:`~acmemodel.models.family.Family` (the planner assumes no family): the late regime
        (:meth:`late_law`, a Weibull by default) or, with ``kind="piecewise"``, its hazard table
        (:meth:`hazard_table`) as a :class:`~acmemodel.models.failure_laws.PiecewiseHazardLaw`. Another
        failure model may hand over another family (log-normal, log-logistic, ...): the planner plans with
        its survival (:func:`acmemodel.planner.run.processes.failure_process_from_law`)."""
        self._check_fitted()
        if kind == "piecewise":
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                return PiecewiseHazardLaw.from_table(self.hazard_table(gpus, **key))
        if kind != "weibull":
            raise ValueError(f"kind must be 'weibull' (the late regime's own law) or 'piecewise', got {kind!r}")
        return self.late_law(gpus, **key)

    def hazard_table(self, gpus: float, edges=None, *, component: str = "late", **key) -> pd.DataFrame:
        """Piecewise-constant hazard for the planner's C kernel.

        On each interval ``[e_i, e_{i+1})`` (seconds) the constant hazard is the average
        ``(H(e_{i+1}) − H(e_i)) / (e_{i+1} − e_i)`` with ``H = −log S``, so the survival at every edge
        is exact. Default edges: 0, 1 min, 10 min, 1 h, 3 h, 6 h, 12 h, 1 d, 2 d, 4 d, 7 d, 14 d, 30 d.
        Columns: ``start_s``, ``end_s``, ``hazard_per_s``, ``survival_start``, ``survival_end``.
        Beyond the last edge a kernel should keep the last rate (a Weibull with k < 1 decreases further).
        """
        e = np.asarray([0, 60, 600, 3600, 3 * 3600, 6 * 3600, 12 * 3600, 86400, 2 * 86400, 4 * 86400,
                        7 * 86400, 14 * 86400, 30 * 86400] if edges is None else edges, float)
        if e.ndim != 1 or len(e) < 2 or np.any(~np.isfinite(e)) or e[0] < 0 or np.any(np.diff(e) <= 0):
            raise ValueError(f"edges must be >= 2 increasing finite non-negative seconds, got {edges!r}")
        if np.ndim(gpus) != 0:
            raise ValueError(f"gpus must be a scalar, got {gpus!r}")
        S = np.asarray(self.survival(e, np.full(len(e), float(gpus)), component=component, **key))
        S[e == 0] = 1.0
        H = -np.log(np.maximum(S, 1e-300))
        return pd.DataFrame({"start_s": e[:-1], "end_s": e[1:], "hazard_per_s": np.diff(H) / np.diff(e),
                             "survival_start": S[:-1], "survival_end": S[1:]})

    def sample(self, n: int, gpus: float, rng: np.random.Generator, *, component: str = "all",
               **key) -> np.ndarray:
        """``n`` failure times (seconds) of jobs of ``gpus`` GPUs drawn from the fitted model."""
        self._check_fitted()
        if not isinstance(rng, np.random.Generator):
            raise ValueError("rng must be a numpy.random.Generator")
        if int(n) != n or n < 0:
            raise ValueError(f"n must be a non-negative integer, got {n!r}")
        component = _check_component(component)
        Z, X, w, nc, _ = self._key_design(np.array([float(gpus)]), key)
        gam, mu, ls, lk, d = self._mix.unpack(self.params_)
        k = math.exp(lk)
        combo = rng.choice(nc, size=int(n), p=w)
        t_late = self._mix.late.times(rng, int(n), self.t_ref, (X @ d)[combo], k)
        if component == "late" or self.regimes == 1:
            return t_late
        t_early = self.t_ref * np.exp(mu + math.exp(ls) * rng.standard_normal(int(n)))
        if component == "early":
            return t_early
        p = special.expit(Z @ gam)[combo]
        return np.where(rng.random(int(n)) < p, t_early, t_late)
