"""Plots of a planning sweep (:mod:`acmemodel.planner.sweep.runner`): heat maps over two axes and the Pareto
front of GPU-hours lost against the Eval p90 wait (PNG, matplotlib Agg)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd


# ------------------------------------------------------------------------------------------ axes
#: duration-valued axes (their values: seconds or strings like "30m"): shown in this unit
_DURATION_AXES = {"checkpoint.sync_cost": "min", "checkpoint.async_cost": "s", "checkpoint.interval": "min",
                  "failures.mttf": "h", "queue_target.max_wait": "min", "ckpt_cost": "min",
                  "checkpoint_interval": "min", "work": "d"}
_UNIT_S = {"s": 1.0, "min": 60.0, "h": 3600.0, "d": 86400.0}


def _duration_unit(name: str) -> str | None:
    return _DURATION_AXES.get(name) or _DURATION_AXES.get(name.rsplit(".", 1)[-1]) if (
        name in _DURATION_AXES or name.startswith("runs.")) else None


def axis_label(name: str) -> str:
    """An axis name with its unit: ``checkpoint.interval (min)``, ``cluster.gpus (GPUs)``,
    ``workload.scale (× arrival rate)``."""
    u = _duration_unit(name)
    if u:
        return f"{name} ({u})"
    if name.endswith("gpus") or name.startswith("cluster.partitions."):
        return f"{name} (GPUs)"
    if name == "workload.days":
        return f"{name} (days)"
    if name == "workload.scale":
        return f"{name} (× arrival rate)"
    if name.startswith(("failures.rate_multipliers.", "restart.automation.")):
        return f"{name} (× rate)" if name.startswith("failures") else f"{name} (× time)"
    if name.endswith("replicas"):
        return f"{name} (count)"
    return name


def axis_values(df: pd.DataFrame, name: str) -> pd.Series:
    """The axis column as numbers: durations ("30m", 1800) in the axis' unit (:func:`axis_label`);
    NaN where a value is not a number ("auto")."""
    col = df[name]
    u = _duration_unit(name)
    if u is None:
        return pd.to_numeric(col, errors="coerce") if col.dtype != bool else col.astype(float)
    from acmemodel.planner.config_fields import parse_duration

    def sec(v):
        try:
            return parse_duration(v, name) / _UNIT_S[u]
        except Exception:  # noqa: BLE001 ("auto" and the like: not on a numeric axis)
            return np.nan
    return col.map(sec).astype(float)


def _time_unit(seconds) -> tuple[float, str]:
    """The unit a set of durations (seconds) reads best in: s below 2 min, min below 2 h, h below 3 d,
    else d (judged by the largest finite value)."""
    v = np.asarray(seconds, float)
    top = float(np.max(np.abs(v[np.isfinite(v)]))) if np.isfinite(v).any() else 0.0
    for unit, below in (("s", 120.0), ("min", 7200.0), ("h", 3 * 86400.0)):
        if top < below:
            return _UNIT_S[unit], unit
    return _UNIT_S["d"], "d"


def _tick(v: float) -> str:
    """A tick label: a human number (thousands separators, never ``1e+06``), no trailing zeros."""
    from acmemodel.planner.report import _num

    t = _num(float(v))
    return t.rstrip("0").rstrip(".") if "." in t else t


def _human_ticks(*axes) -> None:
    """Tick labels as human numbers (:func:`_tick`) on matplotlib axes."""
    from matplotlib.ticker import FuncFormatter

    for a in axes:
        a.set_major_formatter(FuncFormatter(lambda v, _pos: _tick(v)))


def axis_text(value, name: str) -> str:
    """One axis value as people read it: a duration axis' value (seconds or ``"30m"``) in its human unit
    (``30 s``, ``2.75 min``), a number with thousands separators, anything else as given."""
    from acmemodel.planner.report import _dur

    if _duration_unit(name):
        from acmemodel.planner.config_fields import parse_duration

        if isinstance(value, (np.integer, np.floating)):
            value = value.item()
        try:
            return _dur(parse_duration(value, name))
        except Exception:  # noqa: BLE001 ("auto" and the like)
            return str(value)
    if isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool):
        return _tick(value)
    return str(value)


def _numeric_axes(df: pd.DataFrame, meta: dict) -> list[str]:
    """Grid axes with at least two numeric values (durations converted, :func:`axis_values`)."""
    names = list((meta.get("grid") or {}).get("axes", {}))
    out = []
    for a in names:
        if a in df.columns:
            v = axis_values(df, a)
            if v.notna().any() and v.nunique() > 1:
                out.append(a)
    return out


def pareto_front(df: pd.DataFrame, x: str = "gpu_h_lost", y: str = "eval_wait_p90_s") -> pd.DataFrame:
    """Rows not dominated in (``x``, ``y``), both minimised, sorted by ``x``."""
    d = df[np.isfinite(df[x].astype(float)) & np.isfinite(df[y].astype(float))].sort_values([x, y])
    keep, best = [], np.inf
    for idx, v in zip(d.index, d[y].astype(float)):
        if v < best:
            keep.append(idx)
            best = v
    return d.loc[keep]


def plot_sweep(df: pd.DataFrame, meta: dict, outdir) -> list[str]:
    """PNG plots of a sweep in ``outdir``: heat maps of GPU-hours lost, Eval p90 wait and the first run's
    mean completion over the first two numeric axes (mean over the other axes), and the Pareto front of
    GPU-hours lost against Eval p90 wait. Returns the written paths."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    ok = df[df["status"] == "ok"]
    written = []
    axes = _numeric_axes(ok, meta)
    runs = [c[: -len(".completion_mean_s")] for c in ok.columns if c.endswith(".completion_mean_s")]
    metrics = [("gpu_h_lost", "GPU-hours lost (all runs)"), ("eval_wait_p90_s", "Eval p90 wait")]
    if runs:
        metrics.append((f"{runs[0]}.completion_mean_s", f"{runs[0]} mean completion"))
    if len(axes) >= 2 and len(ok):
        a, b = axes[0], axes[1]
        for col, label in metrics:
            if col not in ok.columns:
                continue
            scale = 1.0
            if col.endswith("_s"):   # a duration: in the unit its values read best in
                scale, unit = _time_unit(ok[col].astype(float))
                label = f"{label} ({unit})"
            piv = ok.assign(_v=ok[col].astype(float) / scale, _a=axis_values(ok, a), _b=axis_values(ok, b)) \
                .pivot_table(index="_a", columns="_b", values="_v", aggfunc="mean")
            fig, ax = plt.subplots(figsize=(6.4, 4.8))
            finite = piv.to_numpy(float)
            im = ax.imshow(np.where(np.isfinite(finite), finite, np.nan), origin="lower", aspect="auto",
                           cmap="viridis")
            ax.set_xticks(range(piv.shape[1]), [_tick(v) for v in piv.columns], rotation=45, ha="right")
            ax.set_yticks(range(piv.shape[0]), [_tick(v) for v in piv.index])
            ax.set_xlabel(axis_label(b))
            ax.set_ylabel(axis_label(a))
            others = [x for x in axes[2:]] + [x for x in (meta.get("grid") or {}).get("axes", {})
                                              if x not in axes]
            ax.set_title(label + (" (mean over other axes)" if others else ""), fontsize=10)
            cb = fig.colorbar(im, ax=ax, label=label)
            _human_ticks(cb.ax.yaxis)
            fig.tight_layout()
            p = outdir / f"heatmap_{col.replace('.', '_')}.png"
            fig.savefig(p, dpi=110)
            plt.close(fig)
            written.append(str(p))
    pair = pareto_pair(ok)
    if pair is not None:
        x, xlabel, front = pair
        fig, ax = plt.subplots(figsize=(6.4, 4.8))
        fin = ok[np.isfinite(ok["eval_wait_p90_s"].astype(float)) & np.isfinite(ok[x].astype(float))]
        w = fin["eval_wait_p90_s"].astype(float)
        wide = bool((w > 0).all() and w.max() > 100 * w.min())   # orders of magnitude: a log axis of durations
        scale, unit = (1.0, "") if wide else _time_unit(w)
        ax.scatter(fin[x], w / scale, s=12, alpha=0.5, label="grid points")
        one = len(front) == 1
        ax.plot(front[x], front["eval_wait_p90_s"].astype(float) / scale, "o-", color="C3",
                label="best on both (no trade-off on this grid)" if one else f"Pareto front ({len(front):,} points)")
        ax.set_xlabel(xlabel)
        _human_ticks(ax.xaxis)
        if wide:
            from acmemodel.plotting import duration_axis

            duration_axis(ax, "y", "Eval p90 wait")
        else:
            ax.set_ylabel(f"Eval p90 wait ({unit})")
            _human_ticks(ax.yaxis)
        ax.set_title(f"{xlabel} vs Eval p90 wait: " + ("one grid point is best on both" if one else "Pareto front"),
                     fontsize=10)
        ax.legend()
        fig.tight_layout()
        p = outdir / f"pareto_{x.replace('.', '_')}_vs_eval_p90.png"
        fig.savefig(p, dpi=110)
        plt.close(fig)
        written.append(str(p))
    return written


def pareto_pair(ok: pd.DataFrame):
    """``(cost column, its label, front)`` of the Pareto plot: GPU-hours lost against the Eval p90 wait
    when that trade-off has more than one non-dominated point, else the first quota column (the GPUs a
    partition takes) that has one -- a lane search sweep trades lane GPUs for wait while the runs' loss
    stays put, and a one-point front shows no choice; None without the columns."""
    if "eval_wait_p90_s" not in ok.columns or not len(ok):
        return None
    cands = [("gpu_h_lost", "GPU-hours lost (all runs)")] + [
        (c, f"{c.split('.', 1)[1]} partition (GPUs)") for c in ok.columns if c.startswith("quota.")]
    first = None
    for x, label in cands:
        if x not in ok.columns or not np.isfinite(pd.to_numeric(ok[x], errors="coerce")).any():
            continue
        front = pareto_front(ok.assign(**{x: pd.to_numeric(ok[x], errors="coerce")}), x=x)
        if first is None:
            first = (x, label, front)
        if len(front) > 1:
            return x, label, front
    return first
