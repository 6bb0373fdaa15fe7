"""Export speed: a six-month, Seren-scale trace (~1M jobs) written in every format.

Quality bar (issue 8): each format in under 30 s. The jobs frame has the Trace contract columns but
no restart-chain columns, as a loaded trace does, so every writer that needs chains runs
``acmemodel.features.chains.restart_chains`` inside its timing.

    python benchmarks/bench_export.py [--jobs 1000000] [--keep DIR]
"""
from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

BUDGET_S = 30.0


def seren_like(n: int, *, seed: int = 0, days: float = 183.0) -> pd.DataFrame:
    """A vectorised Seren-like jobs table (contract columns) with failures that get resubmitted."""
    rng = np.random.default_rng(seed)
    t0 = pd.Timestamp("2023-03-01 00:00:00+08:00").timestamp()
    submit = np.round(t0 + np.sort(rng.random(n)) * days * 86400)
    gpus = rng.choice([0, 1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024], size=n,
                      p=[.30, .30, .06, .06, .14, .05, .03, .03, .02, .008, .001, .001])
    types = rng.choice(["Eval", "Pretrain", "SFT", "MLLM", "Debug", "Other"], size=n,
                       p=[.45, .02, .08, .05, .20, .20])
    users = np.char.add("u", np.char.zfill(rng.integers(0, 500, n).astype(str), 4))
    state = rng.choice(["COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL"], size=n,
                       p=[.62, .20, .16, .015, .005])
    queue = np.round(rng.lognormal(2.5, 2.0, n))
    run = np.round(rng.lognormal(5.0, 2.2, n))
    started = ~((state == "CANCELLED") & (rng.random(n) < 0.3))
    start = np.where(started, submit + queue, np.nan)
    end = np.where(started, start + run, submit + queue)
    analysis = np.where(np.isin(state, ["TIMEOUT", "NODE_FAIL"]), "FAILED", state)
    df = pd.DataFrame({
        "cluster": "Seren", "job_id": (6_000_000 + np.arange(n)).astype(str), "user": users, "type": types,
        "state": state, "analysis_state": analysis, "gpu_num": gpus.astype("int64"),
        "node_num": np.maximum(1, np.ceil(gpus / 8)).astype("int64"),
        "cpu_num": np.where(gpus > 0, 16.0 * gpus, 4.0), "is_gpu": gpus > 0,
        "submit_s": submit, "start_s": start, "end_s": end, "started": started,
    })
    for c in ("submit", "start", "end"):
        df[f"{c}_time"] = pd.to_datetime(df[f"{c}_s"], unit="s", utc=True)
    df["run_s"] = df["end_s"] - df["start_s"]
    df["queue_s"] = np.where(started, start - submit, end - submit)
    df["queue_censored"] = ~started
    df["gpu_time_s"] = np.where(started, gpus * df["run_s"], 0.0)
    df["fail_time_s"] = np.nan
    df["source_file"] = "synthetic"
    df["source_line"] = np.arange(n) + 2
    return df


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--jobs", type=int, default=1_000_000)
    ap.add_argument("--keep", type=Path, default=None, help="write into DIR and keep the files")
    args = ap.parse_args()

    from acmemodel.export import FORMATS, write

    t = time.perf_counter()
    jobs = seren_like(args.jobs)
    print(f"generated {len(jobs):,} jobs over 183 days in {time.perf_counter() - t:.1f} s")
    root = args.keep or Path(tempfile.mkdtemp(prefix="bench_export_"))
    opts = {"airesim": dict(gpus=1024, mttf_s=86_400.0, weibull_shape=0.7)}
    rows = []
    try:
        for fmt in FORMATS:
            out = root / fmt
            t = time.perf_counter()
            res = write(jobs, fmt, out, **opts.get(fmt, {}))
            dt = time.perf_counter() - t
            size = sum(Path(f).stat().st_size for f in res["files"]) / 1e6
            rows.append((fmt, dt, dt / BUDGET_S, res["attempts"], res["restarts"], size))
    finally:
        if args.keep is None:
            shutil.rmtree(root, ignore_errors=True)
    print(f"{'format':<10} {'seconds':>8} {'/budget':>8} {'rows':>9} {'restarts':>9} {'MB':>8}")
    for fmt, dt, ratio, n, r, mb in rows:
        print(f"{fmt:<10} {dt:8.2f} {ratio:8.2f} {n:9,d} {r:9,d} {mb:8.1f}")
    worst = max(rows, key=lambda x: x[1])
    print(f"slowest: {worst[0]} {worst[1]:.2f} s = {worst[2]:.2f} of the {BUDGET_S:.0f} s budget "
          f"({'PASS' if worst[1] < BUDGET_S else 'FAIL'})")


if __name__ == "__main__":
    main()
