"""Category-conditioned queueing-delay model: ``QueueModel``.

Queueing delay ``W`` (seconds; ``start − submit``) per cell — by default cluster × type × GPU-size
bucket — as a **hurdle** model: an explicit atom ``π0 = P(W <= atom_s)`` (default ``atom_s = 1``
second: in Seren about half of evaluation jobs start within a second) plus a continuous family for
the excess ``W − atom_s`` of the jobs that wait (minutes to hours). Jobs cancelled while still
queued (``queue_censored``) are **right-censored** waits: they contribute ``log S(c − atom_s)`` to
the continuous part's likelihood (censored MLE for every family: Weibull profile equation,
L-BFGS for the other log-location-scale families and the gamma, EM with truncated-normal moments for
the mixture, Kaplan–Meier atoms for the empirical family) and count as "not immediate" in ``π0``.
They are neither dropped nor treated as zeros. Family selection, back-off, sparse/degenerate
handling as in :mod:`acmemodel.models._duration`.

The final state is *not* a default key: it is decided after the wait, and every queued-then-
cancelled job is CANCELLED, so conditioning on it would confound waiting with cancelling.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd

from acmemodel.features.keys import DEFAULT_BACKOFF, DEFAULT_GPU_EDGES
from acmemodel.models._duration import DurationModel
from acmemodel.models.base import register
from acmemodel.models.distributions import FAMILIES

__all__ = ["QueueModel"]


@register
class QueueModel(DurationModel):
    """Queueing delay (seconds) per cell: atom at ``<= atom_s`` + censored-MLE continuous part.

    Parameters (keyword-only) as :class:`~acmemodel.models.runtime.RuntimeModel`, except the
    default ``keys=("cluster", "type", "gpu_bucket")`` and ``atom_s`` (default 1.0 s): waits of
    at most this many seconds form the "immediate start" atom.

    Fitted attributes: ``cells_``, ``n_fit_`` (GPU jobs with a wait, censored ones included).
    :meth:`p_immediate` gives ``π0`` of a cell.
    """

    _required = ("cluster", "type", "gpu_num", "queue_s", "queue_censored")
    _kind = "queueing delay"

    def __init__(self, *, keys: Sequence[str] = ("cluster", "type", "gpu_bucket"),
                 min_jobs: int = 200, min_jobs_coarsest: int | None = 30,
                 backoff: Sequence[str] = DEFAULT_BACKOFF,
                 families: Sequence[str] = tuple(FAMILIES), selection: str = "heldout",
                 gpu_only: bool = True, gpu_edges: Sequence[int] = DEFAULT_GPU_EDGES,
                 max_fit_jobs: int = 20000, atom_s: float = 1.0):
        self.keys = keys
        self.min_jobs = min_jobs
        self.min_jobs_coarsest = min_jobs_coarsest
        self.backoff = backoff
        self.families = families
        self.selection = selection
        self.gpu_only = gpu_only
        self.gpu_edges = gpu_edges
        self.max_fit_jobs = max_fit_jobs
        self.atom_s = atom_s

    def _validate_params(self) -> None:
        super()._validate_params()
        if not (isinstance(self.atom_s, (int, float)) and 0 <= self.atom_s < np.inf):
            raise ValueError(f"atom_s must be a finite number >= 0, got {self.atom_s!r}")

    def _threshold(self) -> float:
        return float(self.atom_s)

    def _observations(self, jobs: pd.DataFrame) -> pd.DataFrame:
        mask = self._gpu_rows(jobs, jobs["queue_s"].notna().to_numpy())
        sub = jobs.loc[mask]
        x = np.maximum(sub["queue_s"].to_numpy(dtype=float), 0.0)
        c = sub["queue_censored"].fillna(False).astype(bool).to_numpy()
        return self._frame(sub, x, c)

    def p_immediate(self, **key) -> float:
        """``π0``: probability that a job of cell ``key`` starts within ``atom_s`` seconds."""
        return self.resolve(**key).value.p_atom
