"""Construction of an arrival model from known parameters instead of a trace:
:meth:`ArrivalModel.from_rates <ArrivalRatesMixin.from_rates>` (the calibration to published
statistics; tests) and :meth:`ArrivalModel.merge <ArrivalRatesMixin.merge>` (one model per cluster
into one).
"""
from __future__ import annotations

from typing import Iterable, Mapping

import numpy as np
import pandas as pd

from acmemodel.clusters import utc_offset_seconds
from acmemodel.models.arrival_glm import _N_GAP_Q, HOURS_PER_WEEK, to_unix_seconds
from acmemodel.models.gpu_counts import GpuCountModel


class ArrivalRatesMixin:
    """``from_rates`` and ``merge`` of :class:`~acmemodel.models.arrival.ArrivalModel`."""

    # ------------------------------------------------------------------ construction from rates
    @classmethod
    def from_rates(cls, *, cluster: str, timezone: str, jobs_per_day: Mapping[str, float],
                   hour_weights: Iterable[float] | Mapping[str, Iterable[float]] | None = None,
                   dow_weights: Iterable[float] | Mapping[str, Iterable[float]] | None = None,
                   batch_size_pmf: Mapping[str, Mapping[int, float]] | None = None,
                   intra_batch_gap_s: float = 1.0, family: str = "poisson", alpha: float = 0.0,
                   trend_per_day: float = 0.0, reference_time=None,
                   gpu_counts: GpuCountModel | None = None, users: int | Iterable[float] = 20,
                   restart_prob: Mapping[str, float] | None = None, **params) -> "ArrivalModel":
        """Build a model from known parameters (calibration to published statistics; tests).

        ``jobs_per_day[type]`` is the mean job rate over a week; the intensity at hour-of-week
        ``(dow, hour)`` is proportional to ``hour_weights[hour] · dow_weights[dow]`` (per type when a
        mapping is given), normalised so the weekly mean is ``jobs_per_day / 24`` jobs per hour.
        ``batch_size_pmf[type]`` (default: all batches of size 1); within-batch gaps uniform on
        ``[0, 2 · intra_batch_gap_s]``; ``family="negbin"`` with ``alpha`` adds NB2 hourly noise;
        ``trend_per_day`` is the log-rate slope around ``reference_time`` (default 2023-03-01 local),
        never clipped. ``gpu_counts`` defaults to single-GPU jobs. ``users``: number of equally
        active users, or their batch shares (by rank). ``restart_prob[type]``: probability that a
        failed job of the type is resubmitted (used by :mod:`acmemodel.synth`; default unknown).
        """
        obj = cls(**params)
        obj._validate()
        if family not in ("poisson", "negbin"):
            raise ValueError(f"family must be 'poisson' or 'negbin', got {family!r}")
        if family == "negbin" and not alpha > 0:
            raise ValueError(f"alpha must be > 0 for family='negbin', got {alpha!r}")
        off = utc_offset_seconds(timezone)
        ref = (to_unix_seconds(reference_time) if reference_time is not None
               else pd.Timestamp("2023-03-01").value / 1e9 - off)
        obj.timezones_ = {cluster: timezone}
        obj.cells_ = {}
        if isinstance(users, (int, np.integer)):
            if users < 1:
                raise ValueError(f"users must be >= 1, got {users!r}")
            ushares = np.full(int(users), 1.0 / int(users))
        else:
            ushares = np.sort(np.asarray(list(users), dtype=float))[::-1]
            if len(ushares) == 0 or np.any(ushares < 0) or ushares.sum() <= 0:
                raise ValueError("users must be a positive count or non-negative shares with a positive sum")
            ushares = ushares / ushares.sum()

        def pick(w, ty, n, name):
            if w is None:
                return np.ones(n)
            if isinstance(w, Mapping):
                w = w.get(ty)
                if w is None:
                    return np.ones(n)
            arr = np.asarray(list(w), dtype=float)
            if arr.shape != (n,) or np.any(arr < 0) or arr.sum() <= 0:
                raise ValueError(f"{name} must be {n} non-negative weights with a positive sum")
            return arr

        for ty, rate in jobs_per_day.items():
            if not (float(rate) > 0):
                raise ValueError(f"jobs_per_day[{ty!r}] must be > 0, got {rate!r}")
            hw = pick(hour_weights, ty, 24, "hour_weights")
            dw = pick(dow_weights, ty, 7, "dow_weights")
            w = np.outer(dw, hw).ravel()
            w = w / w.mean()
            pmf = (batch_size_pmf or {}).get(ty) or {1: 1.0}
            bv = np.array(sorted(int(k) for k in pmf), dtype=np.int64)
            bp = np.array([float(pmf[k]) for k in sorted(pmf, key=int)])
            if np.any(bv < 1) or np.any(bp < 0) or bp.sum() <= 0:
                raise ValueError(f"batch_size_pmf[{ty!r}] must map sizes >= 1 to non-negative weights")
            bp = bp / bp.sum()
            mbs = float(np.dot(bv, bp))
            with np.errstate(divide="ignore"):
                lr = np.log(float(rate) / 24.0 / mbs * w)
            cell = {"cluster": cluster, "type": ty, "n_jobs": 0, "n_batches": 0, "n_hours": 0,
                    "t_ref": float(ref), "d_lo": -np.inf, "d_hi": np.inf, "profile": "given",
                    "family": family, "alpha": float(alpha) if family == "negbin" else 0.0,
                    "dispersion_alpha_hat": float("nan"), "dispersion_stat": float("nan"),
                    "dispersion_alpha_se": float("nan"),
                    "dispersion_p": float("nan"), "log_rate": lr, "log_rate_se": np.zeros(HOURS_PER_WEEK),
                    "trend_per_day": float(trend_per_day), "trend_se": 0.0,
                    "hourly_dispersion_index": float("nan"),
                    "emp_jobs_per_how": np.full(HOURS_PER_WEEK, np.nan),
                    "emp_hours_per_how": np.zeros(HOURS_PER_WEEK, dtype=np.int64),
                    "bs_values": bv, "bs_counts": np.zeros(len(bv), dtype=np.int64),
                    "mean_batch_size": mbs, "bursty": bool(bv.max() > 1),
                    "bs_kind": "one" if bv.max() == 1 else "empirical", "bs_table": (bv, bp),
                    "gap_q": np.linspace(0, 2 * float(intra_batch_gap_s), _N_GAP_Q) if bv.max() > 1 else None,
                    "user_shares": ushares.copy(), "user_tail_n": 0,
                    "restart_prob": float(restart_prob.get(ty, np.nan)) if restart_prob else float("nan"),
                    "n_failed": 0}
            obj.cells_[(cluster, ty)] = cell
        obj.gpu_counts_ = gpu_counts if gpu_counts is not None else GpuCountModel.from_pmfs(
            {(cluster, ty): {1: 1.0} for ty in jobs_per_day})
        obj.n_fit_ = 0
        return obj

    @classmethod
    def merge(cls, *models: "ArrivalModel") -> "ArrivalModel":
        """One model holding the cells of several fitted models (e.g. one per cluster)."""
        if not models:
            raise ValueError("merge needs at least one model")
        out = cls(**models[0].get_params())
        out.timezones_, out.cells_ = {}, {}
        counts: dict = {}
        for m in models:
            m._check_fitted()
            out.timezones_.update(m.timezones_)
            out.cells_.update(m.cells_)
            for cl, bt in m.gpu_counts_.counts_.items():
                counts.setdefault(cl, {}).update(bt)
        g = GpuCountModel(**models[0].gpu_counts_.get_params())
        g.counts_ = counts
        g._build()
        g.n_fit_ = sum(m.gpu_counts_.n_fit_ for m in models)
        out.gpu_counts_ = g
        out.n_fit_ = sum(m.n_fit_ for m in models)
        return out
