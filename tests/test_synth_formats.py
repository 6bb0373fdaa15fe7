"""Synthetic workloads in simulator formats: the ``simulate_jobs`` frame is a jobs frame the export
writers take as is (restart chains from its own columns), and ``acmemodel synth --format``.

The files are checked with the format validators of tests/test_export.py (SWF v2.2, Batsim workload).
"""
from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from acmemodel.cli import app, main
from acmemodel.export import write
from acmemodel.synth import simulate_jobs
from tests.test_export import check_batsim, check_swf, read_swf
from tests.test_synth import FakeRuntime, _arrival, sample_bundle  # noqa: F401 (fixture)


@pytest.fixture(scope="module")
def seren_jobs():
    return simulate_jobs(arrival=_arrival(eval_rate=60, pre_rate=40), runtime=FakeRuntime(), days=6,
                         cluster="Seren", seed=11)


def _unstarted_queue(df):
    """A fill_queue hook: 30 s wait, every 7th job never starts."""
    q = np.full(len(df), 30.0)
    q[::7] = np.nan
    return q


@pytest.fixture(scope="module")
def kalos_jobs():
    return simulate_jobs(arrival=_arrival("Kalos", "+00:00", eval_rate=40, pre_rate=40), runtime=FakeRuntime(),
                         days=6, cluster="Kalos", seed=12, fill_queue=_unstarted_queue)


@pytest.mark.parametrize("name", ["seren_jobs", "kalos_jobs"])
def test_simulated_frame_carries_the_restart_chains(name, request):
    jobs = request.getfixturevalue(name)
    assert (jobs.index == np.arange(len(jobs))).all()
    assert jobs["job_id"].is_unique and jobs["job_id"].map(type).eq(str).all()
    has = jobs["prev_index"].to_numpy() >= 0
    assert has.sum() == (jobs["attempt"] > 1).sum() > 0
    prev = jobs.loc[jobs["prev_index"].to_numpy()[has]]
    cur = jobs[has]
    assert (prev["chain_id"].to_numpy() == cur["chain_id"].to_numpy()).all()
    assert (prev["attempt"].to_numpy() + 1 == cur["attempt"].to_numpy()).all()
    assert (prev["state"] == "FAILED").all() and (prev["type"] == "Pretrain").all()
    np.testing.assert_allclose(cur["submit_s"].to_numpy() - prev["end_s"].to_numpy(), cur["restart_gap_s"])
    assert (cur["user"].to_numpy() == prev["user"].to_numpy()).all()


def test_synth_to_swf_is_valid(tmp_path, seren_jobs):
    res = write(seren_jobs, "swf", tmp_path)
    assert res["chains"] == "columns"  # the generator's own chains, not re-derived
    hdr, F = check_swf(tmp_path / "seren.swf", seren_jobs)
    gpu = seren_jobs[seren_jobs["gpu_num"] > 0]
    assert len(F) == len(gpu) == res["attempts"]
    assert int((F[:, 16] > 0).sum()) == int((gpu["attempt"] > 1).sum()) == res["restarts"] > 0
    assert res["jobs"] == gpu["chain_id"].nunique()
    assert hdr["TimeZoneString"] == ["Asia/Shanghai"]


def test_synth_to_batsim_is_valid(tmp_path, kalos_jobs):
    res = write(kalos_jobs, "batsim", tmp_path)
    assert res["chains"] == "columns"
    w = json.loads((tmp_path / "kalos_workload.json").read_text())
    check_batsim(w, kalos_jobs)
    assert w["nb_res"] == 2416
    assert any(not j["started"] for j in w["jobs"]) and any(j["attempt"] > 1 for j in w["jobs"])


def test_cli_synth_formats(sample_bundle, tmp_path):  # noqa: F811 (fixture)
    # SWF (whose restart links are checked below): 30 days at 4x the sample's arrival rate, enough Pretrain jobs for
    # failures to restart; the other formats' files, README and counts: 4 days
    base = ["synth", "--bundle", str(sample_bundle), "--days", "30", "--scale", "4", "--cluster", "Seren", "--seed", "3",
            "--restart-prob", "1", "--json"]
    small = ["synth", "--bundle", str(sample_bundle), "--days", "4", "--cluster", "Seren", "--seed", "3", "--json"]
    expected = {"swf": ["seren.swf", "seren_swf_jobs.csv"], "batsim": ["seren_workload.json"],
                "helios": ["Seren/cluster_log.csv", "Seren/vc_config.csv"], "philly": ["Seren/cluster_job_log"]}
    runner, docs = CliRunner(), {}
    for fmt, names in expected.items():
        out = tmp_path / fmt
        r = runner.invoke(app, (base if fmt == "swf" else small) + ["--format", fmt, "-o", str(out)])
        assert r.exit_code == 0, r.output
        doc = json.loads(r.output)
        assert doc["format"] == fmt and doc["output"] == str(out)
        for n in names + ["README.md"]:
            assert (out / n).is_file() and str(out / n) in doc["files"]
        assert doc["written"]["attempts"] <= doc["rows"]
        docs[fmt] = doc
    # the CLI's SWF holds the written attempts; its restart links point back to failed attempts
    _, F = read_swf(tmp_path / "swf" / "seren.swf")
    doc = docs["swf"]
    assert len(F) == doc["written"]["attempts"] and int((F[:, 16] > 0).sum()) == doc["written"]["restarts"] > 0
    assert (F[F[F[:, 16] > 0, 16] - 1, 10] == 0).all()
    # --gpus sets the cluster size the formats record
    r = runner.invoke(app, small + ["-f", "batsim", "--gpus", "512", "-o", str(tmp_path / "b512")])
    assert r.exit_code == 0, r.output
    assert json.loads((tmp_path / "b512" / "seren_workload.json").read_text())["nb_res"] == 512
    # default stays one AcmeTrace CSV at -o
    r = runner.invoke(app, small + ["-o", str(tmp_path / "t.csv")])
    assert r.exit_code == 0 and json.loads(r.output)["format"] == "acmetrace"
    assert (tmp_path / "t.csv").read_text().startswith("job_id,user,node_num")
    # user errors: unknown format, a directory format onto an existing file, bad --gpus
    for argv in (base[:-1] + ["-f", "airesim", "-o", str(tmp_path / "a")],
                 base[:-1] + ["-f", "swf", "-o", str(tmp_path / "t.csv")],
                 base[:-1] + ["-f", "batsim", "--gpus", "0", "-o", str(tmp_path / "g")]):
        with pytest.raises(SystemExit) as e:
            main(argv)
        assert e.value.code == 2
