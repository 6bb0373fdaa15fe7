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

Calibration windows (``conformal=0.2``, default): the boosters are first trained on the earlier 80 %
of the training jobs (by submission time) and scored on the latest 20 % — data after everything
they saw, as the future will be — and, where the trace is long enough, also trained on the earlier
60 % and scored on the 20 % after it (:data:`CAL_WINDOWS` rolling windows). On those windows two
things are chosen:

* **the point predictor** (``choice_``): the p50 of the boosters, or one of the strong baselines a
  scheduler would use instead — ``user_median`` (the user's running median run time of the same
  cluster and type, :func:`~acmemodel.features.history.user_history`; the cell median when the user
  has no ended job yet), ``name_median`` (the job-name template's running median, when the trace has
  job names; then the user's, then the cell's), ``cell_median`` (the median run time of the job's
  cluster × type × GPU bucket in the training jobs, backing off to cluster × type and to all jobs
  below ``CELL_MIN_JOBS``) — or ``blend``, the mean of the boosters' p50 and the best baseline on the
  log scale: whichever has the smallest MAE of log run time on the window. A trace where a baseline
  wins is predicted by that baseline (``selection_`` holds every candidate's window MAE);
* **the interval**, by split-conformal calibration (:mod:`~acmemodel.models.predictor_conformal`;
  each tail on its own): for the boosters, conformalised quantile regression on their raw p10/p90,
  ``p10 − Q_lo`` and ``p90 + Q_hi`` with ``Q_lo`` the ⌈(n+1)·0.9⌉-th smallest of ``p10 − y`` and ``Q_hi``
  that of ``y − p90``; for a baseline or the blend (a point prediction ``b``), the same order
  statistics of ``b − y`` and ``y − b``. The scores of both windows are pooled (one offset per tail).
  **Censoring**: the windows' jobs still running at the end of the training data (``run_censored``)
  are scored too, once their tail is decided (they have run past the bound: a known miss of the upper
  tail); a job started more recently than its bound counts in neither case — the windows are not tilted
  to the short jobs (:func:`~acmemodel.models.predictor_conformal.decided_scores`).

The boosters and the cell medians are then refitted on all training jobs (the offsets kept: the
finite-sample guarantee becomes approximate; calibrating on the *latest* jobs absorbs some drift).

**Online** (``online_window=300``, default), when the jobs to predict carry their outcomes
(``start_s``, ``end_s`` — a backtest, or a replay of a trace; give it the jobs still running too,
``run_censored``: they are the long ones), what a scheduler knows at each submission is used:

* **the point predictor of each job** is the candidate with the smallest MAE over the latest
  ``online_window`` jobs whose errors were decided by then
  (:func:`~acmemodel.models.predictor_conformal.online_choice`), with that candidate's interval
  (``offsets_by_``); the calibration windows' ``choice_`` until :data:`ONLINE_MIN` jobs are decided;
* **the interval is recalibrated on evidence of drift**: when the latest ``online_window`` jobs whose
  tail was decided show more misses than a calibrated interval allows (``DRIFT_Z`` = 2 binomial SE),
  or fewer (``NARROW_Z`` = 3 SE), the tail's offset becomes their split-conformal offset
  (:func:`~acmemodel.models.predictor_conformal.online_offsets`; rolling conformal inference, Gibbs &
  Candès 2021). Narrowing asks for stronger evidence: a window of 300 jobs of a bursty trace (jobs
  submitted together share their fate) is a noisy estimate, and narrowing on noise under-covers (at
  2 SE the Alibaba DLRM log's later instances were covered 0.671). Without narrowing the interval
  over-covered where the later jobs were more predictable than the calibration windows (OpenB pods,
  cutoff at 85 % of the jobs: 0.883; with it 0.846; docs/runtime-card.md).

Jobs without outcomes (new submissions) keep ``choice_`` and the calibration offsets.

Saved models: the parameters and category levels go to JSON, each booster as LightGBM model text
(:meth:`RuntimePredictor.artifacts`); nothing is pickled.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import pandas as pd

from acmemodel.models.base import BaseModel, register
from acmemodel.models.predictor_baselines import baseline_predictions, cell_medians
from acmemodel.models.predictor_conformal import (ONLINE_MIN, decided_scores, interval_around, job_outcomes,
                                                  online_choice, online_offsets, reading_time, tail_offset)

__all__ = ["RuntimePredictor", "DEFAULT_FEATURES", "CATEGORICAL", "CHOICES", "submission_features"]

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
#: rolling calibration windows (module docstring)
CAL_WINDOWS = 2
#: fewest training rows for ``n_jobs`` LightGBM threads; smaller training sets use one (the threads' wake-ups
#: cost more than they save there: a test suite of small fits spent 1.7× the CPU with 2 threads)
PARALLEL_MIN_ROWS = 50_000
#: the point predictors the calibration window chooses from (module docstring)
CHOICES = ("model", "user_median", "name_median", "cell_median", "blend")


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
    out = jobs.copy(deep=False)  # (new columns only: the job table's own are shared, not copied)
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
    n_jobs : LightGBM threads (default 1: on the 1M-job fleet's 100,000-job training set, quiet 2-core machine,
        2 threads took 19.6 s wall and CPU against 10.3 s for one) for a training set of at least
        :data:`PARALLEL_MIN_ROWS` jobs
        (smaller ones: one thread; at most the process's cap, :func:`~acmemodel.models.lgbm_text.limit_threads`). The
        trees do not depend on the thread count (``deterministic=True``, row-wise histograms; tested with 1, 2 and
        4 threads on a 1M-job fleet and in the suite). Idle threads wait passively
        (``OMP_WAIT_POLICY=PASSIVE`` unless set, :func:`~acmemodel.models.lgbm_text.import_lightgbm`): on a
        busy machine spinning threads cost many times the fit's CPU.
    random_state : seed.
    online_window : the online choice of the point predictor and recalibration of the interval (module
        docstring), from the latest this-many jobs of the predicted frame decided by each job's
        submission (default 300; ``None`` = ``choice_`` and the calibration offsets only).
    max_train_jobs : cap on the training jobs (default 100,000; ``None`` = all). Above it the boosters
        are trained on a sample stratified by cluster × type (each stratum keeps its share, rows drawn
        uniformly with ``random_state``, kept in time order; the features — a user's running median —
        are computed on every job first). ``train_sample_`` reports ``{"cap", "jobs", "of"}``. Why 100,000:
        the real logs at hand (NASA iPSC 18k jobs, Alibaba DLRM 24k) are below it (their MAE is unchanged);
        on a synthetic 1M-job trace the boosters' calibration-window MAE of log run time was 1.1738 at
        100,000 and 1.1683 at 200,000 (the chosen point predictor, the user median, and the held-out MAE
        1.1591 were the same) for half the training time (docs/performance.md).

    Fitted attributes: ``features_`` (columns used), ``boosters_`` {quantile name: lightgbm.Booster}, ``categories_``
    {column: [levels]}, ``choice_`` (the point predictor chosen on the calibration window, one of
    :data:`CHOICES`), ``selection_`` {candidate: MAE of log run time on the window}, ``offsets_``
    (lower, upper conformal offsets of ``choice_``, log-seconds), ``offsets_by_`` {candidate: offsets},
    ``cell_medians_``, ``n_calibration_``, ``n_fit_``.

    Example::

        jobs = acmemodel.features.build_features(trace)
        p = RuntimePredictor().fit(jobs[train]).predict(jobs[test])   # columns p10, p50, p90 (s)
    """

    def __init__(self, *, quantiles: Sequence[float] = (0.1, 0.5, 0.9),
                 features: Sequence[str] | str = "auto", n_estimators: int = 200,
                 learning_rate: float = 0.05, num_leaves: int = 31, min_child_samples: int = 20,
                 gpu_only: bool = True, conformal: float | None = 0.2, n_jobs: int = 1,
                 random_state: int = 0, online_window: int | None = 300,
                 max_train_jobs: int | None = 100_000):
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
        self.online_window = online_window
        self.max_train_jobs = max_train_jobs

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
        cap = self.max_train_jobs
        if cap is not None and (not isinstance(cap, (int, np.integer)) or cap < 2 * int(self.min_child_samples)):
            raise ValueError(f"max_train_jobs must be None or an integer >= 2 min_child_samples, got {cap!r}")
        ow = self.online_window
        if ow is not None and (not isinstance(ow, (int, np.integer)) or ow < ONLINE_MIN):
            raise ValueError(f"online_window must be None or an integer >= {ONLINE_MIN}, got {ow!r}")
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

    def _lgb_params(self, alpha: float, rows: int) -> dict[str, Any]:
        from acmemodel.models.lgbm_text import threads as capped

        threads = capped(self.n_jobs) if rows >= PARALLEL_MIN_ROWS else 1
        return {
            "objective": "quantile", "alpha": float(alpha), "learning_rate": float(self.learning_rate),
            "num_leaves": int(self.num_leaves), "min_data_in_leaf": int(self.min_child_samples),
            "num_threads": threads, "seed": int(self.random_state), "verbose": -1,
            "deterministic": True, "force_row_wise": True,
        }

    # ------------------------------------------------------------------ fit / predict
    def fit(self, trace_or_jobs, *args, timezones: dict[str, str] | None = None) -> "RuntimePredictor":
        """Train one booster per quantile on started (GPU) jobs with a run time. Returns self.

        ``timezones`` (cluster → UTC offset of the calendar features) is keyword-only, as in every
        model (``fit(trace_or_jobs, *, timezones=None)``); passing it by position still works for one
        release, with a DeprecationWarning."""
        from acmemodel.models.lgbm_text import import_lightgbm

        lgb = import_lightgbm()
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
        if "left_truncated" in jobs.columns:  # the observed part of a run begun before the trace
            mask &= ~jobs["left_truncated"].fillna(False).astype(bool)
        if self.gpu_only:
            mask &= jobs["gpu_num"] > 0
        running = pd.Series(False, index=jobs.index)
        if "run_censored" in jobs.columns:  # a censored run time is not a target value (calibration: a bound)
            running = mask & jobs["run_censored"].fillna(False).astype(bool)
            mask &= ~running
        if int(mask.sum()) < 2 * int(self.min_child_samples):
            need = 2 * int(self.min_child_samples)
            raise ValueError(f"RuntimePredictor.fit: {int(mask.sum())} training jobs; need at least {need} "
                             f"(min_child_samples={self.min_child_samples})")
        # features before filtering: a user's history includes their CPU and unfinished jobs
        feats = submission_features(jobs, tz, self.features)
        jobs = self._capped(feats, mask)
        still = feats.loc[running]
        if auto:
            extra = []
            for f in SOURCE_FEATURES:
                if f not in jobs.columns:
                    continue
                v = jobs[f]
                if f in CATEGORICAL:
                    s = v.astype(str)
                    if s[~s.isin(("", "None", "nan"))].nunique() >= 2:  # distinct recorded values
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
            # one binned Dataset for every quantile's booster: the bins depend on the rows and the dataset
            # settings only (the same for every quantile), not on the objective's alpha
            ds = lgb.Dataset(X[rows], y[rows], feature_name=list(self.features_),
                             categorical_feature=cat_idx, free_raw_data=True, params={"verbose": -1})
            return {_q_name(q): lgb.train(self._lgb_params(q, len(rows)), ds, num_boost_round=int(self.n_estimators))
                    for q in self.quantiles}

        self.offsets_ = (0.0, 0.0)
        self.offsets_by_ = {"model": (0.0, 0.0)}
        self.n_calibration_ = 0
        self.choice_ = "model"
        self.selection_ = {}
        if self.conformal is not None and len(self.quantiles) >= 2:
            order = np.argsort(jobs["submit_s"].to_numpy(dtype=float), kind="stable") \
                if "submit_s" in jobs.columns else np.arange(len(jobs))
            n_cal = int(round(len(jobs) * float(self.conformal)))
            # rolling calibration windows, latest first: window j scores the boosters trained on every
            # job before it (as many windows as leave enough training jobs, at most CAL_WINDOWS)
            sub = jobs["submit_s"].to_numpy(dtype=float) if "submit_s" in jobs.columns else None
            folds = []
            for j in range(CAL_WINDOWS):
                end = len(jobs) - j * n_cal
                if n_cal < 20 or end - n_cal < 2 * int(self.min_child_samples):
                    break
                fit_rows, cal_rows = order[:end - n_cal], order[end - n_cal:end]
                self.boosters_ = train(fit_rows)
                # the window's jobs still running at the end of the data (submitted in its span)
                win = still.iloc[:0]
                if sub is not None and len(still):
                    s_run = still["submit_s"].to_numpy(dtype=float)
                    top = np.inf if j == 0 else sub[order[end]]
                    win = still[(s_run >= sub[cal_rows[0]]) & (s_run < top)]
                rows = pd.concat([jobs.iloc[cal_rows], win])
                table = cell_medians(jobs.iloc[fit_rows], y[fit_rows])
                folds.append({"raw": self._raw_predict(self._matrix(rows)), "base": baseline_predictions(rows, table),
                              "y": np.concatenate([y[cal_rows], np.full(len(win), np.nan)]), "jobs": rows})
            if folds:
                self._calibrate(folds, reading_time(feats.loc[mask | running]))
                self.n_calibration_ = int(sum(len(f["y"]) for f in folds))
        self.boosters_ = train(np.arange(len(jobs)))
        self.cell_medians_ = cell_medians(jobs, y)
        self.n_fit_ = len(jobs)
        return self

    def _capped(self, feats: pd.DataFrame, mask: pd.Series) -> pd.DataFrame:
        """The training jobs (rows ``mask`` of ``feats``), or their sample stratified by cluster × type when
        there are more than ``max_train_jobs`` (class docstring); sets ``train_sample_``. Only the kept rows
        are copied out of ``feats``."""
        n, cap = int(mask.sum()), self.max_train_jobs
        self.train_sample_ = {"cap": None if cap is None else int(cap), "jobs": int(n), "of": int(n)}
        if cap is None or n <= int(cap):
            return feats.loc[mask]
        rng = np.random.default_rng(self.random_state)
        keys = [c for c in ("cluster", "type") if c in feats.columns]
        codes = (feats.loc[mask, keys].groupby(keys, sort=True, observed=True).ngroup().to_numpy() if keys
                 else np.zeros(n, dtype=np.int64))
        keep = np.zeros(n, dtype=bool)
        for g in np.unique(codes):
            rows = np.flatnonzero(codes == g)
            k = max(1, int(round(len(rows) * int(cap) / n)))
            keep[rng.choice(rows, size=min(k, len(rows)), replace=False)] = True
        out = feats.iloc[np.flatnonzero(mask.to_numpy(bool))[keep]]  # (mask: on feats' rows, in their order)
        self.train_sample_["jobs"] = int(len(out))
        return out

    def _calibrate(self, folds: list, at_s: float) -> None:
        """Choose the point predictor and the conformal offsets on the calibration windows ``folds``
        (``[{raw quantiles, baselines, y (NaN: still running), jobs}]``, latest first; module docstring),
        read at ``at_s`` (the end of the training data)."""
        lo_level = 1.0 - min(self.quantiles)     # each tail: e.g. p10 → 0.9
        hi_level = max(self.quantiles)
        mid = len(self.quantiles) // 2
        names = ["model", *folds[0]["base"], "blend"]

        def point(f, name, best_base):
            med = f["raw"][:, mid]
            if name == "model":
                return med
            if name == "blend":
                return 0.5 * (med + f["base"][best_base])
            return f["base"][name]

        def abs_err(name, best_base=None):
            return np.concatenate([np.abs(f["y"] - point(f, name, best_base))[np.isfinite(f["y"])] for f in folds])
        err = {k: abs_err(k) for k in names[:-1]}
        best_base = min(names[1:-1], key=lambda k: float(err[k].mean()))
        err["blend"] = abs_err("blend", best_base)
        mae = {k: float(v.mean()) for k, v in err.items()}
        self.selection_ = {k: round(v, 6) for k, v in mae.items()}
        self.blend_with_ = best_base
        self.choice_ = min(mae, key=lambda k: (mae[k], CHOICES.index(k)))
        # each candidate's offsets, from the scores of the jobs whose tail is decided by the end of the
        # data, both windows pooled (every candidate: the online choice may pick any of them)
        self.offsets_by_ = {}
        for name in mae:
            lo, hi = [], []
            for f in folds:
                if name == "model":
                    a, b = f["raw"][:, 0], f["raw"][:, -1]
                else:
                    a = b = point(f, name, best_base)
                start, end, ended = job_outcomes(f["jobs"])
                sl, sh = decided_scores(at_s, start, end, ended & np.isfinite(f["y"]), a, b)
                lo.append(sl)
                hi.append(sh)
            lo, hi = np.concatenate(lo), np.concatenate(hi)
            self.offsets_by_[name] = (tail_offset(lo, lo_level) if lo.size else 0.0,
                                      tail_offset(hi, hi_level) if hi.size else 0.0)
        self.offsets_ = self.offsets_by_[self.choice_]

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
        choice = getattr(self, "choice_", "model")
        by = dict(getattr(self, "offsets_by_", None) or {choice: tuple(self.offsets_)})
        used = tuple(self._used())
        if set(by) - {"model", "cell_median"}:
            used += tuple(c for c in ("user_prior_median_run_s", "name_prior_median_run_s") if c not in used)
        jobs = submission_features(jobs, tz, used)
        qs = sorted(self.quantiles)
        raw = self._raw_predict(self._matrix(jobs))
        if raw.shape[1] < 2:
            return pd.DataFrame(raw, index=jobs.index, columns=[_q_name(q) for q in qs])
        mid = len(qs) // 2
        base = baseline_predictions(jobs, self.cell_medians_) if set(by) - {"model"} else {}
        points = {}
        for name in by:
            if name == "model":
                points[name] = raw[:, mid]
            elif name == "blend":
                points[name] = 0.5 * (raw[:, mid] + base.get(self.blend_with_, base["cell_median"]))
            else:
                points[name] = base.get(name, base.get("user_median", base["cell_median"]))
        names = list(points)
        pick = np.full(len(jobs), names.index(choice) if choice in names else 0)
        if self.online_window and len(names) > 1 and {"submit_s", "start_s", "end_s"} <= set(jobs.columns):
            start, end, ended = job_outcomes(jobs)
            pick = online_choice(start, end, ended, np.column_stack([points[k] for k in names]),
                                 jobs["submit_s"].to_numpy(dtype=float), int(self.online_window), pick)
        pred = raw.copy()
        for j, name in enumerate(names):
            rows = pick == j
            if rows.any():
                pred[rows] = interval_around(raw[rows], points[name][rows], name, by[name], mid)
        if self.online_window:
            pred = self._online(jobs, pred)
        return pd.DataFrame(pred, index=jobs.index, columns=[_q_name(q) for q in qs])

    def _online(self, jobs: pd.DataFrame, pred: np.ndarray) -> np.ndarray:
        """Online recalibration of the outer interval (module docstring): each job's tail offsets from
        the latest ``online_window`` jobs of ``jobs`` whose tail was decided by its submission (at least
        :data:`ONLINE_MIN` of them, else the interval is left as it is)."""
        if "submit_s" not in jobs.columns or "start_s" not in jobs.columns or "end_s" not in jobs.columns:
            return pred
        start, end, ended = job_outcomes(jobs)
        q_lo, q_hi = online_offsets(start, end, ended, pred[:, 0], pred[:, -1],
                                    jobs["submit_s"].to_numpy(dtype=float), int(self.online_window),
                                    1.0 - min(self.quantiles), max(self.quantiles))
        out = pred.copy()
        out[:, 0] = pred[:, 0] - np.nan_to_num(q_lo, nan=0.0)
        out[:, -1] = pred[:, -1] + np.nan_to_num(q_hi, nan=0.0)
        mid = out.shape[1] // 2
        out[:, 0] = np.minimum(out[:, 0], out[:, mid])
        out[:, -1] = np.maximum(out[:, -1], out[:, mid])
        return out

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
                "boosters": sorted(self.boosters_), "offsets": list(self.offsets_),
                "offsets_by": {k: list(v) for k, v in (getattr(self, "offsets_by_", None) or {}).items()},
                "n_calibration": self.n_calibration_, "choice": self.choice_,
                "selection": self.selection_, "blend_with": getattr(self, "blend_with_", "cell_median"),
                "cell_medians": getattr(self, "cell_medians_", {}),
                "train_sample": getattr(self, "train_sample_", None)}

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
        self.train_sample_ = d.get("train_sample")
        # (a bundle saved before the choice: the boosters, one symmetric CQR offset "offset")
        off = d.get("offsets")
        self.offsets_ = (tuple(float(v) for v in off) if off is not None
                         else (float(d.get("offset", 0.0)), float(d.get("offset", 0.0))))
        self.n_calibration_ = int(d.get("n_calibration", 0))
        self.choice_ = str(d.get("choice", "model"))
        if self.choice_ not in CHOICES:
            raise BundleError(f"RuntimePredictor: unknown point predictor {self.choice_!r}; valid: {', '.join(CHOICES)}")
        self.selection_ = {str(k): float(v) for k, v in (d.get("selection") or {}).items()}
        self.blend_with_ = str(d.get("blend_with", "cell_median"))
        by = d.get("offsets_by") or {}
        if not isinstance(by, dict) or any(k not in CHOICES or not isinstance(v, list) or len(v) != 2
                                           for k, v in by.items()):
            raise BundleError("RuntimePredictor: offsets_by must map point predictors to [lower, upper] offsets")
        self.offsets_by_ = {str(k): (float(v[0]), float(v[1])) for k, v in by.items()} or {self.choice_: self.offsets_}
        self.cell_medians_ = {str(k): float(v) for k, v in (d.get("cell_medians") or {}).items()}
        if set(self.offsets_by_) - {"model"} and "*" not in self.cell_medians_:
            raise BundleError("RuntimePredictor: the chosen baseline's cell medians are missing from the bundle")
