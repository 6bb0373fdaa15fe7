"""``Planner``: checkpoint interval, completion time, failure-weighted GPU-time loss and quotas.

The planner never fits. One path: :meth:`Planner.plan` ``(config)`` → for each run
:meth:`RunInputs.from_bundle` ``(bundle, run, config)`` → kernels (checkpoint optimum,
:mod:`.run.checkpoint`; Monte Carlo, :mod:`.run.montecarlo`). A run's inputs are

* a **failure process** per run size ``g`` — a reliability preset, an explicit ``failures.mttf`` (at
  ``reference_gpus``, optional Weibull ``shape``; the hazard scales with ``g / reference_gpus``,
  proportional hazards) or the bundle's ``"failure"`` model, which hands over its own law
  (``failure_law(g, type=job_type)``, a duration family: its Weibull late regime, or with
  ``failures.model: piecewise`` its hazard table; a model of another law, e.g. log-normal, is planned
  with that law);
* a **failure-type mix** — the paper's failure table conditioned on ``g``
  (:meth:`FailureMix.from_failure_table`), with per-type restart times from the table (log-normal
  from the published mean and median time to restart), the bundle's fitted ``"restart"`` model (one
  shared log-normal matched to its mean and median for ``g`` GPUs), a preset's or a fixed
  ``restart.time``;
* config adjustments: failure-rate multipliers and restart-time factors per failure category or type
  (:meth:`FailureMix.adjusted`: the total hazard is multiplied by ``Σ p_j m_j``).

The precedence of these sources is stated once, in :mod:`.run.inputs`. The failure and restart
assumptions are the configuration's (:class:`~acmemodel.planner.config.ClusterConfig`, or
:class:`~acmemodel.planner.config.Assumptions` for a single-run question): :meth:`Planner.checkpoint`
gives the optimal interval, :meth:`Planner.completion` simulates the run, :meth:`Planner.quota`
simulates the cluster and searches the quota (:mod:`acmemodel.sim.cluster`, :mod:`acmemodel.sim.quota`)
on a workload sampled from the bundle's arrival and runtime models (the ``sampler`` given to the
planner, e.g. :func:`acmemodel.synth.sample_workload`) or a given job list, and :meth:`Planner.plan`
does all of it for a configuration (its steps that need no planner -- run exclusion, workload
preparation, curves, pooled queue figures -- are in :mod:`.plan_helpers`).
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import pandas as pd

from acmemodel.errors import AcmeModelError, ConfigError, DataWarning
from acmemodel.planner.run.checkpoint import CheckpointResult, optimal_interval
from acmemodel.models.bundle import resolve_bundle
from acmemodel.planner.config import Assumptions, ClusterConfig
from acmemodel.planner.run.inputs import RunInputs, _check_gpus, explicit_failures
from acmemodel.planner.run.montecarlo import FailureMix
from acmemodel.planner.run.plan import RunPlan, plan_run
from acmemodel.sim.quota import QuotaFitError, find_quota
from acmemodel.planner.run.processes import FailureProcess
from acmemodel.planner.plan_helpers import (
    DAY, PLANNED_TYPE, excluded_runs, _configured_quotas, _num, _planned_runs,
    _pooled_queue, _prepare_workload,
)
from acmemodel.planner.evalbatch.plan import feedback_from_plan
from acmemodel.planner.report import write_report
from acmemodel.planner.sensitivity import scenario_ckpt_cost, sensitivity_band
from acmemodel.sim.cluster import SchedulingPolicy, simulate_cluster



@dataclass
class PlanResult:
    """Output of :meth:`Planner.plan`: per-run plans and the cluster part."""

    name: str
    runs: list
    cluster: dict
    config: ClusterConfig | None = None
    assumptions: list = field(default_factory=list)
    #: evaluation feedback delay per batch schedule (:func:`acmemodel.planner.evalbatch.plan.feedback_from_plan`)
    evaluation: list | None = None

    def to_dict(self) -> dict:
        """JSON-ready: ``{"name", "runs": [...], "cluster": {"queue_s", "quotas", ...}, "assumptions"}``
        (plus ``"evaluation"`` when the config has an evaluation batch)."""
        d = {"name": self.name, "runs": [r.to_dict() for r in self.runs], "cluster": self.cluster,
             "assumptions": list(self.assumptions)}
        if self.evaluation is not None:
            d["evaluation"] = self.evaluation
        return d

    def __repr__(self) -> str:
        done = sum(bool(r.finishes) for r in self.runs)
        quotas = self.cluster.get("quotas") or {}
        return (f"PlanResult(name={self.name!r}, runs={len(self.runs)} ({done} finish), "
                f"cluster={'available' if self.cluster.get('available', True) else 'unavailable'}, "
                f"quotas={dict(quotas)!r})")

    def summary(self) -> pd.DataFrame:
        """One row per run: ``run``, ``gpus``, ``finishes``, the checkpoint interval (s) and its source, the
        completion time's mean and p90 (s), expected failures, ETTR and the GPU-time loss (GPU-hours)."""
        rows = []
        for r in self.runs:
            d = r.to_dict()
            ct = d["completion_time_s"]
            rows.append({"run": r.name, "gpus": r.gpus, "finishes": d["finishes"],
                         "interval_s": d["checkpoint_interval_s"], "interval_source": d["checkpoint_interval_source"],
                         "completion_mean_s": ct["mean"], "completion_p90_s": ct["p90"],
                         "expected_failures": d["expected_failures"], "ettr": d["ettr"],
                         "gpu_h_lost": d["gpu_time_loss_gpu_h"]["total"]})
        return pd.DataFrame(rows, columns=["run", "gpus", "finishes", "interval_s", "interval_source",
                                           "completion_mean_s", "completion_p90_s", "expected_failures", "ettr",
                                           "gpu_h_lost"])

    def report(self, path) -> str:
        """Write the HTML report (loss breakdown and E[T](τ) plots) to ``path``; returns the path."""
        return write_report(self, path)


class Planner:
    """Planner over a model bundle (module docstring). The failure and restart assumptions are the
    configuration's (its ``failures`` and ``restart`` sections, :class:`ClusterConfig`): every question
    takes them and goes through :meth:`RunInputs.from_bundle`, the one place where their precedence
    rules live.

    Parameters
    ----------
    bundle : a :class:`~acmemodel.models.bundle.Bundle`, a path to one, or ``None`` (the default bundle of
        :func:`acmemodel.load_default`, loaded only when needed).
    sampler : ``sampler(bundle, workload, rng) -> jobs`` drawing the cluster's background workload for
        the queue simulation (``workload`` is the config's ``workload`` section; jobs with ``submit_s,
        run_s, gpu_num, type``), e.g. :func:`acmemodel.synth.sample_workload` (the planner does not import
        the synthesiser above it: its caller hands it over). Without one the cluster part needs an
        explicit ``workload=``.
    """

    def __init__(self, bundle=None, *, sampler: Callable | None = None):
        if sampler is not None and not callable(sampler):
            raise ValueError(f"sampler must be a callable (bundle, workload, rng) -> jobs, got {sampler!r}")
        self._bundle_arg = bundle
        self._bundle = None
        self.sampler = sampler

    # ------------------------------------------------------------------ inputs
    @property
    def bundle(self):
        """The bundle (loaded on first use; :func:`acmemodel.load_default` when none was given)."""
        if self._bundle is None:
            self._bundle = resolve_bundle(self._bundle_arg)
        return self._bundle

    def _has_bundle(self) -> bool:
        if self._bundle_arg is not None or self._bundle is not None:
            return True
        try:
            self.bundle
            return True
        except AcmeModelError:
            return False

    def inputs(self, gpus: int, config: ClusterConfig | Assumptions | None = None) -> RunInputs:
        """The run's :class:`~acmemodel.planner.run.inputs.RunInputs` under ``config``'s failure and restart
        sections (default: :class:`Assumptions` ``()``, the bundle's models): failure process,
        failure-type mix and restart distribution, assembled once with the adjustments applied."""
        cfg = Assumptions() if config is None else config
        given = self.bundle if self._bundle_arg is not None else None
        return RunInputs.from_bundle(given, gpus, cfg, default=lambda: self.bundle)

    def failure_process(self, gpus: int, config: ClusterConfig | Assumptions | None = None) -> FailureProcess:
        """The job's failure process at ``gpus`` GPUs (rate multipliers applied; :meth:`inputs`)."""
        return self.inputs(gpus, config).failure

    def failure_mix(self, gpus: int, config: ClusterConfig | Assumptions | None = None) -> FailureMix:
        """Failure types and their restart times for a run of ``gpus`` GPUs (adjustments applied;
        :meth:`inputs`)."""
        return self.inputs(gpus, config).mix

    # ------------------------------------------------------------------ single-run questions
    def checkpoint(self, gpus: int, *, ckpt_cost: float, work: float = 30 * DAY,
                   config: ClusterConfig | Assumptions | None = None) -> CheckpointResult:
        """Optimal checkpoint interval for a run of ``gpus`` GPUs (renewal model; one scenario).

        ``ckpt_cost``: blocking checkpoint cost (s); ``work``: failure-free compute (s); ``config``: the
        failure and restart assumptions (:meth:`inputs`). The restart time is the mix's
        (probability-weighted) restart distribution. ``result.to_dict(gpus)`` adds GPU-hours lost per day.
        """
        inp = self.inputs(gpus, config)
        return optimal_interval(work=work, ckpt_cost=ckpt_cost, failure=inp.failure, restart=inp.restart)

    def completion(self, gpus: int, *, work: float, ckpt_cost: float, interval="auto", n_replicas: int = 10_000,
                   seed: int = 0, threads: int = 1, config: ClusterConfig | Assumptions | None = None,
                   name: str = "run") -> RunPlan:
        """Completion time and failure-weighted GPU-time loss of one run (Monte Carlo).

        ``interval``: seconds of work between checkpoints, or ``"auto"`` for the optimum of
        :meth:`checkpoint`; ``config``: the failure and restart assumptions (:meth:`inputs`). Returns a
        :class:`RunPlan` (``.simulation`` has the per-replica results, ``.checkpoint`` the renewal-model
        optimum, ``.curve`` E[T](τ) around it).
        """
        gpus = _check_gpus(gpus)
        if interval != "auto":
            tau = float(interval)
            if not (math.isfinite(tau) and tau > 0):
                raise ValueError(f"interval must be 'auto' or a positive number of seconds, got {interval!r}")
        inp = self.inputs(gpus, config)
        return plan_run(inp, work=work, ckpt_cost=ckpt_cost, interval=interval, n_replicas=n_replicas, seed=seed,
                         threads=threads, name=name)

    # ------------------------------------------------------------------ cluster
    def workload_sampler(self, config: ClusterConfig) -> Callable:
        """``rng -> job list`` for ``config.workload`` from the planner's ``sampler`` and bundle (GPU jobs
        that started: ``submit_s, run_s, gpu_num, type``). ConfigError without a sampler."""
        sampler = self.sampler
        if sampler is None:
            raise ConfigError("no workload sampler: pass Planner(..., sampler=acmemodel.synth.sample_workload) "
                              "or an explicit workload=")
        wl = config.workload
        bundle = self.bundle

        qm = bundle.get("queue") if config.cluster.latency and hasattr(bundle, "get") else None

        def sample(rng: np.random.Generator) -> pd.DataFrame:
            df = sampler(bundle, wl, rng)
            df = df.loc[df["gpu_num"] > 0, ["submit_s", "run_s", "gpu_num", "type"]].dropna(subset=["run_s"])
            if qm is not None:  # start-up latency per job (cluster x type law of the queue model)
                ty = df["type"].astype(str).to_numpy()
                lat = np.zeros(len(df))
                for t in np.unique(ty):
                    m = ty == t
                    lat[m] = qm.sample_latency(int(m.sum()), rng, cluster=wl.cluster, type=str(t))
                df["latency_s"] = np.round(lat)
            return df

        return sample

    def quota(self, config: ClusterConfig, *, workload=None) -> dict:
        """Cluster part of the plan: quota search for an ``auto`` partition, then queue delays.

        ``workload``: a job list (DataFrame with ``submit_s, run_s, gpu_num, type[, partition, latency_s]``), a list of
        them (replicas) or a callable ``rng -> job list``; default :meth:`workload_sampler`. Returns
        ``{"queue_s": {type: {"p50", "p90", "mean", "count"}}, "quotas": {partition: GPUs},
        "utilization": {partition: fraction}, "quota_search": {...} | None, "target": {...}}``.
        """
        cl, wl, qt = config.cluster, config.workload, config.queue_target
        jobs = workload if workload is not None else self.workload_sampler(config)
        if callable(jobs):
            seqs = np.random.SeedSequence(config.simulation.seed).spawn(wl.replicas)
            reps = [jobs(np.random.default_rng(s)) for s in seqs]
        elif isinstance(jobs, (list, tuple)):
            reps = list(jobs)
        else:
            reps = [jobs]
        reps = [_prepare_workload(r, config) for r in reps]
        seen = set().union(*(set(r["type"].astype(str).unique()) for r in reps)) if reps else set()
        if workload is not None and qt.type not in seen:  # the bundle's types are checked by plan()
            raise ConfigError(f"queue_target.type = {qt.type!r} is not a job type of the workload "
                              f"(it has: {', '.join(sorted(seen - {PLANNED_TYPE})) or 'no jobs'})")
        # the planned runs are pretraining: they queue at Pretrain's priority
        sim_kw = SchedulingPolicy.from_config(cl).with_priority_like(PLANNED_TYPE, "Pretrain").kwargs()
        if cl.best_effort_on_reserved and "pretrain" not in cl.partitions:
            raise ConfigError("cluster.best_effort_on_reserved needs a 'pretrain' partition")
        auto = cl.auto_partition
        search = None
        partitions = {k: v for k, v in cl.partitions.items() if v != "auto"}
        if auto is not None:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DataWarning)
                qr = find_quota(reps, total_gpus=cl.gpus, gpus_per_node=cl.gpus_per_node,
                                search="eval_lane" if auto == "eval" else "pretrain_reservation",
                                target_type=qt.type, quantile=qt.quantile, target_wait_s=qt.max_wait_s,
                                partitions=partitions, seed=config.simulation.seed, **sim_kw)
            search = qr.to_dict()
            if qr.feasible:
                partitions = {k: v for k, v in qr.partitions.items() if k != "shared"}
            else:
                # report the queue at the most generous candidate, stating infeasibility
                g_end = int(qr.candidates[-1]) if qr.candidates else 0
                partitions[auto] = g_end
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DataWarning)
            results = [simulate_cluster(r, total_gpus=cl.gpus, gpus_per_node=cl.gpus_per_node,
                                        partitions=partitions, **sim_kw) for r in reps]
        layout = dict(results[0].partitions)
        quotas = {k: int(v) for k, v in layout.items()}
        if search is not None and not search["feasible"]:
            quotas[auto] = None  # the search chose none; the queues are those of the generous end
        return {
            "queue_s": _pooled_queue(results),
            "quotas": quotas,
            "queues_simulated_at": {k: int(v) for k, v in layout.items()},
            "utilization": {p: _num(np.nanmean([r.utilization.loc[p, "utilization"] for r in results]))
                            for p in layout},
            "pretrain_throughput_gpus": _num(np.mean([r.pretrain_throughput for r in results])),
            "quota_search": search,
            "target": {"type": qt.type, "quantile": qt.quantile, "max_wait_s": qt.max_wait_s},
            "workload": {"source": "given" if workload is not None else "bundle", "replicas": len(reps),
                         "jobs_per_replica": int(np.mean([len(r) for r in reps])),
                         **({} if workload is not None else {"cluster": wl.cluster, "days": wl.days,
                                                             "scale": wl.scale}),
                         "planned_runs_included": [r.name for r in _planned_runs(config)],
                         "planned_runs_excluded": excluded_runs(config)},
            "unschedulable_jobs": int(sum(len(r.unschedulable) for r in results)),
        }

    # ------------------------------------------------------------------ everything
    def plan(self, config: ClusterConfig | str, *, cluster: bool = True, workload=None) -> PlanResult:
        """Plan every run of ``config`` (a :class:`ClusterConfig` or a path) and the cluster part.

        Each run goes ``config`` → :meth:`RunInputs.from_bundle` → kernels. ``cluster=False`` skips the
        cluster simulation. When the cluster part cannot be computed (no bundle to sample a workload from
        and no ``workload``), ``result.cluster`` says so (``"available": False`` with a ``"reason"``) and
        lists the configured partitions.
        """
        if not isinstance(config, ClusterConfig):
            config = ClusterConfig.load(config)
        self._check_config_against_bundle(config, cluster=cluster and workload is None)
        assumptions = self._assumptions(config)
        chosen = self._chosen_reliability(config)
        runs = [self._plan_run(config, r, chosen) for r in config.runs]
        cl = self._cluster_part(config, cluster=cluster, workload=workload)
        cl.setdefault("planned_runs_excluded", excluded_runs(config))
        evaluation = None
        if config.evaluation is not None:
            evaluation = feedback_from_plan(config.evaluation, cl)
        return PlanResult(config.name, runs, cl, config, assumptions, evaluation)

    def _plan_run(self, config: ClusterConfig, r, chosen: str) -> RunPlan:
        """One run of ``config``: its inputs, the kernels, the energy of its loss and its sensitivity band."""
        sim = config.simulation
        kw = dict(work=r.work_s, ckpt_cost=config.run_ckpt_cost(r), n_replicas=sim.replicas, seed=sim.seed,
                  threads=sim.threads, name=r.name)
        run = plan_run(self.inputs(r.gpus, config), interval=config.run_interval(r), **kw)
        run.energy = config.energy.price_loss(run.to_dict()["gpu_time_loss_gpu_h"])
        if config.sensitivity and run.finishes:
            run.sensitivity = self._band(config, r, run, kw, chosen)
        return run

    def _cluster_part(self, config: ClusterConfig, *, cluster: bool, workload) -> dict:
        """The cluster part of the plan (:meth:`quota`), or why it is not available."""
        def unavailable(reason: str) -> dict:
            return {"available": False, "reason": reason, "queue_s": {}, "quotas": _configured_quotas(config)}

        if not cluster:
            return unavailable("cluster simulation skipped")
        try:
            return {"available": True, **self.quota(config, workload=workload)}
        except ConfigError:
            raise
        except AcmeModelError as e:
            if workload is not None:
                raise
            return unavailable(f"no workload model: {str(e).splitlines()[0]}")
        except QuotaFitError as e:  # the partitions leave no room: what does not fit and what would
            return unavailable(f"does not fit: {str(e).splitlines()[0]}")
        except ValueError as e:
            return unavailable(f"cluster simulation failed: {str(e).splitlines()[0]}")

    def _band(self, config: ClusterConfig, run_spec, run: RunPlan, kw: dict, chosen: str) -> dict:
        """The sensitivity band of ``run`` (:func:`sensitivity_band`): the run re-planned under every other
        reliability preset (``acme-2023``: the default bundle's fitted model) and at ×0.5 / ×2 the rate."""
        fs = config.failures

        def scenario(preset=None, rate_multipliers=None, **kwp) -> RunPlan:
            if preset is not None:
                cfg = config.with_failures(reliability=preset.name, preset=preset, mttf_s=None, reference_gpus=None,
                                           shape=None)
                planner = Planner(None) if preset.uses_bundle else self
            else:
                cfg, planner = config.with_failures(rate_multipliers=rate_multipliers), self
            return plan_run(planner.inputs(run.gpus, cfg), interval="auto", **{**kw, **kwp})

        return sensitivity_band(run, chosen=chosen, scenario=scenario, replicas=kw["n_replicas"],
                                base_multipliers=dict(fs.rate_multipliers),
                                ckpt_cost_for=lambda preset: scenario_ckpt_cost(config, run_spec, preset),
                                main_cost_source=scenario_ckpt_cost(config, run_spec, fs.preset)[1])

    def _check_config_against_bundle(self, config: ClusterConfig, *, cluster: bool) -> None:
        """Refuse config values the bundle does not know instead of silently falling back:
        ``failures.job_type`` (a type of the bundle's failure model, when that model is used) and, when the
        cluster is simulated on the bundle's workload, ``workload.cluster`` (a cluster of its arrival model)
        and ``queue_target.type`` (a type that model generates there). :class:`ConfigError` naming the field."""
        fs, wl, qt = config.failures, config.workload, config.queue_target
        if explicit_failures(fs) is None and self._has_bundle():
            design = getattr(self.bundle.get("failure"), "design_", None)
            known = sorted(getattr(design, "type_map", None) or [])
            if known and fs.job_type not in known:
                raise ConfigError(f"failures.job_type = {fs.job_type!r} is not a job type of the bundle's failure "
                                  f"model (known: {', '.join(known)})")
        if not cluster or not self._has_bundle():
            return
        arrival = self.bundle.get("arrival")
        if arrival is None:
            return
        clusters = list(arrival.clusters_)
        where = f"{config.source}: " if config.source else ""
        bname = getattr(self.bundle, "name", None)
        of = f"bundle {bname!r}" if bname else "the bundle"
        if wl.cluster is None:  # (not in the config: the bundle's only cluster; Seren of the default bundle)
            if len(clusters) != 1 and "Seren" not in clusters:
                raise ConfigError(f"{where}workload.cluster is not set and {of} models several clusters "
                                  f"({', '.join(clusters)}); name one")
            wl.cluster = clusters[0] if len(clusters) == 1 else "Seren"
        if wl.cluster not in clusters:
            low = {c.lower(): c for c in clusters}
            if wl.cluster.lower() not in low:
                raise ConfigError(f"{where}workload.cluster = {wl.cluster!r} is not a cluster of {of} "
                                  f"(known: {', '.join(clusters)})")
            wl.cluster = low[wl.cluster.lower()]
        types = list(arrival.types(wl.cluster))
        if qt.type not in types:
            raise ConfigError(f"queue_target.type = {qt.type!r} is not a job type the bundle generates for "
                              f"{wl.cluster} (known: {', '.join(types)})")

    def _assumptions(self, config: ClusterConfig) -> list[str]:
        out = ["Failures: renewal process, hazard clock restarts at each failure (not at checkpoints); failures "
               "can strike during restarts (Daly).",
               "Checkpoint interval 'auto' minimises the long-run expected wall time (renewal reward); completion "
               "times come from Monte Carlo with exact finite-run accounting.",
               "Failure-type mix: the paper's Table 3 conditioned on the run's GPU count "
               "(acmemodel.models.failure_types.failure_type_mix)."]
        fs = config.failures
        exp = explicit_failures(fs)
        if exp is not None:
            ref, shape = exp["reference_gpus"], exp["shape"]
            out.append(f"Failure process: explicit MTTF {exp['mttf_s'] / 3600:.3g} h"
                       + (f" at {ref} GPUs, hazard proportional to GPUs" if ref else " for every run")
                       + (f", Weibull shape {shape:g}" if shape else ", exponential") + ".")
        else:
            out.append(f"Failure process: the bundle's failure model ({fs.model}, late regime, "
                       f"type={fs.job_type}).")
        if config.failures.rate_multipliers:
            out.append("Failure-rate multipliers: " + ", ".join(f"{k} ×{v:g}" for k, v in
                                                                config.failures.rate_multipliers.items()) + ".")
        if config.restart.automation:
            out.append("Restart-time factors: " + ", ".join(f"{k} ×{v:g}" for k, v in
                                                            config.restart.automation.items()) + ".")
        return out

    def _chosen_reliability(self, config: ClusterConfig) -> str:
        """Name of the failure-rate assumption of the main answer: a preset, ``"bundle"`` (a given bundle's
        failure model), ``"mttf"`` (explicit MTTF) or ``"acme-2023"`` (the default bundle's)."""
        fs = config.failures
        if fs.reliability is not None:
            return fs.reliability
        if fs.mttf_s is not None:
            return "mttf"
        return "bundle" if self._bundle_arg is not None else "acme-2023"


