"""Metrics against closed forms and scipy (tolerances from the Monte Carlo sample size)."""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from acmemodel.evaluation import metrics as M


def _crps_normal(mu, sigma, x):
    """Closed form (Gneiting & Raftery 2007): σ[z(2Φ(z) − 1) + 2φ(z) − 1/√π], z = (x − μ)/σ."""
    z = (np.asarray(x) - mu) / sigma
    return sigma * (z * (2 * stats.norm.cdf(z) - 1) + 2 * stats.norm.pdf(z) - 1 / math.sqrt(math.pi))


def test_ks_matches_scipy_for_continuous_samples():
    x = stats.norm.rvs(size=500, random_state=1)
    assert M.ks_distance(x, stats.norm.cdf) == pytest.approx(stats.kstest(x, stats.norm.cdf).statistic, abs=1e-12)


def test_ks_with_ties_and_atoms():
    x = np.array([0, 0, 0, 1, 1, 2, 3, 3, 3, 3], dtype=float)
    step = lambda t: np.searchsorted(x, t, side="right") / x.size  # noqa: E731 - the ECDF itself
    x.sort()
    assert M.ks_distance(x, step) == pytest.approx(0.0, abs=1e-12)
    # a continuous CDF against tied data: the gap at the tie is counted
    assert M.ks_distance(np.full(10, 5.0), lambda t: stats.norm.cdf(t, 5.0, 1e-3)) == pytest.approx(0.5, abs=1e-3)


def test_ks_censored_uses_kaplan_meier():
    rng = np.random.default_rng(2)
    t = stats.expon.rvs(scale=10, size=3000, random_state=rng)
    c = stats.expon.rvs(scale=20, size=3000, random_state=rng)
    x, cens = np.minimum(t, c), c < t
    d_km = M.ks_distance(x, stats.expon(scale=10).cdf, censored=cens)
    d_naive = M.ks_distance(x, stats.expon(scale=10).cdf)
    # KM-based distance is of sampling size; treating censored values as events is far off
    assert d_km < 5 / math.sqrt(3000 * 0.6) < d_naive
    assert M.ks_distance(x, stats.expon(scale=10).cdf, censored=np.zeros(3000, bool)) == d_naive


def test_pit_ks_dkw():
    u = np.random.default_rng(3).random(2000)
    assert M.pit_ks(u) <= math.sqrt(math.log(2 / 1e-4) / (2 * 2000))


def test_crps_samples_normal_closed_form():
    m = 20000
    s = stats.norm.rvs(1.0, 2.0, size=m, random_state=4)
    x = np.array([-3.0, 0.0, 1.0, 2.5, 8.0])
    got = M.crps_samples(s, x)
    # Monte Carlo error of both terms is O(σ/√m); 5·2σ·√(2/m) is a generous 5-SE bound
    np.testing.assert_allclose(got, _crps_normal(1.0, 2.0, x), atol=5 * 2 * 2.0 * math.sqrt(2 / m))
    assert M.crps_samples([3.0], [5.0, 1.0]) == pytest.approx([2.0, 2.0])  # point mass: |x − c|


def test_crps_grid_normal_closed_form():
    g = np.linspace(-20, 20, 20001)
    x = np.array([-1.0, 0.3, 4.0])
    got = M.crps_grid(stats.norm.cdf(g, 0.5, 1.5), g, x)
    np.testing.assert_allclose(got, _crps_normal(0.5, 1.5, x), atol=1e-6)
    with pytest.raises(ValueError):
        M.crps_grid([0.1, 0.2], [1.0, 0.5], [0.0])


def test_quantile_metrics_definitions():
    y = np.array([1.0, 2.0, 3.0])
    # ρ_0.9: (1−2)·(0.9−1)=0.1, 0, (3−2)·0.9=0.9 → mean 1/3
    assert M.pinball_loss(y, 2.0, 0.9) == pytest.approx(1.0 / 3)
    assert M.pinball_loss(y, 2.0, 0.5) == pytest.approx(1.0 / 3)
    assert M.interval_coverage(y, [0, 2.5, 3], [1, 3, 4]) == pytest.approx(2 / 3)
    assert M.mae_log([0.0, math.e - 1], [math.e - 1, math.e - 1]) == pytest.approx(0.5)
    with pytest.raises(ValueError, match="alpha"):
        M.pinball_loss(y, 2.0, 1.0)


def test_heldout_loglik_normal_entropy():
    x = stats.norm.rvs(size=5000, random_state=5)
    ll = stats.norm.logpdf(x)
    assert abs(M.heldout_loglik(ll) + 0.5 * (1 + math.log(2 * math.pi))) <= 5 * ll.std() / math.sqrt(5000)
    assert math.isnan(M.heldout_loglik([]))
