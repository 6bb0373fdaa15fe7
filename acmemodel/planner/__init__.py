"""The planner: for a cluster configuration and a model bundle, the checkpoint interval, completion time
and failure-weighted GPU-time loss of each planned run, and the cluster's quotas and queue delays.

One job per room::

    from acmemodel.planner.config import ClusterConfig
    from acmemodel.planner.planner import Planner
    from acmemodel.synth import sample_workload
    plan = Planner(bundle, sampler=sample_workload).plan(ClusterConfig.load("cluster.yaml"))

* :mod:`.planner` — ``Planner``, ``PlanResult``: the plan of a configuration; the steps it
  is built from in :mod:`.plan_helpers`, its sensitivity band in :mod:`.sensitivity`, the HTML report
  in :mod:`.report`;
* :mod:`.config` (fields checked in :mod:`.config_fields`) — ``ClusterConfig``; :mod:`.energy` — the
  power model; :mod:`.reliability` — published failure-rate presets;
* :mod:`.run` — one run: its inputs (failure process, restart law, failure-type mix), the optimal
  checkpoint interval, the Monte Carlo run simulator and ``RunPlan``;
* :mod:`.evalbatch` — the evaluation-batch planner (``acmemodel evalplan``);
* :mod:`.sweep` — a configuration over a grid of axes, on Dask (``acmemodel sweep``).

The cluster simulator and the quota search it uses are :mod:`acmemodel.sim` (below the planner, shared
with the synthesiser, ``reproduce`` and the queue calibration); the C kernels and their NumPy twins are
:mod:`acmemodel._solver`.
"""
