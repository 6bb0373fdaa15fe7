"""ArrivalModel: parameter recovery on data from a known compound NHPP, local time, dispersion
test, sampling knobs, serialisation. Tolerances are multiples (5) of standard errors."""
from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from acmemodel.clusters import utc_offset_seconds
from acmemodel.errors import NotFittedError
from acmemodel.models.arrival import ArrivalModel, hour_of_week
from acmemodel.models.arrival_glm import fit_ztnb
from acmemodel.models.bundle import Bundle
from acmemodel.models.gpu_counts import GpuCountModel

DAY = 86400.0
HOUR_W = 0.25 + np.exp(-0.5 * ((np.arange(24) - 14) / 4.0) ** 2)  # working-hours bump
DOW_W = np.array([1.0, 1.1, 1.15, 1.1, 1.0, 0.45, 0.35])
EVAL_BATCH = {1: 0.5, 10: 0.2, 60: 0.3}


def _t0(tz="+08:00"):
    return pd.Timestamp("2023-03-01").value / 1e9 - utc_offset_seconds(tz)


def _known(trend=0.004, **kw):
    g = GpuCountModel.from_pmfs({("Seren", "Eval"): {1: 0.7, 8: 0.3}, ("Seren", "Pretrain"): {256: 1.0}})
    return ArrivalModel.from_rates(cluster="Seren", timezone="+08:00",
                                   jobs_per_day={"Eval": 800.0, "Pretrain": 30.0}, hour_weights=HOUR_W,
                                   dow_weights=DOW_W, batch_size_pmf={"Eval": EVAL_BATCH},
                                   intra_batch_gap_s=2.0, trend_per_day=trend, gpu_counts=g, **kw)


@pytest.fixture(scope="module")
def truth_and_fit():
    truth = _known()
    jobs = truth.sample(_t0(), _t0() + 120 * DAY, np.random.default_rng(11))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a clean fit: no convergence or data warnings
        fitted = ArrivalModel(restart_types=()).fit(jobs)
    return truth, fitted, jobs


def test_profile_and_trend_recovered(truth_and_fit):
    truth, fitted, _ = truth_and_fit
    for ty in ("Eval", "Pretrain"):
        c, t = fitted.cells_[("Seren", ty)], truth.cells_[("Seren", ty)]
        assert c["profile"] == "hour×dow"
        lr_true = t["log_rate"] + t["trend_per_day"] * (c["t_ref"] - t["t_ref"]) / DAY
        z = (c["log_rate"] - lr_true) / c["log_rate_se"]
        assert np.sum(z ** 2) < stats.chi2.ppf(1 - 1e-4, 168), ty
        assert abs(z.mean()) < 5 / np.sqrt(168), ty
        assert abs(c["trend_per_day"] - t["trend_per_day"]) < 5 * c["trend_se"], ty


def test_empirical_batch_sizes_recovered(truth_and_fit):
    _, fitted, _ = truth_and_fit
    c = fitted.cells_[("Seren", "Eval")]
    pmf = fitted.batch_size_pmf(cluster="Seren", type="Eval")
    n = c["n_batches"]
    for size, p in EVAL_BATCH.items():
        assert abs(pmf[size] - p) < 5 * np.sqrt(p * (1 - p) / n)
    assert c["bursty"] and c["bs_kind"] == "empirical"
    # Pretrain has no bursts: the plain NHPP
    p = fitted.cells_[("Seren", "Pretrain")]
    assert not p["bursty"] and p["bs_kind"] == "one" and p["mean_batch_size"] == 1.0


def test_poisson_data_is_not_called_overdispersed(truth_and_fit):
    _, fitted, _ = truth_and_fit
    cs = fitted.cell_summary().set_index("type")
    assert (cs["family"] == "poisson").all()
    assert (cs["dispersion_p"] > 0.01).all()


def test_negative_binomial_detected_and_alpha_recovered():
    truth = ArrivalModel.from_rates(cluster="Kalos", timezone="+00:00", jobs_per_day={"Debug": 72.0},
                                    hour_weights=HOUR_W, family="negbin", alpha=0.3)
    jobs = truth.sample(_t0("+00:00"), _t0("+00:00") + 60 * DAY, np.random.default_rng(4))
    f = ArrivalModel(restart_types=()).fit(jobs)
    c = f.cells_[("Kalos", "Debug")]
    assert c["family"] == "negbin" and c["dispersion_p"] < 0.01
    assert abs(c["alpha"] - 0.3) < 5 * c["dispersion_alpha_se"]
    # sampled hourly counts reproduce the over-dispersion: index of dispersion 1 + α μ
    s = f.sample(_t0("+00:00"), _t0("+00:00") + 60 * DAY, np.random.default_rng(5))
    counts = np.bincount(((s["submit_s"] - _t0("+00:00")) // 3600).astype(int), minlength=60 * 24)
    assert counts.var() / counts.mean() > 1.3


def test_ztnb_batch_sizes_recovered():
    rng = np.random.default_rng(7)
    mean, size = 8.0, 1.5
    x = stats.nbinom.rvs(size, size / (size + mean), size=9000, random_state=rng)
    x = x[x > 0][:4000]
    # compound process: batch starts homogeneous, sizes ZTNB, gaps of 1 s inside a batch
    starts = np.sort(rng.uniform(0, 30 * DAY, len(x))) + _t0()
    jobs = pd.DataFrame({"submit_s": np.repeat(starts, x) + np.concatenate([np.arange(k) for k in x]),
                         "batch_id": np.repeat(np.arange(len(x)), x), "cluster": "Seren", "type": "Eval",
                         "user": "u1", "gpu_num": 1})
    f = ArrivalModel(batch_size="ztnb", profile="const", restart_types=()).fit(jobs)
    z = f.cells_[("Seren", "Eval")]["bs_ztnb"]
    assert abs(z["mean"] - mean) < 5 * z["mean_se"]
    assert abs(z["size"] - size) < 5 * z["size_se"]
    direct = fit_ztnb(*np.unique(x, return_counts=True))
    assert direct["mean"] == pytest.approx(z["mean"], rel=1e-6)
    assert f.cells_[("Seren", "Eval")]["mean_batch_size"] == pytest.approx(x.mean(), rel=0.05)


def test_profile_is_in_local_time():
    peak = np.where(np.isin(np.arange(24), [9, 10, 11]), 1.0, 0.05)
    peak[10] = 2.0
    models = [ArrivalModel.from_rates(cluster=cl, timezone=tz, jobs_per_day={"SFT": 120.0}, hour_weights=peak)
              for cl, tz in (("Seren", "+08:00"), ("Kalos", "+00:00"))]
    truth = ArrivalModel.merge(*models)
    jobs = truth.sample(_t0(), _t0() + 42 * DAY, np.random.default_rng(2))
    f = ArrivalModel(restart_types=(), profile="hour+dow").fit(jobs)
    s = f.summary()
    for cl in ("Seren", "Kalos"):
        prof = s[s["cluster"] == cl].groupby("hour")["jobs_per_hour"].mean()
        assert prof.idxmax() == 10, cl
    # 02:30 UTC is 10:30 in Seren (+08:00), 02:30 in Kalos
    t = pd.Timestamp("2023-03-08 02:30", tz="UTC")
    assert f.intensity(t, cluster="Seren") > 5 * f.intensity(t, cluster="Kalos")
    assert hour_of_week(t.value / 1e9, 8 * 3600) == 2 * 24 + 10  # Wednesday 10h


def test_intensity_expected_count_and_sample_agree():
    m = _known(trend=0.0)
    t0 = _t0()
    mids = t0 + 1800 + 3600 * np.arange(7 * 24)
    assert m.expected_count(t0, t0 + 7 * DAY) == pytest.approx(m.intensity(mids).sum(), rel=1e-12)
    # within one local hour the intensity is constant
    assert m.expected_count(t0 + 600, t0 + 2400) == pytest.approx(m.intensity(t0 + 600) * 0.5, rel=1e-12)
    assert m.expected_count(t0, t0 + 7 * DAY, type="Pretrain") == pytest.approx(30 * 7, rel=1e-9)
    # compound Poisson: Var(N) = Λ_batches E[S²]
    es2 = sum(k * k * p for k, p in EVAL_BATCH.items())
    ebs = sum(k * p for k, p in EVAL_BATCH.items())
    for scale in (1.0, 2.0):
        s = m.sample(t0, t0 + 14 * DAY, np.random.default_rng(int(scale)), scale=scale)
        e = s["type"] == "Eval"
        lam_e = scale * m.expected_count(t0, t0 + 14 * DAY, type="Eval")
        assert abs(e.sum() - lam_e) < 5 * np.sqrt(lam_e / ebs * es2)
        lam_p = scale * m.expected_count(t0, t0 + 14 * DAY, type="Pretrain")
        assert abs((~e).sum() - lam_p) < 5 * np.sqrt(lam_p)
        assert np.all(np.diff(s["submit_s"].to_numpy()) >= 0)
        assert set(s.columns) >= {"submit_s", "cluster", "type", "gpu_num", "batch_id", "batch_size", "user"}
        assert set(s.loc[~e, "gpu_num"]) == {256}


def test_mix_override():
    m = _known(trend=0.0)
    t0 = _t0()
    s = m.sample(t0, t0 + 14 * DAY, np.random.default_rng(3), mix={"Pretrain": 0.2})
    n_p = (s["type"] == "Pretrain").sum()
    n_e = len(s) - n_p
    es2 = sum(k * k * p for k, p in EVAL_BATCH.items()) / sum(k * p for k, p in EVAL_BATCH.items())
    tot = m.expected_count(t0, t0 + 14 * DAY)
    var_p, var_e = 0.2 * tot, 0.8 * tot * es2
    sd_share = np.sqrt((n_e ** 2 * var_p + n_p ** 2 * var_e)) / (n_e + n_p) ** 2
    assert abs(n_p / len(s) - 0.2) < 5 * sd_share
    with pytest.raises(ValueError, match="unknown"):
        m.sample(t0, t0 + DAY, np.random.default_rng(0), mix={"Nope": 0.5})
    with pytest.raises(ValueError, match="sum"):
        m.sample(t0, t0 + DAY, np.random.default_rng(0), mix={"Eval": 0.7, "Pretrain": 0.6})
    with pytest.raises(ValueError, match="scale"):
        m.sample(t0, t0 + DAY, np.random.default_rng(0), scale=-1)


def test_sparse_cells_fall_back_to_simpler_profiles():
    truth = ArrivalModel.from_rates(cluster="Kalos", timezone="+00:00",
                                    jobs_per_day={"MLLM": 0.7, "Debug": 9.0}, hour_weights=HOUR_W)
    jobs = truth.sample(_t0("+00:00"), _t0("+00:00") + 60 * DAY, np.random.default_rng(8))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        f = ArrivalModel(restart_types=()).fit(jobs)
    assert f.cells_[("Kalos", "MLLM")]["profile"] == "const"
    assert f.cells_[("Kalos", "Debug")]["profile"] == "hour+dow"
    for c in f.cells_.values():
        assert np.all(np.isfinite(c["log_rate"])) and np.all(np.isfinite(c["log_rate_se"]))


def test_restart_attempts_are_excluded():
    rng = np.random.default_rng(0)
    n = 400
    jobs = pd.DataFrame({"cluster": "Seren", "type": np.where(np.arange(n) % 2, "Pretrain", "Eval"),
                         "user": "u1", "gpu_num": 8, "submit_s": _t0() + np.sort(rng.uniform(0, 20 * DAY, n)),
                         "batch_id": np.arange(n), "attempt": np.where(np.arange(n) % 4 >= 2, 2, 1)})
    f = ArrivalModel(profile="const", restart_types=("Pretrain",)).fit(jobs)
    assert f.cells_[("Seren", "Pretrain")]["n_jobs"] == 100
    assert f.cells_[("Seren", "Eval")]["n_jobs"] == 200
    assert f.n_restarts_excluded_ == 100
    # default: restart attempts of every type are left to the restart process
    f = ArrivalModel(profile="const").fit(jobs)
    assert f.cells_[("Seren", "Pretrain")]["n_jobs"] == 100 and f.cells_[("Seren", "Eval")]["n_jobs"] == 100
    assert f.n_restarts_excluded_ == 200


def test_batches_from_features_when_absent():
    from acmemodel.features.chains import batches

    rng = np.random.default_rng(1)
    starts = _t0() + np.sort(rng.uniform(0, 10 * DAY, 300))
    size = rng.integers(1, 5, 300)
    jobs = pd.DataFrame({"cluster": "Seren", "type": "Eval", "gpu_num": 1,
                         "user": np.repeat(rng.choice(["a", "b", "c"], 300), size),
                         "submit_s": np.repeat(starts, size) + np.concatenate([np.arange(k) * 5.0 for k in size])})
    f = ArrivalModel(profile="const", restart_types=()).fit(jobs)
    assert f.cells_[("Seren", "Eval")]["n_batches"] == batches(jobs)["batch_id"].nunique()


def test_fit_on_loaded_sample_trace(sample_trace, sample_arrival):
    trace, f = sample_trace, sample_arrival  # ArrivalModel().fit(load_sample()), shared (conftest)
    assert set(f.clusters_) == {"Seren", "Kalos"} and f.timezones_["Seren"] == "+08:00"
    cs = f.cell_summary()
    assert (cs["n_jobs"] > 0).all() and np.isfinite(cs["jobs_per_day"]).all()
    days = (trace.jobs["submit_s"].max() - trace.jobs["submit_s"].min()) / DAY
    fresh = len(trace.jobs) - f.n_restarts_excluded_
    assert cs["jobs_per_day"].sum() == pytest.approx(fresh / days, rel=0.35)


def test_bundle_roundtrip_and_reporting(truth_and_fit, tmp_path):
    _, fitted, _ = truth_and_fit
    Bundle({"arrival": fitted}).save(tmp_path / "b.zip")
    m2 = Bundle.load(tmp_path / "b.zip")["arrival"]
    pd.testing.assert_frame_equal(fitted.cell_summary(), m2.cell_summary())
    pd.testing.assert_frame_equal(fitted.summary(), m2.summary())
    t0 = _t0() + 130 * DAY
    a = fitted.sample(t0, t0 + 2 * DAY, np.random.default_rng(9))
    b = m2.sample(t0, t0 + 2 * DAY, np.random.default_rng(9))
    pd.testing.assert_frame_equal(a, b)
    # trend is held at its last fitted value beyond the window
    far = fitted.intensity([t0 + 7 * DAY, t0 + 70 * DAY], cluster="Seren")
    assert far[0] == pytest.approx(far[1], rel=1e-12)
    # the daily history of forecast_counts survives the round trip
    pd.testing.assert_frame_equal(fitted.forecast_counts(t0, t0 + 2 * DAY, cluster="Seren"),
                                  m2.forecast_counts(t0, t0 + 2 * DAY, cluster="Seren"))
    s = fitted.summary()
    assert len(s) == 2 * 168 and (s["lower"] <= s["jobs_per_hour"]).all() and (s["jobs_per_hour"] <= s["upper"]).all()

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    assert fitted.plot(ax, cluster="Seren", type="Eval") is ax
    fitted.plot(ax, cluster="Seren")
    plt.close(fig)


@pytest.fixture(scope="module")
def level_step():
    """A compound NHPP whose level triples for the last 3 weeks of a 10-week fit window (no trend)."""
    base, t0 = _known(trend=0.0), _t0()
    rng = np.random.default_rng(5)
    jobs = pd.concat([base.sample(t0, t0 + 49 * DAY, rng), base.sample(t0 + 49 * DAY, t0 + 70 * DAY, rng,
                                                                       scale=3.0)], ignore_index=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fitted = ArrivalModel(restart_types=()).fit(jobs)
    return base, fitted, t0 + 70 * DAY


def test_forecast_counts_follows_the_recent_level(level_step):
    """After a level step the NHPP's intensity beyond the window carries its fitted (log-linear) level;
    forecast_counts forecasts each day's total from the daily history instead. Two weeks ahead its
    total is within 15 % of the truth (3× the base rate; the daily forecasts' own noise on ~2,500 jobs
    a day is a few %), the held intensity is further from it, and the hours of a future day are spread
    in proportion to the intensity."""
    base, fitted, end = level_step
    s = end - (end % 3600)
    fc = fitted.forecast_counts(s + 3600, s + 3600 + 14 * DAY, cluster="Seren")
    truth = 3.0 * base.expected_count(s + 3600, s + 3600 + 14 * DAY, cluster="Seren")
    held = fitted.expected_count(s + 3600, s + 3600 + 14 * DAY, cluster="Seren")
    assert list(fc.columns) == ["start_s", "end_s", "jobs"] and len(fc) == 14 * 24
    assert abs(fc["jobs"].sum() / truth - 1) < 0.15
    assert abs(fc["jobs"].sum() / truth - 1) < abs(held / truth - 1)
    lam = fitted.intensity(fc["start_s"].to_numpy() + 1800.0, cluster="Seren")
    day = ((fc["start_s"].to_numpy() + utc_offset_seconds("+08:00")) // DAY).astype(int)
    ratio = fc["jobs"].to_numpy() / lam
    for d in np.unique(day)[1:-1]:   # whole local days: one factor per day and cell type mix
        r = ratio[day == d]
        assert r.max() / r.min() < 1.5
    # inside the fit window the model's own intensity
    inside = fitted.forecast_counts(end - 2 * DAY, end - DAY, cluster="Seren")
    assert inside["jobs"].sum() == pytest.approx(fitted.expected_count(end - 2 * DAY, end - DAY, cluster="Seren"),
                                                 rel=1e-9)


def test_invalid_parameters_and_unfitted():
    jobs = pd.DataFrame({"cluster": ["S"], "type": ["A"], "submit_s": [0.0], "gpu_num": [1], "batch_id": [0]})
    for kw, name in [({"profile": "weekly"}, "profile"), ({"family": "gamma"}, "family"),
                     ({"batch_size": "zip"}, "batch_size"), ({"prior_count": -1}, "prior_count"),
                     ({"trend": "cubic"}, "trend"), ({"restart_types": "Pretrain"}, "restart_types")]:
        with pytest.raises(ValueError, match=name):
            ArrivalModel(**kw).fit(jobs)
    with pytest.raises(ValueError, match="submit_s"):
        ArrivalModel().fit(jobs.drop(columns="submit_s"))
    with pytest.raises(NotFittedError):
        ArrivalModel().intensity(0.0)
    m = _known()
    with pytest.raises(ValueError, match="key"):
        m.intensity(0.0, gpus=8)
    with pytest.raises(ValueError, match="cluster"):
        m.expected_count(0, 10, cluster="Nowhere")


# ---------------------------------------------------------------------- held-out evaluation
class _FakeRuntime:
    def sample_jobs(self, n, rng, **key):
        return pd.DataFrame({"state": rng.choice(np.array(["COMPLETED", "FAILED"]), n, p=[0.8, 0.2]),
                             "run_s": rng.lognormal(6, 1, n)})


@pytest.fixture(scope="module")
def nhpp_trace(tmp_path_factory):
    from acmemodel import load_trace
    from acmemodel.synth import simulate_jobs, to_acmetrace, write_acmetrace

    truth = _known(trend=0.0)
    jobs = simulate_jobs(arrival=truth, runtime=_FakeRuntime(), days=70, cluster="Seren", seed=12)
    path = write_acmetrace(to_acmetrace(jobs), tmp_path_factory.mktemp("ev") / "trace_seren.csv")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return load_trace(path), path


def test_held_out_evaluation_prefers_the_true_process(nhpp_trace):
    from acmemodel.evaluation.arrival import evaluate_arrival

    trace, _ = nhpp_trace
    res = evaluate_arrival(trace, test_days=21, seed=1)
    assert list(res.columns) == ["model", "metric", "cell", "value"]
    v = res.set_index(["model", "metric", "cell"])["value"]
    # data from a compound NHPP: it beats the homogeneous Poisson where bursts and profile matter
    for metric in ("ks_interarrival", "ks_batch_size", "hourly_profile_err", "weekly_profile_err"):
        assert v[("compound_nhpp", metric, "Seren/Eval")] < v[("homogeneous_poisson", metric, "Seren/Eval")]
    # bursts make hourly counts over-dispersed; the compound sample reproduces it, Poisson does not
    obs = v[("observed", "dispersion_index", "Seren/Eval")]
    assert obs > 3 and v[("homogeneous_poisson", "dispersion_index", "Seren/Eval")] < 1.5
    assert 0.5 < v[("compound_nhpp", "dispersion_index", "Seren/Eval")] / obs < 2
    assert abs(v[("compound_nhpp", "count_ratio", "Seren/ALL")] - 1) < 0.1
    fc = res[res["cell"] == "Seren/ALL/jobs"]
    assert set(fc["model"]) == {"ets", "seasonal_naive", "auto"} and set(fc["metric"]) == {"mape", "wape", "coverage"}
    assert set(res[res["cell"] == "Seren/Eval/jobs"]["model"]) == {"ets", "seasonal_naive"}  # auto: the total only
    split = res.attrs["split"]["Seren"]
    assert split["train_jobs"] > 0 and split["test_jobs"] > 0 and 20 < split["test_days"] < 23
    with pytest.raises(ValueError, match="too short"):
        evaluate_arrival(trace, test_days=60)


def test_arrival_card_tables_and_verdicts(nhpp_trace):
    """The card: the arrival model against the training mean rate and the seasonal naive per held-out
    hour and day (paired gain ± SE, verdict in words), the ETS forecast against the seasonal naive, and
    the forecasts' 90 % interval coverage. On data drawn from a compound NHPP with a weekly profile the
    model's hourly Poisson log score beats the constant rate by more than one SE."""
    from acmemodel.evaluation.arrival import evaluate_arrival

    trace, _ = nhpp_trace
    card = evaluate_arrival(trace, test_days=21, seed=1).attrs["card"]
    rows = {(c["model"], c["metric"], c["baseline"]): c for c in card["comparisons"]}
    assert {("compound_nhpp", "hourly_logscore", "training_mean_rate"),
            ("compound_nhpp", "daily_abs_err", "seasonal_naive"),
            ("ets", "daily_abs_err_jobs", "seasonal_naive"),
            ("nhpp_forecast", "hourly_abs_err", "seasonal_naive"),
            ("auto", "daily_abs_err_jobs", "seasonal_naive"),
            ("nhpp_forecast", "hourly_logscore", "compound_nhpp")} <= set(rows)
    for r in rows.values():
        assert r["verdict"] in ("model better", "tie within one SE", "use the baseline")
        assert (r["verdict"] == "use the baseline") == (r["diff"] < -r["se"])
        assert {"table", "diff", "se", "n", "model_value", "baseline_value", "higher_is_better"} <= set(r)
    ls = rows[("compound_nhpp", "hourly_logscore", "training_mean_rate")]
    assert ls["higher_is_better"] and ls["verdict"] == "model better" and ls["n"] >= 21 * 24
    iv = {(i["model"], i["interval"]): i for i in card["intervals"]}
    assert ("ets", "90% daily jobs") in iv and iv[("ets", "90% daily jobs")]["nominal"] == 0.9


def test_evaluate_arrival_cli(nhpp_trace):
    import json

    from typer.testing import CliRunner

    from acmemodel.cli import app, main

    _, path = nhpp_trace
    r = CliRunner().invoke(app, ["evaluate", "arrival", str(path), "--test-days", "21", "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    assert doc["results"] and {"model", "metric", "cell", "value"} <= set(doc["results"][0])
    assert "Seren" in doc["split"]
    assert {"comparisons", "intervals"} <= set(doc["card"])
    r = CliRunner().invoke(app, ["evaluate", "arrival", str(path), "--test-days", "21", "--no-forecast", "--detail"])
    assert r.exit_code == 0 and "ks_interarrival" in r.output and "Model card" in r.output
    with pytest.raises(SystemExit) as e:
        main(["evaluate", "arrival", str(path), "--test-days", "65"])
    assert e.value.code == 2


def test_onehot_glm_matches_statsmodels():
    """The block Fisher-scoring fit of the weekly profile (168 levels + trend) gives statsmodels' GLM
    estimates, covariance and leverages (Poisson and NB2 with a fixed alpha, with and without trend)."""
    from statsmodels.genmod import families
    from statsmodels.genmod.generalized_linear_model import GLM

    from acmemodel.models.arrival_glm import OneHotGLM, _hat_diag

    rng = np.random.default_rng(1)
    n, L = 2000, 168
    lev = np.r_[rng.integers(0, L, n), np.arange(L)]
    d = np.r_[np.linspace(-40, 40, n), np.zeros(L)]
    e = np.r_[np.ones(n), np.full(L, 0.5 / 0.3)]
    lam = np.exp(rng.normal(0, 1, L))[lev[:n]] * np.exp(0.01 * d[:n])
    y = np.r_[rng.negative_binomial(2, 2 / (2 + lam)), np.full(L, 0.5)]
    for trend in (False, True):
        for alpha in (0.0, 0.7):
            X = np.eye(L)[lev]
            X = np.column_stack([X, d]) if trend else X
            fam = families.Poisson() if alpha == 0 else families.NegativeBinomial(alpha=alpha)
            ref = GLM(y, X, family=fam, exposure=e).fit(maxiter=100, wls_method="qr", tol=1e-12)
            got = OneHotGLM(y, lev, e, d if trend else None, alpha)
            assert got.converged
            np.testing.assert_allclose(got.params, ref.params, atol=1e-7)
            np.testing.assert_allclose(got.cov_params(), ref.cov_params(), atol=1e-5, rtol=1e-5)
            np.testing.assert_allclose(got.hat[:n], _hat_diag(ref, n), atol=1e-6)
