"""Evaluation-batch planner: closed forms, dominance of the decoupled policy, bad input, CLI."""
from __future__ import annotations

import json
import math

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from acmemodel.errors import ConfigError
from acmemodel.planner.evalbatch.inputs import (
    Dataset, DatasetPriors, EvalBatch, EvalHardware, PackingRules, default_batch,
)
from acmemodel.planner.evalbatch.plan import EvalPlanConfig, plan_batch
from acmemodel.planner.evalbatch.schedule import pack_trials, simulate_coupled, simulate_decoupled

HW = EvalHardware(model_size_gb=10.0, gpus_per_node=8, storage_gbit_s=8.0, pcie_gbyte_s=10.0)  # M/B = 10 s
NO_PACK = PackingRules(merge_below_s=0.0, split_above_s=1e12, long_metric_s=1e12)


def _batch(n, pre=3.0, gen=50.0, met=7.0):
    return EvalBatch([Dataset(f"d{i}", pre, gen, met) for i in range(n)])


def test_one_trial_closed_forms():
    b = _batch(1)
    c = simulate_coupled(b, 1, HW)
    assert c.makespan_s == pytest.approx(HW.load_alone_s + 3 + 50 + 7)
    assert HW.load_alone_s == pytest.approx(10.0)
    d = simulate_decoupled(b, 1, HW, NO_PACK)
    # weights at max(preprocess + M/P, M/B), then generate, then the metric on the CPU pool
    assert d.makespan_s == pytest.approx(max(3 + HW.pcie_s, HW.load_alone_s) + 50 + 7)
    assert c.gpu_used_s == d.gpu_used_s == pytest.approx(50)
    assert c.gpu_held_s == pytest.approx(c.makespan_s)          # coupled holds the GPU throughout
    assert d.gpu_held_s == pytest.approx(HW.load_alone_s - 3 + 50)  # decoupled: from start to end of generation


@pytest.mark.parametrize("k", [1, 3, 8])
def test_identical_trials_share_the_storage_link(k):
    """k trials on one node load concurrently: each at B/k, all done at k·M/B."""
    c = simulate_coupled(_batch(k), 1, HW)
    assert c.makespan_s == pytest.approx(k * HW.load_alone_s + 3 + 50 + 7)
    # two nodes, 2k trials spread one wave per node: loads on different nodes do not interfere
    c2 = simulate_coupled(_batch(2 * 8), 2, HW)
    assert c2.makespan_s == pytest.approx(8 * HW.load_alone_s + 60)


def test_two_waves_on_one_node():
    c = simulate_coupled(_batch(16), 1, HW)
    assert c.makespan_s == pytest.approx(2 * (8 * HW.load_alone_s + 60))


def test_metrics_overlap_perfectly_with_the_next_generation():
    """One GPU, k trials, metric m <= generate g: metrics hide behind the next generation, so
    makespan = M/B + g + (k-1)(M/P + g) + m (no preprocessing)."""
    hw = EvalHardware(model_size_gb=10.0, gpus_per_node=1, storage_gbit_s=8.0, pcie_gbyte_s=10.0,
                      cpu_slots_per_node=1)
    k, g, m = 5, 40.0, 30.0
    d = simulate_decoupled(_batch(k, pre=0.0, gen=g, met=m), 1, hw, NO_PACK)
    assert d.makespan_s == pytest.approx(hw.load_alone_s + g + (k - 1) * (hw.pcie_s + g) + m)
    assert d.first_result_s == pytest.approx(hw.load_alone_s + g + m)


def test_split_and_merge_rules():
    b = EvalBatch([Dataset("big", 10, 1000, 100), Dataset("s1", 1, 10, 1), Dataset("s2", 1, 20, 1),
                   Dataset("s3", 1, 40, 1), Dataset("mid", 5, 200, 5)])
    trials = pack_trials(b, 4, PackingRules(merge_below_s=30.0, split_above_s=400.0, long_metric_s=1e9), HW)
    names = [t.name for t in trials]
    assert sum(n.startswith("big#") for n in names) == 3            # ceil(1000 / 400) shards
    assert "s1+s2" in names and "s3" in names                        # 10 + 20 >= 30 merged; 40 alone
    gens = [HW.pcie_s + t.generate_s for t in trials]
    assert gens == sorted(gens, reverse=True)                        # longest expected GPU time first
    total = sum(t.generate_s for t in trials)
    assert total == pytest.approx(sum(d.generate_s for d in b.datasets))
    # long metrics first
    trials = pack_trials(b, 4, PackingRules(merge_below_s=0.0, split_above_s=1e9, long_metric_s=50.0), HW)
    assert trials[0].name == "big"


phase = st.floats(0.0, 600.0, allow_nan=False)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(phase, st.floats(1.0, 3000.0), phase), min_size=1, max_size=40),
       st.integers(1, 3), st.sampled_from([(25.0, 20.0), (10.0, 2.0), (100.0, 50.0)]))
def test_decoupled_never_loses_to_coupled(rows, nodes, links):
    b = EvalBatch([Dataset(f"d{i}", p, g, m) for i, (p, g, m) in enumerate(rows)])
    hw = EvalHardware(storage_gbit_s=links[0], pcie_gbyte_s=links[1])
    c = simulate_coupled(b, nodes, hw)
    d = simulate_decoupled(b, nodes, hw)
    assert d.makespan_s <= c.makespan_s * (1 + 1e-9)
    assert set(d.results_s) == set(c.results_s) == {ds.name for ds in b.datasets}
    assert d.gpu_used_s == pytest.approx(c.gpu_used_s)
    assert 0.0 <= d.gpu_idle_share < 1.0


def test_default_batch_and_speedups():
    b = default_batch()
    assert len(b) == 63
    r = plan_batch(b, nodes=(1, 4))
    for n in (1, 4):
        assert r.speedup(n) > 1.0
    s = r.summary()
    assert set(s["policy"]) == {"coupled", "decoupled"} and len(s) == 4
    c1 = r.schedules[("coupled", 1)]
    assert 0.2 < c1.gpu_idle_share < 0.6            # the coupled GPU idles while loading and scoring
    he = next(d for d in b.datasets if d.name == "humaneval")
    assert he.metric_s == pytest.approx(42.0)       # the published HumanEval metric phase


def test_priors_from_trials_and_trace():
    trials = pd.DataFrame({"dataset": ["a", "a", "a", "b", "b"], "preprocess_s": [1, 2, 3, 5, 5],
                           "generate_s": [10, 20, 30, 50, 70], "metric_s": [1, 1, 1, 2, -1]})
    pr = DatasetPriors().fit(trials)
    assert pr.n_rejected_ == 1
    s = pr.summary().set_index("dataset")
    assert s.loc["a", "generate_s"] == 20 and s.loc["a", "trials"] == 3 and s.loc["b", "trials"] == 1
    assert len(pr.batch()) == 2
    jobs = pd.DataFrame({"type": ["Eval"] * 3 + ["SFT"], "job_name": ["x", "x", "y", "x"],
                         "run_s": [200.0, 220.0, 400.0, 9e9]})
    pr = DatasetPriors().fit_trace(jobs)
    s = pr.summary().set_index("dataset")
    for ds, t in (("x", 210.0), ("y", 400.0)):
        tot = s.loc[ds, ["preprocess_s", "generate_s", "metric_s"]].sum()
        assert tot <= t + 1e-6 and s.loc[ds, "metric_s"] == pytest.approx(0.19 * t)
    with pytest.raises(ConfigError, match="job_name"):
        DatasetPriors().fit_trace(jobs.drop(columns="job_name"))


@pytest.mark.parametrize("data, match", [
    ({"datasets": [{"name": "a", "preprocess": -1, "generate": 10, "metric": 1}]}, "dataset 'a': preprocess"),
    ({"datasets": [{"name": "a", "generate": 10, "metric": 1}]}, "dataset 'a': preprocess is missing"),
    ({"datasets": []}, "no datasets"),
    ({"model_size_gb": 200}, "does not fit in one GPU"),
    ({"model_size_gb": 70, "hardware": {"node_memory_gb": 64}}, "does not fit in a node"),
    ({"hardware": {"storage_gbit_s": 0}}, "storage_gbit_s"),
    ({"hardware": {"pcie_gbyte_s": 0}}, "pcie_gbyte_s"),
    ({"nodes": [0]}, "nodes"),
    ({"policy": "fast"}, "policy"),
    ({"packing": {"split_above": -3}}, "packing.split_above"),
    ({"hardware": {"nic": 3}}, "unknown key"),
])
def test_bad_config(data, match):
    with pytest.raises(ConfigError, match=match):
        EvalPlanConfig.from_dict(data)


def test_bad_priors_csv(tmp_path):
    p = tmp_path / "p.csv"
    p.write_text("dataset,preprocess_s,generate_s,metric_s\nok,1,2,3\nbad,1,x,3\n")
    with pytest.raises(ConfigError, match="dataset 'bad': generate_s"):
        EvalBatch.from_csv(p)
    p.write_text("dataset,preprocess_s,generate_s,metric_s\nzero,1,0,3\n")
    with pytest.raises(ConfigError, match="dataset 'zero': generate_s must be > 0"):
        EvalBatch.from_csv(p)


def test_cli_json_report_and_errors(tmp_path, capsys):
    from acmemodel.cli import main

    cfg = tmp_path / "ev.yaml"
    cfg.write_text("model_size_gb: 14\nnodes: [1, 2]\ndatasets:\n"
                   "  - {name: a, preprocess: 10s, generate: 5m, metric: 30s}\n"
                   "  - {name: b, preprocess: 5s, generate: 2m, metric: 20m}\n")
    rep = tmp_path / "r.html"
    with pytest.raises(SystemExit) as e:
        main(["evalplan", str(cfg), "--json", "--report", str(rep)])
    assert e.value.code in (0, None)
    doc = json.loads(capsys.readouterr().out)
    assert doc["datasets"] == 2 and len(doc["schedules"]) == 4
    assert all(math.isfinite(s["makespan_s"]) for s in doc["schedules"])
    assert "data:image/png;base64," in rep.read_text()
    cfg.write_text("datasets:\n  - {name: a, preprocess: -4, generate: 5m, metric: 30s}\n")
    with pytest.raises(SystemExit) as e:
        main(["evalplan", str(cfg)])
    assert e.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error:") and "'a'" in err[0]


def test_cli_default_fits_80_columns(capsys, monkeypatch):
    from acmemodel.cli import main
    from acmemodel.cli._common import console

    monkeypatch.setattr(console, "width", 80)
    with pytest.raises(SystemExit):
        main(["evalplan", "--nodes", "1,4"])
    out = capsys.readouterr().out
    assert "decoupled" in out and max(len(line) for line in out.splitlines()) <= 80
    # the stated cost parameters, their values and sources
    for name, shown in (("trial_startup_s", "8 s"), ("metric_threads", "16 (7/node)"), ("metric_queue_s", "88 s"),
                        ("precursor_efficiency", "100 % of link"), ("coupled_packing", "random"),
                        ("coupled_orders", "401")):
        line = next(ln for ln in out.splitlines() if ln.lstrip().startswith(name))
        assert shown in line, line
    assert "Kalos CPU-job mean queue" in out and "Table 1" in out
    with pytest.raises(SystemExit):
        main(["evalplan", "--nodes", "1", "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert doc["overheads"]["metric_queue_s"] == 88.4 and doc["overheads"]["coupled_orders"] == 401
    assert set(doc["overheads_sources"]) == set(doc["overheads"]) and doc["overheads_metric_slots_per_node"] == 7
    coupled = next(s for s in doc["schedules"] if s["policy"] == "coupled")
    assert coupled["packing"] == "random order (median of 401)"
    assert set(coupled["packing_candidates_makespan_s"]) >= {"orders p10", "orders median", "orders p90"}


def test_plan_reports_evaluation_feedback_delay():
    from importlib import resources

    import yaml

    from acmemodel.planner.config import ClusterConfig
    from acmemodel.planner.evalbatch.plan import feedback_from_plan

    example = yaml.safe_load(resources.files("acmemodel.planner").joinpath("examples", "example.yaml").read_text())
    cfg = ClusterConfig.from_dict(example)
    assert cfg.evaluation is not None and cfg.evaluation.policy == "decoupled" and cfg.evaluation.nodes == [1]
    from acmemodel.planner.evalbatch.plan import EvalOverheads

    makespan = simulate_decoupled(default_batch(), 1, overheads=EvalOverheads()).makespan_s
    rows = feedback_from_plan(cfg.evaluation, {"available": True, "queue_s": {"Eval": {"p50": 30.0, "p90": 600.0}}})
    assert rows[0]["makespan_s"] == pytest.approx(makespan)
    assert rows[0]["feedback_p50_s"] == pytest.approx(30.0 + makespan)
    assert rows[0]["feedback_p90_s"] == pytest.approx(600.0 + makespan)
    rows = feedback_from_plan(cfg.evaluation, {"available": False, "queue_s": {}})
    assert rows[0]["feedback_p90_s"] is None and rows[0]["wait_source"] == "not simulated"
    assert cfg.to_dict()["evaluation"] == {"datasets": 63, "nodes": [1], "policy": "decoupled"}
    example["evaluation"] = {"datasets": [{"name": "x", "preprocess": 1, "generate": -5, "metric": 1}]}
    with pytest.raises(ConfigError, match=r"^evaluation: dataset 'x': generate"):
        ClusterConfig.from_dict(example)


def test_overheads_are_stated_and_each_moves_the_schedule_its_way():
    """EvalOverheads (the costs the four phases leave out): their stated defaults, the metric pool they
    imply, and the direction each pushes the schedules."""
    import dataclasses

    from acmemodel.planner.evalbatch.plan import EvalOverheads, coupled_tasks

    ov = EvalOverheads()
    hw = EvalHardware()
    assert ov.metric_slots(hw) == (128 - 8) // 16 == 7        # Table 1 threads, one worker per GPU
    assert EvalOverheads.ideal().metric_slots(hw) == hw.cpu_slots_per_node
    b = default_batch()
    ideal = EvalOverheads.ideal()
    # the start-up is carved out of the set-up: a trial whose set-up is shorter than it gets longer, one
    # whose set-up is longer keeps its length in the coupled policy
    short = EvalBatch([Dataset(f"s{i}", 2.0, 50.0, 5.0) for i in range(8)])
    start = dataclasses.replace(ideal, trial_startup_s=20.0)
    assert simulate_coupled(short, 1, HW, start).makespan_s == pytest.approx(
        simulate_coupled(short, 1, HW, ideal).makespan_s + 18.0)
    longer = EvalBatch([Dataset(f"l{i}", 30.0, 50.0, 5.0) for i in range(8)])
    assert simulate_coupled(longer, 1, HW, start).makespan_s == pytest.approx(
        simulate_coupled(longer, 1, HW, ideal).makespan_s)
    # ... while the decoupled GPU holds the start-up that the CPU cannot take
    d0 = simulate_decoupled(longer, 1, HW, NO_PACK, ideal)
    d1 = simulate_decoupled(longer, 1, HW, NO_PACK, start)
    assert d1.gpu_held_s > d0.gpu_held_s
    slow = dataclasses.replace(ideal, precursor_efficiency=0.5)
    one = _batch(1)
    d0 = simulate_decoupled(one, 1, HW, NO_PACK, ideal)
    d1 = simulate_decoupled(one, 1, HW, NO_PACK, slow)
    assert d1.makespan_s == pytest.approx(d0.makespan_s + HW.load_alone_s)   # precursor at half the link
    # a metric pool of one slot serialises the metrics
    few = EvalBatch([Dataset(f"m{i}", 0.0, 50.0, 100.0) for i in range(3)])
    hw1 = EvalHardware(gpus_per_node=3, cpu_slots_per_node=1)
    assert simulate_decoupled(few, 1, hw1, NO_PACK, ideal).makespan_s == pytest.approx(
        hw1.load_alone_s + 50.0 + 3 * 100.0)
    # the toolkit's packing: small datasets merged, largest first; never slower than submission order here
    ov = dataclasses.replace(ov, coupled_packing="toolkit")
    tasks = coupled_tasks(b, ov, PackingRules())
    assert sorted(d.name for t in tasks for d in t) == sorted(d.name for d in b.datasets)
    gens = [sum(d.generate_s for d in t) for t in tasks]
    assert gens == sorted(gens, reverse=True)
    sub = dataclasses.replace(ov, coupled_packing="submission")
    assert simulate_coupled(b, 1, hw, ov).makespan_s < simulate_coupled(b, 1, hw, sub).makespan_s
    with pytest.raises(ConfigError, match="overheads.coupled_packing"):
        EvalPlanConfig.from_dict({"overheads": {"coupled_packing": "magic"}})
    cfg = EvalPlanConfig.from_dict({"overheads": {"trial_startup_s": "30s", "precursor_efficiency": 1.0,
                                                  "metric_queue_s": "2m"}})
    assert cfg.overheads.trial_startup_s == 30.0 and cfg.overheads.metric_queue_s == 120.0
    # the cluster's CPU queue delays every decoupled metric job by exactly its wait (pool not binding)
    q = dataclasses.replace(ideal, metric_queue_s=88.4)
    d0 = simulate_decoupled(_batch(8), 1, HW, NO_PACK, ideal)
    d1 = simulate_decoupled(_batch(8), 1, HW, NO_PACK, q)
    assert d1.makespan_s == pytest.approx(d0.makespan_s + 88.4) and d1.gpu_held_s == pytest.approx(d0.gpu_held_s)
    for bad in ({"metric_queue_s": -1}, {"coupled_orders": 2}, {"coupled_orders": 0}, {"coupled_orders": 1003}):
        with pytest.raises(ConfigError, match="overheads." + next(iter(bad))):
            EvalOverheads(**bad).validate()


def test_opencompass_size_partitioner_baseline():
    """coupled_packing="opencompass": OpenCompass's SizePartitioner (heuristic) at its defaults — 40,000 cost
    units of 20 per generated sample, i.e. HumanEval's 164 problems (3,280 units) per its profiled 113.8 s
    of generation: 1,387.8 s per task. Large datasets are split into equal parts below it, the parts packed
    largest first by next fit, and every part of every dataset runs exactly once."""
    import dataclasses

    from acmemodel.planner.evalbatch.inputs import EvalOverheads
    from acmemodel.planner.evalbatch.schedule import OPENCOMPASS_MAX_TASK_S, coupled_tasks

    assert OPENCOMPASS_MAX_TASK_S == pytest.approx(40000 / (164 * 20) * 113.8)
    ov = dataclasses.replace(EvalOverheads(), coupled_packing="opencompass")
    big = EvalBatch([Dataset("huge", 30.0, 3000.0, 60.0), Dataset("a", 10.0, 900.0, 9.0),
                     Dataset("b", 10.0, 400.0, 4.0), Dataset("c", 10.0, 300.0, 3.0)])
    tasks = coupled_tasks(big, ov)
    names = [[d.name for d in t] for t in tasks]
    # huge (3,000 s) -> 3 parts of 1,000 s; then next fit of 1000, 1000, 1000, 900, 400, 300 under 1,387.8 s
    assert names == [["huge#1/3"], ["huge#2/3"], ["huge#3/3"], ["a", "b"], ["c"]]
    assert all(sum(d.generate_s for d in t) <= OPENCOMPASS_MAX_TASK_S for t in tasks)
    shard = tasks[0][0]
    assert (shard.preprocess_s, shard.generate_s, shard.metric_s) == pytest.approx((10.0, 1000.0, 20.0))
    c = simulate_coupled(big, 4, HW, ov)
    assert set(c.results_s) == {"huge", "a", "b", "c"}          # results per dataset, shards joined
    d = simulate_decoupled(big, 4, HW, None, ov)
    assert d.makespan_s <= c.makespan_s + 1e-6                   # the coupled assignment is a candidate
    # the default batch: every part of every dataset once, generation conserved
    b = default_batch()
    parts = [d for t in coupled_tasks(b, ov) for d in t]
    assert sum(d.generate_s for d in parts) == pytest.approx(sum(d.generate_s for d in b.datasets))
    with pytest.raises(ConfigError, match="overheads.coupled_packing"):
        EvalOverheads(coupled_packing="size").validate()


def test_overheads_come_from_the_published_profile():
    """Each default overhead is the derivation its docstring states from published numbers: the Kalos
    evaluation-job duration floor (Fig. 6c), Table 1's threads per GPU, the HumanEval profile's load at
    the full link; and with them the coupled HumanEval trial is still the profile's 221.1 s."""
    from acmemodel.datasets.published import load_reference
    from acmemodel.planner.evalbatch.plan import EvalOverheads

    ov = EvalOverheads()
    cdf = load_reference("duration_cdf_by_type")
    kalos = cdf[(cdf["cluster"] == "Kalos") & (cdf["type"] == "Eval")].set_index("x_s")["cdf_percent"]
    assert kalos[8] < 0.05 and 1.0 < kalos[16] < 2.0                 # the floor of a complete eval job
    assert ov.trial_startup_s == 8.0
    assert ov.trial_startup_s <= min(d.preprocess_s for d in default_batch().datasets)   # carved, never added
    table1 = load_reference("clusters").set_index("cluster")
    for c in ("Seren", "Kalos"):
        assert table1.loc[c, "cpus_per_node"] / table1.loc[c, "gpus_per_node"] == ov.metric_threads
        assert table1.loc[c, "cpus_per_node"] == ov.cpu_threads_per_node
    assert ov.precursor_efficiency == 1.0
    # the cluster CPU queue of a metric job: Kalos's mean CPU-job wait; Kalos is the evaluation cluster
    summary = load_reference("cluster_summary").set_index("id")
    assert ov.metric_queue_s == pytest.approx(summary.loc["Kalos", "avg_que_time_cpu"], abs=0.05)
    mix = load_reference("workload_mix")
    share = mix[(mix["cluster"] == "Kalos") & (mix["type"] == "Eval")].iloc[0, 2]
    assert share > 90.0                                   # 92.8 % of Kalos GPU jobs are evaluation
    # the coupled baseline: one trial per dataset (the profile's HumanEval trial), order unknown to the scheduler
    assert ov.coupled_packing == "random" and ov.coupled_orders % 2 == 1
    # the profile: 8 HumanEval trials on a node, each 35.8 s load + 29.4 s set-up + 113.8 s + 42 s = 221.1 s
    he = next(d for d in default_batch().datasets if d.name == "humaneval")
    eight = EvalBatch([Dataset(f"he{i}", he.preprocess_s, he.generate_s, he.metric_s) for i in range(8)])
    c = simulate_coupled(eight, 1, EvalHardware(), dataclasses_replace(ov, coupled_packing="submission"))
    assert c.makespan_s == pytest.approx(221.1, abs=0.15)
    load_pre = 8 * EvalHardware().load_alone_s + he.preprocess_s
    assert load_pre / c.makespan_s == pytest.approx(0.295, abs=0.001)
    assert he.metric_s / c.makespan_s == pytest.approx(0.190, abs=0.001)


def dataclasses_replace(obj, **kw):
    import dataclasses

    return dataclasses.replace(obj, **kw)


def test_default_speedups_against_the_paper():
    """The default batch's decoupled speed-ups with the stated overheads vs the paper's 1.3x (1 node) and
    1.8x (4 nodes), within 10 % (1.17-1.43 and 1.62-1.98): the issue's bar. Why 10 % is the right width
    and not tighter: the paper gives each figure to two significant digits (1.3 is 1.25-1.35, i.e. +-4 %
    from rounding alone), the batch's per-dataset times are set from one profiled trial (every other
    dataset's times are assumed, PROVENANCE.md), and the coupled baseline's order is a sample (its median's
    sampling scatter is checked below). Measured, not tuned: 1.26x and 1.89x. Both decoupled makespans are
    the apps trial's critical path plus the cluster's CPU queue of its metric job."""
    b = default_batch()
    r = plan_batch(b, nodes=(1, 4))
    s1, s4 = r.speedup(1), r.speedup(4)
    assert abs(s1 / 1.3 - 1) <= 0.10 and abs(s4 / 1.8 - 1) <= 0.10
    assert s1 == pytest.approx(1.26, abs=0.005) and s4 == pytest.approx(1.89, abs=0.01)
    apps = next(d for d in b.datasets if d.name == "apps")
    ov = r.config.overheads
    path1 = ov.data_prep_s(apps.preprocess_s) + ov.trial_startup_s + EvalHardware().pcie_s + apps.generate_s \
        + ov.metric_queue_s + apps.metric_s
    assert r.schedules[("decoupled", 1)].makespan_s == pytest.approx(path1, rel=1e-6)
    assert r.schedules[("decoupled", 4)].makespan_s == pytest.approx(
        ov.data_prep_s(apps.preprocess_s / 2) + ov.trial_startup_s + EvalHardware().pcie_s
        + (apps.generate_s + apps.metric_s) / 2 + ov.metric_queue_s, rel=1e-6)
    # the coupled baseline is the median of the sampled orders, one real schedule among them
    c1 = r.schedules[("coupled", 1)]
    cand = c1.candidates
    assert c1.packing == "random order (median of 401)" and cand["orders median"] == c1.makespan_s
    assert cand["orders min"] <= cand["orders p10"] <= c1.makespan_s <= cand["orders p90"] <= cand["orders max"]
    # the median's sampling scatter (SD 0.016 / 0.013 at 401 orders, EvalOverheads docstring) is far inside
    # the band: the 3,000-order medians are 1.265x and 1.895x
    assert s1 == pytest.approx(1.265, abs=3 * 0.016) and s4 == pytest.approx(1.895, abs=3 * 0.013)
    import dataclasses

    # the orders are seeded (the same plan twice), and where the order cannot matter the median is the listing
    assert plan_batch(b, nodes=(1,)).schedules[("coupled", 1)].makespan_s == c1.makespan_s
    same = EvalBatch([Dataset(f"x{i}", 10.0, 100.0, 20.0) for i in range(20)])
    assert simulate_coupled(same, 1, EvalHardware(), ov).makespan_s == pytest.approx(simulate_coupled(
        same, 1, EvalHardware(), dataclasses.replace(ov, coupled_packing="submission")).makespan_s)
    # the batch's listing order is one order, near the 90th percentile of the sampled ones
    listing = simulate_coupled(b, 1, EvalHardware(), dataclasses.replace(ov, coupled_packing="submission"))
    assert cand["orders median"] < listing.makespan_s <= cand["orders max"]


@pytest.mark.parametrize("field,values,batch", [
    # each cost, raised, lowers the speed-up (non-increasing on the default batch; strictly where it binds)
    ("trial_startup_s", [0.0, 8.0, 16.0, 20.0], "short"),
    ("metric_queue_s", [0.0, 9.0, 88.4, 300.0], "short"),
    ("metric_threads", [0, 16, 32, 120], "metric"),
    ("precursor_efficiency", [1.0, 0.5, 0.25, 0.1], "short"),
])
def test_each_cost_moves_the_speedup_down(field, values, batch):
    import dataclasses

    from acmemodel.planner.evalbatch.inputs import EvalOverheads

    binds = {
        # many trials per GPU, the GPU the bottleneck (set-up 20 s < generation 60 s): the decoupled GPU holds
        # each start-up, the coupled trial keeps its measured length. (Where the decoupled CPU worker's data
        # preparation is the bottleneck instead, moving start-up from it to the GPU can shorten the batch.)
        "short": EvalBatch([Dataset(f"s{i}", 20.0, 60.0, 5.0) for i in range(48)]),
        # long metrics, eight per node at once: the pool's slots bind
        "metric": EvalBatch([Dataset(f"m{i}", 30.0, 60.0, 600.0) for i in range(16)]),
    }[batch]
    base = dataclasses.replace(EvalOverheads(), coupled_packing="submission")
    # the strict case without merging: a merged trial starts once, so a larger start-up carved out of each
    # dataset's measured set-up also makes merging save more (the speed-up can then rise with it)
    for b, strict, rules in ((binds, True, NO_PACK), (default_batch(), False, None)):
        if field == "trial_startup_s":    # within the carve-out: a start-up above a dataset's measured set-up
            values = [v for v in values if v <= min(d.preprocess_s for d in b.datasets)]   # lengthens both
        sp = [plan_batch(b, nodes=(1, 4), overheads=dataclasses.replace(base, **{field: v}), rules=rules)
              for v in values]
        for n in (1, 4):
            x = [r.speedup(n) for r in sp]
            assert all(later <= earlier + 1e-9 for earlier, later in zip(x, x[1:])), (field, n, x)
            if strict and n == 1:
                assert x[-1] < x[0] - 0.01, (field, x)
