"""What real traces carry beyond AcmeTrace's columns: job names, partitions/QoS/VCs, requests.

* :func:`name_key` — a job name reduced to its *template*: lower case, runs of digits → ``#``, so
  ``eval_mmlu_step1200`` and ``eval_mmlu_step1400`` share ``eval_mmlu_step#``;
* :func:`name_token` — the first alphabetic token of the name (``eval``, ``pretrain``, ``sft``);
* :func:`name_history` — per job, over earlier jobs of the same cluster and name template: the
  number submitted before it (``name_prior_jobs``) and the median run time of those that had *ended*
  before its submission (``name_prior_median_run_s``, NaN if none) — the same no-leakage rule as
  :mod:`acmemodel.features.history`;
* :func:`jobs_with_extras` — a Trace's jobs with its source columns (``job_name``, ``partition``,
  ``qos``, ``vc``, ``restart_of``) joined from ``Trace.extras``.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from acmemodel.features.history import prior_history

#: source columns of imported traces that the predictor may use (categorical)
SOURCE_COLUMNS: tuple[str, ...] = ("partition", "qos", "vc")


def name_key(names) -> pd.Series:
    s = pd.Series(names, dtype=object).fillna("").astype(str).str.strip().str.lower()
    return s.str.replace(r"\d+", "#", regex=True)


def name_token(names) -> pd.Series:
    s = pd.Series(names, dtype=object).fillna("").astype(str).str.lower()
    tok = s.str.extract(r"([a-z]+)", expand=False)
    return tok.fillna("")


def name_history(jobs: pd.DataFrame) -> pd.DataFrame:
    """``name_prior_jobs`` and ``name_prior_median_run_s`` (module docstring), on ``jobs.index``;
    NaN everywhere when the jobs have no ``job_name``."""
    if "job_name" not in jobs.columns or not len(jobs):
        return pd.DataFrame({"name_prior_jobs": np.full(len(jobs), np.nan),
                             "name_prior_median_run_s": np.full(len(jobs), np.nan)}, index=jobs.index)
    tmp = jobs[[c for c in ("cluster", "submit_s", "end_s", "run_s", "analysis_state", "run_censored")
                if c in jobs.columns]].copy()
    tmp["_name"] = name_key(jobs["job_name"].to_numpy(object)).to_numpy(object)
    cnt, med, _ = prior_history(tmp, ["cluster", "_name"])
    named = (tmp["_name"] != "").to_numpy()
    return pd.DataFrame({"name_prior_jobs": np.where(named, cnt, np.nan),
                         "name_prior_median_run_s": np.where(named, med, np.nan)}, index=jobs.index)


def jobs_with_extras(trace) -> pd.DataFrame:
    """``trace.jobs`` plus the ``job_name``/``partition``/``qos``/``vc``/``restart_of`` columns of ``trace.extras``
    (strings) when present; a DataFrame is returned as it is."""
    if not hasattr(trace, "jobs"):
        return trace
    jobs = trace.jobs
    ex = getattr(trace, "extras", None)
    cols = [c for c in ("job_name",) + SOURCE_COLUMNS + ("restart_of",)
            if ex is not None and c in ex.columns and c not in jobs.columns]
    if not cols:
        return jobs
    out = jobs.copy()
    for c in cols:
        out[c] = ex[c].astype(object).where(ex[c].notna(), None).to_numpy(object)
    return out
