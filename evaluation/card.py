"""The model card's pieces, shared by ``evaluate runtime``, ``evaluate failure`` and ``evaluate
arrival``: a paired comparison of a model with a baseline on the same held-out units (jobs, hours,
days) with its standard error and verdict in words (:func:`paired`), an interval's coverage with its
binomial standard error and verdict (:func:`coverage_verdict`), the rich rendering (:func:`render_card`)
and JSON-safe values (:func:`json_safe`).

A card is ``{"comparisons": [row], "intervals": [row]}``; a comparison row holds ``table`` (its title),
``model``, ``baseline``, ``metric``, ``higher_is_better`` and the :func:`paired` fields; an interval row
``model``, ``interval`` and the :func:`coverage_verdict` fields. :func:`comparison` builds one.
"""
from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["COVERAGE_BAND", "paired", "coverage_verdict", "comparison", "render_card", "json_safe"]

#: the band a p10–p90 interval's coverage must fall in to be called calibrated
COVERAGE_BAND = (0.75, 0.85)


def json_safe(v):
    if isinstance(v, dict):
        return {str(k): json_safe(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [json_safe(x) for x in v]
    if isinstance(v, (np.floating, float)):
        return float(v) if np.isfinite(v) else None
    if isinstance(v, np.integer):
        return int(v)
    if isinstance(v, np.bool_):
        return bool(v)
    return v


def paired(model_values, baseline_values, higher_is_better: bool) -> dict[str, Any]:
    """Paired comparison of a model with a baseline on the same test jobs.

    ``d_i`` = the model's advantage on job ``i`` (``model − baseline`` for a score where higher is
    better, ``baseline − model`` for a loss); ``diff = mean d``, ``se = sd(d)/√n``. Verdict: ``"tie
    within one SE"`` when ``|diff| <= se``, else ``"model better"`` or ``"use the baseline"``. Jobs where
    either value is not finite are left out of ``se`` (a model giving an observed value zero density
    has ``diff = −inf``: the baseline wins)."""
    a = np.asarray(model_values, float)
    b = np.asarray(baseline_values, float)
    d = (a - b) if higher_is_better else (b - a)
    ok = np.isfinite(d)
    n = int(d.size)
    with np.errstate(invalid="ignore"):
        diff = float(np.mean(d)) if n else float("nan")
    se = float(np.std(d[ok], ddof=1) / np.sqrt(ok.sum())) if ok.sum() > 1 else float("nan")
    if not np.isfinite(diff) and not np.isnan(diff):
        verdict = "model better" if diff > 0 else "use the baseline"
    elif not np.isfinite(diff) or not np.isfinite(se):
        verdict = "not enough jobs"
    elif abs(diff) <= se:
        verdict = "tie within one SE"
    else:
        verdict = "model better" if diff > 0 else "use the baseline"
    return {"model_value": float(np.mean(a)) if n else float("nan"),
            "baseline_value": float(np.mean(b)) if n else float("nan"),
            "diff": diff, "se": se, "n": n, "verdict": verdict}


def coverage_verdict(hits, nominal: float = 0.8, band=COVERAGE_BAND, weights=None) -> dict[str, Any]:
    """Coverage of an interval from per-job hits (1 = inside): the share, its binomial standard error
    ``sqrt(c(1 − c)/n)`` and the verdict ``"calibrated"`` inside ``band``, else ``"under-covers"`` /
    ``"over-covers"``. With ``weights``: the weighted share ``Σ w h / Σ w`` and its standard error
    ``sqrt(Σ w² (h − c)²) / Σ w``."""
    h = np.asarray(hits, float)
    n = int(h.size)
    if weights is None:
        c = float(h.mean()) if n else float("nan")
        se = float(np.sqrt(c * (1 - c) / n)) if n else float("nan")
    else:
        w = np.asarray(weights, float)
        c = float(np.sum(w * h) / np.sum(w)) if n else float("nan")
        se = float(np.sqrt(np.sum(w * w * (h - c) ** 2)) / np.sum(w)) if n else float("nan")
    verdict = ("calibrated" if band[0] <= c <= band[1] else "under-covers" if c < band[0] else "over-covers")
    return {"nominal": nominal, "coverage": c, "se": se, "n": n, "verdict": verdict}


def comparison(table: str, model: str, baseline: str, metric: str, model_values, baseline_values,
               higher_is_better: bool) -> dict[str, Any]:
    """One comparison row of a card (module docstring): :func:`paired` of the per-unit values."""
    return {"table": table, "model": model, "baseline": baseline, "metric": metric,
            "higher_is_better": bool(higher_is_better), **paired(model_values, baseline_values, higher_is_better)}


def _num(v: float, signed: bool = False) -> str:
    """Three decimals below 10, one below 100, none (thousands separated) above: a card of counts keeps
    within 80 columns."""
    if v is None or not np.isfinite(v):
        return "—" if v is None or np.isnan(v) else ("+inf" if v > 0 else "−inf")
    a = abs(v)
    fmt = ",.0f" if a >= 100 else ".1f" if a >= 10 else ".3f"
    return format(v, ("+" if signed else "") + fmt)


def render_card(card: dict[str, list], intro: str | None = None, names: dict[str, str] | None = None,
                metric_names: dict[str, str] | None = None):
    """A model card as rich tables within 80 columns: ``intro`` (a line), then one table per model with
    its baselines (metric, the model's and the baseline's mean, the paired difference ± SE where > 0
    favours the model, verdict) and the interval coverages. ``names`` / ``metric_names`` shorten model
    and metric names for the columns (JSON keeps the full ones); a comparison row's
    ``higher_is_better`` gives its arrow (↑ / ↓)."""
    from rich import box
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    names = names or {}
    metric_names = metric_names or {}
    out = [Text(intro)] if intro else []
    tables: dict[str, list] = {}
    for r in card.get("comparisons", []):
        tables.setdefault(r["table"], []).append(r)
    for title, rows in tables.items():
        t = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, padding=(0, 1),
                  collapse_padding=True, pad_edge=False)
        for col, just in (("metric", "left"), ("baseline", "left"), ("model", "right"), ("base", "right"),
                          ("gain ± SE", "right"), ("verdict", "left")):
            t.add_column(col, justify=just, no_wrap=True)
        for r in rows:
            arrow = "↑" if r.get("higher_is_better") else "↓"
            gain = f"{_num(r['diff'], True)} ± {_num(r['se'])}"
            style = {"use the baseline": "bold red", "model better": "green"}.get(r["verdict"], "")
            t.add_row(f"{metric_names.get(r['metric'], r['metric'])} {arrow}", names.get(r["baseline"], r["baseline"]),
                      _num(r["model_value"]), _num(r["baseline_value"]), gain,
                      Text(r["verdict"], style=style))
        out.append(t)
    iv = card.get("intervals", [])
    if iv:
        t = Table(title="Intervals (calibrated: within 0.05 of nominal)",
                  title_justify="left",
                  box=box.SIMPLE_HEAD, padding=(0, 1), collapse_padding=True, pad_edge=False)
        for col, just in (("model", "left"), ("nominal", "right"), ("coverage ± SE", "right"), ("n", "right"),
                          ("verdict", "left")):
            t.add_column(col, justify=just, no_wrap=True)
        for r in iv:
            style = "" if r["verdict"] == "calibrated" else "bold red"
            what = r["interval"].replace("p10-p90", "").strip()
            t.add_row(names.get(r["model"], r["model"]) + (f" {what}" if what else ""), f"{r['nominal']:.2f}",
                      f"{_num(r['coverage'])} ± {_num(r['se'])}", f"{r['n']:,}", Text(r["verdict"], style=style))
        out.append(t)
    return Group(*out)
