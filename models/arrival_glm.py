"""Estimation pieces of the arrival model: time helpers (Unix seconds, hour of week, hourly bins),
the zero-truncated negative binomial of batch sizes, the hourly-count GLM of a cell's weekly profile
with its Cameron–Trivedi over-dispersion test (:class:`ArrivalFitMixin`). The math is stated in
:mod:`acmemodel.models.arrival`.
"""
from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
from scipy import stats

from acmemodel.errors import ConvergenceWarning

HOURS_PER_WEEK = 168
#: quantiles stored of the within-batch gap distribution
_N_GAP_Q = 101
_MIN_EVENTS_TREND = 50
_MIN_DAYS_TREND = 14.0


# ---------------------------------------------------------------------- time helpers
def to_unix_seconds(t) -> np.ndarray | float:
    """Unix seconds (UTC, float) of numbers, strings, datetimes, Timestamps or array-likes of them
    (Series, DatetimeIndex, lists, numpy arrays); naive times are taken as UTC."""
    import datetime as _dt

    if isinstance(t, (int, float, np.integer, np.floating)):
        return float(t)
    if isinstance(t, (str, pd.Timestamp, _dt.datetime, _dt.date, np.datetime64)):
        ts = pd.Timestamp(t)
        ts = ts.tz_localize("UTC") if ts.tzinfo is None else ts.tz_convert("UTC")
        return ts.value / 1e9
    if isinstance(t, (pd.Series, pd.Index)):
        if t.dtype.kind in "iuf":
            return t.to_numpy(dtype=float)
        idx = pd.DatetimeIndex(pd.to_datetime(t))
        shape = (len(idx),)
    else:
        arr = np.asarray(t)
        if arr.dtype.kind in "iuf":
            return arr.astype(float)
        shape = arr.shape
        idx = pd.DatetimeIndex(pd.to_datetime(arr.ravel()))
    idx = idx.tz_localize("UTC") if idx.tz is None else idx.tz_convert("UTC")
    return (idx.asi8 / 1e9).reshape(shape)


def hour_of_week(t_s, offset_s: int) -> np.ndarray:
    """Local hour of week ``24 · dow + hour`` (Monday 00h = 0) of Unix seconds ``t_s``."""
    h = np.floor((np.asarray(t_s, dtype=float) + offset_s) / 3600.0).astype(np.int64)
    return _how_of_local_hour(h)


def _how_of_local_hour(h: np.ndarray) -> np.ndarray:
    # 1970-01-01 (local day 0) was a Thursday: dow = (day + 3) mod 7 with Monday = 0
    return ((h // 24 + 3) % 7) * 24 + h % 24


def _hour_bins(start: float, end: float, off: int):
    """Local hour bins overlapping ``[start, end)``: (local hour index, lo, hi, midpoint) in UTC s."""
    h0 = math.floor((start + off) / 3600.0)
    h1 = math.ceil((end + off) / 3600.0)
    h = np.arange(h0, max(h1, h0 + 1), dtype=np.int64)
    b0 = h * 3600.0 - off
    lo = np.maximum(b0, start)
    hi = np.minimum(b0 + 3600.0, end)
    keep = hi > lo
    return h[keep], lo[keep], hi[keep], b0[keep] + 1800.0


# ---------------------------------------------------------------------- batch sizes
def _ztnb_logpmf(y: np.ndarray, mean: float, size: float) -> np.ndarray:
    p = size / (size + mean)
    return stats.nbinom.logpmf(y, size, p) - np.log1p(-stats.nbinom.pmf(0, size, p))


def fit_ztnb(values: np.ndarray, counts: np.ndarray) -> dict:
    """MLE of a zero-truncated negative binomial from value counts (``values >= 1``).

    Parametrised by the untruncated NB ``mean`` μ and ``size`` r (scipy ``nbinom(r, r/(r+μ))``);
    returns ``{"mean", "size", "mean_se", "size_se", "loglik", "converged"}`` (standard errors of the
    log parameters' delta method, from the numerical observed information).
    """
    from scipy.optimize import minimize
    from statsmodels.tools.numdiff import approx_hess

    v = np.asarray(values, dtype=float)
    w = np.asarray(counts, dtype=float)
    if np.any(v < 1):
        raise ValueError("zero-truncated NB needs sizes >= 1")
    m = np.average(v, weights=w)
    var = np.average((v - m) ** 2, weights=w)

    def nll(theta):
        mu, r = np.exp(theta)
        return -np.dot(w, _ztnb_logpmf(v, mu, r))

    r0 = m * m / max(var - m, 1e-3 * m)
    x0 = np.log([max(m - 0.5, 1e-3), np.clip(r0, 1e-3, 1e4)])
    best = None
    for start in (x0, np.log([m, 1.0]), np.log([m, 50.0])):
        res = minimize(nll, start, method="Nelder-Mead",
                       options={"xatol": 1e-8, "fatol": 1e-10, "maxiter": 4000})
        if best is None or res.fun < best.fun:
            best = res
    res = minimize(nll, best.x, method="BFGS")
    if not res.success or res.fun > best.fun:
        res = best
    mu, r = np.exp(res.x)
    try:
        cov = np.linalg.inv(approx_hess(res.x, nll))
        se_log = np.sqrt(np.clip(np.diag(cov), 0, None))
    except np.linalg.LinAlgError:
        se_log = np.array([np.nan, np.nan])
    return {"mean": float(mu), "size": float(r), "mean_se": float(mu * se_log[0]),
            "size_se": float(r * se_log[1]), "loglik": float(-res.fun), "converged": bool(res.success)}


def _ztnb_table(mean: float, size: float, tail: float = 1e-10) -> tuple[np.ndarray, np.ndarray]:
    p = size / (size + mean)
    hi = int(max(stats.nbinom.ppf(1 - tail, size, p), 1))
    y = np.arange(1, hi + 1)
    pm = np.exp(_ztnb_logpmf(y, mean, size))
    return y, pm / pm.sum()


# ---------------------------------------------------------------------- the model


def hour_bins(start: float, end: float, off: int):
    """Public name of the hourly binning of ``[start, end)`` (see :func:`_hour_bins`)."""
    return _hour_bins(start, end, off)


def how_of_local_hour(h):
    """Public name of :func:`_how_of_local_hour`: hour of week (Monday 00h = 0) of local hour indices."""
    return _how_of_local_hour(h)


class ArrivalFitMixin:
    """Per-cell estimation of :class:`~acmemodel.models.arrival.ArrivalModel`: the weekly-profile GLM
    and the batch-size distribution."""

    def _fit_glm(self, y: np.ndarray, how: np.ndarray, days: np.ndarray) -> dict:
        # (the modules themselves: statsmodels.api imports all of statsmodels, ~1 s)
        from statsmodels.genmod import families
        from statsmodels.genmod.generalized_linear_model import GLM
        from statsmodels.tools.sm_exceptions import ConvergenceWarning as SMConvergenceWarning
        from statsmodels.tools.sm_exceptions import PerfectSeparationWarning

        n_ev = float(y.sum())
        k = float(self.min_events_per_level)
        prof = str(self.profile).replace("x", "×")
        if prof == "auto":
            prof = "hour×dow" if n_ev >= k * HOURS_PER_WEEK else ("hour+dow" if n_ev >= k * 31 else "const")
        use_trend = (self.trend == "linear" and n_ev >= _MIN_EVENTS_TREND
                     and (days[-1] - days[0]) >= _MIN_DAYS_TREND)
        levels = np.arange(HOURS_PER_WEEK)
        X_lvl = _profile_design(levels, prof)  # 168 × p
        X = X_lvl[how]
        mean_rate = max(n_ev, 0.5) / len(y)
        pc = float(self.prior_count)
        if pc > 0:
            Xa = np.vstack([X, X_lvl])
            ya = np.r_[y, np.full(HOURS_PER_WEEK, pc)]
            expo = np.r_[np.ones(len(y)), np.full(HOURS_PER_WEEK, pc / mean_rate)]
            da = np.r_[days, np.zeros(HOURS_PER_WEEK)]
        else:
            Xa, ya, expo, da = X, y, np.ones(len(y)), days
        if use_trend:
            Xa = np.column_stack([Xa, da])
        n_real = len(y)

        onehot = prof == "hour×dow" and pc > 0  # every level has pseudo-events: the block fit exists

        def glm_fit(family):
            if onehot:  # the 168-level design's Fisher matrix is diagonal plus a border: O(hours) per step
                alpha_nb = float(getattr(family, "alpha", 0.0)) if isinstance(family, families.NegativeBinomial) else 0.0
                res = OneHotGLM(ya, np.r_[how, levels], expo, da if use_trend else None, alpha_nb)
                if not res.converged or not np.all(np.isfinite(res.params)):
                    warnings.warn(f"ArrivalModel GLM ({self.profile}, {len(y)} hours) did not converge cleanly "
                                  "(non-finite estimates or no convergence in 100 Fisher steps)",
                                  ConvergenceWarning, stacklevel=4)
                return res
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                res = GLM(ya, Xa, family=family, exposure=expo).fit(maxiter=100, wls_method="qr")
            bad = [w for w in caught if issubclass(w.category, (SMConvergenceWarning, RuntimeWarning))]
            # "perfect prediction" on a tiny cell is harmless when the estimates are finite
            sep = any(issubclass(w.category, PerfectSeparationWarning) for w in caught)
            if bad or not res.converged or not np.all(np.isfinite(res.params)) or (
                    sep and np.max(np.abs(res.params)) > 30):
                warnings.warn(f"ArrivalModel GLM ({self.profile}, {len(y)} hours) did not converge cleanly "
                              f"({bad[0].message if bad else 'non-finite or separated estimates'})",
                              ConvergenceWarning, stacklevel=4)
            return res

        res = glm_fit(families.Poisson())
        alpha, stat, pval, alpha_se = _ct_dispersion(y, res.mu[:n_real], _hat_diag(res, n_real))
        family = "poisson"
        if self.family == "negbin" or (self.family == "auto" and pval < float(self.dispersion_level) and alpha > 0):
            family = "negbin"
            a = max(alpha, 1e-8)
            for _ in range(2):
                res = glm_fit(families.NegativeBinomial(alpha=a))
                a, _, _, alpha_se = _ct_dispersion(y, res.mu[:n_real], _hat_diag(res, n_real))
                a = max(a, 1e-8)
            alpha = a
        beta = np.asarray(res.params)
        cov = np.asarray(res.cov_params())
        p = X_lvl.shape[1]
        log_rate = X_lvl @ beta[:p]
        se = np.sqrt(np.clip(np.einsum("ij,jk,ik->i", X_lvl, cov[:p, :p], X_lvl), 0, None))
        return {"profile": prof, "family": family, "alpha": float(alpha) if family == "negbin" else 0.0,
                "dispersion_alpha_hat": float(alpha), "dispersion_stat": float(stat),
                "dispersion_alpha_se": float(alpha_se),
                "dispersion_p": float(pval), "log_rate": log_rate, "log_rate_se": se,
                "trend_per_day": float(beta[p]) if use_trend else 0.0,
                "trend_se": float(np.sqrt(cov[p, p])) if use_trend else 0.0,
                "hourly_dispersion_index": float(np.var(y) / np.mean(y)) if n_ev > 0 else float("nan")}

    def _fit_batch_sizes(self, sizes: np.ndarray) -> dict:
        v, c = np.unique(sizes, return_counts=True)
        out = {"bs_values": v.astype(np.int64), "bs_counts": c.astype(np.int64),
               "mean_batch_size": float(np.average(v, weights=c)), "bursty": bool(v.max() > 1)}
        if v.max() == 1:
            out.update(bs_kind="one", bs_table=(np.array([1]), np.array([1.0])))
            return out
        if self.batch_size == "ztnb":
            z = fit_ztnb(v, c)
            out.update(bs_kind="ztnb", bs_ztnb=z, bs_table=_ztnb_table(z["mean"], z["size"]))
            y, pm = out["bs_table"]
            out["mean_batch_size"] = float(np.dot(y, pm))
        else:
            out.update(bs_kind="empirical", bs_table=(v.astype(np.int64), c / c.sum()))
        return out


def _profile_design(levels: np.ndarray, prof: str) -> np.ndarray:
    """Design rows of hour-of-week ``levels`` for a profile parametrisation (no trend column)."""
    levels = np.asarray(levels)
    if prof == "hour×dow":
        return np.eye(HOURS_PER_WEEK)[levels]
    if prof == "hour+dow":
        hour, dow = levels % 24, levels // 24
        X = np.zeros((len(levels), 1 + 23 + 6))
        X[:, 0] = 1.0
        hi = hour > 0
        X[np.flatnonzero(hi), hour[hi]] = 1.0
        di = dow > 0
        X[np.flatnonzero(di), 23 + dow[di]] = 1.0
        return X
    return np.ones((len(levels), 1))


class OneHotGLM:
    """Log-link Poisson (``alpha = 0``) or NB2 (fixed ``alpha``) GLM of counts on a one-hot factor plus an
    optional linear trend, fitted by Fisher scoring on the structure of its information matrix.

    Mean ``μ_i = e_i exp(β_{l_i} + γ d_i)`` (``e`` exposure, ``l`` level, ``d`` trend covariate). With IRLS
    weights ``w_i = μ_i / (1 + α μ_i)`` and residuals ``r_i = (y_i − μ_i)/(1 + α μ_i)``, the score is
    ``s_l = Σ_{i∈l} r_i``, ``s_γ = Σ_i d_i r_i`` and the Fisher information is ``[[diag(a), b], [bᵀ, c]]``
    with ``a_l = Σ_{i∈l} w_i``, ``b_l = Σ_{i∈l} w_i d_i``, ``c = Σ_i w_i d_i²``: a step solves it through
    the Schur complement ``S = c − Σ_l b_l²/a_l`` in O(n + L), where statsmodels' IRLS factorises the n × L
    dense design (the 168-level weekly profile over months of hours: 97 % of the arrival model's fit
    time). Same estimates as ``statsmodels GLM(...).fit()`` (tests/test_arrival.py), with the covariance
    ``F⁻¹`` (scale 1) and the leverages ``h_i = w_i x_iᵀ F⁻¹ x_i``. Every level needs a positive count
    (the arrival model's pseudo-events guarantee it).

    Attributes (statsmodels' names): ``params`` (β then γ), ``mu``, ``converged``, ``cov_params()``, and
    ``hat`` (leverages of every row).
    """

    def __init__(self, y, level, exposure, trend=None, alpha: float = 0.0, *, maxiter: int = 100,
                 tol: float = 1e-10):
        y = np.asarray(y, dtype=float)
        level = np.asarray(level, dtype=np.int64)
        e = np.asarray(exposure, dtype=float)
        L = int(level.max()) + 1
        has_t = trend is not None
        d = np.asarray(trend, dtype=float) if has_t else np.zeros(len(y))
        ysum = np.bincount(level, weights=y, minlength=L)
        beta = np.log(np.maximum(ysum, 1e-300) / np.bincount(level, weights=e, minlength=L))
        gamma, self.converged = 0.0, False
        for _ in range(maxiter):
            eta = beta[level] + gamma * d
            mu = e * np.exp(eta)
            den = 1.0 + alpha * mu
            w, r = mu / den, (y - mu) / den
            a = np.bincount(level, weights=w, minlength=L)
            s = np.bincount(level, weights=r, minlength=L)
            if has_t:
                b = np.bincount(level, weights=w * d, minlength=L)
                S = float(np.dot(w, d * d) - np.sum(b * b / a))
                dg = (float(np.dot(r, d)) - float(np.sum(b * s / a))) / S
                db = (s - b * dg) / a
            else:
                dg, db = 0.0, s / a
            beta, gamma = beta + db, gamma + dg
            if max(float(np.max(np.abs(db))), abs(dg)) < tol:
                self.converged = True
                break
        mu = e * np.exp(beta[level] + gamma * d)
        w = mu / (1.0 + alpha * mu)
        a = np.bincount(level, weights=w, minlength=L)
        self.params = np.r_[beta, gamma] if has_t else beta
        self.mu = mu
        if has_t:
            b = np.bincount(level, weights=w * d, minlength=L)
            S = float(np.dot(w, d * d) - np.sum(b * b / a))
            u = b / a  # F⁻¹ = [[diag(1/a) + u uᵀ/S, −u/S], [−uᵀ/S, 1/S]]
            cov = np.empty((L + 1, L + 1))
            cov[:L, :L] = np.diag(1.0 / a) + np.outer(u, u) / S
            cov[:L, L] = cov[L, :L] = -u / S
            cov[L, L] = 1.0 / S
            self.hat = w * (1.0 / a[level] + (u[level] - d) ** 2 / S)
        else:
            cov = np.diag(1.0 / a)
            self.hat = w / a[level]
        self._cov = cov

    def cov_params(self) -> np.ndarray:
        return self._cov


def _hat_diag(res, n: int) -> np.ndarray:
    """GLM leverages ``h_i = w_i x_iᵀ (XᵀWX)⁻¹ x_i`` of the first ``n`` observations, with the
    IRLS weights ``w = 1 / (V(μ) g'(μ)²)`` at the fitted means."""
    if isinstance(res, OneHotGLM):
        return res.hat[:n]
    X = np.asarray(res.model.exog)[:n]
    mu = np.asarray(res.mu)[:n]
    fam = res.model.family
    w = 1.0 / (fam.variance(mu) * fam.link.deriv(mu) ** 2)
    cov = np.asarray(res.normalized_cov_params)
    return w * np.einsum("ij,jk,ik->i", X, cov, X)


def _ct_dispersion(y: np.ndarray, mu: np.ndarray, h: np.ndarray | None = None
                   ) -> tuple[float, float, float, float]:
    """Cameron–Trivedi NB2 over-dispersion test: OLS of ``((y − μ)²/(1 − h) − y)/μ`` on ``μ`` (no
    intercept), ``h`` the GLM leverages (so the residuals of a many-parameter fit are not biased
    towards under-dispersion).

    Returns ``(α̂, z, one-sided p-value, robust SE of α̂)``; ``H0: α = 0`` (Poisson); ``z`` uses the
    OLS standard error, the returned SE is the heteroscedasticity-robust (HC0) one."""
    mu = np.maximum(np.asarray(mu, dtype=float), 1e-12)
    h = np.zeros(len(mu)) if h is None else np.clip(np.asarray(h, dtype=float), 0, 0.99)
    z = ((y - mu) ** 2 / (1 - h) - y) / mu
    sxx = float(np.dot(mu, mu))
    if sxx <= 0 or len(y) < 3:
        return 0.0, 0.0, 1.0, float("nan")
    a = float(np.dot(mu, z) / sxx)
    resid = z - a * mu
    s2 = float(np.dot(resid, resid) / (len(y) - 1))
    se = math.sqrt(s2 / sxx) if s2 > 0 else float("inf")
    se_rob = math.sqrt(float(np.dot(mu * mu, resid * resid))) / sxx
    stat = a / se if se > 0 else 0.0
    return a, float(stat), float(stats.norm.sf(stat)), float(se_rob)
