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
* **the interval**, by split-conformal calibration (Romano, Patterson & Candès 2019; each tail on
  its own): for the boosters, conformalised quantile regression on their raw p10/p90, ``p10 −
  Q_lo`` and ``p90 + Q_hi`` with ``Q_lo`` the ⌈(n+1)·0.9⌉-th smallest of ``p10 − y`` and ``Q_hi`` that of
  ``y − p90``; for a baseline or the blend (a point prediction ``b``), the conformal quantiles of the
  residuals ``y − b``: ``b − Q_lo`` and ``b + Q_hi`` with ``Q_lo``, ``Q_hi`` the same order statistics of
  ``b − y`` and ``y − b``. Under exchangeability each tail then misses ≤ 10 % of new jobs, so
  p10–p90 covers ≈ 0.8. Each tail's offset is the larger of the two windows' (a trace whose
  residuals change between windows gets the wider interval rather than an under-covering one).

The boosters and the cell medians are then refitted on all training jobs (the offsets kept: the
finite-sample guarantee becomes approximate; calibrating on the *latest* jobs absorbs some drift).

**Online recalibration** (``online_window=300``, default): when the jobs to predict carry their
outcomes (``end_s``, ``run_s`` — a backtest, or a replay of a trace), the interval of each job is
recalibrated on the jobs of the same frame that *ended before it was submitted* — what a scheduler
knows at that moment, the same rule as the user-history features: the tail offsets are the
split-conformal order statistics (as above) of the latest ``online_window`` residuals ``p10 − y`` and
``y − p90`` of the calibrated interval, from :data:`ONLINE_MIN` (50) ended jobs on (adaptive /
rolling conformal inference, Gibbs & Candès 2021), where they exceed 0 — the online step only
widens: the ended jobs of a recent window are the short ones (the long ones are still running), so
they would narrow an interval that the calibration windows measured on complete data. A drift after
training then widens the interval within a few hundred jobs. Jobs without outcomes (new submissions) keep the calibration
offsets.

Saved models: the parameters and category levels go to JSON, each booster as LightGBM model text
(:meth:`RuntimePredictor.artifacts`); nothing is pickled.
"""
from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np
import pandas as pd

from acmemodel.models.base import BaseModel, register

__all__ = ["RuntimePredictor", "DEFAULT_FEATURES", "CATEGORICAL", "CHOICES", "submission_features",
           "baseline_predictions", "cell_medians"]

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
#: fewest training jobs for a cell's own median (``cell_median``; fewer: the coarser cell's)
CELL_MIN_JOBS = 5
#: rolling calibration windows (module docstring)
CAL_WINDOWS = 2
#: fewest ended jobs for the online recalibration of a job's interval
ONLINE_MIN = 50
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


def _tail_offset(score: np.ndarray, level: float) -> float:
    """Split-conformal offset of one tail: the ⌈(n+1)·level⌉-th smallest of ``score`` (capped at n);
    ``bound + Q`` then holds a new exchangeable job's score with probability >= ``level``."""
    score = np.asarray(score, float)
    n = score.size
    if n == 0:
        raise ValueError("conformal calibration needs at least one job")
    k = min(n, math.ceil((n + 1) * level))
    return float(np.partition(score, k - 1)[k - 1])


def _cell_keys(jobs: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """``cluster/type/bucket`` and ``cluster/type`` labels of each job (for the cell medians)."""
    from acmemodel.features.keys import gpu_bucket

    ct = (jobs["cluster"].astype(str) + "/" + jobs["type"].astype(str)).to_numpy(object)
    b = gpu_bucket(np.maximum(jobs["gpu_num"].to_numpy(dtype=float), 0.0))
    return np.array([f"{a}/{c}" for a, c in zip(ct, b)], dtype=object), ct


def cell_medians(jobs: pd.DataFrame, y: np.ndarray) -> dict[str, float]:
    """Median of ``y`` (log run time) per ``cluster/type/bucket`` and per ``cluster/type`` cell with at
    least :data:`CELL_MIN_JOBS` jobs, and over all jobs (key ``"*"``)."""
    fine, ct = _cell_keys(jobs)
    out = {"*": float(np.median(y))}
    for keys in (ct, fine):
        s = pd.Series(y).groupby(keys)
        size, med = s.size(), s.median()
        out.update({str(k): float(med[k]) for k in size.index[size.to_numpy() >= CELL_MIN_JOBS]})
    return out


def cell_median_of(jobs: pd.DataFrame, table: dict[str, float]) -> np.ndarray:
    """Each job's cell median from :func:`cell_medians` (finest cell present, else coarser)."""
    fine, ct = _cell_keys(jobs)
    g = table["*"]
    return np.array([table.get(f, table.get(c, g)) for f, c in zip(fine, ct)], dtype=float)


def baseline_predictions(jobs: pd.DataFrame, table: dict[str, float]) -> dict[str, np.ndarray]:
    """The baselines' log run-time predictions of ``jobs`` (module docstring): ``cell_median``,
    ``user_median`` (else the cell's) and, with job names, ``name_median`` (else the user's)."""
    cell = cell_median_of(jobs, table)
    out = {"cell_median": cell}

    def hist(col, fallback):
        if col not in jobs.columns:
            return None
        v = pd.to_numeric(jobs[col], errors="coerce").to_numpy(dtype=float)
        return np.where(np.isfinite(v), np.log1p(np.maximum(v, 0.0)), fallback)

    user = hist("user_prior_median_run_s", cell)
    if user is not None:
        out["user_median"] = user
        name = hist("name_prior_median_run_s", user)
        if name is not None and "job_name" in jobs.columns and np.isfinite(
                pd.to_numeric(jobs["name_prior_median_run_s"], errors="coerce")).any():
            out["name_median"] = name
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
    n_jobs : LightGBM threads (default 1: the machine is shared).
    random_state : seed.
    online_window : online recalibration of the interval (module docstring): the conformal offsets
        are re-estimated from the residuals of the latest this-many jobs of the predicted frame that
        ended before each job's submission (default 300; ``None`` = the calibration offsets only).
    max_train_jobs : cap on the training jobs (default 200,000; ``None`` = all). Above it the boosters
        are trained on a sample stratified by cluster × type (each stratum keeps its share, rows drawn
        uniformly with ``random_state``, kept in time order; the features — a user's running median —
        are computed on every job first). ``train_sample_`` reports ``{"cap", "jobs", "of"}``.

    Fitted attributes: ``features_`` (columns used), ``boosters_`` {quantile name: lightgbm.Booster}, ``categories_``
    {column: [levels]}, ``choice_`` (the point predictor chosen on the calibration window, one of
    :data:`CHOICES`), ``selection_`` {candidate: MAE of log run time on the window}, ``offsets_``
    (lower, upper conformal offsets, log-seconds), ``cell_medians_``, ``n_calibration_``, ``n_fit_``.

    Example::

        jobs = acmemodel.features.build_features(trace)
        p = RuntimePredictor().fit(jobs[train]).predict(jobs[test])   # columns p10, p50, p90 (s)
    """

    def __init__(self, *, quantiles: Sequence[float] = (0.1, 0.5, 0.9),
                 features: Sequence[str] | str = "auto", n_estimators: int = 200,
                 learning_rate: float = 0.05, num_leaves: int = 31, min_child_samples: int = 20,
                 gpu_only: bool = True, conformal: float | None = 0.2, n_jobs: int = 1,
                 random_state: int = 0, online_window: int | None = 300,
                 max_train_jobs: int | None = 200_000):
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
        jobs = self._capped(jobs)
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

        self.offsets_ = (0.0, 0.0)
        self.n_calibration_ = 0
        self.choice_ = "model"
        self.selection_ = {}
        if self.conformal is not None and len(self.quantiles) >= 2:
            order = np.argsort(jobs["submit_s"].to_numpy(dtype=float), kind="stable") \
                if "submit_s" in jobs.columns else np.arange(len(jobs))
            n_cal = int(round(len(jobs) * float(self.conformal)))
            # rolling calibration windows, latest first: window j scores the boosters trained on every
            # job before it (as many windows as leave enough training jobs, at most CAL_WINDOWS)
            folds = []
            for j in range(CAL_WINDOWS):
                end = len(jobs) - j * n_cal
                if n_cal < 20 or end - n_cal < 2 * int(self.min_child_samples):
                    break
                fit_rows, cal_rows = order[:end - n_cal], order[end - n_cal:end]
                self.boosters_ = train(fit_rows)
                folds.append((self._raw_predict(X[cal_rows]),
                              baseline_predictions(jobs.iloc[cal_rows], cell_medians(jobs.iloc[fit_rows], y[fit_rows])),
                              y[cal_rows]))
            if folds:
                self._calibrate(folds)
                self.n_calibration_ = int(sum(len(f[2]) for f in folds))
        self.boosters_ = train(np.arange(len(jobs)))
        self.cell_medians_ = cell_medians(jobs, y)
        self.n_fit_ = len(jobs)
        return self

    def _capped(self, jobs: pd.DataFrame) -> pd.DataFrame:
        """The training jobs, or their sample stratified by cluster × type when there are more than
        ``max_train_jobs`` (class docstring); sets ``train_sample_``."""
        n, cap = len(jobs), self.max_train_jobs
        self.train_sample_ = {"cap": None if cap is None else int(cap), "jobs": int(n), "of": int(n)}
        if cap is None or n <= int(cap):
            return jobs
        rng = np.random.default_rng(self.random_state)
        keys = [c for c in ("cluster", "type") if c in jobs.columns]
        codes = (jobs.groupby(keys, sort=True, observed=True).ngroup().to_numpy() if keys
                 else np.zeros(n, dtype=np.int64))
        keep = np.zeros(n, dtype=bool)
        for g in np.unique(codes):
            rows = np.flatnonzero(codes == g)
            k = max(1, int(round(len(rows) * int(cap) / n)))
            keep[rng.choice(rows, size=min(k, len(rows)), replace=False)] = True
        out = jobs[keep]
        self.train_sample_["jobs"] = int(len(out))
        return out

    def _calibrate(self, folds: list) -> None:
        """Choose the point predictor and the conformal offsets on the calibration windows ``folds``
        (``[(raw quantiles, baselines, y)]``, latest first; module docstring)."""
        lo_level = 1.0 - min(self.quantiles)     # each tail: e.g. p10 → 0.9
        hi_level = max(self.quantiles)
        mid = len(self.quantiles) // 2
        names = ["model", *folds[0][1], "blend"]

        def point(f, name, best_base):
            raw, base, _ = f
            med = raw[:, mid]
            if name == "model":
                return med
            if name == "blend":
                return 0.5 * (med + base[best_base])
            return base[name]
        err = {k: np.concatenate([np.abs(f[2] - point(f, k, None)) for f in folds]) for k in names[:-1]}
        best_base = min(names[1:-1], key=lambda k: float(err[k].mean()))
        err["blend"] = np.concatenate([np.abs(f[2] - point(f, "blend", best_base)) for f in folds])
        mae = {k: float(v.mean()) for k, v in err.items()}
        self.selection_ = {k: round(v, 6) for k, v in mae.items()}
        self.blend_with_ = best_base
        self.choice_ = min(mae, key=lambda k: (mae[k], CHOICES.index(k)))
        # one offset per tail and window; the widest over the windows (a drift between windows widens
        # the interval rather than letting it under-cover)
        lo, hi = [], []
        for f in folds:
            if self.choice_ == "model":
                a, b = f[0][:, 0], f[0][:, -1]
            else:
                a = b = point(f, self.choice_, best_base)
            lo.append(_tail_offset(a - f[2], lo_level))
            hi.append(_tail_offset(f[2] - b, hi_level))
        self.offsets_ = (max(lo), max(hi))

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
        used = self._used()
        if choice in ("user_median", "name_median", "blend"):
            used = tuple(used) + tuple(c for c in ("user_prior_median_run_s", "name_prior_median_run_s")
                                       if c not in used)
        jobs = submission_features(jobs, tz, used)
        X = self._matrix(jobs)
        qs = sorted(self.quantiles)
        pred = self._raw_predict(X)
        lo_off, hi_off = self.offsets_
        if choice != "model" and pred.shape[1] >= 2:
            base = baseline_predictions(jobs, self.cell_medians_)
            b = base.get(self.blend_with_ if choice == "blend" else choice, base["cell_median"])
            mid = len(qs) // 2
            if choice == "blend":
                b = 0.5 * (pred[:, mid] + b)
            # the chosen point prediction; the interval around it from its conformal residual quantiles
            pred[:, mid] = b
            pred[:, 0] = np.minimum(b - lo_off, b)
            pred[:, -1] = np.maximum(b + hi_off, b)
            pred = np.sort(pred, axis=1)
        elif (lo_off or hi_off) and pred.shape[1] >= 2:
            # conformal widening (or narrowing) of the outer interval, kept non-crossing
            pred[:, 0] = np.minimum(pred[:, 0] - lo_off, pred[:, 1])
            pred[:, -1] = np.maximum(pred[:, -1] + hi_off, pred[:, -2])
        if self.online_window and pred.shape[1] >= 2:
            pred = self._online(jobs, pred)
        return pd.DataFrame(pred, index=jobs.index, columns=[_q_name(q) for q in qs])

    def _online(self, jobs: pd.DataFrame, pred: np.ndarray) -> np.ndarray:
        """Online recalibration of the outer interval (module docstring): for each job, the tail
        offsets from the residuals of the latest ``online_window`` jobs of ``jobs`` that ended before
        its submission (at least :data:`ONLINE_MIN` of them, else the interval is left as it is)."""
        need = ("submit_s", "end_s", "run_s")
        if any(c not in jobs.columns for c in need):
            return pred
        sub = jobs["submit_s"].to_numpy(dtype=float)
        end = jobs["end_s"].to_numpy(dtype=float)
        run = jobs["run_s"].to_numpy(dtype=float)
        ended = np.isfinite(end) & np.isfinite(run) & np.isfinite(sub)
        if "run_censored" in jobs.columns:
            ended &= ~jobs["run_censored"].fillna(False).to_numpy(dtype=bool)
        if "started" in jobs.columns:
            ended &= jobs["started"].fillna(False).to_numpy(dtype=bool)
        if int(ended.sum()) < ONLINE_MIN:
            return pred
        y = np.log1p(np.maximum(run[ended], 0.0))
        order = np.argsort(end[ended], kind="stable")
        e_end = end[ended][order]
        lo_s = (pred[ended, 0] - y)[order]      # > 0: the job fell below its p10
        hi_s = (y - pred[ended, -1])[order]     # > 0: above its p90
        lo_level, hi_level = 1.0 - min(self.quantiles), max(self.quantiles)
        k = np.searchsorted(e_end, np.where(np.isfinite(sub), sub, -np.inf), side="left")
        out = pred.copy()
        w = int(self.online_window)
        for kk in np.unique(k[k >= ONLINE_MIN]):
            rows = k == kk
            a = max(0, kk - w)
            # widen only: the calibration windows' interval is the narrowest one given
            out[rows, 0] = pred[rows, 0] - max(0.0, _tail_offset(lo_s[a:kk], lo_level))
            out[rows, -1] = pred[rows, -1] + max(0.0, _tail_offset(hi_s[a:kk], hi_level))
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
        self.cell_medians_ = {str(k): float(v) for k, v in (d.get("cell_medians") or {}).items()}
        if self.choice_ != "model" and "*" not in self.cell_medians_:
            raise BundleError("RuntimePredictor: the chosen baseline's cell medians are missing from the bundle")
