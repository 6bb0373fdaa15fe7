"""Export writers: a reader / validator per format, checked against the published definitions.

* AcmeTrace CSV: round trip through ``load_trace`` (published README rows byte for byte, the shipped
  sample, synthetic jobs with sub-second times).
* SWF v2.2 (Parallel Workloads Archive, swf.html): 18 integer fields, -1 unknown, header comments,
  status codes, preceding-job links and think times.
* Helios/Lucid: ``cluster_log.csv`` columns and formats of HeliosData README, ``vc_config.csv`` as
  Lucid's ``simulation/data/<cluster>/vc_config.csv`` (",num"), the epoch rebase.
* Philly: the ``cluster_job_log`` keys of msr-fiddle/philly-traces README.
* Batsim: the workload fields of docs/input-workload.rst (jobs id/subtime/res/profile, delay profiles).
* AIReSim: keys are ``Params`` fields of airesim/params.py; the mean-matched per-server rate
  reproduces the job-level MTTF under AIReSim's own sampling (Weibull, mean = 1 / rate).
"""
from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

from acmemodel import load_trace
from acmemodel.cli import app, main
from acmemodel.export import FORMATS, write
from tests.conftest import readme_example, utc_from_seconds

TYPES = np.array(["Eval", "Pretrain", "SFT", "MLLM", "Debug", "Other"])


# ----------------------------------------------------------------------------- synthetic jobs
def make_jobs(n: int = 400, *, seed: int = 0, cluster: str = "Seren", fractional: bool = False,
              t0: str = "2023-03-01 00:00:00+08:00", days: float = 30.0) -> pd.DataFrame:
    """Contract-shaped jobs (with restart-chain columns): chains of 2–4 Pretrain attempts, where every
    attempt but the last FAILED; CPU jobs; jobs cancelled before starting."""
    rng = np.random.default_rng(seed)
    base = pd.Timestamp(t0).timestamp()
    lens = []
    while sum(lens) < n:
        lens.append(int(rng.integers(2, 5)) if rng.random() < 0.05 else 1)
    lens[-1] -= sum(lens) - n
    lens = [x for x in lens if x > 0]
    starts = base + np.sort(rng.random(len(lens))) * days * 86400
    recs = []
    for c, (L, t) in enumerate(zip(lens, starts)):
        typ = "Pretrain" if L > 1 else str(rng.choice(TYPES))
        gpu = 0 if (L == 1 and rng.random() < 0.15) else int(rng.choice([1, 2, 8, 16, 64, 256]))
        user = f"u{int(rng.integers(0, 40)):03d}"
        for a in range(L):
            q, r = float(rng.lognormal(3, 1.5)), float(rng.lognormal(6, 1.5))
            if a < L - 1:
                state, started = "FAILED", True
            else:
                state = str(rng.choice(["COMPLETED", "FAILED", "CANCELLED", "TIMEOUT"], p=[.6, .15, .2, .05]))
                started = not (state == "CANCELLED" and rng.random() < 0.4)
            if not fractional:
                t, q, r = round(t), round(q), round(r)
            recs.append(dict(chain_id=c, attempt=a + 1, submit_s=t, q=q, r=r, gpu_num=gpu, type=typ,
                             user=user, state=state, started=started))
            t = t + q + r + float(rng.lognormal(5, 1))
    d = pd.DataFrame(recs).sort_values(["submit_s", "chain_id"], kind="stable").reset_index(drop=True)
    d.index = d.index + 1000  # row labels differ from positions
    start = np.where(d["started"], d["submit_s"] + d["q"], np.nan)
    end = np.where(d["started"], start + d["r"], d["submit_s"] + d["q"])
    out = pd.DataFrame({
        "cluster": cluster, "job_id": (7_000_000 + np.arange(len(d))).astype(str), "user": d["user"],
        "type": d["type"], "state": d["state"],
        "analysis_state": d["state"].replace({"TIMEOUT": "FAILED", "NODE_FAIL": "FAILED"}),
        "gpu_num": d["gpu_num"].astype("int64"),
        "node_num": np.maximum(1, np.ceil(d["gpu_num"] / 8)).astype("int64"),
        "cpu_num": np.where(d["gpu_num"] > 0, 16.0 * d["gpu_num"], 4.0), "is_gpu": d["gpu_num"] > 0,
        "submit_s": d["submit_s"].astype(float), "start_s": start, "end_s": end, "started": d["started"],
    }, index=d.index)
    for c in ("submit", "start", "end"):
        out[f"{c}_time"] = utc_from_seconds(out[f"{c}_s"]).set_axis(out.index)
    out["run_s"] = out["end_s"] - out["start_s"]
    out["queue_s"] = np.where(out["started"], out["start_s"] - out["submit_s"], out["end_s"] - out["submit_s"])
    out["queue_censored"] = ~out["started"]
    out["gpu_time_s"] = np.where(out["started"], out["gpu_num"] * out["run_s"], 0.0)
    out["fail_time_s"] = np.nan
    out["chain_id"] = d["chain_id"]
    out["attempt"] = d["attempt"]
    label = pd.Series(out.index, index=pd.MultiIndex.from_arrays([d["chain_id"], d["attempt"]]))
    prev = label.reindex(pd.MultiIndex.from_arrays([d["chain_id"], d["attempt"] - 1])).to_numpy()
    out["prev_index"] = np.where(pd.isna(prev), -1, prev).astype("int64")
    ok = out["prev_index"].to_numpy() >= 0
    gap = np.full(len(out), np.nan)
    gap[ok] = out["submit_s"].to_numpy()[ok] - out["end_s"].reindex(out["prev_index"].to_numpy()[ok]).to_numpy()
    out["restart_gap_s"] = gap
    return out


@pytest.fixture(scope="module")
def jobs():
    return make_jobs(400, seed=1)


# ============================================================================ AcmeTrace CSV
@pytest.mark.parametrize("cluster", ["seren", "kalos"])
def test_acmetrace_reproduces_published_rows_byte_for_byte(tmp_path, cluster):
    src = tmp_path / f"trace_{cluster}.csv"
    src.write_text(readme_example(cluster))
    trace = load_trace(src)
    res = write(trace, "acmetrace", tmp_path / "out")
    written = tmp_path / "out" / f"trace_{cluster}.csv"
    assert written.read_text() == readme_example(cluster)
    assert res["attempts"] == 2 and str(written) in res["files"]


def test_acmetrace_sample_round_trip(tmp_path, sample_trace):
    write(sample_trace, "acmetrace", tmp_path)
    back = load_trace(sorted(tmp_path.glob("trace_*.csv")))
    key = ["cluster", "job_id"]
    a = sample_trace.jobs.sort_values(key).reset_index(drop=True)
    b = back.jobs.sort_values(key).reset_index(drop=True)
    cols = [c for c in a.columns if c not in ("source_file", "source_line")]
    pd.testing.assert_frame_equal(a[cols], b[cols], check_like=True)
    assert back.inconsistencies == sample_trace.inconsistencies
    assert len(back.rejected) == 0


def test_acmetrace_rounds_timestamps_then_derives_durations(tmp_path):
    j = make_jobs(200, seed=3, fractional=True)
    j.loc[j.index[0], ["cluster"]] = "Seren"
    write(j, "acmetrace", tmp_path)
    back = load_trace(tmp_path / "trace_seren.csv").jobs.set_index("job_id")
    j = j.set_index("job_id").loc[back.index]
    for c in ("submit_s", "end_s"):
        np.testing.assert_array_equal(back[c].to_numpy(), np.rint(j[c].to_numpy()))
    st = np.rint(j["start_s"].to_numpy())
    np.testing.assert_array_equal(np.isnan(back["start_s"].to_numpy()), np.isnan(st))
    ok = ~np.isnan(st)
    np.testing.assert_array_equal(back["start_s"].to_numpy()[ok], st[ok])
    raw = pd.read_csv(tmp_path / "trace_seren.csv", dtype={"job_id": str}).set_index("job_id").loc[back.index]
    run = back["run_s"].fillna(0).to_numpy()
    np.testing.assert_array_equal(raw["duration"].to_numpy(), run)  # Seren: end - start
    np.testing.assert_array_equal(raw["gpu_time"].to_numpy(), back["gpu_num"].to_numpy() * run)


def test_acmetrace_kalos_duration_includes_queue_and_reads_back(tmp_path):
    j = make_jobs(150, seed=4, cluster="Kalos", t0="2023-05-01 00:00:00+00:00")
    write(j, "acmetrace", tmp_path)
    raw = pd.read_csv(tmp_path / "trace_kalos.csv", dtype={"job_id": str})
    assert list(raw.columns)[5:7] == ["mem_per_pod_GB", "shared_mem_per_pod"]
    sub = pd.to_datetime(raw["submit_time"])
    end = pd.to_datetime(raw["end_time"])
    np.testing.assert_array_equal(raw["duration"].to_numpy(), (end - sub).dt.total_seconds().to_numpy())
    assert raw["submit_time"].str.endswith("+00:00").all()
    assert (raw.loc[raw["state"] == "CANCELLED", "stop_time"] == raw.loc[raw["state"] == "CANCELLED", "end_time"]).all()
    from acmemodel.trace import CHECK_TOL_S

    back = load_trace(tmp_path / "trace_kalos.csv")
    started = j["started"].to_numpy()
    assert back.inconsistencies["duration_includes_queue"] == int(
        (started & (j["queue_s"].to_numpy() > CHECK_TOL_S)).sum())
    b = back.jobs.set_index("job_id").loc[j["job_id"]]
    np.testing.assert_allclose(b["run_s"].to_numpy(), j["run_s"].to_numpy())


def test_special_characters_are_quoted_or_escaped(tmp_path):
    j = make_jobs(40, seed=5)
    j.loc[j.index[:3], "user"] = 'u"odd, name'
    write(j, "acmetrace", tmp_path / "a")
    back = load_trace(tmp_path / "a" / "trace_seren.csv").jobs
    assert (back["user"] == 'u"odd, name').sum() == 3
    write(j, "philly", tmp_path / "p", include_cpu=True)
    log = json.loads((tmp_path / "p" / "Seren" / "cluster_job_log").read_text())
    assert sum(e["user"] == 'u"odd, name' for e in log) >= 1


# ============================================================================ SWF v2.2
SWF_HEADER_KEYS = ("Version", "Computer", "MaxJobs", "MaxRecords", "MaxNodes", "MaxProcs", "MaxQueues",
                   "Queues", "Note", "UnixStartTime", "TimeZoneString")


def read_swf(path: Path) -> tuple[dict[str, list[str]], np.ndarray]:
    """Minimal SWF reader: header comments (key → values) and the (n, 18) integer field matrix."""
    header: dict[str, list[str]] = {}
    rows = []
    for line in path.read_text().splitlines():
        if line.startswith(";"):
            m = re.match(r";\s*(\w+):\s*(.*)$", line)
            if m:
                header.setdefault(m.group(1), []).append(m.group(2).strip())
            continue
        if not line.strip():
            continue
        fields = line.split()
        assert len(fields) == 18, line
        rows.append([int(f) for f in fields])  # integers only (ValueError otherwise)
    return header, np.array(rows, dtype=np.int64)


def _analysis_state(j: pd.DataFrame) -> pd.Series:
    if "analysis_state" in j:
        return j["analysis_state"]
    return j["state"].replace({"TIMEOUT": "FAILED", "NODE_FAIL": "FAILED"})


def check_swf(path: Path, jobs: pd.DataFrame) -> tuple[dict[str, list[str]], np.ndarray]:
    """Validate an SWF v2.2 file against the format definition and against the jobs it was written from
    (through its ``<name>_swf_jobs.csv`` id map): header keys, 18 integer fields, -1 for the unknown
    ones, job numbers, submit order, status codes, queue = type legend, submit/end times, restart
    links (field 17 → the failed earlier attempt of the same chain, field 18 = the restart gap).
    Returns the header and the field matrix for further checks."""
    hdr, F = read_swf(path)
    for k in SWF_HEADER_KEYS:
        assert k in hdr, k
    assert hdr["Version"] == ["2.2"]
    assert len(F) == int(hdr["MaxJobs"][0]) == int(hdr["MaxRecords"][0])
    assert (F[:, 0] == np.arange(1, len(F) + 1)).all()
    assert F[0, 1] == 0 and (np.diff(F[:, 1]) >= 0).all()
    assert set(np.unique(F[:, 10])) <= {0, 1, 5}
    assert ((F[:, 14] >= 1) & (F[:, 14] <= int(hdr["MaxQueues"][0]))).all()
    assert (F[:, 7] >= 0).all() and (F[:, 7] <= int(hdr["MaxProcs"][0])).all()
    assert ((F[:, 4] == F[:, 7]) | ((F[:, 4] == -1) & (F[:, 3] == 0))).all()
    for col in (5, 6, 8, 9, 12, 13, 15):
        assert (F[:, col] == -1).all()
    # compare with the jobs through the id map
    m = pd.read_csv(path.with_name(path.stem + "_swf_jobs.csv"), dtype={"job_id": str})
    assert (m["job_number"].to_numpy() == F[:, 0]).all()
    j = jobs.set_index(jobs["job_id"].astype(str)).loc[m["job_id"]]
    t0 = int(hdr["UnixStartTime"][0])
    np.testing.assert_array_equal(F[:, 1] + t0, np.rint(j["submit_s"].to_numpy()))
    np.testing.assert_array_equal(F[:, 1] + F[:, 2] + F[:, 3] + t0, np.rint(j["end_s"].to_numpy()))
    status = _analysis_state(j).map({"COMPLETED": 1, "FAILED": 0, "CANCELLED": 5}).to_numpy()
    np.testing.assert_array_equal(F[:, 10], status)
    legend = dict(re.findall(r"(\d+) (\w+)", hdr["Queues"][0]))
    assert [legend[str(q)] for q in F[:, 14]] == j["type"].tolist()
    # restart links: field 17 -> failed earlier attempt of the same chain, field 18 = restart gap
    link = F[:, 16] > 0
    assert link.sum() == int((j["attempt"] > 1).sum())
    prev = F[F[link, 16] - 1]
    assert (F[link, 16] < F[link, 0]).all()
    assert (prev[:, 10] == 0).all()
    np.testing.assert_array_equal(F[link, 17], F[link, 1] - (prev[:, 1] + prev[:, 2] + prev[:, 3]))
    assert (F[~link, 17] == -1).all()
    np.testing.assert_array_equal(j["chain_id"].to_numpy()[link], j["chain_id"].to_numpy()[F[link, 16] - 1])
    np.testing.assert_array_equal(j["attempt"].to_numpy()[link], j["attempt"].to_numpy()[F[link, 16] - 1] + 1)
    return hdr, F


def test_swf_fields_header_status_and_links(tmp_path, jobs):
    res = write(jobs, "swf", tmp_path)
    hdr, F = check_swf(tmp_path / "seren.swf", jobs)
    n_gpu = int((jobs["gpu_num"] > 0).sum())
    assert len(F) == n_gpu == res["attempts"]
    assert (F[:, 7] >= 1).all() and (F[:, 16] > 0).sum() > 0
    assert res["dropped"] == {"cpu_jobs": int((jobs["gpu_num"] == 0).sum())}
    assert any(f"{res['dropped']['cpu_jobs']} CPU-only jobs" in n for n in hdr["Note"])
    assert hdr["TimeZoneString"] == ["Asia/Shanghai"] and int(hdr["MaxProcs"][0]) == 2288


def test_swf_include_cpu_keeps_every_row(tmp_path, jobs):
    res = write(jobs, "swf", tmp_path, include_cpu=True)
    hdr, F = read_swf(tmp_path / "seren.swf")
    assert len(F) == len(jobs) and res["dropped"] == {}
    n_cpu = int((jobs["gpu_num"] == 0).sum())
    assert int((F[:, 7] == 0).sum()) == n_cpu
    assert any(f"{n_cpu} CPU-only jobs (gpu_num = 0) kept" in n for n in hdr["Note"])


def test_swf_uses_restart_chains_when_columns_missing(tmp_path, sample_trace):
    from acmemodel.features.chains import restart_chains

    res = write(sample_trace, "swf", tmp_path, cluster="Kalos")
    _, F = read_swf(tmp_path / "kalos.swf")
    gpu = sample_trace.jobs[(sample_trace.jobs["cluster"] == "Kalos") & sample_trace.jobs["is_gpu"]]
    ch = restart_chains(sample_trace.jobs).loc[gpu.index]
    assert res["chains"] == "inferred"  # the sample has no chain columns
    assert int((F[:, 16] > 0).sum()) == int((ch["prev_index"] >= 0).sum()) == res["restarts"]


# ============================================================================ Helios / Lucid
HELIOS_COLUMNS = ["job_id", "user", "vc", "jobname", "gpu_num", "cpu_num", "node_num", "state", "submit_time",
                  "start_time", "end_time", "duration", "queue"]
TIME_RE = r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$"


def test_helios_log_and_vc_config(tmp_path, jobs):
    res = write(jobs, "helios", tmp_path)
    log_p, vc_p = tmp_path / "Seren" / "cluster_log.csv", tmp_path / "Seren" / "vc_config.csv"
    assert log_p.read_text().splitlines()[0] == ",".join(HELIOS_COLUMNS)
    log = pd.read_csv(log_p, dtype={"job_id": str, "start_time": str})
    assert len(log) == len(jobs) == res["attempts"]
    for c in ("submit_time", "end_time"):
        assert log[c].str.match(TIME_RE).all()
    started = log["start_time"].notna()
    assert log.loc[started, "start_time"].str.match(TIME_RE).all()
    t = {c: pd.to_datetime(log[c]) for c in ("submit_time", "start_time", "end_time")}
    np.testing.assert_array_equal(log.loc[started, "duration"],  # >= 1 s: the simulators hang on 0
                                  (t["end_time"] - t["start_time"])[started].dt.total_seconds().clip(lower=1))
    np.testing.assert_array_equal(log.loc[started, "queue"],
                                  (t["start_time"] - t["submit_time"])[started].dt.total_seconds())
    assert (log.loc[~started, "duration"] == 1).all()
    # local time (+08:00) of the submission
    j = jobs.set_index("job_id").loc[log["job_id"]]
    local = (j["submit_time"].dt.tz_convert("Asia/Shanghai").dt.tz_localize(None)).to_numpy()
    np.testing.assert_array_equal(t["submit_time"].to_numpy(), local)
    assert (log["jobname"] == j["type"].to_numpy()).all()
    assert set(log.loc[log["jobname"] == "Pretrain", "vc"]) == {"pretrain"}
    large = log["gpu_num"] >= 256  # large jobs of any type run with the pretraining runs
    assert set(log.loc[(log["jobname"] != "Pretrain") & ~large, "vc"]) == {"shared"}
    assert set(log.loc[large, "vc"]) == {"pretrain"}
    assert vc_p.read_text().splitlines()[0] == ",num"
    vc = pd.read_csv(vc_p, index_col=0)          # what Lucid's simulator does
    nodes = vc.to_dict()["num"]
    assert set(nodes) == set(log["vc"]) and sum(nodes.values()) == 286
    peak = log.groupby("vc")["node_num"].max()
    assert all(nodes[v] >= peak[v] for v in nodes)


def test_helios_given_quota_and_rebase(tmp_path, jobs):
    write(jobs, "helios", tmp_path, vc={"Pretrain": "p", "Eval": "e"}, vc_nodes={"p": 200, "e": 50, "shared": 36},
          rebase=True)
    vc = pd.read_csv(tmp_path / "Seren" / "vc_config.csv", index_col=0)["num"].to_dict()
    assert vc == {"e": 50, "p": 200, "shared": 36}
    log = pd.read_csv(tmp_path / "Seren" / "cluster_log.csv", parse_dates=["submit_time"])
    first = log["submit_time"].min()
    assert pd.Timestamp("2020-04-01") <= first < pd.Timestamp("2020-04-08")
    j0 = jobs["submit_time"].min().tz_convert("Asia/Shanghai")
    assert (first.hour, first.minute, first.weekday()) == (j0.hour, j0.minute, j0.weekday())
    shift = (log["submit_time"] - jobs.sort_values("submit_s")["submit_time"].dt.tz_convert("Asia/Shanghai")
             .dt.tz_localize(None).to_numpy()).dt.total_seconds()
    assert shift.nunique() == 1 and shift.iloc[0] % (7 * 86400) == 0
    assert "2020-04-01" in (tmp_path / "README.md").read_text()
    with pytest.raises(ValueError, match="shared"):
        write(jobs, "helios", tmp_path / "x", vc_nodes={"pretrain": 10})


# ============================================================================ Philly
PHILLY_KEYS = {"status", "vc", "jobid", "attempts", "submitted_time", "user"}


def test_philly_schema_and_chains_as_attempts(tmp_path, jobs):
    res = write(jobs, "philly", tmp_path)
    log = json.loads((tmp_path / "Seren" / "cluster_job_log").read_text())
    gj = jobs[jobs["gpu_num"] > 0]
    assert isinstance(log, list) and len(log) == gj["chain_id"].nunique() == res["jobs"]
    by_first = gj[gj["attempt"] == 1].set_index("job_id")
    n_att = 0
    for e in log:
        assert set(e) == PHILLY_KEYS
        assert e["status"] in ("Pass", "Killed", "Failed")
        assert re.match(TIME_RE, e["submitted_time"])
        chain = gj[gj["chain_id"] == by_first.loc[e["jobid"], "chain_id"]].sort_values("attempt")
        started = chain[chain["started"]]
        assert len(e["attempts"]) == len(started)
        n_att += len(e["attempts"])
        last = chain.iloc[-1]["analysis_state"]
        assert e["status"] == {"COMPLETED": "Pass", "CANCELLED": "Killed", "FAILED": "Failed"}[last]
        prev_end = e["submitted_time"]
        for a, (_, row) in zip(e["attempts"], started.iterrows()):
            assert set(a) == {"start_time", "end_time", "detail"}
            assert prev_end <= a["start_time"] <= a["end_time"]
            prev_end = a["end_time"]
            assert len(a["detail"]) == row["node_num"]
            assert sum(len(d["gpus"]) for d in a["detail"]) == row["gpu_num"]
            assert all(set(d) == {"ip", "gpus"} for d in a["detail"])
    assert n_att == int(gj["started"].sum())
    side = pd.read_csv(tmp_path / "Seren" / "cluster_job_log_attempts.csv", dtype={"jobid": str, "job_id": str})
    assert len(side) == len(gj)


# ============================================================================ Batsim
def check_batsim(w: dict, jobs: pd.DataFrame) -> None:
    """Validate a parsed Batsim workload against docs/input-workload.rst (nb_res, jobs with id/subtime/
    res/profile, no walltime, delay profiles of at least 1 s) and against the GPU jobs it was written from (in submission
    order): run times, submit offsets, states, attempts and restart links (``prev_id`` → an earlier
    failed attempt, ``restart_gap`` = the jobs' restart gap)."""
    assert {"nb_res", "jobs", "profiles"} <= set(w)
    assert isinstance(w["nb_res"], int) and w["nb_res"] >= 1
    gj = jobs[jobs["gpu_num"] > 0].sort_values("submit_s", kind="stable")
    assert len(w["jobs"]) == len(gj)
    ids = [j["id"] for j in w["jobs"]]
    assert len(set(ids)) == len(ids) and all(isinstance(i, str) for i in ids)
    pos = {i: k for k, i in enumerate(ids)}
    started = gj["start_s"].notna().to_numpy()
    run = np.where(started, gj["end_s"].to_numpy() - gj["start_s"].fillna(0).to_numpy(), 0.0)
    sub = gj["submit_s"].to_numpy() - gj["submit_s"].min()
    for k, j in enumerate(w["jobs"]):
        row = gj.iloc[k]
        assert {"id", "subtime", "res", "profile", "type", "final_state", "attempt"} <= set(j)
        assert "walltime" not in j  # absent = no limit (Batsim >= 5 rejects -1)
        assert isinstance(j["res"], int) and 1 <= j["res"] <= w["nb_res"] and j["res"] == row["gpu_num"]
        assert j["subtime"] >= 0
        p = w["profiles"][j["profile"]]
        assert p["type"] == "delay" and p["delay"] >= 1  # Batsim asserts delay > 0
        assert p["delay"] == pytest.approx(max(run[k], 1.0), abs=5e-4)
        assert j["run_time"] == pytest.approx(run[k], abs=5e-4)
        assert j["subtime"] == pytest.approx(sub[k], abs=5e-4)
        assert j["final_state"] == row["state"] and j["attempt"] == row["attempt"]
        assert j["started"] == bool(started[k])
        if j["attempt"] > 1:
            prev = w["jobs"][pos[j["prev_id"]]]
            assert pos[j["prev_id"]] < k and prev["final_state"] in ("FAILED", "TIMEOUT", "NODE_FAIL")
            assert prev["attempt"] == j["attempt"] - 1
            assert j["restart_gap"] == pytest.approx(row["restart_gap_s"], abs=5e-4)


def test_batsim_workload_schema(tmp_path, jobs):
    res = write(jobs, "batsim", tmp_path)
    w = json.loads((tmp_path / "seren_workload.json").read_text())
    check_batsim(w, jobs)
    assert w["nb_res"] == 2288
    assert len(w["jobs"]) == res["attempts"] and any(j["attempt"] > 1 for j in w["jobs"])


# ============================================================================ AIReSim
AIRESIM_PARAMS = {  # airesim/params.py Params fields (its YAML loader rejects any other key)
    "random_failure_rate", "systematic_failure_rate_multiplier", "systematic_failure_fraction", "recovery_time",
    "host_selection_time", "job_size", "job_length", "warm_standbys", "working_pool_size", "spare_pool_size",
    "enable_topology", "rack_size", "preemption_wait_time", "auto_repair_time", "manual_repair_time",
    "prob_auto_to_manual", "auto_repair_fail_prob", "manual_repair_fail_prob", "failure_distribution",
    "weibull_shape", "lognormal_sigma", "diagnosis_probability", "diagnosis_uncertainty",
    "bad_server_regeneration", "bad_server_regen_interval", "seed", "num_replications",
    "adaptive_replications", "confidence_level", "relative_accuracy", "max_replications"}


class FakeFailure:
    """Stands in for a fitted FailureModel: ``mttf(g)`` seconds, Weibull ``shape_``."""

    shape_ = 0.7
    max_gpus_ = 2048

    def mttf(self, gpus, *, component="late", **key):
        return 360_000.0 * (gpus / 8.0) ** (-0.8 / self.shape_)


def test_airesim_config_keys_and_mean_matching(tmp_path, jobs):
    fm = FakeFailure()
    res = write(jobs, "airesim", tmp_path, failure=fm, gpus=1024)
    cfg = yaml.safe_load((tmp_path / "config.yaml").read_text())
    assert set(cfg) <= AIRESIM_PARAMS
    assert cfg["job_size"] == 128 and cfg["failure_distribution"] == "weibull"
    assert cfg["weibull_shape"] == pytest.approx(0.7)
    assert cfg["working_pool_size"] >= cfg["job_size"] + cfg["warm_standbys"]
    assert cfg["systematic_failure_fraction"] == 0.0
    # AIReSim draws a fresh Weibull per server with mean 1/rate (minutes) and takes the minimum
    rng = np.random.default_rng(0)
    k, n, reps = cfg["weibull_shape"], cfg["job_size"], 4000
    scale = (1.0 / cfg["random_failure_rate"]) / math.gamma(1 + 1 / k)
    job_ttf = (scale * rng.weibull(k, size=(reps, n))).min(axis=1) * 60.0  # seconds
    target = fm.mttf(1024)
    se = job_ttf.std(ddof=1) / math.sqrt(reps)
    assert abs(job_ttf.mean() - target) < 5 * se
    # recovery = mean (restart gap + queue) over the restart links of the jobs, in minutes
    link = jobs["prev_index"].to_numpy() >= 0
    nxt = jobs[link]
    start = nxt["start_s"].fillna(nxt["end_s"]).to_numpy()
    ttr = start - jobs["end_s"].reindex(nxt["prev_index"].to_numpy()).to_numpy()
    assert cfg["recovery_time"] == pytest.approx(ttr.mean() / 60, abs=1e-3)
    assert res["params"] == cfg


class FakeRestart:
    """Stands in for a fitted RestartModel: ``restart_distribution(gpus=, component=).mean()``."""

    class _D:
        source = "glm"

        def __init__(self, g):
            self.g = g

        def mean(self):
            return 600.0 + self.g

    def restart_distribution(self, category=None, gpus=None, *, component="total", **kw):
        assert component == "total"
        return self._D(gpus)


def test_airesim_recovery_from_restart_model(tmp_path):
    res = write(None, "airesim", tmp_path, failure=FakeFailure(), restart=FakeRestart(), gpus=256)
    assert res["params"]["recovery_time"] == pytest.approx((600 + 256) / 60, abs=1e-3)
    assert "restart_distribution(gpus=256" in res["provenance"]["recovery_source"]
    assert "restart_distribution" in (tmp_path / "config.yaml").read_text()


def test_airesim_explicit_numbers_and_errors(tmp_path):
    res = write(None, "airesim", tmp_path, gpus=64, mttf_s=7200.0, weibull_shape=1.0, recovery_s=600.0)
    assert res["params"]["random_failure_rate"] == pytest.approx(1 / (120 * 8), rel=1e-6)  # k=1: rate/n
    assert res["params"]["recovery_time"] == 10.0 and res["params"]["working_pool_size"] == 8 + 16
    with pytest.raises(ValueError, match="failure model"):
        write(None, "airesim", tmp_path / "b", gpus=64)
    with pytest.raises(ValueError, match="working_pool_size"):
        write(None, "airesim", tmp_path / "c", gpus=64, mttf_s=1.0, working_pool_size=10)


# ============================================================================ dispatcher + CLI
def test_writers_do_not_modify_the_jobs(tmp_path):
    j = make_jobs(60, seed=6).drop(columns=["chain_id", "attempt", "prev_index", "restart_gap_s"])
    before = j.copy()
    for fmt in ("acmetrace", "swf", "helios", "philly", "batsim"):
        write(j, fmt, tmp_path / fmt)
    pd.testing.assert_frame_equal(j, before)


def test_write_rejects_bad_format_options_and_rebase(tmp_path, jobs):
    with pytest.raises(ValueError, match="format must be one of"):
        write(jobs, "gwf", tmp_path)
    with pytest.raises(ValueError, match="unknown option"):
        write(jobs, "swf", tmp_path, vc_nodes={"a": 1})
    with pytest.raises(ValueError, match="rebase applies"):
        write(jobs, "batsim", tmp_path, rebase=True)
    with pytest.raises(ValueError, match="cluster"):
        write(jobs, "swf", tmp_path, cluster="Nope")
    bad = jobs.copy()
    bad.loc[bad.index[0], "end_s"] = bad.loc[bad.index[0], "submit_s"] - 10
    with pytest.raises(ValueError, match="out of order"):
        write(bad, "acmetrace", tmp_path)
    assert set(FORMATS) == {"acmetrace", "swf", "helios", "philly", "batsim", "airesim"}


def test_cli_export_json_and_user_errors(tmp_path, capsys):
    src = tmp_path / "trace_seren.csv"
    src.write_text(readme_example("seren"))
    r = CliRunner().invoke(app, ["export", str(src), "--format", "swf", "-o", str(tmp_path / "o"), "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["attempts"] == 2 and doc["format"] == "swf"
    assert doc["time_span"]["start_utc"] == "2023-02-28T16:18:22Z"
    assert str(tmp_path / "o" / "seren.swf") in doc["files"]
    for argv in (["export", str(src), "-f", "swf", "-o", str(tmp_path / "p"), "--rebase"],
                 ["export", str(src), "-f", "helios", "-o", str(tmp_path / "q"), "--vc-nodes", "x=y"],
                 ["export", str(src), "-f", "batsim", "-o", str(tmp_path / "r"), "--bundle", str(tmp_path)]):
        with pytest.raises(SystemExit) as e:
            main(argv)
        assert e.value.code == 2
        err = capsys.readouterr().err
        assert err.startswith("error: ") and len(err.strip().splitlines()) == 1


def test_acmetrace_export_carries_the_clusters_own_description(tmp_path):
    """An exported AcmeTrace file has its cluster's description beside it (as convert writes one): it loads
    back under the cluster's own name, with its size, and without duration disagreements."""
    import dataclasses

    from acmemodel.clusters import ClusterSpec
    from acmemodel.evaluation.synthetic import synthetic_jobs
    from acmemodel.export.acmetrace import write_acmetrace
    from acmemodel.trace import Trace, load_trace

    jobs = synthetic_jobs(400, 2, days=5.0, clusters=("mycluster",))
    spec = ClusterSpec(name="mycluster", gpus=4096, gpus_per_node=8, timezone="+01:00", source="test")
    trace = Trace(jobs=jobs, rejected=pd.DataFrame(), timezones={"mycluster": "+01:00"})
    trace = dataclasses.replace(trace, cluster_specs={"mycluster": spec}) if hasattr(trace, "cluster_specs") else trace
    res = write_acmetrace(trace, tmp_path / "out")
    csv = [p for p in (tmp_path / "out").iterdir() if p.name.endswith(".csv")]
    assert len(csv) == 1 and (tmp_path / "out" / (csv[0].name + ".cluster.yaml")).is_file()
    back = load_trace(csv)
    assert back.clusters == ["mycluster"]
    assert back.cluster_specs["mycluster"].gpus == 4096
    assert back.inconsistencies.get("duration", 0) == 0
    assert res is not None
