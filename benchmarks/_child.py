"""What a benchmark's measured child process defines first (``CHILD = MEASURE + ...``; the scripts run as
``python benchmarks/bench_x.py``, so this folder is on the path): peak and current resident memory and CPU
time of that process."""

MEASURE = r"""
import json, os, resource, sys, time
def peak_rss():  # VmHWM of this process (MB); ru_maxrss would carry a large parent's peak over fork/exec
    with open("/proc/self/status") as f:
        return next(int(x.split()[1]) for x in f if x.startswith("VmHWM")) / 1024
def rss_now():  # current resident set (MB)
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
def cpu():  # CPU seconds (user + sys) of this process
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime
"""


def print_time_exponent(jobs, walls, cpus) -> None:
    """Print the exponent k of time ∝ jobs^k between the first and the last size measured (wall and CPU)."""
    import math

    if len(walls) > 1:
        n = math.log(jobs[-1] / jobs[0])
        print(f"time exponent of fit from {jobs[0]:,} to {jobs[-1]:,} jobs: {math.log(walls[-1] / walls[0]) / n:.2f} "
              f"(wall), {math.log(cpus[-1] / cpus[0]) / n:.2f} (CPU; the wall figure is only meaningful on a "
              "machine with the same load for both runs)")
