"""QueueModel: immediate-start atom, censored MLE of the waiting part (5-SE tolerances), round trips."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from acmemodel.models import Bundle
from acmemodel.models.queue import QueueModel

PI0 = 0.45            # P(wait <= 1 s)
MU, SIGMA = 5.0, 1.3  # wait − 1 s | wait > 1 s  ~ lognormal
N = 4000


def make_jobs(seed=0, n=N, cancel_scale=600.0):
    """GPU jobs of one cell: wait 0 s w.p. PI0, else 1 + lognormal; an independent exponential
    patience C cancels the job in the queue when C < wait (right-censored wait, never started)."""
    rng = np.random.default_rng(seed)
    imm = rng.random(n) < PI0
    wait = np.where(imm, 0.0, 1.0 + np.exp(MU + SIGMA * rng.standard_normal(n)))
    patience = rng.exponential(cancel_scale, n)
    cens = patience < wait
    q = np.where(cens, patience, wait)
    submit = 1.68e9 + np.sort(rng.random(n)) * 86400 * 60
    jobs = pd.DataFrame({
        "cluster": "Seren", "job_id": [f"j{i}" for i in range(n)], "user": "u1", "type": "Eval",
        "state": np.where(cens, "CANCELLED", "COMPLETED"), "gpu_num": 1, "node_num": 1, "is_gpu": True,
        "submit_s": submit, "queue_s": q, "queue_censored": cens, "started": ~cens,
        "run_s": np.where(cens, np.nan, 100.0),
    })
    jobs["analysis_state"] = jobs["state"]
    return jobs, wait, cens


@pytest.fixture(scope="module")
def fitted():
    jobs, wait, cens = make_jobs(seed=4)
    return QueueModel().fit(jobs), jobs, wait, cens


def _lognormal_censored_se(x, c, mu, sigma):
    """SEs of (mu, sigma) from the observed information of scipy's censored lognormal likelihood."""
    def ll(v):
        d = stats.lognorm(s=v[1], scale=math.exp(v[0]))
        return float(d.logpdf(x[~c]).sum() + d.logsf(x[c]).sum())
    v0 = np.array([mu, sigma])
    h = 1e-4
    H = np.empty((2, 2))
    for i in range(2):
        for j in range(2):
            ei, ej = np.eye(2)[i] * h, np.eye(2)[j] * h
            H[i, j] = (ll(v0 + ei + ej) - ll(v0 + ei - ej) - ll(v0 - ei + ej) + ll(v0 - ei - ej)) / (4 * h * h)
    return np.sqrt(np.diag(np.linalg.inv(-H)))


def test_atom_recovered(fitted):
    m, jobs, wait, cens = fitted
    p = m.p_immediate(cluster="Seren", type="Eval", gpus=1)
    assert abs(p - PI0) <= 5 * math.sqrt(PI0 * (1 - PI0) / N)
    assert m.cdf(0.5, cluster="Seren", type="Eval", gpus=1) == pytest.approx(p)


def test_censored_waits_used_in_likelihood(fitted):
    m, jobs, wait, cens = fitted
    v = m.resolve(cluster="Seren", type="Eval", gpus=1).value
    assert 0.15 < cens.mean() < 0.5 and v.n_censored == int((jobs.queue_censored & (jobs.queue_s > 1)).sum())
    f = v.family
    assert f.name == "lognormal"
    above = jobs.queue_s.to_numpy() > 1
    x = jobs.queue_s.to_numpy()[above] - 1.0
    c = jobs.queue_censored.to_numpy()[above]
    se = _lognormal_censored_se(x, c, f.mu, f.sigma)
    assert abs(f.mu - MU) <= 5 * se[0]
    assert abs(f.sigma - SIGMA) <= 5 * se[1]
    # the naive fit that treats cancelled waits as complete is biased far beyond that tolerance
    naive = stats.norm.fit(np.log(x))
    assert MU - naive[0] > 5 * se[0]


def test_censoring_is_not_dropped_or_zeroed():
    jobs, _, _ = make_jobs(seed=5)
    m = QueueModel(families=("lognormal",)).fit(jobs)
    dropped = QueueModel(families=("lognormal",)).fit(jobs[~jobs.queue_censored])
    zeroed = jobs.assign(queue_s=np.where(jobs.queue_censored, 0.0, jobs.queue_s), queue_censored=False)
    z = QueueModel(families=("lognormal",)).fit(zeroed)
    key = dict(type="Eval")
    q = [float(mm.quantile(0.8, **key)) for mm in (m, dropped, z)]
    assert q[0] > q[1] > q[2]
    assert m.p_immediate(**key) < dropped.p_immediate(**key) < z.p_immediate(**key)


def test_sample_and_quantiles(fitted):
    m, *_ = fitted
    key = dict(cluster="Seren", type="Eval", gpus=1)
    s = m.sample(5000, np.random.default_rng(0), **key)
    p = m.p_immediate(**key)
    assert abs((s <= 1).mean() - p) <= 5 * math.sqrt(p * (1 - p) / 5000)
    q = np.array([0.6, 0.8, 0.95])
    np.testing.assert_allclose(m.cdf(m.quantile(q, **key), **key), q, atol=1e-6)
    assert m.quantile(0.1, **key) <= 1.0


def test_small_censored_waits_ignored_and_noted():
    jobs, _, _ = make_jobs(seed=6, n=600, cancel_scale=2.0)  # many cancels within a second or two
    m = QueueModel().fit(jobs)
    v = m.resolve(type="Eval").value
    assert v.n_censored_ignored > 0 and "ignored" in v.note


def test_round_trip_and_summary(fitted, tmp_path):
    m, *_ = fitted
    Bundle({"queue": m}).save(tmp_path / "q")
    m2 = Bundle.load(tmp_path / "q")["queue"]
    xs = np.array([0.0, 1.0, 2.0, 100.0, 1e4])
    np.testing.assert_allclose(m2.cdf(xs, type="Eval"), m.cdf(xs, type="Eval"), rtol=1e-6)
    s = m2.summary()
    assert {"p_atom", "family", "ks", "backoff_level"} <= set(s.columns)
    assert (s[s.fitted].ks < 0.05).all()


def test_validation():
    jobs, _, _ = make_jobs(seed=1, n=300)
    with pytest.raises(ValueError, match="atom_s"):
        QueueModel(atom_s=-1.0).fit(jobs)
    with pytest.raises(ValueError, match="queue_censored"):
        QueueModel().fit(jobs.drop(columns=["queue_censored"]))


def test_sample_trace_end_to_end():
    from acmemodel.trace import load_sample

    trace = load_sample()
    m = QueueModel().fit(trace)
    # paper: in Seren about half of the evaluation jobs start within a second
    p = m.p_immediate(cluster="Seren", type="Eval", gpus=1)
    assert 0.3 < p < 0.75
    g = trace.jobs[trace.jobs.is_gpu]
    assert m.n_fit_ == int(g.queue_s.notna().sum())


def test_all_censored_cell_borrows_parent():
    jobs, _, _ = make_jobs(seed=7, n=3000)
    extra = jobs.head(250).copy()
    extra["type"] = "Debug"
    extra["queue_s"] = 50.0
    extra["queue_censored"] = True  # every Debug job cancelled while waiting
    m = QueueModel().fit(pd.concat([jobs, extra], ignore_index=True))
    v = m.resolve(cluster="Seren", type="Debug", gpus=1).value
    assert v.source == "parent" and "no uncensored" in v.note
    assert v.p_atom < 0.01  # all 250 waited longer than a second
    assert np.isfinite(v.loglik([0.0, 100.0], [False, True])).all()
