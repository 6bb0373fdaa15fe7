"""One run planned from its inputs: :class:`RunPlan` and :func:`plan_run` (the checkpoint optimum, the
Monte Carlo at the chosen interval and the E[T](τ) curve around the optimum). The planner calls it with
the :class:`~acmemodel.planner.run.inputs.RunInputs` of each run (``plan(config)`` →
``RunInputs.from_bundle`` → :func:`plan_run`).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from acmemodel.planner.run.checkpoint import CheckpointResult, expected_time, optimal_interval
from acmemodel.planner.run.inputs import RunInputs
from acmemodel.planner.run.montecarlo import FailureMix, RunSimulation, simulate_run
from acmemodel.planner.run.processes import FailureProcess

__all__ = ["RunPlan", "plan_run", "expected_time_curve"]


@dataclass
class RunPlan:
    """Everything the planner computed for one run."""

    name: str
    gpus: int
    work_s: float
    ckpt_cost_s: float
    interval_s: float | None
    interval_source: str
    failure: FailureProcess | None
    mix: FailureMix | None
    checkpoint: CheckpointResult | None
    simulation: RunSimulation | None
    curve: pd.DataFrame = field(default_factory=pd.DataFrame)
    notes: list = field(default_factory=list)
    #: kWh / tCO2e of the GPU-time loss by cause (``PowerModel.price_loss``; set by the planner)
    energy: dict | None = None
    #: the sensitivity band (``sensitivity_band``; set by the planner)
    sensitivity: dict | None = None

    @property
    def finishes(self) -> bool:
        return self.simulation is not None and self.simulation.finishes

    def to_dict(self) -> dict:
        sim = self.simulation.to_dict() if self.simulation is not None else {}
        ck = self.checkpoint.to_dict(self.gpus) if self.checkpoint is not None else {}
        reason = sim.get("reason") or ck.get("reason")
        none_ct = {"mean": None, "p50": None, "p90": None}
        return {
            "name": self.name, "gpus": self.gpus, "work_s": self.work_s, "ckpt_cost_s": self.ckpt_cost_s,
            "finishes": bool(self.finishes), "reason": None if self.finishes else reason,
            "checkpoint_interval_s": self.interval_s if self.finishes else None,
            "checkpoint_interval_source": self.interval_source,
            "optimal_interval_s": ck.get("interval_s"),
            "young_interval_s": ck.get("young_interval_s"), "daly_interval_s": ck.get("daly_interval_s"),
            "mttf_s": ck.get("mttf_s"), "restart_mean_s": ck.get("restart_mean_s"),
            "failure_process": self.failure.describe() if self.failure is not None else None,
            "completion_time_s": sim.get("completion_time_s", none_ct) if self.finishes else none_ct,
            "expected_failures": sim.get("expected_failures") if self.finishes else None,
            "ettr": sim.get("ettr", 0.0) if self.finishes else 0.0,
            "gpu_time_loss_gpu_h": sim.get("gpu_time_loss_gpu_h") if self.finishes else {
                "total": None, "lost_work": None, "restart": None, "checkpoint": None, "by_failure_type": {}},
            "analytic": {"expected_wall_time_s": ck.get("expected_wall_time_s"),
                         "overhead_fraction": ck.get("overhead_fraction"), "ettr": ck.get("ettr")},
            "n_replicas": sim.get("n_replicas"), "notes": list(self.notes),
            **({"energy": self.energy} if self.energy is not None else {}),
            **({"sensitivity": self.sensitivity} if self.sensitivity is not None else {}),
        }


def plan_run(inp: RunInputs, *, work: float, ckpt_cost: float, interval, n_replicas: int, seed: int,
              threads: int, name: str) -> RunPlan:
    """The :class:`RunPlan` of one run from its inputs: the checkpoint optimum, then the Monte Carlo at the
    chosen interval (``"auto"``: the optimum) and the E[T](τ) curve around it."""
    gpus, fail, mix, R = inp.gpus, inp.failure, inp.mix, inp.restart
    ck = optimal_interval(work=work, ckpt_cost=ckpt_cost, failure=fail, restart=R)
    notes = []
    if interval == "auto":
        tau, source = (float(ck.interval_s) if bool(ck.finishes) else None), "auto"
    else:
        tau, source = float(interval), "config"
    if tau is None:
        sim = simulate_run(work=work, interval=float(work), ckpt_cost=ckpt_cost, failure=fail, mix=mix,
                           gpus=gpus, n_replicas=1, seed=seed)  # returns the explicit DNF result
    else:
        sim = simulate_run(work=work, interval=tau, ckpt_cost=ckpt_cost, failure=fail, mix=mix, gpus=gpus,
                           n_replicas=n_replicas, seed=seed, threads=threads)
    curve = expected_time_curve(ck, work, ckpt_cost, fail, R, tau)
    if float(ck.mttf_s) > 10 * work:
        notes.append(f"job MTTF {float(ck.mttf_s) / 3600:.3g} h is far above the run's work "
                     f"{work / 3600:.3g} h: failures are rare for this run")
    return RunPlan(name, gpus, float(work), float(ckpt_cost), tau, source, fail, mix, ck, sim, curve, notes)


def expected_time_curve(ck: CheckpointResult, work, C, fail, R, tau_used) -> pd.DataFrame:
    """E[T](τ) on 80 geometric intervals around the optimum ``ck`` (τ*/8 .. 8τ*, widened to the interval
    used): columns ``interval_s``, ``expected_time_s``; empty when the run does not finish."""
    if not bool(ck.finishes):
        return pd.DataFrame(columns=["interval_s", "expected_time_s"])
    t0 = float(ck.interval_s)
    lo, hi = t0 / 8.0, min(t0 * 8.0, work)
    if tau_used is not None:
        lo, hi = min(lo, tau_used / 2), min(max(hi, tau_used * 2), work)
    tau = np.geomspace(lo, hi, 80)
    return pd.DataFrame({"interval_s": tau,
                         "expected_time_s": expected_time(tau, work=work, ckpt_cost=C, failure=fail, restart=R)})
