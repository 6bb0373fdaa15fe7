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

**Your own fleet** (a preset from a file): ``acmemodel convert --from failures LOG... -o my-fleet.json``
fits :class:`~acmemodel.models.fleet_reliability.FleetReliability` on a node failure log and writes a
preset file that ``--reliability my-fleet.json`` (``checkpoint``, ``plan``, ``sweep``) and a config's
``failures.reliability`` accept beside the published names (:func:`get_preset`). It means the same as
a published preset: ``failures_per_1000_node_days`` is the fleet's node failure rate (all categories,
calendar node-days), so ``MTTF(g) = 1 / (n · r_f)`` and a job's failures are exponential — the
superposition of ``n`` independent node renewal processes tends to a Poisson process (Drenick), so
the node's own Weibull shape (``weibull_shape``, carried and reported) is not applied to the job;
``restart_s`` is the mean of the fitted repair-time law (the log's down time: what a job waits when it
needs its failed node back — give ``--restart`` when spare nodes let it restart sooner) and the plan
draws restarts from that law (``restart_law``: log-normal or exponential; a Weibull repair law is
replaced by the log-normal of the same mean and median); ``ckpt_cost_s`` is ``None`` (a failure log
says nothing about checkpoint writes: give ``--ckpt-cost`` / ``checkpoint.sync_cost``);
``category_mix`` is the share of failures per category of the log (``hardware_share`` its Hardware
share) — reported, while the failure-type mix of a plan still comes from the bundle.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

from acmemodel.errors import ConfigError

DAY = 86400.0
#: ``kind`` of a preset file written by ``acmemodel convert --from failures``
PRESET_FILE_KIND = "acmemodel.reliability_preset"


@dataclass(frozen=True)
class ReliabilityPreset:
    """One published reliability figure.

    ``failures_per_1000_node_days``: ``None`` = the bundle's fitted failure model (``acme-2023``).
    ``restart_s`` / ``ckpt_cost_s``: published restart time and checkpoint write cost (s), or ``None``.
    A preset from a fleet's failure log (:func:`preset_from_fleet`) also carries ``weibull_shape`` (a
    node's time-between-failures shape, reported, not applied: see the module docstring),
    ``restart_law`` (``{"family", "mean_s", "median_s"}`` of the repair-time law), ``category_mix``
    (category → share of failures) and ``path`` (the file it was read from).
    """

    name: str
    source: str
    failures_per_1000_node_days: float | None
    gpus_per_node: int = 8
    restart_s: float | None = None
    ckpt_cost_s: float | None = None
    hardware_share: float | None = None
    note: str = ""
    weibull_shape: float | None = None
    restart_law: dict | None = field(default=None, compare=False)
    category_mix: dict | None = field(default=None, compare=False)
    path: str | None = None

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

    def restart_time(self):
        """The restart time a plan draws (:class:`~acmemodel.planner.run.processes.RestartTime`): the
        repair-time law of a fleet preset (log-normal or exponential; a Weibull law as the log-normal of
        its mean and median), else ``restart_s`` fixed; ``None`` when the preset has neither."""
        from acmemodel.planner.run.processes import RestartTime

        law = self.restart_law
        if law is None:
            return None if self.restart_s is None else RestartTime.fixed(self.restart_s)
        if law["family"] == "exponential" or not law["mean_s"] > law["median_s"]:
            return RestartTime.exponential(law["mean_s"])
        return RestartTime.lognormal(law["mean_s"], law["median_s"])

    def to_dict(self) -> dict:
        return {"name": self.name, "source": self.source,
                "failures_per_1000_node_days": self.failures_per_1000_node_days,
                "gpus_per_node": self.gpus_per_node, "restart_s": self.restart_s, "ckpt_cost_s": self.ckpt_cost_s,
                "hardware_share": self.hardware_share, "note": self.note, "weibull_shape": self.weibull_shape,
                "restart_law": self.restart_law, "category_mix": self.category_mix, "path": self.path}


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


#: presets read from files (:func:`load_preset_file`), by name and by path
_FROM_FILES: dict[str, ReliabilityPreset] = {}


def get_preset(name: str, where: str = "reliability") -> ReliabilityPreset:
    """The preset called ``name`` — a published one (:data:`PRESETS`), a preset file (``*.json``,
    :func:`load_preset_file`) or the name of a preset file read before; :class:`ConfigError` naming
    ``where`` and the known presets otherwise."""
    p = PRESETS.get(str(name))
    if p is not None:
        return p
    p = _FROM_FILES.get(str(name))
    if p is not None:
        return p
    if _is_bundle(name):
        return preset_from_bundle(name, where)
    if str(name).lower().endswith(".json") or Path(str(name)).is_file():
        return load_preset_file(name, where)
    raise ConfigError(f"{where} must be one of {', '.join(PRESETS)}, a preset file (.json, from "
                      f"'acmemodel convert --from failures') or a fitted bundle, got {name!r}")


def _is_bundle(name) -> bool:
    """A bundle written by ``acmemodel fit``: a directory holding ``bundle.json``, or a ``.zip``."""
    p = Path(str(name))
    return (p.is_dir() and (p / "bundle.json").is_file()) or (p.is_file() and p.suffix.lower() == ".zip")


#: GPUs of the job at which a bundle's failure model is turned into a preset's node failure rate
BUNDLE_REFERENCE_GPUS = 1024


def preset_from_bundle(path, where: str = "reliability") -> ReliabilityPreset:
    """A preset from a fitted bundle's failure model (e.g. ``acmemodel fit`` of a site's own trace): its
    late-regime job MTTF at :data:`BUNDLE_REFERENCE_GPUS` GPUs as a node failure rate,
    ``r = 1000 · 86,400 / (MTTF(1,024) · 1,024 / g_node)`` per 1,000 node-days (``g_node``: the GPUs per
    node of the bundle's cluster description, else 8), applied like every preset (exponential, hazard ∝
    GPUs); its Weibull shape is reported. So a bundle means the same thing as a row of the sensitivity
    band as when it is chosen. :class:`ConfigError` naming the bundle when it holds no failure model."""
    from acmemodel.errors import BundleError
    from acmemodel.models.bundle import Bundle

    p = Path(str(path)).resolve()
    key = str(p)
    if key in _FROM_FILES:
        return _FROM_FILES[key]
    try:
        b = Bundle.load(p)
    except BundleError as e:
        raise ConfigError(f"{where}: {e}") from None
    fm = b.get("failure")
    if fm is None:
        raise ConfigError(f"{where}: bundle {p} holds no failure model (its trace had no failed job); use a "
                          f"preset file or one of {', '.join(PRESETS)}")
    specs = b.clusters()
    gpn = {s.gpus_per_node for s in specs.values() if getattr(s, "gpus_per_node", None)}
    gpn = gpn.pop() if len(gpn) == 1 else 8
    mttf = float(fm.mttf(BUNDLE_REFERENCE_GPUS))
    rate = 1000.0 * DAY / (mttf * BUNDLE_REFERENCE_GPUS / gpn)
    shape = getattr(fm, "shape_", None)
    preset = ReliabilityPreset(
        name=p.name, source=f"fitted bundle {p} (failure model, late regime)", failures_per_1000_node_days=rate,
        gpus_per_node=int(gpn), weibull_shape=float(shape) if isinstance(shape, (int, float)) else None,
        note=f"job MTTF {mttf / 3600:.3g} h at {BUNDLE_REFERENCE_GPUS:,} GPUs, applied as exponential with "
             "hazard ∝ GPUs", path=key)
    _FROM_FILES[key] = _FROM_FILES[preset.name] = preset
    return preset


def preset_spec(value: str | None) -> str | None:
    """A ``--reliability`` value as the config stores it: a published name as is, an existing preset
    file as its absolute path (so a config or a sweep point finds it from any directory)."""
    if value is None or str(value) in PRESETS or not (Path(str(value)).is_file() or _is_bundle(value)):
        return value
    return str(Path(str(value)).resolve())


def preset_from_fleet(model, *, name: str, source: str, gpus_per_node: int | None = None) -> ReliabilityPreset:
    """A preset from a fitted :class:`~acmemodel.models.fleet_reliability.FleetReliability` (module
    docstring): its node failure rate, Weibull shape, repair-time law (as restart time) and category
    mix. ``gpus_per_node``: GPUs of a node of the fleet (default: the log's, else 8)."""
    rep = model.repair_
    fam = rep["best"]
    f = rep["families"][fam]
    if fam == "lognormal":
        mean, median = math.exp(f["mu_log_s"] + f["sigma"] ** 2 / 2), math.exp(f["mu_log_s"])
    elif fam == "weibull":
        mean = f["scale_s"] * math.gamma(1 + 1 / f["shape"])
        median = f["scale_s"] * math.log(2) ** (1 / f["shape"])
    else:
        mean, median = f["mean_s"], f["mean_s"] * math.log(2)
    gpn = int(gpus_per_node or model.gpus_per_node_ or 8)
    mix = {str(k): float(v) for k, v in model.category_mix_.items()}
    hw = next((v for k, v in mix.items() if k.lower() == "hardware"), None)
    w = model.tbf_["families"]["weibull"]
    note = (f"node TBF Weibull shape {w['shape']:.2f} ({w['shape_lower']:.2f}-{w['shape_upper']:.2f}), best TBF law "
            f"{model.tbf_['best']}; repair law {fam} (mean {mean / 3600:.1f} h, median {median / 3600:.2f} h); "
            f"{gpn} GPUs per node assumed")
    return ReliabilityPreset(str(name), str(source), float(model.rate_per_node_day_ * 1000.0), gpus_per_node=gpn,
                             restart_s=float(mean), ckpt_cost_s=None, hardware_share=hw, note=note,
                             weibull_shape=float(w["shape"]),
                             restart_law={"family": fam, "mean_s": float(mean), "median_s": float(median)},
                             category_mix=mix)


def save_preset_file(preset: ReliabilityPreset, path, *, fleet: dict | None = None) -> None:
    """Write ``preset`` as a preset file (JSON: ``kind``, ``preset``, and the fitted ``fleet`` model)."""
    doc = {"kind": PRESET_FILE_KIND, "preset": {k: v for k, v in preset.to_dict().items() if k != "path"}}
    if fleet is not None:
        doc["fleet"] = fleet
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(json.dumps(doc, indent=1, allow_nan=False) + "\n")


def load_preset_file(path, where: str = "reliability") -> ReliabilityPreset:
    """Read a preset file of :func:`save_preset_file`; :class:`ConfigError` naming the file and field."""
    p = Path(str(path))
    if not p.is_file():
        raise ConfigError(f"{where}: {p}: no such preset file (and not one of {', '.join(PRESETS)})")
    try:
        doc = json.loads(p.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ConfigError(f"{where}: {p}: not a JSON preset file ({str(e).splitlines()[0]})") from None
    if not isinstance(doc, dict) or doc.get("kind") != PRESET_FILE_KIND or not isinstance(doc.get("preset"), dict):
        raise ConfigError(f"{where}: {p}: not a reliability preset file (no kind {PRESET_FILE_KIND!r})")
    d = doc["preset"]
    rate = d.get("failures_per_1000_node_days")
    if not isinstance(rate, (int, float)) or not math.isfinite(rate) or rate <= 0:
        raise ConfigError(f"{where}: {p}: preset.failures_per_1000_node_days must be a positive number, got {rate!r}")
    gpn = d.get("gpus_per_node", 8)
    if not isinstance(gpn, int) or gpn < 1:
        raise ConfigError(f"{where}: {p}: preset.gpus_per_node must be a positive integer, got {gpn!r}")
    name = str(d.get("name") or p.stem)
    if name in PRESETS:
        raise ConfigError(f"{where}: {p}: preset.name {name!r} is a published preset's; choose another")
    law = d.get("restart_law")
    if law is not None and not (isinstance(law, dict) and law.get("family") in ("lognormal", "exponential", "weibull")
                                and all(isinstance(law.get(k), (int, float)) and law[k] > 0
                                        for k in ("mean_s", "median_s"))):
        raise ConfigError(f"{where}: {p}: preset.restart_law must have family, mean_s > 0 and median_s > 0")
    try:
        preset = ReliabilityPreset(name, str(d.get("source", p.name)), float(rate), gpus_per_node=gpn,
                                   restart_s=None if d.get("restart_s") is None else float(d["restart_s"]),
                                   ckpt_cost_s=None if d.get("ckpt_cost_s") is None else float(d["ckpt_cost_s"]),
                                   hardware_share=d.get("hardware_share"), note=str(d.get("note", "")),
                                   weibull_shape=d.get("weibull_shape"), restart_law=law,
                                   category_mix=d.get("category_mix"), path=str(p.resolve()))
    except (TypeError, ValueError) as e:
        raise ConfigError(f"{where}: {p}: bad preset ({e})") from None
    _FROM_FILES[name] = preset
    _FROM_FILES[str(path)] = preset
    return preset
