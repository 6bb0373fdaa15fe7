"""Run every hostile input of issue 33 ("No hang, no crash, no blow-up") through the real command line,
each in its own process under ``timeout 60`` and ``prlimit --as=4294967296`` (4 GB of address space),
and print one row per case: expected and actual exit status, stderr lines, wall seconds, peak resident
memory, and the verdict. A case passes when it ends in exit 0, or in exit 2 with stderr exactly one line
starting with ``error:``, within 60 s and 4 GB, without a signal, and with the status the case expects.

    python tools/hostile_33.py            # all cases (about 2 min on 2 cores)
    python tools/hostile_33.py -k slurm   # the cases whose name contains "slurm"
    python tools/hostile_33.py --json     # rows as JSON

Inputs are written to a temporary directory; nothing else is touched. The memory budget of the
commands is their own default (``ACMEMODEL_MEMORY_BUDGET`` is removed from their environment).
Exit status: 0 when every case passes, 1 otherwise.
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "acmemodel" / "planner" / "examples" / "example.yaml"
TIMEOUT_S = 60
CAP_BYTES = 4 * 2 ** 30
SACCT = "JobID|User|Partition|JobName|State|Submit|Start|End|AllocTRES\n"
SPAN_ROWS = ("9000001,us0001,1,1,16,SFT,COMPLETED,1970-01-02 07:06:07+08:00,1970-01-02 07:07:45+08:00,"
             "1970-01-02 07:08:41+08:00,56,98,56.0",
             "9000002,us0001,1,1,16,SFT,COMPLETED,2099-01-02 07:06:07+08:00,2099-01-02 07:07:45+08:00,"
             "2099-01-02 07:08:41+08:00,56,98,56.0")


def _seren_lines() -> list[str]:
    from acmemodel.datasets import sample_paths

    with gzip.open([p for p in sample_paths() if "seren" in p.name][0], "rt") as f:
        return f.read().splitlines()


def _self_loop_bundle(d: Path) -> Path:
    """A predictor bundle (``acmemodel fit --model predictor``) whose first LightGBM tree's root is its
    own left child."""
    out = d / "loop_bundle"
    subprocess.run([sys.executable, "-m", "acmemodel", "-q", "fit", "--model", "predictor", "-o", str(out)],
                   cwd=d, check=True, capture_output=True, timeout=600)
    art = sorted(out.glob("predictor.*.txt"))[0]
    lines = art.read_text().split("\n")
    i = next(k for k, ln in enumerate(lines) if ln.startswith("left_child="))
    kids = lines[i].split("=", 1)[1].split()
    kids[0] = "0"
    lines[i] = "left_child=" + " ".join(kids)
    art.write_text("\n".join(ln for ln in lines if not ln.startswith("tree_sizes=")))
    return out


def _inputs(d: Path) -> None:
    seren = _seren_lines()
    (d / "array.txt").write_text(
        SACCT + "7_[0-1000000]|u|p|j|PENDING|2023-03-01T00:00:00|Unknown|Unknown|\n"
        "1|u|p|j|COMPLETED|2023-03-01T00:00:00|2023-03-01T00:01:00|2023-03-01T01:00:00|gres/gpu=1\n")
    (d / "span_seren.csv").write_text("\n".join(seren + list(SPAN_ROWS)) + "\n")
    example = EXAMPLE.read_text()
    (d / "base.yaml").write_text(example.replace("replicas: 10000", "replicas: 50"))
    (d / "big_int.yaml").write_text(example.replace("gpus: 5632", "gpus: " + "9" * 400))
    (d / "grid_replicas.yaml").write_text("axes:\n  workload.replicas: {values: [1, 1e9]}\n")
    (d / "grid_replicas_int.yaml").write_text("axes:\n  workload.replicas: {values: [1, 1000000000]}\n")
    (d / "grid_num.yaml").write_text("axes:\n  workload.scale: {range: {start: 0.1, stop: 1, num: 1e9}}\n")
    (d / "grid_step.yaml").write_text("axes:\n  workload.scale: {range: {start: 0.1, stop: 1, step: 1e-12}}\n")
    (d / "grid_small.yaml").write_text("axes:\n  workload.scale: {values: [0.5, 1]}\n")
    raw = ("\n".join(seren) + "\n").encode()
    for where in (0.05, 0.9):
        g = bytearray(gzip.compress(raw))
        k = int(len(g) * where)
        for i in range(k, k + 64):
            g[i] ^= 0x55
        (d / f"damaged_{int(where * 100)}_seren.csv.gz").write_bytes(bytes(g))
    swf = "".join(f"{i} {i * 10} 5 100 8 -1 -1 8 200 -1 1 1 1 -1 1 -1 -1 -1\n" for i in range(1, 20_000))
    g = gzip.compress(swf.encode())
    (d / "truncated.swf.gz").write_bytes(g[: len(g) // 2])
    bad_submit = "".join(f"{k}|u|p|j|COMPLETED|{v}|2023-03-01T00:01:00|2023-03-01T01:00:00|gres/gpu=1\n"
                         for k, v in enumerate(["NaT", "now", "today", "2023-03-01T25:00:00", "1e30", "-1",
                                                "9999-12-31T23:59:59", "0001-01-01T00:00:00"], start=1))
    (d / "submit.txt").write_text(SACCT + bad_submit
                                  + "99|u|p|j|COMPLETED|2023-03-01T00:00:00|2023-03-01T00:01:00|"
                                    "2023-03-01T01:00:00|gres/gpu=1\n")
    (d / "header_seren.csv").write_text(seren[0] + "\n")
    (d / "x_seren.csv").write_text("\n".join(seren[:50]) + "\n")


API_NONE = """
from acmemodel.errors import TraceFormatError
from acmemodel.trace import load_trace
for bad in (None, 5, [None]):
    try:
        load_trace(bad)
    except TraceFormatError as e:
        msg = str(e)
    else:
        raise SystemExit("load_trace accepted " + repr(bad))
print(msg)
"""
API_BYTES = """
import os
from acmemodel.trace import load_trace
n = len(load_trace(os.fsencode("x_seren.csv")).jobs)
assert n == len(load_trace([os.fsencode("x_seren.csv")]).jobs) > 0
print(n, "jobs")
"""


def cases() -> list[tuple[str, str, list[str], int]]:
    """(name, the issue's words, argv after ``python -m acmemodel`` or ``python -c``, expected exit)."""
    nodes = ",".join(str(i) for i in range(1, 2001))
    return [
        ("slurm_array_1e6", "Slurm pending array 7_[0-1000000]",
         ["convert", "--from", "slurm", "array.txt", "-o", "array.csv"], 0),
        ("forecast_1970_2099", "forecast, one job in 1970 and one in 2099",
         ["forecast", "span_seren.csv", "--no-backtest"], 2),
        ("evalplan_2000_nodes", "evalplan with 2,000 node counts", ["evalplan", "--nodes", nodes], 2),
        # YAML 1.1 reads a bare 1e9 as the string '1e9': the point is reported failed ("must be a positive
        # integer, got '1e9'") and the other points run
        ("sweep_replicas_1e9", "sweep workload.replicas: [1, 1e9]",
         ["sweep", "base.yaml", "--grid", "grid_replicas.yaml", "-o", "s1.parquet"], 0),
        ("sweep_replicas_10**9", "sweep workload.replicas: [1, 1000000000]",
         ["sweep", "base.yaml", "--grid", "grid_replicas_int.yaml", "-o", "s2.parquet"], 2),
        ("bundle_tree_self_loop", "bundle whose LightGBM tree points to itself",
         ["synth", "--bundle", "loop_bundle", "--days", "1", "-o", "loop.csv"], 2),
        ("grid_num_1e9", "grid axis num: 1e9",
         ["sweep", "base.yaml", "--grid", "grid_num.yaml", "-o", "s3.parquet"], 2),
        ("grid_step_1e-12", "grid axis step: 1e-12",
         ["sweep", "base.yaml", "--grid", "grid_step.yaml", "-o", "s4.parquet"], 2),
        ("fit_130_years", "fit on a 130-year span", ["fit", "span_seren.csv", "-o", "span_bundle"], 2),
        ("arrival_130_years", "evaluate arrival on a 130-year span", ["evaluate", "arrival", "span_seren.csv"], 2),
        ("evalplan_dev_zero", "evalplan reading /dev/zero", ["evalplan", "/dev/zero"], 2),
        ("sweep_workers_1e5", "sweep --workers 100000",
         ["sweep", "base.yaml", "--grid", "grid_small.yaml", "-o", "s5.parquet", "--workers", "100000"], 2),
        ("reproduce_replicas_256", "reproduce --replicas without a memory estimate",
         ["reproduce", "--replicas", "256"], 2),
        ("reproduce_replicas_16", "reproduce --replicas 16 under the 4 GB cap (budget: half the cap)",
         ["reproduce", "--replicas", "16"], 2),
        ("config_400_digits", "400-digit integer in a config", ["plan", "big_int.yaml", "--no-cluster"], 2),
        ("csv_gz_damaged_early", "damaged .csv.gz deflate data (5 %)", ["describe", "damaged_5_seren.csv.gz"], 2),
        ("csv_gz_damaged_late", "damaged .csv.gz deflate data (90 %)", ["describe", "damaged_90_seren.csv.gz"], 2),
        ("swf_gz_truncated", "truncated gzip SWF",
         ["convert", "--from", "swf", "truncated.swf.gz", "-o", "swf.csv"], 2),
        ("slurm_unknown_submit", "Slurm Submit values the parser does not know",
         ["convert", "--from", "slurm", "submit.txt", "-o", "submit.csv"], 0),
        ("synth_gpus_1e30", "synth --queue sim --gpus 1e30",
         ["synth", "--queue", "sim", "--gpus", "1e30", "--days", "1", "-o", "g.csv"], 2),
        ("load_trace_none", "load_trace(None)", ["-c", API_NONE], 0),
        ("load_trace_bytes", "load_trace(bytes path)", ["-c", API_BYTES], 0),
    ] + [(f"header_only_csv_{k}", "header-only CSV under the address-space cap (repeat)",
          ["describe", "header_seren.csv"], 2) for k in range(1, 6)]


def run_case(d: Path, argv: list[str], env: dict) -> dict:
    py = [sys.executable] + (argv if argv[0] == "-c" else ["-m", "acmemodel", *argv])
    cmd = ["timeout", "--signal=KILL", str(TIMEOUT_S), "prlimit", f"--as={CAP_BYTES}", "--", *py]
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, cwd=d, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    err = p.stderr.read()
    _, status, ru = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    secs = time.perf_counter() - t0
    return {"rc": p.returncode, "stderr": err.decode("utf-8", "replace"), "seconds": secs,
            "peak_mb": ru.ru_maxrss / 1024.0}


def verdict(r: dict, expect: int) -> str:
    lines = [ln for ln in r["stderr"].splitlines() if ln.strip()]
    if r["rc"] == 124 or r["rc"] == 137 or r["rc"] == -9:
        return "HANG"
    if r["rc"] < 0 or r["rc"] > 128:
        return "SIGNAL"
    if r["seconds"] > TIMEOUT_S or r["peak_mb"] > CAP_BYTES / 2 ** 20:
        return "LIMIT"
    if r["rc"] == 2 and not (len(lines) == 1 and lines[0].startswith("error: ")):
        return "STDERR"
    if r["rc"] not in (0, 2):
        return f"EXIT{r['rc']}"
    return "ok" if r["rc"] == expect else "UNEXPECTED"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-k", default="", help="run only the cases whose name contains this")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--keep", action="store_true", help="keep the temporary directory")
    a = ap.parse_args(argv)
    env = {k: v for k, v in os.environ.items() if k != "ACMEMODEL_MEMORY_BUDGET"}
    env["COLUMNS"] = "80"
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    d = Path(tempfile.mkdtemp(prefix="hostile33-"))
    rows = []
    try:
        _inputs(d)
        todo = [c for c in cases() if a.k in c[0]]
        if any(c[0] == "bundle_tree_self_loop" for c in todo):
            _self_loop_bundle(d)
        if not a.json:
            print(f"{'case':<24} {'exp':>3} {'rc':>4} {'err':>3} {'s':>7} {'peak MB':>8} {'verdict':<10} message")
        for name, what, args, expect in todo:
            r = run_case(d, args, env)
            v = verdict(r, expect)
            lines = [ln for ln in r["stderr"].splitlines() if ln.strip()]
            rows.append({"case": name, "issue": what, "expect": expect, "rc": r["rc"], "stderr_lines": len(lines),
                         "seconds": round(r["seconds"], 2), "peak_mb": round(r["peak_mb"]), "verdict": v,
                         "message": lines[-1] if lines else ""})
            if not a.json:
                print(f"{name:<24} {expect:>3} {r['rc']:>4} {len(lines):>3} {r['seconds']:>7.1f} "
                      f"{r['peak_mb']:>8,.0f} {v:<10} {(lines[-1] if lines else '')[:60]}", flush=True)
    finally:
        if a.keep:
            print(f"inputs and outputs kept in {d}", file=sys.stderr)
        else:
            shutil.rmtree(d, ignore_errors=True)
    if a.json:
        print(json.dumps(rows, indent=1))
    else:
        bad = [r["case"] for r in rows if r["verdict"] != "ok"]
        print(f"\n{len(rows) - len(bad)} of {len(rows)} cases ok (exit 0, or exit 2 with one error: line; "
              f"within {TIMEOUT_S} s and {CAP_BYTES / 2 ** 30:.0f} GB)"
              + (f"; failing: {', '.join(bad)}" if bad else ""))
    return 0 if all(r["verdict"] == "ok" for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
