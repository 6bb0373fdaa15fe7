"""RestartModel: GLM recovery, predictive distributions, LightGBM alternative, prior fallback, bundle."""
import math
import warnings

import numpy as np
import pandas as pd
import pytest

from acmemodel.datasets.published import load_failure_table
from acmemodel.errors import DataWarning
from acmemodel.models import Bundle
from acmemodel.models.restart import (
    MixtureDistribution, RestartDistribution, RestartModel, prior_distribution,
)

B0, B_G, B_NIGHT, PHI = math.log(600.0), 0.2, 1.0, 0.8


def chains_frame(n, seed=0):
    """Jobs with the chain contract columns; the gap is Gamma(1/φ, μφ), log μ linear in covariates."""
    rng = np.random.default_rng(seed)
    g = rng.choice([1, 8, 64, 256, 1024], n).astype(float)
    end = 1.68e9 + rng.uniform(0, 90 * 86400, n)
    hour = ((end + 8 * 3600) % 86400) // 3600  # Seren local time (+08:00)
    night = (hour >= 22) | (hour < 8)
    mu = np.exp(B0 + B_G * np.log2(1 + g) + B_NIGHT * night)
    gap = rng.gamma(1 / PHI, mu * PHI)
    q = rng.gamma(0.5, 60.0 * (1 + g / 64), n)
    df = pd.DataFrame({"cluster": "Seren", "type": rng.choice(["Pretrain", "Eval"], n),
                       "analysis_state": "FAILED", "gpu_num": g.astype(np.int64), "end_s": end,
                       "submit_s": end - 100, "queue_s": 5.0, "attempt": rng.integers(1, 4, n),
                       "next_restart_gap_s": gap, "next_queue_s": q})
    others = pd.concat([df.iloc[: n // 4].assign(analysis_state="COMPLETED"),
                        df.iloc[: n // 4].assign(next_restart_gap_s=np.nan, next_queue_s=np.nan)])
    return pd.concat([df, others], ignore_index=True)


@pytest.fixture(scope="module")
def fitted():
    return RestartModel().fit(chains_frame(2000, seed=1))


def test_only_restarted_failures_are_targets(fitted):
    assert fitted.n_chains_ == 2000 and not fitted.fallback_


def test_glm_recovers_coefficients_and_dispersion(fitted):
    s = fitted.summary().set_index(["component", "term"])
    for term, truth in (("log2_gpus", B_G), ("night", B_NIGHT), ("Intercept", B0)):
        r = s.loc[("gap", term)]
        assert abs(r["coef"] - truth) <= 4.5 * r["std_error"], (term, r["coef"], truth)
        assert r["lower"] < r["coef"] < r["upper"]
    gap_terms = s.loc["gap"].index
    null_terms = ["log_attempt", "weekend"] + [t for t in gap_terms if t.startswith("type[")]
    assert len(null_terms) == 3
    for term in null_terms:  # no effect in the simulation
        r = s.loc[("gap", term)]
        assert abs(r["coef"]) <= 4.5 * r["std_error"]
    # Pearson dispersion: Var(r²) = 2φ² + 6φ³ for Gamma Pearson residuals
    phi = s.loc[("gap", "dispersion (Gamma phi)"), "coef"]
    assert abs(phi - PHI) <= 4.5 * math.sqrt((2 * PHI ** 2 + 6 * PHI ** 3) / 2000)


def test_predict_returns_distributions(fitted):
    d = fitted.predict(gpu_num=256, hour=3, type="Pretrain", attempt=1, weekend=False, component="gap")
    assert isinstance(d, RestartDistribution) and len(d) == 1
    mu = math.exp(B0 + B_G * math.log2(257) + B_NIGHT)
    assert d.mean()[0] == pytest.approx(mu, rel=0.15)
    q = d.quantile([0.1, 0.5, 0.9])[0]
    assert q[0] < q[1] < q[2]
    x = d.sample(20000, np.random.default_rng(2))
    assert x.shape == (1, 20000)
    sd = math.sqrt(PHI) * d.mean()[0]
    assert abs(x.mean() - d.mean()[0]) < 4.5 * sd / math.sqrt(20000)
    X = pd.DataFrame({"gpu_num": [1, 1024], "type": ["Eval", "Pretrain"], "hour": [12, 2]})
    for method in ("glm", "lgbm"):
        dd = fitted.predict(X, method=method, component="gap")
        assert len(dd) == 2 and dd.median()[1] > dd.median()[0]
        lo, hi = dd.interval(0.8)
        assert np.all(lo < dd.median()) and np.all(dd.median() < hi)
    with pytest.raises(ValueError):
        fitted.predict(X, gpu_num=3)
    with pytest.raises(ValueError):
        fitted.predict(X, component="lunch")


def test_glm_interval_coverage_on_fresh_data(fitted):
    test = chains_frame(1000, seed=3)
    fr = RestartModel.restart_frame(test)
    lo, hi = fitted.predict(fr, component="gap").interval(0.8)
    cover = np.mean((fr["gap_s"] >= lo) & (fr["gap_s"] <= hi))
    assert abs(cover - 0.8) <= 4.5 * math.sqrt(0.8 * 0.2 / len(fr))


def test_restart_distribution_for_the_planner(fitted):
    d = fitted.restart_distribution(gpus=1024)
    assert isinstance(d, MixtureDistribution) and d.source == "glm"
    q = d.quantile([0.2, 0.5, 0.8])
    assert np.allclose(d.cdf(q), [0.2, 0.5, 0.8], atol=1e-6)
    assert d.mean() > fitted.restart_distribution(gpus=1).mean()
    assert fitted.restart_distribution(gpus=8, method="lgbm").source == "lgbm"
    # categories are not in the public trace: the published prior answers per category
    p = fitted.restart_distribution(category="Infrastructure", gpus=1024)
    assert p.source == "prior"
    with pytest.raises(ValueError):
        fitted.restart_distribution(gpus=8, colour="red")
    s = d.sample(100, np.random.default_rng(0))
    assert s.shape == (100,) and np.all(s > 0)


def test_failure_hour_is_local_time_of_the_failure():
    jobs = chains_frame(40, seed=4).iloc[:40].copy()
    # 16:30 UTC is 00:30 in Seren (+08:00): night
    jobs["end_s"] = pd.Timestamp("2023-05-03 16:30", tz="UTC").value / 1e9
    fr = RestartModel.restart_frame(jobs)
    assert (fr["hour"] == 0).all() and fr["night"].all()
    assert np.allclose(fr["total_s"], fr["gap_s"] + fr["queue_s"])


def test_chains_are_computed_when_missing():
    t0 = 1.68e9
    rows = []
    for k in range(40):  # 40 users: a failure, then a resubmission 10 min later
        base = t0 + k * 86400 * 2
        rows.append(dict(job_id=f"a{k}", user=f"u{k}", analysis_state="FAILED", submit_s=base,
                         start_s=base + 5, end_s=base + 3600))
        rows.append(dict(job_id=f"b{k}", user=f"u{k}", analysis_state="COMPLETED",
                         submit_s=base + 4200 + 10 * k, start_s=base + 4260 + 20 * k, end_s=base + 9000))
    jobs = pd.DataFrame(rows).assign(cluster="Kalos", type="Pretrain", gpu_num=64)
    jobs["queue_s"] = jobs["start_s"] - jobs["submit_s"]
    m = RestartModel(min_lgbm_chains=1000).fit(jobs)
    assert m.n_chains_ == 40 and not m.fallback_
    fr = RestartModel.restart_frame(jobs)
    k = np.arange(40)
    assert np.allclose(fr["gap_s"], 600.0 + 10 * k) and np.allclose(fr["queue_s"], 60.0 + 10 * k)
    # constant targets cannot be fitted by the GLM: intercept-only moment fit with a warning
    jobs.loc[jobs["job_id"].str.startswith("b"), "submit_s"] = jobs["submit_s"].shift(1) + 4200
    jobs["queue_s"] = 60.0
    with pytest.warns(Warning, match="intercept-only"):
        m = RestartModel(min_lgbm_chains=1000).fit(jobs)
    assert m.restart_distribution(gpus=64).mean() == pytest.approx(660.0)


def test_prior_matches_the_published_table():
    tab = load_failure_table().set_index("reason")
    d = prior_distribution(reason="NVLink Error")
    assert d.median() == pytest.approx(tab.loc["NVLink Error", "time_to_restart_median_min"] * 60, rel=1e-6)
    assert d.mean() == pytest.approx(tab.loc["NVLink Error", "time_to_restart_avg_min"] * 60, rel=1e-9)
    # a category is the count-weighted mixture of its reasons (means add up where the spread is free)
    infra = tab[tab["category"] == "Infrastructure"]
    free = infra[infra["time_to_restart_avg_min"] / infra["time_to_restart_median_min"].clip(lower=0.05)
                 > math.exp(0.125)]
    sub = prior_distribution("Infrastructure")
    assert sub.mean() >= (free["num"] * free["time_to_restart_avg_min"] * 60).sum() / infra["num"].sum()
    # large jobs weigh the slow infrastructure reasons more than 1-GPU jobs
    assert prior_distribution(gpus=1024).mean() > prior_distribution(gpus=1).mean()
    with pytest.raises(ValueError):
        prior_distribution("Cosmic")


def test_fallback_to_prior_when_too_few_chains():
    jobs = chains_frame(10, seed=5)
    with pytest.warns(DataWarning, match="prior"):
        m = RestartModel(min_chains=30).fit(jobs)
    assert m.fallback_ and "min_chains" in m.fallback_reason_
    s = m.summary()
    assert s["note"].str.contains("prior").all()
    d = m.restart_distribution(gpus=512)
    assert d.source == "prior"
    assert d.mean() == pytest.approx(prior_distribution(gpus=512).mean())
    assert m.predict(gpu_num=8).source == "prior"
    with pytest.raises(ValueError):
        m.predict(gpu_num=8, component="gap")


def test_no_chains_at_all_falls_back():
    jobs = chains_frame(50, seed=6).assign(analysis_state="COMPLETED")
    with pytest.warns(DataWarning):
        m = RestartModel().fit(jobs)
    assert m.fallback_ and m.n_chains_ == 0


@pytest.mark.parametrize("kw", [dict(method="xgb"), dict(min_chains=0), dict(clip_s=0),
                                dict(lgbm_params=[1])])
def test_invalid_parameters(kw):
    with pytest.raises(ValueError):
        RestartModel(**kw).fit(chains_frame(50))


def test_bundle_round_trip(tmp_path, fitted):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fb = RestartModel().fit(chains_frame(5, seed=7))
    Bundle({"restart": fitted, "restart_prior": fb}).save(tmp_path / "b.zip")
    b = Bundle.load(tmp_path / "b.zip")
    m2 = b["restart"]
    X = pd.DataFrame({"gpu_num": [1, 64, 1024], "type": ["Eval", "Eval", "Pretrain"], "hour": [1, 12, 23]})
    for method in ("glm", "lgbm"):
        for comp in ("gap", "queue", "total"):
            a = fitted.predict(X, method=method, component=comp)
            c = m2.predict(X, method=method, component=comp)
            assert np.allclose(a.quantile([0.1, 0.9]), c.quantile([0.1, 0.9]))
    assert fitted.restart_distribution(gpus=64).mean() == pytest.approx(m2.restart_distribution(gpus=64).mean())
    pd.testing.assert_frame_equal(fitted.summary(), m2.summary())
    assert b["restart_prior"].fallback_


def test_plot(fitted):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    assert fitted.plot(ax) is ax and len(ax.lines) == 4
    plt.close(fig)


def test_prior_table_lognormal_matches_published_median_and_mean():
    """Each reason's log-normal has the published median exp(mu) and, unless sigma is floored, the
    published mean exp(mu + sigma^2 / 2) (seconds)."""
    import numpy as np

    from acmemodel.models.restart_dist import PRIOR_SIGMA_MIN, prior_table

    t = prior_table()
    assert np.allclose(np.exp(t["mu"]), t["median_s"])
    free = t["sigma"] > PRIOR_SIGMA_MIN * (1 + 1e-12)
    assert free.any()
    assert np.allclose(np.exp(t["mu"] + t["sigma"] ** 2 / 2)[free], t["mean_s"][free])
