"""Planning sweeps: a planner configuration evaluated over a grid of named axes, on Dask.

A **grid** (YAML/TOML file or mapping) crosses named axes of the planner configuration::

    seed: 0                                   # optional sweep seed (default: the config's simulation.seed)
    axes:
      cluster.partitions.eval: {values: [64, 128, 256]}
      checkpoint.sync_cost: {range: {start: 30s, stop: 5m, num: 4}}     # linspace, ends included
      failures.rate_multipliers.Infrastructure: {range: {start: 0.5, stop: 2, num: 4, scale: log}}
      runs.llm-123b.gpus: {range: {start: 1024, stop: 2048, step: 512}}  # arange, stop included

An axis is a dotted path into the configuration (:data:`AXES` lists the accepted ones: cluster GPUs and
partitions, checkpoint mode/costs/interval, restart automation and failure-rate multipliers per failure
category or type, the explicit failure law or a published reliability preset, workload scale/days/replicas, the queue target, run sizes and
work — ``runs.NAME.FIELD`` or ``runs.*.FIELD`` for every run). ``values:`` is a list (numbers, durations
like ``"30s"``, or words like ``auto``); ``range:`` is numeric (``start``, ``stop`` and ``num`` or
``step``; ``scale: log`` for a geometric ``num``-point range). Points are the Cartesian product in the
order the axes are written, the last axis varying fastest.

**Evaluation.** Each point is the configuration with the point's values set, validated like any config
(an invalid combination — an eval lane bigger than the cluster — is that point's error, the others run).
A point's plan has two parts that :class:`~acmemodel.planner.planner.Planner` computes independently:
the *runs* (checkpoint optimum and Monte Carlo completion: ``Planner.plan(cfg, cluster=False)``) and
the *cluster* (workload simulation and quota search: ``Planner.quota(cfg)``); the plan's reliability
sensitivity band and the evaluation-batch section are not computed per point. Each part is a pure
function of the configuration sections it reads, so points that share them share one evaluation
(a grid over checkpoint cost × eval lane simulates the cluster once per lane). **Seeds**: each part
runs with its own seed, a hash of the sweep seed and that part's inputs — derived from the point, not
from where or in which order it runs — so a sweep gives identical rows in-process, on a
``LocalCluster`` or on a remote Dask cluster, and points that differ only in run-side axes see the
same simulated workload (common random numbers).

**Rows**: the axis values, ``point`` (grid index), ``point_id`` (hash of the values), ``status``
(``ok``/``error``), ``error``; per run ``RUN.completion_mean_s`` / ``_p50_s`` / ``_p90_s``,
``RUN.expected_failures``, ``RUN.ettr``, ``RUN.gpu_h_lost`` (GPU-hours) split into ``_work``,
``_restart``, ``_checkpoint`` and by failure category (``RUN.gpu_h_lost.Infrastructure`` ...),
``RUN.interval_s`` (used), ``RUN.optimal_interval_s``; totals over runs ``gpu_h_lost*``; the cluster's
``eval_wait_p50_s`` / ``eval_wait_p90_s`` (``inf`` when some Eval jobs never run), ``quota.PARTITION``
GPUs, ``quota_feasible``. The Parquet file's metadata (key ``acmemodel.sweep``) holds the grid, the base
configuration, the seed, the bundle's name and provenance and the package version.

**Execution** (:func:`sweep`): ``client=None`` runs the parts one after the other in this process;
a ``dask.distributed.Client`` (e.g. of a ``LocalCluster`` or an existing scheduler) runs them as
tasks. With ``out=`` rows are checkpointed to ``OUT.partial/`` as points complete and ``resume=True``
reuses the successful rows of ``OUT`` and ``OUT.partial/`` (errored points run again).
"""
from __future__ import annotations

import copy
import hashlib
import itertools
import json
import math
import shutil
import sys
import time
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping

import numpy as np
import pandas as pd

from acmemodel.errors import ConfigError

#: largest grid run without ``allow_large`` (``--yes``)
MAX_POINTS = 1_000_000
#: metadata key of the Parquet file
META_KEY = b"acmemodel.sweep"


# ------------------------------------------------------------------------------------------ axes
@dataclass(frozen=True)
class AxisSpec:
    """An accepted grid axis: a dotted ``pattern`` into the configuration (``*`` = a key of a mapping:
    failure category/type, partition or run name), the plan ``part`` it changes (``"runs"``,
    ``"cluster"`` or ``"both"``) and what ``*`` may be (``"failure_key"``, ``"partition"``, ``"run"``)."""

    pattern: str
    part: str
    key_kind: str = ""
    doc: str = ""


#: the axes a grid may name (other modules may :func:`register_axis` more, e.g. reliability presets)
AXES: list[AxisSpec] = [
    AxisSpec("cluster.gpus", "cluster", doc="total GPUs"),
    AxisSpec("cluster.partitions.*", "cluster", "partition", "GPUs of a partition (pretrain reservation, "
                                                             "eval lane) or auto"),
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


def register_axis(spec: AxisSpec) -> None:
    """Accept one more grid axis (kept in :data:`AXES`)."""
    if spec.part not in ("runs", "cluster", "both"):
        raise ValueError(f"AxisSpec.part must be runs, cluster or both, got {spec.part!r}")
    AXES.append(spec)


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
    from acmemodel.planner.config import read_config_file

    data = read_config_file(obj)
    if not isinstance(data, Mapping):
        raise ConfigError(f"{what} {Path(obj).name} must be a mapping")
    return dict(data)


def _number(v, where: str) -> float:
    from acmemodel.planner.config import parse_duration

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
            if isinstance(v, bool) or not isinstance(v, (int, float, str)):
                raise ConfigError(f"{where}: values must be numbers or words, got {v!r}")
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
        n = int(math.floor((b - a) / step + 1e-9)) + 1
        xs = a + step * np.arange(n)
    if len(xs) == 0:
        raise ConfigError(f"{where}: range is empty")
    return tuple(_tidy(float(x)) for x in xs)


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
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
        raise ConfigError(f"grid seed must be a non-negative integer, got {seed!r}")
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
    from acmemodel.planner.montecarlo import FailureMix

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


# ------------------------------------------------------------------------------------------ parts
_RUN_SECTIONS = ("checkpoint", "restart", "failures", "runs", "simulation")
_CLUSTER_SECTIONS = ("cluster", "workload", "queue_target")


def _part_keys(raw: dict) -> tuple[str, str]:
    """Canonical inputs of the run part and of the cluster part of a point's plan (seed excluded)."""
    sim = dict(raw.get("simulation") or {})
    sim.pop("seed", None)
    run_in = {k: raw.get(k) for k in _RUN_SECTIONS if k != "simulation"}
    run_in["simulation"] = sim
    cl_in = {k: raw.get(k) for k in _CLUSTER_SECTIONS}
    # the cluster simulation places the runs in the pretrain reservation and draws from the bundle
    cl_in["runs"] = [{"name": r.get("name"), "gpus": r.get("gpus")} for r in (raw.get("runs") or [])
                     if isinstance(r, Mapping)]
    cl_in["failures.job_type"] = (raw.get("failures") or {}).get("job_type")
    return _canon(run_in), _canon(cl_in)


_BUNDLES: dict = {}


def _bundle(ref):
    """The bundle of a reference (path string or None = the default), loaded once per process."""
    key = str(ref) if ref is not None else None
    if key not in _BUNDLES:
        from acmemodel.models.bundle import resolve_bundle

        _BUNDLES[key] = resolve_bundle(ref)
    return _BUNDLES[key]


def _num(v) -> float:
    return float("nan") if v is None else float(v)


def evaluate_part(kind: str, raw: dict, base_dir: str | None, bundle_ref, seed: int, sampler=None) -> dict:
    """Evaluate one plan part of a point (a task: pure function of its arguments).

    ``kind``: ``"runs"`` (``Planner.plan(cfg, cluster=False)``) or ``"cluster"`` (``Planner.quota``);
    ``raw``: the point's configuration mapping; ``seed``: the part's seed (``simulation.seed``).
    ``sampler``: the workload sampler of the cluster part (:class:`~acmemodel.planner.planner.Planner`'s
    ``sampler``, e.g. :func:`acmemodel.synth.sample_workload`; the planner does not import the synthesiser).
    Returns the part's columns, or ``{"error": message}`` when it fails.
    """
    import warnings

    from acmemodel.planner.config import ClusterConfig
    from acmemodel.planner.montecarlo import FailureMix
    from acmemodel.planner.planner import Planner

    try:
        raw = copy.deepcopy(raw)
        raw.pop("evaluation", None)  # the evaluation batch (evalplan) is not a sweep column
        raw.setdefault("simulation", {})["seed"] = int(seed)
        if kind == "runs":
            raw["sensitivity"] = False  # the plan's reliability band is not a sweep column (6 more plans)
        cfg = ClusterConfig.from_dict(raw, base_dir=Path(base_dir) if base_dir else None)
        planner = Planner(_bundle(bundle_ref), sampler=sampler)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if kind == "runs":
                res = planner.plan(cfg, cluster=False).to_dict()
                cat = dict(zip(FailureMix.from_failure_table(1024).names, FailureMix.from_failure_table(1024).categories))
                out: dict = {}
                tot: dict = {}
                for r in res["runs"]:
                    n = r["name"]
                    ct, loss = r["completion_time_s"], r["gpu_time_loss_gpu_h"]
                    cols = {
                        "finishes": bool(r["finishes"]),
                        "completion_mean_s": _num(ct["mean"]), "completion_p50_s": _num(ct["p50"]),
                        "completion_p90_s": _num(ct["p90"]),
                        "expected_failures": _num(r["expected_failures"]), "ettr": _num(r["ettr"]),
                        "gpu_h_lost": _num(loss["total"]), "gpu_h_lost_work": _num(loss["lost_work"]),
                        "gpu_h_lost_restart": _num(loss["restart"]),
                        "gpu_h_lost_checkpoint": _num(loss["checkpoint"]),
                        "interval_s": _num(r["checkpoint_interval_s"]),
                        "optimal_interval_s": _num(r["optimal_interval_s"]),
                    }
                    bycat: dict = {}
                    for t, v in (loss.get("by_failure_type") or {}).items():
                        c = cat.get(t, "Other")
                        bycat[c] = bycat.get(c, 0.0) + float(v)
                    for c in sorted(set(cat.values())):
                        cols[f"gpu_h_lost.{c}"] = bycat.get(c, 0.0 if r["finishes"] else float("nan"))
                    for k, v in cols.items():
                        out[f"{n}.{k}"] = v
                        if k.startswith("gpu_h_lost"):
                            tot[k] = tot.get(k, 0.0) + v
                out.update(tot)
                return out
            cl = planner.quota(cfg)
            q = cl["queue_s"].get("Eval", {})
            out = {"eval_wait_p50_s": float("inf") if q and q.get("p50") is None else _num(q.get("p50")),
                   "eval_wait_p90_s": float("inf") if q and q.get("p90") is None else _num(q.get("p90"))}
            for p, g in cl["quotas"].items():
                out[f"quota.{p}"] = float(g)
            qs = cl.get("quota_search")
            out["quota_feasible"] = bool(qs["feasible"]) if qs else True
            return out
    except Exception as e:  # reported in the point's row; the other points go on
        msg = str(e).splitlines()[0] if str(e) else type(e).__name__
        return {"error": f"{kind}: {type(e).__name__}: {msg}"}


# ------------------------------------------------------------------------------------------ sweep
def _raw_config(config) -> tuple[dict, str | None, str | None]:
    """(raw mapping, base_dir, source) of a config path, mapping or loaded ClusterConfig."""
    from acmemodel.planner.config import ClusterConfig

    if isinstance(config, ClusterConfig):
        if not config.source:
            raise ConfigError("sweep needs the configuration as a file or a mapping (a ClusterConfig built "
                              "in memory has no raw form to apply grid axes to)")
        config = config.source
    if isinstance(config, Mapping):
        raw = copy.deepcopy(dict(config))
        ClusterConfig.from_dict(raw)  # the base must be valid
        return raw, None, None
    p = Path(config)
    raw = _read_mapping(p, "config")
    ClusterConfig.from_dict(raw, base_dir=p.parent)
    return raw, str(p.parent), str(p)


def plan_sweep(config, grid, *, seed: int | None = None, allow_large: bool = False) -> dict:
    """Check a sweep before any work: the base config, the grid, the point count (> :data:`MAX_POINTS`
    needs ``allow_large``). Returns the sweep description used by :func:`sweep`."""
    raw, base_dir, source = _raw_config(config)
    g = load_grid(grid)
    _check_axes_against_config(g["axes"], raw)
    n = int(np.prod([len(a.values) for a in g["axes"]]))
    if n > MAX_POINTS and not allow_large:
        raise ConfigError(f"grid has {n:,} points, more than {MAX_POINTS:,}; pass --yes (allow_large=True) "
                          "to run it")
    if seed is None:
        seed = g["seed"] if g["seed"] is not None else int((raw.get("simulation") or {}).get("seed", 0))
    return {"raw": raw, "base_dir": base_dir, "source": source, "axes": g["axes"], "grid": g["spec"],
            "n_points": n, "seed": int(seed)}


def _metadata(plan: dict, bundle_ref) -> dict:
    from acmemodel import __version__

    try:
        b = _bundle(bundle_ref)
        bundle = {"name": getattr(b, "name", None), "ref": None if bundle_ref is None else str(bundle_ref),
                  "provenance": getattr(b, "provenance", {})}
    except Exception as e:  # pragma: no cover - reported per point as well
        bundle = {"ref": None if bundle_ref is None else str(bundle_ref), "error": str(e).splitlines()[0]}
    return {"grid": plan["grid"], "config": plan["raw"], "config_source": plan["source"], "seed": plan["seed"],
            "n_points": plan["n_points"], "bundle": bundle, "package_version": __version__}


def _fingerprint(meta: dict) -> str:
    return _hash(meta["config"], meta["seed"], meta["bundle"].get("ref"), meta["package_version"])


def read_sweep(path) -> tuple[pd.DataFrame, dict]:
    """A sweep's table and its metadata (the ``acmemodel.sweep`` key) from a Parquet file."""
    import pyarrow.parquet as pq

    t = pq.read_table(path)
    meta = json.loads((t.schema.metadata or {}).get(META_KEY, b"{}"))
    return t.to_pandas(), meta


def _write(df: pd.DataFrame, path: Path, meta: dict | None) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    t = pa.Table.from_pandas(df, preserve_index=False)
    if meta is not None:
        t = t.replace_schema_metadata({**(t.schema.metadata or {}), META_KEY: json.dumps(meta, default=str).encode()})
    tmp = path.with_name(path.name + ".tmp")
    pq.write_table(t, tmp)
    tmp.replace(path)


def _previous_rows(out: Path, fingerprint: str) -> dict:
    """Successful rows of an earlier run of the same sweep (OUT and OUT.partial/), by point_id."""
    rows: dict = {}
    frames = []
    if out.exists():
        df, meta = read_sweep(out)
        if meta and meta.get("fingerprint") != fingerprint:
            raise ConfigError(f"--resume: {out} was written by a sweep of another configuration, seed, bundle "
                              "or package version")
        frames.append(df)
    part = out.with_name(out.name + ".partial")
    if part.is_dir():
        for f in sorted(part.glob("part-*.parquet")):
            df, meta = read_sweep(f)
            if meta and meta.get("fingerprint") != fingerprint:
                raise ConfigError(f"--resume: {f} belongs to a sweep of another configuration, seed, bundle "
                                  "or package version")
            frames.append(df)
    for df in frames:
        for rec in df.to_dict("records"):
            if rec.get("status") == "ok":
                rows[rec["point_id"]] = rec
    return rows


class _Progress:
    """Points done, rate and time left on stderr (rich), or nothing."""

    def __init__(self, total: int, enabled: bool):
        self.bar = None
        if enabled and total:
            from rich.console import Console
            from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn,
                                       TimeRemainingColumn)

            self.bar = Progress(TextColumn("sweep"), BarColumn(), MofNCompleteColumn(), TextColumn("points"),
                                TextColumn("{task.fields[rate]}"), TimeRemainingColumn(),
                                console=Console(stderr=True), transient=False)
            self.task = self.bar.add_task("sweep", total=total, rate="")
            self.t0 = time.perf_counter()
            self.n = 0
            self.bar.start()

    def advance(self, k: int = 1):
        if self.bar is not None:
            self.n += k
            rate = self.n / max(time.perf_counter() - self.t0, 1e-9)
            self.bar.update(self.task, advance=k, rate=f"{rate:,.1f}/s")

    def close(self):
        if self.bar is not None:
            self.bar.stop()


def sweep(config, grid, *, client=None, bundle=None, seed: int | None = None, out=None, resume: bool = False,
          progress: bool = False, allow_large: bool = False, flush_every: int = 50,
          sampler: Callable | None = None, _on_point: Callable | None = None) -> pd.DataFrame:
    """Evaluate the planner configuration ``config`` (path or mapping) over ``grid`` (path or mapping, see
    the module docstring); one row per point, in grid order.

    ``client``: ``None`` (in-process) or a ``dask.distributed.Client``; ``bundle``: bundle path (``None``:
    the default bundle; workers load it themselves); ``seed``: sweep seed (default: the grid's, else the
    config's ``simulation.seed``); ``out``: Parquet path written at the end (rows checkpointed to
    ``OUT.partial/`` every ``flush_every`` points); ``resume``: reuse the successful rows already in
    ``out``; ``progress``: a progress bar on stderr; ``allow_large``: run grids over :data:`MAX_POINTS`;
    ``sampler``: the workload sampler of the cluster parts (``acmemodel sweep`` passes
    :func:`acmemodel.synth.sample_workload`; without one the cluster columns report the error).
    """
    plan = plan_sweep(config, grid, seed=seed, allow_large=allow_large)
    bundle_ref = None if bundle is None else str(bundle)
    meta = _metadata(plan, bundle_ref)
    meta["fingerprint"] = _fingerprint(meta)
    out = None if out is None else Path(out)
    previous = _previous_rows(out, meta["fingerprint"]) if (out is not None and resume) else {}
    partial = None
    if out is not None:
        partial = out.with_name(out.name + ".partial")
        if not resume and partial.exists():
            shutil.rmtree(partial)

    axes = plan["axes"]
    points = grid_points(axes)
    pending: list[int] = []
    rows: list[dict | None] = [None] * len(points)
    tasks: dict = {}        # (kind, key) -> (raw, seed)
    needs: list = []        # per point: (run task key, cluster task key) or an error
    for i, values in enumerate(points):
        pid = point_id(values)
        if pid in previous:
            rows[i] = {**previous[pid], "point": i}
            needs.append(None)
            continue
        raw = copy.deepcopy(plan["raw"])
        raw.pop("evaluation", None)  # validated once with the base config; not evaluated per point
        for a in axes:
            _apply(raw, a, values[a.name])
        try:
            from acmemodel.planner.config import ClusterConfig

            ClusterConfig.from_dict(raw, base_dir=Path(plan["base_dir"]) if plan["base_dir"] else None)
        except Exception as e:
            needs.append(("error", f"config: {str(e).splitlines()[0]}"))
            pending.append(i)
            continue
        rk, ck = _part_keys(raw)
        keys = []
        for kind, key in (("runs", rk), ("cluster", ck)):
            if kind == "runs" and not raw.get("runs"):
                continue
            # task key: the part's inputs, seed and bundle (unique on a scheduler shared by several sweeps)
            tk = (kind, _hash(kind, key, plan["seed"], bundle_ref)[:24])
            if tk not in tasks:
                tasks[tk] = (raw, derive_seed(plan["seed"], kind, key))
            keys.append(tk)
        needs.append(("ok", keys))
        pending.append(i)

    results: dict = {}
    bar = _Progress(len(pending), progress)
    done_since_flush: list[dict] = []
    n_parts = [0]

    def finish_point(i: int):
        values = points[i]
        row: dict = {**values, "point": i, "point_id": point_id(values), "status": "ok", "error": ""}
        state, payload = needs[i]
        if state == "error":
            row.update(status="error", error=payload)
        else:
            for tk in payload:
                res = results[tk]
                if "error" in res:
                    row.update(status="error", error=res["error"] if not row["error"] else row["error"])
                else:
                    row.update(res)
            row["seed_runs"] = next((tasks[tk][1] for tk in payload if tk[0] == "runs"), -1)
            row["seed_cluster"] = next((tasks[tk][1] for tk in payload if tk[0] == "cluster"), -1)
        rows[i] = row
        done_since_flush.append(row)
        bar.advance()
        if _on_point is not None:
            _on_point(i, row)
        if partial is not None and len(done_since_flush) >= flush_every:
            flush()

    def flush():
        if partial is None or not done_since_flush:
            return
        partial.mkdir(parents=True, exist_ok=True)
        n_parts[0] += 1
        name = f"part-{int(time.time() * 1e3):013d}-{n_parts[0]:05d}.parquet"
        _write(pd.DataFrame(done_since_flush), partial / name, meta)
        done_since_flush.clear()

    try:
        waiting = {i: set(needs[i][1]) if needs[i][0] == "ok" else set() for i in pending}
        users: dict = {}
        for i in pending:
            for tk in waiting[i]:
                users.setdefault(tk, []).append(i)
        for i in pending:  # config errors complete at once
            if not waiting[i]:
                finish_point(i)

        def on_result(tk, res):
            results[tk] = res
            for i in users.get(tk, []):
                waiting[i].discard(tk)
                if not waiting[i]:
                    finish_point(i)

        args = lambda tk: (tk[0], tasks[tk][0], plan["base_dir"], bundle_ref, tasks[tk][1], sampler)  # noqa: E731
        order = []  # tasks in the order points need them (points complete in grid order in-process)
        seen = set()
        for i in pending:
            for tk in (needs[i][1] if needs[i][0] == "ok" else []):
                if tk not in seen:
                    seen.add(tk)
                    order.append(tk)
        if client is None:
            for tk in order:
                on_result(tk, evaluate_part(*args(tk)))
        else:
            from dask.distributed import as_completed

            futs = {client.submit(evaluate_part, *args(tk), key=f"acmemodel-sweep-{tk[0]}-{tk[1]}", pure=False): tk
                    for tk in order}
            for fut in as_completed(list(futs)):
                tk = futs[fut]
                try:
                    res = fut.result()
                except Exception as e:  # a worker died or the task could not run
                    res = {"error": f"{tk[0]}: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"}
                on_result(tk, res)
    except BaseException:
        flush()
        bar.close()
        raise
    bar.close()
    df = _frame(rows, axes)
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        _write(df, out, meta)
        if partial is not None and partial.exists():
            shutil.rmtree(partial)
    df.attrs["acmemodel.sweep"] = meta
    return df


def _frame(rows: list, axes) -> pd.DataFrame:
    df = pd.DataFrame(rows)
    first = [a.name for a in axes] + ["point", "point_id", "status", "error", "seed_runs", "seed_cluster"]
    first = [c for c in first if c in df.columns]
    rest = sorted(c for c in df.columns if c not in first)
    df = df[first + rest].sort_values("point", kind="stable").reset_index(drop=True)
    for a in axes:  # an axis mixing words and numbers (interval: auto | 30m) is stored as text
        if df[a.name].map(type).nunique() > 1:
            df[a.name] = df[a.name].astype(str)
    return df


# ------------------------------------------------------------------------------------------ plots
def _numeric_axes(df: pd.DataFrame, meta: dict) -> list[str]:
    names = list((meta.get("grid") or {}).get("axes", {}))
    return [a for a in names if a in df.columns and pd.api.types.is_numeric_dtype(df[a]) and df[a].nunique() > 1]


def pareto_front(df: pd.DataFrame, x: str = "gpu_h_lost", y: str = "eval_wait_p90_s") -> pd.DataFrame:
    """Rows not dominated in (``x``, ``y``), both minimised, sorted by ``x``."""
    d = df[np.isfinite(df[x].astype(float)) & np.isfinite(df[y].astype(float))].sort_values([x, y])
    keep, best = [], np.inf
    for idx, v in zip(d.index, d[y].astype(float)):
        if v < best:
            keep.append(idx)
            best = v
    return d.loc[keep]


def plot_sweep(df: pd.DataFrame, meta: dict, outdir) -> list[str]:
    """PNG plots of a sweep in ``outdir``: heat maps of GPU-hours lost, Eval p90 wait and the first run's
    mean completion over the first two numeric axes (mean over the other axes), and the Pareto front of
    GPU-hours lost against Eval p90 wait. Returns the written paths."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    ok = df[df["status"] == "ok"]
    written = []
    axes = _numeric_axes(ok, meta)
    runs = [c[: -len(".completion_mean_s")] for c in ok.columns if c.endswith(".completion_mean_s")]
    metrics = [("gpu_h_lost", "GPU-hours lost (all runs)"), ("eval_wait_p90_s", "Eval p90 wait (min)")]
    if runs:
        metrics.append((f"{runs[0]}.completion_mean_s", f"{runs[0]} mean completion (d)"))
    if len(axes) >= 2 and len(ok):
        a, b = axes[0], axes[1]
        for col, label in metrics:
            if col not in ok.columns:
                continue
            scale = 60.0 if col.endswith("wait_p90_s") else (86400.0 if col.endswith("completion_mean_s") else 1.0)
            piv = ok.assign(_v=ok[col].astype(float) / scale).pivot_table(index=a, columns=b, values="_v",
                                                                          aggfunc="mean")
            fig, ax = plt.subplots(figsize=(6.4, 4.8))
            finite = piv.to_numpy(float)
            im = ax.imshow(np.where(np.isfinite(finite), finite, np.nan), origin="lower", aspect="auto",
                           cmap="viridis")
            ax.set_xticks(range(piv.shape[1]), [f"{v:g}" for v in piv.columns], rotation=45, ha="right")
            ax.set_yticks(range(piv.shape[0]), [f"{v:g}" for v in piv.index])
            ax.set_xlabel(b)
            ax.set_ylabel(a)
            others = [x for x in axes[2:]] + [x for x in (meta.get("grid") or {}).get("axes", {})
                                              if x not in axes]
            ax.set_title(label + (" (mean over other axes)" if others else ""), fontsize=10)
            fig.colorbar(im, ax=ax, label=label)
            fig.tight_layout()
            p = outdir / f"heatmap_{col.replace('.', '_')}.png"
            fig.savefig(p, dpi=110)
            plt.close(fig)
            written.append(str(p))
    if {"gpu_h_lost", "eval_wait_p90_s"} <= set(ok.columns) and len(ok):
        front = pareto_front(ok)
        fig, ax = plt.subplots(figsize=(6.4, 4.8))
        fin = ok[np.isfinite(ok["eval_wait_p90_s"].astype(float))]
        ax.scatter(fin["gpu_h_lost"], fin["eval_wait_p90_s"] / 60.0, s=12, alpha=0.5, label="grid points")
        ax.plot(front["gpu_h_lost"], front["eval_wait_p90_s"] / 60.0, "o-", color="C3", label="Pareto front")
        ax.set_xlabel("GPU-hours lost (all runs)")
        ax.set_ylabel("Eval p90 wait (min)")
        ax.set_title("Pareto front: GPU-hours lost vs Eval p90 wait", fontsize=10)
        ax.legend()
        fig.tight_layout()
        p = outdir / "pareto_gpu_h_lost_vs_eval_p90.png"
        fig.savefig(p, dpi=110)
        plt.close(fig)
        written.append(str(p))
    return written


# ``acmemodel.planner.sweep(config, grid)`` must work whether the name resolves to this function (the
# package's lazy export) or to this module (once imported, a submodule is an attribute of its package):
# the module is callable and calls :func:`sweep`.
class _CallableModule(types.ModuleType):
    def __call__(self, *args, **kwargs):
        return sweep(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
