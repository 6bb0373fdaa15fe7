"""Issue 33, reports people read: ``sweep --plots`` ticks and labels in human numbers and units, a
Pareto plot that says when no trade-off exists, axis values with units in the sweep summary, and the
evaluation report's stated assumptions."""
from __future__ import annotations

import re

import matplotlib.figure
import pandas as pd
import pytest

from acmemodel.planner.sweep.plots import _tick, _time_unit, axis_text, plot_sweep


@pytest.fixture
def figures(monkeypatch):
    """Every figure a plot function saves: {file name: figure} (tick labels are drawn before reading)."""
    seen = {}
    real = matplotlib.figure.Figure.savefig

    def spy(self, fname, *a, **k):
        self.canvas.draw()
        seen[str(fname).rsplit("/", 1)[-1]] = self
        return real(self, fname, *a, **k)

    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", spy)
    return seen


def _labels(fig) -> list[str]:
    out = []
    for ax in fig.axes:
        for a in (ax.xaxis, ax.yaxis):
            out += [t.get_text() for t in a.get_ticklabels()]
        out += [ax.get_xlabel(), ax.get_ylabel(), ax.get_title()]
    return [t for t in out if t]


def _frame(lanes=(64, 128, 256), waits=None, loss=None):
    rows = []
    for i, ivl in enumerate((30, 165, 300)):                      # checkpoint.sync_cost in seconds
        for j, lane in enumerate(lanes):
            rows.append({"checkpoint.sync_cost": ivl, "cluster.partitions.eval": lane, "status": "ok",
                         "gpu_h_lost": (loss or 40_000.0) + 35_000.0 * i,
                         "eval_wait_p90_s": (waits or [400_000.0, 25_000.0, 600.0])[j],
                         "quota.eval": float(lane), "llm.completion_mean_s": 30 * 86400.0 + 3600.0 * i})
    return pd.DataFrame(rows)


META = {"grid": {"axes": {"checkpoint.sync_cost": [30, 165, 300], "cluster.partitions.eval": [64, 128, 256]}}}


def test_tick_and_unit_helpers():
    assert _tick(110_000.0) == "110,000" and _tick(1e6) == "1,000,000" and _tick(0.25) == "0.25"
    assert _tick(2.75) == "2.75" and _tick(5.0) == "5"
    assert _time_unit([30.0]) == (1.0, "s") and _time_unit([600.0, 5999.0]) == (60.0, "min")
    assert _time_unit([20_000.0]) == (3600.0, "h") and _time_unit([400_000.0]) == (86400.0, "d")
    assert axis_text(30, "checkpoint.sync_cost") == "30 s"
    assert axis_text(pd.Series([165]).iloc[0], "checkpoint.sync_cost") == "2.75 min"   # numpy ints too
    assert axis_text("2h", "checkpoint.interval") == "2 h" and axis_text("auto", "checkpoint.interval") == "auto"
    assert axis_text(1_000_000, "workload.replicas") == "1,000,000" and axis_text("x", "policy") == "x"


def test_sweep_plots_read_in_human_numbers_and_units(tmp_path, figures):
    plot_sweep(_frame(), META, tmp_path)
    heat = figures["heatmap_gpu_h_lost.png"]
    text = _labels(heat)
    assert "checkpoint.sync_cost (min)" in text and "0.5" in text and "2.75" in text   # a duration axis
    assert any("," in t and t.replace(",", "").isdigit() and int(t.replace(",", "")) >= 10_000 for t in text)
    wait = _labels(figures["heatmap_eval_wait_p90_s.png"])
    assert "Eval p90 wait (d)" in wait                                 # its unit follows its size
    assert "llm mean completion (d)" in _labels(figures["heatmap_llm_completion_mean_s.png"])
    pareto = _labels(figures["pareto_quota_eval_vs_eval_p90.png"])
    assert "1 h" in pareto and "1 d" in pareto                           # waits over orders of magnitude
    for fig in figures.values():
        for t in _labels(fig):
            assert not re.search(r"\de[+-]?\d", t) and not re.fullmatch(r"\d{5,}", t), t


def test_pareto_plot_says_when_one_point_is_best_on_both(tmp_path, figures):
    df = _frame(lanes=(64, 64, 64), waits=[600.0, 600.0, 600.0])
    df["quota.eval"] = 64.0
    plot_sweep(df, {"grid": {"axes": {"checkpoint.sync_cost": [30, 165, 300]}}}, tmp_path)
    fig = figures["pareto_gpu_h_lost_vs_eval_p90.png"]
    ax = fig.axes[0]
    assert "one grid point is best on both" in ax.get_title()
    assert any("no trade-off" in t.get_text() for t in ax.get_legend().get_texts())
    assert "Eval p90 wait (min)" in _labels(fig)


def test_eval_report_states_its_assumptions(tmp_path):
    from acmemodel.planner.evalbatch.inputs import Dataset, EvalBatch
    from acmemodel.planner.evalbatch.plan import plan_batch

    r = plan_batch(EvalBatch([Dataset("a", 10.0, 300.0, 30.0), Dataset("b", 5.0, 120.0, 1200.0)]), nodes=(1,))
    page = r.report(tmp_path / "e.html")
    text = re.sub(r"<[^>]+>", " ", open(page, encoding="utf-8").read().split("<img", 1)[0])
    assert "start-up 8 s per trial" in text and "at most 7 metric jobs per node" in text
    assert "16 of 128 CPU threads" in text and "100 % of the link" in text and "random" in text
    assert "in the cluster's CPU queue" in text
