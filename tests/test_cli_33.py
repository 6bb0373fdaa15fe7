"""Issue 33, reports people read: sweep plots with units and duration heat maps and a Pareto front of more
than one point; warnings collected (one sentence per source; -q, -v; in --json); -h and examples;
'-' for stdin/stdout."""
from __future__ import annotations

import io
import json
import subprocess
import sys
import warnings
from contextlib import redirect_stderr

import numpy as np
import pandas as pd
import pytest

from acmemodel.planner.sweep.plots import axis_label, axis_values, pareto_pair, plot_sweep


def _sweep_frame():
    rows = []
    for ivl in ("30m", "1h", "2h"):
        for lane in (64, 128, 256):
            rows.append({"checkpoint.interval": ivl, "cluster.partitions.eval": lane, "status": "ok",
                         "gpu_h_lost": 1000.0 + {"30m": 50, "1h": 0, "2h": 80}[ivl],  # loss does not move with the lane
                         "eval_wait_p90_s": 3600.0 * 64 / lane, "quota.eval": float(lane)})
    return pd.DataFrame(rows)


def test_axis_units_and_duration_values():
    df = _sweep_frame()
    assert axis_label("checkpoint.interval") == "checkpoint.interval (min)"
    assert axis_label("cluster.partitions.eval") == "cluster.partitions.eval (GPUs)"
    assert axis_label("workload.scale") == "workload.scale (× arrival rate)"
    assert list(axis_values(df, "checkpoint.interval").unique()) == [30.0, 60.0, 120.0]


def test_plots_heat_maps_over_duration_axes_and_a_real_pareto_front(tmp_path):
    df = _sweep_frame()
    meta = {"grid": {"axes": {"checkpoint.interval": ["30m", "1h", "2h"], "cluster.partitions.eval": [64, 128, 256]}}}
    written = [p.split("/")[-1] for p in plot_sweep(df, meta, tmp_path)]
    assert "heatmap_gpu_h_lost.png" in written and "heatmap_eval_wait_p90_s.png" in written
    x, label, front = pareto_pair(df)
    assert x == "quota.eval" and len(front) == 3 and "GPUs" in label  # gpu_h_lost alone: a one-point front
    assert "pareto_quota_eval_vs_eval_p90.png" in written


def _collect(argv_flags=(), raise_error=False):
    from acmemodel.cli import _collected_warnings
    from acmemodel.cli._app import STATE

    err = io.StringIO()
    with redirect_stderr(err):
        try:
            with _collected_warnings():
                STATE["quiet"] = "-q" in argv_flags
                STATE["verbose"] = "-v" in argv_flags
                for i in range(30):
                    warnings.warn(f"RuntimeModel: cell {i} is not fitted", UserWarning)
                warnings.warn("divide by zero", RuntimeWarning)
                if raise_error:
                    raise ValueError("boom")
        except ValueError:
            pass
    return err.getvalue()


def test_warnings_are_one_sentence_per_source_with_quiet_and_verbose():
    out = _collect()
    lines = out.splitlines()
    assert any(ln.startswith("note: RuntimeModel: 30 warning(s)") for ln in lines)
    assert not any("UserWarning:" in ln and ".py:" in ln for ln in lines)  # no raw warning block
    assert len(lines) == 3
    assert _collect(["-q"]) == ""
    assert len(_collect(["-v"]).splitlines()) == 31
    assert _collect(raise_error=True) == ""  # after an error: its one line only


def test_json_carries_the_warnings(capsys):
    from acmemodel.cli._app import STATE, print_json

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warnings.warn("QueueModel: cell x is not fitted")
        STATE["warnings"] = caught
        try:
            print_json({"a": 1})
        finally:
            STATE["warnings"] = None
    doc = json.loads(capsys.readouterr().out)
    assert doc["warnings"][0].startswith("QueueModel: 1 warning(s)")


@pytest.mark.parametrize("argv", [["plan", "-h"], ["convert", "-h"], ["evaluate", "runtime", "-h"], ["-h"]])
def test_short_help_and_examples(argv, capsys):
    from acmemodel.cli import main

    with pytest.raises(SystemExit) as e:
        main(argv)
    out = capsys.readouterr().out
    assert e.value.code == 0 and "Usage" in out
    if argv != ["-h"]:
        assert "Examples:" in out and "$ acmemodel" in out
    else:
        assert "--install-completion" in out


def test_convert_reads_stdin_and_writes_stdout(tmp_path):
    sacct = ("JobID|User|Partition|JobName|State|Submit|Start|End|AllocTRES\n"
             + "".join(f"{i}|u|p|j|COMPLETED|2023-03-01T00:00:00|2023-03-01T00:01:00|2023-03-01T01:00:00|"
                       f"gres/gpu=8\n" for i in range(1, 2200)))
    p = subprocess.run([sys.executable, "-m", "acmemodel", "convert", "--from", "slurm", "-", "-o", "-",
                        "--timezone", "+00:00"], input=sacct, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    rows = p.stdout.splitlines()
    assert rows[0].startswith('"job_id"') and len(rows) == 2200
    assert "2,199" in p.stderr  # the report (on stderr) with thousands separators
    assert not np.any(["Traceback" in p.stderr])
