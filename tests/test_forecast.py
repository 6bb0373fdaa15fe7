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
    f = DemandForecaster().fit(_jobs_from_series(counts))
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
    r = CliRunner().invoke(app, ["forecast", str(path), "--days", "10", "--json"])
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
