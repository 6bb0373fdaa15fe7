"""Grid of a planning sweep (:mod:`acmemodel.planner.sweep.runner`): the accepted axes, parsing of
``values:`` / ``range:``, the Cartesian product of points, point identifiers and part seeds.

An axis is a dotted path into the planner configuration (:data:`AXES`; ``*`` stands for a failure
category/type, a partition or a run name); :func:`load_grid` checks names and ranges and raises
:class:`~acmemodel.errors.ConfigError` naming the axis.
"""
from __future__ import annotations

import copy
import hashlib
import itertools
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

import numpy as np

from acmemodel.errors import ConfigError
from acmemodel.planner.config_fields import parse_duration, read_config_file
from acmemodel.planner.run.montecarlo import FailureMix


# ------------------------------------------------------------------------------------------ axes
@dataclass(frozen=True)
class AxisSpec:
    """An accepted grid axis: a dotted ``pattern`` into the configuration (``*`` = a key of a mapping:
    failure category/type, partition or run name), the plan ``part`` it changes (``"runs"``,
    ``"cluster"`` or ``"both"``) and what ``*`` may be (``"failure_key"``, ``"partition"``, ``"run"``,
    ``"job_type"``: any job type)."""

    pattern: str
    part: str
    key_kind: str = ""
    doc: str = ""


#: the axes a grid may name
AXES: list[AxisSpec] = [
    AxisSpec("cluster.gpus", "cluster", doc="total GPUs"),
    AxisSpec("cluster.partitions.*", "cluster", "partition", "GPUs of a partition (pretrain reservation, "
                                                             "eval lane) or auto"),
    AxisSpec("cluster.priorities.*", "cluster", "job_type", "scheduling priority of a job type (higher first)"),
    AxisSpec("cluster.latency", "cluster", doc="add the bundle's start-up latency to simulated waits: true | false"),
    AxisSpec("checkpoint.mode", "runs", doc="sync | async"),
    AxisSpec("checkpoint.sync_cost", "runs", doc="blocking cost of a synchronous checkpoint"),
    AxisSpec("checkpoint.async_cost", "runs", doc="blocking part of an asynchronous checkpoint"),
    AxisSpec("checkpoint.interval", "runs", doc="work between checkpoints or auto"),
    AxisSpec("restart.automation.*", "runs", "failure_key", "restart-time factor per failure category/type"),
    AxisSpec("failures.rate_multipliers.*", "runs", "failure_key", "failure-rate factor per category/type"),
    AxisSpec("failures.mttf", "runs", doc="explicit job MTTF at reference_gpus"),
    AxisSpec("failures.shape", "runs", doc="explicit Weibull shape"),
    AxisSpec("failures.reference_gpus", "runs", doc="GPU count of the explicit MTTF"),
    AxisSpec("failures.reliability", "runs", doc="published reliability preset (acmemodel.planner.reliability)"),
    AxisSpec("workload.scale", "cluster", doc="arrival-intensity multiplier"),
    AxisSpec("workload.days", "cluster", doc="simulated horizon"),
    AxisSpec("workload.replicas", "cluster", doc="workload replicas"),
    AxisSpec("queue_target.max_wait", "cluster", doc="queue target"),
    AxisSpec("queue_target.quantile", "cluster", doc="queue-target quantile"),
    AxisSpec("runs.*.gpus", "both", "run", "GPUs of a run (* = every run)"),
    AxisSpec("runs.*.work", "runs", "run", "failure-free work of a run (* = every run)"),
    AxisSpec("runs.*.ckpt_cost", "runs", "run", "checkpoint cost override of a run"),
    AxisSpec("runs.*.checkpoint_interval", "runs", "run", "checkpoint interval override of a run"),
    AxisSpec("simulation.replicas", "runs", doc="Monte Carlo replicas per run"),
]


def _match(name: str) -> tuple[AxisSpec, str | None] | None:
    parts = name.split(".")
    for spec in AXES:
        pat = spec.pattern.split(".")
        if spec.key_kind == "run":  # runs.NAME.FIELD: NAME may contain dots
            if len(parts) >= 3 and parts[0] == "runs" and parts[-1] == pat[-1]:
                return spec, ".".join(parts[1:-1])
            continue
        if len(pat) != len(parts):
            continue
        key = None
        for p, q in zip(pat, parts):
            if p == "*":
                key = q
            elif p != q:
                break
        else:
            return spec, key
    return None


@dataclass(frozen=True)
class Axis:
    """One resolved grid axis: its name, spec, the mapping key (``*``) and its values."""

    name: str
    spec: AxisSpec
    key: str | None
    values: tuple


# ------------------------------------------------------------------------------------------ grid
def _read_mapping(obj, what: str) -> dict:
    if isinstance(obj, Mapping):
        return copy.deepcopy(dict(obj))

    data = read_config_file(obj)
    if not isinstance(data, Mapping):
        raise ConfigError(f"{what} {Path(obj).name} must be a mapping")
    return dict(data)


def _number(v, where: str) -> float:
    if isinstance(v, bool):
        raise ConfigError(f"{where} must be a number, got {v!r}")
    if isinstance(v, (int, float)):
        if not math.isfinite(v):
            raise ConfigError(f"{where} must be a finite number, got {v!r}")
        return float(v)
    if isinstance(v, str):
        try:
            return parse_duration(v, where, allow_zero=True)
        except ConfigError:
            raise ConfigError(f"{where} must be a number or a duration like 30s, got {v!r}") from None
    raise ConfigError(f"{where} must be a number, got {v!r}")


def _tidy(x: float):
    """Range values as ints when integral (GPUs, seconds)."""
    r = round(x, 9)
    return int(r) if float(r).is_integer() else float(x)


def _axis_values(name: str, spec) -> tuple:
    where = f"grid axis {name}"
    if not isinstance(spec, Mapping) or len(set(spec) & {"values", "range"}) != 1:
        raise ConfigError(f"{where} needs exactly one of values: [...] or range: {{start, stop, num|step}}")
    if "values" in spec:
        vals = spec["values"]
        if not isinstance(vals, (list, tuple)) or not vals:
            raise ConfigError(f"{where}: values must be a non-empty list")
        for v in vals:
            if not isinstance(v, (bool, int, float, str)):
                raise ConfigError(f"{where}: values must be numbers, words or true/false, got {v!r}")
        if len(set(map(repr, vals))) != len(vals):
            raise ConfigError(f"{where}: values repeat")
        return tuple(vals)
    rg = spec["range"]
    if not isinstance(rg, Mapping):
        raise ConfigError(f"{where}: range must be a mapping {{start, stop, num | step[, scale]}}")
    bad = sorted(set(rg) - {"start", "stop", "num", "step", "scale"})
    if bad or "start" not in rg or "stop" not in rg or len(set(rg) & {"num", "step"}) != 1:
        raise ConfigError(f"{where}: range needs start, stop and one of num or step (optional scale: log)")
    a, b = _number(rg["start"], f"{where}: range.start"), _number(rg["stop"], f"{where}: range.stop")
    scale = rg.get("scale", "linear")
    if scale not in ("linear", "log"):
        raise ConfigError(f"{where}: range.scale must be linear or log, got {scale!r}")
    if "num" in rg:
        n = rg["num"]
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ConfigError(f"{where}: range.num must be a positive integer, got {n!r}")
        _check_axis_points(n, where)
        if scale == "log":
            if not (a > 0 and b > 0):
                raise ConfigError(f"{where}: a log range needs start and stop > 0")
            xs = np.geomspace(a, b, n)
        else:
            xs = np.linspace(a, b, n)
    else:
        step = _number(rg["step"], f"{where}: range.step")
        if scale == "log":
            raise ConfigError(f"{where}: scale: log needs num, not step")
        if step <= 0 or b < a:
            raise ConfigError(f"{where}: range is empty (needs step > 0 and stop >= start)")
        n_f = math.floor((b - a) / step + 1e-9) + 1 if math.isfinite((b - a) / step) else math.inf
        _check_axis_points(n_f, where)
        n = int(n_f)
        xs = a + step * np.arange(n)
    if len(xs) == 0:
        raise ConfigError(f"{where}: range is empty")
    return tuple(_tidy(float(x)) for x in xs)


#: most points one range axis may have (checked before the points are built)
MAX_AXIS_POINTS = 1_000_000


def _check_axis_points(n, where: str) -> None:
    if n > MAX_AXIS_POINTS:
        raise ConfigError(f"{where}: range has {n:,.0f} points; an axis has at most {MAX_AXIS_POINTS:,}")


def load_grid(grid) -> dict:
    """Parse and check a grid (path or mapping): ``{"axes": [Axis...], "seed": int|None, "spec": dict}``.
    :class:`ConfigError` naming the axis for an axis that names no configuration field or a bad range."""
    data = _read_mapping(grid, "grid")
    top_keys = set(data)
    if "axes" in data:
        bad = sorted(top_keys - {"axes", "seed"})
        if bad:
            raise ConfigError(f"grid has unknown key(s) {bad}; allowed: axes, seed")
        axes_in = data["axes"]
        seed = data.get("seed")
    else:
        axes_in, seed = {k: v for k, v in data.items() if k != "seed"}, data.get("seed")
    if not isinstance(axes_in, Mapping) or not axes_in:
        raise ConfigError("grid has no axes (axes: {NAME: {values: [...]} | {range: {...}}})")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**32):
        raise ConfigError(f"grid seed must be an integer in 0 .. 2**32 - 1, got {seed!r}")
    axes = []
    for name, spec in axes_in.items():
        name = str(name)
        m = _match(name)
        if m is None:
            raise ConfigError(f"grid axis {name} names no configuration field; accepted axes: "
                              + ", ".join(a.pattern for a in AXES))
        axes.append(Axis(name, m[0], m[1], _axis_values(name, spec)))
    return {"axes": axes, "seed": seed, "spec": {"seed": seed, "axes": {a.name: list(a.values) for a in axes}}}


def _check_axes_against_config(axes, raw: dict) -> None:
    """Keys of ``*`` axes must exist: a run name, a known failure category/type, a partition."""
    run_names = [str(r.get("name", f"run{i + 1}")) for i, r in enumerate(raw.get("runs") or [])
                 if isinstance(r, Mapping)]
    mix = FailureMix.from_failure_table(1024)
    failure_keys = set(mix.names) | set(mix.categories)
    for a in axes:
        if a.spec.key_kind == "run" and a.key != "*" and a.key not in run_names:
            raise ConfigError(f"grid axis {a.name} names no configuration field: no run {a.key!r} "
                              f"(runs: {run_names})")
        if a.spec.key_kind == "failure_key" and a.key not in failure_keys:
            raise ConfigError(f"grid axis {a.name} names no configuration field: {a.key!r} is not a failure "
                              f"category or type (categories: {sorted(set(mix.categories))})")
        if a.spec.key_kind == "partition" and a.key not in ("pretrain", "eval") and \
                a.key not in ((raw.get("cluster") or {}).get("partitions") or {}):
            raise ConfigError(f"grid axis {a.name} names no configuration field: partition {a.key!r} "
                              "is neither pretrain, eval nor a partition of the config")


def _apply(raw: dict, axis: Axis, value) -> None:
    if axis.spec.key_kind == "run":
        field = axis.name.split(".")[-1]
        for i, r in enumerate(raw.get("runs") or []):
            if axis.key == "*" or str(r.get("name", f"run{i + 1}")) == axis.key:
                r[field] = value
        return
    parts = axis.name.split(".")
    d = raw
    for p in parts[:-1]:
        if not isinstance(d.get(p), dict):
            d[p] = {}
        d = d[p]
    d[parts[-1]] = value


def grid_points(axes) -> list[dict]:
    """The Cartesian product of the axes (last axis fastest): one ``{axis name: value}`` per point."""
    return [dict(zip([a.name for a in axes], combo)) for combo in itertools.product(*[a.values for a in axes])]


def _canon(obj) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str)


def _hash(*parts) -> str:
    return hashlib.sha256("|".join(_canon(p) for p in parts).encode()).hexdigest()


def point_id(values: Mapping) -> str:
    """Stable identifier of a grid point: a hash of its axis values."""
    return _hash(dict(values))[:16]


def derive_seed(sweep_seed: int, kind: str, key: str) -> int:
    """The seed of one plan part: 31 bits of SHA-256 of (sweep seed, part kind, the part's inputs)."""
    return int(hashlib.sha256(f"{int(sweep_seed)}|{kind}|{key}".encode()).hexdigest()[:8], 16) & 0x7FFFFFFF
