"""Fleet reliability from a node failure log: failure rates, the time-between-failures and repair laws.

Input: the uptime intervals of :mod:`acmemodel.trace.importers.failures` (one row per interval of a
node: ``system, node, kind, duration_s, event, category, repair_s``; ``kind`` ∈ ``tbf`` (repair end →
next failure), ``first`` (observation start → first failure, left-truncated: origin not a repair),
``censored`` (last repair → decommission or log end), ``no_failure`` (a node never seen failing)).

What :meth:`FleetReliability.fit` estimates
------------------------------------------
* **Failure rate** per node-day, overall, per category, per system and per system × category:
  ``r = k / E`` with ``k`` failures (rows with ``event`` = 1) and ``E`` the calendar exposure in
  node-days (the sum of ``duration_s + repair_s`` over the scope's rows: every node's whole
  observation window, down time included). Reported per 1,000 node-days with the exact Poisson
  (Garwood) interval ``[χ²(α/2; 2k)/2, χ²(1−α/2; 2k+2)/2] / E``.
* **Time-between-failures law** of a node (uptime from a repair end to the next failure): maximum
  likelihood on the ``tbf`` (event) and ``censored`` (right-censored) rows — the ``first`` rows are
  left out because their origin is not a renewal — for a Weibull ``S(t) = exp(−(t/λ)^k)``, an
  exponential and a log-normal (censored likelihoods; the Weibull shape's interval is the Wald
  interval from the observed information; checked against lifelines' fitters in the tests). Families are compared by log-likelihood and AIC
  (lower is better). ``k < 1`` = decreasing hazard (a node that was just repaired fails again
  sooner). Pooling nodes of different rates into one fit also lowers ``k`` (a mixture of exponentials
  has a decreasing hazard), so the shape is also fitted per system (``tbf_by_system_``) and per node
  for the nodes with at least ``min_events`` failures (``tbf_nodes_``: their median and quartiles).
* **Repair-time law** (the down time ``repair_s`` of each failure, > 0): log-normal, Weibull and
  exponential by maximum likelihood (scipy, location 0), chosen by AIC.
* **MTTF(g) of a job spanning g nodes**: ``MTTF(g) = 1 / (g · r)``, ``r`` the overall failure rate per
  node-second. Approximation: the nodes are independent renewal processes (Weibull uptimes, then a
  repair) and the job fails at the first failure of any of its nodes; the superposition of ``g``
  stationary renewal processes has the rate ``g / μ`` (``μ`` the mean cycle, ``1/r``) whatever their
  law, so ``MTTF(g) = μ / g`` is the stationary mean time between the job's failures (exact for an
  exponential law, the long-run mean for a Weibull one); by Drenick's theorem the superposition tends
  to a Poisson process as ``g`` grows, so a job of many nodes sees nearly exponential failures even
  when a node's own law has ``k < 1``.

Times are seconds inside; rates are per node-day (and per 1,000 node-days in the tables).
"""
from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from acmemodel.errors import AcmeModelError
from acmemodel.models.base import BaseModel, register

DAY = 86400.0
NEED = ("system", "node", "kind", "duration_s", "event", "category", "repair_s")
#: families of the two laws
TBF_FAMILIES = ("weibull", "exponential", "lognormal")
REPAIR_FAMILIES = ("lognormal", "weibull", "exponential")


def garwood(k: int, exposure: float, confidence: float = 0.95) -> tuple[float, float, float]:
    """Rate ``k / exposure`` and its exact Poisson (Garwood) interval, in the unit of ``1/exposure``."""
    a = 1.0 - confidence
    lo = 0.0 if k == 0 else stats.chi2.ppf(a / 2, 2 * k) / 2
    hi = stats.chi2.ppf(1 - a / 2, 2 * k + 2) / 2
    return k / exposure, lo / exposure, hi / exposure


def _weibull_loglik(k: float, lam: float, t: np.ndarray, e: np.ndarray, slog: float) -> float:
    """Right-censored Weibull log-likelihood: Σ_events [log k − k log λ + (k−1) log t] − Σ (t/λ)^k."""
    d = e.sum()
    return d * (math.log(k) - k * math.log(lam)) + (k - 1) * slog - float(np.sum((t / lam) ** k))


def _weibull_mle(t: np.ndarray, e: np.ndarray, confidence: float) -> dict:
    """Censored Weibull MLE: the profile score in ``k`` solved by bracketing
    (``1/k + Σ_ev log t / d − Σ t^k log t / Σ t^k = 0``, ``λ^k = Σ t^k / d``); the shape's interval is
    the Wald interval ``k ± z·se`` with ``se`` from the observed information (numerical Hessian of the
    log-likelihood in ``(log k, log λ)``)."""
    from scipy.optimize import brentq

    d = float(e.sum())
    x = t / np.exp(np.mean(np.log(t)))            # rescaled: well-conditioned powers
    lx = np.log(x)
    mean_ev = float(lx[e == 1].sum()) / d

    def score(k):
        w = x ** k
        return 1.0 / k + mean_ev - float(np.sum(w * lx) / np.sum(w))

    lo, hi = 0.01, 1.0
    while score(hi) > 0 and hi < 100:
        hi *= 2.0
    k = brentq(score, lo, hi, xtol=1e-10)
    lam_x = float((np.sum(x ** k) / d) ** (1.0 / k))
    slog = float(lx[e == 1].sum())

    def ll(th):
        return _weibull_loglik(math.exp(th[0]), math.exp(th[1]), x, e, slog)

    th0, h = np.array([math.log(k), math.log(lam_x)]), 1e-4
    H = np.empty((2, 2))
    for i in range(2):
        for j in range(2):
            ei, ej = np.eye(2)[i] * h, np.eye(2)[j] * h
            H[i, j] = (ll(th0 + ei + ej) - ll(th0 + ei - ej) - ll(th0 - ei + ej) + ll(th0 - ei - ej)) / (4 * h * h)
    cov = np.linalg.inv(-H)
    se = k * math.sqrt(max(cov[0, 0], 0.0))
    z = float(stats.norm.ppf(0.5 + confidence / 2))
    scale = lam_x * float(np.exp(np.mean(np.log(t))))
    return {"shape": float(k), "shape_se": se, "shape_lower": float(k - z * se), "shape_upper": float(k + z * se),
            "scale_s": scale, "mean_s": scale * math.gamma(1 + 1 / k),
            "loglik": float(_weibull_loglik(k, scale, t, e, float(np.log(t)[e == 1].sum())))}


def _lognormal_mle(t: np.ndarray, e: np.ndarray) -> dict:
    """Censored log-normal MLE of ``log t ~ Normal(μ, σ²)`` (L-BFGS on ``(μ, log σ)``)."""
    from scipy.optimize import minimize

    lt, ev = np.log(t), e == 1
    slt = float(lt[ev].sum())

    def nll(th):
        mu, sg = th[0], math.exp(th[1])
        z = (lt - mu) / sg
        return -(float(np.sum(stats.norm.logpdf(z[ev]))) - ev.sum() * th[1] - slt
                 + float(np.sum(stats.norm.logsf(z[~ev]))))

    th0 = np.array([lt[ev].mean(), math.log(max(lt[ev].std(), 1e-3))])
    r = minimize(nll, th0, method="L-BFGS-B")
    return {"mu_log_s": float(r.x[0]), "sigma": float(math.exp(r.x[1])), "loglik": -float(r.fun)}


def _fit_tbf(t: np.ndarray, e: np.ndarray, confidence: float, families=TBF_FAMILIES) -> dict:
    """Weibull / exponential / log-normal MLE of right-censored uptimes ``t`` (s), events ``e``
    (``families``: which of them); log-likelihoods in seconds, AIC = 2·params − 2·loglik."""
    t, e = np.asarray(t, float), np.asarray(e, int)
    d = float(e.sum())
    out: dict[str, Any] = {"n": int(len(t)), "events": int(d), "censored": int(len(t) - d)}
    fams: dict[str, dict] = {"weibull": _weibull_mle(t, e, confidence)}
    if "exponential" in families:
        m = float(t.sum()) / d
        fams["exponential"] = {"mean_s": m, "loglik": -d * math.log(m) - float(t.sum()) / m}
    if "lognormal" in families:
        fams["lognormal"] = _lognormal_mle(t, e)
    k = {"weibull": 2, "exponential": 1, "lognormal": 2}
    for f, v in fams.items():
        v["aic"] = 2 * k[f] - 2 * v["loglik"]
    out["families"] = fams
    out["best"] = min(fams, key=lambda f: fams[f]["aic"])
    return out


def _fit_repair(r: np.ndarray) -> dict:
    """Log-normal / Weibull / exponential MLE (location 0) of repair times ``r`` (s, > 0)."""
    fams = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        s, _, sc = stats.lognorm.fit(r, floc=0)
        fams["lognormal"] = {"mu_log_s": float(math.log(sc)), "sigma": float(s),
                             "loglik": float(stats.lognorm.logpdf(r, s, 0, sc).sum())}
        c, _, sc = stats.weibull_min.fit(r, floc=0)
        fams["weibull"] = {"shape": float(c), "scale_s": float(sc),
                           "loglik": float(stats.weibull_min.logpdf(r, c, 0, sc).sum())}
        m = float(r.mean())
        fams["exponential"] = {"mean_s": m, "loglik": float(stats.expon.logpdf(r, 0, m).sum())}
    k = {"weibull": 2, "exponential": 1, "lognormal": 2}
    for f, d in fams.items():
        d["aic"] = 2 * k[f] - 2 * d["loglik"]
    best = min(fams, key=lambda f: fams[f]["aic"])
    return {"n": int(len(r)), "mean_s": float(r.mean()), "median_s": float(np.median(r)), "families": fams,
            "best": best}


@register
class FleetReliability(BaseModel):
    """Failure rates, time-between-failures law and repair-time law of a fleet (module docstring).

    Parameters
    ----------
    confidence : level of every interval (default 0.95).
    min_events : fewest ``tbf`` failures for a system's or a node's own Weibull fit.

    Fitted attributes
    -----------------
    rates_ : DataFrame — ``scope`` (fleet/system), ``system``, ``category`` (``all`` or a category),
        ``failures``, ``node_days``, ``per_1000_node_days`` with ``lower``/``upper``.
    rate_per_node_day_ : overall failures per node-day.
    tbf_ : dict — the node time-between-failures fits (``families`` → parameters, log-lik, AIC;
        ``best``); the Weibull shape ``tbf_["families"]["weibull"]["shape"]`` with ``shape_lower/upper``.
    tbf_by_system_ : DataFrame — per system: nodes, failures, Weibull shape and interval.
    tbf_nodes_ : dict — per-node Weibull shapes of the nodes with ``min_events`` failures or more:
        ``nodes``, ``median``, ``q25``, ``q75``, ``share_upper_below_1`` (share whose interval lies below 1).
    repair_ : dict — the repair-time fits (``families``, ``best``, ``mean_s``, ``median_s``).
    category_mix_ : dict — category → share of the failures.
    gpus_per_node_ : GPUs per node from the log (``None`` when it does not say).
    n_fit_ : number of interval rows fitted.
    """

    def __init__(self, confidence: float = 0.95, min_events: int = 30):
        self.confidence = confidence
        self.min_events = min_events

    # ------------------------------------------------------------------ fit
    def fit(self, intervals: pd.DataFrame) -> "FleetReliability":
        """Fit on an intervals table (:func:`acmemodel.trace.importers.failures.read_failures`)."""
        if not 0 < float(self.confidence) < 1:
            raise ValueError(f"confidence must be in (0, 1), got {self.confidence!r}")
        miss = [c for c in NEED if c not in intervals.columns]
        if miss:
            raise AcmeModelError(f"intervals: no column {', '.join(miss)}")
        iv = intervals.copy()
        iv["system"] = iv["system"].astype(str)
        iv["category"] = iv["category"].fillna("").astype(str)
        iv["event"] = iv["event"].astype(int)
        iv["repair_s"] = iv["repair_s"].fillna(0.0).astype(float)
        iv["exposure_s"] = iv["duration_s"].astype(float) + iv["repair_s"]
        if not iv["event"].any():
            raise AcmeModelError("intervals: no failure to fit")
        self.rates_ = self._rates(iv)
        fleet = self.rates_[(self.rates_["scope"] == "fleet") & (self.rates_["category"] == "all")].iloc[0]
        self.rate_per_node_day_ = float(fleet["failures"] / fleet["node_days"])
        ev = iv[iv["event"] == 1]
        mix = ev["category"].value_counts(normalize=True)
        self.category_mix_ = {str(k): float(v) for k, v in mix.items()}
        tb = iv[iv["kind"].isin(["tbf", "censored"]) & (iv["duration_s"] > 0)]
        if int(tb["event"].sum()) < 2:
            raise AcmeModelError("intervals: fewer than 2 repair-to-failure uptimes: no time-between-failures law")
        self.tbf_ = _fit_tbf(tb["duration_s"].to_numpy(float), tb["event"].to_numpy(int), float(self.confidence))
        rows = []
        for s, g in tb.groupby("system", sort=False):
            k = int(g["event"].sum())
            if k < int(self.min_events):
                continue
            try:
                w = _weibull_mle(g["duration_s"].to_numpy(float), g["event"].to_numpy(int), float(self.confidence))
            except (ValueError, ArithmeticError, np.linalg.LinAlgError):  # degenerate sample: no own fit
                continue
            rows.append({"system": s, "nodes": int(g["node"].nunique()), "failures": k,
                         "shape": w["shape"], "shape_lower": w["shape_lower"], "shape_upper": w["shape_upper"]})
        self.tbf_by_system_ = pd.DataFrame(rows, columns=["system", "nodes", "failures", "shape", "shape_lower",
                                                          "shape_upper"])
        shapes, below = [], []
        for _, g in tb.groupby(["system", "node"], sort=False):
            if int(g["event"].sum()) >= int(self.min_events):
                try:
                    w = _weibull_mle(g["duration_s"].to_numpy(float), g["event"].to_numpy(int),
                                     float(self.confidence))
                except (ValueError, ArithmeticError, np.linalg.LinAlgError):
                    continue
                shapes.append(w["shape"])
                below.append(w["shape_upper"] < 1.0)
        q = np.quantile(shapes, [0.25, 0.5, 0.75]) if shapes else [np.nan] * 3
        self.tbf_nodes_ = {"nodes": len(shapes), "min_events": int(self.min_events), "q25": float(q[0]),
                           "median": float(q[1]), "q75": float(q[2]),
                           "share_upper_below_1": float(np.mean(below)) if below else None}
        r = ev["repair_s"].to_numpy(float)
        r = r[r > 0]
        if len(r) < 2:
            raise AcmeModelError("intervals: fewer than 2 positive repair times: no repair-time law")
        self.repair_ = _fit_repair(r)
        self.repair_["zero"] = int((ev["repair_s"] <= 0).sum())
        gpn = pd.to_numeric(iv.get("gpus_per_node"), errors="coerce") if "gpus_per_node" in iv else None
        self.gpus_per_node_ = None if gpn is None or gpn.notna().sum() == 0 else int(round(gpn.median()))
        self.n_fit_ = int(len(iv))
        return self

    def _rates(self, iv: pd.DataFrame) -> pd.DataFrame:
        cats = sorted(c for c in iv.loc[iv["event"] == 1, "category"].unique())
        rows = []

        def add(scope, system, g, exposure_s):
            nd = exposure_s / DAY
            k = int(g["event"].sum())
            rate, lo, hi = garwood(k, nd / 1000.0, float(self.confidence))
            rows.append({"scope": scope, "system": system, "category": "all", "nodes": int(g["node"].nunique()),
                         "failures": k, "node_days": nd, "per_1000_node_days": rate, "lower": lo, "upper": hi})
            ev = g[g["event"] == 1]
            for c in cats:
                kc = int((ev["category"] == c).sum())
                rate, lo, hi = garwood(kc, nd / 1000.0, float(self.confidence))
                rows.append({"scope": scope, "system": system, "category": c, "nodes": int(g["node"].nunique()),
                             "failures": kc, "node_days": nd, "per_1000_node_days": rate, "lower": lo, "upper": hi})

        add("fleet", "all", iv, float(iv["exposure_s"].sum()))
        for s, g in iv.groupby("system", sort=True):
            add("system", s, g, float(g["exposure_s"].sum()))
        return pd.DataFrame(rows)

    # ------------------------------------------------------------------ queries
    @property
    def weibull_shape_(self) -> float:
        """Weibull shape of a node's time between failures (pooled fit)."""
        self._check_fitted()
        return float(self.tbf_["families"]["weibull"]["shape"])

    def mttf(self, nodes: float) -> float:
        """MTTF (s) of a job spanning ``nodes`` nodes: ``1 / (nodes · r)`` (stationary superposition,
        see the module docstring)."""
        self._check_fitted()
        nodes = float(nodes)
        if not nodes > 0:
            raise ValueError(f"nodes must be positive, got {nodes!r}")
        return DAY / (nodes * self.rate_per_node_day_)

    def repair_distribution(self):
        """The chosen repair law as a frozen scipy distribution (seconds)."""
        self._check_fitted()
        f = self.repair_["families"][self.repair_["best"]]
        if self.repair_["best"] == "lognormal":
            return stats.lognorm(f["sigma"], 0, math.exp(f["mu_log_s"]))
        if self.repair_["best"] == "weibull":
            return stats.weibull_min(f["shape"], 0, f["scale_s"])
        return stats.expon(0, f["mean_s"])

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` node uptimes (s) drawn from the fitted Weibull time-between-failures law."""
        self._check_fitted()
        w = self.tbf_["families"]["weibull"]
        return w["scale_s"] * rng.weibull(w["shape"], size=int(n))

    def summary(self) -> pd.DataFrame:
        """One table: fleet failure rates (overall and by category), the time-between-failures and
        repair-time fits per family (log-lik, AIC, chosen), MTTF at a few node counts."""
        self._check_fitted()
        rows = []
        for r in self.rates_[self.rates_["scope"] == "fleet"].itertuples():
            rows.append({"quantity": "failures per 1,000 node-days", "scope": "fleet", "category": r.category,
                         "estimate": r.per_1000_node_days, "lower": r.lower, "upper": r.upper,
                         "n": r.failures, "note": f"{r.node_days:,.0f} node-days"})
        best = self.tbf_["best"]
        for f, d in self.tbf_["families"].items():
            est, lo, hi = (d["shape"], d["shape_lower"], d["shape_upper"]) if f == "weibull" else (np.nan,) * 3
            rows.append({"quantity": f"TBF {f}" + (" shape" if f == "weibull" else ""), "scope": "fleet",
                         "category": "all", "estimate": est, "lower": lo, "upper": hi, "n": self.tbf_["events"],
                         "note": f"loglik {d['loglik']:.1f}, AIC {d['aic']:.1f}" + (" (chosen)" if f == best else "")})
        tn = self.tbf_nodes_
        if tn["nodes"]:
            rows.append({"quantity": "TBF weibull shape, per node (median)", "scope": "node", "category": "all",
                         "estimate": tn["median"], "lower": tn["q25"], "upper": tn["q75"], "n": tn["nodes"],
                         "note": f"interquartile range of {tn['nodes']} nodes with >= {tn['min_events']} failures"})
        best = self.repair_["best"]
        for f, d in self.repair_["families"].items():
            rows.append({"quantity": f"repair {f}", "scope": "fleet", "category": "all", "estimate": np.nan,
                         "lower": np.nan, "upper": np.nan, "n": self.repair_["n"],
                         "note": f"loglik {d['loglik']:.1f}, AIC {d['aic']:.1f}" + (" (chosen)" if f == best else "")})
        for g in (1, 16, 128, 1024):
            rows.append({"quantity": f"MTTF({g} nodes) h", "scope": "fleet", "category": "all",
                         "estimate": self.mttf(g) / 3600.0, "lower": np.nan, "upper": np.nan, "n": np.nan,
                         "note": "1 / (g r)"})
        return pd.DataFrame(rows)

    # ------------------------------------------------------------------ serialisation
    def _fitted_to_dict(self) -> dict[str, Any]:
        return {"rates": self.rates_.to_dict(orient="list"), "rate_per_node_day": self.rate_per_node_day_,
                "tbf": self.tbf_, "tbf_by_system": self.tbf_by_system_.to_dict(orient="list"),
                "tbf_nodes": self.tbf_nodes_,
                "repair": self.repair_, "category_mix": self.category_mix_, "gpus_per_node": self.gpus_per_node_,
                "n_fit": self.n_fit_}

    def _fitted_from_dict(self, d: dict[str, Any], artifacts: dict[str, str]) -> None:
        self.rates_ = pd.DataFrame(d["rates"])
        self.rate_per_node_day_ = float(d["rate_per_node_day"])
        self.tbf_ = d["tbf"]
        self.tbf_by_system_ = pd.DataFrame(d["tbf_by_system"])
        self.tbf_nodes_ = {k: (np.nan if v is None and k != "share_upper_below_1" else v)
                           for k, v in d["tbf_nodes"].items()}
        self.repair_ = d["repair"]
        self.category_mix_ = d["category_mix"]
        self.gpus_per_node_ = d.get("gpus_per_node")
        self.n_fit_ = int(d["n_fit"])
