"""Exports checked against what the peer simulators' own code does with them.

Each test replicates the part of the peer's reader or model that decides whether our file is
accepted and what it means (stated per test); the peers' code is not vendored here.
"""
from __future__ import annotations

import json
import math
import re

import numpy as np
import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

from acmemodel.cli import app
from acmemodel.export import write
from tests.test_export import make_jobs


# ============================================================================ AIReSim
def airesim_job_mttf_min(cfg: dict) -> float:
    """Job-level mean time to failure (minutes) AIReSim simulates for ``cfg``.

    Replicates airesim/coordinator.py: with ``failure_distribution: exponential`` the job fails at
    rate ``job_size · random_failure_rate``; otherwise every active server draws a time to failure
    whose mean is ``1 / random_failure_rate`` (Weibull scale ``mean / Γ(1 + 1/k)``) and the job fails at
    the minimum, a Weibull(k) with scale multiplied by ``job_size^(−1/k)``.
    """
    n, r = cfg["job_size"], cfg["random_failure_rate"]
    if cfg.get("failure_distribution", "exponential") == "exponential":
        return 1.0 / (n * r)
    return (1.0 / r) * n ** (-1.0 / cfg["weibull_shape"])


def airesim_downtime_min(cfg: dict) -> float:
    """Minutes one failure costs in AIReSim (airesim/simulator.py main loop): ``recovery_time``, plus
    ``host_selection_time`` when the warm standbys are used up (its defaults: 20 and 3 min)."""
    return cfg.get("recovery_time", 20.0) + cfg.get("host_selection_time", 3.0) * 0.0


@pytest.fixture(scope="module")
def planner():
    from acmemodel.planner.planner import Planner

    return Planner()  # the default bundle, job_type Pretrain


@pytest.mark.parametrize("gpus", [64, 1024])
def test_airesim_reproduces_the_planners_mttf_and_restart(tmp_path, planner, gpus):
    b = planner.bundle
    res = write(None, "airesim", tmp_path, failure=b["failure"], restart=b["restart"], gpus=gpus)
    cfg = yaml.safe_load((tmp_path / "config.yaml").read_text())
    fail = planner.failure_process(gpus)
    assert cfg["job_size"] == gpus // 8
    assert cfg["weibull_shape"] == pytest.approx(float(fail.shape), rel=1e-5)
    # AIReSim's implied job MTTF equals the bundle's MTTF(g) that the planner uses
    assert airesim_job_mttf_min(cfg) == pytest.approx(float(fail.mttf) / 60.0, rel=1e-5)
    # every failure costs the planner's mean restart time (re-scheduling is inside it)
    assert cfg["host_selection_time"] == 0.0
    model = b["restart"].restart_distribution(gpus=gpus, type="Pretrain", component="total")
    assert cfg["recovery_time"] == pytest.approx(model.mean() / 60.0, abs=1e-3)
    # the planner's failure-table mix of the same published prior (it keeps published zero medians
    # that the restart model floors, a difference of about a second)
    mean_restart = planner.failure_mix(gpus).restart_distribution().mean
    assert cfg["recovery_time"] == pytest.approx(mean_restart / 60.0, rel=1e-3)
    assert airesim_downtime_min(cfg) == cfg["recovery_time"]
    assert res["provenance"]["recovery_median_s"] < res["provenance"]["recovery_s"]


def test_airesim_sampling_matches_implied_mttf(tmp_path, planner):
    """Monte Carlo of AIReSim's per-server Weibull draws (coordinator._sample_ttf, then the minimum)."""
    b = planner.bundle
    write(None, "airesim", tmp_path, failure=b["failure"], restart=b["restart"], gpus=1024)
    cfg = yaml.safe_load((tmp_path / "config.yaml").read_text())
    k, n, reps = cfg["weibull_shape"], cfg["job_size"], 4000
    alpha = (1.0 / cfg["random_failure_rate"]) / math.gamma(1.0 + 1.0 / k)
    ttf = (alpha * np.random.default_rng(3).weibull(k, size=(reps, n))).min(axis=1)
    se = ttf.std(ddof=1) / math.sqrt(reps)
    assert abs(ttf.mean() - float(planner.failure_process(1024).mttf) / 60.0) < 5 * se


def test_cli_airesim_defaults_to_the_default_bundle_and_a_real_job(tmp_path, planner):
    out = tmp_path / "a"
    r = CliRunner().invoke(app, ["export", "--format", "airesim", "-o", str(out)])
    assert r.exit_code == 0, r.output
    cfg = yaml.safe_load((out / "config.yaml").read_text())
    g = int(planner.bundle["failure"].max_gpus_)
    assert cfg["job_size"] == g // 8 > 1  # not one 8-GPU server
    assert airesim_job_mttf_min(cfg) == pytest.approx(float(planner.failure_process(g).mttf) / 60, rel=1e-5)
    assert cfg["recovery_time"] == pytest.approx(planner.failure_mix(g).restart_distribution().mean / 60,
                                                 rel=1e-3)
    usage = "python -m airesim.run --params config.yaml --adaptive"
    assert usage in (out / "config.yaml").read_text() and usage in (out / "README.md").read_text()
    assert usage in r.output


# ============================================================================ Helios / Lucid

HELIOS_START = "2020-04-01 00:00:00"
SEPT = ("2020-09-01 00:00:00", "2020-09-26 23:59:00")


def helios_trace_process(d, date_range, *, sort_first: bool):
    """The job selection of Helios QSSF ``utils.trace_process`` (``sort_first=False``: it keeps the
    file order) and Lucid ``utils.trace_process`` (``sort_first=True``): GPU jobs of the VCs in the VC
    table, submitted at or after 2020-04-01, submit times measured from the first kept row, then the
    window ``[date_range[0] − 2020-04-01, date_range[1] − 2020-04-01]`` in seconds."""
    df = pd.read_csv(d / "cluster_log.csv", parse_dates=["submit_time"],
                     usecols=["job_id", "user", "vc", "jobname", "gpu_num", "cpu_num", "state", "submit_time",
                              "duration"])
    df = df[df["gpu_num"] > 0]
    vcs = pd.read_csv(d / "vc_config.csv", index_col=0).index.to_list()  # Lucid; Helios' pickle = same dict
    df = df[df["vc"].isin(vcs)]
    if sort_first:
        df = df.sort_values(by="submit_time")
    df = df[df["submit_time"] >= pd.Timestamp(HELIOS_START)].copy()
    df["submit_time"] = df["submit_time"].apply(lambda x: int(pd.Timestamp(x).timestamp()))
    df["submit_time"] = df["submit_time"] - df.iloc[0]["submit_time"]
    begin = (pd.Timestamp(date_range[0]) - pd.Timestamp(HELIOS_START)).total_seconds()
    end = (pd.Timestamp(date_range[1]) - pd.Timestamp(HELIOS_START)).total_seconds()
    return df[(df["submit_time"] >= begin) & (df["submit_time"] <= end)]


@pytest.fixture(scope="module")
def month():
    """30 days of contract-shaped jobs, some of them of 0 s."""
    j = make_jobs(600, seed=4, days=30.0)
    zero = j.index[j["started"]][:25]
    j.loc[zero, "end_s"] = j.loc[zero, "start_s"]
    return j


def test_helios_rebase_to_window_selects_the_trace(tmp_path, month):
    gpu = int((month["gpu_num"] > 0).sum())
    write(month, "helios", tmp_path / "plain", rebase=True)
    for sort_first in (False, True):  # the issue: a 30-day trace never reaches the Sept window
        assert len(helios_trace_process(tmp_path / "plain" / "Seren", SEPT, sort_first=sort_first)) == 0
    res = write(month, "helios", tmp_path / "w", rebase_to="Sept")
    d = tmp_path / "w" / "Seren"
    log = pd.read_csv(d / "cluster_log.csv", parse_dates=["submit_time"])
    assert log.iloc[0]["user"] == "acmemodel-anchor" and str(log.iloc[0]["submit_time"]) == HELIOS_START
    real = log.iloc[1:]
    first = real["submit_time"].min()
    assert pd.Timestamp(SEPT[0]) <= first < pd.Timestamp(SEPT[0]) + pd.Timedelta(days=7)
    j0 = month["submit_time"].min().tz_convert("Asia/Shanghai")
    assert (first.hour, first.minute, first.weekday()) == (j0.hour, j0.minute, j0.weekday())
    in_window = real[(real["gpu_num"] > 0) & (real["submit_time"] <= pd.Timestamp(SEPT[1]))]
    for sort_first in (False, True):
        sel = helios_trace_process(d, SEPT, sort_first=sort_first)
        assert len(sel) == len(in_window) > 0.8 * gpu  # the anchor is not selected
        assert "acmemodel-anchor" not in set(sel["user"]) and (sel["duration"] >= 1).all()
    assert res["window"] == "Sept"
    readme = (tmp_path / "w" / "README.md").read_text()
    assert f"{len(in_window)} GPU jobs (the simulators read GPU jobs only) fall inside" in readme
    for needed in ("vc_dict_homo.pkl", "_lgb.csv", "cluster_full_log.csv", "gmem_util", "_ebm_weekly_updated.csv"):
        assert needed in readme
    with pytest.raises(ValueError, match="Sept"):
        write(month, "helios", tmp_path / "x", rebase_to="November")


def test_helios_no_zero_second_jobs(tmp_path, month):
    write(month, "helios", tmp_path)
    log = pd.read_csv(tmp_path / "Seren" / "cluster_log.csv")
    assert (log["duration"] >= 1).all()
    assert "durations raised to 1 s" in (tmp_path / "README.md").read_text()


def test_helios_every_vc_holds_its_largest_job_and_large_jobs_leave_shared(tmp_path, month):
    j = month.copy()
    dbg = j.index[(j["type"] == "Debug") & (j["gpu_num"] > 0)][:3]
    j.loc[dbg, "gpu_num"] = 1024
    j.loc[dbg, "node_num"] = 128
    write(j, "helios", tmp_path)
    log = pd.read_csv(tmp_path / "Seren" / "cluster_log.csv")
    nodes = pd.read_csv(tmp_path / "Seren" / "vc_config.csv", index_col=0)["num"]
    peak = log.groupby("vc")["node_num"].max()
    assert all(nodes[v] >= peak[v] for v in peak.index)
    assert log.loc[log["job_id"].astype(str).isin(j.loc[dbg, "job_id"]), "vc"].eq("pretrain").all()
    assert log.loc[log["vc"] == "shared", "gpu_num"].max() < 256
    write(j, "helios", tmp_path / "bytype", large_gpus=0)  # the old split: a 1,024-GPU job in shared
    old = pd.read_csv(tmp_path / "bytype" / "Seren" / "cluster_log.csv")
    assert old.loc[old["vc"] == "shared", "gpu_num"].max() == 1024


def test_cli_helios_rebase_to_and_bad_window(tmp_path, month, capsys):
    from acmemodel.cli import main

    src = tmp_path / "trace_seren.csv"
    write(month, "acmetrace", tmp_path)
    r = CliRunner().invoke(app, ["export", str(src), "--format", "helios", "-o", str(tmp_path / "h"),
                                 "--rebase-to", "Venus_Sept"])
    assert r.exit_code == 0, r.output
    for bad in (["--rebase-to", "Nov"], ["--rebase-to", "Sept", "--rebase"]):
        with pytest.raises(SystemExit) as e:
            main(["export", str(src), "--format", "helios", "-o", str(tmp_path / "h2"), *bad])
        err = capsys.readouterr().err
        assert e.value.code == 2 and err.startswith("error:") and len(err.strip().splitlines()) == 1


# ============================================================================ Batsim
def batsim_load(doc: dict, version: int) -> tuple[int, int]:
    """The assertions of Batsim's JSON workload reader (src/workload.cpp ``load_from_json``,
    src/jobs.cpp ``Job::from_json``, src/profiles.cpp delay profiles), for Batsim 4.x
    (``version=4``: profile type ``delay``, walltime -1 or > 0) and 5.x (``version=5``: type
    ``DelayProfile``, walltime absent or > 0). Raises AssertionError with Batsim's message; returns
    (jobs, profiles)."""
    assert isinstance(doc, dict), "not a JSON object"
    assert "nb_res" in doc, "the 'nb_res' field is missing"
    assert isinstance(doc["nb_res"], int) and not isinstance(doc["nb_res"], bool), "'nb_res' is not an integer"
    assert doc["nb_res"] > 0, "the value of the 'nb_res' field is invalid"
    assert isinstance(doc.get("profiles"), dict), "the 'profiles' object is missing"
    want = "delay" if version < 5 else "DelayProfile"
    for name, p in doc["profiles"].items():
        assert isinstance(p, dict) and isinstance(p.get("type"), str), f"profile '{name}' has no 'type' field"
        assert p["type"] == want, f"profile '{name}': unknown type {p['type']!r} for Batsim {version}"
        assert isinstance(p.get("delay"), (int, float)), f"profile '{name}' has a non-number 'delay' field"
        assert p["delay"] > 0, f"profile '{name}' has a non-strictly-positive 'delay' field ({p['delay']})"
    assert isinstance(doc.get("jobs"), list), "the 'jobs' array is missing"
    seen = set()
    for j in doc["jobs"]:
        assert isinstance(j, dict), "one job is not an object"
        assert isinstance(j.get("id"), (str, int)), "one job has no valid 'id' field"
        assert str(j["id"]) not in seen, f"duplication of job id '{j['id']}'"
        seen.add(str(j["id"]))
        assert isinstance(j.get("subtime"), (int, float)), f"job '{j['id']}' has no number 'subtime' field"
        if "walltime" in j:
            w = j["walltime"]
            assert isinstance(w, (int, float)), f"job {j['id']} has a non-number 'walltime' field"
            assert w > 0 or (version < 5 and w == -1), (
                f"job '{j['id']}' has an invalid walltime value ({w}). It should either be strictly positive "
                "(the walltime is set) or the field must be absent (no walltime).")
        assert isinstance(j.get("res"), int) and j["res"] >= 0, f"job {j['id']} has no valid 'res' field"
        assert isinstance(j.get("profile"), str), f"job {j['id']} has no 'profile' field"
        assert j["profile"] in doc["profiles"], f"the profile {j['profile']} for job {j['id']} does not exist"
    return len(doc["jobs"]), len(doc["profiles"])


@pytest.mark.parametrize("version", [4, 5])
def test_batsim_workload_passes_batsims_reader(tmp_path, month, version):
    ptype = "delay" if version < 5 else "DelayProfile"
    write(month, "batsim", tmp_path, profile_type=ptype)
    doc = json.loads((tmp_path / "seren_workload.json").read_text())
    n, _ = batsim_load(doc, version)
    assert n == int((month["gpu_num"] > 0).sum())
    assert all("walltime" not in j for j in doc["jobs"])
    short = [j for j in doc["jobs"] if j["run_time"] < 1]
    assert len(short) >= 25 and all(doc["profiles"][j["profile"]]["delay"] == 1 for j in short)
    # the previous form (walltime -1, 0-second delays) is what Batsim rejected
    bad = json.loads(json.dumps(doc))
    bad["jobs"][0]["walltime"] = -1
    if version >= 5:
        with pytest.raises(AssertionError, match="walltime"):
            batsim_load(bad, version)
    bad = json.loads(json.dumps(doc))
    bad["profiles"][bad["jobs"][0]["profile"]]["delay"] = 0
    with pytest.raises(AssertionError, match="non-strictly-positive 'delay'"):
        batsim_load(bad, version)


def test_cli_batsim_profile_option(tmp_path, month):
    write(month, "acmetrace", tmp_path)
    r = CliRunner().invoke(app, ["export", str(tmp_path / "trace_seren.csv"), "--format", "batsim", "-o",
                                 str(tmp_path / "b"), "--batsim-profile", "DelayProfile"])
    assert r.exit_code == 0, r.output
    batsim_load(json.loads((tmp_path / "b" / "seren_workload.json").read_text()), 5)


# ============================================================================ SWF
SWF_LINE = re.compile(r"\s*" + r"([-+]?\d+(?:\.\d+)?)\s+" * 17 + r"([-+]?\d+(?:\.\d+)?)\s*")


def test_swf_parses_with_the_batsim_tools_regex_and_has_queue_lines(tmp_path, month):
    """Batsim's tools/swf_to_batsim_workload_delay.py reads every non-``;`` line with this regex of
    18 numbers; SWF 2.1 queue information is one ``; Queue: N name`` comment per queue."""
    write(month, "swf", tmp_path)
    text = (tmp_path / "seren.swf").read_text().splitlines()
    body = [ln for ln in text if not ln.startswith(";")]
    assert body and all(SWF_LINE.fullmatch(ln) for ln in body)
    queues = dict(re.fullmatch(r"; Queue: (\d+) (\S+)", ln).groups() for ln in text if ln.startswith("; Queue: "))
    used = {ln.split()[14] for ln in body}
    assert used <= set(queues) and queues["2"] == "Pretrain"
    rows = np.array([[float(v) for v in ln.split()] for ln in body])
    gpu_time = rows[:, 3] * rows[:, 7]
    share = gpu_time[rows[:, 10] == 5].sum() / gpu_time.sum()
    assert f"status 5 (cancelled) jobs hold {share:.1%} of the GPU time" in "\n".join(text)
    assert "Cancelled jobs (status 5) hold" in (tmp_path / "README.md").read_text()


def test_airesim_default_job_is_the_traces_typical_pretraining_run(tmp_path, month):
    """Without ``gpus`` the job is the Pretrain GPU count holding the most GPU time, not the 8-GPU
    bucket that small jobs of every type fill (the issue's ``job_size = 1``)."""
    g = month[month["gpu_num"] > 0]
    gt = g["gpu_num"] * (g["end_s"] - g["start_s"]).fillna(0)
    pre = g["type"] == "Pretrain"
    want = int(gt[pre].groupby(g.loc[pre, "gpu_num"]).sum().idxmax())
    res = write(month, "airesim", tmp_path, mttf_s=36_000.0, weibull_shape=0.8, recovery_s=600.0)
    assert res["params"]["job_size"] == -(-want // 8)
    assert "Pretrain jobs" in res["provenance"]["gpus_source"]
