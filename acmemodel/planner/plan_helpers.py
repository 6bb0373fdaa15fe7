"""The steps :meth:`acmemodel.planner.planner.Planner.plan` is built from, outside the class: the
checks of a configuration against the bundle, the registry of workload samplers (entry-point group
:data:`SAMPLER_ENTRY_POINTS`), which planned runs are simulated and which are excluded (and why),
the preparation of a given workload, the per-run cost curve, the pooled queue figures, the
configured quotas and the assumption notes of the report. Every name stays importable from
:mod:`acmemodel.planner.planner`.
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Callable

import numpy as np
import pandas as pd

from acmemodel.errors import ConfigError
from acmemodel.planner.checkpoint import CheckpointResult, expected_time
from acmemodel.planner.config import ClusterConfig

if TYPE_CHECKING:  # the class whose plan these steps make up (no import at run time)
    from acmemodel.planner.planner import Planner

#: one day (s)
DAY = 86400.0
#: the job type of the planned runs in the simulated workload
PLANNED_TYPE = "Pretrain (planned)"

# ------------------------------------------------------------------------------------------ helpers
def _check_config_against_bundle(planner: "Planner", config: ClusterConfig, *, cluster: bool) -> None:
    """Refuse config values the bundle does not know instead of silently falling back:
    ``failures.job_type`` (a type of the bundle's failure model, when that model is used) and, when the
    cluster is simulated on the bundle's workload, ``workload.cluster`` (a cluster of its arrival model)
    and ``queue_target.type`` (a type that model generates there). :class:`ConfigError` naming the field."""
    fs, wl, qt = config.failures, config.workload, config.queue_target
    if fs.mttf_s is None and planner.mttf is None and planner._has_bundle():
        design = getattr(planner.bundle.get("failure"), "design_", None)
        known = sorted(getattr(design, "type_map", None) or [])
        if known and fs.job_type not in known:
            raise ConfigError(f"failures.job_type = {fs.job_type!r} is not a job type of the bundle's failure "
                              f"model (known: {', '.join(known)})")
    if not cluster or not planner._has_bundle():
        return
    arrival = planner.bundle.get("arrival")
    if arrival is None:
        return
    clusters = list(arrival.clusters_)
    if wl.cluster not in clusters:
        raise ConfigError(f"workload.cluster = {wl.cluster!r} is not a cluster of the bundle's arrival model "
                          f"(known: {', '.join(clusters)})")
    types = list(arrival.types(wl.cluster))
    if qt.type not in types:
        raise ConfigError(f"queue_target.type = {qt.type!r} is not a job type the bundle generates for "
                          f"{wl.cluster} (known: {', '.join(types)})")


#: entry-point group of workload samplers (``pyproject.toml`` registers ``default`` =
#: :func:`acmemodel.synth.sample_workload`): the planner finds its default sampler through the package's
#: metadata, so it never imports the synthesiser that sits above it
SAMPLER_ENTRY_POINTS = "acmemodel.workload_samplers"


def registered_sampler(name: str = "default") -> Callable | None:
    """The workload sampler registered under ``name`` in the :data:`SAMPLER_ENTRY_POINTS` group, or
    ``None`` (e.g. when running from a source tree that was never installed)."""
    from importlib.metadata import entry_points

    for ep in entry_points(group=SAMPLER_ENTRY_POINTS):
        if ep.name == name:
            return ep.load()
    return None


def _planned_runs(config: ClusterConfig) -> list:
    """The runs injected into the cluster simulation (``include_runs``, fitting the pretrain partition)."""
    return [r for r in config.runs if _run_exclusion(config, r) is None]


def _run_exclusion(config: ClusterConfig, run) -> str | None:
    """Why ``run`` is left out of the cluster simulation (None when it is simulated)."""
    cl = config.cluster
    if not cl.include_runs:
        return "cluster.include_runs is false"
    if "pretrain" not in cl.partitions:
        return "no 'pretrain' partition reserves GPUs for it"
    cap = cl.partitions["pretrain"]
    if cap != "auto" and run.gpus > cap:
        return f"needs {run.gpus:,} GPUs, more than the {cap:,}-GPU 'pretrain' partition"
    return None


def excluded_runs(config: ClusterConfig) -> list[dict]:
    """``[{"name", "gpus", "reason"}]`` of the runs the cluster simulation leaves out (a run without a
    reservation is planned on its own, but occupies no GPUs in the simulated cluster)."""
    return [{"name": r.name, "gpus": r.gpus, "reason": why} for r in config.runs
            if (why := _run_exclusion(config, r)) is not None]


def _prepare_workload(jobs, config: ClusterConfig) -> pd.DataFrame:
    """A job list with a ``partition`` per row (config routing, else the default routing) plus the
    planned runs (type ``"Pretrain (planned)"``, partition ``pretrain``, submitted at the first submission
    and running past the simulated horizon)."""
    from acmemodel.planner.cluster_sim import default_routing, prepare_jobs

    df, _ = prepare_jobs(jobs)
    df = df[["submit_s", "run_s", "gpu_num", "type"] + [c for c in ("partition", "latency_s") if c in df.columns]]
    cl = config.cluster
    names = set(cl.partitions) | {"shared"}
    if "partition" not in df.columns:
        route = default_routing(sorted(df["type"].astype(str).unique()), names)
        route.update(cl.routing)
        df = df.assign(partition=df["type"].astype(str).map(route))
    planned = _planned_runs(config)
    if planned:
        t0 = float(df["submit_s"].min()) if len(df) else 0.0
        span = float(df["submit_s"].max() - t0) if len(df) else DAY
        extra = pd.DataFrame({"submit_s": t0, "run_s": 2 * max(span, DAY), "gpu_num": [r.gpus for r in planned],
                              "type": PLANNED_TYPE, "partition": "pretrain"})
        if "latency_s" in df.columns:
            extra["latency_s"] = 0.0
        df = pd.concat([extra, df], ignore_index=True)
    return df.reset_index(drop=True)


def _curve(ck: CheckpointResult, work, C, fail, R, tau_used) -> pd.DataFrame:
    if not bool(ck.finishes):
        return pd.DataFrame(columns=["interval_s", "expected_time_s"])
    t0 = float(ck.interval_s)
    lo, hi = t0 / 8.0, min(t0 * 8.0, work)
    if tau_used is not None:
        lo, hi = min(lo, tau_used / 2), min(max(hi, tau_used * 2), work)
    tau = np.geomspace(lo, hi, 80)
    return pd.DataFrame({"interval_s": tau,
                         "expected_time_s": expected_time(tau, work=work, ckpt_cost=C, failure=fail, restart=R)})


def _num(v):
    v = float(v)
    return v if math.isfinite(v) else None


def _pooled_queue(results) -> dict:
    from acmemodel.planner.cluster_sim import wait_quantile

    frames = []
    for r in results:
        j = r.jobs
        w0, w1 = r.window
        j = j[(j["submit_s"] >= w0) & (j["submit_s"] <= w1)]
        frames.append(pd.DataFrame({"type": j["type"].to_numpy(),
                                    "wait": np.where(j["schedulable"].to_numpy(), j["wait_s"].to_numpy(float),
                                                     np.inf)}))
    allj = pd.concat(frames, ignore_index=True)
    out = {}
    for t, g in allj.groupby("type", sort=True):
        w = np.where(np.isnan(g["wait"].to_numpy(float)), np.inf, g["wait"].to_numpy(float))
        q = [wait_quantile(w, p) for p in (0.5, 0.9)]
        out[str(t)] = {"p50": _num(q[0]), "p90": _num(q[1]), "mean": _num(w.mean()) if np.isfinite(w).all() else None,
                       "count": int(w.size)}
    return out


def _configured_quotas(config: ClusterConfig) -> dict:
    parts = {k: (None if v == "auto" else int(v)) for k, v in config.cluster.partitions.items()}
    fixed = sum(v for v in parts.values() if v is not None)
    if "auto" not in config.cluster.partitions.values():
        parts["shared"] = config.cluster.gpus - fixed
    return parts


def _assumptions(planner: Planner, config: ClusterConfig) -> list[str]:
    out = ["Failures: renewal process, hazard clock restarts at each failure (not at checkpoints); failures "
           "can strike during restarts (Daly).",
           "Checkpoint interval 'auto' minimises the long-run expected wall time (renewal reward); completion "
           "times come from Monte Carlo with exact finite-run accounting.",
           "Failure-type mix: the paper's Table 3 conditioned on the run's GPU count "
           "(acmemodel.models.failure_types.failure_type_mix)."]
    if planner.mttf is not None:
        ref = planner.reference_gpus
        out.append(f"Failure process: explicit MTTF {planner.mttf / 3600:.3g} h"
                   + (f" at {ref} GPUs, hazard proportional to GPUs" if ref else " for every run")
                   + (f", Weibull shape {planner.shape:g}" if planner.shape else ", exponential") + ".")
    else:
        out.append(f"Failure process: the bundle's failure model ({planner.failure_model}, late regime, "
                   f"type={planner.job_type}).")
    if config.failures.rate_multipliers:
        out.append("Failure-rate multipliers: " + ", ".join(f"{k} ×{v:g}" for k, v in
                                                            config.failures.rate_multipliers.items()) + ".")
    if config.restart.automation:
        out.append("Restart-time factors: " + ", ".join(f"{k} ×{v:g}" for k, v in
                                                        config.restart.automation.items()) + ".")
    return out
