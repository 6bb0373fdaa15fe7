"""The Done-when inequalities of the run-time models on the real logs in ``../shared/data/real/`` and on
the Alibaba GPU 2023 pod list (``openb_pod_list_default.csv`` of ``alibaba/clusterdata``
``cluster-trace-gpu-v2023/csv/``, read from ``$ACMEMODEL_OPENB_CSV`` or a local mirror of that repository;
skipped when neither is there) (time-ordered split, :func:`~acmemodel.evaluation.backtest.runtime_backtest`): the run-time model's
held-out log-likelihood ≥ the global law's and CRPS ≤ it, the predictor's MAE of log run time ≤ every
baseline's — a tie within one paired standard error counts — and its p10–p90 interval covering
0.75–0.85 of the later jobs (within one binomial SE of that band)."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

FAST = dict(include_queue=False, crps_draws=400, predictor_params={"n_estimators": 80, "learning_rate": 0.1})


def dlrm_jobs(path) -> pd.DataFrame:
    """The Alibaba DLRM instance trace (``disaggregated_DLRM_trace.csv``) as a job table: submit =
    creation, start = scheduled, end = deletion; an instance without a deletion time is still alive
    (run time censored at the last time in the file); rows without a creation time (alive before the
    trace began, left-truncated) are left out; type = role, user = app."""
    from acmemodel.trace.jobs import jobs_from_times

    d = pd.read_csv(path)
    d = d[d["creation_time"].notna()].reset_index(drop=True)
    last = float(np.nanmax(d[["creation_time", "scheduled_time", "deletion_time"]].to_numpy(dtype=float)))
    origin = 1735689600.0  # 2025-01-01 UTC: the file counts seconds from the trace start
    ended = d["deletion_time"].notna().to_numpy()
    start = d["scheduled_time"].to_numpy(dtype=float)
    started = np.isfinite(start)
    return jobs_from_times(
        cluster="dlrm", submit_s=origin + d["creation_time"].to_numpy(dtype=float), start_s=origin + start,
        end_s=origin + np.where(ended, d["deletion_time"].to_numpy(dtype=float), last),
        gpu_num=d["gpu_request"].fillna(0).astype(int).to_numpy(), type=d["role"].astype(str).to_numpy(object),
        state=np.where(ended, "COMPLETED", np.where(started, "RUNNING", "PENDING")).astype(object),
        user=d["app_name"].astype(str).to_numpy(object), run_censored=started & ~ended,
        cpu_num=d["cpu_request"].to_numpy(dtype=float), mem_per_pod_GB=d["memory_request"].to_numpy(dtype=float))


#: a bare git mirror of alibaba/clusterdata, where one is kept beside the checkouts
OPENB_MIRROR = Path("/work/.mirror/alibaba+clusterdata/repo")
OPENB_FILE = "cluster-trace-gpu-v2023/csv/openb_pod_list_default.csv"


def openb_csv(tmp_dir: Path) -> Path:
    """The OpenB pod list (8,152 pods): ``$ACMEMODEL_OPENB_CSV``, else extracted from the mirror; a skip
    when neither is there."""
    env = os.environ.get("ACMEMODEL_OPENB_CSV")
    if env and Path(env).is_file():
        return Path(env)
    if OPENB_MIRROR.is_dir():
        out = tmp_dir / "openb_pod_list_default.csv"
        r = subprocess.run(["git", f"--git-dir={OPENB_MIRROR}", "show", f"HEAD:{OPENB_FILE}"], capture_output=True)
        if r.returncode == 0 and r.stdout:
            out.write_bytes(r.stdout)
            return out
    pytest.skip("no OpenB pod list (set ACMEMODEL_OPENB_CSV)")


@pytest.fixture(scope="module", params=["nasa", "dlrm", "openb"])
def card(request, tmp_path_factory):
    import warnings

    from acmemodel.evaluation.backtest import runtime_backtest
    from acmemodel.trace import load_trace

    if request.param == "openb":
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            trace = load_trace(openb_csv(tmp_path_factory.mktemp("openb")), format="k8s", origin="2023-01-01")
    else:
        real_data = request.getfixturevalue("real_data")
        if request.param == "nasa":
            trace = load_trace(real_data / "NASA-iPSC-1993-3.1-cln.swf", format="swf")
        else:
            trace = dlrm_jobs(real_data / "disaggregated_DLRM_trace.csv")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return runtime_backtest(trace, **FAST)


def _comparisons(card, model):
    return [c for c in card.card["comparisons"] if c["model"] == model]


def test_runtime_model_not_worse_than_global(card):
    rows = {c["metric"]: c for c in _comparisons(card, "runtime_model_nostate") if c["baseline"] == "global"}
    assert set(rows) == {"loglik", "crps_log"}
    for r in rows.values():
        # gain = model advantage (loglik higher / CRPS lower); a tie within one SE counts
        assert r["diff"] >= -r["se"], r
        assert r["verdict"] != "use the baseline"


def test_predictor_mae_not_worse_than_any_baseline(card):
    rows = [c for c in _comparisons(card, "predictor") if c["metric"] == "mae_log"]
    assert {r["baseline"] for r in rows} >= {"user_median", "runtime_model_nostate", "global"}
    for r in rows:
        assert r["diff"] >= -r["se"], r


def test_predictor_interval_covers_0_8(card):
    iv = next(i for i in card.card["intervals"] if i["model"] == "predictor" and i["interval"] == "p10-p90")
    assert 0.75 - iv["se"] <= iv["coverage"] <= 0.85 + iv["se"], iv


def test_openb_crps_loss_is_drift(tmp_path_factory):
    """Why the OpenB card's CRPS is only a tie with the global law at the default split: the type key
    (BE vs LS pods) is right on every datum before the cutoff — on the latest 20 % of the training
    jobs it gains in held-out loglik *and* CRPS by many SEs, so the pooling keeps it — but after the
    cutoff the BE pods run longer and the LS pods shorter: the BE pods' own training sample (its ECDF,
    no family involved) predicts the later BE pods worse than all training pods together do. With
    the shrinkage of the best held-out ``k`` (100) the keyed model lost the CRPS (−0.028 ± 0.008); the
    one-SE rule towards more pooling (``k`` 300, within one SE of it on the held-out jobs) ties it
    (+0.000 ± 0.006). Recency weighting (the issue's remedy for a trace whose last months differ from
    its first) does not help: the keyed model fitted on the latest 30 % of the training period alone
    loses to the global law fitted on all of it."""
    import warnings

    from acmemodel.evaluation.backtest import time_split
    from acmemodel.evaluation.metrics import crps_samples
    from acmemodel.features.names import jobs_with_extras
    from acmemodel.models.predictor import submission_features
    from acmemodel.models.runtime import RuntimeModel
    from acmemodel.trace import load_trace

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trace = load_trace(openb_csv(tmp_path_factory.mktemp("openb_drift")), format="k8s", origin="2023-01-01")
        train, test = time_split(submission_features(jobs_with_extras(trace), trace.timezones))
        m = RuntimeModel().fit(train)
    lv = {x["dropped_key"]: x for x in m.pool_["levels"]}["type"]
    assert lv["kept"] and lv["gain"] > 3 * lv["se"] and lv["crps_gain"] > 3 * lv["crps_se"], lv
    assert m.pool_["k"] > m.pool_["k_best"], m.pool_  # the one-SE rule pooled more than the best k
    ended = [d[d["run_s"].notna() & (d["gpu_num"] > 0) & ~d["run_censored"].fillna(False).astype(bool)]
             for d in (train, test)]
    z_all = np.log1p(ended[0]["run_s"].to_numpy(float))
    z_be = np.log1p(ended[0].loc[ended[0]["type"] == "BE", "run_s"].to_numpy(float))
    later = np.log1p(ended[1].loc[ended[1]["type"] == "BE", "run_s"].to_numpy(float))
    d = crps_samples(z_be, later) - crps_samples(z_all, later)  # > 0: the BE sample is worse
    assert d.mean() > 3 * d.std(ddof=1) / np.sqrt(d.size)
    # recency would not rescue it: the keyed model fitted on the latest 30 % of the training period
    # (the hardest recency weighting) still loses to the global law fitted on all of it — the change
    # starts after the cutoff, so nothing before it shows it
    from acmemodel.evaluation.backtest import _score_distribution

    t1, t0 = train["submit_s"].max(), train["submit_s"].min()
    recent = train[train["submit_s"] >= t1 - 0.3 * (t1 - t0)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m_recent = RuntimeModel().fit(recent)
        g = RuntimeModel(keys=()).fit(train)
    t = test[test["started"].fillna(False).astype(bool) & test["run_s"].notna() & (test["gpu_num"] > 0)
             & ~test["run_censored"].fillna(False).astype(bool)]
    x = np.maximum(t["run_s"].to_numpy(float), 0.0)
    kf = m_recent.key_frame(t).drop(columns=["state"], errors="ignore")
    c_recent = _score_distribution(m_recent, kf, x, np.random.default_rng(0), 400)[2]
    c_global = _score_distribution(g, pd.DataFrame(index=t.index), x, np.random.default_rng(0), 400)[2]
    gain = c_global - c_recent  # > 0: the recent keyed model better
    assert gain.mean() < -gain.std(ddof=1) / np.sqrt(gain.size), gain.mean()
