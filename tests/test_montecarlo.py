"""Monte Carlo run simulator (C) against exact results, its NumPy twin, and the renewal optimum."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from acmemodel.planner.run.checkpoint import expected_time, optimal_interval
from acmemodel.planner.run.montecarlo import FailureMix, FailureType, simulate_run
from acmemodel.planner.run.processes import (
    ExponentialFailures, PiecewiseHazard, RestartTime, WeibullFailures,
)

H, MIN, DAY = 3600.0, 60.0, 86400.0
Z = 4.5  # tolerance in standard errors for statistical comparisons


def segment_time(x, M, L):
    """Exact expected time to complete one segment of x seconds (exponential failures, Daly)."""
    return M * math.expm1(x / M) / L


def mixed_types():
    return FailureMix([
        FailureType("hw", 0.5, RestartTime.lognormal(mean=40 * MIN, median=10 * MIN), "Infrastructure"),
        FailureType("net", 0.2, RestartTime.exponential(15 * MIN), "Infrastructure"),
        FailureType("bug", 0.3, RestartTime.fixed(2 * MIN), "Script"),
    ])


def test_exponential_mean_wall_time_is_exact_including_fractional_last_segment():
    M, C, tau = 4 * H, 120.0, 1800.0
    W = 300.4 * tau  # 300 full segments + a last one of 0.4 tau
    restart = RestartTime.fixed(0.5 * M)  # long restarts: failures during restarts are frequent
    s = simulate_run(work=W, interval=tau, ckpt_cost=C, failure=ExponentialFailures(M), restart=restart,
                     n_replicas=20_000, seed=11)
    L = math.exp(-0.5 * M / M)
    exact = 300 * segment_time(tau + C, M, L) + segment_time(0.4 * tau + C, M, L)
    ct = s.completion_time()
    assert abs(ct["mean"] - exact) < Z * ct["se"]
    # the long-run (W/τ pro rata) formula differs from the exact one only by the last segment's share
    rate = float(expected_time(tau, work=W, ckpt_cost=C, failure=ExponentialFailures(M), restart=restart))
    assert abs(rate - exact) < segment_time(tau + C, M, L)


def test_accounting_identity_and_type_attribution():
    s = simulate_run(work=20 * DAY, interval=2400.0, ckpt_cost=90.0, failure=WeibullFailures(0.7, 6 * H),
                     mix=mixed_types(), gpus=1024, n_replicas=2000, seed=5)
    assert s.finishes and s.finished.all()
    np.testing.assert_allclose(s.wall_s, 20 * DAY + s.lost_work_s + s.restart_s + s.checkpoint_s, rtol=1e-9)
    np.testing.assert_allclose(s.type_loss_s.sum(axis=1), s.lost_work_s + s.restart_s, rtol=1e-9, atol=1e-6)
    np.testing.assert_array_equal(s.type_count.sum(axis=1), s.n_failures)
    np.testing.assert_allclose(s.checkpoint_s, 90.0 * math.ceil(20 * DAY / 2400.0))
    assert np.all(s.lost_work_s >= 0) and np.all(s.restart_s >= 0)
    # failure types occur in the mix's proportions
    n = s.type_count.sum(axis=0)
    p = mixed_types().probabilities
    tot = n.sum()
    assert np.all(np.abs(n / tot - p) < Z * np.sqrt(p * (1 - p) / tot))
    loss = s.gpu_time_loss_gpu_h()
    assert loss["total"] == pytest.approx(loss["lost_work"] + loss["restart"] + loss["checkpoint"])
    assert sum(loss["by_failure_type"].values()) == pytest.approx(loss["lost_work"] + loss["restart"])
    d = s.to_dict()
    assert set(d["completion_time_s"]) == {"mean", "p50", "p90"} and d["ettr"] < 1


def test_reproducible_and_independent_of_threads():
    kw = dict(work=10 * DAY, interval=1800.0, ckpt_cost=60.0, failure=WeibullFailures(0.8, 3 * H),
              mix=mixed_types(), n_replicas=1001, seed=42)
    a = simulate_run(threads=1, **kw)
    for th in (2, 3, 7):
        b = simulate_run(threads=th, **kw)
        for f in ("wall_s", "n_failures", "lost_work_s", "restart_s", "type_loss_s", "type_count"):
            np.testing.assert_array_equal(getattr(a, f), getattr(b, f))
    c = simulate_run(threads=1, **{**kw, "seed": 43})
    assert not np.array_equal(a.wall_s, c.wall_s)
    # replicas are independent streams: a prefix of a larger run is the smaller run
    d = simulate_run(threads=2, **{**kw, "n_replicas": 50})
    np.testing.assert_array_equal(a.wall_s[:50], d.wall_s)


@pytest.mark.parametrize("fail", [WeibullFailures(0.6, 5 * H),
                                  PiecewiseHazard([0, 600, 4 * H], [5e-4, 8e-5, 4e-5])],
                         ids=["weibull", "piecewise"])
def test_c_agrees_with_numpy_twin_within_sampling_error(fail):
    kw = dict(work=6 * DAY, interval=2700.0, ckpt_cost=120.0, failure=fail, mix=mixed_types(), seed=9)
    c = simulate_run(n_replicas=20_000, **kw)
    n = simulate_run(n_replicas=400, backend="numpy", **kw)
    for f in ("wall_s", "n_failures", "lost_work_s", "restart_s"):
        x, y = np.asarray(getattr(c, f), float), np.asarray(getattr(n, f), float)
        se = math.sqrt(x.var(ddof=1) / x.size + y.var(ddof=1) / y.size)
        assert abs(x.mean() - y.mean()) < Z * se, f
    for j in range(3):
        x, y = c.type_count[:, j].astype(float), n.type_count[:, j].astype(float)
        se = math.sqrt(x.var(ddof=1) / x.size + y.var(ddof=1) / y.size)
        assert abs(x.mean() - y.mean()) < Z * se
    np.testing.assert_allclose(n.checkpoint_s, c.checkpoint_s[0])


def test_weibull_numerical_optimum_matches_brute_force_monte_carlo():
    """The renewal optimum τ* is not beaten by any τ on a grid, by paired (common-random-number) MC."""
    fail = WeibullFailures(0.6, 4 * H)
    C, R = 300.0, RestartTime.fixed(600.0)
    W = 1500 * 4 * H
    opt = optimal_interval(work=W, ckpt_cost=C, failure=fail, restart=R)
    tau_star = float(opt.interval_s)
    factors = [0.3, 0.6, 0.8, 1.0, 1.25, 1.6, 3.0]
    walls = {f: simulate_run(work=W, interval=f * tau_star, ckpt_cost=C, failure=fail, restart=R,
                             n_replicas=150, seed=2024).wall_s for f in factors}
    base = walls[1.0]
    for f in factors:
        d = walls[f] - base
        se = d.std(ddof=1) / math.sqrt(d.size) if f != 1.0 else 0.0
        assert d.mean() > -Z * se - 1e-9, f  # no grid point is significantly better than τ*
        if f in (0.3, 3.0):
            assert d.mean() > Z * se  # ... while far-off intervals are detectably worse (test has power)
        # and the renewal model predicts the MC differences (end effects cancel in the difference)
        model = float(expected_time(f * tau_star, work=W, ckpt_cost=C, failure=fail, restart=R)
                      - opt.expected_time_s)
        assert abs(d.mean() - model) < Z * se + tau_star
    # the memoryless (exponential, same MTTF) optimum is detectably worse: the hazard shape matters
    tau_exp = float(optimal_interval(work=W, ckpt_cost=C, failure=ExponentialFailures(4 * H),
                                     restart=R).interval_s)
    assert tau_exp < 0.9 * tau_star
    d = simulate_run(work=W, interval=tau_exp, ckpt_cost=C, failure=fail, restart=R, n_replicas=150,
                     seed=2024).wall_s - base
    assert d.mean() > Z * d.std(ddof=1) / math.sqrt(d.size)
    # absolute level: MC mean vs renewal E[T] within Z SE plus the end effects (< one cycle start)
    ct_se = base.std(ddof=1) / math.sqrt(base.size)
    assert abs(base.mean() - float(opt.expected_time_s)) < Z * ct_se + 600.0 + tau_star + C


def test_does_not_finish_results_are_explicit():
    s = simulate_run(work=30 * DAY, interval=600.0, ckpt_cost=2 * H, failure=ExponentialFailures(H),
                     restart=60.0, gpus=2048, n_replicas=10)
    assert not s.finishes and s.status == 1 and "mean time to failure" in s.reason
    d = s.to_dict()
    assert d["completion_time_s"] == {"mean": None, "p50": None, "p90": None}
    assert d["gpu_time_loss_gpu_h"]["total"] is None and d["ettr"] == 0.0
    s2 = simulate_run(work=30 * DAY, interval=600.0, ckpt_cost=60.0, failure=ExponentialFailures(300.0),
                      restart=H, n_replicas=10)
    assert s2.status == 2 and "exceeds" in s2.reason
    # replicas stopped by the wall-time cap are reported, not averaged silently
    s3 = simulate_run(work=2 * H, interval=1800.0, ckpt_cost=60.0, failure=ExponentialFailures(3 * H),
                      restart=600.0, n_replicas=400, max_slowdown=1.3, seed=1)  # E[T] = 1.19 W
    assert s3.status == 3 and not s3.finished.all() and "cap" in s3.reason
    assert s3.completion_time()["mean"] is None


def test_failure_mix_adjustments_and_table():
    mix = mixed_types()
    adj, total = mix.adjusted(rate_multipliers={"Infrastructure": 0.5}, restart_factors={"bug": 0.0})
    assert total == pytest.approx(0.5 * 0.7 + 0.3)
    assert adj.probabilities.sum() == pytest.approx(1.0)
    assert adj.probabilities[2] == pytest.approx(0.3 / total)
    assert adj.types[2].restart.mean == 0.0
    assert adj.types[0].restart.mean == pytest.approx(mix.types[0].restart.mean)
    with pytest.raises(ValueError, match="unknown"):
        mix.adjusted(rate_multipliers={"Cooling": 0.5})
    with pytest.raises(ValueError, match="restart factor"):
        mix.adjusted(restart_factors={"hw": -1.0})
    tab = FailureMix.from_failure_table(2048)
    assert len(tab.names) == 29 and tab.probabilities.sum() == pytest.approx(1.0)
    nv = tab.types[tab.names.index("NVLink Error")]
    assert nv.category == "Infrastructure" and nv.restart.mean == pytest.approx(95.6 * 60)
    # large jobs: infrastructure failures dominate the prior
    cats = tab.to_frame().groupby("category")["probability"].sum()
    assert cats["Infrastructure"] > cats["Script"]


def test_invalid_arguments_name_the_parameter():
    f = ExponentialFailures(H)
    with pytest.raises(ValueError, match="interval"):
        simulate_run(work=H, interval=0.0, ckpt_cost=1.0, failure=f)
    with pytest.raises(ValueError, match="seed"):
        simulate_run(work=H, interval=60.0, ckpt_cost=1.0, failure=f, seed=-1)
    with pytest.raises(ValueError, match="threads"):
        simulate_run(work=H, interval=60.0, ckpt_cost=1.0, failure=f, threads=0)
    with pytest.raises(ValueError, match="single-scenario"):
        simulate_run(work=H, interval=60.0, ckpt_cost=1.0, failure=ExponentialFailures([H, 2 * H]))
    with pytest.raises(ValueError, match="probabilities"):
        FailureMix([FailureType("a", -1.0, RestartTime.fixed(1.0))])


@settings(max_examples=25, deadline=None)
@given(M=st.floats(600.0, 5 * DAY), k=st.sampled_from([None, 0.5, 1.5]), C=st.floats(0.0, 600.0),
       tau=st.floats(60.0, 5 * H), W=st.floats(H, 10 * DAY), R=st.floats(0.0, 2 * H),
       seed=st.integers(0, 2 ** 63))
def test_property_losses_non_negative(M, k, C, tau, W, R, seed):
    fail = ExponentialFailures(M) if k is None else WeibullFailures(k, M)
    s = simulate_run(work=W, interval=tau, ckpt_cost=C, failure=fail, restart=R, gpus=8, n_replicas=20,
                     seed=seed, max_slowdown=50.0)
    if s.status in (1, 2):
        return
    assert np.all(s.lost_work_s >= 0) and np.all(s.restart_s >= 0) and np.all(s.checkpoint_s >= 0)
    assert np.all(s.wall_s >= W * (1 - 1e-12))
    if s.finishes:
        loss = s.gpu_time_loss_gpu_h()
        assert loss["total"] >= 0 and all(v >= 0 for v in loss["by_failure_type"].values())
