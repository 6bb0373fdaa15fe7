"""What the planner's kernels need for one run, assembled once: :class:`RunInputs`.

A run's inputs are its failure process (the job's time to failure at its GPU count, after the
configured rate multipliers), its failure-type mix (which failure types occur, with what probability,
and how long each takes to restart, after the restart-automation factors) and the restart
distribution that mix implies. :meth:`RunInputs.from_bundle` builds them from a bundle, a run and a
planner configuration; the planner goes ``plan(config)`` → :meth:`RunInputs.from_bundle` → kernels
(checkpoint optimum, Monte Carlo), so no kernel call reaches back into the bundle.

:meth:`RunInputs.from_bundle` is the one place where the precedence rules live. Of the configuration
it reads the ``failures`` section (``reliability`` preset, ``mttf``/``reference_gpus``/``shape``,
``model``, ``job_type``, ``rate_multipliers``) and the ``restart`` section (``source``, ``time_s``,
``automation``):

* failure process: a reliability **preset** other than the fitted model's (``failures.preset``: its
  exponential failures at 1,024 GPUs, hazard ∝ GPUs), else an explicit **mttf** (exponential, or Weibull
  with ``shape``; scaled by ``gpus / reference_gpus`` under proportional hazards), else the **bundle's
  failure model**, which hands over its own process for the run's GPUs and job type
  (``failure_law(gpus, kind=failures.model, type=...)``, a duration
  :class:`~acmemodel.models.family.Family`: the fitted model's late regime, or with ``model="piecewise"``
  its hazard table; a model of another law, e.g. log-normal, is planned with that law,
  :func:`~acmemodel.planner.run.processes.failure_process_from_law`);
* restart times: an explicit ``restart.time_s`` (fixed), else the preset's published restart law, for
  every failure type; else per ``restart.source``: ``"table"`` (the published failure table's per-type
  restart times), ``"bundle"`` (one law matched to the bundle restart model's mean and median) or
  ``"auto"``: the bundle's when a bundle was given, or, without one, when the failure process is not an
  explicit mttf and the default bundle loads; else the table;
* failure-type mix: the published failure table at the run's GPUs;
* adjustments: the rate multipliers scale the hazard by ``Σ p_j m_j``; the automation factors the
  restart times (:meth:`FailureMix.adjusted`).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from acmemodel.errors import AcmeModelError
from acmemodel.planner.run.montecarlo import FailureMix, FailureType
from acmemodel.planner.run.processes import (
    ExponentialFailures, FailureProcess, RestartTime, WeibullFailures, failure_process_from_law,
)

__all__ = ["RunInputs", "PRESET_REFERENCE_GPUS"]

#: GPU count at which a reliability preset's MTTF is taken (the hazard then scales with GPUs)
PRESET_REFERENCE_GPUS = 1024


def _check_gpus(gpus) -> int:
    if isinstance(gpus, bool) or not float(gpus) == int(gpus) or int(gpus) < 1:
        raise ValueError(f"gpus must be a positive integer, got {gpus!r}")
    return int(gpus)


def _with_restart(mix: FailureMix, restart: RestartTime) -> FailureMix:
    if restart.kind == "mixture":
        raise ValueError("restart must be a single distribution (fixed, lognormal, exponential) to apply to "
                         "every failure type")
    return FailureMix([FailureType(t.name, t.probability, restart, t.category) for t in mix.types])


def _explicit_preset(fs):
    """The configured preset when it replaces the fitted model (``None`` for the fitted model's own)."""
    preset = getattr(fs, "preset", None)
    return None if preset is None or preset.uses_bundle else preset


def explicit_failures(fs) -> dict | None:
    """The explicit failure process of a ``failures`` section, after the precedence rules:
    ``{"mttf_s", "reference_gpus", "shape", "source": "preset" | "mttf"}`` or ``None`` (the bundle's
    failure model)."""
    preset = _explicit_preset(fs)
    if preset is not None:
        return {"mttf_s": float(preset.mttf_s(PRESET_REFERENCE_GPUS)), "reference_gpus": PRESET_REFERENCE_GPUS,
                "shape": None, "source": "preset"}
    if fs.mttf_s is not None:
        return {"mttf_s": float(fs.mttf_s), "reference_gpus": fs.reference_gpus, "shape": fs.shape,
                "source": "mttf"}
    return None


def _failure(gpus: int, fs, model: Callable[[], Any]) -> FailureProcess:
    """The job's failure process at ``gpus`` GPUs before rate multipliers (module docstring)."""
    exp = explicit_failures(fs)
    if exp is not None:
        base = ExponentialFailures(exp["mttf_s"]) if exp["shape"] is None else WeibullFailures(exp["shape"],
                                                                                               exp["mttf_s"])
        ref = exp["reference_gpus"]
        return base if ref is None else base.scaled(gpus / ref)
    fm = model()["failure"]
    try:
        law = fm.failure_law(gpus, kind=fs.model, type=fs.job_type)
    except (ValueError, KeyError):  # a model that does not know the job type: its training mix
        law = fm.failure_law(gpus, kind=fs.model)
    return failure_process_from_law(law)


def _explicit_restart(fs, rs) -> RestartTime | None:
    if getattr(rs, "time_s", None) is not None:
        return RestartTime.fixed(float(rs.time_s))
    preset = _explicit_preset(fs)
    return None if preset is None else preset.restart_time()


def _mix(gpus: int, fs, rs, bundle, default: Callable[[], Any] | None) -> FailureMix:
    """Failure types and their restart times at ``gpus`` GPUs before the automation factors."""
    table = FailureMix.from_failure_table(gpus)
    restart = _explicit_restart(fs, rs)
    if restart is not None:
        return _with_restart(table, restart)
    source = rs.source
    if source == "auto":
        source = "table"
        if bundle is not None:
            source = "bundle"
        elif default is not None and fs.mttf_s is None:
            try:
                bundle = default()
                source = "bundle"
            except AcmeModelError:
                pass
    if source == "table":
        return table
    b = bundle if bundle is not None else default()
    model = b["restart"]
    if getattr(model, "fallback_", False):
        return table  # the model is the published prior per reason: the table itself
    dist = None
    for kw in ({"type": fs.job_type}, {}):  # the job type if the model knows it, else its population's mix
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
        """Apply the rate multipliers and restart-automation factors once, to the process and the mix
        (none given: both as they are)."""
        if rate_multipliers or restart_factors:
            mix, total = mix.adjusted(rate_multipliers=rate_multipliers, restart_factors=restart_factors)
            if total != 1.0:
                failure = failure.scaled(total)
        return cls(int(gpus), failure, mix, mix.restart_distribution())

    @classmethod
    def from_bundle(cls, bundle, run, config, *, default: Callable[[], Any] | None = None) -> "RunInputs":
        """The inputs of ``run`` (a config run, or anything with ``gpus``; or a GPU count) under ``config``
        (anything with the ``failures`` and ``restart`` sections of a
        :class:`~acmemodel.planner.config.ClusterConfig`), by the precedence rules of the module docstring.

        ``bundle``: the given bundle or ``None``; ``default``: a zero-argument callable returning the
        default bundle (loaded only when a model is needed; it may raise :class:`AcmeModelError`), used
        when ``bundle`` is ``None``."""
        gpus = _check_gpus(getattr(run, "gpus", run))
        fs, rs = config.failures, config.restart

        def model():
            if bundle is not None:
                return bundle
            if default is None:
                raise AcmeModelError("no bundle: the failure process needs failures.mttf, a reliability preset "
                                     "or a bundle with a failure model")
            return default()

        fail = _failure(gpus, fs, model)
        mix = _mix(gpus, fs, rs, bundle, default)
        return cls.assemble(gpus, fail, mix, rate_multipliers=fs.rate_multipliers or None,
                            restart_factors=rs.automation or None)
