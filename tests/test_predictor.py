"""RuntimePredictor: beats the global median where type matters, non-crossing quantiles, LightGBM
text round trip, features computed when missing, validation."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from acmemodel.evaluation import metrics as M
from acmemodel.evaluation.split import time_split
from acmemodel.evaluation.synthetic import synthetic_jobs
from acmemodel.models import Bundle
from acmemodel.models.predictor import RuntimePredictor, submission_features

PARAMS = dict(n_estimators=60, learning_rate=0.1)


@pytest.fixture(scope="module")
def data():
    jobs = submission_features(synthetic_jobs(6000, seed=3))
    train, test = time_split(jobs)
    test = test[test.started & (test.gpu_num > 0)]
    return train, test


@pytest.fixture(scope="module")
def model(data):
    return RuntimePredictor(**PARAMS).fit(data[0])


def test_better_than_global_median(model, data):
    train, test = data
    y = np.log1p(test.run_s.to_numpy())
    p = model.predict_log(test)
    g = np.log1p(train.loc[train.started & (train.gpu_num > 0), "run_s"]).median()
    mae_model = np.mean(np.abs(y - p["p50"]))
    mae_global = np.mean(np.abs(y - g))
    # paired difference of absolute errors, 5 standard errors
    d = np.abs(y - g) - np.abs(y - p["p50"].to_numpy())
    assert mae_global - mae_model > 5 * d.std(ddof=1) / np.sqrt(d.size)
    assert M.pinball_loss(y, p["p50"], 0.5) < M.pinball_loss(y, np.full(y.size, g), 0.5)
    # sanity band for the p10–p90 interval (binomial SE ≈ 0.013; the quantile models are estimated)
    assert 0.7 < M.interval_coverage(y, p["p10"], p["p90"]) < 0.9


def test_quantiles_never_cross(model, data):
    _, test = data
    p = model.predict_log(test).to_numpy()
    assert np.all(np.diff(p, axis=1) >= 0)
    # force crossing boosters: the rearrangement still returns ordered quantiles
    crossed = RuntimePredictor.from_dict(model.to_dict(), model.artifacts())
    crossed.boosters_["p10"], crossed.boosters_["p90"] = model.boosters_["p90"], model.boosters_["p10"]
    q = crossed.predict_log(test).to_numpy()
    assert np.all(np.diff(q, axis=1) >= 0)
    np.testing.assert_allclose(q, p)
    s = model.predict(test)
    assert list(s.columns) == ["p10", "p50", "p90"] and (s.to_numpy() >= 0).all()


def test_bundle_round_trip_lightgbm_text(model, data, tmp_path):
    _, test = data
    arts = model.artifacts()
    assert set(arts) == {"p10", "p50", "p90"} and all(a.startswith("tree") for a in arts.values())
    Bundle({"predictor": model}).save(tmp_path / "b.zip")
    m2 = Bundle.load(tmp_path / "b.zip")["predictor"]
    pd.testing.assert_frame_equal(m2.predict_log(test), model.predict_log(test))
    assert m2.get_params() == model.get_params()


def test_features_computed_when_missing(data):
    train, test = data
    raw = synthetic_jobs(6000, seed=3)
    m1 = RuntimePredictor(**PARAMS).fit(raw.loc[train.index])
    m2 = RuntimePredictor(**PARAMS).fit(train)
    np.testing.assert_allclose(m1.predict_log(test), m2.predict_log(test))


def test_unseen_categories_and_importance(model, data):
    _, test = data
    t = test.head(20).assign(type="Brand-new", cluster="Mars")
    p = model.predict_log(t)
    assert p.notna().all().all()
    imp = model.feature_importance()
    assert imp.index[0] in ("type", "user_prior_median_run_s", "gpu_num")


def test_validation(data):
    train, _ = data
    with pytest.raises(ValueError, match="quantiles"):
        RuntimePredictor(quantiles=(0.0, 0.5)).fit(train)
    with pytest.raises(ValueError, match="n_estimators"):
        RuntimePredictor(n_estimators=0).fit(train)
    with pytest.raises(ValueError, match="training jobs"):
        RuntimePredictor().fit(train.head(10))
    with pytest.raises(ValueError, match="lacks column"):
        RuntimePredictor().fit(train.drop(columns=["type"]))
    from acmemodel.errors import NotFittedError
    with pytest.raises(NotFittedError):
        RuntimePredictor().predict(train)


def test_sample_trace():
    from acmemodel.trace import load_sample

    trace = load_sample()
    m = RuntimePredictor(**PARAMS).fit(trace)
    p = m.predict(trace)
    assert len(p) == len(trace.jobs) and m.n_fit_ == int((trace.jobs.is_gpu & trace.jobs.started).sum())


def test_conformal_offset_calibrates_a_wrong_interval():
    """Split-conformal on exchangeable data, each tail on its own: a too-narrow interval is widened to
    ≈ 80 % coverage; the coverage of a fresh sample given the calibration set has sd ≈
    sqrt(0.8·0.2/n_cal)."""
    from acmemodel.models.predictor_conformal import tail_offset as _tail_offset

    rng = np.random.default_rng(9)
    n_cal, n_new = 500, 20000
    y_cal, y_new = rng.standard_normal(n_cal), rng.standard_normal(n_new)
    lo, hi = -0.5, 0.5  # the "model" claims an 80 % interval that truly covers 38 %
    qlo, qhi = _tail_offset(lo - y_cal, 0.9), _tail_offset(y_cal - hi, 0.9)
    assert qlo > 0 and qhi > 0
    assert np.mean((y_cal >= lo - qlo) & (y_cal <= hi + qhi)) >= 0.8  # finite-sample property
    cov = np.mean((y_new >= lo - qlo) & (y_new <= hi + qhi))
    assert abs(cov - 0.8) <= 5 * np.sqrt(0.8 * 0.2 / n_cal)


def test_conformal_fit_stores_choice_and_offsets(data, model):
    train, test = data
    assert model.n_calibration_ > 0 and model.offsets_ != (0.0, 0.0)
    assert model.choice_ in ("model", "user_median", "name_median", "cell_median", "blend")
    assert set(model.selection_) >= {"model", "user_median", "cell_median", "blend"}
    assert model.selection_[model.choice_] == min(model.selection_.values())
    raw = RuntimePredictor(conformal=None, **PARAMS).fit(train)
    assert raw.offsets_ == (0.0, 0.0) and raw.choice_ == "model"
    if model.choice_ == "model":
        np.testing.assert_allclose(model.predict_log(test)["p50"], raw.predict_log(test)["p50"])
    d = model.to_dict()["fitted"]
    assert d["offsets"] == pytest.approx(list(model.offsets_)) and d["choice"] == model.choice_
    back = RuntimePredictor.from_dict(model.to_dict(), model.artifacts())
    pd.testing.assert_frame_equal(back.predict_log(test), model.predict_log(test))
    with pytest.raises(ValueError, match="conformal"):
        RuntimePredictor(conformal=1.5).fit(train)


def test_bundle_without_choice_loads_as_the_boosters(model, data):
    """A predictor saved before the choice (one symmetric ``offset``) loads as the boosters with it."""
    d = model.to_dict()
    f = dict(d["fitted"])
    for k in ("offsets", "offsets_by", "choice", "selection", "blend_with", "cell_medians"):
        f.pop(k)
    f["offset"] = 0.25
    old = RuntimePredictor.from_dict({**d, "fitted": f}, model.artifacts())
    assert old.choice_ == "model" and old.offsets_ == (0.25, 0.25)
    p = old.predict_log(data[1])
    assert np.all(p["p10"] <= p["p50"]) and np.all(p["p50"] <= p["p90"])


def test_chosen_baseline_when_it_wins():
    """Run time = the user's own constant scale (no other signal): the user's running median is the
    best point predictor and the window chooses it (or its blend with the boosters)."""
    rng = np.random.default_rng(4)
    n, users = 3000, 60
    scale = np.exp(rng.normal(6, 1.5, users))
    u = rng.integers(0, users, n)
    submit = 1.7e9 + np.sort(rng.random(n)) * 60 * 86400
    run = np.round(scale[u] * np.exp(0.05 * rng.standard_normal(n)))
    from acmemodel.trace.jobs import jobs_from_times

    jobs = jobs_from_times(cluster="c", submit_s=submit, start_s=submit, end_s=submit + run, gpu_num=1,
                           type="Other", state="COMPLETED", user=np.char.add("u", u.astype(str)).astype(object))
    m = RuntimePredictor(**PARAMS).fit(jobs)
    assert m.choice_ in ("user_median", "blend")
    assert m.selection_["user_median"] < m.selection_["cell_median"]


def test_conformal_coverage_on_a_known_law():
    """A stationary synthetic trace (known lognormal laws, :func:`synthetic_jobs`): the p10–p90 interval
    covers 0.8 of the later jobs, within 3 standard errors of the calibration and test samples'
    binomial noise, sqrt(0.16/n_cal + 0.16/n_test)."""
    jobs = submission_features(synthetic_jobs(5000, seed=11))
    train, test = time_split(jobs, test_fraction=0.3)
    test = test[test.started & (test.gpu_num > 0) & ~test.run_censored]
    m = RuntimePredictor(**PARAMS).fit(train)
    p = m.predict_log(test)
    y = np.log1p(test["run_s"].to_numpy(float))
    cov = M.interval_coverage(y, p["p10"], p["p90"])
    n_cal = m.n_calibration_ / 2  # (two windows; the offset is the wider of their two)
    tol = 3 * np.sqrt(0.16 / n_cal + 0.16 / len(test))
    assert abs(cov - 0.8) <= tol, (cov, tol, m.choice_)


def _drifting_stream(n: int, seed: int):
    """A stream of jobs whose log run time is normal (sd 0.8) with a mean of 9 (2.2 h) that rises by 2
    over the last 30 % of the 60 days (no feature carries the drift), one submission every ~20 min,
    started at once; the jobs still running at the extraction (the last submission) are right-censored
    there."""
    from acmemodel.trace.jobs import jobs_from_times

    rng = np.random.default_rng(seed)
    t = np.sort(rng.random(n)) * 60 * 86400
    run = np.round(np.expm1(rng.normal(9.0 + 2.0 * np.maximum(t / t[-1] - 0.7, 0.0) / 0.3, 0.8)))
    sub = 1.7e9 + t
    t_x = sub[-1]
    ended = sub + run <= t_x
    return jobs_from_times(cluster="c", submit_s=sub, start_s=sub, end_s=np.where(ended, sub + run, t_x), gpu_num=1,
                           type="Other", state=np.where(ended, "COMPLETED", "RUNNING").astype(object),
                           user=np.char.add("u", rng.integers(0, 40, n).astype(str)).astype(object),
                           run_censored=~ended), run


def test_coverage_under_drift_with_censoring():
    """A known law with a time drift (:func:`_drifting_stream`): the training windows alone under-cover
    the later jobs (their run times have moved up); the online recalibration — on the jobs whose tail
    was decided by each submission, the still-running ones included — brings the p10–p90 coverage of
    the later jobs, scored on their true run times, into 0.75–0.85 (within 2 binomial SE of n)."""
    jobs, run = _drifting_stream(4000, seed=21)
    feats = submission_features(jobs)
    train, test = time_split(feats, test_fraction=0.3)
    y = np.log1p(run[len(train):])
    fixed = RuntimePredictor(online_window=None, **PARAMS).fit(train).predict_log(test)
    online = RuntimePredictor(**PARAMS).fit(train).predict_log(test)
    se = np.sqrt(0.16 / len(y))

    def cover(p):
        return float(np.mean((y >= p["p10"].to_numpy()) & (y <= p["p90"].to_numpy())))
    assert cover(fixed) < 0.75 - 2 * se
    assert 0.75 - 2 * se <= cover(online) <= 0.85 + 2 * se, cover(online)


def test_decided_scores_are_not_tilted_to_short_jobs():
    """Jobs started uniformly over a window, log-normal run times comparable to it, read at its end: the
    ended jobs alone under-state the upper tail (the long ones are still running), the decided ones —
    started at least the bound before the reading, ended or not — give each tail's miss share of the
    true p10/p90 within 3 binomial SE of 0.1."""
    from scipy import stats

    from acmemodel.models.predictor_conformal import decided_scores

    rng = np.random.default_rng(5)
    n, mu, sd = 40000, np.log(86400.0), 1.0
    start = rng.random(n) * 20 * 86400.0
    run = np.exp(rng.normal(mu, sd, n))
    at = 20 * 86400.0
    ended = start + run <= at
    lo = np.full(n, np.log1p(np.exp(mu + sd * stats.norm.ppf(0.1))))
    hi = np.full(n, np.log1p(np.exp(mu + sd * stats.norm.ppf(0.9))))
    s_lo, s_hi = decided_scores(at, start, np.where(ended, start + run, np.nan), ended, lo, hi)
    for sc in (s_lo, s_hi):
        assert abs(np.mean(sc > 0) - 0.1) <= 3 * np.sqrt(0.09 / sc.size), (np.mean(sc > 0), sc.size)
    y = np.log1p(run[ended])
    naive = np.mean(y > hi[0])
    assert naive < 0.1 - 5 * np.sqrt(0.09 / ended.sum())  # what the ended jobs alone would say


def test_conformal_offset_is_the_kth_smallest_score():
    """Split-conformal offset = the ⌈(n+1)·level⌉-th smallest conformity score (Romano et al.
    2019), not the next one: with scores 1..10 and level 0.8, k = ⌈8.8⌉ = 9."""
    from acmemodel.models.predictor_conformal import tail_offset as _tail_offset

    y = np.arange(1.0, 11.0)[::-1]
    assert _tail_offset(y, 0.8) == 9.0
    assert _tail_offset(y, 0.95) == 10.0  # k capped at n
    assert _tail_offset(np.arange(1.0, 20.0), 0.5) == 10.0


def test_training_cap_keeps_each_stratum_s_share_and_is_reported():
    """Above ``max_train_jobs`` the boosters train on a cluster × type stratified sample (each stratum's
    share kept within one job), reported in ``train_sample_`` and through the bundle document."""
    from acmemodel.evaluation.synthetic import synthetic_jobs

    jobs = synthetic_jobs(6000, 3, days=30.0)
    full = RuntimePredictor(n_estimators=20).fit(jobs)
    capped = RuntimePredictor(n_estimators=20, max_train_jobs=1000).fit(jobs)
    assert full.train_sample_["jobs"] == full.train_sample_["of"] == full.n_fit_
    ts = capped.train_sample_
    assert ts["cap"] == 1000 and ts["of"] == full.n_fit_ and abs(ts["jobs"] - 1000) <= 12
    assert capped.n_fit_ == ts["jobs"]
    again = RuntimePredictor.from_dict(capped.to_dict(), capped.artifacts())
    assert again.train_sample_ == ts
    with pytest.raises(ValueError, match="max_train_jobs"):
        RuntimePredictor(max_train_jobs=5).fit(jobs)


def test_thread_count_and_cap_leave_the_trees_unchanged(data, monkeypatch):
    """The LightGBM thread count is a resource, not a model setting: 1 and 4 threads (and a process cap of one
    thread, as the forked fit sets) give the same trees; the cap bounds the threads a training asks for."""
    import acmemodel.models.predictor as P
    from acmemodel.models import lgbm_text

    monkeypatch.setattr(P, "PARALLEL_MIN_ROWS", 100)  # (threads on this small training set too)
    texts = []
    for n_jobs, cap in ((1, None), (4, None), (2, 1)):
        lgbm_text.limit_threads(cap)
        try:
            m = RuntimePredictor(n_estimators=15, n_jobs=n_jobs, conformal=None).fit(data[0])
            assert m._lgb_params(0.5, 10_000)["num_threads"] == (min(n_jobs, cap) if cap else n_jobs)
        finally:
            lgbm_text.limit_threads(None)
        texts.append({q: b.model_to_string().split("parameters:")[0] for q, b in m.boosters_.items()})
    assert all(t == texts[0] for t in texts[1:])


def test_online_offsets_narrow_only_on_strong_evidence():
    """One reading time after 300 ended jobs of a log-normal law (log run time N(5, 1)): a calibrated
    interval (±1.2816) is left alone; one too wide (upper bound +3) is narrowed to the window's
    split-conformal offset (misses far below n·0.1 − 3 SE); one too narrow (+0.5) is widened."""
    from acmemodel.models.predictor_conformal import NARROW_Z, online_offsets

    rng = np.random.default_rng(4)
    n = 300
    start = np.arange(n) * 10.0
    y = rng.normal(5.0, 1.0, n)
    end = start + np.expm1(y)
    at = np.array([start[-1] + 1e6])
    lo = np.full(n, 5.0 - 1.2816)
    out = {}
    for name, hi in (("calibrated", 5.0 + 1.2816), ("wide", 8.0), ("narrow", 5.5)):
        out[name] = online_offsets(start, end, np.ones(n, bool), lo, np.full(n, hi), at, n, 0.9, 0.9)[1][0]
        misses = int(np.sum(y > hi))
        excess = (misses - 0.1 * n) / np.sqrt(n * 0.09)
        assert (np.isnan(out[name])) == (-NARROW_Z <= excess <= 2.0), (name, excess)
    assert np.isnan(out["calibrated"])
    assert out["wide"] < -1.0 and out["narrow"] > 0.5
    # the narrowed bound is the window's own 90 % point of the log run time
    assert 8.0 + out["wide"] == pytest.approx(np.sort(y)[int(np.ceil(0.9 * (n + 1))) - 1])
