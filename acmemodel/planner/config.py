"""``ClusterConfig``: a proposed cluster and its pretraining runs, loaded from YAML or TOML and validated.

Every invalid value raises :class:`~acmemodel.errors.ConfigError` naming the field (e.g.
``runs[1].gpus must be a positive integer, got -4``); unknown keys are errors too (typos). Durations are
seconds (numbers) or strings with a unit suffix ``s``, ``m``, ``h``, ``d``, ``w`` (``"90s"``, ``"20m"``,
``"1.5h"``, ``"30d"``, ``"2w"``).

Schema (all sections optional except ``cluster.gpus`` and ``runs``; ``runs: []`` asks only the
quota question)::

    name: seren-like-4k
    cluster:
      gpus: 4096                  # total GPUs, a multiple of gpus_per_node
      gpus_per_node: 8
      partitions:                 # GPUs per partition (multiples of gpus_per_node) or "auto" (quota search);
        pretrain: 3072            #   "shared" gets the remainder; at most one of pretrain/eval is "auto"
        eval: auto
      routing: {Debug: shared}    # job type -> partition (default: Pretrain->pretrain, Eval->eval, else shared)
      best_effort_on_reserved: false   # other jobs may run preemptibly on idle pretrain GPUs
      best_effort_types: [SFT, Debug]  # which types may (default: every type not routed to pretrain)
      priorities: {Pretrain: 2, Eval: 0}   # per type, higher first; FIFO within a priority (default 0)
      latency: true               # add the bundle's start-up latency (queue model) to every job's wait
      backfill: true
      include_runs: true          # the runs below occupy the pretrain partition in the cluster simulation
    checkpoint:
      mode: async                 # sync | async: which blocking cost applies
      sync_cost: 60s              # blocking time of a synchronous checkpoint
      async_cost: 5s              # blocking part of an asynchronous checkpoint
      interval: auto              # auto (optimal) or a duration of work between checkpoints
    restart:
      source: auto                # auto | bundle | table: restart-time distributions (see Planner)
      automation: {Infrastructure: 0.5}   # factor on restart times per failure category or type
      # time: 20m                 # optional: every failure restarts in this fixed time (overrides source)
    failures:
      rate_multipliers: {Infrastructure: 0.8}  # factor on failure rates per category or type
      mttf: 8h                    # optional override of the bundle: job MTTF at reference_gpus
      reference_gpus: 2048        #   (hazard scales with GPUs: MTTF(g) from proportional hazards)
      shape: 0.7                  #   optional Weibull shape (else exponential) for the override
      model: weibull              # weibull | piecewise: how the bundle's failure model is used
      job_type: Pretrain          # failure-model covariate of the runs
    workload:
      cluster: Seren              # which cluster of the bundle generates the workload (default: the
                                  #   bundle's only cluster, e.g. yours from `acmemodel fit`; Seren for
                                  #   the default bundle)
      scale: 1.0                  # multiplies every arrival intensity
      days: 7                     # simulated horizon of the cluster simulation (days, or 12h...)
      replicas: 1                 # independent workload replicas (common to all quota candidates)
    queue_target: {type: Eval, quantile: 0.9, max_wait: 10m}
    runs:
      - {name: llm-123b, gpus: 2048, work: 30d}
      - {name: llm-7b, gpus: 1024, work: 14d, checkpoint_interval: 45m, ckpt_cost: 30s}
    simulation: {replicas: 10000, seed: 0, threads: 1}

This module holds the sections and :class:`ClusterConfig`; durations, limits, the YAML loader and
the field checks are in :mod:`.config_fields` (names re-exported here).
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from acmemodel.errors import ConfigError
from acmemodel.planner.config_fields import (
    MAX_CLUSTER_GPUS, parse_duration, read_config_file, with_reliability, _check_keys, _check_size, _choice,
    _factors, _num, _pos_int, _seed, _str,
)
from acmemodel.planner.energy import PowerModel
from acmemodel.planner.evalbatch.plan import EvalPlanConfig
from acmemodel.planner.reliability import get_preset


# ------------------------------------------------------------------------------------------ sections
@dataclass
class ClusterSpec:
    """Cluster layout. ``partitions``: name → GPUs or ``"auto"``; ``shared`` is the remainder."""

    gpus: int
    gpus_per_node: int = 8
    partitions: dict = field(default_factory=dict)
    routing: dict = field(default_factory=dict)
    best_effort_on_reserved: bool = False
    backfill: bool = True
    include_runs: bool = True
    priorities: dict = field(default_factory=dict)
    best_effort_types: list | None = None
    latency: bool = False

    @property
    def auto_partition(self) -> str | None:
        autos = [k for k, v in self.partitions.items() if v == "auto"]
        return autos[0] if autos else None


@dataclass
class CheckpointSpec:
    """Checkpoint settings: blocking cost of a sync / async checkpoint (s), mode, interval (s or auto)."""

    mode: str = "sync"
    sync_cost_s: float = 60.0
    async_cost_s: float = 5.0
    interval_s: float | str = "auto"
    #: where the cost of :attr:`mode` came from: ``"config"`` (set in the file), ``"preset"`` (the
    #: reliability preset's published write cost) or ``"default"``
    cost_source: str = "default"

    @property
    def cost_s(self) -> float:
        """The blocking cost that applies in :attr:`mode`."""
        return self.sync_cost_s if self.mode == "sync" else self.async_cost_s


@dataclass
class RestartSpec:
    """The ``restart`` section: where restart times come from (``source``: ``auto``, ``bundle``,
    ``table``), an explicit fixed restart time for every failure (``time_s``, seconds, or None) and the
    restart-automation factors per failure category or type (``automation``)."""

    source: str = "auto"
    automation: dict = field(default_factory=dict)
    time_s: float | None = None

    def __post_init__(self):
        if self.source not in ("auto", "bundle", "table"):
            raise ConfigError(f"restart.source must be 'auto', 'bundle' or 'table', got {self.source!r}")
        if self.time_s is not None and not (math.isfinite(float(self.time_s)) and self.time_s >= 0):
            raise ConfigError(f"restart.time must be a duration >= 0 s, got {self.time_s!r}")


@dataclass
class FailureSpec:
    """The ``failures`` section: the failure-rate assumption (a reliability preset, an explicit MTTF at
    ``reference_gpus`` with an optional Weibull ``shape``, else the bundle's failure model used as
    ``model`` for ``job_type``) and the rate multipliers per failure category or type. Precedence:
    :meth:`acmemodel.planner.run.inputs.RunInputs.from_bundle`."""

    rate_multipliers: dict = field(default_factory=dict)
    mttf_s: float | None = None
    reference_gpus: int | None = None
    shape: float | None = None
    model: str = "weibull"
    job_type: str = "Pretrain"
    #: the name of a published reliability preset (:data:`acmemodel.planner.reliability.PRESETS`) or None
    reliability: str | None = None
    #: that preset (:class:`~acmemodel.planner.reliability.ReliabilityPreset`), resolved when read
    preset: Any = field(default=None, repr=False, compare=False)

    def __post_init__(self):
        if self.model not in ("weibull", "piecewise"):
            raise ConfigError(f"failures.model must be 'weibull' or 'piecewise', got {self.model!r}")
        if self.mttf_s is None and (self.reference_gpus is not None or self.shape is not None):
            raise ConfigError("failures.reference_gpus and failures.shape need failures.mttf")
        if self.mttf_s is not None and not (np.ndim(self.mttf_s) == 0 and math.isfinite(float(self.mttf_s))
                                            and self.mttf_s > 0):
            raise ConfigError(f"failures.mttf must be a positive duration, got {self.mttf_s!r}")
        if self.reference_gpus is not None and (int(self.reference_gpus) != self.reference_gpus
                                                or self.reference_gpus < 1):
            raise ConfigError(f"failures.reference_gpus must be a positive integer, got {self.reference_gpus!r}")
        if self.reliability is not None and self.preset is None:
            self.preset = get_preset(self.reliability, "failures.reliability")


@dataclass
class Assumptions:
    """The failure and restart sections of a configuration on their own: what one run's inputs need
    (:meth:`acmemodel.planner.run.inputs.RunInputs.from_bundle`) when there is no whole configuration."""

    failures: FailureSpec = field(default_factory=FailureSpec)
    restart: RestartSpec = field(default_factory=RestartSpec)


@dataclass
class WorkloadSpec:
    #: the bundle cluster whose models generate the workload; None: resolved against the bundle when the
    #: plan starts (its only cluster; Seren for the default bundle)
    cluster: str | None = None
    scale: float = 1.0
    days: float = 7.0
    replicas: int = 1


@dataclass
class QueueTarget:
    type: str = "Eval"
    quantile: float = 0.9
    max_wait_s: float = 600.0


@dataclass
class RunSpec:
    """One pretraining run: GPUs, failure-free work (s), optional interval / checkpoint-cost overrides."""

    name: str
    gpus: int
    work_s: float
    checkpoint_interval_s: float | str | None = None
    ckpt_cost_s: float | None = None


@dataclass
class SimulationSpec:
    replicas: int = 10_000
    seed: int = 0
    threads: int = 1


# ---------------------------------------------------------------- the sections of a configuration
def _cluster_section(c) -> ClusterSpec:
    """The ``cluster`` section: size, partitions (GPUs or ``auto``), routing, scheduling flags, priorities."""
    c = _check_keys(c, {"gpus", "gpus_per_node", "partitions", "routing",
                                     "best_effort_on_reserved", "backfill", "include_runs", "priorities",
                                     "best_effort_types", "latency"}, "cluster")
    if "gpus" not in c:
        raise ConfigError("cluster.gpus is required")
    gpn = _pos_int(c.get("gpus_per_node", 8), "cluster.gpus_per_node")
    gpus = _pos_int(c["gpus"], "cluster.gpus", hi=MAX_CLUSTER_GPUS)
    if gpus % gpn:
        raise ConfigError(f"cluster.gpus must be a multiple of cluster.gpus_per_node={gpn}, got {gpus}")
    parts_in = c.get("partitions") or {}
    if not isinstance(parts_in, Mapping):
        raise ConfigError("cluster.partitions must be a mapping of partition name to GPUs or 'auto'")
    parts: dict = {}
    for k, v in parts_in.items():
        where = f"cluster.partitions.{k}"
        if k == "shared":
            raise ConfigError(f"{where}: 'shared' is the remainder of the cluster; do not set it")
        if v == "auto":
            if k not in ("eval", "pretrain"):
                raise ConfigError(f"{where} = auto: only the 'eval' lane or the 'pretrain' reservation "
                                  "can be searched")
            parts[str(k)] = "auto"
            continue
        g = _pos_int(v, where, allow_zero=True)
        if g % gpn:
            raise ConfigError(f"{where} must be a multiple of cluster.gpus_per_node={gpn}, got {g}")
        parts[str(k)] = g
    if sum(1 for v in parts.values() if v == "auto") > 1:
        raise ConfigError("cluster.partitions: at most one partition can be 'auto'")
    fixed = sum(v for v in parts.values() if v != "auto")
    if fixed > gpus:
        raise ConfigError(f"cluster.partitions use {fixed} GPUs, more than cluster.gpus={gpus}")
    routing = c.get("routing") or {}
    if not isinstance(routing, Mapping):
        raise ConfigError("cluster.routing must be a mapping of job type to partition")
    known = set(parts) | {"shared"}
    for t, p in routing.items():
        _str(t, "cluster.routing key (a job type)")
        if not isinstance(p, str):
            raise ConfigError(f"cluster.routing.{t} must be one partition name ({sorted(known)}), "
                              f"got {p!r}")
        if p not in known:
            raise ConfigError(f"cluster.routing.{t} = {p!r} is not a partition ({sorted(known)})")
    flags = {}
    for k, d in (("best_effort_on_reserved", False), ("backfill", True), ("include_runs", True),
                 ("latency", False)):
        v = c.get(k, d)
        if not isinstance(v, bool):
            raise ConfigError(f"cluster.{k} must be true or false, got {v!r}")
        flags[k] = v
    prios = c.get("priorities") or {}
    if not isinstance(prios, Mapping):
        raise ConfigError("cluster.priorities must be a mapping of job type to an integer priority")
    priorities = {}
    for t, v in prios.items():
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or int(v) != v \
                or abs(v) > 1e6:
            raise ConfigError(f"cluster.priorities.{t} must be an integer (higher runs first), got {v!r}")
        priorities[str(t)] = int(v)
    bet = c.get("best_effort_types")
    if bet is not None:
        if not isinstance(bet, list) or not all(isinstance(t, str) for t in bet):
            raise ConfigError(f"cluster.best_effort_types must be a list of job types, got {bet!r}")
        if not flags["best_effort_on_reserved"]:
            raise ConfigError("cluster.best_effort_types needs cluster.best_effort_on_reserved: true")
    if flags["best_effort_on_reserved"] and "pretrain" not in parts:
        raise ConfigError("cluster.best_effort_on_reserved needs a cluster.partitions.pretrain reservation")
    return ClusterSpec(gpus=gpus, gpus_per_node=gpn, partitions=parts,
                       routing={str(k): str(v) for k, v in routing.items()}, priorities=priorities,
                       best_effort_types=None if bet is None else [str(t) for t in bet], **flags)


def _checkpoint_section(ck) -> CheckpointSpec:
    """The ``checkpoint`` section: mode, the costs of both modes, the interval (``auto`` or a duration)."""
    ck = _check_keys(ck, {"mode", "sync_cost", "async_cost", "interval"}, "checkpoint")
    interval = ck.get("interval", "auto")
    checkpoint = CheckpointSpec(
        mode=_choice(ck.get("mode", "sync"), "checkpoint.mode", ("sync", "async")),
        sync_cost_s=parse_duration(ck.get("sync_cost", 60.0), "checkpoint.sync_cost"),
        async_cost_s=parse_duration(ck.get("async_cost", 5.0), "checkpoint.async_cost"),
        interval_s="auto" if interval == "auto" else parse_duration(interval, "checkpoint.interval"))
    if ("sync_cost" if checkpoint.mode == "sync" else "async_cost") in ck:
        checkpoint.cost_source = "config"
    return checkpoint


def _restart_section(rs) -> RestartSpec:
    """The ``restart`` section: source, automation factors, an optional fixed restart time."""
    rs = _check_keys(rs, {"source", "automation", "time"}, "restart")
    return RestartSpec(source=_choice(rs.get("source", "auto"), "restart.source", ("auto", "bundle", "table")),
                       automation=_factors(rs.get("automation"), "restart.automation"),
                       time_s=None if rs.get("time") is None else parse_duration(rs["time"], "restart.time",
                                                                                  allow_zero=True))


def _failures_section(fs) -> FailureSpec:
    """The ``failures`` section: a reliability preset or an explicit MTTF (with ``reference_gpus``,
    ``shape``), the failure model's use and job type, the rate multipliers."""
    fs = _check_keys(fs, {"rate_multipliers", "mttf", "reference_gpus", "shape", "model",
                                           "job_type", "reliability"}, "failures")
    preset = None
    if fs.get("reliability") is not None:
        preset = get_preset(fs["reliability"], "failures.reliability")
        if fs.get("mttf") is not None:
            raise ConfigError("failures.reliability and failures.mttf both set the failure rate; give one")
    mttf = fs.get("mttf")
    failures = FailureSpec(
        rate_multipliers=_factors(fs.get("rate_multipliers"), "failures.rate_multipliers"),
        mttf_s=None if mttf is None else parse_duration(mttf, "failures.mttf"),
        reference_gpus=None if fs.get("reference_gpus") is None else _pos_int(fs["reference_gpus"],
                                                                              "failures.reference_gpus"),
        shape=None if fs.get("shape") is None else _num(fs["shape"], "failures.shape", lo=0.1, hi=50.0),
        model=_choice(fs.get("model", "weibull"), "failures.model", ("weibull", "piecewise")),
        job_type=_str(fs.get("job_type", "Pretrain"), "failures.job_type"),
        reliability=None if preset is None else preset.name, preset=preset)
    if failures.mttf_s is None and (failures.reference_gpus is not None or failures.shape is not None):
        raise ConfigError("failures.reference_gpus and failures.shape need failures.mttf")
    return failures


def _workload_section(ws) -> WorkloadSpec:
    """The ``workload`` section: the bundle cluster, scale, days (a number or a duration), replicas."""
    ws = _check_keys(ws, {"cluster", "scale", "days", "replicas"}, "workload")
    days = ws.get("days", 7.0)  # a number of days or a duration string
    days = (_num(days, "workload.days", lo=0.0, lo_open=True) if isinstance(days, (int, float))
            and not isinstance(days, bool) else parse_duration(days, "workload.days") / 86400.0)
    return WorkloadSpec(cluster=None if ws.get("cluster") is None else _str(ws["cluster"], "workload.cluster"),
                        scale=_num(ws.get("scale", 1.0), "workload.scale", lo=0.0, lo_open=True),
                        days=days, replicas=_pos_int(ws.get("replicas", 1), "workload.replicas"))


def _queue_target_section(qt) -> QueueTarget:
    """The ``queue_target`` section: job type, quantile (< 1), maximum wait."""
    qt = _check_keys(qt, {"type", "quantile", "max_wait"}, "queue_target")
    q = _num(qt.get("quantile", 0.9), "queue_target.quantile", lo=0.0, lo_open=True, hi=1.0)
    if q >= 1.0:
        raise ConfigError(f"queue_target.quantile must be < 1, got {q!r}")
    return QueueTarget(type=_str(qt.get("type", "Eval"), "queue_target.type"), quantile=q,
                       max_wait_s=parse_duration(qt.get("max_wait", 600.0), "queue_target.max_wait",
                                                 allow_zero=True))


def _runs_section(runs_in, cluster: ClusterSpec) -> list:
    """The ``runs`` list: unique names, GPUs within the cluster (and its pretrain reservation), work, overrides."""
    if not isinstance(runs_in, list):
        raise ConfigError("runs must be a list of pretraining runs ([] for a quota-only plan)")
    runs, names = [], set()
    for i, r in enumerate(runs_in):
        where = f"runs[{i}]"
        r = _check_keys(r, {"name", "gpus", "work", "checkpoint_interval", "ckpt_cost"}, where)
        for req in ("gpus", "work"):
            if req not in r:
                raise ConfigError(f"{where}.{req} is required")
        nm = _str(r.get("name", f"run{i + 1}"), f"{where}.name")
        if nm in names:
            raise ConfigError(f"{where}.name {nm!r} is used twice")
        names.add(nm)
        g = _pos_int(r["gpus"], f"{where}.gpus")
        if g > cluster.gpus:
            raise ConfigError(f"{where}.gpus = {g} exceeds cluster.gpus = {cluster.gpus}")
        cap = cluster.partitions.get("pretrain")
        if cluster.include_runs and isinstance(cap, int) and g > cap:
            raise ConfigError(f"{where}.gpus = {g:,} exceeds cluster.partitions.pretrain = {cap:,}, the "
                              "reservation the runs occupy in the cluster simulation: enlarge it (or 'auto'), "
                              "or set cluster.include_runs: false")
        iv = r.get("checkpoint_interval")
        runs.append(RunSpec(
            name=nm, gpus=g, work_s=parse_duration(r["work"], f"{where}.work"),
            checkpoint_interval_s=None if iv is None else ("auto" if iv == "auto" else
                                                           parse_duration(iv, f"{where}.checkpoint_interval")),
            ckpt_cost_s=None if r.get("ckpt_cost") is None else parse_duration(r["ckpt_cost"],
                                                                                f"{where}.ckpt_cost")))
    return runs


def _evaluation_section(ev, base_dir):
    """The optional ``evaluation`` batch (:class:`EvalPlanConfig`), its errors prefixed ``evaluation:``."""
    if ev is None:
        return None
    ev = _check_keys(ev, {"model_size_gb", "hardware", "datasets", "packing", "nodes", "policy"}, "evaluation")
    ev.setdefault("nodes", [1])
    ev.setdefault("policy", "decoupled")
    try:
        return EvalPlanConfig.from_dict(ev, base_dir=base_dir)
    except ConfigError as e:
        raise ConfigError(f"evaluation: {e}") from None


@dataclass
class ClusterConfig:
    """A validated planner configuration (see the module docstring for the schema)."""

    cluster: ClusterSpec
    runs: list
    name: str = "cluster"
    checkpoint: CheckpointSpec = field(default_factory=CheckpointSpec)
    restart: RestartSpec = field(default_factory=RestartSpec)
    failures: FailureSpec = field(default_factory=FailureSpec)
    workload: WorkloadSpec = field(default_factory=WorkloadSpec)
    queue_target: QueueTarget = field(default_factory=QueueTarget)
    simulation: SimulationSpec = field(default_factory=SimulationSpec)
    #: optional evaluation batch of each checkpoint (:class:`~acmemodel.planner.evalbatch.plan.EvalPlanConfig`):
    #: ``plan`` then reports the evaluation feedback delay (Eval queue wait + batch makespan)
    evaluation: Any = None
    #: power model of the GPU-time loss (:class:`acmemodel.planner.energy.PowerModel`)
    energy: Any = None
    #: report the sensitivity band of every run (:mod:`acmemodel.planner.sensitivity`)
    sensitivity: bool = True
    source: str | None = None

    def __post_init__(self):
        if self.energy is None:
            self.energy = PowerModel()

    # ---------------------------------------------------------------- loading
    @classmethod
    def load(cls, path: str | Path, *, reliability: str | None = None) -> "ClusterConfig":
        """Read a ``.yaml``/``.yml`` or ``.toml`` file and validate it. ``reliability``: a preset name that
        replaces the file's ``failures.reliability`` / ``failures.mttf`` (the ``--reliability`` option)."""
        p = Path(path)
        data = read_config_file(p)
        if reliability is not None:
            data = with_reliability(data, reliability, where=p.name)
        cfg = cls.from_dict(data, base_dir=p.parent)
        cfg.source = str(p)
        return cfg

    @classmethod
    def from_dict(cls, data: Mapping, *, base_dir: Path | None = None) -> "ClusterConfig":
        """Validate a plain dict (as parsed from YAML/TOML); ``base_dir``: where relative paths (an
        evaluation batch CSV) are resolved."""
        _check_size(data)
        top = _check_keys(data, {"name", "cluster", "checkpoint", "restart", "failures", "workload",
                                 "queue_target", "runs", "simulation", "evaluation", "energy", "sensitivity"},
                          "config")
        if "cluster" not in top:
            raise ConfigError("config.cluster is required (at least cluster.gpus)")
        name = _str(top.get("name", "cluster"), "name")

        cluster = _cluster_section(top["cluster"])
        checkpoint = _checkpoint_section(top.get("checkpoint"))
        restart = _restart_section(top.get("restart"))
        failures = _failures_section(top.get("failures"))
        preset = failures.preset
        if preset is not None and preset.ckpt_cost_s is not None:
            # the preset's published checkpoint write cost, unless the config sets the cost of its mode
            if checkpoint.cost_source != "config":
                key = "sync_cost" if checkpoint.mode == "sync" else "async_cost"
                setattr(checkpoint, f"{key}_s", float(preset.ckpt_cost_s))
                checkpoint.cost_source = "preset"
        workload = _workload_section(top.get("workload"))
        target = _queue_target_section(top.get("queue_target"))
        runs = _runs_section(top.get("runs"), cluster)
        ss = _check_keys(top.get("simulation"), {"replicas", "seed", "threads"}, "simulation")
        sim = SimulationSpec(replicas=_pos_int(ss.get("replicas", 10_000), "simulation.replicas"),
                             seed=_seed(ss.get("seed", 0), "simulation.seed"),
                             threads=_pos_int(ss.get("threads", 1), "simulation.threads"))
        evaluation = _evaluation_section(top.get("evaluation"), base_dir)
        energy = PowerModel.from_dict(_check_keys(top.get("energy"), {f for f in PowerModel.__dataclass_fields__},
                                                  "energy"))
        band = top.get("sensitivity", True)
        if not isinstance(band, bool):
            raise ConfigError(f"sensitivity must be true or false, got {band!r}")
        return cls(cluster=cluster, runs=runs, name=name, checkpoint=checkpoint, restart=restart,
                   failures=failures, workload=workload, queue_target=target, simulation=sim,
                   evaluation=evaluation, energy=energy, sensitivity=band)


    def to_dict(self) -> dict:
        """Plain-dict view (seconds), e.g. for reports."""
        ev, en = self.evaluation, self.energy
        self.evaluation = self.energy = None     # objects: summarised below
        try:
            d = asdict(self)
        finally:
            self.evaluation, self.energy = ev, en
        d["energy"] = en.to_dict()
        d["failures"].pop("preset", None)
        d.pop("source", None)
        d["evaluation"] = None if ev is None else {"datasets": len(ev.batch), "nodes": ev.nodes,
                                                   "policy": ev.policy}
        return d

    # ---------------------------------------------------------------- helpers for the planner
    def with_failures(self, **changes) -> "ClusterConfig":
        """A copy of this configuration whose ``failures`` section has ``changes`` (field: value)."""
        return replace(self, failures=replace(self.failures, **changes))

    def run_interval(self, run: RunSpec) -> float | str:
        """The checkpoint interval that applies to ``run`` (seconds or ``"auto"``)."""
        return run.checkpoint_interval_s if run.checkpoint_interval_s is not None else self.checkpoint.interval_s

    def run_ckpt_cost(self, run: RunSpec) -> float:
        """The blocking checkpoint cost of ``run`` (its override, else the mode's cost)."""
        return run.ckpt_cost_s if run.ckpt_cost_s is not None else self.checkpoint.cost_s
