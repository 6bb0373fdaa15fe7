"""Sweep workers are warmed before the grid is planned (issue 34): warm_worker loads the bundle once per
process for the later chunks, and a bundle that cannot be loaded is left to the parts to report."""
from __future__ import annotations


def test_warm_worker_loads_the_bundle_once(tmp_path):
    from acmemodel.planner.sweep import runner

    assert runner.warm_worker(None) is True
    b = runner._BUNDLES[None]
    assert runner.warm_worker(None) is True and runner._BUNDLES[None] is b  # (loaded once per process)
    assert runner.warm_worker(str(tmp_path / "missing-bundle")) is False
    assert str(tmp_path / "missing-bundle") not in runner._BUNDLES


def test_no_warm_up_in_process():
    from acmemodel.planner.sweep.runner import _warm_workers

    assert _warm_workers(None, None) == []


def test_cluster_parts_are_tasks_of_their_own_submitted_first(tmp_path):
    """On a client the cluster parts (a workload simulation each, the long tasks) are submitted first, one per
    task, and the run parts follow in chunks; the rows are those of the in-process sweep."""
    import pandas as pd

    from acmemodel.planner.sweep.runner import sweep
    from acmemodel.synth import sample_workload

    cfg = {"name": "tiny", "cluster": {"gpus": 512, "gpus_per_node": 8, "partitions": {"pretrain": 256, "eval": 64}},
           "checkpoint": {"mode": "sync", "sync_cost": "60s"},
           "workload": {"cluster": "Seren", "scale": 0.02, "days": 0.25, "replicas": 1},
           "runs": [{"name": "big", "gpus": 256, "work": "5d"}], "simulation": {"replicas": 50, "seed": 3}}
    grid = {"axes": {"cluster.partitions.eval": {"values": [32, 64]},
                     "checkpoint.sync_cost": {"values": ["30s", "60s", "90s"]}}}
    submitted = []

    class Future:
        def __init__(self, fn, arg):
            self.value = fn(arg)

        def result(self):
            return self.value

    class Client:  # runs each task at once, in submission order
        def scheduler_info(self):
            return {"workers": {"a": {}, "b": {}}}

        def submit(self, fn, arg, **kw):
            if fn.__name__ == "evaluate_parts":
                submitted.append([a[0] for a in arg])
            return Future(fn, arg)

    import dask.distributed

    orig = dask.distributed.as_completed
    dask.distributed.as_completed = lambda futs: iter(futs)
    try:
        df = sweep(cfg, grid, client=Client(), sampler=sample_workload)
    finally:
        dask.distributed.as_completed = orig
    assert submitted[:2] == [["cluster"], ["cluster"]]
    assert all(k == "runs" for ch in submitted[2:] for k in ch) and sum(map(len, submitted[2:])) == 3
    pd.testing.assert_frame_equal(df, sweep(cfg, grid, sampler=sample_workload))
