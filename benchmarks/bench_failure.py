"""Fit time of FailureModel on a synthetic 1M-job trace, and recovery of the known parameters.

Run: ``python benchmarks/bench_failure.py [N]`` (default N = 1,000,000). Prints the fit time of each
stage measured in this run and the true vs fitted shape, scale and size exponent α.
"""
from __future__ import annotations

import sys
import time
import warnings

import numpy as np
import pandas as pd


def simulate(n: int, *, k=0.7, eta0=20 * 86400.0, alpha=0.8, g_ref=8.0, seed=0) -> pd.DataFrame:
    """Two-regime failure data: defective share by type, log-normal early times, Weibull PH late."""
    rng = np.random.default_rng(seed)
    types = np.array(["Eval", "Pretrain", "SFT", "Debug"])
    ty = rng.choice(types, n, p=[0.6, 0.1, 0.1, 0.2])
    sizes = 2 ** np.arange(0, 11)
    small = np.exp(-0.6 * np.arange(11))
    big = np.exp(-0.25 * np.abs(np.arange(11) - 7))
    g = np.where(ty == "Pretrain", rng.choice(sizes, n, p=big / big.sum()),
                 rng.choice(sizes, n, p=small / small.sum())).astype(float)
    p = pd.Series({"Eval": 0.2, "Pretrain": 0.1, "SFT": 0.15, "Debug": 0.4})[ty].to_numpy()
    t_late = eta0 * (rng.exponential(size=n) / (g / g_ref) ** alpha) ** (1 / k)
    t_early = 120.0 * np.exp(rng.standard_normal(n))
    t_fail = np.where(rng.random(n) < p, t_early, t_late)
    c = 3600.0 * np.exp(2.0 * rng.standard_normal(n))
    run = np.minimum(t_fail, c)
    state = np.where(t_fail <= c, "FAILED", np.where(rng.random(n) < 0.3, "CANCELLED", "COMPLETED"))
    submit = 1.68e9 + np.sort(rng.uniform(0, 180 * 86400, n))
    return pd.DataFrame({"cluster": rng.choice(["Seren", "Kalos"], n, p=[0.8, 0.2]), "type": ty,
                         "analysis_state": state, "gpu_num": g.astype(np.int64), "is_gpu": True,
                         "started": True, "run_s": run, "submit_s": submit, "fail_time_s": np.nan})


def main(n: int = 1_000_000) -> None:
    from acmemodel.models.failure import FailureModel

    jobs = simulate(n)
    print(f"{n} synthetic jobs, {int((jobs['analysis_state'] == 'FAILED').sum())} failures")
    for compare in (False, True):
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            m = FailureModel(compare=compare).fit(jobs)
        dt = time.perf_counter() - t0
        print(f"fit compare={compare}: {dt:.1f} s  (two-regime MLE on {m.n_mixture_rows_} rows)")
    print(f"shape k: true 0.7, fitted {m.shape_:.3f} {tuple(round(x, 3) for x in m.shape_ci_)}")
    print(f"alpha  : true 0.8, fitted {m.alpha_:.3f} {tuple(round(x, 3) for x in m.alpha_ci_)}")
    print(f"scale (Seren/Eval is not the reference of the simulation; late hazard has no type effect): "
          f"true {20 * 86400:.3g} s, fitted at reference {m.scale_s_:.3g} s")
    print(m.mttf_curve([1024, 16384], type="Pretrain").to_string())
    if m.comparison_ is not None:
        print(m.comparison_.to_string())


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000)
