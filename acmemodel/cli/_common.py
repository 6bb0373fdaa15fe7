"""Helpers shared by the CLI commands: trace loading, duration parsing, rich console."""
from __future__ import annotations

import re
from pathlib import Path

from rich.console import Console

from acmemodel.errors import ConfigError

console = Console()
err_console = Console(stderr=True)

_DUR = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][-+]?\d+)?)\s*([smhdw]?)\s*$")
_UNITS = {"": 1.0, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, "w": 604800.0}


def parse_duration(text: str, name: str = "duration") -> float:
    """``"60s"``, ``"20m"``, ``"8h"``, ``"30d"``, ``"90"`` (seconds) → seconds (float).

    Raises :class:`~acmemodel.errors.ConfigError` naming the option on bad input.
    """
    m = _DUR.match(str(text))
    if not m:
        raise ConfigError(f"{name}: cannot read {text!r} as a duration (use e.g. 60s, 20m, 8h, 30d)")
    return float(m.group(1)) * _UNITS[m.group(2)]


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
