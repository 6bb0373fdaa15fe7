"""The typer application objects shared by the command modules.

Each command module (``describe.py``, ``fit.py``, ``evaluate_*.py``, ``plan.py``, ``synth.py``,
``export.py``...) imports ``app`` or ``evaluate_app`` from here and registers its commands.
"""
from __future__ import annotations

import json
import sys
from typing import Any

import typer

app = typer.Typer(
    name="acmemodel",
    help="Calibrated models and a planner for LLM-cluster job traces (AcmeTrace).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
evaluate_app = typer.Typer(
    help="Backtest models on a time-ordered holdout.", no_args_is_help=True,
    pretty_exceptions_enable=False,
)
app.add_typer(evaluate_app, name="evaluate")


def _version(value: bool) -> None:
    if value:
        from acmemodel import __version__

        sys.stdout.write(f"acmemodel {__version__}\n")
        raise typer.Exit()


@app.callback()
def _main(version: bool = typer.Option(False, "--version", help="Print the package version and exit.",
                                       callback=_version, is_eager=True)) -> None:
    """Calibrated models and a planner for LLM-cluster job traces (AcmeTrace)."""


def print_json(obj: Any) -> None:
    """Print ``obj`` as JSON on stdout (NaN/inf become null; floats rounded to 12 significant digits)."""
    sys.stdout.write(json.dumps(_clean(obj), indent=2, default=_default) + "\n")


def _default(o: Any) -> Any:
    import numpy as np
    import pandas as pd

    if isinstance(o, (np.integer,)):
        return int(o)
    if isinstance(o, (np.floating,)):
        return _clean(float(o))
    if isinstance(o, np.ndarray):
        return _clean(o.tolist())
    if isinstance(o, (pd.Timestamp,)):
        return o.isoformat()
    if isinstance(o, (np.bool_,)):
        return bool(o)
    return str(o)


def _clean(obj: Any) -> Any:
    import math

    if isinstance(obj, float):
        # 12 significant digits: no binary float noise (1200.0000000000002 -> 1200.0)
        return float(f"{obj:.12g}") if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {str(k): _clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_clean(v) for v in obj]
    return obj
