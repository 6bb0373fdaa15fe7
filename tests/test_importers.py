"""Importers (slurm, swf, helios, philly, pai2020, k8s) on fixtures written from each format's
documentation, censoring of unfinished jobs in the trace layer and the models, ``convert`` round
trips, and the source-feature predictor on a trace whose job names carry the signal."""
from __future__ import annotations

import math
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from acmemodel.errors import DataWarning, TraceFormatError
from acmemodel.trace.importers import TypeMap
from acmemodel.trace import load_trace

D = Path(__file__).parent / "data" / "importers"
SLURM_RULES = ["name:^eval=Eval", "name:pretrain=Pretrain", "name:^sft=SFT", "name:mllm=MLLM",
               "partition:debug=Debug"]


def load(path, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)
        return load_trace(path, **kw)


def by_id(t):
    return t.jobs.set_index("job_id")


def balanced(t):
    """records in = accepted + rejected (after the importer's folds/expansions)."""
    rep = t.imports[0]
    info = t.files[0]
    assert info.rows == info.accepted + info.rejected == len(t.jobs) + len(t.rejected)
    return rep


# ------------------------------------------------------------------------------------------ slurm
@pytest.fixture(scope="module")
def slurm():
    return load(D / "sacct_parsable2.txt", format="slurm", timezone="+08:00", type_map=SLURM_RULES)


def test_slurm_steps_fold_and_counts_balance(slurm):
    j = by_id(slurm)
    assert not any("." in i for i in j.index)  # 123.batch, .extern, .0 folded
    rep = balanced(slurm)
    # 28 data lines: 8 step lines folded, 1 het component folded, 2 array tasks added by expansion
    assert rep["records_in"] == 28
    assert rep["folded"] == 8 and rep["expanded_array_tasks"] == 2
    assert rep["records_in"] == rep["accepted_rows"] - rep["expanded_array_tasks"] + rep["folded"] + sum(
        rep["rejected"].values())
    assert slurm.rejected_by_reason() == {"orphan_step": 1, "unparsable_timestamp": 1, "wrong_field_count": 1}


def test_slurm_states_and_resources(slurm):
    j = by_id(slurm)
    assert j.loc["1002", "state"] == "CANCELLED"  # "CANCELLED by 1234"
    assert j.loc["1002", "gpu_num"] == 32  # gres/gpu:a100=32
    assert j.loc["1002", "mem_per_pod_GB"] == 256  # mem=1T over 4 nodes
    assert j.loc["1001", "gpu_num"] == 8 and j.loc["1001", "cpu_num"] == 16
    assert j.loc["1003", "mem_per_pod_GB"] == pytest.approx(64000 / 1024)
    for jid, st, an in (("1003", "OUT_OF_MEMORY", "FAILED"), ("1004", "BOOT_FAIL", "FAILED"),
                        ("1005", "DEADLINE", "FAILED"), ("1006", "NODE_FAIL", "FAILED"),
                        ("1007", "PREEMPTED", "CANCELLED"), ("1008", "REQUEUED", "CANCELLED"),
                        ("1015", "TIMEOUT", "FAILED"), ("1009", "SUSPENDED", "RUNNING"),
                        ("1010", "RUNNING", "RUNNING"), ("1011", "PENDING", "PENDING")):
        assert (j.loc[jid, "state"], j.loc[jid, "analysis_state"]) == (st, an), jid
    assert j.loc["1015", "gpu_num"] == 0  # no GPU in the TRES: a CPU job
    assert j.loc["1011", "gpu_num"] == 1  # pending: from ReqTRES


def test_slurm_timezone_arrays_het_and_types(slurm):
    j = by_id(slurm)
    # naive local +08:00 → UTC
    assert j.loc["1001", "submit_time"] == pd.Timestamp("2024-03-01T02:00:00Z")
    assert slurm.timezones[j.loc["1001", "cluster"]] == "+08:00"
    assert {"1012_4", "1012_5", "1012_6", "1012_7"} <= set(j.index)
    assert (j.loc[["1012_5", "1012_6", "1012_7"], "state"] == "PENDING").all()
    assert j.loc["1013", "gpu_num"] == 8 and j.loc["1013", "cpu_num"] == 12  # het 1013+0 + 1013+1
    assert j.loc["1001", "type"] == "Eval" and j.loc["1002", "type"] == "Pretrain"
    assert j.loc["1004", "type"] == "Debug"
    assert j.loc["1015", "type"] == "cpu"  # no rule: the partition, kept
    ex = slurm.extras.set_index(slurm.jobs["job_id"])
    assert ex.loc["1001", "job_name"] == "eval_mmlu_7b" and ex.loc["1012_5", "array_job_id"] == "1012"


def test_slurm_unknown_timestamps_censored(slurm):
    j = by_id(slurm)
    t_x = slurm.extracted_at_s
    assert t_x == pytest.approx(pd.Timestamp("2024-03-01T18:30:10+08:00").value / 1e9)
    r = j.loc["1010"]
    assert bool(r["run_censored"]) and r["run_s"] == pytest.approx(t_x - r["start_s"])
    p = j.loc["1011"]
    assert not p["started"] and bool(p["queue_censored"]) and p["queue_s"] == pytest.approx(t_x - p["submit_s"])
    assert not j.loc["1001", "run_censored"]


def test_slurm_extracted_at_and_duplicates(tmp_path):
    f = tmp_path / "s.txt"
    f.write_text("JobID|User|Partition|JobName|State|Submit|Start|End|AllocTRES\n"
                 "7|u|p|n|REQUEUED|2024-01-01T00:00:00|2024-01-01T00:01:00|2024-01-01T00:05:00|gres/gpu=2\n"
                 "7|u|p|n|RUNNING|2024-01-01T00:06:00|2024-01-01T00:07:00|Unknown|gres/gpu=2\n"
                 "8|u|p|n|PENDING|2024-01-01T02:00:00|Unknown|Unknown|\n")
    t = load(f, format="slurm", timezone="+00:00", extracted_at="2024-01-01T01:07:00Z")
    j = by_id(t)
    assert list(j.index) == ["7@1", "7"]
    assert t.extras.set_index(t.jobs.job_id).loc["7", "restart_of"] == "7@1"
    assert j.loc["7", "run_s"] == 3600 and j.loc["7", "run_censored"]
    assert t.rejected_by_reason() == {"after_extraction": 1}  # 8 submitted after the extraction
    with pytest.raises(ValueError, match="extracted_at"):
        load(f, format="slurm", extracted_at="not a time")


def test_slurm_bad_file(tmp_path):
    f = tmp_path / "x.txt"
    f.write_text("a,b,c\n1,2,3\n")
    with pytest.raises(TraceFormatError, match="parsable2"):
        load(f, format="slurm")
    f.write_text("JobID|User\n1|u\n")
    with pytest.raises(TraceFormatError, match="State, Submit"):
        load(f, format="slurm")


# -------------------------------------------------------------------------------------------- swf
def test_swf():
    t = load(D / "sample.swf", format="swf")
    j = by_id(t)
    balanced(t)
    assert t.timezones["sample"] == "Asia/Shanghai"  # TimeZoneString, kept by name (zoneinfo rules)
    assert j.loc["1", "submit_s"] == 1709251200 and j.loc["1", "run_s"] == 600 and j.loc["1", "queue_s"] == 10
    assert j.loc["1", "type"] == "Eval" and j.loc["2", "type"] == "Pretrain"  # header's queue legend
    assert (j.loc["2", "state"], j.loc["5", "state"], j.loc["7", "state"], j.loc["8", "state"]) == (
        "FAILED", "CANCELLED", "REQUEUED", "COMPLETED")
    assert j.loc["6", "state"] == "COMPLETED"  # status -1, warned
    assert any("status [-1]" in w for w in t.warnings)
    assert not j.loc["5", "started"] and j.loc["5", "queue_s"] == 50  # never ran (-1 processors)
    ex = t.extras.set_index(t.jobs.job_id)
    assert ex.loc["3", "restart_of"] == "2" and ex.loc["8", "restart_of"] == "7"  # preceding-job links
    assert t.rejected_by_reason() == {"bad_record": 1, "bad_run_time": 1, "missing_timestamp": 2}


def test_swf_round_trip_of_the_exporter(sample_trace, tmp_path):
    from acmemodel.export.swf import write_swf

    write_swf(sample_trace, tmp_path)
    f = sorted(tmp_path.glob("*.swf"))[0]
    t = load(f, format="swf")
    cl = f.stem
    src = sample_trace.jobs[(sample_trace.jobs.cluster.str.lower() == cl.lower()) & sample_trace.jobs.is_gpu]
    assert len(t.jobs) == len(src) and len(t.rejected) == 0
    assert set(t.jobs.type) <= set(src.type)
    np.testing.assert_allclose(np.sort(t.jobs.run_s.dropna()), np.sort(src.run_s.dropna().round()), atol=1)


# ------------------------------------------------------------------------------- helios / philly
def test_helios():
    t = load(D / "cluster_log.csv", format="helios")
    j = by_id(t)
    balanced(t)
    assert j.loc["h1", "submit_time"] == pd.Timestamp("2020-03-31T16:00:00Z")  # +08:00 default
    assert j.loc["h2", "run_s"] == 7200 and j.loc["h1", "type"] == "vcA"
    assert not j.loc["h4", "started"] and j.loc["h4", "queue_censored"]
    assert j.loc["h8", "run_censored"]
    assert t.rejected_by_reason() == {"invalid_gpu_num": 1, "unparsable_timestamp": 1}


def test_philly_attempts_restart_chain():
    t = load(D / "cluster_job_log", format="philly", timezone="-07:00", type_map=["vc:^ee=Pretrain"])
    j = by_id(t)
    balanced(t)
    ids = ["application_1_0002@1", "application_1_0002@2", "application_1_0002@3"]
    assert list(j.loc[ids, "state"]) == ["FAILED", "FAILED", "FAILED"]
    assert (j.loc[ids, "gpu_num"] == 16).all() and (j.loc[ids, "node_num"] == 2).all()
    # attempt 2 is submitted when attempt 1 ends; its wait is the gap until it starts
    assert j.loc[ids[1], "queue_s"] == 30 and j.loc[ids[2], "queue_s"] == 300
    ex = t.extras.set_index(t.jobs.job_id)
    assert ex.loc[ids[2], "restart_of"] == ids[1]
    assert j.loc["application_1_0001", "state"] == "COMPLETED" and j.loc["application_1_0001", "gpu_num"] == 2
    assert j.loc["application_1_0001", "type"] == "Pretrain"
    assert j.loc["application_1_0005", "run_censored"]
    assert j.loc["application_1_0001", "submit_time"] == pd.Timestamp("2017-10-03T09:41:03Z")
    assert t.rejected_by_reason() == {"bad_record": 1, "missing_timestamp": 1, "never_scheduled": 1,
                                      "unparsable_timestamp": 1}


# ------------------------------------------------------------------------------------- pai / k8s
def test_pai2020_fractional_gpus():
    t = load(D / "pai_job_table.csv", format="pai2020")
    j = by_id(t)
    balanced(t)
    ex = t.extras.set_index(t.jobs.job_id)
    assert j.loc["j2", "gpu_num"] == 1 and ex.loc["j2", "gpu_fraction"] == "0.25"  # plan_gpu 25
    assert j.loc["j1", "gpu_num"] == 1 and j.loc["j1", "cpu_num"] == 16  # 2×600% + 400%
    assert j.loc["j3", "gpu_num"] == 4 and j.loc["j3", "run_censored"]
    assert j.loc["j4", "state"] == "PENDING" and j.loc["j4", "queue_censored"]
    assert j.loc["j1", "queue_s"] == 5  # earliest task start − job creation
    assert t.rejected_by_reason() == {"no_tasks": 1, "unparsable_timestamp": 1, "wrong_field_count": 1}
    with pytest.raises(TraceFormatError, match="give pai_job_table"):
        load(D / "pai_task_table.csv", format="pai2020")


def test_k8s_openb():
    t = load(D / "openb_pod_list_default.csv", format="k8s", type_map="qos:^LS$=Pretrain,qos:BE=Eval")
    j = by_id(t)
    balanced(t)
    assert j.loc["openb-pod-0000", "state"] == "COMPLETED" and j.loc["openb-pod-0002", "state"] == "FAILED"
    r = j.loc["openb-pod-0001"]
    assert r["run_censored"] and r["run_s"] == 12902960 - 427  # censored at its deletion time
    p = j.loc["openb-pod-0003"]
    assert not p["started"] and p["queue_censored"]
    assert j.loc["openb-pod-0001", "cpu_num"] == 6 and j.loc["openb-pod-0000", "mem_per_pod_GB"] == 16
    ex = t.extras.set_index(t.jobs.job_id)
    assert ex.loc["openb-pod-0001", "gpu_fraction"] == "0.46"
    assert j.loc["openb-pod-0000", "type"] == "Pretrain" and j.loc["openb-pod-0002", "type"] == "Eval"
    assert j.loc["openb-pod-0004", "type"] == "Burstable"
    assert t.rejected_by_reason() == {"unknown_phase": 1, "unparsable_timestamp": 1}


def test_type_map_parsing():
    m = TypeMap.parse(["name:^eval,test=Eval", "debug=Debug"])
    assert [r.text() for r in m.rules] == ["name:^eval,test=Eval", "debug=Debug"]
    assert TypeMap.parse("a=eval").rules[0].type == "Eval"  # canonical spelling
    with pytest.raises(ValueError, match="REGEX=TYPE"):
        TypeMap.parse(["nonsense"])
    with pytest.raises(ValueError, match="bad regex"):
        TypeMap.parse(["name:([=Eval"])


# ---------------------------------------------------------------------------- AcmeTrace + censoring
def test_acmetrace_file_with_running_rows_loads(tmp_path):
    from conftest import KALOS_HEADER

    f = tmp_path / "trace_kalos.csv"
    f.write_text(KALOS_HEADER + "\n"
                 "1,u1,1,8,64,100,,Pretrain,COMPLETED,2023-05-01 00:00:00+00:00,2023-05-01 00:01:00+00:00,"
                 "2023-05-01 02:01:00+00:00,,,,,\n"
                 "2,u1,1,8,64,100,,Pretrain,RUNNING,2023-05-01 00:00:00+00:00,2023-05-01 00:02:00+00:00,,,,,,\n"
                 "3,u2,1,1,8,10,,Eval,PENDING,2023-05-01 01:00:00+00:00,,,,,,,\n")
    t = load(f)
    assert len(t.jobs) == 3 and len(t.rejected) == 0
    j = by_id(t)
    assert j.loc["2", "run_censored"] and j.loc["2", "run_s"] == 7140  # until the latest timestamp, 02:01
    assert j.loc["3", "queue_censored"] and j.loc["3", "queue_s"] == 3660
    from acmemodel.describe import describe

    doc = describe(t)
    assert doc["clusters"]["Kalos"]["unfinished"] == {"running": 1, "pending": 1}
    assert doc["clusters"]["Kalos"]["median_run_s"] == 7200  # finished jobs only


def _with_running(n=600, seed=1):
    from acmemodel.evaluation.synthetic import synthetic_jobs

    jobs = synthetic_jobs(n, seed=seed)
    t_x = float(jobs.submit_s.max())
    run = jobs.index[jobs.started & (jobs.gpu_num > 0)][-40:]
    jobs.loc[run, "state"] = "RUNNING"
    jobs.loc[run, "analysis_state"] = "RUNNING"
    jobs.loc[run, "end_s"] = np.maximum(t_x, jobs.loc[run, "start_s"])
    jobs.loc[run, "run_s"] = jobs.loc[run, "end_s"] - jobs.loc[run, "start_s"]
    jobs["run_censored"] = jobs.index.isin(run)
    return jobs, run


def test_running_job_enters_the_survival_fit_as_censored():
    from acmemodel.models.failure import survival_frame

    jobs, run = _with_running()
    jobs.loc[run[:5], "analysis_state"] = "RUNNING"
    sf = survival_frame(jobs)
    assert set(run) <= set(sf.index)  # never dropped
    assert not sf.loc[run, "E"].any()  # never an event
    assert (sf.loc[run, "cause"] == "censored").all()
    np.testing.assert_allclose(sf.loc[run, "T"], np.maximum(jobs.loc[run, "run_s"], 1.0))
    # a RUNNING job whose end is unknown but which later would fail is still not an event
    jobs2 = jobs.copy()
    jobs2.loc[run, "analysis_state"] = "FAILED"
    assert not survival_frame(jobs2).loc[run, "E"].any()


def test_running_jobs_in_runtime_and_queue_models():
    from acmemodel.models.runtime import RuntimeModel

    jobs, run = _with_running(1500)
    m = RuntimeModel(min_jobs=50).fit(jobs)
    frame = m._observations(jobs)
    assert frame.loc[run, "censored"].all() and frame["censored"].sum() == len(run)
    assert not any(e.cell.state == "RUNNING" for e in m.cells_.entries_.values())
    assert "RUNNING" not in m.state_probabilities()
    # every running job is a censored observation of the state-free root cell (none in the others)
    root = m.cells_.entries_[type(next(iter(m.cells_.entries_)))()].value
    assert root.n_censored + root.n_censored_ignored == len(run)


# ------------------------------------------------------------------------------------------ convert
@pytest.mark.parametrize("fmt,src,kw", [
    ("slurm", "sacct_parsable2.txt", ["--timezone", "+08:00", "--type-map", "name:^eval=Eval"]),
    ("swf", "sample.swf", []),
    ("helios", "cluster_log.csv", []),
    ("philly", "cluster_job_log", []),
    ("pai2020", "pai_job_table.csv", []),
    ("k8s", "openb_pod_list_default.csv", []),
])
def test_convert_round_trip(tmp_path, fmt, src, kw):
    from typer.testing import CliRunner

    from acmemodel.cli import app

    out = tmp_path / "mine.csv"
    r = CliRunner().invoke(app, ["convert", "--from", fmt, str(D / src), "-o", str(out), "--json", *kw])
    assert r.exit_code == 0, r.output
    direct = load(D / src, format=fmt, **({"timezone": "+08:00", "type_map": "name:^eval=Eval"}
                                          if fmt == "slurm" else {}))
    back = load(out, cluster="mine")
    assert len(back.rejected) == 0 and len(back.jobs) == len(direct.jobs)
    a, b = by_id(direct), by_id(back)
    for c in ("state", "type", "gpu_num", "started", "run_censored", "queue_censored"):
        assert list(a[c]) == list(b.loc[a.index, c]), c
    for c in ("run_s", "queue_s", "submit_s"):
        np.testing.assert_allclose(a[c].to_numpy(float), b.loc[a.index, c].to_numpy(float), atol=1.0)
    if "job_name" in direct.extras:
        assert list(back.extras["job_name"].fillna("")) == list(direct.extras["job_name"].fillna(""))


def test_convert_parquet_and_errors(tmp_path):
    from typer.testing import CliRunner

    from acmemodel.cli import app

    out = tmp_path / "x.parquet"
    r = CliRunner().invoke(app, ["convert", "--from", "swf", str(D / "sample.swf"), "-o", str(out)])
    assert r.exit_code == 0, r.output
    assert len(load(out, cluster="x").jobs) == 7
    r = CliRunner().invoke(app, ["convert", "--from", "swf", str(D / "sample.swf"), "-o", str(tmp_path / "x.txt")])
    assert r.exit_code != 0


# ------------------------------------------------------------------------------------- predictor
def named_jobs(n=4000, seed=7):
    """Jobs whose run time is set by their name template (12 templates, σ = 0.35 in log run time);
    types, users and GPU counts are drawn independently of it, so only the names carry the signal."""
    from acmemodel.evaluation.synthetic import synthetic_jobs

    rng = np.random.default_rng(seed)
    jobs = synthetic_jobs(n, seed=seed, cpu_fraction=0.0, queue_cancel_fraction=0.0, zero_run_fraction=0.0)
    k = rng.integers(0, 12, n)
    mu = np.log(60.0) + np.linspace(0, 7, 12)[rng.permutation(12)]  # 1 min .. ~18 h
    run = np.round(np.exp(mu[k] + 0.35 * rng.standard_normal(n)))
    words = ["eval", "sft", "pretrain", "debug", "mllm", "bench"]
    jobs["job_name"] = [f"{words[i % 6]}_{'abcdefghijkl'[i]}_run{rng.integers(1, 999)}" for i in k]
    jobs["run_s"] = run
    jobs["end_s"] = jobs["start_s"] + run
    jobs["end_time"] = pd.to_datetime(jobs["end_s"], unit="s", utc=True)
    jobs["gpu_time_s"] = jobs["gpu_num"] * run
    return jobs


def test_predictor_beats_the_best_baseline_when_names_carry_signal():
    from acmemodel.evaluation.backtest import runtime_backtest

    res = runtime_backtest(named_jobs(), include_queue=False, crps_draws=50,
                           predictor_params={"n_estimators": 80, "learning_rate": 0.1})
    v = res.info["predictor_vs_best_baseline"]
    assert {"name_token", "name_prior_median_run_s"} <= set(res.info["predictor_features"])
    assert v["beats"] and v["significant"] and v["text"].startswith("predictor beats")
    # by a margin well beyond noise: test jobs ~ n/6, per-job |error| sd ≤ ~1.5 log-s
    n_test = res.info["n_test"]
    assert v["baseline_value"] - v["predictor"] > 5 * 1.5 / math.sqrt(n_test)


def test_verdict_says_when_a_baseline_wins():
    from acmemodel.evaluation.backtest import predictor_verdict

    r = pd.DataFrame({"model": ["predictor", "user_median", "global"], "metric": "mae_log", "cell": "all",
                      "value": [1.467, 1.425, 1.6], "n": 100})
    v = predictor_verdict(r)
    assert not v["beats"] and v["best_baseline"] == "user_median"
    assert "does NOT beat" in v["text"] and "1.467 vs 1.425" in v["text"]


def test_explicit_restart_links_become_chains():
    from acmemodel.features import build_features

    t = load(D / "cluster_job_log", format="philly", timezone="-07:00")
    f = build_features(t).set_index("job_id")
    ids = ["application_1_0002@1", "application_1_0002@2", "application_1_0002@3"]
    assert list(f.loc[ids, "attempt"]) == [1, 2, 3]
    assert f.loc[ids, "chain_id"].nunique() == 1
    assert f.loc[ids[1], "restart_gap_s"] == 0  # resubmitted when attempt 1 ended
    s = build_features(load(D / "sample.swf", format="swf")).set_index("job_id")
    assert s.loc["3", "attempt"] == 2 and s.loc["2", "chain_id"] == s.loc["3", "chain_id"]


def test_pending_jobs_are_censored_waits_of_the_queue_model(slurm):
    from acmemodel.models.queue import QueueModel

    obs = QueueModel()._observations(slurm.jobs)
    pend = slurm.jobs.index[slurm.jobs.state == "PENDING"]
    assert len(pend) == 4 and set(pend) <= set(obs.index)
    assert obs.loc[pend, "censored"].all()
    assert not obs.drop(index=pend).loc[lambda f: f.index.isin(slurm.jobs.index[slurm.jobs.started]), "censored"].any()


def test_slurm_parsable_trailing_pipe_and_jobidraw_only(tmp_path):
    f = tmp_path / "p.txt"
    f.write_text("JobIDRaw|User|State|Submit|Start|End|ReqTRES|\n"
                 "11|u|COMPLETED|2024-01-01T00:00:00|2024-01-01T00:00:05|2024-01-01T00:10:05|cpu=4,gres/gpu:h100=2,gres/gpu:a100=1|\n"
                 "11.batch||COMPLETED|2024-01-01T00:00:05|2024-01-01T00:00:05|2024-01-01T00:10:05||\n"
                 "\n"
                 "12|u|CANCELLED by 0|2024-01-01 01:00:00|None|2024-01-01 01:05:00||\n")
    t = load(f, format="slurm", timezone="UTC")
    j = by_id(t)
    assert list(j.index) == ["11", "12"] and len(t.rejected) == 0
    assert j.loc["11", "gpu_num"] == 3 and j.loc["11", "cpu_num"] == 4  # typed GPUs summed; TRES cpu
    assert j.loc["12", "state"] == "CANCELLED" and not j.loc["12", "started"]  # space-separated times
    assert j.loc["12", "queue_s"] == 300 and j.loc["12", "queue_censored"]
    assert j.loc["11", "type"] == "Other"  # no partition/QOS: Other


def test_running_jobs_in_the_failure_model_fit():
    from acmemodel.models.failure import FailureModel

    jobs, run = _with_running(800, seed=2)
    failed_fin = int(((jobs.analysis_state == "FAILED") & jobs.started & (jobs.gpu_num > 0)
                      & ~jobs.run_censored).sum())
    m = FailureModel(regimes=1, curves=True).fit(jobs)
    assert m.n_events_ == failed_fin  # no running job counted as a failure
    started_gpu = int((jobs.started & (jobs.gpu_num > 0) & jobs.run_s.notna()).sum())
    assert m.n_fit_ == started_gpu  # none dropped
    assert m.km_["all"]["n"] == started_gpu if "all" in m.km_ else True


def test_one_format_registry_the_cli_choices_come_from_without_pandas():
    """The importers are registered by name in acmemodel.formats; load_trace's formats and the CLI's
    ``convert --from`` choices are that registry, and building the CLI imports no importer (no pandas)."""
    import importlib
    import pkgutil
    import subprocess
    import sys

    import acmemodel.trace.importers as imp
    from acmemodel.formats import CONVERT_FORMATS, FAILURE_LOG, TRACE_IMPORTERS

    modules = {m.name for m in pkgutil.iter_modules(imp.__path__) if not m.name.startswith("_")}
    assert modules - {FAILURE_LOG, "slurm_fields"} == set(TRACE_IMPORTERS)  # every importer is registered
    assert all(callable(importlib.import_module(m).read) for m in TRACE_IMPORTERS.values())
    assert imp.FORMATS == tuple(TRACE_IMPORTERS)
    code = ("import sys, acmemodel.cli.convert as c; print([f.value for f in c.From]); "
            "print(sorted(m for m in ('pandas', 'pyarrow', 'acmemodel.trace') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split("\n")
    assert out[0] == str(list(CONVERT_FORMATS)) and out[1] == "[]"
