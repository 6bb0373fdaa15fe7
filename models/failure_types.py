"""Failure-type mix prior from the paper's failure table (Table 3).

The public trace carries no failure reasons. The paper's Table 3 gives, for 29 reasons *r* in three
categories, the count ``num_r``, the GPU demand (mean ``a_r``, median ``m_r``) and the time to failure
TF (mean ``A_r``, median ``M_r``, minutes). :func:`failure_type_mix` turns it into the probability of
each reason (or category) for a failure of a job of ``g`` GPUs at elapsed run time ``t``.

Math (naive Bayes, GPU demand and TF independent given the reason):

* prior ``π_r = num_r / Σ_s num_s``;
* GPU demand: ``log(1 + G) | r ~ Normal(μ^G_r, σ^G_r²)`` with ``μ^G_r = log(1 + m_r)`` and
  ``σ^G_r² = max(2·log((1 + a_r)/(1 + m_r)), σ_min²)`` — the log-normal whose median and mean match
  the table (mean/median of a log-normal is ``exp(σ²/2)``); ``1 + G`` because some medians are 0
  (CPU-only failures); the floor ``σ_min`` (default 0.5) applies where the published mean is not above
  the median (left-skewed or degenerate rows);
* time to failure: ``log T | r ~ Normal(μ^T_r, σ^T_r²)``, ``μ^T_r = log(60·M_r)`` (seconds),
  ``σ^T_r² = max(2·log(A_r/M_r), σ_min²)``; medians are floored at 0.05 min (the table's rounding);
* ``condition="at"`` (a failure happens at ``t``):
  ``P(r | g, t) ∝ π_r · φ((log(1+g) − μ^G_r)/σ^G_r)/σ^G_r · φ((log t − μ^T_r)/σ^T_r)/σ^T_r``;
  ``condition="after"`` (the job has run ``t`` without failing; which reason will end it):
  the TF factor is the survival ``1 − Φ((log t − μ^T_r)/σ^T_r)``. Omitting ``gpus`` or ``t``
  drops that factor (marginal over it). Category probabilities are sums over their reasons.

The Jacobians ``1/(1+g)`` and ``1/t`` are common to all reasons and cancel. The table covers a
failure-log subset (mostly Kalos evaluation jobs and Seren pretraining jobs), so the counts encode that
population's mix: use the output as a prior for the mix, not as a failure rate.
"""
from __future__ import annotations

import functools

import numpy as np
import pandas as pd
from scipy import special, stats

from acmemodel.datasets.published import FAILURE_CATEGORIES, load_failure_table

#: floor of the log-scale spread of the per-reason log-normals
SIGMA_MIN: float = 0.5
#: floor of published medians/means in minutes (the table rounds to 0.1 min)
MINUTES_FLOOR: float = 0.05

_CLUSTER_CODES = {"seren": "S", "s": "S", "kalos": "K", "k": "K"}


def lognormal_from_median_mean(median: np.ndarray, mean: np.ndarray, sigma_min: float):
    """(mu, sigma) of the log-normal with the given median and mean: ``mu = log median``,
    ``sigma² = 2 log(mean / median)`` (floored at ``sigma_min²``; 0 where mean ≤ median)."""
    median = np.asarray(median, dtype=float)
    mean = np.asarray(mean, dtype=float)
    mu = np.log(median)
    with np.errstate(divide="ignore", invalid="ignore"):
        s2 = 2.0 * np.log(mean / median)
    s2 = np.where(np.isfinite(s2), s2, 0.0)
    sigma = np.sqrt(np.maximum(s2, sigma_min ** 2))
    return mu, sigma


@functools.lru_cache(maxsize=8)
def _params_cached(sigma_min: float) -> pd.DataFrame:
    tab = load_failure_table()
    mu_g, s_g = lognormal_from_median_mean(1.0 + tab["gpu_demand_median"].to_numpy(float),
                                            1.0 + tab["gpu_demand_avg"].to_numpy(float), sigma_min)
    med = np.maximum(tab["time_to_failure_median_min"].to_numpy(float), MINUTES_FLOOR) * 60.0
    avg = np.maximum(tab["time_to_failure_avg_min"].to_numpy(float), MINUTES_FLOOR) * 60.0
    mu_t, s_t = lognormal_from_median_mean(med, avg, sigma_min)
    num = tab["num"].to_numpy(float)
    return pd.DataFrame({
        "reason": tab["reason"], "category": tab["category"], "num": num, "prior": num / num.sum(),
        "gpu_mu": mu_g, "gpu_sigma": s_g, "tf_mu": mu_t, "tf_sigma": s_t,
        "clusters": tab["clusters"],
    })


def failure_type_params(*, sigma_min: float = SIGMA_MIN) -> pd.DataFrame:
    """Per-reason parameters of the prior (see module docstring).

    Columns: ``reason``, ``category``, ``num``, ``prior`` (π_r), ``gpu_mu``/``gpu_sigma`` (of
    ``log(1 + GPUs)``), ``tf_mu``/``tf_sigma`` (of ``log`` time to failure in **seconds**),
    ``clusters``.
    """
    if not (np.isfinite(sigma_min) and sigma_min > 0):
        raise ValueError(f"sigma_min must be a positive number, got {sigma_min!r}")
    return _params_cached(float(sigma_min)).copy()


def failure_type_mix(gpus=None, t=None, *, level: str = "reason", condition: str = "at",
                     cluster: str | None = None, sigma_min: float = SIGMA_MIN):
    """Probabilities of the failure reasons (or categories) for a job of ``gpus`` GPUs at time ``t``.

    Parameters
    ----------
    gpus : GPUs of the job (scalar or array; ``None`` = marginal over job size).
    t : elapsed run time in **seconds** (scalar or array, broadcast with ``gpus``; ``None`` = marginal
        over time). With ``condition="at"`` it is the failure time; with ``"after"`` the time survived.
    level : ``"reason"`` (29 columns) or ``"category"`` (Infrastructure, Framework, Script).
    condition : ``"at"`` (failure occurs at ``t``) or ``"after"`` (failure occurs after ``t``).
    cluster : restrict to reasons seen on that cluster (``"Seren"``/``"Kalos"``), or ``None`` for all.

    Returns
    -------
    For scalar inputs a ``pandas.Series`` indexed by reason (or category) summing to 1; for array
    inputs a ``DataFrame`` with one row per broadcast input and one column per reason (category).
    """
    if level not in ("reason", "category"):
        raise ValueError(f"level must be 'reason' or 'category', got {level!r}")
    if condition not in ("at", "after"):
        raise ValueError(f"condition must be 'at' or 'after', got {condition!r}")
    par = failure_type_params(sigma_min=sigma_min)
    if cluster is not None:
        code = _CLUSTER_CODES.get(str(cluster).lower())
        if code is None:
            raise ValueError(f"cluster must be 'Seren' or 'Kalos' (or None), got {cluster!r}")
        par = par[par["clusters"].map(lambda c: code in c)].reset_index(drop=True)
    scalar = np.ndim(gpus) == 0 and np.ndim(t) == 0
    g_arr = None if gpus is None else np.atleast_1d(np.asarray(gpus, dtype=float))
    t_arr = None if t is None else np.atleast_1d(np.asarray(t, dtype=float))
    if g_arr is not None and (np.any(~np.isfinite(g_arr)) or np.any(g_arr < 0)):
        raise ValueError(f"gpus must be finite and >= 0, got {gpus!r}")
    if t_arr is not None and (np.any(~np.isfinite(t_arr)) or np.any(t_arr <= 0)):
        raise ValueError(f"t must be finite and > 0 seconds, got {t!r}")
    shapes = [a.shape for a in (g_arr, t_arr) if a is not None]
    n = np.broadcast_shapes(*shapes)[0] if shapes else 1

    logp = np.broadcast_to(np.log(par["prior"].to_numpy()), (n, len(par))).copy()
    if g_arr is not None:
        lg = np.log1p(np.broadcast_to(g_arr, (n,)))[:, None]
        logp += stats.norm.logpdf(lg, par["gpu_mu"].to_numpy(), par["gpu_sigma"].to_numpy())
    if t_arr is not None:
        lt = np.log(np.broadcast_to(t_arr, (n,)))[:, None]
        mu, sd = par["tf_mu"].to_numpy(), par["tf_sigma"].to_numpy()
        logp += (stats.norm.logpdf(lt, mu, sd) if condition == "at"
                 else special.log_ndtr(-(lt - mu) / sd))
    logp -= special.logsumexp(logp, axis=1, keepdims=True)
    out = pd.DataFrame(np.exp(logp), columns=par["reason"].to_list())
    if level == "category":
        cats = [c for c in FAILURE_CATEGORIES if c in set(par["category"])]
        out = pd.DataFrame({c: out.loc[:, (par["category"] == c).to_numpy()].sum(axis=1) for c in cats})
    out.columns.name = level
    if scalar:
        s = out.iloc[0]
        s.name = "probability"
        return s
    return out


def reason_category(reason: str) -> str:
    """The category (Infrastructure / Framework / Script) of a reason of the failure table."""
    par = failure_type_params()
    hit = par.loc[par["reason"] == reason, "category"]
    if hit.empty:
        raise ValueError(f"unknown failure reason {reason!r}; known: {', '.join(par['reason'])}")
    return str(hit.iloc[0])
