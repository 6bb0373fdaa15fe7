"""Peak memory of ``acmemodel describe`` (``load_trace`` + :func:`acmemodel.describe.describe`) of a
Seren-format CSV, against the memory of the raw Arrow table of the same file, both measured in this run.

Target (issue 34): describe of a 3M-job trace within 1.5x of the Arrow table's memory. Each side runs in a
fresh subprocess (peak RSS from ``resource.getrusage``, so every copy made on the way counts):

* ``arrow``: ``pyarrow.csv.read_csv`` of the file; ``table_mb`` = ``Table.nbytes``, and the child's peak RSS;
* ``describe``: the trace as ``acmemodel describe`` reads it (:func:`acmemodel.trace.stream.summarise_csv`: a
  large CSV in chunks of lines, only describe's columns kept; else ``load_trace(path)``) then
  ``describe(trace)``; peak RSS, and the RSS after the imports;
* ``whole``: ``load_trace(path)`` then ``describe(trace)`` (the whole read: the figure before the chunked read).

Printed ratios: describe's peak RSS / ``table_mb`` (the issue's figure) and / the raw read's own peak RSS.
``--baseline-src DIR`` also runs the describe child from another source tree (``PYTHONPATH=DIR``, e.g. an
export of main) in the same rounds, for before/after under the same load.

    python benchmarks/bench_describe.py [--rows 3000000] [--repeat 1] [--file PATH] [--baseline-src DIR]

Measured (issue 34; 3M rows, 360 MB CSV; 2-core machine shared with other jobs), before the chunked read:
``table_mb`` 314 MB, the raw read's peak RSS 1,134 MB; describe's peak RSS 1,638 MB (141 MB of it imports):
5.21x ``Table.nbytes``, 1.44x the raw read's peak. The peak was ``load_trace``'s full pandas frame plus
what the allocator keeps from the read. Now (``summarise_csv``: 23 chunks of 16 MiB, each through
``load_trace``, only describe's columns kept: about 37 bytes per job): peak RSS 440 MB = 1.40x
``Table.nbytes`` (0.39x the raw read's peak), 9.5 CPU s (the whole read: 1,556 MB = 4.95x, 7.7 CPU s).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from _child import MEASURE

CHILD = MEASURE + r"""
path, mode = sys.argv[1], sys.argv[2]

out = {}
if mode == "arrow":
    import pyarrow.csv as pc
    rss0 = rss_now(); c0 = cpu()
    t = time.perf_counter(); table = pc.read_csv(path); dt = time.perf_counter() - t
    out["table_mb"] = table.nbytes / 2**20
else:
    import warnings
    from acmemodel.describe import describe
    from acmemodel.trace import load_trace
    from acmemodel.trace.stream import summarise_csv
    warnings.simplefilter("ignore")
    rss0 = rss_now(); c0 = cpu()
    t = time.perf_counter()
    if mode == "whole":  # the whole read (every job's full row), as before issue 34
        trace = load_trace(path)
    else:  # as `acmemodel describe` reads it: in chunks of lines when the input is large
        trace = summarise_csv(path)
        out["chunks"] = getattr(trace, "chunks", 0)
        if trace is None:
            trace = load_trace(path)
    doc = describe(trace)
    dt = time.perf_counter() - t
    out["jobs"] = sum(c["jobs"] for c in doc["clusters"].values())
out.update(seconds=dt, cpu_s=cpu() - c0, import_rss_mb=rss0,
           peak_rss_mb=peak_rss())
print(json.dumps(out))
"""


def run(path: Path, mode: str, src: str | None = None) -> dict:
    env = dict(os.environ)
    if src:
        env["PYTHONPATH"] = src + os.pathsep + env.get("PYTHONPATH", "")
    out = subprocess.run([sys.executable, "-c", CHILD, str(path), "whole" if mode == "baseline" else mode],
                         check=True, capture_output=True, text=True, env=env, cwd=src or None)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    sys.path.insert(0, str(Path(__file__).parent))
    from bench_load import make_csv

    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=3_000_000)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--file", default=None, help="reuse this Seren CSV (written there first if missing)")
    ap.add_argument("--baseline-src", default=None, help="also run describe from this source tree")
    a = ap.parse_args()
    modes = ["arrow", "describe", "whole"] + (["baseline"] if a.baseline_src else [])
    with tempfile.TemporaryDirectory() as d:
        path = Path(a.file) if a.file else Path(d) / "seren_jobs.csv"
        if not path.exists():
            make_csv(path, a.rows)
        got: dict = {m: [] for m in modes}
        for i in range(a.repeat):
            for m in (modes if i % 2 == 0 else modes[::-1]):
                got[m].append(run(path, m, a.baseline_src if m == "baseline" else None))
    arrow = got["arrow"]
    table_mb = arrow[0]["table_mb"]
    raw_peak = min(r["peak_rss_mb"] for r in arrow)
    print(f"file rows={a.rows} size_mb={path.stat().st_size / 2**20 if a.file else float('nan'):.0f}")
    print(f"arrow read_csv table_mb={table_mb:.0f} peak_rss_mb={raw_peak:.0f} "
          f"seconds={min(r['seconds'] for r in arrow):.2f}")
    for m, label in (("describe", "describe"), ("whole", "describe of the whole read"),
                     ("baseline", "baseline describe")):
        if m not in got:
            continue
        peak = min(r["peak_rss_mb"] for r in got[m])
        print(f"{label} jobs={got[m][0]['jobs']} chunks={got[m][0].get('chunks', 0)} peak_rss_mb={peak:.0f} "
              f"import_rss_mb={got[m][0]['import_rss_mb']:.0f} seconds={min(r['seconds'] for r in got[m]):.2f} "
              f"cpu_s={min(r['cpu_s'] for r in got[m]):.2f}")
        print(f"  peak / arrow table = {peak / table_mb:.2f} (target <= 1.5); "
              f"peak / raw read's peak = {peak / raw_peak:.2f}")


if __name__ == "__main__":
    main()
