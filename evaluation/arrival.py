"""Held-out evaluation of the arrival model and the demand forecasts.

For each cluster the last ``test_days`` (default 30) local days are held out (the cutoff is the
local midnight ``test_days`` before the last submission; training needs at least 14 days). The
:class:`~acmemodel.models.arrival.ArrivalModel` is fitted on the earlier jobs and compared on the
held-out window against a homogeneous Poisson baseline (one constant rate per cell from the training
period, no batches). Restart attempts of the model's ``restart_types`` are left out of the observed
arrivals, as they are from the fit.

Tidy rows ``{model, metric, cell, value}``; ``cell`` is ``cluster/type`` (``cluster/ALL`` pools the
cluster's types) or ``cluster/type/series`` for forecasts. Models: ``compound_nhpp`` (ours),
``homogeneous_poisson`` (baseline), ``observed`` (the held-out data itself), ``ets`` and
``seasonal_naive`` (forecasts). Metrics:

* ``ks_interarrival`` — two-sample KS distance between the inter-arrival times (s) of the observed
  and of one sampled held-out window (seeded);
* ``ks_batch_size`` — KS distance between batch sizes (batches of the sample re-identified with
  :func:`acmemodel.features.chains.batches`, as for the observed jobs);
* ``hourly_profile_err`` / ``weekly_profile_err`` — ``Σ|o − m| / Σ o`` between the observed mean jobs
  per local hour of day (24 values) / per weekday (7 values) and the model's expected values
  (from its intensity, so without sampling noise);
* ``count_ratio`` — expected / observed jobs in the window;
* ``dispersion_index`` — variance / mean of hourly job counts (observed vs. each model's sample);
* ``mape``, ``wape`` (Σ|ŷ − y|/Σy), ``coverage`` — forecasts of the held-out days' job counts and
  GPU-hours from the training days (:class:`~acmemodel.models.forecast.DemandForecaster`, 90 % intervals).

**The model card** (``df.attrs["card"]``, :mod:`acmemodel.evaluation.card`; each cluster's submissions
of all types, the clusters' held-out hours and days pooled): the arrival model's expected jobs per
held-out hour bin ``μ`` (from its intensity × mean batch size) against two baselines a planner would
use — ``training_mean_rate`` (the training period's jobs per second, constant) and ``seasonal_naive``
(the count of the same hour of the week in the last training week) — by

* ``hourly_logscore`` — the Poisson log-probability of the observed count ``log P(N = o; μ)`` per hour
  bin (nats, higher is better; the seasonal naive's zero counts give no probability to a job, so it
  is scored by the errors only);
* ``hourly_abs_err`` and ``daily_abs_err`` — ``|o − μ|`` per hour bin and per local day (jobs);

the same scores for ``nhpp_forecast``, the model's forecast of the held-out hours
(:meth:`~acmemodel.models.arrival.ArrivalModel.forecast_counts`: each held-out day's total forecast
from the training days' jobs per day by the daily forecasters' median ensemble, spread over the hours
by the NHPP's hour-of-week profile), against the seasonal naive and the NHPP's own intensity (whose
level beyond the training period is the fitted trend held at its last value);

and the demand forecasts (``auto`` — the forecaster's time-honest choice, with the interval kind its
backtest found nearer the level — and ``ets``, each against ``seasonal_naive``, ``daily_abs_err_jobs`` /
``daily_abs_err_gpu_hours`` of the cluster's total series per held-out day), paired per hour / day with
the standard error and verdict of :func:`~acmemodel.evaluation.card.paired`. Intervals: the forecasts'
90 % intervals per held-out day (calibrated: coverage in 0.85–0.95). The arrival model gives no
interval of a count (its card says so by having none).
"""
from __future__ import annotations

import math
import warnings
from typing import Any, Mapping

import numpy as np
import pandas as pd
from scipy import stats

from acmemodel.clusters import cluster_timezones, utc_offset_seconds

__all__ = ["evaluate_arrival", "held_out_cutoffs", "arrival_card", "render_arrival_card"]

DAY = 86400.0
MIN_TRAIN_DAYS = 14.0


def held_out_cutoffs(jobs: pd.DataFrame, timezones: Mapping[str, str], test_days: float) -> dict[str, float]:
    """Per cluster: Unix seconds of the local midnight ``test_days`` before the last submission."""
    out = {}
    for cl, j in jobs.groupby("cluster", sort=True, observed=True):
        off = utc_offset_seconds(timezones.get(str(cl), "+00:00"))
        t0, t1 = float(j["submit_s"].min()), float(j["submit_s"].max())
        cut = math.floor((t1 - test_days * DAY + off) / DAY) * DAY - off
        if cut - t0 < MIN_TRAIN_DAYS * DAY:
            raise ValueError(f"evaluate arrival: cluster {cl} spans {(t1 - t0) / DAY:.1f} days, too short for "
                             f"a {test_days:g}-day held-out window after >= {MIN_TRAIN_DAYS:g} training days "
                             "(lower --test-days)")
        out[str(cl)] = cut
    return out


def _ks(a: np.ndarray, b: np.ndarray) -> float:
    if len(a) < 2 or len(b) < 2:
        return float("nan")
    return float(stats.ks_2samp(a, b).statistic)


def _hourly_counts(t: np.ndarray, t0: float, t1: float) -> np.ndarray:
    nb = int(math.ceil((t1 - t0) / 3600.0))
    return np.bincount(np.clip(((t - t0) // 3600).astype(np.int64), 0, nb - 1), minlength=nb)


def _profile(t: np.ndarray, weights: np.ndarray | None, off: int, t0: float, t1: float):
    """Mean jobs per local hour-of-day (24) and per weekday (7) over the hour bins of [t0, t1)."""
    from acmemodel.models.arrival_glm import how_of_local_hour as _how_of_local_hour, hour_bins as _hour_bins

    h, lo, hi, _ = _hour_bins(t0, t1, off)
    how = _how_of_local_hour(h)
    bins_per_hod = np.bincount(how % 24, minlength=24)
    bins_per_dow = np.bincount(how // 24, minlength=7)
    if weights is None:  # observed event times
        hh = np.floor((t + off) / 3600.0).astype(np.int64)
        ev = _how_of_local_hour(hh)
        c_hod = np.bincount(ev % 24, minlength=24)
        c_dow = np.bincount(ev // 24, minlength=7)
    else:  # expected count per bin
        c_hod = np.bincount(how % 24, weights=weights, minlength=24)
        c_dow = np.bincount(how // 24, weights=weights, minlength=7)
    return (c_hod / np.maximum(bins_per_hod, 1), c_dow / np.maximum(bins_per_dow, 1))


def _rel_l1(o: np.ndarray, m: np.ndarray) -> float:
    s = float(np.sum(o))
    return float(np.sum(np.abs(o - m)) / s) if s > 0 else float("nan")


def evaluate_arrival(trace_or_jobs, *, timezones: Mapping[str, str] | None = None, test_days: float = 30.0,
                     seed: int = 0, model_params: Mapping[str, Any] | None = None,
                     forecast: bool = True, level: float = 0.9) -> pd.DataFrame:
    """Held-out evaluation (module docstring) → tidy DataFrame ``model, metric, cell, value``;
    ``df.attrs["split"]`` holds the per-cluster cutoff and job counts."""
    from acmemodel.features.chains import batches, restart_chains
    from acmemodel.models.arrival import ArrivalModel

    test_days = float(test_days)
    if not (test_days > 0):
        raise ValueError(f"test_days must be > 0, got {test_days!r}")
    jobs = getattr(trace_or_jobs, "jobs", trace_or_jobs)
    tzs = cluster_timezones(trace_or_jobs, timezones)
    jobs = jobs[np.isfinite(jobs["submit_s"].to_numpy(dtype=float))]
    if len(jobs) == 0:
        raise ValueError("evaluate arrival: no jobs")
    model = ArrivalModel(**dict(model_params or {}))
    model._validate()
    extra = {}
    if "batch_id" not in jobs.columns:
        extra["batch_id"] = batches(jobs, gap_s=float(model.batch_gap_s))["batch_id"]
    if "attempt" not in jobs.columns:
        need = {"analysis_state", "end_s", "queue_s", "user", "gpu_num"}
        extra["attempt"] = (restart_chains(jobs)["attempt"] if need <= set(jobs.columns)
                            else pd.Series(1, index=jobs.index))
    if extra:
        jobs = jobs.assign(**extra)
    cutoffs = held_out_cutoffs(jobs, tzs, test_days)
    rng = np.random.default_rng(seed)
    rows: list[dict] = []
    split: dict[str, dict] = {}
    units: dict[tuple[str, str], list] = {}   # (model, metric) → per hour / day values (the card)
    hits: dict[tuple[str, str], list] = {}

    def add(model_name, metric, cell, value):
        rows.append({"model": model_name, "metric": metric, "cell": cell, "value": float(value)})

    rtypes = (sorted(set(jobs["type"].astype(str))) if model.restart_types is None
              else tuple(model.restart_types or ()))
    for cl, cut in cutoffs.items():
        jc = jobs[jobs["cluster"].astype(str) == cl]
        off = utc_offset_seconds(tzs.get(cl, "+00:00"))
        sub = jc["submit_s"].to_numpy(dtype=float)
        train, test = jc[sub < cut], jc[sub >= cut]
        t1 = float(test["submit_s"].max()) + 1.0
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fitted = ArrivalModel(**model.get_params()).fit(train, timezones={cl: tzs.get(cl, "+00:00")})
        fresh = ~(test["type"].isin(rtypes).to_numpy() & (test["attempt"].to_numpy() > 1))
        obs = test[fresh]
        split[cl] = {"cutoff_utc": pd.Timestamp(cut, unit="s", tz="UTC").isoformat(),
                     "train_jobs": int(len(train)), "test_jobs": int(len(test)),
                     "test_days": (t1 - cut) / DAY}
        sim = fitted.sample(cut, t1, rng, cluster=cl)
        sim = sim[sim["submit_s"].to_numpy() < t1]
        sim_b = batches(sim.assign(cluster=sim["cluster"].astype(str), type=sim["type"].astype(str),
                                   user=sim["user"].astype(str)))
        # homogeneous Poisson baseline: constant per-cell rate from the training period
        tr_span = float(train["submit_s"].max() - train["submit_s"].min())
        if not tr_span > 0:
            raise ValueError(f"evaluate arrival: the {cl} training period holds submissions at one instant "
                             f"only ({len(train):,} job(s)); a rate needs a span of time")
        tr_fresh = train[~(train["type"].isin(rtypes).to_numpy() & (train["attempt"].to_numpy() > 1))]
        base_parts = []
        for ty, n in tr_fresh["type"].astype(str).value_counts().items():
            k = rng.poisson(n / tr_span * (t1 - cut))
            base_parts.append(pd.DataFrame({"submit_s": np.sort(rng.uniform(cut, t1, k)), "type": ty}))
        base = pd.concat(base_parts, ignore_index=True)

        types = sorted(set(obs["type"].astype(str)) | set(fitted.types(cl)))
        for ty in types + ["ALL"]:
            cell = f"{cl}/{ty}"
            o_m = np.ones(len(obs), bool) if ty == "ALL" else (obs["type"].astype(str) == ty).to_numpy()
            s_m = np.ones(len(sim), bool) if ty == "ALL" else (sim["type"].astype(str) == ty).to_numpy()
            b_m = np.ones(len(base), bool) if ty == "ALL" else (base["type"] == ty).to_numpy()
            o_t = np.sort(obs["submit_s"].to_numpy(dtype=float)[o_m])
            s_t = np.sort(sim["submit_s"].to_numpy(dtype=float)[s_m])
            b_t = np.sort(base["submit_s"].to_numpy(dtype=float)[b_m])
            add("observed", "jobs", cell, len(o_t))
            add("compound_nhpp", "ks_interarrival", cell, _ks(np.diff(o_t), np.diff(s_t)))
            add("homogeneous_poisson", "ks_interarrival", cell, _ks(np.diff(o_t), np.diff(b_t)))
            o_bs = obs.loc[o_m].groupby("batch_id").size().to_numpy()
            s_bs = sim_b.loc[s_m].groupby("batch_id").size().to_numpy()
            add("compound_nhpp", "ks_batch_size", cell, _ks(o_bs, s_bs))
            add("homogeneous_poisson", "ks_batch_size", cell, _ks(o_bs, np.ones(max(len(b_t), 2))))
            # profiles from the intensity (expected jobs per hour bin)
            cells = fitted.types(cl) if ty == "ALL" else ([ty] if ty in fitted.types(cl) else [])
            o_hod, o_dow = _profile(o_t, None, off, cut, t1)
            if cells:
                lam = sum(fitted._cell_bins((cl, c), cut, t1)[2] * fitted.cells_[(cl, c)]["mean_batch_size"]
                          for c in cells)
            else:
                lam = np.zeros(len(_profile_bins(cut, t1, off)))
            m_hod, m_dow = _profile(None, lam, off, cut, t1)
            n_tr = len(tr_fresh) if ty == "ALL" else int((tr_fresh["type"].astype(str) == ty).sum())
            flat = np.full(len(lam), n_tr / tr_span * 3600.0) * _bin_fraction(cut, t1, off)
            if ty == "ALL":
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    mu_fc = fitted.forecast_counts(cut, t1, cluster=cl)["jobs"].to_numpy()
                _card_units(units, o_t, np.sort(tr_fresh["submit_s"].to_numpy(dtype=float)), lam, flat, cut, t1, off,
                            mu_fc)
            f_hod, f_dow = _profile(None, flat, off, cut, t1)
            add("compound_nhpp", "hourly_profile_err", cell, _rel_l1(o_hod, m_hod))
            add("homogeneous_poisson", "hourly_profile_err", cell, _rel_l1(o_hod, f_hod))
            add("compound_nhpp", "weekly_profile_err", cell, _rel_l1(o_dow, m_dow))
            add("homogeneous_poisson", "weekly_profile_err", cell, _rel_l1(o_dow, f_dow))
            if len(o_t):
                add("compound_nhpp", "count_ratio", cell, float(np.sum(lam)) / len(o_t))
                add("homogeneous_poisson", "count_ratio", cell, float(np.sum(flat)) / len(o_t))
            for name, tt in (("observed", o_t), ("compound_nhpp", s_t), ("homogeneous_poisson", b_t)):
                c = _hourly_counts(tt, cut, t1)
                add(name, "dispersion_index", cell, c.var() / c.mean() if c.mean() > 0 else float("nan"))
        if forecast:
            rows.extend(_forecast_rows(jc, cl, tzs, cut, level, units, hits))
    df = pd.DataFrame(rows, columns=["model", "metric", "cell", "value"])
    df.attrs["split"] = split
    df.attrs["card"] = arrival_card({k: np.concatenate(v) for k, v in units.items()},
                                    {k: np.concatenate(v) for k, v in hits.items()}, level)
    return df


#: the arrival card's tables: (title, model, [(metric, baseline, higher is better)])
CARD = (
    ("ArrivalModel (compound NHPP): expected jobs per held-out hour / day", "compound_nhpp",
     (("hourly_logscore", "training_mean_rate", True), ("hourly_abs_err", "training_mean_rate", False),
      ("hourly_abs_err", "seasonal_naive", False), ("daily_abs_err", "training_mean_rate", False),
      ("daily_abs_err", "seasonal_naive", False))),
    ("ArrivalModel.forecast_counts (daily level forecast × NHPP hour shares): expected jobs per held-out "
     "hour / day", "nhpp_forecast",
     (("hourly_logscore", "training_mean_rate", True), ("hourly_logscore", "compound_nhpp", True),
      ("hourly_abs_err", "seasonal_naive", False), ("daily_abs_err", "seasonal_naive", False),
      ("hourly_abs_err", "compound_nhpp", False))),
    ("Demand forecast (auto: the time-honest choice), cluster total per held-out day", "auto",
     (("daily_abs_err_jobs", "seasonal_naive", False), ("daily_abs_err_gpu_hours", "seasonal_naive", False))),
    ("Demand forecast (ETS), cluster total per held-out day", "ets",
     (("daily_abs_err_jobs", "seasonal_naive", False), ("daily_abs_err_gpu_hours", "seasonal_naive", False))),
)
#: short names of the card's columns
SHORT = {"compound_nhpp": "NHPP", "nhpp_forecast": "NHPP fc", "training_mean_rate": "mean rate", "seasonal_naive": "seas. naive",
         "hourly_logscore": "logscore/h", "hourly_abs_err": "abs err/h", "daily_abs_err": "abs err/d",
         "daily_abs_err_jobs": "jobs/d err", "daily_abs_err_gpu_hours": "GPU-h/d err", "ets": "ETS",
         "auto": "auto"}


def _card_units(units: dict, o_t: np.ndarray, tr_t: np.ndarray, lam: np.ndarray, flat: np.ndarray,
                cut: float, t1: float, off: int, mu_fc: np.ndarray | None = None) -> None:
    """Per held-out hour bin and local day: the observed jobs, the model's and the baselines' expected
    jobs (module docstring), appended to ``units``."""
    from acmemodel.models.arrival_glm import hour_bins

    _, lo, hi, _ = hour_bins(cut, t1, off)
    lo, hi = np.asarray(lo, float), np.asarray(hi, float)

    def counts(t, a, b):
        return (np.searchsorted(t, b, side="left") - np.searchsorted(t, a, side="left")).astype(float)
    o = counts(o_t, lo, hi)
    week = 7 * DAY
    back = np.ceil((hi - cut) / week) * week      # whole weeks back into the training period
    naive = counts(tr_t, lo - back, hi - back)
    mu = {"compound_nhpp": np.asarray(lam, float), "training_mean_rate": np.asarray(flat, float),
          "seasonal_naive": naive}
    if mu_fc is not None:
        mu["nhpp_forecast"] = np.asarray(mu_fc, float)
    day = ((lo - cut) // DAY).astype(np.int64)
    o_day = np.bincount(day, weights=o)
    for name, m in mu.items():
        units.setdefault((name, "hourly_abs_err"), []).append(np.abs(o - m))
        units.setdefault((name, "daily_abs_err"), []).append(np.abs(o_day - np.bincount(day, weights=m,
                                                                                         minlength=len(o_day))))
        if name != "seasonal_naive":
            units.setdefault((name, "hourly_logscore"), []).append(stats.poisson.logpmf(o, np.maximum(m, 1e-12)))


def arrival_card(units: dict, hits: dict, level: float = 0.9) -> dict[str, list]:
    """The arrival card (module docstring) from per-unit values ``{(model, metric): array}`` and the
    forecast intervals' per-day hits ``{(model, series): array}``."""
    from acmemodel.evaluation.card import comparison, coverage_verdict

    comps = []
    for title, model, pairs in CARD:
        for metric, base, higher in pairs:
            a, b = units.get((model, metric)), units.get((base, metric))
            if a is None or b is None or len(a) != len(b) or not len(a):
                continue
            comps.append(comparison(title, model, base, metric, a, b, higher))
    half = min(0.05, (1 - level) / 2)
    intervals = [{"model": m, "interval": f"{level:.0%} {series}",
                  **coverage_verdict(h, nominal=level, band=(level - half, level + half))}
                 for (m, series), h in hits.items() if len(h)]
    return {"comparisons": comps, "intervals": intervals}


def render_arrival_card(card: dict[str, list], split: dict | None = None):
    """The arrival card as rich tables (:func:`~acmemodel.evaluation.card.render_card`)."""
    from acmemodel.evaluation.card import render_card

    intro = "Model card"
    if split:
        n_tr = sum(s["train_jobs"] for s in split.values())
        n_te = sum(s["test_jobs"] for s in split.values())
        since = ", ".join(f"{c} from {str(v['cutoff_utc'])[:10]}" for c, v in split.items())
        intro = f"Model card: trained on {n_tr:,} jobs, tested on the {n_te:,} of the held-out days ({since})."
    return render_card(card, intro, SHORT, SHORT)


def _profile_bins(t0, t1, off):
    from acmemodel.models.arrival_glm import hour_bins as _hour_bins

    return _hour_bins(t0, t1, off)[0]


def _bin_fraction(t0, t1, off):
    from acmemodel.models.arrival_glm import hour_bins as _hour_bins

    _, lo, hi, _ = _hour_bins(t0, t1, off)
    return (hi - lo) / 3600.0


def _forecast_rows(jc: pd.DataFrame, cl: str, tzs, cut: float, level: float, units: dict | None = None,
                   hits: dict | None = None) -> list[dict]:
    from acmemodel.models.forecast import METRICS, daily_series, forecast_series

    if not {"start_s", "end_s"} <= set(jc.columns):
        return []
    series = daily_series(jc, {cl: tzs.get(cl, "+00:00")})
    cut_date = pd.Timestamp((cut + utc_offset_seconds(tzs.get(cl, "+00:00"))) * 1e9)
    rows = []
    for ty, g in series.groupby("type", sort=True):
        tr, te = g[g["date"] < cut_date], g[g["date"] >= cut_date]
        if len(te) == 0 or len(tr) < 7:
            continue
        for met in METRICS:
            y = te[met].to_numpy()
            for method in ("ets", "seasonal_naive") + (("auto",) if ty == "ALL" else ()):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    fc = forecast_series(tr[met].to_numpy(), len(te), method=method, level=level)
                pos = y > 0
                f = fc["forecast"].to_numpy()
                mape = float(np.mean(np.abs(f[pos] - y[pos]) / y[pos])) if pos.any() else float("nan")
                cov = float(np.mean((y >= fc["lower"].to_numpy()) & (y <= fc["upper"].to_numpy())))
                wape = float(np.sum(np.abs(f - y)) / np.sum(y)) if np.sum(y) > 0 else float("nan")
                if ty == "ALL" and units is not None:   # the card: the cluster total, per held-out day
                    units.setdefault((method, f"daily_abs_err_{met}"), []).append(np.abs(f - y))
                    hits.setdefault((method, f"daily {met}"), []).append(
                        ((y >= fc["lower"].to_numpy()) & (y <= fc["upper"].to_numpy())).astype(float))
                cell = f"{cl}/{ty}/{met}"
                rows.append({"model": method, "metric": "mape", "cell": cell, "value": mape})
                rows.append({"model": method, "metric": "wape", "cell": cell, "value": wape})
                rows.append({"model": method, "metric": "coverage", "cell": cell, "value": cov})
    return rows
