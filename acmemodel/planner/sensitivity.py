"""Sensitivity band of a run's plan: how the answer moves with the failure-rate assumption.

For one run the band re-plans it (same work, checkpoint cost, multipliers, seed — common random numbers)
under

* every reliability preset other than the one chosen (:mod:`.reliability`; a preset sets the failure
  rate and, where published, the restart time and the checkpoint write cost), and
* ``×0.5`` and ``×2`` the chosen failure rate (every failure type's hazard scaled; mix unchanged),

and reports per scenario: completion p50/p90 (s), expected failures, GPU-hours lost, the optimal
checkpoint interval (s), the job MTTF (s) and the checkpoint cost it used (``ckpt_cost_s`` and
``ckpt_cost_source``).

A preset row means what choosing that preset (``--reliability`` / ``failures.reliability``) means
(:func:`scenario_ckpt_cost`): the preset's published checkpoint write cost replaces the cost only where
the configuration does not set one (the run's ``ckpt_cost``, else the mode's cost in ``checkpoint``);
a preset without a published cost uses the configuration's own cost, or the mode's default. ``most_sensitive`` names the scenario whose completion p90
differs most (relative) from the chosen answer. Replicas are capped at ``band_replicas`` per scenario.
"""
from __future__ import annotations

from acmemodel.planner.reliability import PRESETS

#: rate factors of the band around the chosen failure rate
RATE_FACTORS = (0.5, 2.0)


def scenario_ckpt_cost(config, run_spec, preset) -> tuple[float, str]:
    """(checkpoint cost in s, source) of ``run_spec`` of ``config`` (a
    :class:`~acmemodel.planner.config.ClusterConfig`) had ``preset`` been chosen: the run's own
    ``ckpt_cost`` (``"run"``), the cost the configuration sets for its mode (``"config"``), the preset's
    published write cost (``"preset"``), else the mode's default (``"default"``) -- the rule of
    :meth:`ClusterConfig.load` for ``failures.reliability``."""
    from acmemodel.planner.config import CheckpointSpec

    if run_spec.ckpt_cost_s is not None:
        return float(run_spec.ckpt_cost_s), "run"
    ck = config.checkpoint
    if ck.cost_source == "config":
        return float(ck.cost_s), "config"
    if preset is not None and preset.ckpt_cost_s is not None:
        return float(preset.ckpt_cost_s), "preset"
    return float(CheckpointSpec(mode=ck.mode).cost_s), "default"


def _summary(run) -> dict:
    d = run.to_dict()
    ct = d["completion_time_s"]
    return {"finishes": d["finishes"], "completion_p50_s": ct.get("p50"), "completion_p90_s": ct.get("p90"),
            "completion_mean_s": ct.get("mean"), "expected_failures": d["expected_failures"],
            "gpu_hours_lost": (d["gpu_time_loss_gpu_h"] or {}).get("total"),
            "optimal_interval_s": d["optimal_interval_s"], "mttf_s": d["mttf_s"],
            "ckpt_cost_s": float(run.ckpt_cost_s)}


def _scaled_multipliers(main_run, base: dict, factor: float) -> dict:
    """Per-type multipliers: the config's (a type's own, else its category's) times ``factor``."""
    return {t.name: base.get(t.name, base.get(t.category, 1.0)) * factor for t in main_run.mix.types}


def sensitivity_band(main_run, *, chosen: str | None, scenario, replicas: int,
                     base_multipliers: dict | None = None, band_replicas: int = 2000, ckpt_cost_for=None, main_cost_source: str | None = None) -> dict:
    """The band of ``main_run`` (a :class:`RunPlan`). ``chosen``: the preset of the main answer (``None``:
    the config's own failure model); ``scenario(preset=..., rate_multipliers=..., n_replicas=...,
    ckpt_cost=...)`` re-plans the run under another preset or other rate multipliers (the planner's
    inputs path); ``replicas``: the main run's (capped at ``band_replicas``); ``base_multipliers``: the
    configuration's rate multipliers; ``ckpt_cost_for(preset) -> (cost_s, source)`` the checkpoint
    cost a preset row uses (default: the preset's published cost, else the main run's; the planner
    passes :func:`scenario_ckpt_cost` so a row equals choosing the preset); ``main_cost_source`` the
    source of the main run's cost."""
    n_rep = min(int(replicas), band_replicas)
    base_mult = dict(base_multipliers or {})
    main = {**_summary(main_run), "ckpt_cost_source": main_cost_source}
    rows = []
    for name, preset in PRESETS.items():
        if name == chosen:
            continue
        kwp = {"n_replicas": n_rep}
        if ckpt_cost_for is not None:
            kwp["ckpt_cost"], source = ckpt_cost_for(preset)
        elif preset.ckpt_cost_s is not None:
            kwp["ckpt_cost"], source = preset.ckpt_cost_s, "preset"
        else:
            source = main_cost_source
        run = scenario(preset=preset, **kwp)
        rows.append({"scenario": name, "kind": "preset", **_summary(run), "ckpt_cost_source": source})
    for f in RATE_FACTORS:
        run = scenario(rate_multipliers=_scaled_multipliers(main_run, base_mult, f), n_replicas=n_rep)
        rows.append({"scenario": f"x{f:g} failure rate", "kind": "rate", **_summary(run),
                     "ckpt_cost_source": main_cost_source})
    ref = main["completion_p90_s"]
    best, best_change = None, -1.0
    for r in rows:
        v = r["completion_p90_s"]
        if ref and v is not None:
            change = v / ref - 1.0
        elif ref is not None and v is None:
            change = float("inf")        # does not finish: the largest move there is
        else:
            change = None
        r["completion_p90_change"] = change
        if change is not None and abs(change) > best_change:
            best, best_change = r["scenario"], abs(change)
    return {"chosen": chosen, "replicas": n_rep, "main": main, "scenarios": rows,
            "most_sensitive": best}
