"""The out-of-core ``fit`` (issue 34): a trace read file by file, exact models on every job, the others on a
seeded proportional stratified sample; the same bundle in-process and on a 2-worker LocalCluster."""
import json

import numpy as np
import pandas as pd
import pytest

from acmemodel.pipeline import UNUSED_COLUMNS, fit_streamed, sample_strata, stratified_sample
from acmemodel.trace.stream import expand, stream_trace

#: the models of the stream tests: two exact, three sampled (the predictor and failure model cost most)
MODELS = ["runtime", "queue", "gpu_counts", "arrival", "restart"]
DASK_MODELS = ["runtime", "queue", "gpu_counts"]


def _models_doc(bundle) -> str:
    doc, files = bundle._document()
    return json.dumps({"models": doc["models"], "files": files}, sort_keys=True)


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    """6,000 synthetic jobs of two clusters over three months, one Parquet file per cluster x month, the
    cluster's description in each file's metadata (as ``acmemodel convert`` writes it)."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    try:
        from bench_fit_scale import write_fleet
    finally:
        sys.path.pop(0)
    d = tmp_path_factory.mktemp("fleet")
    n = write_fleet(d, 6000, clusters=2, days=91.0)
    assert n == 6
    return d


@pytest.fixture(scope="module")
def streamed(fleet):
    return stream_trace([fleet], drop=UNUSED_COLUMNS)


def test_stream_trace_is_the_whole_read(fleet, streamed):
    from acmemodel.pipeline import drop_unused_columns
    from acmemodel.trace import load_trace

    whole = load_trace([fleet])
    drop_unused_columns(whole.jobs)
    got = expand(streamed.jobs)
    pd.testing.assert_frame_equal(got, whole.jobs[got.columns.tolist()])
    assert list(got.columns) == list(whole.jobs.columns)
    assert streamed.timezones == whole.timezones and streamed.cluster_specs == whole.cluster_specs
    assert [f.as_dict() for f in streamed.files] == [f.as_dict() for f in whole.files]
    # compact: the string columns categorical
    assert isinstance(streamed.jobs["user"].dtype, pd.CategoricalDtype)


def test_duplicate_ids_across_files_are_counted_like_the_whole_read(tmp_path, fleet):
    import shutil

    from acmemodel.trace import load_trace

    files = sorted(fleet.glob("*.parquet"))[:2]
    for f in files:
        shutil.copy(f, tmp_path / f.name)
    shutil.copy(files[0], tmp_path / ("z" + files[0].name))  # every row again, in a later file
    whole = load_trace([tmp_path])
    st = stream_trace([tmp_path])
    assert st.n_rejected == len(whole.rejected) > 0
    assert st.rejected_by_reason == {"duplicate_job_id": len(whole.rejected)}
    assert len(st.jobs) == len(whole.jobs)
    assert [f.accepted for f in st.files] == [f.accepted for f in whole.files]


def test_whole_trace_columns_in_chunks_and_per_cluster_are_the_whole_computation(streamed, monkeypatch):
    """The user history in chunks of whole (cluster, user) groups and free-at-submit one cluster at a time give
    the values of one computation on every job."""
    import acmemodel.pipeline as P
    from acmemodel.features.history import user_history
    from acmemodel.models.queue import FREE_COLUMN, free_at_submit

    jobs = streamed.jobs[[c for c in P.WHOLE_TRACE_COLUMNS if c in streamed.jobs.columns]]
    monkeypatch.setattr(P, "HISTORY_CHUNK_ROWS", 1000)
    got = P.whole_trace_columns(jobs, ["predictor", "queue"], {})
    full = expand(jobs)
    want = user_history(full)
    for c in want.columns:
        np.testing.assert_array_equal(got[c].to_numpy(), want[c].to_numpy())
    np.testing.assert_array_equal(got[FREE_COLUMN].to_numpy(), free_at_submit(full))
    assert 0 < got[FREE_COLUMN].mean() < 1
    # only some rows' values (a sample's): those rows of the whole computation
    rows = np.sort(np.random.default_rng(0).choice(len(jobs), 700, replace=False))
    some = P.whole_trace_columns(jobs, ["predictor", "queue"], {}, rows=rows)
    assert list(some.columns) == list(got.columns) and len(some) == 700
    for c in got.columns:
        np.testing.assert_array_equal(some[c].to_numpy(), got[c].to_numpy()[rows])


def test_memory_setting_sizes_the_sample():
    from acmemodel.pipeline import (DEFAULT_SAMPLE_ROWS, STREAM_BASE_BYTES, STREAM_FIT_BYTES_PER_JOB,
                                    sample_rows_for, stream_memory_needed)

    assert sample_rows_for(5e9, 10_000_000) == min(DEFAULT_SAMPLE_ROWS, int(
        (5e9 - STREAM_BASE_BYTES - 10_000_000 * STREAM_FIT_BYTES_PER_JOB) // 1000))
    assert sample_rows_for(1e9, 10_000_000) == 0  # the whole-trace part alone does not fit
    rows = sample_rows_for(4.5e9, 10_000_000)
    assert 0 < rows and stream_memory_needed(10_000_000, rows) <= 4.5e9
    assert sample_rows_for(4.5e9, 1_000) == 1_000_000  # (the default cap; a trace of fewer jobs uses all)
    # the fleet trace of docs/fit_scale.md (10M jobs) in 4 GB: the default sample
    assert sample_rows_for(4e9, 10_000_000) == DEFAULT_SAMPLE_ROWS
    assert stream_memory_needed(10_000_000, DEFAULT_SAMPLE_ROWS) <= 4e9


def test_stratified_sample_is_proportional_and_seeded(streamed):
    jobs = streamed.jobs
    n = len(jobs)
    idx, d = stratified_sample(jobs, 1500, seed=3)
    codes = sample_strata(jobs)
    n_h, k_h = np.bincount(codes), np.bincount(codes[idx], minlength=codes.max() + 1)
    f = 1500 / n
    assert d["fraction"] == pytest.approx(f) and d["rows_sampled"] == len(idx) and d["strata"] == len(n_h)
    # every stratum keeps its share to within one job (stochastic rounding of f * n_h)
    assert np.all(np.abs(k_h - f * n_h) < 1)
    # the total: a sum of independent roundings, sd <= sqrt(strata) / 2
    assert abs(len(idx) - 1500) <= 4 * np.sqrt(len(n_h)) / 2 + 1
    assert np.all(np.diff(idx) > 0)
    again, _ = stratified_sample(jobs, 1500, seed=3)
    other, _ = stratified_sample(jobs, 1500, seed=4)
    assert np.array_equal(idx, again) and not np.array_equal(idx, other)
    every, d1 = stratified_sample(jobs, n, seed=3)
    assert np.array_equal(every, np.arange(n)) and d1["fraction"] == 1.0


def test_each_job_is_kept_with_probability_f(streamed):
    """Inclusion frequency over 200 seeds: binomial(200, f) per job; its mean over jobs is f to within
    4 standard errors of that mean."""
    jobs = streamed.jobs
    n, rows, reps = len(jobs), 1200, 200
    hits = np.zeros(n)
    for s in range(reps):
        hits[stratified_sample(jobs, rows, seed=s)[0]] += 1
    f = rows / n
    se = np.sqrt(f * (1 - f) / reps / n)
    assert abs(hits.mean() / reps - f) < 4 * se + 1 / n
    # no job is excluded or forced in by the design: per-job frequency within the binomial's range
    assert hits.min() > 0 and hits.max() < reps


def test_unsampled_streamed_fit_is_the_in_memory_fit(fleet, streamed):
    from acmemodel.features.names import jobs_with_extras
    from acmemodel.pipeline import drop_unused_columns, fit_bundle
    from acmemodel.trace import load_trace

    whole = load_trace([fleet])
    drop_unused_columns(whole.jobs)
    mem = fit_bundle(jobs_with_extras(whole), whole.timezones, models=MODELS, clusters=whole.cluster_specs)
    st = fit_streamed(streamed, sample_rows=len(streamed.jobs), models=MODELS)
    assert _models_doc(st) == _models_doc(mem)
    assert st.provenance["sample"]["fraction"] == 1.0
    assert st.provenance["sample"]["exact_models"] == ["gpu_counts", "arrival", "restart"]


def test_sampled_fit_on_a_local_cluster_is_the_in_process_fit(tmp_path, fleet):
    """``fit --workers 2`` (files read and models fitted on a 2-worker LocalCluster) against the in-process
    streamed fit, both sampled: the same bundle."""
    pytest.importorskip("dask.distributed")
    from acmemodel.cli import main
    from acmemodel.models.bundle import Bundle

    base = ["fit", str(fleet), "--sample", "2000", "--seed", "7", "--json"] + sum((["--model", m] for m in DASK_MODELS), [])
    for out, extra in (("local", []), ("remote", ["--workers", "2"])):
        with pytest.raises(SystemExit) as e:
            main(base + ["-o", str(tmp_path / out)] + extra)
        assert e.value.code in (0, None)
    local, remote = Bundle.load(tmp_path / "local"), Bundle.load(tmp_path / "remote")
    assert _models_doc(remote) == _models_doc(local)
    s = local.provenance["sample"]
    assert s["rows"] == 6000 and s["seed"] == 7 and s["fraction"] == pytest.approx(2000 / 6000)
    assert abs(s["rows_sampled"] - 2000) < 50
    assert s["sampled_models"] == ["runtime", "queue"] and s["exact_models"] == ["gpu_counts"]
    # exact models are fitted on every job: the GPU-count model counts all 6,000
    assert local.get("gpu_counts").n_fit_ == 6000
    assert remote.provenance["sample"]["rows_sampled"] == s["rows_sampled"]
    assert remote.provenance["files"] == local.provenance["files"]


def test_sampled_runtime_medians_agree_with_the_whole_trace(streamed):
    """The sampled runtime model's per-type median run time against the whole trace's empirical median: the
    sample median's standard error is about 1.2533 * sd / sqrt(k) on the log scale (k sampled runs of the type);
    the check allows 4 of them (plus the model's own smoothing: 5 %)."""
    st = fit_streamed(streamed, sample_rows=3000, seed=1, models=["runtime"])
    rt = st.get("runtime")
    j = expand(streamed.jobs)
    g = j[(j["gpu_num"] > 0) & j["run_s"].notna() & (j["run_s"] > 0)]
    f = st.provenance["sample"]["fraction"]
    checked = 0
    for ty, sub in g.groupby("type"):
        if len(sub) * f < 200:
            continue
        lr = np.log(sub["run_s"].to_numpy(float))
        se = 1.2533 * lr.std() / np.sqrt(len(sub) * f)
        med = np.median(lr)
        q = rt.quantile(0.5, type=ty) if hasattr(rt, "quantile") else None
        if q is None:
            pytest.skip("runtime model has no quantile(q, **key)")
        q = float(np.asarray(q).ravel()[0])
        assert abs(np.log(q) - med) < 4 * se + 0.05, (ty, q, np.exp(med))
        checked += 1
    assert checked >= 2


def test_cli_streamed_fit_records_the_sample(tmp_path, fleet):
    from acmemodel.cli import main

    out = tmp_path / "b"
    with pytest.raises(SystemExit) as e:
        main(["fit", str(fleet), "-o", str(out), "--sample", "2000", "--seed", "5", "--model", "gpu_counts",
              "--model", "runtime", "--json"])
    assert e.value.code in (0, None)
    from acmemodel.models.bundle import Bundle

    b = Bundle.load(out)
    s = b.provenance["sample"]
    assert s["seed"] == 5 and s["rows"] == 6000 and s["sampled_models"] == ["runtime"]
    assert b.provenance["jobs"] == 6000 and len(b.provenance["files"]) == 6
    assert set(s["stage_seconds"]) >= {"read", "model fits"}


@pytest.mark.parametrize("args, words", [
    (["--memory", "lots"], ["--memory", "lots"]),
    (["--memory", "100MB", "--stream"], ["--memory 100", "6,000 jobs"]),
    (["--sample", "10", "--in-memory"], ["--sample", "--in-memory"]),
    (["--sample", "0"], ["--sample"]),
])
def test_cli_streamed_fit_bad_settings_are_one_error_line(tmp_path, fleet, capsys, args, words):
    from acmemodel.cli import main

    with pytest.raises(SystemExit) as e:
        main(["fit", str(fleet), "-o", str(tmp_path / "b"), "--model", "gpu_counts"] + args)
    err = capsys.readouterr().err.strip().splitlines()
    assert e.value.code == 2 and len(err) == 1 and err[0].startswith("error:")
    assert all(w in err[0] for w in words), err[0]
    assert not (tmp_path / "b").exists()


@pytest.fixture(scope="module")
def chain_fleet():
    """Two clusters of tests/chain_trace.py (restart chains, bursts of evaluations) and a few left-truncated rows
    (left out of the arrivals): the branches of the exact models' cross-job columns. (Every row has a submit
    time: the reader quarantines a row without one.)"""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    try:
        from chain_trace import chain_trace
    finally:
        sys.path.pop(0)
    parts = []
    for k, (name, seed) in enumerate((("Seren", 0), ("Kalos", 1))):
        d = chain_trace(days=20.0, users=25, seed=seed).drop(columns="true_prev")
        d["cluster"] = name
        d["job_id"] = [f"{name}{i}" for i in range(len(d))]
        parts.append(d)
    # interleaved in time (a file per month holds both clusters' jobs in submission order)
    jobs = pd.concat(parts, ignore_index=True).sort_values("submit_s", kind="stable").reset_index(drop=True)
    jobs["left_truncated"] = False
    jobs.loc[jobs.index[::97], "left_truncated"] = True
    return jobs


@pytest.mark.parametrize("params", [{}, {"arrival": {"restart_types": ("Pretrain",)}}])
def test_exact_tables_per_cluster_give_the_whole_table_fits(chain_fleet, params):
    """The exact models fitted on :func:`exact_frames` (chains and batches one cluster at a time, compact
    dtypes, the restart model on the failed jobs only) are the models fitted on the whole table."""
    from acmemodel.models import MODELS
    from acmemodel.pipeline import exact_frames
    from acmemodel.trace.stream import compact

    tz = {"Seren": "+08:00", "Kalos": "+00:00"}
    whole = chain_fleet
    frames = exact_frames(compact(whole.copy()), ["restart", "arrival", "gpu_counts"], params)
    assert len(frames["restart"]) == int((whole["analysis_state"] == "FAILED").sum())
    assert frames["arrival"]["user"].dtype == object and frames["arrival"]["batch_id"].dtype.itemsize < 8
    for m in ("restart", "arrival", "gpu_counts"):
        want = MODELS[m](**params.get(m, {})).fit(whole, timezones=tz)
        got = MODELS[m](**params.get(m, {})).fit(frames[m], timezones=tz)
        assert json.dumps(got.to_dict(), sort_keys=True) == json.dumps(want.to_dict(), sort_keys=True), m
        assert got.artifacts() == want.artifacts(), m
    r = MODELS["restart"]().fit(whole, timezones=tz)
    assert r.n_chains_ > 100 and not r.fallback_  # (the chains are exercised)
    a = MODELS["arrival"]().fit(whole, timezones=tz)
    assert a.n_restarts_excluded_ > 100 and any(c["bursty"] for c in a.cells_.values())
