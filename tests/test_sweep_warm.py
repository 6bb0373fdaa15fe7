"""Sweep workers are warmed before the grid is planned (issue 34): warm_worker loads the bundle once per
process for the later chunks, and a bundle that cannot be loaded is left to the parts to report."""
from __future__ import annotations


def test_warm_worker_loads_the_bundle_once(tmp_path):
    from acmemodel.planner.sweep import runner

    assert runner.warm_worker(None) is True
    b = runner._BUNDLES[None]
    assert runner.warm_worker(None) is True and runner._BUNDLES[None] is b  # (loaded once per process)
    assert runner.warm_worker(str(tmp_path / "missing-bundle")) is False
    assert str(tmp_path / "missing-bundle") not in runner._BUNDLES


def test_no_warm_up_in_process():
    from acmemodel.planner.sweep.runner import _warm_workers

    assert _warm_workers(None, None) == []
