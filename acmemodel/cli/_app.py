"""The typer application objects shared by the command modules.

Each command module (``describe.py``, ``fit.py``, ``evaluate_*.py``, ``plan.py``, ``synth.py``,
``export.py``...) imports ``app`` or ``evaluate_app`` from here and registers its commands. The groups
import a command's module when the command is first looked up (:data:`COMMANDS`), so a new command
module is also added there.
"""
from __future__ import annotations

import json
import sys
from collections.abc import MutableMapping
from typing import Any, Callable

import typer
import typer.core

#: ``-h`` as well as ``--help`` on every command
CONTEXT = {"help_option_names": ["-h", "--help"]}

#: command name -> the module of ``acmemodel.cli`` that registers it, in the order of ``--help``; a command
#: module is imported when its command runs (or ``--help`` lists it), not at start-up: ``acmemodel
#: checkpoint`` does not pay for the other commands' imports (tests/test_cli_lazy.py checks this map
#: against the commands the modules register)
COMMANDS = {name: name for name in ("calibrate", "checkpoint", "convert", "describe", "evalplan", "export", "fit",
                                    "forecast", "plan", "reproduce", "sweep", "synth")}
EVALUATE_COMMANDS = {"arrival": "evaluate_arrival", "failure": "evaluate_failure", "runtime": "evaluate_runtime"}


class _LazyCommands(MutableMapping):
    """The click commands of a group, built on first access: ``lazy`` maps a command name to the module of
    ``acmemodel.cli`` that registers it on the Typer app ``owner``; ``eager`` holds the commands typer has
    built (sub-groups). Names (and so ``--help``'s order and "did you mean") are known without imports."""

    def __init__(self, owner: Callable[[], Any], lazy: dict[str, str], eager: MutableMapping, markup: Any) -> None:
        self._owner, self._lazy, self._markup = owner, dict(lazy), markup
        self._built: dict[str, Any] = {}
        self._names = list(dict.fromkeys([*self._lazy, *eager]))
        for name, cmd in eager.items():  # (modules imported before the group was built: typer built them)
            if name in self._lazy and not getattr(cmd, "epilog", None) and _example_text(name):
                cmd.epilog = _example_text(name)
        self._built.update(eager)

    def __getitem__(self, name: str) -> Any:
        if name not in self._built:
            if name not in self._lazy:
                raise KeyError(name)
            import importlib

            from typer.main import get_command_from_info

            importlib.import_module(f"acmemodel.cli.{self._lazy[name]}")
            info = next((i for i in self._owner().registered_commands if (i.name or i.callback.__name__) == name),
                        None)
            if info is None:  # (tests/test_cli_lazy.py keeps the map and the modules in step)
                raise KeyError(name)
            _add_example(info)
            self._built[name] = get_command_from_info(
                info, pretty_exceptions_short=self._owner().pretty_exceptions_short, rich_markup_mode=self._markup)
        return self._built[name]

    def __setitem__(self, name: str, cmd: Any) -> None:
        self._built[name] = cmd
        if name not in self._names:
            self._names.append(name)

    def __delitem__(self, name: str) -> None:
        self._built.pop(name, None)
        self._lazy.pop(name, None)
        self._names.remove(name)

    def __iter__(self):
        return iter(list(self._names))

    def __len__(self) -> int:
        return len(self._names)

    def __contains__(self, name: object) -> bool:
        return name in self._names


def _lazy_group(owner: Callable[[], Any], lazy: dict[str, str]) -> type:
    """A :class:`typer.core.TyperGroup` whose commands are :class:`_LazyCommands` (``owner``: the Typer app
    the command modules register on; ``lazy``: command name -> module)."""

    class LazyGroup(typer.core.TyperGroup):
        def __init__(self, *args: Any, commands: Any = None, **kwargs: Any) -> None:
            super().__init__(*args, commands=commands, **kwargs)
            self.commands = _LazyCommands(owner, lazy, self.commands, self.rich_markup_mode)

    return LazyGroup


app = typer.Typer(
    name="acmemodel",
    help="Calibrated models and a planner for LLM-cluster job traces (AcmeTrace).",
    no_args_is_help=True,
    add_completion=True,  # --install-completion / --show-completion (bash, zsh, fish, PowerShell)
    pretty_exceptions_enable=False,
    context_settings=CONTEXT,
    cls=_lazy_group(lambda: app, COMMANDS),
)
evaluate_app = typer.Typer(
    help="Backtest models on a time-ordered holdout.", no_args_is_help=True,
    pretty_exceptions_enable=False, context_settings=CONTEXT,
    cls=_lazy_group(lambda: evaluate_app, EVALUATE_COMMANDS),
)

#: examples shown at the end of each command's ``--help`` (:func:`_add_example`)
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


def _example_text(name: str) -> str | None:
    """The help epilog of command ``name``: its :data:`EXAMPLES`, or None."""
    ex = EXAMPLES.get(name)
    return "Examples:\n\n" + "\n\n".join(f"  $ {e}" for e in ex) if ex else None


def _add_example(info) -> None:
    """Append :data:`EXAMPLES` to the help of a registered command that has none (an epilog)."""
    name = info.name or (info.callback.__name__ if info.callback else None)
    if not info.epilog:
        info.epilog = _example_text(name or "")


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
