"""Evaluation-batch planner speed: one plan of the default 63-dataset batch on 8 nodes (both policies).

Target: < 1 s per batch plan. Baseline in the same run: the coupled policy alone (the fluid storage-link
simulation), so the ratio shows what the decoupled packing search costs on top.

    python benchmarks/bench_evalplan.py
"""
from __future__ import annotations

import time

from acmemodel.planner.evalbatch.inputs import default_batch
from acmemodel.planner.evalbatch.schedule import simulate_coupled, simulate_decoupled


def _best(fn, reps=5):
    best = float("inf")
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def main() -> None:
    b = default_batch()
    c = _best(lambda: simulate_coupled(b, 8))
    both = _best(lambda: (simulate_coupled(b, 8), simulate_decoupled(b, 8)))
    print(f"evalplan 63 datasets x 8 nodes: coupled_s={c:.4f} both_policies_s={both:.4f} "
          f"ratio={both / c:.2f} target_s<1 met={both < 1.0}")


if __name__ == "__main__":
    main()
