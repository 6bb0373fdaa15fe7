"""Plots of a planning sweep (:mod:`acmemodel.planner.sweep.runner`): heat maps over two axes and the Pareto
front of GPU-hours lost against the Eval p90 wait (PNG, matplotlib Agg)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd


# ------------------------------------------------------------------------------------------ plots
def _numeric_axes(df: pd.DataFrame, meta: dict) -> list[str]:
    names = list((meta.get("grid") or {}).get("axes", {}))
    return [a for a in names if a in df.columns and pd.api.types.is_numeric_dtype(df[a]) and df[a].nunique() > 1]


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
    metrics = [("gpu_h_lost", "GPU-hours lost (all runs)"), ("eval_wait_p90_s", "Eval p90 wait (min)")]
    if runs:
        metrics.append((f"{runs[0]}.completion_mean_s", f"{runs[0]} mean completion (d)"))
    if len(axes) >= 2 and len(ok):
        a, b = axes[0], axes[1]
        for col, label in metrics:
            if col not in ok.columns:
                continue
            scale = 60.0 if col.endswith("wait_p90_s") else (86400.0 if col.endswith("completion_mean_s") else 1.0)
            piv = ok.assign(_v=ok[col].astype(float) / scale).pivot_table(index=a, columns=b, values="_v",
                                                                          aggfunc="mean")
            fig, ax = plt.subplots(figsize=(6.4, 4.8))
            finite = piv.to_numpy(float)
            im = ax.imshow(np.where(np.isfinite(finite), finite, np.nan), origin="lower", aspect="auto",
                           cmap="viridis")
            ax.set_xticks(range(piv.shape[1]), [f"{v:g}" for v in piv.columns], rotation=45, ha="right")
            ax.set_yticks(range(piv.shape[0]), [f"{v:g}" for v in piv.index])
            ax.set_xlabel(b)
            ax.set_ylabel(a)
            others = [x for x in axes[2:]] + [x for x in (meta.get("grid") or {}).get("axes", {})
                                              if x not in axes]
            ax.set_title(label + (" (mean over other axes)" if others else ""), fontsize=10)
            fig.colorbar(im, ax=ax, label=label)
            fig.tight_layout()
            p = outdir / f"heatmap_{col.replace('.', '_')}.png"
            fig.savefig(p, dpi=110)
            plt.close(fig)
            written.append(str(p))
    if {"gpu_h_lost", "eval_wait_p90_s"} <= set(ok.columns) and len(ok):
        front = pareto_front(ok)
        fig, ax = plt.subplots(figsize=(6.4, 4.8))
        fin = ok[np.isfinite(ok["eval_wait_p90_s"].astype(float))]
        ax.scatter(fin["gpu_h_lost"], fin["eval_wait_p90_s"] / 60.0, s=12, alpha=0.5, label="grid points")
        ax.plot(front["gpu_h_lost"], front["eval_wait_p90_s"] / 60.0, "o-", color="C3", label="Pareto front")
        ax.set_xlabel("GPU-hours lost (all runs)")
        ax.set_ylabel("Eval p90 wait (min)")
        ax.set_title("Pareto front: GPU-hours lost vs Eval p90 wait", fontsize=10)
        ax.legend()
        fig.tight_layout()
        p = outdir / "pareto_gpu_h_lost_vs_eval_p90.png"
        fig.savefig(p, dpi=110)
        plt.close(fig)
        written.append(str(p))
    return written
