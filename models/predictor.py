"""Per-job run-time prediction at submission: ``RuntimePredictor`` (LightGBM quantile regression).

Target: log run time ``y = ln(1 + run_s)`` of started GPU jobs. One gradient-boosted tree model per
quantile level (default p10, p50, p90) minimises the pinball loss
``ρ_α(y − q) = max(α·(y − q), (α − 1)·(y − q))`` (LightGBM ``objective="quantile"``);
predictions are mapped back to seconds with ``exp(q) − 1``.

Features — only what is known when the job is submitted:

* ``type``, ``cluster`` (categorical; levels stored with the model, unseen levels → missing);
* ``gpu_num``, ``node_num``;
* ``hour``, ``dow``, ``weekend`` (submission time in cluster local time,
  :func:`acmemodel.features.calendar.calendar_features`);
* ``user_prior_jobs``, ``user_prior_median_run_s``, ``user_prior_fail_frac`` (the user's history of
  the same cluster and type, strictly from jobs that ended before this submission,
  :func:`acmemodel.features.history.user_history`);
* with ``features="auto"`` (default), what an imported trace carries (:data:`SOURCE_FEATURES`):
  requested ``cpu_num`` and ``mem_per_pod_GB``, ``partition``/``qos``/``vc`` (categorical), the job
  name's first token ``name_token`` and its name template's history ``name_prior_jobs``,
  ``name_prior_median_run_s`` (:mod:`acmemodel.features.names`; same no-leakage rule).
  Jobs still running at extraction (``run_censored``) are not training targets.

Feature columns already present on the jobs frame are used as they are — so compute them on the
*whole* trace (``acmemodel.features.build_features``) before splitting, otherwise a test job loses
the history its user built in the training period; missing ones are computed from the frame given.

Non-crossing quantiles: the separately trained quantile models can cross; predictions are
**rearranged** (sorted per job, Chernozhukov, Fernández-Val & Galichon 2010), which never increases
the pinball loss of the set and guarantees ``p10 <= p50 <= p90``.

Calibrated interval (``conformal=0.2``, default): quantile boosting under-covers out of sample (its
p10–p90 interval typically holds ~70 % of new jobs, not 80 %). Conformalized quantile regression
(CQR, Romano, Patterson & Candès 2019) fixes that: the boosters are first trained on the earlier 80 %
of the training jobs (by submission time); on the latest 20 % the conformity scores
``E = max(p10 − y, y − p90)`` give an offset ``Q`` (their ⌈(n+1)·0.8⌉/n quantile); the boosters are
then retrained on all training jobs and the outer quantiles reported as ``p10 − Q`` and ``p90 + Q``
(log scale; ``Q`` may be negative). Calibrating on the *latest* jobs also absorbs some drift;
refitting on all jobs makes the finite-sample guarantee approximate. ``p50`` is not changed.

Saved models: the parameters and category levels go to JSON, each booster as LightGBM model text
(:meth:`RuntimePredictor.artifacts`); nothing is pickled.
"""
from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np
import pandas as pd

from acmemodel.models.base import BaseModel, register

__all__ = ["RuntimePredictor", "DEFAULT_FEATURES", "CATEGORICAL", "submission_features"]

CATEGORICAL = ("type", "cluster", "partition", "qos", "vc", "name_token")
DEFAULT_FEATURES = ("type", "cluster", "gpu_num", "node_num", "hour", "dow", "weekend",
                    "user_prior_jobs", "user_prior_median_run_s", "user_prior_fail_frac")
#: added by ``features="auto"`` when the trace carries them (imported traces): requested CPUs and
#: memory, the scheduler's partition / QoS / virtual cluster, the job name's first token and the
#: history of the job's name template (:mod:`acmemodel.features.names`)
SOURCE_FEATURES = ("cpu_num", "mem_per_pod_GB", "partition", "qos", "vc", "name_token",
                   "name_prior_jobs", "name_prior_median_run_s")
_CALENDAR = ("hour", "dow", "weekend")
_HISTORY = ("user_prior_jobs", "user_prior_median_run_s", "user_prior_fail_frac")
_NAME = ("name_token", "name_prior_jobs", "name_prior_median_run_s")
#: most frequent levels kept per categorical feature (the others read as missing)
MAX_LEVELS = 64


def _q_name(q: float) -> str:
    return f"p{round(q * 100):02d}"


def submission_features(jobs: pd.DataFrame, timezones: dict[str, str] | None = None,
                        features: Sequence[str] | str = "auto") -> pd.DataFrame:
    """``jobs`` with the submission-time feature columns present (computed where missing; a Trace's
    ``job_name``/``partition``/``qos``/``vc`` extras joined). ``features="auto"``: the defaults plus
    the job-name features when there is a ``job_name``."""
    from acmemodel.features.names import jobs_with_extras

    jobs = jobs_with_extras(jobs)
    if isinstance(features, str):
        features = DEFAULT_FEATURES + (_NAME if "job_name" in jobs.columns else ())
    need_cal = [c for c in _CALENDAR if c in features and c not in jobs.columns]
    need_hist = [c for c in _HISTORY if c in features and c not in jobs.columns]
    need_name = [c for c in _NAME if c in features and c not in jobs.columns and "job_name" in jobs.columns]
    if not need_cal and not need_hist and not need_name:
        return jobs
    out = jobs.copy()
    if need_name:
        from acmemodel.features.names import name_history, name_token

        if "name_token" in need_name:
            out["name_token"] = name_token(jobs["job_name"].to_numpy(object)).to_numpy(object)
        nh = name_history(jobs)
        for c in need_name:
            if c in nh.columns:
                out[c] = nh[c].to_numpy()
    if need_cal:
        from acmemodel.features.calendar import calendar_features

        cal = calendar_features(jobs, timezones)
        for c in need_cal:
            out[c] = cal[c]
    if need_hist:
        from acmemodel.features.history import user_history

        hist = user_history(jobs)
        for c in need_hist:
            out[c] = hist[c]
    return out


def _conformal_offset(lo: np.ndarray, hi: np.ndarray, y: np.ndarray, coverage: float) -> float:
    """Split-conformal (CQR) offset: the ⌈(n+1)·coverage⌉/n empirical quantile of the conformity
    scores ``E_i = max(lo_i − y_i, y_i − hi_i)``; ``[lo − Q, hi + Q]`` then covers a new exchangeable
    job with probability >= ``coverage`` (Romano, Patterson & Candès 2019)."""
    e = np.maximum(lo - y, y - hi)
    n = e.size
    if n == 0:
        raise ValueError("conformal calibration needs at least one job")
    # the k-th smallest score, k = ⌈(n+1)·coverage⌉ capped at n (np.quantile(..., k/n, "higher")
    # picks the (k+1)-th: one order statistic too wide)
    k = min(n, math.ceil((n + 1) * coverage))
    return float(np.partition(e, k - 1)[k - 1])


@register
class RuntimePredictor(BaseModel):
    """LightGBM quantile regression of log run time from submission-time features (module doc).

    Parameters (keyword-only)
    ----------
    quantiles : quantile levels, default ``(0.1, 0.5, 0.9)``; each in (0, 1).
    features : feature columns, or ``"auto"`` (default): :data:`DEFAULT_FEATURES` plus those of
        :data:`SOURCE_FEATURES` the training jobs carry (a column with some values, a categorical
        with at least two levels) — what imported Slurm/Kubernetes traces hold. The columns used
        are ``features_``.
    n_estimators, learning_rate, num_leaves, min_child_samples : LightGBM settings
        (defaults 200, 0.05, 31, 20).
    gpu_only : train on GPU jobs only (default True).
    conformal : share of the (latest) training jobs used to calibrate the outer interval by CQR
        (default 0.2; ``None`` = raw LightGBM quantiles).
    n_jobs : LightGBM threads (default 1: the machine is shared).
    random_state : seed.

    Fitted attributes: ``features_`` (columns used), ``boosters_`` {quantile name: lightgbm.Booster}, ``categories_``
    {column: [levels]}, ``offset_`` (CQR offset, log-seconds), ``n_calibration_``, ``n_fit_``.

    Example::

        jobs = acmemodel.features.build_features(trace)
        p = RuntimePredictor().fit(jobs[train]).predict(jobs[test])   # columns p10, p50, p90 (s)
    """

    def __init__(self, *, quantiles: Sequence[float] = (0.1, 0.5, 0.9),
                 features: Sequence[str] | str = "auto", n_estimators: int = 200,
                 learning_rate: float = 0.05, num_leaves: int = 31, min_child_samples: int = 20,
                 gpu_only: bool = True, conformal: float | None = 0.2, n_jobs: int = 1,
                 random_state: int = 0):
        self.quantiles = quantiles
        self.features = features
        self.n_estimators = n_estimators
        self.learning_rate = learning_rate
        self.num_leaves = num_leaves
        self.min_child_samples = min_child_samples
        self.gpu_only = gpu_only
        self.conformal = conformal
        self.n_jobs = n_jobs
        self.random_state = random_state

    # ------------------------------------------------------------------ helpers
    def _validate_params(self) -> None:
        qs = tuple(self.quantiles)
        if not qs or any(not (0 < float(q) < 1) for q in qs) or len(set(qs)) != len(qs):
            raise ValueError(f"quantiles must be distinct levels in (0, 1), got {self.quantiles!r}")
        if isinstance(self.features, str):
            if self.features != "auto":
                raise ValueError(f"features must be 'auto' or a list of columns, got {self.features!r}")
        elif not tuple(self.features):
            raise ValueError("features must name at least one column")
        for name in ("n_estimators", "num_leaves", "min_child_samples", "n_jobs"):
            v = getattr(self, name)
            if not isinstance(v, (int, np.integer)) or v < 1:
                raise ValueError(f"{name} must be a positive integer, got {v!r}")
        if self.conformal is not None and not (0 < float(self.conformal) < 0.9):
            raise ValueError(f"conformal must be None or a fraction in (0, 0.9), got {self.conformal!r}")
        if not (0 < float(self.learning_rate) <= 1):
            raise ValueError(f"learning_rate must be in (0, 1], got {self.learning_rate!r}")

    @staticmethod
    def _jobs_and_tz(trace_or_jobs, timezones):
        if hasattr(trace_or_jobs, "jobs") and hasattr(trace_or_jobs, "timezones"):
            return trace_or_jobs.jobs, {**trace_or_jobs.timezones, **(timezones or {})}
        if not isinstance(trace_or_jobs, pd.DataFrame):
            raise ValueError(f"expected a Trace or a jobs DataFrame, got {type(trace_or_jobs).__name__}")
        return trace_or_jobs, timezones

    def _used(self) -> tuple[str, ...]:
        return tuple(getattr(self, "features_", None) or self.features)

    def _matrix(self, jobs: pd.DataFrame) -> np.ndarray:
        cols = []
        for f in self._used():
            if f not in jobs.columns:  # (a source column the predicted jobs lack: missing)
                cols.append(np.full(len(jobs), np.nan))
            elif f in CATEGORICAL:
                levels = self.categories_[f]
                codes = pd.Categorical(jobs[f].astype(str), categories=levels).codes.astype(float)
                codes[codes < 0] = np.nan
                cols.append(codes)
            else:
                cols.append(pd.to_numeric(jobs[f], errors="coerce").to_numpy(dtype=float))
        return np.column_stack(cols) if cols else np.empty((len(jobs), 0))

    def _lgb_params(self, alpha: float) -> dict[str, Any]:
        return {
            "objective": "quantile", "alpha": float(alpha), "learning_rate": float(self.learning_rate),
            "num_leaves": int(self.num_leaves), "min_data_in_leaf": int(self.min_child_samples),
            "num_threads": int(self.n_jobs), "seed": int(self.random_state), "verbose": -1,
            "deterministic": True, "force_row_wise": True,
        }

    # ------------------------------------------------------------------ fit / predict
    def fit(self, trace_or_jobs, *args, timezones: dict[str, str] | None = None) -> "RuntimePredictor":
        """Train one booster per quantile on started (GPU) jobs with a run time. Returns self.

        ``timezones`` (cluster → UTC offset of the calendar features) is keyword-only, as in every
        model (``fit(trace_or_jobs, *, timezones=None)``); passing it by position still works for one
        release, with a DeprecationWarning."""
        import lightgbm as lgb

        if args:
            import warnings

            if len(args) > 1 or timezones is not None:
                raise TypeError("fit() takes the trace and keyword-only timezones=")
            warnings.warn("RuntimePredictor.fit(jobs, timezones): pass timezones= by keyword",
                          DeprecationWarning, stacklevel=2)
            timezones = args[0]

        self._validate_params()
        from acmemodel.features.names import jobs_with_extras

        jobs, tz = self._jobs_and_tz(trace_or_jobs, timezones)
        jobs = jobs_with_extras(trace_or_jobs) if hasattr(trace_or_jobs, "jobs") else jobs
        auto = isinstance(self.features, str)
        asked = DEFAULT_FEATURES if auto else tuple(self.features)
        missing = [c for c in ("run_s", "started", "gpu_num") + tuple(
            f for f in asked if f not in _CALENDAR + _HISTORY + _NAME) if c not in jobs.columns]
        if missing:
            raise ValueError(f"jobs DataFrame lacks column(s) {missing} (see the Trace contract)")
        mask = jobs["started"].fillna(False).astype(bool) & jobs["run_s"].notna()
        if "run_censored" in jobs.columns:  # a censored run time is not a target value
            mask &= ~jobs["run_censored"].fillna(False).astype(bool)
        if "left_truncated" in jobs.columns:  # nor is the observed part of a run begun before the trace
            mask &= ~jobs["left_truncated"].fillna(False).astype(bool)
        if self.gpu_only:
            mask &= jobs["gpu_num"] > 0
        if int(mask.sum()) < 2 * int(self.min_child_samples):
            need = 2 * int(self.min_child_samples)
            raise ValueError(f"RuntimePredictor.fit: {int(mask.sum())} training jobs; need at least {need} "
                             f"(min_child_samples={self.min_child_samples})")
        # features before filtering: a user's history includes their CPU and unfinished jobs
        jobs = submission_features(jobs, tz, self.features).loc[mask]
        if auto:
            extra = []
            for f in SOURCE_FEATURES:
                if f not in jobs.columns:
                    continue
                v = jobs[f]
                if f in CATEGORICAL:
                    if v.astype(str).replace({"": np.nan, "None": np.nan, "nan": np.nan}).nunique() >= 2:
                        extra.append(f)
                elif pd.to_numeric(v, errors="coerce").notna().any():
                    extra.append(f)
            self.features_ = list(DEFAULT_FEATURES) + extra
        else:
            self.features_ = list(self.features)
        self.categories_ = {}
        for f in self.features_:
            if f in CATEGORICAL:
                vc = jobs[f].astype(str).value_counts()
                self.categories_[f] = sorted(vc.index[:MAX_LEVELS].tolist())
        X = self._matrix(jobs)
        y = np.log1p(np.maximum(jobs["run_s"].to_numpy(dtype=float), 0.0))
        cat_idx = [i for i, f in enumerate(self.features_) if f in CATEGORICAL]

        def train(rows):
            out = {}
            for q in self.quantiles:
                ds = lgb.Dataset(X[rows], y[rows], feature_name=list(self.features_),
                                 categorical_feature=cat_idx, free_raw_data=True, params={"verbose": -1})
                out[_q_name(q)] = lgb.train(self._lgb_params(q), ds, num_boost_round=int(self.n_estimators))
            return out

        self.offset_ = 0.0
        self.n_calibration_ = 0
        if self.conformal is not None and len(self.quantiles) >= 2:
            order = np.argsort(jobs["submit_s"].to_numpy(dtype=float), kind="stable") \
                if "submit_s" in jobs.columns else np.arange(len(jobs))
            n_cal = int(round(len(jobs) * float(self.conformal)))
            if n_cal >= 20 and len(jobs) - n_cal >= 2 * int(self.min_child_samples):
                fit_rows, cal_rows = order[:-n_cal], order[-n_cal:]
                self.boosters_ = train(fit_rows)
                raw = self._raw_predict(X[cal_rows])
                self.offset_ = _conformal_offset(raw[:, 0], raw[:, -1], y[cal_rows],
                                                 max(self.quantiles) - min(self.quantiles))
                self.n_calibration_ = n_cal
        self.boosters_ = train(np.arange(len(jobs)))
        self.n_fit_ = len(jobs)
        return self

    def _raw_predict(self, X: np.ndarray) -> np.ndarray:
        qs = sorted(self.quantiles)
        if len(X) == 0:
            return np.empty((0, len(qs)))
        pred = np.column_stack([self.boosters_[_q_name(q)].predict(X) for q in qs])
        return np.sort(pred, axis=1)  # rearrangement: non-crossing quantiles

    def predict_log(self, trace_or_jobs, timezones: dict[str, str] | None = None) -> pd.DataFrame:
        """Predicted quantiles of ``ln(1 + run_s)``, rearranged to be non-decreasing, one column per
        level (``p10``, ``p50``, ``p90``), aligned on the jobs' index."""
        self._check_fitted()
        jobs, tz = self._jobs_and_tz(trace_or_jobs, timezones)
        if hasattr(trace_or_jobs, "jobs"):
            from acmemodel.features.names import jobs_with_extras

            jobs = jobs_with_extras(trace_or_jobs)
        jobs = submission_features(jobs, tz, self._used())
        X = self._matrix(jobs)
        qs = sorted(self.quantiles)
        pred = self._raw_predict(X)
        if self.offset_ and pred.shape[1] >= 2:
            # conformal widening (or narrowing) of the outer interval, kept non-crossing
            pred[:, 0] = np.minimum(pred[:, 0] - self.offset_, pred[:, 1])
            pred[:, -1] = np.maximum(pred[:, -1] + self.offset_, pred[:, -2])
        return pd.DataFrame(pred, index=jobs.index, columns=[_q_name(q) for q in qs])

    def predict(self, trace_or_jobs, timezones: dict[str, str] | None = None) -> pd.DataFrame:
        """Predicted run-time quantiles in seconds (``exp(q) − 1``, floored at 0), columns ``p10``,
        ``p50``, ``p90`` (non-crossing), aligned on the jobs' index."""
        lp = self.predict_log(trace_or_jobs, timezones)
        return np.maximum(np.expm1(lp), 0.0)

    def feature_importance(self, quantile: float = 0.5) -> pd.Series:
        """Total gain per feature of the booster for ``quantile``."""
        self._check_fitted()
        b = self.boosters_[_q_name(quantile)]
        return pd.Series(b.feature_importance("gain"), index=list(self._used())).sort_values(ascending=False)

    # ------------------------------------------------------------------ serialisation
    def artifacts(self) -> dict[str, str]:
        """LightGBM model text of each booster, ``{"p10": text, ...}``."""
        self._check_fitted()
        return {name: b.model_to_string() for name, b in self.boosters_.items()}

    def _fitted_to_dict(self) -> dict[str, Any]:
        return {"n_fit": self.n_fit_, "features": list(self._used()), "categories": self.categories_,
                "boosters": sorted(self.boosters_),
                "offset": self.offset_, "n_calibration": self.n_calibration_}

    def _fitted_from_dict(self, d: dict[str, Any], artifacts: dict[str, str]) -> None:
        from acmemodel.errors import BundleError
        from acmemodel.models.lgbm_text import booster_from_text

        if d.get("features"):
            self.features_ = list(d["features"])
        self.categories_ = {k: list(v) for k, v in d["categories"].items()}
        self.boosters_ = {}
        for name in d["boosters"]:
            if name not in artifacts:
                raise BundleError(f"RuntimePredictor: booster {name!r} text missing from the bundle")
            self.boosters_[name] = booster_from_text(artifacts[name], f"RuntimePredictor booster {name!r}")
        self.n_fit_ = int(d["n_fit"])
        self.offset_ = float(d.get("offset", 0.0))
        self.n_calibration_ = int(d.get("n_calibration", 0))
