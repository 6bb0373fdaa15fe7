"""`acmemodel checkpoint` and `acmemodel plan` through typer's runner and the exit-code entry point."""
from __future__ import annotations

import json
from importlib import resources

import numpy as np
import pytest
import yaml
from scipy import special
from typer.testing import CliRunner

from acmemodel.cli import app, main

runner = CliRunner()
EXAMPLE = str(resources.files("acmemodel.planner").joinpath("examples", "example.yaml"))
H = 3600.0


def run_json(args):
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def exit_code(argv, capsys):
    with pytest.raises(SystemExit) as e:
        main(argv)
    err = capsys.readouterr().err
    return e.value.code, err


def test_checkpoint_json_exponential_is_exact():
    d = run_json(["checkpoint", "--gpus", "2048", "--ckpt-cost", "60s", "--restart", "20m", "--mttf", "8h",
                  "--work", "30d", "--json"])
    for k in ("interval_s", "young_interval_s", "daly_interval_s", "expected_wall_time_s", "overhead_fraction",
              "ettr", "gpu_hours_lost_per_day"):
        assert isinstance(d[k], float), k
    M, C, R, W = 8 * H, 60.0, 1200.0, 30 * 86400.0
    exact = M * (1 + special.lambertw(-np.exp(-1 - C / M)).real)
    assert d["interval_s"] == pytest.approx(exact, rel=1e-9)
    assert d["young_interval_s"] == pytest.approx(np.sqrt(2 * C * M))
    et = M * np.exp(R / M) * np.expm1((exact + C) / M) * W / exact
    assert d["expected_wall_time_s"] == pytest.approx(et, rel=1e-9)
    assert d["ettr"] == pytest.approx(W / et) and d["overhead_fraction"] == pytest.approx(et / W - 1)
    assert d["gpu_hours_lost_per_day"] == pytest.approx(2048 * 24 * (1 - W / et))
    assert d["failure_process"]["family"] == "exponential" and d["finishes"] is True


def test_checkpoint_weibull_and_units():
    a = run_json(["checkpoint", "--gpus", "1024", "--ckpt-cost", "1m", "--restart", "1200", "--mttf", "0.5d",
                  "--weibull-shape", "0.7", "--json"])
    b = run_json(["checkpoint", "--gpus", "1024", "--ckpt-cost", "60", "--restart", "20m", "--mttf", "12h",
                  "--weibull-shape", "0.7", "--work", "720h", "--json"])
    assert a["failure_family"] == "weibull" and a["failure_process"]["shape"] == 0.7
    assert a["interval_s"] == b["interval_s"] and a["work_s"] == b["work_s"] == 30 * 86400.0
    human = runner.invoke(app, ["checkpoint", "--gpus", "1024", "--ckpt-cost", "60s", "--restart", "20m",
                                "--mttf", "12h"])
    assert human.exit_code == 0 and "recommended interval" in human.stdout and "Daly" in human.stdout


def test_checkpoint_does_not_finish_is_explicit():
    d = run_json(["checkpoint", "--gpus", "2048", "--ckpt-cost", "9h", "--restart", "20m", "--mttf", "8h",
                  "--json"])
    assert d["finishes"] is False and d["interval_s"] is None and d["expected_wall_time_s"] is None
    assert "mean time to failure" in d["reason"] and d["ettr"] == 0.0
    human = runner.invoke(app, ["checkpoint", "--gpus", "2048", "--ckpt-cost", "9h", "--restart", "20m",
                                "--mttf", "8h"])
    assert human.exit_code == 0 and "Does not finish" in human.stdout


@pytest.mark.parametrize("argv, needle", [
    (["checkpoint", "--gpus", "8", "--ckpt-cost", "60x", "--restart", "1m", "--mttf", "8h"], "--ckpt-cost"),
    (["checkpoint", "--gpus", "8", "--ckpt-cost", "60s", "--restart", "1m", "--mttf", "-8h"], "--mttf"),
    (["checkpoint", "--gpus", "8", "--ckpt-cost", "60s", "--mttf", "8h"], "--restart"),
    (["checkpoint", "--gpus", "8", "--ckpt-cost", "60s", "--restart", "1m", "--weibull-shape", "0.7"],
     "--weibull-shape"),
    (["checkpoint", "--gpus", "8", "--ckpt-cost", "60s", "--restart", "1m", "--mttf", "8h", "--bundle", "x"],
     "--bundle"),
    (["checkpoint", "--gpus", "0", "--ckpt-cost", "60s", "--restart", "1m", "--mttf", "8h"], "--gpus"),
    (["checkpoint", "--gpus", "8", "--ckpt-cost", "60s", "--restart", "1m", "--mttf", "8h", "--weibull-shape",
      "0"], "shape"),
])
def test_checkpoint_user_errors_exit_2_with_one_line(argv, needle, capsys):
    code, err = exit_code(argv, capsys)
    assert code == 2
    assert needle in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_plan_json_structure_and_report(tmp_path):
    rep = tmp_path / "plan.html"
    d = run_json(["plan", EXAMPLE, "--json", "--replicas", "300", "--no-cluster", "--report", str(rep)])
    assert [r["name"] for r in d["runs"]] == ["llm-123b", "llm-20b"]
    for r in d["runs"]:
        assert {"name", "gpus", "checkpoint_interval_s", "completion_time_s", "expected_failures", "ettr",
                "gpu_time_loss_gpu_h"} <= set(r)
        assert set(r["completion_time_s"]) == {"mean", "p50", "p90"}
        loss = r["gpu_time_loss_gpu_h"]
        assert {"total", "lost_work", "restart", "checkpoint", "by_failure_type"} <= set(loss)
        assert "NVLink Error" in loss["by_failure_type"] and r["finishes"]
        assert r["completion_time_s"]["mean"] > r["work_s"]
    assert {"queue_s", "quotas"} <= set(d["cluster"])
    assert d["cluster"]["quotas"]["pretrain"] == 3072
    text = rep.read_text()
    # per run: the loss breakdown / E[T] figure and the sensitivity band
    assert rep.exists() and text.count("data:image/png;base64,") == 4
    assert text.count('alt="sensitivity band of ') == 2
    human = runner.invoke(app, ["plan", EXAMPLE, "--replicas", "200", "--no-cluster"])
    assert human.exit_code == 0 and "llm-123b" in human.stdout and "GPU-time loss" in human.stdout


def test_plan_user_errors_exit_2(tmp_path, capsys):
    bad = yaml.safe_load(open(EXAMPLE))
    bad["runs"][1]["gpus"] = -4
    p = tmp_path / "bad.yaml"
    p.write_text(yaml.safe_dump(bad))
    code, err = exit_code(["plan", str(p), "--no-cluster"], capsys)
    assert code == 2 and "runs[1].gpus" in err and len(err.strip().splitlines()) == 1
    code, err = exit_code(["plan", str(tmp_path / "none.yaml")], capsys)
    assert code == 2 and "not found" in err
    code, err = exit_code(["plan", EXAMPLE, "--replicas", "0", "--no-cluster"], capsys)
    assert code == 2 and "--replicas" in err
