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
) -> None:
    """Fit the default bundle (acme-2023) to the published AcmeTrace statistics, reproducibly."""
    from acmemodel.calibrate import calibrate

    if not 0 < scale <= 10:
        raise ConfigError(f"--scale must be in (0, 10], got {scale}")
    check_bundle_out(out)
    a = parse_assumptions(list(assume or []))
    bundle = calibrate(scale=scale, seed=seed, assumptions=a,
                       log=None if json_out else (lambda m: err_console.print(m)))
    path = bundle.save(out)
    if json_out:
        print_json({"bundle": str(path), "models": sorted(bundle.models),
                    "calibration": bundle.provenance.get("calibration")})
    else:
        console.print(f"wrote calibrated bundle [bold]{path}[/bold] ({', '.join(sorted(bundle.models))})")
