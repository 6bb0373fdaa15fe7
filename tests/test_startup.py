"""CLI start-up (issue 34): ``import acmemodel.cli``, ``--version`` and ``checkpoint`` with explicit parameters
never import pandas, scipy, lightgbm or pyarrow (checked in a fresh interpreter: ``sys.modules`` after the
command). Timing is measured by benchmarks/bench_startup.py."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = ("pandas", "scipy", "lightgbm", "pyarrow")

CHILD = r"""
import contextlib, io, json, sys
argv = json.loads(sys.argv[1])
out = io.StringIO()
if argv is not None:
    from acmemodel.cli import main
    with contextlib.redirect_stdout(out):
        try:
            main(argv)
        except SystemExit as e:
            code = e.code
else:
    import acmemodel.cli
    code = 0
heavy = sorted({m.split(".")[0] for m in sys.modules} & set(json.loads(sys.argv[2])))
print(json.dumps({"code": code, "heavy": heavy, "out": out.getvalue()}))
"""


def _run(argv):
    r = subprocess.run([sys.executable, "-c", CHILD, json.dumps(argv), json.dumps(HEAVY)], capture_output=True,
                       text=True, check=True)
    return json.loads(r.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("argv", [
    None,
    ["--version"],
    ["checkpoint", "--gpus", "2048", "--ckpt-cost", "60s", "--mttf", "8h", "--restart", "20m"],
    ["checkpoint", "--gpus", "2048", "--ckpt-cost", "60s", "--mttf", "8h", "--restart", "20m", "--json"],
], ids=["import", "version", "checkpoint", "checkpoint-json"])
def test_light_commands_import_no_heavy_library(argv):
    got = _run(argv)
    assert got["code"] in (0, None)
    assert got["heavy"] == [], f"{argv} imported {got['heavy']}"
    if argv and argv[0] == "checkpoint":
        assert "interval" in got["out"]


def test_light_checkpoint_matches_the_planner():
    """The light path (no planner, no pandas) gives the planner's optimum and energy price."""
    from acmemodel.planner.config import Assumptions, FailureSpec, RestartSpec
    from acmemodel.planner.energy import PowerModel
    from acmemodel.planner.planner import Planner

    got = json.loads(_run(["checkpoint", "--gpus", "2048", "--ckpt-cost", "60s", "--mttf", "8h", "--restart",
                           "20m", "--json"])["out"])
    given = Assumptions(FailureSpec(mttf_s=8 * 3600.0), RestartSpec(time_s=1200.0))
    res = Planner().checkpoint(2048, ckpt_cost=60.0, work=30 * 86400.0, config=given)
    want = res.to_dict(2048)
    assert got["interval_s"] == pytest.approx(want["interval_s"], rel=1e-9)
    assert got["expected_wall_time_s"] == pytest.approx(want["expected_wall_time_s"], rel=1e-9)
    price = PowerModel().price(want["gpu_hours_lost_per_day"])
    assert got["energy_lost_per_day"]["kwh"] == pytest.approx(price["kwh"], rel=1e-9)
