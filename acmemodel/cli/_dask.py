"""The ``--workers N`` / ``--scheduler ADDRESS`` options shared by the commands that run on Dask (``fit``,
``sweep``): a local cluster of worker processes or an existing scheduler."""
from __future__ import annotations

from typing import Optional

#: how long --scheduler waits for the scheduler to answer
CONNECT_TIMEOUT = "10s"


def dask_client(workers: Optional[int], scheduler: Optional[str], *, trim_memory: bool = True,
                preload: tuple[str, ...] = ()):
    """(client, cluster) for --workers / --scheduler, or (None, None) in-process.

    ``preload``: modules the local workers need for their tasks (e.g. the sweep's planner and models,
    about 1 s of CPU to import): the workers are then forked from one server process that imported them
    once (multiprocessing's ``forkserver``, :func:`_forkserver`) instead of each fresh (``spawn``) worker
    importing them itself; the tasks and their results are the same either way.

    ``trim_memory=False``: the local workers run without Dask's ``MALLOC_TRIM_THRESHOLD_=65536``, which
    hands freed memory back to the system at once and so makes every short-lived numpy array of a
    few hundred kB fresh pages (10x the page faults of a plain process, measured on the sweep's parts:
    ~0.1 s of system time per 100 points); for many small tasks (``sweep``) rather than a few large ones
    (``fit``)."""
    if workers is not None and scheduler is not None:
        raise ValueError("give either --workers or --scheduler, not both")
    if workers is None and scheduler is None:
        return None, None
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError:  # pragma: no cover - dask[distributed] is a dependency
        raise ValueError("--workers/--scheduler need dask.distributed (pip install 'dask[distributed]')") from None
    if workers is not None:
        if workers < 1:
            raise ValueError(f"--workers must be a positive integer, got {workers}")
        from acmemodel.limits import SizeError, human_bytes, memory_budget

        # (a worker process with the planner and the bundle loaded: about 250 MB resident, measured)
        need, budget = workers * 250e6, memory_budget()
        if need > budget:
            raise SizeError(f"--workers {workers:,} would need about {human_bytes(need)} of memory (about 250 MB "
                            f"per worker process), more than the {human_bytes(budget)} allowed; at most "
                            f"{max(int(budget // 250e6), 1):,} workers here")
        import dask

        # the workers' statistical profiler samples every thread every 10 ms: CPU taken from the tasks
        cfg: dict = {"distributed.worker.profile.enabled": False}
        if not trim_memory:
            env = dict(dask.config.get("distributed.nanny.pre-spawn-environ", {}))
            env.pop("MALLOC_TRIM_THRESHOLD_", None)
            cfg["distributed.nanny.pre-spawn-environ"] = env
        if preload:
            _forkserver(preload)
            cfg["distributed.worker.multiprocessing-method"] = "forkserver"
        with dask.config.set(cfg):
            cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None)
        return Client(cluster), cluster
    try:
        return Client(scheduler, timeout=CONNECT_TIMEOUT), None
    except Exception as e:
        raise ValueError(f"--scheduler {scheduler}: cannot reach a Dask scheduler there "
                         f"({type(e).__name__}: {str(e).splitlines()[0] if str(e) else 'no answer'})") from None


def _forkserver(preload: tuple[str, ...]) -> None:
    """Have multiprocessing's fork server import ``preload`` (besides ``distributed`` and numpy/pandas, which
    Dask preloads there itself) before it forks the first worker. Dask sets the server's preload list the
    first time it starts a worker with ``forkserver`` (:func:`distributed.utils.get_mp_context`); that is
    done here first, then the list is extended. A server that already runs keeps its modules (the workers
    then import the rest themselves)."""
    import multiprocessing

    import dask
    from distributed.utils import get_mp_context

    with dask.config.set({"distributed.worker.multiprocessing-method": "forkserver"}):
        get_mp_context()  # (Dask's own list, once per process)
    fs = getattr(multiprocessing.forkserver, "_forkserver", None)
    have = list(getattr(fs, "_preload_modules", None) or ["distributed"])
    multiprocessing.get_context("forkserver").set_forkserver_preload(list(dict.fromkeys([*have, *preload])))


def close_client(client, cluster) -> None:
    """Close what :func:`dask_client` opened (nothing for an in-process run)."""
    if client is not None:
        client.close()
    if cluster is not None:
        cluster.close()
