"""Time to failure of GPU jobs: censoring-aware survival models.

Data
----
One row per *started GPU job* (``is_gpu`` and ``started``; CPU jobs and jobs that never ran are left
out and counted in ``n_excluded_``). Time axis: run time ``run_s`` in seconds. Event: the job ended in
failure (``analysis_state == "FAILED"``, i.e. FAILED, TIMEOUT, NODE_FAIL); for Kalos rows with a
``fail_time_s`` the event time is that instead. COMPLETED and CANCELLED jobs are **right-censored** at
their ``run_s`` — kept, never events. Times are floored at ``t_floor_s`` (1 s) for the log scale.

Two-regime model (the one behind :meth:`FailureModel.mttf`, ``hazard``, ``survival``)
-----------------------------------------------------------------------------------
A job is *defective* with probability ``p`` (script/framework error) and then fails fast; otherwise it
is *sound* and only fails through the late, size-dependent hazard (a two-component mixture)::

    S(t | g, x) = p(g, x) · S_E(t) + (1 − p(g, x)) · S_L(t | g, x)

    logit p(g, x) = γ0 + γ_cluster + γ_type + γ_g · log(g / g_ref)             (early share per cell)
    S_E(t)        = 1 − Φ((log(t / t_ref) − μ_E) / σ_E)                         (log-normal, minutes)
    S_L(t | g, x) = exp(−H_L),   H_L = (t / t_ref)^k · exp(b0 + β_x) · (g / g_ref)^α

so the late component is a Weibull proportional-hazards model: hazard
``h_L(t) = k/t · H_L(t)`` whose *rate grows as g^α* (α = 1: independent per-GPU failures in series),
Weibull shape ``k`` (``shape_``; k < 1 = decreasing hazard, infant mortality) and scale
``η(g, x) = t_ref · exp(−(b0 + β_x)/k) · (g/g_ref)^(−α/k)`` seconds; the late mean time to failure is
``MTTF_L(g, x) = η(g, x) · Γ(1 + 1/k)`` ∝ ``g^(−α/k)``. ``regimes=1`` drops the early component
(p ≡ 0): a plain Weibull PH model. ``β_x`` holds the optional ``late_covariates`` (cluster / type
dummies; none by default, so the late hazard depends on size only). Parameters are fitted by
maximum likelihood (analytic gradient, L-BFGS-B; events contribute the density, censored jobs the
survival) with a weak normal prior N(0, ``ridge_sd``² = 10²) on the cluster/type dummy coefficients
only, so a level without failures cannot drift to ±∞; the covariance is the inverse of the observed
(penalised) information (finite differences of the analytic gradient), and every interval (α, k,
MTTF) is a Wald / delta-method interval, on the log scale for positive quantities. The early median
``t_ref·exp(μ_E)`` is bounded by ``early_median_max_s`` so the components cannot swap roles. On more
than ``max_fit_rows`` jobs a uniform random subsample (seed ``random_state``) is used for this fit;
intervals then reflect the subsample size (conservative).

**Extrapolation** beyond the largest jobs of the trace (e.g. 4,096–16,384 GPUs) assumes the fitted
power law ``rate ∝ g^α`` keeps holding; the intervals only carry the statistical uncertainty of α,
not the risk that the law breaks.

Covariates omitted from a key (``cluster``, ``type``) are averaged over the training mix of
(cluster, type): the survival and density are averaged, MTTFs are averaged.

Non-parametric and comparison models (fitted alongside)
-------------------------------------------------------
* Kaplan–Meier per cell (cluster × type × GPU bucket, then backing off to cluster × type, type, all)
  with Greenwood/log-log 95 % bands (lifelines ``KaplanMeierFitter``), stored on a fixed log grid.
* Competing risks failure / cancellation / completion: Aalen–Johansen cumulative incidence per
  cluster × type, per type and overall (lifelines ``AalenJohansenFitter``; ≤ ``aj_max_rows`` jobs per
  group, subsampled, because lifelines breaks ties by jitter).
* Weibull, log-normal and log-logistic AFT and Cox PH (lifelines) on covariates log(g/g_ref), type and
  cluster dummies, fitted on ≤ ``aft_max_rows`` jobs; compared with the two-regime model on a
  time-ordered inner holdout (last ``holdout_fraction`` of submissions) by held-out log-likelihood per
  job (full likelihood; not defined for Cox) and concordance (score: restricted mean survival time
  up to the 90th percentile of the held-out times) (``comparison_``, ``selected_``). For the
  Weibull AFT ``log T = Xβ + W/ρ``, the PH coefficient of log g is ``α = −ρ·β_log_gpus``
  (``aft_alpha_``, delta-method interval) — a one-regime cross-check of the size exponent.
"""
from __future__ import annotations

import math
import warnings
from typing import Any, Sequence

import numpy as np
import pandas as pd
from scipy import optimize, special, stats

from acmemodel.errors import ConvergenceWarning, DataWarning
from acmemodel.features.keys import DEFAULT_GPU_EDGES, backoff_chain, gpu_bucket, normalize_key
from acmemodel.models.base import BaseModel, register, unjson_float

#: fixed log-spaced time grid (s) on which Kaplan–Meier and cumulative incidence curves are stored
CURVE_GRID_S: np.ndarray = np.unique(np.round(np.geomspace(1.0, 2.0 ** 23, 93)))
CAUSES: tuple[str, ...] = ("fail", "cancel", "complete")
COMPARISON_MODELS: tuple[str, ...] = ("two_regime", "weibull_aft", "lognormal_aft", "loglogistic_aft",
                                      "cox_ph")
_RARE = "(rare)"
#: rows of the multi-start stage of the two-regime MLE (the best start is then refined on all rows)
WARM_ROWS = 40_000
_LOG2PI_2 = 0.5 * math.log(2 * math.pi)


# ============================================================================ data preparation
def survival_frame(jobs: pd.DataFrame, *, t_floor_s: float = 1.0,
                   gpu_edges: Sequence[int] = DEFAULT_GPU_EDGES) -> pd.DataFrame:
    """Survival view of a jobs table (see module docstring): one row per started GPU job.

    Columns: ``cluster``, ``type``, ``gpus``, ``gpu_bucket``, ``T`` (seconds, ≥ ``t_floor_s``),
    ``E`` (bool, failure observed), ``cause`` (``fail`` / ``cancel`` / ``complete``), ``submit_s``.
    Index: the ``jobs`` index of the kept rows.
    """
    need = ("cluster", "type", "analysis_state", "gpu_num", "run_s")
    miss = [c for c in need if c not in jobs.columns]
    if miss:
        raise ValueError(f"jobs lacks column(s) {miss} needed for the failure model")
    gpus = jobs["gpu_num"].to_numpy(dtype=float)
    run = jobs["run_s"].to_numpy(dtype=float)
    keep = (gpus > 0) & np.isfinite(run) & (run >= 0)
    if "is_gpu" in jobs.columns:
        keep &= jobs["is_gpu"].to_numpy(dtype=bool)
    if "started" in jobs.columns:
        keep &= jobs["started"].to_numpy(dtype=bool)
    sub = jobs.loc[keep]
    state = sub["analysis_state"].astype(str).to_numpy()
    bad = sorted(set(state) - {"FAILED", "CANCELLED", "COMPLETED"})
    if bad:
        raise ValueError(f"analysis_state must be COMPLETED/CANCELLED/FAILED, found {bad}")
    E = state == "FAILED"
    T = sub["run_s"].to_numpy(dtype=float).copy()
    if "fail_time_s" in sub.columns:
        ft = sub["fail_time_s"].to_numpy(dtype=float)
        use = E & np.isfinite(ft) & (ft > 0)
        T[use] = ft[use]
    T = np.maximum(T, t_floor_s)
    cause = np.where(E, "fail", np.where(state == "CANCELLED", "cancel", "complete"))
    g = sub["gpu_num"].to_numpy(dtype=float)
    out = pd.DataFrame({
        "cluster": sub["cluster"].astype(str).to_numpy(), "type": sub["type"].astype(str).to_numpy(),
        "gpus": g, "gpu_bucket": gpu_bucket(g, gpu_edges), "T": T, "E": E, "cause": cause,
        "submit_s": (sub["submit_s"].to_numpy(dtype=float) if "submit_s" in sub.columns
                     else np.full(len(sub), np.nan)),
    }, index=sub.index)
    return out


def _step_at(grid_t: np.ndarray, values: np.ndarray, t: np.ndarray, before: float) -> np.ndarray:
    """Right-continuous step function through (grid_t, values), ``before`` left of the first point."""
    idx = np.searchsorted(grid_t, t, side="right") - 1
    out = np.where(idx >= 0, values[np.maximum(idx, 0)], before)
    return out


def _curve_on_grid(timeline: np.ndarray, values: np.ndarray, before: float) -> np.ndarray:
    return _step_at(np.asarray(timeline, float), np.asarray(values, float), CURVE_GRID_S, before)


# ============================================================================ mixture likelihood
class _Design:
    """Levels and dummy coding of cluster/type (reference = most frequent level)."""

    def __init__(self, clusters: list[str], types: list[str], type_map: dict[str, str]):
        self.clusters = clusters          # levels, reference first
        self.types = types
        self.type_map = type_map          # raw type value → level

    @classmethod
    def build(cls, frame: pd.DataFrame, min_level_jobs: int) -> "_Design":
        cc = frame["cluster"].value_counts()
        clusters = list(cc.index)
        tc = frame["type"].value_counts()
        type_map = {t: (t if n >= min_level_jobs else _RARE) for t, n in tc.items()}
        lv = pd.Series([type_map[t] for t in frame["type"]]).value_counts()
        types = list(lv.index)
        return cls(clusters, types, type_map)

    def to_dict(self) -> dict:
        return {"clusters": self.clusters, "types": self.types, "type_map": self.type_map}

    @classmethod
    def from_dict(cls, d: dict) -> "_Design":
        return cls(list(d["clusters"]), list(d["types"]), dict(d["type_map"]))

    def names(self, covs: Sequence[str], log_gpus_first: bool) -> list[str]:
        out = ["Intercept"]
        if log_gpus_first and "log_gpus" in covs:
            out.append("log_gpus")
        if "cluster" in covs:
            out += [f"cluster[{c}]" for c in self.clusters[1:]]
        if "type" in covs:
            out += [f"type[{t}]" for t in self.types[1:]]
        if not log_gpus_first and "log_gpus" in covs:
            out.append("log_gpus")
        return out

    def levels(self, cluster: np.ndarray, type_: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        tl = np.array([self.type_map.get(t, _RARE if _RARE in self.types else None) for t in type_],
                      dtype=object)
        unknown_t = sorted({str(t) for t, lv in zip(type_, tl) if lv is None or lv not in self.types})
        if unknown_t:
            raise ValueError(f"type {unknown_t[0]!r} was not seen in training; known: {self.types}")
        unknown_c = sorted(set(map(str, cluster)) - set(self.clusters))
        if unknown_c:
            raise ValueError(f"cluster {unknown_c[0]!r} was not seen in training; known: {self.clusters}")
        return np.asarray(cluster, dtype=object), tl

    def matrix(self, covs: Sequence[str], cluster, type_, lg, log_gpus_first: bool) -> np.ndarray:
        cl, tl = self.levels(np.asarray(cluster, dtype=object), np.asarray(type_, dtype=object))
        n = len(cl)
        cols = [np.ones(n)]
        lgc = [np.asarray(lg, float)] if "log_gpus" in covs else []
        if log_gpus_first:
            cols += lgc
        if "cluster" in covs:
            cols += [(cl == c).astype(float) for c in self.clusters[1:]]
        if "type" in covs:
            cols += [(tl == t).astype(float) for t in self.types[1:]]
        if not log_gpus_first:
            cols += lgc
        return np.column_stack(cols) if cols else np.zeros((n, 0))


class _Mixture:
    """Log-likelihood and analytic gradient of the two-regime model (module docstring).

    θ = [γ (nz), μ_E, log σ_E, log k, δ (nx)] for two regimes, [log k, δ] for one; δ[0] = b0,
    δ[1] = α (the late design has log(g/g_ref) in column 1).
    """

    def __init__(self, regimes: int, nz: int, nx: int, t_ref: float):
        self.regimes, self.nz, self.nx, self.t_ref = regimes, nz, nx, t_ref
        self.log_tref = math.log(t_ref)

    @property
    def n_params(self) -> int:
        return (self.nz + 3 + self.nx) if self.regimes == 2 else (1 + self.nx)

    def unpack(self, th: np.ndarray):
        if self.regimes == 2:
            gam = th[:self.nz]
            mu, ls, lk = th[self.nz:self.nz + 3]
            d = th[self.nz + 3:]
        else:
            gam, mu, ls = None, 0.0, 0.0
            lk = th[0]
            d = th[1:]
        return gam, mu, ls, lk, d

    def components(self, th, y, Z, X):
        """Per-row log p, log(1-p), early (logf, logS), late (logf, logS) and intermediates."""
        gam, mu, ls, lk, d = self.unpack(th)
        k = math.exp(lk)
        nu = X @ d
        logt = y + self.log_tref
        logH = np.minimum(k * y + nu, 700.0)
        H = np.exp(logH)
        lf_L = nu + lk + k * y - logt - H
        lS_L = -H
        if self.regimes == 2:
            eta = Z @ gam
            logp = -np.logaddexp(0.0, -eta)
            log1mp = -np.logaddexp(0.0, eta)
            s = math.exp(ls)
            z = (y - mu) / s
            lf_E = -logt - ls - _LOG2PI_2 - 0.5 * z * z
            lS_E = special.log_ndtr(-z)
        else:
            logp = log1mp = z = lf_E = lS_E = None
            s = 1.0
        return dict(k=k, H=H, lf_L=lf_L, lS_L=lS_L, logp=logp, log1mp=log1mp, z=z, s=s,
                    lf_E=lf_E, lS_E=lS_E)

    def loglik_rows(self, th, y, E, Z, X) -> np.ndarray:
        c = self.components(th, y, Z, X)
        lA_L = np.where(E, c["lf_L"], c["lS_L"])
        if self.regimes == 1:
            return lA_L
        lA_E = np.where(E, c["lf_E"], c["lS_E"])
        return np.logaddexp(c["logp"] + lA_E, c["log1mp"] + lA_L)

    #: boolean mask of the parameters under the ridge prior and its precision 1/sd² (set by the model)
    pen_mask: np.ndarray | None = None
    pen_prec: float = 0.0

    def nll_grad(self, th, y, E, Z, X):
        """Mean penalised negative log-likelihood and its gradient (penalty: module docstring)."""
        f, g = self._nll_grad(th, y, E, Z, X)
        if self.pen_mask is not None and self.pen_prec > 0:
            w = self.pen_mask * self.pen_prec / len(y)
            f = f + 0.5 * float(np.sum(w * th * th))
            g = g + w * th
        return f, g

    def _nll_grad(self, th, y, E, Z, X):
        n = len(y)
        c = self.components(th, y, Z, X)
        k, H = c["k"], c["H"]
        ky = k * y
        dL_nu = np.where(E, 1.0 - H, -H)
        dL_lk = np.where(E, 1.0 + ky * (1.0 - H), -H * ky)
        lA_L = np.where(E, c["lf_L"], c["lS_L"])
        if self.regimes == 1:
            ll = lA_L
            g = np.concatenate([[dL_lk.sum()], X.T @ dL_nu])
            return -ll.sum() / n, -g / n
        z, s = c["z"], c["s"]
        lA_E = np.where(E, c["lf_E"], c["lS_E"])
        a = c["logp"] + lA_E
        b = c["log1mp"] + lA_L
        ll = np.logaddexp(a, b)
        r = np.exp(a - ll)
        p = np.exp(c["logp"])
        lam = np.exp(stats.norm.logpdf(z) - c["lS_E"])  # inverse Mills ratio
        dE_mu = np.where(E, z / s, lam / s)
        dE_ls = np.where(E, z * z - 1.0, lam * z)
        Zg = Z.T @ (r - p)
        w = 1.0 - r
        g = np.concatenate([Zg, [np.sum(r * dE_mu), np.sum(r * dE_ls), np.sum(w * dL_lk)],
                            X.T @ (w * dL_nu)])
        return -ll.sum() / n, -g / n

    def hessian(self, th, y, E, Z, X) -> np.ndarray:
        """Observed information (sum over rows) by central differences of the analytic gradient."""
        P = len(th)
        Hm = np.empty((P, P))
        for j in range(P):
            h = 1e-5 * max(1.0, abs(th[j]))
            tp, tm = th.copy(), th.copy()
            tp[j] += h
            tm[j] -= h
            Hm[:, j] = (self.nll_grad(tp, y, E, Z, X)[1] - self.nll_grad(tm, y, E, Z, X)[1]) / (2 * h)
        return 0.5 * (Hm + Hm.T) * len(y)


# ============================================================================ lifelines comparison
def _aft_design(frame: pd.DataFrame, design: _Design, g_ref: float) -> pd.DataFrame:
    cl, tl = design.levels(frame["cluster"].to_numpy(object), frame["type"].to_numpy(object))
    d = {"log_gpus": np.log(frame["gpus"].to_numpy(float) / g_ref)}
    for c in design.clusters[1:]:
        d[f"cluster_{c}"] = (cl == c).astype(float)
    for t in design.types[1:]:
        d[f"type_{t}"] = (tl == t).astype(float)
    return pd.DataFrame(d, index=frame.index)


def _fit_lifelines(name: str, X: pd.DataFrame, T: np.ndarray, E: np.ndarray) -> dict:
    """Fit one lifelines regression and reduce it to plain parameters."""
    from lifelines import (CoxPHFitter, LogLogisticAFTFitter, LogNormalAFTFitter,
                           WeibullAFTFitter)

    cls = {"weibull_aft": WeibullAFTFitter, "lognormal_aft": LogNormalAFTFitter,
           "loglogistic_aft": LogLogisticAFTFitter, "cox_ph": CoxPHFitter}[name]
    # drop constant columns (a level absent from this sample) to keep the information matrix regular
    X = X.loc[:, X.std(axis=0) > 0]
    df = X.assign(T=T, E=E.astype(int))
    last = None
    for pen in (0.0, 1e-3, 1e-2):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                m = cls(penalizer=pen).fit(df, "T", "E")
            break
        except Exception as e:  # lifelines ConvergenceError and linear-algebra failures
            last = e
    else:
        raise RuntimeError(f"{name} did not converge: {last}")
    out: dict[str, Any] = {"name": name, "columns": list(X.columns), "penalizer": pen}
    params = m.params_
    if name == "cox_ph":
        out["coef"] = params.reindex(X.columns).fillna(0.0).tolist()
        out["mean"] = pd.Series(m._norm_mean).reindex(X.columns).fillna(0.0).tolist()
        bch = m.baseline_cumulative_hazard_.iloc[:, 0]
        out["H0"] = _curve_on_grid(bch.index.to_numpy(), bch.to_numpy(), 0.0).tolist()
        return out
    blocks = {}
    for p1 in params.index.get_level_values(0).unique():
        s = params.loc[p1]
        blocks[p1] = {"Intercept": float(s.get("Intercept", 0.0)),
                      "coef": s.reindex(X.columns).fillna(0.0).tolist()}
    out["blocks"] = blocks
    if name == "weibull_aft" and "log_gpus" in X.columns:
        V = m.variance_matrix_
        b = params[("lambda_", "log_gpus")]
        r = params[("rho_", "Intercept")]
        rho = math.exp(r)
        alpha = -rho * b
        grad = np.array([-rho, -rho * b])  # d alpha / d(b, r)
        idx = [("lambda_", "log_gpus"), ("rho_", "Intercept")]
        cov = V.loc[idx, idx].to_numpy()
        out["alpha"] = alpha
        out["alpha_se"] = float(math.sqrt(max(grad @ cov @ grad, 0.0)))
        out["shape"] = rho
        out["shape_se"] = float(rho * math.sqrt(max(V.loc[idx[1], idx[1]], 0.0)))
    return out


def _lifelines_survival(par: dict, X: pd.DataFrame, times: np.ndarray) -> np.ndarray:
    """Survival matrix (rows × times) of a reduced lifelines model."""
    Xm = X.reindex(columns=par["columns"], fill_value=0.0).to_numpy(float)
    t = np.asarray(times, float)[None, :]
    name = par["name"]
    if name == "cox_ph":
        lp = (Xm - np.asarray(par["mean"])) @ np.asarray(par["coef"])
        H0 = _step_at(CURVE_GRID_S, np.asarray(par["H0"], float), np.asarray(times, float), 0.0)
        return np.exp(-np.exp(lp)[:, None] * H0[None, :])

    def lin(block):
        b = par["blocks"][block]
        return b["Intercept"] + Xm @ np.asarray(b["coef"])

    if name == "weibull_aft":
        lam, rho = np.exp(lin("lambda_"))[:, None], np.exp(lin("rho_"))[:, None]
        return np.exp(-(t / lam) ** rho)
    if name == "lognormal_aft":
        mu, sd = lin("mu_")[:, None], np.exp(lin("sigma_"))[:, None]
        return special.ndtr(-(np.log(t) - mu) / sd)
    if name == "loglogistic_aft":
        a, b = np.exp(lin("alpha_"))[:, None], np.exp(lin("beta_"))[:, None]
        return 1.0 / (1.0 + (t / a) ** b)
    raise ValueError(f"unknown model {name!r}")


def _lifelines_loglik(par: dict, X: pd.DataFrame, T: np.ndarray, E: np.ndarray) -> np.ndarray:
    """Per-row full log-likelihood (event: log density; censored: log survival) of an AFT model."""
    Xm = X.reindex(columns=par["columns"], fill_value=0.0).to_numpy(float)
    name = par["name"]
    lt = np.log(T)

    def lin(block):
        b = par["blocks"][block]
        return b["Intercept"] + Xm @ np.asarray(b["coef"])

    if name == "weibull_aft":
        llam, rho = lin("lambda_"), np.exp(lin("rho_"))
        u = rho * (lt - llam)
        return np.where(E, np.log(rho) + u - lt - np.exp(u), -np.exp(u))
    if name == "lognormal_aft":
        mu, lsd = lin("mu_"), lin("sigma_")
        z = (lt - mu) / np.exp(lsd)
        return np.where(E, stats.norm.logpdf(z) - lsd - lt, special.log_ndtr(-z))
    if name == "loglogistic_aft":
        la, b = lin("alpha_"), np.exp(lin("beta_"))
        u = b * (lt - la)
        l1 = np.logaddexp(0.0, u)
        return np.where(E, np.log(b) + u - lt - 2 * l1, -l1)
    raise ValueError(f"log-likelihood not defined for {name!r}")



def aj_confidence_band(aj, alpha: float = 0.05) -> tuple[np.ndarray, np.ndarray]:
    """Pointwise band of a fitted lifelines ``AalenJohansenFitter`` (``calculate_variance=False``).

    The same estimator lifelines computes with ``calculate_variance=True`` (Collett, *Modelling
    Survival Data in Medical Research*, 3rd ed., p. 411: Greenwood-type variance, log(−log F) delta
    transform), vectorised with prefix sums instead of lifelines' row loop::

        Var F(t_j) = Σ_{i≤j} (F_j − F_i)² d_i/(n_i(n_i − d_i)) + Σ_{i≤j} S_{i−1}² d_ki(n_i − d_ki)/n_i³
                     − 2 Σ_{i≤j} (F_j − F_i) S_{i−1} d_ki/n_i²

    with d_i all events, d_ki events of interest, n_i at risk, S the overall Kaplan–Meier.
    Returns (lower, upper) aligned on ``aj.cumulative_density_.index``.
    """
    et = aj.event_table
    F = aj.cumulative_density_.iloc[:, 0].to_numpy(float)
    d = et["observed"].to_numpy(float)
    dk = et[aj.label_cmprisk].to_numpy(float)
    n = et["at_risk"].to_numpy(float)
    S = np.cumprod(np.where(n > 0, 1.0 - d / np.where(n > 0, n, 1.0), 1.0))
    lagS = np.r_[1.0, S[:-1]]
    with np.errstate(divide="ignore", invalid="ignore"):
        a = d / n / (n - d)
        second = np.cumsum(lagS ** 2 * dk * (n - dk) / n ** 3)
        c = lagS * dk / n ** 2
    # the Greenwood-type term is undefined where every job at risk has an event (n = d, the last
    # time point): it is left out there (lifelines would return an infinite variance)
    a = np.where(np.isfinite(a), a, 0.0)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        first = F ** 2 * np.cumsum(a) - 2 * F * np.cumsum(a * F) + np.cumsum(a * F ** 2)
        third = F * np.cumsum(np.nan_to_num(c)) - np.cumsum(np.nan_to_num(c) * F)
        var = first + np.nan_to_num(second) - 2 * third
        z = stats.norm.ppf(1 - alpha / 2)
        ft = np.log(-np.log(F))
        se = np.sqrt(var) / (F * np.abs(np.log(F)))
        b1 = np.exp(-np.exp(ft + z * se))
        b2 = np.exp(-np.exp(ft - z * se))
    lo, hi = np.fmin(b1, b2), np.fmax(b1, b2)
    lo = np.where(np.isfinite(lo), lo, 0.0)
    hi = np.where(np.isfinite(hi), hi, np.where(F > 0, 1.0, 0.0))
    return lo, hi

def rmst(S: np.ndarray, times: np.ndarray) -> np.ndarray:
    """Restricted mean survival time ∫₀^τ S dt (trapezoid on ``times`` starting at S(0)=1), seconds."""
    t = np.r_[0.0, np.asarray(times, float)]
    S = np.hstack([np.ones((S.shape[0], 1)), S])
    return np.sum(0.5 * (S[:, 1:] + S[:, :-1]) * np.diff(t)[None, :], axis=1)


def rmst_grid(T) -> np.ndarray:
    """Grid of the concordance score RMST(τ): 1 s to τ = the 90th percentile of the observed times
    (at least 2 min), where follow-up is adequate; with crossing survival curves (a mixture) the
    ranking depends on τ, and a τ far beyond follow-up ranks by an extrapolated tail."""
    tau = max(float(np.quantile(np.asarray(T, float), 0.9)), 120.0)
    return np.geomspace(1.0, tau, 120)


# ============================================================================ the model
@register
class FailureModel(BaseModel):
    """Time to failure of GPU jobs, censoring-aware (math in the module docstring).

    Parameters
    ----------
    regimes : 2 (early defective share + late Weibull hazard, default) or 1 (Weibull PH only).
    g_ref : reference GPU count of the size covariate ``log(g/g_ref)`` (default 8, one node).
    t_ref : reference time (s) of the log-time scale (default 3600).
    early_covariates : covariates of logit p among ``"cluster"``, ``"type"``, ``"log_gpus"``.
    late_covariates : covariates of the late hazard besides log g, among ``"cluster"``, ``"type"``
        (default none: the late hazard depends on size only; on the sample, type and cluster effects
        in the late regime were poorly identified and hurt held-out calibration).
    min_level_jobs : types with fewer jobs are pooled into one ``"(rare)"`` level.
    max_fit_rows : subsample cap of the two-regime MLE (uniform, seeded).
    aft_max_rows : subsample cap of each lifelines AFT/Cox fit.
    aj_max_rows : subsample cap per group of the Aalen–Johansen fits.
    km_min_jobs : minimum jobs of a Kaplan–Meier / Aalen–Johansen cell.
    compare : fit the lifelines AFT/Cox models and the held-out comparison.
    holdout_fraction : last fraction of submissions used as the inner holdout of the comparison.
    early_median_max_s : upper bound of the early component's median time to failure (s).
    t_floor_s : floor of event/censoring times (s).
    ridge_sd : sd of a normal prior on the cluster/type dummy coefficients (``None`` = plain MLE).
    gpu_edges : GPU bucket edges of the Kaplan–Meier cells.
    random_state : seed of subsampling and lifelines' tie jitter.

    Planner interface (``bundle["failure"]``)
    -----------------------------------------
    * ``mttf(gpus)`` — seconds, late regime: mean of the Weibull ``(shape_, η(g))``, so the scale is
      ``η = mttf(gpus) / Γ(1 + 1/shape_)``; ``mttf_interval(gpus)`` → (lower, upper) s;
      ``mttf_curve(gpus_array)`` → DataFrame with intervals and an ``extrapolated`` flag;
    * ``shape_`` — Weibull shape k of the late regime (``shape_ci_``), ``alpha_`` — size exponent;
    * ``hazard_table(gpus, edges)`` — piecewise-constant hazard (1/s) for the C kernel;
    * ``survival(t, gpus)``, ``hazard(t, gpus)``, ``sample(n, gpus, rng)`` — full two-regime model
      (``component="late"`` for the late regime only);
    * failure types: :func:`acmemodel.models.failure_types.failure_type_mix` ``(gpus, t)``; restart
      times: ``bundle["restart"].restart_distribution(category=None, gpus=...)``.

    Fitted attributes
    -----------------
    ``alpha_`` (size exponent of the late hazard), ``alpha_ci_``, ``shape_`` (late Weibull shape k),
    ``shape_ci_``, ``scale_s_`` (late Weibull scale at g_ref, reference covariates, seconds),
    ``early_share_`` (training-average p), ``early_median_s_``, ``params_`` / ``cov_``,
    ``comparison_`` (DataFrame), ``selected_``, ``aft_alpha_`` / ``aft_alpha_ci_`` / ``aft_shape_``
    (Weibull AFT cross-check), ``km_`` / ``cif_`` (curves on :data:`CURVE_GRID_S`), ``n_fit_`` (jobs),
    ``n_events_``, ``n_excluded_``, ``max_gpus_`` / ``min_gpus_`` (largest / smallest job fitted on:
    the synthetic generator of :mod:`acmemodel.joblife` uses this model for jobs of at least
    ``min_gpus_`` GPUs).
    """

    def __init__(self, *, regimes: int = 2, g_ref: float = 8.0, t_ref: float = 3600.0,
                 early_covariates: Sequence[str] = ("cluster", "type", "log_gpus"),
                 late_covariates: Sequence[str] = (),
                 min_level_jobs: int = 30, max_fit_rows: int = 300_000, aft_max_rows: int = 10_000,
                 aj_max_rows: int = 20_000, km_min_jobs: int = 20, compare: bool = True,
                 holdout_fraction: float = 0.2, early_median_max_s: float = 7200.0,
                 t_floor_s: float = 1.0, ridge_sd: float | None = 10.0,
                 gpu_edges: Sequence[int] = DEFAULT_GPU_EDGES, random_state: int | None = 0):
        self.regimes = regimes
        self.g_ref = g_ref
        self.t_ref = t_ref
        self.early_covariates = early_covariates
        self.late_covariates = late_covariates
        self.min_level_jobs = min_level_jobs
        self.max_fit_rows = max_fit_rows
        self.aft_max_rows = aft_max_rows
        self.aj_max_rows = aj_max_rows
        self.km_min_jobs = km_min_jobs
        self.compare = compare
        self.holdout_fraction = holdout_fraction
        self.early_median_max_s = early_median_max_s
        self.t_floor_s = t_floor_s
        self.ridge_sd = ridge_sd
        self.gpu_edges = gpu_edges
        self.random_state = random_state

    # ------------------------------------------------------------------ validation
    def _validate(self) -> None:
        if self.regimes not in (1, 2):
            raise ValueError(f"regimes must be 1 or 2, got {self.regimes!r}")
        for name in ("g_ref", "t_ref", "early_median_max_s", "t_floor_s"):
            v = getattr(self, name)
            if not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0):
                raise ValueError(f"{name} must be a positive number, got {v!r}")
        for name in ("min_level_jobs", "max_fit_rows", "aft_max_rows", "aj_max_rows", "km_min_jobs"):
            v = getattr(self, name)
            if not (isinstance(v, (int, np.integer)) and v >= 1):
                raise ValueError(f"{name} must be a positive integer, got {v!r}")
        if self.ridge_sd is not None and not (isinstance(self.ridge_sd, (int, float))
                                              and math.isfinite(self.ridge_sd) and self.ridge_sd > 0):
            raise ValueError(f"ridge_sd must be a positive number or None, got {self.ridge_sd!r}")
        rs = self.random_state
        if rs is not None and not (isinstance(rs, (int, np.integer)) and not isinstance(rs, bool) and rs >= 0):
            raise ValueError(f"random_state must be a non-negative integer or None, got {rs!r}")
        if not 0 < self.holdout_fraction < 1:
            raise ValueError(f"holdout_fraction must be in (0, 1), got {self.holdout_fraction!r}")
        bad = set(self.early_covariates) - {"cluster", "type", "log_gpus"}
        if bad:
            raise ValueError(f"early_covariates has unknown entries {sorted(bad)}")
        bad = set(self.late_covariates) - {"cluster", "type"}
        if bad:
            raise ValueError(f"late_covariates has unknown entries {sorted(bad)}")

    # ------------------------------------------------------------------ fit
    def fit(self, jobs, *, timezones=None) -> "FailureModel":
        """Fit every component on a jobs table (or a Trace). Returns ``self``.

        BLAS is limited to one thread during the fit: the matrices are thin, and on a shared machine
        multi-threaded BLAS made the MLE about 5× slower.
        """
        with single_thread_blas():
            return self._fit(jobs)

    def _fit(self, jobs) -> "FailureModel":
        self._validate()
        if hasattr(jobs, "jobs"):
            jobs = jobs.jobs
        frame = survival_frame(jobs, t_floor_s=self.t_floor_s, gpu_edges=self.gpu_edges)
        if len(frame) == 0:
            raise ValueError("no started GPU jobs to fit the failure model on")
        n_ev = int(frame["E"].sum())
        if n_ev == 0:
            raise ValueError("no failed GPU jobs: the failure model needs at least one event")
        if n_ev < 30:
            warnings.warn(f"only {n_ev} failures: failure-model estimates are very uncertain",
                          DataWarning, stacklevel=3)
        rng = np.random.default_rng(self.random_state)
        self.n_excluded_ = int(len(jobs) - len(frame))
        self.n_events_ = n_ev
        self.max_gpus_ = float(frame["gpus"].max())
        self.min_gpus_ = float(frame["gpus"].min())
        self.design_ = _Design.build(frame, self.min_level_jobs)
        combo = frame.assign(type=[self.design_.type_map[t] for t in frame["type"]])
        w = combo.groupby(["cluster", "type"]).size()
        self.combos_ = [(c, t, float(n) / len(frame)) for (c, t), n in w.items()]

        fit_rows = frame if len(frame) <= self.max_fit_rows else frame.iloc[
            np.sort(rng.choice(len(frame), self.max_fit_rows, replace=False))]
        self._fit_mixture(fit_rows)
        self.n_fit_ = int(len(frame))
        self.n_mixture_rows_ = int(len(fit_rows))
        self._fit_curves(frame, rng)
        self.comparison_ = None
        self.selected_ = "two_regime"
        self.lifelines_ = {}
        self.aft_alpha_ = self.aft_shape_ = float("nan")
        self.aft_alpha_ci_ = (float("nan"), float("nan"))
        if self.compare:
            self._fit_comparison(frame, rng)
        return self

    def _matrices(self, cluster, type_, gpus):
        lg = np.log(np.asarray(gpus, float) / self.g_ref)
        Z = (self.design_.matrix(self.early_covariates, cluster, type_, lg, log_gpus_first=False)
             if self.regimes == 2 else None)
        X = self.design_.matrix(("log_gpus",) + tuple(self.late_covariates), cluster, type_, lg,
                                log_gpus_first=True)
        return Z, X

    def _theta_names(self) -> list[str]:
        late = self.design_.names(("log_gpus",) + tuple(self.late_covariates), log_gpus_first=True)
        late = ["late:" + ("alpha(log_gpus)" if n == "log_gpus" else n) for n in late]
        if self.regimes == 1:
            return ["log_shape"] + late
        early = ["early_logit:" + n for n in self.design_.names(self.early_covariates, False)]
        return early + ["early_mu", "early_log_sigma", "log_shape"] + late

    def _fit_mixture(self, fr: pd.DataFrame) -> None:
        y = np.log(fr["T"].to_numpy(float) / self.t_ref)
        E = fr["E"].to_numpy(bool)
        Z, X = self._matrices(fr["cluster"].to_numpy(object), fr["type"].to_numpy(object),
                              fr["gpus"].to_numpy(float))
        nz = 0 if Z is None else Z.shape[1]
        mix = _Mixture(self.regimes, nz, X.shape[1], self.t_ref)
        self._set_penalty(mix)
        self._mix = mix
        mu_max = math.log(self.early_median_max_s / self.t_ref)
        early_cut = math.log(min(1800.0, self.early_median_max_s) / self.t_ref)
        ev_y = y[E]
        late_ev = ev_y[ev_y > early_cut]
        bounds, starts = [], []
        for k0 in (0.7, 1.2):
            # late rate from a crude exponential-ish estimate on late events
            denom = np.sum(np.exp(k0 * y))
            b0 = math.log(max(len(late_ev), 1) / max(denom, 1e-300))
            d0 = np.zeros(X.shape[1])
            d0[0] = b0
            if self.regimes == 2:
                early_ev = ev_y[ev_y <= early_cut]
                p0 = min(max(len(early_ev) / len(y), 0.02), 0.9)
                g0 = np.zeros(nz)
                g0[0] = math.log(p0 / (1 - p0))
                mu0 = min(float(np.median(early_ev)) if len(early_ev) else early_cut - 2, mu_max - 0.1)
                starts.append(np.concatenate([g0, [mu0, math.log(1.0), math.log(k0)], d0]))
            else:
                starts.append(np.concatenate([[math.log(k0)], d0]))
        if self.regimes == 2:
            bounds = ([(-30.0, 30.0)] * nz + [(None, mu_max), (math.log(0.05), math.log(10.0)),
                                              (math.log(0.05), math.log(20.0))] + [(None, None)] * X.shape[1])
        else:
            bounds = [(math.log(0.05), math.log(20.0))] + [(None, None)] * X.shape[1]
        opts = {"maxiter": 2000, "maxfun": 5000, "ftol": 1e-12, "gtol": 1e-7}
        # multi-start on at most WARM_ROWS rows, then refine the best start on all fit rows
        if len(y) > WARM_ROWS:
            warm_seed = None if self.random_state is None else int(self.random_state) + 1
            w = np.random.default_rng(warm_seed).choice(len(y), WARM_ROWS, replace=False)
            args_w = (y[w], E[w], None if Z is None else Z[w], X[w])
        else:
            args_w = (y, E, Z, X)
        best = None
        for th0 in starts:
            res = optimize.minimize(mix.nll_grad, th0, args=args_w, jac=True, method="L-BFGS-B",
                                    bounds=bounds, options=opts)
            if best is None or res.fun < best.fun:
                best = res
        if len(y) > WARM_ROWS:
            best = optimize.minimize(mix.nll_grad, best.x, args=(y, E, Z, X), jac=True,
                                     method="L-BFGS-B", bounds=bounds, options=opts)
        if not best.success:
            warnings.warn(f"failure-model MLE did not fully converge: {best.message}",
                          ConvergenceWarning, stacklevel=3)
        th = best.x
        self.params_ = th
        self.loglik_ = float(np.sum(mix.loglik_rows(th, y, E, Z, X)))
        info = mix.hessian(th, y, E, Z, X)
        at_bound = np.zeros(len(th), bool)
        for j, (lo, hi) in enumerate(bounds):
            at_bound[j] = ((lo is not None and th[j] - lo < 1e-6) or (hi is not None and hi - th[j] < 1e-6))
        free = ~at_bound
        cov = np.zeros((len(th), len(th)))
        try:
            sub = info[np.ix_(free, free)]
            cov_f = np.linalg.inv(sub)
            if not np.all(np.isfinite(cov_f)) or np.any(np.diag(cov_f) < 0):
                raise np.linalg.LinAlgError("information matrix not positive definite")
        except np.linalg.LinAlgError:
            cov_f = np.linalg.pinv(info[np.ix_(free, free)])
            warnings.warn("failure-model information matrix is singular; intervals use a pseudo-inverse "
                          "and may be unreliable (a covariate level without failures?)",
                          ConvergenceWarning, stacklevel=3)
        cov[np.ix_(free, free)] = cov_f
        self.cov_ = cov
        self.at_bound_ = [n for n, b in zip(self._theta_names(), at_bound) if b]
        self._set_derived()

    def _set_penalty(self, mix: "_Mixture") -> None:
        """Ridge prior N(0, ridge_sd²) on the cluster/type dummy coefficients only."""
        names = self._theta_names()
        mix.pen_mask = np.array([("cluster[" in n or "type[" in n) for n in names], float)
        mix.pen_prec = 0.0 if self.ridge_sd is None else 1.0 / float(self.ridge_sd) ** 2

    def _idx(self):
        mix = self._mix
        if self.regimes == 2:
            i_lk = mix.nz + 2
        else:
            i_lk = 0
        return i_lk, i_lk + 1, i_lk + 2  # log k, b0, alpha

    def _set_derived(self) -> None:
        i_lk, i_b0, i_a = self._idx()
        th, V = self.params_, self.cov_
        z = stats.norm.ppf(0.975)
        self.alpha_ = float(th[i_a])
        se_a = math.sqrt(max(V[i_a, i_a], 0.0))
        self.alpha_se_ = se_a
        self.alpha_ci_ = (self.alpha_ - z * se_a, self.alpha_ + z * se_a)
        k = math.exp(th[i_lk])
        se_lk = math.sqrt(max(V[i_lk, i_lk], 0.0))
        self.shape_ = k
        self.shape_ci_ = (k * math.exp(-z * se_lk), k * math.exp(z * se_lk))
        self.scale_s_ = float(self.t_ref * math.exp(-th[i_b0] / k))
        if self.regimes == 2:
            mix = self._mix
            self.early_median_s_ = float(self.t_ref * math.exp(th[mix.nz]))
            self.early_sigma_ = float(math.exp(th[mix.nz + 1]))
        else:
            self.early_median_s_ = float("nan")
            self.early_sigma_ = float("nan")

    # ------------------------------------------------------------------ curves
    def _fit_curves(self, frame: pd.DataFrame, rng: np.random.Generator) -> None:
        from lifelines import AalenJohansenFitter, KaplanMeierFitter

        km: dict[str, dict] = {}
        levels = [("cluster", "type", "gpu_bucket"), ("cluster", "type"), ("type",), ()]
        for keys, label, g in self._curve_cells(frame, levels):
            kmf = KaplanMeierFitter().fit(g["T"].to_numpy(), g["E"].to_numpy())
            tl = kmf.survival_function_.index.to_numpy()
            ci = kmf.confidence_interval_survival_function_
            km[label] = {
                "n": int(len(g)), "events": int(g["E"].sum()), "t_max": float(g["T"].max()),
                "s": np.round(_curve_on_grid(tl, kmf.survival_function_.iloc[:, 0].to_numpy(), 1.0), 6),
                "lo": np.round(_curve_on_grid(tl, ci.iloc[:, 0].to_numpy(), 1.0), 6),
                "hi": np.round(_curve_on_grid(tl, ci.iloc[:, 1].to_numpy(), 1.0), 6),
            }
        self.km_ = km
        cif: dict[str, dict] = {}
        code = frame["cause"].map({c: i + 1 for i, c in enumerate(CAUSES)}).to_numpy()
        for keys, label, g in self._curve_cells(frame, [("cluster", "type"), ("type",), ()]):
            pos = frame.index.get_indexer(g.index) if keys else np.arange(len(frame))
            if len(pos) > self.aj_max_rows:
                pos = np.sort(rng.choice(pos, self.aj_max_rows, replace=False))
            T = frame["T"].to_numpy()[pos]
            C = code[pos]
            entry = {"n": int(len(g)), "n_used": int(len(pos)), "t_max": float(g["T"].max())}
            for i, cause in enumerate(CAUSES):
                if not np.any(C == i + 1):
                    z = np.zeros(len(CURVE_GRID_S))
                    entry[cause] = {"F": z, "lo": z, "hi": z}
                    continue
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    aj = AalenJohansenFitter(calculate_variance=False, seed=self.random_state).fit(
                        T, C, event_of_interest=i + 1)
                tl = aj.cumulative_density_.index.to_numpy()
                F = aj.cumulative_density_.iloc[:, 0].to_numpy()
                lo, hi = aj_confidence_band(aj)
                entry[cause] = {
                    "F": np.round(_curve_on_grid(tl, F, 0.0), 6),
                    "lo": np.round(_curve_on_grid(tl, lo, 0.0), 6),
                    "hi": np.round(_curve_on_grid(tl, hi, 0.0), 6),
                }
            cif[label] = entry
        self.cif_ = cif

    def _curve_cells(self, frame: pd.DataFrame, levels):
        """``(keys, label, rows)`` of every cell of each key tuple in ``levels`` (``()`` = all jobs)
        with at least ``km_min_jobs`` jobs."""
        for keys in levels:
            groups = frame.groupby(list(keys), sort=True) if keys else [((), frame)]
            for vals, g in groups:
                if len(g) < self.km_min_jobs:
                    continue
                vals = vals if isinstance(vals, tuple) else (vals,)
                yield keys, self._cell_label(dict(zip(keys, vals))), g

    @staticmethod
    def _cell_label(key: dict) -> str:
        parts = [f"{k}={key[k]}" for k in ("cluster", "type", "gpu_bucket") if key.get(k) is not None]
        return "|".join(parts) if parts else "all"

    # ------------------------------------------------------------------ comparison
    def _fit_comparison(self, frame: pd.DataFrame, rng: np.random.Generator) -> None:
        sub = frame["submit_s"].to_numpy(float)
        if np.all(np.isfinite(sub)) and np.nanmax(sub) > np.nanmin(sub):
            cut = np.quantile(sub, 1 - self.holdout_fraction)
            tr_mask = sub < cut
        else:
            tr_mask = rng.random(len(frame)) >= self.holdout_fraction
        tr, te = frame[tr_mask], frame[~tr_mask]
        rows = []
        if tr["E"].sum() < 5 or te["E"].sum() < 1 or len(te) < 10:
            warnings.warn("too few failures for the held-out model comparison; skipped", DataWarning,
                          stacklevel=3)
        else:
            cap = lambda d: d if len(d) <= self.aft_max_rows else d.iloc[  # noqa: E731
                np.sort(rng.choice(len(d), self.aft_max_rows, replace=False))]
            tr_c, te_c = cap(tr), cap(te)
            # the two-regime model refitted on the inner training part only
            inner = FailureModel(**{**self.get_params(), "compare": False})
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    inner._validate()
                    inner.design_ = self.design_
                    inner.combos_ = self.combos_
                    inner._fit_mixture(cap(tr) if len(tr) > self.max_fit_rows else tr)
                    inner.n_fit_ = len(tr)
                    ok = True
                except Exception:  # pragma: no cover - reported as NaN
                    ok = False
            T, E = te_c["T"].to_numpy(float), te_c["E"].to_numpy(bool)
            rg = rmst_grid(T)
            if ok:
                ll = inner._loglik_frame(te_c)
                S = inner._predict_frame(te_c, rg, "all")
                rows.append(self._cmp_row("two_regime", ll, S, T, E, rg))
            Xtr = _aft_design(tr_c, self.design_, self.g_ref)
            Xte = _aft_design(te_c, self.design_, self.g_ref)
            for name in COMPARISON_MODELS[1:]:
                try:
                    par = _fit_lifelines(name, Xtr, tr_c["T"].to_numpy(float), tr_c["E"].to_numpy(bool))
                except (RuntimeError, ValueError) as e:
                    warnings.warn(f"{name}: {e}", ConvergenceWarning, stacklevel=3)
                    continue
                ll = None if name == "cox_ph" else _lifelines_loglik(par, Xte, T, E)
                S = _lifelines_survival(par, Xte, rg)
                rows.append(self._cmp_row(name, ll, S, T, E, rg))
        self.comparison_ = pd.DataFrame(rows, columns=["model", "heldout_loglik_per_job", "concordance",
                                                       "n_train", "n_test"]) if rows else None
        if self.comparison_ is not None:
            self.comparison_["n_train"] = len(tr)
            self.comparison_["n_test"] = len(te)
            cand = self.comparison_.dropna(subset=["heldout_loglik_per_job"])
            if len(cand):
                self.selected_ = str(cand.loc[cand["heldout_loglik_per_job"].idxmax(), "model"])
        # final lifelines fits on all jobs (capped) for prediction and the Weibull α cross-check
        allc = frame if len(frame) <= self.aft_max_rows else frame.iloc[
            np.sort(rng.choice(len(frame), self.aft_max_rows, replace=False))]
        Xall = _aft_design(allc, self.design_, self.g_ref)
        for name in COMPARISON_MODELS[1:]:
            try:
                self.lifelines_[name] = _fit_lifelines(name, Xall, allc["T"].to_numpy(float),
                                                       allc["E"].to_numpy(bool))
            except (RuntimeError, ValueError) as e:
                warnings.warn(f"{name}: {e}", ConvergenceWarning, stacklevel=3)
        wb = self.lifelines_.get("weibull_aft", {})
        if "alpha" in wb:
            z = stats.norm.ppf(0.975)
            self.aft_alpha_ = float(wb["alpha"])
            self.aft_alpha_ci_ = (self.aft_alpha_ - z * wb["alpha_se"], self.aft_alpha_ + z * wb["alpha_se"])
            self.aft_shape_ = float(wb["shape"])

    @staticmethod
    def _cmp_row(name, ll, S, T, E, grid):
        from lifelines.utils import concordance_index

        score = rmst(S, grid)
        try:
            ci = float(concordance_index(T, score, E))
        except ZeroDivisionError:
            ci = float("nan")
        return {"model": name, "heldout_loglik_per_job": float(np.mean(ll)) if ll is not None else np.nan,
                "concordance": ci}

    # ------------------------------------------------------------------ predictions on frames
    def _loglik_frame(self, fr: pd.DataFrame) -> np.ndarray:
        y = np.log(fr["T"].to_numpy(float) / self.t_ref)
        Z, X = self._matrices(fr["cluster"].to_numpy(object), fr["type"].to_numpy(object),
                              fr["gpus"].to_numpy(float))
        return self._mix.loglik_rows(self.params_, y, fr["E"].to_numpy(bool), Z, X)

    def _surv_dens(self, th, times, Z, X, component):
        """(S, f) arrays (rows × times) for design rows Z, X."""
        mix = self._mix
        t = np.asarray(times, float)
        y = np.log(np.maximum(t, 1e-9) / self.t_ref)[None, :]
        gam, mu, ls, lk, d = mix.unpack(th)
        k = math.exp(lk)
        nu = (X @ d)[:, None]
        H = np.exp(np.minimum(k * y + nu, 700.0))
        S_L = np.exp(-H)
        f_L = k / t[None, :] * H * S_L
        if component == "late" or self.regimes == 1:
            return S_L, f_L
        s = math.exp(ls)
        z = (y - mu) / s
        S_E = special.ndtr(-z)
        f_E = stats.norm.pdf(z) / (s * t[None, :])
        if component == "early":
            return S_E, f_E
        p = special.expit(Z @ gam)[:, None]
        return p * S_E + (1 - p) * S_L, p * f_E + (1 - p) * f_L

    def _predict_frame(self, fr: pd.DataFrame, times, component="all") -> np.ndarray:
        Z, X = self._matrices(fr["cluster"].to_numpy(object), fr["type"].to_numpy(object),
                              fr["gpus"].to_numpy(float))
        return self._surv_dens(self.params_, times, Z, X, component)[0]

    def predict_survival(self, jobs: pd.DataFrame, times, *, model: str = "two_regime",
                         component: str = "all") -> np.ndarray:
        """Survival matrix (jobs × times) for the started GPU jobs of ``jobs``.

        ``jobs`` is a jobs table (the survival view is built, so only started GPU jobs are returned, in
        the order of :func:`survival_frame`) *or* a survival frame already. ``model``:
        ``"two_regime"``, ``"weibull_aft"``, ``"lognormal_aft"``, ``"loglogistic_aft"``, ``"cox_ph"`` or
        ``"km"`` (Kaplan–Meier of each job's cell, with back-off).
        """
        self._check_fitted()
        fr = jobs if {"T", "E", "gpus"} <= set(jobs.columns) else survival_frame(
            jobs, t_floor_s=self.t_floor_s, gpu_edges=self.gpu_edges)
        times = np.atleast_1d(np.asarray(times, float))
        if model == "two_regime":
            return self._predict_frame(fr, times, _check_component(component))
        if model == "km":
            out = np.empty((len(fr), len(times)))
            keys = list(zip(fr["cluster"], fr["type"], fr["gpu_bucket"]))
            cache: dict = {}
            for i, (c, ty, b) in enumerate(keys):
                if (c, ty, b) not in cache:
                    cache[(c, ty, b)] = self.km_curve(times, cluster=c, type=ty, gpu_bucket=b)[0]
                out[i] = cache[(c, ty, b)]
            return out
        if model in COMPARISON_MODELS[1:]:
            if model not in self.lifelines_:
                raise ValueError(f"model {model!r} was not fitted (compare=False or it failed)")
            return _lifelines_survival(self.lifelines_[model], _aft_design(fr, self.design_, self.g_ref),
                                       times)
        raise ValueError(f"model must be one of {COMPARISON_MODELS + ('km',)}, got {model!r}")

    def loglik(self, jobs: pd.DataFrame, *, model: str = "two_regime") -> np.ndarray:
        """Per-job log-likelihood (event: log density in 1/s; censored: log survival)."""
        self._check_fitted()
        fr = jobs if {"T", "E", "gpus"} <= set(jobs.columns) else survival_frame(
            jobs, t_floor_s=self.t_floor_s, gpu_edges=self.gpu_edges)
        if model == "two_regime":
            return self._loglik_frame(fr)
        if model in ("weibull_aft", "lognormal_aft", "loglogistic_aft"):
            if model not in self.lifelines_:
                raise ValueError(f"model {model!r} was not fitted")
            return _lifelines_loglik(self.lifelines_[model], _aft_design(fr, self.design_, self.g_ref),
                                     fr["T"].to_numpy(float), fr["E"].to_numpy(bool))
        raise ValueError(f"log-likelihood is defined for the parametric models only, not {model!r}")

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
        m_L = self.t_ref * np.exp(-(X @ d) / k) * math.gamma(1 + 1 / k)
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
        nu = (X @ d)[combo]
        # late Weibull: H(t) = (t/t_ref)^k e^nu = Exp(1)
        t_late = self.t_ref * (rng.exponential(size=int(n)) * np.exp(-nu)) ** (1 / k)
        if component == "late" or self.regimes == 1:
            return t_late
        t_early = self.t_ref * np.exp(mu + math.exp(ls) * rng.standard_normal(int(n)))
        if component == "early":
            return t_early
        p = special.expit(Z @ gam)[combo]
        return np.where(rng.random(int(n)) < p, t_early, t_late)

    # ------------------------------------------------------------------ Kaplan–Meier access
    def km_curve(self, t, **key):
        """Kaplan–Meier survival at ``t`` (s) of the finest fitted cell for ``key``.

        ``key``: ``cluster``, ``type``, ``gpus`` or ``gpu_bucket``; back-off order: GPU bucket,
        cluster, type. Returns ``(S, lower, upper, cell_label)``.
        """
        self._check_fitted()
        key = normalize_key(self.gpu_edges, **key)
        if "state" in key:
            raise ValueError("the failure model's cells have no state key")
        for _, cell in backoff_chain(key, ("cluster", "type", "gpu_bucket"), ("gpu_bucket", "cluster")):
            label = self._cell_label(cell._asdict())
            if label in self.km_:
                c = self.km_[label]
                tt = np.atleast_1d(np.asarray(t, float))
                f = lambda v: _step_at(CURVE_GRID_S, np.asarray(v, float), tt, 1.0)  # noqa: E731
                return f(c["s"]), f(c["lo"]), f(c["hi"]), label
        raise ValueError(f"no Kaplan–Meier cell for {key}")  # pragma: no cover - 'all' always exists

    def km_table(self, **key) -> pd.DataFrame:
        """Kaplan–Meier curve of the cell for ``key`` on the stored grid up to the cell's longest
        observed time: t_s, survival, lower, upper, cell."""
        s, lo, hi, label = self.km_curve(CURVE_GRID_S, **key)
        keep = CURVE_GRID_S <= max(self.km_[label]["t_max"], CURVE_GRID_S[0])
        return pd.DataFrame({"t_s": CURVE_GRID_S, "survival": s, "lower": lo, "upper": hi,
                             "cell": label})[keep].reset_index(drop=True)

    def cif_table(self, **key) -> pd.DataFrame:
        """Aalen–Johansen cumulative incidence of fail / cancel / complete (tidy) for ``key``
        (``cluster``, ``type``; back-off to type, then all), on the stored grid up to the cell's
        longest observed time."""
        self._check_fitted()
        key = {k: v for k, v in key.items() if v is not None}
        bad = set(key) - {"cluster", "type"}
        if bad:
            raise ValueError(f"unknown key(s) {sorted(bad)}; cumulative incidence takes cluster=, type=")
        for _, cell in backoff_chain(key, ("cluster", "type"), ("cluster",)):
            label = self._cell_label(cell._asdict())
            if label in self.cif_:
                e = self.cif_[label]
                keep = CURVE_GRID_S <= max(e["t_max"], CURVE_GRID_S[0])
                parts = [pd.DataFrame({"t_s": CURVE_GRID_S, "cause": c, "cif": e[c]["F"],
                                       "lower": e[c]["lo"], "upper": e[c]["hi"]})[keep] for c in CAUSES]
                out = pd.concat(parts, ignore_index=True)
                out["cell"] = label
                return out
        raise ValueError(f"no cumulative-incidence cell for {key}")  # pragma: no cover

    # ------------------------------------------------------------------ reports
    def summary(self) -> pd.DataFrame:
        """Parameter table (estimate, std. error, 95 % interval) plus derived quantities."""
        self._check_fitted()
        z = stats.norm.ppf(0.975)
        se = np.sqrt(np.maximum(np.diag(self.cov_), 0.0))
        names = self._theta_names()
        df = pd.DataFrame({"estimate": self.params_, "std_error": se,
                           "lower": self.params_ - z * se, "upper": self.params_ + z * se}, index=names)
        derived = [("alpha (late rate ∝ gpus^alpha)", self.alpha_, self.alpha_se_, *self.alpha_ci_),
                   ("shape k (late Weibull; <1 infant mortality)", self.shape_, np.nan, *self.shape_ci_),
                   ("scale_s at g_ref (late Weibull, reference covariates)", self.scale_s_, np.nan,
                    np.nan, np.nan)]
        if self.regimes == 2:
            derived += [("early median s", self.early_median_s_, np.nan, np.nan, np.nan),
                        ("early log-sd", self.early_sigma_, np.nan, np.nan, np.nan),
                        ("early share (training average)", self.early_share_, np.nan, np.nan, np.nan)]
        if np.isfinite(self.aft_alpha_):
            derived += [("alpha (Weibull AFT cross-check)", self.aft_alpha_, np.nan, *self.aft_alpha_ci_),
                        ("shape (Weibull AFT, one regime)", self.aft_shape_, np.nan, np.nan, np.nan)]
        d = pd.DataFrame([r[1:] for r in derived], index=[r[0] for r in derived],
                         columns=["estimate", "std_error", "lower", "upper"])
        out = pd.concat([df, d])
        out.index.name = "parameter"
        return out

    @property
    def early_share_(self) -> float:
        if self.regimes == 1:
            return 0.0
        cl = np.array([c for c, _, _ in self.combos_], dtype=object)
        ty = np.array([t for _, t, _ in self.combos_], dtype=object)
        w = np.array([x for _, _, x in self.combos_])
        # average p at the reference size (the training share per combo would need the GPU mix)
        Z, _ = self._matrices(cl, ty, np.full(len(cl), self.g_ref))
        return float(w @ special.expit(Z @ self._mix.unpack(self.params_)[0]))

    def hazard_shape(self) -> str:
        """Plain-language hazard shape of the late regime from the interval of ``shape_``."""
        self._check_fitted()
        lo, hi = self.shape_ci_
        if hi < 1:
            return f"decreasing hazard (Weibull shape {self.shape_:.2f} < 1: infant mortality)"
        if lo > 1:
            return f"increasing hazard (Weibull shape {self.shape_:.2f} > 1: wear-out)"
        return f"hazard roughly constant (Weibull shape {self.shape_:.2f}, interval contains 1)"

    def plot(self, ax=None, *, kind: str = "mttf", **key):
        """Draw on ``ax``: ``kind="mttf"`` (MTTF vs GPUs with interval, log–log), ``"km"`` (Kaplan–
        Meier per type with bands), ``"cif"`` (cumulative incidence of fail/cancel/complete)."""
        self._check_fitted()
        import matplotlib.pyplot as plt

        if ax is None:
            _, ax = plt.subplots()
        if kind == "mttf":
            c = self.mttf_curve(**key)
            ax.plot(c["gpus"], c["mttf_h"], marker="o", label="late-regime MTTF")
            ax.fill_between(c["gpus"], c["lower_s"] / 3600, c["upper_s"] / 3600, alpha=0.3)
            ax.axvline(self.max_gpus_, ls=":", color="grey", label="largest trace job")
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ax.set_xlabel("GPUs")
            ax.set_ylabel("MTTF (hours)")
        elif kind == "km":
            types = [lbl.split("=", 1)[1] for lbl in self.km_ if lbl.startswith("type=")]
            for ty in types:
                tab = self.km_table(type=ty, **key)
                ax.step(tab["t_s"], tab["survival"], where="post", label=f"{ty} (n={self.km_[tab['cell'][0]]['n']})")
                ax.fill_between(tab["t_s"], tab["lower"], tab["upper"], step="post", alpha=0.2)
            ax.set_xscale("log")
            ax.set_xlabel("run time (s)")
            ax.set_ylabel("P(no failure)")
        elif kind == "cif":
            tab = self.cif_table(**key)
            for cause, g in tab.groupby("cause", sort=False):
                ax.step(g["t_s"], g["cif"], where="post", label=cause)
                ax.fill_between(g["t_s"], g["lower"], g["upper"], step="post", alpha=0.2)
            ax.set_xscale("log")
            ax.set_xlabel("run time (s)")
            ax.set_ylabel("cumulative incidence")
        else:
            raise ValueError(f"kind must be 'mttf', 'km' or 'cif', got {kind!r}")
        ax.legend(fontsize="small")
        return ax

    # ------------------------------------------------------------------ serialisation
    def _fitted_to_dict(self) -> dict[str, Any]:
        return {
            "n_fit": self.n_fit_, "n_events": self.n_events_, "n_excluded": self.n_excluded_,
            "n_mixture_rows": self.n_mixture_rows_, "max_gpus": self.max_gpus_, "loglik": self.loglik_,
            "min_gpus": self.min_gpus_, "design": self.design_.to_dict(), "combos": [list(c) for c in self.combos_],
            "mix": {"regimes": self._mix.regimes, "nz": self._mix.nz, "nx": self._mix.nx},
            "params": self.params_, "cov": self.cov_, "at_bound": self.at_bound_,
            "km": self.km_, "cif": self.cif_, "grid": CURVE_GRID_S,
            "comparison": None if self.comparison_ is None else self.comparison_.to_dict(orient="list"),
            "selected": self.selected_, "lifelines": self.lifelines_,
        }

    def _fitted_from_dict(self, d: dict[str, Any], artifacts: dict[str, str]) -> None:
        if not np.allclose(np.asarray(d["grid"], float), CURVE_GRID_S):
            raise ValueError("curve grid of the saved failure model differs from this version")
        self.n_events_, self.n_excluded_ = int(d["n_events"]), int(d["n_excluded"])
        self.n_mixture_rows_ = int(d["n_mixture_rows"])
        self.max_gpus_, self.loglik_ = unjson_float(d["max_gpus"]), unjson_float(d["loglik"])
        self.min_gpus_ = unjson_float(d.get("min_gpus", 1.0))
        self.design_ = _Design.from_dict(d["design"])
        self.combos_ = [(str(c), str(t), float(w)) for c, t, w in d["combos"]]
        m = d["mix"]
        self._mix = _Mixture(int(m["regimes"]), int(m["nz"]), int(m["nx"]), float(self.t_ref))
        self.params_ = np.asarray([unjson_float(v) for v in d["params"]], float)
        self.cov_ = np.asarray([[unjson_float(v) for v in row] for row in d["cov"]], float)
        self.at_bound_ = list(d["at_bound"])
        arr = lambda v: np.asarray(v, float)  # noqa: E731
        self.km_ = {k: {"n": v["n"], "events": v["events"], "t_max": float(v["t_max"]),
                        "s": arr(v["s"]), "lo": arr(v["lo"]), "hi": arr(v["hi"])} for k, v in d["km"].items()}
        self.cif_ = {k: {"n": v["n"], "n_used": v["n_used"], "t_max": float(v["t_max"]),
                         **{c: {kk: arr(vv) for kk, vv in v[c].items()} for c in CAUSES}}
                     for k, v in d["cif"].items()}
        self.comparison_ = None if d["comparison"] is None else pd.DataFrame(d["comparison"])
        self.selected_ = d["selected"]
        self.lifelines_ = d["lifelines"]
        self._set_derived()
        wb = self.lifelines_.get("weibull_aft", {})
        self.aft_alpha_ = self.aft_shape_ = float("nan")
        self.aft_alpha_ci_ = (float("nan"), float("nan"))
        if "alpha" in wb:
            z = stats.norm.ppf(0.975)
            self.aft_alpha_ = float(wb["alpha"])
            self.aft_alpha_ci_ = (self.aft_alpha_ - z * wb["alpha_se"], self.aft_alpha_ + z * wb["alpha_se"])
            self.aft_shape_ = float(wb["shape"])
        self.n_fit_ = int(d["n_fit"])


def single_thread_blas():
    """Context manager limiting BLAS to one thread (threadpoolctl ships with scikit-learn)."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover
        import contextlib

        return contextlib.nullcontext()
    return threadpool_limits(limits=1, user_api="blas")


def _check_component(component: str) -> str:
    if component not in ("all", "late", "early"):
        raise ValueError(f"component must be 'all', 'late' or 'early', got {component!r}")
    return component


def _num_jac(fun, th: np.ndarray) -> np.ndarray:
    """Central-difference Jacobian of a vector function of θ (rows: outputs)."""
    f0 = np.asarray(fun(th))
    J = np.empty((len(f0), len(th)))
    for j in range(len(th)):
        h = 1e-6 * max(1.0, abs(th[j]))
        tp, tm = th.copy(), th.copy()
        tp[j] += h
        tm[j] -= h
        J[:, j] = (np.asarray(fun(tp)) - np.asarray(fun(tm))) / (2 * h)
    return J
