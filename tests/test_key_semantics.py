"""One key policy for every model that answers by key (models.cells.CellTable.query): a key not given
is marginalised, an unknown value raises ValueError naming the key and the known values, a back-off is
reported in the answer and warned once per model and question. Models: Runtime, Queue, StartupLatency,
GpuCount, Arrival, Failure, Restart (resubmission and time to restart), DemandForecaster."""
from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from acmemodel.errors import DataWarning
from acmemodel.models.duration_mix import DurationMixture
from acmemodel.models.runtime import RuntimeModel


@pytest.fixture(scope="module")
def bundle(default_bundle):
    return default_bundle


def _two_bucket_jobs(n=3000, seed=0):
    """Eval jobs of 1 GPU (run ~ 100 s) and 8 GPUs (~ 1000 s), 2:1; FAILED runs 5x shorter."""
    rng = np.random.default_rng(seed)
    g = np.where(rng.random(n) < 2 / 3, 1, 8)
    failed = rng.random(n) < 0.4
    med = np.where(g == 1, 100.0, 1000.0) * np.where(failed, 0.2, 1.0)
    run = np.round(med * np.exp(0.5 * rng.standard_normal(n))) + 1
    sub = 1.68e9 + np.sort(rng.random(n)) * 30 * 86400
    return pd.DataFrame({"cluster": "Seren", "type": "Eval", "gpu_num": g, "is_gpu": True, "started": True,
                         "analysis_state": np.where(failed, "FAILED", "COMPLETED"), "run_s": run,
                         "submit_s": sub})


@pytest.fixture(scope="module")
def runtime():
    return RuntimeModel(min_jobs=200, families=("lognormal",)).fit(_two_bucket_jobs())


# ------------------------------------------------------------------------------ duration models
def test_runtime_partial_key_is_the_count_weighted_mixture_and_keeps_state(runtime):
    key = dict(cluster="Seren", type="Eval", state="FAILED")
    r = runtime.resolve(**key)  # no gpus: mixture over the GPU buckets of the FAILED jobs
    assert isinstance(r.value, DurationMixture) and r.level == 0 and r.cell.state == "FAILED"
    counts = {b: n for c, n in runtime.cells_.counts_.items() if c.state == "FAILED" for b in [c.gpu_bucket]}
    w = np.array([counts["1"], counts["2-8"]], float) / (counts["1"] + counts["2-8"])
    x = np.array([30.0, 100.0, 300.0])
    want = w[0] * runtime.cdf(x, gpus=1, **key) + w[1] * runtime.cdf(x, gpus=8, **key)
    assert np.allclose(runtime.cdf(x, **key), want)
    q = runtime.quantile(0.5, **key)
    assert float(runtime.cdf(q, **key)) == pytest.approx(0.5, abs=1e-6)
    # the state is not ignored any more: FAILED runs are ~5x shorter than COMPLETED ones
    done = runtime.median(cluster="Seren", type="Eval", state="COMPLETED")
    assert runtime.median(**key) < done / 3
    # sampling follows the mixture (1-GPU share of FAILED jobs is w[0]); tolerance 5 sd at n=4000
    s = runtime.sample(4000, np.random.default_rng(3), **key)
    p_below = float(runtime.cdf(60.0, **key))
    assert abs(np.mean(s <= 60.0) - p_below) < 5 * np.sqrt(p_below * (1 - p_below) / 4000)


def test_runtime_unknown_values_raise_naming_key_and_known_values(runtime):
    with pytest.raises(ValueError, match=r"unknown type 'Evl'.*Eval"):
        runtime.quantile(0.5, cluster="Seren", type="Evl")
    with pytest.raises(ValueError, match=r"unknown state 'FAILD'.*COMPLETED, FAILED"):
        runtime.median(cluster="Seren", type="Eval", state="FAILD")
    with pytest.raises(ValueError, match=r"unknown cluster 'Kalos'.*Seren"):
        runtime.state_probabilities(cluster="Kalos", type="Eval")


def test_runtime_backoff_is_reported_and_warned_once():
    m = RuntimeModel(min_jobs=1500, min_jobs_coarsest=30, families=("lognormal",)).fit(_two_bucket_jobs())
    with pytest.warns(DataWarning, match=r"Seren/Eval/FAILED/2-8 is not fitted.*answered from"):
        r = m.resolve(cluster="Seren", type="Eval", state="FAILED", gpus=8)
    assert r.level > 0 and r.cell.state is None  # the answer names the coarser cell it used
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the same question again: no second warning
        m.resolve(cluster="Seren", type="Eval", state="FAILED", gpus=8)
    # an unseen GPU size is numeric: backs off (reported), it is not an error
    with pytest.warns(DataWarning, match="GPU size never seen"):
        r2 = m.resolve(cluster="Seren", type="Eval", gpus=512)
    assert r2.cell.gpu_bucket is None


def _data_warnings(record) -> list[str]:
    return [str(w.message) for w in record if issubclass(w.category, DataWarning)]


def test_runtime_backoff_of_a_mixture_warns_once_per_question():
    """A marginal question whose parts back off gives ONE warning naming every part that backed off
    (not one per part), and the same question asked again (cdf, quantile, sample) gives none."""
    m = RuntimeModel(min_jobs=1500, min_jobs_coarsest=30, families=("lognormal",)).fit(_two_bucket_jobs())
    key = dict(cluster="Seren", type="Eval", state="FAILED")  # no gpus: both GPU buckets, both back off
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        a = m.cells_.query("RuntimeModel", **key)
        m.cdf(50.0, **key)
        m.quantile(0.5, **key)
        m.sample(10, np.random.default_rng(0), **key)
    msgs = _data_warnings(rec)
    assert len(a.parts) == 2 and all(p.level > 0 for p in a.parts)
    assert len(msgs) == 1 and "Seren/Eval/FAILED/*" in msgs[0]
    assert "Seren/Eval/*/1" in msgs[0] and "Seren/Eval/*/*" in msgs[0] and "% of the weight" in msgs[0]


def test_runtime_unseen_gpu_size_is_marginalised_over_the_fitted_sizes_and_warned_once(runtime):
    """gpus=0 (a CPU job) on a GPU-only fit: the size was never seen, so the answer is the cell without
    the size -- the count-weighted mixture over the fitted GPU buckets of the same cluster/type/state --
    reported once, with the fitted buckets named."""
    key = dict(cluster="Seren", type="Eval", state="COMPLETED")
    x = np.array([50.0, 500.0, 5000.0])
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        got = [runtime.cdf(x, gpus=0, **key) for _ in range(3)]
    msgs = _data_warnings(rec)
    assert len(msgs) == 1 and "GPU size never seen" in msgs[0] and "fitted buckets 1, 2-8" in msgs[0]
    assert np.allclose(got[0], runtime.cdf(x, **key)) and np.allclose(got[0], got[2])


def test_startup_latency_partial_key_and_unknown_value(bundle):
    lat = bundle["queue"].latency_
    assert lat is not None
    cl = "Seren"
    types = sorted({c.type for c in lat.cells_.counts_ if c.cluster == cl})
    a = lat.cells_.query(cluster=cl)  # type not given: Seren's types mixed by their job counts
    n = {c.type: k for c, k in lat.cells_.counts_.items() if c.cluster == cl}
    x = np.array([1.0, 10.0, 100.0])
    if len(a.parts) > 1:  # the answer is the mixture of the per-type cells
        want = sum(k / sum(n.values()) * lat.cdf(x, cluster=cl, type=t) for t, k in n.items())
        assert np.allclose(lat.cdf(x, cluster=cl), want)
    else:  # (cluster) is a level of the lattice: its own pooled fit
        assert a.parts[0].cell.cluster == cl and a.parts[0].cell.type is None
    assert len(types) > 1
    with pytest.raises(ValueError, match=r"unknown type 'Evl'.*Eval"):
        bundle["queue"].sample_latency(3, np.random.default_rng(0), cluster=cl, type="Evl")
    with pytest.raises(ValueError, match=r"unknown cluster 'Helios'.*Seren"):
        lat.median(cluster="Helios", type="Eval")


def test_queue_partial_key_and_unknown_value(bundle):
    q = bundle["queue"]
    a = q.resolve(cluster="Seren", type="Eval")  # a level of the lattice: that cell's own pooled fit
    assert a.cell.type == "Eval" and a.cell.cluster == "Seren"
    # no type: the 1-GPU Seren jobs of every type, mixed by their job counts
    parts = q.cells_.query(cluster="Seren", gpus=1)
    assert len(parts.parts) > 1 and parts.weights.sum() == pytest.approx(1.0)
    n = {c.type: k for c, k in q.cells_.counts_.items() if c.cluster == "Seren" and c.gpu_bucket == "1"}
    assert q.p_immediate(cluster="Seren", gpus=1) == pytest.approx(
        sum(k / sum(n.values()) * q.p_immediate(cluster="Seren", type=t, gpus=1) for t, k in n.items()))
    with pytest.raises(ValueError, match=r"unknown type 'Evl'.*Eval"):
        q.median(cluster="Seren", type="Evl")


# ------------------------------------------------------------------------------ the other models
def test_gpu_counts_partial_key_and_unknown_value(bundle):
    g = bundle["gpu_counts"]
    both = g.pmf(type="Pretrain")  # cluster not given: mixture of Seren and Kalos by job count
    n = {c: sum(g.counts_[c]["Pretrain"].values()) for c in g.counts_}
    want = sum(n[c] / sum(n.values()) * g.pmf(cluster=c, type="Pretrain").reindex(both.index, fill_value=0)
               for c in n)
    assert np.allclose(both.to_numpy(), want.to_numpy())
    with pytest.raises(ValueError, match=r"unknown type 'Evl'.*Eval"):
        g.pmf(cluster="Seren", type="Evl")


def test_arrival_partial_key_and_unknown_value(bundle):
    a = bundle["arrival"]
    t0 = a.cells_[("Seren", "Eval")]["t_ref"]
    total = a.expected_count(t0, t0 + 7 * 86400, cluster="Seren")
    per_type = sum(a.expected_count(t0, t0 + 7 * 86400, cluster="Seren", type=t) for t in a.types("Seren"))
    assert total == pytest.approx(per_type, rel=1e-9)  # the process of all types: the sum of cells
    with pytest.raises(ValueError, match=r"unknown type.*Evl.*Eval"):
        a.expected_count(t0, t0 + 86400, cluster="Seren", type="Evl")
    with pytest.raises(ValueError, match=r"unknown cluster 'Helios'.*Seren"):
        a.expected_count(t0, t0 + 86400, cluster="Helios")


def test_failure_partial_key_and_unknown_value(bundle):
    f = bundle["failure"]
    rows = [(c, t, w) for c, t, w in f.combos_ if c == "Seren"]
    tot = sum(w for _, _, w in rows)
    s_mix = f.survival(3600.0, 256, cluster="Seren")  # type not given: mixture over Seren's types
    want = sum(w / tot * f.survival(3600.0, 256, cluster="Seren", type=t) for _, t, w in rows)
    assert float(s_mix) == pytest.approx(float(want), rel=1e-9)
    with pytest.raises(ValueError, match=r"type 'Evl'.*known"):
        f.mttf(256, cluster="Seren", type="Evl")
    with pytest.raises(ValueError, match=r"unknown type 'Evl'.*Eval"):
        f.km_curve(60.0, type="Evl")


@pytest.fixture(scope="module")
def restart():
    from test_restart import chains_frame  # noqa: E402  (tests dir is on sys.path under pytest)

    from acmemodel.models.restart import RestartModel

    return RestartModel(min_lgbm_chains=10 ** 9).fit(chains_frame(800, seed=4))


def test_restart_partial_key_and_unknown_value(restart):
    m = restart
    pop_types = m.population_["type"]
    d_all = m.restart_distribution(gpus=64)  # type not given: the fitted population's type mix
    means = {t: m.restart_distribution(gpus=64, type=t).mean() for t in pop_types.unique()}
    assert min(means.values()) - 1e-9 <= d_all.mean() <= max(means.values()) + 1e-9
    with pytest.raises(ValueError, match=r"unknown type 'Evl'.*Eval, Pretrain"):
        m.restart_distribution(gpus=64, type="Evl")
    with pytest.raises(ValueError, match=r"unknown type 'Evl'"):
        m.predict(gpu_num=64, type="Evl")


def test_restart_predict_marginalises_the_covariates_not_given(restart):
    """predict(**key) used to fill a missing type with the first fitted level; now the covariates not
    given are marginalised over the fitted population, exactly as restart_distribution does."""
    from acmemodel.models.restart import MixtureDistribution, RestartDistribution

    m = restart
    d = m.predict(gpu_num=64)
    assert isinstance(d, MixtureDistribution)
    assert d.mean() == pytest.approx(m.restart_distribution(gpus=64).mean(), rel=1e-12)
    de = m.predict(gpu_num=64, type="Eval")  # type given, the rest marginalised
    assert de.mean() == pytest.approx(m.restart_distribution(gpus=64, type="Eval").mean(), rel=1e-12)
    one = m.predict(gpu_num=64, type="Eval", attempt=1, hour=12, weekend=False)  # everything given: one row
    assert isinstance(one, RestartDistribution) and len(one) == 1
    with pytest.raises(ValueError, match=r"unknown covariate"):
        m.predict(gpu_num=64, colour="red")
    with warnings.catch_warnings(record=True) as rec:  # a frame without a type column: said, once
        warnings.simplefilter("always")
        for _ in range(2):
            m.predict(pd.DataFrame({"gpu_num": [8.0, 64.0]}))
    assert len([w for w in _data_warnings(rec) if "no 'type' column" in w]) == 1


def test_restart_resubmission_partial_key_and_unknown_value(restart):
    m = restart
    cells = {k: c for k, c in m.resubmit_.items() if k[0] == "Seren"}
    n = sum(c["n_failed"] for c in cells.values())
    want = sum(c["p"] * c["n_failed"] for c in cells.values()) / n
    assert m.resubmit_probability(cluster="Seren") == pytest.approx(want)  # type marginalised by failures
    with pytest.raises(ValueError, match=r"unknown type 'Evl'.*Eval"):
        m.resubmit_probability(cluster="Seren", type="Evl")


def test_gpu_counts_backoff_warns_once(bundle):
    import copy

    g = copy.deepcopy(bundle["gpu_counts"])
    cl = next(c for c in g.counts_ if any(t not in g.counts_[c] for d in g.counts_.values() for t in d))
    missing = next(t for d in g.counts_.values() for t in d if t not in g.counts_[cl])
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        for _ in range(3):
            g.pmf(cluster=cl, type=missing)
    assert len(_data_warnings(rec)) == 1


def test_forecast_partial_key_and_unknown_value():
    """The forecaster answers per (cluster, type) series: a type not given means every type and their
    total ("ALL", reconciled), an unknown value raises naming the known ones."""
    from acmemodel.models.forecast import DemandForecaster

    rng = np.random.default_rng(0)
    t0 = pd.Timestamp("2023-03-01").value / 1e9 - 8 * 3600
    parts = []
    for ty, lam in (("Eval", 30), ("SFT", 10)):
        sub = np.concatenate([t0 + d * 86400 + rng.uniform(0, 86400, rng.poisson(lam)) for d in range(42)])
        parts.append(pd.DataFrame({"cluster": "Seren", "type": ty, "submit_s": sub, "start_s": sub,
                                   "end_s": sub + 600.0, "gpu_num": 1, "gpu_time_s": 600.0}))
    f = DemandForecaster(method="seasonal_naive").fit(pd.concat(parts, ignore_index=True))
    out = f.forecast(7, cluster="Seren", metric="jobs")
    assert set(out["type"]) == {"ALL", "Eval", "SFT"}
    tot = out[out["type"] == "ALL"].set_index("date")["forecast"]
    by = out[out["type"] != "ALL"].groupby("date")["forecast"].sum()
    assert np.allclose(by.to_numpy(), tot.reindex(by.index).to_numpy())  # the types add up to the total
    with pytest.raises(ValueError, match=r"unknown type.*Evl.*Eval"):
        f.forecast(7, cluster="Seren", type="Evl")
    with pytest.raises(ValueError, match=r"unknown cluster.*Helios.*Seren"):
        f.forecast(7, cluster="Helios")
