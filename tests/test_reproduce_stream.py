"""Streaming ``reproduce`` (issue 34): replicas are summarised one at a time (PooledJobs), the pooled
figures are those of the concatenated replicas, and the memory estimate counts one replica's synthesis plus
the pooled summaries (benchmarks/bench_reproduce.py measures the peaks)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

SCALE = 0.005


@pytest.fixture(scope="module")
def bundle():
    from acmemodel.synth import resolve_bundle

    return resolve_bundle(None)


def test_pooled_jobs_are_the_concatenated_replicas(bundle):
    """PooledJobs.add per replica gives the arrays of the concatenated replicas' GPU jobs, in order."""
    from acmemodel.reproduction.compare import PooledJobs
    from acmemodel.reproduction.run import replica_seed, synthesize_cluster

    reps = [synthesize_cluster(bundle, "Kalos", scale=SCALE, seed=replica_seed(1, 0, r))[0] for r in range(3)]
    p = PooledJobs("Kalos")
    for j in reps:
        p.add(j)
    names = list(p.type_names)
    a = p.arrays()
    cat = pd.concat(reps, ignore_index=True)
    g = cat[cat["gpu_num"] > 0]
    st = np.isfinite(g["start_s"].to_numpy(float))
    assert np.array_equal(a["gpu"], g["gpu_num"].to_numpy())
    assert list(np.asarray(names, dtype=object)[a["type"]]) == list(g["type"].astype(str))
    np.testing.assert_array_equal(a["dur"], (g["end_s"] - g["submit_s"]).to_numpy())
    np.testing.assert_array_equal(a["queue"], g["queue_s"].to_numpy()[st])
    np.testing.assert_array_equal(a["started"], st)
    assert p.arrays()["gpu"].size == 0  # the parts were released


def test_pooled_comparison_equals_one_trace_of_the_replicas(bundle):
    """reproduce with R replicas: every figure equals the comparison of the R traces concatenated (the
    median of the pooled waits, not of a sketch)."""
    from acmemodel.reproduction.run import replica_seed, reproduce, synthesize_cluster

    out = reproduce(bundle, scale=SCALE, seed=2, clusters=("Seren",), replicas=3)
    reps = [synthesize_cluster(bundle, "Seren", scale=SCALE, seed=replica_seed(2, 0, r))[0] for r in range(3)]
    cat = pd.concat(reps, ignore_index=True)
    g = cat[(cat["gpu_num"] > 0) & np.isfinite(cat["start_s"].to_numpy(float))]
    s = {r["name"]: r for r in out["clusters"]["Seren"]["summary"]}
    assert s["median_queue_s"]["reproduced"] == g["queue_s"].median()
    assert s["median_run_s"]["reproduced"] == g["run_s"].median()
    assert s["gpu_jobs"]["reproduced"] == int((cat["gpu_num"] > 0).sum())


def test_memory_estimate_counts_one_replica_at_a_time():
    from acmemodel.limits import BYTES_PER_POOLED_JOB, REPRODUCE_BYTES_PER_JOB, reproduce_memory

    one, _ = reproduce_memory({"Seren": 10_000.0, "Kalos": 20_000.0}, {"Seren": 1, "Kalos": 1})
    many, detail = reproduce_memory({"Seren": 10_000.0, "Kalos": 20_000.0}, {"Seren": 16, "Kalos": 16})
    assert many - one == pytest.approx(15 * 30_000 * BYTES_PER_POOLED_JOB)
    assert BYTES_PER_POOLED_JOB * 10 <= REPRODUCE_BYTES_PER_JOB
    assert "one replica of about 20,000" in detail


def test_cli_refuses_past_the_budget_with_the_estimate(monkeypatch, capsys):
    from acmemodel.cli import main

    monkeypatch.setenv("ACMEMODEL_MEMORY_BUDGET", str(300e6))
    with pytest.raises(SystemExit) as e:
        main(["reproduce", "--scale", "2", "--replicas", "64"])
    assert e.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: reproduce --scale 2")
    assert "one replica of about" in err[0] and "--yes" in err[0]
