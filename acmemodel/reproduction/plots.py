"""The PNG overlays of ``acmemodel reproduce --plots``: each published CDF next to the synthetic sample's."""
from __future__ import annotations

from pathlib import Path

import numpy as np

__all__ = ["plot_curve"]


# ----------------------------------------------------------------------------------------- plots
def plot_curve(row: dict, ax, *, cluster: str = "") -> None:
    """Overlay of one published CDF (points) and the synthetic sample's empirical CDF on ``ax``."""
    s = np.sort(np.asarray(row["_sample"], float))
    x, cdf = np.asarray(row["_x"], float), np.asarray(row["_cdf"], float)
    if len(s):
        pos = s[s > 0]
        lo = max(min(x.min(), pos.min() if len(pos) else x.min()), 0.5)
        grid = np.unique(np.clip(np.r_[s, x], lo, None))
        f = np.searchsorted(s, grid, side="right") / len(s)
        ax.step(grid, f, where="post", label=f"synthetic (n={len(s):,})", color="tab:blue")
    gpu = row["kind"] == "gpu_count_cdf_by_jobs"
    ax.plot(x, cdf, "o-" if not gpu else "o", ms=3, label="published", color="tab:orange",
            drawstyle="default")
    if gpu:
        ax.set_xscale("log", base=2)
        ax.set_xlabel("GPUs requested")
    else:  # ticks in s/min/h/d, not 2^21 s
        from acmemodel.plotting import duration_axis

        duration_axis(ax, label=f"duration ({row['basis']})")
    ax.set_ylim(0, 1.02)
    ax.set_ylabel("CDF (fraction of GPU jobs)")
    ks = row["ks"]
    ax.set_title(f"{row['name']}  KS={ks:.3f}" if ks is not None else row["name"], fontsize=9)
    ax.legend(fontsize=8, loc="lower right")
    ax.grid(alpha=0.3)


def _write_plots(clusters: dict, directory: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    directory.mkdir(parents=True, exist_ok=True)
    for name, c in clusters.items():
        for row in c["curves"]:
            fig, ax = plt.subplots(figsize=(5.5, 3.8))
            try:
                plot_curve(row, ax, cluster=name)
                path = directory / (row["name"].replace("/", "_") + ".png")
                fig.tight_layout()
                fig.savefig(path, dpi=100)
                row["plot"] = str(path)
            finally:
                plt.close(fig)
