"""``acmemodel plan CONFIG``: completion time, failure-weighted GPU-time loss and quotas for a cluster config."""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from acmemodel.cli._app import app, print_json
from acmemodel.cli._common import console, counted_backoffs, identifiability_note, print_identifiability
from acmemodel.cli._fmt import dur, num, table


@app.command("plan")
def plan_cmd(
    config: Optional[Path] = typer.Argument(
        None, help="Cluster configuration (.yaml/.yml/.toml); default: the shipped example "
                   "(acmemodel/planner/examples/example.yaml)."),
    bundle: Optional[Path] = typer.Option(
        None, "--bundle", help="Fitted bundle (default: the embedded default bundle)."),
    report: Optional[Path] = typer.Option(None, "--report", help="Write an HTML report with plots here."),
    replicas: Optional[int] = typer.Option(None, "--replicas", help="Override simulation.replicas."),
    no_cluster: bool = typer.Option(False, "--no-cluster", help="Skip the cluster simulation and quota search."),
    reliability: Optional[str] = typer.Option(
        None, "--reliability", help="Failure rate for every run: acme-2023, meta-rsc1, meta-rsc2, llama3-405b "
                                    "or a preset file of 'convert --from failures' or a fitted bundle (overrides failures.reliability/mttf of the config)."),
    json_out: bool = typer.Option(False, "--json", help="Print the plan as JSON."),
    yes: bool = typer.Option(False, "--yes", help="Run even when the estimated memory exceeds half of "
                                                  "this machine's memory."),
    init: Optional[Path] = typer.Option(
        None, "--init", help="Write a starting config for the cluster of this fitted bundle (sized from its "
                             "description: GPUs, GPUs per node, partitions) instead of planning; see -o."),
    init_out: Optional[Path] = typer.Option(None, "-o", "--output", help="With --init: the config file to "
                                            "write (default: print it)."),
    init_cluster: Optional[str] = typer.Option(None, "--cluster", help="With --init: the bundle's cluster "
                                               "(default: its only one)."),
) -> None:
    """For each pretraining run: checkpoint interval, completion time (mean, p50, p90), expected failures,
    ETTR and GPU-time loss by cause and failure type; for the cluster: queue delays per job type and the
    recommended quotas. With --init BUNDLE: write a starting config for that bundle's cluster."""
    from acmemodel.planner.config import ClusterConfig
    from acmemodel.planner.planner import Planner

    if init is not None:
        if config is not None:
            raise ValueError("--init writes a config: give either a CONFIG to plan or --init BUNDLE, not both")
        _init(init, init_out, init_cluster, json_out)
        return
    if init_out is not None or init_cluster is not None:
        raise ValueError("-o/--output and --cluster go with --init BUNDLE")

    if config is None:
        from importlib import resources

        config = Path(str(resources.files("acmemodel.planner").joinpath("examples", "example.yaml")))
    from acmemodel.planner.reliability import preset_spec

    cfg = ClusterConfig.load(config, reliability=preset_spec(reliability))
    if replicas is not None:
        if replicas < 1:
            raise ValueError(f"--replicas must be a positive integer, got {replicas}")
        cfg.simulation.replicas = int(replicas)
    from acmemodel.synth import sample_workload

    planner = Planner(bundle, sampler=sample_workload)
    _check_size(planner, cfg, cluster=not no_cluster, yes=yes)
    with counted_backoffs() as backoffs:  # the simulated workload's sparse model cells
        result = planner.plan(cfg, cluster=not no_cluster)
    if report is not None:
        result.report(report)
    doc = result.to_dict()
    if report is not None:
        doc["report"] = str(report)
    doc["model_backoffs"] = backoffs
    note = _note(planner)
    if note:
        doc["identifiability"] = note
    if json_out:
        print_json(doc)
        return
    _print_human(doc)
    if backoffs:
        console.print(f"{len(backoffs):,} sparse model cell(s) of the simulated workload answered from coarser "
                      "cells (--json lists them)")
    print_identifiability(note)


def init_config(bundle, source, cluster: str | None = None) -> tuple[str, dict]:
    """A starting planner config (YAML text, and the values it holds) for a cluster of ``bundle``,
    sized from the bundle's description of it: the whole cluster's GPUs and node size, a pretraining
    reservation of half of it (whole nodes) for one run, every job type of the log in the shared
    pool, the queue target on the most frequent type. ``ValueError`` naming the field when the size is
    unknown (the description says so; ``convert --gpus N --gpus-per-node M`` records it)."""
    from acmemodel.cli._common import bundle_cluster, describe_size

    name, spec = bundle_cluster(bundle, cluster, source)
    where = f"bundle {source}" if source is not None else "the default bundle"
    if spec is None or spec.gpus is None:
        raise ValueError(f"--init: {where}: cluster {name!r} has no GPU count in its description (gpus); "
                         "re-run convert with --gpus N --gpus-per-node M, then fit")
    if spec.gpus_per_node is None:
        raise ValueError(f"--init: {where}: cluster {name!r} has no GPUs per node in its description "
                         "(gpus_per_node); re-run convert with --gpus-per-node M, then fit")
    per, total = int(spec.gpus_per_node), int(spec.gpus)
    nodes = total // per
    if nodes < 2:
        raise ValueError(f"--init: {where}: cluster {name!r} has {nodes} node(s) (gpus / gpus_per_node); a "
                         "reservation next to a shared pool needs at least 2")
    reserve = (nodes // 2) * per
    arrival = bundle["arrival"]
    types = list(arrival.types(name))
    t0 = 1677628800.0  # (2023-03-01 UTC: a week of the model's expected arrivals per type)
    counts = {t: float(arrival.expected_count(t0, t0 + 7 * 86400.0, cluster=name, type=t)) for t in types}
    target = max(types, key=lambda t: counts[t])
    fail_types = sorted(getattr(getattr(bundle.get("failure"), "design_", None), "type_map", None) or [])
    job_type = next((t for t in ("Pretrain", target) if t in fail_types), fail_types[0] if fail_types else None)
    values = {"name": f"{name}-plan", "cluster": name, "gpus": total, "gpus_per_node": per, "reserve": reserve,
              "types": types, "queue_type": target, "failure_type": job_type}

    def q(x) -> str:
        import json

        return json.dumps(str(x), ensure_ascii=False)

    def c(text: str, comment: str) -> str:
        return f"{text:<27} # {comment}"

    lines = [
        f"# Starting plan for cluster {name}, written by `acmemodel plan --init` from {where}.",
        f"# Cluster description: {describe_size(spec)}; zone {spec.timezone}"
        + (f"; partitions in the log: {', '.join(spec.partitions)}" if spec.partitions else "") + ".",
        "# Edit the reservation, the run and the queue target, then: acmemodel plan THIS_FILE --bundle BUNDLE",
        f"name: {q(values['name'])}",
        "cluster:",
        c(f"  gpus: {total}", f"the whole cluster ({nodes:,} nodes of {per})"),
        f"  gpus_per_node: {per}",
        "  partitions:",
        c(f"    pretrain: {reserve}", "reserved for the run below; the rest is the shared pool"),
        c("  routing:", "the log's own job types run in the shared pool"),
        *[f"    {q(t)}: shared" for t in types],
        "  backfill: true",
        c("  include_runs: true", "the run occupies the reservation in the cluster simulation"),
        "checkpoint: {mode: sync, sync_cost: 60s, async_cost: 5s, interval: auto}",
        *([c(f"failures: {{job_type: {q(job_type)}}}", "the failure model's covariate for the run")]
          if job_type is not None else
          ["# failures: the bundle has no failure model (its log has no failed job), so the runs' failure",
           "#   rate must be given: failures.mttf + reference_gpus (+ shape), failures.reliability, or",
           "#   `acmemodel plan ... --reliability PRESET` (a published fleet's rate, not this cluster's)"]),
        "workload:",
        c(f"  cluster: {q(name)}", "this cluster's arrival, run-time, queue and failure models"),
        "  scale: 1.0",
        "  days: 7",
        "  replicas: 1",
        f"queue_target: {{type: {q(target)}, quantile: 0.9, max_wait: 10m}}",
        "runs:",
        f"  - {{name: {q(name + '-run')}, gpus: {reserve}, work: 7d}}",
        "simulation: {replicas: 2000, seed: 0, threads: 1}",
    ]
    return "\n".join(lines) + "\n", values


def _init(bundle_path: Path, out: Optional[Path], cluster: Optional[str], json_out: bool) -> None:
    from acmemodel.models.bundle import resolve_bundle
    from acmemodel.planner.config import ClusterConfig

    b = resolve_bundle(bundle_path)
    text, values = init_config(b, bundle_path, cluster)
    if out is not None:
        from acmemodel.cli._common import check_output_not_input

        check_output_not_input(out, [bundle_path], "-o/--output")
        if out.exists() and out.is_dir():
            raise ValueError(f"-o/--output: {out} is a directory")
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text, encoding="utf-8")
        ClusterConfig.load(out)  # (what was written loads: the planner's own checks)
    if json_out:
        print_json({"config": str(out) if out is not None else None, **values,
                    **({} if out is not None else {"text": text})})
    elif out is None:
        console.print(text, markup=False, highlight=False, end="", soft_wrap=True)
    else:
        console.print(f"wrote {out}: {values['gpus']:,} GPUs of cluster {values['cluster']}, "
                      f"{values['reserve']:,} reserved for one run; plan it with: acmemodel plan {out} "
                      f"--bundle {bundle_path}"
                      + ("" if values["failure_type"] is not None else
                         " --reliability PRESET (the bundle has no failure model: its log has no failed job;"
                         " or set failures.mttf in the file)"), markup=False, highlight=False)


def _note(planner) -> str | None:
    """The identifiability line of the plan's bundle's failure model (None without one)."""
    from acmemodel.errors import AcmeModelError

    try:
        return identifiability_note(planner.bundle)
    except (AcmeModelError, ValueError, OSError):  # explicit parameters, no bundle to ask
        return None


def _check_size(planner, cfg, *, cluster: bool, yes: bool) -> None:
    """Refuse, before any work, a plan whose Monte Carlo replicas or workload replicas would not fit in
    memory (:mod:`acmemodel.limits`; ``--yes`` insists)."""
    from acmemodel.limits import BYTES_PER_JOB, BYTES_PER_REPLICA, check_memory, expected_jobs

    n = cfg.simulation.replicas
    if cfg.runs:
        check_memory(f"simulation.replicas = {n:,}", n * BYTES_PER_REPLICA,
                     detail=f"{BYTES_PER_REPLICA} bytes per simulated run", insist="--yes (or --replicas N)",
                     yes=yes)
    if not cluster:
        return
    wl = cfg.workload
    planner._check_config_against_bundle(cfg, cluster=True)  # (names workload.cluster: the bundle's own)
    try:
        arrival = planner.bundle["arrival"]
        jobs = expected_jobs(arrival, wl.cluster, wl.days, wl.scale) if wl.cluster in arrival.clusters_ else 0.0
    except Exception:  # no arrival model / no bundle: the planner reports it
        return
    check_memory(f"workload (scale {num(wl.scale)}, {num(wl.days)} days, {wl.replicas:,} replica(s))",
                 jobs * wl.replicas * 2 * BYTES_PER_JOB,
                 detail=f"about {jobs:,.0f} jobs per replica, held twice while simulated", yes=yes)


def _print_human(d: dict) -> None:
    """The plan as rich tables that fit 80 columns: runs, their GPU-time loss, the queues per job type
    against the target, the partitions; then notes (runs left out of the cluster simulation, ...)."""
    cl = d["cluster"]
    console.print(f"[bold]Plan {d['name']}[/bold]")
    excluded = {r["name"]: r["reason"] for r in cl.get("planned_runs_excluded") or []}
    notes: list[str] = []
    if not d["runs"]:
        console.print("no pretraining runs (a quota-only plan)")
    else:
        simulated = bool(cl.get("available", True))  # no "sim" column when the cluster was not simulated
        t = table("Pretraining runs", ["run", "GPUs", "work", "ckpt", "T mean", "T p50", "T p90", "fails",
                                       "ETTR"] + (["sim"] if simulated else []))
        for r in d["runs"]:
            sim = ("no*" if r["name"] in excluded else "yes",) if simulated else ()
            if not r["finishes"]:
                t.add_row(r["name"], num(r["gpus"]), dur(r["work_s"]), "–", "[red]never[/red]", "–", "–", "–",
                          "–", *sim)
                notes.append(f"{r['name']} does not finish: {r['reason']}")
                continue
            ct = r["completion_time_s"]
            t.add_row(r["name"], num(r["gpus"]), dur(r["work_s"], 3),
                      dur(r["checkpoint_interval_s"]) + ("" if r["checkpoint_interval_source"] == "auto" else "†"),
                      dur(ct["mean"], 3), dur(ct["p50"], 3), dur(ct["p90"], 3), num(r["expected_failures"], 2),
                      f"{r['ettr']:.3f}", *sim)
        console.print(t)
        console.print("T = completion time (mean, median, 90th percentile); ckpt = checkpoint interval "
                      "(optimal; † = set in the config); fails = expected failures; ETTR = work / wall time"
                      + ("; sim = in the cluster simulation" if simulated else ""), highlight=False)
        fin = [r for r in d["runs"] if r["finishes"]]
        if fin:
            t = table("GPU-time loss per run (GPU-h)", ["run", "total", "lost work", "restart", "checkpoint",
                                                        "top failure types"],
                      right={"total", "lost work", "restart", "checkpoint"})
            for r in fin:
                loss = r["gpu_time_loss_gpu_h"]
                top = sorted(loss["by_failure_type"].items(), key=lambda kv: -kv[1])[:3]
                t.add_row(r["name"], num(loss["total"]), num(loss["lost_work"]), num(loss["restart"]),
                          num(loss["checkpoint"]), ", ".join(f"{k} {num(v)}" for k, v in top))
            console.print(t)
            for r in fin:
                _print_energy(r)
            for r in fin:
                _print_band(r)
    for name, why in (excluded.items() if cl.get("available", True) else ()):
        notes.append(f"* {name} is not in the cluster simulation: {why}; the queues below do not include it")
    if not cl.get("available", True):
        console.print(f"[bold]cluster[/bold]: not simulated: {cl.get('reason')}")
    else:
        tgt = cl.get("target") or {}
        q_lbl = f"p{100 * tgt.get('quantile', 0.9):g}" if tgt else "p90"
        at = cl.get("queues_simulated_at") or {}
        qs0 = cl.get("quota_search") or {}
        where = (f" ({qs0['partition']} at its most generous candidate, {num(at.get(qs0['partition']))} GPUs)"
                 if qs0 and not qs0.get("feasible") and qs0.get("partition") in at else "")
        t = table("Queue delay by job type" + where, ["type", "jobs", "p50", "p90", "mean", "target"])
        for ty, q in cl["queue_s"].items():
            target = ""
            if tgt and ty == tgt.get("type"):
                qs = cl.get("quota_search") or {}
                key = {0.5: "p50", 0.9: "p90"}.get(round(float(tgt["quantile"]), 12))
                if qs:
                    met = bool(qs.get("feasible"))
                elif key is not None:
                    met = q[key] is not None and q[key] <= tgt["max_wait_s"]
                else:
                    met = None
                mark = {True: "[green]met[/green]", False: "[red]not met[/red]", None: "see --json"}[met]
                target = f"{q_lbl} ≤ {dur(tgt['max_wait_s'])}: {mark}"
            t.add_row(ty, num(q["count"]), _wait(q["p50"]), _wait(q["p90"]), _wait(q.get("mean")), target)
        console.print(t)
        qs = cl.get("quota_search")
        if qs is not None and qs.get("evaluations"):
            from acmemodel.cli.tradeoff import quota_tradeoff_table

            console.print(quota_tradeoff_table(qs, cl.get("target")))
        if qs is not None and not qs["feasible"]:
            notes.append(f"quota target not met: {qs['reason']}")
        wl = cl.get("workload") or {}
        if wl:
            console.print(f"workload: {num(wl.get('replicas'))} replica(s) of {num(wl.get('jobs_per_replica'))} jobs"
                          + (f", {wl['cluster']} arrivals × {num(wl.get('scale'))} over {num(wl.get('days'))} d"
                             if wl.get("source") == "bundle" else " (given)"), highlight=False)
    util = cl.get("utilization") or {}
    qs = cl.get("quota_search") or {}
    t = table("Partitions", ["partition", "GPUs", "utilization", "note"], right={"GPUs", "utilization"})
    for k, v in cl["quotas"].items():
        note = ""
        searched = bool(qs) and k == qs.get("partition")
        if searched:
            note = ("searched: smallest meeting the target" if qs.get("feasible") else
                    "searched: no quota meets the target" + (" (latency floor)" if qs.get("below_latency_floor")
                                                             else ""))
        u = None if searched and v is None else util.get(k)
        t.add_row(k, ("none" if searched else "auto") if v is None else num(v),
                  "–" if u is None else f"{100 * u:.0f}%", note)
    console.print(t)
    for ev in d.get("evaluation") or []:
        fb = ("" if ev["feedback_p50_s"] is None else
              f"; feedback delay (Eval wait + batch) p50 {dur(ev['feedback_p50_s'])}, "
              f"p90 {dur(ev['feedback_p90_s'])}")
        console.print(f"evaluation batch ({ev['policy']}, {num(ev['nodes'])} node(s)): makespan "
                      f"{dur(ev['makespan_s'])}{fb}", highlight=False)
    for n in notes:
        console.print(n, highlight=False)
    if d.get("report"):
        console.print(f"report: {d['report']}")


def _wait(s) -> str:
    from acmemodel.cli._fmt import dur

    return "inf" if s is None else dur(s)


def _print_energy(r: dict) -> None:
    """One line per run: kWh and tCO2e of its GPU-time loss (:mod:`acmemodel.planner.energy`)."""
    e = r.get("energy") or {}
    tot = e.get("total") or {}
    if tot.get("kwh") is None:
        return
    console.print(f"energy of {r['name']}'s loss: {num(tot['kwh'] / 1000)} MWh, {num(tot['tco2e'])} tCO₂e "
                  f"(lost work {num(e['lost_work']['kwh'] / 1000)} + restart {num(e['restart']['kwh'] / 1000)} + "
                  f"checkpoint {num(e['checkpoint']['kwh'] / 1000)} MWh)", highlight=False)


def _print_band(r: dict) -> None:
    """The sensitivity band of one run (:mod:`acmemodel.planner.sensitivity`) as a table."""
    band = r.get("sensitivity")
    if not band:
        return
    t = table(f"Sensitivity of {r['name']} to the failure rate", ["scenario", "T p50", "T p90", "Δ p90", "fails",
                                                                 "GPU-h lost", "ckpt", "cost"])

    def row(name, s, change):
        fin = s["finishes"] and s["completion_p90_s"] is not None
        cost = s.get("ckpt_cost_s")
        src = {"preset": " p", "config": " c", "run": " r", "default": " d"}.get(s.get("ckpt_cost_source"), "")
        t.add_row(name, dur(s["completion_p50_s"], 3) if fin else "never",
                  dur(s["completion_p90_s"], 3) if fin else "never",
                  "" if change is None else ("inf" if change == float("inf") else f"{100 * change:+.0f}%"),
                  num(s["expected_failures"], 2), num(s["gpu_hours_lost"]), dur(s["optimal_interval_s"]),
                  "" if cost is None else dur(cost) + src)

    row(f"{band['chosen']} (chosen)", band["main"], None)
    for s in band["scenarios"]:
        row(s["scenario"], s, s["completion_p90_change"])
    console.print(t)
    if band.get("most_sensitive"):
        console.print(f"moves the answer most: {band['most_sensitive']} ({num(band['replicas'])} replicas per "
                      "scenario; ckpt = optimal interval; cost = checkpoint cost used, from the preset (p), "
                      "the config (c), the run (r) or the default (d))", highlight=False)
