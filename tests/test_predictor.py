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
    """CQR on exchangeable data: a too-narrow interval is widened to ≈ 80 % coverage; the coverage
    of a fresh sample given the calibration set has sd ≈ sqrt(0.8·0.2/n_cal)."""
    from acmemodel.models.predictor import _conformal_offset

    rng = np.random.default_rng(9)
    n_cal, n_new = 500, 20000
    y_cal, y_new = rng.standard_normal(n_cal), rng.standard_normal(n_new)
    lo, hi = -0.5, 0.5  # the "model" claims an 80 % interval that truly covers 38 %
    q = _conformal_offset(np.full(n_cal, lo), np.full(n_cal, hi), y_cal, 0.8)
    assert q > 0
    assert np.mean((y_cal >= lo - q) & (y_cal <= hi + q)) >= 0.8  # finite-sample property
    cov = np.mean((y_new >= lo - q) & (y_new <= hi + q))
    assert abs(cov - 0.8) <= 5 * np.sqrt(0.8 * 0.2 / n_cal)


def test_conformal_fit_stores_offset(data, model):
    train, test = data
    assert model.n_calibration_ > 0 and model.offset_ != 0.0
    raw = RuntimePredictor(conformal=None, **PARAMS).fit(train)
    assert raw.offset_ == 0.0
    p, r = model.predict_log(test), raw.predict_log(test)
    np.testing.assert_allclose(p["p50"], r["p50"])  # the median is not touched
    d = model.to_dict()["fitted"]
    assert d["offset"] == pytest.approx(model.offset_)
    with pytest.raises(ValueError, match="conformal"):
        RuntimePredictor(conformal=1.5).fit(train)


def test_conformal_offset_is_the_kth_smallest_score():
    """Split-conformal offset = the ⌈(n+1)·coverage⌉-th smallest conformity score (Romano et al.
    2019), not the next one: with scores 1..10 and coverage 0.8, k = ⌈8.8⌉ = 9."""
    from acmemodel.models.predictor import _conformal_offset

    y = np.arange(1.0, 11.0)[::-1]  # scores E_i = y_i - hi with lo = -inf, hi = 0
    assert _conformal_offset(np.full(10, -np.inf), np.zeros(10), y, 0.8) == 9.0
    assert _conformal_offset(np.full(10, -np.inf), np.zeros(10), y, 0.95) == 10.0  # k capped at n
    assert _conformal_offset(np.full(19, -np.inf), np.zeros(19), np.arange(1.0, 20.0), 0.5) == 10.0
