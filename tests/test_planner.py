"""ClusterConfig validation, Planner (explicit parameters and a stand-in bundle), plan JSON and report."""
from __future__ import annotations

import copy
import json
import math
import re
from dataclasses import replace
from importlib import resources

import numpy as np
import pandas as pd
import pytest
import yaml

from acmemodel.errors import ConfigError
from acmemodel.models.bundle import Bundle
from acmemodel.models.distributions import LogNormal, Weibull
from acmemodel.models.failure_laws import PiecewiseHazardLaw
from acmemodel.planner.run.checkpoint import optimal_interval
from acmemodel.planner.config import Assumptions, ClusterConfig, FailureSpec, RestartSpec
from acmemodel.planner.config_fields import parse_duration
from acmemodel.planner.run.montecarlo import FailureMix
from acmemodel.planner.plan_helpers import PLANNED_TYPE
from acmemodel.planner.planner import Planner
from acmemodel.planner.run.processes import ExponentialFailures, PiecewiseHazard, WeibullFailures

H, DAY = 3600.0, 86400.0
EXAMPLE = resources.files("acmemodel.planner").joinpath("examples", "example.yaml")


def base_dict() -> dict:
    return {
        "name": "t",
        "cluster": {"gpus": 512, "gpus_per_node": 8, "partitions": {"pretrain": 256, "eval": "auto"}},
        "checkpoint": {"mode": "sync", "sync_cost": "60s", "async_cost": "5s", "interval": "auto"},
        "restart": {"automation": {"Infrastructure": 0.5}},
        "failures": {"rate_multipliers": {"Infrastructure": 0.8}, "mttf": "10h", "reference_gpus": 256,
                     "shape": 0.8},
        "workload": {"days": 2, "replicas": 1},
        "queue_target": {"type": "Eval", "quantile": 0.9, "max_wait": "10m"},
        "runs": [{"name": "a", "gpus": 256, "work": "5d"}, {"name": "b", "gpus": 128, "work": "2d",
                                                              "checkpoint_interval": "30m", "ckpt_cost": "20s"}],
        "simulation": {"replicas": 400, "seed": 3},
    }


def small_workload(rng: np.random.Generator, n: int = 1500, days: float = 2.0) -> pd.DataFrame:
    """A synthetic job list (Eval bursts of small jobs, SFT/Other on the shared pool)."""
    t = np.sort(rng.uniform(0, days * DAY, n))
    typ = rng.choice(["Eval", "SFT", "Other"], n, p=[0.6, 0.2, 0.2])
    g = np.where(typ == "Eval", rng.choice([1, 2, 4, 8], n), rng.choice([1, 8, 16], n))
    return pd.DataFrame({"submit_s": t, "run_s": rng.lognormal(np.log(900), 1.2, n), "gpu_num": g, "type": typ})


# ------------------------------------------------------------------------------ config
def test_example_config_loads_and_toml_is_equivalent(tmp_path):
    cfg = ClusterConfig.load(str(EXAMPLE))
    assert [r.gpus for r in cfg.runs] == [2048, 1024]
    assert cfg.cluster.partitions == {"pretrain": 3072, "eval": "auto"}
    assert cfg.cluster.auto_partition == "eval" and cfg.run_interval(cfg.runs[0]) == "auto"
    assert cfg.run_ckpt_cost(cfg.runs[0]) == 60.0 and cfg.runs[0].work_s == 30 * DAY
    d = base_dict()
    toml = tmp_path / "c.toml"
    toml.write_text("""
name = "t"
[cluster]
gpus = 512
gpus_per_node = 8
partitions = { pretrain = 256, eval = "auto" }
[checkpoint]
mode = "sync"
sync_cost = "60s"
async_cost = "5s"
interval = "auto"
[restart]
automation = { Infrastructure = 0.5 }
[failures]
rate_multipliers = { Infrastructure = 0.8 }
mttf = "10h"
reference_gpus = 256
shape = 0.8
[workload]
days = 2
replicas = 1
[queue_target]
type = "Eval"
quantile = 0.9
max_wait = "10m"
[[runs]]
name = "a"
gpus = 256
work = "5d"
[[runs]]
name = "b"
gpus = 128
work = "2d"
checkpoint_interval = "30m"
ckpt_cost = "20s"
[simulation]
replicas = 400
seed = 3
""")
    yml = tmp_path / "c.yaml"
    yml.write_text(yaml.safe_dump(d))
    a, b = ClusterConfig.load(toml), ClusterConfig.load(yml)
    assert a.to_dict() == b.to_dict() == ClusterConfig.from_dict(d).to_dict()
    assert a.runs[1].checkpoint_interval_s == 1800.0 and a.runs[1].ckpt_cost_s == 20.0


@pytest.mark.parametrize("text, seconds", [("90s", 90.0), ("20m", 1200.0), ("1.5h", 5400.0), ("30d", 2592000.0),
                                           ("2w", 1209600.0), (45, 45.0), ("7", 7.0),
                                           ("10min", 600.0), ("2 hours", 7200.0), ("3Days", 259200.0),
                                           ("30 sec", 30.0), ("1 week", 604800.0)])
def test_parse_duration(text, seconds):
    assert parse_duration(text, "x") == seconds


@pytest.mark.parametrize("bad", ["abc", "-5s", "5y", "5 months", "10mins ago", "", True, None, 0,
                                 float("inf")])
def test_parse_duration_rejects(bad):
    with pytest.raises(ConfigError, match="--thing"):
        parse_duration(bad, "--thing")


def _set(d, path, value):
    keys = path.split(".")
    cur = d
    for k in keys[:-1]:
        cur = cur[int(k)] if k.isdigit() else cur[k]
    if value is _DEL:
        del cur[keys[-1]]
    else:
        cur[int(keys[-1]) if keys[-1].isdigit() else keys[-1]] = value


_DEL = object()


@pytest.mark.parametrize("path, value, field", [
    ("cluster.gpus", 100, "cluster.gpus"),
    ("cluster.gpus", _DEL, "cluster.gpus"),
    ("cluster.partitions.pretrain", 1001, "cluster.partitions.pretrain"),
    ("cluster.partitions.pretrain", 1024, "cluster.partitions"),
    ("cluster.partitions.shared", 64, "shared"),
    ("cluster.partitions.pretrain", "auto", "at most one"),
    ("cluster.routing", {"Eval": "nowhere"}, "cluster.routing.Eval"),
    ("cluster.backfill", "yes", "cluster.backfill"),
    ("checkpoint.mode", "lazy", "checkpoint.mode"),
    ("checkpoint.sync_cost", "abc", "checkpoint.sync_cost"),
    ("checkpoint.interval", "-3m", "checkpoint.interval"),
    ("restart.automation", {"Infrastructure": -1}, "restart.automation.Infrastructure"),
    ("failures.rate_multipliers", {"Script": "x"}, "failures.rate_multipliers.Script"),
    ("failures.shape", 0.01, "failures.shape"),
    ("failures.mttf", _DEL, "need failures.mttf"),
    ("failures.model", "cox", "failures.model"),
    ("workload.scale", 0, "workload.scale"),
    ("workload.replicas", 0, "workload.replicas"),
    ("queue_target.quantile", 1.5, "queue_target.quantile"),
    ("queue_target.max_wait", "soon", "queue_target.max_wait"),
    ("runs.1.gpus", -4, "runs[1].gpus"),
    ("runs.0.gpus", 1024, "runs[0].gpus"),
    ("runs.0.work", _DEL, "runs[0].work"),
    ("runs.1.name", "a", "runs[1].name"),
    ("runs.0.extra", 1, "runs[0]"),
    ("runs", {"name": "x"}, "runs"),  # runs: [] is a quota-only plan (issue 18); a mapping is not a list
    ("simulation.seed", -1, "simulation.seed"),
    ("cluster.gpus", float("inf"), "cluster.gpus"),  # YAML .inf: was an OverflowError
    ("simulation.replicas", float("nan"), "simulation.replicas"),
    ("bogus", 1, "unknown key"),
])
def test_invalid_config_names_the_field(path, value, field):
    d = copy.deepcopy(base_dict())
    _set(d, path, value)
    with pytest.raises(ConfigError, match=re.escape(field)):
        ClusterConfig.from_dict(d)


def test_config_file_errors(tmp_path):
    with pytest.raises(FileNotFoundError):
        ClusterConfig.load(tmp_path / "missing.yaml")
    p = tmp_path / "c.json"
    p.write_text("{}")
    with pytest.raises(ConfigError, match="yaml"):
        ClusterConfig.load(p)
    p = tmp_path / "c.yaml"
    p.write_text("cluster: [unclosed")
    with pytest.raises(ConfigError, match="cannot parse"):
        ClusterConfig.load(p)


# ------------------------------------------------------------------------------ planner, explicit parameters
def test_failure_process_scales_with_gpus():
    p, exp = Planner(), Assumptions(FailureSpec(mttf_s=10 * H, reference_gpus=1024))
    assert float(p.failure_process(2048, exp).mean()) == pytest.approx(5 * H)
    w = Assumptions(FailureSpec(mttf_s=10 * H, reference_gpus=1024, shape=0.5))
    assert float(p.failure_process(2048, w).mean()) == pytest.approx(10 * H * 2 ** -2.0)  # MTTF ∝ g^(-1/k)
    assert float(p.failure_process(4096, Assumptions(FailureSpec(mttf_s=10 * H))).mean()) == 10 * H  # as given


def test_checkpoint_uses_adjusted_process_and_mix_restart():
    cfg = Assumptions(FailureSpec(mttf_s=10 * H, reference_gpus=1024, rate_multipliers={"Infrastructure": 0.5}),
                      RestartSpec(time_s=900.0))
    r = Planner().checkpoint(2048, ckpt_cost=60.0, work=30 * DAY, config=cfg)
    mix, total = FailureMix.from_failure_table(2048).adjusted(rate_multipliers={"Infrastructure": 0.5})
    assert 0.5 < total < 1.0
    ref = optimal_interval(work=30 * DAY, ckpt_cost=60.0, failure=ExponentialFailures(5 * H / total), restart=900.0)
    assert float(r.interval_s) == pytest.approx(float(ref.interval_s), rel=1e-12)
    assert r.to_dict(2048)["gpu_hours_lost_per_day"] == pytest.approx(2048 * 24 * (1 - float(r.ettr)))


def test_completion_run_plan_and_adjustments():
    p, fs = Planner(), FailureSpec(mttf_s=6 * H, reference_gpus=1024, shape=0.8)
    base = p.completion(1024, work=10 * DAY, ckpt_cost=60.0, n_replicas=3000, seed=1, config=Assumptions(fs))
    d = base.to_dict()
    assert d["finishes"] and d["checkpoint_interval_source"] == "auto"
    assert d["checkpoint_interval_s"] == pytest.approx(d["optimal_interval_s"])
    assert d["completion_time_s"]["p50"] <= d["completion_time_s"]["p90"]
    loss = d["gpu_time_loss_gpu_h"]
    assert loss["total"] == pytest.approx(loss["lost_work"] + loss["restart"] + loss["checkpoint"])
    assert min(loss["lost_work"], loss["restart"], loss["checkpoint"]) >= 0
    assert d["ettr"] == pytest.approx(10 * DAY / d["completion_time_s"]["mean"])
    # halving infrastructure failures: fewer failures (tolerance from the sample standard errors)
    better = p.completion(1024, work=10 * DAY, ckpt_cost=60.0, n_replicas=3000, seed=1,
                          config=Assumptions(replace(fs, rate_multipliers={"Infrastructure": 0.5})))
    a, b = base.simulation.n_failures, better.simulation.n_failures
    se = math.sqrt(a.var() / a.size + b.var() / b.size)
    assert a.mean() - b.mean() > 4 * se
    # full restart automation: no restart downtime at all
    auto = p.completion(1024, work=10 * DAY, ckpt_cost=60.0, n_replicas=300, seed=1, config=Assumptions(
        fs, RestartSpec(automation={"Infrastructure": 0, "Framework": 0, "Script": 0})))
    assert auto.to_dict()["gpu_time_loss_gpu_h"]["restart"] == 0.0
    fixed = p.completion(1024, work=10 * DAY, ckpt_cost=60.0, interval=1800.0, n_replicas=300, config=Assumptions(fs))
    assert fixed.to_dict()["checkpoint_interval_s"] == 1800.0 and fixed.interval_source == "config"


def test_plan_does_not_finish_is_explicit_and_json_clean():
    d = base_dict()
    d["runs"][0]["ckpt_cost"] = "20h"  # above the MTTF at 256 GPUs
    res = Planner().plan(ClusterConfig.from_dict(d), cluster=False)
    out = res.to_dict()
    r0 = out["runs"][0]
    assert r0["finishes"] is False and "mean time to failure" in r0["reason"]
    assert r0["checkpoint_interval_s"] is None and r0["completion_time_s"] == {"mean": None, "p50": None, "p90": None}
    assert r0["ettr"] == 0.0
    text = json.dumps(out, allow_nan=False)  # no NaN / inf anywhere
    assert "NaN" not in text
    assert out["runs"][1]["finishes"] and out["cluster"]["available"] is False
    # informative repr and a one-row-per-run summary
    assert repr(res).startswith(f"PlanResult(name={res.name!r}, runs=2 (1 finish), cluster=unavailable")
    tab = res.summary()
    assert list(tab["run"]) == [r.name for r in res.runs] and list(tab["finishes"]) == [False, True]
    assert tab["interval_s"].iloc[1] == out["runs"][1]["checkpoint_interval_s"]


def test_plan_with_given_workload_searches_the_eval_lane(tmp_path):
    cfg = ClusterConfig.from_dict(base_dict())
    res = Planner().plan(cfg, workload=small_workload)
    d = res.to_dict()
    cl = d["cluster"]
    assert cl["available"]
    q = cl["quota_search"]
    assert q["feasible"] and cl["quotas"]["eval"] == q["quota_gpus"]
    assert cl["quotas"]["pretrain"] == 256 and sum(cl["quotas"].values()) == 512
    assert cl["queue_s"]["Eval"]["p90"] <= 600.0  # the target holds at the recommended quota
    below = [e for e in q["evaluations"] if e["gpus"] == q["quota_gpus"] - 8]
    assert all(not e["meets"] for e in below)  # one node less misses it
    assert {"p50", "p90"} <= set(cl["queue_s"]["SFT"])
    assert cl["workload"]["planned_runs_included"] == ["a", "b"]
    assert cl["queue_s"][PLANNED_TYPE]["count"] == 2 and cl["utilization"]["pretrain"] > 0.99
    json.dumps(d, allow_nan=False)
    # the report: per finishing run its loss/E[T] figure and its sensitivity band, the quota table
    path = res.report(tmp_path / "plan.html")
    html = open(path, encoding="utf-8").read()
    assert html.count("data:image/png;base64,") == 5 and html.count('alt="sensitivity band of ') == 2
    assert html.count('alt="quota trade-off"') == 1
    assert "Quotas" in html and "E[T]" in html and "Pretraining runs" in html


# ------------------------------------------------------------------------------ stand-in bundle
class _FakeFailure:
    shape_ = 0.75

    def mttf(self, gpus, **key):
        if key and key != {"type": "Pretrain"}:
            raise ValueError("unknown key")
        return 4 * H * 1024 / float(gpus)

    def hazard_table(self, gpus, edges=None, **key):
        lam = 1.0 / self.mttf(gpus)
        return pd.DataFrame({"start_s": [0.0, 3600.0, 86400.0], "end_s": [3600.0, 86400.0, 2 * 86400.0],
                             "hazard_per_s": [3 * lam, lam, 0.8 * lam]})

    def failure_law(self, gpus, *, kind="weibull", **key):
        if kind == "piecewise":
            return PiecewiseHazardLaw.from_table(self.hazard_table(gpus, **key))
        return Weibull(k=self.shape_, lam=self.mttf(gpus, **key) / math.gamma(1 + 1 / self.shape_))


class _LogNormalFailure:
    """A failure model whose law is log-normal (median 6 h at 1,024 GPUs, shorter in proportion above)."""
    sigma = 1.2

    def failure_law(self, gpus, *, kind="weibull", **key):
        return LogNormal(mu=math.log(6 * H * 1024 / float(gpus)), sigma=self.sigma)


class _FakeRestartDist:
    def mean(self):
        return 1800.0

    def median(self):
        return 600.0


class _FakeRestart:
    def __init__(self, fallback):
        self.fallback_ = fallback
        self.calls = []

    def restart_distribution(self, category=None, gpus=None, **cov):
        self.calls.append((gpus, cov))
        return _FakeRestartDist()


def test_bundle_failure_and_restart_models_are_used_not_fitted():
    restart = _FakeRestart(fallback=False)
    b = Bundle(models={"failure": _FakeFailure(), "restart": restart}, name="fake")
    p = Planner(b)
    f = p.failure_process(2048)
    assert isinstance(f, WeibullFailures) and float(f.shape) == 0.75 and float(f.mean()) == pytest.approx(2 * H)
    restart.calls.clear()  # (the inputs are assembled whole: failure_process asked the restart model too)
    mix = p.failure_mix(2048)
    assert restart.calls == [(2048, {"type": "Pretrain"})]
    assert all(t.restart.kind == "lognormal" and t.restart.mean == pytest.approx(1800.0) for t in mix.types)
    pw = Planner(b).failure_process(1024, Assumptions(FailureSpec(model="piecewise")))
    assert isinstance(pw, PiecewiseHazard) and pw.rates[0] == pytest.approx(3 / (4 * H))
    # a restart model that fell back to the published prior: the table's per-type restarts
    p2 = Planner(Bundle(models={"failure": _FakeFailure(), "restart": _FakeRestart(fallback=True)}))
    means = {t.restart.mean for t in p2.failure_mix(2048).types}
    assert len(means) > 5
    r = p.checkpoint(2048, ckpt_cost=60.0)
    assert bool(r.finishes) and r.family == "weibull"


def test_a_log_normal_failure_law_is_planned_with():
    """The failure model hands the planner its own law: a log-normal one is planned as a log-normal (its
    piecewise-hazard stand-in keeps the law's survival at every break), not as a Weibull of the same mean."""
    from scipy import stats

    law = _LogNormalFailure()
    b = Bundle(models={"failure": law, "restart": _FakeRestart(fallback=True)}, name="lognormal")
    p, pw = Planner(b), Assumptions(FailureSpec(model="piecewise"))
    proc = p.failure_process(2048, pw)
    d = stats.lognorm(s=law.sigma, scale=3 * H)
    br, rates = np.ravel(proc.breaks), np.ravel(proc.rates)
    surv = np.exp(-np.concatenate([[0.0], np.cumsum(np.diff(br) * rates[:-1])]))
    assert np.allclose(surv, d.sf(br), rtol=1e-9, atol=1e-12)  # exact at the breaks
    assert float(proc.mean()) == pytest.approx(d.mean(), rel=0.05)
    ck = p.checkpoint(2048, ckpt_cost=60.0, work=10 * DAY, config=pw)
    weib = Planner().checkpoint(2048, ckpt_cost=60.0, work=10 * DAY,
                                config=Assumptions(FailureSpec(mttf_s=float(proc.mean()), shape=0.8)))
    assert bool(ck.finishes) and float(ck.mttf_s) == pytest.approx(float(proc.mean()), rel=1e-9)
    assert abs(float(ck.interval_s) / float(weib.interval_s) - 1) > 0.01  # the law, not a Weibull, set it
    cfg = {**base_dict(), "failures": {"model": "piecewise"}, "sensitivity": False}
    res = p.plan(ClusterConfig.from_dict(cfg), cluster=False)
    assert all(r.failure.describe()["family"] == "piecewise" for r in res.runs)


def test_a_log_normal_failure_law_sets_its_own_optimum_and_expected_time():
    """The planner plans a log-normal failure law handed over by the model with that law: E[T] at its
    optimum is the renewal-reward E[T] of the exact log-normal (NumPy, scipy's survival; a Monte Carlo
    of the law's cycles agrees within 4 standard errors), and both the optimum and E[T] differ from
    those of a Weibull or an exponential law of the same mean."""
    from scipy import stats

    law = _LogNormalFailure()
    b = Bundle(models={"failure": law, "restart": _FakeRestart(fallback=True)}, name="lognormal")
    cfg = Assumptions(FailureSpec(), RestartSpec(time_s=600.0))
    W, C, R = 10 * DAY, 60.0, 600.0
    ck = Planner(b).checkpoint(2048, ckpt_cost=C, work=W, config=cfg)
    tau = float(ck.interval_s)
    d = stats.lognorm(s=law.sigma, scale=3 * H)          # the law at 2,048 GPUs (median 3 h)
    i = np.arange(1, 100_000)

    def exact_et(t):  # E[T] = W E[F] / (t E[N]),  E[N] = sum_i S(R + i (t + C))
        return W * d.mean() / (t * d.sf(R + i * (t + C)).sum())

    # the kernel's E[T] is the exact law's within the 24-piece stand-in's error (measured 2e-4)
    assert float(ck.expected_time_s) == pytest.approx(exact_et(tau), rel=1e-3)
    # ... and its optimum is the law's: no interval on a fine grid does better by more than that error
    grid = np.geomspace(tau / 3, tau * 3, 121)
    assert min(exact_et(t) for t in grid) >= exact_et(tau) * (1 - 1e-3)
    # Monte Carlo of the law's renewal cycles: F ~ log-normal, N = floor((F - R)+ / (tau + C)) checkpoints
    rng = np.random.default_rng(7)
    n = 200_000
    F = d.rvs(n, random_state=rng)
    N = np.floor(np.maximum(F - R, 0.0) / (tau + C))
    mc = W * F.mean() / (tau * N.mean())
    g = np.array([1 / N.mean(), -F.mean() / N.mean() ** 2]) * W / tau   # delta method for the ratio
    se = math.sqrt(g @ (np.cov(F, N) / n) @ g)
    assert abs(mc - exact_et(tau)) < 4 * se
    # not the Weibull's (shape 0.8) nor the exponential's of the same mean
    mean = float(Planner(b).failure_process(2048, cfg).mean())
    for shape in (0.8, None):
        other = Planner().checkpoint(2048, ckpt_cost=C, work=W, config=Assumptions(
            FailureSpec(mttf_s=mean, shape=shape), RestartSpec(time_s=R)))
        assert abs(float(other.interval_s) / tau - 1) > 0.02
        assert abs(float(other.expected_time_s) - float(ck.expected_time_s)) > 4 * se


def test_planner_rejects_bad_arguments():
    with pytest.raises(ValueError, match="restart.source"):
        RestartSpec(source="x")
    with pytest.raises(ValueError, match="need failures.mttf"):
        FailureSpec(shape=0.7)
    exp = Assumptions(FailureSpec(mttf_s=H))
    with pytest.raises(ValueError, match="gpus"):
        Planner().checkpoint(0, ckpt_cost=10.0, config=exp)
    with pytest.raises(ValueError, match="interval"):
        Planner().completion(8, work=DAY, ckpt_cost=10.0, interval=-1, config=exp)


def test_pooled_queue_quantiles_with_unschedulable_jobs():
    """A type with some never-starting jobs (wait inf) still has the finite median its waits give
    (np.quantile returned NaN -> reported as None = 'never starts')."""
    from types import SimpleNamespace

    from acmemodel.sim.cluster import wait_quantile
    from acmemodel.planner.plan_helpers import _pooled_queue

    jobs = pd.DataFrame({"type": ["SFT"] * 3 + ["Eval"] * 4, "submit_s": 0.0,
                         "wait_s": [1.0, 2.0, np.nan, 1.0, 2.0, np.nan, np.nan],
                         "schedulable": [True, True, False, True, True, False, False]})
    q = _pooled_queue([SimpleNamespace(jobs=jobs, window=(0.0, 1.0))])
    assert q["SFT"]["p50"] == 2.0 and q["SFT"]["p90"] is None and q["SFT"]["mean"] is None
    assert q["Eval"]["p50"] is None  # halfway between 2 s and never: infinite
    finite = np.array([3.0, 1.0, 7.0, 2.0, 10.0])
    assert [wait_quantile(finite, p) for p in (0.1, 0.5, 0.9)] == pytest.approx(np.quantile(finite, [0.1, 0.5, 0.9]))
