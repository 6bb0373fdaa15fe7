"""`acmemodel reproduce` command(s): synthetic Seren/Kalos traces vs the published statistics."""
from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Optional

import typer

from acmemodel.cli._app import app, print_json
from acmemodel.cli._common import SEED_MAX, check_dir_out, console
from acmemodel.cli._fmt import CompactTable as Table


class QueueMode(str, Enum):
    simulator = "simulator"
    model = "model"


def _f(x, fmt: str = "{:.2f}") -> str:
    return "–" if x is None else fmt.format(x)


def _mark(ok) -> str:
    if ok is None:
        return ""
    return "[green]✓[/green]" if ok else "[red]✗[/red]"


def _render(doc: dict) -> None:
    bar = doc["quality_bar"]
    traces = ", ".join(f"{c} {r} × {doc['days']:g} d" for c, r in (doc.get("replicas") or {}).items())
    console.print(f"[bold]reproduce[/bold]: bundle {doc['bundle']} (fitted at scale {doc['bundle_scale']:g}), "
                  f"scale {doc['scale']:g}, seed {doc['seed']}, traces pooled: {traces}, queue: {doc['queue']}; "
                  f"{doc['seconds']:.1f} s. Bar: KS ≤ {bar['ks']}, shares within {bar['share_pp']} pp.")
    notes: list[str] = []

    def note(text):
        if not text:
            return ""
        if text not in notes:
            notes.append(text)
        return f"[{notes.index(text) + 1}]"

    for name, c in doc["clusters"].items():
        sim = c["simulation"]
        parts = ", ".join(f"{k} {v:,}" for k, v in sim["partitions"].items())
        load = sim["queue"].get("offered_load") or {}
        console.print(f"\n[bold]{name}[/bold]: {sim['total_gpus']:,} GPUs ({parts}); offered load "
                      + ", ".join(f"{k} {v:.2f}" for k, v in load.items() if v is not None)
                      + f"; passed: shares {c['passed']['shares']}/{c['compared']['shares']}, states "
                      f"{c['passed']['states']}/{c['compared']['states']}, curves "
                      f"{c['passed']['curves']}/{c['compared']['curves']}")
        t = Table(title=f"{name}: shares by type (%)")
        for col in ("type", "metric", "published", "reproduced", "diff pp", "", "note"):
            t.add_column(col, justify="right" if col in ("published", "reproduced", "diff pp") else "left")
        for r in c["shares"]:
            t.add_row(r["type"], r["metric"], _f(r["published"]), _f(r["reproduced"]), _f(r["diff_pp"], "{:+.2f}"),
                      _mark(r["within_bar"]), note(r.get("explanation")))
        console.print(t)
        t = Table(title=f"{name}: final-state rates (%)")
        for col in ("state", "basis", "published", "reproduced", "± se", "diff pp", ""):
            t.add_column(col, justify="right" if col in ("published", "reproduced", "± se", "diff pp") else "left")
        for r in c["states"]:
            t.add_row(r["state"], r["basis"], _f(r["published"]), _f(r["reproduced"]), _f(r.get("se_pp"), "{:.2f}"),
                      _f(r["diff_pp"], "{:+.2f}"), _mark(r["within_bar"]))
        console.print(t)
        t = Table(title=f"{name}: summary (no bar)")
        for col in ("statistic", "basis", "published", "reproduced", "rel diff", "note"):
            t.add_column(col, justify="right" if col in ("published", "reproduced", "rel diff") else "left")
        for r in c["summary"]:
            t.add_row(r["name"], r["basis"], _f(r["published"], "{:,.2f}"), _f(r["reproduced"], "{:,.2f}"),
                      _f(None if r["rel_diff"] is None else 100 * r["rel_diff"], "{:+.1f}%"),
                      note(r.get("explanation")))
        console.print(t)
        render_queue_by_type(name, c)
        t = Table(title=f"{name}: KS distance to the published CDFs")
        for col in ("curve", "basis", "n", "KS", "at x", "KS noise 95%", "", "note"):
            t.add_column(col, justify="right" if col in ("n", "KS", "at x", "KS noise 95%") else "left")
        for r in c["curves"]:
            t.add_row(r["name"], r["basis"], f"{r['n']:,}", _f(r["ks"], "{:.3f}"), _f(r["at_x"], "{:g}"),
                      _f(r["ks_crit95"], "{:.3f}"), _mark(r["within_bar"]), note(r.get("explanation")))
        console.print(t)
    for name, e in (doc.get("energy") or {}).items():
        console.print(f"\n[bold]Energy[/bold] {name}: synthetic busy share {100 * e['busy_share']:.0f} % → "
                      f"{e['mwh']:,.0f} MWh, {e['tco2e']:,.0f} tCO₂e (published {e['published_mwh']:,.0f} MWh, "
                      f"{e['published_tco2e']:,.1f} tCO₂e; {100 * e['relative_error']:+.0f} %, bar ±20 %) "
                      f"{_mark(abs(e['relative_error']) <= 0.2)}")
    if notes:
        console.print("\n[bold]Notes[/bold]")
        for i, text in enumerate(notes, 1):
            console.print(f"[{i}] {text}")
    console.print("\nKS = max over the published points x_i of |F_synthetic(x_i) − F_published(x_i)| "
                  "(a published CDF is known only at its points); 'KS noise 95%' = 1.358/√n.")


def render_queue_by_type(name: str, c: dict) -> None:
    """Per-type queue table (share of jobs with wait <= x, median, mean; reproduced over published),
    the queue checks and GPU time by size of one cluster of a reproduce document."""
    rows = c.get("queue_by_type") or []
    if rows:
        xs = sorted({r["x_s"] for r in rows if r["x_s"] is not None})
        t = Table(title=f"{name}: wait by type, reproduced / published (% of jobs with wait <= x; s)")
        t.add_column("type")
        t.add_column("")
        for x in xs:
            t.add_column(f"<={x:g}s", justify="right")
        t.add_column("median", justify="right")
        t.add_column("mean", justify="right")
        for ty in dict.fromkeys(r["type"] for r in rows):
            rr = [r for r in rows if r["type"] == ty]
            by_x = {r["x_s"]: r for r in rr if r["x_s"] is not None}
            stat = {r["statistic"]: r for r in rr if r["x_s"] is None}

            def cell(r):
                if r is None or r["reproduced"] is None:
                    return ""
                v = f"{r['reproduced']:.0f}"
                return v if r["within_bar"] is None else (f"[green]{v}[/green]" if r["within_bar"]
                                                          else f"[red]{v}[/red]")
            t.add_row(ty, "rep", *[cell(by_x.get(x)) for x in xs],
                      _f(stat.get("median_s", {}).get("reproduced"), "{:,.0f}"),
                      _f(stat.get("mean_s", {}).get("reproduced"), "{:,.0f}"))
            pubs = [by_x.get(x, {}).get("published") for x in xs]
            if any(p is not None for p in pubs):
                t.add_row("", "pub", *[_f(p, "{:g}") for p in pubs], "", "")
        console.print(t)
    checks = c.get("queue_checks") or []
    if checks:
        t = Table(title=f"{name}: queue checks")
        for col in ("check", "reproduced", ""):
            t.add_column(col)
        for r in checks:
            t.add_row(r["check"], r["value"], _mark(r["passed"]))
        console.print(t)
    for r in c.get("failure_rate") or []:
        lo, hi = r["interval"]
        console.print(f"{name}: large-job failures per 1,000 node-days {r['reproduced']:.2f} (MTTF at 1,024 GPUs "
                      f"{r['mttf_1024_h']:,.0f} h); published derivation {r['published']:.2f} "
                      f"(95 % {lo:.2f}–{hi:.2f}) {_mark(r['within_bar'])}")
    size = [r for r in (c.get("gpu_time_by_size") or []) if r["published"] is not None]
    if size:
        t = Table(title=f"{name}: GPU time by job size (published bounds)")
        for col in ("fact", "published", "reproduced", ""):
            t.add_column(col, justify="right" if col in ("published", "reproduced") else "left")
        for r in size:
            t.add_row(r["fact"], r["published"], _f(r["reproduced"], "{:.2f}%"), _mark(r["within_bar"]))
        console.print(t)


def _check_acme_bundle(bundle, path) -> None:
    """Refuse a bundle that does not model Seren and Kalos: ``reproduce`` compares with *their*
    published statistics, so another cluster's bundle has nothing to be compared with (ValueError
    naming the bundle and its clusters; ``acmemodel evaluate`` backtests a bundle's own cluster)."""
    from acmemodel.reproduction.run import CLUSTERS

    have = list(bundle.clusters())
    missing = [c for c in CLUSTERS if c not in have]
    if missing:
        raise ValueError(f"--bundle: {path} models {', '.join(have) or 'no cluster'}, not "
                         f"{' and '.join(missing)}: reproduce compares with the published statistics of "
                         "Acme's clusters only; backtest your own cluster with `acmemodel evaluate`")


@app.command("reproduce")
def reproduce_cmd(
    bundle: Optional[Path] = typer.Option(None, "--bundle", help="Bundle to check (default: the shipped acme-2023)."),
    json_out: bool = typer.Option(False, "--json", help="Print the comparison as JSON."),
    plots: Optional[Path] = typer.Option(None, "--plots", help="Directory for PNG overlays of every curve."),
    scale: float = typer.Option(1.0, "--scale", help="Fraction of the real job volume (1.0 ≈ 1.1 M jobs)."),
    seed: int = typer.Option(0, "--seed", min=0, max=SEED_MAX, help="Random seed."),
    queue: QueueMode = typer.Option(QueueMode.simulator, "--queue",
                                    help="Queue times from the cluster simulator, or from the bundle's queue "
                                         "model (a diagnostic)."),
    replicas: Optional[int] = typer.Option(None, "--replicas", min=1, max=256,
                                           help="Independent synthetic traces per cluster, pooled for every "
                                                "comparison (default: Seren 4, Kalos 32)."),
    yes: bool = typer.Option(False, "--yes", help="Run even when the estimated memory exceeds half of "
                                                  "this machine's memory."),
) -> None:
    """Synthesise Seren- and Kalos-scale six-month traces from a bundle and compare them with the
    published AcmeTrace statistics: shares, state rates, medians and KS distances to every CDF."""
    from acmemodel.reproduction.run import reproduce

    if not (0 < scale <= 10):
        raise ValueError(f"--scale must be in (0, 10], got {scale}")
    if bundle is not None and not bundle.exists():
        raise FileNotFoundError(f"--bundle: {bundle} does not exist")
    check_dir_out(plots, "--plots")
    if bundle is not None:  # read (and validate) it before the progress line and the long synthesis
        from acmemodel.synth import resolve_bundle

        path, bundle = bundle, resolve_bundle(bundle)
        _check_acme_bundle(bundle, path)
    _check_size(bundle, scale, replicas, yes)
    from acmemodel.cli._fmt import progress

    with progress(f"reproduce (scale {scale:g})", enabled=not json_out) as upd:
        doc = reproduce(bundle, scale=scale, seed=seed, queue=queue.value, plots=plots, replicas=replicas,
                        progress=lambda i, n, d: upd(i, n, d))
    if json_out:
        print_json(doc)
    else:
        _render(doc)
        if plots is not None:
            console.print(f"plots written to [bold]{plots}[/bold]")


def _check_size(bundle, scale: float, replicas, yes: bool) -> None:
    """Refuse, before the synthesis, a request whose peak memory would not fit
    (:func:`acmemodel.limits.reproduce_memory`: one replica's synthesis at a time plus the compact pooled
    jobs; ``--yes`` insists)."""
    from acmemodel.limits import check_memory, expected_jobs, reproduce_memory
    from acmemodel.reproduction.run import CLUSTERS, DAYS, _replicas
    from acmemodel.synth import resolve_bundle

    try:
        arrival = resolve_bundle(bundle)["arrival"]
    except Exception:  # noqa: BLE001 (reproduce reports a bundle without an arrival model)
        return
    reps = _replicas(replicas, list(CLUSTERS))
    per_replica = {c: expected_jobs(arrival, c, DAYS, scale) for c in reps if c in arrival.clusters_}
    need, detail = reproduce_memory(per_replica, reps)
    per = ", ".join(f"{c} {r:,}" for c, r in reps.items())
    check_memory(f"reproduce --scale {scale:g} with {per} replica(s)", need, detail=detail, yes=yes)
