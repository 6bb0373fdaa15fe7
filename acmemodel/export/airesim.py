"""Fitted reliability parameters as an AIReSim ``config.yaml``.

AIReSim (github.com/karthikp-ubc/airesim) simulates one large training job on a pool of servers; its
``--params config.yaml`` is a flat mapping of ``Params`` fields (unknown keys are rejected), times in
**minutes**, rates in **failures per minute per server**. This writer fills the fields a trace can
inform and leaves the others at AIReSim's defaults:

==================================  ===========================================================
field                               value
==================================  ===========================================================
``job_size``                        servers = ⌈gpus / gpus_per_server⌉ (8 GPUs per server)
``failure_distribution``            ``weibull`` (``exponential`` if no shape is known)
``weibull_shape``                   k = the fitted late Weibull shape (``FailureModel.shape_``)
``random_failure_rate``             per-server rate, mean-matched (see below), failures / min
``systematic_failure_fraction``     0 — the fitted rate is the whole failure rate (no bad-server
``systematic_failure_rate_mult.``   1   sub-population is identified in a job trace)
``recovery_time``                   mean time to restart after a failure (min): restart gap
                                    (failure → resubmission) + queueing of the new attempt
``host_selection_time``             0 — the restart time above already includes re-scheduling, so
                                    every failure costs exactly ``recovery_time``
``warm_standbys``                   given (default 16, AIReSim's default)
``working_pool_size``               the cluster's nodes if they hold job + standbys, else
                                    job_size + warm_standbys
``spare_pool_size``                 given (default 0: the trace's cluster has no spare pool)
``job_length``                      given ``job_length_s`` / 60 (else AIReSim's default)
==================================  ===========================================================

**Mean matching.** The failure model gives the job-level mean time to failure ``M(g)`` of a job of
``g`` GPUs (late regime: the infrastructure-type failures a long run meets). If each of the job's
``n`` servers fails independently with a Weibull(k, η_s) time to failure, the job fails at the first
of them, which is Weibull(k, η_s · n^(−1/k)); so the per-server mean is ``M(g) · n^(1/k)`` and the
per-server rate AIReSim expects (it mean-matches every distribution to ``1 / rate``) is::

    random_failure_rate = 60 / (M(g) · n^(1/k))      [failures per server per minute; M in s]

For k = 1 this is the familiar ``rate_job / n``. AIReSim's coordinator draws a fresh time to failure
for every server of the job at each run segment and takes the minimum, so the simulated job's time to
failure is then exactly the fitted Weibull(k) with mean ``M(g)``: AIReSim's implied job MTTF,
``(1 / random_failure_rate) · job_size^(−1/k)`` minutes, equals the model's ``M(g) / 60``.

**Same numbers as the planner.** ``M(g)`` is ``failure.mttf(g, type=job_type)`` and the restart time
``restart.restart_distribution(gpus=g, type=job_type)`` (``job_type`` default ``"Pretrain"``, the
planner's default; a model that does not know the key is averaged over its training mix), so the
config reproduces what ``acmemodel plan``/``checkpoint`` use for the same bundle and job size.
AIReSim's recovery is a constant: the restart distribution's *mean* is reproduced (its median and
90th percentile are recorded in the comments; the spread is not).

**Running it.** ``python -m airesim.run --params config.yaml --adaptive`` (``--adaptive`` runs
replications of this configuration; without a mode flag AIReSim ignores the file and runs its
built-in demo sweep). A sidecar ``README.md`` and the YAML comments record the inputs (model, GPU
count, MTTF, shape, restart statistics) so the numbers can be traced back.
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Mapping

import numpy as np
import pandas as pd

from acmemodel.clusters import cluster_info
from acmemodel.export import _common as C
from acmemodel.export import _text as T

#: the ``Params`` fields of AIReSim (airesim/params.py); its YAML loader rejects any other key
AIRESIM_FIELDS: tuple[str, ...] = (
    "random_failure_rate", "systematic_failure_rate_multiplier", "systematic_failure_fraction",
    "recovery_time", "host_selection_time", "job_size", "job_length", "warm_standbys", "working_pool_size",
    "spare_pool_size", "enable_topology", "rack_size", "preemption_wait_time", "auto_repair_time",
    "manual_repair_time", "prob_auto_to_manual", "auto_repair_fail_prob", "manual_repair_fail_prob",
    "failure_distribution", "weibull_shape", "lognormal_sigma", "diagnosis_probability",
    "diagnosis_uncertainty", "bad_server_regeneration", "bad_server_regen_interval", "seed",
    "num_replications", "adaptive_replications", "confidence_level", "relative_accuracy", "max_replications")


def _restart_seconds(restart: Any, gpus: int, job_type: str | None = None
                     ) -> tuple[float, str, dict[str, float]] | None:
    """Mean time to restart (s), where it comes from, and the median / 90th percentile (s).

    A :class:`~acmemodel.models.restart.RestartModel` gives its total time-to-restart distribution
    (resubmission gap + queueing) for ``gpus`` GPUs and ``type=job_type`` (as the planner asks it;
    without ``type`` when the model does not know it), marginalised over the rest of its training
    population (or its published prior when it fell back); other objects may expose a mean directly.
    """
    if hasattr(restart, "restart_distribution"):
        d, used = None, {}
        for kw in (({"type": job_type},) if job_type else ()) + ({},):
            try:
                d = restart.restart_distribution(gpus=float(gpus), component="total", **kw)
                used = kw
                break
            except (ValueError, KeyError, TypeError):
                continue
        if d is None:
            return None
        src = (f"{type(restart).__name__}.restart_distribution(gpus={gpus}, component='total'"
               + "".join(f", {k}={v!r}" for k, v in used.items()) + ").mean()"
               f" [{getattr(d, 'source', '') or 'fitted'}"
               + (", fallback to the published prior" if getattr(restart, "fallback_", False) else "") + "]")
        stats = {}
        for name, q in (("median_s", 0.5), ("p90_s", 0.9)):
            try:
                stats[name] = float(d.quantile(q))
            except Exception:  # a stand-in without quantiles
                pass
        return float(d.mean()), src, stats
    for name in ("mean_time_to_restart_s", "mean_recovery_s", "mean_restart_s"):
        v = getattr(restart, name, None)
        if v is None:
            continue
        val = float(v() if callable(v) else v)
        if math.isfinite(val) and val >= 0:
            return val, f"{type(restart).__name__}.{name}", {}
    return None


def empirical_restart_seconds(jobs: pd.DataFrame) -> tuple[float, int] | None:
    """Mean (restart gap + queueing of the new attempt) over restarted failures of ``jobs``
    (restart chains of :mod:`acmemodel.features.chains`), and how many restarts it averages."""
    df, _ = C.normalize_jobs(jobs)
    df, src = C.ensure_chains(df)
    if src == "none":
        return None
    pos = C.prev_positions(df)
    link = pos >= 0
    if not link.any():
        return None
    start = df["start_s"].to_numpy()
    end = df["end_s"].to_numpy()
    ttr = np.where(np.isnan(start[link]), end[link], start[link]) - end[pos[link]]
    ttr = ttr[np.isfinite(ttr) & (ttr >= 0)]
    if len(ttr) == 0:
        return None
    return float(ttr.mean()), int(len(ttr))


def airesim_params(*, gpus: int | None = None, failure: Any = None, restart: Any = None,
                   jobs: pd.DataFrame | None = None, mttf_s: float | None = None,
                   weibull_shape: float | None = None, recovery_s: float | None = None,
                   gpus_per_server: int = 8, warm_standbys: int = 16, working_pool_size: int | None = None,
                   spare_pool_size: int = 0, job_length_s: float | None = None, cluster: str | None = None,
                   component: str = "late", mttf_key: Mapping[str, Any] | None = None,
                   job_type: str | None = "Pretrain") -> tuple[dict[str, Any], dict[str, Any]]:
    """AIReSim parameters and their provenance (module docstring).

    Parameters
    ----------
    gpus : GPUs of the simulated job (default: with ``jobs``, the GPU count holding the most GPU time
        among its ``job_type`` jobs — the typical large training run AIReSim models — or among all jobs
        when it has none; without, the largest job the failure model was fitted on, ``failure.max_gpus_``).
    failure : fitted ``FailureModel`` (``mttf(gpus)`` in seconds, ``shape_``); or give ``mttf_s`` and
        ``weibull_shape`` (job-level mean time to failure at ``gpus`` GPUs, Weibull shape).
    restart : fitted restart model; ``recovery_s`` (given) and the empirical mean time to restart of
        ``jobs`` (when they hold restart chains) take precedence over it, in that order.
    cluster : cluster name (pool size; also the ``cluster=`` key of ``failure.mttf`` when the model
        knows it).
    component : failure-model component of the MTTF (``"late"``: infrastructure-type failures).
    mttf_key : keys of ``failure.mttf`` (``type=``, ``cluster=``); omitted keys are averaged over the
        training mix.
    job_type : ``type=`` key of the failure and restart models (the planner's default ``"Pretrain"``;
        ``None`` averages over the training mix); dropped for a model that does not know it.
    """
    prov: dict[str, Any] = {}
    if gpus is None and jobs is not None:
        df, _ = C.normalize_jobs(jobs)
        g = df[df["gpu_num"] > 0]
        of = "jobs"
        if job_type is not None and (g["type"].astype(str) == job_type).any():
            g, of = g[g["type"].astype(str) == job_type], f"{job_type} jobs"
        if len(g):
            run = (g["end_s"] - g["start_s"]).fillna(0).clip(lower=0)
            gpus = int((g["gpu_num"] * run).groupby(g["gpu_num"]).sum().idxmax())
            prov["gpus_source"] = f"GPU count holding the most GPU time among the trace's {of}"
    if gpus is None and failure is not None and getattr(failure, "max_gpus_", None) is not None:
        gpus = int(failure.max_gpus_)
        prov["gpus_source"] = "largest job the failure model was fitted on (give gpus / --gpus to change)"
    if gpus is None:
        raise ValueError("gpus: give the GPU count of the simulated job (e.g. gpus=1024)")
    gpus = int(gpus)
    if gpus < 1:
        raise ValueError(f"gpus must be >= 1, got {gpus!r}")
    if gpus_per_server < 1:
        raise ValueError(f"gpus_per_server must be >= 1, got {gpus_per_server!r}")
    n = -(-gpus // int(gpus_per_server))
    if mttf_s is None:
        if failure is None:
            raise ValueError("airesim needs a fitted failure model (failure= / --bundle with a 'failure' "
                             "model) or an explicit mttf_s")
        key = dict(mttf_key or {})
        if cluster is not None and "cluster" not in key:
            key["cluster"] = cluster
        if job_type is not None and "type" not in key:
            key["type"] = job_type
        optional = [k for k in ("cluster", "type") if k in key and k not in (mttf_key or {})]
        while True:
            try:
                mttf_s = float(failure.mttf(gpus, component=component, **key))
                break
            except (ValueError, KeyError, TypeError):
                if not optional:
                    raise
                key.pop(optional.pop(0))  # a key unknown to the model: average over its mix
        prov["mttf_source"] = f"{type(failure).__name__}.mttf({gpus}, component={component!r}" + "".join(
            f", {k}={v!r}" for k, v in key.items()) + ")"
        if getattr(failure, "max_gpus_", None) is not None and gpus > failure.max_gpus_:
            prov["extrapolated"] = (f"{gpus} GPUs is beyond the largest trace job ({failure.max_gpus_}): "
                                    "the fitted size power law is assumed")
    else:
        prov["mttf_source"] = "given (mttf_s)"
    if weibull_shape is None and failure is not None and getattr(failure, "shape_", None) is not None:
        weibull_shape = float(failure.shape_)
        prov["shape_source"] = f"{type(failure).__name__}.shape_"
    elif weibull_shape is not None:
        prov["shape_source"] = "given (weibull_shape)"
    mttf_s = float(mttf_s)
    if not (math.isfinite(mttf_s) and mttf_s > 0):
        raise ValueError(f"mttf_s must be a positive number of seconds, got {mttf_s!r}")
    k = float(weibull_shape) if weibull_shape is not None else 1.0
    if not (math.isfinite(k) and k > 0):
        raise ValueError(f"weibull_shape must be > 0, got {weibull_shape!r}")
    server_mttf_s = mttf_s * n ** (1.0 / k)
    params: dict[str, Any] = {
        "job_size": int(n),
        "failure_distribution": "weibull" if weibull_shape is not None else "exponential",
        "weibull_shape": round(k, 6),
        "random_failure_rate": float(f"{60.0 / server_mttf_s:.6e}"),
        "systematic_failure_fraction": 0.0,
        "systematic_failure_rate_multiplier": 1.0,
    }
    restart_stats: dict[str, float] = {}
    # the trace's own restarts first (what happened), then the restart model (what is typical)
    empirical = empirical_restart_seconds(jobs) if recovery_s is None and jobs is not None else None
    if recovery_s is not None:
        prov["recovery_source"] = "given (recovery_s)"
    elif empirical is not None:
        recovery_s = empirical[0]
        prov["recovery_source"] = f"trace: mean restart gap + queue over {empirical[1]:,} restarts"
        if restart is not None:
            got = _restart_seconds(restart, gpus, job_type)
            if got is not None:
                prov["recovery_model_s"] = got[0]
    elif restart is not None:
        got = _restart_seconds(restart, gpus, job_type)
        if got is None:
            raise ValueError(f"restart: cannot read a mean time to restart from {type(restart).__name__}; "
                             "give recovery_s")
        recovery_s, prov["recovery_source"], restart_stats = got
    if recovery_s is not None:
        if not (math.isfinite(recovery_s) and recovery_s >= 0):
            raise ValueError(f"recovery_s must be >= 0 seconds, got {recovery_s!r}")
        params["recovery_time"] = round(float(recovery_s) / 60.0, 3)
        params["host_selection_time"] = 0.0
    else:
        prov["recovery_source"] = "none: AIReSim default recovery_time kept"
    if warm_standbys < 0:
        raise ValueError(f"warm_standbys must be >= 0, got {warm_standbys!r}")
    params["warm_standbys"] = int(warm_standbys)
    need = n + int(warm_standbys)
    info = cluster_info(cluster) if cluster else None
    if working_pool_size is None:
        working_pool_size = info["nodes"] if info and info["nodes"] >= need else need
        prov["pool_source"] = (f"{info['name']} nodes" if info and info["nodes"] >= need
                               else "job_size + warm_standbys")
    if working_pool_size < need:
        raise ValueError(f"working_pool_size={working_pool_size} < job_size + warm_standbys = {need}")
    params["working_pool_size"] = int(working_pool_size)
    params["spare_pool_size"] = int(spare_pool_size)
    if job_length_s is not None:
        if not job_length_s > 0:
            raise ValueError(f"job_length_s must be > 0, got {job_length_s!r}")
        params["job_length"] = round(float(job_length_s) / 60.0, 3)
    prov.update(gpus=gpus, gpus_per_server=int(gpus_per_server), job_mttf_s=mttf_s,
                server_mttf_s=server_mttf_s, weibull_shape=k, recovery_s=recovery_s,
                **{f"recovery_{k_}": v for k_, v in restart_stats.items()})
    bad = set(params) - set(AIRESIM_FIELDS)
    assert not bad, bad
    return params, prov


_COMMENTS = {
    "job_size": "servers the job needs = ceil(gpus / gpus_per_server)",
    "failure_distribution": "per-server time-to-failure distribution (AIReSim mean-matches it to 1/rate)",
    "weibull_shape": "k < 1: decreasing hazard (infant mortality); fitted late-regime Weibull shape",
    "random_failure_rate": "failures per server per minute = 60 / (job MTTF [s] * job_size^(1/k))",
    "systematic_failure_fraction": "0: the fitted rate is the whole failure rate (no bad-server group)",
    "systematic_failure_rate_multiplier": "unused when systematic_failure_fraction = 0",
    "recovery_time": "minutes from a failure to the restarted attempt running (restart gap + queue)",
    "host_selection_time": "0: re-scheduling is inside recovery_time (each failure costs recovery_time)",
    "warm_standbys": "extra servers pre-assigned to the job",
    "working_pool_size": "servers in the working pool (>= job_size + warm_standbys)",
    "spare_pool_size": "servers in the spare pool",
    "job_length": "failure-free job length, minutes",
}


def _human(key: str, v: Any) -> str:
    """A provenance value for the README: seconds with h/min, other floats to 4 significant digits."""
    if isinstance(v, float) and key.endswith("_s") and math.isfinite(v):
        return f"{v:,.0f} s ({v / 3600:,.1f} h)" if v >= 3600 else f"{v:,.1f} s ({v / 60:,.1f} min)"
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


def write_airesim(jobs: Any = None, out: str | Path = ".", *, failure: Any = None, restart: Any = None,
                  gpus: int | None = None, cluster: str | None = None, **opts: Any) -> dict[str, Any]:
    """Write ``OUT/config.yaml`` (AIReSim ``--params`` file) and ``OUT/README.md``.

    ``jobs`` is optional: it supplies the default GPU count, the cluster and an empirical mean time
    to restart when no restart model is given. Other options: see :func:`airesim_params`.
    """
    import yaml

    from acmemodel._version import __version__

    frame = None
    if jobs is not None:
        frame, _ = C.normalize_jobs(jobs)
        if cluster is not None:
            frame = frame[frame["cluster"].str.lower() == str(cluster).lower()]
            if len(frame) == 0:
                raise ValueError(f"cluster={cluster!r} not in the jobs")
        if cluster is None and frame["cluster"].nunique() == 1:
            cluster = str(frame["cluster"].iloc[0])
    params, prov = airesim_params(gpus=gpus, failure=failure, restart=restart, jobs=frame, cluster=cluster,
                                  **opts)
    out = C.prepare_out(out)
    lines = ["# AIReSim configuration written by acmemodel " + __version__,
             "# Usage: python -m airesim.run --params config.yaml --adaptive",
             "#   (without --adaptive, or --sweep, AIReSim ignores this file and runs its built-in demo)",
             "# Units: times in minutes, rates in failures per server per minute (AIReSim conventions).",
             f"# Simulated job: {prov['gpus']} GPUs = {params['job_size']} servers of "
             f"{prov['gpus_per_server']} GPUs" + (f" ({cluster})" if cluster else ""),
             f"# Job-level mean time to failure: {prov['job_mttf_s']:.1f} s ({prov['mttf_source']});"
             f" per-server mean {prov['server_mttf_s'] / 3600:.1f} h",
             f"# Weibull shape: {prov['weibull_shape']:.4f} ({prov.get('shape_source', 'none: exponential')})",
             f"# Recovery: {prov['recovery_source']}"]
    if "recovery_median_s" in prov:
        lines.append(f"#   restart time mean {prov['recovery_s'] / 60:.1f} min, median "
                     f"{prov['recovery_median_s'] / 60:.1f} min"
                     + (f", 90th percentile {prov['recovery_p90_s'] / 60:.1f} min" if "recovery_p90_s" in prov
                        else "") + " (AIReSim's recovery is constant: the mean is kept)")
    if "extrapolated" in prov:
        lines.append(f"# WARNING: {prov['extrapolated']}")
    lines.append("# Fields not listed keep AIReSim's defaults.")
    lines.append("")
    for k, v in params.items():
        if k in _COMMENTS:
            lines.append(f"# {_COMMENTS[k]}")
        lines.append(yaml.safe_dump({k: v}, default_flow_style=False).strip())
    path = C.out_path(out, "config.yaml")
    path.write_text("\n".join(lines) + "\n")
    sections = [("Files", f"- `config.yaml`: AIReSim `Params` overrides ({len(params):,} fields)."),
                ("Inputs", "\n".join(f"- {k}: {_human(k, v)}" for k, v in prov.items()))]
    if frame is not None:  # the empirical restart time averages over these chains
        ch, src = C.ensure_chains(frame)
        sections.append(("Restart chains", C.chain_note(src, int((C.prev_positions(ch) >= 0).sum()))))
    else:
        sections.append(("Restart chains", "no trace given: restart times come from the restart model."))
    sections.append(("Format", __doc__.split("\n", 2)[2]))
    readme = C.write_readme(out, "AIReSim configuration export", sections)
    n_rows = 0 if frame is None else len(frame)
    return {"format": "airesim", "out": str(out), "files": [str(path), str(readme)],
            "clusters": [cluster] if cluster else [], "jobs": n_rows, "attempts": n_rows, "restarts": 0,
            "time_span": T.time_span(frame) if frame is not None else
            {"start_utc": None, "end_utc": None, "seconds": 0.0},
            "dropped": {}, "notes": [], "params": params,
            "provenance": {k: v for k, v in prov.items()}}
