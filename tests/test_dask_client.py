"""The LocalCluster of ``--workers N``: the configuration its worker processes start with."""
import pytest

distributed = pytest.importorskip("dask.distributed")


@pytest.mark.parametrize("trim", [True, False])
def test_local_workers_config(monkeypatch, trim):
    import dask

    from acmemodel.cli import _dask

    seen = {}

    class FakeCluster:  # records the configuration the nannies would copy into the workers
        def __init__(self, **kw):
            seen["env"] = dict(dask.config.get("distributed.nanny.pre-spawn-environ"))
            seen["profile"] = dask.config.get("distributed.worker.profile.enabled")
            seen["kw"] = kw

        def close(self):
            pass

    monkeypatch.setattr(distributed, "LocalCluster", FakeCluster)
    monkeypatch.setattr(distributed, "Client", lambda cluster: "client")
    client, cluster = _dask.dask_client(2, None, trim_memory=trim)
    assert client == "client" and isinstance(cluster, FakeCluster)
    assert seen["kw"]["n_workers"] == 2 and seen["kw"]["threads_per_worker"] == 1
    assert seen["profile"] is False
    assert ("MALLOC_TRIM_THRESHOLD_" in seen["env"]) is trim
    assert seen["env"].get("OMP_NUM_THREADS") in (1, "1")  # the rest of Dask's environment is kept
    # the process's own configuration is left as it was
    assert "MALLOC_TRIM_THRESHOLD_" in dask.config.get("distributed.nanny.pre-spawn-environ")


def test_preloaded_workers_are_forked_from_a_server_that_imported_the_modules(monkeypatch):
    """``preload=``: the nannies start their workers with multiprocessing's fork server, whose preload list is
    Dask's own plus the given modules (``sweep --workers``: the planner, imported once, not per worker)."""
    import multiprocessing.forkserver as mf

    import dask

    from acmemodel.cli import _dask

    seen = {}

    class FakeCluster:
        def __init__(self, **kw):
            seen["method"] = dask.config.get("distributed.worker.multiprocessing-method")

        def close(self):
            pass

    monkeypatch.setattr(distributed, "LocalCluster", FakeCluster)
    monkeypatch.setattr(distributed, "Client", lambda cluster: "client")
    _dask.dask_client(2, None, trim_memory=False)
    assert seen["method"] == "spawn"  # (Dask's default without preload)
    _dask.dask_client(2, None, trim_memory=False, preload=("acmemodel.planner.sweep.runner",))
    assert seen["method"] == "forkserver"
    mods = mf._forkserver._preload_modules
    assert "distributed" in mods and "acmemodel.planner.sweep.runner" in mods
    assert dask.config.get("distributed.worker.multiprocessing-method") == "spawn"  # (left as it was)
