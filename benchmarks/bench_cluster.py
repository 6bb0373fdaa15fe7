"""Cluster simulator benchmark: ``python benchmarks/bench_cluster.py``.

Prints ``cluster_sim c_s=<s> numpy_s=<s> speedup=<ratio>`` (C kernel vs its Python twin on the same 100k-job slice
of a Seren-like workload, both measured in this run) and the C time of the full six-month Seren-scale instance
(~700k GPU jobs on 2,288 GPUs), then ``cluster_sim_acme_policy``: the same six months through the front end with
Acme's policy (reservation, Eval last, preemptible best effort, start-up latency) against plain FIFO. Details and the workload: ``benchmarks/_bench_cluster.py``
(``bench_solver.py`` imports the same function).
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _bench_cluster import bench_acme_policy, bench_cluster_sim  # noqa: E402

if __name__ == "__main__":
    bench_cluster_sim()
    bench_acme_policy()
