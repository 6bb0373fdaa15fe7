"""Wall and CPU time of ``acmemodel calibrate`` by stage, with 1 worker (the baseline, measured in the same run)
and with N worker processes, and whether the two bundles are byte-identical.

Target (issue 33): the default calibration (``acmemodel calibrate -o DIR``, scale 1) under 5 min wall on 2 cores.
The machine this runs on may be shared: besides wall time, each stage's CPU seconds are printed (this process
plus its finished worker processes, ``os.times``), and the expected wall time on a quiet machine is estimated as
the stages' CPU seconds divided by the workers they kept busy (``cpu / max(1, cpu / wall)`` is what a loaded
machine shows; on a quiet one a stage takes ``cpu_main + cpu_workers / N``).

    python benchmarks/bench_calibrate.py [--scale 0.05] [--workers 2] [--set fixed_point_traces={...}]

Each run is a fresh subprocess calling :func:`acmemodel.calibrate.calibrate` (the same seed), stages from its
``progress``; RSS: the peak of the main process and of its largest worker (``/proc``, VmHWM).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from _child import MEASURE

CHILD = MEASURE + r"""
import ast, warnings
def kids():  # CPU seconds of the finished (waited-for) worker processes
    t = os.times()
    return t.children_user + t.children_system
def main():
    scale, workers, out = float(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    sets = dict(kv.split("=", 1) for kv in sys.argv[4:])
    warnings.simplefilter("ignore")
    from acmemodel.calibrate import Assumptions, calibrate
    a = Assumptions(**{k: ast.literal_eval(v) for k, v in sets.items()})
    stages, t0 = [], time.perf_counter()
    def progress(done, total, what):
        now = (time.perf_counter() - t0, cpu(), kids())
        if stages:
            stages[-1]["end"] = now
        stages.append({"stage": what, "start": now})
    b = calibrate(scale=scale, assumptions=a, workers=workers, progress=progress)
    total = (time.perf_counter() - t0, cpu(), kids())   # the pool is shut down: its workers are counted
    b.save(out)
    rows = [{"stage": s["stage"], "wall_s": s["end"][0] - s["start"][0], "cpu_main_s": s["end"][1] - s["start"][1]}
            for s in stages if "end" in s]
    print(json.dumps({"stages": rows, "wall_s": total[0], "cpu_main_s": total[1], "cpu_workers_s": total[2],
                      "peak_rss_mb": peak_rss()}))
if __name__ == "__main__":
    main()
"""


def run(scale: float, workers: int, out: Path, sets: list[str]) -> dict:
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:  # spawn needs a main module on disk
        f.write(CHILD)
    p = subprocess.run([sys.executable, f.name, str(scale), str(workers), str(out), *sets], check=True,
                       capture_output=True, text=True)
    Path(f.name).unlink()
    return json.loads(p.stdout.strip().splitlines()[-1])


def digest(path: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(path.rglob("*")):
        if p.is_file():
            h.update(p.name.encode() + p.read_bytes())
    return h.hexdigest()[:16]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--scale", type=float, default=0.05)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--set", action="append", default=[], help="assumption override name=value")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        got = {}
        for w in (1, a.workers):
            got[w] = run(a.scale, w, Path(tmp) / f"w{w}", a.set)
            g = got[w]
            print(f"calibrate scale={a.scale} workers={w}: wall {g['wall_s']:.1f} s, CPU {g['cpu_main_s']:.1f} s "
                  f"main + {g['cpu_workers_s']:.1f} s workers, peak RSS main {g['peak_rss_mb']:.0f} MB", flush=True)
            for s in g["stages"]:
                print(f"  {s['stage']:<40} wall {s['wall_s']:7.1f} s  CPU (main) {s['cpu_main_s']:7.1f} s")
        same = digest(Path(tmp) / "w1") == digest(Path(tmp) / f"w{a.workers}")
        b, f = got[1], got[a.workers]
        cpu_b, cpu_f = b["cpu_main_s"] + b["cpu_workers_s"], f["cpu_main_s"] + f["cpu_workers_s"]
        # quiet-machine estimate: the main process's CPU is serial, the workers' CPU splits over the workers
        est = f["cpu_main_s"] + f["cpu_workers_s"] / a.workers
        print(f"bundles byte-identical (1 vs {a.workers} workers): {same}")
        print(f"baseline (1 worker): wall {b['wall_s']:.1f} s, CPU {cpu_b:.1f} s; {a.workers} workers: wall "
              f"{f['wall_s']:.1f} s (x{b['wall_s'] / f['wall_s']:.2f}), CPU {cpu_f:.1f} s; expected wall on a quiet "
              f"{a.workers}-core machine ~{est:.0f} s")


if __name__ == "__main__":
    main()
