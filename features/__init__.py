"""Conditioning keys and covariates derived from a trace (installed as ``acmemodel.features``).

* :mod:`~acmemodel.features.keys` — GPU-size buckets, cells, back-off;
* :mod:`~acmemodel.features.calendar` — hour, day of week, weekend in cluster local time;
* :mod:`~acmemodel.features.history` — user history strictly from the past;
* :mod:`~acmemodel.features.chains` — restart chains and evaluation batches.

:func:`build_features` joins them all onto the jobs table.
"""
from __future__ import annotations

from typing import Sequence

import pandas as pd

from acmemodel.features.keys import (  # noqa: F401
    CELL_KEYS, DEFAULT_BACKOFF, DEFAULT_GPU_EDGES, Cell, backoff_chain, bucket_bounds, bucket_labels,
    gpu_bucket, normalize_key,
)


def build_features(jobs, timezones: dict[str, str] | None = None, *,
                   gpu_edges: Sequence[int] = DEFAULT_GPU_EDGES, window_s: float | None = None,
                   batch_gap_s: float | None = None) -> pd.DataFrame:
    """``jobs`` (a DataFrame or a :class:`~acmemodel.trace.Trace`) with every feature column added:

    ``gpu_bucket``, ``hour``, ``dow``, ``weekend``, ``user_prior_jobs``, ``user_prior_median_run_s``,
    ``user_prior_fail_frac``, ``chain_id``, ``attempt``, ``prev_index``, ``restart_gap_s``,
    ``next_index``, ``next_restart_gap_s``, ``next_queue_s``, ``batch_id``, ``batch_size``.
    """
    from acmemodel.features.calendar import calendar_features
    from acmemodel.features.chains import DEFAULT_BATCH_GAP_S, DEFAULT_WINDOW_S, batches, restart_chains
    from acmemodel.features.history import user_history

    if hasattr(jobs, "jobs") and hasattr(jobs, "timezones"):
        from acmemodel.features.names import jobs_with_extras

        timezones = {**jobs.timezones, **(timezones or {})}
        jobs = jobs_with_extras(jobs)  # (job names, partitions, restart links of imported traces)
    out = jobs.copy()
    out["gpu_bucket"] = gpu_bucket(out["gpu_num"].to_numpy(), gpu_edges)
    parts = [
        calendar_features(jobs, timezones),
        user_history(jobs),
        restart_chains(jobs, DEFAULT_WINDOW_S if window_s is None else window_s),
        batches(jobs, DEFAULT_BATCH_GAP_S if batch_gap_s is None else batch_gap_s),
    ]
    for p in parts:
        for c in p.columns:
            out[c] = p[c]
    return out
