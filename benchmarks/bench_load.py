"""Load a 1M-row Seren-format CSV with ``load_trace`` vs pyarrow's raw ``read_csv`` of the same file.

Target (issue 2): load_trace within 2x of the raw read. Both are measured in this run, each in a fresh
subprocess, with the peak resident memory of that subprocess. The machine may be shared, so the
repeats are interleaved (pyarrow, load_trace, then load_trace, pyarrow, ...): both readers see the same
background load. Reported: the best time of each (the least disturbed run), and the median over rounds
of the ratio of the two runs of the same round.

    python benchmarks/bench_load.py [--rows 1000000] [--repeat 5]
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

CHILD = r"""
import json, os, resource, sys, time
path, mode = sys.argv[1], sys.argv[2]

def rss_now():  # current resident set (MB) from /proc; the peak so far where that is unavailable
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except OSError:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

if mode == "pyarrow":
    import pyarrow.csv as pc
    rss0 = rss_now()
    t = time.perf_counter(); table = pc.read_csv(path); dt = time.perf_counter() - t
    n = table.num_rows
else:
    import warnings
    from acmemodel.trace import load_trace
    warnings.simplefilter("ignore")
    rss0 = rss_now()
    t = time.perf_counter(); tr = load_trace(path); dt = time.perf_counter() - t
    n = len(tr.jobs)
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"seconds": dt, "rows": n, "peak_rss_mb": rss / 1024, "import_rss_mb": rss0}))
"""


def make_csv(path: Path, n: int, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    t0 = pd.Timestamp("2023-03-01", tz="Asia/Shanghai").value // 10**9
    submit = t0 + np.sort(rng.integers(0, 184 * 86400, n))
    queue = np.where(rng.random(n) < 0.5, 0, rng.lognormal(5, 2, n).astype(np.int64))
    run = rng.lognormal(5, 2.5, n).astype(np.int64)
    start = submit + queue
    end = start + run
    gpus = rng.choice([0, 1, 2, 4, 8, 16, 64, 256, 1024], n, p=[.35, .4, .05, .05, .1, .02, .015, .01, .005])

    def fmt(s):
        return (pd.to_datetime(s, unit="s", utc=True).tz_convert("Asia/Shanghai")
                .strftime("%Y-%m-%d %H:%M:%S%z").str.replace(r"(\d\d)$", r":\1", regex=True))

    df = pd.DataFrame({
        "job_id": 5000000 + np.arange(n), "user": "u" + pd.Series(rng.integers(1000, 9999, n)).astype(str),
        "node_num": np.maximum(1, gpus // 8), "gpu_num": gpus, "cpu_num": 16,
        "type": rng.choice(["Eval", "Pretrain", "SFT", "MLLM", "Debug", "Other"], n),
        "state": rng.choice(["COMPLETED", "CANCELLED", "FAILED", "TIMEOUT", "NODE_FAIL"], n),
        "submit_time": fmt(submit), "start_time": fmt(start), "end_time": fmt(end),
        "duration": run, "queue": queue, "gpu_time": (gpus * run).astype(float),
    })
    df.to_csv(path, index=False)


def run(path: Path, mode: str) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, str(path), mode], check=True, capture_output=True,
                         text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--make", default=None, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.make:
        make_csv(Path(a.make), a.rows)
        return
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "trace_seren.csv"
        # generated in a child process: the parent stays small, so the children's peak RSS is their own
        subprocess.run([sys.executable, __file__, "--make", str(path), "--rows", str(a.rows)], check=True)
        size = path.stat().st_size / 1e6
        bases, ourss = [], []
        for i in range(a.repeat):  # interleaved, alternating which reader goes first
            order = ("pyarrow", "load_trace") if i % 2 == 0 else ("load_trace", "pyarrow")
            got = {mode: run(path, mode) for mode in order}
            bases.append(got["pyarrow"])
            ourss.append(got["load_trace"])
        base = min(bases, key=lambda r: r["seconds"])
        ours = min(ourss, key=lambda r: r["seconds"])
        paired = sorted(o["seconds"] / b["seconds"] for b, o in zip(bases, ourss))
    print(f"file rows={a.rows} size_mb={size:.0f}")
    print(f"pyarrow.read_csv seconds={base['seconds']:.3f} peak_rss_mb={base['peak_rss_mb']:.0f}")
    print(f"load_trace seconds={ours['seconds']:.3f} peak_rss_mb={ours['peak_rss_mb']:.0f} rows={ours['rows']}")
    print(f"ratio load_trace/pyarrow={ours['seconds'] / base['seconds']:.2f} (target <= 2.0)")
    print(f"paired ratio per round: median={float(np.median(paired)):.2f} min={paired[0]:.2f} "
          f"max={paired[-1]:.2f} (n={len(paired)})")
    print(f"peak_rss_mb load_trace/pyarrow={ours['peak_rss_mb'] / base['peak_rss_mb']:.2f} "
          f"(max over runs: pyarrow {max(r['peak_rss_mb'] for r in bases):.0f}, "
          f"load_trace {max(r['peak_rss_mb'] for r in ourss):.0f})")
    print(f"peak_rss_mb above the imports: pyarrow +{base['peak_rss_mb'] - base['import_rss_mb']:.0f} "
          f"(imports {base['import_rss_mb']:.0f}), load_trace +{ours['peak_rss_mb'] - ours['import_rss_mb']:.0f} "
          f"(imports {ours['import_rss_mb']:.0f})")


if __name__ == "__main__":
    main()
