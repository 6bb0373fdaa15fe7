"""Sensitivity band of a run's plan: how the answer moves with the failure-rate assumption.

For one run the band re-plans it (same work, checkpoint cost, multipliers, seed — common random numbers)
under

* every reliability preset other than the one chosen (:mod:`.reliability`; a preset sets the failure
  rate and, where published, the restart time and the checkpoint write cost), and
* ``×0.5`` and ``×2`` the chosen failure rate (every failure type's hazard scaled; mix unchanged),

and reports per scenario: completion p50/p90 (s), expected failures, GPU-hours lost, the optimal
checkpoint interval (s) and the job MTTF (s). ``most_sensitive`` names the scenario whose completion p90
differs most (relative) from the chosen answer. Replicas are capped at ``band_replicas`` per scenario.
"""
from __future__ import annotations

from acmemodel.planner.reliability import PRESETS

#: rate factors of the band around the chosen failure rate
RATE_FACTORS = (0.5, 2.0)


def _summary(run) -> dict:
    d = run.to_dict()
    ct = d["completion_time_s"]
    return {"finishes": d["finishes"], "completion_p50_s": ct.get("p50"), "completion_p90_s": ct.get("p90"),
            "completion_mean_s": ct.get("mean"), "expected_failures": d["expected_failures"],
            "gpu_hours_lost": (d["gpu_time_loss_gpu_h"] or {}).get("total"),
            "optimal_interval_s": d["optimal_interval_s"], "mttf_s": d["mttf_s"]}


def _scaled_multipliers(planner, gpus: int, base: dict, factor: float) -> dict:
    """Per-type multipliers: the config's (a type's own, else its category's) times ``factor``."""
    mix = planner.failure_mix(gpus)
    return {t.name: base.get(t.name, base.get(t.category, 1.0)) * factor for t in mix.types}


def sensitivity_band(planner, main_run, *, chosen: str | None, run_kwargs: dict, make_planner,
                     band_replicas: int = 2000) -> dict:
    """The band of ``main_run`` (a :class:`RunPlan` planned by ``planner`` with ``run_kwargs`` — the
    keywords of :meth:`Planner.completion`). ``chosen``: the preset of the main answer (``None``: the
    config's own failure model); ``make_planner(preset)`` returns the planner of another preset."""
    kw = dict(run_kwargs)
    kw["n_replicas"] = min(int(kw.get("n_replicas", band_replicas)), band_replicas)
    base_mult = dict(kw.pop("rate_multipliers", None) or {})
    main = _summary(main_run)
    rows = []
    for name, preset in PRESETS.items():
        if name == chosen:
            continue
        p = make_planner(preset)
        kwp = dict(kw)
        if preset.ckpt_cost_s is not None:
            kwp["ckpt_cost"] = preset.ckpt_cost_s
        run = p.completion(main_run.gpus, rate_multipliers=base_mult or None, **kwp)
        rows.append({"scenario": name, "kind": "preset", **_summary(run)})
    for f in RATE_FACTORS:
        mult = _scaled_multipliers(planner, main_run.gpus, base_mult, f)
        run = planner.completion(main_run.gpus, rate_multipliers=mult, **kw)
        rows.append({"scenario": f"x{f:g} failure rate", "kind": "rate", **_summary(run)})
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
    return {"chosen": chosen, "replicas": kw["n_replicas"], "main": main, "scenarios": rows,
            "most_sensitive": best}
