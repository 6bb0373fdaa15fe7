"""Failure table shipped in the package and the failure-type mix prior."""
import numpy as np
import pandas as pd
import pytest
from scipy import stats

from acmemodel.datasets.published import FAILURE_CATEGORIES, load_failure_table
from acmemodel.models.failure_types import (
    failure_type_mix, failure_type_params, reason_category,
)


def test_table_shape_and_integrity():
    tab = load_failure_table()
    assert len(tab) == 29
    assert set(tab["category"]) == set(FAILURE_CATEGORIES)
    assert tab["reason"].is_unique
    # the published share of failed GPU time is num × avg GPU time over the total (paper, ±0.01 pp)
    gt = tab["num"] * tab["gpu_time_avg_gpu_min"]
    share = 100 * gt / gt.sum()
    assert np.allclose(share, tab["failed_gpu_time_share_percent"], atol=0.011)
    # a copy each call
    tab.loc[0, "num"] = -1
    assert load_failure_table().loc[0, "num"] > 0


def test_lognormals_match_published_median_and_mean():
    tab = load_failure_table()
    par = failure_type_params()
    # GPU demand: exp(mu) - 1 is the published median
    assert np.allclose(np.exp(par["gpu_mu"]) - 1, tab["gpu_demand_median"])
    # where the spread is not floored, the log-normal mean is the published mean (independent: scipy)
    free = par["gpu_sigma"] > 0.5 + 1e-9
    m = stats.lognorm(s=par.loc[free, "gpu_sigma"], scale=np.exp(par.loc[free, "gpu_mu"])).mean() - 1
    assert np.allclose(m, tab.loc[free, "gpu_demand_avg"], rtol=1e-9)
    free = par["tf_sigma"] > 0.5 + 1e-9
    m = stats.lognorm(s=par.loc[free, "tf_sigma"], scale=np.exp(par.loc[free, "tf_mu"])).mean() / 60
    assert np.allclose(m, tab.loc[free, "time_to_failure_avg_min"], rtol=1e-9)


def test_probabilities_are_a_distribution_and_categories_sum_reasons():
    r = failure_type_mix(256, 1800.0)
    assert isinstance(r, pd.Series) and len(r) == 29
    assert (r >= 0).all() and r.sum() == pytest.approx(1.0)
    c = failure_type_mix(256, 1800.0, level="category")
    cats = load_failure_table().set_index("reason")["category"]
    for cat in FAILURE_CATEGORIES:
        assert c[cat] == pytest.approx(r[cats[cats == cat].index].sum())


def test_no_evidence_gives_count_prior():
    r = failure_type_mix()
    tab = load_failure_table().set_index("reason")
    assert np.allclose(r[tab.index].to_numpy(), (tab["num"] / tab["num"].sum()).to_numpy())


def test_qualitative_regimes_from_the_paper():
    # big jobs failing after hours: infrastructure; 1-GPU jobs failing within a minute: script errors
    big = failure_type_mix(1024, 10 * 3600.0, level="category")
    small = failure_type_mix(1, 30.0, level="category")
    assert big.idxmax() == "Infrastructure" and big["Infrastructure"] > 0.5
    assert small.idxmax() == "Script" and small["Script"] > 0.5
    # surviving longer shifts the mix towards infrastructure (its TF medians are hours)
    early = failure_type_mix(512, 60.0, level="category", condition="after")
    late = failure_type_mix(512, 6 * 3600.0, level="category", condition="after")
    assert late["Infrastructure"] > early["Infrastructure"]


def test_broadcast_arrays_and_cluster_filter():
    df = failure_type_mix([1, 8, 1024], 600.0, level="category")
    assert df.shape == (3, 3)
    assert np.allclose(df.sum(axis=1), 1.0)
    k = failure_type_mix(64, 600.0, cluster="Kalos")
    tab = load_failure_table()
    seren_only = tab.loc[tab["clusters"].map(lambda c: "K" not in c), "reason"]
    assert not set(seren_only) & set(k.index)
    assert k.sum() == pytest.approx(1.0)


@pytest.mark.parametrize("kw", [dict(level="x"), dict(condition="before"), dict(t=-1.0),
                                dict(gpus=-2), dict(cluster="Philly"), dict(sigma_min=0)])
def test_invalid_parameters_raise(kw):
    with pytest.raises(ValueError):
        failure_type_mix(**kw)


def test_reason_category():
    assert reason_category("NVLink Error") == "Infrastructure"
    with pytest.raises(ValueError):
        reason_category("Cosmic Ray")


def test_failure_model_exposes_the_mix(default_bundle):
    from acmemodel.models.failure import FailureModel
    from acmemodel.models.failure_types import failure_type_mix

    f = default_bundle["failure"]  # any fitted FailureModel: the mix is the published prior, nothing is fitted
    assert isinstance(f, FailureModel)
    got = f.failure_type_mix(1024, 3600.0, level="category")
    pd.testing.assert_frame_equal(pd.DataFrame(got), pd.DataFrame(failure_type_mix(1024, 3600.0, level="category")))
