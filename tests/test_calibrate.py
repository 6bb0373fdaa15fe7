"""Tests of the calibration to the published AcmeTrace statistics (acmemodel/calibrate.py, ``acmemodel calibrate``).

* the pseudo-trace (:func:`published_trace`, 30 % of the real volume: ~200k Seren and ~6k Kalos GPU jobs, 1-2 s)
  matches the published shares, state rates, queue statistics and curves within tolerances derived from its size
  (5 standard errors; for GPU-time ratios the ratio-estimator standard error
  ``sqrt(Σ (w_i (I_i − r))²) / Σ w_i`` with w the GPU time);
* assumption overrides change what they claim to change, and are recorded;
* ``acmemodel calibrate --scale 0.05 -o DIR`` writes a bundle that loads (run once, session fixture);
* round trip: models refitted on a trace synthesised from that bundle (calibrated at 5 %, with the hurdle queue: the
  round trip checks the run-time, arrival and failure fits, not the policy search) return its parameters.

Known gaps of the current calibration are ``xfail(strict=True)`` with the reason, so they flip to failures (and must
be un-marked) once fixed.
"""
from __future__ import annotations

import hashlib
import functools
import json
import math
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from typer.testing import CliRunner

from acmemodel.datasets.published import load_reference

PSEUDO_SCALE = 0.3
BUNDLE_SCALE = 0.05
Z = 5.0  # tolerance in standard errors


@pytest.fixture(scope="session")
def pseudo():
    """The pseudo-trace with the independent hurdle queue draw (queue_policy=False): the statistical checks of the
    published medians/means below; the simulated-queue mode has its own tests."""
    from acmemodel.calibrate import Assumptions, published_trace

    return published_trace(scale=PSEUDO_SCALE, assumptions=Assumptions(queue_policy=False))


@pytest.fixture(scope="session")
def calibrate_cli(tmp_path_factory):
    """``acmemodel calibrate --scale 0.05 -o DIR --set weekend_factor=0.4 --set queue_policy=False --json``, run once:
    the CLI test checks what it wrote, the round-trip tests use the bundle it wrote (loaded back from disk). The
    hurdle queue draw (queue_policy=False, ~20 s): the round trips check the run-time, arrival and failure models,
    which the queue policy does not enter; the policy search (minutes, whatever the scale) has its own tests
    (test_simulated_queue_mode_kalos, tests/test_queue_policy.py)."""
    from acmemodel.cli import app

    out = tmp_path_factory.mktemp("calibrate") / "acme"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = CliRunner().invoke(app, ["calibrate", "--scale", str(BUNDLE_SCALE), "-o", str(out), "--set",
                                     "weekend_factor=0.4", "--set", "queue_policy=False", "--json"])
    return out, r


@pytest.fixture(scope="session")
def bundle(calibrate_cli):
    from acmemodel.models.bundle import Bundle

    out, r = calibrate_cli
    assert r.exit_code == 0, r.output
    return Bundle.load(out)


@pytest.fixture(scope="session")
def synth_trace(bundle):
    from acmemodel.reproduction.run import to_trace
    from acmemodel.synth import simulate_jobs

    jobs = [simulate_jobs(bundle, days=184, cluster=c, seed=11 + i) for i, c in enumerate(("Seren", "Kalos"))]
    return to_trace(pd.concat(jobs, ignore_index=True))


def _gpu(pseudo, cluster):
    j = pseudo[0].jobs
    return j[(j["cluster"] == cluster) & j["is_gpu"]]


def _gpu_time(g, cluster):
    """GPU time as the published tables count it: Kalos gpus × (end − submit), Seren gpus × (end − start)."""
    d = (g["end_s"] - g["submit_s"]) if cluster == "Kalos" else g["run_s"]
    return (g["gpu_num"] * d).to_numpy(float)


def _ratio(w, ind):
    """Weighted share r = Σ w I / Σ w and its ratio-estimator standard error."""
    r = float((w * ind).sum() / w.sum())
    return r, float(np.sqrt(((w * (ind - r)) ** 2).sum()) / w.sum())


_MIX = load_reference("workload_mix")
_CT = [(c, t) for c, t in zip(_MIX["cluster"], _MIX["type"])]

# ------------------------------------------------------------------------------ pseudo-trace vs published
@pytest.mark.parametrize("cluster, typ", _CT)
def test_job_share_by_type(pseudo, cluster, typ):
    g = _gpu(pseudo, cluster)
    pub = float(_MIX.query("cluster == @cluster and type == @typ")["job_count_percent"].iloc[0]) / 100
    p = float((g["type"] == typ).mean())
    assert abs(p - pub) <= Z * math.sqrt(pub * (1 - pub) / len(g)), (p, pub)


@pytest.mark.parametrize("cluster, typ", _CT)
def test_gpu_time_share_by_type(pseudo, cluster, typ):
    g = _gpu(pseudo, cluster)
    pub = float(_MIX.query("cluster == @cluster and type == @typ")["gpu_time_percent"].iloc[0]) / 100
    r, se = _ratio(_gpu_time(g, cluster), (g["type"] == typ).to_numpy())
    assert abs(r - pub) <= Z * se, (r, pub, se)


@pytest.mark.parametrize("cluster", ["Seren", "Kalos"])
def test_total_gpu_time_matches_summary(pseudo, cluster):
    """Total GPU time vs cluster_summary × scale, within the documented ~10% disagreement of the Seren sources (or
    5 standard errors of the sum, whichever is larger)."""
    s = load_reference("cluster_summary").set_index("id").loc[cluster]
    pub = float(s[["complete_gpu_time", "cancel_gpu_time", "fail_gpu_time"]].sum()) * PSEUDO_SCALE
    w = _gpu_time(_gpu(pseudo, cluster), cluster)
    tol = max(0.10 * pub, Z * float(w.std()) * math.sqrt(len(w)))
    assert abs(w.sum() - pub) <= tol, (w.sum(), pub)


@pytest.mark.parametrize("cluster", ["Seren", "Kalos"])
@pytest.mark.parametrize("state", ["COMPLETED", "CANCELLED", "FAILED"])
def test_state_rates_by_count_and_gpu_time(pseudo, cluster, state):
    g = _gpu(pseudo, cluster)
    s = load_reference("cluster_summary").set_index("id").loc[cluster]
    k = {"COMPLETED": "complete", "CANCELLED": "cancel", "FAILED": "fail"}[state]
    ind = (g["analysis_state"] == state).to_numpy()
    pub = float(s[f"{k}_rate_gpu"])
    assert abs(ind.mean() - pub) <= Z * math.sqrt(pub * (1 - pub) / len(g))
    r, se = _ratio(_gpu_time(g, cluster), ind)
    assert abs(r - float(s[f"{k}_rate_gpu_time"])) <= Z * se, (r, s[f"{k}_rate_gpu_time"], se)


@pytest.mark.parametrize("cluster", ["Seren", "Kalos"])
def test_queue_median_and_mean(pseudo, cluster):
    g = _gpu(pseudo, cluster)
    s = load_reference("cluster_summary").set_index("id").loc[cluster]
    q = g["queue_s"].to_numpy(float)
    n = len(q)
    # the published median m: P(wait <= m) >= 1/2 >= P(wait < m), each within 5 binomial standard errors
    m = float(s["med_que_time_gpu"])
    assert (q <= m).mean() >= 0.5 - Z * math.sqrt(0.25 / n)
    assert (q < m).mean() <= 0.5 + Z * math.sqrt(0.25 / n)
    assert abs(q.mean() - float(s["avg_que_time_gpu"])) <= Z * q.std() / math.sqrt(n)


@pytest.mark.parametrize("cluster", ["Seren", "Kalos"])
def test_cpu_job_counts(pseudo, cluster):
    j = pseudo[0].jobs
    s = load_reference("cluster_summary").set_index("id").loc[cluster]
    assert int((~j["is_gpu"] & (j["cluster"] == cluster)).sum()) == round(s["cpu_job_num"] * PSEUDO_SCALE)


@functools.lru_cache(maxsize=None)
def _sized_pseudo(cluster):
    """A pseudo-trace with the large-job size class (drawn once per cluster for the size tests)."""
    from acmemodel.calibrate import Assumptions, published_jobs

    a = Assumptions(queue_policy=False, large_job_gpus={"Seren": 768, "Kalos": 256},
                    large_job_gt_share={"Seren": 0.28, "Kalos": 0.97})
    return published_jobs(cluster, scale=0.1 if cluster == "Seren" else 1.0, assumptions=a)


def _curves():
    from acmemodel.reproduction.compare import curve_points

    return [pytest.param(cv, id=cv["name"]) for cv in curve_points()]


@pytest.mark.parametrize("cv", _curves())
def test_curves_within_quality_bar(pseudo, cv):
    """Every published curve within the issue's bar, KS <= 0.05 (KS at the published points; the sampling noise at
    these sizes is below 0.01 except for Kalos types with < 300 jobs, where 1.63/sqrt(n) is added)."""
    from acmemodel.reproduction.compare import ks_at_points

    g = _gpu(pseudo, cv["cluster"])
    d = ((g["end_s"] - g["submit_s"]) if cv["cluster"] == "Kalos" else g["run_s"]).to_numpy(float)
    if cv["kind"] == "gpu_count_cdf_by_jobs":
        sample = g["gpu_num"].to_numpy(float)
    elif cv["type"] is None:
        sample = d
    else:
        sample = d[(g["type"] == cv["type"]).to_numpy()]
    ks, _ = ks_at_points(sample, cv["x"], cv["cdf"])
    assert ks <= 0.05 + (1.63 / math.sqrt(len(sample)) if len(sample) < 300 else 0.0), ks


@pytest.mark.parametrize("cluster, lo, hi, target", [("Seren", 768, None, None), ("Kalos", 256, None, None),
                                                    ("Seren", 1, 511, 0.64)])
def test_gpu_time_by_job_size(cluster, lo, hi, target):
    """GPU time by job size (Assumptions.large_job_gpus): the jobs of >= 768 GPUs (Seren) / >= 256 GPUs (Kalos) hold
    their target share of the GPU time once the infrastructure failures have cut them short (the shifts are solved on
    expected cuts: the realised share is within Z ratio-estimator standard errors of the target); Seren's <= 511-GPU
    jobs within 5 pp of the published ~64 % (the reproduce bar)."""
    j, rep = _sized_pseudo(cluster)
    g = j[j["is_gpu"]]
    gp = g["gpu_num"].to_numpy()
    r, se = _ratio(_gpu_time(g, cluster), ((gp >= lo) & (gp <= (hi or np.inf))).astype(float))
    if target is None:
        rep = rep["large_jobs"]
        assert rep["min_gpus"] == lo and rep["share_after"] == pytest.approx(rep["share_target"], abs=1e-3)
        assert abs(r - rep["share_target"]) <= Z * se, (r, rep, se)
    else:
        assert abs(r - target) <= 0.05 + Z * se, (r, se)


def test_size_shift_only_repairs_sizes_and_durations():
    """The size classes' shifts move the pairing of a type's GPU counts and durations, not the two laws: the same
    sorted counts and durations, longer runs for the large jobs, shorter ones for the small ones."""
    from acmemodel.calibrate_pseudo import SizeDurationJoint

    rng = np.random.default_rng(3)
    g = np.sort(rng.choice([1, 8, 64, 512, 1024], size=2000, p=[0.5, 0.3, 0.1, 0.05, 0.05]))
    parts = {"T": {"n": 2000, "g_sorted": g, "seed": 11, "qdur": lambda u: np.exp(10 * np.asarray(u))}}
    j = SizeDurationJoint(parts, small_max=1, large_min=512)
    g0, d0 = j.draw("T", 0.2)
    g1, d1 = j.draw("T", 0.2, small=0.5, large=1.0)
    assert np.array_equal(g0, g1) and np.array_equal(np.sort(d0), np.sort(d1))
    assert d1[g1 >= 512].mean() > d0[g0 >= 512].mean() and d1[g1 == 1].mean() < d0[g0 == 1].mean()
    # rho solved for a GPU-time total, with the shift
    total = j.sums("T", 0.5, 0.0, 1.0)[0]
    assert j.solve_rho("T", total, 0.0, 1.0) == pytest.approx(0.5, abs=0.01)


@pytest.mark.parametrize("shape", [1.0, 0.7])
def test_expected_infra_cut_and_mttf_match_monte_carlo(shape):
    """``E[min(d, T)]`` of the infrastructure process (Weibull, mean M(g) = M_ref (g/g_ref)^-alpha) against 200,000
    draws (within 5 standard errors), and the M_ref solved in expectation for a failed-GPU-time share gives that
    share back on draws."""
    from acmemodel.calibrate import Assumptions
    from acmemodel.calibrate_pseudo import expected_infra_cut, expected_infra_mttf_ref
    from scipy import special

    a = Assumptions(infra_shape=shape)
    m_ref, g_ref = 3e5, 750.0
    cut = expected_infra_cut(a, m_ref, g_ref)
    rng = np.random.default_rng(0)
    for g, d in ((1024, 2e5), (64, 5e4), (8, 1e6)):
        t = m_ref * (g / g_ref) ** -1 * rng.weibull(shape, 200_000) / special.gamma(1 + 1 / shape)
        x = np.minimum(t, d) if g >= a.infra_min_gpus else np.full(200_000, d)
        assert abs(float(cut(np.array([g]), np.array([d]))[0]) - x.mean()) <= 5 * x.std() / math.sqrt(len(x)) + 1e-9
    gs = np.repeat([8, 128, 1024], 4000)
    ds = rng.lognormal(10, 1.5, len(gs))
    m = expected_infra_mttf_ref(a, gs, ds, 0.05, {})
    unit = (gs / g_ref) ** -1 * rng.weibull(shape, len(gs)) / special.gamma(1 + 1 / shape)
    hit = (gs >= a.infra_min_gpus) & (m * unit < ds)
    gt = gs * np.where(hit, m * unit, ds)
    assert float(gt[hit].sum() / gt.sum()) == pytest.approx(0.05, abs=0.02)


# ------------------------------------------------------------------------------ assumptions
def test_weekend_factor_override():
    """Submissions on local weekend days follow the weekend factor: expected share Σ_weekend w_d / Σ_d w_d."""
    from acmemodel.calibrate import Assumptions, published_jobs

    for wf in (0.1, 1.0):
        # the submissions are drawn before (and independently of) the queue: the hurdle queue draw keeps this
        # test from paying for the policy search, which it does not check
        a = Assumptions(weekend_factor=wf, queue_policy=False)
        j, rep = published_jobs("Seren", scale=0.05, assumptions=a, seed=4)
        assert rep["assumptions"]["weekend_factor"] == wf
        j = j[j["is_gpu"]]
        local = j["submit_time"].dt.tz_convert("+08:00")
        days = pd.date_range("2023-03-01", periods=int(a.days), freq="D")
        w = np.where(days.dayofweek >= 5, wf, 1.0)
        expect = w[days.dayofweek >= 5].sum() / w.sum()
        # evaluation jobs arrive in bursts of mean eval_batch_mean: inflate the binomial variance by it
        deff = a.eval_batch_mean["Seren"]
        obs = float((local.dt.dayofweek >= 5).mean())
        assert abs(obs - expect) <= Z * math.sqrt(expect * (1 - expect) * deff / len(j)), (wf, obs, expect)


def test_target_offsets_shift_the_targets():
    """target_offsets (the calibration's fixed-point step) are added to the published state rates the state logit
    targets and to the types' GPU-time shares the copula targets: the report says so, the pseudo-trace's failed and
    cancelled shares of GPU jobs move by the offsets (same draws otherwise; within Z binomial standard errors of a
    difference), and each type holds its new share of the GPU time (renormalised; the copula's ρ is solved on the
    draws, so to the bisection's tolerance)."""
    from acmemodel.calibrate import Assumptions, published_jobs

    # (without the large-job class: its shift is solved for the cluster's large jobs across types, so a type's realised
    # share also moves with it; the class has its own test, test_gpu_time_by_job_size)
    a = Assumptions(queue_policy=False, large_job_gpus={})
    off = {"fail": 0.05, "cancel": -0.03, "fail_gt": 0.03, "cancel_gt": -0.05}
    shares, reps = [], []
    for o in (None, off, {"gt_share:Pretrain": 0.05}):  # none, the states' offsets, a type's
        j, rep = published_jobs("Seren", scale=0.05, assumptions=a, seed=4, target_offsets=o)
        reps.append(rep)
        g = j[j["is_gpu"]]
        st = g["state"].replace({"TIMEOUT": "FAILED", "NODE_FAIL": "FAILED"})
        w = (g["gpu_num"] * g["run_s"]).groupby(g["type"]).sum()
        shares.append({"fail": float((st == "FAILED").mean()), "cancel": float((st == "CANCELLED").mean()),
                       "n": len(g), "pretrain_gt": float(w["Pretrain"] / w.sum())})
    t = reps[1]["state_targets"]
    for k, v in off.items():
        assert t["offsets"][k] == v and t["targets"][k] == pytest.approx(t["published"][k] + v)
    assert "type_targets" not in reps[1]
    tt = reps[2]["type_targets"]
    raw = {ty: v + (0.05 if ty == "Pretrain" else 0.0) for ty, v in tt["published"].items()}
    assert tt["targets"] == pytest.approx({ty: v / sum(raw.values()) for ty, v in raw.items()})
    # Pretrain's GPU-time share moves by the shift of its target (restart attempts and infrastructure failures,
    # drawn after the copula, keep the realised share off the target itself by about a point)
    assert shares[2]["pretrain_gt"] - shares[0]["pretrain_gt"] == pytest.approx(
        tt["targets"]["Pretrain"] - tt["published"]["Pretrain"], abs=0.01)
    for k in ("fail", "cancel"):
        p = shares[0][k]
        assert abs(shares[1][k] - shares[0][k] - off[k]) <= Z * math.sqrt(2 * p * (1 - p) / shares[0]["n"]), k


def test_fixed_point_step():
    """synthetic_rates pools the traces' GPU jobs with a run (TIMEOUT / NODE_FAIL count as failed; GPU time
    gpu_num × run_s) and fixed_point_offsets is published − synthetic, clipped to ±TARGET_OFFSET_MAX."""
    from acmemodel.calibrate_inputs import TARGET_OFFSET_MAX, fixed_point_offsets, synthetic_rates
    from acmemodel.datasets.published import load_reference

    a = pd.DataFrame({"gpu_num": [1, 8, 0, 2], "run_s": [10.0, 100.0, 5.0, np.nan],
                      "state": ["FAILED", "CANCELLED", "FAILED", "FAILED"], "type": ["Eval", "Pretrain", "Eval", "SFT"]})
    b = pd.DataFrame({"gpu_num": [4], "run_s": [50.0], "state": ["NODE_FAIL"], "type": ["Eval"]})
    r = synthetic_rates([a, b])
    assert r["jobs"] == 3 and r["traces"] == 2
    assert r["fail"] == pytest.approx(2 / 3) and r["cancel"] == pytest.approx(1 / 3)
    assert r["fail_gt"] == pytest.approx(210 / 1010) and r["cancel_gt"] == pytest.approx(800 / 1010)
    summ = load_reference("cluster_summary").set_index("id").loc["Kalos"]
    o = fixed_point_offsets("Kalos", r)
    assert o["fail"] == pytest.approx(float(np.clip(summ["fail_rate_gpu"] - 2 / 3, -TARGET_OFFSET_MAX,
                                                    TARGET_OFFSET_MAX)))
    assert o["cancel_gt"] == pytest.approx(max(summ["cancel_rate_gpu_time"] - 800 / 1010, -TARGET_OFFSET_MAX))
    assert r["gt_share:Eval"] == pytest.approx(210 / 1010) and "gt_share:SFT" not in r
    mix = load_reference("workload_mix").query("cluster == 'Kalos'").set_index("type")["gpu_time_percent"] / 100
    assert o["gt_share:Debug"] == pytest.approx(min(mix["Debug"], TARGET_OFFSET_MAX))  # no Debug job: share 0
    assert o["gt_share:Eval"] == pytest.approx(float(np.clip(mix["Eval"] - 210 / 1010, -0.1, 0.1)))


def test_fixed_point_score():
    """A candidate's score: Σ ((published − synthetic) / 2 pp)² over its clusters' targets (misses clipped at 10 pp);
    a cluster without a measurement adds nothing."""
    from acmemodel.calibrate_synthetic import fixed_point_score
    from acmemodel.calibrate_inputs import fixed_point_offsets

    syn = {"fail": 0.40, "cancel": 0.07, "fail_gt": 0.10, "cancel_gt": 0.70, "gt_share:Pretrain": 0.9}
    o = fixed_point_offsets("Kalos", syn)
    want = sum((v / 0.02) ** 2 for v in o.values())
    got = fixed_point_score({"Kalos": {"synthetic": syn}, "Seren": {"synthetic": None}})
    assert got == pytest.approx(want) and want > 0
    assert o["gt_share:Eval"] == pytest.approx(0.00422838) and o["gt_share:Pretrain"] == pytest.approx(0.05481286)


def test_synthetic_state_calibration_measures_as_reproduce_draws(default_bundle):
    """The fixed-point step measures the bundle's state rates on traces drawn as reproduce draws them (same seeds,
    same jobs: synthesize_cluster) and on the published basis (Kalos GPU time over end − submit)."""
    from acmemodel.calibrate_synthetic import synthetic_state_calibration
    from acmemodel.calibrate_inputs import fixed_point_offsets
    from acmemodel.reproduction.run import replica_seed, synthesize_cluster

    out = synthetic_state_calibration(default_bundle, days=3.0, seed=7, traces={"Seren": 1, "Kalos": 2}, step=0.5)
    for i, cl in enumerate(("Seren", "Kalos")):
        k = (1, 2)[i]
        fr = pd.concat([synthesize_cluster(default_bundle, cl, seed=replica_seed(7 + 31, i, r), days=3.0)[0]
                        for r in range(k)], ignore_index=True)
        g = fr[(fr["gpu_num"] > 0) & np.isfinite(fr["start_s"])]
        w = g["gpu_num"] * ((g["end_s"] - g["submit_s"]) if cl == "Kalos" else g["run_s"])
        failed = g["state"].isin(["FAILED", "TIMEOUT", "NODE_FAIL"])
        syn = out[cl]["synthetic"]
        assert syn["jobs"] == len(g) and syn["traces"] == k
        assert syn["fail"] == pytest.approx(failed.mean()) and syn["cancel"] == pytest.approx(
            (g["state"] == "CANCELLED").mean())
        assert syn["fail_gt"] == pytest.approx(w[failed].sum() / w.sum(), rel=1e-9)
        assert out[cl]["offsets"] == fixed_point_offsets(cl, syn, 0.5)
        full = fixed_point_offsets(cl, syn)
        assert all(v == pytest.approx(full[k] / 2) for k, v in out[cl]["offsets"].items() if abs(full[k]) < 0.1)


def test_queue_atom_override():
    """The share of GPU jobs starting within a second follows queue_atom: atom + (1 − atom) P(lognormal < 1.5 s)."""
    from acmemodel.calibrate import Assumptions, published_jobs

    a = Assumptions(queue_atom={"Seren": 0.9, "Kalos": 0.25}, queue_policy=False)
    j, rep = published_jobs("Seren", scale=0.05, assumptions=a, seed=5)
    g = j[j["is_gpu"]]
    ql = rep["queue_lognormal"]
    assert ql["atom"] == 0.9
    f = np.where(g["type"] == "Eval", a.eval_queue_factor, 1.0)
    p_ln = stats.norm.cdf((np.log(1.5 / f) - ql["mu"]) / ql["sigma"]).mean()
    expect = 0.9 + 0.1 * p_ln
    obs = float((g["queue_s"] <= 1).mean())
    assert abs(obs - expect) <= Z * math.sqrt(expect * (1 - expect) / len(g)), (obs, expect)


def test_simulated_queue_mode_kalos():
    """queue_policy=True (default): the waits are the simulator's on the chosen policy plus latency draws; Kalos run
    time is deconvolved from the published total by that wait law; the report names the choice, and
    the queue model fitted on the pseudo-trace recovers the latency from the jobs submitted to a free cluster."""
    from acmemodel.calibrate import published_jobs
    from acmemodel.calibrate_queue import latency_cdf
    from acmemodel.models.queue import QueueModel

    j, rep = published_jobs("Kalos", scale=0.3, seed=4)
    pol, lat = rep["policy"], rep["latency"]
    assert pol["reservation_gpus"] in [c["reservation_gpus"] for c in rep["policy_search"]]
    assert pol["priorities"]["Eval"] < min(v for t, v in pol["priorities"].items() if t != "Eval")
    g = j[j["is_gpu"]]
    assert (g["queue_s"] >= 0).all() and (g["run_s"] >= 1).all()
    q = QueueModel(keys=("cluster", "type")).fit(j)
    ev = g[g["type"] == "Eval"]
    # the latency law chosen for Eval vs the one the queue model estimated from free jobs: CDF at the published
    # points within 5 binomial standard errors of the free Eval jobs (Kalos is mostly idle, but evaluation comes in
    # bursts and only a job submitted to an empty queue counts as free: about the first of each burst)
    est = q.latency_.resolve(cluster="Kalos", type="Eval").value
    n = int(q.parts_.set_index("type").loc["Eval", "n_free"])
    assert n >= 100
    for x in (10.0, 20.0, 100.0):
        p = float(latency_cdf(x, **lat["Eval"]))
        assert abs(float(est.cdf(x)) - p) <= Z * math.sqrt(p * (1 - p) / n) + 0.01, x


def test_invalid_assumptions():
    from acmemodel.calibrate import Assumptions, published_jobs

    with pytest.raises(ValueError, match="hour_profile"):
        published_jobs("Seren", scale=0.01, assumptions=Assumptions(hour_profile=(1.0,) * 23))
    with pytest.raises(ValueError, match="scale"):
        published_jobs("Seren", scale=0)
    with pytest.raises(ValueError, match="cluster"):
        published_jobs("Philly", scale=0.01)


@pytest.mark.parametrize("argv, needle", [
    (["calibrate", "-o", "unused", "--set", "bogus=1"], "bogus"),
    (["calibrate", "-o", "unused", "--set", "weekend_factor=abc"], "weekend_factor"),
    (["calibrate", "-o", "unused", "--scale", "0"], "--scale"),
])
def test_calibrate_cli_user_errors(argv, needle, capsys):
    from acmemodel.cli import main

    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert needle in err and "Traceback" not in err


def test_calibrate_cli_writes_loadable_bundle(calibrate_cli):
    from acmemodel.calibrate import DEFAULT_MODELS
    from acmemodel.datasets.published import _data_path
    from acmemodel.models.bundle import Bundle

    out, r = calibrate_cli
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert sorted(doc["models"]) == sorted(DEFAULT_MODELS)
    b = Bundle.load(out)
    assert sorted(b.models) == sorted(DEFAULT_MODELS)
    prov = b.provenance
    assert prov["scale"] == BUNDLE_SCALE and prov["assumptions"]["weekend_factor"] == 0.4
    assert prov["assumptions"]["queue_policy"] is False  # (the policy search has its own tests)
    for rel, digest in prov["reference_sha256"].items():
        with _data_path(rel).open("rb") as f:
            assert hashlib.sha256(f.read()).hexdigest() == digest


# ------------------------------------------------------------------------------ round trip
def test_round_trip_runtime_medians(bundle, synth_trace):
    """Cells fully keyed (cluster/type/state/GPU bucket, what the generator draws from) with >= 200 synthetic jobs:
    the refitted median within 5 standard errors of the bundle's; SE(log median) = sqrt(1/4n) / (f(m) m) with the
    density at the median taken from the bundle cell's quantiles."""
    from acmemodel.models.runtime import RuntimeModel

    refit = RuntimeModel(**bundle["runtime"].get_params()).fit(synth_trace)
    s0, s1 = bundle["runtime"].summary(), refit.summary()
    m = s0[s0["fitted"]].merge(s1[s1["fitted"]], on="cell", suffixes=("_b", "_r"))
    m = m[~m["cell"].str.contains(r"\*", regex=True) & (m["n_r"] >= 200)]
    assert len(m) >= 10
    bad = []
    for _, r in m.iterrows():
        key = dict(zip(("cluster", "type", "state", "gpu_bucket"), r["cell"].split("/")))
        h = 0.05
        lo, hi = bundle["runtime"].quantile(np.array([0.5 - h, 0.5 + h]), **key)
        se = math.sqrt(0.25 / r["n_r"]) * (hi - lo) / (2 * h) / r["median_s_b"]
        z = math.log(r["median_s_r"] / r["median_s_b"]) / se
        if abs(z) > Z:
            bad.append((r["cell"], r["median_s_b"], r["median_s_r"], round(z, 1)))
    assert not bad, bad


def test_round_trip_arrival_counts(bundle, synth_trace):
    """Expected jobs per (cluster, type) over the six months: refit vs bundle within 5 SE of a compound Poisson
    count (variance = E[N] E[B²] / E[B], B the bundle's batch sizes)."""
    from acmemodel.models.arrival import ArrivalModel

    a0 = bundle["arrival"]
    a1 = ArrivalModel(**a0.get_params()).fit(synth_trace)
    s, e = pd.Timestamp("2023-03-01", tz="UTC"), pd.Timestamp("2023-09-01", tz="UTC")
    for cl in ("Seren", "Kalos"):
        for ty in a0.types(cl):
            n0 = a0.expected_count(s, e, cluster=cl, type=ty)
            n1 = a1.expected_count(s, e, cluster=cl, type=ty)
            pmf = a0.batch_size_pmf(cluster=cl, type=ty)
            b = pmf.index.to_numpy(float)
            eb, eb2 = float((b * pmf.to_numpy()).sum()), float((b * b * pmf.to_numpy()).sum())
            assert abs(n1 - n0) <= Z * math.sqrt(n0 * eb2 / eb), (cl, ty, n0, n1)


def test_round_trip_failure_alpha_and_shape(bundle, synth_trace):
    """Refitted size exponent and Weibull shape within 5 of the refit's standard errors of the bundle's values."""
    from acmemodel.models.failure import FailureModel

    f0 = bundle["failure"]
    f1 = FailureModel(**{**f0.get_params(), "compare": False}).fit(synth_trace)
    z = stats.norm.ppf(0.975)
    se_a = (f1.alpha_ci_[1] - f1.alpha_ci_[0]) / (2 * z)
    se_lk = (math.log(f1.shape_ci_[1]) - math.log(f1.shape_ci_[0])) / (2 * z)
    assert abs(f1.alpha_ - f0.alpha_) <= Z * se_a, (f0.alpha_, f1.alpha_, se_a)
    assert abs(math.log(f1.shape_ / f0.shape_)) <= Z * se_lk, (f0.shape_, f1.shape_, se_lk)


def test_arrivals_of_no_jobs():
    """A job class with no jobs (e.g. no CPU jobs or no Eval jobs) gets no arrivals (was an IndexError)."""
    from acmemodel.calibrate_inputs import Assumptions, _arrivals

    for batch_mean in (1.0, 3.0):
        sub, batch = _arrivals(np.random.default_rng(0), 0, Assumptions(), batch_mean, 1.68e9, 0.0)
        assert sub.shape == (0,) and batch.shape == (0,)
    sub, batch = _arrivals(np.random.default_rng(0), 50, Assumptions(), 3.0, 1.68e9, 0.0)
    assert sub.shape == (50,) and np.all(np.diff(batch) >= 0)


def test_ranks_are_the_stable_double_argsort_and_rankdata():
    """calibrate_inputs._ranks (a fast sort where nothing ties) gives exactly argsort(argsort(x, stable), stable)
    and, with average=True, rankdata(x) - 1: on continuous draws, with ties (the fallback) and with NaN."""
    from acmemodel.calibrate_inputs import _ranks

    rng = np.random.default_rng(0)
    for x in (rng.standard_normal(5000), rng.integers(0, 50, 5000).astype(float),
              np.r_[rng.standard_normal(100), np.nan, 1.0, 1.0], np.zeros(0), np.ones(1)):
        want = np.argsort(np.argsort(x, kind="stable"), kind="stable")
        assert np.array_equal(_ranks(x), want)
        if len(x) and not np.isnan(x).any():
            assert np.array_equal(_ranks(x, average=True), stats.rankdata(x) - 1.0)


# ------------------------------------------------------------------------------ reproducible default
def test_calibrate_twice_gives_byte_identical_bundles(tmp_path):
    """Two calibrations with equal inputs (a small scale, the hurdle queue) write byte-identical bundles,
    as a directory and as a zip: no fit times, no creation time, fixed zip member dates; one in this
    process, one with 2 worker processes (the clusters' pseudo-traces drawn in parallel)."""
    from acmemodel.calibrate import Assumptions, calibrate

    outs = []
    for k in range(2):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            b = calibrate(scale=0.002, seed=7, assumptions=Assumptions(queue_policy=False), workers=1 + k)
        d = b.save(tmp_path / f"run{k}")
        z = b.save(tmp_path / f"run{k}.zip")
        outs.append(({p.name: p.read_bytes() for p in sorted(d.iterdir())}, z.read_bytes()))
    assert outs[0][0].keys() == outs[1][0].keys() and "bundle.json" in outs[0][0]
    for name in outs[0][0]:
        assert outs[0][0][name] == outs[1][0][name], name
    assert outs[0][1] == outs[1][1]
    doc = json.loads(outs[0][0]["bundle.json"])
    assert doc["created_utc"] is None and "fit_seconds" not in doc["provenance"]
    prov = doc["provenance"]
    assert prov["estimators"]["failure"]["min_gpus"] == 64.0
    assert prov["estimators"]["failure"]["late_covariates"] == ["cluster"]


def test_shipped_default_is_what_calibrate_makes():
    """The shipped acme-2023 records the digest of its calibration's inputs (version, published tables,
    the calibration's code, scale, seed, assumptions, estimator settings): it equals the digest of the
    current defaults, so the shipped bundle is `acmemodel calibrate`'s output at the default settings
    (that output is a function of these inputs: test_calibrate_twice_gives_byte_identical_bundles).
    After a change to any of them, regenerate: acmemodel calibrate -o acmemodel/datasets/data/acme-2023"""
    from acmemodel import load_default
    from acmemodel.calibrate import DEFAULT_SCALE, DEFAULT_SEED, calibration_inputs

    prov = load_default().provenance
    if "calibration_inputs_sha256" not in prov:
        pytest.skip("the shipped default predates the recorded calibration inputs: regenerate it with "
                    "`acmemodel calibrate -o acmemodel/datasets/data/acme-2023`")
    now = calibration_inputs()
    assert prov["scale"] == DEFAULT_SCALE and prov["seed"] == DEFAULT_SEED
    assert prov.get("calibration_inputs_sha256") == now["sha256"], (
        "the shipped default was not made by the current calibration; regenerate it with "
        "`acmemodel calibrate -o acmemodel/datasets/data/acme-2023`",
        {k: v for k, v in now["inputs"].items() if prov.get("calibration_inputs", {}).get(k, v) != v})


def test_calibrate_cli_reports_stages_and_no_raw_warning(tmp_path):
    """Without --json: the bundle, each stage's wall time and the fits' notes as sentences; no raw Python
    warning on either stream."""
    from acmemodel.cli import app

    r = CliRunner().invoke(app, ["calibrate", "--scale", "0.002", "--seed", "7", "--set", "queue_policy=False",
                                 "-o", str(tmp_path / "b")])
    assert r.exit_code == 0, r.output
    out = r.output
    assert "wrote calibrated bundle" in out and "pseudo-trace:" in out and "fitting:" in out
    assert "note(s) from the fits" in out  # the fits warned: collected, one sentence each
    assert "Warning:" not in out and "warnings.warn" not in out and "Traceback" not in out


def test_latency_quantile_inverts_the_pooled_law():
    """The start-up latency law the calibration's synthetic traces invert (a pooled mixture of cells, the default's
    Kalos evaluation): each returned x is inf{x : F(x) >= q} to the documented tolerance (relative 1e-12 or 1e-9 s),
    i.e. F(x) >= q > F(x - tol) to F's own rounding, for 2,000 levels at once (shared grid, then Illinois steps) and for a few alone."""
    from acmemodel import load_default

    lat = load_default().get("queue").latency_
    law = lat.resolve(cluster="Kalos", type="Eval").value
    # (not at 1 − 1e-9: out there F is flat to within its rounding, and the infimum is the rounding's)
    q = np.r_[np.random.default_rng(3).random(2000), 0.0, 1e-9, 0.5, 1 - 1e-6]
    for levels in (q, q[:5]):
        x = np.asarray(law.quantile(levels), float)
        fin = np.isfinite(x) & (levels > 0)
        tol = 2 * np.maximum(1e-12 * np.abs(x[fin]), 1e-9)
        # F itself is evaluated to its rounding, which depends on how many points one call holds (NumPy's
        # summation order): at 1 − 1e-6 the same x gives 0.999999 alone and 0.9999989999999997 among 300
        rounding = 4 * np.finfo(float).eps
        assert np.all(law.cdf(x[fin]) >= levels[fin] - rounding)
        assert np.all(law.cdf(x[fin] - tol) < levels[fin] + rounding)


def test_calibrate_summary_groups_a_models_backoff_notes():
    """The summary prints a model's back-off notes (cells with too few jobs) as one line with their count and an
    example; other notes as they are, in first-seen order."""
    from acmemodel.cli.calibrate import _grouped_notes

    notes = ["RuntimeModel: cell Seren/Debug/FAILED/257-1024 is not fitted (too few jobs); answered from "
             "Seren/Debug/*/257-1024 (drops state).",
             "queue: something else happened.",
             "RuntimeModel: cell Kalos/Eval/FAILED/9-64 is not fitted (too few jobs); answered from Kalos/Eval/*/* "
             "(drops state, gpu_bucket).",
             "RuntimeModel state mix: cell Seren/Eval/*/65-256 is not fitted (too few jobs); answered from "
             "Seren/Eval/*/* (drops gpu_bucket)."]
    lines = _grouped_notes(notes)
    assert lines == ["RuntimeModel: 2 cells not fitted (too few jobs), each answered from a coarser cell; e.g. "
                     "Seren/Debug/FAILED/257-1024 from Seren/Debug/*/257-1024 (drops state).",
                     "queue: something else happened.", notes[3]]


def test_size_duration_draws_on_the_rank_grid_equal_the_general_path(monkeypatch):
    """SizeDurationJoint.draw's table lookups and run merge (no second sort) give exactly the durations of the
    general path (ranks by sorting, normal scores and the duration curve recomputed), with the small and large
    size classes' shifts on; tied scores take the general path."""
    import acmemodel.calibrate_pseudo as cp
    from acmemodel.calibrate import published_jobs
    from acmemodel.calibrate_inputs import Assumptions

    a = Assumptions(queue_policy=False, large_job_gpus={"Seren": 768}, large_job_gt_share={"Seren": 0.28})
    fast, _ = published_jobs("Seren", scale=0.01, seed=3, assumptions=a)
    monkeypatch.setattr(cp.SizeDurationJoint, "_draw_on_rank_grid", lambda self, *args: None)
    general, _ = published_jobs("Seren", scale=0.01, seed=3, assumptions=a)
    pd.testing.assert_frame_equal(fast, general)
    monkeypatch.undo()
    joint = cp.SizeDurationJoint({"A": {"n": 4, "seed": 1, "g_sorted": np.array([1, 1, 8, 8]),
                                        "qdur": lambda u: np.asarray(u) * 100.0}}, 1, 8)
    tied = (np.array([0.0, 0.0, 1.0, 2.0]), np.zeros(4))  # z1 with a tie, e = 0: the scores tie
    assert joint._draw_on_rank_grid("A", tied, np.array([1, 1, 8, 8]), 0.5, 0.0, 0.0) is None
