"""The steps :meth:`acmemodel.planner.planner.Planner.plan` is built from that need no planner: which
planned runs are simulated and which are excluded (and why), the preparation of a given workload, the
pooled queue figures and the configured quotas.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from acmemodel.planner.config import ClusterConfig
from acmemodel.sim.cluster import default_routing, prepare_jobs, wait_quantile

#: one day (s)
DAY = 86400.0
#: the job type of the planned runs in the simulated workload
PLANNED_TYPE = "Pretrain (planned)"

# ------------------------------------------------------------------------------------------ helpers
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


def _num(v):
    v = float(v)
    return v if math.isfinite(v) else None


def _pooled_queue(results) -> dict:
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
