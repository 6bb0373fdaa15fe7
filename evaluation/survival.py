"""Survival metrics and the failure / restart backtests on a time-ordered holdout.

Metrics (``T`` observed times in seconds, ``E`` event indicators, ``S`` predicted survival matrix,
rows = jobs, columns = ``times``):

* **Concordance** (Harrell's C, lifelines ``concordance_index``): the fraction of comparable pairs
  ordered correctly by a risk score; the score is the restricted mean survival time
  ``RMST_i = ∫₀^τ S_i(t) dt`` with τ the 90th percentile of the held-out observed times (adequate
  follow-up), defined for every model, proportional hazards or not. For a mixture the survival curves
  cross, so the ranking depends on τ; a τ far beyond follow-up would rank by extrapolated tails.
* **IPCW Brier score** (Graf et al. 1999) at time t::

      BS(t) = 1/n Σ_i [ S_i(t)² · 1{T_i ≤ t, E_i} / G(T_i−) + (1 − S_i(t))² · 1{T_i > t} / G(t) ]

  with G the Kaplan–Meier estimate of the *censoring* survival (censoring = completion or
  cancellation here; assumed independent of failure given nothing — an approximation, since
  completions are not independent of a job's fate). The **integrated Brier score** is
  ``∫ BS(t) dt / (t_max − t_min)`` (trapezoid) over a grid from 1 min to the 90th percentile of the
  observed times (so G stays away from 0); weights ``1/G`` are capped at ``1/g_min``.
* **Calibration** at 1 h, 6 h, 24 h: mean predicted survival vs the Kaplan–Meier estimate of the
  held-out jobs (with its 95 % band).

Backtests return tidy rows ``{model, metric, cell, value}``; ``cell`` is ``"all"``, ``"type=X"``,
``"cluster=X"`` (failure) or the restart component (``gap`` / ``queue`` / ``total``).

**The model card** (``rows.attrs["card"]`` of :func:`failure_backtest`; :mod:`acmemodel.evaluation.card`):
every failure model against the baselines a reliability engineer would use without it, fitted on the
same training jobs with no covariates — ``km_training`` (the Kaplan–Meier curve of all training jobs),
``weibull_one_law`` and ``exponential_one_law`` (one Weibull / exponential time to failure, lifelines,
censored at completion or cancellation) — on the held-out jobs, paired per job: ``ibs`` (each job's
share of the IPCW integrated Brier score, :func:`brier_terms`: the mean of the shares is the IBS; lower
is better; every model) and ``loglik`` (the survival log-likelihood per job — log density in 1/s of a
failure, log survival of a censored run; the parametric models). :func:`restart_backtest` puts the
coverage of the restart models' central intervals in ``rows.attrs["intervals"]`` (per component;
calibrated: within 0.05 of the level).
"""
from __future__ import annotations

import warnings
from typing import Iterable, Sequence

import numpy as np
import pandas as pd

from acmemodel.evaluation.split import time_split

HORIZONS_S: tuple[float, ...] = (3600.0, 6 * 3600.0, 24 * 3600.0)
FAILURE_MODELS: tuple[str, ...] = ("two_regime", "weibull_aft", "lognormal_aft", "loglogistic_aft",
                                   "cox_ph", "km")


# ============================================================================ metrics
def concordance(T, E, score) -> float:
    """Harrell's C of ``score`` (higher = longer expected survival) on (T, E); NaN if undefined."""
    from lifelines.utils import concordance_index

    T, E, score = np.asarray(T, float), np.asarray(E, bool), np.asarray(score, float)
    if E.sum() == 0 or len(T) < 2:
        return float("nan")
    try:
        return float(concordance_index(T, score, E))
    except ZeroDivisionError:
        return float("nan")


def censoring_survival(T, E):
    """Kaplan–Meier survival of the censoring times, as a function ``G(t, left=False)``.

    ``left=True`` gives the left limit ``G(t−)``.
    """
    T, E = np.asarray(T, float), np.asarray(E, bool)
    order = np.argsort(T, kind="mergesort")
    t_sorted, c_sorted = T[order], (~E)[order]
    uniq, first = np.unique(t_sorted, return_index=True)
    n_at_risk = len(T) - first
    cens = np.add.reduceat(c_sorted.astype(float), first)
    surv = np.cumprod(1.0 - cens / n_at_risk)

    def G(t, left: bool = False):
        t = np.asarray(t, float)
        idx = np.searchsorted(uniq, t, side="left" if left else "right") - 1
        return np.where(idx >= 0, surv[np.maximum(idx, 0)], 1.0)

    return G


def brier_scores(T, E, S: np.ndarray, times, *, G=None, g_min: float = 0.02) -> np.ndarray:
    """IPCW Brier score at each of ``times`` (module docstring). ``G`` defaults to the censoring KM of
    (T, E)."""
    return np.mean(brier_terms(T, E, S, times, G=G, g_min=g_min), axis=0)


def brier_terms(T, E, S: np.ndarray, times, *, G=None, g_min: float = 0.02) -> np.ndarray:
    """Each job's IPCW Brier term at each of ``times`` (jobs × times; their mean over jobs is
    :func:`brier_scores`): ``S_i(t)² · 1{T_i ≤ t, E_i} / G(T_i−) + (1 − S_i(t))² · 1{T_i > t} / G(t)``."""
    T, E = np.asarray(T, float), np.asarray(E, bool)
    S = np.asarray(S, float)
    times = np.asarray(times, float)
    if S.shape != (len(T), len(times)):
        raise ValueError(f"S must have shape (len(T), len(times)) = {(len(T), len(times))}, got {S.shape}")
    G = G or censoring_survival(T, E)
    g_T = np.maximum(G(T, left=True), g_min)
    g_t = np.maximum(G(times), g_min)
    died = (T[:, None] <= times[None, :]) & E[:, None]
    alive = T[:, None] > times[None, :]
    return S ** 2 * died / g_T[:, None] + (1 - S) ** 2 * alive / g_t[None, :]


def integrated_brier_score(T, E, S: np.ndarray, times, **kw) -> float:
    """``∫ BS(t) dt / (t_max − t_min)`` by the trapezoid rule over ``times``."""
    times = np.asarray(times, float)
    bs = brier_scores(T, E, S, times, **kw)
    if len(times) < 2:
        return float(bs[0])
    return float(np.trapezoid(bs, times) / (times[-1] - times[0]))


def eval_grid(T, n: int = 40) -> np.ndarray:
    """Brier-score grid: log-spaced from 60 s to the 90th percentile of the observed times."""
    hi = max(float(np.quantile(np.asarray(T, float), 0.9)), 120.0)
    return np.geomspace(60.0, hi, n)


def km_at(T, E, horizons) -> pd.DataFrame:
    """Kaplan–Meier survival of (T, E) at ``horizons`` with its 95 % band (lifelines'
    ``KaplanMeierFitter`` numbers, by :func:`acmemodel.models.km.kaplan_meier`): the step function's
    value at the last event-table time ≤ each horizon."""
    from acmemodel.models.km import kaplan_meier

    t, S, lo_t, hi_t, _ = kaplan_meier(np.asarray(T, float), np.asarray(E, bool))
    h = np.asarray(horizons, float)
    idx = np.searchsorted(t, h, side="right") - 1
    at = np.maximum(idx, 0)
    s = np.where(idx >= 0, S[at], np.nan)
    lo = np.where(idx >= 0, lo_t[at], 1.0)
    hi = np.where(idx >= 0, hi_t[at], 1.0)
    return pd.DataFrame({"horizon_s": h, "observed": s, "lower": lo, "upper": hi})


def survival_metrics(T, E, S_fn, *, horizons: Sequence[float] = HORIZONS_S,
                     loglik: np.ndarray | None = None) -> dict[str, float]:
    """All failure metrics of one model on one cell. ``S_fn(times)`` → survival matrix."""
    from acmemodel.models.failure_curves import rmst, rmst_grid

    T, E = np.asarray(T, float), np.asarray(E, bool)
    grid = eval_grid(T)
    rgrid = rmst_grid(T)
    h = np.asarray(horizons, float)
    allt = np.concatenate([grid, rgrid, h])
    S = S_fn(allt)
    Sg, Sr, Sh = S[:, :len(grid)], S[:, len(grid):len(grid) + len(rgrid)], S[:, len(grid) + len(rgrid):]
    out = {"n": float(len(T)), "events": float(E.sum()),
           "c_index": concordance(T, E, rmst(Sr, rgrid)),
           "ibs": integrated_brier_score(T, E, Sg, grid)}
    if loglik is not None:
        out["heldout_loglik_per_job"] = float(np.mean(loglik))
    obs = km_at(T, E, h)
    for j, hv in enumerate(h):
        tag = _hlabel(hv)
        out[f"calib_pred_{tag}"] = float(Sh[:, j].mean())
        out[f"calib_obs_{tag}"] = float(obs["observed"].iloc[j])
        out[f"calib_obs_lower_{tag}"] = float(obs["lower"].iloc[j])
        out[f"calib_obs_upper_{tag}"] = float(obs["upper"].iloc[j])
    return out


def _hlabel(h: float) -> str:
    return f"{int(h // 3600)}h" if h % 3600 == 0 else f"{int(h)}s"


# ============================================================================ backtests
def failure_backtest(jobs, *, test_fraction: float | None = None, cutoff=None,
                     models: Iterable[str] = FAILURE_MODELS, min_cell_jobs: int = 50,
                     model_params: dict | None = None, return_model: bool = False):
    """Fit :class:`~acmemodel.models.failure.FailureModel` on the earlier part of ``jobs`` (time split)
    and score every model on the later part. Returns tidy rows ``{model, metric, cell, value}`` (and
    the fitted model when ``return_model``).

    Cells: ``all``, each ``type=…`` and ``cluster=…`` with at least ``min_cell_jobs`` held-out jobs
    and one failure. Held-out jobs of a type or cluster unseen in training are left out and counted
    (metric ``n_unseen_left_out``). Model-level rows: ``alpha``, ``alpha_lower``, ``alpha_upper``,
    ``shape``, ``mttf_1024_h`` and ``mttf_16384_h`` (late regime, with interval rows).
    """
    from acmemodel.models.failure import FailureModel, survival_frame

    if hasattr(jobs, "jobs"):
        jobs = jobs.jobs
    models = list(models)
    bad = set(models) - set(FAILURE_MODELS)
    if bad:
        raise ValueError(f"models: unknown {sorted(bad)}; choose from {FAILURE_MODELS}")
    train, test = time_split(jobs, test_fraction=test_fraction if cutoff is None else None, cutoff=cutoff)
    params = {"compare": any(m not in ("two_regime", "km") for m in models), "curves": "km" in models,
              **(model_params or {})}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fm = FailureModel(**params).fit(train)
    fr = survival_frame(test, t_floor_s=fm.t_floor_s, gpu_edges=fm.gpu_edges)
    known = fr["cluster"].isin(fm.design_.clusters) & fr["type"].isin(list(fm.design_.type_map))
    rows = [{"model": "all", "metric": "n_unseen_left_out", "cell": "all", "value": float((~known).sum())},
            {"model": "all", "metric": "n_train_jobs", "cell": "all", "value": float(fm.n_fit_)}]
    fr = fr[known]
    if len(fr) == 0 or fr["E"].sum() == 0:
        raise ValueError("failure backtest: the held-out part has no failures of known types")
    cells = [("all", np.ones(len(fr), bool))]
    for col in ("type", "cluster"):
        for v, g in fr.groupby(col):
            if len(g) >= min_cell_jobs and g["E"].sum() > 0:
                cells.append((f"{col}={v}", (fr[col] == v).to_numpy()))
    for name in models:
        if name in fm.lifelines_ or name in ("two_regime", "km"):
            ll_all = None
            if name not in ("cox_ph", "km"):
                ll_all = fm.loglik(fr, model=name)
            for cell, mask in cells:
                sub = fr[mask]

                def S_fn(t, sub=sub, name=name):
                    return fm.predict_survival(sub, t, model=name)

                met = survival_metrics(sub["T"], sub["E"], S_fn,
                                       loglik=None if ll_all is None else ll_all[mask])
                rows += [{"model": name, "metric": k, "cell": cell, "value": v} for k, v in met.items()]
    # model-level quantities of the two-regime model fitted on the training part
    rows += [{"model": "two_regime", "metric": k, "cell": "all", "value": float(v)} for k, v in (
        ("alpha", fm.alpha_), ("alpha_lower", fm.alpha_ci_[0]), ("alpha_upper", fm.alpha_ci_[1]),
        ("shape", fm.shape_), ("shape_lower", fm.shape_ci_[0]), ("shape_upper", fm.shape_ci_[1]))]
    curve = fm.mttf_curve([1024, 16384])
    for _, r in curve.iterrows():
        g = int(r["gpus"])
        rows += [{"model": "two_regime", "metric": f"mttf_{g}_h{suffix}", "cell": "all",
                  "value": float(r[col] / 3600.0)}
                 for suffix, col in (("", "mttf_s"), ("_lower", "lower_s"), ("_upper", "upper_s"))]
    out = pd.DataFrame(rows, columns=["model", "metric", "cell", "value"])
    tr = survival_frame(train, t_floor_s=fm.t_floor_s, gpu_edges=fm.gpu_edges)
    out.attrs["card"] = failure_card(fm, fr, tr, [m for m in models if m in fm.lifelines_ or m in ("two_regime", "km")])
    return (out, fm) if return_model else out


#: the failure card's baselines (module docstring) and the models' table titles
ONE_LAW = ("km_training", "weibull_one_law", "exponential_one_law")
TITLES = {"two_regime": "FailureModel (two regimes, covariates)", "weibull_aft": "Weibull AFT (covariates)",
          "lognormal_aft": "log-normal AFT (covariates)", "loglogistic_aft": "log-logistic AFT (covariates)",
          "cox_ph": "Cox PH (covariates)", "km": "Kaplan–Meier per cell"}


def failure_card(fm, test: pd.DataFrame, train: pd.DataFrame, models: Sequence[str]) -> dict[str, list]:
    """The failure card (module docstring): each of ``models`` (fitted in ``fm``) against the one-law
    baselines fitted on the survival frame ``train``, paired on the held-out survival frame ``test``."""
    from lifelines import ExponentialFitter, KaplanMeierFitter, WeibullFitter

    from acmemodel.evaluation.card import comparison

    T, E = test["T"].to_numpy(float), test["E"].to_numpy(bool)
    Tt, Et = train["T"].to_numpy(float), train["E"].to_numpy(bool)
    grid = eval_grid(T)
    G = censoring_survival(T, E)

    def ibs_shares(S):
        return np.trapezoid(brier_terms(T, E, S, grid, G=G), grid, axis=1) / (grid[-1] - grid[0])
    ibs, ll = {}, {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        km = KaplanMeierFitter().fit(Tt, Et)
        ibs["km_training"] = ibs_shares(np.broadcast_to(km.survival_function_at_times(grid).to_numpy(float),
                                                        (len(T), len(grid))))
        if Et.any():
            for name, fitter in (("weibull_one_law", WeibullFitter()), ("exponential_one_law", ExponentialFitter())):
                f = fitter.fit(Tt, Et)
                ibs[name] = ibs_shares(np.broadcast_to(f.survival_function_at_times(grid).to_numpy(float),
                                                       (len(T), len(grid))))
                ll[name] = (np.where(E, np.log(np.maximum(f.hazard_at_times(T).to_numpy(float), 1e-300)), 0.0)
                            + np.log(np.maximum(f.survival_function_at_times(T).to_numpy(float), 1e-300)))
        for name in models:
            ibs[name] = ibs_shares(fm.predict_survival(test, grid, model=name))
            if name not in ("cox_ph", "km"):
                ll[name] = fm.loglik(test, model=name)
    comps = []
    for name in models:
        for base in ONE_LAW:
            if base in ibs:
                comps.append(comparison(TITLES.get(name, name), name, base, "ibs", ibs[name], ibs[base], False))
        for base in ONE_LAW[1:]:
            if name in ll and base in ll:
                comps.append(comparison(TITLES.get(name, name), name, base, "loglik", ll[name], ll[base], True))
    return {"comparisons": comps, "intervals": []}


def restart_backtest(jobs, timezones: dict | None = None, *, test_fraction: float | None = None,
                     cutoff=None, level: float = 0.8, model_params: dict | None = None,
                     return_model: bool = False):
    """Fit :class:`~acmemodel.models.restart.RestartModel` on restarted failures submitted before the
    split and score on those after it. Rows ``{model, metric, cell, value}`` with models
    ``restart_glm``, ``restart_lgbm`` (if fitted), ``restart_prior`` and cells ``gap`` / ``queue`` /
    ``total`` (prior: total only). Metrics: ``mae_log`` (mean |log median − log observed|, natural
    log of seconds, targets floored at ``clip_s``), ``coverage`` of the central ``level`` interval,
    ``median_pred_s`` / ``median_obs_s`` and ``n``. With too few training chains the model falls back to
    the prior (row ``fallback`` = 1).
    """
    from acmemodel.features.chains import restart_chains
    from acmemodel.models.restart import COMPONENTS, RestartModel

    if hasattr(jobs, "jobs") and hasattr(jobs, "timezones"):
        timezones = {**jobs.timezones, **(timezones or {})}
        jobs = jobs.jobs
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level!r}")
    if not {"next_restart_gap_s", "next_queue_s", "attempt"} <= set(jobs.columns):
        jobs = jobs.join(restart_chains(jobs)[["attempt", "next_restart_gap_s", "next_queue_s"]])
    train, test = time_split(jobs, test_fraction=test_fraction if cutoff is None else None, cutoff=cutoff)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rm = RestartModel(**(model_params or {})).fit(train, timezones=timezones)
    fr = RestartModel.restart_frame(test, timezones=timezones)
    rows = [{"model": "restart", "metric": "n_train_chains", "cell": "all", "value": float(rm.n_chains_)},
            {"model": "restart", "metric": "fallback", "cell": "all", "value": float(rm.fallback_)}]
    if len(fr) == 0:
        warnings.warn("restart backtest: no restarted failures in the held-out part", stacklevel=2)
        return (pd.DataFrame(rows), rm) if return_model else pd.DataFrame(rows)
    from acmemodel.evaluation.card import coverage_verdict

    methods = ["prior"] if rm.fallback_ else ["glm"] + (["lgbm"] if rm._boosters else []) + ["prior"]
    intervals: list[dict] = []
    for method in methods:
        for comp in COMPONENTS:
            if method == "prior" and comp != "total":
                continue
            y = np.maximum(fr[f"{comp}_s"].to_numpy(float), rm.clip_s)
            d = rm.predict(fr, component=comp, method=method)
            med = d.median()
            lo, hi = d.interval(level)
            inside = ((y >= lo) & (y <= hi)).astype(float)
            intervals.append({"model": f"restart_{method}", "interval": f"{level:.0%} {comp}",
                              **coverage_verdict(inside, nominal=level, band=(level - 0.05, level + 0.05))})
            met = {"n": float(len(y)), "mae_log": float(np.mean(np.abs(np.log(med) - np.log(y)))),
                   "coverage": float(np.mean(inside)),
                   "median_pred_s": float(np.median(med)), "median_obs_s": float(np.median(y))}
            rows += [{"model": f"restart_{method}", "metric": k, "cell": comp, "value": v}
                     for k, v in met.items()]
    out = pd.DataFrame(rows, columns=["model", "metric", "cell", "value"])
    out.attrs["intervals"] = intervals
    return (out, rm) if return_model else out


def pivot(rows: pd.DataFrame, cell: str = "all", metrics: Sequence[str] | None = None) -> pd.DataFrame:
    """Wide view (models × metrics) of one cell of backtest rows."""
    sub = rows[rows["cell"] == cell]
    wide = sub.pivot_table(index="model", columns="metric", values="value", aggfunc="first")
    if metrics is not None:
        wide = wide.reindex(columns=[m for m in metrics if m in wide.columns])
    return wide
