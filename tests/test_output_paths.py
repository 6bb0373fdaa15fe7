"""Every file a writer makes lands under ``-o`` whatever the cluster name (issue 19): hostile names from
``--cluster`` or from the trace's own ``cluster`` column are sanitised, and a path that would resolve
outside ``-o`` (or onto an input) is refused. Also: ``synth -o`` writes what its suffix says and never
overwrites its own input."""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from acmemodel.export import write
from acmemodel.export import _common as C

FORMATS = ("acmetrace", "swf", "helios", "philly", "batsim")
HOSTILE = ["../../x", "/tmp/abs", "..", ".", "a/../../b", "C:\\evil", "~root", "..\\..\\w", "\x00nul",
           "Seren/../../../etc", " ", "", "ünï cødé", "a" * 300]


def _jobs(clusters) -> pd.DataFrame:
    n = 6 * len(clusters)
    t0 = 1.68e9
    return pd.DataFrame({
        "cluster": np.repeat(clusters, 6), "job_id": [f"j{i}" for i in range(n)], "user": "u1",
        "type": "Eval", "gpu_num": 8, "state": "COMPLETED", "submit_s": t0 + np.arange(n) * 60.0,
        "start_s": t0 + np.arange(n) * 60.0 + 5, "end_s": t0 + np.arange(n) * 60.0 + 600.0})


def _all_files(root: Path) -> list[Path]:
    return [Path(d) / f for d, _, fs in os.walk(root) for f in fs]


def _under(p: Path, root: Path) -> bool:
    r = Path(p).resolve()
    return root.resolve() in r.parents


@pytest.mark.parametrize("fmt", FORMATS)
def test_hostile_cluster_names_stay_under_out(tmp_path, fmt):
    out = tmp_path / "deep" / "out"
    jobs = _jobs(HOSTILE)
    before = set(_all_files(tmp_path))
    res = write(jobs, fmt, out)
    written = set(_all_files(tmp_path)) - before
    assert written, "nothing written"
    assert all(_under(p, out) for p in written), [p for p in written if not _under(p, out)]
    assert {Path(p).resolve() for p in res["files"]} <= {p.resolve() for p in written}
    # two clusters never share a file: every cluster's jobs are somewhere
    assert res["attempts"] == len(jobs)


def test_airesim_stays_under_out(tmp_path):
    out = tmp_path / "o"
    res = write(None, "airesim", out, gpus=64, mttf_s=7200.0, weibull_shape=1.0, recovery_s=600.0,
                cluster="../../x")
    assert all(_under(p, out) for p in res["files"])


@pytest.mark.parametrize("name", ["../../x", "/tmp/x", "a/b"])
@pytest.mark.parametrize("fmt", ["helios", "philly"])
def test_cli_cluster_option_cannot_escape(tmp_path, fmt, name):
    from typer.testing import CliRunner

    from acmemodel.cli import app
    from tests.conftest import readme_example

    src = tmp_path / "t.csv"
    src.write_text(readme_example("seren"))
    out = tmp_path / "a" / "b" / "out"
    before = set(_all_files(tmp_path))
    res = CliRunner().invoke(app, ["export", str(src), "--format", fmt, "--cluster", name, "-o", str(out)])
    assert res.exit_code == 0, res.output
    written = set(_all_files(tmp_path)) - before
    assert written and all(_under(p, out) for p in written)
    assert not Path("/tmp/x/cluster_job_log").exists() or Path("/tmp/x/cluster_job_log").stat().st_mtime < 0


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(min_size=0, max_size=40))
def test_safe_name_is_a_plain_file_name(tmp_path, s):
    for lower in (True, False):
        n = C.safe_name(s, lower=lower)
        assert n and n not in (".", "..") and "/" not in n and "\\" not in n and "\x00" not in n
        assert C.out_path(tmp_path, n).resolve().parent == tmp_path.resolve()


def test_out_path_refuses_escape_and_symlinks(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    for bad in ("../x", "/etc/passwd", "a/../../x"):
        with pytest.raises(ValueError, match="outside the output directory"):
            C.out_path(out, bad)
    (out / "Seren").symlink_to(tmp_path)
    with pytest.raises(ValueError, match="outside the output directory"):
        C.out_path(out, "Seren", "cluster_log.csv")


def test_symlinked_cluster_dir_refused_by_writer(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (out / "Seren").symlink_to(elsewhere)
    with pytest.raises(ValueError, match="outside the output directory"):
        write(_jobs(["Seren"]), "helios", out)
    assert list(elsewhere.iterdir()) == []


def test_export_refuses_to_overwrite_its_input(tmp_path, capsys):
    from acmemodel.cli import main
    from tests.conftest import readme_example

    src = tmp_path / "trace_seren.csv"
    text = readme_example("seren")
    src.write_text(text)
    with pytest.raises(SystemExit) as e:
        main(["export", str(src), "--format", "acmetrace", "-o", str(tmp_path)])
    assert e.value.code == 2 and "input of this command" in capsys.readouterr().err
    assert src.read_text() == text


# ------------------------------------------------------------------------------------------ synth outputs
def test_synth_parquet_is_parquet_and_reads_back(tmp_path):
    from acmemodel.synth import synthesize, write_acmetrace
    from acmemodel.trace import load_trace

    table = synthesize(days=1, cluster="Seren", seed=3)
    pq_path = write_acmetrace(table, tmp_path / "trace_seren.parquet")
    csv_path = write_acmetrace(table, tmp_path / "trace_seren.csv")
    assert pq_path.read_bytes()[:4] == b"PAR1"
    a, b = load_trace(pq_path), load_trace(csv_path)
    assert len(a.jobs) == len(b.jobs) == len(table)
    for c in ("submit_s", "end_s", "gpu_num"):
        np.testing.assert_array_equal(a.jobs[c].to_numpy(), b.jobs[c].to_numpy())


@pytest.mark.parametrize("name", ["x.txt", "x", "x.json", "x.parquet.bak"])
def test_synth_refuses_unknown_suffix_before_work(tmp_path, name, capsys):
    from acmemodel.cli import main

    with pytest.raises(SystemExit) as e:
        main(["synth", "-o", str(tmp_path / name), "--days", "1"])
    assert e.value.code == 2 and "ends in .csv, .csv.gz or .parquet" in capsys.readouterr().err
    assert not (tmp_path / name).exists()


@pytest.mark.parametrize("target", ["bundle.json", "sub/x.csv", "."])
def test_synth_refuses_output_inside_its_bundle(tmp_path, target, capsys):
    from acmemodel.cli import main
    from acmemodel.datasets import default_bundle_path

    import shutil

    b = tmp_path / "B"
    shutil.copytree(default_bundle_path(), b)
    before = (b / "bundle.json").read_bytes()
    argv = ["synth", "--bundle", str(b), "-o", str(b / target), "--days", "1"]
    if target == ".":
        argv += ["--format", "swf"]
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2 and "would overwrite the input" in capsys.readouterr().err
    assert (b / "bundle.json").read_bytes() == before
