"""Time-ordered train/test splits. Never random: models are judged on the future they predict."""
from __future__ import annotations

import numpy as np
import pandas as pd


def time_split(jobs: pd.DataFrame, *, test_fraction: float | None = None, cutoff=None,
               time_col: str = "submit_s") -> tuple[pd.DataFrame, pd.DataFrame]:
    """Split ``jobs`` by submission time into (train, test).

    Exactly one of
    * ``cutoff`` — a timestamp (anything ``pd.Timestamp`` accepts, naive = UTC) or Unix seconds: train
      holds jobs submitted strictly before it, test the rest;
    * ``test_fraction`` — default ``1/6`` (the last month of a six-month trace): the cutoff is the
      time ``t0 + (1 - test_fraction) * (t1 - t0)`` over the submission-time span ``[t0, t1]``.

    Raises ``ValueError`` naming the parameter when a side would be empty.
    """
    if cutoff is not None and test_fraction is not None:
        raise ValueError("give either cutoff= or test_fraction=, not both")
    t = jobs[time_col].to_numpy(dtype=float)
    if len(t) == 0:
        raise ValueError("time_split: no jobs to split")
    if cutoff is None:
        frac = 1 / 6 if test_fraction is None else float(test_fraction)
        if not 0 < frac < 1:
            raise ValueError(f"test_fraction must be in (0, 1), got {test_fraction!r}")
        t0, t1 = np.nanmin(t), np.nanmax(t)
        cut = t0 + (1 - frac) * (t1 - t0)
    elif isinstance(cutoff, (int, float, np.number)):
        cut = float(cutoff)
    else:
        ts = pd.Timestamp(cutoff)
        ts = ts.tz_localize("UTC") if ts.tzinfo is None else ts.tz_convert("UTC")
        cut = ts.value / 1e9
    train_mask = t < cut
    train, test = jobs[train_mask], jobs[~train_mask]
    if len(train) == 0 or len(test) == 0:
        raise ValueError(f"time_split: cutoff {cut:.0f} s leaves an empty "
                         f"{'train' if len(train) == 0 else 'test'} set ({len(jobs)} jobs)")
    return train, test
