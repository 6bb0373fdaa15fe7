"""Monte Carlo simulator of one training run under failures (C kernel ``montecarlo.c``).

A run of ``W`` seconds of failure-free compute on ``g`` GPUs checkpoints every ``τ`` seconds of work
(blocking cost ``C``; the last, possibly shorter, segment also ends with a checkpoint). Failures of the
job come from a renewal process (:mod:`acmemodel.planner.run.processes`, the process *at the job's size*;
use ``failure.scaled(g / g_ref)`` to scale a per-size rate): the hazard clock restarts at every
failure. Each failure gets a type from a :class:`FailureMix` (probabilities; the types compete with
proportional hazards) and is followed by a restart time drawn from that type's distribution; a failure
during a restart interrupts it. Work since the last completed checkpoint is lost.

Per replica: wall time ``T``, number of failures, and the decomposition
``T = W + lost work + restart downtime + checkpoint overhead`` (exact), with lost work + restart
attributed to failure types. GPU time lost = ``g ×`` those seconds. ETTR = ``W / T``.

Randomness: replica ``r`` uses its own stream seeded from ``(seed, r)`` (splitmix64 → xoshiro256**),
so results are reproducible and independent of the number of threads. Every failure consumes the same
four uniforms whatever the configuration, so runs that differ only in ``τ``, ``C`` or restart scaling
see the same failure history (common random numbers).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from acmemodel.planner.run.checkpoint import STATUS_REASONS, _kernels, expected_time
from acmemodel.planner.run.processes import FailureProcess, RestartTime


@dataclass(frozen=True)
class FailureType:
    """One failure type: name, probability that a failure is of this type, restart-time distribution."""

    name: str
    probability: float
    restart: RestartTime
    category: str = ""


#: failure-table types per (gpus, cluster) (:meth:`FailureMix.from_failure_table` without probabilities):
#: the table and the prior are shipped data, and planning sweeps ask for the same mix thousands of times
_TABLE_TYPES: dict = {}


class FailureMix:
    """The failure-type mix: probabilities (normalised to 1) and per-type restart times.

    Build with :meth:`single` (one anonymous type), :meth:`from_failure_table` (the paper's Table 3)
    or directly from :class:`FailureType` objects.
    """

    def __init__(self, types: Sequence[FailureType]):
        types = list(types)
        if not types:
            raise ValueError("a FailureMix needs at least one FailureType")
        p = np.array([t.probability for t in types], dtype=float)
        if np.any(~np.isfinite(p)) or np.any(p < 0) or p.sum() <= 0:
            raise ValueError(f"failure-type probabilities must be finite, >= 0, with a positive sum; got {p}")
        for t in types:
            if t.restart.kind == "mixture":
                raise ValueError(f"failure type {t.name!r}: restart must be a single distribution, not a mixture")
        names = [t.name for t in types]
        if len(set(names)) != len(names):
            raise ValueError(f"failure-type names must be unique, got {names}")
        p = p / p.sum()
        self.types = [FailureType(t.name, float(pi), t.restart, t.category) for t, pi in zip(types, p)]

    @classmethod
    def single(cls, restart, name: str = "failure") -> "FailureMix":
        """One failure type with restart time ``restart`` (seconds or a :class:`RestartTime`)."""
        return cls([FailureType(name, 1.0, RestartTime.coerce(restart))])

    @classmethod
    def from_failure_table(cls, gpus: float | None = None, *, probabilities: Mapping[str, float] | None = None,
                           cluster: str | None = None) -> "FailureMix":
        """Mix from the paper's failure table (``acmemodel.datasets.published.load_failure_table``).

        Probabilities: ``probabilities`` if given (reason → weight), else the failure-table prior for a
        job of ``gpus`` GPUs (``acmemodel.models.failure_types.failure_type_mix(gpus)``, which weighs
        each reason's count by how typical ``gpus`` is for it). Restart time per reason: log-normal
        from the published mean and median time to restart (``RestartTime.from_mean_median``).
        """
        if probabilities is None:
            key = (None if gpus is None else float(gpus), cluster)
            if key not in _TABLE_TYPES:
                _TABLE_TYPES[key] = cls._table_types(gpus, None, cluster)
            return cls(_TABLE_TYPES[key])  # __init__ copies the types: the cache is never shared
        return cls(cls._table_types(gpus, probabilities, cluster))

    @staticmethod
    def _table_types(gpus, probabilities, cluster) -> list:
        from acmemodel.datasets.published import load_failure_table

        tab = load_failure_table()
        if probabilities is None:
            from acmemodel.models.failure_types import failure_type_mix

            probabilities = failure_type_mix(gpus, cluster=cluster).to_dict()
        types = []
        for _, row in tab.iterrows():
            p = float(probabilities.get(row["reason"], 0.0))
            if p <= 0:
                continue
            rt = RestartTime.from_mean_median(60.0 * row["time_to_restart_avg_min"],
                                              60.0 * row["time_to_restart_median_min"])
            types.append(FailureType(str(row["reason"]), p, rt, str(row["category"])))
        unknown = set(probabilities) - set(tab["reason"])
        if unknown:
            raise ValueError(f"unknown failure reasons {sorted(unknown)}")
        return types

    # ------------------------------------------------------------------ views
    @property
    def names(self) -> list[str]:
        return [t.name for t in self.types]

    @property
    def probabilities(self) -> np.ndarray:
        return np.array([t.probability for t in self.types])

    @property
    def categories(self) -> list[str]:
        return [t.category for t in self.types]

    def restart_distribution(self) -> RestartTime:
        """The restart time of a random failure: the probability-weighted mixture over types."""
        return RestartTime.mixture([t.restart for t in self.types], self.probabilities)

    def adjusted(self, *, rate_multipliers: Mapping[str, float] | None = None,
                 restart_factors: Mapping[str, float] | None = None) -> tuple["FailureMix", float]:
        """Apply per-type failure-rate multipliers and restart-time factors.

        Keys are failure-type names or categories (a name wins over its category); unknown keys raise.
        A multiplier ``m_j`` scales type ``j``'s hazard (types compete with proportional hazards), so
        the new mix is ``p_j m_j / Σ p m`` and the total hazard is multiplied by ``Σ_j p_j m_j``,
        returned as the second element. A restart factor multiplies that type's restart times.
        """
        rate_multipliers = dict(rate_multipliers or {})
        restart_factors = dict(restart_factors or {})
        known = set(self.names) | set(self.categories)
        for label, d in (("failure-rate multiplier", rate_multipliers), ("restart factor", restart_factors)):
            bad = sorted(set(d) - known)
            if bad:
                raise ValueError(f"{label} for unknown failure type/category {bad}; known: {sorted(known)}")
            for k, v in d.items():
                if not (isinstance(v, (int, float)) and math.isfinite(v) and v >= 0):
                    raise ValueError(f"{label} for {k!r} must be a finite number >= 0, got {v!r}")

        def pick(d, t):
            return d.get(t.name, d.get(t.category, 1.0))

        m = np.array([pick(rate_multipliers, t) for t in self.types], dtype=float)
        p = self.probabilities
        total = float((p * m).sum())
        if total <= 0:
            raise ValueError("failure-rate multipliers remove every failure type; use a failure-free run")
        types = [FailureType(t.name, float(pi * mi / total), t.restart.scaled(pick(restart_factors, t)),
                             t.category) for t, pi, mi in zip(self.types, p, m)]
        return FailureMix([t for t in types if t.probability > 0]), total

    def kernel_arrays(self):
        """``(type_prob, restart_kind, restart_a, restart_b)`` for the C kernel."""
        specs = [t.restart.kernel_spec() for t in self.types]
        return (self.probabilities.astype(float), np.array([s[0] for s in specs], dtype=np.int32),
                np.array([s[1] for s in specs], dtype=float), np.array([s[2] for s in specs], dtype=float))

    def to_frame(self) -> pd.DataFrame:
        return pd.DataFrame({"type": self.names, "category": self.categories,
                             "probability": self.probabilities,
                             "restart_mean_s": [t.restart.mean for t in self.types]})


@dataclass
class RunSimulation:
    """Per-replica results of :func:`simulate_run` (seconds unless stated).

    ``wall_s``, ``n_failures``, ``lost_work_s``, ``restart_s``, ``checkpoint_s`` (n,),
    ``type_loss_s`` / ``type_count`` (n, J) lost work + restart seconds / failures by type,
    ``finished`` (n,) bool. ``status`` 0 if the run finishes, else a code of
    :data:`~acmemodel.planner.run.checkpoint.STATUS_REASONS` with ``reason``.
    """

    work_s: float
    interval_s: float
    ckpt_cost_s: float
    gpus: int
    type_names: list[str]
    wall_s: np.ndarray
    n_failures: np.ndarray
    lost_work_s: np.ndarray
    restart_s: np.ndarray
    checkpoint_s: np.ndarray
    type_loss_s: np.ndarray
    type_count: np.ndarray
    finished: np.ndarray
    status: int = 0
    reason: str = ""
    seed: int = 0
    extra: dict = field(default_factory=dict)

    @property
    def n_replicas(self) -> int:
        return int(np.size(self.wall_s))

    @property
    def finishes(self) -> bool:
        return self.status == 0

    @property
    def ettr(self) -> np.ndarray:
        """Per-replica ETTR ``W / T``."""
        return self.work_s / self.wall_s if self.n_replicas else np.array([])

    def completion_time(self) -> dict:
        """``{"mean", "sd", "se", "p50", "p90", "p99"}`` of the wall time (None if it does not finish)."""
        if not self.finishes:
            return {k: None for k in ("mean", "sd", "se", "p50", "p90", "p99")}
        w = self.wall_s
        sd = float(w.std(ddof=1)) if w.size > 1 else 0.0
        q = np.quantile(w, [0.5, 0.9, 0.99])
        return {"mean": float(w.mean()), "sd": sd, "se": sd / math.sqrt(w.size),
                "p50": float(q[0]), "p90": float(q[1]), "p99": float(q[2])}

    def gpu_time_loss_gpu_h(self) -> dict:
        """Expected GPU-hours not spent on useful work, split by cause and by failure type."""
        if not self.finishes:
            return {"total": None, "lost_work": None, "restart": None, "checkpoint": None,
                    "by_failure_type": {n: None for n in self.type_names}}
        f = self.gpus / 3600.0
        lw, rs, ck = (float(a.mean()) * f for a in (self.lost_work_s, self.restart_s, self.checkpoint_s))
        by = self.type_loss_s.mean(axis=0) * f
        return {"total": lw + rs + ck, "lost_work": lw, "restart": rs, "checkpoint": ck,
                "by_failure_type": {n: float(v) for n, v in zip(self.type_names, by)}}

    def summary(self) -> pd.DataFrame:
        """Mean, standard error and quantiles of each per-replica quantity (rows)."""
        cols = {"wall_s": self.wall_s, "n_failures": self.n_failures, "lost_work_s": self.lost_work_s,
                "restart_s": self.restart_s, "checkpoint_s": self.checkpoint_s, "ettr": self.ettr}
        rows = []
        for k, v in cols.items():
            v = np.asarray(v, dtype=float)
            sd = v.std(ddof=1) if v.size > 1 else 0.0
            q = np.quantile(v, [0.1, 0.5, 0.9]) if v.size else [np.nan] * 3
            rows.append({"quantity": k, "mean": v.mean(), "se": sd / math.sqrt(max(v.size, 1)), "sd": sd,
                         "p10": q[0], "p50": q[1], "p90": q[2]})
        return pd.DataFrame(rows).set_index("quantity")

    def by_type(self) -> pd.DataFrame:
        """Per failure type: mean failures per run and mean GPU-hours lost (lost work + restart)."""
        return pd.DataFrame({"type": self.type_names, "failures": self.type_count.mean(axis=0),
                             "gpu_h": self.type_loss_s.mean(axis=0) * self.gpus / 3600.0}).set_index("type")

    def to_dict(self) -> dict:
        ct = self.completion_time()
        return {
            "finishes": self.finishes, "reason": self.reason or None, "gpus": self.gpus,
            "work_s": self.work_s, "checkpoint_interval_s": self.interval_s, "ckpt_cost_s": self.ckpt_cost_s,
            "n_replicas": self.n_replicas, "seed": self.seed,
            "completion_time_s": {k: ct[k] for k in ("mean", "p50", "p90")},
            "expected_failures": float(self.n_failures.mean()) if self.finishes else None,
            "ettr": float(self.work_s / self.wall_s.mean()) if self.finishes else 0.0,
            "gpu_time_loss_gpu_h": self.gpu_time_loss_gpu_h(),
        }


def _dnf(work, tau, C, gpus, names, status, reason, seed) -> RunSimulation:
    z = np.zeros(0)
    J = len(names)
    return RunSimulation(work, tau, C, gpus, names, z, np.zeros(0, np.int64), z, z, z, np.zeros((0, J)),
                         np.zeros((0, J), np.int32), np.zeros(0, bool), status, reason, seed)


def simulate_run(*, work: float, interval: float, ckpt_cost: float, failure: FailureProcess,
                 mix: FailureMix | None = None, restart=None, gpus: int = 1, n_replicas: int = 10_000,
                 seed: int = 0, threads: int = 1, max_slowdown: float = 1000.0,
                 backend: str = "c") -> RunSimulation:
    """Simulate ``n_replicas`` independent runs (see module docstring).

    Parameters
    ----------
    work : failure-free compute ``W`` (s, > 0).
    interval : checkpoint interval ``τ`` (s of work, > 0).
    ckpt_cost : blocking checkpoint cost ``C`` (s, >= 0).
    failure : failure process of the job at its size (one scenario).
    mix : failure-type mix; default one type with restart time ``restart``.
    restart : seconds or :class:`RestartTime`, used when ``mix`` is None (default 0).
    gpus : GPUs of the run (only scales GPU-time losses).
    seed : non-negative integer; ``threads`` : worker threads (results do not depend on it).
    max_slowdown : a run whose expected wall time (renewal model) exceeds ``max_slowdown × W`` is
        reported as not finishing without simulating; replicas are also stopped at
        ``max_slowdown × W`` of wall time (``status`` 3 if any is).
    backend : ``"c"`` or ``"numpy"`` (the slow reference twin).
    """
    for name, v, lo_ok in (("work", work, False), ("interval", interval, False), ("ckpt_cost", ckpt_cost, True)):
        if not (isinstance(v, (int, float, np.floating, np.integer)) and math.isfinite(v)
                and (v >= 0 if lo_ok else v > 0)):
            raise ValueError(f"{name} must be a finite number {'>= 0' if lo_ok else '> 0'} seconds, got {v!r}")
    if not isinstance(failure, FailureProcess) or failure.batch_shape != ():
        raise ValueError("failure must be a single-scenario FailureProcess")
    if int(n_replicas) != n_replicas or n_replicas < 1:
        raise ValueError(f"n_replicas must be a positive integer, got {n_replicas!r}")
    if int(seed) != seed or seed < 0 or seed >= 2 ** 64:
        raise ValueError(f"seed must be an integer in [0, 2**64), got {seed!r}")
    if int(threads) != threads or threads < 1:
        raise ValueError(f"threads must be a positive integer, got {threads!r}")
    if int(gpus) != gpus or gpus < 1:
        raise ValueError(f"gpus must be a positive integer, got {gpus!r}")
    if not (math.isfinite(max_slowdown) and max_slowdown > 1):
        raise ValueError(f"max_slowdown must be a finite number > 1, got {max_slowdown!r}")
    if mix is None:
        mix = FailureMix.single(0.0 if restart is None else restart)
    elif restart is not None:
        raise ValueError("give either mix or restart, not both")
    W, tau, C = float(work), float(interval), float(ckpt_cost)
    names = mix.names
    mttf = float(failure.mean())
    if C >= mttf:
        return _dnf(W, tau, C, int(gpus), names, 1,
                    f"checkpoint cost {C:g} s is at or above the mean time to failure {mttf:g} s: "
                    "no progress is possible", int(seed))
    et = float(expected_time(tau, work=W, ckpt_cost=max(C, 1e-9), failure=failure,
                             restart=mix.restart_distribution()))
    if not math.isfinite(et) or et > max_slowdown * W:
        return _dnf(W, tau, C, int(gpus), names, 2,
                    f"expected wall time {et:.3g} s exceeds {max_slowdown:g} x the work {W:g} s: "
                    "failures and restarts leave almost no progress", int(seed))
    prob, kind, a, b = mix.kernel_arrays()
    params = failure.kernel_params()[0]
    out = _kernels(backend).mc_run(int(n_replicas), int(seed), W, tau, C, max_slowdown * W,
                                   failure.family_code, params, prob, kind, a, b, int(threads))
    fin = np.asarray(out["finished"], dtype=bool)
    status, reason = 0, ""
    if not fin.all():
        status = 3
        reason = (f"{int((~fin).sum())} of {fin.size} replicas exceeded the wall-time cap "
                  f"{max_slowdown * W:g} s ({STATUS_REASONS[3]})")
    return RunSimulation(W, tau, C, int(gpus), names, out["wall"], out["n_fail"], out["lost"], out["restart"],
                         out["ckpt"], out["type_loss"], out["type_count"], fin, status, reason, int(seed),
                         {"analytic_expected_time_s": et})
