"""The reports of :class:`~acmemodel.models.restart.RestartModel` (a mixin it inherits): the GLM
coefficient table (or the prior per category in fallback mode) and the CDF plot of the time to
restart next to the published per-category priors."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from acmemodel.models.restart_dist import prior_distribution

__all__ = ["RestartReportsMixin"]


class RestartReportsMixin:
    """``summary()`` and ``plot()`` (need the fitted state of :class:`RestartModel`)."""

    # ------------------------------------------------------------------ reports
    def summary(self) -> pd.DataFrame:
        """GLM coefficient table (component, term, coef, std_error, lower, upper, exp_coef, p_value)
        plus dispersion rows; in fallback mode the prior per category (mean_s, median_s) with the
        fallback reason in column ``note``."""
        self._check_fitted()
        if self.fallback_:
            rows = []
            for cat in (None, "Infrastructure", "Framework", "Script"):
                d = prior_distribution(cat)
                rows.append({"component": "total", "term": f"prior:{cat or 'all'}", "mean_s": d.mean(),
                             "median_s": d.median(), "note": self.fallback_reason_})
            return pd.DataFrame(rows)
        rows = []
        for comp, g in self.glm_.items():
            for j, term in enumerate(g["columns"]):
                rows.append({"component": comp, "term": term, "coef": g["coef"][j],
                             "std_error": g["se"][j], "lower": g["lower"][j], "upper": g["upper"][j],
                             "exp_coef": math.exp(g["coef"][j]), "p_value": g["pvalue"][j]})
            rows.append({"component": comp, "term": "dispersion (Gamma phi)", "coef": g["scale"]})
            if comp in self.lgbm_sigma_:
                rows.append({"component": comp, "term": "lgbm residual sigma (log s)",
                             "coef": self.lgbm_sigma_[comp]})
        out = pd.DataFrame(rows)
        out["note"] = f"fitted on {self.n_chains_} restart chains"
        return out

    def plot(self, ax=None, *, component: str = "total", gpus: float | None = None):
        """CDF of the fitted (or prior) time to restart and of the per-category priors, log time."""
        self._check_fitted()
        import matplotlib.pyplot as plt

        if ax is None:
            _, ax = plt.subplots()
        x = np.geomspace(1.0, 7 * 86400.0, 200)
        d = self.restart_distribution(gpus=gpus, component=component)
        ax.plot(x, d.cdf(x), label=f"{d.source} ({component})", lw=2)
        for cat in ("Infrastructure", "Framework", "Script"):
            ax.plot(x, prior_distribution(cat, gpus=gpus).cdf(x), ls="--", label=f"prior: {cat}")
        ax.set_xscale("log")
        ax.set_xlabel("time to restart (s)")
        ax.set_ylabel("CDF")
        ax.legend(fontsize="small")
        return ax
