"""Planner: checkpoint interval, completion time, failure-weighted GPU-time loss, quotas.

Main entry points (imported lazily)::

    from acmemodel.planner import Planner, ClusterConfig
    from acmemodel.synth import sample_workload
    plan = Planner(bundle, sampler=sample_workload).plan(ClusterConfig.load("cluster.yaml"))

* :mod:`.checkpoint` — ``optimal_interval``, ``expected_time``, ``young_interval``, ``daly_interval``;
* :mod:`.montecarlo` — ``simulate_run``, ``FailureMix``, ``FailureType``;
* :mod:`.processes` — ``ExponentialFailures``, ``WeibullFailures``, ``PiecewiseHazard``, ``RestartTime``;
* :mod:`.config` — ``ClusterConfig``, ``parse_duration``; :mod:`.planner` — ``Planner``;
* :mod:`.cluster_sim`, :mod:`.quota` — ``simulate_cluster``, ``find_quota``;
* :mod:`.sweep` — ``sweep(config, grid, client=None)``: a configuration over a grid of axes, on Dask;
* :mod:`.reference` — the NumPy twins of the C kernels.
"""
from __future__ import annotations

_EXPORTS = {
    "Planner": "planner", "PlanResult": "planner", "RunPlan": "planner",
    "ClusterConfig": "config", "parse_duration": "config",
    "optimal_interval": "checkpoint", "expected_time": "checkpoint", "young_interval": "checkpoint",
    "daly_interval": "checkpoint", "CheckpointResult": "checkpoint",
    "simulate_run": "montecarlo", "FailureMix": "montecarlo", "FailureType": "montecarlo",
    "RunSimulation": "montecarlo",
    "ExponentialFailures": "processes", "WeibullFailures": "processes", "PiecewiseHazard": "processes",
    "RestartTime": "processes",
    "simulate_cluster": "cluster_sim", "find_quota": "quota",
    "sweep": "sweep", "read_sweep": "sweep",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name):
    mod = _EXPORTS.get(name)
    if mod is None:
        raise AttributeError(f"module 'acmemodel.planner' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(f"acmemodel.planner.{mod}"), name)
