"""Benchmark of ``acmemodel.planner.sweep.runner``: a 1,000-point sweep of the example configuration, in-process
and on a 2-worker ``dask.distributed.LocalCluster`` (the one ``--workers 2`` starts), in one run (and that both give the same rows).

Run: ``python benchmarks/bench_sweep.py [--replicas N] [--workers 2]``. The grid crosses the evaluation lane
(2 values: 2 cluster simulations, shared by the points that only differ in run-side axes), the sync
checkpoint cost (10), the Infrastructure failure-rate multiplier (10) and the Infrastructure restart
automation (5): 1,000 points, 500 distinct run evaluations (two runs each: checkpoint optimum under the
bundle's Weibull failures and a Monte Carlo completion). ``simulation.replicas`` is lowered from the
example's 10,000 to ``--replicas`` (default 300) and the workload to 2 days so that the benchmark stays
around a minute; both settings are printed.

Besides wall time it measures CPU time (user + sys, from ``resource.getrusage``) of the client process
and of each worker (read on the workers with ``Client.run`` before and after the sweep), so that the
overhead of distributing is measured even on a loaded machine:

* ``per_point_overhead_ms`` = (CPU of the workers and of the client during the distributed sweep − CPU
  of the in-process sweep) / points;
* ``ideal_speedup`` = in-process CPU / max(worker CPU): the speed-up on a quiet machine with one core
  per worker (the busiest worker bounds the wall time); ``balanced_speedup`` = in-process CPU / mean
  worker CPU (on a shared machine a worker that gets less of a core takes fewer chunks, so the busiest
  worker shows the machine's imbalance too); ``speedup`` is the measured wall ratio, ``speedup_incl_start``
  counts each side's start (the in-process run's imports, bundle and first point; the cluster start);
* ``cold_cpu_speedup`` = (in-process CPU + its start's CPU) / (max worker CPU + the fork server's CPU):
  each side with its own imports and bundle, the fork server's imports counted as if on the critical path.

The in-process run is timed after a one-point warm-up; the workers' timing includes their warm-up (the
bundle; with ``spawn`` also the imports), unless ``--warm-workers``. ``--start spawn,forkserver`` (the
default) measures both ways of starting the workers in one run: ``spawn`` (each worker imports the
planner and the models itself, ~1 s of CPU) and ``forkserver`` (``sweep --workers`` since issue 34: the
workers are forked from one process that imported them, ``acmemodel.cli._dask.dask_client(preload=)``).
Prints::

    sweep_inprocess points=1000 s=... cpu_s=... points_per_s=... (its start: ... cpu_s=...)
    [spawn] cluster_start s=... forkserver_cpu_s=0.00
    [spawn] sweep_2workers points=1000 s=... client_cpu_s=... worker_cpu_s=[...] speedup=... ideal_speedup=...
    [spawn] per_point_overhead_ms=... identical_rows=True
    [forkserver] ...

Measured (issue 34; a 2-core machine shared with other jobs, load 5-9: the wall ratios vary with the load,
the CPU ratios are the figures), four runs, in-process 9.1-10.1 s of CPU:

=========================== ============ ============ ============
run                         spawn ideal  fork. ideal  fork. cold
=========================== ============ ============ ============
1 (chunks of 32)            1.53         1.69         1.66
2 (chunks of 32)            1.71         1.79         1.76
3 (guided chunks)           1.58         1.65         1.70
4 (guided chunks)           1.58         1.81         1.86
=========================== ============ ============ ============

Per-point overhead: spawn 2.6-4.7 ms, forkserver 0.3-3.1 ms. Run 4: forkserver workers 4.67 / 5.04 s
(balanced 1.88x), wall 20.3 s against 23.7 s in-process (load ~10). In run 3 (the quietest: in-process 14.5 s
wall) the forkserver workers took 3.21 / 5.65 s of CPU (the total 8.86 s, below the in-process 9.31 s;
balanced speed-up 2.10) and the wall speed-up was 1.49 (1.51 with each side's start).
"""
from __future__ import annotations

import argparse
import copy
import resource
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


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _warm(replicas: int) -> None:
    from acmemodel.planner.sweep.runner import sweep
    from acmemodel.synth import sample_workload

    sweep(_config(replicas), {"axes": {"checkpoint.sync_cost": {"values": ["20s"]}}}, sampler=sample_workload)


def _forkserver_cpu() -> float:
    """CPU seconds (user + sys) of multiprocessing's fork server (the imports it preloads), 0 without one."""
    import multiprocessing.forkserver as mf

    import psutil

    pid = getattr(getattr(mf, "_forkserver", None), "_forkserver_pid", None)
    if not pid:
        return 0.0
    try:
        t = psutil.Process(pid).cpu_times()
    except psutil.Error:
        return 0.0
    return t.user + t.system


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser()
    ap.add_argument("--replicas", type=int, default=300)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--start", default="spawn,forkserver",
                    help="how the local workers start, comma-separated, in this order: spawn (each imports the "
                         "planner itself) and/or forkserver (forked from one process that imported it: what "
                         "`sweep --workers` does)")
    ap.add_argument("--warm-workers", action="store_true",
                    help="warm the workers up (imports, bundle, one point) before the timing, as in-process")
    args = ap.parse_args(argv)
    c00, t00 = _cpu(), time.perf_counter()  # the in-process run's own start: imports, bundle, one point
    import pandas as pd

    from acmemodel.cli._dask import close_client, dask_client
    from acmemodel.cli.sweep import WORKER_MODULES
    from acmemodel.planner.sweep.runner import sweep
    from acmemodel.synth import sample_workload

    raw = _config(args.replicas)
    n = 2 * 10 * 10 * 5
    print(f"# example configuration, simulation.replicas={args.replicas}, workload.days=2, grid {n} points")
    sweep(raw, {"axes": {"checkpoint.sync_cost": {"values": ["20s"]}}}, sampler=sample_workload)  # warm-up
    c_start, t_start_in = _cpu() - c00, time.perf_counter() - t00
    c0, t0 = _cpu(), time.perf_counter()
    df1 = sweep(raw, GRID, sampler=sample_workload)
    t1, c1 = time.perf_counter() - t0, _cpu() - c0
    print(f"sweep_inprocess points={len(df1)} s={t1:.2f} cpu_s={c1:.2f} points_per_s={len(df1) / t1:.1f} "
          f"ok={(df1['status'] == 'ok').sum()} (its start: imports, bundle, one point: s={t_start_in:.2f} "
          f"cpu_s={c_start:.2f})")
    out: dict = {"inprocess_s": t1, "inprocess_cpu_s": c1, "inprocess_start_cpu_s": c_start}
    for method in args.start.split(","):
        t0 = time.perf_counter()
        fs0 = _forkserver_cpu()
        client, cl = dask_client(args.workers, None, trim_memory=False,  # what ``sweep --workers`` starts
                                 preload=WORKER_MODULES if method == "forkserver" else ())
        try:
            t_start = time.perf_counter() - t0
            fs = _forkserver_cpu() - fs0
            print(f"[{method}] cluster_start s={t_start:.2f} forkserver_cpu_s={fs:.2f}")
            w0 = client.run(_cpu)
            if args.warm_workers:  # what the in-process run had before its timing: imports, bundle, one point
                client.run(_warm, args.replicas)
                w1 = client.run(_cpu)
                print(f"[{method}] worker_warm_up cpu_s={[round(w1[k] - w0[k], 2) for k in w1]} (not in the timing "
                      "below)")
                w0 = w1
            c0, t0 = _cpu(), time.perf_counter()
            df2 = sweep(raw, GRID, client=client, sampler=sample_workload)
            t2, c2 = time.perf_counter() - t0, _cpu() - c0
            w1 = client.run(_cpu)
        finally:
            close_client(client, cl)
        wc = sorted(w1[k] - w0[k] for k in w1)
        same = True
        try:
            pd.testing.assert_frame_equal(df1, df2)
        except AssertionError:
            same = False
        over = (sum(wc) + c2 - c1) / len(df2) * 1e3
        # cold: each side with its own start (in-process: its imports, bundle, first point; distributed: the
        # workers' imports and bundle, in their CPU, or the fork server's imports, once, before the workers)
        cold = (c_start + c1) / (max(wc) + fs)
        # (on a shared machine a worker that gets less of a core takes fewer chunks: the busiest worker's CPU
        # then shows the machine's imbalance as much as the sweep's; the mean is the perfectly balanced case)
        balanced = c1 / (sum(wc) / len(wc))
        print(f"[{method}] sweep_{args.workers}workers points={len(df2)} s={t2:.2f} client_cpu_s={c2:.2f} "
              f"worker_cpu_s={[round(x, 2) for x in wc]} speedup={t1 / t2:.2f} "
              f"speedup_incl_start={(t1 + t_start_in) / (t2 + t_start):.2f} ideal_speedup={c1 / max(wc):.2f} "
              f"balanced_speedup={balanced:.2f} cold_cpu_speedup={cold:.2f}")
        print(f"[{method}] per_point_overhead_ms={over:.2f} (workers + client CPU - in-process CPU, per point) "
              f"identical_rows={same}")
        out[method] = {"workers_s": t2, "identical": same, "ideal_speedup": c1 / max(wc), "cold_cpu_speedup": cold,
                       "balanced_speedup": balanced,
                       "overhead_ms": over, "worker_cpu_s": wc, "forkserver_cpu_s": fs}
    return out


if __name__ == "__main__":
    main()
