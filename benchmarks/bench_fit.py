"""Benchmark: ``fit`` of a fleet's trace (several clusters, two years, one Parquet file per cluster x month).

Targets (issue 34): 1M jobs in <= 30 s and <= 1 GB on 2 cores; 10M jobs in <= 6 min and <= 4 GB; a 2-worker
``LocalCluster`` gives the same bundle (tests/test_pipeline_dask.py checks it on a small trace); the time
exponent from 1M to 10M within 1.05. Each measurement runs in a fresh subprocess (peak RSS of that process);
the baseline of the same run is pyarrow's raw read of the same files (``pyarrow.dataset(...).to_table()``):
the script prints fit time and memory as ratios against it, the fit in ``--workers`` forked processes (the
default of ``acmemodel fit``) and the Dask fit against the one-process fit.

    python benchmarks/bench_fit.py [--jobs 1000000 [3000000 ...]] [--clusters 4] [--days 730] [--workers 2]
        [--keep DIR [--reuse]]

The trace is :func:`acmemodel.evaluation.synthetic.synthetic_jobs` (lognormal run times per type, per-user
factors, Acme's type mix) written with the AcmeTrace formatter (:func:`acmemodel.export.acmetrace_table`).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _child import MEASURE, print_time_exponent

CHILD = MEASURE + r"""
mode, folder, workers = sys.argv[1], sys.argv[2], int(sys.argv[3])
t0 = time.perf_counter()
if mode == "arrow":
    import pyarrow.dataset as ds
    table = ds.dataset(folder, format="parquet").to_table()
    out = {"rows": table.num_rows, "table_mb": table.nbytes / 2**20}
else:
    import warnings
    warnings.simplefilter("ignore")
    from pathlib import Path
    from acmemodel.features.names import jobs_with_extras
    from acmemodel.pipeline import drop_unused_columns, fit_bundle
    from acmemodel.trace import load_trace
    files = sorted(Path(folder).glob("*.parquet"))
    trace = load_trace(files, cluster=[f.name.split("_")[0] for f in files])
    drop_unused_columns(trace.jobs)  # (as acmemodel fit does once the provenance is taken)
    t_load, cpu_load, rss_load = time.perf_counter() - t0, cpu(), peak_rss()
    marks = []  # (model about to be fitted, CPU s, peak RSS MB) at each progress call: CPU and peak per model
    def progress(i, n, desc):
        marks.append((desc.replace("fitting ", ""), cpu(), peak_rss()))
    client = cluster = None
    if mode == "dask":
        from dask.distributed import Client, LocalCluster
        cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None)
        client = Client(cluster)
    b = fit_bundle(jobs_with_extras(trace), trace.timezones, client=client, progress=progress,
                   processes=workers if mode == "fit" else None)
    if client is not None:
        client.close(); cluster.close()
    out = {"rows": len(trace.jobs), "load_s": t_load, "load_cpu_s": cpu_load, "load_peak_rss_mb": rss_load,
           "fit_seconds": b.provenance["fit_seconds"], "cpu_s": cpu(),
           "model_cpu_s": {m: c1 - c0 for (m, c0, _), (_, c1, _) in zip(marks, marks[1:])},
           "model_peak_rss_mb": {m: r1 for (m, _, _), (_, _, r1) in zip(marks, marks[1:])},
           "predictor_sample": getattr(b.models.get("predictor"), "train_sample_", None)}
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)  # the forked fit processes (processes > 1)
    out["children_cpu_s"] = kids.ru_utime + kids.ru_stime
    out["children_peak_rss_mb"] = kids.ru_maxrss / 1024
out["wall_s"] = time.perf_counter() - t0
out["peak_rss_mb"] = peak_rss()
print(json.dumps(out))
"""


def write_fleet(folder: Path, n: int, clusters: int, days: float, seed: int = 0) -> int:
    """``n`` synthetic jobs on ``clusters`` clusters over ``days``, one Parquet file per cluster x month."""
    import numpy as np
    import pyarrow.parquet as pq

    from acmemodel.evaluation.synthetic import synthetic_jobs
    from acmemodel.export.acmetrace import acmetrace_table

    names = tuple(f"fleet{i}" for i in range(clusters))
    jobs = synthetic_jobs(n, seed, days=days, clusters=names, n_users=50 * clusters)
    month = np.floor((jobs["submit_s"].to_numpy() - jobs["submit_s"].min()) / (30.44 * 86400)).astype(int)
    files = 0
    for cl in names:
        for m in np.unique(month):
            sub = jobs[(jobs["cluster"] == cl).to_numpy() & (month == m)]
            if len(sub):
                pq.write_table(acmetrace_table(sub, cluster=cl, timezone="+00:00"),
                               folder / f"{cl}_{m:03d}.parquet")
                files += 1
    return files


def run(mode: str, folder: Path, workers: int) -> dict:
    r = subprocess.run([sys.executable, "-c", CHILD, mode, str(folder), str(workers)], capture_output=True,
                       text=True, check=False)
    if r.returncode != 0:
        raise SystemExit(f"{mode} run failed:\n{r.stderr[-2000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, nargs="+", default=[1_000_000])
    ap.add_argument("--clusters", type=int, default=4)
    ap.add_argument("--days", type=float, default=730.0)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--no-dask", action="store_true", help="skip the Dask fit")
    ap.add_argument("--keep", type=Path, default=None, help="write the fleet's files here (kept)")
    ap.add_argument("--reuse", action="store_true", help="with --keep: use the fleet's files already there")
    a = ap.parse_args(argv)
    walls, cpus = [], []
    for n in a.jobs:
        with tempfile.TemporaryDirectory() as tmp:
            folder = a.keep / f"fleet_{n}" if a.keep else Path(tmp)
            folder.mkdir(parents=True, exist_ok=True)
            t = time.perf_counter()
            if a.reuse and any(folder.glob("*.parquet")):
                nf = len(list(folder.glob("*.parquet")))
            else:
                nf = write_fleet(folder, n, a.clusters, a.days)
            print(f"{n:,} jobs, {a.clusters} clusters, {a.days:.0f} days: {nf} Parquet files "
                  f"({time.perf_counter() - t:.0f} s to write)")
            base = run("arrow", folder, 1)
            fit = run("fit", folder, 1)
            par = run("fit", folder, a.workers) if a.workers > 1 else None
            walls.append((par or fit)["wall_s"])
            cpus.append(fit["cpu_s"])
            print(f"  pyarrow raw read: {base['wall_s']:.1f} s, table {base['table_mb']:.0f} MB, "
                  f"peak RSS {base['peak_rss_mb']:.0f} MB")
            print(f"  fit, 1 process:   {fit['wall_s']:.1f} s (load {fit['load_s']:.1f} s), peak RSS "
                  f"{fit['peak_rss_mb']:.0f} MB = {fit['wall_s'] / base['wall_s']:.1f}x the raw read's time, "
                  f"{fit['peak_rss_mb'] / base['peak_rss_mb']:.1f}x its memory")
            print("    per model (s): " + ", ".join(f"{k} {v:.1f}" for k, v in fit["fit_seconds"].items()))
            print(f"    CPU (s): {fit['cpu_s']:.1f} in all, load {fit['load_cpu_s']:.1f}; per model: "
                  + ", ".join(f"{k} {v:.1f}" for k, v in fit["model_cpu_s"].items()))
            ps = fit.get("predictor_sample")
            if ps:
                print(f"    predictor trained on {ps['jobs']:,} of {ps['of']:,} training jobs (cap "
                      + (f"{ps['cap']:,})" if ps["cap"] is not None else "none)"))
            print(f"    peak RSS (MB) after: load {fit['load_peak_rss_mb']:.0f}, "
                  + ", ".join(f"{k} {v:.0f}" for k, v in fit["model_peak_rss_mb"].items()))
            print(f"    load average (1 min) {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs: wall figures "
                  "are CPU-bound, so a loaded machine stretches them")
            if par is not None:
                print(f"  fit, {a.workers} processes: {par['wall_s']:.1f} s = {fit['wall_s'] / par['wall_s']:.2f}x "
                      f"one process; CPU {par['cpu_s'] + par['children_cpu_s']:.1f} s ({par['children_cpu_s']:.1f} "
                      f"in the fit processes); peak RSS {par['peak_rss_mb']:.0f} MB (largest fit process "
                      f"{par['children_peak_rss_mb']:.0f} MB, the table shared copy-on-write)")
            if not a.no_dask:
                dk = run("dask", folder, a.workers)
                print(f"  fit on a LocalCluster of {a.workers}: {dk['wall_s']:.1f} s = "
                      f"{fit['wall_s'] / dk['wall_s']:.2f}x the in-process speed, peak RSS (coordinator) "
                      f"{dk['peak_rss_mb']:.0f} MB")
    print_time_exponent(a.jobs, walls, cpus)


if __name__ == "__main__":
    main()
