"""Cluster simulator: C kernel == Python twin, hand-computed scenarios, conservation, front-end validation."""
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings, strategies as st

from acmemodel._solver import _cluster
from acmemodel.errors import DataWarning
from acmemodel.sim.cluster import simulate_cluster
from acmemodel._solver.reference.cluster import simulate_reference

ENGINES = ["c", "numpy"]


def jobs_df(rows, types=None):
    """rows: (submit_s, gpus, run_s[, type[, partition]])."""
    d = {"submit_s": [r[0] for r in rows], "gpu_num": [r[1] for r in rows], "run_s": [r[2] for r in rows],
         "type": [r[3] if len(r) > 3 else "Other" for r in rows]}
    if rows and len(rows[0]) > 4:
        d["partition"] = [r[4] for r in rows]
    return pd.DataFrame(d)


def same(c, r):
    for k in c:
        if k == "busy":
            np.testing.assert_allclose(c[k], r[k], rtol=1e-12, atol=1e-9)
        else:
            assert np.array_equal(c[k], r[k], equal_nan=True), k


# ---- C vs twin ----------------------------------------------------------------------------------------------------
@st.composite
def workloads(draw):
    G = draw(st.sampled_from([1, 2, 4, 8]))
    P = draw(st.integers(1, 3))
    pn = draw(st.lists(st.integers(0, 3), min_size=P, max_size=P))
    n = draw(st.integers(0, 30))
    submit = sorted(draw(st.lists(st.integers(0, 25), min_size=n, max_size=n)))
    run = draw(st.lists(st.integers(0, 15), min_size=n, max_size=n))
    gpus = draw(st.lists(st.integers(1, 3 * G + 1), min_size=n, max_size=n))
    part = draw(st.lists(st.integers(-1, P - 1), min_size=n, max_size=n))
    be = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    kw = dict(reserved=draw(st.integers(-1, P - 1)), backfill=draw(st.booleans()),
              best_effort=draw(st.booleans()), backfill_depth=draw(st.sampled_from([-1, 0, 1, 2, 1000])),
              w0=float(draw(st.integers(0, 10))), w1=float(draw(st.integers(10, 40))))
    if draw(st.booleans()):
        kw["prio"] = np.array(draw(st.lists(st.integers(0, 2), min_size=n, max_size=n)), np.int64)
    args = (np.array(submit, float), np.array(run, float), np.array(gpus, np.int64), np.array(part, np.int64),
            np.array(be, np.uint8), np.array(pn, np.int64), G)
    return args, kw


@settings(max_examples=300, deadline=None)
@given(workloads())
def test_c_matches_twin_on_random_workloads(w):
    args, kw = w
    same(_cluster.simulate(*args, **kw), simulate_reference(*args, **kw))


@pytest.mark.parametrize("seed", range(4))
def test_c_matches_twin_with_long_queues_and_preemption(seed):
    rng = np.random.default_rng(seed)
    n, G = 400, 8
    submit = np.sort(rng.integers(0, 300, n)).astype(float)
    run = rng.integers(0, 60, n).astype(float)
    gpus = np.where(rng.random(n) < 0.8, rng.integers(1, G + 1, n), rng.integers(9, 4 * G, n))
    part = rng.integers(0, 3, n)
    args = (submit, run, gpus, part, rng.random(n) < 0.7, np.array([4, 2, 3]), G)
    kw = dict(reserved=0, backfill=True, best_effort=True, backfill_depth=-1, w0=0.0, w1=300.0,
              prio=rng.integers(0, 3, n) if seed % 2 else None)
    c = _cluster.simulate(*args, **kw)
    same(c, simulate_reference(*args, **kw))
    assert c["preempt"].sum() > 0 and (c["ran_in"][part != 0] == 0).any()  # the case exercises best effort


def test_engines_give_same_result_object():
    rng = np.random.default_rng(7)
    n = 200
    df = pd.DataFrame({"submit_s": rng.integers(0, 500, n).astype(float), "run_s": rng.integers(1, 100, n) * 1.0,
                       "gpu_num": rng.choice([1, 2, 8, 16], n), "type": rng.choice(["Eval", "Pretrain", "SFT"], n)})
    kw = dict(total_gpus=64, partitions={"pretrain": 32, "eval": 16}, best_effort_on_reserved=True)
    a = simulate_cluster(df, backend="c", **kw)
    b = simulate_cluster(df, backend="numpy", **kw)
    pd.testing.assert_frame_equal(a.jobs, b.jobs)
    pd.testing.assert_frame_equal(a.queue_s, b.queue_s)
    pd.testing.assert_frame_equal(a.utilization, b.utilization, rtol=1e-12)


# ---- hand-computed scenarios (both engines) -----------------------------------------------------------------------
@pytest.mark.parametrize("engine", ENGINES)
def test_fifo_order_on_one_node(engine):
    r = simulate_cluster(jobs_df([(0, 8, 10), (1, 8, 5), (2, 8, 5)]), total_gpus=8, backend=engine)
    assert r.jobs["start_s"].tolist() == [0, 10, 15]
    assert r.jobs["wait_s"].tolist() == [0, 9, 13]


@pytest.mark.parametrize("engine", ENGINES)
def test_fifo_tie_broken_by_input_order(engine):
    r = simulate_cluster(jobs_df([(0, 8, 10), (0, 8, 5), (0, 8, 1)]), total_gpus=8, backend=engine)
    assert r.jobs["start_s"].tolist() == [0, 10, 15]


@pytest.mark.parametrize("engine", ENGINES)
def test_gang_blocking_without_backfill(engine):
    # A holds 4 of 8 GPUs; B needs all 8 (gang) and blocks; C (2 GPUs) must wait behind B under strict FIFO
    df = jobs_df([(0, 4, 10), (1, 8, 5), (2, 2, 3)])
    r = simulate_cluster(df, total_gpus=8, backfill=False, backend=engine)
    assert r.jobs["start_s"].tolist() == [0, 10, 15]


@pytest.mark.parametrize("engine", ENGINES)
def test_backfill_starts_small_job_ahead(engine):
    # C ends at 5 <= B's reservation at 10, so it backfills at 2 without delaying B
    df = jobs_df([(0, 4, 10), (1, 8, 5), (2, 2, 3)])
    r = simulate_cluster(df, total_gpus=8, backfill=True, backend=engine)
    assert r.jobs["start_s"].tolist() == [0, 10, 2]


@pytest.mark.parametrize("engine", ENGINES)
def test_backfill_never_delays_the_head(engine):
    # C would run past B's reservation (2 + 20 > 10) on the only node: it must wait until B is done
    df = jobs_df([(0, 4, 10), (1, 8, 5), (2, 2, 20)])
    r = simulate_cluster(df, total_gpus=8, backend=engine)
    assert r.jobs["start_s"].tolist() == [0, 10, 15]


@pytest.mark.parametrize("engine", ENGINES)
def test_backfill_with_multi_node_reservation(engine):
    # 2 nodes. A (8 GPUs) on node 0 until 10, A2 (4) on node 1 until 100; B (16 GPUs) needs both nodes fully
    # free: reservation at 100 on nodes {0, 1}. C (4 GPUs, ends 52 <= 100) backfills on node 1;
    # D (4 GPUs, ends after 100) may not touch the reserved nodes, so it waits for B (100..105).
    df = jobs_df([(0, 8, 10), (0, 4, 100), (1, 16, 5), (2, 4, 50), (3, 4, 200)])
    r = simulate_cluster(df, total_gpus=16, backend=engine)
    assert r.jobs["start_s"].tolist() == [0, 0, 100, 2, 105]


@pytest.mark.parametrize("engine", ENGINES)
def test_multi_node_job_holds_whole_nodes(engine):
    # 9 GPUs take ceil(9/8) = 2 whole nodes: nothing else fits on the 16-GPU cluster meanwhile
    r = simulate_cluster(jobs_df([(0, 9, 10), (1, 1, 1)]), total_gpus=16, backend=engine)
    assert r.jobs["start_s"].tolist() == [0, 10]
    assert r.utilization.loc["shared", "busy_gpu_s"] == 16 * 1  # window [0, 1]: 16 allocated GPUs for 1 s


@pytest.mark.parametrize("engine", ENGINES)
def test_small_jobs_pack_within_one_node(engine):
    # two 6-GPU jobs leave 2 + 2 free GPUs on two nodes: a 4-GPU job cannot be split across them
    r = simulate_cluster(jobs_df([(0, 6, 10), (0, 6, 20), (1, 4, 1)]), total_gpus=16, backend=engine)
    assert r.jobs["start_s"].tolist() == [0, 0, 10]


@pytest.mark.parametrize("engine", ENGINES)
def test_best_fit_node_choice(engine):
    # 5 GPUs on node 0 (3 left); the 3-GPU job goes to node 0 (best fit) so the 8-GPU job still fits on node 1
    r = simulate_cluster(jobs_df([(0, 5, 10), (1, 3, 10), (2, 8, 10)]), total_gpus=16, backend=engine)
    assert r.jobs["start_s"].tolist() == [0, 1, 2]


@pytest.mark.parametrize("engine", ENGINES)
def test_best_effort_on_reserved_with_preemption(engine):
    # pretrain partition: 1 node, shared: 1 node. S2 cannot fit the full shared pool and runs best-effort on the
    # idle reserved node at 1; P1 arrives at 10 and evicts it (9 s lost); S2 reruns there after P1 (30..80).
    df = jobs_df([(0, 8, 100, "SFT"), (1, 4, 50, "SFT"), (10, 8, 20, "Pretrain")])
    kw = dict(total_gpus=16, partitions={"pretrain": 8}, window=(0.0, 200.0), backend=engine)
    r = simulate_cluster(df, best_effort_on_reserved=True, **kw)
    j = r.jobs
    assert j["start_s"].tolist() == [0, 30, 10]
    assert j["first_start_s"].tolist() == [0, 1, 10]
    assert j["ran_in"].tolist() == ["shared", "pretrain", "pretrain"]
    assert j["preemptions"].tolist() == [0, 1, 0]
    assert j["lost_s"].tolist() == [0, 9, 0]
    assert j["wait_s"].iloc[1] == 29
    u = r.utilization
    assert u.loc["pretrain", "busy_gpu_s"] == 8 * 20
    assert u.loc["pretrain", "best_effort_gpu_s"] == 4 * 9 + 4 * 50
    assert u.loc["pretrain", "utilization"] == pytest.approx((160 + 236) / (8 * 200))
    assert r.pretrain_throughput == pytest.approx(8 * 20 / 200)
    # without best effort S2 waits for the shared node
    r0 = simulate_cluster(df, best_effort_on_reserved=False, **kw)
    assert r0.jobs["start_s"].tolist() == [0, 100, 10]
    assert r0.jobs["preemptions"].sum() == 0


@pytest.mark.parametrize("engine", ENGINES)
def test_best_effort_respects_the_reserved_queue_head(engine):
    # reserved node busy with 4 GPUs until 10, reserved head needs 8 -> reservation at 10. A long best-effort job
    # (ends after 10) may not start on the reserved node; a short one (ends by 10) may. Once the reserved queue is
    # empty again (15) the long one runs there best-effort instead of waiting for the shared node (100).
    df = jobs_df([(0, 8, 100, "SFT"), (0, 4, 10, "Pretrain"), (1, 8, 5, "Pretrain"),
                  (2, 2, 50, "SFT"), (3, 2, 5, "SFT")])
    r = simulate_cluster(df, total_gpus=16, partitions={"pretrain": 8}, best_effort_on_reserved=True,
                         backend=engine)
    j = r.jobs
    assert j["start_s"].tolist() == [0, 0, 10, 15, 3]
    assert j["ran_in"].tolist() == ["shared", "pretrain", "pretrain", "pretrain", "pretrain"]
    assert j["preemptions"].sum() == 0


# ---- Acme's policy: priorities by type, the pretraining reservation, preemption, start-up latency -----------------
@pytest.mark.parametrize("engine", ENGINES)
def test_priority_order_within_a_partition(engine):
    # one 8-GPU node busy until 10; Eval (submitted first) and SFT queue behind it. FIFO: Eval first; with Eval below
    # SFT the later SFT job goes first, Eval after it.
    df = jobs_df([(0, 8, 10, "Other"), (1, 8, 5, "Eval"), (2, 8, 5, "SFT")])
    fifo = simulate_cluster(df, total_gpus=8, backend=engine)
    assert fifo.jobs["start_s"].tolist() == [0, 10, 15]
    pr = simulate_cluster(df, total_gpus=8, priorities={"Eval": 0, "SFT": 1, "Other": 1}, backend=engine)
    assert pr.jobs["start_s"].tolist() == [0, 15, 10]
    assert pr.jobs["priority"].tolist() == [1, 0, 1]
    # FIFO within a priority: two SFT jobs keep their submission order
    df2 = jobs_df([(0, 8, 10, "Other"), (1, 8, 5, "SFT"), (2, 8, 5, "Eval"), (3, 8, 5, "SFT")])
    r = simulate_cluster(df2, total_gpus=8, priorities={"Eval": -1}, backend=engine)
    assert r.jobs["start_s"].tolist() == [0, 10, 20, 15]


@pytest.mark.parametrize("engine", ENGINES)
def test_priority_order_among_best_effort_candidates(engine):
    # shared node busy; the idle reserved node takes best-effort work: with Eval below SFT the SFT job gets it
    df = jobs_df([(0, 8, 100, "Other"), (1, 8, 5, "Eval"), (1, 8, 5, "SFT")])
    kw = dict(total_gpus=16, partitions={"pretrain": 8}, best_effort_on_reserved=True, backend=engine)
    fifo = simulate_cluster(df, **kw)
    assert fifo.jobs["start_s"].tolist() == [0, 1, 6]
    pr = simulate_cluster(df, priorities={"Eval": 0, "SFT": 1, "Other": 1}, **kw)
    assert pr.jobs["start_s"].tolist() == [0, 6, 1]
    assert (pr.jobs["ran_in"].iloc[1:] == "pretrain").all()


def _policy_workload(seed, n=300):
    rng = np.random.default_rng(seed)
    types = rng.choice(["Pretrain", "Eval", "SFT", "Debug"], n, p=[0.15, 0.55, 0.2, 0.1])
    gpus = np.where(types == "Pretrain", rng.choice([8, 16, 32], n), rng.choice([1, 2, 4, 8], n))
    return pd.DataFrame({"submit_s": np.sort(rng.integers(0, 400, n)).astype(float),
                         "run_s": rng.integers(1, 80, n).astype(float), "gpu_num": gpus, "type": types,
                         "latency_s": rng.integers(0, 5, n).astype(float)})


@pytest.mark.parametrize("seed", range(3))
def test_policy_reservation_and_preemption_semantics(seed):
    df = _policy_workload(seed)
    kw = dict(total_gpus=48, partitions={"pretrain": 32}, priorities={"Eval": 0, "Pretrain": 1, "SFT": 1, "Debug": 1},
              window=(0.0, 400.0))
    rc = simulate_cluster(df, best_effort_on_reserved=True, backend="c", **kw)
    rn = simulate_cluster(df, best_effort_on_reserved=True, backend="numpy", **kw)
    pd.testing.assert_frame_equal(rc.jobs, rn.jobs)
    j = rc.jobs
    # the reservation: only Pretrain jobs are at home there; others run there only as best effort
    assert (j.loc[j["type"] == "Pretrain", "partition"] == "pretrain").all()
    assert (j.loc[j["type"] != "Pretrain", "partition"] == "shared").all()
    assert (j.loc[j["type"] == "Pretrain", "ran_in"] == "pretrain").all()
    # preemption hits best-effort jobs only, and counts lost work
    pre = j[j["preemptions"] > 0]
    assert len(pre) > 0 and (pre["type"] != "Pretrain").all()
    assert (pre["lost_s"] > 0).all() and (j.loc[j["preemptions"] == 0, "lost_s"] == 0).all()
    # latency added once: wait = contention + latency, run starts latency after dispatch
    np.testing.assert_allclose(j["wait_s"], j["contention_s"] + j["latency_s"])
    assert (j["contention_s"] >= 0).all()
    np.testing.assert_allclose(j["end_s"] - j["start_s"], j["run_s"])
    # without best effort nobody leaves home and nothing is preempted
    r0 = simulate_cluster(df, best_effort_on_reserved=False, backend="c", **kw)
    assert (r0.jobs["ran_in"] == r0.jobs["partition"]).all() and r0.jobs["preemptions"].sum() == 0


@pytest.mark.parametrize("engine", ENGINES)
def test_latency_is_added_once(engine):
    # idle cluster: the wait is the latency
    one = simulate_cluster(jobs_df([(5, 4, 10)]).assign(latency_s=[7.0]), total_gpus=8, backend=engine).jobs
    assert one[["start_s", "end_s", "wait_s", "contention_s"]].iloc[0].tolist() == [12, 22, 7, 0]
    # the preemption scenario with a latency of 2 s: GPUs are held for latency + run from each dispatch; the evicted
    # S2 (dispatched at 1, evicted at 10 when P1 is dispatched) is re-dispatched when P1 frees the node at 32, so
    # its wait is 31 s of contention + one latency
    df = jobs_df([(0, 8, 100, "SFT"), (1, 4, 50, "SFT"), (10, 8, 20, "Pretrain")]).assign(latency_s=2.0)
    r = simulate_cluster(df, total_gpus=16, partitions={"pretrain": 8}, best_effort_on_reserved=True,
                         window=(0.0, 200.0), backend=engine)
    j = r.jobs
    assert j["start_s"].tolist() == [2, 34, 12]
    assert j["end_s"].tolist() == [102, 84, 32]
    assert j["wait_s"].tolist() == [2, 33, 2]
    assert j["contention_s"].tolist() == [0, 31, 0]
    assert j["preemptions"].tolist() == [0, 1, 0] and j["lost_s"].tolist() == [0, 9, 0]


def test_invalid_policy_inputs():
    df = jobs_df([(0, 1, 1, "Eval")])
    with pytest.raises(ValueError, match="latency_s"):
        simulate_cluster(df.assign(latency_s=[-1.0]), total_gpus=8)
    with pytest.raises(ValueError, match=r"priorities\['Eval'\]"):
        simulate_cluster(df, total_gpus=8, priorities={"Eval": 0.5})


@pytest.mark.parametrize("engine", ENGINES)
def test_unschedulable_jobs_are_reported_not_looped_on(engine):
    df = jobs_df([(0, 24, 10), (1, 2, 5), (2, 16, 1)])
    with pytest.warns(DataWarning, match="never fit"):
        r = simulate_cluster(df, total_gpus=16, backend=engine)
    assert list(r.unschedulable) == [0]
    assert not r.jobs["schedulable"].iloc[0] and np.isnan(r.jobs["start_s"].iloc[0])
    assert r.jobs["start_s"].tolist()[1:] == [1, 6]
    assert r.wait_quantile("Other", 0.99) == np.inf


def test_empty_partition_makes_its_jobs_unschedulable():
    df = jobs_df([(0, 1, 10, "Eval"), (0, 1, 10, "SFT")])
    with pytest.warns(DataWarning):
        r = simulate_cluster(df, total_gpus=8, partitions={"eval": 0})
    assert r.jobs["schedulable"].tolist() == [False, True]


# ---- conservation and basic invariants ----------------------------------------------------------------------------
def _max_concurrent(starts, ends, alloc):
    ev = sorted([(e, -a) for e, a in zip(ends, alloc)] + [(s, a) for s, a in zip(starts, alloc)])
    cur = peak = 0
    for _, a in ev:  # ends sort before starts at equal times (negative weight first)
        cur += a
        peak = max(peak, cur)
    return peak


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("best_effort", [False, True])
def test_no_over_allocation(engine, best_effort):
    rng = np.random.default_rng(3)
    n, G = 300, 8
    df = pd.DataFrame({"submit_s": np.sort(rng.integers(0, 400, n)).astype(float),
                       "run_s": rng.integers(0, 80, n).astype(float),
                       "gpu_num": np.where(rng.random(n) < 0.85, rng.integers(1, 9, n), rng.integers(9, 33, n)),
                       "type": rng.choice(["Pretrain", "Eval", "SFT"], n, p=[0.2, 0.5, 0.3])})
    parts = {"pretrain": 32, "eval": 16}
    with pytest.warns(DataWarning):  # Eval jobs of > 16 GPUs never fit the eval lane
        r = simulate_cluster(df, total_gpus=80, partitions=parts, best_effort_on_reserved=best_effort, backend=engine)
    assert len(r.unschedulable) > 0
    j = r.jobs[r.jobs["schedulable"]]
    assert (j["start_s"] >= j["submit_s"]).all()
    assert np.array_equal(j["end_s"].to_numpy(), (j["start_s"] + j["run_s"]).to_numpy())
    alloc = np.where(j["gpu_num"] <= G, j["gpu_num"], -(-j["gpu_num"] // G) * G)
    for name, cap in {**parts, "shared": 32}.items():
        m = (j["ran_in"] == name).to_numpy()
        assert _max_concurrent(j["start_s"][m], j["end_s"][m], alloc[m]) <= cap
    if best_effort:
        assert (j["ran_in"] != j["partition"]).any()
        assert j["preemptions"].sum() > 0
    # busy GPU-seconds: completed runs plus evicted runs (lost_s) = allocated GPU-seconds; none exceeds capacity
    w0, w1 = r.window
    lo, hi = np.maximum(j["start_s"], w0), np.minimum(j["end_s"], w1)
    done = (alloc * np.clip(hi - lo, 0, None)).sum()
    u = r.utilization
    assert u["busy_gpu_s"].sum() + u["best_effort_gpu_s"].sum() >= done - 1e-6
    assert (u["utilization"] <= 1 + 1e-12).all()


@settings(max_examples=60, deadline=None)
@given(workloads())
def test_strict_fifo_starts_in_submit_order(w):
    (submit, run, gpus, part, be, pn, G), kw = w
    r = _cluster.simulate(submit, run, gpus, part, be, pn, G, backfill=False, best_effort=False)
    for p in range(len(pn)):
        s = r["start"][(part == p) & (r["status"] == 0)]
        assert np.all(np.diff(s) >= 0)


# ---- queue statistics, windows and validation ---------------------------------------------------------------------
def test_queue_table_matches_waits():
    rng = np.random.default_rng(1)
    n = 300
    df = pd.DataFrame({"submit_s": rng.uniform(0, 1000, n), "run_s": rng.exponential(60, n),
                       "gpu_num": rng.choice([1, 4, 8], n), "type": rng.choice(["Eval", "SFT"], n)})
    r = simulate_cluster(df, total_gpus=16)
    for t in ("Eval", "SFT"):
        w = r.jobs.loc[r.jobs["type"] == t, "wait_s"]
        assert r.queue_s.loc[t, "p90"] == pytest.approx(np.quantile(w, 0.9))
        assert r.queue_s.loc[t, "mean"] == pytest.approx(w.mean())
        assert r.queue_s.loc[t, "count"] == len(w)
        assert r.wait_quantile(t, 0.9) == pytest.approx(np.quantile(w, 0.9))
    d = r.to_dict()
    assert set(d["queue_s"]) == {"Eval", "SFT"} and set(d["utilization"]) == {"shared"}


def test_drops_cpu_and_never_started_jobs():
    df = jobs_df([(0, 1, 10), (1, 0, 5), (2, 2, np.nan)])
    r = simulate_cluster(df, total_gpus=8)
    assert r.n_dropped == 2 and list(r.jobs.index) == [0]


def test_trace_like_input():
    class FakeTrace:  # anything with a ``jobs`` DataFrame, like acmemodel.Trace
        jobs = jobs_df([(0, 1, 10), (1, 0, np.nan), (2, 1, np.nan)]).assign(cluster="Seren", user="u")

    r = simulate_cluster(FakeTrace(), total_gpus=8)
    assert r.n_dropped == 2 and r.jobs["start_s"].tolist() == [0]
    mixed = FakeTrace.jobs.assign(cluster=["Seren", "Kalos", "Seren"])
    with pytest.raises(ValueError, match="mixes clusters"):
        simulate_cluster(mixed, total_gpus=8)


def test_mapping_input_and_explicit_partition_column():
    m = {"submit_s": [0.0, 0.0], "run_s": [5.0, 5.0], "gpu_num": [8, 8], "type": ["A", "A"],
         "partition": ["x", "shared"]}
    r = simulate_cluster(m, total_gpus=16, partitions={"x": 8})
    assert r.jobs["start_s"].tolist() == [0, 0]
    assert r.jobs["ran_in"].tolist() == ["x", "shared"]


@pytest.mark.parametrize("kw, match", [
    (dict(total_gpus=12), "multiple of gpus_per_node"),
    (dict(total_gpus=16, partitions={"eval": 4}), r"partitions\['eval'\]"),
    (dict(total_gpus=16, partitions={"eval": 24}), "more than total_gpus"),
    (dict(total_gpus=32, partitions={"eval": 8, "shared": 16}), "sum to"),
    (dict(total_gpus=16, routing={"Other": "nope"}), "unknown partition"),
    (dict(total_gpus=16, backend="fortran"), "backend"),
    (dict(total_gpus=16, best_effort_on_reserved=True), "reserved_partition"),
    (dict(total_gpus=16, backfill_depth=-3), "backfill_depth"),
])
def test_invalid_arguments(kw, match):
    with pytest.raises(ValueError, match=match):
        simulate_cluster(jobs_df([(0, 1, 1)]), **kw)


def test_invalid_jobs():
    with pytest.raises(ValueError, match="missing column"):
        simulate_cluster(pd.DataFrame({"submit_s": [0.0]}), total_gpus=8)
    with pytest.raises(ValueError, match="run_s"):
        simulate_cluster(jobs_df([(0, 1, -1)]), total_gpus=8)
    with pytest.raises(ValueError, match="submit_s"):
        simulate_cluster(jobs_df([(np.nan, 1, 1)]), total_gpus=8)


def test_kernel_checks_its_arguments():
    ok = (np.array([0.0, 1.0]), np.array([1.0, 1.0]), np.array([1, 1]), np.array([0, 0]), np.array([1, 1]),
          np.array([1]), 8)
    _cluster.simulate(*ok)
    bad = [
        ((np.array([1.0, 0.0]),) + ok[1:], "sorted"),
        (ok[:1] + (np.array([1.0]),) + ok[2:], "same length"),
        (ok[:2] + (np.array([0, 1]),) + ok[3:], "gpus"),
        (ok[:3] + (np.array([0, 5]),) + ok[4:], "part"),
        (ok[:6] + (0,), "gpus_per_node"),
        (ok[:1] + (np.array([1.0, np.inf]),) + ok[2:], "run"),
    ]
    for args, match in bad:
        with pytest.raises(ValueError, match=match):
            _cluster.simulate(*args)
    with pytest.raises(ValueError, match="reserved"):
        _cluster.simulate(*ok, reserved=3)


def test_deterministic():
    rng = np.random.default_rng(5)
    n = 500
    df = pd.DataFrame({"submit_s": rng.integers(0, 2000, n).astype(float), "run_s": rng.integers(0, 300, n) * 1.0,
                       "gpu_num": rng.choice([1, 2, 8, 16, 32], n), "type": rng.choice(["Pretrain", "Eval"], n)})
    kw = dict(total_gpus=64, partitions={"pretrain": 32}, best_effort_on_reserved=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        a, b = simulate_cluster(df, **kw), simulate_cluster(df, **kw)
    pd.testing.assert_frame_equal(a.jobs, b.jobs)


def test_scheduling_policy_is_stated_once():
    """SchedulingPolicy: read from a planner config or a calibrated policy record, it gives the simulator
    the same keyword arguments as stating them by hand, and the same schedule."""
    from acmemodel.planner.config import ClusterConfig
    from acmemodel.sim.cluster import SchedulingPolicy

    cfg = ClusterConfig.from_dict({"cluster": {"gpus": 16, "partitions": {"pretrain": 8},
                                               "priorities": {"Eval": -1, "Pretrain": 2},
                                               "best_effort_on_reserved": True, "best_effort_types": ["SFT"]},
                                   "runs": []})
    pol = SchedulingPolicy.from_config(cfg.cluster)
    assert pol.kwargs() == {"backfill": True, "best_effort_on_reserved": True, "priorities": {"Eval": -1, "Pretrain": 2},
                            "best_effort_types": ["SFT"]}
    assert pol.with_priority_like("Planned", "Pretrain").priorities["Planned"] == 2
    cal = SchedulingPolicy.from_calibration({"priorities": {"Eval": -1}, "best_effort": True}, reserved=False)
    assert cal.kwargs() == {"backfill": True, "best_effort_on_reserved": False, "priorities": {"Eval": -1}}
    df = jobs_df([(0, 8, 10), (0, 8, 5), (1, 4, 3)])
    df["type"] = ["Pretrain", "Eval", "SFT"]
    by_hand = simulate_cluster(df, total_gpus=16, partitions={"pretrain": 8}, priorities={"Eval": -1, "Pretrain": 2},
                               best_effort_on_reserved=True, best_effort_types=["SFT"])
    stated = simulate_cluster(df, total_gpus=16, partitions={"pretrain": 8}, **pol.kwargs())
    assert stated.jobs["start_s"].tolist() == by_hand.jobs["start_s"].tolist()
