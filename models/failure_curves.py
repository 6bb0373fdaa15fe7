"""The non-parametric and comparison side of the failure model: Kaplan–Meier curves per cell,
Aalen–Johansen cumulative incidence of fail / cancel / complete, and the lifelines AFT / Cox baselines
compared with the two-regime model on a time-ordered inner holdout (held-out log-likelihood and
concordance scored by restricted mean survival time, :func:`rmst`).

:class:`FailureCurvesMixin` holds these parts of :class:`~acmemodel.models.failure.FailureModel`.
"""
from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
import pandas as pd
from scipy import special, stats

from acmemodel.errors import ConvergenceWarning, DataWarning
from acmemodel.features.keys import backoff_chain, normalize_key
from acmemodel.models.failure_mle import CURVE_GRID_S, _Design, _curve_on_grid, _step_at

CAUSES: tuple[str, ...] = ("fail", "cancel", "complete")
COMPARISON_MODELS: tuple[str, ...] = ("two_regime", "weibull_aft", "lognormal_aft", "loglogistic_aft",
                                      "cox_ph")


# ============================================================================ lifelines comparison
def _aft_design(frame: pd.DataFrame, design: _Design, g_ref: float) -> pd.DataFrame:
    cl, tl = design.levels(frame["cluster"].to_numpy(object), frame["type"].to_numpy(object))
    d = {"log_gpus": np.log(frame["gpus"].to_numpy(float) / g_ref)}
    for c in design.clusters[1:]:
        d[f"cluster_{c}"] = (cl == c).astype(float)
    for t in design.types[1:]:
        d[f"type_{t}"] = (tl == t).astype(float)
    return pd.DataFrame(d, index=frame.index)


#: the univariate family of each AFT model and, per lifelines parameter block, the intercept it starts from as
#: a function of the family's log-location ``m`` and log-scale ``s`` (``log T = m + s·Z``)
_AFT_START = {
    "weibull_aft": ("weibull", {"lambda_": lambda m, s: m, "rho_": lambda m, s: -math.log(s)}),
    "lognormal_aft": ("lognormal", {"mu_": lambda m, s: m, "sigma_": lambda m, s: math.log(s)}),
    "loglogistic_aft": ("loglogistic", {"alpha_": lambda m, s: m, "beta_": lambda m, s: -math.log(s)}),
}


def _aft_start(name: str, T: np.ndarray, E: np.ndarray):
    """The AFT fit's starting point: every block's intercept from the censored maximum-likelihood fit of the
    univariate family (:mod:`acmemodel.models.distributions`, L-BFGS on ``(m, log s)``), the covariate
    coefficients 0. lifelines' own start fits the univariate model by a 400-step Nelder–Mead search (with
    an autograd gradient it does not use) and sets only the first block's intercept, and it does so even
    when ``fit`` is given ``initial_point``; so the start is handed over in place of lifelines'
    ``_create_initial_point`` (signature ``(Ts, E, entries, weights, Xs)``). The optimum is the same
    likelihood maximum, reached in fewer steps (measured on 3,200–4,000 jobs: the log-likelihood equal or
    up to 0.02 nats higher, a third of the time). Returns ``None`` when the univariate fit fails (lifelines'
    own start is used then)."""
    from acmemodel.models.distributions import get_family

    fam, blocks = _AFT_START[name]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            m, s = get_family(fam).fit(T, ~E)._ms()
        start = {p: f(m, s) for p, f in blocks.items()}
    except (ValueError, FloatingPointError, ArithmeticError, np.linalg.LinAlgError):
        return None
    if not all(math.isfinite(v) for v in start.values()):
        return None

    def create_initial_point(*args):
        Xs = args[-1]
        return {p: np.array([start[p] if c == "Intercept" else 0.0 for c in Xs[p].columns]) for p in blocks}
    return create_initial_point


def _fit_lifelines(name: str, X: pd.DataFrame, T: np.ndarray, E: np.ndarray) -> dict:
    """Fit one lifelines regression and reduce it to plain parameters (an AFT model from :func:`_aft_start`)."""
    from lifelines import (CoxPHFitter, LogLogisticAFTFitter, LogNormalAFTFitter,
                           WeibullAFTFitter)

    cls = {"weibull_aft": WeibullAFTFitter, "lognormal_aft": LogNormalAFTFitter,
           "loglogistic_aft": LogLogisticAFTFitter, "cox_ph": CoxPHFitter}[name]
    # drop constant columns (a level absent from this sample) to keep the information matrix regular
    X = X.loc[:, X.std(axis=0) > 0]
    df = X.assign(T=T, E=E.astype(int))
    start = _aft_start(name, np.asarray(T, float), np.asarray(E, bool)) if name in _AFT_START else None
    last = None
    for pen in (0.0, 1e-3, 1e-2):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                m = cls(penalizer=pen)
                if start is not None:
                    m._create_initial_point = start
                m = m.fit(df, "T", "E")
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
    Returns (lower, upper) aligned on ``aj.cumulative_density_.index``. ``aj`` may also be the
    :class:`~acmemodel.models.km.CumulativeIncidence` of :func:`~acmemodel.models.km.aalen_johansen`
    (the same numbers; aligned on its ``t``).
    """
    if hasattr(aj, "event_table"):  # a lifelines AalenJohansenFitter
        et = aj.event_table
        F = aj.cumulative_density_.iloc[:, 0].to_numpy(float)
        d = et["observed"].to_numpy(float)
        dk = et[aj.label_cmprisk].to_numpy(float)
        n = et["at_risk"].to_numpy(float)
    else:
        F, d, dk, n = (np.asarray(a, float) for a in (aj.F, aj.observed, aj.observed_k, aj.at_risk))
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


class FailureCurvesMixin:
    """Kaplan–Meier, cumulative-incidence and baseline-comparison methods of the failure model.

    Curves are stored per cell; a key not given is the pooled curve of the jobs of the given keys
    (the count-weighted mixture), an unseen cluster or type raises ``ValueError``, and a cell with too
    few jobs backs off (GPU bucket, then cluster) — reported in the returned cell label and warned
    once (:class:`~acmemodel.errors.DataWarning`)."""

    def _check_curve_key(self, key: dict) -> None:
        from acmemodel.models.cells import check_key_values

        check_key_values({k: key.get(k) for k in ("cluster", "type")},
                         {"cluster": self.design_.clusters, "type": sorted(self.design_.type_map)}, "FailureModel")

    def _warn_curve_backoff(self, level: int, key: dict, used, what: str) -> None:
        if level == 0:
            return
        from acmemodel.features.keys import Cell
        from acmemodel.models.cells import warn_backoff

        asked = Cell(**{k: v for k, v in key.items() if k in ("cluster", "type", "gpu_bucket")})
        warn_backoff(self.__dict__.setdefault("_warned", set()), asked, used, f"FailureModel {what}", stacklevel=5)

    # ------------------------------------------------------------------ curves
    def _fit_curves(self, frame: pd.DataFrame, rng: np.random.Generator) -> None:
        # (models.km: lifelines' KaplanMeierFitter / AalenJohansenFitter numbers, without their pandas cost)
        from acmemodel.models.km import aalen_johansen, kaplan_meier

        km: dict[str, dict] = {}
        levels = [("cluster", "type", "gpu_bucket"), ("cluster", "type"), ("type",), ()]
        for keys, label, g in self._curve_cells(frame, levels):
            tl, s, lo, hi, _ = kaplan_meier(g["T"].to_numpy(), g["E"].to_numpy())
            km[label] = {
                "n": int(len(g)), "events": int(g["E"].sum()), "t_max": float(g["T"].max()),
                "s": np.round(_curve_on_grid(tl, s, 1.0), 6),
                "lo": np.round(_curve_on_grid(tl, lo, 1.0), 6),
                "hi": np.round(_curve_on_grid(tl, hi, 1.0), 6),
            }
        self.km_ = km
        cif: dict[str, dict] = {}
        # (cause "censored": still running at extraction, code 0 = censored for Aalen–Johansen)
        code = frame["cause"].map({c: i + 1 for i, c in enumerate(CAUSES)}).fillna(0).to_numpy(dtype=int)
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
                aj = aalen_johansen(T, C, i + 1, seed=self.random_state)
                lo, hi = aj_confidence_band(aj)
                entry[cause] = {
                    "F": np.round(_curve_on_grid(aj.t, aj.F, 0.0), 6),
                    "lo": np.round(_curve_on_grid(aj.t, lo, 0.0), 6),
                    "hi": np.round(_curve_on_grid(aj.t, hi, 0.0), 6),
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
            inner = type(self)(**{**self.get_params(), "compare": False})
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

    # ------------------------------------------------------------------ Kaplan–Meier access
    def _check_curves(self) -> None:
        if self.km_ is None:
            raise ValueError("the Kaplan–Meier and cumulative-incidence curves were not fitted: fit "
                             "FailureModel(curves=True) (acmemodel evaluate failure does)")

    def km_curve(self, t, **key):
        """Kaplan–Meier survival at ``t`` (s) of the finest fitted cell for ``key``.

        ``key``: ``cluster``, ``type``, ``gpus`` or ``gpu_bucket``; back-off order: GPU bucket,
        cluster, type. Returns ``(S, lower, upper, cell_label)``.
        """
        self._check_fitted()
        key = normalize_key(self.gpu_edges, **key)
        if "state" in key:
            raise ValueError("the failure model's cells have no state key")
        self._check_curve_key(key)  # (an unknown value is an error before a missing curve)
        self._check_curves()
        for level, cell in backoff_chain(key, ("cluster", "type", "gpu_bucket"), ("gpu_bucket", "cluster")):
            label = self._cell_label(cell._asdict())
            if label in self.km_:
                self._warn_curve_backoff(level, key, cell, "Kaplan–Meier")
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
        self._check_curve_key(key)
        self._check_curves()
        for level, cell in backoff_chain(key, ("cluster", "type"), ("cluster",)):
            label = self._cell_label(cell._asdict())
            if label in self.cif_:
                self._warn_curve_backoff(level, key, cell, "cumulative incidence")
                e = self.cif_[label]
                keep = CURVE_GRID_S <= max(e["t_max"], CURVE_GRID_S[0])
                parts = [pd.DataFrame({"t_s": CURVE_GRID_S, "cause": c, "cif": e[c]["F"],
                                       "lower": e[c]["lo"], "upper": e[c]["hi"]})[keep] for c in CAUSES]
                out = pd.concat(parts, ignore_index=True)
                out["cell"] = label
                return out
        raise ValueError(f"no cumulative-incidence cell for {key}")  # pragma: no cover
