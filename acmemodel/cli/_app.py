"""The typer application objects shared by the command modules.

Each command module (``describe.py``, ``fit.py``, ``evaluate_*.py``, ``plan.py``, ``synth.py``,
``export.py``...) imports ``app`` or ``evaluate_app`` from here and registers its commands.
"""
from __future__ import annotations

import json
import sys
from typing import Any

import typer

#: ``-h`` as well as ``--help`` on every command
CONTEXT = {"help_option_names": ["-h", "--help"]}

app = typer.Typer(
    name="acmemodel",
    help="Calibrated models and a planner for LLM-cluster job traces (AcmeTrace).",
    no_args_is_help=True,
    add_completion=True,  # --install-completion / --show-completion (bash, zsh, fish, PowerShell)
    pretty_exceptions_enable=False,
    context_settings=CONTEXT,
)
evaluate_app = typer.Typer(
    help="Backtest models on a time-ordered holdout.", no_args_is_help=True,
    pretty_exceptions_enable=False, context_settings=CONTEXT,
)

#: examples shown at the end of each command's ``--help`` (:func:`add_examples`)
EXAMPLES: dict[str, list[str]] = {
    "describe": ["acmemodel describe", "acmemodel describe seren.csv.gz --json"],
    "fit": ["acmemodel fit seren.csv.gz kalos.csv.gz -o my-bundle", "acmemodel fit trace.csv -o b.zip --model runtime"],
    "synth": ["acmemodel synth -o synth.csv --days 7", "acmemodel synth -f helios -o helios_in --days 30",
              "acmemodel synth -f batsim --batsim-profile DelayProfile -o batsim5 --days 3"],
    "plan": ["acmemodel plan", "acmemodel plan my.yaml --report plan.html",
             "acmemodel plan --no-cluster --reliability meta-rsc1"],
    "checkpoint": ["acmemodel checkpoint --gpus 2048 --ckpt-cost 60s"],
    "sweep": ["acmemodel sweep base.yaml --grid grid.yaml -o sweep.parquet --plots plots/"],
    "evalplan": ["acmemodel evalplan --nodes 1,2,4,8 --policy both"],
    "export": ["acmemodel export -f helios -o helios_in --rebase-to Sept",
               "acmemodel export -f airesim -o airesim_in seren.csv.gz"],
    "convert": ["acmemodel convert --from slurm sacct.txt -o cluster.csv.gz",
                "sacct -P -a -o ALL | acmemodel convert --from slurm - -o - > cluster.csv"],
    "forecast": ["acmemodel forecast --days 30", "acmemodel forecast trace.csv --method ets --json"],
    "reproduce": ["acmemodel reproduce --scale 0.2", "acmemodel reproduce --bundle my-bundle --plots plots/"],
    "calibrate": ["acmemodel calibrate -o my-default"],
    "runtime": ["acmemodel evaluate runtime", "acmemodel evaluate runtime trace.csv --json"],
    "failure": ["acmemodel evaluate failure"],
    "arrival": ["acmemodel evaluate arrival --seed 1"],
}


def add_examples(typer_app) -> None:
    """Append :data:`EXAMPLES` to the help of the registered commands that have none (an epilog)."""
    for info in typer_app.registered_commands:
        name = info.name or (info.callback.__name__ if info.callback else None)
        ex = EXAMPLES.get(name or "")
        if ex and not info.epilog:
            info.epilog = "Examples:\n\n" + "\n\n".join(f"  $ {e}" for e in ex)
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
