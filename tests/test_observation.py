"""What real schedulers record, read as they mean it: ended vs alive (right censoring) from the
deletion time against the extraction time, left truncation (rows that existed before the trace began),
unknown SWF waits, named time zones with their daylight-saving rules, and the record accounting of
every importer (records in = accepted + left-truncated + folded + quarantined − expanded). Small
handwritten fixtures state their truth row by row; the real logs of ``../shared/data/real/`` are read
through the ``real_data`` fixture."""
from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from acmemodel.errors import DataWarning
from acmemodel.trace import load_trace

D = Path(__file__).parent / "data" / "importers"
T0 = pd.Timestamp("2024-01-01", tz="UTC").value / 1e9  # --origin of the k8s fixture


def load(path, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)
        return load_trace(path, **kw)


def convert_json(args):
    from typer.testing import CliRunner

    from acmemodel.cli import app

    r = CliRunner().invoke(app, ["convert", *map(str, args), "--json"])
    assert r.exit_code == 0, r.output
    return json.loads(r.output)


# ------------------------------------------------------------------------------ k8s lifecycle
@pytest.fixture(scope="module")
def lifecycle():
    t = load(D / "k8s_lifecycle.csv", format="k8s", origin="2024-01-01")
    j = t.jobs.set_index("job_id")
    for c in ("submit_s", "start_s", "end_s"):
        j[c] = j[c] - T0
    return t, j


# the truth of every row of k8s_lifecycle.csv (times in seconds from the origin; extraction = 1000,
# the latest timestamp): state, started, run_s, queue_s, run censored, queue censored, left truncated,
# age at entry
TRUTH = {
    "done": ("COMPLETED", True, 90, 10, False, False, False, np.nan),
    "killed": ("CANCELLED", True, 480, 0, False, False, False, np.nan),  # Running, deleted at 500 < 1000
    "alive": ("RUNNING", True, 960, 10, True, False, False, np.nan),  # no deletion: censored at 1000
    "alive_at_end": ("RUNNING", True, 940, 10, True, False, False, np.nan),  # deleted at the trace end
    "gave_up": ("CANCELLED", False, np.nan, 200, False, True, False, np.nan),  # Pending, deleted at 300
    "waiting": ("PENDING", False, np.nan, 800, False, True, False, np.nan),  # still pending at 1000
    "old_ended": ("CANCELLED", True, 400, np.nan, False, False, True, np.nan),  # before the trace, age unknown
    "old_alive": ("RUNNING", True, 1000, np.nan, True, False, True, np.nan),  # left- and right-censored
    "old_known": ("FAILED", True, 900, np.nan, False, False, True, 300),  # scheduled at −300: delayed entry
    "old_wait": ("COMPLETED", True, 650, np.nan, False, False, False, np.nan),  # created before, run whole
}


def test_k8s_ended_vs_alive_and_left_truncation_row_by_row(lifecycle):
    t, j = lifecycle
    assert sorted(j.index) == sorted(TRUTH)
    for pod, (state, started, run, queue, rc, qc, lt, age) in TRUTH.items():
        r = j.loc[pod]
        assert (r["state"], bool(r["started"])) == (state, started), pod
        np.testing.assert_equal(r["run_s"], run, err_msg=pod)
        np.testing.assert_equal(r["queue_s"], queue, err_msg=pod)
        assert (bool(r["run_censored"]), bool(r["queue_censored"]), bool(r["left_truncated"])) == (rc, qc, lt), pod
        np.testing.assert_equal(r["entry_age_s"], age, err_msg=pod)
    assert t.extracted_at_s == T0 + 1000
    assert t.rejected_by_reason() == {"unknown_phase": 1, "unparsable_timestamp": 1}
    rep = t.imports[0]
    assert (rep["left_truncated"], rep["unknown_waits"], rep["right_censored"], rep["ended_while_running"]) == (
        3, 1, 4, 2)  # ended while running: "killed" and "old_ended"


def test_k8s_extraction_time_given(tmp_path):
    t = load(D / "k8s_lifecycle.csv", format="k8s", origin="2024-01-01",
             extracted_at=pd.Timestamp(T0 + 600, unit="s", tz="UTC").isoformat())
    j = t.jobs.set_index("job_id")
    assert j.loc["killed", "state"] == "CANCELLED"  # deleted at 500, before the extraction at 600
    r = j.loc["alive_at_end"]  # deleted at 1000, after the extraction: alive then, censored at 600
    assert r["state"] == "RUNNING" and r["run_censored"] and r["run_s"] == 600 - 60
    assert j.loc["old_alive", "run_s"] == 600 and j.loc["old_alive", "run_censored"]


def test_k8s_truncation_survives_convert(tmp_path):
    out = tmp_path / "pods.csv"
    s = convert_json(["--from", "k8s", D / "k8s_lifecycle.csv", "-o", out, "--origin", "2024-01-01"])
    assert s["accounting"]["left_truncated"] == 3 and s["accounting"]["balanced"]
    a = load(D / "k8s_lifecycle.csv", format="k8s", origin="2024-01-01").jobs.set_index("job_id")
    b = load(out, cluster="pods").jobs.set_index("job_id").loc[a.index]
    for c in ("state", "left_truncated", "run_censored", "queue_censored"):
        assert list(a[c]) == list(b[c]), c
    for c in ("run_s", "queue_s", "entry_age_s", "submit_s"):
        np.testing.assert_allclose(a[c].to_numpy(float), b[c].to_numpy(float), atol=1.0, err_msg=c)


# ------------------------------------------------------------------------------ record accounting
@pytest.mark.parametrize("fmt,src,kw,expect", [
    # (records in, accepted, left-truncated, folded, quarantined, expanded)
    ("slurm", "sacct_parsable2.txt", ["--timezone", "+08:00"], (28, 19, 0, 8, 3, 2)),
    ("swf", "sample.swf", [], (11, 7, 0, 0, 4, 0)),
    ("helios", "cluster_log.csv", [], None),
    ("philly", "cluster_job_log", ["--timezone", "-07:00"], None),
    ("pai2020", "pai_job_table.csv", [], None),
    ("k8s", "openb_pod_list_default.csv", [], (8, 6, 0, 0, 2, 0)),
    ("k8s", "k8s_lifecycle.csv", ["--origin", "2024-01-01"], (12, 7, 3, 0, 2, 0)),
])
def test_every_importer_accounts_for_every_record(tmp_path, fmt, src, kw, expect):
    s = convert_json(["--from", fmt, D / src, "-o", tmp_path / "x.csv", *kw])
    a = s["accounting"]
    assert a["balanced"]
    assert a["records_in"] == a["accepted"] + a["left_truncated"] + a["folded"] + a["quarantined"] - a["expanded"]
    assert a["accepted"] + a["left_truncated"] == s["jobs_written"] and a["quarantined"] == s["rejected"]
    if expect is not None:
        assert tuple(a[k] for k in ("records_in", "accepted", "left_truncated", "folded", "quarantined",
                                    "expanded")) == expect


# ------------------------------------------------------------------------------ SWF unknown waits
SWF = """; UnixStartTime: 1700000000
; TimeZoneString: UTC
    1      0     30    600     8   -1   -1     8   -1   -1  1   1  -1  -1  1  -1  -1  -1
    2     60     -1   1200     8   -1   -1     8   -1   -1  1   1  -1  -1  1  -1  -1  -1
    3    120      0    300     8   -1   -1     8   -1   -1  0   1  -1  -1  1  -1  -1  -1
    4    180     -1     60     8   -1   -1     8   -1   -1  1   1  -1  -1  1  -1  -1  -1
"""


def test_swf_unknown_wait_is_missing_not_zero(tmp_path):
    from acmemodel.describe import describe
    from acmemodel.models.queue import QueueModel

    f = tmp_path / "w.swf"
    f.write_text(SWF)
    t = load(f, format="swf")
    j = t.jobs.set_index("job_id")
    assert j.loc["1", "queue_s"] == 30 and j.loc["3", "queue_s"] == 0  # a recorded 0 stays 0
    assert np.isnan(j.loc["2", "queue_s"]) and np.isnan(j.loc["4", "queue_s"])  # -1: unknown
    assert j.loc["2", "run_s"] == 1200 and j.loc["2", "start_s"] == j.loc["2", "submit_s"]
    assert t.imports[0]["unknown_waits"] == 2
    assert describe(t)["clusters"]["w"]["observation"] == {"left_truncated": 0, "unknown_waits": 2}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        q = QueueModel(min_jobs=1, min_jobs_coarsest=1).fit(t)
    assert q.n_fit_ == 2  # the two recorded waits only


# ------------------------------------------------------------------------------ models
def _weibull_jobs(n: int, seed: int, k: float, scale: float, window: float, before: float) -> pd.DataFrame:
    """Runs starting uniformly over [−before, window], failing at Weibull(k, scale) run times, seen in
    [0, window]: the ones alive at 0 are left-truncated (known start: delayed entry at age −start),
    the ones alive at ``window`` right-censored; the ones over before 0 are never seen."""
    rng = np.random.default_rng(seed)
    start = rng.uniform(-before, window, n)
    end = start + scale * rng.weibull(k, n)
    seen = end > 0
    start, end = start[seen], end[seen]
    cens = end > window
    lt = start < 0
    return pd.DataFrame({
        "cluster": "X", "type": "Pretrain", "gpu_num": rng.choice([1.0, 8.0, 64.0], len(start)), "is_gpu": True,
        "started": True, "run_s": np.minimum(end, window) - start, "run_censored": cens,
        "analysis_state": np.where(cens, "RUNNING", "FAILED"), "submit_s": start,
        "left_truncated": lt, "entry_age_s": np.where(lt, -start, np.nan)})


def test_failure_model_delayed_entry_recovers_the_truth():
    from acmemodel.models.failure import FailureModel

    jobs = _weibull_jobs(6000, 1, k=0.7, scale=20_000.0, window=200_000.0, before=400_000.0)
    n_lt = int(jobs["left_truncated"].sum())
    assert n_lt > 150
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = FailureModel(regimes=1, compare=False).fit(jobs)
        naive = FailureModel(regimes=1, compare=False).fit(jobs.drop(columns=["left_truncated", "entry_age_s"]))
    assert m.n_delayed_entry_ == n_lt and m.n_left_truncated_excluded_ == 0
    se_log_k = np.log(m.shape_ci_[1] / m.shape_ci_[0]) / (2 * 1.96)
    assert abs(np.log(m.shape_ / 0.7)) < 3 * se_log_k
    # ~2,000 failures: sd of log scale ≈ 1 / (k √n) ≈ 0.03; 0.1 is over 3 sd. Read from 0 instead of
    # from the entry, the length-biased truncated runs push the scale up by ~25 %.
    assert abs(np.log(m.scale_s_ / 20_000.0)) < 0.1
    assert np.log(naive.scale_s_ / 20_000.0) > 0.15
    # an unknown age (start unknown): left out, counted
    j2 = jobs.assign(entry_age_s=np.nan)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m2 = FailureModel(regimes=1, compare=False).fit(j2)
    assert m2.n_left_truncated_excluded_ == n_lt and m2.n_fit_ == len(jobs) - n_lt


def test_runtime_model_leaves_truncated_runs_out(lifecycle):
    from acmemodel.models.runtime import RuntimeModel

    t, _ = lifecycle
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = RuntimeModel(keys=(), min_jobs=1, min_jobs_coarsest=1).fit(t)
    assert m.n_left_truncated_ == 3
    assert m.n_fit_ == int((t.jobs["started"] & ~t.jobs["left_truncated"]).sum())


# ------------------------------------------------------------------------------ real logs
def test_instance_trace_imports_as_it_is(real_data):
    t = load(real_data / "disaggregated_DLRM_trace.csv", format="k8s")
    j = t.jobs
    rep = t.imports[0]
    # 23,871 instances: 7,280 (30.5 %) without a creation time existed before the trace began
    assert rep["records_in"] == 23_871 and len(t.rejected) == 0 and len(j) == 23_871
    assert rep["left_truncated"] == int(j["left_truncated"].sum()) == 7_280
    # alive at the end: 4,677 of the pre-existing rows and 4,201 created inside (no deletion time), and
    # one deleted at the latest timestamp of the file (the extraction time)
    assert int(j["run_censored"].sum()) == rep["right_censored"] == 4_677 + 4_201 + 1
    assert int((j["left_truncated"] & j["run_censored"]).sum()) == 4_677
    assert j.loc[j["left_truncated"], "queue_s"].isna().all()
    assert set(j["type"]) == {"HN", "CN"} and set(t.extras["job_name"]).issuperset({"app_0"})


def test_nasa_swf_unknown_waits_and_daylight_saving(real_data):
    from acmemodel.features.calendar import calendar_features

    t = load(real_data / "NASA-iPSC-1993-3.1-cln.swf", format="swf")
    j = t.jobs
    assert len(j) == 18_239 and t.imports[0]["unknown_waits"] == 18_239 and j["queue_s"].isna().all()
    assert t.timezones[j["cluster"].iloc[0]] == "US/Pacific"
    # US/Pacific left daylight saving on 1993-10-31 at 09:00 UTC (2 am PDT → 1 am PST)
    dst_end = pd.Timestamp("1993-10-31 09:00", tz="UTC").value / 1e9
    cal = calendar_features(j, t.timezones)
    utc_hour = np.floor(j["submit_s"].to_numpy() % 86400 / 3600)
    for lo, hi, off in ((dst_end - 3 * 86400, dst_end, -7), (dst_end, dst_end + 3 * 86400, -8)):
        m = (j["submit_s"] >= lo).to_numpy() & (j["submit_s"] < hi).to_numpy()
        assert m.sum() > 50
        np.testing.assert_array_equal(cal["hour"].to_numpy()[m], (utc_hour[m] + off) % 24)


def test_queue_model_not_fitted_without_a_recorded_wait(tmp_path):
    from acmemodel.pipeline import fit_bundle

    f = tmp_path / "nowait.swf"
    f.write_text("\n".join(line.replace("   30 ", "   -1 ").replace("      0    300", "     -1    300")
                           for line in SWF.splitlines()) + "\n")
    t = load(f, format="swf")
    assert t.jobs["queue_s"].isna().all() and t.imports[0]["unknown_waits"] == 4
    with pytest.warns(DataWarning, match="records no waits"):
        b = fit_bundle(t.jobs, t.timezones, models=["queue"])
    assert "queue" not in b.models and "records no waits" in b.provenance["fit_notes"]["queue"][0]


def test_arrival_model_does_not_count_left_truncated_rows_as_arrivals(lifecycle):
    from acmemodel.models.arrival import ArrivalModel

    t, _ = lifecycle
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = ArrivalModel().fit(t)
    assert m.n_fit_ == len(t.jobs) - 3  # the three rows that entered at the trace start
