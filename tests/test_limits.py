"""Sizes with no upper bound (issue 18): the commands estimate memory up front and refuse with the
estimate (exit 2, one ``error:`` line; ``--yes`` insists), instead of a MemoryError after minutes."""
from __future__ import annotations

import pandas as pd
import pytest
import yaml

from acmemodel.cli import main


@pytest.fixture(autouse=True)
def budget(monkeypatch):
    monkeypatch.setenv("ACMEMODEL_MEMORY_BUDGET", str(2 * 10 ** 9))  # 2 GB: the same on every machine


def _err(argv, capsys):
    with pytest.raises(SystemExit) as e:
        main(argv)
    err = capsys.readouterr().err
    assert e.value.code == 2, err
    assert err.startswith("error: ") and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    return err


@pytest.mark.parametrize("args, needle", [
    (["--days", "1e9"], "--days must be at most 36,525"),
    (["--days", "3650"], "would need about"),
    (["--scale", "1e6"], "about 168,"),
])
def test_synth_refuses_with_the_estimate(tmp_path, capsys, args, needle):
    err = _err(["synth", *args, "-o", str(tmp_path / "x.csv")], capsys)
    assert needle in err and ("--yes" in err or "--days" in err)
    assert not (tmp_path / "x.csv").exists()


def test_estimate_matches_what_synth_makes():
    """The job-count estimate behind the refusal is the arrival model's expectation over a week pro
    rata: a one-week synth makes within 10 % of it (batch-arrival noise on ~40,000 jobs is a few %)."""
    from acmemodel import load_default
    from acmemodel.limits import expected_jobs
    from acmemodel.synth import simulate_jobs

    b = load_default()
    est = expected_jobs(b["arrival"], "Seren", 7, 1.0)
    n = len(simulate_jobs(b, days=7, cluster="Seren", seed=0))
    assert abs(n / est - 1) < 0.10


def _plan_cfg(tmp_path, **over):
    d = {"cluster": {"gpus": 2304, "partitions": {"pretrain": 1024, "eval": "auto"}},
         "runs": [{"gpus": 8, "work": "1d"}], "simulation": {"replicas": 100}}
    for k, v in over.items():
        d[k] = {**d.get(k, {}), **v} if isinstance(v, dict) else v
    p = tmp_path / "c.yaml"
    p.write_text(yaml.safe_dump(d))
    return str(p)


@pytest.mark.parametrize("over, extra, needle", [
    ({"workload": {"scale": 1e6}}, [], "workload (scale 1,000,000"),
    ({"workload": {"days": 1e7}}, [], "workload (scale 1"),
    ({"workload": {"replicas": 10 ** 6}}, [], "1,000,000 replica(s)"),
    ({"simulation": {"replicas": 10 ** 12}}, [], "simulation.replicas = 1,000,000,000,000"),
    ({}, ["--replicas", str(10 ** 12), "--no-cluster"], "simulation.replicas = 1,000,000,000,000"),
    ({"cluster": {"gpus": 2 ** 70, "partitions": {}}}, [], "cluster.gpus must be at most 100,000,000"),
    ({"cluster": {"gpus": 2 ** 70, "gpus_per_node": 2 ** 66}}, [], "must be at most"),
])
def test_plan_refuses_with_the_estimate(tmp_path, capsys, over, extra, needle):
    err = _err(["plan", _plan_cfg(tmp_path, **over), *extra], capsys)
    assert needle in err


def test_philly_export_refuses_a_billion_gpus(tmp_path, capsys):
    from acmemodel.datasets import sample_paths

    src = [p for p in sample_paths() if "seren" in str(p)][0]
    df = pd.read_csv(src).head(30)
    df.loc[0, "gpu_num"], df.loc[0, "node_num"] = 10 ** 9, 125_000_000
    path = tmp_path / "trace_seren.csv"
    df.to_csv(path, index=False)
    err = _err(["export", str(path), "--format", "philly", "-o", str(tmp_path / "ph")], capsys)
    assert "1,000,000," in err and "GPU entries" in err and "--yes" in err
    with pytest.raises(SystemExit) as e:  # other formats do not expand GPUs: written
        main(["export", str(path), "--format", "swf", "-o", str(tmp_path / "swf")])
    assert e.value.code == 0
