"""Up-front size checks: estimate the memory a request needs before doing the work, and refuse with the
estimate when it exceeds what the machine can hold (the commands' ``--yes`` insists).

Estimates are deliberately simple and stated here:

* a synthetic job (``synth``, the planner's workload) costs about :data:`BYTES_PER_JOB` bytes while it
  is generated (a DataFrame row of ~25 columns plus the per-type sampling intermediates; measured:
  peak memory of a 30-day minus a 3-day Seren synth, 160 MB / 152,000 jobs ≈ 1.05 kB); the number of
  jobs is the bundle arrival model's expected count over the first week × days / 7 × scale
  (:func:`expected_jobs`);
* a Monte Carlo run replica costs :data:`BYTES_PER_REPLICA` bytes (five float64 results, a flag and
  the per-failure-type loss and count arrays);
* the hourly calendar of the arrival model costs :data:`BYTES_PER_HOUR` per hour of the horizon and
  arrival cell;
* ``reproduce`` holds one replica's synthesis at a time (:data:`REPRODUCE_BYTES_PER_JOB` per job of that
  replica: the synthesised table, its trace-contract copy and the cluster simulation; measured 1.25 kB)
  plus every replica's pooled summary (:data:`BYTES_PER_POOLED_JOB` per pooled job: the ~60 bytes per GPU
  job that ``reproduction.compare.PooledJobs`` keeps and what the comparison allocates over them; measured:
  Seren at scale 0.02, 1 → 16 replicas, 252 → 272 MB for 309,000 more jobs, 65 bytes each) above
  :data:`REPRODUCE_BASE_BYTES` (:func:`reproduce_memory`);
* an exported node list (Philly ``detail``: one entry per machine and attempt) costs
  :data:`BYTES_PER_NODE_ENTRY`.

The budget is half the physical memory, at most half an address-space limit (:func:`memory_budget`;
``ACMEMODEL_MEMORY_BUDGET`` overrides). :func:`check_memory` raises
:class:`SizeError` (an :class:`~acmemodel.errors.AcmeModelError`, so the CLI prints one ``error:`` line
and exits 2).
"""
from __future__ import annotations

import math
import os

from acmemodel.errors import AcmeModelError

__all__ = ["SizeError", "memory_budget", "human_bytes", "check_memory", "expected_jobs", "reproduce_memory",
           "BYTES_PER_JOB", "BYTES_PER_REPLICA", "BYTES_PER_HOUR", "BYTES_PER_NODE_ENTRY",
           "REPRODUCE_BYTES_PER_JOB", "BYTES_PER_POOLED_JOB", "REPRODUCE_BASE_BYTES"]

BYTES_PER_JOB = 1_000
BYTES_PER_REPLICA = 600
BYTES_PER_HOUR = 64
BYTES_PER_NODE_ENTRY = 120
REPRODUCE_BYTES_PER_JOB = 1_250
BYTES_PER_POOLED_JOB = 100
REPRODUCE_BASE_BYTES = 220e6


class SizeError(AcmeModelError, ValueError):
    """A request whose estimated memory exceeds the budget (the message gives the estimate)."""


def memory_budget() -> int:
    """Half of the machine's physical memory in bytes (8 GiB when it cannot be read), and at most half
    of the process's address-space limit when one is set (``ulimit -v`` / ``prlimit --as``: the
    interpreter, its libraries and thread stacks take address space beyond the data); the environment
    variable ``ACMEMODEL_MEMORY_BUDGET`` (bytes) overrides both."""
    env = os.environ.get("ACMEMODEL_MEMORY_BUDGET")
    if env:
        try:
            return int(float(env))
        except ValueError:
            raise SizeError(f"ACMEMODEL_MEMORY_BUDGET must be a number of bytes, got {env!r}") from None
    try:
        budget = int(os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") // 2)
    except (AttributeError, ValueError, OSError):  # pragma: no cover - non-POSIX
        budget = 8 * 2 ** 30
    try:
        import resource

        cap = resource.getrlimit(resource.RLIMIT_AS)[0]
    except (ImportError, OSError, ValueError):  # pragma: no cover - non-POSIX
        cap = -1
    if cap not in (-1, getattr(resource, "RLIM_INFINITY", -1)) and cap > 0:
        budget = min(budget, cap // 2)
    return budget


def human_bytes(n: float) -> str:
    """``1.5 GB``-style size (powers of 1,000; ``inf`` for non-finite)."""
    if not math.isfinite(n):
        return "inf bytes"
    for unit in ("bytes", "kB", "MB", "GB", "TB", "PB", "EB"):
        if abs(n) < 1000 or unit == "EB":
            return f"{n:,.0f} {unit}" if unit == "bytes" else f"{n:,.1f} {unit}"
        n /= 1000.0
    return f"{n:.3g} EB"  # pragma: no cover


def check_memory(what: str, bytes_needed: float, *, detail: str = "", yes: bool = False,
                 insist: str = "--yes", budget: int | None = None) -> None:
    """Refuse (:class:`SizeError`) when ``bytes_needed`` exceeds ``budget`` (default
    :func:`memory_budget`) unless ``yes``; the message names ``what``, the estimate and ``detail``
    (e.g. ``"about 9.6e+12 jobs"``) and how to insist."""
    budget = memory_budget() if budget is None else int(budget)
    if yes or (math.isfinite(bytes_needed) and bytes_needed <= budget):
        return
    raise SizeError(f"{what} would need about {human_bytes(bytes_needed)} of memory"
                    + (f" ({detail})" if detail else "")
                    + f", more than the {human_bytes(budget)} allowed (half of this machine's memory or of "
                      f"the address-space limit, or ACMEMODEL_MEMORY_BUDGET); "
                      f"make it smaller or pass {insist} to run anyway")


def expected_jobs(arrival, cluster: str, days: float, scale: float = 1.0) -> float:
    """Expected number of jobs a bundle's arrival model generates for ``cluster`` over ``days`` at
    ``scale`` (the first week's expected count, pro rata; the trend is ignored)."""
    import pandas as pd

    from acmemodel.models.arrival import to_unix_seconds

    t0 = float(to_unix_seconds(pd.Timestamp("2023-03-01", tz="UTC")))
    week = float(arrival.expected_count(t0, t0 + 7 * 86400.0, cluster=cluster))
    return week / 7.0 * float(days) * float(scale)


def reproduce_memory(jobs_per_replica: dict, replicas: dict) -> tuple[float, str]:
    """(bytes, description) of ``reproduce``'s peak: :data:`REPRODUCE_BASE_BYTES` + the largest replica's
    jobs × :data:`REPRODUCE_BYTES_PER_JOB` (replicas are synthesised one at a time) + all pooled jobs ×
    :data:`BYTES_PER_POOLED_JOB`. ``jobs_per_replica``: {cluster: expected jobs of one replica};
    ``replicas``: {cluster: R}."""
    one = max(jobs_per_replica.values(), default=0.0)
    pooled = sum(n * replicas.get(c, 1) for c, n in jobs_per_replica.items())
    need = REPRODUCE_BASE_BYTES + one * REPRODUCE_BYTES_PER_JOB + pooled * BYTES_PER_POOLED_JOB
    return need, (f"one replica of about {one:,.0f} synthetic jobs at a time, {REPRODUCE_BYTES_PER_JOB:,} bytes "
                  f"each, and {pooled:,.0f} pooled jobs at {BYTES_PER_POOLED_JOB:,} bytes")
