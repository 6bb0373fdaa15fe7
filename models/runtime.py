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

Left-truncated jobs (``left_truncated``: running before the trace began, e.g. instances without a
creation time) are **left out of the fit and counted** (``n_left_truncated_``): their ``run_s`` is
only the part after the trace start and their age at that start is unknown, so neither the density
f(t) nor the delayed-entry term f(t)/S(a) can be written for them; counting the part as a complete
run would bias the run times short, and as right-censored at it long (jobs alive at the trace start
are a length-biased sample). The jobs that started inside the trace, with right censoring at the
extraction, are an unbiased sample of run times.

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
    min_jobs : minimum started jobs for a cell to get its own fit (default 50). The large-GPU cells
        (a few hundred pretraining runs per bucket) hold most of the GPU time; at 200 their
        cancelled and completed runs were pooled (Kalos Pretrain 257–1,024 GPUs: 170 cancelled runs,
        median 1,539 s, answered by the bucket's all-state median 567 s), which cost the synthetic
        Kalos trace 15 pp of its cancelled GPU time (42 % instead of 57 %); 50 runs are enough for a two-parameter family
        (the selection rule keeps it simple at that size).
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
        name as :class:`~acmemodel.models.queue.QueueModel`'s atom.

    size_law : run time grows with GPU count inside a cell (default True). Per cluster × type a
        log-log slope ``β`` is fitted by least squares *within cells*, ``log2(run + 1) = α_cell + β
        log2(g) + ε`` (the buckets already carry the between-bucket differences), shrunk towards 0 by
        ``n / (n + 200)`` and clipped to [0, 1] (run time grows or stays; 0 with fewer than 30 jobs or no
        size variation inside cells); a cell's law is its fitted distribution at the cell's mean ``log2
        g`` (``lg_ref``), and a query with ``gpus=g`` scales it: ``run(g) = run_cell · 2^(β (log2 g' −
        lg_ref))`` with ``log2 g'`` clipped to the range of the cell's own jobs (no extrapolation) (so within a
        GPU bucket, and in a cell that backed off from its bucket, a 512-GPU job runs longer than a
        64-GPU job when ``β > 0``). Queries without ``gpus`` get the cell's law unscaled.

    pooling : ``"heldout"`` (default): each cell's law is pooled with its parent's, ``w = n/(n + k)``, ``k``
        and the kept keys chosen by the log-likelihood of the latest 20 % of the jobs
        (:mod:`acmemodel.models._duration`); ``"none"``: every cell its own fit.

    Fitted attributes: ``cells_`` (:class:`~acmemodel.models.cells.CellTable` of
    :class:`~acmemodel.models._duration.DurationCell`), ``pool_`` (the pooling choice), ``states_`` (CellTable of state counts),
    ``size_slope_`` ({"cluster/type": β}), ``max_run_`` ({cluster: longest fitted run, s}), ``run_max_``
    (CellTable of each cluster × type × GPU bucket cell's longest fitted run, s; samples are capped at
    :meth:`max_run`), ``lg_ref_`` (CellTable of each cell's [mean, min, max] log2 GPUs),
    ``n_fit_`` (jobs used).

    Example::

        m = RuntimeModel().fit(trace)
        m.quantile([0.1, 0.5, 0.9], cluster="Seren", type="Eval", gpus=1, state="COMPLETED")
        m.sample_jobs(1000, np.random.default_rng(0), cluster="Kalos", type="Pretrain", gpus=256)
    """

    _required = ("cluster", "type", "analysis_state", "gpu_num", "started", "run_s")
    _kind = "run time"

    def __init__(self, *, keys: Sequence[str] = ("cluster", "type", "gpu_bucket", "state"),
                 min_jobs: int = 50, min_jobs_coarsest: int | None = 30,
                 backoff: Sequence[str] = DEFAULT_BACKOFF,
                 families: Sequence[str] = tuple(FAMILIES), selection: str = "heldout",
                 gpu_only: bool = True, gpu_edges: Sequence[int] = DEFAULT_GPU_EDGES,
                 max_fit_jobs: int = 20000, atom_s: float = 0.0,
                 size_law: bool = True, pooling: str = "heldout"):
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
        self.size_law = size_law
        self.pooling = pooling

    def _validate_params(self) -> None:
        super()._validate_params()
        if not isinstance(self.size_law, bool):
            raise ValueError(f"size_law must be True or False, got {self.size_law!r}")
        if not (isinstance(self.atom_s, (int, float)) and 0 <= self.atom_s < np.inf):
            raise ValueError(f"atom_s must be a finite number >= 0, got {self.atom_s!r}")

    def _threshold(self) -> float:
        return float(self.atom_s)

    def _observations(self, jobs: pd.DataFrame) -> pd.DataFrame:
        started = jobs["started"].fillna(False).astype(bool).to_numpy() & jobs["run_s"].notna().to_numpy()
        # left-truncated runs: out of the fit, counted (module docstring)
        lt = (jobs["left_truncated"].fillna(False).to_numpy(dtype=bool) if "left_truncated" in jobs.columns
              else np.zeros(len(jobs), bool))
        self.n_left_truncated_ = int(self._gpu_rows(jobs, started & lt).sum())
        mask = self._gpu_rows(jobs, started & ~lt)
        sub = jobs.loc[mask]
        x = np.maximum(sub["run_s"].to_numpy(dtype=float), 0.0)
        # jobs still running at extraction: run time right-censored there
        cens = (sub["run_censored"].fillna(False).to_numpy(dtype=bool) if "run_censored" in sub.columns
                else np.zeros(len(sub), bool))
        f = self._frame(sub, x, cens)
        if "state" not in f.columns:
            f["state"] = sub["analysis_state"].astype(str).reindex(f.index)
        f["_lg"] = np.log2(np.maximum(sub["gpu_num"].to_numpy(dtype=float), 1.0))[sub.index.get_indexer(f.index)]
        f["_cl"] = sub["cluster"].astype(str).reindex(f.index).to_numpy()
        f["_ty"] = sub["type"].astype(str).reindex(f.index).to_numpy()
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
            return {str(k): int(v) for k, v in fin.astype(str).value_counts().items()}

        self.states_ = CellTable(skeys, order=tuple(self.backoff), min_jobs=int(self.min_jobs),
                                 min_jobs_coarsest=self.min_jobs_coarsest,
                                 gpu_edges=tuple(self.gpu_edges)).fit(frame, count, columns=("state",))
        # the longest run seen per cluster: samples never exceed it (a cluster's time limit; heavy-tailed families
        # such as the log-logistic otherwise draw centuries now and then)
        self.max_run_ = {str(c): float(v) for c, v in frame.groupby("_cl")["x"].max().items()}
        # ... and per cell (cluster x type x GPU bucket, backing off like the state cells): a cell's draws
        # stay within the longest run of its own jobs (the largest jobs' few multi-day runs hold much of a
        # cluster's GPU time; a tail drawn beyond them is GPU time the trace never had)
        self.run_max_ = CellTable(skeys, order=tuple(self.backoff), min_jobs=int(self.min_jobs),
                                  min_jobs_coarsest=self.min_jobs_coarsest,
                                  gpu_edges=tuple(self.gpu_edges)).fit(frame, lambda sub, c, p: float(sub["x"].max()),
                                                                       columns=("x",))
        # size law (class docstring): slope per cluster x type, reference log2 GPUs per run-time cell. The slope is
        # the within-cell one (fixed effects: log2 run and log2 GPUs centred in each finest cell), so it does not
        # count again the size differences the GPU buckets already carry
        self.size_slope_ = {}
        if self.size_law:
            fine = [k for k in self.keys if k in frame.columns]
            y_all = np.log2(frame["x"].to_numpy(float) + 1.0)
            lg_all = frame["_lg"].to_numpy(float)
            grp = (frame.groupby(fine, sort=False, observed=True).ngroup().to_numpy() if fine
                   else np.zeros(len(frame), int))
            yc = y_all - pd.Series(y_all).groupby(grp).transform("mean").to_numpy()
            lc = lg_all - pd.Series(lg_all).groupby(grp).transform("mean").to_numpy()
            for (cl, ty), idx in frame.groupby(["_cl", "_ty"], sort=True).indices.items():
                n = len(idx)
                v = float(np.mean(lc[idx] ** 2))
                if n < 30 or v < 1e-9:
                    continue
                b = float(np.mean(lc[idx] * yc[idx]) / v)
                self.size_slope_[f"{cl}/{ty}"] = float(np.clip(b * n / (n + 200.0), 0.0, 1.0))
        self.lg_ref_ = CellTable(tuple(self.keys), order=tuple(self.backoff), min_jobs=int(self.min_jobs),
                                 min_jobs_coarsest=self.min_jobs_coarsest,
                                 gpu_edges=tuple(self.gpu_edges)).fit(
            frame, lambda sub, c, p: [float(sub["_lg"].mean()), float(sub["_lg"].min()), float(sub["_lg"].max())],
            columns=("_lg",))

    # ------------------------------------------------------------------ size law
    def size_factor(self, **key) -> float:
        """``2^(β (log2 g − lg_ref))`` for a query with ``gpus=g`` (1.0 without ``gpus``, or without a
        slope for its cluster × type); class docstring."""
        self._check_fitted()
        g = key.get("gpus")
        slopes = getattr(self, "size_slope_", None) or {}
        if g is None or not slopes or key.get("cluster") is None or key.get("type") is None:
            return 1.0
        b = slopes.get(f"{key['cluster']}/{key['type']}", 0.0)
        if b == 0.0:
            return 1.0
        ref, lo, hi = self.lg_ref_.resolve(**key).value
        return float(2.0 ** (b * (np.clip(np.log2(max(float(g), 1.0)), lo, hi) - ref)))

    def size_factors(self, gpus, **key) -> np.ndarray:
        """:meth:`size_factor` for each GPU count of ``gpus`` (same cell ``key`` otherwise)."""
        g = np.asarray(gpus, dtype=float)
        out = np.ones(len(g))
        for v in np.unique(g):
            out[g == v] = self.size_factor(**{**key, "gpus": int(v)})
        return out

    def sample(self, n: int, rng: np.random.Generator, **key) -> np.ndarray:
        """``n`` run times (s) of cell ``key``, scaled by the size law when ``gpus`` is given, at most
        :meth:`max_run` of the key."""
        x = super().sample(n, rng, **key) * self.size_factor(**key)
        cap = self.max_run(**key)
        return np.minimum(x, cap) if cap is not None else x

    def max_run(self, **key) -> float | None:
        """Longest run (s) the model was fitted on in the cell of ``key`` — cluster × type × GPU bucket,
        the ``state`` key ignored; a cell with fewer than ``min_jobs`` runs, or a key that omits a level,
        takes the first fitted cell on its back-off chain, i.e. the longest run of the jobs it pools —
        and never above the cluster's (``max_run_``); ``None`` without a cluster. Samples are capped
        there: a fitted family's tail is not extrapolated beyond the runs the cell has seen."""
        self._check_fitted()
        cl = (getattr(self, "max_run_", None) or {}).get(str(key.get("cluster")))
        tab = getattr(self, "run_max_", None)
        if cl is None or tab is None:
            return cl
        cell = tab.resolve(**{k: v for k, v in key.items() if k != "state"}).value
        return min(float(cell), cl)

    def quantile(self, q, **key) -> np.ndarray:
        return super().quantile(q, **key) * self.size_factor(**key)

    def cdf(self, x, **key) -> np.ndarray:
        return super().cdf(np.asarray(x, dtype=float) / self.size_factor(**key), **key)

    def median(self, **key) -> float:
        return float(super().median(**key) * self.size_factor(**key))

    # ------------------------------------------------------------------ states
    def state_probabilities(self, **key) -> dict[str, float]:
        """``P(state | cell)`` over started jobs, state → probability (the ``state`` key, if given,
        is ignored). Key semantics as for run times: keys not given are marginalised (count-weighted
        mixture of the fitted cells), unknown values raise, back-off is warned."""
        self._check_fitted()
        key = {k: v for k, v in key.items() if k != "state"}
        a = self.states_.query(f"{type(self).__name__} state mix", **key)
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
        d["size_slope"] = dict(getattr(self, "size_slope_", {}) or {})
        d["max_run"] = dict(getattr(self, "max_run_", {}) or {})
        lg = getattr(self, "lg_ref_", None)
        d["lg_ref"] = None if lg is None else lg.to_dict(lambda v: v)
        rm = getattr(self, "run_max_", None)
        d["run_max"] = None if rm is None else rm.to_dict(lambda v: v)
        return d

    def _fitted_from_dict(self, d: dict[str, Any], artifacts: dict[str, str]) -> None:
        super()._fitted_from_dict(d, artifacts)
        self.states_ = CellTable.from_dict(d["states"], lambda v: {k: int(c) for k, c in v.items()})
        self.size_slope_ = {str(k): float(v) for k, v in (d.get("size_slope") or {}).items()}
        self.max_run_ = {str(k): float(v) for k, v in (d.get("max_run") or {}).items()}
        self.lg_ref_ = None if d.get("lg_ref") is None else CellTable.from_dict(
            d["lg_ref"], lambda v: [float(x) for x in v])
        self.run_max_ = None if d.get("run_max") is None else CellTable.from_dict(d["run_max"], float)
        if self.lg_ref_ is None:
            self.size_slope_ = {}
