"""``fit_bundle`` on a Dask cluster (one task per model) gives the bundle the in-process fit gives."""
import json

import numpy as np
import pytest

from acmemodel.evaluation.synthetic import synthetic_jobs
from acmemodel.pipeline import fit_bundle


def _models_doc(bundle) -> str:
    doc, files = bundle._document()
    return json.dumps({"models": doc["models"], "files": files}, sort_keys=True)


def test_dask_fit_equals_in_process_fit():
    distributed = pytest.importorskip("dask.distributed")
    jobs = synthetic_jobs(3000, 5, days=40.0)
    tz = {"Seren": "+08:00", "Kalos": "+00:00"}
    names = ["runtime", "queue", "arrival", "gpu_counts", "predictor"]
    local = fit_bundle(jobs, tz, models=names)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        remote = fit_bundle(jobs, tz, models=names, client=client)
    assert list(remote.models) == names
    assert _models_doc(remote) == _models_doc(local)
    assert set(remote.provenance["fit_seconds"]) == set(names)


def test_fit_unreachable_scheduler_is_one_error_line(tmp_path, capsys, monkeypatch):
    pytest.importorskip("dask.distributed")
    from acmemodel.cli import _dask, main

    monkeypatch.setattr(_dask, "CONNECT_TIMEOUT", "1s")
    with pytest.raises(SystemExit) as e:
        main(["fit", "-o", str(tmp_path / "b"), "--model", "gpu_counts", "--scheduler", "tcp://127.0.0.1:9"])
    err = capsys.readouterr().err.strip().splitlines()
    assert e.value.code == 2 and len(err) == 1 and "--scheduler tcp://127.0.0.1:9" in err[0]
    assert not (tmp_path / "b").exists()


def test_trace_paths_expand_directories_and_globs(tmp_path):
    from acmemodel.errors import TraceFormatError
    from acmemodel.trace.readers import expand_trace_paths

    (tmp_path / "d").mkdir()
    for n in ("b.csv", "a.parquet", "c.csv.gz", "notes.txt", ".hidden.csv"):
        (tmp_path / "d" / n).write_text("x")
    assert [p.name for p in expand_trace_paths([tmp_path / "d"])] == ["a.parquet", "b.csv", "c.csv.gz"]
    assert [p.name for p in expand_trace_paths([str(tmp_path / "d" / "*.csv*")])] == ["b.csv", "c.csv.gz"]
    assert len(expand_trace_paths([tmp_path / "d"], "swf")) == 4  # an importer's files: every visible file
    with pytest.raises(TraceFormatError, match="no file matches"):
        expand_trace_paths([str(tmp_path / "nothing*.csv")])
    (tmp_path / "e").mkdir()
    with pytest.raises(TraceFormatError, match="no trace file"):
        expand_trace_paths([tmp_path / "e"])


def test_forked_fit_equals_one_process_fit():
    """``processes=2`` (models fitted in forked processes, the table shared copy-on-write) gives the bundle one
    process gives, with the same notes for a model the trace cannot inform and the same fit-seconds keys."""
    import warnings

    from acmemodel.pipeline import _can_fork, default_processes

    if not _can_fork():
        pytest.skip("no fork on this platform")
    jobs = synthetic_jobs(2000, 5, days=40.0)
    jobs["queue_s"] = float("nan")  # no recorded wait: the queue model is not fitted, with a note
    tz = {"Seren": "+08:00", "Kalos": "+00:00"}
    # (every model but the predictor, whose LightGBM artifacts come back the same way in the Dask test above; the
    # queue model is skipped with a note: no recorded wait)
    names = ["runtime", "queue", "failure", "restart", "arrival", "gpu_counts"]
    with warnings.catch_warnings(record=True) as one_caught:
        warnings.simplefilter("always")
        one = fit_bundle(jobs, tz, models=names, processes=1)
    with warnings.catch_warnings(record=True) as two_caught:
        warnings.simplefilter("always")
        two = fit_bundle(jobs, tz, models=names, processes=2)
    assert list(two.models) == list(one.models) and "queue" not in two.models
    assert _models_doc(two) == _models_doc(one)
    # in memory too (the fitted models themselves come back, at full precision)
    levels = np.linspace(0.01, 0.99, 25)
    assert np.array_equal(two["runtime"].quantile(levels, cluster="Seren"), one["runtime"].quantile(levels, cluster="Seren"))
    assert two.provenance["fit_notes"] == one.provenance["fit_notes"]
    assert set(two.provenance["fit_seconds"]) == set(one.provenance["fit_seconds"])
    assert sorted(str(w.message) for w in two_caught) == sorted(str(w.message) for w in one_caught)
    assert default_processes(1000) == 1  # a small trace: one process (a fork costs more than it saves)


def test_forked_fit_raises_for_a_named_model_it_cannot_fit():
    from acmemodel.pipeline import _can_fork

    if not _can_fork():
        pytest.skip("no fork on this platform")
    jobs = synthetic_jobs(2000, 3, days=20.0)
    jobs["state"] = "COMPLETED"
    jobs["analysis_state"] = "COMPLETED"
    with pytest.raises(ValueError):
        fit_bundle(jobs, {"Seren": "+08:00", "Kalos": "+00:00"}, models=["gpu_counts", "failure"], processes=2)
