"""Time to failure of GPU jobs: censoring-aware survival models (:class:`FailureModel`).

The model is split over four modules: this one (the class: parameters, fit, predictions on job
frames, reports, serialisation), :mod:`.failure_queries` (the key-level queries: MTTF, survival,
hazard, hazard table, sampling, identifiability), :mod:`.failure_mle` (survival view of the jobs,
design, mixture likelihood and its MLE) and :mod:`.failure_curves` (Kaplan–Meier, cumulative
incidence, lifelines baselines, RMST).

Data
----
One row per *started GPU job* (``is_gpu`` and ``started``; CPU jobs and jobs that never ran are left
out and counted in ``n_excluded_``). Time axis: run time ``run_s`` in seconds. Event: the job ended in
failure (``analysis_state == "FAILED"``, i.e. FAILED, TIMEOUT, NODE_FAIL); for Kalos rows with a
``fail_time_s`` the event time is that instead. COMPLETED and CANCELLED jobs are **right-censored** at
their ``run_s`` — kept, never events; so are jobs still running when the trace was extracted
(``run_censored``, analysis state RUNNING: censored at the extraction time, cause ``censored``). Times are floored at ``t_floor_s`` (1 s) for the log scale.

Left truncation (``left_truncated``: the run began before the trace did). With a known start the run
entered observation at age ``a = entry_age_s``: a **delayed entry**, whose likelihood term is
``f(T)/S(a)`` (event) or ``S(T)/S(a)`` (censored) — the two-regime MLE subtracts ``log S(a)``
(:attr:`_Mixture.entry`, as lifelines' ``entry``); the Kaplan–Meier / cumulative-incidence curves and
the lifelines comparisons leave these rows out. With an unknown start (e.g. an instance list whose
pre-existing rows have no creation or scheduled time) the run cannot be placed on the run-time axis:
left out, counted in ``n_left_truncated_excluded_`` (and in ``n_excluded_``); ``n_delayed_entry_``
counts the delayed-entry rows of the MLE.

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
survival) with a weak normal prior N(0, ``ridge_sd``² = 10²) on the cluster/type dummy coefficients,
so a level without failures cannot drift to ±∞, and N(0, 1) on log k, so a late regime with few
events cannot collapse to a spike (a parameter left at a bound gets an unbounded interval); the covariance is the inverse of the observed
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

Non-parametric and comparison models (fitted on request: ``curves=True`` / ``compare=True``)
---------------------------------------------------------------------------------------------
They serve the evaluation (``acmemodel evaluate failure``) and the plots, not the planner or the
synthesiser, so a default fit leaves them out (``km_`` / ``cif_`` / ``comparison_`` are then ``None``):
on 300k jobs they took 17× the time of the two-regime fit itself.

* Kaplan–Meier per cell (cluster × type × GPU bucket, then backing off to cluster × type, type, all)
  with Greenwood/log-log 95 % bands (lifelines' ``KaplanMeierFitter`` numbers, computed by
  :mod:`acmemodel.models.km`), stored on a fixed log grid.
* Competing risks failure / cancellation / completion: Aalen–Johansen cumulative incidence per
  cluster × type, per type and overall (lifelines' ``AalenJohansenFitter`` numbers, by
  :mod:`acmemodel.models.km`; ≤ ``aj_max_rows`` jobs per group, subsampled, because lifelines
  breaks ties by jitter).
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
from scipy import special, stats

from acmemodel.errors import DataWarning
from acmemodel.features.keys import DEFAULT_GPU_EDGES
from acmemodel.models.base import BaseModel, register, unjson_float
from acmemodel.models.blas import single_thread_blas

from acmemodel.models.failure_curves import (
    CAUSES, COMPARISON_MODELS, FailureCurvesMixin, _aft_design, _lifelines_loglik, _lifelines_survival,
)
from acmemodel.models.failure_laws import LATE_FAMILIES, late_regime
from acmemodel.models.failure_mle import (
    CURVE_GRID_S, TwoRegimeFitMixin, _check_component, _Design, _Mixture, left_truncated_unknown_age, survival_frame,
)
from acmemodel.models.failure_queries import IDENTIFIABILITY_SIZES, FailureQueriesMixin, failure_support


#: the late families in words
_FAMILY_TEXT = {"weibull": "Weibull", "lognormal": "log-normal", "loglogistic": "log-logistic"}


@register
class FailureModel(FailureQueriesMixin, TwoRegimeFitMixin, FailureCurvesMixin, BaseModel):
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
    curves : fit the Kaplan–Meier and Aalen–Johansen curves (``km_``, ``cif_``; default False).
    compare : fit the curves, the lifelines AFT/Cox models and the held-out comparison (default False;
        ``acmemodel evaluate failure`` asks for them).
    holdout_fraction : last fraction of submissions used as the inner holdout of the comparison.
    early_median_max_s : upper bound of the early component's median time to failure (s).
    t_floor_s : floor of event/censoring times (s).
    ridge_sd : sd of a normal prior on the cluster/type dummy coefficients (``None`` = plain MLE).
    gpu_edges : GPU bucket edges of the Kaplan–Meier cells.
    min_gpus : the model's domain: jobs with fewer GPUs are left out of the fit (counted in
        ``n_excluded_``); the default bundle uses 64 (only large jobs' failures carry size
        information in its pseudo-trace) and :mod:`acmemodel.joblife` draws failures from this
        model for jobs of at least ``min_gpus_`` GPUs only.
    random_state : seed of subsampling and lifelines' tie jitter.
    late_family : the late regime's law (:data:`~acmemodel.models.failure_laws.LATE_FAMILIES`):
        ``"weibull"`` (default; proportional hazards, rate ∝ g^α), ``"lognormal"`` or ``"loglogistic"``
        (accelerated failure time, scale ∝ g^(−α/k)); ``k`` (``shape_``) is then ``1/σ`` of ``log T``.

    Planner interface (``bundle["failure"]``)
    -----------------------------------------
    * ``failure_law(gpus, kind="weibull"|"piecewise", **key)`` — the model's own failure process for a
      job of ``gpus`` GPUs as a duration :class:`~acmemodel.models.family.Family`: the late regime
      (``late_law``: by default a ``Weibull(k = shape_, lam = mttf / Γ(1 + 1/k))``) or its hazard table as a
      :class:`~acmemodel.models.failure_laws.PiecewiseHazardLaw`; the planner assumes no family (another
      model may hand over a log-normal, log-logistic, ... law);
    * ``late_law(gpus, **key)``, ``early_law()`` — the two regimes as families (the late one of
      ``late_family``, the early log-normal);
    * ``mttf(gpus)`` — seconds, late regime; ``mttf_interval(gpus)`` → (lower, upper) s;
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
    ``n_events_``, ``failure_support_`` (longest observed failure, s, per "cluster/GPU bucket", "*/bucket"
    and "*/*": :meth:`failure_support_s`), ``n_excluded_``, ``max_gpus_`` / ``min_gpus_`` (largest / smallest job fitted on:
    the synthetic generator of :mod:`acmemodel.joblife` uses this model for jobs of at least
    ``min_gpus_`` GPUs).
    """

    def __init__(self, *, regimes: int = 2, g_ref: float = 8.0, t_ref: float = 3600.0,
                 early_covariates: Sequence[str] = ("cluster", "type", "log_gpus"),
                 late_covariates: Sequence[str] = (),
                 min_level_jobs: int = 30, max_fit_rows: int = 300_000, aft_max_rows: int = 10_000,
                 aj_max_rows: int = 20_000, km_min_jobs: int = 20, curves: bool = False, compare: bool = False,
                 holdout_fraction: float = 0.2, early_median_max_s: float = 7200.0,
                 t_floor_s: float = 1.0, ridge_sd: float | None = 10.0,
                 gpu_edges: Sequence[int] = DEFAULT_GPU_EDGES, random_state: int | None = 0,
                 min_gpus: float = 1.0, late_family: str = "weibull"):
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
        self.curves = curves
        self.compare = compare
        self.holdout_fraction = holdout_fraction
        self.early_median_max_s = early_median_max_s
        self.t_floor_s = t_floor_s
        self.ridge_sd = ridge_sd
        self.gpu_edges = gpu_edges
        self.random_state = random_state
        self.min_gpus = min_gpus
        self.late_family = late_family

    # ------------------------------------------------------------------ validation
    def _validate(self) -> None:
        if self.regimes not in (1, 2):
            raise ValueError(f"regimes must be 1 or 2, got {self.regimes!r}")
        if self.late_family not in LATE_FAMILIES:
            raise ValueError(f"late_family must be one of {', '.join(LATE_FAMILIES)}, got {self.late_family!r}")
        for name in ("g_ref", "t_ref", "early_median_max_s", "t_floor_s", "min_gpus"):
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
    def fit(self, trace_or_jobs, *, timezones=None) -> "FailureModel":
        """Fit every component on a jobs table (or a Trace). Returns ``self``.

        ``timezones`` is accepted for the one signature ``fit(trace_or_jobs, *, timezones=None)``
        of every model; the failure model has no calendar covariate and does not use it.

        BLAS is limited to one thread during the fit: the matrices are thin, and on a shared machine
        multi-threaded BLAS made the MLE about 5× slower.
        """
        with single_thread_blas():
            return self._fit(trace_or_jobs)

    def _fit(self, jobs) -> "FailureModel":
        self._validate()
        if hasattr(jobs, "jobs"):
            jobs = jobs.jobs
        frame = survival_frame(jobs, t_floor_s=self.t_floor_s, gpu_edges=self.gpu_edges)
        frame = frame[frame["gpus"].to_numpy(float) >= float(self.min_gpus)]
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
        # (of them: runs begun before the trace at an unknown time, see survival_frame)
        self.n_left_truncated_excluded_ = int(left_truncated_unknown_age(jobs).sum())
        self.n_events_ = n_ev
        ev_g = frame["gpus"].to_numpy(float)[frame["E"].to_numpy(bool)]
        self.events_by_gpus_ = {int(t): int((ev_g >= t).sum()) for t in IDENTIFIABILITY_SIZES}
        self.failure_support_ = failure_support(frame)
        self.max_gpus_ = float(frame["gpus"].max())
        self.min_gpus_ = float(self.min_gpus)
        self.design_ = _Design.build(frame, self.min_level_jobs)
        combo = frame.assign(type=[self.design_.type_map[t] for t in frame["type"]])
        w = combo.groupby(["cluster", "type"]).size()
        self.combos_ = [(c, t, float(n) / len(frame)) for (c, t), n in w.items()]

        fit_rows = frame if len(frame) <= self.max_fit_rows else frame.iloc[
            np.sort(rng.choice(len(frame), self.max_fit_rows, replace=False))]
        self._fit_mixture(fit_rows)
        self.n_fit_ = int(len(frame))
        self.n_mixture_rows_ = int(len(fit_rows))
        self.km_ = self.cif_ = None
        if self.curves or self.compare:
            # the non-parametric curves and the lifelines comparisons: rows observed from the run's start
            # only (delayed-entry rows are used by the two-regime MLE above)
            frame = frame[frame["entry"].to_numpy(float) == 0] if "entry" in frame.columns else frame
            self._fit_curves(frame, rng)
        self.comparison_ = None
        self.selected_ = "two_regime"
        self.lifelines_ = {}
        self.aft_alpha_ = self.aft_shape_ = float("nan")
        self.aft_alpha_ci_ = (float("nan"), float("nan"))
        if self.compare:
            self._fit_comparison(frame, rng)
        return self

    # ------------------------------------------------------------------ predictions on frames
    def _loglik_frame(self, fr: pd.DataFrame) -> np.ndarray:
        y = np.log(fr["T"].to_numpy(float) / self.t_ref)
        Z, X = self._matrices(fr["cluster"].to_numpy(object), fr["type"].to_numpy(object),
                              fr["gpus"].to_numpy(float))
        ll = self._mix.loglik_rows(self.params_, y, fr["E"].to_numpy(bool), Z, X)
        if "entry" in fr.columns and (fr["entry"].to_numpy(float) > 0).any():  # delayed entry: − log S(a)
            a = fr["entry"].to_numpy(float)
            ent = a > 0
            ya = np.log(a[ent] / self.t_ref)
            ll[ent] -= self._mix.loglik_rows(self.params_, ya, np.zeros(len(ya), bool),
                                             None if Z is None else Z[ent], X[ent])
        return ll

    def _surv_dens(self, th, times, Z, X, component):
        """(S, f) arrays (rows × times) for design rows Z, X."""
        mix = self._mix
        t = np.asarray(times, float)
        y = np.log(np.maximum(t, 1e-9) / self.t_ref)[None, :]
        gam, mu, ls, lk, d = mix.unpack(th)
        k = math.exp(lk)
        S_L, f_L = mix.late.surv_dens(k, y, (X @ d)[:, None], t[None, :])
        if component == "late" or self.regimes == 1:
            return S_L, f_L
        s = math.exp(ls)
        z = (y - mu) / s
        S_E = special.ndtr(-z)
        f_E = stats.norm.pdf(z) / (s * t[None, :])
        if component == "early":  # (the same for every row: one per row, as the other components)
            shape = (X.shape[0], t.size)
            return np.broadcast_to(S_E, shape), np.broadcast_to(f_E, shape)
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
                   (f"shape k (late {self._late_label()})", self.shape_, np.nan, *self.shape_ci_),
                   (f"scale_s at g_ref (late {_FAMILY_TEXT[self.late_family]}, reference covariates)",
                    self.scale_s_, np.nan,
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

    def _late_label(self) -> str:
        return ("Weibull; <1 infant mortality" if self.late_family == "weibull"
                else f"{_FAMILY_TEXT[self.late_family]}: 1/sd of log T")

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
        """Plain-language hazard shape of the late regime: for the Weibull from the interval of ``shape_``;
        a log-normal or log-logistic late regime's hazard rises, then falls."""
        self._check_fitted()
        if self.late_family != "weibull":
            return (f"hazard rises then falls ({_FAMILY_TEXT[self.late_family]} late regime, shape {self.shape_:.2f}): "
                    "long-running jobs become ever less likely to fail")
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

        from acmemodel.plotting import duration_axis

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
            self._check_curves()
            types = [lbl.split("=", 1)[1] for lbl in self.km_ if lbl.startswith("type=")]
            for ty in types:
                tab = self.km_table(type=ty, **key)
                ax.step(tab["t_s"], tab["survival"], where="post", label=f"{ty} (n={self.km_[tab['cell'][0]]['n']})")
                ax.fill_between(tab["t_s"], tab["lower"], tab["upper"], step="post", alpha=0.2)
            duration_axis(ax, label="run time")
            ax.set_ylabel("P(no failure)")
        elif kind == "cif":
            tab = self.cif_table(**key)
            for cause, g in tab.groupby("cause", sort=False):
                ax.step(g["t_s"], g["cif"], where="post", label=cause)
                ax.fill_between(g["t_s"], g["lower"], g["upper"], step="post", alpha=0.2)
            duration_axis(ax, label="run time")
            ax.set_ylabel("cumulative incidence")
        else:
            raise ValueError(f"kind must be 'mttf', 'km' or 'cif', got {kind!r}")
        ax.legend(fontsize="small")
        return ax

    # ------------------------------------------------------------------ serialisation
    def _fitted_to_dict(self) -> dict[str, Any]:
        return {
            "n_fit": self.n_fit_, "n_events": self.n_events_, "n_excluded": self.n_excluded_,
            "events_by_gpus": {str(k): v for k, v in self.events_by_gpus_.items()},
            "failure_support": dict(getattr(self, "failure_support_", {}) or {}),
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
        self.events_by_gpus_ = {int(k): int(v) for k, v in (d.get("events_by_gpus") or {}).items()}
        self.failure_support_ = {str(k): float(v) for k, v in (d.get("failure_support") or {}).items()}
        self.n_mixture_rows_ = int(d["n_mixture_rows"])
        self.max_gpus_, self.loglik_ = unjson_float(d["max_gpus"]), unjson_float(d["loglik"])
        self.min_gpus_ = unjson_float(d.get("min_gpus", 1.0))
        self.design_ = _Design.from_dict(d["design"])
        self.combos_ = [(str(c), str(t), float(w)) for c, t, w in d["combos"]]
        m = d["mix"]
        self._mix = _Mixture(int(m["regimes"]), int(m["nz"]), int(m["nx"]), float(self.t_ref),
                             late_regime(self.late_family))
        self.params_ = np.asarray([unjson_float(v) for v in d["params"]], float)
        self.cov_ = np.asarray([[unjson_float(v) for v in row] for row in d["cov"]], float)
        self.at_bound_ = list(d["at_bound"])
        arr = lambda v: np.asarray(v, float)  # noqa: E731
        self.km_ = None if d["km"] is None else {
            k: {"n": v["n"], "events": v["events"], "t_max": float(v["t_max"]),
                "s": arr(v["s"]), "lo": arr(v["lo"]), "hi": arr(v["hi"])} for k, v in d["km"].items()}
        self.cif_ = None if d["cif"] is None else {
            k: {"n": v["n"], "n_used": v["n_used"], "t_max": float(v["t_max"]),
                **{c: {kk: arr(vv) for kk, vv in v[c].items()} for c in CAUSES}} for k, v in d["cif"].items()}
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
