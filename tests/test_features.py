"""Feature definitions: buckets, calendar, user history (no leakage), restart chains, batches."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings, strategies as st

from acmemodel.features import backoff_chain, build_features, bucket_labels, gpu_bucket, normalize_key
from acmemodel.features.calendar import calendar_features
from acmemodel.features.chains import batches, restart_chains
from acmemodel.features.history import user_history


def jobs_frame(rows):
    """rows: (user, type, gpus, state, submit_s, run_s[, queue_s]) → contract-shaped frame."""
    out = []
    for r in rows:
        user, typ, gpus, state, sub, run = r[:6]
        q = r[6] if len(r) > 6 else 0.0
        out.append(dict(cluster="Seren", user=user, type=typ, gpu_num=gpus, state=state,
                        analysis_state={"TIMEOUT": "FAILED", "NODE_FAIL": "FAILED"}.get(state, state),
                        submit_s=float(sub), start_s=float(sub + q), end_s=float(sub + q + run),
                        run_s=float(run), queue_s=float(q)))
    return pd.DataFrame(out)


def test_gpu_buckets_and_custom_edges():
    assert list(gpu_bucket([0, 1, 2, 8, 9, 64, 65, 256, 257, 1024, 1025, 4096])) == [
        "0", "1", "2-8", "2-8", "9-64", "9-64", "65-256", "65-256", "257-1024", "257-1024", ">1024", ">1024"]
    assert bucket_labels((4, 32)) == ["0", "1-4", "5-32", ">32"]
    assert gpu_bucket(5, (4, 32)) == "5-32"
    with pytest.raises(ValueError, match="edges"):
        gpu_bucket(3, (8, 4))
    assert normalize_key(gpus=512, type="Pretrain") == {"gpu_bucket": "257-1024", "type": "Pretrain"}
    with pytest.raises(ValueError, match="colour"):
        normalize_key(colour="red")


def test_backoff_order():
    chain = backoff_chain({"cluster": "Seren", "type": "Eval", "state": "FAILED", "gpu_bucket": "1"})
    assert [c.label() for _, c in chain] == [
        "Seren/Eval/FAILED/1", "Seren/Eval/*/1", "Seren/Eval/*/*", "*/Eval/*/*", "*/*/*/*"]


def test_calendar_local_time():
    j = pd.DataFrame({"cluster": ["Seren", "Kalos"],
                      "submit_s": [pd.Timestamp("2023-03-04 17:30", tz="UTC").timestamp()] * 2})
    c = calendar_features(j)
    # Saturday 17:30 UTC = Sunday 01:30 in Seren (+08:00), Saturday 17:30 in Kalos
    assert c["hour"].tolist() == [1, 17]
    assert c["dow"].tolist() == [6, 5]
    assert c["weekend"].tolist() == [True, True]


def test_user_history_values():
    j = jobs_frame([
        ("a", "Eval", 1, "FAILED", 0, 10),       # ends at 10
        ("a", "Eval", 1, "COMPLETED", 5, 100),   # ends at 105, running when job 3 is submitted
        ("a", "Eval", 1, "COMPLETED", 50, 30),   # sees job 1 only
        ("a", "Eval", 1, "COMPLETED", 200, 1),   # sees jobs 1-3
        ("b", "Eval", 1, "COMPLETED", 300, 1),   # other user: nothing
    ])
    h = user_history(j)
    assert h["user_prior_jobs"].tolist() == [0, 1, 2, 3, 0]
    assert np.isnan(h.loc[0, "user_prior_median_run_s"])
    assert h.loc[2, "user_prior_median_run_s"] == 10 and h.loc[2, "user_prior_fail_frac"] == 1.0
    assert h.loc[3, "user_prior_median_run_s"] == 30 and h.loc[3, "user_prior_fail_frac"] == pytest.approx(1 / 3)
    assert np.isnan(h.loc[4, "user_prior_fail_frac"])


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2), st.integers(0, 1000), st.integers(0, 500),
                          st.booleans()), min_size=1, max_size=40))
def test_user_history_no_leakage(rows):
    """Changing anything about jobs that end at or after s_j leaves job j's history unchanged,
    and the history equals a brute-force computation from the past only."""
    j = jobs_frame([(f"u{u}", "Eval", 1, "FAILED" if f else "COMPLETED", s, r) for u, s, r, f in rows])
    h = user_history(j)
    for i in range(len(j)):
        same = j[(j.user == j.user[i]) & (j.index != i)]
        ended = same[same.end_s < j.submit_s[i]]
        assert h.user_prior_jobs[i] == (same.submit_s < j.submit_s[i]).sum()
        if len(ended):
            assert h.user_prior_median_run_s[i] == pytest.approx(ended.run_s.median())
            assert h.user_prior_fail_frac[i] == pytest.approx((ended.analysis_state == "FAILED").mean())
        else:
            assert np.isnan(h.user_prior_median_run_s[i]) and np.isnan(h.user_prior_fail_frac[i])


def test_user_history_jobs_without_end_time():
    """A job with no end time (NaN end_s) never counts as ended; it no longer corrupts the history of
    the other users' jobs (a NaN inside the sorted end keys broke the binary search)."""
    rng = np.random.default_rng(1)
    for _ in range(30):
        n = 30
        j = pd.DataFrame(dict(cluster="Seren", user=rng.choice(["a", "b", "c"], n), type="SFT",
                              submit_s=rng.integers(0, 100, n).astype(float)))
        j["end_s"] = j["submit_s"] + rng.integers(0, 50, n)
        j.loc[rng.random(n) < 0.15, "end_s"] = np.nan
        j["run_s"] = np.where(rng.random(n) < 0.8, j["end_s"] - j["submit_s"], np.nan)
        j["analysis_state"] = rng.choice(["FAILED", "COMPLETED"], n)
        h = user_history(j)
        for i in range(n):
            ended = j[(j.user == j.user[i]) & (j.end_s < j.submit_s[i])]
            started = ended.run_s.dropna()
            frac = (ended.analysis_state == "FAILED").mean() if len(ended) else np.nan
            med = started.median() if len(started) else np.nan
            assert np.isclose(h.user_prior_fail_frac[i], frac, equal_nan=True)
            assert np.isclose(h.user_prior_median_run_s[i], med, equal_nan=True)


def test_restart_chains():
    j = jobs_frame([
        ("a", "Pretrain", 512, "FAILED", 0, 1000),          # 0: fails at 1000
        ("a", "Pretrain", 512, "NODE_FAIL", 1600, 500, 100),  # 1: restart 600 s later, queue 100, fails
        ("a", "Pretrain", 512, "COMPLETED", 2500, 9000),     # 2: restart of 1 (gap 300)
        ("a", "Pretrain", 256, "COMPLETED", 1100, 10),       # 3: other size: not a restart
        ("b", "Pretrain", 512, "FAILED", 0, 10),             # 4: never restarted within 24 h
        ("b", "Pretrain", 512, "COMPLETED", 10 + 90000, 10),  # 5: too late (25 h)
        # the chance rate needs evidence: 16 completed jobs of the same stratum that nobody followed
    ] + [(f"u{k}", "Pretrain", 512, "COMPLETED", 200000.0 * (2 * k + i), 10) for k in range(8) for i in range(2)])
    c = restart_chains(j)
    assert c["attempt"].tolist() == [1, 2, 3, 1, 1, 1] + [1] * 16
    assert c.loc[0, "chain_id"] == c.loc[1, "chain_id"] == c.loc[2, "chain_id"]
    assert len(set(c["chain_id"][:6])) == 4
    # without that evidence (two completed jobs) the stratum's links are not trusted
    assert restart_chains(j.iloc[:6].reset_index(drop=True))["attempt"].max() == 1
    assert c.loc[1, "restart_gap_s"] == 600 and c.loc[2, "restart_gap_s"] == 2500 - 2200
    assert c.loc[0, "next_restart_gap_s"] == 600 and c.loc[0, "next_queue_s"] == 100
    assert c.loc[0, "next_index"] == 1 and c.loc[1, "prev_index"] == 0 and c.loc[2, "next_index"] == -1
    assert np.isnan(c.loc[4, "next_restart_gap_s"])
    c2 = restart_chains(j, window_s=100)
    assert c2["attempt"].max() == 1


def test_batches():
    j = jobs_frame([("a", "Eval", 1, "COMPLETED", t, 1) for t in (0, 10, 50, 200, 230)]
                   + [("b", "Eval", 1, "COMPLETED", 5, 1)])
    b = batches(j, gap_s=60)
    assert b["batch_size"].tolist() == [3, 3, 3, 2, 2, 1]
    assert b.loc[0, "batch_id"] == b.loc[2, "batch_id"] != b.loc[3, "batch_id"]


def test_build_features_on_sample(sample_trace):
    f = build_features(sample_trace)
    for c in ("gpu_bucket", "hour", "dow", "weekend", "user_prior_jobs", "chain_id", "attempt",
              "restart_gap_s", "batch_id", "batch_size"):
        assert c in f.columns
    assert len(f) == len(sample_trace.jobs)
    assert (f["attempt"] > 1).any()  # the sample has restart chains
    assert (f.loc[f["type"] == "Eval", "batch_size"] > 1).mean() > 0.5  # eval bursts


def test_type_bucket_groups_are_the_pandas_groupby():
    """features.keys.type_bucket_groups (factorize + sort of the distinct keys) yields exactly what
    DataFrame({type as str, GPU bucket}).groupby(sort=True).indices gives: keys, order, positions —
    including CPU jobs, values that are one string (1 and "1"), None and NaN, and no jobs."""
    from acmemodel.features.keys import gpu_bucket, type_bucket_groups

    def ref(types, gpus):
        key = pd.DataFrame({"t": np.asarray(types, dtype=object).astype(str), "b": gpu_bucket(np.asarray(gpus))})
        return [(t, b, idx) for (t, b), idx in key.groupby(["t", "b"], sort=True).indices.items()]

    rng = np.random.default_rng(5)
    kinds = np.array(["Eval", "Pretrain", "SFT", "MLLM", "Debug", "Other"], dtype=object)
    cases = [(rng.choice(kinds, 3000), rng.choice([0, 1, 2, 8, 16, 64, 256, 512, 1024, 4096], 3000)),
             (np.array([1, "1", "a", None, np.nan, "b"], dtype=object), np.array([1, 1, 2, 8, 8, 0])),
             (np.array(["b", "a", "b"]), np.array([5, 5, 1])), (np.array([], dtype=object), np.array([], dtype=int))]
    for types, gpus in cases:
        got, want = list(type_bucket_groups(types, gpus)), ref(types, gpus)
        assert [(t, b) for t, b, _ in got] == [(t, b) for t, b, _ in want]
        assert all(np.array_equal(a, w) for (_, _, a), (_, _, w) in zip(got, want))
