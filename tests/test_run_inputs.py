"""RunInputs: a run's failure process, failure-type mix and restart distribution, assembled once."""
from __future__ import annotations

import pytest

from acmemodel.planner.config import ClusterConfig
from acmemodel.planner.run.inputs import RunInputs
from acmemodel.planner.planner import Planner

CFG = {
    "name": "t", "cluster": {"gpus": 512, "gpus_per_node": 8, "partitions": {"pretrain": 256}},
    "checkpoint": {"mode": "sync", "sync_cost": "60s"},
    "restart": {"automation": {"Infrastructure": 0.5}},
    "failures": {"rate_multipliers": {"Infrastructure": 0.8}},
    "runs": [{"name": "a", "gpus": 256, "work": "5d"}],
    "simulation": {"replicas": 50, "seed": 3},
}


@pytest.fixture(scope="module")
def bundle(default_bundle):
    return default_bundle


def test_from_bundle_is_what_the_planner_uses(bundle):
    cfg = ClusterConfig.from_dict(CFG)
    run = cfg.runs[0]
    inp = RunInputs.from_bundle(bundle, run, cfg)
    via = Planner(bundle).inputs(run.gpus, cfg)
    assert inp.gpus == 256
    assert float(inp.failure.mean()) == pytest.approx(float(via.failure.mean()), rel=1e-12)
    assert inp.restart.mean == pytest.approx(via.restart.mean, rel=1e-12)
    assert [t.name for t in inp.mix.types] == [t.name for t in via.mix.types]
    # the adjustments are applied once: infrastructure rates x0.8 lengthen the MTTF
    raw = RunInputs.from_bundle(bundle, run, ClusterConfig.from_dict({**CFG, "failures": {}, "restart": {}}))
    assert float(inp.failure.mean()) > float(raw.failure.mean())
    assert inp.restart.mean < raw.restart.mean  # infrastructure restarts automated (x0.5)


def test_explicit_mttf_replaces_the_failure_model(bundle):
    cfg = ClusterConfig.from_dict({**CFG, "failures": {"mttf": "10h", "reference_gpus": 256}, "restart": {}})
    inp = RunInputs.from_bundle(bundle, cfg.runs[0], cfg)
    assert float(inp.failure.mean()) == pytest.approx(10 * 3600.0, rel=1e-9)
