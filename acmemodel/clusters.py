"""Facts about the AcmeTrace clusters, in one place.

* :data:`CLUSTER_TZ` — the fixed UTC offset of each cluster's trace timestamps (Seren ``+08:00``,
  Kalos ``+00:00``; paper Table 1 / AcmeTrace README), :data:`CLUSTER_TZNAME` the matching IANA zone;
* :func:`cluster_info`, :func:`cluster_gpus`, :func:`cluster_table` — the hardware of the clusters
  (nodes, GPUs, GPUs and CPUs per node, scheduler, ...) read from the shipped reference table
  ``acmemodel/datasets/data/reference/clusters.csv`` (paper Table 1; provenance in
  ``datasets/data/PROVENANCE.md``): Seren 286 nodes × 8 = 2,288 GPUs, Kalos 302 × 8 = 2,416 GPUs;
* :func:`utc_offset_seconds` — the one parser of UTC offsets (``"+08:00"`` → 28800 s east of UTC);
* :func:`cluster_timezones` — the time zone of every cluster: the defaults, then a trace's, then the
  caller's.

Import-light: nothing of the package is imported at module level; the reference table is read
(through :mod:`acmemodel.datasets.published`) on first use.
"""
from __future__ import annotations

import functools
import math
import numbers
import re
from typing import Any, Mapping

__all__ = ["CLUSTER_TZ", "CLUSTER_TZNAME", "GPUS_PER_NODE", "utc_offset_seconds", "cluster_timezones",
           "cluster_table", "cluster_info", "cluster_gpus", "PUBLISHED_DURATION_INCLUDES_QUEUE",
           "published_duration_includes_queue"]

#: cluster → UTC offset of its trace timestamps (paper Table 1 / AcmeTrace README)
CLUSTER_TZ: dict[str, str] = {"Seren": "+08:00", "Kalos": "+00:00"}

#: cluster → IANA time-zone name of that offset (SWF ``TimeZoneString``; Seren's +08:00 is China time)
CLUSTER_TZNAME: dict[str, str] = {"Seren": "Asia/Shanghai", "Kalos": "UTC"}

#: clusters whose published ``duration`` and ``gpu_time`` count the queue (``end − submit``): Kalos. Trace
#: readers recompute both from the timestamps and count the rows so (``duration_includes_queue``); the
#: calibration and the reproduction compare with the published numbers on this basis.
PUBLISHED_DURATION_INCLUDES_QUEUE: frozenset[str] = frozenset({"Kalos"})


def published_duration_includes_queue(cluster: str) -> bool:
    """Whether ``cluster``'s published durations are ``end − submit`` (queue included) rather than
    ``end − start`` (:data:`PUBLISHED_DURATION_INCLUDES_QUEUE`; case-insensitive)."""
    return str(cluster).lower() in _INCLUDES_QUEUE_LOWER


_INCLUDES_QUEUE_LOWER = frozenset(c.lower() for c in PUBLISHED_DURATION_INCLUDES_QUEUE)


#: GPUs per node of both AcmeTrace clusters (8 × A100-SXM-80GB; ``clusters.csv``)
GPUS_PER_NODE = 8

_DAY_S = 86400
# optional UTC/GMT prefix, optional sign, then H, HH, H:MM, HH:MM or HHMM
_OFFSET_RE = re.compile(r"(?:UTC|GMT)?([+-]?)(?:(\d{1,2})(?::(\d{2}))?|(\d{2})(\d{2}))")


def utc_offset_seconds(offset: Any) -> int:
    """Seconds east of UTC of a fixed UTC offset.

    Accepts ``"+08:00"``, ``"-05:30"``, ``"+0800"``, ``"+8"``, ``"UTC+08:00"``, ``"Z"``, ``"UTC"``,
    ``"GMT"`` (case-insensitive, surrounding blanks ignored) or a number of seconds (``28800``).
    Raises ``ValueError`` naming the value for anything else, including offsets of a day or more.
    """
    if isinstance(offset, numbers.Real) and not isinstance(offset, bool):
        v = float(offset)
        if math.isfinite(v) and abs(v) < _DAY_S:
            return int(v)
    elif isinstance(offset, str):
        s = offset.strip().upper()
        if s in ("Z", "UTC", "GMT"):
            return 0
        m = _OFFSET_RE.fullmatch(s)
        if m:
            sign, h1, m1, h2, m2 = m.groups()
            hh, mm = int(h1 or h2), int(m1 or m2 or 0)
            if hh < 24 and mm < 60:
                return (-1 if sign == "-" else 1) * (hh * 3600 + mm * 60)
    raise ValueError(f"timezone must be a UTC offset like '+08:00', '+0800', 'Z', 'UTC' or seconds east "
                     f"of UTC (less than a day), got {offset!r}")


def cluster_timezones(trace_or_jobs: Any = None, timezones: Mapping[str, str] | None = None) -> dict[str, str]:
    """Cluster → UTC offset string: :data:`CLUSTER_TZ`, updated with ``trace_or_jobs.timezones`` (when
    it is a :class:`~acmemodel.trace.Trace`), then with ``timezones``. A new dict."""
    tzs = dict(CLUSTER_TZ)
    tzs.update(getattr(trace_or_jobs, "timezones", None) or {})
    tzs.update(timezones or {})
    return tzs


@functools.lru_cache(maxsize=None)
def _records() -> dict[str, dict[str, Any]]:
    """lower-cased cluster name → facts (plain Python values)."""
    from acmemodel.datasets.published import load_reference

    out = {}
    for rec in load_reference("clusters").to_dict("records"):
        rec = {k: (v.item() if hasattr(v, "item") else v) for k, v in rec.items()}
        name = str(rec.pop("cluster"))
        out[name.lower()] = {"name": name, **rec, "tz": str(rec["trace_timezone"]),
                             "tzname": CLUSTER_TZNAME.get(name)}
    return out


def cluster_table():
    """The published cluster table (``clusters.csv``) as a DataFrame indexed by ``cluster`` (a copy):
    ``nodes``, ``gpus``, ``gpus_per_node``, ``cpus_per_node``, ``host_memory_gb``,
    ``ib_200gbps_links_per_node``, ``scheduler``, ``trace_timezone``, ``gpu_model``."""
    from acmemodel.datasets.published import load_reference

    return load_reference("clusters").set_index("cluster")


def cluster_info(name: str) -> dict[str, Any] | None:
    """Published facts of a known cluster (``"Seren"``/``"Kalos"``, case-insensitive), or ``None``.

    Keys: ``name`` (canonical spelling), the columns of :func:`cluster_table` (``nodes``, ``gpus``,
    ``gpus_per_node``, ``cpus_per_node``, ``scheduler``, ``trace_timezone``, ...), ``tz`` (the trace
    offset, ``"+08:00"``) and ``tzname`` (IANA zone name). A new dict.
    """
    rec = _records().get(str(name).lower())
    return dict(rec) if rec is not None else None


def cluster_gpus(cluster: str) -> int:
    """Published GPU count of an AcmeTrace cluster (paper Table 1: Seren 2,288, Kalos 2,416).

    Raises ``ValueError`` naming the cluster when it is not a published one."""
    info = cluster_info(cluster)
    if info is None:
        raise ValueError(f"no published GPU count for cluster {cluster!r} (known: "
                         f"{', '.join(r['name'] for r in _records().values())}); pass the GPU count explicitly")
    return int(info["gpus"])
