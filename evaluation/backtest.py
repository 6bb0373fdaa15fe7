"""Run-time backtest on a time-ordered holdout: category-conditioned models vs. baselines.

:func:`runtime_backtest` splits the jobs by submission time (:func:`~acmemodel.evaluation.split.
time_split`; never random), fits on the earlier part and scores the later part:

Distribution models (every started GPU test job, its run time ``x``):

* ``runtime_model`` — :class:`~acmemodel.models.runtime.RuntimeModel`, cell = cluster × type × GPU
  bucket × final state (the state is known only afterwards: this scores the model as a simulator
  conditional on the state, the way ``sample_jobs`` uses it);
* ``runtime_model_nostate`` — the same model queried without the state (submission-time cell);
* ``global`` — one distribution for all GPU jobs (``RuntimeModel(keys=())``): the paper's "a job".

  Metrics: ``loglik`` (mean held-out log-likelihood per job, nats, higher is better; the zero-run atom
  counts as a probability), ``ks`` (KS distance of the probability-integral transforms
  ``u = F(x)`` from uniform — randomised inside the atom; within one cell this is the KS distance
  between the test sample and the model), ``crps_log`` (CRPS of ``ln(1 + x)``, in log-seconds, from the
  cell law's CDF on a grid of 2 000 points of ``ln(1 + x)``: no sampling noise).

Quantile models (same jobs, ``y = ln(1 + x)``):

* ``predictor`` — :class:`~acmemodel.models.predictor.RuntimePredictor` (LightGBM p10/p50/p90,
  outer interval conformally calibrated on the latest training jobs);
* ``runtime_model_nostate`` — the p10/p50/p90 of the submission-time cell (per-cell median baseline);
* ``global`` — the global model's p10/p50/p90 (global-median baseline);
* ``user_median`` — the user's own median run time of earlier ended jobs of the same cluster and
  type (``user_prior_median_run_s``; Helios/QSSF-style), the global median when the user has none
  (a point predictor: only ``pinball_p50`` and ``mae_log``; ``fallback_share`` says how often).

  Metrics: ``pinball_p10``, ``pinball_p50``, ``pinball_p90`` (log-seconds), ``coverage`` (share of
  test jobs inside [p10, p90]; 0.8 is calibrated), ``width_log`` (mean p90 − p10), ``mae_log``
  (``|y − p50|``).

Queueing (``include_queue=True``; GPU test jobs with a wait, cancelled-in-queue ones censored):
``queue_model`` (:class:`~acmemodel.models.queue.QueueModel`) vs ``queue_global``: ``loglik``
(censored waits contribute ``log S``) and ``atom_error`` (|mean predicted P(wait <= 1 s) − observed
share|).

Rows are scored per report cell ``cluster/type`` (cells with at least ``min_cell_jobs`` test jobs)
and pooled (cell ``"all"``): a tidy DataFrame ``{model, metric, cell, value, n}``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from acmemodel.evaluation import metrics as M
from acmemodel.evaluation.card import comparison, coverage_verdict, json_safe, render_card
from acmemodel.evaluation.split import time_split

__all__ = ["BacktestResult", "runtime_backtest", "render_table", "model_card", "render_runtime_card"]

QUANTILES = (0.1, 0.5, 0.9)
#: metrics where larger is better (all others: smaller is better, coverage: closest to 0.8)
HIGHER_IS_BETTER = {"loglik"}


@dataclass
class BacktestResult:
    """Tidy results (``model, metric, cell, value, n``) plus split information."""

    results: pd.DataFrame
    info: dict[str, Any] = field(default_factory=dict)
    #: the model card (:func:`model_card`): paired comparisons and interval coverages
    card: dict[str, list] = field(default_factory=dict)

    def pooled(self) -> pd.DataFrame:
        """Model × metric table of the pooled (``cell == "all"``) scores."""
        r = self.results[self.results.cell == "all"]
        return r.pivot_table(index="model", columns="metric", values="value", sort=False)

    def to_json(self) -> dict[str, Any]:
        rows = [{"model": r.model, "metric": r.metric, "cell": r.cell,
                 "value": None if not np.isfinite(r.value) else float(r.value), "n": int(r.n)}
                for r in self.results.itertuples(index=False)]
        return {"card": json_safe(self.card), "results": rows, "info": json_safe(self.info)}

    def table(self, cell: str = "all"):
        """Rich tables of one cell's scores (see :func:`render_table`)."""
        return render_table(self.results, cell=cell, info=self.info)


GROUPS = (
    ("run-time distribution", ("loglik", "ks", "crps_log")),
    ("run-time quantiles (log-seconds)", ("pinball_p10", "pinball_p50", "pinball_p90", "coverage",
                                          "width_log", "mae_log", "fallback_share")),
    ("queueing delay", ("loglik", "atom_error")),
)


#: column headers of the rendered tables (JSON keeps the full metric names)
SHORT = {"pinball_p10": "pin10", "pinball_p50": "pin50", "pinball_p90": "pin90", "coverage": "cover",
         "width_log": "width", "fallback_share": "fallbk", "atom_error": "atom err", "mae_log": "mae",
         "crps_log": "crps"}


def render_table(results: pd.DataFrame, cell: str = "all", info: dict | None = None):
    """Render the scores of ``cell`` as rich tables (a ``rich.console.Group``): one per metric group
    (distribution, quantiles, queueing), models as rows, the best value per metric in bold."""
    from rich import box
    from rich.console import Group
    from rich.table import Table

    r = results[results.cell == cell]
    head = f"cell {cell}"
    if info:
        n_tr, n_te = info.get("n_train", "?"), info.get("n_test", "?")
        head += (f" (train {n_tr:,} / test {n_te:,} GPU jobs)" if isinstance(n_tr, (int, np.integer))
                 and isinstance(n_te, (int, np.integer)) else f" (train {n_tr} / test {n_te} GPU jobs)")
    tables = []
    for title, metrics in GROUPS:
        queue = title.startswith("queue")
        sub = r[r.metric.isin(metrics) & (r.model.str.startswith("queue") == queue)]
        if sub.empty:
            continue
        mets = [m for m in metrics if m in set(sub.metric)]
        # a light box and collapsed padding: eight columns fit an 80-column terminal
        t = Table(title=f"{title}: {head}", title_justify="left", box=box.SIMPLE_HEAD, padding=(0, 1),
                  collapse_padding=True, pad_edge=False)
        t.add_column("model", overflow="fold")
        for m in mets:
            arrow = "↑" if m in HIGHER_IS_BETTER else ("" if m == "coverage" else
                                                       ("" if m in ("width_log", "fallback_share") else "↓"))
            t.add_column(f"{SHORT.get(m, m)} {arrow}".strip(), justify="right", overflow="fold")
        best = {}
        for m in mets:
            v = sub[sub.metric == m].set_index("model").value
            v = v[np.isfinite(v)]
            if m in ("fallback_share", "width_log") or v.empty:
                continue
            best[m] = (v.idxmax() if m in HIGHER_IS_BETTER else
                       (v - 0.8).abs().idxmin() if m == "coverage" else v.idxmin())
        for mod in dict.fromkeys(sub.model):
            row = []
            for m in mets:
                v = sub[(sub.model == mod) & (sub.metric == m)].value
                if v.empty or not np.isfinite(v.iloc[0]):
                    row.append("—")
                else:
                    txt = f"{v.iloc[0]:.3f}"
                    row.append(f"[bold]{txt}[/bold]" if best.get(m) == mod else txt)
            t.add_row(mod, *row)
        tables.append(t)
    return Group(*tables)


# ============================================================================ helpers
def _report_cells(jobs: pd.DataFrame) -> np.ndarray:
    return (jobs["cluster"].astype(str) + "/" + jobs["type"].astype(str)).to_numpy()


def _rows(model: str, metric: str, values: dict[str, tuple[float, int]]) -> list[dict]:
    return [{"model": model, "metric": metric, "cell": c, "value": float(v), "n": int(n)}
            for c, (v, n) in values.items()]


def _by_cell(fn, cells: np.ndarray, min_n: int, *arrays) -> dict[str, tuple[float, int]]:
    """``fn(*arrays)`` pooled (cell "all") and per report cell with >= min_n jobs."""
    out = {"all": (fn(*arrays), len(cells))}
    for c in sorted(set(cells)):
        m = cells == c
        if m.sum() >= min_n:
            out[c] = (fn(*(a[m] for a in arrays)), int(m.sum()))
    return out


def _score_distribution(model, keys: pd.DataFrame, x: np.ndarray, rng: np.random.Generator,
                        draws: int, censored: np.ndarray | None = None):
    """Per-job loglik, randomised PIT and log-scale CRPS of ``x`` under ``model``'s resolved cells."""
    n = len(x)
    ll = np.empty(n)
    pit = np.empty(n)
    crps = np.empty(n)
    res = model.cells_.resolve_frame(keys)
    codes = pd.factorize(res["cell"])[0] if n else np.zeros(0, int)
    cells = res["cell"].to_numpy()
    for k in range(codes.max() + 1 if n else 0):
        pos = np.flatnonzero(codes == k)
        v = model.cells_.entries_[cells[pos[0]]].value
        xs = x[pos]
        cs = None if censored is None else censored[pos]
        ll[pos] = v.loglik(xs, cs)
        F = v.cdf(xs)
        atom = xs <= v.threshold
        u = np.where(atom, rng.random(len(xs)) * v.p_atom, F)
        pit[pos] = u
        if censored is None:
            # the law's CDF on a grid of log-seconds z = ln(1 + x) (deterministic: no Monte Carlo noise,
            # so that two models with the same law tie exactly), from 0 (the atom) past the law's
            # 99.99 % point and the largest test value
            zs = np.log1p(xs)
            top = max(float(zs.max()), float(np.log1p(np.nan_to_num(float(v.quantile(0.9999)), posinf=1e12))))
            grid = np.linspace(0.0, top + 1.0, max(int(draws), 200))
            crps[pos] = M.crps_grid(np.asarray(v.cdf(np.expm1(grid)), float), grid, zs)
        else:
            crps[pos] = np.nan
    return ll, pit, crps


def _cell_quantiles(model, keys: pd.DataFrame, qs=QUANTILES) -> np.ndarray:
    res = model.cells_.resolve_frame(keys)
    out = np.empty((len(keys), len(qs)))
    cells = res["cell"].to_numpy()
    codes = pd.factorize(res["cell"])[0] if len(keys) else np.zeros(0, int)
    for k in range(codes.max() + 1 if len(keys) else 0):
        pos = np.flatnonzero(codes == k)
        v = model.cells_.entries_[cells[pos[0]]].value
        out[pos] = v.quantile(np.asarray(qs))
    return out


# ============================================================================ the backtest
def runtime_backtest(trace_or_jobs, *, test_fraction: float | None = None, cutoff=None,
                     timezones: dict[str, str] | None = None, min_cell_jobs: int = 30,
                     runtime_params: dict | None = None, predictor_params: dict | None = None,
                     include_queue: bool = True, crps_draws: int = 2000, seed: int = 0) -> BacktestResult:
    """Fit on the first part of the trace, score on the last (see module docstring).

    ``test_fraction`` (default 1/6) or ``cutoff`` choose the split; ``runtime_params`` and
    ``predictor_params`` are passed to the model constructors. Returns a :class:`BacktestResult`.
    """
    from acmemodel.models.predictor import RuntimePredictor, submission_features
    from acmemodel.models.predictor_conformal import ipcw_weights
    from acmemodel.models.queue import QueueModel
    from acmemodel.models.runtime import RuntimeModel

    if int(min_cell_jobs) != min_cell_jobs or min_cell_jobs < 1:
        raise ValueError(f"min_cell_jobs must be a positive integer, got {min_cell_jobs!r}")
    if hasattr(trace_or_jobs, "jobs") and hasattr(trace_or_jobs, "timezones"):
        from acmemodel.features.names import jobs_with_extras

        jobs = jobs_with_extras(trace_or_jobs)  # (job names, partitions... of imported traces)
        timezones = {**trace_or_jobs.timezones, **(timezones or {})}
    elif isinstance(trace_or_jobs, pd.DataFrame):
        jobs = trace_or_jobs
    else:
        raise ValueError(f"expected a Trace or a jobs DataFrame, got {type(trace_or_jobs).__name__}")
    rng = np.random.default_rng(seed)
    # features on the whole trace first: user history of a test job includes the training period
    feats = submission_features(jobs, timezones)
    train, test = time_split(feats, test_fraction=test_fraction, cutoff=cutoff)
    rp = dict(runtime_params or {})
    rm = RuntimeModel(**rp).fit(train)
    rg = RuntimeModel(**{**rp, "keys": ()}).fit(train)
    try:
        pred = RuntimePredictor(**(predictor_params or {})).fit(train, timezones=timezones)
        pred_error = None
    except ValueError as e:  # e.g. no ended GPU job in the training period: the card says so
        pred, pred_error = None, str(e)

    gpu_run = test["started"].fillna(False).astype(bool) & test["run_s"].notna() & (test["gpu_num"] > 0)
    running = np.zeros(len(test), bool)
    if "run_censored" in test.columns:  # still running: no run time to score against
        running = (gpu_run & test["run_censored"].fillna(False).astype(bool)).to_numpy()
        gpu_run &= ~test["run_censored"].fillna(False).astype(bool)
    if "left_truncated" in test.columns:  # begun before the trace: only part of the run time is known
        lt = test["left_truncated"].fillna(False).astype(bool)
        gpu_run &= ~lt
        running &= ~lt.to_numpy()
    t = test.loc[gpu_run]
    if len(t) == 0:
        raise ValueError("runtime_backtest: no started GPU jobs in the test period")
    x = np.maximum(t["run_s"].to_numpy(dtype=float), 0.0)
    cells = _report_cells(t)
    rows: list[dict] = []

    # ---------------------------------------------------------------- distributions
    kf = rm.key_frame(t)
    kf_nostate = kf.drop(columns=["state"], errors="ignore")
    per_job: dict[tuple[str, str], np.ndarray] = {}  # (model, metric) → per-test-job values (the card)
    for name, model, keys in (("runtime_model", rm, kf), ("runtime_model_nostate", rm, kf_nostate),
                              ("global", rg, pd.DataFrame(index=t.index))):
        ll, pit, crps = _score_distribution(model, keys, x, rng, crps_draws)
        per_job[(name, "loglik")], per_job[(name, "crps_log")] = ll, crps
        rows += _rows(name, "loglik", _by_cell(M.heldout_loglik, cells, min_cell_jobs, ll))
        rows += _rows(name, "ks", _by_cell(M.pit_ks, cells, min_cell_jobs, pit))
        rows += _rows(name, "crps_log", _by_cell(lambda v: float(np.mean(v)), cells, min_cell_jobs, crps))

    # ---------------------------------------------------------------- quantiles
    y = np.log1p(x)
    # (the predictor sees the test jobs still running too: its online recalibration counts them once
    # they have run past their bound — they are the long ones; only the ended ones are scored)
    qmodels = {} if pred is None else {"predictor": pred.predict_log(
        test.loc[gpu_run | pd.Series(running, index=test.index)], timezones).loc[t.index].to_numpy()}
    qmodels = {
        **qmodels,
        "runtime_model_nostate": np.log1p(_cell_quantiles(rm, kf_nostate)),
        "global": np.log1p(_cell_quantiles(rg, pd.DataFrame(index=t.index))),
    }
    for name, q in qmodels.items():
        lo, med, hi = q[:, 0], q[:, 1], q[:, 2]
        per_job[(name, "coverage")] = ((y >= lo) & (y <= hi)).astype(float)
        for a, col in zip(QUANTILES, (lo, med, hi)):
            u = y - col
            per_job[(name, f"pinball_p{round(a * 100):02d}")] = np.maximum(a * u, (a - 1) * u)
        for a, col in zip(QUANTILES, (lo, med, hi)):
            rows += _rows(name, f"pinball_p{round(a * 100):02d}",
                          _by_cell(lambda yy, qq, a=a: M.pinball_loss(yy, qq, a), cells, min_cell_jobs,
                                   y, col))
        rows += _rows(name, "coverage", _by_cell(M.interval_coverage, cells, min_cell_jobs, y, lo, hi))
        rows += _rows(name, "width_log", _by_cell(lambda a_, b_: float(np.mean(b_ - a_)), cells,
                                                  min_cell_jobs, lo, hi))
        rows += _rows(name, "mae_log", _by_cell(lambda yy, mm: float(np.mean(np.abs(yy - mm))), cells,
                                                min_cell_jobs, y, med))
    um = t["user_prior_median_run_s"].to_numpy(dtype=float)
    fallback = ~np.isfinite(um)
    gmed = float(rg.median())
    um_log = np.log1p(np.where(fallback, gmed, np.maximum(um, 0.0)))
    rows += _rows("user_median", "pinball_p50",
                  _by_cell(lambda yy, qq: M.pinball_loss(yy, qq, 0.5), cells, min_cell_jobs, y, um_log))
    rows += _rows("user_median", "mae_log", _by_cell(lambda yy, mm: float(np.mean(np.abs(yy - mm))), cells,
                                                     min_cell_jobs, y, um_log))
    # per-job |error| of the point predictions, for the paired comparison of the verdict
    abs_errors = {name: np.abs(y - q[:, 1]) for name, q in qmodels.items()}
    abs_errors["user_median"] = np.abs(y - um_log)
    if "name_prior_median_run_s" in t.columns and np.isfinite(
            pd.to_numeric(t["name_prior_median_run_s"], errors="coerce")).any():
        nm = pd.to_numeric(t["name_prior_median_run_s"], errors="coerce").to_numpy(dtype=float)
        nm_log = np.where(np.isfinite(nm), np.log1p(np.maximum(nm, 0.0)), um_log)
        abs_errors["name_median"] = np.abs(y - nm_log)
        rows += _rows("name_median", "mae_log", _by_cell(lambda yy, mm: float(np.mean(np.abs(yy - mm))), cells,
                                                         min_cell_jobs, y, nm_log))
    for name, e in abs_errors.items():
        per_job[(name, "mae_log")] = e
    rows += _rows("user_median", "fallback_share",
                  _by_cell(lambda f: float(np.mean(f)), cells, min_cell_jobs, fallback.astype(float)))

    info = {"cutoff_utc": pd.Timestamp(float(test["submit_s"].min()), unit="s", tz="UTC").isoformat(),
            "n_train": int(rm.n_fit_), "n_test": int(len(t)), "test_fraction": test_fraction,
            "runtime_cells_fitted": int(len(rm.cells_.entries_)),
            **({"predictor_error": pred_error} if pred is None else {
                "predictor_features": list(pred.features_), "predictor_choice": pred.choice_,
                "predictor_selection": dict(pred.selection_), "predictor_offsets": list(pred.offsets_)}),
            "runtime_pooling": rm.pool_}
    if "left_truncated" in train.columns:
        info["n_train_left_truncated_excluded"] = int(getattr(rm, "n_left_truncated_", 0))
    if "run_censored" in test.columns:
        info["n_test_running_excluded"] = int((test["run_censored"].fillna(False).astype(bool)
                                               & (test["gpu_num"] > 0)).sum())

    # ---------------------------------------------------------------- queueing
    if include_queue and not np.isfinite(train["queue_s"].to_numpy(dtype=float)).any():
        include_queue = False  # unknown waits (e.g. SWF -1) are missing, not 0: nothing to fit or score
        info["queue_skipped"] = "the training jobs record no waits (unknown waits are missing, not 0)"
    if include_queue:
        qm = QueueModel().fit(train)
        qg = QueueModel(keys=()).fit(train)
        qt = test.loc[test["queue_s"].notna() & (test["gpu_num"] > 0)]
        if len(qt):
            w = np.maximum(qt["queue_s"].to_numpy(dtype=float), 0.0)
            c = qt["queue_censored"].fillna(False).astype(bool).to_numpy()
            qcells = _report_cells(qt)
            keep = ~(c & (w <= qm.atom_s))
            for name, model, keys in (("queue_model", qm, qm.key_frame(qt)),
                                      ("queue_global", qg, pd.DataFrame(index=qt.index))):
                ll, _, _ = _score_distribution(model, keys, w, rng, 0, censored=c)
                per_job[(name, "loglik")] = ll[keep]
                rows += _rows(name, "loglik",
                              _by_cell(M.heldout_loglik, qcells[keep], min_cell_jobs, ll[keep]))
                p0 = _cell_p_atom(model, keys)
                obs = (w <= model.atom_s).astype(float)
                rows += _rows(name, "atom_error", _by_cell(lambda p, o: abs(float(np.mean(p) - np.mean(o))),
                                                           qcells[keep], min_cell_jobs, p0[keep], obs[keep]))
            info["n_test_queue"] = int(keep.sum())

    res = pd.DataFrame(rows, columns=["model", "metric", "cell", "value", "n"])
    info["predictor_vs_best_baseline"] = predictor_verdict(res, abs_errors)
    weights = None
    if running.any():
        c_run = np.maximum(test["run_s"].to_numpy(dtype=float)[running], 0.0)
        weights = ipcw_weights(x, c_run)
    return BacktestResult(res, info, model_card(per_job, weights))


#: the point-prediction baselines the predictor must beat (pooled MAE of log run time)
BASELINES = {"user_median": "user running median", "runtime_model_nostate": "per-cell median",
             "global": "global median"}


def predictor_verdict(results: pd.DataFrame, abs_errors: dict[str, np.ndarray] | None = None,
                      metric: str = "mae_log") -> dict[str, Any]:
    """Does the predictor beat the best baseline on the pooled ``metric`` (MAE of log run time)?

    ``abs_errors`` (model → per-test-job ``|y − p50|``) adds the paired difference
    ``d = |e_baseline| − |e_predictor|``: its mean ± standard error ``sd(d)/√n``, and whether the
    difference is beyond two standard errors (``significant``). Returns ``{metric, predictor,
    best_baseline, baseline_value, beats, diff, diff_se, significant, text}``; ``text`` is the summary
    line ``evaluate runtime`` prints."""
    r = results[(results.cell == "all") & (results.metric == metric)].set_index("model")["value"]
    if "predictor" not in r.index:
        return {"metric": metric, "beats": None, "text": "predictor not scored"}
    base = r.reindex(list(BASELINES)).dropna()
    if base.empty:
        return {"metric": metric, "beats": None, "text": "no baseline scored"}
    best = str(base.idxmin())
    pv, bv = float(r["predictor"]), float(base[best])
    beats = bool(pv < bv)
    verb = "beats" if beats else "does NOT beat"
    out = {"metric": metric, "predictor": pv, "best_baseline": best, "baseline_value": bv, "beats": beats,
           "diff": bv - pv, "diff_se": None, "significant": None}
    note = ""
    if abs_errors is not None and "predictor" in abs_errors and best in abs_errors:
        d = np.asarray(abs_errors[best], float) - np.asarray(abs_errors["predictor"], float)
        if d.size > 1:
            se = float(d.std(ddof=1) / np.sqrt(d.size))
            out["diff_se"] = se
            out["significant"] = bool(abs(float(d.mean())) > 2 * se)
            note = f" (difference {float(d.mean()):+.3f} ± {se:.3f} SE" + (
                ")" if out["significant"] else ", within noise)")
    out["text"] = (f"predictor {verb} the best baseline ({BASELINES[best]}): MAE of log run time "
                   f"{pv:.3f} vs {bv:.3f}{note}" + ("" if beats else " — use the baseline"))
    return out


def _cell_p_atom(model, keys: pd.DataFrame) -> np.ndarray:
    res = model.cells_.resolve_frame(keys)
    codes, uniques = pd.factorize(res["cell"])
    p = np.array([model.cells_.entries_[c].value.p_atom for c in uniques], dtype=float)
    return p[codes] if len(codes) else np.zeros(0)


# ============================================================================ the model card
#: the card's tables: (title, model, [(metric, baseline)]); a row appears when both were scored
CARD = (
    ("RuntimeModel, submission-time cell (cluster, type, GPUs)", "runtime_model_nostate",
     (("loglik", "global"), ("crps_log", "global"))),
    ("RuntimeModel given the final state (simulator use)", "runtime_model",
     (("loglik", "global"), ("crps_log", "global"))),
    ("RuntimePredictor (point: p50)", "predictor",
     (("mae_log", "user_median"), ("mae_log", "name_median"), ("mae_log", "runtime_model_nostate"),
      ("mae_log", "global"), ("pinball_p10", "runtime_model_nostate"), ("pinball_p50", "runtime_model_nostate"),
      ("pinball_p90", "runtime_model_nostate"), ("pinball_p10", "global"), ("pinball_p90", "global"))),
    ("QueueModel", "queue_model", (("loglik", "queue_global"),)),
)
def model_card(per_job: dict[tuple[str, str], np.ndarray], weights: np.ndarray | None = None) -> dict[str, list]:
    """The card of a backtest from per-test-job values ``{(model, metric): array}``: ``comparisons``
    (one row per table of :data:`CARD` and baseline: metric, model and baseline means, the paired
    difference ``diff`` (> 0: the model is better) ± ``se``, verdict) and ``intervals`` (the p10–p90
    coverage of every model with an interval). With ``weights`` (inverse-probability-of-censoring
    weights of the scored jobs, :func:`~acmemodel.models.predictor_conformal.ipcw_weights`, when some test jobs
    were still running), every interval also gets its IPCW coverage (``interval`` "p10-p90 IPCW"): the
    ended jobs alone over-represent short runs."""
    comps = []
    for title, model, pairs in CARD:
        for metric, base in pairs:
            a, b = per_job.get((model, metric)), per_job.get((base, metric))
            if a is None or b is None or len(a) != len(b):
                continue
            comps.append(comparison(title, model, base, metric, a, b, metric in HIGHER_IS_BETTER))
    intervals = [{"model": m, "interval": "p10-p90", **coverage_verdict(v)}
                 for (m, metric), v in per_job.items() if metric == "coverage"]
    if weights is not None:
        intervals += [{"model": m, "interval": "p10-p90 IPCW", **coverage_verdict(v, weights=weights)}
                      for (m, metric), v in per_job.items() if metric == "coverage"]
    return {"comparisons": comps, "intervals": intervals}


SHORT_MODEL = {"runtime_model_nostate": "cell model", "runtime_model": "cell+state", "global": "global",
               "user_median": "user median", "name_median": "name median", "predictor": "predictor",
               "queue_model": "queue model", "queue_global": "queue global"}


def render_runtime_card(card: dict[str, list], info: dict | None = None):
    """The run-time model card (:func:`~acmemodel.evaluation.card.render_card`) with its intro line."""
    intro = "Model card"
    if info:
        n_tr, n_te = info.get("n_train"), info.get("n_test")
        cut = str(info.get("cutoff_utc", "?"))[:16].replace("T", " ")
        if isinstance(n_tr, (int, np.integer)) and isinstance(n_te, (int, np.integer)):
            intro = f"Model card: trained on {n_tr:,} GPU jobs before {cut} UTC, tested on the {n_te:,} after."
    return render_card(card, intro, SHORT_MODEL, SHORT)
