"""Calendar covariates in each cluster's local time.

For a job submitted at UTC instant *t* on a cluster whose trace zone is UTC+o (Seren +08:00, Kalos
+00:00; for a zone given by name, e.g. an SWF trace's ``US/Pacific``, o is the zone's offset at *t*,
daylight saving included): local = t + o, ``hour`` = local hour of day (0–23), ``dow`` = local day of week (0 = Monday),
``weekend`` = ``dow >= 5``.
"""
from __future__ import annotations

import functools

import numpy as np
import pandas as pd

from acmemodel.clusters import cluster_timezones, utc_offset_seconds, zone_offsets


def local_seconds(jobs: pd.DataFrame, timezones: dict[str, str] | None = None,
                  time_col: str = "submit_s") -> np.ndarray:
    """Unix seconds shifted to each row's cluster local time (``t + offset``)."""
    tz = cluster_timezones(timezones=timezones)
    t = jobs[time_col].to_numpy(dtype=float)
    named = {c for c in pd.unique(jobs["cluster"]) if "/" in str(tz.get(c, ""))}
    if named:  # a named zone (e.g. US/Pacific): the offset at each instant, daylight saving included
        off = np.zeros(len(t))
        cl = jobs["cluster"].to_numpy()
        for c in named:
            m = cl == c
            off[m] = zone_offsets(tz[c], t[m])
        rest = ~np.isin(cl, list(named))
        if rest.any():
            off[rest] = jobs["cluster"][rest].map(lambda c: utc_offset_seconds(tz.get(c, "+00:00"))).to_numpy(float)
        return t + off
    offset_of = functools.lru_cache(maxsize=None)(lambda c: utc_offset_seconds(tz.get(c, "+00:00")))
    off = jobs["cluster"].map(offset_of).to_numpy(dtype=float)
    return t + off


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
