"""Exports checked against what the peer simulators' own code does with them.

Each test replicates the part of the peer's reader or model that decides whether our file is
accepted and what it means (stated per test); the real readers were run on these files by hand
(see the exports' READMEs), their code is not vendored here.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
import yaml
from typer.testing import CliRunner

from acmemodel.cli import app
from acmemodel.export import write


# ============================================================================ AIReSim
def airesim_job_mttf_min(cfg: dict) -> float:
    """Job-level mean time to failure (minutes) AIReSim simulates for ``cfg``.

    Replicates airesim/coordinator.py: with ``failure_distribution: exponential`` the job fails at
    rate ``job_size · random_failure_rate``; otherwise every active server draws a time to failure
    whose mean is ``1 / random_failure_rate`` (Weibull scale ``mean / Γ(1 + 1/k)``) and the job fails at
    the minimum, a Weibull(k) with scale multiplied by ``job_size^(−1/k)``.
    """
    n, r = cfg["job_size"], cfg["random_failure_rate"]
    if cfg.get("failure_distribution", "exponential") == "exponential":
        return 1.0 / (n * r)
    return (1.0 / r) * n ** (-1.0 / cfg["weibull_shape"])


def airesim_downtime_min(cfg: dict) -> float:
    """Minutes one failure costs in AIReSim (airesim/simulator.py main loop): ``recovery_time``, plus
    ``host_selection_time`` when the warm standbys are used up (its defaults: 20 and 3 min)."""
    return cfg.get("recovery_time", 20.0) + cfg.get("host_selection_time", 3.0) * 0.0


@pytest.fixture(scope="module")
def planner():
    from acmemodel.planner.planner import Planner

    return Planner()  # the default bundle, job_type Pretrain


@pytest.mark.parametrize("gpus", [64, 1024])
def test_airesim_reproduces_the_planners_mttf_and_restart(tmp_path, planner, gpus):
    b = planner.bundle
    res = write(None, "airesim", tmp_path, failure=b["failure"], restart=b["restart"], gpus=gpus)
    cfg = yaml.safe_load((tmp_path / "config.yaml").read_text())
    fail = planner.failure_process(gpus)
    assert cfg["job_size"] == gpus // 8
    assert cfg["weibull_shape"] == pytest.approx(float(fail.shape), rel=1e-5)
    # AIReSim's implied job MTTF equals the bundle's MTTF(g) that the planner uses
    assert airesim_job_mttf_min(cfg) == pytest.approx(float(fail.mttf) / 60.0, rel=1e-5)
    # every failure costs the planner's mean restart time (re-scheduling is inside it)
    assert cfg["host_selection_time"] == 0.0
    model = b["restart"].restart_distribution(gpus=gpus, type="Pretrain", component="total")
    assert cfg["recovery_time"] == pytest.approx(model.mean() / 60.0, abs=1e-3)
    # the planner's failure-table mix of the same published prior (it keeps published zero medians
    # that the restart model floors, a difference of about a second)
    mean_restart = planner.failure_mix(gpus).restart_distribution().mean
    assert cfg["recovery_time"] == pytest.approx(mean_restart / 60.0, rel=1e-3)
    assert airesim_downtime_min(cfg) == cfg["recovery_time"]
    assert res["provenance"]["recovery_median_s"] < res["provenance"]["recovery_s"]


def test_airesim_sampling_matches_implied_mttf(tmp_path, planner):
    """Monte Carlo of AIReSim's per-server Weibull draws (coordinator._sample_ttf, then the minimum)."""
    b = planner.bundle
    write(None, "airesim", tmp_path, failure=b["failure"], restart=b["restart"], gpus=1024)
    cfg = yaml.safe_load((tmp_path / "config.yaml").read_text())
    k, n, reps = cfg["weibull_shape"], cfg["job_size"], 4000
    alpha = (1.0 / cfg["random_failure_rate"]) / math.gamma(1.0 + 1.0 / k)
    ttf = (alpha * np.random.default_rng(3).weibull(k, size=(reps, n))).min(axis=1)
    se = ttf.std(ddof=1) / math.sqrt(reps)
    assert abs(ttf.mean() - float(planner.failure_process(1024).mttf) / 60.0) < 5 * se


def test_cli_airesim_defaults_to_the_default_bundle_and_a_real_job(tmp_path, planner):
    out = tmp_path / "a"
    r = CliRunner().invoke(app, ["export", "--format", "airesim", "-o", str(out)])
    assert r.exit_code == 0, r.output
    cfg = yaml.safe_load((out / "config.yaml").read_text())
    g = int(planner.bundle["failure"].max_gpus_)
    assert cfg["job_size"] == g // 8 > 1  # not one 8-GPU server
    assert airesim_job_mttf_min(cfg) == pytest.approx(float(planner.failure_process(g).mttf) / 60, rel=1e-5)
    assert cfg["recovery_time"] == pytest.approx(planner.failure_mix(g).restart_distribution().mean / 60,
                                                 rel=1e-3)
    usage = "python -m airesim.run --params config.yaml --adaptive"
    assert usage in (out / "config.yaml").read_text() and usage in (out / "README.md").read_text()
    assert usage in r.output
