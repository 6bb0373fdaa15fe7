"""Reliability presets, the sensitivity band and the energy/carbon model of lost GPU time."""
from __future__ import annotations

import json
from importlib import resources

import numpy as np
import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

from acmemodel.cli import app, main
from acmemodel.errors import ConfigError
from acmemodel.planner.config import Assumptions, ClusterConfig, FailureSpec
from acmemodel.planner.energy import PowerModel, busy_share_in_window, seren_may_check
from acmemodel.planner.planner import Planner
from acmemodel.planner.reliability import PRESETS, get_preset

H = 3600.0
EXAMPLE = resources.files("acmemodel.planner").joinpath("examples", "example.yaml")


# ------------------------------------------------------------------------------------------ presets
def test_presets_reproduce_their_published_figures():
    assert PRESETS["meta-rsc1"].mttf_s(16384) / H == pytest.approx(1.80, abs=0.005)      # Kokolis et al.
    assert PRESETS["llama3-405b"].mttf_s(16384) / H == pytest.approx(54 * 24 / 419)       # 3.09 h
    assert PRESETS["llama3-405b"].mttf_s(16384) / H == pytest.approx(3.09, abs=0.005)
    # MTTF = 1 / (nodes x r_f): 2.34 failures per 1,000 node-days at 128 nodes
    assert PRESETS["meta-rsc2"].mttf_s(1024) == pytest.approx(1000 * 86400 / (128 * 2.34))
    # through the planner: exponential, hazard proportional to GPUs
    p, rsc = Planner(), Assumptions(FailureSpec(reliability="meta-rsc1"))
    assert p.failure_process(16384, rsc).mean() / H == pytest.approx(1.80, abs=0.005)
    assert p.failure_process(8192, rsc).mean() == pytest.approx(2 * p.failure_process(16384, rsc).mean())
    assert p.failure_mix(1024, rsc).restart_distribution().mean == pytest.approx(12.5 * 60)


def test_acme_preset_is_the_default_bundles_failure_model():
    import acmemodel

    fm = acmemodel.load_default()["failure"]
    mttf = Planner().failure_process(1024, Assumptions(FailureSpec(reliability="acme-2023"))).mean()
    assert mttf == pytest.approx(float(fm.mttf(1024, type="Pretrain")), rel=1e-9)
    per_1000_node_days = 1000 * 86400 / (mttf * 1024 / 8)
    assert 0.5 < per_1000_node_days < 10     # the "about 2.3" for today's default bundle


def test_unknown_preset_and_conflicts_are_field_named():
    with pytest.raises(ConfigError, match="failures.reliability must be one of acme-2023"):
        ClusterConfig.from_dict({"cluster": {"gpus": 64}, "runs": [{"gpus": 8, "work": "1d"}],
                                 "failures": {"reliability": "meta-rsc9"}})
    with pytest.raises(ConfigError, match="failures.reliability and failures.mttf"):
        ClusterConfig.from_dict({"cluster": {"gpus": 64}, "runs": [{"gpus": 8, "work": "1d"}],
                                 "failures": {"reliability": "meta-rsc1", "mttf": "8h"}})
    with pytest.raises(ConfigError, match="--reliability"):
        get_preset("x", "--reliability")


def test_preset_sets_published_checkpoint_cost_unless_config_does():
    base = {"cluster": {"gpus": 64}, "runs": [{"gpus": 8, "work": "1d"}],
            "failures": {"reliability": "meta-rsc1"}}
    assert ClusterConfig.from_dict(base).checkpoint.sync_cost_s == 300.0
    cfg = ClusterConfig.from_dict({**base, "checkpoint": {"sync_cost": "30s"}})
    assert cfg.checkpoint.sync_cost_s == 30.0


# ------------------------------------------------------------------------------------------ band
@pytest.fixture(scope="module")
def banded_plan():
    cfg = ClusterConfig.from_dict({"cluster": {"gpus": 4096}, "runs": [{"name": "r", "gpus": 2048, "work": "10d"}],
                                   "simulation": {"replicas": 1500, "seed": 3}})
    return Planner().plan(cfg, cluster=False).to_dict()


def test_band_lists_every_preset_and_is_monotone_in_the_rate(banded_plan):
    band = banded_plan["runs"][0]["sensitivity"]
    assert band["chosen"] == "acme-2023"
    names = [s["scenario"] for s in band["scenarios"]]
    assert set(PRESETS) - {"acme-2023"} <= set(names)
    rows = {s["scenario"]: s for s in band["scenarios"]}
    lo, mid, hi = rows["x0.5 failure rate"], band["main"], rows["x2 failure rate"]
    for k in ("completion_p50_s", "completion_p90_s", "completion_mean_s", "expected_failures", "gpu_hours_lost"):
        assert lo[k] <= mid[k] <= hi[k], k
    assert lo["optimal_interval_s"] >= mid["optimal_interval_s"] >= hi["optimal_interval_s"]
    assert band["most_sensitive"] in names


def test_band_is_monotone_across_presets_by_failure_rate(banded_plan):
    rows = {s["scenario"]: s for s in banded_plan["runs"][0]["sensitivity"]["scenarios"]}
    # same restart and checkpoint costs; RSC-1 fails 2.8x as often as RSC-2
    assert rows["meta-rsc1"]["completion_mean_s"] > rows["meta-rsc2"]["completion_mean_s"]
    assert rows["meta-rsc1"]["expected_failures"] > rows["meta-rsc2"]["expected_failures"]


# ------------------------------------------------------------------------------------------ energy
def test_energy_is_exact_for_a_hand_computed_case():
    m = PowerModel(gpu_busy_w=300.0, gpu_idle_w=50.0, gpu_max_w=400.0, gpus_per_server=8,
                   gpu_share_of_server=0.8, pue=1.5, carbon_t_per_mwh=0.5)
    # P_rest = 8 * 400 * 0.2 / 0.8 = 800 W -> 100 W per GPU
    assert m.rest_w == pytest.approx(800.0)
    assert m.kwh_per_gpu_hour == pytest.approx((300 + 100) * 1.5 / 1000)
    assert m.price(100.0) == pytest.approx({"kwh": 60.0, "tco2e": 0.03})
    e = m.price_loss({"lost_work": 10.0, "restart": 4.0, "checkpoint": 1.0})
    assert e["lost_work"]["kwh"] == pytest.approx(6.0)
    assert e["restart"]["kwh"] == pytest.approx(4 * (50 + 100) * 1.5 / 1000)
    assert e["total"]["kwh"] == pytest.approx(6.0 + 0.9 + 0.6)
    assert e["total"]["tco2e"] == pytest.approx(7.5 / 1000 * 0.5)
    # cluster: 16 GPUs for 10 h, half busy
    assert m.cluster_energy_mwh(16, 10, 0.5) == pytest.approx(16 * 10 * (150 + 25 + 100) * 1.5 / 1e6)
    assert m.price_loss({"lost_work": None, "restart": 1.0, "checkpoint": 1.0})["total"]["kwh"] is None


def test_default_power_model_from_the_published_curves():
    m = PowerModel()
    assert 150 < m.busy_w < 300                      # from the Seren GPU-power CDF
    chk = m.server_check()                           # P_rest against the server-power CDF
    assert 0.8 < chk["ratio"] < 1.25
    with pytest.raises(ConfigError, match="energy.pue"):
        PowerModel(pue=0.9)
    with pytest.raises(ConfigError, match="energy has unknown"):
        PowerModel.from_dict({"watts": 3})


def test_busy_share_and_may_check():
    t0 = pd.Timestamp("2023-05-01", tz="Asia/Shanghai").timestamp()
    t1 = pd.Timestamp("2023-06-01", tz="Asia/Shanghai").timestamp()
    # one job of 1,144 GPUs (half of Seren) running through May, one outside it
    jobs = pd.DataFrame({"start_s": [t0 - 10, t1 + 5], "end_s": [t1 + 10, t1 + 50], "gpu_num": [1144, 8]})
    assert busy_share_in_window(jobs["start_s"], jobs["end_s"], jobs["gpu_num"], t0=t0, t1=t1,
                                capacity_gpus=2288) == pytest.approx(0.5)
    m = PowerModel()
    r = seren_may_check(jobs, m)
    assert r["busy_share"] == pytest.approx(0.5)
    assert r["mwh"] == pytest.approx(m.cluster_energy_mwh(2288, 31 * 24, 0.5))
    assert seren_may_check(jobs, m, scale=0.5)["busy_share"] == pytest.approx(1.0)


def test_plan_carries_energy_and_config_overrides(banded_plan):
    run = banded_plan["runs"][0]
    m = PowerModel()
    loss = run["gpu_time_loss_gpu_h"]
    assert run["energy"]["lost_work"]["kwh"] == pytest.approx(loss["lost_work"] * m.kwh_per_gpu_hour)
    cfg = ClusterConfig.from_dict({"cluster": {"gpus": 64}, "runs": [{"gpus": 8, "work": "1d"}],
                                   "energy": {"pue": 1.1, "gpu_busy_w": 350}})
    assert cfg.energy.pue == 1.1 and cfg.energy.busy_w == 350


# ------------------------------------------------------------------------------------------ CLI
def test_checkpoint_cli_reliability_and_energy():
    res = CliRunner().invoke(app, ["checkpoint", "--gpus", "16384", "--reliability", "meta-rsc1", "--json"])
    assert res.exit_code == 0, res.output
    d = json.loads(res.stdout)
    assert d["mttf_s"] / H == pytest.approx(1.80, abs=0.005)
    assert d["ckpt_cost_s"] == 300.0 and d["restart_mean_s"] == pytest.approx(750.0)
    e = d["energy_lost_per_day"]
    assert e["kwh"] == pytest.approx(d["gpu_hours_lost_per_day"] * d["power_model"]["kwh_per_gpu_hour"])


@pytest.mark.parametrize("argv, needle", [
    (["checkpoint", "--gpus", "8", "--reliability", "nope"], "--reliability must be one of"),
    (["checkpoint", "--gpus", "8", "--reliability", "llama3-405b"], "--ckpt-cost is required"),
    (["checkpoint", "--gpus", "8", "--reliability", "meta-rsc1", "--mttf", "3h"], "--reliability sets"),
    (["plan", str(EXAMPLE), "--reliability", "nope", "--no-cluster"], "failures.reliability must be one of"),
])
def test_cli_reliability_errors(argv, needle, capsys):
    with pytest.raises(SystemExit) as e:
        main(argv)
    err = capsys.readouterr().err.strip().splitlines()
    assert e.value.code == 2 and len(err) == 1 and err[0].startswith("error:") and needle in err[0]


def test_plan_cli_reliability_overrides_config(tmp_path):
    data = yaml.safe_load(EXAMPLE.read_text())
    data["failures"]["mttf"] = "8h"
    data["simulation"]["replicas"] = 300
    data.pop("evaluation", None)
    p = tmp_path / "c.yaml"
    p.write_text(yaml.safe_dump(data))
    res = CliRunner().invoke(app, ["plan", str(p), "--reliability", "llama3-405b", "--no-cluster", "--json"])
    assert res.exit_code == 0, res.output
    d = json.loads(res.stdout)
    r = d["runs"][0]
    assert r["sensitivity"]["chosen"] == "llama3-405b"
    # the preset's rate, lowered by the config's Infrastructure multiplier 0.8 (a factor in [0.8, 1])
    base = PRESETS["llama3-405b"].mttf_s(r["gpus"])
    assert base <= r["mttf_s"] <= base / 0.8


def test_html_report_draws_the_band(tmp_path):
    cfg = ClusterConfig.from_dict({"cluster": {"gpus": 4096}, "runs": [{"name": "r", "gpus": 1024, "work": "5d"}],
                                   "simulation": {"replicas": 300}})
    path = Planner().plan(cfg, cluster=False).report(tmp_path / "p.html")
    text = open(path, encoding="utf-8").read()
    assert 'alt="sensitivity band of r" src="data:image/png;base64,' in text
    assert "Energy of the GPU-time loss" in text and "Moves the answer most" in text


def test_sweep_over_presets_carries_energy(tmp_path):
    from acmemodel.planner.sweep.runner import sweep
    from acmemodel.synth import sample_workload

    cfg = {"name": "tiny", "cluster": {"gpus": 512, "partitions": {"pretrain": 256, "eval": 64}},
           "workload": {"cluster": "Seren", "scale": 0.05, "days": 0.25, "replicas": 1},
           "runs": [{"name": "big", "gpus": 256, "work": "5d"}], "simulation": {"replicas": 200, "seed": 1}}
    df = sweep(cfg, {"axes": {"failures.reliability": {"values": ["meta-rsc1", "meta-rsc2"]}}},
               sampler=sample_workload)
    assert list(df["status"]) == ["ok", "ok"] and list(df["failures.reliability"]) == ["meta-rsc1", "meta-rsc2"]
    m = PowerModel()
    kwh = ((df["big.gpu_h_lost_work"] + df["big.gpu_h_lost_checkpoint"]) * m.kwh_per_gpu_hour
           + df["big.gpu_h_lost_restart"] * m.kwh_per_idle_gpu_hour)
    np.testing.assert_allclose(df["big.kwh_lost"], kwh, rtol=1e-9)
    np.testing.assert_allclose(df["tco2e_lost"], df["kwh_lost"] / 1000 * m.carbon_t_per_mwh, rtol=1e-9)
    assert df["big.expected_failures"][0] > df["big.expected_failures"][1]     # RSC-1 fails more often
    # --reliability on the base config (API): every point takes the preset's rate
    one = sweep(cfg, {"axes": {"runs.*.work": {"values": ["5d"]}}}, reliability="llama3-405b",
                sampler=sample_workload)
    assert one["big.expected_failures"][0] == pytest.approx(5 * 86400 / PRESETS["llama3-405b"].mttf_s(256), rel=0.35)


def test_sweep_cli_unknown_preset_is_one_error_line(tmp_path, capsys):
    cfg = tmp_path / "c.yaml"
    cfg.write_text(EXAMPLE.read_text())
    grid = tmp_path / "g.yaml"
    grid.write_text("axes:\n  checkpoint.sync_cost: {values: [30s]}\n")
    with pytest.raises(SystemExit) as e:
        main(["sweep", str(cfg), "--grid", str(grid), "-o", str(tmp_path / "o.parquet"), "--reliability", "zz"])
    err = capsys.readouterr().err.strip().splitlines()
    assert e.value.code == 2 and len(err) == 1 and "failures.reliability must be one of" in err[0]


def test_the_workload_sampler_is_handed_to_the_planner():
    """The planner samples the cluster's workload with the sampler its caller hands it (the synthesiser's
    here); without one the cluster part needs an explicit workload."""
    from acmemodel.synth import sample_workload

    cfg = ClusterConfig.from_dict({"cluster": {"gpus": 512, "partitions": {"pretrain": 256, "eval": 64}},
                                   "workload": {"cluster": "Seren", "scale": 0.05, "days": 0.25},
                                   "runs": [{"name": "big", "gpus": 256, "work": "2d"}],
                                   "simulation": {"replicas": 100}, "sensitivity": False})
    with pytest.raises(ConfigError, match="no workload sampler"):
        Planner().plan(cfg)
    cl = Planner(sampler=sample_workload).plan(cfg).to_dict()["cluster"]
    assert cl["available"], cl.get("reason")
    assert sum(q["count"] for t, q in cl["queue_s"].items() if "planned" not in t) > 0   # a sampled workload
