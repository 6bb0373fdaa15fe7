"""Issue 33, plans that agree with themselves: the quota search names the start-up-latency floor and
never prints a partition it did not choose; a reliability preset means the same thing as a band row and
as ``--reliability``; ``plan --no-cluster`` prints no ``sim`` column."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from acmemodel.cli import app
from acmemodel.sim.quota import find_quota

EXAMPLE = Path(__file__).resolve().parents[1] / "acmemodel" / "planner" / "examples" / "example.yaml"


def _jobs(latency: float | None, n=200, seed=0):
    rng = np.random.default_rng(seed)
    ty = rng.choice(["Eval", "SFT"], n, p=[0.7, 0.3])
    df = pd.DataFrame({"submit_s": np.sort(rng.uniform(0, 20_000, n)).round(),
                       "run_s": rng.exponential(300, n).round() + 1,
                       "gpu_num": rng.choice([1, 2, 8], n), "type": ty})
    if latency is not None:
        df["latency_s"] = np.where(ty == "Eval", latency, 0.0)
    return df


def test_latency_floor_is_reported_and_blamed_not_capacity():
    jobs = _jobs(latency=900.0)  # every Eval job waits 15 min for its pods: no lane beats that
    q = find_quota(jobs, total_gpus=64, target_wait_s=600.0)
    assert not q.feasible and q.quota_gpus is None and q.partitions is None
    assert q.latency_floor_s == pytest.approx(900.0) and q.below_latency_floor
    assert "latency floor" in q.reason and "no quota can meet it" in q.reason
    assert len(q.evaluations) <= 2  # the cheap and the generous end only: no search past the floor
    d = q.to_dict()
    assert d["latency_floor_s"] == pytest.approx(900.0) and d["below_latency_floor"] is True
    # the same jobs without latency: the floor is 0 and a lane meets the target
    q0 = find_quota(jobs.drop(columns="latency_s"), total_gpus=64, target_wait_s=600.0)
    assert q0.feasible and q0.latency_floor_s == 0.0 and not q0.below_latency_floor


def test_floor_below_target_searches_as_usual():
    q = find_quota(_jobs(latency=30.0), total_gpus=64, target_wait_s=600.0)
    assert q.latency_floor_s == pytest.approx(30.0) and not q.below_latency_floor and q.feasible
    assert q.achieved_wait_s >= q.latency_floor_s


@pytest.fixture(scope="module")
def tight_plan(tmp_path_factory):
    text = EXAMPLE.read_text().replace("max_wait: 10m", "max_wait: 1m").replace("replicas: 10000",
                                                                                 "replicas: 100")
    p = tmp_path_factory.mktemp("plan") / "tight.yaml"
    p.write_text(text)
    r = CliRunner().invoke(app, ["plan", str(p), "--json"])
    assert r.exit_code == 0, r.output
    rep = p.parent / "plan.html"
    human = CliRunner().invoke(app, ["plan", str(p), "--report", str(rep)], env={"COLUMNS": "80"})
    return json.loads(r.stdout), human.stdout, rep.read_text()


def test_infeasible_search_prints_no_partition_it_did_not_choose(tight_plan):
    doc, human, _ = tight_plan
    cl = doc["cluster"]
    qs = cl["quota_search"]
    assert not qs["feasible"] and qs["below_latency_floor"] and qs["latency_floor_s"] > 60
    assert cl["quotas"]["eval"] is None  # no quota was chosen
    assert cl["queues_simulated_at"]["eval"] == max(e["gpus"] for e in qs["evaluations"])
    part = human[human.index("Partitions"):]
    eval_line = next(ln for ln in part.splitlines() if ln.strip().startswith("eval"))
    assert "none" in eval_line and f"{cl['queues_simulated_at']['eval']:,}" not in eval_line
    assert "latency floor" in human and "chosen none" in human


@pytest.fixture(scope="module")
def configs(tmp_path_factory):
    d = tmp_path_factory.mktemp("cfg")
    base = EXAMPLE.read_text().replace("replicas: 10000", "replicas: 300")
    explicit = d / "explicit.yaml"
    explicit.write_text(base.replace("sync_cost: 60s", "sync_cost: 90s"))
    implicit = d / "implicit.yaml"
    implicit.write_text("\n".join(ln for ln in base.splitlines() if "sync_cost" not in ln) + "\n")
    return {"config": explicit, "default": implicit}


@pytest.mark.parametrize("kind", ["config", "default"])
def test_preset_row_equals_choosing_the_preset(configs, kind):
    def plan(*extra):
        r = CliRunner().invoke(app, ["plan", str(configs[kind]), "--no-cluster", "--json", *extra])
        assert r.exit_code == 0, r.output
        return json.loads(r.stdout)["runs"][1]  # llm-20b: the faster of the two

    band = plan()["sensitivity"]
    for preset in ("meta-rsc1", "llama3-405b"):
        row = next(s for s in band["scenarios"] if s["scenario"] == preset)
        main = plan("--reliability", preset)["sensitivity"]["main"]
        for k in ("gpu_hours_lost", "optimal_interval_s", "completion_p90_s", "ckpt_cost_s", "ckpt_cost_source"):
            assert row[k] == main[k], (kind, preset, k)
    rsc1 = next(s for s in band["scenarios"] if s["scenario"] == "meta-rsc1")
    # the config's own cost wins over the preset's published 5 min; without one, the preset's applies
    assert (rsc1["ckpt_cost_s"], rsc1["ckpt_cost_source"]) == ((90.0, "config") if kind == "config"
                                                                else (300.0, "preset"))


def test_band_table_says_which_cost_it_used(configs):
    r = CliRunner().invoke(app, ["plan", str(configs["default"]), "--no-cluster"], env={"COLUMNS": "80"})
    assert r.exit_code == 0
    assert "cost = checkpoint cost used" in r.stdout and "5 min p" in r.stdout


def test_no_cluster_prints_no_sim_column():
    r = CliRunner().invoke(app, ["plan", str(EXAMPLE), "--no-cluster", "--replicas", "100"],
                           env={"COLUMNS": "80"})
    assert r.exit_code == 0, r.output
    runs = r.stdout[r.stdout.index("Pretraining runs"):r.stdout.index("GPU-time loss")]
    assert "sim" not in runs and " yes" not in runs
    assert "not in the cluster simulation" not in r.stdout


def test_html_report_has_human_numbers_and_a_quota_plot(tight_plan):
    import re

    _, _, page = tight_plan
    text = re.sub(r'src="data:image/png;base64,[^"]*"', 'src=""', page)
    cells = re.findall(r"<td>([^<]*)</td>", text)
    assert cells
    for c in cells:
        assert not re.search(r"\de[+-]\d", c), c          # no 4.954e+04
        assert c not in ("True", "False") and "{" not in c, c
        assert not re.match(r"0\.0\d* min", c), c          # no 0.0167 min
        assert not re.search(r"(?<![\w.,-])\d{4,}(?![\w,-])", c), c  # thousands separators (not in names)
    assert 'alt="quota trade-off"' in text and "Latency floor" in text
    assert "{'" not in text  # no raw dict in the assumptions either
