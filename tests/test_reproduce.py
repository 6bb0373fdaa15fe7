"""Tests of ``acmemodel reproduce`` (acmemodel/reproduce.py, acmemodel/cli/reproduce.py).

The bundle is the shipped default (``acmemodel calibrate`` at full volume, two-pass queue-policy
calibration: its recorded policy and latency laws are what the simulator runs here), loaded once per
session; the synthetic traces are drawn at 2 % of the published volume. The checks are on the mechanics: every reported number is recomputed here from the returned synthetic jobs by an
independent route (statsmodels ECDF, pandas group-bys) and from the published tables.
"""
from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
from statsmodels.distributions.empirical_distribution import ECDF
from typer.testing import CliRunner

from acmemodel.datasets.published import load_reference

SCALE = 0.02


@pytest.fixture(scope="session")
def bundle(default_bundle):
    """A calibrated bundle with a recorded queue policy. (Calibrating one here, even at 2 % of the volume,
    costs minutes of policy search that is scale-independent; the calibration has its own tests.)"""
    assert default_bundle.provenance["scale"] == 1.0
    assert all(default_bundle.provenance["calibration"][c].get("policy") for c in ("Seren", "Kalos"))
    return default_bundle


@pytest.fixture(scope="session")
def bundle_dir(bundle, tmp_path_factory):
    path = tmp_path_factory.mktemp("repro") / "b"
    bundle.save(path)
    return path


@pytest.fixture(scope="session")
def result(bundle):
    from acmemodel.reproduction.run import reproduce

    return reproduce(bundle, scale=SCALE, seed=3, return_jobs=True, replicas=1)


# ------------------------------------------------------------------------------ KS at points
def test_ks_at_points_exact():
    from acmemodel.reproduction.compare import ks_at_points

    s = [1, 2, 2, 3, 10]  # F(1)=.2 F(2)=.6 F(3)=.8 F(9)=.8 F(10)=1
    assert ks_at_points(s, [1, 2, 3, 10], [0.2, 0.6, 0.8, 1.0]) == (0.0, 1.0)
    ks, at = ks_at_points(s, [2, 9], [0.5, 0.5])
    assert ks == pytest.approx(0.3) and at == 9
    assert math.isnan(ks_at_points([], [1], [0.5])[0])


def test_ks_at_points_noise_level():
    """A sample from the published curve itself stays within the 99.9 % Kolmogorov bound."""
    from acmemodel.reproduction.compare import ks_at_points

    rng = np.random.default_rng(0)
    n = 4000
    x = 2.0 ** np.arange(0, 15)
    cdf = 1 - np.exp(-x / 300.0)
    ks, _ = ks_at_points(rng.exponential(300.0, n), x, cdf)
    assert ks <= 1.95 / math.sqrt(n)


# ------------------------------------------------------------------------------ structure
def test_document_structure(result):
    assert set(result["clusters"]) == {"Seren", "Kalos"}
    mix = load_reference("workload_mix")
    dur = load_reference("duration_cdf_by_type")
    for cl, c in result["clusters"].items():
        types = set(mix.loc[mix["cluster"] == cl, "type"])
        assert {(r["type"], r["metric"]) for r in c["shares"]} == {(t, m) for t in types
                                                                    for m in ("job_share", "gpu_time_share")}
        assert {(r["state"], r["basis"].split()[0]) for r in c["states"]} == {
            (s, b) for s in ("COMPLETED", "CANCELLED", "FAILED") for b in ("count", "gpu_time")}
        names = {r["name"] for r in c["curves"]}
        want = {f"duration/{cl}/{t}" for t in dur.loc[dur["cluster"] == cl, "type"]}
        want |= {f"duration/{cl}", f"gpu_count/{cl}"}
        assert names == want
        assert {"median_run_s", "median_queue_s", "mean_gpus"} <= {r["name"] for r in c["summary"]}
        for r in c["shares"] + c["states"]:
            assert r["diff_pp"] == pytest.approx(r["reproduced"] - r["published"])
            assert r["within_bar"] == (abs(r["diff_pp"]) <= 2.0)
            assert "explanation" in r
        for r in c["curves"]:
            assert r["within_bar"] == (r["ks"] <= 0.05)
            assert r["ks_crit95"] == pytest.approx(1.3581 / math.sqrt(r["n"]))
        assert c["passed"]["curves"] == sum(r["within_bar"] for r in c["curves"])
    json.dumps({k: v for k, v in result.items() if k != "jobs"})  # JSON-ready


def test_published_values_are_the_reference_tables(result):
    mix = load_reference("workload_mix").set_index(["cluster", "type"])
    summ = load_reference("cluster_summary").set_index("id")
    for cl, c in result["clusters"].items():
        for r in c["shares"]:
            col = "job_count_percent" if r["metric"] == "job_share" else "gpu_time_percent"
            assert r["published"] == pytest.approx(mix.loc[(cl, r["type"]), col])
        for r in c["states"]:
            k = {"COMPLETED": "complete", "CANCELLED": "cancel", "FAILED": "fail"}[r["state"]]
            col = f"{k}_rate_gpu" if r["basis"] == "count" else f"{k}_rate_gpu_time"
            assert r["published"] == pytest.approx(100 * summ.loc[cl, col])
        s = {r["name"]: r for r in c["summary"]}
        assert s["median_run_s"]["published"] == summ.loc[cl, "med_run_time_gpu"]
        assert s["mean_gpus"]["published"] == summ.loc[cl, "avg_gpu_num"]


# ------------------------------------------------------------------------------ recomputation
def _duration(g: pd.DataFrame, cluster: str) -> np.ndarray:
    """The published ``duration`` semantics: Kalos end − submit (queue included), Seren end − start."""
    if cluster == "Kalos":
        return (g["end_time"] - g["submit_time"]).dt.total_seconds().to_numpy()
    return (g["end_time"] - g["start_time"]).dt.total_seconds().fillna(0).to_numpy()


def test_reproduced_numbers_recomputed_from_jobs(result):
    jobs = result["jobs"]
    for cl, c in result["clusters"].items():
        g = jobs[(jobs["cluster"] == cl) & (jobs["gpu_num"] > 0)]
        d = _duration(g, cl)
        w = g["gpu_num"].to_numpy() * d
        for r in c["shares"]:
            m = (g["type"] == r["type"]).to_numpy()
            want = 100 * m.mean() if r["metric"] == "job_share" else 100 * w[m].sum() / w.sum()
            assert r["reproduced"] == pytest.approx(want, abs=1e-9)
        failed = g["state"].isin(["FAILED", "TIMEOUT", "NODE_FAIL"]).to_numpy()
        for r in c["states"]:
            m = failed if r["state"] == "FAILED" else (g["state"] == r["state"]).to_numpy()
            want = 100 * m.mean() if r["basis"] == "count" else 100 * w[m].sum() / w.sum()
            assert r["reproduced"] == pytest.approx(want, abs=1e-9)
            # the share's iid standard error: binomial by count, the ratio estimator's on GPU time
            p = want / 100
            se = (np.sqrt(p * (1 - p) / len(m)) if r["basis"] == "count"
                  else np.sqrt(((w * (m - p)) ** 2).sum()) / w.sum())
            assert r["se_pp"] == pytest.approx(100 * se, rel=1e-9)
        s = {r["name"]: r for r in c["summary"]}
        assert s["gpu_jobs"]["reproduced"] == len(g)
        assert s["mean_gpus"]["reproduced"] == pytest.approx(g["gpu_num"].mean())
        st = g[g["started"]]
        assert s["median_run_s"]["reproduced"] == pytest.approx(np.median(_duration(st, cl)))
        q = (st["start_time"] - st["submit_time"]).dt.total_seconds()
        assert s["median_queue_s"]["reproduced"] == pytest.approx(q.median())
        for r in c["curves"]:
            if r["name"].startswith("gpu_count"):
                pub = load_reference("gpu_count_cdf_by_jobs").query("cluster == @cl")
                sample, x = g["gpu_num"].to_numpy(float), pub["x_gpus"].to_numpy(float)
            elif r["type"] is None:
                pub = load_reference("gpu_job_duration_cdf_by_cluster").query("cluster == @cl")
                sample, x = d, pub["x_s"].to_numpy(float)
            else:
                t = r["type"]
                pub = load_reference("duration_cdf_by_type").query("cluster == @cl and type == @t")
                sample, x = d[(g["type"] == t).to_numpy()], pub["x_s"].to_numpy(float)
            want = np.max(np.abs(ECDF(sample)(x) - pub["cdf_percent"].to_numpy() / 100))
            assert r["ks"] == pytest.approx(want, abs=1e-12), r["name"]
            assert r["n"] == len(sample)
            assert r["basis"] == ("gpus" if r["name"].startswith("gpu_count")
                                  else "queue+run" if cl == "Kalos" else "run")


def test_trace_contract_and_waits(result):
    from acmemodel.trace import JOB_COLUMNS

    jobs = result["jobs"]
    assert list(jobs.columns) == list(JOB_COLUMNS)
    st = jobs[jobs["started"]]
    assert (st["queue_s"] >= 0).all()
    np.testing.assert_allclose(st["run_s"], st["end_s"] - st["start_s"])
    np.testing.assert_allclose(jobs["gpu_time_s"], jobs["gpu_num"] * jobs["run_s"].fillna(0))
    assert (jobs.loc[~jobs["is_gpu"] & jobs["started"], "queue_s"] == 0).all()  # CPU jobs are not simulated
    for cl, c in result["clusters"].items():
        sim = c["simulation"]
        assert sim["total_gpus"] == int(load_reference("clusters").set_index("cluster").loc[cl, "gpus"])
        assert sum(sim["partitions"].values()) == sim["total_gpus"]
        assert sim["queue"]["unschedulable"] == 0


def test_partitions_change_the_waits(bundle):
    """A tiny shared partition (Seren: one 8-GPU node shared by every non-pretraining job; larger jobs move to
    the pretraining partition) must raise the waits the simulator assigns; same seed, same jobs otherwise. (On the
    calibrated policy with best-effort use of idle reserved GPUs switched off: at 2 % of the volume the reserved
    GPUs are idle and would otherwise absorb the displaced jobs.)"""
    import copy

    from acmemodel.models.bundle import Bundle
    from acmemodel.reproduction.run import reproduce

    prov = copy.deepcopy(bundle.provenance)
    prov["calibration"]["Seren"]["policy"]["best_effort"] = False
    fifo = Bundle(bundle.models, provenance=prov, name=bundle.name)
    base = reproduce(fifo, scale=SCALE, seed=3, clusters=("Seren",), return_jobs=True, replicas=1)
    small = reproduce(fifo, scale=SCALE, seed=3, clusters=("Seren",), partitions={"Seren": {"pretrain": 2280}},
                      return_jobs=True, replicas=1)
    assert small["clusters"]["Seren"]["simulation"]["partitions"] == {"pretrain": 2280, "shared": 8}
    assert base["clusters"]["Seren"]["simulation"]["policy"]["best_effort"] is False
    a = base["jobs"].query("cluster == 'Seren' and is_gpu and type != 'Pretrain'")["queue_s"]
    b = small["jobs"].query("cluster == 'Seren' and is_gpu and type != 'Pretrain'")["queue_s"]
    assert len(a) == len(b)
    assert b.mean() > a.mean() + 1.0


def test_queue_model_mode(bundle):
    """--queue model: waits from the bundle's queue model (Kalos median wait published as 17 s)."""
    from acmemodel.reproduction.run import reproduce

    out = reproduce(bundle, scale=SCALE, seed=1, clusters=("Kalos",), queue="model", replicas=1)
    s = {r["name"]: r for r in out["clusters"]["Kalos"]["summary"]}
    assert out["queue"] == "model"
    assert s["median_queue_s"]["reproduced"] > 1.0
    with pytest.raises(ValueError, match="queue"):
        reproduce(bundle, scale=SCALE, queue="fifo")


def test_scale_is_relative_to_the_bundle_volume(bundle, result):
    """scale = fraction of the real volume: at half the bundle's volume, about half the jobs."""
    from acmemodel.reproduction.run import reproduce

    half = reproduce(bundle, scale=SCALE / 2, seed=5, clusters=("Seren",), replicas=1)
    s = half["clusters"]["Seren"]
    assert s["simulation"]["arrival_scale"] == pytest.approx(SCALE / 2 / bundle.provenance["scale"])
    assert result["clusters"]["Seren"]["simulation"]["arrival_scale"] == pytest.approx(
        SCALE / bundle.provenance["scale"])
    n_half = {r["name"]: r for r in s["summary"]}["gpu_jobs"]["reproduced"]
    n_full = {r["name"]: r for r in result["clusters"]["Seren"]["summary"]}["gpu_jobs"]["reproduced"]
    # evaluation jobs arrive in bursts (mean ~8): variance inflated; 5 standard errors of the ratio
    se = 0.5 * math.sqrt(8.0 / n_half + 8.0 / n_full)
    assert abs(n_half / n_full - 0.5) <= 5 * se


def test_explanations(result, bundle):
    """Where the calibration report says a type's GPU-time share could not be reached, the row says so; the Seren
    summary statistics carry the figure-vs-summary note."""
    cal = bundle.provenance["calibration"]
    for cl, c in result["clusters"].items():
        for r in c["shares"]:
            rho = cal[cl]["types"][r["type"]]["rho_gpus_duration"]
            at_bound = r["metric"] == "gpu_time_share" and r["type"] != "Pretrain" and abs(rho) >= 0.95 - 1e-9
            assert (r["explanation"] is not None) == at_bound
    s = {r["name"]: r for r in result["clusters"]["Seren"]["summary"]}
    assert "cluster_summary" in s["median_run_s"]["explanation"]
    latency = bool((cal["Kalos"].get("policy") or {}).get("latency"))
    for r in result["clusters"]["Kalos"]["curves"]:
        # the Kalos-duration note applies to a bundle whose queue has no start-up latency
        expect = not r["within_bar"] and r["name"].startswith("duration") and not latency
        assert (r["explanation"] is not None) == expect
        if expect:
            assert r["explanation"].startswith("model limitation")
    for r in result["clusters"]["Seren"]["curves"]:
        assert r["explanation"] is None


def test_invalid_arguments(bundle):
    from acmemodel.reproduction.run import reproduce

    with pytest.raises(ValueError, match="scale"):
        reproduce(bundle, scale=0)
    with pytest.raises(ValueError, match="clusters"):
        reproduce(bundle, scale=SCALE, clusters=("Philly",))
    with pytest.raises(ValueError, match="partitions"):
        reproduce(bundle, scale=SCALE, clusters=("Seren",), partitions={"Seren": {"pretrain": 4096}})
    for bad in (0, 257, 1.5, True, {"Kalos": 0}, {"Philly": 2}):
        with pytest.raises(ValueError, match="replicas"):
            reproduce(bundle, scale=SCALE, clusters=("Kalos",), replicas=bad)


def test_replicas_pool_independent_traces(bundle):
    """replicas=R: each cluster's comparison is of the R traces of seeds replica_seed(seed, i, r) pooled — the
    GPU-job count is the sum of the R traces' (against published x scale x R) and the state shares are those of
    the concatenated traces; replica 0 is the replicas=1 trace."""
    from acmemodel.reproduction.run import replica_seed, reproduce, synthesize_cluster

    scale = SCALE / 4
    out = reproduce(bundle, scale=scale, seed=4, clusters=("Kalos",), replicas=2, return_jobs=True)
    one = reproduce(bundle, scale=scale, seed=4, clusters=("Kalos",), replicas=1, return_jobs=True)
    traces = [synthesize_cluster(bundle, "Kalos", scale=scale, seed=replica_seed(4, 0, r))[0] for r in range(2)]
    pub = load_reference("cluster_summary").set_index("id").loc["Kalos", "gpu_job_num"]
    summ = {r["name"]: r for r in out["clusters"]["Kalos"]["summary"]}["gpu_jobs"]
    n = [int((t["gpu_num"] > 0).sum()) for t in traces]
    assert summ["reproduced"] == sum(n) and summ["published"] == pytest.approx(pub * scale * 2)
    assert {r["name"]: r for r in one["clusters"]["Kalos"]["summary"]}["gpu_jobs"]["reproduced"] == n[0]
    assert out["replicas"] == {"Kalos": 2} and out["clusters"]["Kalos"]["simulation"]["seeds"] == [replica_seed(4, 0, r)
                                                                                           for r in range(2)]
    pooled = pd.concat(traces, ignore_index=True)
    g = pooled[(pooled["gpu_num"] > 0) & np.isfinite(pooled["run_s"])]
    st = g["state"].replace({"TIMEOUT": "FAILED", "NODE_FAIL": "FAILED"})
    by_count = {r["state"]: r["reproduced"] for r in out["clusters"]["Kalos"]["states"] if r["basis"] == "count"}
    for s_, v in by_count.items():
        assert v == pytest.approx(100 * (st == s_).mean(), abs=1e-9)
    assert len(out["jobs"]) == len(pooled)


# ------------------------------------------------------------------------------ plots and CLI
def test_plots(bundle, tmp_path):
    from acmemodel.reproduction.run import reproduce

    out = reproduce(bundle, scale=SCALE / 4, seed=2, clusters=("Kalos",), plots=tmp_path, replicas=1)
    pngs = sorted(tmp_path.glob("*.png"))
    assert len(pngs) == len(out["clusters"]["Kalos"]["curves"]) == 6
    assert all(p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in pngs)
    assert {r["plot"] for r in out["clusters"]["Kalos"]["curves"]} == {str(p) for p in pngs}


def test_cli_json_and_table(bundle_dir):
    from acmemodel.cli import app

    runner = CliRunner()
    r = runner.invoke(app, ["reproduce", "--bundle", str(bundle_dir), "--scale", "0.01", "--seed", "1", "--json",
                            "--replicas", "1"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    for c in doc["clusters"].values():
        assert {"shares", "states", "summary", "curves"} <= set(c)
        assert all({"name", "ks", "n"} <= set(x) for x in c["curves"])
        assert all({"type", "metric", "published", "reproduced", "diff_pp"} <= set(x) for x in c["shares"])
        assert all({"state", "basis", "published", "reproduced", "diff_pp"} <= set(x) for x in c["states"])
    r = runner.invoke(app, ["reproduce", "--bundle", str(bundle_dir), "--scale", "0.01", "--replicas", "2"])
    assert r.exit_code == 0, r.output
    assert "traces pooled: Seren 2 × 184 d, Kalos 2 × 184 d" in " ".join(r.stdout.split())
    assert "KS distance" in r.stdout and "Seren" in r.stdout and "Kalos" in r.stdout


@pytest.mark.parametrize("argv, needle", [
    (["reproduce", "--scale", "0"], "--scale"),
    (["reproduce", "--bundle", "/nonexistent/bundle", "--scale", "0.01"], "--bundle"),
])
def test_cli_user_errors_exit_2(argv, needle, capsys):
    from acmemodel.cli import main

    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert needle in err and "Traceback" not in err
