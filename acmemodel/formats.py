"""The names of the input formats, in one light registry (no pandas, no pyarrow): the importers are
registered here by name and module, :func:`acmemodel.trace.importers.read` dispatches through it, and the
CLI builds its ``convert --from`` choices from it without importing an importer.

A new job-trace importer is a module of :mod:`acmemodel.trace.importers` with
``read(path, *, timezone, type_map[, origin, extracted_at]) -> Imported`` and one line in
:data:`TRACE_IMPORTERS`.
"""
from __future__ import annotations

#: job-trace importers: format name -> the module that reads it
TRACE_IMPORTERS: dict[str, str] = {
    "slurm": "acmemodel.trace.importers.slurm",
    "swf": "acmemodel.trace.importers.swf",
    "helios": "acmemodel.trace.importers.helios",
    "philly": "acmemodel.trace.importers.philly",
    "pai2020": "acmemodel.trace.importers.pai2020",
    "k8s": "acmemodel.trace.importers.k8s",
}
#: node failure logs (uptime intervals, not a job trace): ``acmemodel.trace.importers.failures``
FAILURE_LOG = "failures"
#: every name ``acmemodel convert --from`` takes
CONVERT_FORMATS: tuple[str, ...] = (*TRACE_IMPORTERS, FAILURE_LOG)
