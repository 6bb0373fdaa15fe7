"""Calendar covariates in each cluster's local time.

For a job submitted at UTC instant *t* on a cluster whose trace zone is UTC+o (Seren +08:00, Kalos
+00:00): local = t + o, ``hour`` = local hour of day (0–23), ``dow`` = local day of week (0 = Monday),
``weekend`` = ``dow >= 5``.
"""
from __future__ import annotations

import functools

import numpy as np
import pandas as pd

from acmemodel.clusters import cluster_timezones, utc_offset_seconds


def local_seconds(jobs: pd.DataFrame, timezones: dict[str, str] | None = None,
                  time_col: str = "submit_s") -> np.ndarray:
    """Unix seconds shifted to each row's cluster local time (``t + offset``)."""
    tz = cluster_timezones(timezones=timezones)
    offset_of = functools.lru_cache(maxsize=None)(lambda c: utc_offset_seconds(tz.get(c, "+00:00")))
    off = jobs["cluster"].map(offset_of).to_numpy(dtype=float)
    return jobs[time_col].to_numpy(dtype=float) + off


def calendar_features(jobs: pd.DataFrame, timezones: dict[str, str] | None = None,
                      time_col: str = "submit_s") -> pd.DataFrame:
    """``hour``, ``dow`` (0 = Monday) and ``weekend`` of each job's submission, in local time."""
    loc = local_seconds(jobs, timezones, time_col)
    days = np.floor(loc / 86400.0)
    hour = np.floor((loc - days * 86400.0) / 3600.0)
    dow = (days + 3) % 7  # 1970-01-01 was a Thursday (dow 3)
    ok = np.isfinite(loc)
    return pd.DataFrame({
        "hour": np.where(ok, hour, -1).astype(np.int16),
        "dow": np.where(ok, dow, -1).astype(np.int16),
        "weekend": ok & (dow >= 5),
    }, index=jobs.index)
