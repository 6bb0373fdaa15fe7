"""The CLI's command modules are imported when their command runs, not at start-up (issue 34): the map of
command name -> module in :mod:`acmemodel.cli._app` must name every command the modules register, in the
order of ``--help``, and a command must not import the others' modules or the heavy libraries."""
from __future__ import annotations

import importlib
import json
import subprocess
import sys
from pathlib import Path

import acmemodel.cli as cli
from acmemodel.cli._app import COMMANDS, EVALUATE_COMMANDS, app, evaluate_app

CLI_DIR = Path(cli.__file__).parent


def _registered(typer_app) -> list[str]:
    return [i.name or i.callback.__name__ for i in typer_app.registered_commands]


def test_the_map_names_every_registered_command_in_order():
    """Every command module imported (eagerly) registers exactly the commands the lazy map names (in
    whatever order the modules were imported: ``--help``'s order is the map's)."""
    modules = sorted(p.stem for p in CLI_DIR.glob("*.py") if not p.stem.startswith("_"))
    for m in modules:
        importlib.import_module(f"acmemodel.cli.{m}")
    assert sorted(_registered(app)) == sorted(COMMANDS)
    assert sorted(_registered(evaluate_app)) == sorted(EVALUATE_COMMANDS)
    # each name's module registers it (a command moved to another module must move in the map too)
    for names, owner in ((COMMANDS, app), (EVALUATE_COMMANDS, evaluate_app)):
        for info in owner.registered_commands:
            assert info.callback.__module__ == f"acmemodel.cli.{names[info.name]}", info.name
    # commands typer built from modules imported before the group: their examples still end their help
    from typer.testing import CliRunner

    for argv in (["convert", "-h"], ["evaluate", "runtime", "-h"]):
        r = CliRunner().invoke(app, argv)
        assert r.exit_code == 0 and "Examples:" in r.output and "$ acmemodel" in r.output, argv


def test_help_lists_every_command_and_a_typo_gets_a_suggestion():
    from typer.testing import CliRunner

    r = CliRunner().invoke(app, ["--help"])
    assert r.exit_code == 0
    for name in [*COMMANDS, "evaluate"]:
        assert name in r.output
    r = CliRunner().invoke(app, ["evaluate", "--help"])
    assert r.exit_code == 0 and all(n in r.output for n in EVALUATE_COMMANDS)
    r = CliRunner().invoke(app, ["chekpoint"])
    assert r.exit_code == 2 and "checkpoint" in r.output


def test_a_command_imports_only_its_own_module():
    """``acmemodel checkpoint --mttf ... --json`` in a fresh process: no other command module, no pandas,
    scipy, pyarrow or pydantic; the examples epilog still reaches its ``--help``."""
    code = ("import sys, json; from acmemodel.cli import main\n"
            "try:\n"
            "    main(['checkpoint', '--gpus', '64', '--ckpt-cost', '60s', '--mttf', '8h', '--restart', '20m',"
            " '--json'])\n"
            "except SystemExit:\n"
            "    pass\n"
            "sys.stderr.write(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('acmemodel', 'pandas', 'scipy', 'pyarrow', 'pydantic'))))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    mods = json.loads(out.stderr.strip().splitlines()[-1])
    assert json.loads(out.stdout)["interval_s"] > 0
    cli_mods = {m.split(".")[2] for m in mods if m.startswith("acmemodel.cli.")}
    assert cli_mods <= {"_app", "_common", "_fmt", "checkpoint"}, cli_mods
    assert not [m for m in mods if not m.startswith("acmemodel")], mods
    out = subprocess.run([sys.executable, "-m", "acmemodel", "checkpoint", "--help"], capture_output=True,
                         text=True, check=True)
    assert "acmemodel checkpoint --gpus 2048 --ckpt-cost 60s" in out.stdout
