"""Quota search: the found quota meets the target and its cheaper neighbour does not, agreement with a full scan,
monotonicity in the target, common random numbers, infeasible targets, validation."""
import numpy as np
import pandas as pd
import pytest

from acmemodel.errors import DataWarning
from acmemodel.sim.cluster import simulate_cluster
from acmemodel.sim.quota import find_quota

TOTAL = 128


def workload(rng, n=300, span=20_000.0):
    """Evaluation bursts + SFT + a few pretraining jobs on a 128-GPU cluster (seconds)."""
    ty = rng.choice(["Eval", "SFT", "Pretrain"], n, p=[0.7, 0.25, 0.05])
    gpus = np.where(ty == "Eval", rng.choice([1, 2, 4, 8], n),
                    np.where(ty == "SFT", rng.choice([1, 8, 16], n), rng.choice([16, 32, 64], n)))
    run = np.round(np.where(ty == "Pretrain", rng.exponential(3000, n), rng.exponential(400, n))) + 1
    burst = rng.integers(0, 25, n)
    submit = np.round(np.sort(rng.uniform(0, span, 25))[burst] + rng.uniform(0, 30, n))
    return pd.DataFrame({"submit_s": submit, "run_s": run, "gpu_num": gpus, "type": ty})


@pytest.fixture(scope="module")
def jobs():
    return workload(np.random.default_rng(0))


def p90(res, t="Eval"):
    return res.wait_quantile(t, 0.9)


def test_lane_quota_meets_target_and_one_step_less_does_not(jobs):
    q = find_quota(jobs, total_gpus=TOTAL, partitions={"pretrain": 64}, target_wait_s=300)
    assert q.feasible and q.quota_gpus > 8
    assert q.partitions == {"pretrain": 64, "eval": q.quota_gpus, "shared": 64 - q.quota_gpus}
    at = simulate_cluster(jobs, total_gpus=TOTAL, partitions=q.partitions)
    assert p90(at) <= 300 and p90(at) == q.achieved_wait_s
    less = dict(q.partitions, eval=q.quota_gpus - 8, shared=q.partitions["shared"] + 8)
    assert p90(simulate_cluster(jobs, total_gpus=TOTAL, partitions=less)) > 300
    assert q.neighbour_gpus == q.quota_gpus - 8 and q.neighbour_wait_s > 300


def test_search_equals_full_scan_and_metric_is_monotone(jobs):
    lanes = list(range(8, 49, 8))  # up to 48: the shared pool keeps room for 16-GPU SFT jobs
    waits = [p90(simulate_cluster(jobs, total_gpus=TOTAL,
                                  partitions={"pretrain": 64, "eval": g})) for g in lanes]
    assert all(a >= b for a, b in zip(waits, waits[1:]))  # more lane GPUs never lengthen the eval p90 wait here
    for target in (0.0, 60.0, 300.0, 1200.0, 5000.0):
        meets = [g for g, w in zip(lanes, waits) if w <= target]
        q = find_quota(jobs, total_gpus=TOTAL, partitions={"pretrain": 64}, target_wait_s=target, hi=48)
        assert q.quota_gpus == (meets[0] if meets else None)
        assert len(q.evaluations) <= len(lanes)


def test_quota_grows_as_the_target_tightens(jobs):
    quotas = [find_quota(jobs, total_gpus=TOTAL, partitions={"pretrain": 64}, target_wait_s=t).quota_gpus
              for t in (3000.0, 1000.0, 300.0, 60.0)]
    assert all(q is not None for q in quotas)
    assert quotas == sorted(quotas)
    assert quotas[0] < quotas[-1]


def test_pretrain_reservation_search(jobs):
    q = find_quota(jobs, total_gpus=TOTAL, search="pretrain_reservation", target_type="Eval", target_wait_s=600)
    assert q.feasible and q.partition == "pretrain"
    assert q.partitions == {"pretrain": q.quota_gpus, "shared": TOTAL - q.quota_gpus}
    assert p90(simulate_cluster(jobs, total_gpus=TOTAL, partitions=q.partitions)) <= 600
    if q.neighbour_gpus is not None:  # one step more reservation misses the target
        assert q.neighbour_gpus == q.quota_gpus + 8
        more = {"pretrain": q.quota_gpus + 8}
        assert p90(simulate_cluster(jobs, total_gpus=TOTAL, partitions=more)) > 600
    # the smallest candidate reservation holds the largest pretraining job (64 GPUs)
    assert min(q.candidates) == 64 and max(q.candidates) == TOTAL - 16  # shared keeps room for a 16-GPU SFT job
    # a tighter target allows at most the same reservation
    q2 = find_quota(jobs, total_gpus=TOTAL, search="pretrain_reservation", target_wait_s=60)
    assert q2.quota_gpus is None or q2.quota_gpus <= q.quota_gpus


def test_loose_target_returns_the_cheap_end(jobs):
    q = find_quota(jobs, total_gpus=TOTAL, partitions={"pretrain": 64}, target_wait_s=1e9)
    assert q.quota_gpus == 8 and q.neighbour_gpus is None and len(q.evaluations) == 1


def test_infeasible_target_is_reported(jobs):
    q = find_quota(jobs, total_gpus=TOTAL, partitions={"pretrain": 64}, target_wait_s=0.0, quantile=0.999, hi=16)
    assert not q.feasible and q.quota_gpus is None
    assert "largest evaluation lane (16 GPUs)" in q.reason
    d = q.to_dict()
    assert d["feasible"] is False and d["quota_gpus"] is None


def test_common_random_numbers_with_sampled_replicas():
    calls = []

    def sample(rng):
        calls.append(1)
        return workload(rng, n=150)

    kw = dict(total_gpus=TOTAL, partitions={"pretrain": 64}, target_wait_s=300, n_replicas=3, seed=11)
    a = find_quota(sample, **kw)
    assert len(calls) == 3  # sampled once, reused for every candidate
    b = find_quota(sample, **kw)
    pd.testing.assert_frame_equal(a.evaluations, b.evaluations)
    # the metric pools the three replicas: recompute it at the answer
    reps = [workload(np.random.default_rng(s), n=150) for s in np.random.SeedSequence(11).spawn(3)]
    res = [simulate_cluster(r, total_gpus=TOTAL, partitions=a.partitions) for r in reps]
    waits = np.concatenate([r.jobs.loc[r.jobs["type"] == "Eval", "wait_s"] for r in res])
    assert a.achieved_wait_s == pytest.approx(np.quantile(waits, 0.9))


def test_engines_agree(jobs):
    kw = dict(total_gpus=TOTAL, partitions={"pretrain": 64}, target_wait_s=300, best_effort_on_reserved=True)
    a = find_quota(jobs, backend="c", **kw)
    b = find_quota(jobs, backend="numpy", **kw)
    assert a.quota_gpus == b.quota_gpus
    pd.testing.assert_frame_equal(a.evaluations, b.evaluations)


def test_monotonicity_violation_warns(monkeypatch, jobs):
    import acmemodel.sim.quota as quota

    seq = iter([900.0, 700.0, 800.0, 100.0, 50.0])  # gallop: lanes 8, 16, 24 (worse than 16), 40; bisect: 32
    monkeypatch.setattr(quota, "_wait_quantile", lambda res, t, q: next(seq))
    with pytest.warns(DataWarning, match="not monotone"):
        r = quota.find_quota(jobs, total_gpus=TOTAL, partitions={"pretrain": 64}, target_wait_s=500)
    assert not r.monotone


@pytest.mark.parametrize("kw, match", [
    (dict(search="cpu"), "search"),
    (dict(quantile=1.0), "quantile"),
    (dict(target_wait_s=-1), "target_wait_s"),
    (dict(step=12), "step"),
    (dict(target_type="Nope"), "target_type"),
    (dict(partitions={"shared": 8}), "must not contain"),
    (dict(lo=64, hi=32), "no candidate"),
    (dict(partitions={"pretrain": 64}, hi=80), "exceeds"),
    (dict(backend="x"), "backend"),
])
def test_invalid_arguments(jobs, kw, match):
    base = dict(total_gpus=TOTAL)
    base.update(kw)
    with pytest.raises(ValueError, match=match):
        find_quota(jobs, **base)
