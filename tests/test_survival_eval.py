"""Survival metrics (concordance, IPCW Brier, calibration), backtests and ``acmemodel evaluate failure``."""
import json
import math
import warnings

import numpy as np
import pandas as pd
import pytest

from acmemodel.evaluation.survival import (
    brier_scores, censoring_survival, concordance, failure_backtest, integrated_brier_score, km_at,
    pivot, restart_backtest,
)

from test_failure import simulate  # noqa: E402  (tests dir is on sys.path under pytest)
from test_restart import chains_frame  # noqa: E402


def _exp_data(n, rate_t=1 / 3600.0, rate_c=1 / 7200.0, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.uniform(0.5, 2.0, n)  # per-job rate multiplier
    T_true = rng.exponential(1 / (rate_t * x))
    C = rng.exponential(1 / rate_c, n)
    return x, T_true, np.minimum(T_true, C), T_true <= C


# ----------------------------------------------------------------------------- metrics
def test_brier_without_censoring_is_the_mean_squared_error():
    x, T, _, _ = _exp_data(500, seed=1)
    E = np.ones(len(T), bool)
    times = np.array([600.0, 3600.0, 7200.0])
    S = np.exp(-x[:, None] * times[None, :] / 3600.0)
    mse = np.mean(((T[:, None] > times[None, :]).astype(float) - S) ** 2, axis=0)
    assert np.allclose(brier_scores(T, E, S, times), mse)


def test_ipcw_brier_matches_the_uncensored_brier_of_the_latent_times():
    n = 20000
    x, T_true, T, E = _exp_data(n, seed=2)
    assert 0.2 < 1 - E.mean() < 0.5
    times = np.array([1800.0, 3600.0, 7200.0])
    S = np.exp(-x[:, None] * times[None, :] / 3600.0)  # the true model
    ipcw = brier_scores(T, E, S, times)
    latent = ((T_true[:, None] > times[None, :]).astype(float) - S) ** 2
    se = latent.std(axis=0) / math.sqrt(n)
    # IPCW weights inflate the variance; allow 4.5 SE of the latent estimate times the largest weight
    G = censoring_survival(T, E)
    w = 1 / G(times)
    assert np.all(np.abs(ipcw - latent.mean(axis=0)) <= 4.5 * se * w)


def test_true_model_beats_a_constant_model():
    x, _, T, E = _exp_data(5000, seed=3)
    times = np.geomspace(60, 7200, 20)
    S_true = np.exp(-x[:, None] * times[None, :] / 3600.0)
    S_const = np.exp(-1.25 * times[None, :] / 3600.0).repeat(len(T), axis=0)
    assert integrated_brier_score(T, E, S_true, times) < integrated_brier_score(T, E, S_const, times)
    assert concordance(T, E, 1 / x) > 0.6  # higher score = longer survival
    assert concordance(T, E, 1 / x) == pytest.approx(1 - concordance(T, E, x), abs=1e-9)
    with pytest.raises(ValueError):
        brier_scores(T, E, S_true[:, :3], times)


def test_censoring_km_and_km_at_match_lifelines():
    from lifelines import KaplanMeierFitter

    _, _, T, E = _exp_data(2000, seed=4)
    G = censoring_survival(T, E)
    t = np.array([100.0, 1000.0, 5000.0])
    ref = KaplanMeierFitter().fit(T, ~E).survival_function_at_times(t).to_numpy()
    assert np.allclose(G(t), ref)
    k = km_at(T, E, t)
    ref = KaplanMeierFitter().fit(T, E).survival_function_at_times(t).to_numpy()
    assert np.allclose(k["observed"], ref)
    assert np.all(k["lower"] <= k["observed"]) and np.all(k["observed"] <= k["upper"])


# ----------------------------------------------------------------------------- backtests
@pytest.fixture(scope="module")
def fail_bt():
    jobs = simulate(5000, seed=11)
    jobs.loc[jobs.index % 4 == 0, "type"] = "Eval"
    return failure_backtest(jobs, return_model=True)


def test_failure_backtest_rows_and_calibration(fail_bt):
    rows, fm = fail_bt
    assert list(rows.columns) == ["model", "metric", "cell", "value"]
    models = set(rows["model"])
    assert {"two_regime", "weibull_aft", "lognormal_aft", "loglogistic_aft", "cox_ph", "km"} <= models
    assert {"all", "type=Eval", "type=Pretrain", "cluster=Seren"} <= set(rows["cell"])
    w = pivot(rows, "all")
    # data drawn from the two-regime law: its calibration is within the held-out KM band
    for h in ("1h", "6h", "24h"):
        r = w.loc["two_regime"]
        half = (r[f"calib_obs_upper_{h}"] - r[f"calib_obs_lower_{h}"]) / 2
        assert abs(r[f"calib_pred_{h}"] - r[f"calib_obs_{h}"]) <= 1.5 * half
    assert w.loc["two_regime", "c_index"] > 0.55
    assert w.loc["two_regime", "heldout_loglik_per_job"] >= w.loc["weibull_aft", "heldout_loglik_per_job"]
    assert np.isnan(w.loc["cox_ph"].get("heldout_loglik_per_job", np.nan))
    mt = rows[(rows["model"] == "two_regime") & rows["metric"].str.startswith("mttf_16384_h")]
    v = dict(zip(mt["metric"], mt["value"]))
    assert v["mttf_16384_h_lower"] < v["mttf_16384_h"] < v["mttf_16384_h_upper"]


def test_failure_card_tables_and_verdicts(fail_bt):
    """The card: every failure model against the one-law baselines of the training jobs (KM, Weibull,
    exponential) by each held-out job's IBS share and survival log-likelihood, paired ± SE with a
    verdict in words. The shares average to the IBS of the rows; on data drawn from the two-regime law
    (covariates, infant mortality) the model beats the one exponential law by more than one SE."""
    rows, _ = fail_bt
    card = rows.attrs["card"]
    comps = {(c["model"], c["metric"], c["baseline"]): c for c in card["comparisons"]}
    for m in ("two_regime", "weibull_aft", "cox_ph", "km"):
        assert (m, "ibs", "km_training") in comps and (m, "ibs", "weibull_one_law") in comps
    assert ("cox_ph", "loglik", "weibull_one_law") not in comps  # (no density)
    for r in comps.values():
        assert r["verdict"] in ("model better", "tie within one SE", "use the baseline")
        assert (r["verdict"] == "use the baseline") == (r["diff"] < -r["se"])
    ibs = pivot(rows, "all").loc["two_regime", "ibs"]
    assert comps[("two_regime", "ibs", "km_training")]["model_value"] == pytest.approx(ibs, rel=1e-9)
    ll = comps[("two_regime", "loglik", "exponential_one_law")]
    assert ll["higher_is_better"] and ll["verdict"] == "model better"


def test_failure_backtest_invalid_model():
    with pytest.raises(ValueError):
        failure_backtest(simulate(300), models=["gbm"])


def test_restart_backtest_glm_coverage():
    jobs = chains_frame(1500, seed=12)
    jobs["submit_s"] = jobs["end_s"] - 100
    rows = restart_backtest(jobs)
    w = rows.pivot_table(index=["model", "cell"], columns="metric", values="value")
    n = w.loc[("restart_glm", "gap"), "n"]
    iv = {(i["model"], i["interval"]): i for i in rows.attrs["intervals"]}
    assert iv[("restart_glm", "80% gap")]["coverage"] == pytest.approx(w.loc[("restart_glm", "gap"), "coverage"])
    assert abs(w.loc[("restart_glm", "gap"), "coverage"] - 0.8) <= 4.5 * math.sqrt(0.16 / n)
    assert {"restart_glm", "restart_lgbm", "restart_prior"} <= set(rows["model"])
    assert rows.query("metric == 'fallback'")["value"].iloc[0] == 0
    # the fitted model beats the published prior on data that do not follow it
    assert w.loc[("restart_glm", "total"), "mae_log"] < w.loc[("restart_prior", "total"), "mae_log"]


def test_restart_backtest_fallback():
    jobs = chains_frame(60, seed=13)
    jobs["submit_s"] = jobs["end_s"] - 100
    rows = restart_backtest(jobs, model_params={"min_chains": 1000})
    assert rows.query("metric == 'fallback'")["value"].iloc[0] == 1
    assert set(rows["model"]) == {"restart", "restart_prior"}


# ----------------------------------------------------------------------------- CLI
def test_cli_json_and_plots(tmp_path):
    from typer.testing import CliRunner

    from acmemodel.cli import app

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = CliRunner().invoke(app, ["evaluate", "failure", "--json", "--plots", str(tmp_path)])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert {"card", "failure", "restart", "mttf_curve", "info", "plots"} <= set(doc)
    assert doc["card"]["comparisons"] and {"comparisons", "intervals"} <= set(doc["card"])
    assert all(i["nominal"] == 0.8 for i in doc["card"]["intervals"])
    curve = pd.DataFrame(doc["mttf_curve"])
    assert curve["gpus"].min() == 8 and curve["gpus"].max() == 16384
    assert (curve["lower_s"] <= curve["mttf_s"]).all() and (curve["mttf_s"] <= curve["upper_s"]).all()
    assert {r["model"] for r in doc["failure"]} >= {"two_regime", "km", "cox_ph"}
    for name in ("km_by_type.png", "cumulative_incidence.png", "mttf.png", "restart.png"):
        assert (tmp_path / name).stat().st_size > 1000


def test_cli_user_errors_exit_2(capsys):
    from acmemodel.cli import main

    for argv in (["evaluate", "failure", "--test-fraction", "1.5"],
                 ["evaluate", "failure", "/no/such/trace.csv"],
                 ["evaluate", "failure", "--test-fraction", "0.2", "--cutoff", "2023-08-01"]):
        with pytest.raises(SystemExit) as e:
            main(argv)
        assert e.value.code == 2
        err = capsys.readouterr().err
        assert err.startswith("error:") and "Traceback" not in err
