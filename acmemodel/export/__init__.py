"""Writers for the formats cluster simulators read.

:func:`write` dispatches on the format name; every writer takes the jobs DataFrame of the Trace
contract (or a ``Trace``; one row per job attempt — restart chains come from the chain columns or
:func:`acmemodel.features.chains.restart_chains`), writes into an output *directory* and adds a
sidecar ``README.md`` stating units, time zones, epochs, rounding and what was omitted.

==============  ==========================================================================  ===========
format          files                                                                       module
==============  ==========================================================================  ===========
``acmetrace``   ``trace_<cluster>.csv`` (Seren/Kalos schemas; reads back with load_trace)   acmetrace
``swf``         ``<cluster>.swf`` (SWF v2.2) + ``<cluster>_swf_jobs.csv`` id map             swf
``helios``      ``<Cluster>/cluster_log.csv`` + ``<Cluster>/vc_config.csv`` (Helios/Lucid)  helios
``philly``      ``<Cluster>/cluster_job_log`` (Philly JSON) + attempts CSV                  philly
``batsim``      ``<cluster>_workload.json`` (Batsim workload, delay profiles)               batsim
``airesim``     ``config.yaml`` (AIReSim Params from fitted failure/restart models)         airesim
==============  ==========================================================================  ===========

Every writer returns a dict: ``format``, ``out``, ``files``, ``clusters``, ``jobs`` (logical jobs:
restart chains count once), ``attempts`` (job rows written), ``restarts``, ``time_span``
(``start_utc``, ``end_utc``, ``seconds``), ``dropped`` (counts of rows left out, by reason),
``notes``.
"""
from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any, Callable

from acmemodel.export.acmetrace import write_acmetrace
from acmemodel.export.airesim import airesim_params, write_airesim
from acmemodel.export.batsim import write_batsim
from acmemodel.export.helios import write_helios
from acmemodel.export.philly import write_philly
from acmemodel.export.swf import write_swf

WRITERS: dict[str, Callable[..., dict]] = {
    "acmetrace": write_acmetrace,
    "swf": write_swf,
    "helios": write_helios,
    "philly": write_philly,
    "batsim": write_batsim,
    "airesim": write_airesim,
}
FORMATS: tuple[str, ...] = tuple(WRITERS)
#: formats whose readers hard-code an epoch, so ``rebase`` applies
REBASE_FORMATS: tuple[str, ...] = ("helios", "philly")


def options(fmt: str) -> list[str]:
    """The keyword options a format's writer accepts."""
    fn = _writer(fmt)
    names = [p.name for p in inspect.signature(fn).parameters.values()
             if p.kind == p.KEYWORD_ONLY]
    if fmt == "airesim":
        names += [p.name for p in inspect.signature(airesim_params).parameters.values()
                  if p.kind == p.KEYWORD_ONLY and p.name not in names and p.name != "jobs"]
    return names


def _writer(fmt: str) -> Callable[..., dict]:
    try:
        return WRITERS[str(fmt).lower()]
    except KeyError:
        raise ValueError(f"format must be one of {', '.join(FORMATS)}; got {fmt!r}") from None


def write(jobs: Any, fmt: str, out: str | Path, **opts: Any) -> dict[str, Any]:
    """Write ``jobs`` (a jobs DataFrame or a ``Trace``; may be None for ``airesim``) in format
    ``fmt`` into the directory ``out``; return the summary dict (module docstring).

    Options are those of the format's writer (``options(fmt)``); options set to ``None`` are
    ignored, unknown ones raise ``ValueError`` naming them. ``rebase`` only applies to formats whose
    readers hard-code an epoch (helios, philly).
    """
    fn = _writer(fmt)
    fmt = str(fmt).lower()
    opts = {k: v for k, v in opts.items() if v is not None}
    if opts.get("rebase") and fmt not in REBASE_FORMATS:
        raise ValueError(f"rebase applies to {', '.join(REBASE_FORMATS)} only (format {fmt!r} has no "
                         "hard-coded epoch)")
    if fmt not in REBASE_FORMATS:
        opts.pop("rebase", None)
    valid = set(options(fmt))
    unknown = sorted(set(opts) - valid)
    if unknown:
        raise ValueError(f"unknown option(s) for format {fmt!r}: {', '.join(unknown)} "
                         f"(valid: {', '.join(sorted(valid))})")
    if jobs is None and fmt != "airesim":
        raise ValueError(f"format {fmt!r} needs jobs to write")
    return fn(jobs, out, **opts)


__all__ = ["write", "options", "FORMATS", "WRITERS", "write_acmetrace", "write_swf", "write_helios",
           "write_philly", "write_batsim", "write_airesim", "airesim_params"]
