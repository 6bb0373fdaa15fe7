"""The strong point-prediction baselines of :class:`~acmemodel.models.predictor.RuntimePredictor`: what a
scheduler would use instead of a model, all on the log scale ``y = ln(1 + run_s)``.

* ``cell_median`` — the median of ``y`` over the training jobs of the job's cluster × type × GPU bucket
  (:func:`acmemodel.features.keys.gpu_bucket`), backing off to cluster × type and to all jobs below
  :data:`CELL_MIN_JOBS` jobs (:func:`cell_medians`, :func:`cell_median_of`);
* ``user_median`` — the user's running median run time of the same cluster and type
  (``user_prior_median_run_s``, :func:`acmemodel.features.history.user_history`: only jobs that ended
  before the submission), the cell median when the user has no ended job yet;
* ``name_median`` — the job-name template's running median (``name_prior_median_run_s``,
  :mod:`acmemodel.features.names`), then the user's, then the cell's — when the trace has job names.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["CELL_MIN_JOBS", "cell_medians", "cell_median_of", "baseline_predictions"]

#: fewest training jobs for a cell's own median (``cell_median``; fewer: the coarser cell's)
CELL_MIN_JOBS = 5


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
