"""The shipped sample trace (Seren + Kalos look-alikes in the exact AcmeTrace schemas), read through
:func:`~acmemodel.trace.load_trace`. The files themselves are data of :mod:`acmemodel.datasets`."""
from __future__ import annotations

from acmemodel.datasets import sample_paths
from acmemodel.trace.readers import load_trace
from acmemodel.trace.schema import Trace

__all__ = ["load_sample"]


def load_sample(cluster: str | None = None) -> Trace:
    """The shipped sample trace as a :class:`~acmemodel.trace.Trace` (both clusters by default)."""
    return load_trace(sample_paths(cluster))
