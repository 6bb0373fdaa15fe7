"""Import a 1M-job ``sacct --parsable2`` file with ``load_trace(format="slurm")`` vs pyarrow's raw read.

Target (issue 34; 3x in issue 13): the import — steps folded, TRES parsed, states mapped, timestamps
converted, validated into ``Trace.jobs`` — within 2.5x of ``pyarrow.csv.read_csv(path, delimiter="|")``
of the same file, both measured in the same run. The file has one job line per job plus ``--steps`` step lines per job on average
(``.batch``/``.extern``/``.0``), a few RUNNING/PENDING jobs and array tasks. Each reader runs in a
fresh subprocess, interleaved over ``--repeat`` rounds; reported: the best wall time of each, the
median of the per-round ratios, and the CPU time (user + sys of the child, all its threads; steadier
than wall time on a loaded machine) and peak RSS of each. ``--baseline-src DIR`` also runs the import
from another source tree (e.g. an export of main, ``PYTHONPATH=DIR``) in the same rounds: before/after
under the same load.

    python benchmarks/bench_import_slurm.py [--jobs 1000000] [--steps 0.5] [--repeat 3] [--file PATH]
                                            [--baseline-src DIR]

Measured (issue 34; 1M jobs, 1.5M lines, 278 MB; 2-core machine shared with other jobs, load 6-9, 4 rounds):
pyarrow 2.26 s wall / 0.91 s CPU, the import 4.75 s / 2.02 s: 2.11x of the best wall times (paired median
1.56x), CPU 2.21x (paired median 1.66x). The last step: the log's partitions from the column's distinct
values, not by stripping every row as a Python string (about 1 s of CPU at 1M jobs).
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

from _child import MEASURE

CHILD = MEASURE + r"""
path, mode = sys.argv[1], sys.argv[2]
if mode == "pyarrow":
    import pyarrow.csv as pc
    c0 = cpu()
    t = time.perf_counter()
    table = pc.read_csv(path, parse_options=pc.ParseOptions(delimiter="|"))
    dt = time.perf_counter() - t
    n = table.num_rows
else:
    import warnings
    from acmemodel.trace import load_trace
    warnings.simplefilter("ignore")
    c0 = cpu()
    t = time.perf_counter(); tr = load_trace(path, format="slurm", timezone="+08:00"); dt = time.perf_counter() - t
    n = len(tr.jobs)
print(json.dumps({"seconds": dt, "cpu": cpu() - c0, "rows": n,
                  "peak_mb": peak_rss()}))
"""

HEADER = ("JobID|JobIDRaw|User|Partition|QOS|JobName|State|Submit|Start|End|NNodes|AllocCPUS|ReqCPUS|"
          "AllocTRES|ReqTRES")


def make_file(path: Path, n: int, steps: float, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    t0 = pd.Timestamp("2024-01-01").value // 10**9
    submit = t0 + np.sort(rng.integers(0, 180 * 86400, n))
    start = submit + np.where(rng.random(n) < 0.5, 0, rng.lognormal(5, 2, n).astype(np.int64))
    end = start + rng.lognormal(6, 2.5, n).astype(np.int64)
    gpus = rng.choice([0, 1, 2, 4, 8, 16, 64], n, p=[.3, .4, .1, .05, .1, .03, .02])
    nodes = np.maximum(1, gpus // 8)
    cpus = np.maximum(1, gpus) * 8
    states = rng.choice(["COMPLETED", "FAILED", "CANCELLED by 1001", "TIMEOUT", "OUT_OF_MEMORY", "NODE_FAIL",
                         "RUNNING", "PENDING"], n, p=[.6, .15, .12, .05, .03, .02, .02, .01])
    fmt = lambda s: pd.to_datetime(s, unit="s").strftime("%Y-%m-%dT%H:%M:%S")  # noqa: E731
    sub_t, st_t, en_t = fmt(submit), fmt(start), fmt(end)
    st_t = np.where(states == "PENDING", "Unknown", st_t)
    en_t = np.where(np.isin(states, ["RUNNING", "PENDING"]), "Unknown", en_t)
    ids = (1_000_000 + np.arange(n)).astype(str)
    arr = rng.random(n) < 0.05
    ids = np.where(arr, np.char.add(np.char.add(ids, "_"), rng.integers(0, 50, n).astype(str)), ids)
    parts = rng.choice(["llm", "eval", "debug", "cpu"], n)
    names = np.char.add(rng.choice(["eval_mmlu_", "pretrain_7b_", "sft_chat_", "debug_"], n),
                        rng.integers(0, 999, n).astype(str))
    tres = np.char.add(np.char.add(np.char.add("billing=", cpus.astype(str)), np.char.add(",cpu=", cpus.astype(str))),
                       np.where(gpus > 0, np.char.add(",gres/gpu=", gpus.astype(str)), ""))
    tres = np.char.add(tres, np.char.add(",mem=", np.char.add((cpus * 8).astype(str), "G,node=1")))
    alloc = np.where(states == "PENDING", "", tres)
    users = np.char.add("u", rng.integers(0, 3000, n).astype(str))
    job_lines = pd.Series(ids).str.cat([pd.Series(x) for x in (
        (1_000_000 + np.arange(n)).astype(str), users, parts, np.full(n, "normal"), names, states, sub_t, st_t, en_t,
        nodes.astype(str), cpus.astype(str), cpus.astype(str), alloc, tres)], sep="|")
    k = rng.poisson(steps, n) * (states != "PENDING")
    step_of = np.repeat(np.arange(n), k)
    kind = rng.choice(["batch", "extern", "0"], len(step_of))
    step_lines = pd.Series(np.char.add(np.char.add(ids[step_of], "."), kind)).str.cat([pd.Series(x) for x in (
        np.char.add(np.char.add((1_000_000 + step_of).astype(str), "."), kind), np.full(len(step_of), ""),
        np.full(len(step_of), ""), np.full(len(step_of), ""), kind, states[step_of], st_t[step_of],
        st_t[step_of], en_t[step_of], np.full(len(step_of), "1"), cpus[step_of].astype(str),
        cpus[step_of].astype(str), alloc[step_of], np.full(len(step_of), ""))], sep="|")
    order = np.argsort(np.r_[np.arange(n) * 2.0, step_of * 2.0 + 1], kind="stable")
    lines = pd.concat([job_lines, step_lines], ignore_index=True).to_numpy(object)[order]
    with open(path, "w") as f:
        f.write(HEADER + "\n")
        f.write("\n".join(lines))
        f.write("\n")


def run(path: Path, mode: str, src: str | None = None) -> dict:
    import os

    env = dict(os.environ)
    if src:
        env["PYTHONPATH"] = src + os.pathsep + env.get("PYTHONPATH", "")
    out = subprocess.run([sys.executable, "-c", CHILD, str(path), "slurm" if mode == "baseline" else mode],
                         check=True, capture_output=True, text=True, env=env, cwd=src or None)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=1_000_000)
    ap.add_argument("--steps", type=float, default=0.5, help="mean step lines per job")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--file", default=None, help="reuse this sacct file (written there first if missing)")
    ap.add_argument("--baseline-src", default=None, help="also time the import of this source tree (PYTHONPATH)")
    a = ap.parse_args()
    modes = ["pyarrow", "slurm"] + (["baseline"] if a.baseline_src else [])
    with tempfile.TemporaryDirectory() as d:
        path = Path(a.file) if a.file else Path(d) / "sacct.txt"
        if not path.exists():
            make_file(path, a.jobs, a.steps)
        n_lines = sum(1 for _ in open(path)) - 1
        size = path.stat().st_size / 1e6
        got: dict = {m: [] for m in modes}
        for i in range(a.repeat):
            order = modes if i % 2 == 0 else modes[::-1]
            for m in order:
                got[m].append(run(path, m, a.baseline_src if m == "baseline" else None))
    print(f"file jobs={a.jobs} lines={n_lines} size_mb={size:.0f} rounds={a.repeat}")
    base = got["pyarrow"]
    b, bc = min(r["seconds"] for r in base), min(r["cpu"] for r in base)
    print(f"pyarrow.read_csv seconds={b:.3f} cpu_s={bc:.3f} peak_mb={base[0]['peak_mb']:.0f} rows={base[0]['rows']}")
    for m, label in (("slurm", "load_trace(format='slurm')"), ("baseline", "baseline load_trace")):
        if m not in got:
            continue
        ours = got[m]
        o, oc = min(r["seconds"] for r in ours), min(r["cpu"] for r in ours)
        paired = sorted(x["seconds"] / y["seconds"] for x, y in zip(ours, base))
        cpaired = sorted(x["cpu"] / y["cpu"] for x, y in zip(ours, base))
        print(f"{label} seconds={o:.3f} cpu_s={oc:.3f} peak_mb={max(r['peak_mb'] for r in ours):.0f} "
              f"jobs={ours[0]['rows']}")
        print(f"  ratio import/pyarrow={o / b:.2f} (target <= 2.5); paired median={float(np.median(paired)):.2f} "
              f"min={paired[0]:.2f} max={paired[-1]:.2f} (n={len(paired)}); "
              f"cpu ratio={oc / bc:.2f} paired median={float(np.median(cpaired)):.2f}")


if __name__ == "__main__":
    main()
