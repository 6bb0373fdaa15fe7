"""Helpers shared by the CLI commands: trace loading, rich console. (Durations:
:func:`acmemodel.planner.config.parse_duration`.)"""
from __future__ import annotations

from pathlib import Path

from rich.console import Console

console = Console()
err_console = Console(stderr=True)


def load_traces(paths: list[Path], cluster: str | None = None):
    """Load trace files for a command; with no paths, the shipped sample."""
    import warnings

    from acmemodel.errors import DataWarning
    from acmemodel.trace import load_trace

    if not paths:
        from acmemodel.datasets import sample_paths

        paths = sample_paths()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)  # reported by the commands themselves
        return load_trace(paths, cluster=cluster)
