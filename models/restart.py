"""Time to restart after a failure: resubmission gap + queueing wait, as distributions.

Target (from :func:`acmemodel.features.chains.restart_chains`): for a FAILED job *f* whose logical job
was attempted again (*n*), the **gap** ``next_restart_gap_s = submit_n − end_f`` (until resubmission;
humans in the loop) and the **queue** wait ``next_queue_s`` of *n*; the **total** time to restart is
gap + queue. Each of the three is modelled separately (so ``total`` is not assumed to be the sum of
independent parts). Times are floored at ``clip_s`` (1 s) because the Gamma family and log scales
need positive values (a resubmission can precede the failure record by a second, queues are often 0).

Covariates x: ``log2(1 + GPUs)``, job type (levels with fewer than ``min_level_chains`` chains pooled
into ``"(rare)"``), ``log(attempt)``, ``night`` (failure at 22:00–07:59 cluster local time) and
``weekend`` (of the failure time), and ``failure_category`` when the table has that column (the public
trace does not). LightGBM also gets the raw local hour.

* ``method="glm"``: statsmodels GLM, Gamma family, log link: ``E[Y | x] = exp(xβ)``, dispersion φ
  (Pearson χ²/df); the predictive distribution of a row is ``Gamma(shape = 1/φ, scale = φ·exp(xβ))``.
  :meth:`RestartModel.summary` gives the coefficient table with 95 % intervals.
* ``method="lgbm"``: LightGBM regression of ``log Y`` (L2); predictive distribution
  ``LogNormal(median = exp(f(x)), σ)`` with σ the standard deviation of 3-fold out-of-fold residuals.
  Fitted only with at least ``min_lgbm_chains`` chains.
* **Published prior** (the paper's failure table): per failure reason *r* a log-normal matched to the
  published median and mean time to restart (minutes → seconds; ``σ² = 2 log(mean/median)``, floored at
  0.5², values floored at 0.05 min); a category (or all reasons) is the mixture over its reasons with
  weights ``num_r`` — times the GPU-demand likelihood of :mod:`acmemodel.models.failure_types` when
  ``gpus`` is given. It describes the *total* time to restart (restart − failure timestamp, which
  includes human reaction time). With fewer than ``min_chains`` chains the model **falls back** to the
  prior: ``fallback_`` is True, ``fallback_reason_`` says why, a :class:`DataWarning` is issued and
  :meth:`summary` reports it.

**Resubmission probability** ``q(c, y) = P(a failed GPU job of cluster c and type y is attempted
again)`` — the restart model owns it (synth, reproduce, calibrate and the planner ask
:meth:`RestartModel.resubmit_probability`). Fitted per cluster × type on the failed GPU jobs of the
training trace whatever ``method`` is (the chain's links: the data's chain columns, else the
conservative inference of :mod:`acmemodel.features.chains`) as the posterior mean under a
Beta prior of strength ``resubmit_prior_n`` pseudo-failures centred on the prior
``RESUBMIT_PRIOR[y]``::

    q(c, y) = (k + m · q0(y)) / (n + m),   n failures, k of them resubmitted, m = resubmit_prior_n

and, within it, per GPU bucket (edges 1, 8, 64, 256, 1,024) with at least ``resubmit_min_failed``
(30) failures, shrunk the same way towards ``q(c, y)``: ``q(c, y, b) = (k_b + m q(c, y)) / (n_b + m)``
(owners restart large training jobs, not small trials of the same type).
``q0``: 0.7 for Pretrain (:data:`RESUBMIT_PRIOR`; the paper reports that failed pretraining runs
are restarted but publishes no abandonment rate: an assumption) and :data:`DEFAULT_RESUBMIT_PROB`
(0) for every other type. A (cluster, type) without failures in the training data gets ``q0(y)``.
Modules: this one (the model) and :mod:`.restart_dist` (the distributions and the published prior).

``predict(X or **key)`` returns a :class:`RestartDistribution` (per-row distributions with ``mean``,
``median``, ``quantile``, ``cdf``, ``sample(n, rng)``); ``restart_distribution(category=None,
gpus=None)`` returns one :class:`MixtureDistribution` for the planner.
"""
from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
import pandas as pd

from acmemodel.errors import ConvergenceWarning, DataWarning
from acmemodel.models.base import BaseModel, register, unjson_float

COMPONENTS: tuple[str, ...] = ("gap", "queue", "total")
METHODS: tuple[str, ...] = ("glm", "lgbm")
_RARE = "(rare)"


from acmemodel.models.restart_dist import (  # noqa: E402
    PRIOR_SIGMA_MIN, MixtureDistribution, RestartDistribution, prior_distribution,
)
from acmemodel.models.restart_reports import RestartReportsMixin  # noqa: E402

#: prior resubmission probability per job type (module docstring; an assumption)
RESUBMIT_PRIOR: dict[str, float] = {"Pretrain": 0.7}
#: prior resubmission probability of every type not in RESUBMIT_PRIOR
DEFAULT_RESUBMIT_PROB = 0.0


def resubmit_prior(type_: str) -> float:
    """Prior resubmission probability of a job type (:data:`RESUBMIT_PRIOR`, else
    :data:`DEFAULT_RESUBMIT_PROB`)."""
    return float(RESUBMIT_PRIOR.get(str(type_), DEFAULT_RESUBMIT_PROB))


# ============================================================================ the model
@register
class RestartModel(RestartReportsMixin, BaseModel):
    """Time to restart after a failure (module docstring states the math).

    Parameters
    ----------
    method : default predictor, ``"glm"`` or ``"lgbm"`` (both are fitted when data allow), or
        ``"prior"``: use the published prior whatever the data (the calibrated default bundle).
    min_chains : fewer restart chains than this → fall back to the published prior.
    min_lgbm_chains : fewer chains → no LightGBM model (GLM only).
    min_level_chains : job types with fewer chains are pooled into ``"(rare)"``.
    clip_s : floor (seconds) of the targets.
    lgbm_params : extra LightGBM parameters (merged into the defaults).
    num_boost_round : LightGBM boosting rounds.
    random_state : seed of LightGBM and the out-of-fold split.
    resubmit_prior_n : strength (pseudo-failures) of the prior of the resubmission probability.

    Fitted attributes: ``resubmit_`` (per ``(cluster, type)``: ``n_failed``, ``n_resubmitted``,
    ``p``; see :meth:`resubmit_probability`), ``fallback_`` (bool), ``fallback_reason_``, ``n_chains_``, ``glm_`` (per
    component: coefficient table and dispersion), ``lgbm_sigma_``, ``levels_``, ``population_``
    (training covariate rows used to marginalise :meth:`restart_distribution`).
    """

    def __init__(self, *, method: str = "glm", min_chains: int = 30, min_lgbm_chains: int = 200,
                 min_level_chains: int = 10, clip_s: float = 1.0, lgbm_params: dict | None = None,
                 num_boost_round: int = 200, random_state: int = 0, resubmit_prior_n: float = 2.0,
                 resubmit_min_failed: int = 30):
        self.resubmit_prior_n = resubmit_prior_n
        self.resubmit_min_failed = resubmit_min_failed
        self.method = method
        self.min_chains = min_chains
        self.min_lgbm_chains = min_lgbm_chains
        self.min_level_chains = min_level_chains
        self.clip_s = clip_s
        self.lgbm_params = lgbm_params
        self.num_boost_round = num_boost_round
        self.random_state = random_state

    # ------------------------------------------------------------------ data
    def _validate(self) -> None:
        if self.method not in METHODS + ("prior",):
            raise ValueError(f"method must be one of {METHODS + ('prior',)}, got {self.method!r}")
        for name in ("min_chains", "min_lgbm_chains", "min_level_chains", "num_boost_round"):
            v = getattr(self, name)
            if not (isinstance(v, (int, np.integer)) and v >= 1):
                raise ValueError(f"{name} must be a positive integer, got {v!r}")
        if not (isinstance(self.clip_s, (int, float)) and self.clip_s > 0):
            raise ValueError(f"clip_s must be a positive number, got {self.clip_s!r}")
        m = self.resubmit_prior_n
        if not (isinstance(m, (int, float)) and not isinstance(m, bool) and math.isfinite(m) and m >= 0):
            raise ValueError(f"resubmit_prior_n must be a number >= 0, got {m!r}")
        if self.lgbm_params is not None and not isinstance(self.lgbm_params, dict):
            raise ValueError(f"lgbm_params must be a dict or None, got {self.lgbm_params!r}")

    @staticmethod
    def restart_frame(jobs, *, timezones: dict | None = None) -> pd.DataFrame:
        """The restarted failures of ``jobs`` with targets and covariates.

        Uses the chain columns when present (``build_features`` output), else computes
        :func:`~acmemodel.features.chains.restart_chains`. Hour / weekend are those of the failure
        (``end_s``) in cluster local time. Columns: ``gpu_num``, ``type``, ``attempt``, ``hour``,
        ``night``, ``weekend``, [``failure_category``], ``gap_s``, ``queue_s``, ``total_s``, ``end_s``.
        """
        from acmemodel.features.calendar import calendar_features

        if hasattr(jobs, "jobs") and hasattr(jobs, "timezones"):
            timezones = {**jobs.timezones, **(timezones or {})}
            jobs = jobs.jobs
        need = ("analysis_state", "gpu_num", "type", "cluster", "end_s")
        miss = [c for c in need if c not in jobs.columns]
        if miss:
            raise ValueError(f"jobs lacks column(s) {miss} needed for the restart model")
        if not {"next_restart_gap_s", "next_queue_s", "attempt"} <= set(jobs.columns):
            from acmemodel.features.chains import restart_chains

            ch = restart_chains(jobs)[["attempt", "next_restart_gap_s", "next_queue_s"]]
            jobs = jobs.drop(columns=[c for c in ch.columns if c in jobs.columns]).join(ch)
        rows = jobs[(jobs["analysis_state"] == "FAILED") & np.isfinite(jobs["next_restart_gap_s"])
                    & np.isfinite(jobs["next_queue_s"])]
        cal = calendar_features(rows, timezones, time_col="end_s")
        out = pd.DataFrame({
            "gpu_num": rows["gpu_num"].to_numpy(float), "type": rows["type"].astype(str).to_numpy(),
            "attempt": rows["attempt"].to_numpy(float), "hour": cal["hour"].to_numpy(float),
            "weekend": cal["weekend"].to_numpy(bool),
            "gap_s": rows["next_restart_gap_s"].to_numpy(float),
            "queue_s": rows["next_queue_s"].to_numpy(float), "end_s": rows["end_s"].to_numpy(float),
        }, index=rows.index)
        out["night"] = (out["hour"] >= 22) | (out["hour"] < 8)
        out["total_s"] = out["gap_s"] + out["queue_s"]
        if "failure_category" in rows.columns:
            out["failure_category"] = rows["failure_category"].astype(str).to_numpy()
        return out

    def _design(self, df: pd.DataFrame) -> pd.DataFrame:
        """GLM design (with intercept) from covariate columns using the fitted levels."""
        types = self.levels_["type"]
        t = df["type"].astype(str).map(lambda v: v if v in types else _RARE).to_numpy()
        X = {"Intercept": np.ones(len(df)),
             "log2_gpus": np.log2(1.0 + df["gpu_num"].to_numpy(float)),
             "log_attempt": np.log(np.maximum(df["attempt"].to_numpy(float), 1.0)),
             "night": df["night"].to_numpy(float), "weekend": df["weekend"].to_numpy(float)}
        for lv in types[1:]:
            X[f"type[{lv}]"] = (t == lv).astype(float)
        for lv in self.levels_.get("failure_category", [])[1:]:
            X[f"category[{lv}]"] = (df["failure_category"].astype(str).to_numpy() == lv).astype(float)
        return pd.DataFrame(X, index=df.index)

    def _lgbm_X(self, df: pd.DataFrame) -> np.ndarray:
        """LightGBM features (GLM design without intercept, plus the raw hour) as a float array."""
        X = self._design(df).drop(columns=["Intercept"])
        X["hour"] = df["hour"].to_numpy(float)
        return X.to_numpy(float)

    # ------------------------------------------------------------------ fit
    def fit(self, trace_or_jobs, *, timezones: dict | None = None) -> "RestartModel":
        """Fit on a jobs table with chain columns (or a Trace). Falls back to the prior when there are
        fewer than ``min_chains`` restart chains."""
        from acmemodel.models.blas import single_thread_blas

        with single_thread_blas():
            return self._fit(trace_or_jobs, timezones)

    def _fit(self, jobs, timezones) -> "RestartModel":
        self._validate()
        if hasattr(jobs, "jobs") and hasattr(jobs, "timezones"):
            timezones = {**jobs.timezones, **(timezones or {})}
            jobs = jobs.jobs
        if not {"next_restart_gap_s", "next_queue_s", "attempt"} <= set(jobs.columns) and len(jobs):
            from acmemodel.features.chains import restart_chains

            ch = restart_chains(jobs)
            # only the columns the fit reads are joined (_fit_resubmit, restart_frame): a join of the whole
            # job table copied every column (about 0.5 s of CPU per million jobs)
            read = [c for c in ("analysis_state", "gpu_num", "type", "cluster", "end_s", "failure_category")
                    if c in jobs.columns and c not in ch.columns]
            jobs = jobs[read].join(ch)
        self._fit_resubmit(jobs)
        fr = self.restart_frame(jobs, timezones=timezones)
        fr = fr[np.isfinite(fr["gpu_num"]) & np.isfinite(fr["attempt"])]
        self.n_chains_ = int(len(fr))
        self.glm_ = {}
        self._boosters = {}
        self.lgbm_sigma_ = {}
        self.levels_ = {"type": []}
        self.population_ = None
        if self.method == "prior":  # asked for: no warning
            self.fallback_ = True
            self.fallback_reason_ = "method='prior': the published time-to-restart prior (paper Table 3)"
            self.n_fit_ = self.n_chains_
            return self
        if len(fr) < self.min_chains:
            self.fallback_ = True
            self.fallback_reason_ = (f"only {len(fr)} restart chains (< min_chains={self.min_chains}): "
                                     "using the published time-to-restart prior (paper Table 3)")
            warnings.warn(self.fallback_reason_, DataWarning, stacklevel=3)
            self.n_fit_ = self.n_chains_
            return self
        self.fallback_ = False
        self.fallback_reason_ = ""
        tc = fr["type"].value_counts()
        keep = [t for t, n in tc.items() if n >= self.min_level_chains]
        rare = [t for t, n in tc.items() if n < self.min_level_chains]
        self.levels_ = {"type": keep + ([_RARE] if rare else []), "seen_type": sorted(map(str, tc.index))}
        if "failure_category" in fr.columns:
            self.levels_["failure_category"] = list(fr["failure_category"].value_counts().index)
        X = self._design(fr)
        X = X.loc[:, (X.std(axis=0) > 0) | (X.columns == "Intercept")]
        self.glm_columns_ = list(X.columns)
        for comp in COMPONENTS:
            y = np.maximum(fr[f"{comp}_s"].to_numpy(float), self.clip_s)
            self.glm_[comp] = self._fit_glm(X, y)
        if len(fr) >= self.min_lgbm_chains:
            for comp in COMPONENTS:
                y = np.log(np.maximum(fr[f"{comp}_s"].to_numpy(float), self.clip_s))
                self._boosters[comp], self.lgbm_sigma_[comp] = self._fit_lgbm(self._lgbm_X(fr), y)
        pop = fr[["gpu_num", "type", "attempt", "hour", "night", "weekend"]
                 + (["failure_category"] if "failure_category" in fr.columns else [])]
        if len(pop) > 500:
            pop = pop.sample(500, random_state=self.random_state)
        self.population_ = pop.reset_index(drop=True)
        self.n_fit_ = self.n_chains_
        return self

    def _fit_resubmit(self, jobs: pd.DataFrame) -> None:
        """``resubmit_`` from the failed GPU jobs and their chain links (module docstring)."""
        self.resubmit_, self.resubmit_buckets_ = {}, {}
        if not len(jobs) or "next_restart_gap_s" not in jobs.columns:
            return
        f = jobs[(jobs["analysis_state"] == "FAILED").to_numpy() & (jobs["gpu_num"].to_numpy(float) > 0)]
        again = np.isfinite(f["next_restart_gap_s"].to_numpy(float))
        m = float(self.resubmit_prior_n)
        g = pd.DataFrame({"cluster": f["cluster"].astype(str).to_numpy(), "type": f["type"].astype(str).to_numpy(),
                          "k": again.astype(float)}).groupby(["cluster", "type"], sort=True)["k"].agg(["size", "sum"])
        for (cl, ty), r in g.iterrows():
            n, k = int(r["size"]), int(r["sum"])
            q0 = resubmit_prior(ty)
            self.resubmit_[(cl, ty)] = {"n_failed": n, "n_resubmitted": k, "p": (k + m * q0) / (n + m)}
        from acmemodel.features.keys import gpu_bucket

        self.resubmit_buckets_ = {}
        gb = pd.DataFrame({"cluster": f["cluster"].astype(str).to_numpy(), "type": f["type"].astype(str).to_numpy(),
                           "b": np.asarray(gpu_bucket(f["gpu_num"].to_numpy(float)), dtype=object).astype(str),
                           "k": again.astype(float)}).groupby(["cluster", "type", "b"], sort=True)["k"].agg(["size", "sum"])
        for (cl, ty, bk), r in gb.iterrows():
            n, k = int(r["size"]), int(r["sum"])
            if n >= int(self.resubmit_min_failed):
                q = self.resubmit_[(cl, ty)]["p"]
                self.resubmit_buckets_[(cl, ty, bk)] = {"n_failed": n, "n_resubmitted": k, "p": (k + m * q) / (n + m)}

    def resubmit_probability(self, *, cluster: str | None = None, type: str | None = None,
                             gpus: float | None = None) -> float:
        """``q(cluster, type[, GPU bucket of gpus])``: probability that a failed GPU job is
        resubmitted (module docstring). A missing key is marginalised (failure-weighted over the
        fitted cells); a type that is neither in the fit nor one of the AcmeTrace job types
        (``KNOWN_TYPES``, which the prior covers) raises ``ValueError`` naming the known types; a
        (cluster, type) without training failures gets the prior of its type; a bucket without its
        own estimate gets the (cluster, type) one."""
        self._check_fitted()
        cells = getattr(self, "resubmit_", {}) or {}
        if type is not None and cells:  # a type neither fitted nor an AcmeTrace type is an error, not a prior
            from acmemodel.models.cells import check_key_values
            from acmemodel.trace.schema import KNOWN_TYPES

            seen = {ty for _, ty in cells} | set(self.levels_.get("seen_type") or []) | set(KNOWN_TYPES)
            check_key_values({"type": type}, {"type": sorted(seen)}, "RestartModel")
        if gpus is not None and cluster is not None and type is not None:
            from acmemodel.features.keys import gpu_bucket

            bk = str(np.asarray(gpu_bucket(np.array([float(gpus)])), dtype=object)[0])
            c = (getattr(self, "resubmit_buckets_", {}) or {}).get((str(cluster), str(type), bk))
            if c:
                return float(c["p"])
        if cluster is not None and type is not None:
            c = cells.get((str(cluster), str(type)))
            return float(c["p"]) if c else resubmit_prior(str(type))
        sel = [c for (cl, ty), c in cells.items()
               if (cluster is None or cl == str(cluster)) and (type is None or ty == str(type))]
        n = sum(c["n_failed"] for c in sel)
        if not sel or n == 0:
            return resubmit_prior(str(type)) if type is not None else DEFAULT_RESUBMIT_PROB
        return float(sum(c["p"] * c["n_failed"] for c in sel) / n)

    def resubmit_table(self) -> pd.DataFrame:
        """The fitted resubmission probabilities: cluster, type, n_failed, n_resubmitted, p, prior."""
        self._check_fitted()
        rows = [{"cluster": cl, "type": ty, **c, "prior": resubmit_prior(ty)}
                for (cl, ty), c in sorted((getattr(self, "resubmit_", {}) or {}).items())]
        return pd.DataFrame(rows, columns=["cluster", "type", "n_failed", "n_resubmitted", "p", "prior"])

    def _fit_glm(self, X: pd.DataFrame, y: np.ndarray) -> dict:
        # (the modules themselves: statsmodels.api imports all of statsmodels, ~1 s)
        from statsmodels.genmod import families
        from statsmodels.genmod.generalized_linear_model import GLM

        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                res = GLM(y, X, family=families.Gamma(link=families.links.Log())).fit(scale="X2")
            if not (np.isfinite(res.scale) and res.scale > 0 and np.all(np.isfinite(res.params))):
                raise ValueError("degenerate fit")
        except (ValueError, np.linalg.LinAlgError) as e:
            # e.g. constant targets: moment fit of an intercept-only Gamma
            warnings.warn(f"restart GLM failed ({e}); using an intercept-only moment fit",
                          ConvergenceWarning, stacklevel=3)
            m, v = float(np.mean(y)), float(np.var(y))
            cols = ["Intercept"]
            nan = [float("nan")]
            return {"coef": [math.log(m)], "se": nan, "lower": nan, "upper": nan, "pvalue": nan,
                    "scale": max(v / m ** 2, 1e-6), "columns": cols, "n": int(len(y)),
                    "deviance": float("nan")}
        ci = res.conf_int(0.05)
        return {"coef": res.params.to_numpy().tolist(), "se": res.bse.to_numpy().tolist(),
                "lower": ci.iloc[:, 0].to_numpy().tolist(), "upper": ci.iloc[:, 1].to_numpy().tolist(),
                "pvalue": res.pvalues.to_numpy().tolist(), "scale": float(res.scale),
                "columns": list(X.columns), "n": int(len(y)), "deviance": float(res.deviance)}

    def _lgbm_params(self) -> dict:
        p = {"objective": "regression", "learning_rate": 0.05, "num_leaves": 15, "min_data_in_leaf": 20,
             "verbose": -1, "seed": self.random_state, "deterministic": True, "num_threads": 1}
        p.update(self.lgbm_params or {})
        return p

    def _fit_lgbm(self, X: pd.DataFrame, y: np.ndarray):
        from acmemodel.models.lgbm_text import import_lightgbm

        lgb = import_lightgbm()

        params = self._lgbm_params()
        rng = np.random.default_rng(self.random_state)
        fold = rng.integers(0, 3, len(y))
        oof = np.empty(len(y))
        for k in range(3):
            tr = fold != k
            b = lgb.train(params, lgb.Dataset(X[tr], y[tr]), num_boost_round=self.num_boost_round)
            oof[~tr] = b.predict(X[~tr])
        sigma = float(np.std(y - oof, ddof=1))
        booster = lgb.train(params, lgb.Dataset(X, y), num_boost_round=self.num_boost_round)
        return booster, max(sigma, 1e-3)

    # ------------------------------------------------------------------ prediction
    def _rows_from(self, X, key) -> pd.DataFrame:
        if X is None:
            X = pd.DataFrame([key]) if key else None
        elif key:
            raise ValueError("give either X or keyword covariates, not both")
        if X is None:
            raise ValueError("predict needs X (a DataFrame) or keyword covariates such as gpu_num=")
        X = X.copy()
        if "gpus" in X.columns and "gpu_num" not in X.columns:
            X = X.rename(columns={"gpus": "gpu_num"})
        defaults = {"type": self.levels_["type"][0] if self.levels_["type"] else "Other", "attempt": 1,
                    "hour": 12, "weekend": False}
        if "type" not in X.columns and self.levels_.get("type"):
            self._warn_once("frame_type", f"RestartModel.predict: X has no 'type' column; every row is predicted "
                            f"as type {defaults['type']!r} (give the column, or ask with keyword covariates to "
                            f"marginalise over the fitted population)")
        for c, v in defaults.items():
            if c not in X.columns:
                X[c] = v
        if "gpu_num" not in X.columns:
            raise ValueError("covariates need gpu_num (or gpus)")
        self._check_types(X["type"])
        if "night" not in X.columns:
            h = X["hour"].to_numpy(float)
            X["night"] = (h >= 22) | (h < 8)
        if "failure_category" in self.levels_ and "failure_category" not in X.columns:
            X["failure_category"] = self.levels_["failure_category"][0]
        return X

    def _warn_once(self, what: str, message: str) -> None:
        """One :class:`DataWarning` per model and kind of substitution."""
        done = self.__dict__.setdefault("_warned", set())
        if what not in done:
            done.add(what)
            warnings.warn(message, DataWarning, stacklevel=4)

    def _check_types(self, types) -> None:
        """ValueError naming the key and the known values for a type the fit never saw."""
        from acmemodel.models.cells import check_key_values

        seen = self.levels_.get("seen_type") or [t for t in self.levels_.get("type", []) if t != _RARE]
        if not seen:  # (the published prior: no type covariate)
            return
        for t in pd.unique(pd.Series(types).astype(str)):
            if t == _RARE:
                continue
            check_key_values({"type": t}, {"type": seen}, "RestartModel")

    def predict(self, X: pd.DataFrame | None = None, *, component: str = "total",
                method: str | None = None, **key) -> RestartDistribution | MixtureDistribution:
        """Predictive distribution per row of ``X`` (or for the keyword covariates).

        Covariates: ``gpu_num`` (or ``gpus``), ``type``, ``attempt``, ``hour`` (local hour of the
        failure), ``weekend``, ``night`` (derived from hour if absent), ``failure_category`` (only if
        fitted with it). Keyword covariates follow the package's key semantics: those not given are
        **marginalised** over the fitted population of restarted failures (the answer is then the
        :class:`MixtureDistribution` of :meth:`restart_distribution`); with ``gpu_num``, ``type``,
        ``attempt``, ``hour`` and ``weekend`` all given, a one-row :class:`RestartDistribution`. An
        unseen ``type`` raises ``ValueError`` naming the known types. A frame ``X`` is predicted row
        by row; a missing column is filled (``attempt`` 1, ``hour`` 12, ``weekend`` False; ``type``
        the first fitted level, with a :class:`DataWarning`). In fallback mode, or with
        ``method="prior"``, each row gets the published prior given its GPUs (total only).
        """
        self._check_fitted()
        if component not in COMPONENTS:
            raise ValueError(f"component must be one of {COMPONENTS}, got {component!r}")
        method = method or self.method
        if method not in METHODS + ("prior",):
            raise ValueError(f"method must be one of {METHODS + ('prior',)}, got {method!r}")
        if X is None and key and not (self.fallback_ or method == "prior"):
            given = {"gpu_num" if k == "gpus" else k for k in key}
            if not {"gpu_num", "type", "attempt", "hour", "weekend"} <= given:  # marginalise the rest
                cov = {k: v for k, v in key.items() if k not in ("gpu_num", "gpus", "failure_category")}
                bad = sorted(set(cov) - {"type", "attempt", "hour", "weekend", "night"})
                if bad:
                    raise ValueError(f"unknown covariate(s) {bad}; known: gpu_num (gpus), type, attempt, hour, "
                                     f"weekend, night, failure_category")
                g = key.get("gpu_num", key.get("gpus"))
                cat = key.get("failure_category") if "failure_category" in self.levels_ else None
                return self.restart_distribution(cat, None if g is None else float(g), component=component,
                                                 method=method, **cov)
        df = self._rows_from(X, key)
        if self.fallback_ or method == "prior":
            if component != "total":
                raise ValueError("the published prior covers the total time to restart only "
                                 f"(component={component!r})")
            return self._prior_rows(df)
        if method == "lgbm" and component not in self._boosters:
            raise ValueError(f"no LightGBM model (fewer than min_lgbm_chains={self.min_lgbm_chains} "
                             "chains); use method='glm'")
        if method == "glm":
            g = self.glm_[component]
            Xd = self._design(df).reindex(columns=g["columns"], fill_value=0.0)
            mu = np.exp(Xd.to_numpy(float) @ np.asarray(g["coef"]))
            phi = g["scale"]
            return RestartDistribution("gamma", source="glm", shape=np.full(len(mu), 1.0 / phi),
                                       scale=mu * phi)
        pred = self._boosters[component].predict(self._lgbm_X(df))
        return RestartDistribution("lognormal", source="lgbm", median=np.exp(pred),
                                   sigma=np.full(len(pred), self.lgbm_sigma_[component]))

    def _prior_rows(self, df: pd.DataFrame) -> RestartDistribution:
        """Per-row log-normal approximations (matched mean and median of the prior mixture)."""
        med, sig = [], []
        cache: dict = {}
        for g in df["gpu_num"].to_numpy(float):
            if g not in cache:
                m = prior_distribution(gpus=g)
                md, mn = m.median(), m.mean()
                cache[g] = (md, math.sqrt(max(2 * math.log(max(mn / md, 1.0)), PRIOR_SIGMA_MIN ** 2)))
            med.append(cache[g][0])
            sig.append(cache[g][1])
        return RestartDistribution("lognormal", source="prior", median=med, sigma=sig)

    def restart_distribution(self, category: str | None = None, gpus: float | None = None, *,
                             reason: str | None = None, component: str = "total",
                             method: str | None = None, **covariates) -> MixtureDistribution:
        """One time-to-restart distribution (seconds) for the planner.

        * ``category`` / ``reason`` given and the model was not fitted with ``failure_category``
          (the public trace has none), or the model fell back: the published prior of that category
          or reason (``.source == "prior"``);
        * otherwise the fitted regression, marginalised over the training population of restarted
          failures (their type, attempt, hour, weekend mix) with ``gpu_num`` set to ``gpus`` when
          given (``.source`` ``"glm"`` / ``"lgbm"``); ``covariates`` (e.g. ``type="Pretrain"``,
          ``attempt=1``) override population columns.

        Returns a :class:`MixtureDistribution` with ``mean()``, ``median()``, ``quantile(q)``,
        ``interval(level)``, ``cdf(x)``, ``sample(n, rng)``.
        """
        self._check_fitted()
        if gpus is not None and (not np.isfinite(gpus) or gpus < 0):
            raise ValueError(f"gpus must be finite and >= 0, got {gpus!r}")
        by_cat = (category is not None or reason is not None) and "failure_category" not in self.levels_
        if self.fallback_ or by_cat or method == "prior":
            if component != "total":
                raise ValueError("the published prior covers the total time to restart only "
                                 f"(component={component!r})")
            return prior_distribution(category, reason=reason, gpus=gpus)
        pop = self.population_.copy()
        if gpus is not None:
            pop["gpu_num"] = float(gpus)
        if category is not None:
            pop["failure_category"] = category
        for c, v in covariates.items():
            if c not in ("type", "attempt", "hour", "weekend", "night"):
                raise ValueError(f"unknown covariate {c!r}")
            pop[c] = v
        if "type" in covariates:
            self._check_types([covariates["type"]])
        if "hour" in covariates and "night" not in covariates:
            h = pop["hour"].to_numpy(float)
            pop["night"] = (h >= 22) | (h < 8)
        return self.predict(pop, component=component, method=method).mixture()

    # ------------------------------------------------------------------ serialisation
    def artifacts(self) -> dict[str, str]:
        return {f"lgbm_{c}": b.model_to_string() for c, b in self._boosters.items()}

    def _fitted_to_dict(self) -> dict[str, Any]:
        return {"n_chains": self.n_chains_, "fallback": self.fallback_,
                "fallback_reason": self.fallback_reason_, "glm": self.glm_,
                "glm_columns": getattr(self, "glm_columns_", []), "lgbm_sigma": self.lgbm_sigma_,
                "levels": self.levels_,
                "resubmit": [{"cluster": cl, "type": ty, **c} for (cl, ty), c in
                             sorted((getattr(self, "resubmit_", {}) or {}).items())],
                "resubmit_buckets": [{"cluster": cl, "type": ty, "bucket": bk, **c} for (cl, ty, bk), c in
                                     sorted((getattr(self, "resubmit_buckets_", {}) or {}).items())],
                "population": None if self.population_ is None else self.population_.to_dict(orient="list")}

    def _fitted_from_dict(self, d: dict[str, Any], artifacts: dict[str, str]) -> None:
        self.n_chains_ = int(d["n_chains"])
        self.fallback_ = bool(d["fallback"])
        self.fallback_reason_ = d["fallback_reason"]
        self.glm_ = {c: {**g, "scale": unjson_float(g["scale"])} for c, g in d["glm"].items()}
        self.glm_columns_ = list(d["glm_columns"])
        self.lgbm_sigma_ = {c: float(v) for c, v in d["lgbm_sigma"].items()}
        self.levels_ = {k: list(v) for k, v in d["levels"].items()}
        self.resubmit_ = {(r["cluster"], r["type"]): {"n_failed": int(r["n_failed"]),
                                                      "n_resubmitted": int(r["n_resubmitted"]),
                                                      "p": float(r["p"])} for r in d.get("resubmit", [])}
        self.resubmit_buckets_ = {(r["cluster"], r["type"], r["bucket"]): {
            "n_failed": int(r["n_failed"]), "n_resubmitted": int(r["n_resubmitted"]), "p": float(r["p"])}
            for r in d.get("resubmit_buckets", [])}
        self.population_ = None if d["population"] is None else pd.DataFrame(d["population"])
        from acmemodel.models.lgbm_text import booster_from_text

        self._boosters = {name[len("lgbm_"):]: booster_from_text(text, f"booster {name!r}")
                          for name, text in artifacts.items() if name.startswith("lgbm_")}
        self.n_fit_ = self.n_chains_
