"""The competing-risks job life (acmemodel.joblife), the restart model's resubmission probability and
the failure model's identifiability line."""
from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner


@pytest.fixture(scope="module")
def default():
    from acmemodel import load_default

    return load_default()


@pytest.mark.parametrize("ty, gpus", [("Eval", 1), ("SFT", 8), ("Pretrain", 8)])
def test_outside_the_failure_domain_the_runtime_model_is_reproduced(default, ty, gpus):
    """Below the failure model's min_gpus_ the latent causes come from the runtime model's
    cause-specific hazards: their minimum has the runtime model's state probabilities and per-state
    medians (binomial / order-statistic tolerances for n draws)."""
    from acmemodel.joblife import sample_lives

    rm = default["runtime"]
    assert gpus < default["failure"].min_gpus_
    n = 20_000
    st, run = sample_lives(rm, default["failure"], "Seren", np.full(n, ty, object), np.full(n, gpus),
                           np.random.default_rng(3))
    probs = rm.state_probabilities(cluster="Seren", type=ty, gpus=gpus)
    for s, p in probs.items():
        got = float((st == s).mean())
        assert abs(got - p) <= 4 * math.sqrt(p * (1 - p) / n) + 0.002, (s, p, got)
        x = run[st == s]
        if p < 0.05:
            continue
        q = rm.quantile(np.array([0.4, 0.5, 0.6]), cluster="Seren", type=ty, gpus=gpus, state=s)
        # 4 SE of the sample median in probability terms: |F(m_hat) - 0.5| <= 4 sqrt(1/4k)
        lo = rm.cdf(np.median(x), cluster="Seren", type=ty, gpus=gpus, state=s)
        assert abs(float(lo) - 0.5) <= 4 * math.sqrt(0.25 / len(x)) + 0.01, (s, np.median(x), q)


def test_inside_the_failure_domain_failures_follow_the_failure_model(default):
    """For 256-GPU Pretrain jobs, the failed share and failure times follow the failure model's
    latent law censored by the other causes: P(FAILED) = E[F_fail(T_other)] checked by simulation
    against the failure model's own survival."""
    from acmemodel.joblife import CAUSES, cause_hazards, sample_latent, sample_lives

    rm, fm = default["runtime"], default["failure"]
    n = 20_000
    rng = np.random.default_rng(5)
    st, run = sample_lives(rm, fm, "Seren", np.full(n, "Pretrain", object), np.full(n, 256), rng)
    law = cause_hazards(rm, cluster="Seren", type="Pretrain", gpus=256)
    r2 = np.random.default_rng(6)
    other = np.minimum(sample_latent(law["H"]["COMPLETED"], n, r2), sample_latent(law["H"]["CANCELLED"], n, r2))
    other = np.where(np.isfinite(other), other, 2.0 ** 25)
    p_fail = float(np.mean(1 - fm.survival(other, np.full(n, 256.0), cluster="Seren", type="Pretrain")))
    got = float((st == "FAILED").mean())
    assert abs(got - p_fail) <= 4 * math.sqrt(p_fail * (1 - p_fail) / n) * math.sqrt(2), (got, p_fail)
    assert set(np.unique(st)) <= set(CAUSES)


def test_resubmit_probability_is_owned_by_the_restart_model(tmp_path):
    from acmemodel.models.restart import RESUBMIT_PRIOR, RestartModel

    rows = []
    t = 1.68e9
    for i in range(200):  # 200 failed Pretrain jobs, 150 resubmitted 60 s after their end
        rows.append(dict(job_id=f"f{i}", type="Pretrain", gpu_num=256, state="FAILED", submit_s=t, end_s=t + 3600,
                         attempt=1, prev_job_id=""))
        if i < 150:
            rows.append(dict(job_id=f"r{i}", type="Pretrain", gpu_num=256, state="COMPLETED", submit_s=t + 3660,
                             end_s=t + 9000, attempt=2, prev_job_id=f"f{i}"))
        t += 86400
    j = pd.DataFrame(rows).assign(cluster="Seren", user="u1", queue_s=0.0)
    j["analysis_state"] = j["state"]
    j["start_s"] = j["submit_s"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = RestartModel(method="prior").fit(j, timezones={"Seren": "+08:00"})
    q = m.resubmit_probability(cluster="Seren", type="Pretrain")
    assert q == pytest.approx((150 + 2 * RESUBMIT_PRIOR["Pretrain"]) / (200 + 2))
    assert m.resubmit_probability(type="Pretrain") == pytest.approx(q)  # cluster marginalised
    assert m.resubmit_probability(cluster="Kalos", type="Pretrain") == RESUBMIT_PRIOR["Pretrain"]  # prior
    assert m.resubmit_probability(cluster="Seren", type="Eval") == 0.0
    from acmemodel.models.bundle import Bundle

    path = Bundle({"restart": m}).save(tmp_path / "r")
    assert Bundle.load(path)["restart"].resubmit_probability(cluster="Seren", type="Pretrain") == pytest.approx(q)


def _poor_failure_model():
    """A failure model fitted on a handful of large-job failures: its MTTF interval at the top is
    wide. Returns the model and the number of failures on >= 256 GPUs."""
    from acmemodel.models.failure import FailureModel

    rng = np.random.default_rng(0)
    n = 300
    g = rng.choice([64, 128, 256, 512], n)
    t = rng.weibull(0.9, n) * 1e7 * (g / 64.0) ** -1.0
    cens = rng.uniform(0, 1e5, n)
    fail = t < cens
    jobs = pd.DataFrame({"cluster": "Seren", "type": "Pretrain", "gpu_num": g, "is_gpu": True, "started": True,
                         "run_s": np.where(fail, t, cens), "analysis_state": np.where(fail, "FAILED", "COMPLETED"),
                         "submit_s": np.arange(n) * 1000.0})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return FailureModel(compare=False, min_gpus=64).fit(jobs), int((fail & (g >= 256)).sum())


def test_identifiability_line_names_the_cause(default):
    fm, n_fail = _poor_failure_model()
    note = fm.identifiability()
    assert note is not None and "\n" not in note
    assert f"only {n_fail} failures on >= 256 GPUs" in note and "spans" in note
    lo, hi = fm.mttf_interval(fm.max_gpus_)
    assert hi / lo > 10
    assert default["failure"].identifiability() is None  # the default bundle's law is usable


def test_cli_prints_the_identifiability_line(tmp_path):
    from acmemodel.cli import app
    from acmemodel.models.bundle import Bundle

    fm, n_fail = _poor_failure_model()
    path = Bundle({"failure": fm}).save(tmp_path / "poor")
    r = CliRunner().invoke(app, ["checkpoint", "--gpus", "512", "--ckpt-cost", "60s", "--restart", "20m",
                                 "--bundle", str(path)])
    assert r.exit_code == 0, r.output
    lines = [ln for ln in r.output.splitlines() if "poorly identified" in ln]
    assert len(lines) == 1 and f"only {n_fail} failures on >= 256 GPUs" in lines[0]
    r = CliRunner().invoke(app, ["checkpoint", "--gpus", "512", "--ckpt-cost", "60s", "--restart", "20m",
                                 "--bundle", str(path), "--json"])
    import json

    assert "only" in json.loads(r.stdout)["identifiability"]


def test_no_synthetic_failure_past_the_failure_model_s_support(default):
    """joblife draws failures within FailureModel.failure_support_s (the longest failure the model saw
    for the job's cluster x GPU bucket): none later, and the earlier ones as before."""
    import copy

    from acmemodel.joblife import sample_lives

    rm = default["runtime"]
    fm = default["failure"]
    assert fm.failure_support_ and math.isfinite(fm.failure_support_s(512, "Seren"))
    n = 20_000
    types, gpus = np.full(n, "Pretrain", object), np.full(n, 512)
    st0, run0 = sample_lives(rm, fm, "Seren", types, gpus, np.random.default_rng(8))
    short = copy.deepcopy(fm)
    short.failure_support_ = {"*/*": 3600.0}
    st1, run1 = sample_lives(rm, short, "Seren", types, gpus, np.random.default_rng(8))
    from acmemodel.joblife import LIFE_GRID_S

    step = float(LIFE_GRID_S[np.searchsorted(LIFE_GRID_S, 3600.0)])  # the support holds on the life grid
    assert (run1[st1 == "FAILED"] <= step + 1e-6).all()
    assert (run0[st0 == "FAILED"] > 3600.0).any()
    # below the support the failure law is unchanged: same count of failures within the first hour
    k0, k1 = int(((st0 == "FAILED") & (run0 <= 3600)).sum()), int(((st1 == "FAILED") & (run1 <= 3600)).sum())
    assert abs(k0 - k1) <= 4 * math.sqrt(k0) + 5, (k0, k1)


def test_failure_support_backs_off():
    """failure_support_s: the cluster x bucket cell with >= SUPPORT_MIN_EVENTS failures, else the
    bucket over clusters, else every failure; inf without it (the default bundle, read from JSON,
    carries it: the test above)."""
    from acmemodel.models.failure import FailureModel
    from acmemodel.models.failure_queries import SUPPORT_MIN_EVENTS, failure_support

    fr = pd.DataFrame({
        "cluster": ["A"] * 12 + ["B"] * 3 + ["A"] * 10,
        "gpu_bucket": ["257-1024"] * 15 + ["9-64"] * 10,
        "T": list(np.arange(1, 13) * 100.0) + [5000.0, 6000.0, 7000.0] + list(np.arange(1, 11) * 10.0),
        "E": [True] * 25,
    })
    sup = failure_support(fr)
    assert SUPPORT_MIN_EVENTS == 10
    assert sup["A/257-1024"] == 1200.0 and "B/257-1024" not in sup and sup["*/257-1024"] == 7000.0
    assert sup["A/9-64"] == 100.0 and sup["*/*"] == 7000.0
    fm = FailureModel()
    fm.failure_support_ = sup
    fm.gpu_edges = FailureModel().gpu_edges
    assert fm.failure_support_s(512, "A") == 1200.0 and fm.failure_support_s(512, "B") == 7000.0
    assert fm.failure_support_s(2, "A") == 7000.0  # a bucket without its own support: every failure's
    fm.failure_support_ = {}
    assert math.isinf(fm.failure_support_s(512, "A"))


def test_a_run_that_outlives_every_cause_takes_the_continued_hazards_cause():
    """_tail_cause: the cause of a run past the grid is drawn with the shares of the last grid interval
    with any hazard (not COMPLETED by default); no hazard at all gives COMPLETED."""
    from acmemodel.joblife import CAUSES, _tail_cause

    dHc = np.array([[0.1, 0.2, 0.0, 0.0],    # COMPLETED
                    [0.1, 0.8, 0.0, 0.0],    # CANCELLED
                    [0.0, 0.0, 0.0, 0.0]])   # FAILED
    v = (np.arange(10_000) + 0.5) / 10_000
    c = _tail_cause(dHc, v)
    assert CAUSES[1] == "CANCELLED"
    assert abs(float((c == 1).mean()) - 0.8) < 1e-3 and abs(float((c == 0).mean()) - 0.2) < 1e-3
    assert (_tail_cause(np.zeros((3, 4)), v) == 0).all()


def _sized_pretrain(n=400, seed=0):
    """Pretrain jobs of 512 GPUs (median run 1 h) and of 1,024 GPUs (median 20 h), n each, all COMPLETED,
    with the default-edge ``gpu_bucket`` column a trace's features carry (both sizes in 257-1024)."""
    from acmemodel.features.keys import gpu_bucket

    rng = np.random.default_rng(seed)
    g = np.repeat([512, 1024], n)
    run = np.where(g == 512, 3600.0, 72000.0) * np.exp(0.3 * rng.standard_normal(2 * n))
    return pd.DataFrame({"cluster": "Seren", "type": "Pretrain", "gpu_num": g, "is_gpu": True, "started": True,
                         "analysis_state": "COMPLETED", "run_s": np.round(run),
                         "submit_s": 1.68e9 + np.sort(rng.random(2 * n)) * 30 * 86400,
                         "gpu_bucket": gpu_bucket(g)})


def test_sample_lives_draws_per_bucket_of_the_runtime_models_own_edges():
    """A runtime model fitted with a bucket edge inside the default 257-1,024 bucket (calibrate's size class,
    acmemodel.calibrate.large_class_edges) keeps the two sizes' laws apart — the trace's precomputed
    default-edge bucket column is not used for its cells — and sample_lives draws each job from its own cell:
    the 1,024-GPU runs stay 20x the 512-GPU ones. With the default edges both sizes share one law, scaled by
    the within-cell size law, whose slope is clipped at 1: at most 2x between 512 and 1,024 GPUs (+ noise)."""
    from acmemodel.joblife import runtime_edges, sample_lives
    from acmemodel.models.runtime import RuntimeModel

    jobs = _sized_pretrain()
    split = RuntimeModel(min_jobs=50, families=("lognormal",), gpu_edges=(1, 8, 64, 256, 767, 1024)).fit(jobs)
    pooled = RuntimeModel(min_jobs=50, families=("lognormal",)).fit(jobs)
    assert runtime_edges(split) == (1, 8, 64, 256, 767, 1024)
    assert {c.gpu_bucket for c in split.cells_.counts_ if c.gpu_bucket is not None} >= {"257-767", "768-1024"}
    g = np.repeat([512, 1024], 2000)
    ty = np.full(len(g), "Pretrain", dtype=object)
    for model, lo, hi in ((split, 12.0, 30.0), (pooled, 0.5, 2.3)):
        _, run = sample_lives(model, None, "Seren", ty, g, np.random.default_rng(1))
        ratio = np.median(run[g == 1024]) / np.median(run[g == 512])
        assert lo < ratio < hi, ratio


def test_size_class_gives_the_runtime_model_its_own_bucket():
    """calibrate fits the runtime model with an edge just below each cluster's large-job bound when the size class
    is on (Seren 768 -> 767; Kalos 256 already closes a bucket), and with the default edges when it is off."""
    from acmemodel.calibrate import Assumptions, estimator_settings, large_class_edges
    from acmemodel.features.keys import DEFAULT_GPU_EDGES

    assert large_class_edges({"Seren": 768, "Kalos": 256}) == (1, 8, 64, 256, 767, 1024)
    assert large_class_edges({"Kalos": 256}) == tuple(DEFAULT_GPU_EDGES)
    assert large_class_edges({"X": 257}) == tuple(DEFAULT_GPU_EDGES)       # 256 already starts its bucket
    on = Assumptions(large_job_gpus={"Seren": 768, "Kalos": 256}, large_job_gt_share={"Seren": 0.28, "Kalos": 0.97})
    assert estimator_settings(on)["runtime"] == {"gpu_edges": [1, 8, 64, 256, 767, 1024], "pooling": "none"}
    # the run-time pooling assumption (default "none") goes to the runtime model's settings (and so to fit --like)
    assert estimator_settings(Assumptions())["runtime"] == {"pooling": "none"}
    assert "runtime" not in estimator_settings(Assumptions(runtime_pooling="heldout"))
    assert estimator_settings(on.__class__(**{**on.__dict__, "runtime_pooling": "heldout"}))["runtime"] == {
        "gpu_edges": [1, 8, 64, 256, 767, 1024]}
