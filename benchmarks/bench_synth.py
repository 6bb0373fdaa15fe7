"""Benchmark: ``acmemodel synth`` at Seren scale (~1M jobs in six months) — time and peak memory.

Target: six months of Seren (~1.03M jobs) within 60 s, memory proportional to the output.

Models: the embedded default bundle (``acmemodel.load_default()``) when it is installed, its arrival
intensities scaled to Seren's published volume (1,031,550 jobs in 184 days); otherwise an
``ArrivalModel.from_rates`` built here from the published Seren statistics (job volume, type mix,
GPU-count CDF, evaluation bursts of mean ≈ 8) with a ``RuntimeModel`` fitted on the shipped sample.

Each size runs in a fresh subprocess so its peak RSS (``ru_maxrss``) is its own; printed per size:
rows, seconds for simulation and for formatting + writing the output, peak RSS, RSS growth over the
loaded-models baseline, and that growth per 1,000 rows (constant = memory proportional to output).
``--format`` picks the output as ``acmemodel synth --format`` does: ``acmetrace`` (one CSV through
the package's single AcmeTrace formatter, :mod:`acmemodel.export.acmetrace`) or a simulator format
written by :func:`acmemodel.export.write` (swf, helios, philly, batsim).

Also printed: the timestamp kernel of that formatter (:func:`acmemodel.export._text.time_bytes`,
lookup tables of day and clock text) against library baselines on the same 1M timestamps —
``numpy.datetime_as_string`` and pandas ``strftime`` — in the same run.

Run: ``python benchmarks/bench_synth.py [--days 30 91 182] [--format acmetrace]``
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
import warnings

SEREN_JOBS, SEREN_DAYS = 1_031_550, 184.0


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _current_rss_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return float(line.split()[1]) / 1024.0
    return float("nan")


def _fallback_models():
    import numpy as np

    from acmemodel.datasets.published import load_reference
    from acmemodel.trace import load_sample
    from acmemodel.models.arrival import ArrivalModel
    from acmemodel.models.gpu_counts import GpuCountModel
    from acmemodel.models.runtime import RuntimeModel

    summ = load_reference("cluster_summary").set_index("id").loc["Seren"]
    mix = load_reference("workload_mix").query("cluster == 'Seren'").set_index("type")["job_count_percent"]
    cdf = load_reference("gpu_count_cdf_by_jobs").query("cluster == 'Seren'")
    x = cdf["x_gpus"].to_numpy()
    p = np.diff(np.r_[0.0, cdf["cdf_percent"].to_numpy() / 100])
    keep = p > 1e-4
    cpu_share = summ["cpu_job_num"] / summ["job_num"]
    base = {int(g): float(q) * (1 - cpu_share) for g, q in zip(x[keep], p[keep])}
    base[0] = cpu_share
    per_day = SEREN_JOBS / SEREN_DAYS
    pmfs = {("Seren", t): ({0: cpu_share, 64: .2 * (1 - cpu_share), 128: .3 * (1 - cpu_share),
                             256: .3 * (1 - cpu_share), 512: .2 * (1 - cpu_share)} if t == "Pretrain" else base)
            for t in mix.index}
    hour = np.array([.45, .35, .28, .22, .2, .2, .25, .35, .55, .8, 1, 1.05, .95, 1, 1.1, 1.15, 1.15, 1.1, 1,
                     .95, .95, .9, .75, .6])
    arrival = ArrivalModel.from_rates(
        cluster="Seren", timezone="+08:00", jobs_per_day={t: per_day * s / 100 for t, s in mix.items()},
        hour_weights=hour, dow_weights=[1, 1, 1, 1, 1, .55, .55],
        batch_size_pmf={"Eval": {1: .4, 2: .15, 4: .15, 10: .15, 30: .1, 60: .05}}, intra_batch_gap_s=3.0,
        gpu_counts=GpuCountModel.from_pmfs(pmfs), users=300)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        runtime = RuntimeModel().fit(load_sample())
    return arrival, runtime, None, "published Seren statistics (from_rates) + RuntimeModel fitted on the sample"


def _models():
    try:
        import acmemodel

        b = acmemodel.load_default()
        return b["arrival"], b["runtime"], b.get("restart"), "default bundle (acme-2023)"
    except Exception:  # noqa: BLE001 - the default bundle may not be installed yet
        return _fallback_models()


def child(days: float, out_dir: str, fmt: str = "acmetrace") -> dict:
    import pandas as pd

    from acmemodel.export import write
    from acmemodel.synth import simulate_jobs, to_acmetrace, write_acmetrace

    arrival, runtime, restart, source = _models()
    t0 = pd.Timestamp("2023-03-01").value / 1e9 - 8 * 3600
    expected_6m = arrival.expected_count(t0, t0 + SEREN_DAYS * 86400, cluster="Seren")
    scale = SEREN_JOBS / expected_6m
    base_rss = _current_rss_mb()
    t = time.perf_counter()
    jobs = simulate_jobs(arrival=arrival, runtime=runtime, restart=restart, days=days, cluster="Seren",
                         seed=1, scale=scale)
    t_sim = time.perf_counter() - t
    t = time.perf_counter()
    if fmt == "acmetrace":
        paths = [write_acmetrace(to_acmetrace(jobs, cluster="Seren"), os.path.join(out_dir, f"seren_{days:g}d.csv"))]
    else:
        paths = write(jobs, fmt, os.path.join(out_dir, fmt), cluster="Seren")["files"]
    t_write = time.perf_counter() - t
    size_mb = sum(os.path.getsize(p) for p in paths) / 1e6
    for p in paths:
        os.remove(p)
    peak = _rss_mb()
    return {"days": days, "rows": len(jobs), "sim_s": t_sim, "write_s": t_write, "total_s": t_sim + t_write,
            "peak_rss_mb": peak, "base_rss_mb": base_rss, "growth_mb": peak - base_rss, "csv_mb": size_mb,
            "scale": scale, "source": source, "format": fmt}


def timestamp_kernels(n: int = 1_000_000) -> list[tuple[str, float]]:
    """Seconds to format ``n`` timestamps (+08:00) with the package kernel and library baselines."""
    import numpy as np
    import pandas as pd

    from acmemodel.export._text import time_bytes

    rng = np.random.default_rng(0)
    sec = (1677600000 + np.sort(rng.uniform(0, 184 * 86400, n))).astype(np.int64)
    off = 8 * 3600

    def best(f, reps=3):
        out = []
        for _ in range(reps):
            t = time.perf_counter()
            f()
            out.append(time.perf_counter() - t)
        return min(out)

    def numpy_baseline():
        txt = np.datetime_as_string((sec + off).astype("datetime64[s]"), unit="s").astype("S19")
        return np.char.add(np.char.replace(txt, b"T", b" "), b"+08:00")

    ref = pd.to_datetime(sec, unit="s", utc=True).tz_convert("Asia/Shanghai")
    a = time_bytes(sec, offset_s=off, suffix="+08:00").view("S25").ravel()
    assert (a == numpy_baseline()).all() and a[0].decode() == ref[0].strftime("%Y-%m-%d %H:%M:%S+08:00")
    return [("time_bytes (day + clock lookup tables)", best(lambda: time_bytes(sec, offset_s=off, suffix="+08:00"))),
            ("numpy.datetime_as_string + S ops", best(numpy_baseline)),
            ("pandas strftime", best(lambda: ref.strftime("%Y-%m-%d %H:%M:%S+08:00"), reps=1))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--days", type=float, nargs="+", default=[30.0, 91.0, 182.0])
    ap.add_argument("--format", default="acmetrace", choices=["acmetrace", "swf", "helios", "philly", "batsim"])
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        with tempfile.TemporaryDirectory() as d:
            print(json.dumps(child(args.days[0], d, args.format)))
        return
    rows = []
    for days in args.days:
        r = subprocess.run([sys.executable, __file__, "--child", "--days", str(days), "--format", args.format],
                           capture_output=True, text=True, check=True)
        rows.append(json.loads(r.stdout.strip().splitlines()[-1]))
    print(f"models: {rows[0]['source']}; arrival scale {rows[0]['scale']:.3f} (Seren volume); "
          f"output format {args.format}")
    print(f"{'days':>5} {'rows':>10} {'sim_s':>7} {'write_s':>8} {'total_s':>8} {'csv_MB':>7} "
          f"{'peak_RSS_MB':>11} {'growth_MB':>9} {'KB/1k_rows':>10}")
    for r in rows:
        print(f"{r['days']:5.0f} {r['rows']:10,d} {r['sim_s']:7.2f} {r['write_s']:8.2f} {r['total_s']:8.2f} "
              f"{r['csv_mb']:7.1f} {r['peak_rss_mb']:11.0f} {r['growth_mb']:9.0f} "
              f"{1024 * r['growth_mb'] / max(r['rows'] / 1000, 1e-9):10.0f}")
    big = rows[-1]
    per_k = ", ".join("%.0f" % (1024 * r["growth_mb"] / (r["rows"] / 1000)) for r in rows)
    verdict = "within" if big["total_s"] <= 60 else "OVER"
    print(f"six-month target: {big['rows']:,} rows in {big['total_s']:.1f} s ({verdict} 60 s); "
          f"memory growth per 1k rows {per_k} KB (roughly constant = proportional to output)")
    kern = timestamp_kernels()
    print("timestamp formatting, 1,000,000 rows: " + "; ".join(
        f"{name} {sec:.3f} s ({sec / kern[0][1]:.1f}x)" for name, sec in kern))


if __name__ == "__main__":
    main()
