"""Published fleet-reliability presets: the failure rate a plan assumes, stated and swappable.

A preset sets a run's **failure rate** (and, where the source publishes them, the restart time and the
checkpoint write cost); the failure-type mix and its restart times otherwise come from the bundle. The
fleet presets are node-level rates ``r_f`` (failures per node-day) with a job's hazard proportional to its
node count, so a job of ``g`` GPUs on nodes of ``gpus_per_node`` has exponential failures with

    MTTF(g) = 1 / (n · r_f),   n = g / gpus_per_node                           (Kokolis et al., eq. 1)

* ``acme-2023`` — the bundle's own fitted failure model (:class:`~acmemodel.models.FailureModel`:
  Weibull, hazard ∝ g^α); about 82 h at 1,024 GPUs for the shipped default, i.e. ≈ 2.3 failures per
  1,000 node-days;
* ``meta-rsc1`` / ``meta-rsc2`` — Kokolis et al., "Revisiting Reliability in Large-Scale ML Research
  Clusters" (HPCA'25): 6.50 / 2.34 failures per 1,000 node-days on 8-GPU A100 nodes (RSC-1: MTTF 1.8 h
  at 16,384 GPUs); restart overhead 5–20 min (taken as its midpoint, 12.5 min, fixed); checkpoint write
  ≈ 5 min;
* ``llama3-405b`` — "The Llama 3 Herd of Models" §3.3.4: 419 unexpected interruptions in 54 days on
  16,384 H100 GPUs (2,048 nodes of 8): one per 3.09 h, ``r_f = 419 / (54 · 2048)`` per node-day; 78 %
  attributed to hardware.

Sources and figures are also listed in ``acmemodel/datasets/data/PROVENANCE.md``.
"""
from __future__ import annotations

from dataclasses import dataclass

from acmemodel.errors import ConfigError

DAY = 86400.0


@dataclass(frozen=True)
class ReliabilityPreset:
    """One published reliability figure.

    ``failures_per_1000_node_days``: ``None`` = the bundle's fitted failure model (``acme-2023``).
    ``restart_s`` / ``ckpt_cost_s``: published restart time and checkpoint write cost (s), or ``None``.
    """

    name: str
    source: str
    failures_per_1000_node_days: float | None
    gpus_per_node: int = 8
    restart_s: float | None = None
    ckpt_cost_s: float | None = None
    hardware_share: float | None = None
    note: str = ""

    @property
    def uses_bundle(self) -> bool:
        return self.failures_per_1000_node_days is None

    def mttf_s(self, gpus: int) -> float:
        """Job MTTF (s) at ``gpus`` GPUs: ``1 / (n · r_f)`` with ``n = gpus / gpus_per_node`` nodes."""
        if self.uses_bundle:
            raise ValueError(f"preset {self.name!r} is the bundle's failure model; ask the planner")
        if gpus <= 0:
            raise ValueError(f"gpus must be positive, got {gpus!r}")
        r_f = self.failures_per_1000_node_days / 1000.0 / DAY      # failures per node-second
        return 1.0 / (gpus / self.gpus_per_node * r_f)

    def planner_kwargs(self, reference_gpus: int = 1024) -> dict:
        """Keyword arguments of :class:`~acmemodel.planner.planner.Planner` that impose this preset's
        failure rate (exponential, hazard ∝ GPUs) and published restart time; ``{}`` for the bundle's."""
        if self.uses_bundle:
            return {}
        kw = {"mttf": self.mttf_s(reference_gpus), "reference_gpus": int(reference_gpus)}
        if self.restart_s is not None:
            kw["restart"] = float(self.restart_s)
        return kw

    def to_dict(self) -> dict:
        return {"name": self.name, "source": self.source,
                "failures_per_1000_node_days": self.failures_per_1000_node_days,
                "gpus_per_node": self.gpus_per_node, "restart_s": self.restart_s, "ckpt_cost_s": self.ckpt_cost_s,
                "hardware_share": self.hardware_share, "note": self.note}


PRESETS: dict[str, ReliabilityPreset] = {p.name: p for p in (
    ReliabilityPreset("acme-2023", "AcmeTrace (NSDI'24), this package's default bundle: fitted FailureModel", None,
                      note="Weibull failures, hazard ∝ GPUs^α, from the bundle"),
    ReliabilityPreset("meta-rsc1", "Kokolis et al., HPCA'25, RSC-1 (A100, 8 GPUs/node)", 6.50,
                      restart_s=12.5 * 60, ckpt_cost_s=5 * 60,
                      note="restart overhead 5-20 min (midpoint used); checkpoint write ~5 min"),
    ReliabilityPreset("meta-rsc2", "Kokolis et al., HPCA'25, RSC-2 (A100, 8 GPUs/node)", 2.34,
                      restart_s=12.5 * 60, ckpt_cost_s=5 * 60,
                      note="restart overhead 5-20 min (midpoint used); checkpoint write ~5 min"),
    ReliabilityPreset("llama3-405b", "Llama 3 Herd of Models, sec. 3.3.4 (16,384 H100, 54 days)",
                      419 / (54 * 2048) * 1000, hardware_share=0.78,
                      note="419 unexpected interruptions in 54 days (one per 3.09 h at 16,384 GPUs)"),
)}


def get_preset(name: str, where: str = "reliability") -> ReliabilityPreset:
    """The preset called ``name``; :class:`ConfigError` naming ``where`` and the known presets otherwise."""
    p = PRESETS.get(str(name))
    if p is None:
        raise ConfigError(f"{where} must be one of {', '.join(PRESETS)}, got {name!r}")
    return p
