"""Daily series definitions, forecast intervals, rolling-origin backtest, round trip."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from acmemodel.models.bundle import Bundle
from acmemodel.models.forecast import (DemandForecaster, _weighted_min_sum, daily_series,
                                       forecast_series, rolling_origin_backtest)


def _ts(s: str, tz: str) -> float:
    return pd.Timestamp(s + tz).value / 1e9


def _jobs_by_hand():
    tz = "+08:00"
    rows = [  # cluster, type, submit, start, end (local), gpus
        ("Seren", "Pretrain", "2023-03-01 21:00", "2023-03-01 22:00", "2023-03-02 02:00", 8),
        ("Seren", "Eval", "2023-03-01 00:30", "2023-03-01 00:30", "2023-03-01 01:00", 1),
        ("Seren", "Eval", "2023-03-02 23:59", None, None, 1),  # never started
        ("Seren", "Eval", "2023-03-03 23:00", "2023-03-03 23:00", "2023-03-03 23:30", 2),
    ]
    df = pd.DataFrame(rows, columns=["cluster", "type", "sub", "start", "end", "gpu_num"])
    for c in ("sub", "start", "end"):
        df[c + "_s"] = [(_ts(v, tz) if v else np.nan) for v in df[c]]
    df = df.rename(columns={"sub_s": "submit_s"})
    df["gpu_time_s"] = np.nan_to_num((df["end_s"] - df["start_s"]) * df["gpu_num"])
    return df


def test_daily_series_by_hand():
    s = daily_series(_jobs_by_hand()).set_index(["type", "date"])
    d1, d2, d3 = (pd.Timestamp(f"2023-03-0{i}") for i in (1, 2, 3))
    assert s.loc[("Pretrain", d1), "jobs"] == 1 and s.loc[("Pretrain", d2), "jobs"] == 0
    # 22:00 -> 02:00 local on 8 GPUs: 2 h before midnight, 2 h after
    assert s.loc[("Pretrain", d1), "gpu_hours"] == pytest.approx(16.0)
    assert s.loc[("Pretrain", d2), "gpu_hours"] == pytest.approx(16.0)
    assert s.loc[("Eval", d1), "gpu_hours"] == pytest.approx(0.5)
    assert s.loc[("Eval", d2), "jobs"] == 1 and s.loc[("Eval", d2), "gpu_hours"] == 0
    assert s.loc[("Eval", d3), "gpu_hours"] == pytest.approx(1.0)
    assert s.loc[("ALL", d1), "gpu_hours"] == pytest.approx(16.5)
    assert set(s.index.get_level_values("date")) == {d1, d2, d3}
    sub = daily_series(_jobs_by_hand(), demand="submitted").set_index(["type", "date"])
    assert sub.loc[("Pretrain", d1), "gpu_hours"] == pytest.approx(32.0)
    assert sub.loc[("Pretrain", d2), "gpu_hours"] == 0
    with pytest.raises(ValueError, match="demand"):
        daily_series(_jobs_by_hand(), demand="peak")


def test_weighted_min_sum_matches_brute_force():
    rng = np.random.default_rng(0)
    x, w, T = rng.uniform(0, 10, 50), rng.uniform(0, 3, 50), np.linspace(-1, 11, 13)
    brute = (w[None, :] * np.minimum(T[:, None], x[None, :])).sum(axis=1)
    assert np.allclose(_weighted_min_sum(x, w, T), brute)


def test_seasonal_naive_repeats_last_week_and_widens():
    y = np.tile([10, 20, 30, 40, 50, 5, 1], 4).astype(float) * np.exp(np.random.default_rng(1).normal(0, .1, 28))
    fc = forecast_series(y, 14, method="seasonal_naive")
    assert np.allclose(fc["forecast"].to_numpy()[:7], y[-7:])
    assert np.allclose(fc["forecast"].to_numpy()[7:], y[-7:])
    lw = np.log1p(fc["upper"]) - np.log1p(fc["lower"])
    assert np.allclose(lw.to_numpy()[7:] / lw.to_numpy()[:7], np.sqrt(2))
    assert (fc["method"] == "seasonal_naive").all()


def _weekly_series(n, seed):
    rng = np.random.default_rng(seed)
    week = np.log(np.array([200, 220, 230, 210, 190, 80, 60.0]))
    return np.expm1(np.tile(week, n // 7 + 1)[:n] + rng.normal(0, 0.15, n))


def test_ets_beats_seasonal_naive_and_intervals_cover():
    y = _weekly_series(168, 3)
    bt = rolling_origin_backtest(y, horizon=7, step=7, min_train=28).set_index("method")
    assert bt.loc["ets", "mape"] < bt.loc["seasonal_naive", "mape"]
    n = bt.loc["ets", "n"]
    assert n == 20 * 7
    # 90 % intervals: coverage within 5 binomial standard errors of 0.9
    assert abs(bt.loc["ets", "coverage"] - 0.9) < 5 * np.sqrt(0.09 / n)
    assert abs(bt.loc["seasonal_naive", "coverage"] - 0.9) < 5 * np.sqrt(0.09 / n)
    fc = forecast_series(y, 30, method="ets")
    assert (fc["lower"] <= fc["forecast"]).all() and (fc["forecast"] <= fc["upper"]).all()
    assert (fc["method"] == "ets").all()
    sx = forecast_series(y, 10, method="sarimax")
    assert (sx["method"] == "sarimax").all() and np.isfinite(sx[["forecast", "lower", "upper"]]).all().all()


def test_short_or_constant_series_fall_back():
    assert (forecast_series([3, 4, 5], 5)["method"] == "seasonal_naive").all()
    fc = forecast_series(np.zeros(40), 5)
    assert (fc["forecast"] == 0).all() and (fc["upper"] == 0).all()
    with pytest.raises(ValueError, match="method"):
        forecast_series([1, 2], 3, method="prophet")
    with pytest.raises(ValueError, match="level"):
        forecast_series([1, 2], 3, level=1.5)
    with pytest.raises(ValueError, match="horizon"):
        forecast_series([1, 2], 0)


def _jobs_from_series(counts, tz_off_h=8):
    t0 = pd.Timestamp("2023-03-01").value / 1e9 - tz_off_h * 3600
    rng = np.random.default_rng(0)
    sub = np.concatenate([t0 + d * 86400 + rng.uniform(0, 86400, int(c)) for d, c in enumerate(counts)])
    run = rng.exponential(3600, len(sub))
    return pd.DataFrame({"cluster": "Seren", "type": "Eval", "submit_s": sub, "start_s": sub,
                         "end_s": sub + run, "gpu_num": 1, "gpu_time_s": run})


def test_forecaster_end_to_end_and_roundtrip(tmp_path):
    counts = np.round(_weekly_series(63, 5))
    f = DemandForecaster(method="ets").fit(_jobs_from_series(counts))
    s = f.series_[(f.series_["type"] == "Eval")]
    assert np.array_equal(s["jobs"].to_numpy(), counts)
    fc = f.forecast(14, type="Eval", metric="jobs")
    assert len(fc) == 14 and fc["date"].iloc[0] == s["date"].max() + pd.Timedelta(days=1)
    assert list(fc.columns) == ["cluster", "type", "metric", "date", "forecast", "lower", "upper", "method"]
    bt = f.backtest(type="Eval", metric="jobs")
    assert set(bt["model"]) == {"ets", "seasonal_naive"} and set(bt["metric"]) >= {"mape", "coverage"}
    assert set(bt["cell"]) == {"Seren/Eval/jobs"}
    Bundle({"forecast": f}).save(tmp_path / "b")
    g = Bundle.load(tmp_path / "b")["forecast"]
    pd.testing.assert_frame_equal(g.forecast(14), f.forecast(14))
    assert len(f.summary()) == 4
    a = DemandForecaster(max_origins=2).fit(_jobs_from_series(counts))  # auto: choice saved with the bundle
    assert set(a.choice_) == {"Seren/Eval/jobs", "Seren/Eval/gpu_hours", "Seren/ALL/jobs", "Seren/ALL/gpu_hours"}
    Bundle({"forecast": a}).save(tmp_path / "a")
    b = Bundle.load(tmp_path / "a")["forecast"]
    assert b.choice_ == a.choice_
    pd.testing.assert_frame_equal(b.forecast(7), a.forecast(7))
    pd.testing.assert_frame_equal(b.backtest(), a.backtest())
    with pytest.raises(ValueError, match="type"):
        f.forecast(3, type="Nope")
    with pytest.raises(ValueError, match="days"):
        f.forecast(0)
    with pytest.raises(ValueError, match="method"):
        DemandForecaster(method="arima").fit(_jobs_from_series(counts))

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    assert f.plot(ax, cluster="Seren", type="Eval") is ax
    plt.close(fig)


def test_forecast_cli(tmp_path):
    import json

    from typer.testing import CliRunner

    from acmemodel.cli import app, main
    from acmemodel.synth import to_acmetrace, write_acmetrace

    counts = np.round(_weekly_series(56, 9) / 20)
    jobs = _jobs_from_series(counts).assign(user="u1", state="COMPLETED", node_num=1)
    jobs["run_s"] = jobs["end_s"] - jobs["start_s"]
    path = write_acmetrace(to_acmetrace(jobs, cluster="Seren"), tmp_path / "trace_seren.csv")
    r = CliRunner().invoke(app, ["forecast", str(path), "--days", "10", "--json", "--method", "ets"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    rows = [x for x in doc["forecast"] if x["type"] == "Eval" and x["metric"] == "jobs"]
    assert len(rows) == 10 and all(x["lower"] <= x["forecast"] <= x["upper"] for x in rows)
    assert {"model", "metric", "cell", "value"} <= set(doc["backtest"][0])
    r = CliRunner().invoke(app, ["forecast", str(path), "--days", "5", "--no-backtest"])
    assert r.exit_code == 0 and "Eval" in r.output
    for argv in (["forecast", str(path), "--days", "0"], ["forecast", str(path), "--method", "prophet"],
                 ["forecast", str(tmp_path / "missing.csv")]):
        with pytest.raises(SystemExit) as e:
            main(argv)
        assert e.value.code == 2


# ---------------------------------------------------------------------- issue 18 / 13: short traces,
# physical bounds, coherence, the auto method and its GLM candidate
def _two_type_jobs(days, seed=0, growth=0.0, gpus=8):
    """Eval (1-GPU, weekly pattern) and Pretrain (``gpus``-GPU, many long jobs) on Seren."""
    rng = np.random.default_rng(seed)
    t0 = pd.Timestamp("2023-03-01").value / 1e9 - 8 * 3600
    rows = []
    for d in range(days):
        for ty, lam, g, run in (("Eval", 30 * (1 + growth * d) * (0.4 if d % 7 in (5, 6) else 1), 1, 1800),
                                ("Pretrain", 3 * (1 + growth * d), gpus, 6 * 3600)):
            n = rng.poisson(lam)
            sub = t0 + d * 86400 + rng.uniform(0, 86400, n)
            r = rng.exponential(run, n)
            rows.append(pd.DataFrame({"type": ty, "submit_s": sub, "start_s": sub, "end_s": sub + r,
                                      "gpu_num": g, "gpu_time_s": r * g}))
    return pd.concat(rows, ignore_index=True).assign(cluster="Seren")


def _write_trace(jobs, path):
    from acmemodel.synth import to_acmetrace, write_acmetrace

    jobs = jobs.assign(user="u1", state="COMPLETED", node_num=np.maximum(1, jobs["gpu_num"] // 8))
    jobs["run_s"] = jobs["end_s"] - jobs["start_s"]
    return write_acmetrace(to_acmetrace(jobs, cluster="Seren"), path)


def test_short_trace_cli_skips_backtest_with_a_note(tmp_path):
    """Issue 18: a 30-day trace crashed with KeyError ('mape', 'ets') and --json wrote null values."""
    import json

    from typer.testing import CliRunner

    from acmemodel.cli import app

    path = _write_trace(_two_type_jobs(30, seed=2), tmp_path / "trace_seren.csv")
    r = CliRunner().invoke(app, ["forecast", str(path), "--days", "30"])
    assert r.exit_code == 0, r.output
    assert "backtest skipped" in r.output and "Traceback" not in r.output
    r = CliRunner().invoke(app, ["forecast", str(path), "--days", "30", "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    assert doc["backtest"] == [] and "backtest skipped" in doc["backtest_note"]
    assert len(doc["forecast"]) == 30 * 3 * 2
    assert all(x[k] is not None for x in doc["forecast"] for k in ("forecast", "lower", "upper"))
    assert set(doc["choice"].values()) == {"seasonal_naive"}  # no origin to choose on
    for m in ("ets", "glm"):
        r = CliRunner().invoke(app, ["forecast", str(path), "--days", "7", "--method", m, "--json"])
        assert r.exit_code == 0 and json.loads(r.output)["backtest"] == []


def test_intervals_bounded_by_capacity_and_types_coherent():
    """Issue 18: Seren Pretrain upper bounds averaged 1.8 M GPU-h/day on a 54,912 GPU-h/day cluster,
    and a type's bound exceeded the all-types one. A fast-growing demand series forces both."""
    jobs = _two_type_jobs(42, seed=4, growth=0.08, gpus=256)
    for method in ("ets", "seasonal_naive", "glm"):
        f = DemandForecaster(method=method).fit(jobs)
        assert f.capacity_ == {"Seren": 2288} and f.capacity_source_ == {"Seren": "published"}
        fc = f.forecast(60)
        gh = fc[fc["metric"] == "gpu_hours"]
        assert (gh["upper"] <= 2288 * 24 + 1e-6).all()
        raw = forecast_series(f.series_.query("type == 'ALL'")["gpu_hours"], 60, method=method)
        assert raw["upper"].max() > 2288 * 24  # without the bound the interval is impossible
        for met, g in fc.groupby("metric"):
            tot = g[g["type"] == "ALL"].set_index("date")
            parts = g[g["type"] != "ALL"]
            assert np.allclose(parts.groupby("date")["forecast"].sum(), tot["forecast"], rtol=1e-9, atol=1e-9)
            assert (parts["upper"].to_numpy() <= parts["date"].map(tot["upper"]).to_numpy() + 1e-9).all()
            assert ((parts["lower"] <= parts["forecast"]) & (parts["forecast"] <= parts["upper"])).all()
        jobs_b = fc[fc["metric"] == "jobs"]
        assert (jobs_b["upper"] <= f.count_bound_["Seren"] + 1e-9).all()
    # an unknown cluster is bounded by the peak GPUs it held at once; --gpus-like capacity overrides
    other = jobs.assign(cluster="Mine")
    f = DemandForecaster(method="seasonal_naive").fit(other)
    assert f.capacity_source_ == {"Mine": "trace peak"} and 256 <= f.capacity_["Mine"] < 2 ** 31
    f = DemandForecaster(method="seasonal_naive", capacity={"Mine": 512}).fit(other)
    assert (f.forecast(10, metric="gpu_hours")["upper"] <= 512 * 24).all()


def test_glm_fits_weekly_counts_with_trend():
    rng = np.random.default_rng(7)
    t = np.arange(140)
    mu = 40 * np.exp(0.004 * t) * np.where(t % 7 >= 5, 0.4, 1.0)
    y = rng.negative_binomial(20, 20 / (20 + mu)).astype(float)
    bt = rolling_origin_backtest(y, methods=("glm", "seasonal_naive")).set_index("method")
    assert bt.loc["glm", "mase"] < bt.loc["seasonal_naive", "mase"]
    n = bt.loc["glm", "n"]
    # 90 % negative-binomial intervals: within 5 binomial standard errors
    assert abs(bt.loc["glm", "coverage"] - 0.9) < 5 * np.sqrt(0.09 / n)
    fc = forecast_series(y, 14, method="glm")
    assert (fc["method"] == "glm").all() and (fc["lower"] <= fc["forecast"]).all()
    assert (fc["forecast"] <= fc["upper"]).all()


@pytest.fixture(scope="module")
def sample_series():
    from acmemodel.trace import load_sample

    return daily_series(load_sample())


@pytest.mark.parametrize("cell", [("Seren", "ALL", "jobs"), ("Seren", "Eval", "jobs"),
                                  ("Kalos", "ALL", "gpu_hours"), ("Kalos", "Eval", "gpu_hours")])
def test_auto_never_worse_than_seasonal_naive_on_the_shipped_sample(sample_series, cell):
    """Issue 13: on the project's own fixtures auto is never worse than seasonal naive in its backtest
    (the selection backtest: the chosen candidate's MASE ≤ seasonal naive's); the causal variant
    (choosing on earlier origins only) is reported too."""
    import warnings

    from acmemodel.models.forecast import select_method

    cl, ty, met = cell
    y = sample_series.query("cluster == @cl and type == @ty")[met].to_numpy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        choice, bt = select_method(y, max_origins=4)
    bt = bt.set_index("method")
    assert set(bt.index) == {"ets", "sarimax", "seasonal_naive", "glm", "auto", "auto_causal"}
    assert bt.loc["auto", "mase"] <= bt.loc["seasonal_naive", "mase"]
    assert bt.loc["auto", "mase"] == bt.loc[choice, "mase"] == bt.loc[["ets", "sarimax", "seasonal_naive",
                                                                       "glm"], "mase"].min()
    assert bt.loc["auto", "n"] == 4 * 7 and np.isfinite(bt.loc["auto_causal", "mase"])
