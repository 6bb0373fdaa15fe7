"""Start-up of the ``acmemodel`` command against ``python -c "import numpy"``, measured in this run.

Target (issue 34): ``acmemodel checkpoint ...`` wall ≤ 2× ``python -c "import numpy"``; ``--version`` and
``checkpoint`` start without pandas or scipy. Each command is a fresh process, run ``--repeat`` times
interleaved with the baseline (so that the load of a shared machine hits both alike); reported per command:
the median and the minimum wall time and the median CPU time (user + sys: steadier on a loaded machine),
their ratios to the baseline's, and which heavy libraries the process
imported (``python -X importtime``: pandas, scipy, lightgbm, pyarrow).

    python benchmarks/bench_startup.py [--repeat 7]

The commands: ``--version``; ``checkpoint`` with explicit parameters (``--mttf --restart``: no bundle); the
same with a Weibull shape (scipy.special for the Weibull scale); ``checkpoint`` with the default bundle (its
failure and restart models: the models' modules import pandas and scipy); ``--help``; ``plan --no-cluster``
(the planner imports pandas and scipy at module level). Each also reports its seconds of imports
(``-X importtime``, the top-level imports' cumulative times summed).

Measured (issue 34) on a 2-core machine shared with other jobs (load 6-9; ratios vary by a few tenths):
``--version`` 0.94x, ``checkpoint --mttf`` 1.52x (median; 1.80x of the minima), ``--json`` 1.40x, with
``--weibull-shape`` 2.87x (scipy.special for the Weibull scale), with the default bundle ~11x, ``--help``
1.61x. Before: ``checkpoint --mttf`` 3.09x -- typer 0.29 builds every option's converter through pydantic
(now ``typer < 0.29``) and every command module was imported at start-up (now each command's module is
imported when the command runs: ``acmemodel.cli._app.COMMANDS``). What remains over the baseline is
Python, numpy, typer (~25 ms of CPU), rich for the tables (~25 ms) and the planner's checkpoint modules.
"""
from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import time

BASELINE = [sys.executable, "-c", "import numpy"]
CLI = [sys.executable, "-m", "acmemodel"]
COMMANDS = {
    "--version": ["--version"],
    "checkpoint --mttf": ["checkpoint", "--gpus", "2048", "--ckpt-cost", "60s", "--mttf", "8h", "--restart", "20m"],
    "checkpoint --mttf --json": ["checkpoint", "--gpus", "2048", "--ckpt-cost", "60s", "--mttf", "8h",
                                 "--restart", "20m", "--json"],
    "checkpoint --weibull-shape": ["checkpoint", "--gpus", "2048", "--ckpt-cost", "60s", "--mttf", "8h",
                                   "--restart", "20m", "--weibull-shape", "0.8"],
    "checkpoint (default bundle)": ["checkpoint", "--gpus", "2048", "--ckpt-cost", "60s"],
    "--help": ["--help"],
    "plan --no-cluster": ["plan", "--no-cluster"],
}
HEAVY = ("pandas", "scipy", "lightgbm", "pyarrow")


def _wall(cmd: list[str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds: user + sys of the child) of one run of ``cmd``."""
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    dt = time.perf_counter() - t
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return dt, r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime


def _imports(cmd: list[str]) -> tuple[float, list[str]]:
    """(seconds of imports, the heavy top-level packages imported) of the command's process
    (``-X importtime`` on stderr: the cumulative times of the top-level imports summed)."""
    out = subprocess.run([cmd[0], "-X", "importtime", *cmd[1:]], check=True, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True).stderr
    rows = [line.split("|") for line in out.splitlines() if line.startswith("import time:")]
    names = {r[-1].strip() for r in rows}
    total = sum(int(r[1]) for r in rows if r[1].strip().isdigit() and not r[-1].startswith("  ")) / 1e6
    return total, [h for h in HEAVY if h in names]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=7)
    a = ap.parse_args()
    for cmd in (BASELINE, *(CLI + c for c in COMMANDS.values())):  # warm the file cache and the .pyc files
        _wall(cmd)
    base: list[tuple[float, float]] = []
    got: dict[str, list[tuple[float, float]]] = {k: [] for k in COMMANDS}
    for _ in range(a.repeat):
        for name, c in COMMANDS.items():
            base.append(_wall(BASELINE))
            got[name].append(_wall(CLI + c))
    bmed, bmin = statistics.median(w for w, _ in base), min(w for w, _ in base)
    bcpu = statistics.median(c for _, c in base)
    print(f"baseline python -c 'import numpy': median {bmed:.3f} s, min {bmin:.3f} s, CPU {bcpu:.3f} s "
          f"({len(base)} runs)")
    for name, c in COMMANDS.items():
        w = [x for x, _ in got[name]]
        cpu = statistics.median(x for _, x in got[name])
        imp, heavy = _imports(CLI + c)
        print(f"acmemodel {name:<28} median {statistics.median(w):.3f} s ({statistics.median(w) / bmed:.2f}x), "
              f"min {min(w):.3f} s ({min(w) / bmin:.2f}x), CPU {cpu:.3f} s ({cpu / bcpu:.2f}x); imports "
              f"{imp:.2f} s, heavy: {', '.join(heavy) or 'none'}")
    base_imp, _ = _imports(BASELINE)
    print(f"(the baseline's imports: {base_imp:.2f} s) target: checkpoint <= 2.00x the baseline; --version, "
          f"checkpoint and plan under 0.3 s of imports")


if __name__ == "__main__":
    main()
