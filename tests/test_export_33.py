"""Issue 33, peer simulators get the plan's world: the Helios/Lucid export writes the bundle's calibrated
partitions, AIReSim's recovery time is the trace's restart time when the trace has restarts, and
``synth --format`` offers what ``export`` offers."""
from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from acmemodel.cli import app

runner = CliRunner()


def _vc_config(path):
    return pd.read_csv(path, index_col=0)["num"].to_dict()


def test_helios_export_writes_the_calibrated_partitions(tmp_path):
    from acmemodel.clusters import GPUS_PER_NODE
    from acmemodel.reproduction.run import queue_policy
    from acmemodel.synth import resolve_bundle

    r = runner.invoke(app, ["export", "-f", "helios", "-o", str(tmp_path / "h"), "--cluster", "Seren",
                            "--rebase-to", "Sept"])
    assert r.exit_code == 0, r.output
    parts = queue_policy(resolve_bundle(None), "Seren")["partitions"]
    assert _vc_config(tmp_path / "h" / "Seren" / "vc_config.csv") == {
        p: g // GPUS_PER_NODE for p, g in parts.items() if g}
    assert "calibrated policy" in (tmp_path / "h" / "README.md").read_text()
    log = pd.read_csv(tmp_path / "h" / "Seren" / "cluster_log.csv")
    assert set(log.loc[log["jobname"] == "Pretrain", "vc"]) <= {"pretrain", "shared"}
    assert (log.loc[log["gpu_num"] >= 256, "vc"] == "pretrain").all()
    # an explicit split still wins (the GPU-time split of --vc-large)
    r = runner.invoke(app, ["export", "-f", "helios", "-o", str(tmp_path / "g"), "--cluster", "Seren",
                            "--vc-large", "256"])
    assert r.exit_code == 0, r.output
    assert "proportion to GPU time" in (tmp_path / "g" / "README.md").read_text()


def _jobs_with_restarts():
    from acmemodel.synth import resolve_bundle, simulate_jobs

    b = resolve_bundle(None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        jobs = simulate_jobs(b, days=1, cluster="Seren", seed=1, restart_prob=1.0, mix={"Pretrain": 0.3})
    return b, jobs


def test_airesim_recovery_time_is_the_traces_restart_time():
    from acmemodel.export.airesim import airesim_params, empirical_restart_seconds

    b, jobs = _jobs_with_restarts()
    got = empirical_restart_seconds(jobs)
    assert got is not None and got[1] >= 5
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no restart-GLM warning reaches the user
        params, prov = airesim_params(gpus=1024, failure=b["failure"], restart=b["restart"], jobs=jobs)
    assert params["recovery_time"] == pytest.approx(got[0] / 60.0, abs=1e-3)
    assert prov["recovery_source"].startswith("trace:") and "recovery_model_s" in prov
    params, prov = airesim_params(gpus=1024, failure=b["failure"], restart=b["restart"], jobs=jobs,
                                  recovery_s=600.0)
    assert params["recovery_time"] == 10.0  # a given time wins


def test_synth_helios_jobs_lie_in_the_simulators_window(tmp_path):
    from acmemodel.export.helios import LUCID_WINDOWS

    r = runner.invoke(app, ["synth", "-f", "helios", "-o", str(tmp_path / "h"), "--days", "2", "--seed", "3"])
    assert r.exit_code == 0, r.output
    log = pd.read_csv(tmp_path / "h" / "Seren" / "cluster_log.csv", parse_dates=["submit_time"])
    a, b = (pd.Timestamp(x) for x in LUCID_WINDOWS["Sept"])
    gpu = log[(log["gpu_num"] > 0) & (log["user"] != "acmemodel-anchor")]
    assert len(gpu) > 100 and gpu["submit_time"].between(a, b).all()
    assert _vc_config(tmp_path / "h" / "Seren" / "vc_config.csv")["pretrain"] > 0
    r = runner.invoke(app, ["synth", "-f", "helios", "-o", str(tmp_path / "j"), "--days", "1",
                            "--rebase-to", "July"])
    assert r.exit_code == 0, r.output
    assert "**July** window" in (tmp_path / "j" / "README.md").read_text()


def test_synth_batsim5_and_airesim(tmp_path):
    r = runner.invoke(app, ["synth", "-f", "batsim", "--batsim-profile", "DelayProfile", "-o",
                            str(tmp_path / "b"), "--days", "1"])
    assert r.exit_code == 0, r.output
    doc = json.loads((tmp_path / "b" / "seren_workload.json").read_text())
    assert {p["type"] for p in doc["profiles"].values()} == {"DelayProfile"}
    r = runner.invoke(app, ["synth", "-f", "airesim", "-o", str(tmp_path / "a"), "--days", "1"])
    assert r.exit_code == 0, r.output
    assert "recovery_time" in (tmp_path / "a" / "config.yaml").read_text()
    for bad in (["-f", "swf", "--rebase-to", "Sept"], ["-f", "helios", "--batsim-profile", "delay"]):
        r = runner.invoke(app, ["synth", *bad, "-o", str(tmp_path / "x"), "--days", "1"])
        assert r.exit_code != 0
