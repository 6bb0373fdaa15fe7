"""HTML report of a plan (:class:`~acmemodel.planner.planner.PlanResult`), self-contained.

Per run: a table row (interval, completion time mean/p50/p90, failures, ETTR, GPU-time loss) and two
PNG figures embedded as base64 — the failure-weighted GPU-time loss broken down by cause (lost work,
restart downtime, checkpoint overhead) and by failure type, and the expected wall time ``E[T](τ)``
against the checkpoint interval with the optimum, the interval used, Young's and Daly's estimates.
Cluster: queue delays per job type, quotas, utilization and the quota-search evaluations.
"""
from __future__ import annotations

import base64
import html
import io
import math
from pathlib import Path
from acmemodel.planner.run.checkpoint import expected_time


DAY, HOUR, MIN = 86400.0, 3600.0, 60.0


#: the units ``_fmt`` reads as "a duration in seconds": shown in the largest sensible unit instead
_DURATION_UNITS = {" d", " h", " min", " s"}


def _num(x: float, digits: int = 3) -> str:
    """A human number: thousands separators, ``digits`` significant digits below 1,000, never ``e+NN``."""
    if x == 0:
        return "0"
    if abs(x) >= 1000 or float(x).is_integer():
        return f"{x:,.0f}"
    mag = math.floor(math.log10(abs(x)))
    return f"{x:,.{max(0, digits - 1 - mag)}f}"


def _dur(seconds: float, digits: int = 3) -> str:
    """Seconds as ``45 s``, ``12.5 min``, ``3.2 h`` or ``30.9 d`` (human units, no ``0.0167 min``)."""
    s = float(seconds)
    for unit, size, nxt in (("s", 1.0, 60.0), ("min", MIN, HOUR), ("h", HOUR, DAY)):
        if abs(s) < nxt * 0.995:
            return f"{_num(s / size, digits)} {unit}"
    return f"{_num(s / DAY, digits)} d"


def _fmt(v, scale=1.0, digits=3, unit=""):
    """A table value: ``—`` for none/NaN, ``∞`` for inf; a duration (``unit`` one of ``" d"``, ``" h"``,
    ``" min"``, ``" s"``: ``v`` is seconds, ``scale`` ignored) in its own human unit; else ``v / scale`` as a
    human number followed by ``unit``."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "—"
    if isinstance(v, float) and math.isinf(v):
        return "∞"
    if unit in _DURATION_UNITS:
        return _dur(v, digits)
    return f"{_num(v / scale, digits)}{unit}"


def _cell(c) -> str:
    """A table cell as text: booleans as yes/no, integers with thousands separators, mappings as
    ``key value`` pairs (never a raw ``True`` or ``{...}``)."""
    if isinstance(c, bool):
        return "yes" if c else "no"
    if isinstance(c, int):
        return f"{c:,}"
    if isinstance(c, float):
        return _fmt(c)
    if isinstance(c, dict):
        return ", ".join(f"{k} {_cell(v)}" for k, v in c.items())
    if c is None:
        return "—"
    return str(c)


def _png(fig) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    import matplotlib.pyplot as plt

    plt.close(fig)
    return base64.b64encode(buf.getvalue()).decode("ascii")


def plot_loss_breakdown(run, ax_cause, ax_type, top: int = 10) -> None:
    """Bar charts of a run's expected GPU-hours lost, by cause and by failure type (top ``top``)."""
    loss = run.simulation.gpu_time_loss_gpu_h()
    causes = ["lost_work", "restart", "checkpoint"]
    vals = [loss[c] or 0.0 for c in causes]
    ax_cause.bar(["lost work", "restart\ndowntime", "checkpoint\noverhead"], vals,
                 color=["#c0392b", "#e67e22", "#2980b9"])
    ax_cause.set_ylabel("expected GPU-hours lost per run")
    ax_cause.set_title(f"{run.name}: loss by cause (total {loss['total']:.3g} GPU-h)")
    by = sorted(loss["by_failure_type"].items(), key=lambda kv: -kv[1])[:top]
    names = [k for k, _ in by][::-1]
    ax_type.barh(names, [v for _, v in by][::-1], color="#8e44ad")
    ax_type.set_xlabel("GPU-hours (lost work + restart)")
    ax_type.set_title(f"top {len(by)} failure types")


def plot_expected_time_curve(run, ax) -> None:
    """``E[T](τ)`` in days against τ in minutes, with the optimum, the interval used, Young and Daly."""
    c = run.curve
    ax.plot(c["interval_s"] / MIN, c["expected_time_s"] / DAY, color="black", lw=1.5, label="E[T](τ), renewal model")
    ck = run.checkpoint
    marks = [("optimum", float(ck.interval_s), float(ck.expected_time_s), "#27ae60", "o")]

    R = run.mix.restart_distribution()
    for label, tau, color, m in (("Young √(2CM)", float(ck.young_interval_s), "#2980b9", "s"),
                                 ("Daly", float(ck.daly_interval_s), "#e67e22", "^")):
        if 0 < tau <= run.work_s:
            et = float(expected_time(tau, work=run.work_s, ckpt_cost=run.ckpt_cost_s, failure=run.failure, restart=R))
            if math.isfinite(et):
                marks.append((label, tau, et, color, m))
    if run.interval_source != "auto" and run.interval_s is not None:
        et = float(expected_time(run.interval_s, work=run.work_s, ckpt_cost=run.ckpt_cost_s, failure=run.failure,
                                 restart=R))
        marks.append(("configured", run.interval_s, et, "#c0392b", "D"))
    for label, tau, et, color, m in marks:
        ax.plot([tau / MIN], [et / DAY], marker=m, color=color, ls="none", ms=7,
                label=f"{label}: {tau / MIN:.3g} min")
    ax.set_xscale("log")
    ax.set_xlabel("checkpoint interval τ (minutes of work)")
    ax.set_ylabel("expected wall time (days)")
    ax.set_title(f"{run.name}: {run.work_s / DAY:.3g} days of work, C = {run.ckpt_cost_s:g} s")
    ax.legend(fontsize=8)


def _run_figure(run) -> str:
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(16, 4.2), gridspec_kw={"width_ratios": [1, 1.3, 1.4]})
    plot_loss_breakdown(run, axes[0], axes[1])
    plot_expected_time_curve(run, axes[2])
    fig.tight_layout()
    return _png(fig)


def plot_sensitivity(band: dict, ax) -> None:
    """Completion p50–p90 (days) of a run under each scenario of its sensitivity band, the chosen answer
    first and drawn as a reference line."""
    rows = [{"scenario": f"{band['chosen']} (chosen)", **band["main"]}] + list(band["scenarios"])
    names = [r["scenario"] for r in rows]
    for i, r in enumerate(rows):
        if r["completion_p90_s"] is None:
            ax.text(0.02, i, "does not finish", va="center", transform=ax.get_yaxis_transform(), color="red")
            continue
        p50, p90 = r["completion_p50_s"] / DAY, r["completion_p90_s"] / DAY
        ax.plot([p50, p90], [i, i], color="C0" if i else "C3", lw=6, solid_capstyle="butt")
    ref = band["main"]["completion_p90_s"]
    if ref is not None:
        ax.axvline(ref / DAY, color="C3", ls=":", lw=1)
    ax.set_yticks(range(len(names)), names)
    ax.invert_yaxis()
    ax.set_xlabel("completion time, p50 to p90 (days)")
    ax.set_title("sensitivity to the failure-rate assumption")


def plot_quota_tradeoff(search: dict, target: dict, ax) -> None:
    """The quota search's candidates: the target type's wait at the target quantile (minutes, log
    scale) against the partition's GPUs, the target and the latency floor as lines, the chosen quota
    marked; pretraining throughput (GPUs busy with pretraining) on the right axis."""
    evs = sorted(search.get("evaluations") or [], key=lambda e: e["gpus"])
    g = [e["gpus"] for e in evs]
    w = [(e["wait_s"] if e["wait_s"] is not None else float("nan")) / MIN for e in evs]
    ty, q = search.get("target_type", "Eval"), search.get("quantile", 0.9)
    ax.plot(g, w, "o-", color="C0", label=f"{ty} p{100 * q:g} wait")
    ax.axhline(search["target_wait_s"] / MIN, color="C3", ls="--", lw=1, label="target")
    if search.get("latency_floor_s"):
        ax.axhline(search["latency_floor_s"] / MIN, color="grey", ls=":", lw=1, label="latency floor")
    if search.get("feasible"):
        ax.plot([search["quota_gpus"]], [search["achieved_wait_s"] / MIN], "*", ms=14, color="C2",
                label=f"chosen: {search['quota_gpus']:,} GPUs")
    if any(v > 0 for v in w if v == v):
        ax.set_yscale("log")
    what = "evaluation lane" if search.get("partition") == "eval" else "pretraining reservation"
    ax.set_xlabel(f"{what} (GPUs)")
    ax.set_ylabel(f"{ty} p{100 * q:g} wait (minutes)")
    thr = [e.get("pretrain_throughput") for e in evs]
    if any(t is not None for t in thr):
        ax2 = ax.twinx()
        ax2.plot(g, [float("nan") if t is None else t for t in thr], "s--", color="C1", ms=4,
                 label="pretraining GPUs busy")
        ax2.set_ylabel("pretraining throughput (GPUs busy)")
        ax2.legend(loc="upper center", fontsize=8)
    ax.legend(loc="upper right", fontsize=8)
    ax.set_title("quota trade-off: every candidate the search simulated")


def _quota_figure(search: dict, target: dict) -> str:
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4))
    plot_quota_tradeoff(search, target, ax)
    fig.tight_layout()
    return _png(fig)


def _cost(row: dict) -> str:
    """A band row's checkpoint cost and where it came from (preset / config / run / default)."""
    c = row.get("ckpt_cost_s")
    return "—" if c is None else _fmt(c, 1, 3, " s") + (f" ({row['ckpt_cost_source']})"
                                                         if row.get("ckpt_cost_source") else "")


def _table(header, rows) -> str:
    h = "".join(f"<th>{html.escape(str(c))}</th>" for c in header)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(_cell(c))}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><thead><tr>{h}</tr></thead><tbody>{body}</tbody></table>"


def render_html(plan) -> str:
    """The report as an HTML string."""
    d = plan.to_dict()
    parts = [f"<h1>Plan: {html.escape(str(d['name']))}</h1>"]
    rows = []
    for r in d["runs"]:
        ct = r["completion_time_s"]
        loss = r["gpu_time_loss_gpu_h"]
        rows.append([r["name"], r["gpus"], _fmt(r["work_s"], DAY, 3, " d"),
                     _fmt(r["checkpoint_interval_s"], MIN, 3, " min") + f" ({r['checkpoint_interval_source']})",
                     _fmt(r["mttf_s"], HOUR, 3, " h"), _fmt(ct["mean"], DAY, 4, " d"), _fmt(ct["p50"], DAY, 4, " d"),
                     _fmt(ct["p90"], DAY, 4, " d"), _fmt(r["expected_failures"], 1, 3), _fmt(r["ettr"], 1, 3),
                     _fmt(loss["total"], 1, 4, " GPU-h"),
                     "yes" if r["finishes"] else f"NO: {r['reason']}"])
    parts.append("<h2>Pretraining runs</h2>")
    parts.append(_table(["run", "GPUs", "work", "checkpoint interval", "job MTTF", "completion mean", "p50", "p90",
                         "failures", "ETTR", "GPU-time loss", "finishes"], rows))
    for run in plan.runs:
        parts.append(f"<h3>{html.escape(run.name)}</h3>")
        if run.finishes and run.simulation.n_replicas:
            parts.append(f'<img alt="loss breakdown and E[T] curve of {html.escape(run.name)}" '
                         f'src="data:image/png;base64,{_run_figure(run)}">')
        else:
            reason = run.simulation.reason if run.simulation is not None else "not simulated"
            parts.append(f"<p><b>Does not finish:</b> {html.escape(reason)}</p>")
        for n in run.notes:
            parts.append(f"<p><i>{html.escape(n)}</i></p>")
        if run.energy and run.energy["total"]["kwh"] is not None:
            e = run.energy
            parts.append(f"<p>Energy of the GPU-time loss: {e['total']['kwh'] / 1000:,.1f} MWh, "
                         f"{e['total']['tco2e']:,.1f} tCO₂e (lost work {e['lost_work']['kwh'] / 1000:,.1f}, restart "
                         f"{e['restart']['kwh'] / 1000:,.1f}, checkpoint {e['checkpoint']['kwh'] / 1000:,.1f} MWh).</p>")
        if run.sensitivity:
            import matplotlib.pyplot as plt

            band = run.sensitivity
            fig, ax = plt.subplots(figsize=(7, 0.45 * (len(band["scenarios"]) + 1) + 1))
            plot_sensitivity(band, ax)
            parts.append(f'<img alt="sensitivity band of {html.escape(run.name)}" src="data:image/png;base64,'
                         f'{_png(fig)}">')
            brow = [[f"{band['chosen']} (chosen)", _fmt(band["main"]["completion_p50_s"], DAY, 4, " d"),
                     _fmt(band["main"]["completion_p90_s"], DAY, 4, " d"), "—",
                     _fmt(band["main"]["expected_failures"], 1, 3), _fmt(band["main"]["gpu_hours_lost"], 1, 4),
                     _fmt(band["main"]["optimal_interval_s"], MIN, 3, " min"), _cost(band["main"])]]
            for sc in band["scenarios"]:
                ch = sc["completion_p90_change"]
                brow.append([sc["scenario"], _fmt(sc["completion_p50_s"], DAY, 4, " d"),
                             _fmt(sc["completion_p90_s"], DAY, 4, " d"),
                             "—" if ch is None else ("∞" if ch == float("inf") else f"{100 * ch:+.1f} %"),
                             _fmt(sc["expected_failures"], 1, 3), _fmt(sc["gpu_hours_lost"], 1, 4),
                             _fmt(sc["optimal_interval_s"], MIN, 3, " min"), _cost(sc)])
            parts.append(_table(["scenario", "p50", "p90", "Δ p90", "failures", "GPU-h lost", "optimal interval",
                                 "checkpoint cost (from)"], brow))
            parts.append(f"<p>Moves the answer most: <b>{html.escape(str(band['most_sensitive']))}</b>.</p>")
    cl = d["cluster"]
    parts.append("<h2>Cluster</h2>")
    if not cl.get("available", True):
        parts.append(f"<p>Cluster simulation not available: {html.escape(str(cl.get('reason')))}</p>")
    q = cl.get("queue_s") or {}
    if q:
        parts.append(_table(["job type", "jobs", "queue p50", "queue p90", "mean"],
                            [[t, v.get("count"), _fmt(v.get("p50"), MIN, 3, " min"),
                              _fmt(v.get("p90"), MIN, 3, " min"), _fmt(v.get("mean"), MIN, 3, " min")]
                             for t, v in q.items()]))
    quotas = cl.get("quotas") or {}
    util = cl.get("utilization") or {}
    parts.append("<h3>Quotas</h3>")
    parts.append(_table(["partition", "GPUs", "utilization"],
                        [[p, "none chosen" if g is None else g,
                          "—" if util.get(p) is None or g is None else f"{100 * util[p]:.0f} %"]
                         for p, g in quotas.items()]))
    qs = cl.get("quota_search")
    if qs:
        tgt = cl.get("target", {})
        verdict = (f"smallest {qs['partition']} quota meeting the target: {qs['quota_gpus']:,} GPUs"
                   if qs["feasible"] else f"infeasible: {qs['reason']}")
        parts.append(f"<p>Target: {html.escape(str(tgt.get('type')))} p{100 * tgt.get('quantile', 0):g} wait "
                     f"≤ {_fmt(tgt.get('max_wait_s'), MIN, 3, ' min')}; {html.escape(verdict)}.</p>")
        if qs.get("latency_floor_s"):
            parts.append(f"<p>Latency floor (the {html.escape(str(tgt.get('type')))} wait no quota can beat: the "
                         f"same quantile of the start-up latencies): {_fmt(qs['latency_floor_s'], 1, 3, ' s')}"
                         + ("; <b>the target is below it</b>" if qs.get("below_latency_floor") else "") + ".</p>")
        evs = sorted(qs["evaluations"], key=lambda e: e["gpus"])
        parts.append(f'<img alt="quota trade-off" src="data:image/png;base64,{_quota_figure(qs, tgt)}">')
        parts.append(_table(["candidate GPUs", "wait at target quantile", "target p50", "Pretrain p90",
                             "pretrain GPUs busy", "target"],
                            [[e["gpus"], _fmt(e["wait_s"], 1, 3, " s"), _fmt(e.get("target_p50_s"), 1, 3, " s"),
                              _fmt(e.get("pretrain_p90_s"), 1, 3, " s"), _fmt(e.get("pretrain_throughput")),
                              ("met" if e["meets"] else "missed")
                              + (" (chosen)" if qs["feasible"] and e["gpus"] == qs["quota_gpus"] else "")]
                             for e in evs]))
    if d.get("assumptions"):
        parts.append("<h2>Assumptions</h2><ul>" + "".join(f"<li>{html.escape(a)}</li>" for a in d["assumptions"])
                     + "</ul>")
    style = ("body{font-family:sans-serif;margin:2em;max-width:1400px} table{border-collapse:collapse;margin:1em 0}"
             " td,th{border:1px solid #ccc;padding:4px 8px;text-align:right} th{background:#f4f4f4}"
             " img{max-width:100%}")
    return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>acmemodel plan "
            f"{html.escape(str(d['name']))}</title><style>{style}</style></head><body>{''.join(parts)}"
            "</body></html>")


def write_report(plan, path) -> str:
    """Write :func:`render_html` of ``plan`` to ``path`` (directories must exist); returns the path."""
    p = Path(path)
    if p.parent and not p.parent.exists():
        raise FileNotFoundError(f"report directory does not exist: {p.parent}")
    p.write_text(render_html(plan), encoding="utf-8")
    return str(p)


def render_eval_html(result) -> str:
    """HTML report of an evaluation-batch plan (:class:`~acmemodel.planner.evalbatch.plan.EvalPlanResult`):
    the summary table and a Gantt chart per GPU for every (policy, nodes) schedule."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    d = result.to_dict()
    parts = [f"<h1>Evaluation batch: {d['datasets']} datasets ({html.escape(str(d['source']))})</h1>"]
    rows = []
    for s in d["schedules"]:
        sp = d["speedup"].get(str(s["nodes"])) if s["policy"] == "decoupled" else None
        rows.append([s["nodes"], s["policy"], _fmt(s["makespan_s"], MIN, 4, " min"),
                     "—" if sp is None else f"{sp:.2f}×", _fmt(s["first_result_s"], MIN, 3, " min"),
                     _fmt(s["gpu_hours_held"], 1, 4, " GPU-h"), _fmt(s["gpu_hours_used"], 1, 4, " GPU-h"),
                     f"{100 * s['gpu_idle_share']:.1f} %", s["packing"] or "—"])
    parts.append(_table(["nodes", "policy", "makespan", "speed-up", "first result", "GPU-h held", "GPU-h used",
                         "GPU idle", "packing"], rows))
    ov, hw = result.config.overheads, result.config.hardware
    parts.append("<h2>Assumptions</h2><p>"
                 f"{_num(hw.model_size_gb)} GB checkpoint, {hw.gpus_per_node:,} GPUs per node, storage link "
                 f"{_num(hw.storage_gbit_s)} Gb/s per node, host→GPU copy {_num(hw.pcie_gbyte_s)} GB/s. "
                 f"Overheads (stated, from the published profile): start-up {_dur(ov.trial_startup_s)} per trial "
                 f"(part of its set-up), at most {ov.metric_slots(hw):,} metric jobs per node at once "
                 f"({ov.metric_threads:,} of {ov.cpu_threads_per_node:,} CPU threads each) after "
                 f"{_dur(ov.metric_queue_s)} in the cluster's CPU queue, precursor load at "
                 f"{100 * ov.precursor_efficiency:.0f} % of the link, coupled baseline packed by "
                 f"{html.escape(ov.coupled_packing)}"
                 + (f" (median of {ov.coupled_orders:,} submission orders)" if ov.coupled_packing == "random"
                    else "") + ".</p>")
    for (policy, n), sched in sorted(result.schedules.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        fig, ax = plt.subplots(figsize=(11, max(2.0, 0.16 * sched.gpus + 1.2)))
        sched.plot(ax=ax)
        parts.append(f"<h3>{html.escape(policy)}, {n} node(s)</h3>"
                     f'<img alt="Gantt chart, {html.escape(policy)}, {n} nodes" src="data:image/png;base64,'
                     f'{_png(fig)}">')
    style = ("body{font-family:sans-serif;margin:2em;max-width:1400px} table{border-collapse:collapse;margin:1em 0}"
             " td,th{border:1px solid #ccc;padding:4px 8px;text-align:right} th{background:#f4f4f4}"
             " img{max-width:100%}")
    return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>acmemodel evaluation batch</title>"
            f"<style>{style}</style></head><body>{''.join(parts)}</body></html>")


def write_eval_report(result, path) -> str:
    """Write :func:`render_eval_html` of ``result`` to ``path``; returns the path."""
    p = Path(path)
    if p.parent and not p.parent.exists():
        raise FileNotFoundError(f"report directory does not exist: {p.parent}")
    p.write_text(render_eval_html(result), encoding="utf-8")
    return str(p)
