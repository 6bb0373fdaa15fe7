"""Node failure logs: convert --from failures, FleetReliability, and a fleet's reliability preset in the planner."""
from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from acmemodel.cli import app, main
from acmemodel.errors import ConfigError, TraceFormatError
from acmemodel.models.fleet_reliability import FleetReliability, garwood
from acmemodel.planner.config import Assumptions, FailureSpec
from acmemodel.planner.planner import Planner
from acmemodel.planner.reliability import PRESETS, get_preset, load_preset_file
from acmemodel.trace.importers.failures import read_failures

DAY = 86400.0
T0 = pd.Timestamp("2020-01-01", tz="UTC").value / 1e9
LANL = "LA-UR-05-7318-failure-data-1996-2005.csv.xz"


def _iso(sec) -> list[str]:
    return [pd.Timestamp(s, unit="s", tz="UTC").strftime("%Y-%m-%dT%H:%M:%S") for s in np.atleast_1d(sec)]


def synthetic_log(rng, *, nodes, days, shape, scale_s, repair_median_s=3600.0, repair_sigma=1.0):
    """Every node: a renewal process from T0 (new at T0: in_service = T0) — Weibull(shape, scale) uptimes,
    log-normal repairs — observed until T0 + days (the log end). Returns the log and the truth."""
    rows, end = [], T0 + days * DAY
    for n in range(nodes):
        t = T0
        while True:
            t += scale_s * rng.weibull(shape)
            if t >= end:
                break
            r = repair_median_s * math.exp(repair_sigma * rng.standard_normal())
            rows.append((f"n{n:04d}", t, t + r, rng.choice(["Hardware", "Software"], p=[0.7, 0.3])))
            t += r
    df = pd.DataFrame(rows, columns=["node", "s", "e", "category"])
    log = pd.DataFrame({"system": "syn", "node": df["node"], "failure_start": _iso(df["s"]),
                        "repair_end": _iso(df["e"]), "category": df["category"], "nodes": nodes,
                        "in_service": _iso([T0])[0]})
    return log, end


@pytest.fixture(scope="module")
def syn(tmp_path_factory):
    rng = np.random.default_rng(20260)
    shape, scale = 0.7, 20 * DAY
    log, end = synthetic_log(rng, nodes=120, days=730, shape=shape, scale_s=scale)
    d = tmp_path_factory.mktemp("fleet")
    path = d / "syn.csv"
    log.to_csv(path, index=False)
    fl = read_failures(path, extracted_at=end)
    return {"path": path, "dir": d, "log": log, "fl": fl, "model": FleetReliability().fit(fl.intervals),
            "shape": shape, "scale": scale, "end": end}


def test_synthetic_weibull_shape_and_rate_recovered(syn):
    m, fl = syn["model"], syn["fl"]
    w = m.tbf_["families"]["weibull"]
    n_events = m.tbf_["events"]
    assert n_events > 3000
    # the shape's Wald interval is ~ shape ± 1.96 se, se ~ shape·0.78/√n (Weibull information); 4 se here
    se = w["shape_se"]
    assert se == pytest.approx(syn["shape"] * 0.78 / math.sqrt(n_events), rel=0.3)
    assert abs(w["shape"] - syn["shape"]) < 4 * se
    assert abs(w["scale_s"] / syn["scale"] - 1) < 4 * (1 / (w["shape"] * math.sqrt(n_events))) + 0.02
    assert m.tbf_["best"] in ("weibull", "lognormal") and \
        m.tbf_["families"]["weibull"]["aic"] < m.tbf_["families"]["exponential"]["aic"]
    # rate: failures / calendar node-days against the renewal rate 1 / (mean uptime + mean repair)
    mu = syn["scale"] * math.gamma(1 + 1 / syn["shape"]) + 3600.0 * math.exp(0.5)
    k = int(fl.intervals["event"].sum())
    exposure_days = 120 * 730
    assert fl.intervals.eval("duration_s + repair_s").sum() / DAY == pytest.approx(exposure_days, rel=1e-9)
    r = m.rate_per_node_day_
    assert abs(r - DAY / mu) < 4 * math.sqrt(k) / exposure_days + 0.01 * DAY / mu   # Poisson sd + renewal transient
    # repair law: log-normal (the truth), with median ~ 1 h
    assert m.repair_["best"] == "lognormal"
    assert math.exp(m.repair_["families"]["lognormal"]["mu_log_s"]) == pytest.approx(3600, rel=0.05)
    # category mix and MTTF(g) = 1 / (g r)
    assert m.category_mix_["Hardware"] == pytest.approx(0.7, abs=4 * math.sqrt(0.21 / k))
    assert m.mttf(16) == pytest.approx(DAY / (16 * r))
    s = m.summary()
    assert {"quantity", "estimate", "lower", "upper"} <= set(s.columns)
    fleet_all = s[(s["quantity"] == "failures per 1,000 node-days") & (s["category"] == "all")].iloc[0]
    assert fleet_all["lower"] < 1000 * r < fleet_all["upper"]
    back = FleetReliability.from_dict(json.loads(json.dumps(m.to_dict())))
    assert back.weibull_shape_ == pytest.approx(m.weibull_shape_) and back.mttf(8) == pytest.approx(m.mttf(8))
    assert back.sample(5, np.random.default_rng(0)).shape == (5,)


def test_censored_fits_match_lifelines():
    from lifelines import LogNormalFitter, WeibullFitter

    from acmemodel.models.fleet_reliability import _fit_tbf

    rng = np.random.default_rng(1)
    t, c = rng.weibull(0.7, 800) * 20 * DAY, rng.uniform(0, 60 * DAY, 800)
    e, t = (t < c).astype(int), np.minimum(t, c)
    f = _fit_tbf(t, e, 0.95)["families"]
    w = WeibullFitter().fit(t / 3600, e)
    assert f["weibull"]["shape"] == pytest.approx(w.rho_, rel=1e-4)
    assert f["weibull"]["shape_se"] == pytest.approx(w.summary.loc["rho_", "se(coef)"], rel=1e-3)
    assert f["weibull"]["loglik"] == pytest.approx(w.log_likelihood_ - e.sum() * math.log(3600), rel=1e-7)
    ln = LogNormalFitter().fit(t / 3600, e)
    assert f["lognormal"]["sigma"] == pytest.approx(ln.sigma_, rel=1e-3)
    assert f["lognormal"]["loglik"] == pytest.approx(ln.log_likelihood_ - e.sum() * math.log(3600), rel=1e-6)


def test_garwood_interval():
    assert garwood(0, 10.0)[1] == 0.0
    r, lo, hi = garwood(10, 5.0)
    assert r == 2.0 and lo == pytest.approx(4.795389 / 5, rel=1e-5) and hi == pytest.approx(18.390356 / 5, rel=1e-5)


def test_censoring_is_used_not_dropped(tmp_path):
    """Truth: exponential uptimes of mean 100 d, each of 400 nodes observed 60 d — most uptimes are
    censored at the log end. The censored MLE of the mean (total uptime / failures) recovers 100 d; the
    mean of the complete uptimes alone (censoring ignored) is below 60 d by construction."""
    rng = np.random.default_rng(7)
    rows = []
    for n in range(400):
        t = T0
        while True:
            t += 100 * DAY * rng.exponential()
            if t >= T0 + 60 * DAY:
                break
            rows.append((f"n{n}", t, t + 600.0))
            t += 600.0
    log = pd.DataFrame(rows, columns=["node", "s", "e"])
    p = tmp_path / "c.csv"
    pd.DataFrame({"node": log["node"], "failure_start": _iso(log["s"]), "repair_end": _iso(log["e"]),
                  "in_service": _iso([T0])[0], "nodes": 400}).to_csv(p, index=False)
    iv = read_failures(p, extracted_at=T0 + 60 * DAY).intervals
    m = FleetReliability().fit(iv)
    tb = iv[iv["kind"].isin(["tbf", "censored"])]
    k = int(tb["event"].sum())
    mean_true = 100 * DAY
    exp_mean = m.tbf_["families"]["exponential"]["mean_s"]
    # censored-data MLE: se of the mean ~ mean / sqrt(k); the 'first' intervals are not used
    assert abs(exp_mean / mean_true - 1) < 4 / math.sqrt(k)
    assert exp_mean == pytest.approx(tb["duration_s"].sum() / k, rel=1e-3)
    naive = tb.loc[tb["event"] == 1, "duration_s"].mean()
    assert naive < 60 * DAY < 0.7 * mean_true
    w = m.tbf_["families"]["weibull"]
    assert w["shape_lower"] < 1.0 < w["shape_upper"]          # exponential truth: shape 1 within its interval


def test_intervals_truth_stated(tmp_path):
    """Node a: in service 2020-01-01, fails 01-11 00:00 (fixed 01:00), 01-31 00:00 (fixed 02:00), again
    01-31 01:00 (during that repair: folded, the repair ends 03:00), decommissioned 2020-03-01.
    Node b: no in-service date (starts with its system, 01-01), one failure 02-01 (30 min),
    censored at the log end 2020-04-01 (a failure logged after it is quarantined). The system has 3 nodes:
    one never fails. Four rows quarantined."""
    p = tmp_path / "log.csv"
    p.write_text(
        "System,Node,Failure Start,Repair End,Category,Nodes,In Service,Decommission\n"
        "s,a,2020-01-11 00:00,2020-01-11 01:00,Hardware,3,2020-01-01,2020-03-01\n"
        "s,a,2020-01-31 00:00,2020-01-31 02:00,Software,3,2020-01-01,2020-03-01\n"
        "s,a,2020-01-31 01:00,2020-01-31 03:00,Software,3,2020-01-01,2020-03-01\n"
        "s,b,2020-02-01 00:00,,Network,3,,\n"
        "s,b,2020-02-01 00:00,2020-02-01 00:30,Network,3,,\n"
        "s,,2020-02-02 00:00,2020-02-02 00:30,Network,3,,\n"
        "s,b,not a time,2020-02-02 00:30,Network,3,,\n"
        "s,b,2020-05-01 00:00,2020-05-01 00:30,Network,3,,\n")
    fl = read_failures(p, extracted_at=pd.Timestamp("2020-04-01", tz="UTC").value / 1e9)
    r = fl.report
    assert (r["records_in"], r["failures"], r["folded"], r["quarantined"]) == (8, 3, 1, 4)
    assert r["quarantined_by_reason"] == {"missing_repair_time": 1, "missing_node": 1, "unparsable_failure_start": 1,
                                          "after_log_end": 1}
    iv = fl.intervals.set_index(["node", "kind"]).sort_index()
    H = 3600.0
    a = fl.intervals[fl.intervals["node"] == "a"].reset_index(drop=True)
    assert list(a["kind"]) == ["first", "tbf", "censored"] and list(a["event"]) == [1, 1, 0]
    assert list(a["duration_s"] / DAY) == pytest.approx([10, 20 - 1 / 24, 30 - 3 / 24])   # to 03-01
    assert list(a["repair_s"] / H) == pytest.approx([1, 3, 0])
    b = fl.intervals[fl.intervals["node"] == "b"].reset_index(drop=True)
    assert list(b["kind"]) == ["first", "censored"]
    assert b["duration_s"][0] / DAY == pytest.approx(31)               # window from 01-01 (the system's)
    assert b["duration_s"][1] / DAY == pytest.approx(60 - 0.5 / 24)    # to the log end 04-01
    u = iv.loc[("unobserved-0", "no_failure")]
    assert u["event"] == 0 and u["duration_s"] / DAY == pytest.approx(91)  # system window 01-01 .. 04-01
    # exposure: a 60 node-days (to its decommission), b and the unobserved node 91 each
    assert fl.intervals.eval("duration_s + repair_s").sum() / DAY == pytest.approx(60 + 91 + 91)
    assert int(fl.intervals["event"].sum()) == 3


def test_bad_failure_log_is_one_error_line(tmp_path, capsys):
    p = tmp_path / "nodes.csv"
    p.write_text("system,when,fixed\ns,2020-01-01,2020-01-02\n")
    with pytest.raises(TraceFormatError, match="nodes.csv: not a failure log: no node"):
        read_failures(p)
    for body, field in (("system,node,fixed\ns,a,2020-01-02\n", "failure_start"),
                        ("system,node,failure_start\ns,a,2020-01-02\n", "repair_end")):
        p.write_text(body)
        with pytest.raises(SystemExit) as e:
            main(["convert", "--from", "failures", str(p), "-o", str(tmp_path / "x.json")])
        err = capsys.readouterr().err.strip().splitlines()
        assert e.value.code == 2 and len(err) == 1 and err[0].startswith("error:")
        assert "nodes.csv" in err[0] and field in err[0]


@pytest.fixture(scope="module")
def syn_preset(syn):
    out = syn["dir"] / "my-fleet.json"
    res = CliRunner().invoke(app, ["convert", "--from", "failures", str(syn["path"]), "-o", str(out), "--json",
                                   "--extracted-at", _iso(syn["end"])[0]])
    assert res.exit_code == 0, res.output
    return out, json.loads(res.stdout)


def test_convert_writes_a_preset_and_intervals(syn, syn_preset, tmp_path):
    out, rep = syn_preset
    assert rep["records_in"] == rep["failures"] + rep["folded"] + rep["quarantined"]
    p = load_preset_file(out)
    assert p.name == "my-fleet" and p.ckpt_cost_s is None and p.gpus_per_node == 8
    assert p.failures_per_1000_node_days == pytest.approx(1000 * syn["model"].rate_per_node_day_, rel=1e-9)
    assert p.weibull_shape == pytest.approx(syn["model"].weibull_shape_)
    assert p.restart_law["family"] == "lognormal" and p.restart_s == p.restart_law["mean_s"]
    assert set(p.category_mix) == {"Hardware", "Software"} and p.hardware_share == p.category_mix["Hardware"]
    # MTTF(g) = 1 / (g/8 nodes · r_f)
    assert p.mttf_s(64) == pytest.approx(DAY / (8 * syn["model"].rate_per_node_day_))
    assert get_preset(str(out)) is get_preset("my-fleet")
    inp = Planner().inputs(1024, Assumptions(FailureSpec(reliability=p.name, preset=p)))
    assert p.restart_time().kind == "lognormal" and all(t.restart == p.restart_time() for t in inp.mix.types)
    assert float(inp.failure.mean()) == pytest.approx(p.mttf_s(1024))
    tab = tmp_path / "iv.parquet"
    res = CliRunner().invoke(app, ["convert", "--from", "failures", str(syn["path"]), "-o", str(tab)])
    assert res.exit_code == 0, res.output
    iv = pd.read_parquet(tab)
    assert len(iv) == len(syn["fl"].intervals) and int(iv["event"].sum()) == rep["failures"]


def test_preset_file_errors(tmp_path):
    bad = tmp_path / "b.json"
    bad.write_text(json.dumps({"kind": "acmemodel.reliability_preset", "preset": {"failures_per_1000_node_days": -1}}))
    with pytest.raises(ConfigError, match="b.json: preset.failures_per_1000_node_days"):
        get_preset(str(bad), "--reliability")
    with pytest.raises(ConfigError, match="no such preset file"):
        get_preset(str(tmp_path / "none.json"), "--reliability")
    bad.write_text("{}")
    with pytest.raises(ConfigError, match="not a reliability preset file"):
        get_preset(str(bad))
    assert "my-fleet" not in PRESETS          # file presets never join the published ones (sensitivity band)


def test_checkpoint_and_plan_take_the_preset_file(syn_preset, tmp_path, monkeypatch):
    out, _ = syn_preset
    p = load_preset_file(out)
    res = CliRunner().invoke(app, ["checkpoint", "--gpus", "1024", "--ckpt-cost", "60s", "--reliability", str(out),
                                   "--json"])
    assert res.exit_code == 0, res.output
    d = json.loads(res.stdout)
    assert d["mttf_s"] == pytest.approx(p.mttf_s(1024), rel=1e-9)
    assert d["restart"]["mean_s"] == pytest.approx(p.restart_s, rel=1e-6) and "my-fleet" in d["source"]
    cfg = tmp_path / "c.yaml"
    cfg.write_text("name: t\ncluster: {gpus: 4096}\nruns: [{name: r, gpus: 1024, work: 5d}]\n"
                   "simulation: {replicas: 200}\nsensitivity: false\n")
    monkeypatch.chdir(out.parent)
    res = CliRunner().invoke(app, ["plan", str(cfg), "--reliability", out.name, "--no-cluster", "--json"])
    assert res.exit_code == 0, res.output
    r = json.loads(res.stdout)["runs"][0]
    assert r["mttf_s"] == pytest.approx(p.mttf_s(1024), rel=1e-9)
    # ckpt cost is not in the file: the config's (default 60 s) applies
    assert r["expected_failures"] == pytest.approx(r["completion_time_s"]["mean"] / p.mttf_s(1024), rel=0.5)


def test_lanl_end_to_end(real_data, tmp_path):
    out = tmp_path / "lanl.json"
    res = CliRunner().invoke(app, ["convert", "--from", "failures", str(real_data / LANL), "-o", str(out), "--json"])
    assert res.exit_code == 0, res.output
    rep = json.loads(res.stdout)
    # every record accounted for; system 17's rows have no node number
    assert rep["records_in"] == 23739 == rep["failures"] + rep["folded"] + rep["quarantined"]
    assert rep["quarantined_by_reason"] == {"missing_node": 126}
    w = rep["tbf"]["families"]["weibull"]
    assert w["shape_upper"] < 1.0                                # decreasing hazard
    assert rep["tbf"]["families"]["exponential"]["aic"] > w["aic"]
    assert rep["repair"]["best"] == "lognormal"                  # Schroeder & Gibson's repair law
    tn = rep["tbf_nodes"]                                        # nodes with >= 30 failures: own fits
    assert tn["nodes"] >= 50 and tn["q75"] < 1.0 and tn["share_upper_below_1"] > 0.5
    big = [r for r in rep["rates_systems"] if r["category"] == "all" and r["system"] in ("18", "19")]
    assert [r["nodes"] for r in big] == [1024, 1024]
    for r in big:
        assert r["lower"] < r["per_1000_node_days"] < r["upper"] and 1 < r["per_1000_node_days"] < 10
    res = CliRunner().invoke(app, ["checkpoint", "--gpus", "4096", "--ckpt-cost", "5m", "--reliability", str(out),
                                   "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["mttf_s"] == pytest.approx(load_preset_file(out).mttf_s(4096))


def test_a_fitted_bundle_is_a_reliability_preset(tmp_path, capsys):
    """``--reliability BUNDLE``: the bundle's failure model as a node failure rate (its job MTTF at 1,024 GPUs,
    hazard ∝ GPUs), the same preset whether chosen or read back; a bundle without a failure model is one
    error line naming it."""
    import json

    from acmemodel.cli import main
    from acmemodel.datasets import default_bundle_path
    from acmemodel.models.bundle import load_default
    from acmemodel.planner.reliability import get_preset

    path = default_bundle_path()
    p = get_preset(str(path))
    mttf = load_default()["failure"].mttf(1024)
    assert p.failures_per_1000_node_days == pytest.approx(1000 * 86400 / (mttf * 1024 / 8))
    assert p.mttf_s(1024) == pytest.approx(mttf)
    try:
        main(["checkpoint", "--gpus", "1024", "--ckpt-cost", "60s", "--restart", "20m", "--reliability", str(path),
              "--json"])
    except SystemExit as e:
        assert e.code in (0, None)
    doc = json.loads(capsys.readouterr().out)
    assert doc["mttf_s"] == pytest.approx(mttf, rel=1e-6) if "mttf_s" in doc else str(path) in json.dumps(doc)
    empty = tmp_path / "b"
    empty.mkdir()
    (empty / "bundle.json").write_text("{}")
    with pytest.raises(SystemExit) as e:
        main(["checkpoint", "--gpus", "1024", "--ckpt-cost", "60s", "--reliability", str(empty)])
    err = capsys.readouterr().err.strip().splitlines()
    assert e.value.code == 2 and len(err) == 1 and err[0].startswith("error: ") and str(empty) in err[0]
