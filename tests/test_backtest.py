"""Backtest harness and ``acmemodel evaluate runtime``: tidy results, time order, CLI JSON/exit codes."""
from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from acmemodel.cli import app, main
from acmemodel.evaluation.backtest import render_table, runtime_backtest
from acmemodel.evaluation.synthetic import synthetic_jobs

FAST = dict(predictor_params=dict(n_estimators=40, learning_rate=0.1), crps_draws=500)


@pytest.fixture(scope="module")
def jobs():
    return synthetic_jobs(8000, seed=2)


@pytest.fixture(scope="module")
def result(jobs):
    return runtime_backtest(jobs, **FAST)


def test_tidy_rows(result):
    r = result.results
    assert list(r.columns) == ["model", "metric", "cell", "value", "n"]
    pooled = result.pooled()
    for model in ("runtime_model", "runtime_model_nostate", "global", "predictor", "user_median",
                  "queue_model", "queue_global"):
        assert model in pooled.index
    for model in ("predictor", "runtime_model_nostate", "global"):
        assert 0 < pooled.loc[model, "coverage"] < 1
    assert np.isfinite(pooled.loc["runtime_model", ["loglik", "ks", "crps_log"]]).all()
    assert set(r.cell) >= {"all", "Seren/Eval", "Kalos/Eval"}
    assert (r[r.cell == "all"].n > 0).all()


def test_conditioning_beats_one_distribution(result):
    """Synthetic types differ by orders of magnitude: the cell model must beat the global one."""
    p = result.pooled()
    assert p.loc["runtime_model_nostate", "loglik"] > p.loc["global", "loglik"]
    assert p.loc["runtime_model_nostate", "mae_log"] < p.loc["global", "mae_log"]
    assert p.loc["queue_model", "loglik"] > p.loc["queue_global", "loglik"]


def test_split_is_by_time_not_row_order():
    """The same split and scores whatever the row order; a larger test fraction holds out more. (Row order
    and split do not depend on the sample size: 2,000 jobs, a quarter of the module's, for three backtests.)"""
    jobs = synthetic_jobs(2000, seed=2)
    r1 = runtime_backtest(jobs, include_queue=False, **FAST)
    shuffled = jobs.sample(frac=1.0, random_state=0)
    r2 = runtime_backtest(shuffled, include_queue=False, **FAST)
    assert r2.info["n_train"] == r1.info["n_train"] and r2.info["n_test"] == r1.info["n_test"]
    a = r1.pooled().loc["runtime_model_nostate", "mae_log"]
    assert r2.pooled().loc["runtime_model_nostate", "mae_log"] == pytest.approx(a)
    r3 = runtime_backtest(jobs, test_fraction=0.5, include_queue=False, **FAST)
    assert r3.info["n_test"] > 2 * r1.info["n_test"]


def test_rendering_and_json(result):
    from rich.console import Console

    g = render_table(result.results, "all", result.info)
    assert sum(t.row_count for t in g.renderables) == 3 + 4 + 2  # dist, quantile, queue tables
    con = Console(record=True, width=200)
    con.print(result.table("Seren/Eval"))
    assert "predictor" in con.export_text()
    doc = json.loads(json.dumps(result.to_json()))
    assert {"model", "metric", "cell", "value"} <= set(doc["results"][0])


def test_cli_json_on_sample():
    res = CliRunner().invoke(app, ["evaluate", "runtime", "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    rows = doc["results"]
    cov = {r["model"] for r in rows if r["metric"] == "coverage" and r["cell"] == "all"}
    assert cov == {"predictor", "runtime_model_nostate", "global"}
    assert all(set(r) >= {"model", "metric", "cell", "value"} for r in rows)


def test_cli_table_on_acmetrace_file():
    from acmemodel.datasets import sample_paths

    res = CliRunner().invoke(app, ["evaluate", "runtime", str(sample_paths("Seren")[0]), "--no-queue",
                                   "--test-fraction", "0.25"])
    assert res.exit_code == 0, res.output
    out = res.stdout
    assert "user median" in out and "coverage" in out and "gain ± SE" in out
    assert any(v in out for v in ("model better", "tie within one SE", "use the baseline"))


def test_paired_verdicts():
    """The card's verdict: a gain within one paired SE is a tie; a loss beyond it says "use the baseline"."""
    from acmemodel.evaluation.card import coverage_verdict, paired

    rng = np.random.default_rng(0)
    base = rng.normal(1.0, 0.5, 400)
    assert paired(base - 0.5, base, higher_is_better=False)["verdict"] == "model better"
    assert paired(base + 0.5, base, higher_is_better=False)["verdict"] == "use the baseline"
    tie = paired(base + np.tile([1e-3, -1e-3], 200), base, True)  # mean gain 0, SE 5e-5
    assert tie["verdict"] == "tie within one SE" and tie["se"] > 0
    assert paired(np.r_[-np.inf, base[1:]], base, True)["verdict"] == "use the baseline"
    c = coverage_verdict(np.r_[np.ones(70), np.zeros(30)])
    assert c["verdict"] == "under-covers" and c["se"] == pytest.approx(np.sqrt(0.21 / 100))
    assert coverage_verdict(np.r_[np.ones(80), np.zeros(20)])["verdict"] == "calibrated"


def test_card_in_json_and_80_columns(result):
    from rich.console import Console

    from acmemodel.evaluation.backtest import render_runtime_card

    doc = json.loads(json.dumps(result.to_json()))
    comps = doc["card"]["comparisons"]
    assert {(c["model"], c["baseline"], c["metric"]) for c in comps} >= {
        ("runtime_model_nostate", "global", "loglik"), ("runtime_model_nostate", "global", "crps_log"),
        ("predictor", "user_median", "mae_log"), ("queue_model", "queue_global", "loglik")}
    assert all(set(c) >= {"diff", "se", "verdict", "model_value", "baseline_value", "n"} for c in comps)
    assert {i["model"] for i in doc["card"]["intervals"]} == {"predictor", "runtime_model_nostate", "global"}
    con = Console(record=True, width=80)
    con.print(render_runtime_card(result.card, result.info))
    assert max(len(line.rstrip()) for line in con.export_text().splitlines()) <= 80


@pytest.mark.parametrize("argv", [["evaluate", "runtime", "--test-fraction", "1.5"],
                                  ["evaluate", "runtime", "/no/such/file.csv"],
                                  ["evaluate", "runtime", "--test-fraction", "0.2", "--cutoff", "2023-08-01"]])
def test_cli_user_errors_exit_2(argv, capsys):
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("error:") and "Traceback" not in err
