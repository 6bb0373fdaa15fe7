"""The quota trade-off table of ``acmemodel plan``: one row per candidate the quota search simulated.

Self-contained (a rich Table from the plan's JSON ``cluster.quota_search``), so the plan output can
place it wherever it lays out its tables.
"""
from __future__ import annotations

import math

from rich.table import Table

__all__ = ["quota_tradeoff_table"]


def _wait(v) -> str:
    """Seconds as a short human duration (inf for a never-starting job, '-' for no jobs)."""
    if v is None:
        return "inf"
    v = float(v)
    if math.isnan(v):
        return "-"
    if v < 90:
        return f"{v:.0f} s"
    if v < 5400:
        return f"{v / 60:.1f} min"
    if v < 172800:
        return f"{v / 3600:.1f} h"
    return f"{v / 86400:.1f} d"


def quota_tradeoff_table(search: dict, target: dict | None = None) -> Table:
    """Rich table of a quota search (``cluster.quota_search`` of the plan document): per simulated
    candidate the eval-lane or reservation GPUs, the target type's p50/p90 wait, Pretrain p50/p90
    wait, pretraining throughput (GPUs busy with pretraining work on average) and whether the target
    is met; the chosen quota is marked. ``target``: ``{"type", "quantile", "max_wait_s"}``."""
    what = "eval lane" if search.get("partition") == "eval" else "reservation"
    ty = search.get("target_type", "Eval")
    q = search.get("quantile", 0.9)
    tw = search.get("target_wait_s", (target or {}).get("max_wait_s"))
    title = (f"quota search: {what} GPUs vs {ty} p{q * 100:g} wait <= {_wait(tw)} "
             f"(chosen {search.get('quota_gpus') if search.get('feasible') else 'none'}"
             + (f"; latency floor {_wait(search['latency_floor_s'])}" if search.get("latency_floor_s") else "")
             + ")")
    t = Table(title=title)
    for col in (f"{what} GPUs", f"{ty} p50", f"{ty} p90", "Pretrain p50", "Pretrain p90", "pretrain GPUs",
                "target"):
        t.add_column(col, justify="left" if col == "target" else "right")
    for e in sorted(search.get("evaluations") or [], key=lambda e: e["gpus"]):
        chosen = search.get("feasible") and e["gpus"] == search.get("quota_gpus")
        thr = e.get("pretrain_throughput")
        t.add_row(f"{e['gpus']:,}" + (" *" if chosen else ""), _wait(e.get("target_p50_s", float("nan"))),
                  _wait(e.get("target_p90_s", e.get("wait_s"))), _wait(e.get("pretrain_p50_s", float("nan"))),
                  _wait(e.get("pretrain_p90_s", float("nan"))), "-" if thr is None else f"{thr:,.0f}",
                  "[green]met[/green]" if e["meets"] else "[red]missed[/red]")
    return t
