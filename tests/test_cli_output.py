"""What users read (issue 18): plan as tables with human numbers, planner errors that say what does
not fit and what would, quota-only plans, runs left out of the cluster simulation, 80-column output,
``--version``, JSON without float noise."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import yaml
from typer.testing import CliRunner

from acmemodel.cli import app, main

runner = CliRunner()


def _cfg(tmp_path, name, **over):
    d = {"name": name, "cluster": {"gpus": 2304, "partitions": {"pretrain": 1024, "eval": "auto"}},
         "workload": {"days": 1}, "runs": [{"name": "big", "gpus": 1024, "work": "5d"}],
         "simulation": {"replicas": 100}}
    d.update(over)
    p = tmp_path / f"{name}.yaml"
    p.write_text(yaml.safe_dump(d))
    return str(p)


def _cli80_subprocess(args):
    """Run the installed CLI in a subprocess with ``COLUMNS=80`` (as a user's 80-column terminal)."""
    env = {**os.environ, "COLUMNS": "80", "PYTHONWARNINGS": "ignore"}
    r = subprocess.run([sys.executable, "-m", "acmemodel", *args], capture_output=True, text=True, env=env,
                       timeout=600)
    return r


class _Run:
    def __init__(self, r):
        self.returncode, self.stdout, self.stderr = r.exit_code, r.stdout, r.stderr


def _cli80(args, monkeypatch):
    """Run the CLI in this process as on a user's 80-column terminal: ``COLUMNS=80`` for typer's help
    console (made per call) and the commands' shared rich consoles at 80 columns (they read ``COLUMNS``
    once, when :mod:`acmemodel.cli._common` is imported: :func:`test_consoles_take_the_terminal_width`
    checks that in a fresh process). In-process, so that each check does not pay the libraries' import."""
    import warnings

    from acmemodel.cli._common import console, err_console

    for c in (console, err_console):
        monkeypatch.setattr(c, "_width", 80)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return _Run(runner.invoke(app, args, env={"COLUMNS": "80"}))


def test_consoles_take_the_terminal_width():
    """The installed CLI in a fresh process: its consoles are as wide as ``COLUMNS`` says, and the help of a
    command fits 80 columns (the in-process checks of :func:`_cli80` set that width directly)."""
    code = ("from acmemodel.cli._common import console, err_console; "
            "print(console.width, err_console.width)")
    for cols in ("80", "123"):
        env = {**os.environ, "COLUMNS": cols}
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True,
                             timeout=600).stdout.split()
        assert out == [cols, cols]
    r = _cli80_subprocess(["export", "--help"])
    assert r.returncode == 0
    _fits_80(r.stdout)
    assert "acmetrace" in r.stdout


def _fits_80(text):
    lines = text.splitlines()
    assert lines, "no output"
    too_long = [ln for ln in lines if len(ln) > 80]
    assert not too_long, too_long[:3]
    assert "…" not in text  # rich's ellipsis: a cut header or value


def test_plan_that_does_not_fit_says_what_would(tmp_path):
    """2,304 GPUs, pretrain 2,048, eval auto: was 'hi=-512 must be a non-negative multiple of
    gpus_per_node=8'."""
    p = _cfg(tmp_path, "nofit", cluster={"gpus": 2304, "partitions": {"pretrain": 2048, "eval": "auto"}},
             runs=[{"name": "big", "gpus": 2048, "work": "5d"}])
    r = runner.invoke(app, ["plan", p, "--json"])
    assert r.exit_code == 0, r.output
    cl = json.loads(r.stdout)["cluster"]
    assert cl["available"] is False
    reason = cl["reason"]
    assert "hi=" not in reason and "largest shared job needs" in reason and "would fit" in reason
    assert "pretrain at most" in reason and "a cluster of at least" in reason
    # the suggestion is right: pretrain at the suggested size is simulated
    import re

    fit = int(re.search(r"pretrain at most ([\d,]+) GPUs", reason).group(1).replace(",", ""))
    p2 = _cfg(tmp_path, "fits", cluster={"gpus": 2304, "partitions": {"pretrain": fit, "eval": "auto"}},
              runs=[])
    r2 = runner.invoke(app, ["plan", p2, "--json"])
    assert r2.exit_code == 0 and json.loads(r2.stdout)["cluster"]["available"] is True


def test_quota_only_plan_and_run_without_reservation(tmp_path, capsys):
    p = _cfg(tmp_path, "quota", runs=[])
    r = runner.invoke(app, ["plan", p])
    assert r.exit_code == 0, r.output
    assert "quota-only" in r.stdout and "Queue delay by job type" in r.stdout
    doc = json.loads(runner.invoke(app, ["plan", p, "--json"]).stdout)
    assert doc["runs"] == [] and doc["cluster"]["quotas"]["eval"] > 0
    # a run without a reservation: planned, shown, and said to be outside the cluster simulation
    p = _cfg(tmp_path, "noresv", cluster={"gpus": 2304, "partitions": {"eval": "auto"}})
    r = runner.invoke(app, ["plan", p])
    assert r.exit_code == 0, r.output
    assert "big is not in the cluster simulation" in r.stdout and "no*" in r.stdout
    doc = json.loads(runner.invoke(app, ["plan", p, "--json"]).stdout)
    ex = doc["cluster"]["planned_runs_excluded"]
    assert [e["name"] for e in ex] == ["big"] and "pretrain" in ex[0]["reason"]
    assert doc["cluster"]["workload"]["planned_runs_included"] == []
    # too big for its reservation: a config error naming the field (issue 19), not a silent exclusion
    p = _cfg(tmp_path, "toobig", runs=[{"name": "huge", "gpus": 2048, "work": "5d"}])
    with pytest.raises(SystemExit) as e:
        main(["plan", str(p), "--json", "--no-cluster"])
    err = capsys.readouterr().err.strip().splitlines()
    assert e.value.code == 2 and len(err) == 1
    assert "runs[0].gpus = 2,048 exceeds cluster.partitions.pretrain = 1,024" in err[0]
    bad = _cfg(tmp_path, "bad", runs={"name": "x"})
    r = runner.invoke(app, ["plan", bad])
    assert r.exit_code != 0


def test_plan_tables_fit_80_columns_with_human_numbers(tmp_path, monkeypatch):
    p = _cfg(tmp_path, "human", runs=[{"name": "llm-123b", "gpus": 1024, "work": "30d"}])
    r = _cli80(["plan", p], monkeypatch)
    assert r.returncode == 0, r.stderr
    out = r.stdout
    _fits_80(out)
    for needle in ("Pretraining runs", "GPU-time loss per run (GPU-h)", "Queue delay by job type",
                   "Partitions", "p90 ≤ 10 min"):
        assert needle in out
    assert "e+0" not in out  # no 5.028e+04
    import re

    assert re.search(r"\b\d{1,3},\d{3}\b", out)  # thousands separators (GPU-h, jobs)
    assert re.search(r"\d+(\.\d)? d\b", out) and (" min" in out or " h" in out)


def test_forecast_fits_80_columns(tmp_path, monkeypatch):
    r = _cli80(["forecast", "--days", "14", "--method", "seasonal_naive"], monkeypatch)
    assert r.returncode == 0, r.stderr
    _fits_80(r.stdout)
    assert "MASE" in r.stdout and "bounded by 2,288 GPUs × 24 h = 54,912" in r.stdout


def test_version_and_json_without_float_noise():
    r = runner.invoke(app, ["--version"])
    from acmemodel import __version__

    assert r.exit_code == 0 and r.stdout.strip() == f"acmemodel {__version__}"
    from acmemodel.cli._app import _clean

    assert _clean({"a": [1200.0000000000002, 0.1 + 0.2]}) == {"a": [1200.0, 0.3]}


@pytest.mark.parametrize("x, text", [(50280.4, "50,280"), (12, "12"), (3.0, "3"), (0.0213, "0.0213"),
                                     (1234567.0, "1,234,567"), (None, "–"), (float("nan"), "–")])
def test_human_numbers(x, text):
    from acmemodel.cli._fmt import num

    assert num(x) == text


@pytest.mark.parametrize("s, text", [(45, "45 s"), (720, "12 min"), (3.2 * 3600, "3.2 h"), (4.5 * 86400, "4.5 d"),
                                     (2 ** 21, "24 d"), (None, "–")])
def test_human_durations(s, text):
    from acmemodel.cli._fmt import dur

    assert dur(s) == text


def test_checkpoint_splits_loss_into_failures_and_checkpoints():
    r = runner.invoke(app, ["checkpoint", "--gpus", "2048", "--ckpt-cost", "60s", "--restart", "20m",
                            "--mttf", "8h", "--work", "30d", "--json"])
    d = json.loads(r.stdout)
    g, W, C, tau, T = 2048, 30 * 86400.0, 60.0, d["interval_s"], d["expected_wall_time_s"]
    ck = W / tau * C
    assert d["gpu_hours_lost_per_day_checkpoint"] == pytest.approx(g * 24 * ck / T, rel=1e-9)
    assert d["gpu_hours_lost_per_day_failures"] + d["gpu_hours_lost_per_day_checkpoint"] == \
        pytest.approx(d["gpu_hours_lost_per_day"], rel=1e-9)
    run = d["gpu_hours_lost_run"]
    assert run["total"] == pytest.approx(g * (T - W) / 3600, rel=1e-9)
    assert run["failures"] + run["checkpoint"] == pytest.approx(run["total"], rel=1e-9)
    human = runner.invoke(app, ["checkpoint", "--gpus", "2048", "--ckpt-cost", "60s", "--restart", "20m",
                                "--mttf", "8h"])
    assert "GPU-h lost per day" in human.stdout and "failures" in human.stdout and "whole run" in human.stdout


def test_fit_turns_warnings_into_one_sentence_and_reports_progress(monkeypatch):
    import warnings

    from statsmodels.tools.sm_exceptions import ConvergenceWarning as SMConvergence

    import acmemodel.pipeline as pipeline
    from acmemodel.trace import load_sample

    real = pipeline._fit_one

    def noisy(model, trace):
        for _ in range(5):
            warnings.warn("Maximum Likelihood optimization failed to converge. Check mle_retvals", SMConvergence)
        return real(model, trace)

    monkeypatch.setattr(pipeline, "_fit_one", noisy)
    t = load_sample()
    calls = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        b = pipeline.fit_bundle(t.jobs, t.timezones, models=["gpu_counts"],
                                progress=lambda i, n, d: calls.append((i, n, d)))
    notes = b.provenance["fit_notes"]["gpu_counts"]
    assert notes == ["The optimiser did not converge within its iteration limit; the estimates are usable but "
                     "less precise."]
    assert len([w for w in caught if "converge" in str(w.message)]) == 1  # once, not five times
    assert calls[0] == (0, 1, "fitting gpu_counts") and calls[-1][:2] == (1, 1)


def test_reproduce_reports_progress():
    from acmemodel.reproduction.run import reproduce

    calls = []
    reproduce(scale=0.01, days=3, replicas=2, progress=lambda i, n, d: calls.append((i, n, d)))
    assert [c[2] for c in calls] == ["synthesising Seren (1/2)", "synthesising Seren (2/2)",
                                     "synthesising Kalos (1/2)", "synthesising Kalos (2/2)",
                                     "comparing with the published statistics", "done"]
    assert calls[-1][0] == calls[-1][1] == 5


@pytest.mark.parametrize("cmd", [["export", "--help"], ["synth", "--help"]])
def test_help_does_not_split_format_names(cmd, monkeypatch):
    r = _cli80(cmd, monkeypatch)
    assert r.returncode == 0
    _fits_80(r.stdout)
    flat = " ".join(r.stdout.split())
    for name in ("acmetrace", "swf", "helios", "philly", "batsim"):
        assert name in flat
    assert "hel ios" not in flat and "|p hilly" not in flat


def test_evaluate_runtime_fits_80_columns(monkeypatch):
    r = _cli80(["evaluate", "runtime", "--no-queue"], monkeypatch)
    assert r.returncode == 0, r.stderr
    _fits_80(r.stdout)
    assert "mae" in r.stdout and "cell model" in r.stdout and "gain ± SE" in r.stdout


def test_duration_axes_in_human_units():
    """Plots labelled durations in seconds on log-2 ticks (2^21 s); now 1 min ... 30 d."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from acmemodel.reproduction.plots import plot_curve

    fig, ax = plt.subplots()
    row = {"_sample": [30.0, 600.0, 4000.0, 90000.0, 2.1e6], "_x": [60.0, 3600.0, 86400.0],
           "_cdf": [0.2, 0.5, 0.9], "kind": "duration_cdf", "basis": "run", "ks": 0.1, "name": "x"}
    plot_curve(row, ax)
    fig.canvas.draw()
    labels = {t.get_text() for t in ax.get_xticklabels() if t.get_text()}
    from acmemodel.plotting import DURATION_TICKS

    assert {"1 min", "1 h", "1 d"} <= labels <= {name for _, name in DURATION_TICKS}  # no 2^21 or 10^5
    assert ax.get_xlabel() == "duration (run)"
    plt.close(fig)


def test_fit_json_runs_without_a_progress_bar(tmp_path):
    r = runner.invoke(app, ["fit", "-o", str(tmp_path / "b"), "--model", "gpu_counts", "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["models"] == ["gpu_counts"]


def test_counted_backoffs_collects_model_backoffs_once_and_shows_the_rest():
    """synth and plan count the model back-offs (DataWarning) in one line instead of one raw warning per
    sparse cell; other warnings still reach the user."""
    import warnings

    import pytest

    from acmemodel.cli._common import counted_backoffs
    from acmemodel.errors import DataWarning

    with pytest.warns(UserWarning, match="other"):
        with counted_backoffs() as b:
            for _ in range(3):
                warnings.warn("cell A/B is not fitted; answered from A/*", DataWarning)
            warnings.warn("cell C/D is not fitted; answered from C/*", DataWarning)
            warnings.warn("other", UserWarning)
    assert b == ["cell A/B is not fitted; answered from A/*", "cell C/D is not fitted; answered from C/*"]
