"""Partial pooling of duration cells with their parents (:mod:`acmemodel.models._duration`): the shrinkage
``w = n/(n + k)`` with ``k`` chosen on the latest jobs moves a 5-job cell to its parent and leaves a
50,000-job cell alone; a key that does not improve the held-out fit is marginalised; bundles written
before pooling still load."""
from __future__ import annotations

import numpy as np
import pytest

from acmemodel.models.runtime import RuntimeModel
from acmemodel.trace.jobs import jobs_from_times


def _jobs(cluster, typ, run, gpus=1, seed=0):
    rng = np.random.default_rng(seed)
    n = len(run)
    submit = 1.7e9 + np.sort(rng.random(n)) * 90 * 86400
    order = rng.permutation(n)  # every cell spread over the whole period
    run = np.asarray(run, float)[order]
    return jobs_from_times(cluster=np.asarray(cluster, object)[order], submit_s=submit, start_s=submit,
                           end_s=submit + run, gpu_num=np.broadcast_to(gpus, (n,))[order].astype(int),
                           type=np.asarray(typ, object)[order], state="COMPLETED", user="u")


@pytest.fixture(scope="module")
def pooled():
    """Cluster X: type A (50,000 jobs, median e^8 s) and B (5,000, e^6 s). Cluster Y: 80 types of 40
    jobs of one law (median e^4 s) and 6 types of 5 jobs, two of them zero-second runs each."""
    rng = np.random.default_rng(1)
    cl, ty, run = [], [], []

    def add(c, t, r):
        cl.extend([c] * len(r)), ty.extend([t] * len(r)), run.extend(np.round(r))
    add("X", "A", np.exp(rng.normal(8, 1, 50_000)))
    add("X", "B", np.exp(rng.normal(6, 1, 5_000)))
    for i in range(80):
        add("Y", f"s{i}", 1 + np.exp(rng.normal(4, 1.5, 40)))
    for i in range(6):
        add("Y", f"tiny{i}", np.r_[0.0, 0.0, 1 + np.exp(rng.normal(4, 1.5, 3))])
    jobs = _jobs(cl, ty, run)
    kw = dict(keys=("cluster", "type"), backoff=("type", "cluster"), min_jobs=5, min_jobs_coarsest=5, size_law=False,
              families=("lognormal", "weibull"))
    return RuntimeModel(**kw).fit(jobs)


def test_pooling_moves_a_5_job_cell_to_its_parent(pooled):
    m = pooled
    k = m.pool_["k"]
    assert 30 <= k <= 10_000  # chosen by the held-out jobs: large enough for the 40-job cells, not for B
    tiny = m.cells_.entries_[m.resolve(cluster="Y", type="tiny0").cell].value
    parent = m.resolve(cluster="Y").value
    assert tiny.n == 5 and tiny.pool_w == pytest.approx(5 / (5 + k)) and tiny.pool_w < 0.15
    # its own atom (2 of 5 runs took 0 s: π0 = 2.5/6) is all but replaced by the parent's
    assert tiny.own_p_atom == pytest.approx(2.5 / 6)
    assert abs(tiny.p_atom - parent.p_atom) <= tiny.pool_w * tiny.own_p_atom + 1e-12
    assert tiny.p_atom < 0.1
    xs = np.geomspace(1, 1e5, 50)
    assert np.max(np.abs(tiny.cdf(xs) - parent.cdf(xs))) <= tiny.pool_w + 1e-9
    assert tiny.own_cdf(0.0) == pytest.approx(2.5 / 6)  # (its own law, unpooled)


def test_pooling_leaves_a_50000_job_cell_alone(pooled):
    m = pooled
    big = m.resolve(cluster="X", type="A").value
    assert big.n == 50_000 and big.pool_w > 0.98
    for q in (0.1, 0.5, 0.9):
        assert float(big.quantile(q)) == pytest.approx(float(big.own_quantile(q)), rel=0.02)
    # the 5,000-job cell B keeps its own law too (its parent X is 91 % A, e^2 times longer)
    b = m.resolve(cluster="X", type="B").value
    assert abs(np.log(b.median()) - 6) < 0.1


def test_pooling_beats_own_fits_on_later_jobs(pooled):
    """Held-out: the 40-job cells of one shared law predict later jobs better pooled than alone."""
    m = pooled
    rng = np.random.default_rng(7)
    x = np.round(1 + np.exp(rng.normal(4, 1.5, 400)))
    cells = [m.resolve(cluster="Y", type=f"s{i}").value for i in range(0, 80, 5)]
    ll_p = np.mean([c.loglik(x).mean() for c in cells])
    ll_r = np.mean([c.own_loglik(x).mean() for c in cells])
    assert ll_p > ll_r


def test_a_key_without_signal_is_marginalised():
    """The GPU bucket carries nothing here: its level's held-out gain is within one SE, and the key is
    marginalised (its cells answer with their parent's law)."""
    rng = np.random.default_rng(3)
    n = 6000
    typ = np.where(rng.random(n) < 0.5, "Eval", "Train")
    run = np.round(np.exp(np.where(typ == "Eval", 4.0, 8.0) + rng.standard_normal(n)))
    gpus = rng.choice([1, 8, 64], n)
    jobs = _jobs(np.full(n, "c", object), typ, run, gpus=gpus, seed=3)
    m = RuntimeModel(keys=("cluster", "type", "gpu_bucket"), size_law=False, families=("lognormal",)).fit(jobs)
    lv = {x["dropped_key"]: x for x in m.pool_["levels"]}
    assert "gpu_bucket" in m.pool_["marginalised"] and not lv["gpu_bucket"]["kept"]
    assert lv["type"]["kept"] and lv["type"]["gain"] > 3 * lv["type"]["se"]
    # the kept key wins on the held-out CRPS (log scale) too; every kept level does not lose on it
    assert lv["type"]["crps_gain"] > 3 * lv["type"]["crps_se"]
    for x in m.pool_["levels"]:
        assert not x["kept"] or x["crps_gain"] is None or x["crps_gain"] >= -x["crps_se"]
    e = m.resolve(cluster="c", type="Eval", gpus=8)
    assert e.value.pool_w == 0.0
    assert float(e.value.median()) == pytest.approx(float(m.resolve(cluster="c", type="Eval").value.median()))


def test_heldout_crps_is_the_cards_crps(pooled):
    """The pooling choice's held-out CRPS (cells' CDFs mixed along each chain on a log-seconds grid)
    is, job by job, the card's ``crps_log`` of the cell the job resolves to, for any ``k`` and set
    of marginalised levels."""
    import copy

    from acmemodel.evaluation.metrics import crps_grid
    from acmemodel.models._duration import _CrpsChain, _finest, _own_loglik_levels, apply_pooling

    m = copy.deepcopy(pooled)
    rng = np.random.default_rng(11)
    ty = rng.choice(["A", "B", "s3", "tiny2", "new"], 300)
    cl = np.where(np.isin(ty, ["A", "B"]), "X", "Y")
    hold = m._observations(_jobs(cl, ty, np.round(np.exp(rng.normal(6, 2, 300))), seed=11))
    _, _, cid, values = _own_loglik_levels(m.cells_, hold)
    chain = _CrpsChain(hold, cid, values)
    cnt_of = np.array([float(v.n) for v in values])
    z = np.log1p(hold["x"].to_numpy(float))
    for k, dropped in ((0.0, set()), (30.0, set()), (300.0, {0}), (1000.0, {1})):
        got = _finest(chain.chain(cnt_of, k, dropped))
        apply_pooling(m.cells_, {"k": k, "marginalised_levels": [m.cells_.levels[i] for i in dropped]})
        res = m.cells_.resolve_frame(hold[list(m.cells_.keys)])["cell"].to_numpy()
        ref = np.array([crps_grid(m.cells_.entries_[c].value.cdf(np.expm1(chain.grid)), chain.grid, zi)
                        for c, zi in zip(res, z)]).ravel()
        np.testing.assert_allclose(got, ref, rtol=1e-9, atol=1e-12)


def test_bundle_round_trip_and_old_bundle(pooled, tmp_path):
    m = pooled
    back = RuntimeModel.from_dict(m.to_dict())
    xs = np.array([0.0, 10.0, 300.0, 5000.0])
    for key in ({"cluster": "Y", "type": "tiny1"}, {"cluster": "X", "type": "A"}, {}):
        np.testing.assert_allclose(back.cdf(xs, **key), m.cdf(xs, **key))
    assert back.pool_["k"] == m.pool_["k"]
    # a model saved before pooling (no "pool", no "pool_w"): every cell its own fit
    d = m.to_dict()
    d["fitted"].pop("pool")
    for e in d["fitted"]["cells"]["entries"]:
        e["value"].pop("pool_w")
    old = RuntimeModel.from_dict(d)
    assert all(e.value.pool_w == 1.0 for e in old.cells_.entries_.values())
    tiny = old.resolve(cluster="Y", type="tiny0").value
    assert tiny.p_atom == pytest.approx(2.5 / 6)


def test_default_bundle_still_loads():
    from acmemodel.models.bundle import load_default

    b = load_default()
    rt = b["runtime"] if "runtime" in b else None
    if rt is None:
        pytest.skip("default bundle without a run-time model")
    w = np.array([e.value.pool_w for e in rt.cells_.entries_.values()])
    assert np.all((w > 0) & (w <= 1.0))  # the calibrated default is pooled: w = n / (n + k) per cell
    assert np.isfinite(rt.median(cluster="Seren", type="Eval"))


def test_k_by_the_one_se_rule_towards_more_pooling():
    """``k`` is the next of the grid after the best when its held-out loss to the best is within one
    paired SE (else the best); the best itself without the rule (``k_best``): on held-out jobs that
    cannot tell two shrinkages apart, the stronger one — one grid step at most."""
    from acmemodel.models._duration import POOL_K_GRID, _choose_k, _k_scores, _paired

    rng = np.random.default_rng(3)
    m = 400
    # two levels: each job's own cell (300 jobs) and the root; the cell law barely better than the root
    own = np.c_[rng.normal(-1.00, 0.3, m), rng.normal(-1.02, 0.3, m)]
    cnt = np.c_[np.full(m, 300.0), np.full(m, 5000.0)]
    vals = _k_scores(own, cnt, set())
    ib = int(np.argmax([v.sum() for v in vals]))
    k_best, k = _choose_k(own, cnt), _choose_k(own, cnt, one_se=True)
    assert k_best == POOL_K_GRID[ib] and k >= k_best
    i = POOL_K_GRID.index(k)
    assert i in (ib, ib + 1)
    mean, se, _ = _paired(vals[ib + 1] - vals[ib])
    assert (i == ib + 1) == (mean >= -se)


def test_pooling_record_has_both_ks(pooled):
    p = pooled.pool_
    assert p["k"] >= p["k_best"] > 0


def test_a_cell_with_its_parents_jobs_answers_with_the_parent():
    """One cluster: the cluster × type cell holds the type cell's jobs; pooled again with it, it would
    count them twice and undo the type cell's shrinkage — it answers with the type cell's law (w = 0)."""
    rng = np.random.default_rng(5)
    run = np.r_[np.exp(rng.normal(7, 1, 600)), np.exp(rng.normal(5, 1, 400))]
    typ = np.r_[["A"] * 600, ["B"] * 400]
    jobs = _jobs(np.full(1000, "X", object), typ, np.round(run))
    m = RuntimeModel(keys=("cluster", "type"), backoff=("cluster", "type"), min_jobs=5, size_law=False,
                     families=("lognormal",)).fit(jobs)
    for t in ("A", "B"):
        inner = m.cells_.entries_[m.resolve(cluster="X", type=t).cell]
        outer = m.cells_.entries_[m.resolve(type=t).cell]
        assert inner.n == outer.n and inner.value.pool_w == 0.0
        xs = np.geomspace(10, 1e5, 30)
        assert np.allclose(inner.value.cdf(xs), outer.value.cdf(xs))
        if m.pool_["k"]:
            assert 0 < outer.value.pool_w < 1


def test_queue_models_keep_the_best_heldout_k():
    """The one-SE rule towards more pooling is the run-time model's (``POOL_ONE_SE``); the queue's wait and
    latency models keep the ``k`` of the best held-out likelihood."""
    from acmemodel import load_default
    from acmemodel.models.queue import QueueModel, StartupLatencyModel

    assert RuntimeModel.POOL_ONE_SE and not QueueModel.POOL_ONE_SE and not StartupLatencyModel.POOL_ONE_SE
    q = load_default().models["queue"]
    for p in (q.pool_, q.latency_.pool_):
        assert p["k"] == p["k_best"]
