"""Evaluation planner: how long one checkpoint's evaluation batch takes on N nodes, coupled or decoupled.

The model (phases, the two policies, the packing rules) is stated in :mod:`.schedule`; the inputs
(datasets, hardware, packing thresholds, the default batch, fitted priors) are in :mod:`.inputs`. This
module is the planner front: a validated configuration (:class:`EvalPlanConfig`), :class:`EvalPlanner`
and its result, and the evaluation feedback delay the run planner reports (:func:`feedback_from_plan`).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Mapping, Sequence

import pandas as pd

from acmemodel.errors import ConfigError
from acmemodel.planner.evalbatch.inputs import (
    OVERHEAD_SOURCES, Dataset, DatasetPriors, EvalBatch, EvalHardware, EvalOverheads, PackingRules,
    check_nodes, default_batch,
)
from acmemodel.planner.evalbatch.schedule import (
    BatchSchedule, Interval, coupled_tasks, pack_trials, simulate_coupled, simulate_decoupled,
)
from acmemodel.planner.config_fields import _check_keys, parse_duration, read_config_file
from acmemodel.planner.report import write_eval_report


# ----------------------------------------------------------------------------------------- planner
@dataclass
class EvalPlanConfig:
    """An evaluation-batch configuration (YAML/TOML)::

        model_size_gb: 14             # checkpoint size (GB)
        hardware: {gpus_per_node: 8, storage_gbit_s: 25, pcie_gbyte_s: 20, gpu_memory_gb: 80,
                   node_memory_gb: 1024, cpu_slots_per_node: 64}
        datasets: default             # default | a priors CSV (relative to this file) | a list of
                                      #   {name, preprocess, generate, metric} (durations: 90s, 2m...)
        packing: {merge_below: 60s, split_above: auto, long_metric: 5m}
        overheads: {trial_startup_s: 8s, metric_threads: 16, cpu_threads_per_node: 128,
                    metric_queue_s: 88.4s, precursor_efficiency: 1.0, coupled_packing: random,
                    coupled_orders: 401}   # EvalOverheads (each value's source in its docstring)
                                      # coupled_packing: random | submission | toolkit | opencompass
        nodes: [1, 4]
        policy: both                  # coupled | decoupled | both
    """

    batch: EvalBatch
    hardware: EvalHardware = field(default_factory=EvalHardware)
    rules: PackingRules = field(default_factory=PackingRules)
    nodes: list = field(default_factory=lambda: [1, 2, 4, 8])
    policy: str = "both"
    source: str | None = None
    overheads: EvalOverheads = field(default_factory=EvalOverheads)

    @classmethod
    def from_dict(cls, data: Mapping | None, *, base_dir: Path | None = None) -> "EvalPlanConfig":
        top = _check_keys(data or {}, {"model_size_gb", "hardware", "datasets", "packing", "nodes", "policy",
                                       "overheads"}, "evaluation config")
        ov_d = _check_keys(top.get("overheads"), set(EvalOverheads.__dataclass_fields__), "overheads")
        for k in ("trial_startup_s", "metric_queue_s"):
            if k in ov_d:
                ov_d[k] = parse_duration(ov_d[k], f"overheads.{k}", allow_zero=True)
        overheads = EvalOverheads(**ov_d).validate()
        hw_d = _check_keys(top.get("hardware"), {f for f in EvalHardware.__dataclass_fields__
                                                 if f != "model_size_gb"}, "hardware")
        if "model_size_gb" in top:
            hw_d["model_size_gb"] = top["model_size_gb"]
        hw = EvalHardware(**hw_d).validate()
        pk = _check_keys(top.get("packing"), {"merge_below", "split_above", "long_metric"}, "packing")
        rules = PackingRules(
            merge_below_s=parse_duration(pk.get("merge_below", 60.0), "packing.merge_below", allow_zero=True),
            split_above_s=(None if pk.get("split_above", "auto") == "auto"
                           else parse_duration(pk["split_above"], "packing.split_above")),
            long_metric_s=parse_duration(pk.get("long_metric", 300.0), "packing.long_metric", allow_zero=True),
        ).validate()
        ds = top.get("datasets", "default")
        if ds == "default":
            batch = default_batch()
        elif isinstance(ds, str):
            p = Path(ds)
            if not p.is_absolute() and base_dir is not None:
                p = base_dir / p
            batch = EvalBatch.from_csv(p)
        elif isinstance(ds, list):
            out = []
            for i, item in enumerate(ds):
                it = _check_keys(item, {"name", "preprocess", "generate", "metric"}, f"datasets[{i}]")
                name = str(it.get("name", "")).strip()
                if not name:
                    raise ConfigError(f"datasets[{i}].name is missing")
                vals = {}
                for k in ("preprocess", "generate", "metric"):
                    if k not in it:
                        raise ConfigError(f"dataset {name!r}: {k} is missing")
                    vals[f"{k}_s"] = parse_duration(it[k], f"dataset {name!r}: {k}", allow_zero=k != "generate")
                out.append(Dataset(name, **vals))
            batch = EvalBatch(out, source="config")
        else:
            raise ConfigError(f"datasets must be 'default', a CSV path or a list, got {type(ds).__name__}")
        nodes = top.get("nodes", [1, 2, 4, 8])
        nodes = [nodes] if isinstance(nodes, int) else nodes
        if not isinstance(nodes, list) or not nodes:
            raise ConfigError(f"nodes must be a positive integer or a non-empty list, got {nodes!r}")
        nodes = [check_nodes(n) for n in nodes]
        policy = top.get("policy", "both")
        if policy not in ("coupled", "decoupled", "both"):
            raise ConfigError(f"policy must be one of coupled, decoupled, both, got {policy!r}")
        return cls(batch, hw, rules, nodes, policy, overheads=overheads)

    @classmethod
    def load(cls, path: str | Path) -> "EvalPlanConfig":
        p = Path(path)
        cfg = cls.from_dict(read_config_file(p), base_dir=p.parent)
        cfg.source = str(p)
        return cfg


@dataclass
class EvalPlanResult:
    """Schedules of one batch per node count and policy; ``summary()`` one row per node count."""

    config: EvalPlanConfig
    schedules: dict            # (policy, nodes) -> BatchSchedule

    def speedup(self, nodes: int) -> float | None:
        c, d = self.schedules.get(("coupled", nodes)), self.schedules.get(("decoupled", nodes))
        return c.makespan_s / d.makespan_s if c and d else None

    def summary(self) -> pd.DataFrame:
        rows = []
        for (policy, n), s in sorted(self.schedules.items(), key=lambda kv: (kv[0][1], kv[0][0])):
            d = s.to_dict()
            rows.append({"nodes": n, "policy": policy, "makespan_s": d["makespan_s"],
                         "first_result_s": d["first_result_s"], "gpu_hours_held": d["gpu_hours_held"],
                         "gpu_hours_used": d["gpu_hours_used"], "gpu_idle_share": d["gpu_idle_share"],
                         "speedup": self.speedup(n) if policy == "decoupled" else None,
                         "packing": d["packing"]})
        return pd.DataFrame(rows)

    def to_dict(self) -> dict:
        cfg = self.config
        return {"datasets": len(cfg.batch), "source": cfg.batch.source, "hardware": asdict(cfg.hardware),
                "packing": asdict(cfg.rules), "overheads": asdict(cfg.overheads),
                "overheads_metric_slots_per_node": cfg.overheads.metric_slots(cfg.hardware),
                "overheads_sources": dict(OVERHEAD_SOURCES), "nodes": cfg.nodes,
                "policy": cfg.policy,
                "schedules": [s.to_dict() for _, s in sorted(self.schedules.items(), key=lambda kv: (kv[0][1],
                                                                                                   kv[0][0]))],
                "speedup": {str(n): self.speedup(n) for n in cfg.nodes}}

    def report(self, path: str | Path) -> str:
        return write_eval_report(self, path)


class EvalPlanner:
    """Plan one evaluation batch: ``EvalPlanner().plan(config)`` → :class:`EvalPlanResult`."""

    def plan(self, config: EvalPlanConfig) -> EvalPlanResult:
        scheds = {}
        for n in config.nodes:
            if config.policy in ("coupled", "both"):
                scheds[("coupled", n)] = simulate_coupled(config.batch, n, config.hardware, config.overheads,
                                                          config.rules)
            if config.policy in ("decoupled", "both"):
                scheds[("decoupled", n)] = simulate_decoupled(config.batch, n, config.hardware, config.rules,
                                                              config.overheads, scheds.get(("coupled", n)))
        return EvalPlanResult(config, scheds)


def plan_batch(batch: EvalBatch | None = None, nodes: Sequence[int] = (1, 2, 4, 8), *, policy: str = "both",
               hardware: EvalHardware | None = None, rules: PackingRules | None = None,
               overheads: EvalOverheads | None = None) -> EvalPlanResult:
    """Convenience: plan ``batch`` (default: :func:`default_batch`) on each node count with ``overheads``
    (default: the stated costs of :class:`EvalOverheads`)."""
    cfg = EvalPlanConfig(batch or default_batch(), (hardware or EvalHardware()).validate(),
                         (rules or PackingRules()).validate(), [check_nodes(n) for n in nodes], policy,
                         overheads=(overheads or EvalOverheads()).validate())
    return EvalPlanner().plan(cfg)


def feedback_from_plan(config: EvalPlanConfig, cluster: Mapping) -> list[dict]:
    """Evaluation feedback delay of a checkpoint, per configured node count and policy: the Eval queue
    wait of the plan's cluster simulation (p50 and p90 of one Eval job's wait, taken as the wait for the
    batch's GPUs) plus the batch makespan, in seconds. Without a simulated Eval queue the waits are
    ``None`` and only the makespan is known."""
    q = (cluster.get("queue_s") or {}).get("Eval") if cluster.get("available", True) else None
    wait = {k: (None if q is None else q.get(k)) for k in ("p50", "p90")}
    out = []
    for (policy, n), s in sorted(EvalPlanner().plan(config).schedules.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        row = {"nodes": n, "policy": policy, "makespan_s": s.makespan_s,
               "eval_wait_p50_s": wait["p50"], "eval_wait_p90_s": wait["p90"],
               "wait_source": "cluster simulation" if q is not None else "not simulated"}
        for k in ("p50", "p90"):
            row[f"feedback_{k}_s"] = None if wait[k] is None else wait[k] + s.makespan_s
        out.append(row)
    return out


__all__ = ["Dataset", "EvalHardware", "PackingRules", "EvalBatch", "default_batch", "DatasetPriors",
           "EvalOverheads", "BatchSchedule", "Interval", "coupled_tasks", "simulate_coupled", "simulate_decoupled", "pack_trials",
           "EvalPlanConfig", "EvalPlanResult", "EvalPlanner", "plan_batch", "feedback_from_plan", "check_nodes"]
