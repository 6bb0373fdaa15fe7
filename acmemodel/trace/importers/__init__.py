"""Importers: job logs of other schedulers and public GPU traces → the AcmeTrace columns.

``load_trace(paths, format=NAME)`` and ``acmemodel convert --from NAME IN... -o OUT`` use them; each
module documents its format, what it maps how and what it quarantines:

=========  =====================================================================================
name       reads
=========  =====================================================================================
slurm      ``sacct --parsable2`` output with a header (:mod:`.slurm`)
swf        Standard Workload Format v2.2 of the Parallel Workloads Archive (:mod:`.swf`)
helios     Helios / Lucid ``cluster_log.csv`` (:mod:`.helios`)
philly     Philly ``cluster_job_log`` JSON (:mod:`.philly`)
pai2020    Alibaba PAI 2020 ``pai_job_table`` / ``pai_task_table`` (:mod:`.pai2020`)
k8s        Kubernetes pod lists, e.g. Alibaba GPU 2023 ``openb_pod_list_*.csv`` (:mod:`.k8s`)
=========  =====================================================================================

Node failure logs are not job traces: ``acmemodel convert --from failures`` reads them with
:mod:`.failures` into uptime intervals (not through :func:`read`).
"""
from __future__ import annotations

import importlib

from acmemodel.formats import TRACE_IMPORTERS
from acmemodel.trace.importers._common import Imported, TypeMap  # noqa: F401

#: the job-trace formats (names registered in :data:`acmemodel.formats.TRACE_IMPORTERS`)
FORMATS: tuple[str, ...] = tuple(TRACE_IMPORTERS)


def read(format: str, path, *, timezone: str | None = None, type_map=None, origin=None,
         extracted_at=None) -> Imported:
    """Read one file of ``format`` (:data:`FORMATS`) into an :class:`Imported`.

    ``origin`` (time of second 0 of relative times) and ``extracted_at`` (the extraction time) are
    passed to the importers that use them (k8s); the others take the extraction time from the trace
    layer's censoring."""
    fmt = str(format).lower()
    if fmt not in FORMATS:
        raise ValueError(f"format: unknown trace format {format!r}; choose acmetrace or one of "
                         + ", ".join(FORMATS))
    import zlib

    from acmemodel.errors import TraceFormatError

    mod = importlib.import_module(TRACE_IMPORTERS[fmt])
    import inspect

    kw = {}
    params = inspect.signature(mod.read).parameters
    if "origin" in params:
        kw["origin"] = origin
    elif origin is not None:
        raise ValueError(f"origin: the {fmt} format has absolute times; --origin applies to k8s")
    if "extracted_at" in params:
        kw["extracted_at"] = extracted_at
    try:
        return mod.read(path, timezone=timezone, type_map=TypeMap.parse(type_map), **kw)
    except (EOFError, zlib.error) as e:  # damaged deflate data, a truncated gzip member
        raise TraceFormatError(f"{path}: damaged or truncated compressed data "
                               f"({str(e) or type(e).__name__})") from None
