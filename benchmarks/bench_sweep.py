"""Benchmark of ``acmemodel.planner.sweep.runner``: a 1,000-point sweep of the example configuration, points/s
in-process and on a 2-worker ``dask.distributed.LocalCluster``, in one run (and that both give the same rows).

Run: ``python benchmarks/bench_sweep.py [--replicas N]``. The grid crosses the evaluation lane (2
values: 2 cluster simulations, shared by the points that only differ in run-side axes), the sync
checkpoint cost (10), the Infrastructure failure-rate multiplier (10) and the Infrastructure restart
automation (5): 1,000 points, 500 distinct run evaluations (two runs each: checkpoint optimum under the
bundle's Weibull failures and a Monte Carlo completion). ``simulation.replicas`` is lowered from the
example's 10,000 to ``--replicas`` (default 300) and the workload to 2 days so that the benchmark stays
around a minute; both settings are printed. Prints::

    sweep_inprocess points=1000 s=... points_per_s=...
    sweep_2workers  points=1000 s=... points_per_s=... speedup=... identical_rows=True
"""
from __future__ import annotations

import argparse
import copy
import time
from importlib import resources

import yaml


def _config(replicas: int) -> dict:
    path = resources.files("acmemodel.planner").joinpath("examples", "example.yaml")
    raw = yaml.safe_load(path.read_text())
    raw = copy.deepcopy(raw)
    raw.setdefault("simulation", {})["replicas"] = replicas
    raw.setdefault("workload", {})["days"] = 2
    return raw


GRID = {"axes": {
    "cluster.partitions.eval": {"values": [96, 128]},
    "checkpoint.sync_cost": {"range": {"start": "20s", "stop": "200s", "num": 10}},
    "failures.rate_multipliers.Infrastructure": {"range": {"start": 0.25, "stop": 4, "num": 10, "scale": "log"}},
    "restart.automation.Infrastructure": {"values": [0.25, 0.5, 0.75, 1.0, 1.5]},
}}


def main(argv=None) -> dict:
    import pandas as pd
    from dask.distributed import Client, LocalCluster

    from acmemodel.planner.sweep.runner import sweep
    from acmemodel.synth import sample_workload

    ap = argparse.ArgumentParser()
    ap.add_argument("--replicas", type=int, default=300)
    args = ap.parse_args(argv)
    raw = _config(args.replicas)
    n = 2 * 10 * 10 * 5
    print(f"# example configuration, simulation.replicas={args.replicas}, workload.days=2, grid {n} points")
    t0 = time.perf_counter()
    df1 = sweep(raw, GRID, sampler=sample_workload)
    t1 = time.perf_counter() - t0
    print(f"sweep_inprocess points={len(df1)} s={t1:.2f} points_per_s={len(df1) / t1:.1f} "
          f"ok={(df1['status'] == 'ok').sum()}")
    t0 = time.perf_counter()
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cl, \
            Client(cl) as client:
        t_start = time.perf_counter() - t0
        df2 = sweep(raw, GRID, client=client, sampler=sample_workload)
    t2 = time.perf_counter() - t0
    same = True
    try:
        pd.testing.assert_frame_equal(df1, df2)
    except AssertionError:
        same = False
    print(f"sweep_2workers points={len(df2)} s={t2:.2f} points_per_s={len(df2) / t2:.1f} speedup={t1 / t2:.2f} "
          f"identical_rows={same}  # includes {t_start:.1f} s to start the LocalCluster")
    return {"inprocess_s": t1, "workers2_s": t2, "identical": same}


if __name__ == "__main__":
    main()
