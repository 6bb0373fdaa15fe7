"""``acmemodel evaluate failure``: the failure model card — a time-ordered backtest of the failure models
against one-law baselines (paired differences ± SE, verdicts) and the restart models' interval coverage."""
from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from acmemodel.cli._app import evaluate_app, print_json
from acmemodel.cli._common import CLUSTER, CUTOFF, TEST_FRACTION, TRACE_PATHS, check_holdout, console, load_traces

_FAIL_METRICS = ("n", "events", "c_index", "ibs", "heldout_loglik_per_job")
_CALIB = ("1h", "6h", "24h")


@evaluate_app.command("failure")
def evaluate_failure_cmd(
    paths: Optional[List[Path]] = TRACE_PATHS,
    json_out: bool = typer.Option(False, "--json", help="Print JSON: the card {comparisons, intervals}, "
                                  "failure and restart rows [{model, metric, cell, value}], the MTTF curve "
                                  "and fitted parameters."),
    detail: bool = typer.Option(False, "--detail", help="Also print every metric (concordance, calibration "
                                "at 1/6/24 h, restart errors) and the MTTF curve."),
    plots: Optional[Path] = typer.Option(None, "--plots", help="Write PNG plots into this directory."),
    test_fraction: Optional[float] = TEST_FRACTION,
    cutoff: Optional[str] = CUTOFF,
    cluster: Optional[str] = CLUSTER,
    min_cell_jobs: int = typer.Option(50, "--min-cell-jobs",
                                      help="Report a type/cluster cell from this many held-out jobs."),
) -> None:
    """The failure model card: fit FailureModel and RestartModel on the earlier jobs, score the later
    ones. One table per failure model (two-regime, Weibull / log-normal / log-logistic AFT, Cox PH,
    per-cell Kaplan–Meier) against the one-law baselines of the training jobs (Kaplan–Meier, Weibull,
    exponential): each held-out job's share of the integrated Brier score (IPCW) and its survival
    log-likelihood, the paired gain ± its standard error and the verdict ("use the baseline" when it
    wins); the coverage of the restart models' 80 % intervals. --detail adds concordance, calibration
    at 1 h / 6 h / 24 h, restart-time errors and MTTF from 8 to 16,384 GPUs."""
    from acmemodel.evaluation.card import json_safe, render_card
    from acmemodel.evaluation.survival import failure_backtest, pivot, restart_backtest

    check_holdout(test_fraction, cutoff, min_cell_jobs)
    trace = load_traces(paths, cluster)
    frows, fm = failure_backtest(trace, test_fraction=test_fraction, cutoff=cutoff,
                                 min_cell_jobs=min_cell_jobs, return_model=True)
    rrows, rm = restart_backtest(trace, test_fraction=test_fraction, cutoff=cutoff, return_model=True)
    curve = fm.mttf_curve()
    info = {
        "train_jobs": int(fm.n_fit_), "train_failures": int(fm.n_events_),
        "alpha": fm.alpha_, "alpha_ci95": list(fm.alpha_ci_), "shape": fm.shape_,
        "shape_ci95": list(fm.shape_ci_), "hazard_shape": fm.hazard_shape(),
        "early_median_s": fm.early_median_s_, "selected_by_inner_holdout": fm.selected_,
        "max_gpus_in_trace": fm.max_gpus_, "restart_fallback": bool(rm.fallback_),
        "restart_fallback_reason": rm.fallback_reason_, "restart_train_chains": int(rm.n_chains_),
        "extrapolation_note": "MTTF beyond the largest trace job assumes the fitted power law "
                              "rate ∝ gpus^alpha; intervals carry only its statistical uncertainty.",
    }
    written = _plots(trace, fm, rm, plots) if plots is not None else []
    card = {"comparisons": frows.attrs.get("card", {}).get("comparisons", []),
            "intervals": rrows.attrs.get("intervals", [])}
    if json_out:
        print_json({"card": json_safe(card), "failure": frows.to_dict(orient="records"),
                    "restart": rrows.to_dict(orient="records"),
                    "mttf_curve": curve.to_dict(orient="records"), "info": info, "plots": written})
        return
    intro = (f"Model card: trained on {info['train_jobs']:,} GPU jobs ({info['train_failures']:,} failures), "
             "scored on the later ones.")
    console.print(render_card(card, intro, SHORT, SHORT))
    console.print("gain > 0 favours the model; ibs: the job's share of the integrated Brier score; "
                  "loglik in nats per job (density in 1/s).")
    if detail:
        _print(frows, rrows, curve, info, written, pivot)
    else:
        for p in written:
            console.print(f"wrote {p}")


#: short names of the card's columns
SHORT = {"km_training": "KM (train)", "weibull_one_law": "Weibull", "exponential_one_law": "exponential",
         "restart_glm": "restart GLM", "restart_lgbm": "restart LightGBM", "restart_prior": "restart prior"}


def _print(frows, rrows, curve, info, written, pivot) -> None:
    from acmemodel.cli._fmt import CompactTable as Table

    wide = pivot(frows, "all").drop(index="all", errors="ignore")
    t = Table(title="Failure models, held-out jobs (cell all)")
    for c in ("model", "n", "failures", "c-index ↑", "IBS ↓", "loglik/job ↑"):
        t.add_column(c)
    for model, r in wide.iterrows():
        t.add_row(model, f"{r.get('n', float('nan')):.0f}", f"{r.get('events', float('nan')):.0f}",
                  f"{r.get('c_index', float('nan')):.3f}", f"{r.get('ibs', float('nan')):.4f}",
                  _f(r.get("heldout_loglik_per_job"), ".3f"))
    console.print(t)
    c = Table(title="Calibration: mean predicted P(no failure by t) vs held-out Kaplan–Meier")
    c.add_column("model")
    for h in _CALIB:
        c.add_column(f"t = {h}")
    r0 = wide.iloc[0]
    c.add_row("observed (KM, 95% band)", *[
        f"{r0.get('calib_obs_' + h, float('nan')):.3f} [{r0.get('calib_obs_lower_' + h, float('nan')):.3f}, "
        f"{r0.get('calib_obs_upper_' + h, float('nan')):.3f}]" for h in _CALIB])
    for model, r in wide.iterrows():
        c.add_row(model, *[f"{r.get('calib_pred_' + h, float('nan')):.3f}" for h in _CALIB])
    console.print(c)
    rt = Table(title="Restart models, held-out restarted failures")
    for c in ("model", "component", "n", "MAE log s ↓", "80% coverage", "median pred s", "median obs s"):
        rt.add_column(c)
    rw = rrows[rrows["model"] != "restart"].pivot_table(index=["model", "cell"], columns="metric",
                                                        values="value", aggfunc="first")
    for (model, comp), r in rw.iterrows():
        rt.add_row(model.replace("restart_", ""), comp, f"{r['n']:.0f}", f"{r['mae_log']:.3f}", f"{r['coverage']:.3f}",
                   f"{r['median_pred_s']:.0f}", f"{r['median_obs_s']:.0f}")
    console.print(rt)
    mt = Table(title="Late-regime MTTF (model fitted on the training part)")
    for c in ("GPUs", "MTTF h", "95% interval h", ""):
        mt.add_column(c)
    for _, r in curve.iterrows():
        mt.add_row(f"{r['gpus']:.0f}", f"{r['mttf_h']:.3g}",
                   f"[{r['lower_s'] / 3600:.3g}, {r['upper_s'] / 3600:.3g}]",
                   "extrapolated" if r["extrapolated"] else "")
    console.print(mt)
    console.print(f"alpha = {info['alpha']:.3f} [{info['alpha_ci95'][0]:.3f}, {info['alpha_ci95'][1]:.3f}]; "
                  f"{info['hazard_shape']}; {info['extrapolation_note']}")
    if info["restart_fallback"]:
        console.print(f"restart: {info['restart_fallback_reason']}")
    for p in written:
        console.print(f"wrote {p}")


def _f(v, fmt) -> str:
    import math

    return "—" if v is None or (isinstance(v, float) and math.isnan(v)) else format(v, fmt)


def _plots(trace, fm, rm, out: Path) -> list[str]:
    """KM per type with bands and cumulative incidence (whole trace), MTTF curve, restart CDF."""
    import warnings

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from acmemodel.models.failure import FailureModel

    out.mkdir(parents=True, exist_ok=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        full = FailureModel(curves=True).fit(trace)
    written = []
    specs = [("km_by_type.png", full, "km", "Kaplan–Meier survival (no failure) per type, 95% bands"),
             ("cumulative_incidence.png", full, "cif", "Cumulative incidence: fail / cancel / complete"),
             ("mttf.png", fm, "mttf", "Late-regime MTTF vs GPUs (training part), 95% interval")]
    for name, model, kind, title in specs:
        fig, ax = plt.subplots(figsize=(7, 4.5))
        model.plot(ax, kind=kind)
        ax.set_title(title, fontsize="medium")
        fig.tight_layout()
        fig.savefig(out / name, dpi=110)
        plt.close(fig)
        written.append(str(out / name))
    fig, ax = plt.subplots(figsize=(7, 4.5))
    rm.plot(ax)
    ax.set_title("Time to restart: fitted vs published priors", fontsize="medium")
    fig.tight_layout()
    fig.savefig(out / "restart.png", dpi=110)
    plt.close(fig)
    written.append(str(out / "restart.png"))
    return written
