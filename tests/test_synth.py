"""Synthetic workloads: exact AcmeTrace format, load_trace round trip, parameter recovery from the
generated file, restart chains, queue hook, knobs, CLI."""
from __future__ import annotations

import datetime
import json
import math
import re
import warnings
from importlib import resources

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from acmemodel import load_trace
from acmemodel.clusters import utc_offset_seconds
from acmemodel.models.arrival import ArrivalModel
from acmemodel.models.bundle import Bundle
from acmemodel.models.gpu_counts import GpuCountModel
from acmemodel.models.restart import RESUBMIT_PRIOR
from acmemodel.synth import (CHAIN_FILE_COLUMNS, DEFAULT_RESTART_GAP, KALOS_COLUMNS, SEREN_COLUMNS,
                             _restart_gap_sampler, format_timestamps, simulate_jobs, synthesize, to_acmetrace, write_acmetrace)

DAY = 86400.0
STATE_P = {"Eval": (0.7, 0.1, 0.2), "Pretrain": (0.4, 0.1, 0.5)}  # COMPLETED, CANCELLED, FAILED


class FakeRuntime:
    """The RuntimeModel.sample_jobs interface with known state probabilities and log-normal runs."""

    def __init__(self):
        self.calls = []

    def sample_jobs(self, n, rng, **key):
        self.calls.append(key)
        p = STATE_P.get(key["type"], (0.6, 0.1, 0.3))
        st = rng.choice(np.array(["COMPLETED", "CANCELLED", "FAILED"]), n, p=p)
        return pd.DataFrame({"state": st, "run_s": rng.lognormal(6.0, 1.5, n)})


HOUR_W = 0.25 + np.exp(-0.5 * ((np.arange(24) - 14) / 4.0) ** 2)
GPU_PMF = {("Seren", "Eval"): {0: 0.2, 1: 0.5, 8: 0.3}, ("Seren", "Pretrain"): {64: 0.25, 128: 0.25, 256: 0.25,
                                                                                   512: 0.25}}
EVAL_BATCH = {1: 0.5, 10: 0.2, 60: 0.3}


def _arrival(cluster="Seren", tz="+08:00", eval_rate=800.0, pre_rate=6.0):
    g = GpuCountModel.from_pmfs({(cluster, t): p for (_, t), p in GPU_PMF.items()})
    return ArrivalModel.from_rates(cluster=cluster, timezone=tz, jobs_per_day={"Eval": eval_rate, "Pretrain": pre_rate},
                                   hour_weights=HOUR_W, batch_size_pmf={"Eval": EVAL_BATCH}, intra_batch_gap_s=2.0,
                                   gpu_counts=g, users=20)


def _ref_path(name):
    return resources.files("acmemodel.datasets").joinpath("data", "reference", name)


# ------------------------------------------------------------------ format
@pytest.mark.parametrize("cluster", ["Seren", "Kalos"])
def test_published_example_rows_are_reproduced_exactly(cluster, tmp_path):
    src = _ref_path(f"readme_example_{cluster.lower()}.csv")
    raw = pd.read_csv(str(src), dtype=str, keep_default_na=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        jobs = load_trace(str(src), cluster=cluster).jobs
    out = to_acmetrace(jobs, cluster=cluster).to_pandas()
    assert list(out.columns) == (SEREN_COLUMNS if cluster == "Seren" else KALOS_COLUMNS) == list(raw.columns)
    same = [c for c in raw.columns if c != "job_id"]
    pd.testing.assert_frame_equal(out[same], raw[same])


def test_format_timestamps_matches_pandas():
    rng = np.random.default_rng(0)
    t = np.r_[rng.uniform(-2e9, 4e9, 2000), 951782400.0, 951868800.0 - 1, np.nan]  # incl. 2000-02-29
    for tz in ("+08:00", "+00:00", "-05:30"):
        got = format_timestamps(t, tz)
        ok = np.isfinite(t)
        zone = datetime.timezone(datetime.timedelta(seconds=utc_offset_seconds(tz)))
        exp = (pd.to_datetime(np.floor(t[ok]), unit="s", utc=True).tz_convert(zone)
               .strftime("%Y-%m-%d %H:%M:%S") + tz)
        assert [x.decode() for x in got[ok]] == list(exp)
        assert got[~ok][0] == b""


# ------------------------------------------------------------------ round trip
@pytest.fixture(scope="module")
def seren_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("synth") / "trace_seren.csv"
    jobs = simulate_jobs(arrival=_arrival(), runtime=FakeRuntime(), days=60, cluster="Seren", seed=7)
    write_acmetrace(to_acmetrace(jobs), path)
    return path, jobs


def test_output_is_the_exact_schema(seren_file):
    path, jobs = seren_file
    lines = path.read_text().splitlines()
    # the schema's columns, then the restart chain (read back by load_trace)
    assert lines[0] == ",".join(SEREN_COLUMNS + list(CHAIN_FILE_COLUMNS))
    assert len(lines) == len(jobs) + 1
    ts = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\+08:00$")
    row = lines[1].split(",")
    assert len(row) == 17 and ts.match(row[7]) and ts.match(row[8]) and ts.match(row[9])
    assert re.match(r"^\d+\.0$", row[12]) and re.match(r"^\d+$", row[10]) and row[11] == "0"


def test_roundtrip_through_load_trace(seren_file):
    path, jobs = seren_file
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no data warnings at all
        tr = load_trace(path)
    j = tr.jobs
    assert len(tr.rejected) == 0 and len(j) == len(jobs)
    assert all(v == 0 for v in tr.inconsistencies.values())
    assert tr.timezones == {"Seren": "+08:00"}
    assert np.array_equal(j["submit_s"].to_numpy(), jobs["submit_s"].to_numpy())
    assert np.array_equal(j["gpu_num"].to_numpy(), jobs["gpu_num"].to_numpy())
    assert (j["state"].to_numpy() == jobs["state"].to_numpy()).all()
    assert j["started"].all() and (j["queue_s"] == 0).all()
    assert np.allclose(j["run_s"].to_numpy(), jobs["run_s"].to_numpy())
    assert (j["node_num"] == np.maximum(1, np.ceil(j["gpu_num"] / 8))).all()


def test_fitting_the_generated_file_recovers_the_generating_parameters(seren_file):
    path, jobs = seren_file
    truth = _arrival()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tr = load_trace(path)
        fitted = ArrivalModel().fit(tr)  # batches and restart chains from the features layer
    days = (jobs["submit_s"].max() - jobs["submit_s"].min()) / DAY
    # weekly profile of Eval batches: chi-square of the standardised level errors
    c, t = fitted.cells_[("Seren", "Eval")], truth.cells_[("Seren", "Eval")]
    z = (c["log_rate"] - t["log_rate"]) / c["log_rate_se"]
    assert np.sum(z ** 2) < stats.chi2.ppf(1 - 1e-4, 168)
    # batch-size pmf
    pmf = fitted.batch_size_pmf(cluster="Seren", type="Eval")
    for size, p in EVAL_BATCH.items():
        assert abs(pmf.get(size, 0.0) - p) < 5 * np.sqrt(p * (1 - p) / c["n_batches"])
    # fresh Pretrain submissions (restarts excluded by the restart chains) at the generating rate
    n_pre = fitted.cells_[("Seren", "Pretrain")]["n_jobs"]
    assert abs(n_pre - 6.0 * days) < 5 * np.sqrt(6.0 * days)
    assert fitted.n_restarts_excluded_ > 0
    # resubmission probability of failed Pretrain jobs (no restart model: the prior of RestartModel)
    pr, nf = fitted.cells_[("Seren", "Pretrain")]["restart_prob"], fitted.cells_[("Seren", "Pretrain")]["n_failed"]
    q0 = RESUBMIT_PRIOR["Pretrain"]
    assert abs(pr - q0) < 5 * np.sqrt(q0 * (1 - q0) / nf)
    # GPU-count pmf per type
    for (cl, ty), pm in GPU_PMF.items():
        got = fitted.gpu_counts_.pmf(cluster=cl, type=ty)
        n = fitted.cells_[(cl, ty)]["n_jobs"]
        for g, p in pm.items():
            assert abs(got[g] - p) < 5 * np.sqrt(p * (1 - p) / n) + 1.0 / n
    # final states per type
    gj = tr.jobs[tr.jobs["type"] == "Eval"]
    for state, p in zip(("COMPLETED", "CANCELLED", "FAILED"), STATE_P["Eval"]):
        assert abs((gj["state"] == state).mean() - p) < 5 * np.sqrt(p * (1 - p) / len(gj))


def test_same_seed_same_file(tmp_path):
    a = synthesize(arrival=_arrival(eval_rate=100), runtime=FakeRuntime(), days=3, seed=5,
                   output=tmp_path / "a.csv")
    b = synthesize(arrival=_arrival(eval_rate=100), runtime=FakeRuntime(), days=3, seed=5,
                   output=tmp_path / "b.csv")
    assert (tmp_path / "a.csv").read_bytes() == (tmp_path / "b.csv").read_bytes()
    assert list(a.columns) == SEREN_COLUMNS + list(CHAIN_FILE_COLUMNS) and a.equals(b)


# ------------------------------------------------------------------ restarts, queue hook, knobs
def test_restart_chains():
    jobs = simulate_jobs(arrival=_arrival(eval_rate=10, pre_rate=40), runtime=FakeRuntime(), days=20, seed=3)
    r = jobs[jobs["attempt"] > 1]
    assert len(r) > 50 and set(r["type"]) == {"Pretrain"}
    first = jobs.set_index("chain_id")
    by_chain = jobs.sort_values(["chain_id", "attempt"])
    prev = by_chain.groupby("chain_id").shift(1)
    has = by_chain["attempt"] > 1
    assert (prev.loc[has, "state"] == "FAILED").all()
    assert np.allclose(by_chain.loc[has, "submit_s"], prev.loc[has, "end_s"] + by_chain.loc[has, "restart_gap_s"])
    assert (by_chain.loc[has, "user"] == prev.loc[has, "user"]).all()
    assert (by_chain.loc[has, "gpu_num"] == prev.loc[has, "gpu_num"]).all()
    assert first.index.nunique() == (jobs["attempt"] == 1).sum()
    none = simulate_jobs(arrival=_arrival(eval_rate=10, pre_rate=40), runtime=FakeRuntime(), days=20, seed=3,
                         restart_prob=0.0)
    assert (none["attempt"] == 1).all()


def test_default_restart_gap_distribution():
    rows = pd.DataFrame({"type": ["Pretrain"] * 20000, "gpu_num": 256, "attempt": 1, "end_s": 0.0})
    g = _restart_gap_sampler(None, "+08:00")(rows, np.random.default_rng(0))
    med = DEFAULT_RESTART_GAP["median_s"]
    # median of a log-normal sample: SE of log-median = sqrt(pi/2) * sigma / sqrt(n)
    sigma = np.sqrt(2 * np.log(DEFAULT_RESTART_GAP["mean_s"] / med))
    assert abs(np.log(np.median(g)) - np.log(med)) < 5 * np.sqrt(np.pi / 2) * sigma / np.sqrt(len(g))


def test_fill_queue_hook_and_never_started_jobs(tmp_path):
    def queue(df):
        q = np.full(len(df), 100.0)
        q[::10] = np.nan  # never started
        return q

    jobs = simulate_jobs(arrival=_arrival("Kalos", "+00:00", eval_rate=50, pre_rate=40), runtime=FakeRuntime(),
                         days=10, cluster="Kalos", seed=2, fill_queue=queue)
    started = jobs["start_s"].notna()
    assert (~started).any() and np.allclose(jobs.loc[started, "start_s"] - jobs.loc[started, "submit_s"], 100)
    # restarts re-timed after the predecessor's queued end
    by_chain = jobs.sort_values(["chain_id", "attempt"])
    prev = by_chain.groupby("chain_id").shift(1)
    has = by_chain["attempt"] > 1
    assert has.any()
    assert np.allclose(by_chain.loc[has, "submit_s"], prev.loc[has, "end_s"] + by_chain.loc[has, "restart_gap_s"])
    path = write_acmetrace(to_acmetrace(jobs), tmp_path / "trace_kalos.csv.gz")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tr = load_trace(path)
    j = tr.jobs
    assert len(tr.rejected) == 0 and len(j) == len(jobs)
    assert (~j["started"]).sum() == (~started).sum() and j.loc[~j["started"], "queue_censored"].all()
    assert np.allclose(j.loc[j["started"], "queue_s"], 100)
    # Kalos publishes duration = end - submit: the loader notices it
    assert tr.inconsistencies["duration_includes_queue"] == started.sum()
    raw = pd.read_csv(path, dtype=str, keep_default_na=False)
    assert list(raw.columns) == KALOS_COLUMNS + list(CHAIN_FILE_COLUMNS)
    assert ((raw["fail_time"] != "") == (raw["state"] == "FAILED")).all()
    assert ((raw["stop_time"] != "") == (raw["state"] == "CANCELLED")).all()
    assert raw["job_id"].str.match(r"^dlc[0-9a-z]{13}$").all() and raw["job_id"].is_unique
    with pytest.raises(ValueError, match="fill_queue"):
        simulate_jobs(arrival=_arrival(), runtime=FakeRuntime(), days=1, fill_queue=lambda df: [1.0])


def test_knobs_scale_mix_gpu_scale():
    a, rt = _arrival(eval_rate=200, pre_rate=20), FakeRuntime()
    base = simulate_jobs(arrival=a, runtime=rt, days=14, seed=1, restart_prob=0)
    double = simulate_jobs(arrival=a, runtime=rt, days=14, seed=2, scale=2.0, restart_prob=0)
    es2 = sum(k * k * p for k, p in EVAL_BATCH.items()) / sum(k * p for k, p in EVAL_BATCH.items())
    lam = a.expected_count(*_window(14))
    assert abs(len(double) - 2 * lam) < 5 * np.sqrt(2 * lam * es2)
    assert abs(len(base) - lam) < 5 * np.sqrt(lam * es2)
    mixed = simulate_jobs(arrival=a, runtime=rt, days=14, seed=3, mix={"Pretrain": 0.5}, restart_prob=0)
    n_p = (mixed["type"] == "Pretrain").sum()
    assert abs(n_p - 0.5 * lam) < 5 * np.sqrt(0.5 * lam)
    big = simulate_jobs(arrival=a, runtime=rt, days=3, seed=1, gpu_scale=2.0, restart_prob=0)
    assert set(big.loc[big["type"] == "Pretrain", "gpu_num"]) <= {128, 256, 512, 1024}
    assert set(big.loc[big["type"] == "Eval", "gpu_num"]) <= {0, 2, 16}
    # the runtime model is asked per type x GPU bucket with the scaled GPU count
    assert any(c.get("gpus") == 1024 for c in rt.calls)
    for bad, kw in (("days", {"days": 0}), ("restart_prob", {"restart_prob": 2}), ("cluster", {"cluster": "X"})):
        with pytest.raises(ValueError, match=bad):
            simulate_jobs(arrival=a, runtime=rt, **{"days": 1, **kw})


def _window(days, tz="+08:00"):
    t0 = pd.Timestamp("2023-03-01").value / 1e9 - utc_offset_seconds(tz)
    return t0, t0 + days * DAY


# ------------------------------------------------------------------ real models, bundle, CLI
@pytest.fixture(scope="module")
def sample_bundle(tmp_path_factory, sample_arrival, sample_runtime):
    # ArrivalModel().fit(load_sample()) and RuntimeModel().fit(load_sample()), shared (conftest)
    b = Bundle({"arrival": sample_arrival, "runtime": sample_runtime}, name="t")
    path = tmp_path_factory.mktemp("bundle") / "b"
    b.save(path)
    return path


def test_real_runtime_model_and_cli(sample_bundle, tmp_path):
    from typer.testing import CliRunner

    from acmemodel.cli import app, main

    out = tmp_path / "trace_seren.csv"
    r = CliRunner().invoke(app, ["synth", "--bundle", str(sample_bundle), "--days", "20", "--cluster", "Seren",
                                 "--seed", "1", "-o", str(out), "--mix", "Eval=0.6", "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    assert doc["rows"] > 0 and doc["cluster"] == "Seren" and doc["output"] == str(out)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tr = load_trace(out)
    assert len(tr.jobs) == doc["rows"] and len(tr.rejected) == 0
    assert set(tr.jobs["state"]) <= {"COMPLETED", "CANCELLED", "FAILED"}
    r = CliRunner().invoke(app, ["synth", "--bundle", str(sample_bundle), "--days", "2", "--cluster", "Kalos",
                                 "-o", str(tmp_path / "k.csv")])
    assert r.exit_code == 0 and "Kalos" in r.output
    r = CliRunner().invoke(app, ["synth", "--bundle", str(sample_bundle), "--days", "5", "--queue", "sim",
                                 "--gpus", "64", "-o", str(tmp_path / "q.csv"), "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["queue"].startswith("cluster simulator, 64 GPUs")
    for argv in (["synth", "--bundle", str(sample_bundle), "-o", str(tmp_path / "x.csv"), "--mix", "Eval"],
                 ["synth", "--bundle", str(tmp_path / "nope"), "-o", str(tmp_path / "x.csv")],
                 ["synth", "--bundle", str(sample_bundle), "-o", str(tmp_path / "x.csv"), "--cluster", "Philly"],
                 ["synth", "--bundle", str(sample_bundle), "-o", str(tmp_path / "x.csv"), "--days", "-1"],
                 ["synth", "--bundle", str(sample_bundle), "-o", str(tmp_path / "x.csv"), "--queue", "fifo"],
                 ["synth", "--bundle", str(sample_bundle), "-o", str(tmp_path / "x.csv"), "--queue", "sim",
                  "--gpus", "10"]):
        with pytest.raises(SystemExit) as e:
            main(argv)
        assert e.value.code == 2


def test_cluster_simulator_fills_the_queue(tmp_path):
    from acmemodel.clusters import cluster_gpus
    from acmemodel.synth import cluster_queue

    assert cluster_gpus("Seren") == 2288 and cluster_gpus("Kalos") == 2416
    jobs = simulate_jobs(arrival=_arrival(eval_rate=300, pre_rate=10), runtime=FakeRuntime(), days=5, seed=4,
                         fill_queue=cluster_queue(total_gpus=16))
    cpu = jobs["gpu_num"] == 0
    assert (jobs.loc[cpu, "queue_s"] == 0).all()
    gpu = jobs[~cpu]
    big = gpu["gpu_num"] > 16  # Pretrain 64+ GPUs can never fit 16 GPUs: never started
    assert gpu.loc[big, "start_s"].isna().all() and gpu.loc[~big, "start_s"].notna().all()
    assert (gpu.loc[~big, "queue_s"] >= 0).all() and (gpu.loc[~big, "queue_s"] > 0).mean() > 0.1
    path = write_acmetrace(to_acmetrace(jobs), tmp_path / "trace_seren.csv")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tr = load_trace(path)
    assert len(tr.rejected) == 0
    assert np.allclose(tr.jobs.loc[tr.jobs["started"], "queue_s"].to_numpy(),
                       jobs.loc[jobs["start_s"].notna(), "queue_s"].to_numpy())
    with pytest.raises(ValueError, match="total_gpus"):
        cluster_queue(total_gpus=10)


def test_restart_gap_sampler_uses_the_failure_local_calendar():
    """The RestartModel covariates hour/weekend of a failure are those the model was fitted with
    (features.calendar on end_s in the cluster's local time)."""
    import numpy as np
    import pandas as pd

    from acmemodel.features.calendar import calendar_features
    from acmemodel.synth import _restart_gap_sampler

    class Stub:
        fallback_ = False

        def predict(self, X, component):
            self.X, self.component = X, component

            class D:
                def sample(self_, n, rng):
                    return np.ones((len(X), n))
            return D()

    stub = Stub()
    # 2023-03-04 is a Saturday; 23:30 UTC is already Sunday 07:30 at +08:00
    t = pd.to_datetime(["2023-03-03 15:59:59", "2023-03-03 16:00:00", "2023-03-04 23:30:00"], utc=True)
    end = (t.asi8 / 1e9).astype(float)
    rows = pd.DataFrame({"type": "Pretrain", "gpu_num": [8, 16, 1024], "attempt": [1, 2, 3], "end_s": end})
    gaps = _restart_gap_sampler(stub, "+08:00")(rows, np.random.default_rng(0))
    assert gaps.shape == (3,) and stub.component == "gap"
    assert stub.X["hour"].tolist() == [23.0, 0.0, 7.0]
    assert stub.X["weekend"].tolist() == [False, True, True]
    cal = calendar_features(rows.assign(cluster="Seren"), {"Seren": "+08:00"}, time_col="end_s")
    assert stub.X["hour"].tolist() == cal["hour"].astype(float).tolist()


def test_cli_queue_sim_runs_the_calibrated_policy(tmp_path):
    """`synth --queue sim` on the default bundle simulates the policy its calibration chose (reservation,
    Eval last, best effort, start-up latency), as reproduce does: evaluation has the lowest <= 1 s share
    and it is near the published ~47 % (bar 5 pp plus 3 binomial standard errors of the sample)."""
    from typer.testing import CliRunner

    from acmemodel.cli import app

    out = tmp_path / "q.csv"
    r = CliRunner().invoke(app, ["synth", "--days", "7", "--cluster", "Seren", "--queue", "sim", "--seed", "3",
                                 "-o", str(out), "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    assert doc["queue_policy"]["source"] == "bundle calibration" and "pretrain" in doc["queue_policy"]["partitions"]
    assert "calibrated policy" in doc["queue"]
    d = pd.read_csv(out)
    d = d[d["gpu_num"] > 0]
    le1 = d.groupby("type")["queue"].agg(lambda s: float((s <= 1).mean()))
    n = d.groupby("type").size()
    others = le1.drop("Eval")[n.drop("Eval") >= 300]
    assert len(others) >= 3 and le1["Eval"] < others.min(), le1.to_dict()
    se = math.sqrt(0.47 * 0.53 / n["Eval"])
    assert abs(le1["Eval"] - 0.47) <= 0.05 + 3 * se, (le1["Eval"], int(n["Eval"]))
    # a smaller cluster keeps the reservation's fraction (whole nodes)
    r = CliRunner().invoke(app, ["synth", "--days", "2", "--cluster", "Seren", "--queue", "sim", "--gpus", "1144",
                                 "-o", str(tmp_path / "h.csv"), "--json"])
    assert r.exit_code == 0, r.output
    parts = json.loads(r.output)["queue_policy"]["partitions"]
    from acmemodel import load_default

    full = load_default().calibration("Seren")["policy"]["reservation_gpus"]  # of 2,288 GPUs
    assert sum(parts.values()) == 1144 and parts["pretrain"] % 8 == 0
    assert parts["pretrain"] == round(full * 1144 / 2288 / 8) * 8
