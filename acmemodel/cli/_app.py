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


#: ``-q`` / ``-v`` of the current invocation and the Python warnings raised so far (:func:`warning_notes`)
STATE: dict[str, Any] = {"quiet": False, "verbose": False, "warnings": None}


@app.callback()
def _main(version: bool = typer.Option(False, "--version", help="Print the package version and exit.",
                                       callback=_version, is_eager=True),
          quiet: bool = typer.Option(False, "--quiet", "-q", help="No summary of the models' warnings."),
          verbose: bool = typer.Option(False, "--verbose", "-v",
                                       help="Print every distinct warning of the models.")) -> None:
    """Calibrated models and a planner for LLM-cluster job traces (AcmeTrace)."""
    STATE["quiet"], STATE["verbose"] = bool(quiet), bool(verbose)


def warning_notes(caught) -> list[str]:
    """One sentence per source (model or library) of the recorded warnings ``caught``: how many, their
    category and the first message -- instead of one raw ``file:line: Warning`` block per warning."""
    import re
    from pathlib import PurePath

    groups: dict[str, list] = {}
    for w in caught or []:
        msg = str(w.message).strip().splitlines()[0] if str(w.message).strip() else w.category.__name__
        m = re.match(r"([A-Z][A-Za-z0-9]+):\s", msg)
        if m:
            who = m.group(1)
        else:
            parts = PurePath(str(w.filename)).parts
            who = (parts[parts.index("site-packages") + 1] if "site-packages" in parts and
                   parts.index("site-packages") + 1 < len(parts) else PurePath(str(w.filename)).stem)
        groups.setdefault(who, []).append((w.category.__name__, msg))
    out = []
    for who, items in sorted(groups.items()):
        cats = sorted({c for c, _ in items})
        distinct = list(dict.fromkeys(m for _, m in items))
        first = distinct[0] if len(distinct[0]) <= 110 else distinct[0][:107] + "..."
        out.append(f"{who}: {len(distinct):,} warning(s) ({', '.join(cats)}), e.g. {first}")
    return out


def print_json(obj: Any) -> None:
    """Print ``obj`` as JSON on stdout (NaN/inf become null; floats rounded to 12 significant digits); a
    mapping gets the models' warnings so far (:func:`warning_notes`) as ``warnings`` unless it has them."""
    caught = STATE.get("warnings")
    if isinstance(obj, dict) and caught and "warnings" not in obj:
        obj = {**obj, "warnings": warning_notes(caught)}
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
