"""Acme's queue policy around the simulator: the start-up latency part of QueueModel, the policy fields of
ClusterConfig, the quota trade-off table, reproduce's per-type queue comparison."""
import math

import numpy as np
import pandas as pd
import pytest

from acmemodel.errors import ConfigError
from acmemodel.models.queue import QueueModel, free_at_submit
from acmemodel.planner.config import ClusterConfig


def _trace(seed=0, n_free=3000, n_busy=1500):
    """Kalos (2,416 GPUs): small jobs on an idle cluster wait a latency ~ LogNormal(log 15, 0.3); jobs submitted
    while a 2,416-GPU job holds the cluster wait for it (hours)."""
    rng = np.random.default_rng(seed)
    t_free = np.sort(rng.uniform(0, 1e6, n_free))
    lat = np.exp(np.log(15.0) + 0.3 * rng.standard_normal(n_free))
    t_busy = np.sort(rng.uniform(2e6 + 10, 2e6 + 3e4, n_busy))
    big_end = 2e6 + 4e4
    sub = np.r_[t_free, [2e6], t_busy]
    start = np.r_[t_free + lat, [2e6], big_end + rng.uniform(0, 100, n_busy)]
    run = np.r_[rng.uniform(10, 100, n_free), [4e4], rng.uniform(10, 100, n_busy)]
    g = np.r_[rng.choice([1, 2, 8], n_free), [2416], rng.choice([1, 2, 8], n_busy)]
    n = len(sub)
    return pd.DataFrame({"cluster": "Kalos", "type": "Eval", "state": "COMPLETED", "analysis_state": "COMPLETED",
                         "gpu_num": g, "is_gpu": True, "submit_s": sub, "start_s": start, "end_s": start + run,
                         "queue_s": start - sub, "queue_censored": np.zeros(n, bool), "run_s": run})


def test_free_definition_and_latency_recovered_from_free_jobs():
    j = _trace()
    free = free_at_submit(j)
    # idle-cluster jobs are free although earlier jobs may still be in their latency at their submit (the
    # idle GPUs hold those too); nothing submitted while the 2,416-GPU job holds the cluster is
    sub, st = j["submit_s"].to_numpy()[:3000], j["start_s"].to_numpy()[:3000]
    queue_empty = np.searchsorted(np.sort(sub), sub, "left") - np.searchsorted(np.sort(st), sub, "left") <= 0
    assert 2800 < queue_empty.sum() < 3000  # an empty queue alone would drop the jobs behind one in latency
    assert free[:3000].all() and not free[3001:].any()
    assert free_at_submit(j, empty_queue=False)[:3000].all()
    q = QueueModel(keys=("cluster", "type")).fit(j)
    lat = q.latency_.resolve(cluster="Kalos", type="Eval").value
    assert lat.median() == pytest.approx(15.0, rel=0.05)  # n~2,900: sd of the log median ~0.007
    parts = q.parts_.set_index("type").loc["Eval"]
    assert parts["n_free"] == 3000
    assert parts["wait_mean_s"] > 10 * parts["latency_mean_s"]  # the busy period is contention, not latency
    s = q.summary()
    assert {"latency_median_s", "latency_mean_s", "contention_mean_s"} <= set(s.columns)
    q2 = QueueModel.from_dict(q.to_dict())
    x = q2.sample_latency(2000, np.random.default_rng(1), cluster="Kalos", type="Eval")
    assert np.median(x) == pytest.approx(15.0, rel=0.1)


def test_stratified_latency_draws_have_the_law_and_its_ecdf():
    """QueueModel.sample_latency(stratified=True): 250 draws (Kalos Other's size) have an empirical CDF within
    1/n of the fitted law F at every point, where iid draws miss by ~sqrt(F(1 - F)/n) (sup over the points ~2.5x
    that); each draw still has law F: over 400 repetitions the first draw's frequency below the median is 1/2
    within 4 binomial SE. Above STRATIFIED_EXACT draws the interpolated inverse is the
    exact one in probability (|F(x̃) − F(x)| ≤ 1/STRATIFIED_EXACT, one stratum: where a stratum straddles the
    zero-second atom the interpolated value is seconds off) and agrees with it in value almost everywhere."""
    from acmemodel.models import queue as qmod

    q = QueueModel(keys=("cluster", "type")).fit(_trace(n_busy=10))
    key = dict(cluster="Kalos", type="Eval")
    x = np.quantile(q.latency_.sample(20000, np.random.default_rng(9), **key), [0.1, 0.3, 0.5, 0.7, 0.9])
    F = q.latency_.cdf(x, **key)
    n, gaps_iid = 250, []
    for seed in range(20):
        rng = np.random.default_rng(seed)
        st = q.sample_latency(n, rng, stratified=True, **key)
        assert np.max(np.abs((st[:, None] <= x).mean(axis=0) - F)) <= 1.0 / n + 1e-9
        iid = q.sample_latency(n, rng, **key)
        gaps_iid.append(np.max(np.abs((iid[:, None] <= x).mean(axis=0) - F)))
    assert np.mean(gaps_iid) > 5.0 / n
    med = float(q.latency_.quantile(0.5, **key))
    first = [q.sample_latency(n, np.random.default_rng(100 + r), stratified=True, **key)[0] < med for r in range(400)]
    assert abs(np.mean(first) - 0.5) <= 4 * math.sqrt(0.25 / 400)
    m = qmod.STRATIFIED_EXACT + 1000
    u = (np.random.default_rng(3).permutation(m) + 0.5) / m
    exact = q.latency_.quantile(u, **key)
    approx = qmod._quantiles(lambda v: q.latency_.quantile(v, **key), u)
    cdf = lambda v: q.latency_.cdf(v, **key)  # noqa: E731
    assert np.max(np.abs(cdf(approx) - cdf(exact))) <= 1.0 / qmod.STRATIFIED_EXACT
    assert np.median(np.abs(approx - exact) / np.maximum(exact, 1.0)) < 1e-6


def test_whole_second_latency_draws_equal_rounded_exact_draws():
    """sample_latency(whole_seconds=True) (a grid of half-seconds instead of a root search per level) draws what
    rounding the exact stratified draws gives, for few and many draws, a fitted law and one read back from its
    JSON; the memo of the interpolation's midpoint quantiles (above STRATIFIED_EXACT draws) answers a copy of the
    law with the values it computed for the original, and a different law with its own."""
    from copy import deepcopy

    from acmemodel.models import queue as qmod

    q = QueueModel(keys=("cluster", "type")).fit(_trace(n_busy=10))
    key = dict(cluster="Kalos", type="Eval")
    for n in (2, 7, 250, 3000, qmod.STRATIFIED_EXACT + 500):
        exact = np.round(q.sample_latency(n, np.random.default_rng(n), stratified=True, **key))
        whole = q.sample_latency(n, np.random.default_rng(n), stratified=True, whole_seconds=True, **key)
        assert np.array_equal(whole, exact), n
        assert np.all(whole == np.round(whole)) and whole.min() >= 0
    # a grid longer than GRID_PER_DRAW points per draw: level by level, the same values
    u = np.array([0.5, 0.999999])
    ppf = lambda v: q.latency_.quantile(v, **key)  # noqa: E731
    cdf = lambda v: q.latency_.cdf(v, **key)  # noqa: E731
    assert np.array_equal(qmod._whole_second_quantiles(ppf, cdf, u), np.round(np.maximum(ppf(u), 0.0)))
    qmod._MIDPOINT_QUANTILES.clear()
    m = qmod.STRATIFIED_EXACT + 10
    first = q.sample_latency(m, np.random.default_rng(1), stratified=True, **key)
    assert len(qmod._MIDPOINT_QUANTILES) == 1
    copy = deepcopy(q)  # (what a worker process receives: the same law)
    assert np.array_equal(copy.sample_latency(m, np.random.default_rng(1), stratified=True, **key), first)
    assert len(qmod._MIDPOINT_QUANTILES) == 1  # answered from the memo
    qmod._MIDPOINT_QUANTILES[next(iter(qmod._MIDPOINT_QUANTILES))] = np.zeros(qmod.STRATIFIED_EXACT)
    assert not copy.sample_latency(m, np.random.default_rng(1), stratified=True, **key)[first > 1e3].any()
    # read back from JSON (parameters rounded): another law, its own values
    saved = QueueModel.from_dict(q.to_dict())
    assert saved.sample_latency(m, np.random.default_rng(1), stratified=True, **key).max() > 0
    assert len(qmod._MIDPOINT_QUANTILES) == 2
    qmod._MIDPOINT_QUANTILES.clear()


@pytest.mark.parametrize("extra_s", [0.0, 60.0])
def test_multi_node_free_jobs_join_the_latency_fit_when_they_wait_alike(extra_s):
    """Idle Kalos, 300 single-node and 300 multi-node (16-64 GPU) free jobs: with the same latency the
    multi-node jobs join the cell's fit (n = 600); when they wait 60 s longer (whole nodes, not
    latency) the two-sample KS test rejects and the cell keeps the single-node jobs (n = 300)."""
    rng = np.random.default_rng(4)
    n = 600
    sub = np.sort(rng.uniform(0, 1e6, n))
    big = rng.permutation(np.r_[np.zeros(n // 2, bool), np.ones(n // 2, bool)])
    lat = np.exp(np.log(15.0) + 0.3 * rng.standard_normal(n)) + np.where(big, extra_s, 0.0)
    g = np.where(big, rng.choice([16, 32, 64], n), rng.choice([1, 2, 8], n))
    start = sub + lat
    j = pd.DataFrame({"cluster": "Kalos", "type": "Debug", "state": "COMPLETED", "analysis_state": "COMPLETED",
                      "gpu_num": g, "is_gpu": True, "submit_s": sub, "start_s": start, "end_s": start + 50.0,
                      "queue_s": lat, "queue_censored": np.zeros(n, bool), "run_s": np.full(n, 50.0)})
    q = QueueModel(keys=("cluster", "type")).fit(j)
    cell = q.latency_.resolve(cluster="Kalos", type="Debug")
    assert cell.value.n == (n if extra_s == 0 else n // 2)
    assert cell.value.median() == pytest.approx(15.0, rel=0.1)

def test_idle_gpus_held_for_a_waiting_job_are_not_free():
    """A cluster half idle while a job that needs all of it waits: the small jobs queued behind it see idle GPUs
    but wait for contention, not latency; with the empty-queue condition they are not counted as free."""
    rng = np.random.default_rng(3)
    n = 400
    sub_small = np.sort(rng.uniform(1000, 5000, n))
    big_start = 6000.0
    # a 1,208-GPU job runs from 0 to 6,000 s; a 2,416-GPU job submitted at 500 s waits for it (FIFO) and then
    # holds the whole cluster; the small jobs submitted behind it see 1,208 idle GPUs but start only after it
    sub = np.r_[[0.0, 500.0], sub_small]
    start = np.r_[[0.0, big_start], big_start + 1e4 + rng.uniform(0, 10, n)]
    end = np.r_[[big_start, big_start + 1e4], start[2:] + 50]
    g = np.r_[[1208, 2416], np.ones(n, int)]
    j = pd.DataFrame({"cluster": "Kalos", "gpu_num": g, "submit_s": sub, "start_s": start, "end_s": end})
    assert free_at_submit(j, empty_queue=False)[2:].all()
    assert not free_at_submit(j)[2:].any()


def test_the_queue_that_must_be_empty_is_the_jobs_own_type():
    """A backlog of evaluation jobs (the lowest priority) does not hold back a fine-tuning job submitted
    to idle GPUs; a fine-tuning job waiting ahead of it does."""
    # 50 eight-node Eval jobs (64 GPUs) submitted at 0..49 s, all waiting until 10,000 s; SFT jobs at 100 s
    # and 200 s start after 5 s; an SFT job at 300 s waits behind a 2,280-GPU SFT job submitted at 290 s that
    # starts only at 400 s. Seren: 2,288 GPUs, all idle until 400 s.
    sub = np.r_[np.arange(50.0), [100.0, 200.0, 290.0, 300.0]]
    start = np.r_[np.full(50, 1e4), [105.0, 205.0, 400.0, 405.0]]
    ty = np.r_[np.full(50, "Eval", dtype=object), ["SFT"] * 4]
    g = np.r_[np.full(50, 64), [1, 1, 2280, 1]]
    j = pd.DataFrame({"cluster": "Seren", "type": ty, "gpu_num": g, "submit_s": sub, "start_s": start,
                      "end_s": start + 60.0})
    free = free_at_submit(j)
    assert free[50] and free[51]  # the Eval backlog does not count against SFT
    assert free[52]  # the big SFT job fits the idle cluster (2,280 + 8 margin), Eval's queue aside
    assert not free[53]  # 8 + 8 GPUs for it and 2,280 for the SFT job ahead of it: more than 2,288
    # Eval behind Eval: free while the idle GPUs hold it and the Eval jobs ahead (64 + 8 + 64 i <= 2,288)
    assert free[:35].all() and not free[35:50].any()


def test_latency_part_off():
    q = QueueModel(keys=("cluster", "type"), latency=False).fit(_trace(n_free=500, n_busy=200))
    assert q.latency_ is None
    assert (q.sample_latency(3, np.random.default_rng(0), cluster="Kalos", type="Eval") == 0).all()
    with pytest.raises(ValueError, match="free_margin_gpus"):
        QueueModel(free_margin_gpus=-1).fit(_trace(n_free=500, n_busy=200))


BASE = {"cluster": {"gpus": 64, "partitions": {"pretrain": 32}}, "runs": [{"gpus": 8, "work": "1d"}]}


def _cfg(**cluster):
    d = {"cluster": {**BASE["cluster"], **cluster}, "runs": BASE["runs"]}
    return ClusterConfig.from_dict(d)


def test_cluster_config_policy_fields():
    c = _cfg(priorities={"Pretrain": 2, "Eval": 0}, best_effort_on_reserved=True, best_effort_types=["SFT"],
             latency=True).cluster
    assert c.priorities == {"Pretrain": 2, "Eval": 0} and c.best_effort_types == ["SFT"] and c.latency
    for bad, match in (({"priorities": {"Eval": 0.5}}, r"cluster\.priorities\.Eval"),
                       ({"priorities": ["Eval"]}, r"cluster\.priorities must be a mapping"),
                       ({"latency": "yes"}, r"cluster\.latency"),
                       ({"best_effort_types": ["SFT"]}, r"cluster\.best_effort_types needs"),
                       ({"best_effort_on_reserved": True, "best_effort_types": "SFT"}, r"cluster\.best_effort_types"),
                       ({"partitions": {}, "best_effort_on_reserved": True}, r"pretrain reservation")):
        with pytest.raises(ConfigError, match=match):
            _cfg(**bad)


def test_quota_search_rows_carry_the_tradeoff():
    from rich.console import Console

    from acmemodel.cli.tradeoff import quota_tradeoff_table
    from acmemodel.sim.quota import find_quota

    rng = np.random.default_rng(3)
    n = 600
    types = rng.choice(["Eval", "Pretrain", "SFT"], n, p=[0.6, 0.1, 0.3])
    jobs = pd.DataFrame({"submit_s": np.sort(rng.uniform(0, 5e4, n)), "run_s": rng.uniform(60, 3000, n),
                         "gpu_num": np.where(types == "Pretrain", 16, rng.choice([1, 2, 8], n)), "type": types})
    qr = find_quota(jobs, total_gpus=96, search="eval_lane", partitions={"pretrain": 32}, target_wait_s=60.0,
                    priorities={"Eval": 0, "SFT": 1, "Pretrain": 2})
    ev = qr.evaluations
    assert {"target_p50_s", "target_p90_s", "pretrain_p50_s", "pretrain_p90_s"} <= set(ev.columns)
    np.testing.assert_allclose(ev["target_p90_s"], ev["wait_s"])  # the target is Eval p90
    d = qr.to_dict()
    con = Console(width=80, record=True)
    con.print(quota_tradeoff_table(d))
    text = con.export_text()
    assert "Eval p90" in text and "Pretrain" in text and "p50" in text
    assert text.count("met") + text.count("missed") >= len(ev)
    assert max(len(line) for line in text.splitlines()) <= 80


def test_reproduce_queue_by_type_rows_and_checks():
    from acmemodel.reproduction.compare import gpu_time_by_size, queue_by_type

    rng = np.random.default_rng(0)
    n = 4000
    types = rng.choice(["Eval", "Pretrain", "SFT", "MLLM", "Debug", "Other"], n)
    q = np.where(types == "Eval", rng.exponential(600, n), rng.exponential(5, n))
    jobs = pd.DataFrame({"type": types, "gpu_num": rng.choice([1, 8, 64], n), "submit_s": 0.0, "start_s": q,
                         "end_s": q + 100.0, "queue_s": q, "run_s": 100.0})
    rows, checks = queue_by_type("Seren", jobs)
    ev1 = [r for r in rows if r["type"] == "Eval" and r["x_s"] == 1.0][0]
    assert ev1["published"] == 47 and ev1["reproduced"] == pytest.approx(100 * np.mean(q[types == "Eval"] <= 1))
    assert ev1["within_bar"] == (abs(ev1["diff"]) <= 5)
    c = {r["check"]: r["passed"] for r in checks}
    assert c["Eval has the lowest <= 1 s share"] and c["Eval has the largest mean wait"]
    size = {r["fact"]: r for r in gpu_time_by_size("Seren", jobs, includes_queue=False)}
    one = size["GPU time of 1-GPU jobs (%)"]
    g = jobs["gpu_num"].to_numpy()
    assert one["reproduced"] == pytest.approx(100 * (g == 1).sum() / g.sum())


def test_runtime_size_law_grows_with_gpus():
    from acmemodel.models.runtime import RuntimeModel

    rng = np.random.default_rng(5)
    n = 5000
    g = rng.choice([1, 4, 16, 64, 256], n)
    run = 100.0 * g ** 0.5 * np.exp(0.5 * rng.standard_normal(n))
    jobs = pd.DataFrame({"cluster": "Seren", "type": "Pretrain", "analysis_state": "COMPLETED", "gpu_num": g,
                         "is_gpu": True, "started": True, "run_s": run, "submit_s": np.arange(n, dtype=float)})
    m = RuntimeModel(keys=("cluster", "type"), families=("lognormal",)).fit(jobs)
    b = m.size_slope_["Seren/Pretrain"]
    # OLS slope of log(run+1) on log2 g is ~0.5 * ln 2 per doubling in log2 units -> 0.5 in exponent of g;
    # shrunk by n / (n + 200); its standard error at n=5000 is ~0.5 / (sqrt(n) * sd(log2 g)) < 0.003
    assert b == pytest.approx(0.5 * n / (n + 200), abs=0.02)
    r = m.median(cluster="Seren", type="Pretrain", gpus=256) / m.median(cluster="Seren", type="Pretrain", gpus=4)
    assert r == pytest.approx(64 ** b, rel=1e-9)
    assert m.median(cluster="Seren", type="Pretrain") == pytest.approx(
        m.median(cluster="Seren", type="Pretrain", gpus=2 ** m.lg_ref_.resolve(cluster="Seren", type="Pretrain").value[0]))
    x = m.sample(4000, np.random.default_rng(0), cluster="Seren", type="Pretrain", gpus=64)
    assert np.median(x) == pytest.approx(100 * 8 * (64 ** b / 64 ** 0.5), rel=0.1)
    m2 = RuntimeModel.from_dict(m.to_dict())
    assert m2.size_factor(cluster="Seren", type="Pretrain", gpus=64) == pytest.approx(
        m.size_factor(cluster="Seren", type="Pretrain", gpus=64))
    off = RuntimeModel(keys=("cluster", "type"), families=("lognormal",), size_law=False).fit(jobs)
    assert off.size_factor(cluster="Seren", type="Pretrain", gpus=256) == 1.0


def test_deconvolved_run_plus_independent_wait_has_the_total_law():
    """calibrate_queue.deconvolve_run: T = R0 + W (independent); from T and W alone it recovers a run law R with
    R + W ~ T at the powers of two (KS within sampling noise of n = 20,000: 1.36 sqrt(2 / n) ~ 0.014), R ~ R0, and
    R comonotone with T."""
    from acmemodel.calibrate_queue import deconvolve_run

    rng = np.random.default_rng(7)
    n = 20000
    r0 = np.exp(rng.normal(4.0, 1.5, n)) + 5.0
    w = 9.0 + np.exp(rng.normal(1.5, 1.2, n))
    t = r0 + w
    r = deconvolve_run(t, rng.permutation(w))
    s = r + rng.permutation(w)
    x = 2.0 ** np.arange(0, 22)
    ks = max(abs(np.mean(s <= v) - np.mean(t <= v)) for v in x)
    assert ks <= 0.02, ks
    assert max(abs(np.mean(r <= v) - np.mean(r0 <= v)) for v in x) <= 0.05
    o = np.argsort(t, kind="stable")
    assert np.all(np.diff(r[o]) >= -1e-9) and r.min() >= 1.0


def test_policy_candidates_include_evaluation_quotas():
    from acmemodel.calibrate_queue import EVAL_LANES, policy_candidates

    types = ["Eval", "Pretrain", "SFT", "Debug"]
    cands = policy_candidates("Seren", 2288, types)
    lanes = [c for c in cands if c["eval_gpus"]]
    assert {c["eval_gpus"] for c in lanes} == set(EVAL_LANES)
    for c in cands:
        assert c["reservation_gpus"] % 8 == 0 and c["reservation_gpus"] + c["eval_gpus"] <= 2288
        assert c["priorities"]["Eval"] < min(v for t, v in c["priorities"].items() if t != "Eval")
        assert "Pretrain" not in c["best_effort_types"]
        if c["eval_gpus"]:  # a quota is evaluation's only place
            assert "Eval" not in c["best_effort_types"]
    assert not any(c["eval_gpus"] for c in policy_candidates("Seren", 2288, types, lanes=()))


def test_evaluation_quota_holds_eval_jobs_to_their_lane():
    """_run_policy with eval_gpus: Eval jobs run only in the lane (never best-effort elsewhere) and a burst of them
    on a 16-GPU lane queues, while on an idle cluster without the lane it starts at once."""
    from acmemodel.calibrate_queue import _run_policy

    n = 64
    d = pd.DataFrame({"submit_s": np.arange(n) * 1.0, "run_s": 600.0, "gpu_num": 1, "type": "Eval"})
    base = {"reservation_gpus": 2048, "priorities": {"Eval": 0, "Pretrain": 2}, "best_effort": True}
    free = _run_policy(d, "Kalos", 2416, dict(base, eval_gpus=0, best_effort_types=["Eval"]), None, 0)
    lane = _run_policy(d, "Kalos", 2416, dict(base, eval_gpus=16, best_effort_types=[]), None, 0)
    assert free["contention_s"].max() == 0
    assert (lane["ran_in"] == "eval").all()
    # 64 one-GPU jobs of 600 s on 16 GPUs: four waves, the last waits ~1,800 s
    assert lane["contention_s"].max() == pytest.approx(3 * 600 - 48, abs=20)


def test_policy_score_counts_misses_in_units_of_the_bar():
    from acmemodel.calibrate_queue import policy_score

    t = pd.DataFrame({"type": ["Eval", "SFT"], "x_s": [1.0, 1.0], "cdf_percent": [50.0, 60.0]})
    rng = np.random.default_rng(0)
    n = 20000
    ev = np.where(rng.random(n) < 0.5, 0.0, 500.0)  # 50 % <= 1 s, mean 250
    sft = np.where(rng.random(n) < 0.6, 0.0, 200.0)  # 60 % <= 1 s, mean 80
    s, terms = policy_score({"Eval": ev, "SFT": sft}, t, mean_target=200.0, median_target=1.0,
                            weights={"Eval": 50, "SFT": 50})
    assert terms["Eval<=1"] < 0.05 and terms["SFT<=1"] < 0.05
    assert terms["eval_mean_largest"] == 0 and terms["eval_share1_lowest"] == 0
    assert terms["mean"] == pytest.approx((np.log(165 / 200) / np.log(1.5)) ** 2, rel=0.1)
    # Eval waiting less than SFT on average, and starting at once more often, are penalised
    s2, terms2 = policy_score({"Eval": ev / 10, "SFT": np.where(rng.random(n) < 0.3, 0.0, 200.0)}, t,
                              mean_target=200.0, median_target=1.0, weights={"Eval": 50, "SFT": 50})
    assert terms2["eval_mean_largest"] > 1 and terms2["eval_share1_lowest"] > 1 and s2 > s


def test_candidates_include_evaluation_alone_on_the_spare_capacity():
    """Mode (d): evaluation is the only best-effort type (the paper's account), the others keep to the shared pool."""
    from acmemodel.calibrate_queue import policy_candidates

    types = ["Eval", "Pretrain", "SFT", "Debug"]
    modes = {(c["reservation_gpus"], tuple(sorted(c["best_effort_types"])))
             for c in policy_candidates("Seren", 2288, types, lanes=())}
    for r in (1536, 1728, 1920, 2048):
        assert (r, ("Eval",)) in modes and (r, ("Debug", "Eval", "SFT")) in modes and (r, ("Debug", "SFT")) in modes


def test_pretraining_scale_jobs_of_any_type_run_in_the_reservation():
    """A 512-GPU debug job is at home in the reservation (placed with the Pretrain chains, never preempted);
    an 8-GPU one is in the shared pool."""
    from acmemodel.calibrate_queue import _run_policy
    from acmemodel.joblife import RESERVED_MIN_GPUS, in_reservation

    assert list(in_reservation(["Pretrain", "Debug", "Debug", "SFT"], [8, 512, 8, RESERVED_MIN_GPUS])) == \
        [True, True, False, True]
    d = pd.DataFrame({"submit_s": [0.0, 10.0, 20.0], "run_s": [1e4, 1e4, 100.0], "gpu_num": [1024, 512, 8],
                      "type": ["Pretrain", "Debug", "Debug"]})
    pol = {"reservation_gpus": 1536, "eval_gpus": 0, "priorities": {"Eval": 0, "Pretrain": 2, "Debug": 1},
           "best_effort": True, "best_effort_types": ["Debug", "Eval"]}
    j = _run_policy(d, "Seren", 2288, pol, None, 0)
    assert list(j["partition"]) == ["pretrain", "pretrain", "shared"]
    assert (j["contention_s"] == 0).all() and (j["preemptions"] == 0).all()


def test_latency_fit_keeps_evaluation_slowest():
    """fit_latency: with no published share at <= 1 s (Kalos) evaluation's atom is 0; and evaluation's mean
    wait (latency + contention) stays above every other type's although another type has the larger contention."""
    from acmemodel.calibrate_queue import EVAL_MEAN_MARGIN, _latency_mean, fit_latency
    from acmemodel.datasets.published import load_reference

    rng = np.random.default_rng(0)
    targets = load_reference("queue_wait_by_type").query("cluster == 'Kalos'")
    contention = {"Eval": np.zeros(3000), "Pretrain": np.zeros(600),
                  "Debug": np.where(rng.random(600) < 0.05, 4000.0, 0.0), "Other": np.zeros(300)}
    lat = fit_latency(contention, targets, mean_target=214.0,
                      weights={"Eval": 90.0, "Pretrain": 3.0, "Debug": 5.0, "Other": 2.0}, max_sample=2000)
    assert lat["Eval"]["a"] == 0.0 and all(lat[t]["a"] > 0 for t in ("Pretrain", "Debug", "Other"))
    mean = {t: _latency_mean(**lat[t]) + contention[t].mean() for t in contention}
    top = max(v for t, v in mean.items() if t != "Eval")
    # the hinge holds the ordering up to the least-squares trade-off with the share residuals
    assert mean["Eval"] >= top * math.exp(EVAL_MEAN_MARGIN) * 0.9, mean


@pytest.mark.parametrize("cluster", ["Seren", "Kalos"])
def test_latency_fit_memo_is_the_per_point_sum(cluster, monkeypatch):
    """fit_latency's residuals (calibrate_queue._PointMisses: one latency_cdf call on the union of a type's levels,
    remembered per parameter set) are bit for bit the per-point sums np.dot(w, latency_cdf(y, **p)) - target, so
    the least-squares path and the fitted laws are the same as without it (Seren: own, shared and unpublished
    types and the shared pair's tie; Kalos: evaluation without atom)."""
    import acmemodel.calibrate_queue as cq
    from acmemodel.datasets.published import load_reference

    class Direct:
        def __init__(self, levels, target):
            self.levels, self.target = levels, target

        def __call__(self, p):
            return [float(np.dot(w, cq.latency_cdf(y, **p))) - c for (y, w), c in zip(self.levels, self.target)]

    rng = np.random.default_rng(3)
    targets = load_reference("queue_wait_by_type").query("cluster == @cluster")
    types = list(load_reference("workload_mix").query("cluster == @cluster")["type"])
    contention = {t: np.where(rng.random(400) < 0.3, rng.lognormal(3.0 + i % 3, 1.5, 400), 0.0)
                  for i, t in enumerate(types)}
    kw = {"mean_target": 300.0, "weights": {t: 100.0 / len(types) for t in types}, "max_sample": 100, "seed": 1}
    fast = cq.fit_latency(contention, targets, **kw)
    monkeypatch.setattr(cq, "_PointMisses", Direct)
    assert cq.fit_latency(contention, targets, **kw) == fast


def test_latency_cap_bounds_draws_cdf_and_mean():
    """The latency hurdle cut at ``cap``: draws never exceed it, the CDF is 1 from it on, and the closed-form
    mean E[min(X, c)] agrees with the draws' mean within 4 standard errors (200,000 draws)."""
    from scipy import stats

    from acmemodel.calibrate_queue import _latency_mean, latency_cdf, latency_sample

    p = {"a": 0.3, "mu": 3.0, "sigma": 3.0, "shift": 5.0, "cap": 3600.0}
    x = latency_sample(200_000, np.random.default_rng(5), **p)
    at_cap = (1 - p["a"]) * stats.norm.sf((math.log(3600.0 - 1.0 - p["shift"]) - p["mu"]) / p["sigma"])
    assert x.max() <= 3600.0
    assert abs(float(np.mean(x == 3600.0)) - at_cap) <= 4 * math.sqrt(at_cap * (1 - at_cap) / len(x))
    assert float(latency_cdf(3600.0, **p)) == 1.0 and float(latency_cdf(3599.0, **p)) < 1.0 - at_cap / 2
    se = float(np.std(x)) / math.sqrt(len(x))
    assert abs(float(np.mean(x)) - _latency_mean(**p)) <= 4 * se + 0.5  # + 0.5 s: draws are whole seconds
    # uncut, the same law's mean is exp(mu + sigma^2 / 2) ~ 1.8e3 s larger than the cut one
    assert _latency_mean(**dict(p, cap=math.inf)) > _latency_mean(**p) + 1000


def test_reproduce_checks_seren_gpu_time_by_size():
    """Seren's published GPU-time shares by size (<= 511 GPUs about 64 %, >= 768 GPUs about 30 %) are
    reproduce checks with a 5-pp bar; Kalos keeps its >= 256-GPU bound."""
    from acmemodel.reproduction.compare import gpu_time_by_size

    g = np.array([1, 8, 512, 768, 1024, 256])
    jobs = pd.DataFrame({"gpu_num": g, "run_s": [100.0, 100, 100, 100, 100, 100], "queue_s": 0.0,
                         "submit_s": 0.0, "start_s": 0.0, "end_s": 100.0})
    rows = {r["fact"]: r for r in gpu_time_by_size("Seren", jobs, includes_queue=False)}
    small, big = rows["GPU time of <= 511-GPU jobs (%)"], rows["GPU time of >= 768-GPU jobs (%)"]
    assert small["reproduced"] == pytest.approx(100 * (1 + 8 + 256) / g.sum())
    assert big["reproduced"] == pytest.approx(100 * (768 + 1024) / g.sum())
    assert big["within_bar"] == (abs(big["reproduced"] - 30) <= 5) and not small["within_bar"]
    kal = {r["fact"] for r in gpu_time_by_size("Kalos", jobs, includes_queue=False)}
    assert "GPU time of >= 256-GPU jobs (%)" in kal and "GPU time of <= 511-GPU jobs (%)" not in kal


def test_published_failure_rate_derivation_and_check():
    """The published derivation of large-job infrastructure failures per 1,000 node-days (failed GPU time x
    the large infrastructure reasons' share among the reasons seen on the cluster / their GPU time per
    failure, over the large jobs' node-days), recomputed by hand for Kalos, and the default's check."""
    from acmemodel import load_default
    from acmemodel.reproduction.compare import failure_rate_check, published_failure_rate

    k = published_failure_rate("Kalos")
    assert k["reasons"] == ["NVLink Error", "CUDA Error", "ECC Error", "Network Error", "NCCL Timeout Error",
                            "NCCL Remote Error"]
    shares = 30.25 + 15.77 + 11.00 + 4.53 + 0.50 + 0.15
    seen_k = 100.0 - (14.30 + 2.12 + 0.01)  # reasons seen only on Seren
    per_failure_gpu_min = (54 * 585683 + 21 * 785099 + 12 * 958404 + 12 * 394821 + 6 * 86856 + 3 * 52419) / 108
    n = 426292851.0 * shares / seen_k / (per_failure_gpu_min * 60)
    node_days = 0.96 * (1667685146.0 + 3239202064.0 + 426292851.0) / 8 / 86400
    assert k["failures"] == pytest.approx(n, rel=1e-3) and k["per_1000_node_days"] == pytest.approx(1000 * n / node_days,
                                                                                                     rel=1e-3)
    lo, hi = k["interval_per_1000_node_days"]
    assert lo < k["per_1000_node_days"] < hi
    s = published_failure_rate("Seren")
    assert "Node Failure" in s["reasons"] and "NCCL Timeout Error" not in s["reasons"]
    b = load_default()
    for cl in ("Seren", "Kalos"):
        c = failure_rate_check(b, cl)
        assert c["reproduced"] == pytest.approx(1000 * 86400 / (b["failure"].mttf(1024, cluster=cl) * 128))
        assert c["within_bar"] == (c["interval"][0] <= c["reproduced"] <= c["interval"][1])
