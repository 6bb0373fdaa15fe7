"""Benchmark: fit every cell of RuntimeModel (and QueueModel) on a generated 1M-job trace.

Quality bar (issue 3): fitting all cells of a 1M-job trace takes at most 60 s on a 2-core machine.
Prints wall time, the number of fitted cells, and memory: peak RSS of the process
(``resource.getrusage``) and, with ``--tracemalloc``, the peak of Python-tracked allocations during
the fit (tracemalloc slows numpy-heavy code, so the timed run is a separate one).

    python benchmarks/bench_fit_runtime.py [--n 1000000] [--tracemalloc]
"""
from __future__ import annotations

import argparse
import resource
import sys
import time
import tracemalloc


def _rss_mb() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return r / 1024 if sys.platform != "darwin" else r / 2**20


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--tracemalloc", action="store_true")
    a = ap.parse_args(argv)

    from acmemodel.evaluation.synthetic import synthetic_jobs
    from acmemodel.models.queue import QueueModel
    from acmemodel.models.runtime import RuntimeModel

    t = time.perf_counter()
    jobs = synthetic_jobs(a.n, a.seed)
    gen = time.perf_counter() - t
    print(f"generated {len(jobs):,} jobs in {gen:.1f} s; RSS after generation {_rss_mb():.0f} MB")

    for cls in (RuntimeModel, QueueModel):
        t = time.perf_counter()
        m = cls().fit(jobs)
        dt = time.perf_counter() - t
        s = m.summary()
        fitted = int(s.fitted.sum())
        print(f"{cls.__name__:12s} fit {m.n_fit_:,} jobs, {fitted} fitted cells "
              f"({len(s) - fitted} finest cells backed off) in {dt:.1f} s "
              f"[{'OK' if dt <= 60 else 'OVER'} the 60 s bar]; families: "
              f"{ {k: int(v) for k, v in s[s.fitted].family.value_counts().items()} }")
    print(f"peak RSS (whole process, incl. the generated trace): {_rss_mb():.0f} MB")
    if a.tracemalloc:
        tracemalloc.start()
        RuntimeModel().fit(jobs)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        print(f"RuntimeModel.fit tracemalloc peak: {peak / 2**20:.0f} MB")


if __name__ == "__main__":
    main()
