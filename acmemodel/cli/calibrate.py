"""``acmemodel calibrate``: rebuild the default bundle from the published statistics."""
from __future__ import annotations

import ast
import dataclasses
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
        console.print(f"{len(notes)} note(s) from the fits (also in the bundle's provenance fit_notes):")
        for n in notes:
            console.print(f"  {n}")


def _warning_notes(caught) -> list[str]:
    """Distinct warning messages of a run, one sentence each, in first-seen order."""
    out: dict[str, None] = {}
    for w in caught:
        text = " ".join(str(w.message).split())
        if text:
            out.setdefault(text if text.endswith(".") else text + ".", None)
    return list(out)
