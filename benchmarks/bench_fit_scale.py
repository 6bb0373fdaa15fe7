"""Benchmark: the out-of-core ``fit`` of a fleet's two-year trace (issue 34), 1M to 10M jobs.

Targets: 10M jobs (a generated multi-cluster, two-year trace of Parquet files) in <= 6 min and <= 4 GB peak
in-process; the time exponent of ``fit`` from 1M to 10M within 1.05. Each fit runs as
``/usr/bin/time -v acmemodel fit DIR -o BUNDLE --memory 4GB`` in a fresh process (wall, CPU = user + sys, peak
RSS = "Maximum resident set size"); the baseline of the same run is pyarrow's raw read of the same files
(``pyarrow.dataset(DIR).to_table()``), and the in-memory fit (``--memory`` large enough that nothing is
streamed) where it fits in memory (``--in-memory-max``).

    python benchmarks/bench_fit_scale.py --jobs 1000000 3000000 10000000 [--clusters 4] [--days 730]
        [--dir /tmp/fleet] [--memory 4GB] [--in-memory-max 1000000] [--workers 2]

The trace (:func:`write_fleet`) is written month by month (bounded memory): each month is
:func:`acmemodel.evaluation.synthetic.synthetic_jobs` (its own seed) shifted to its month, one Parquet file per
cluster x month in the AcmeTrace schema, the cluster's description (4,096 GPUs, 8 per node, UTC) in the
file's metadata as ``acmemodel convert`` writes it. Files are kept under ``--dir`` and reused (never commit
them).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

from _child import print_time_exponent

MONTH_S = 30.44 * 86400.0


def write_fleet(folder: Path, n: int, clusters: int = 4, days: float = 730.0, seed: int = 0) -> int:
    """``n`` synthetic jobs on ``clusters`` clusters over ``days``, one Parquet file per cluster x month, written
    one month at a time (memory of one month's jobs). Returns the number of files."""
    import numpy as np
    import pandas as pd
    import pyarrow.parquet as pq

    from acmemodel.clusters import PARQUET_KEY, ClusterSpec
    from acmemodel.evaluation.synthetic import synthetic_jobs
    from acmemodel.export.acmetrace import acmetrace_table

    folder.mkdir(parents=True, exist_ok=True)
    names = tuple(f"fleet{i}" for i in range(clusters))
    months = max(1, int(round(days * 86400.0 / MONTH_S)))
    per = np.diff(np.round(np.linspace(0, n, months + 1)).astype(int))
    files = 0
    for m, k in enumerate(per):
        jobs = synthetic_jobs(int(k), seed * 1000 + m, days=MONTH_S / 86400.0, clusters=names,
                              n_users=50 * clusters)
        shift = m * MONTH_S
        for c in ("submit_s", "start_s", "end_s"):
            jobs[c] = jobs[c] + shift
        for c in ("submit_time", "start_time", "end_time"):
            jobs[c] = jobs[c] + pd.Timedelta(seconds=shift)
        jobs["job_id"] = (f"m{m}-" + jobs["job_id"].astype(str)).astype(object)
        for cl in names:
            sub = jobs[(jobs["cluster"] == cl).to_numpy()]
            if not len(sub):
                continue
            table = acmetrace_table(sub, cluster=cl, timezone="+00:00")
            spec = ClusterSpec(name=cl, gpus=4096, gpus_per_node=8, timezone="+00:00", source="bench_fit_scale")
            meta = dict(table.schema.metadata or {})
            meta[PARQUET_KEY] = json.dumps(spec.to_dict()).encode("utf-8")
            pq.write_table(table.replace_schema_metadata(meta), folder / f"{cl}_{m:03d}.parquet")
            files += 1
    return files


def _time_v(cmd: list[str]) -> dict:
    """Run ``cmd`` under ``/usr/bin/time -v``: wall s, CPU s (user + sys), peak RSS MB."""
    r = subprocess.run(["/usr/bin/time", "-v"] + cmd, capture_output=True, text=True, check=False)
    if r.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{r.stderr[-3000:]}")
    err = r.stderr

    def grab(label):
        return re.search(re.escape(label) + r":\s*(\S+)", err).group(1)

    wall = grab("Elapsed (wall clock) time (h:mm:ss or m:ss)").split(":")
    wall_s = sum(float(x) * 60 ** i for i, x in enumerate(reversed(wall)))
    return {"wall_s": wall_s, "cpu_s": float(grab("User time (seconds)")) + float(grab("System time (seconds)")),
            "peak_rss_mb": int(grab("Maximum resident set size (kbytes)")) / 1024, "stdout": r.stdout}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, nargs="+", default=[1_000_000])
    ap.add_argument("--clusters", type=int, default=4)
    ap.add_argument("--days", type=float, default=730.0)
    ap.add_argument("--dir", type=Path, default=Path("/tmp/acmemodel_fleet"))
    ap.add_argument("--memory", default="4GB")
    ap.add_argument("--in-memory-max", type=int, default=1_000_000,
                    help="also time the in-memory fit up to this many jobs (baseline)")
    ap.add_argument("--workers", type=int, default=0, help="also time the fit on a LocalCluster of N workers")
    ap.add_argument("--only-write", action="store_true")
    a = ap.parse_args(argv)
    exe = shutil.which("acmemodel") or "acmemodel"
    walls, cpus = [], []
    for n in a.jobs:
        folder = a.dir / f"fleet_{n}_{a.clusters}c_{a.days:.0f}d"
        if not any(folder.glob("*.parquet")):
            t = time.perf_counter()
            nf = write_fleet(folder, n, a.clusters, a.days)
            print(f"wrote {nf} files in {time.perf_counter() - t:.0f} s")
        nf = len(list(folder.glob("*.parquet")))
        size = sum(f.stat().st_size for f in folder.glob("*.parquet")) / 1e6
        print(f"{n:,} jobs, {a.clusters} clusters, {a.days:.0f} days: {nf} Parquet files, {size:,.0f} MB")
        if a.only_write:
            continue
        base = _time_v([sys.executable, "-c", "import sys, pyarrow.dataset as ds; "
                        "t = ds.dataset(sys.argv[1], format='parquet').to_table(); print(t.nbytes)", str(folder)])
        print(f"  pyarrow raw read: {base['wall_s']:.1f} s wall, {base['cpu_s']:.1f} CPU s, table "
              f"{int(base['stdout'].split()[-1]) / 2**20:,.0f} MB, peak RSS {base['peak_rss_mb']:,.0f} MB")
        out = Path(f"/tmp/bench_fit_scale_{os.getpid()}_{n}")
        load0 = os.getloadavg()[0]
        fit = _time_v([exe, "fit", str(folder), "-o", str(out), "--memory", a.memory, "--json"])
        doc = json.loads(fit["stdout"])
        samp = doc["provenance"].get("sample") or {}
        walls.append(fit["wall_s"])
        cpus.append(fit["cpu_s"])
        print(f"  fit --memory {a.memory}: {fit['wall_s']:.1f} s wall, {fit['cpu_s']:.1f} CPU s, peak RSS "
              f"{fit['peak_rss_mb']:,.0f} MB ({fit['wall_s'] / base['wall_s']:.1f}x the raw read's wall); "
              f"load average {load0:.1f} -> {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
        if samp:
            print(f"    sample: {samp.get('rows_sampled', 0):,} of {samp.get('rows', 0):,} jobs "
                  f"(fraction {samp.get('fraction', 1):.3f}, seed {samp.get('seed')}) for "
                  f"{', '.join(samp.get('sampled_models', []))}; exact on every job: "
                  f"{', '.join(samp.get('exact_models', []))}")
        print("    per model (s): " + ", ".join(f"{k} {v:.1f}" for k, v in doc["provenance"]["fit_seconds"].items()))
        for key, label, fmt in (("stage_seconds", "stages, wall s", "{:.1f}"), ("stage_cpu_seconds", "stages, CPU s", "{:.1f}"),
                                ("stage_peak_rss_mb", "peak RSS after each stage, MB", "{:,.0f}")):
            stages = samp.get(key)
            if stages:
                print(f"    {label}: " + ", ".join(f"{k} " + fmt.format(v) for k, v in stages.items() if v is not None))
        shutil.rmtree(out, ignore_errors=True)
        if n <= a.in_memory_max:
            mem = _time_v([exe, "fit", str(folder), "-o", str(out), "--memory", "1TB", "--json"])
            print(f"  fit in memory (baseline): {mem['wall_s']:.1f} s wall, {mem['cpu_s']:.1f} CPU s, peak RSS "
                  f"{mem['peak_rss_mb']:,.0f} MB: streamed/in-memory CPU {fit['cpu_s'] / mem['cpu_s']:.2f}x, "
                  f"peak {fit['peak_rss_mb'] / mem['peak_rss_mb']:.2f}x")
            shutil.rmtree(out, ignore_errors=True)
        if a.workers:
            dk = _time_v([exe, "fit", str(folder), "-o", str(out), "--memory", a.memory, "--workers",
                          str(a.workers), "--json"])
            print(f"  fit --workers {a.workers}: {dk['wall_s']:.1f} s wall, coordinator peak RSS "
                  f"{dk['peak_rss_mb']:,.0f} MB")
            shutil.rmtree(out, ignore_errors=True)
    print_time_exponent(a.jobs, walls, cpus)


if __name__ == "__main__":
    main()
