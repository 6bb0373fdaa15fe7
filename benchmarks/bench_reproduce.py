"""Peak memory of ``reproduce`` at 1, 4 and 16 replicas (small scale), measured in this run.

Target (issue 34): the peak memory of ``reproduce`` does not grow with ``--replicas`` (±20 % between 1
and 16 replicas). Each run is a fresh subprocess calling :func:`acmemodel.reproduction.run.reproduce` with the
shipped bundle; reported per run: peak RSS (``resource.getrusage``), the RSS after the imports, the
growth of the peak over it, CPU time (user + sys) and wall time; then the ratio of the peaks (16 / 1).

    python benchmarks/bench_reproduce.py [--scale 0.02] [--replicas 1 4 16] [--clusters Seren]

Replicas are streamed (``reproduction.compare.PooledJobs``): measured on a loaded 2-core machine, Seren at
scale 0.02: 252 / 263 / 272 MB at 1 / 4 / 16 replicas (ratio 1.08; 254 / 269 / 352 MB, 1.39, when each
replica was kept as compact columns; 217 → 531 MB before streaming).
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys

from _child import MEASURE

CHILD = MEASURE + r"""
import warnings
scale, reps, clusters = float(sys.argv[1]), int(sys.argv[2]), tuple(sys.argv[3].split(","))
warnings.simplefilter("ignore")
from acmemodel.reproduction.run import reproduce
from acmemodel.synth import resolve_bundle
b = resolve_bundle(None)
rss0, c0, t0 = rss_now(), cpu(), time.perf_counter()
doc = reproduce(b, scale=scale, replicas=reps, clusters=clusters)
print(json.dumps({"seconds": time.perf_counter() - t0, "cpu_s": cpu() - c0, "base_rss_mb": rss0,
                  "peak_rss_mb": peak_rss()}))
"""


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--scale", type=float, default=0.02)
    ap.add_argument("--replicas", type=int, nargs="+", default=[1, 4, 16])
    ap.add_argument("--clusters", default="Seren")
    a = ap.parse_args()
    got = {}
    for r in a.replicas:
        out = subprocess.run([sys.executable, "-c", CHILD, str(a.scale), str(r), a.clusters], check=True,
                             capture_output=True, text=True)
        got[r] = json.loads(out.stdout.strip().splitlines()[-1])
        g = got[r]
        print(f"reproduce scale={a.scale} clusters={a.clusters} replicas={r} peak_rss_mb={g['peak_rss_mb']:.0f} "
              f"after_imports_mb={g['base_rss_mb']:.0f} growth_mb={g['peak_rss_mb'] - g['base_rss_mb']:.0f} "
              f"cpu_s={g['cpu_s']:.1f} s={g['seconds']:.1f}", flush=True)
    lo, hi = min(a.replicas), max(a.replicas)
    print(f"peak ratio replicas {hi}/{lo} = {got[hi]['peak_rss_mb'] / got[lo]['peak_rss_mb']:.2f} "
          f"(target within 0.8-1.2); growth ratio = "
          f"{(got[hi]['peak_rss_mb'] - got[hi]['base_rss_mb']) / (got[lo]['peak_rss_mb'] - got[lo]['base_rss_mb']):.2f}")


if __name__ == "__main__":
    main()
