"""What the planner's kernels need for one run, assembled once: :class:`RunInputs`.

A run's inputs are its failure process (the job's time to failure at its GPU count, after the
configured rate multipliers), its failure-type mix (which failure types occur, with what probability,
and how long each takes to restart, after the restart-automation factors) and the restart
distribution that mix implies. :meth:`RunInputs.from_bundle` builds them from a bundle, a run and a
planner configuration; the planner then goes plan → inputs → kernels (checkpoint optimum, Monte
Carlo), so no kernel call reaches back into the bundle.

Sources, in order of precedence (the same rules :class:`~acmemodel.planner.planner.Planner` states):

* failure process: an explicit ``mttf`` (exponential, or Weibull with ``shape``; scaled by
  ``gpus / reference_gpus`` under proportional hazards), else the law the bundle's failure model hands
  over for the run's GPUs and job type (``failure_law(gpus, kind=...)``: the fitted model's Weibull, or
  with ``failure_model="piecewise"`` its hazard table; another model's log-normal or piecewise law is
  planned as it is, :func:`~acmemodel.planner.run.processes.failure_process_from_law`);
* failure-type mix: an explicit mix, else the published failure table at the run's GPUs, with the
  restart times of the bundle's restart model (``restart_source`` ``"bundle"``/``"auto"``), of an
  explicit ``restart``, or of the table itself.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from acmemodel.planner.run.montecarlo import FailureMix, FailureType
from acmemodel.planner.run.processes import (
    ExponentialFailures, FailureProcess, RestartTime, WeibullFailures, failure_process_from_law,
)

__all__ = ["RunInputs", "failure_process", "failure_mix"]


def _check_gpus(gpus) -> int:
    if isinstance(gpus, bool) or not float(gpus) == int(gpus) or int(gpus) < 1:
        raise ValueError(f"gpus must be a positive integer, got {gpus!r}")
    return int(gpus)


def _model_key(call, job_type: str) -> dict:
    """``{"type": job_type}`` if the model knows the type, else ``{}`` (the training mix), with a note."""
    try:
        call(type=job_type)
        return {"type": job_type}
    except (ValueError, KeyError):
        return {}


def _with_restart(mix: FailureMix, restart: RestartTime) -> FailureMix:
    if restart.kind == "mixture":
        raise ValueError("restart must be a single distribution (fixed, lognormal, exponential) to apply to "
                         "every failure type")
    return FailureMix([FailureType(t.name, t.probability, restart, t.category) for t in mix.types])


def failure_process(gpus: int, *, bundle: Callable[[], Any] | Any = None, mttf: float | None = None,
                    shape: float | None = None, reference_gpus: int | None = None,
                    failure_model: str = "weibull", job_type: str = "Pretrain") -> FailureProcess:
    """The job's failure process at ``gpus`` GPUs (before rate multipliers); see the module docstring.
    ``bundle`` may be a callable returning the bundle (loaded only when needed)."""
    gpus = _check_gpus(gpus)
    if mttf is not None:
        base = ExponentialFailures(mttf) if shape is None else WeibullFailures(shape, mttf)
        return base if reference_gpus is None else base.scaled(gpus / reference_gpus)
    b = bundle() if callable(bundle) else bundle
    model = b["failure"]
    law = lambda **k: model.failure_law(gpus, kind=failure_model, **k)  # noqa: E731
    return failure_process_from_law(law(**_model_key(law, job_type)))


def failure_mix(gpus: int, *, bundle: Callable[[], Any] | Any = None, source: str = "table",
                mix: FailureMix | None = None, restart: RestartTime | None = None,
                job_type: str = "Pretrain") -> FailureMix:
    """Failure types and their restart times for a run of ``gpus`` GPUs (before adjustments).
    ``source``: ``"bundle"`` (the bundle's restart model) or ``"table"`` (the published table)."""
    gpus = _check_gpus(gpus)
    if mix is not None:
        return mix
    table = FailureMix.from_failure_table(gpus)
    if restart is not None:
        return _with_restart(table, restart)
    if source == "table":
        return table
    b = bundle() if callable(bundle) else bundle
    model = b["restart"]
    if getattr(model, "fallback_", False):
        return table  # the model is the published prior per reason: the table itself
    dist = None
    for kw in ({"type": job_type}, {}):  # the job type if the model knows it, else its population's mix
        try:
            dist = model.restart_distribution(gpus=gpus, **kw)
            break
        except (ValueError, KeyError):
            continue
    if dist is None:  # pragma: no cover - the model refuses every key
        return table
    return _with_restart(table, RestartTime.from_mean_median(float(dist.mean()), float(dist.median())))


@dataclass(frozen=True)
class RunInputs:
    """The inputs of one run's kernels (module docstring), after the configured adjustments.

    ``failure``: failure process (rate multipliers applied); ``mix``: failure types with restart times
    (automation factors applied); ``restart``: the restart distribution of ``mix``; ``gpus``; ``notes``.
    """

    gpus: int
    failure: FailureProcess
    mix: FailureMix
    restart: Any
    notes: tuple = field(default_factory=tuple)

    @classmethod
    def assemble(cls, gpus: int, failure: FailureProcess, mix: FailureMix, *, rate_multipliers=None,
                 restart_factors=None) -> "RunInputs":
        """Apply the rate multipliers and restart-automation factors once, to the process and the mix."""
        mix, total = mix.adjusted(rate_multipliers=rate_multipliers, restart_factors=restart_factors)
        if total != 1.0:
            failure = failure.scaled(total)
        return cls(int(gpus), failure, mix, mix.restart_distribution())

    @classmethod
    def from_bundle(cls, bundle, run, config) -> "RunInputs":
        """The inputs of ``run`` (a config run: ``gpus``) under ``config`` (its ``failures`` and ``restart``
        sections) with ``bundle``'s failure and restart models (an explicit ``failures.mttf`` replaces
        the failure model)."""
        fs, rs = config.failures, config.restart
        fail = failure_process(run.gpus, bundle=bundle, mttf=fs.mttf_s, shape=fs.shape,
                               reference_gpus=fs.reference_gpus, failure_model=fs.model, job_type=fs.job_type)
        source = rs.source if rs.source != "auto" else ("bundle" if bundle is not None else "table")
        mix = failure_mix(run.gpus, bundle=bundle, source=source, job_type=fs.job_type)
        return cls.assemble(run.gpus, fail, mix, rate_multipliers=fs.rate_multipliers,
                            restart_factors=rs.automation)
