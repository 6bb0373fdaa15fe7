"""``acmemodel sweep`` / :func:`acmemodel.planner.sweep.runner`: grid parsing, rows, seeds, Dask, resume, bad input.

Kept small: a 512-GPU cluster, one run of 256 GPUs, 100 Monte Carlo replicas, a half-day workload at
5 % of Seren's intensity, a 4-point grid (2 eval-lane sizes x 2 checkpoint costs).
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import yaml

from acmemodel.cli import main
from acmemodel.errors import ConfigError
from acmemodel.planner.sweep.grid import load_grid
from acmemodel.planner.sweep.runner import plan_sweep, read_sweep, sweep
from acmemodel.planner.sweep.plots import pareto_front, plot_sweep
from acmemodel.synth import sample_workload  # (the planner takes its workload sampler as an argument)

CONFIG = {
    "name": "tiny",
    "cluster": {"gpus": 512, "gpus_per_node": 8, "partitions": {"pretrain": 256, "eval": 64}},
    "checkpoint": {"mode": "sync", "sync_cost": "60s"},
    "workload": {"cluster": "Seren", "scale": 0.05, "days": 0.5, "replicas": 1},
    "runs": [{"name": "big", "gpus": 256, "work": "5d"}],
    "simulation": {"replicas": 100, "seed": 3},
}
GRID = {"axes": {"cluster.partitions.eval": {"values": [32, 64]},
                 "checkpoint.sync_cost": {"range": {"start": "30s", "stop": "2m", "num": 2}}}}


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("sweep")
    (d / "cfg.yaml").write_text(yaml.safe_dump(CONFIG, sort_keys=False))
    (d / "grid.yaml").write_text(yaml.safe_dump(GRID, sort_keys=False))
    return d


@pytest.fixture(scope="module")
def inprocess(files):
    return sweep(files / "cfg.yaml", files / "grid.yaml", sampler=sample_workload, out=files / "ref.parquet")


def test_grid_ranges_and_axes():
    g = load_grid({"seed": 4, "axes": {
        "checkpoint.sync_cost": {"range": {"start": "30s", "stop": "2m", "step": "30s"}},
        "failures.rate_multipliers.Infrastructure": {"range": {"start": 0.5, "stop": 2, "num": 3, "scale": "log"}},
        "runs.*.work": {"values": ["10d", "20d"]},
        "checkpoint.interval": {"values": ["auto", "30m"]}}})
    vals = {a.name: a.values for a in g["axes"]}
    assert vals["checkpoint.sync_cost"] == (30, 60, 90, 120)
    np.testing.assert_allclose(vals["failures.rate_multipliers.Infrastructure"], [0.5, 1.0, 2.0])
    assert g["seed"] == 4 and vals["runs.*.work"] == ("10d", "20d")


def test_rows_columns_and_metadata(inprocess, files):
    df = inprocess
    assert len(df) == 4 and (df["status"] == "ok").all()
    assert list(df["cluster.partitions.eval"]) == [32, 32, 64, 64]
    assert list(df["checkpoint.sync_cost"]) == [30, 120, 30, 120]
    for c in ("big.completion_mean_s", "big.completion_p50_s", "big.completion_p90_s", "big.expected_failures",
              "big.ettr", "big.gpu_h_lost", "big.gpu_h_lost_work", "big.gpu_h_lost_restart",
              "big.gpu_h_lost_checkpoint", "big.gpu_h_lost.Infrastructure", "big.optimal_interval_s",
              "eval_wait_p50_s", "eval_wait_p90_s", "quota.eval", "quota.shared", "gpu_h_lost"):
        assert c in df.columns, c
    # the loss splits into its causes; by category it is lost work + restart
    np.testing.assert_allclose(df["big.gpu_h_lost"], df["big.gpu_h_lost_work"] + df["big.gpu_h_lost_restart"]
                               + df["big.gpu_h_lost_checkpoint"], rtol=1e-9)
    cats = df[[c for c in df.columns if c.startswith("big.gpu_h_lost.")]].sum(axis=1)
    np.testing.assert_allclose(cats, df["big.gpu_h_lost_work"] + df["big.gpu_h_lost_restart"], rtol=1e-9)
    assert list(df["quota.eval"]) == [32, 32, 64, 64]
    # a dearer checkpoint: longer optimal interval, more checkpoint time
    assert (df["big.optimal_interval_s"][1] > df["big.optimal_interval_s"][0])
    # seeds: the run part depends on run-side axes only, the cluster part on cluster-side axes only
    assert df["seed_runs"][0] == df["seed_runs"][2] != df["seed_runs"][1]
    assert df["seed_cluster"][0] == df["seed_cluster"][1] != df["seed_cluster"][2]
    t, meta = read_sweep(files / "ref.parquet")
    pd.testing.assert_frame_equal(t, df)
    assert meta["grid"]["axes"]["cluster.partitions.eval"] == [32, 64]
    assert meta["bundle"]["provenance"] and meta["config"]["name"] == "tiny" and meta["seed"] == 3


def test_two_worker_local_cluster_gives_identical_rows(inprocess, files):
    distributed = pytest.importorskip("dask.distributed")
    import dask

    # two worker processes (the rows cross a process boundary both ways), forked rather than spawned: a spawned
    # worker re-imports Python, dask, pandas and acmemodel before its first task (~5 s CPU each, most of this test)
    with dask.config.set({"distributed.worker.multiprocessing-method": "fork"}), \
            distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                     dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        df = sweep(files / "cfg.yaml", files / "grid.yaml", sampler=sample_workload, client=client)
    pd.testing.assert_frame_equal(df, inprocess)


def test_resume_after_interruption_gives_the_same_table(inprocess, files):
    out = files / "resumed.parquet"
    calls = []

    def stop_after_two(i, row):
        calls.append(i)
        if len(calls) == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        sweep(files / "cfg.yaml", files / "grid.yaml", sampler=sample_workload, out=out, flush_every=1, _on_point=stop_after_two)
    assert not out.exists() and len(list((files / "resumed.parquet.partial").glob("part-*.parquet"))) == 2
    seen = []
    df = sweep(files / "cfg.yaml", files / "grid.yaml", sampler=sample_workload, out=out, resume=True, _on_point=lambda i, r: seen.append(i))
    assert seen == [2, 3]                      # only the missing points ran
    pd.testing.assert_frame_equal(df, inprocess)
    pd.testing.assert_frame_equal(read_sweep(out)[0], inprocess)
    assert not (files / "resumed.parquet.partial").exists()


def test_a_failing_point_is_reported_while_the_others_complete(files):
    grid = {"axes": {"cluster.partitions.eval": {"values": [64, 1024]}}}  # 1024 > cluster.gpus
    df = sweep(files / "cfg.yaml", grid, sampler=sample_workload)
    assert list(df["status"]) == ["ok", "error"]
    assert "cluster.partitions" in df["error"][1] and np.isfinite(df["big.completion_mean_s"][0])


def test_plots(inprocess, files):
    written = plot_sweep(inprocess, inprocess.attrs["acmemodel.sweep"], files / "plots")
    names = {p.split("/")[-1] for p in written}
    assert any(n.startswith("pareto_") and n.endswith("_vs_eval_p90.png") for n in names)
    assert "heatmap_gpu_h_lost.png" in names
    front = pareto_front(inprocess)
    assert len(front) >= 1 and front["gpu_h_lost"].is_monotonic_increasing


@pytest.mark.parametrize("axes, message", [
    ({"cluster.nope": {"values": [1]}}, "grid axis cluster.nope names no configuration field"),
    ({"failures.rate_multipliers.Cosmic": {"values": [1]}}, "failures.rate_multipliers.Cosmic names no"),
    ({"runs.small.gpus": {"values": [8]}}, "runs.small.gpus names no configuration field"),
    ({"checkpoint.sync_cost": {"range": {"start": 10, "stop": 5, "step": 1}}}, "checkpoint.sync_cost: range is empty"),
    ({"checkpoint.sync_cost": {"range": {"start": "abc", "stop": 5, "num": 2}}}, "range.start must be a number"),
    ({"checkpoint.sync_cost": {"values": []}}, "values must be a non-empty list"),
    ({"workload.scale": {"range": {"start": 1, "stop": 2, "num": 1001}},
      "checkpoint.sync_cost": {"range": {"start": 1, "stop": 2, "num": 1000}}}, "1,001,000 points"),
])
def test_bad_grid_is_one_error_line_before_any_work(files, capsys, axes, message):
    (files / "bad.yaml").write_text(yaml.safe_dump({"axes": axes}, sort_keys=False))
    with pytest.raises(SystemExit) as e:
        main(["sweep", str(files / "cfg.yaml"), "--grid", str(files / "bad.yaml"), "-o", str(files / "x.parquet")])
    err = capsys.readouterr().err.strip().splitlines()
    assert e.value.code == 2 and len(err) == 1 and err[0].startswith("error: ") and message in err[0]
    assert not (files / "x.parquet").exists()
    with pytest.raises(ConfigError):
        plan_sweep(files / "cfg.yaml", files / "bad.yaml")


def test_unreachable_scheduler_is_one_error_line(files, capsys, monkeypatch):
    pytest.importorskip("dask.distributed")
    from acmemodel.cli import _dask

    monkeypatch.setattr(_dask, "CONNECT_TIMEOUT", "1s")
    with pytest.raises(SystemExit) as e:
        main(["sweep", str(files / "cfg.yaml"), "--grid", str(files / "grid.yaml"), "-o", str(files / "y.parquet"),
              "--scheduler", "tcp://127.0.0.1:9"])
    err = capsys.readouterr().err.strip().splitlines()
    assert e.value.code == 2 and len(err) == 1 and "--scheduler tcp://127.0.0.1:9" in err[0]
