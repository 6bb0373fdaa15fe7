"""Data and likelihood of the two-regime failure model: the survival view of a jobs table
(:func:`survival_frame`), the cluster/type design (:class:`_Design`) and the mixture log-likelihood
with its analytic gradient (:class:`_Mixture`), used by :class:`~acmemodel.models.failure.FailureModel`.
The model's math is stated in :mod:`acmemodel.models.failure`.
"""
from __future__ import annotations

import math
import warnings
from typing import Sequence

import numpy as np
import pandas as pd
from scipy import optimize, special, stats

from acmemodel.errors import ConvergenceWarning
from acmemodel.features.keys import DEFAULT_GPU_EDGES, gpu_bucket
from acmemodel.models.failure_laws import LateRegime, late_regime

#: fixed log-spaced time grid (s) on which Kaplan–Meier and cumulative incidence curves are stored
CURVE_GRID_S: np.ndarray = np.unique(np.round(np.geomspace(1.0, 2.0 ** 23, 93)))
_LOG2PI_2 = 0.5 * math.log(2 * math.pi)
#: ``scipy.stats.norm``'s log-density constant: :func:`_norm_logpdf` is its standard-normal ``logpdf`` without
#: the argument checks of the distribution object (25 ms per call on 700,000 rows, the formula 1 ms)
_NORM_PDF_LOGC = np.log(np.sqrt(2 * np.pi))


def _norm_logpdf(z: np.ndarray) -> np.ndarray:
    """``scipy.stats.norm.logpdf(z)``, the same arithmetic (``−z²/2 − log √(2π)``)."""
    return -z ** 2 / 2.0 - _NORM_PDF_LOGC
#: rows of the multi-start stage of the two-regime MLE (the best start is then refined on all rows)
WARM_ROWS = 40_000
#: the pooled level of types with fewer than ``min_level_jobs`` jobs
_RARE = "(rare)"


# ============================================================================ data preparation
def survival_frame(jobs: pd.DataFrame, *, t_floor_s: float = 1.0,
                   gpu_edges: Sequence[int] = DEFAULT_GPU_EDGES) -> pd.DataFrame:
    """Survival view of a jobs table (see module docstring): one row per started GPU job.

    Columns: ``cluster``, ``type``, ``gpus``, ``gpu_bucket``, ``T`` (seconds, ≥ ``t_floor_s``),
    ``E`` (bool, failure observed), ``cause`` (``fail`` / ``cancel`` / ``complete``), ``submit_s``,
    ``entry`` (s: the run's age when it entered observation — ``entry_age_s`` of a left-truncated
    run whose start is known, a delayed entry; 0 for every other row). Left-truncated runs of unknown
    age are left out (:func:`left_truncated_unknown_age`).
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
    if "left_truncated" in jobs.columns:  # run begun before the trace, age unknown: left out (counted by the model)
        keep &= ~left_truncated_unknown_age(jobs)
    sub = jobs.loc[keep]
    state = sub["analysis_state"].astype(str).to_numpy()
    bad = sorted(set(state) - {"FAILED", "CANCELLED", "COMPLETED", "RUNNING"})
    if bad:
        raise ValueError(f"analysis_state must be COMPLETED/CANCELLED/FAILED/RUNNING, found {bad}")
    E = state == "FAILED"
    if "run_censored" in sub.columns:  # still running at extraction: censored, never an event
        E &= ~sub["run_censored"].fillna(False).to_numpy(dtype=bool)
    T = sub["run_s"].to_numpy(dtype=float).copy()
    if "fail_time_s" in sub.columns:
        ft = sub["fail_time_s"].to_numpy(dtype=float)
        use = E & np.isfinite(ft) & (ft > 0)
        T[use] = ft[use]
    T = np.maximum(T, t_floor_s)
    cause = np.where(E, "fail", np.where(state == "CANCELLED", "cancel",
                                         np.where(state == "RUNNING", "censored", "complete")))
    g = sub["gpu_num"].to_numpy(dtype=float)
    out = pd.DataFrame({
        "cluster": sub["cluster"].astype(str).to_numpy(), "type": sub["type"].astype(str).to_numpy(),
        "gpus": g, "gpu_bucket": gpu_bucket(g, gpu_edges), "T": T, "E": E, "cause": cause,
        "submit_s": (sub["submit_s"].to_numpy(dtype=float) if "submit_s" in sub.columns
                     else np.full(len(sub), np.nan)),
        "entry": _entry_ages(sub, T),
    }, index=sub.index)
    return out


def _entry_ages(sub: pd.DataFrame, T: np.ndarray) -> np.ndarray:
    """Delayed-entry ages (s) of the kept rows: ``entry_age_s`` of left-truncated runs (below T), else 0."""
    if "left_truncated" not in sub.columns or "entry_age_s" not in sub.columns:
        return np.zeros(len(sub))
    lt = sub["left_truncated"].fillna(False).to_numpy(dtype=bool)
    age = sub["entry_age_s"].to_numpy(dtype=float)
    ok = lt & np.isfinite(age) & (age > 0)
    return np.where(ok, np.minimum(np.where(ok, age, 0.0), 0.999 * T), 0.0)


def left_truncated_unknown_age(jobs: pd.DataFrame) -> np.ndarray:
    """Rows whose run began before the trace at an unknown time (``left_truncated`` without a finite
    ``entry_age_s``): the time to failure of such a run cannot be placed on the run-time axis."""
    if "left_truncated" not in jobs.columns:
        return np.zeros(len(jobs), dtype=bool)
    lt = jobs["left_truncated"].fillna(False).to_numpy(dtype=bool)
    age = (jobs["entry_age_s"].to_numpy(dtype=float) if "entry_age_s" in jobs.columns
           else np.full(len(jobs), np.nan))
    return lt & ~np.isfinite(age)


def _step_at(grid_t: np.ndarray, values: np.ndarray, t: np.ndarray, before: float) -> np.ndarray:
    """Right-continuous step function through (grid_t, values), ``before`` left of the first point."""
    idx = np.searchsorted(grid_t, t, side="right") - 1
    out = np.where(idx >= 0, values[np.maximum(idx, 0)], before)
    return out


def _curve_on_grid(timeline: np.ndarray, values: np.ndarray, before: float) -> np.ndarray:
    return _step_at(np.asarray(timeline, float), np.asarray(values, float), CURVE_GRID_S, before)


# ============================================================================ mixture likelihood
#: sd of the weak normal prior on log k, the late Weibull shape (see _set_penalty)
SHAPE_PRIOR_SD = 1.0

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

    def __init__(self, regimes: int, nz: int, nx: int, t_ref: float, late: LateRegime | None = None):
        self.regimes, self.nz, self.nx, self.t_ref = regimes, nz, nx, t_ref
        self.log_tref = math.log(t_ref)
        #: the late regime's law (:class:`~acmemodel.models.failure_laws.LateRegime`; Weibull PH by default)
        self.late = late if late is not None else late_regime("weibull")

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
        lf_L, lS_L, aux = self.late.components(k, lk, y, nu, logt)
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
        return dict(k=k, aux=aux, lf_L=lf_L, lS_L=lS_L, logp=logp, log1mp=log1mp, z=z, s=s,
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

    #: delayed entry (set by the fit when some rows entered late): ``{"n": rows of the fit, "y": log(a/t_ref),
    #: "Z", "X": their design rows, "w": their counts or None}``; the log-likelihood then subtracts Σ log S(a_j)
    #: (left truncation: a row contributes f(T)/S(a) or S(T)/S(a)). Applied when ``nll_grad`` sees the fit's ``n``
    #: rows (the multi-start warm stage on a subsample leaves it out: a start only).
    entry: dict | None = None

    def nll_grad(self, th, y, E, Z, X, w=None):
        """Mean penalised negative log-likelihood and its gradient (penalty: module docstring; delayed
        entry: :attr:`entry`). ``w``: each row's count (rows that stand for that many identical jobs; ``None``:
        one each): the same mean as the rows repeated."""
        f, g = self._nll_grad(th, y, E, Z, X, w)
        n = _rows(y, w)
        ent = self.entry
        if ent is not None and n == ent["n"]:
            m = _rows(ent["y"], ent.get("w"))
            fe, ge = self._nll_grad(th, ent["y"], np.zeros(len(ent["y"]), dtype=bool), ent["Z"], ent["X"],
                                    ent.get("w"))
            f, g = f - fe * m / n, g - ge * m / n
        if self.pen_mask is not None and self.pen_prec > 0:
            pw = self.pen_mask * self.pen_prec / n
            f = f + 0.5 * float(np.sum(pw * th * th))
            g = g + pw * th
        return f, g

    def _nll_grad(self, th, y, E, Z, X, w=None):
        n = _rows(y, w)
        wt = 1.0 if w is None else w  # (× 1.0 is exact: unweighted rows give the unweighted sums bit for bit)
        c = self.components(th, y, Z, X)
        k = c["k"]
        ky = k * y
        dL_nu = self.late.dz(E, c["aux"])    # d log L / dz of the late law, z = k y + nu
        dL_lk = np.where(E, 1.0 + ky * dL_nu, ky * dL_nu)
        lA_L = np.where(E, c["lf_L"], c["lS_L"])
        if self.regimes == 1:
            g = np.concatenate([[np.sum(wt * dL_lk)], X.T @ (wt * dL_nu)])
            return -np.sum(wt * lA_L) / n, -g / n
        z, s = c["z"], c["s"]
        lA_E = np.where(E, c["lf_E"], c["lS_E"])
        a = c["logp"] + lA_E
        b = c["log1mp"] + lA_L
        ll = np.logaddexp(a, b)
        r = np.exp(a - ll)
        p = np.exp(c["logp"])
        lam = np.exp(_norm_logpdf(z) - c["lS_E"])  # inverse Mills ratio
        dE_mu = np.where(E, z / s, lam / s)
        dE_ls = np.where(E, z * z - 1.0, lam * z)
        Zg = Z.T @ (wt * (r - p))
        rw = wt * r
        w1 = wt * (1.0 - r)
        g = np.concatenate([Zg, [np.sum(rw * dE_mu), np.sum(rw * dE_ls), np.sum(w1 * dL_lk)],
                            X.T @ (w1 * dL_nu)])
        return -np.sum(wt * ll) / n, -g / n

    def hessian(self, th, y, E, Z, X, w=None) -> np.ndarray:
        """Observed information (sum over rows; ``w``: row counts as in :meth:`nll_grad`) by central differences
        of the analytic gradient."""
        P = len(th)
        Hm = np.empty((P, P))
        for j in range(P):
            h = 1e-5 * max(1.0, abs(th[j]))
            tp, tm = th.copy(), th.copy()
            tp[j] += h
            tm[j] -= h
            Hm[:, j] = (self.nll_grad(tp, y, E, Z, X, w)[1] - self.nll_grad(tm, y, E, Z, X, w)[1]) / (2 * h)
        return 0.5 * (Hm + Hm.T) * _rows(y, w)






#: the likelihood's rows are collapsed to distinct ones (:func:`_alike_rows`) when that leaves at most this share
ALIKE_MAX_SHARE = 0.8


def _alike_rows(fr: pd.DataFrame) -> tuple[np.ndarray | None, np.ndarray | None]:
    """(first row of each distinct ``(T, E, cluster, type, gpus, entry)``, in row order; how many rows it stands
    for) — the failure likelihood's terms depend on those columns only — or ``(None, None)`` when fewer than
    ``1 − ALIKE_MAX_SHARE`` of the rows would go."""
    cols = [c for c in ("T", "E", "cluster", "type", "gpus", "entry") if c in fr.columns]
    codes = fr.groupby(cols, sort=False, dropna=False, observed=True).ngroup().to_numpy()
    _, first, counts = np.unique(codes, return_index=True, return_counts=True)
    if first.size > ALIKE_MAX_SHARE * len(fr):
        return None, None
    return first, counts.astype(float)


def _rows(y: np.ndarray, w) -> float:
    """The jobs a likelihood's rows stand for: ``len(y)``, or the sum of their counts ``w``."""
    return len(y) if w is None else float(w.sum())


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


class TwoRegimeFitMixin:
    """The maximum-likelihood fit of the two-regime model (multi-start L-BFGS-B, observed-information
    covariance, derived α, k, scale and early-regime parameters) for
    :class:`~acmemodel.models.failure.FailureModel`."""

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
        mix = _Mixture(self.regimes, nz, X.shape[1], self.t_ref, late_regime(self.late_family))
        self._set_penalty(mix)
        self._mix = mix
        ent = fr["entry"].to_numpy(float) > 0 if "entry" in fr.columns else np.zeros(len(fr), bool)
        self.n_delayed_entry_ = int(ent.sum())
        # jobs alike in every term of the likelihood (T, E, cluster, type, GPUs, entry age) as one row with their
        # count: the same likelihood, its gradient and information (whole-second times tie often: the 300,000
        # rows of a 1M-job fleet are 79,000 such rows); the multi-start's subsample is drawn from the jobs
        first, wt = _alike_rows(fr)
        yc, Ec, Zc, Xc = ((y, E, Z, X) if wt is None else
                          (y[first], E[first], None if Z is None else Z[first], X[first]))
        if ent.any():  # delayed entry (left truncation with a known age): see _Mixture.entry
            ent_c = ent if wt is None else ent[first]
            mix.entry = {"n": len(y), "y": np.log(fr["entry"].to_numpy(float)[ent if wt is None else first[ent_c]]
                                                   / self.t_ref),
                         "Z": None if Zc is None else Zc[ent_c], "X": Xc[ent_c],
                         "w": None if wt is None else wt[ent_c]}
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
            args_w = (yc, Ec, Zc, Xc, wt)
        best = None
        for th0 in starts:
            res = optimize.minimize(mix.nll_grad, th0, args=args_w, jac=True, method="L-BFGS-B",
                                    bounds=bounds, options=opts)
            if best is None or res.fun < best.fun:
                best = res
        if len(y) > WARM_ROWS:
            best = optimize.minimize(mix.nll_grad, best.x, args=(yc, Ec, Zc, Xc, wt), jac=True,
                                     method="L-BFGS-B", bounds=bounds, options=opts)
        if not best.success:
            warnings.warn(f"failure-model MLE did not fully converge: {best.message}",
                          ConvergenceWarning, stacklevel=3)
        th = best.x
        self.params_ = th
        ones = 1.0 if wt is None else wt
        self.loglik_ = float(np.sum(ones * mix.loglik_rows(th, yc, Ec, Zc, Xc)))
        if mix.entry is not None:
            me = mix.entry
            self.loglik_ -= float(np.sum((1.0 if me["w"] is None else me["w"])
                                         * mix.loglik_rows(th, me["y"], np.zeros(len(me["y"]), bool), me["Z"], me["X"])))
        info = mix.hessian(th, yc, Ec, Zc, Xc, wt)
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
        """Ridge prior N(0, ridge_sd²) on the cluster/type dummy coefficients, and a weak prior
        N(0, SHAPE_PRIOR_SD²) on the log Weibull shape (k within e^±2 at two sd) so that a late
        regime with few events cannot run to a degenerate spike (k at its bound of 20)."""
        names = self._theta_names()
        mask = np.array([("cluster[" in n or "type[" in n) for n in names], float)
        if self.ridge_sd is None:
            mask[:] = 0.0
            prec = 1.0
        else:
            prec = 1.0 / float(self.ridge_sd) ** 2
        mask[[n == "log_shape" for n in names]] = 1.0 / (SHAPE_PRIOR_SD ** 2 * prec)
        mix.pen_mask, mix.pen_prec = mask, prec

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
        # a parameter stuck at its bound has no Wald interval: reported as unbounded, not as exact
        bound = set(getattr(self, "at_bound_", []) or [])
        se_a = math.inf if "late:alpha(log_gpus)" in bound else math.sqrt(max(V[i_a, i_a], 0.0))
        self.alpha_se_ = se_a
        self.alpha_ci_ = (self.alpha_ - z * se_a, self.alpha_ + z * se_a)
        k = math.exp(th[i_lk])
        se_lk = math.inf if "log_shape" in bound else math.sqrt(max(V[i_lk, i_lk], 0.0))
        self.shape_ = k
        ez = math.exp(min(z * se_lk, 700.0))  # an unidentified shape: an unbounded interval, not an overflow
        self.shape_ci_ = (k / ez, k * ez)
        self.scale_s_ = float(self.t_ref * math.exp(-th[i_b0] / k))
        if self.regimes == 2:
            mix = self._mix
            self.early_median_s_ = float(self.t_ref * math.exp(th[mix.nz]))
            self.early_sigma_ = float(math.exp(th[mix.nz + 1]))
        else:
            self.early_median_s_ = float("nan")
            self.early_sigma_ = float("nan")
