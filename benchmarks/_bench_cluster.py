"""Benchmark of the cluster simulator kernel (C vs the pure-Python twin); imported by ``bench_solver.py``.

Workload: a Seren-like synthetic trace (2,288 GPUs = 286 nodes of 8; job-count mix per type from the published
AcmeTrace workload mix; GPU counts per type on the published box-plot support; log-normal run times with the
published per-type median and 90th percentile; evaluation jobs submitted in bursts). Run times are then scaled per type so
that GPU time per type matches the published Seren GPU-time mix at 60% offered load. Partitions: 1,280 reserved
pretraining GPUs, a 128-GPU evaluation lane, the rest shared; EASY backfill and preemptible best-effort jobs on
idle reserved GPUs.

How the speedup is measured: the twin is far too slow for the six-month instance, so both engines run the *same*
smaller instance -- the first ``n_small`` jobs of the workload on the same cluster -- and ``speedup`` is the ratio of
those two times, measured in the same run. The full six-month instance (~700k GPU jobs) is timed in C only;
``numpy_s_est`` for it is the twin's small-instance time scaled linearly by the job count (an estimate, stated as
such). Pass ``n_small=n_full`` to time the twin on the full instance too (about 40 s; measured once during
development: C 0.12 s, twin 39 s, identical outputs).
"""
from __future__ import annotations

import time

import numpy as np
import pandas as pd

from acmemodel.clusters import cluster_gpus

SEREN_GPUS = cluster_gpus("Seren")
SPAN_S = 183 * 86400.0

# type: (job-count share %, GPU-count support, probabilities, run-time median s, run-time p90 s)
_MIX = {
    "Eval": (64.85, [1, 2, 4, 8], [0.55, 0.10, 0.10, 0.25], 129.0, 1208.0),
    "Pretrain": (0.89, [8, 32, 64, 128, 256, 512, 1024], [0.25, 0.15, 0.20, 0.20, 0.12, 0.06, 0.02], 297.0,
                 24639.0),
    "SFT": (14.86, [1, 2, 4, 8, 16, 32], [0.25, 0.20, 0.05, 0.40, 0.07, 0.03], 197.0, 1128.0),
    "MLLM": (2.95, [1, 2, 4, 8, 16, 32], [0.35, 0.20, 0.05, 0.30, 0.07, 0.03], 253.0, 5373.0),
    "Debug": (1.88, [1, 8, 16, 32, 64], [0.20, 0.55, 0.12, 0.08, 0.05], 114.0, 935.0),
    "Other": (14.56, [1, 2, 8, 16, 64], [0.50, 0.10, 0.33, 0.05, 0.02], 77.0, 2288.0),
}

# published Seren GPU-time share per type, % (AcmeTrace workload mix)
_GPU_TIME_SHARE = {"Eval": 6.24, "Pretrain": 69.49, "SFT": 6.38, "MLLM": 8.61, "Debug": 1.71, "Other": 7.56}

PARTITIONS = {"pretrain": 1280, "eval": 128}


def seren_like_workload(n_jobs: int = 700_000, *, span_s: float = SPAN_S, load: float = 0.6,
                        seed: int = 0) -> pd.DataFrame:
    """Synthetic Seren-like GPU job list: ``submit_s``, ``run_s``, ``gpu_num``, ``type`` (sorted by submit).

    The arrival rate is Seren's (663,813 GPU jobs in 183 days); ``n_jobs`` jobs cover ``span_s`` seconds and the offered
    load is ``load`` x 2,288 GPUs scaled by ``n_jobs / 663,813 x 183 days / span_s`` (1 for the default sizes).
    """
    rng = np.random.default_rng(seed)
    types = list(_MIX)
    share = np.array([_MIX[t][0] for t in types])
    ty = rng.choice(len(types), size=n_jobs, p=share / share.sum())
    gpus = np.empty(n_jobs, dtype=np.int64)
    run = np.empty(n_jobs)
    for k, t in enumerate(types):
        m = ty == k
        _, support, prob, med, p90 = _MIX[t]
        gpus[m] = rng.choice(support, size=m.sum(), p=np.array(prob) / np.sum(prob))
        sigma = np.log(p90 / med) / 1.2815515655446004
        run[m] = np.minimum(np.round(med * np.exp(sigma * rng.standard_normal(m.sum()))), 1_209_600.0)
    # calibrate: scale each type's run times so that GPU time per type matches the published Seren GPU-time mix at
    # an offered load of `load` x the cluster (Seren: ~0.6 of 2,288 GPUs over the trace)
    for k, t in enumerate(types):
        m = ty == k
        target = _GPU_TIME_SHARE[t] / 100.0 * load * SEREN_GPUS * span_s * n_jobs / 663_813 * SPAN_S / span_s
        have = float(np.sum(gpus[m] * run[m]))
        if have > 0:
            run[m] = np.minimum(np.round(run[m] * target / have), 1_209_600.0)
    # bursts: jobs arrive in batches (mean 8 jobs) at Poisson times, spread over up to a minute inside a batch
    n_batches = max(1, n_jobs // 8)
    batch_t = np.sort(rng.uniform(0.0, span_s, n_batches))
    batch = np.sort(rng.integers(0, n_batches, n_jobs))
    submit = np.round(batch_t[batch] + rng.uniform(0.0, 60.0, n_jobs))
    order = np.argsort(submit, kind="stable")
    return pd.DataFrame({"submit_s": submit[order], "run_s": run[order], "gpu_num": gpus[order],
                         "type": np.array(types, dtype=object)[ty[order]]})


def _kernel_args(df: pd.DataFrame):
    """Arrays for the raw kernel call (routing as simulate_cluster's default)."""
    names = ["pretrain", "eval", "shared"]
    gpn = 8
    part_gpus = [PARTITIONS["pretrain"], PARTITIONS["eval"], SEREN_GPUS - sum(PARTITIONS.values())]
    route = {"Pretrain": 0, "Eval": 1}
    part = np.array([route.get(t, 2) for t in df["type"]], dtype=np.int64)
    args = (df["submit_s"].to_numpy(np.float64), df["run_s"].to_numpy(np.float64), df["gpu_num"].to_numpy(np.int64),
            part, (part != 0).astype(np.uint8), np.array(part_gpus, dtype=np.int64) // gpn, gpn)
    kw = dict(reserved=0, backfill=True, best_effort=True, backfill_depth=1000,
              w0=float(df["submit_s"].iloc[0]), w1=float(df["submit_s"].iloc[-1]))
    return names, args, kw


def bench_cluster_sim(n_full: int = 700_000, n_small: int = 100_000, seed: int = 0, verbose: bool = True) -> dict:
    """Time the C kernel on the full Seren-scale instance and C vs twin on the first ``n_small`` jobs.

    Prints ``cluster_sim c_s=.. numpy_s=.. speedup=..`` (same small instance, both measured) and
    ``target cluster_sim_seren_six_months c_s=.. numpy_s_est=..`` (full instance in C; the twin's time scaled
    linearly from the small instance, an estimate).
    Returns the numbers as a dict.
    """
    from acmemodel._solver import _cluster
    from acmemodel._solver.reference.cluster import simulate_reference

    full = seren_like_workload(n_full, seed=seed)
    small = full.iloc[:n_small].reset_index(drop=True)

    _, args, kw = _kernel_args(small)
    t0 = time.perf_counter()
    c_small = _cluster.simulate(*args, **kw)
    c_small_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    r_small = simulate_reference(*args, **kw)
    numpy_small_s = time.perf_counter() - t0
    same = bool(np.array_equal(c_small["start"], r_small["start"], equal_nan=True))

    _, args, kw = _kernel_args(full)
    t0 = time.perf_counter()
    c_full = _cluster.simulate(*args, **kw)
    c_full_s = time.perf_counter() - t0

    wait = c_full["start"] - args[0]
    util = c_full["busy"].sum() / (SEREN_GPUS * (kw["w1"] - kw["w0"]))
    out = {
        "c_s": c_small_s, "numpy_s": numpy_small_s, "target_c_s": c_full_s,
        "c_small_s": c_small_s, "numpy_small_s": numpy_small_s, "speedup": numpy_small_s / c_small_s,
        "identical_small": same, "n_small": n_small, "n_full": n_full, "c_full_s": c_full_s,
        "numpy_full_est_s": numpy_small_s * n_full / n_small, "utilization_full": float(util),
        "eval_p90_wait_full_s": float(np.quantile(wait[args[3] == 1], 0.9)),
        "preemptions_full": int(c_full["preempt"].sum()),
    }
    if verbose:
        print(f"cluster_sim c_s={c_small_s:.4f} numpy_s={numpy_small_s:.3f} speedup={out['speedup']:.0f}"
              f"  # same {n_small}-job instance, identical={same}")
        print(f"target cluster_sim_seren_six_months c_s={c_full_s:.3f} numpy_s_est={out['numpy_full_est_s']:.0f}"
              f"  # goal < 10 s; {n_full} jobs, 2288 GPUs, 183 days, util={util:.2f}, "
              f"preemptions={out['preemptions_full']}; numpy_s_est = {n_small}-job twin time x {n_full}/{n_small}")
    return out


#: Acme's policy as the default bundle's calibration searches it: a pretraining reservation, Eval last, others
#: best-effort on idle reserved GPUs, a start-up latency per job
ACME_POLICY = {"reservation_gpus": 1920, "priorities": {"Pretrain": 2, "SFT": 1, "MLLM": 1, "Debug": 1, "Other": 1,
                                                         "Eval": 0},
               "best_effort_types": ["SFT", "MLLM", "Debug", "Other"]}


def bench_acme_policy(n_full: int = 700_000, seed: int = 0, verbose: bool = True) -> dict:
    """Six months at Seren scale through :func:`simulate_cluster` (front end included) with Acme's policy
    (:data:`ACME_POLICY`, plus a start-up latency of 0-30 s per job), against the same workload in plain FIFO on
    one shared pool, both in this run. Prints ``target cluster_sim_acme_policy c_s=.. fifo_c_s=.. ratio=..``."""
    from acmemodel.sim.cluster import simulate_cluster

    df = seren_like_workload(n_full, seed=seed)
    rng = np.random.default_rng(seed + 1)
    df["latency_s"] = rng.integers(0, 31, len(df)).astype(float)
    t0 = time.perf_counter()
    r = simulate_cluster(df, total_gpus=SEREN_GPUS, partitions={"pretrain": ACME_POLICY["reservation_gpus"]},
                         priorities=ACME_POLICY["priorities"], best_effort_on_reserved=True,
                         best_effort_types=ACME_POLICY["best_effort_types"])
    policy_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    simulate_cluster(df.drop(columns="latency_s"), total_gpus=SEREN_GPUS)
    fifo_s = time.perf_counter() - t0
    j = r.jobs
    out = {"policy_s": policy_s, "fifo_s": fifo_s, "ratio": policy_s / fifo_s, "jobs": len(j),
           "preemptions": int(j["preemptions"].sum()), "eval_mean_wait_s": float(j.loc[j["type"] == "Eval",
                                                                                        "wait_s"].mean())}
    if verbose:
        print(f"target cluster_sim_acme_policy c_s={policy_s:.3f} fifo_c_s={fifo_s:.3f} ratio={out['ratio']:.2f}"
              f"  # goal < 10 s; {len(j)} jobs, 2288 GPUs, 183 days, reservation "
              f"{ACME_POLICY['reservation_gpus']}, Eval last, best effort, latency; "
              f"preemptions={out['preemptions']}")
    return out


if __name__ == "__main__":
    bench_cluster_sim()
    bench_acme_policy()
