"""acmemodel: calibrated statistical models and a planner for LLM-cluster job traces (AcmeTrace).

Top-level API::

    from acmemodel import load_trace, Trace
    trace = load_trace(["trace_seren.csv", "trace_kalos.csv"])
"""
from __future__ import annotations

from acmemodel._version import __version__  # noqa: E402,F401

from acmemodel.errors import (  # noqa: E402,F401
    AcmeModelError, BundleError, ConfigError, NotFittedError, TraceFormatError,
)


def __getattr__(name):  # lazy imports keep `import acmemodel` cheap
    if name in ("load_trace", "Trace"):
        from acmemodel import trace as _t

        return getattr(_t, name)
    if name == "load_default":
        from acmemodel.models.bundle import load_default

        return load_default
    if name == "Bundle":
        from acmemodel.models.bundle import Bundle

        return Bundle
    raise AttributeError(f"module 'acmemodel' has no attribute {name!r}")
