"""Category-conditioned run-time model: ``RuntimeModel``.

The paper's first lesson: one distribution for "a job" is meaningless — a ~2-minute GPU-job
median hides evaluation jobs of seconds to minutes and pretraining jobs of hours to days. So the run
time ``X = end − start`` (seconds, started GPU jobs) is modelled per **cell** — by default
cluster × type × GPU-size bucket × final (analysis) state — as a hurdle distribution: an explicit
point mass at zero-second runs plus a continuous family chosen per cell by held-out
log-likelihood with the one-standard-error rule (details, and why not BIC, in
:mod:`acmemodel.models._duration`). Cells with fewer than ``min_jobs`` jobs back off to coarser
cells: drop state, then GPU bucket, then cluster (type is kept), then the all-jobs cell.

Jobs still running when the trace was extracted (``run_censored``) enter as right-censored run
times in the cells without the state key (their final state is unknown); they are left out of the
state probabilities.

The final-state probabilities ``P(state | cluster, type, gpu_bucket)`` (over started jobs) are part
of the model, with the same back-off, so :meth:`RuntimeModel.sample_jobs` draws (state, run time)
pairs: a job's kind determines whether — and how early — it fails.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import pandas as pd

from acmemodel.features.keys import DEFAULT_BACKOFF, DEFAULT_GPU_EDGES
from acmemodel.models._duration import DurationModel
from acmemodel.models.base import register
from acmemodel.models.cells import CellTable
from acmemodel.models.distributions import FAMILIES

__all__ = ["RuntimeModel"]

STATES = ("COMPLETED", "CANCELLED", "FAILED")


@register
class RuntimeModel(DurationModel):
    """Run time (seconds) per cell with back-off, zero-second atom and state probabilities.

    Parameters (keyword-only; validated by ``fit``)
    ----------
    keys : cell keys, default ``("cluster", "type", "gpu_bucket", "state")`` (``state`` is the
        analysis state COMPLETED / CANCELLED / FAILED).
    min_jobs : minimum started jobs for a cell to get its own fit (default 200).
    min_jobs_coarsest : threshold of the coarsest non-root cells — type only, by default — (default
        30; ``None`` = ``min_jobs``). Backing off from "Pretrain" to "all jobs" would replace hours by
        the ~2-minute all-job median, the very error this model exists to avoid; 30 jobs are enough
        for a two-parameter family (the one-SE/BIC rule keeps it simple at that size).
    backoff : order in which keys are dropped (default ``state``, ``gpu_bucket``, ``cluster``).
    families : candidate families (names from :data:`acmemodel.models.distributions.FAMILIES`).
    selection : ``"heldout"`` (default; held-out log-likelihood + 1-SE rule) or ``"bic"``.
    gpu_only : fit GPU jobs only (``is_gpu``; default True — the paper's statistics are per GPU job).
    gpu_edges : GPU-size bucket edges.
    max_fit_jobs : cap on the values used for family fitting/selection per cell (systematic
        thinning in time order; default 20 000).
    atom_s : runs of at most this many seconds form the atom (default 0: exactly-zero runs); the same
        name as :class:`~acmemodel.models.queue.QueueModel`'s atom. ``zero_s`` is its earlier name
        (accepted for one release, with a DeprecationWarning).

    Fitted attributes: ``cells_`` (:class:`~acmemodel.models.cells.CellTable` of
    :class:`~acmemodel.models._duration.DurationCell`), ``states_`` (CellTable of state counts),
    ``n_fit_`` (jobs used).

    Example::

        m = RuntimeModel().fit(trace)
        m.quantile([0.1, 0.5, 0.9], cluster="Seren", type="Eval", gpus=1, state="COMPLETED")
        m.sample_jobs(1000, np.random.default_rng(0), cluster="Kalos", type="Pretrain", gpus=256)
    """

    _required = ("cluster", "type", "analysis_state", "gpu_num", "started", "run_s")
    _kind = "run time"

    def __init__(self, *, keys: Sequence[str] = ("cluster", "type", "gpu_bucket", "state"),
                 min_jobs: int = 200, min_jobs_coarsest: int | None = 30,
                 backoff: Sequence[str] = DEFAULT_BACKOFF,
                 families: Sequence[str] = tuple(FAMILIES), selection: str = "heldout",
                 gpu_only: bool = True, gpu_edges: Sequence[int] = DEFAULT_GPU_EDGES,
                 max_fit_jobs: int = 20000, atom_s: float = 0.0, zero_s: float | None = None):
        self.keys = keys
        self.min_jobs = min_jobs
        self.min_jobs_coarsest = min_jobs_coarsest
        self.backoff = backoff
        self.families = families
        self.selection = selection
        self.gpu_only = gpu_only
        self.gpu_edges = gpu_edges
        self.max_fit_jobs = max_fit_jobs
        if zero_s is not None:
            import warnings

            warnings.warn("RuntimeModel(zero_s=...) is now atom_s= (as in QueueModel)", DeprecationWarning,
                          stacklevel=2)
            atom_s = zero_s
        self.atom_s = atom_s
        self.zero_s = None

    def _validate_params(self) -> None:
        super()._validate_params()
        if not (isinstance(self.atom_s, (int, float)) and 0 <= self.atom_s < np.inf):
            raise ValueError(f"atom_s must be a finite number >= 0, got {self.atom_s!r}")

    def _threshold(self) -> float:
        return float(self.atom_s)

    def _observations(self, jobs: pd.DataFrame) -> pd.DataFrame:
        started = jobs["started"].fillna(False).astype(bool).to_numpy() & jobs["run_s"].notna().to_numpy()
        mask = self._gpu_rows(jobs, started)
        sub = jobs.loc[mask]
        x = np.maximum(sub["run_s"].to_numpy(dtype=float), 0.0)
        # jobs still running at extraction: run time right-censored there
        cens = (sub["run_censored"].fillna(False).to_numpy(dtype=bool) if "run_censored" in sub.columns
                else np.zeros(len(sub), bool))
        f = self._frame(sub, x, cens)
        if "state" not in f.columns:
            f["state"] = sub["analysis_state"].astype(str).reindex(f.index)
        return f

    def _exclude_cells(self) -> dict[str, tuple[str, ...]]:
        # a running job has no final state: it informs the state-free cells only
        return {"state": ("RUNNING",)}

    def _fit_extra(self, frame: pd.DataFrame) -> None:
        skeys = tuple(k for k in self.keys if k != "state")

        def count(sub, cell, parent):
            fin = sub.loc[sub["state"] != "RUNNING", "state"]  # (final states only)
            if not len(fin) and parent is not None:
                return dict(parent.value)
            return {str(k): int(v) for k, v in fin.value_counts().items()}

        self.states_ = CellTable(skeys, order=tuple(self.backoff), min_jobs=int(self.min_jobs),
                                 min_jobs_coarsest=self.min_jobs_coarsest,
                                 gpu_edges=tuple(self.gpu_edges)).fit(frame, count)

    # ------------------------------------------------------------------ states
    def state_probabilities(self, **key) -> dict[str, float]:
        """``P(state | cell)`` over started jobs, state → probability (the ``state`` key, if given,
        is ignored). Key semantics as for run times: keys not given are marginalised (count-weighted
        mixture of the fitted cells), unknown values raise, back-off is warned."""
        self._check_fitted()
        key = {k: v for k, v in key.items() if k != "state"}
        a = self.states_.query(type(self).__name__, **key)
        probs: dict[str, float] = {}
        for w, part in zip(a.weights, a.parts):
            tot = sum(part.value.values())
            for s, c in part.value.items():
                probs[s] = probs.get(s, 0.0) + w * c / tot
        return {s: probs[s] for s in sorted(probs, key=lambda s: (-probs[s], s))}

    def sample_jobs(self, n: int, rng: np.random.Generator, **key) -> pd.DataFrame:
        """``n`` jobs of cell ``key``: DataFrame(state, run_s) — state drawn from
        :meth:`state_probabilities`, then the run time (s) from that state's cell."""
        if not isinstance(rng, np.random.Generator):
            raise ValueError("rng must be a numpy Generator (np.random.default_rng(seed))")
        n = int(n)
        key = {k: v for k, v in key.items() if k != "state"}
        probs = self.state_probabilities(**key)
        states = np.array(list(probs), dtype=object)
        p = np.array(list(probs.values()))
        draw = states[rng.choice(states.size, size=n, p=p / p.sum())] if n else states[:0]
        run = np.empty(n, dtype=float)
        for s in states:
            m = draw == s
            k = int(m.sum())
            if k:
                run[m] = self.sample(k, rng, state=s, **key) if "state" in self.keys else \
                    self.sample(k, rng, **key)
        return pd.DataFrame({"state": draw.astype(str), "run_s": run})

    # ------------------------------------------------------------------ serialisation
    def _fitted_to_dict(self) -> dict[str, Any]:
        d = super()._fitted_to_dict()
        d["states"] = self.states_.to_dict(lambda v: v)
        return d

    def _fitted_from_dict(self, d: dict[str, Any], artifacts: dict[str, str]) -> None:
        super()._fitted_from_dict(d, artifacts)
        self.states_ = CellTable.from_dict(d["states"], lambda v: {k: int(c) for k, c in v.items()})
