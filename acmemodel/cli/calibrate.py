"""``acmemodel calibrate``: rebuild the default bundle from the published statistics."""
from __future__ import annotations

import ast
import dataclasses
import re
from pathlib import Path
from typing import List, Optional

import typer

from acmemodel.cli._app import app, print_json
from acmemodel.cli._common import SEED_MAX, check_bundle_out, console, err_console
from acmemodel.errors import ConfigError


def parse_assumptions(items: list[str]):
    """``name=value`` overrides of :class:`acmemodel.calibrate.Assumptions` (values as Python literals)."""
    from acmemodel.calibrate import Assumptions

    fields = {f.name for f in dataclasses.fields(Assumptions)}
    kw = {}
    for item in items:
        if "=" not in item:
            raise ConfigError(f"--set: expected name=value, got {item!r}")
        name, value = item.split("=", 1)
        name = name.strip()
        if name not in fields:
            raise ConfigError(f"--set: unknown assumption {name!r}; known: {', '.join(sorted(fields))}")
        try:
            kw[name] = ast.literal_eval(value.strip())
        except (ValueError, SyntaxError):
            raise ConfigError(f"--set {name}: cannot read {value!r} as a number, tuple or dict") from None
    return Assumptions(**kw)


@app.command("calibrate")
def calibrate_cmd(
    out: Path = typer.Option(..., "-o", "--out", help="Where to write the bundle (directory or .zip)."),
    scale: float = typer.Option(1.0, "--scale", help="Fraction of the published job volume to materialise."),
    seed: int = typer.Option(2023, "--seed", min=0, max=SEED_MAX, help="Random seed of the pseudo-trace."),
    assume: Optional[List[str]] = typer.Option(None, "--set", help="Override an assumption: name=value."),
    json_out: bool = typer.Option(False, "--json", help="Print the calibration report as JSON."),
    verbose: bool = typer.Option(False, "-v", "--verbose", help="Also print every step's details on stderr."),
    workers: Optional[int] = typer.Option(None, "--workers", min=1, max=64,
                                          help="Worker processes (default: the CPUs available, at most 2); "
                                               "the bundle is the same with any number."),
) -> None:
    """Fit the default bundle (acme-2023) to the published AcmeTrace statistics, reproducibly: the same
    seed, scale, assumptions and version give a byte-identical bundle (the shipped one is
    `acmemodel calibrate -o acmemodel/datasets/data/acme-2023`). Progress by stage on stderr; warnings
    are collected, one sentence each, into the summary (and the JSON's "notes")."""
    import time
    import warnings

    from acmemodel.calibrate import calibrate
    from acmemodel.cli._fmt import progress

    if not 0 < scale <= 10:
        raise ConfigError(f"--scale must be in (0, 10], got {scale}")
    check_bundle_out(out)
    a = parse_assumptions(list(assume or []))
    stages: list[dict] = []
    t0 = time.perf_counter()

    with warnings.catch_warnings(record=True) as caught, progress("calibrating", enabled=not json_out) as upd:
        warnings.simplefilter("always")

        def on_progress(done, total, description):
            now = time.perf_counter() - t0
            if stages:
                stages[-1]["seconds"] = round(now - stages[-1].pop("_t"), 1)
            if done < total:
                stages.append({"stage": description, "_t": now})
            upd(done, total, description)

        bundle = calibrate(scale=scale, seed=seed, assumptions=a, progress=on_progress, workers=workers,
                           log=(lambda m: err_console.print(m)) if verbose and not json_out else None)
    for st in stages:
        st.pop("_t", None)
    path = bundle.save(out)
    notes = _warning_notes(caught)
    wall = round(time.perf_counter() - t0, 1)
    if json_out:
        print_json({"bundle": str(path), "models": sorted(bundle.models), "seconds": wall, "stages": stages,
                    "notes": notes, "calibration_inputs_sha256": bundle.provenance.get("calibration_inputs_sha256"),
                    "calibration": bundle.provenance.get("calibration")})
        return
    from acmemodel.cli._fmt import dur

    console.print(f"wrote calibrated bundle [bold]{path}[/bold] ({', '.join(sorted(bundle.models))}) "
                  f"in {dur(wall)}")
    for st in stages:
        console.print(f"  {st['stage']}: {dur(st.get('seconds'))}")
    if notes:
        console.print(f"{len(notes)} note(s) from the fits (each in the bundle's provenance fit_notes and the "
                      "--json notes):")
        for n in _grouped_notes(notes):
            console.print(f"  {n}")


#: a back-off note of a cell model (models/cells.py): model, cell asked, cell that answered
_BACKOFF = re.compile(r"^(?P<model>[\w ]+?): cell (?P<cell>\S+) is not fitted \(too few jobs\); "
                      r"answered from (?P<used>\S+) \(drops (?P<drops>[^)]*)\)\.$")


def _grouped_notes(notes: list[str]) -> list[str]:
    """The notes to print: a model's back-offs (cells with too few jobs answered from a coarser cell) as one line
    with their count and first example, the other notes as they are, in first-seen order."""
    groups: dict[str, list] = {}
    out: list = []
    for n in notes:
        m = _BACKOFF.match(n)
        if m is None:
            out.append(n)
            continue
        if m["model"] not in groups:
            groups[m["model"]] = []
            out.append(groups[m["model"]])
        groups[m["model"]].append(m)
    lines = []
    for item in out:
        if isinstance(item, str):
            lines.append(item)
        elif len(item) == 1:
            lines.append(item[0].string)
        else:
            first = item[0]
            lines.append(f"{first['model']}: {len(item)} cells not fitted (too few jobs), each answered from a "
                         f"coarser cell; e.g. {first['cell']} from {first['used']} (drops {first['drops']}).")
    return lines


def _warning_notes(caught) -> list[str]:
    """Distinct warning messages of a run, one sentence each, in first-seen order."""
    out: dict[str, None] = {}
    for w in caught:
        text = " ".join(str(w.message).split())
        if text:
            out.setdefault(text if text.endswith(".") else text + ".", None)
    return list(out)
