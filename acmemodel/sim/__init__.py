"""The cluster simulator: a job list on a GPU cluster's partitions under a scheduling policy (FIFO with
priorities, EASY backfill, best-effort jobs on a reserved partition), and the quota search on it.

* :mod:`.cluster` — ``simulate_cluster`` (the C kernel ``acmemodel._solver._cluster`` or its NumPy twin)
  and ``SchedulingPolicy``, the policy stated once (from a planner configuration or a calibrated
  bundle) and handed to the simulator;
* :mod:`.quota` — ``find_quota``: the smallest partition that meets a queue-delay target.

It depends on nothing of the package but the kernels, so the planner, the synthesiser, ``reproduce``
and the queue calibration all use it from above.
"""
