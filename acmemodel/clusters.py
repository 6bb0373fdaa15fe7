"""Facts about the AcmeTrace clusters, in one place.

* :data:`CLUSTER_TZ` — the fixed UTC offset of each cluster's trace timestamps (Seren ``+08:00``,
  Kalos ``+00:00``; paper Table 1 / AcmeTrace README), :data:`CLUSTER_TZNAME` the matching IANA zone;
* :func:`cluster_info`, :func:`cluster_gpus`, :func:`cluster_table` — the hardware of the clusters
  (nodes, GPUs, GPUs and CPUs per node, scheduler, ...) read from the shipped reference table
  ``acmemodel/datasets/data/reference/clusters.csv`` (paper Table 1; provenance in
  ``datasets/data/PROVENANCE.md``): Seren 286 nodes × 8 = 2,288 GPUs, Kalos 302 × 8 = 2,416 GPUs;
* :func:`utc_offset_seconds` — the one parser of UTC offsets (``"+08:00"`` → 28800 s east of UTC);
* :func:`cluster_timezones` — the time zone of every cluster: the defaults, then a trace's, then the
  caller's;
* :class:`ClusterSpec` — a cluster as data (name, GPUs, GPUs per node, time zone, partitions): what
  ``convert`` writes beside a trace (:func:`write_sidecar`, ``<trace>.cluster.yaml``; Parquet schema
  metadata :data:`PARQUET_KEY`), ``load_trace`` reads back (``Trace.cluster_specs``), ``fit`` stores in
  the bundle and every command uses. Acme's Seren and Kalos are two entries of the same kind
  (:func:`acme_cluster`, :func:`acme_clusters`); no command falls back to them for another cluster.

Import-light: nothing of the package is imported at module level; the reference table is read
(through :mod:`acmemodel.datasets.published`) on first use.
"""
from __future__ import annotations

import functools
import math
import numbers
import re
from dataclasses import dataclass
from typing import Any, Mapping

__all__ = ["CLUSTER_TZ", "CLUSTER_TZNAME", "GPUS_PER_NODE", "utc_offset_seconds", "zone_offsets", "cluster_timezones",
           "cluster_table", "cluster_info", "cluster_gpus", "PUBLISHED_DURATION_INCLUDES_QUEUE",
           "published_duration_includes_queue", "ClusterSpec", "acme_cluster", "acme_clusters", "sidecar_path",
           "write_sidecar", "read_cluster_file", "spec_from_parquet_metadata", "SIDECAR_SUFFIX", "PARQUET_KEY"]

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
    ``"GMT"`` (case-insensitive, surrounding blanks ignored) or a number of seconds (``28800``); an
    IANA zone name (``US/Pacific``, a trace whose zone is named, e.g. an SWF ``TimeZoneString``) gives
    its standard offset — per-instant, DST-aware offsets are :func:`zone_offsets`.
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
        zone = _zone(offset.strip())
        if zone is not None:  # an IANA zone name: its standard (non-DST) offset; see zone_offsets
            return _standard_offset(zone)
    raise ValueError(f"timezone must be a UTC offset like '+08:00', '+0800', 'Z', 'UTC' or seconds east "
                     f"of UTC (less than a day), got {offset!r}")


@functools.lru_cache(maxsize=64)
def _zone(name: str):
    """The ``zoneinfo.ZoneInfo`` of an IANA zone name (``US/Pacific``), or None."""
    if "/" not in name:
        return None
    try:
        from zoneinfo import ZoneInfo

        return ZoneInfo(name)
    except Exception:  # noqa: BLE001 (not a zone name)
        return None


def _standard_offset(zone) -> int:
    """Seconds east of UTC of a zone's standard time (its January or July offset without DST)."""
    import datetime as dt

    offs = []
    for month in (1, 7):
        d = dt.datetime(2001, month, 1, tzinfo=zone)
        offs.append(int((d.utcoffset() - (d.dst() or dt.timedelta(0))).total_seconds()))
    return offs[0]


def zone_offsets(tz: Any, unix_s) -> "np.ndarray":
    """Seconds east of UTC of ``tz`` at each instant ``unix_s`` (float Unix seconds, NaN kept).

    ``tz`` is a fixed offset (anything :func:`utc_offset_seconds` reads: the same offset everywhere)
    or an IANA zone name (``US/Pacific``): then the offset follows the zone's rules, daylight saving
    included (zoneinfo), e.g. −7 h before and −8 h after 1993-10-31 09:00 UTC in US/Pacific. A zone
    name given where one fixed offset is needed (:func:`utc_offset_seconds`) stands for its standard
    offset."""
    import numpy as np
    import pandas as pd

    t = np.asarray(unix_s, dtype=float)
    zone = _zone(tz.strip()) if isinstance(tz, str) else None
    if zone is None:
        return np.where(np.isfinite(t), float(utc_offset_seconds(tz)), np.nan)
    out = np.full(t.shape, np.nan)
    ok = np.isfinite(t)
    if ok.any():
        ts = pd.to_datetime(t[ok], unit="s", utc=True).tz_convert(zone)
        out[ok] = ts.tz_localize(None).asi8 / 1e9 - t[ok]
    return out


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


# ------------------------------------------------------------------------------ cluster descriptions
#: file-name suffix of the description written beside a CSV trace (``mycluster.csv`` →
#: ``mycluster.csv.cluster.yaml``)
SIDECAR_SUFFIX = ".cluster.yaml"
#: key of the description in a Parquet trace's schema metadata (JSON of :meth:`ClusterSpec.to_dict`)
PARQUET_KEY = b"acmemodel.cluster"


@dataclass(frozen=True)
class ClusterSpec:
    """What is known about one cluster: the description a trace carries from ``convert`` to ``plan``.

    Attributes
    ----------
    name : the cluster's name as the user gave it (the ``cluster`` column of its trace).
    gpus : total GPUs (``None``: unknown — no command invents it; caps that need it say so).
    gpus_per_node : GPUs per node (``None``: unknown).
    timezone : UTC offset of the cluster's local time, ``"+08:00"`` (calendar features, exports).
    tzname : IANA zone of that local time when known (``"Asia/Shanghai"``), else ``None``.
    partitions : partition (queue, virtual cluster) names seen in the log or given, in order.
    duration_includes_queue : whether the cluster's *published* ``duration`` counts the queue
        (``end − submit``; only Kalos). Files written by ``convert`` always write ``end − start``.
    source : where the figures come from (``"published: AcmeTrace paper Table 1"``, ``"convert
        --gpus"``, ``"SWF header MaxProcs"``, ...).

    ``nodes`` is ``gpus / gpus_per_node`` when both are known.
    """

    name: str
    gpus: int | None = None
    gpus_per_node: int | None = None
    timezone: str = "+00:00"
    tzname: str | None = None
    partitions: tuple[str, ...] = ()
    duration_includes_queue: bool = False
    source: str = ""

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name.strip():
            raise ValueError(f"name: expected a non-empty cluster name, got {self.name!r}")
        for f in ("gpus", "gpus_per_node"):
            v = getattr(self, f)
            if v is not None and (isinstance(v, bool) or not isinstance(v, numbers.Integral) or v <= 0):
                raise ValueError(f"{f}: expected a positive whole number, got {v!r}")
        if self.gpus is not None and self.gpus_per_node is not None and self.gpus % self.gpus_per_node:
            raise ValueError(f"gpus: {self.gpus:,} GPUs is not a whole number of {self.gpus_per_node}-GPU nodes")
        utc_offset_seconds(self.timezone)  # (ValueError naming the value)
        object.__setattr__(self, "partitions", tuple(str(p) for p in self.partitions))

    @property
    def nodes(self) -> int | None:
        """Nodes (``gpus / gpus_per_node``) when both are known, else ``None``."""
        if self.gpus is None or self.gpus_per_node is None:
            return None
        return self.gpus // self.gpus_per_node

    def to_dict(self) -> dict[str, Any]:
        """JSON/YAML-safe dict (``partitions`` a list); :meth:`from_dict` reads it back."""
        d = {"name": self.name, "gpus": self.gpus, "gpus_per_node": self.gpus_per_node, "nodes": self.nodes,
             "timezone": self.timezone, "tzname": self.tzname, "partitions": list(self.partitions),
             "duration_includes_queue": self.duration_includes_queue, "source": self.source}
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], where: str = "cluster") -> "ClusterSpec":
        """A description from :meth:`to_dict`'s keys (``nodes`` is derived and ignored; unknown keys are
        errors). ``ValueError`` naming ``where`` and the field."""
        if not isinstance(d, Mapping):
            raise ValueError(f"{where}: expected a mapping of cluster fields, got {type(d).__name__}")
        known = {"name", "gpus", "gpus_per_node", "nodes", "timezone", "tzname", "partitions",
                 "duration_includes_queue", "source"}
        bad = sorted(set(map(str, d)) - known)
        if bad:
            raise ValueError(f"{where}: unknown field(s) {', '.join(bad)} (known: {', '.join(sorted(known))})")
        kw = {k: d[k] for k in known - {"nodes"} if k in d and d[k] is not None}
        parts = kw.get("partitions", ())
        if isinstance(parts, (str, bytes)) or not isinstance(parts, (list, tuple)):
            raise ValueError(f"{where}.partitions: expected a list of names, got {parts!r}")
        for f in ("gpus", "gpus_per_node"):
            if f in kw and isinstance(kw[f], float) and kw[f].is_integer():
                kw[f] = int(kw[f])
        if "timezone" in kw:
            kw["timezone"] = str(kw["timezone"])
        try:
            spec = cls(**kw)
        except (TypeError, ValueError) as e:
            raise ValueError(f"{where}.{e}") from None
        n = d.get("nodes")
        if n is not None and spec.nodes is not None and n != spec.nodes:
            raise ValueError(f"{where}.nodes: {n!r} contradicts gpus / gpus_per_node = {spec.nodes}")
        return spec


def acme_cluster(name: str) -> ClusterSpec | None:
    """The published description of an AcmeTrace cluster (``"Seren"``/``"Kalos"``, case-insensitive;
    paper Table 1), or ``None`` for any other name. The default bundle carries both."""
    info = cluster_info(name)
    if info is None:
        return None
    return ClusterSpec(name=info["name"], gpus=int(info["gpus"]), gpus_per_node=int(info["gpus_per_node"]),
                       timezone=info["tz"], tzname=info["tzname"],
                       duration_includes_queue=published_duration_includes_queue(info["name"]),
                       source="published: AcmeTrace paper Table 1 (clusters.csv)")


def acme_clusters() -> dict[str, ClusterSpec]:
    """Seren and Kalos, the clusters of the default bundle, as :class:`ClusterSpec` (name → spec)."""
    return {r["name"]: acme_cluster(r["name"]) for r in _records().values()}


def sidecar_path(trace_path: Any) -> "Path":
    """Where the description of a CSV trace is written: ``<trace file>.cluster.yaml``."""
    from pathlib import Path

    p = Path(trace_path)
    return p.with_name(p.name + SIDECAR_SUFFIX)


def write_sidecar(spec: ClusterSpec, trace_path: Any) -> "Path":
    """Write ``spec`` as YAML beside the CSV trace ``trace_path``; returns the sidecar's path."""
    import yaml

    path = sidecar_path(trace_path)
    text = ("# acmemodel cluster description of " + path.name[: -len(SIDECAR_SUFFIX)]
            + " (written by acmemodel convert; edit gpus/gpus_per_node/partitions if you know better)\n"
            + yaml.safe_dump(spec.to_dict(), sort_keys=False, allow_unicode=True))
    path.write_text(text, encoding="utf-8")
    return path


def read_cluster_file(path: Any) -> ClusterSpec:
    """A description from a YAML file (a sidecar, or a file given by the user). ``ValueError`` naming
    the file and the field."""
    import yaml

    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise ValueError(f"{path}: cannot read the cluster description ({e.strerror or e})") from None
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise ValueError(f"{path}: not YAML ({str(e).splitlines()[0]})") from None
    return ClusterSpec.from_dict(doc, where=str(path))


def spec_from_parquet_metadata(metadata: Mapping[bytes, bytes] | None, where: str) -> ClusterSpec | None:
    """The description stored under :data:`PARQUET_KEY` in a Parquet schema's metadata, or ``None``."""
    import json

    if not metadata or PARQUET_KEY not in metadata:
        return None
    try:
        doc = json.loads(metadata[PARQUET_KEY].decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise ValueError(f"{where}: Parquet metadata {PARQUET_KEY.decode()} is not JSON") from None
    return ClusterSpec.from_dict(doc, where=f"{where}: metadata {PARQUET_KEY.decode()}")
