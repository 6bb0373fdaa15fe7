"""FailureModel: censoring, Kaplan–Meier / Aalen–Johansen against lifelines, parameter recovery,
planner accessors, bundle round trip."""
import json
import math
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from acmemodel.models import Bundle
from acmemodel.models.failure import CURVE_GRID_S, FailureModel, survival_frame
from acmemodel.models.failure_curves import aj_confidence_band

K, ETA0, ALPHA, G_REF = 0.7, 20 * 86400.0, 0.8, 8.0
P_EARLY, EARLY_MED, EARLY_SD = 0.3, 120.0, 1.0


def simulate(n, *, regimes=2, seed=0, cens_med=4 * 3600.0, cens_sd=2.0, clusters=("Seren", "Kalos")):
    """Jobs whose failure time follows the known two-regime law, independent log-normal censoring."""
    rng = np.random.default_rng(seed)
    sizes = 2 ** np.arange(0, 11)
    gp = 1.0 / (1 + np.arange(11))
    g = rng.choice(sizes, n, p=gp / gp.sum()).astype(float)
    # late Weibull PH: H(t) = (t/eta0)^k (g/g_ref)^alpha ~ Exp(1)
    t_fail = ETA0 * (rng.exponential(size=n) / (g / G_REF) ** ALPHA) ** (1 / K)
    if regimes == 2:
        t_early = EARLY_MED * np.exp(EARLY_SD * rng.standard_normal(n))
        t_fail = np.where(rng.random(n) < P_EARLY, t_early, t_fail)
    c = cens_med * np.exp(cens_sd * rng.standard_normal(n))
    run = np.minimum(t_fail, c)
    state = np.where(t_fail <= c, "FAILED", np.where(rng.random(n) < 0.3, "CANCELLED", "COMPLETED"))
    submit = 1.68e9 + np.sort(rng.uniform(0, 180 * 86400, n))
    return pd.DataFrame({
        "cluster": rng.choice(list(clusters), n), "type": "Pretrain", "analysis_state": state,
        "state": state, "gpu_num": g.astype(np.int64), "is_gpu": True, "started": True,
        "run_s": run, "submit_s": submit, "fail_time_s": np.nan,
    })


@pytest.fixture(scope="module")
def two_regime():
    jobs = simulate(20000, seed=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = FailureModel(compare=False).fit(jobs)
    return jobs, m


@pytest.fixture(scope="module")
def compared():
    jobs = simulate(4000, seed=2, regimes=2)
    jobs.loc[jobs.index % 3 == 0, "type"] = "Eval"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = FailureModel(compare=True).fit(jobs)
    return jobs, m


# ----------------------------------------------------------------------------- censoring
def test_censored_rows_are_kept_and_never_events():
    jobs = simulate(500, seed=3)
    jobs.loc[jobs.index[:5], "state"] = "TIMEOUT"  # analysis_state already FAILED-mapped by the loader
    jobs.loc[jobs.index[:5], "analysis_state"] = "FAILED"
    cpu = jobs.iloc[:3].assign(gpu_num=0, is_gpu=False)
    never = jobs.iloc[:2].assign(started=False, run_s=np.nan)
    allj = pd.concat([jobs, cpu, never], ignore_index=True)
    fr = survival_frame(allj)
    assert len(fr) == len(jobs)  # only CPU and never-started rows leave
    st = allj.loc[fr.index, "analysis_state"]
    assert (fr["E"] == (st == "FAILED")).all()
    assert not fr.loc[st.isin(["COMPLETED", "CANCELLED"]), "E"].any()
    assert (fr.loc[st == "CANCELLED", "cause"] == "cancel").all()
    assert (fr.loc[st == "COMPLETED", "cause"] == "complete").all()
    assert np.allclose(fr["T"], np.maximum(allj.loc[fr.index, "run_s"], 1.0))


def test_kalos_fail_time_is_the_event_time_only_for_failures():
    jobs = simulate(200, seed=4)
    jobs["fail_time_s"] = jobs["run_s"] * 0.5
    fr = survival_frame(jobs)
    E = fr["E"].to_numpy()
    assert np.allclose(fr["T"][E], np.maximum(0.5 * jobs["run_s"][E], 1.0))
    assert np.allclose(fr["T"][~E], np.maximum(jobs["run_s"][~E], 1.0))


def test_censored_likelihood_is_survival_and_events_density(two_regime):
    jobs, m = two_regime
    fr = survival_frame(jobs).iloc[:400]
    ll = m.loglik(fr)
    for i in range(0, 400, 37):
        r = fr.iloc[i]
        S = m.survival(r["T"], r["gpus"], cluster=r["cluster"], type=r["type"])
        if r["E"]:
            f = S * m.hazard(r["T"], r["gpus"], cluster=r["cluster"], type=r["type"])
            assert ll[i] == pytest.approx(math.log(f), rel=1e-9)
        else:
            assert ll[i] == pytest.approx(math.log(S), rel=1e-9)


def test_relabelling_completions_as_failures_changes_the_fit():
    # a censored job must lower the hazard estimate compared with counting it as a failure
    jobs = simulate(3000, seed=5, regimes=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = FailureModel(regimes=1, compare=False).fit(jobs)
        wrong = jobs.assign(analysis_state="FAILED")
        b = FailureModel(regimes=1, compare=False).fit(wrong)
    assert a.mttf(64) > 2 * b.mttf(64)


# ----------------------------------------------------------------------------- non-parametric
def test_km_with_heavy_censoring_matches_lifelines():
    from lifelines import KaplanMeierFitter

    jobs = simulate(3000, seed=6, regimes=1, cens_med=600.0, cens_sd=1.5)
    fr = survival_frame(jobs)
    assert 1 - fr["E"].mean() > 0.9  # heavy censoring
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = FailureModel(regimes=1, curves=True).fit(jobs)
    kmf = KaplanMeierFitter().fit(fr["T"], fr["E"])
    tab = m.km_table()
    assert tab["cell"].iloc[0] == "all"
    grid = tab["t_s"].to_numpy()
    assert grid[-1] <= fr["T"].max() < CURVE_GRID_S[len(grid)]  # curve stops at the last observation
    ref = kmf.survival_function_at_times(grid).to_numpy()
    assert np.allclose(tab["survival"], ref, atol=1e-6)
    ci = kmf.confidence_interval_survival_function_
    idx = np.searchsorted(ci.index.to_numpy(), grid, side="right") - 1
    lo = np.where(idx >= 0, ci.iloc[np.maximum(idx, 0), 0], 1.0)
    assert np.allclose(tab["lower"], lo, atol=1e-6)
    # cell back-off: a GPU bucket cell for cluster/type/bucket, then coarser
    s, lo_, hi_, label = m.km_curve([60.0, 3600.0], cluster="Seren", type="Pretrain", gpus=8)
    assert label == "cluster=Seren|type=Pretrain|gpu_bucket=2-8"
    assert np.all(lo_ <= s) and np.all(s <= hi_)
    with pytest.raises(ValueError):
        m.km_curve([1.0], state="FAILED")


def test_numpy_km_and_aalen_johansen_are_lifelines_exactly():
    """models.km (what the failure model's curves use) gives lifelines' KaplanMeierFitter and
    AalenJohansenFitter numbers bit for bit: untied and tied times, ties between causes (jittered
    with the same seeded draws, repeatedly), heavy censoring, a single job; and the band of
    aj_confidence_band is the same from either."""
    from lifelines import AalenJohansenFitter, KaplanMeierFitter

    from acmemodel.models.km import aalen_johansen, kaplan_meier

    rng = np.random.default_rng(11)
    cases = [(rng.lognormal(5, 2, 800), rng.integers(0, 4, 800)),
             (np.round(rng.lognormal(5, 2, 1500)) + 1, rng.integers(0, 4, 1500)),
             (rng.integers(1, 15, 600).astype(float), rng.integers(0, 4, 600)),
             (np.round(rng.lognormal(3, 1, 1000), 1) + 0.5, np.where(rng.random(1000) < 0.95, 0, 1)),
             (np.array([42.0]), np.array([2]))]
    for seed, (T, C) in enumerate(cases):
        E = C > 0
        kmf = KaplanMeierFitter().fit(T, E)
        t, S, lo, hi, _ = kaplan_meier(T, E)
        ci = kmf.confidence_interval_survival_function_.to_numpy()
        assert np.array_equal(kmf.survival_function_.index.to_numpy(), t)
        assert np.array_equal(kmf.survival_function_.iloc[:, 0].to_numpy(), S)
        assert np.array_equal(ci[:, 0], lo) and np.array_equal(ci[:, 1], hi)
        for cause in np.unique(C[C > 0]):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                ref = AalenJohansenFitter(calculate_variance=False, seed=seed).fit(T, C, event_of_interest=cause)
            aj = aalen_johansen(T, C, cause, seed=seed)
            assert np.array_equal(ref.cumulative_density_.index.to_numpy(), aj.t)
            assert np.array_equal(ref.cumulative_density_.iloc[:, 0].to_numpy(), aj.F)
            for a, b in zip(aj_confidence_band(ref), aj_confidence_band(aj)):
                assert np.array_equal(a, b)


def test_aalen_johansen_band_equals_lifelines_and_cifs_add_up(compared):
    from lifelines import AalenJohansenFitter

    rng = np.random.default_rng(7)
    T = np.round(rng.lognormal(5, 2, 2000), 1)
    C = rng.integers(0, 4, 2000)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        full = AalenJohansenFitter(calculate_variance=True, seed=1).fit(T, C, event_of_interest=2)
        fast = AalenJohansenFitter(calculate_variance=False, seed=1).fit(T, C, event_of_interest=2)
    lo, hi = aj_confidence_band(fast)
    ci = full.confidence_interval_cumulative_density_.to_numpy()
    ok = np.all(np.isfinite(ci), axis=1)
    assert np.allclose(lo[ok], ci[ok].min(axis=1)) and np.allclose(hi[ok], ci[ok].max(axis=1))

    jobs, m = compared
    tab = m.cif_table()
    tot = tab.groupby("t_s")["cif"].sum().to_numpy()
    fr = survival_frame(jobs)
    from lifelines import KaplanMeierFitter
    any_event = KaplanMeierFitter().fit(fr["T"], np.ones(len(fr), bool))
    # with every job ending in one of the three causes, the incidences add up to 1 − S_any(t)
    ref = 1 - any_event.survival_function_at_times(np.sort(tab["t_s"].unique())).to_numpy()
    assert np.allclose(tot, ref, atol=5e-3)  # lifelines jitters tied times by 1e-4 s
    assert set(tab["cause"]) == {"fail", "cancel", "complete"}


# ----------------------------------------------------------------------------- recovery
def _within(est, truth, se, n_se=4.5):
    assert se > 0 and abs(est - truth) <= n_se * se, (est, truth, se)


def test_two_regime_parameters_recovered(two_regime):
    _, m = two_regime
    s = m.summary()
    se_lk = s.loc["log_shape", "std_error"]
    _within(math.log(m.shape_), math.log(K), se_lk)
    _within(m.alpha_, ALPHA, m.alpha_se_)
    assert m.alpha_ci_[0] < ALPHA < m.alpha_ci_[1] or abs(m.alpha_ - ALPHA) < 4.5 * m.alpha_se_
    # scale via the late MTTF at g_ref: eta0 Γ(1 + 1/k)
    lo, hi = m.mttf_interval(G_REF, cluster="Seren")
    se_log = (math.log(hi) - math.log(lo)) / (2 * 1.96)
    _within(math.log(m.mttf(G_REF, cluster="Seren")), math.log(ETA0 * math.gamma(1 + 1 / K)), se_log)
    _within(s.loc["early_mu", "estimate"], math.log(EARLY_MED / 3600.0), s.loc["early_mu", "std_error"])
    _within(s.loc["early_log_sigma", "estimate"], math.log(EARLY_SD), s.loc["early_log_sigma", "std_error"])
    p = m.early_probability(G_REF, cluster="Seren")
    se_g = s.loc["early_logit:Intercept", "std_error"]
    _within(math.log(p / (1 - p)), math.log(P_EARLY / (1 - P_EARLY)), se_g)
    # the standard errors shrink like 1/sqrt(n): sanity bound for n = 20,000
    assert m.alpha_se_ < 0.05 and se_lk < 0.05
    assert "infant mortality" in m.hazard_shape()


def test_one_regime_weibull_and_aft_cross_check():
    jobs = simulate(6000, seed=8, regimes=1, clusters=("Seren",))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = FailureModel(regimes=1, compare=True).fit(jobs)
    _within(m.alpha_, ALPHA, m.alpha_se_)
    se_lk = m.summary().loc["log_shape", "std_error"]
    _within(math.log(m.shape_), math.log(K), se_lk)
    _within(math.log(m.scale_s_), math.log(ETA0), math.sqrt(m.cov_[1, 1]) / K + abs(math.log(ETA0)) * se_lk)
    # Weibull AFT: PH size exponent = −ρ·β_log_gpus
    se_aft = (m.aft_alpha_ci_[1] - m.aft_alpha_ci_[0]) / (2 * 1.96)
    _within(m.aft_alpha_, ALPHA, se_aft)
    assert abs(m.aft_shape_ - K) < 0.05
    assert m.early_probability(64) == 0.0


# ----------------------------------------------------------------------------- accessors
def test_mttf_curve_to_16k_with_intervals(two_regime):
    _, m = two_regime
    c = m.mttf_curve()
    assert c["gpus"].iloc[0] == 8 and c["gpus"].iloc[-1] == 16384
    assert (c["lower_s"] < c["mttf_s"]).all() and (c["mttf_s"] < c["upper_s"]).all()
    assert (np.diff(c["mttf_s"]) < 0).all()  # alpha > 0: bigger jobs fail sooner
    assert c["extrapolated"].iloc[-1] and not c["extrapolated"].iloc[0]
    # the size law: MTTF_L ∝ g^(−α/k)
    r = m.mttf(16384, cluster="Seren") / m.mttf(1024, cluster="Seren")
    assert r == pytest.approx(16.0 ** (-m.alpha_ / m.shape_), rel=1e-9)
    assert m.mttf(1024) == pytest.approx(c.loc[c["gpus"] == 1024, "mttf_s"].iloc[0])
    arr = m.mttf(np.array([8, 1024]))
    assert arr.shape == (2,)
    assert m.mttf(1024, component="all") < m.mttf(1024)  # defective jobs fail within minutes


def test_hazard_survival_consistency(two_regime):
    _, m = two_regime
    t = np.array([30.0, 600.0, 7200.0, 86400.0])
    for comp in ("all", "late"):
        S = m.survival(t, 256, component=comp)
        h = m.hazard(t, 256, component=comp)
        eps = 1e-4 * t
        dlog = -(np.log(m.survival(t + eps, 256, component=comp))
                 - np.log(m.survival(t - eps, 256, component=comp))) / (2 * eps)
        assert np.allclose(h, dlog, rtol=1e-4)
        assert np.all((0 < S) & (S < 1))
    # late regime of one combo is a Weibull with the fitted shape and the size-scaled scale
    eta = m.mttf(256, cluster="Seren") / math.gamma(1 + 1 / m.shape_)
    h = m.hazard(t, 256, component="late", cluster="Seren")
    assert np.allclose(h, m.shape_ / eta * (t / eta) ** (m.shape_ - 1), rtol=1e-9)
    tab = m.hazard_table(1024)
    S_edges = m.survival(tab["end_s"].to_numpy(), 1024, component="late")
    H = np.cumsum(tab["hazard_per_s"] * (tab["end_s"] - tab["start_s"]))
    assert np.allclose(np.exp(-H), S_edges, rtol=1e-9)
    with pytest.raises(ValueError):
        m.hazard_table(1024, edges=[0, 10, 5])


def test_the_regimes_are_families_and_the_model_hands_over_its_law(two_regime):
    """The late regime of one key is the Weibull family of the model's shape and MTTF, the early regime
    the log-normal family of its median and log-sd; failure_law hands the planner that Weibull (or the
    hazard table as a piecewise-hazard family), and the planner's process has the model's MTTF."""
    from acmemodel.models.distributions import LogNormal, Weibull
    from acmemodel.models.failure_laws import PiecewiseHazardLaw
    from acmemodel.planner.run.processes import failure_process_from_law

    _, m = two_regime
    t = np.array([30.0, 600.0, 7200.0, 86400.0])
    late = m.late_law(256, cluster="Seren")
    assert isinstance(late, Weibull) and late.k == m.shape_
    assert np.allclose(late.sf(t), m.survival(t, 256, component="late", cluster="Seren"), rtol=1e-9)
    early = m.early_law()
    assert isinstance(early, LogNormal) and early.median() == pytest.approx(m.early_median_s_, rel=1e-12)
    assert np.allclose(early.sf(t), m.survival(t, 256, component="early"), rtol=1e-9)
    law = m.failure_law(1024, type=m.design_.types[0])
    assert isinstance(law, Weibull)
    assert float(failure_process_from_law(law).mean()) == pytest.approx(m.mttf(1024, type=m.design_.types[0]),
                                                                        rel=1e-12)
    pw = m.failure_law(1024, kind="piecewise")
    assert isinstance(pw, PiecewiseHazardLaw)
    tab = m.hazard_table(1024)
    assert np.allclose(pw.sf(tab["end_s"].to_numpy()), tab["survival_end"], rtol=1e-9)
    assert pw.ppf(pw.cdf(7200.0)) == pytest.approx(7200.0, rel=1e-9)


def test_sampling_matches_the_survival_function(two_regime):
    _, m = two_regime
    x = m.sample(4000, 512, np.random.default_rng(9), cluster="Kalos")
    ks = stats.kstest(x, lambda t: 1 - m.survival(np.asarray(t), 512, cluster="Kalos"))
    assert ks.pvalue > 1e-3


def test_model_comparison_table(compared):
    jobs, m = compared
    cmp_ = m.comparison_
    assert set(cmp_["model"]) == {"two_regime", "weibull_aft", "lognormal_aft", "loglogistic_aft", "cox_ph"}
    assert np.isnan(cmp_.loc[cmp_["model"] == "cox_ph", "heldout_loglik_per_job"]).all()
    assert m.selected_ in set(cmp_["model"])
    for name in ("two_regime", "weibull_aft", "lognormal_aft", "loglogistic_aft", "cox_ph", "km"):
        S = m.predict_survival(jobs.iloc[:50], [60.0, 3600.0], model=name)
        assert S.shape == (50, 2) and np.all((S >= 0) & (S <= 1))
        assert np.all(S[:, 1] <= S[:, 0] + 1e-12)


def test_cox_reduction_matches_lifelines():
    from lifelines import CoxPHFitter

    from acmemodel.models.failure import _aft_design, _Design, _lifelines_survival
    from acmemodel.models.failure_curves import _fit_lifelines

    fr = survival_frame(simulate(1500, seed=10, regimes=1))
    d = _Design.build(fr, 30)
    X = _aft_design(fr, d, G_REF)
    par = _fit_lifelines("cox_ph", X, fr["T"].to_numpy(), fr["E"].to_numpy())
    ref = CoxPHFitter().fit(X.assign(T=fr["T"], E=fr["E"].astype(int)), "T", "E")
    t = CURVE_GRID_S[[40, 60, 70]]
    mine = _lifelines_survival(par, X.iloc[:20], t)
    theirs = ref.predict_survival_function(X.iloc[:20], times=t).to_numpy().T
    assert np.allclose(mine, theirs, atol=2e-3)


# ----------------------------------------------------------------------------- errors, bundle
def test_invalid_parameters_and_keys(two_regime):
    jobs, m = two_regime
    for kw in (dict(regimes=3), dict(g_ref=0), dict(holdout_fraction=1.0), dict(max_fit_rows=0),
               dict(late_covariates=("log_gpus",)), dict(early_covariates=("user",))):
        with pytest.raises(ValueError):
            FailureModel(**kw).fit(jobs)
    with pytest.raises(ValueError):
        FailureModel().fit(jobs.assign(analysis_state="COMPLETED"))
    with pytest.raises(ValueError, match="unknown key"):
        m.mttf(8, state="FAILED")
    with pytest.raises(ValueError, match="not seen"):
        m.mttf(8, type="Imaginary")
    with pytest.raises(ValueError):
        m.mttf(0)
    with pytest.raises(ValueError):
        m.mttf_curve([8], level=1.5)
    with pytest.raises(ValueError):
        m.survival(1.0, 8, component="middle")


def test_bundle_round_trip(tmp_path, compared):
    jobs, m = compared
    Bundle({"failure": m}, name="t").save(tmp_path / "b")
    text = (tmp_path / "b" / "bundle.json").read_text()
    assert "pickle" not in text
    m2 = Bundle.load(tmp_path / "b")["failure"]
    pd.testing.assert_frame_equal(m.mttf_curve(), m2.mttf_curve())
    pd.testing.assert_frame_equal(m.summary(), m2.summary())
    pd.testing.assert_frame_equal(m.km_table(type="Eval"), m2.km_table(type="Eval"))
    pd.testing.assert_frame_equal(m.cif_table(), m2.cif_table())
    pd.testing.assert_frame_equal(m.comparison_, m2.comparison_)
    for name in ("two_regime", "lognormal_aft", "cox_ph"):
        assert np.allclose(m.predict_survival(jobs.iloc[:30], [600.0], model=name),
                           m2.predict_survival(jobs.iloc[:30], [600.0], model=name))
    assert m2.shape_ == m.shape_ and m2.alpha_ == m.alpha_ and m2.selected_ == m.selected_
    assert m2.hazard_table(2048).equals(m.hazard_table(2048))


def test_plots_draw_on_given_axis(compared):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    _, m = compared
    fig, axes = plt.subplots(1, 3)
    for ax, kind in zip(axes, ("mttf", "km", "cif")):
        assert m.plot(ax, kind=kind) is ax
        assert ax.lines
    plt.close(fig)


def test_random_state_none_with_warm_start_subsample(monkeypatch):
    """random_state=None (fresh entropy) works on the multi-start subsample path (was None + 1)."""
    import acmemodel.models.failure_mle as failure_mod

    monkeypatch.setattr(failure_mod, "WARM_ROWS", 500)
    jobs = simulate(1500, seed=5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = FailureModel(compare=False, random_state=None).fit(jobs)
    assert np.isfinite(m.alpha_)
    for bad in (-1, 1.5, "0", True):
        with pytest.raises(ValueError, match="random_state"):
            FailureModel(random_state=bad).fit(jobs)


@pytest.fixture(scope="module")
def lognormal_late():
    """Jobs whose late regime is log-normal (AFT: log T = log t_ref + (Z - nu)/k, nu = b0 + alpha log(g/g_ref),
    Z ~ N(0, 1)) behind the same early regime, and the model fitted with late_family="lognormal"."""
    rng = np.random.default_rng(5)
    n, k, b0, alpha = 12000, 0.8, -2.0, 0.6
    g = rng.choice(2 ** np.arange(0, 11), n).astype(float)
    nu = b0 + alpha * np.log(g / G_REF)
    t_fail = 3600.0 * np.exp((rng.standard_normal(n) - nu) / k)
    t_early = EARLY_MED * np.exp(EARLY_SD * rng.standard_normal(n))
    t_fail = np.where(rng.random(n) < P_EARLY, t_early, t_fail)
    c = 20 * 3600.0 * np.exp(2.0 * rng.standard_normal(n))
    state = np.where(t_fail <= c, "FAILED", "COMPLETED")
    jobs = pd.DataFrame({"cluster": "Seren", "type": "Pretrain", "analysis_state": state, "state": state,
                         "gpu_num": g.astype(np.int64), "is_gpu": True, "started": True,
                         "run_s": np.minimum(t_fail, c), "submit_s": 1.68e9 + np.arange(n), "fail_time_s": np.nan})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = FailureModel(late_family="lognormal", early_covariates=()).fit(jobs)
        w = FailureModel(early_covariates=()).fit(jobs)
    return jobs, m, w, (k, b0, alpha)


def test_a_log_normal_late_regime_is_fitted_saved_and_planned_with(lognormal_late):
    """late_family="lognormal": the likelihood, queries, sampling and the law handed to the planner are
    the log-normal's. The truth is recovered within 4.5 standard errors, the fit beats the Weibull late
    regime on the same jobs, a JSON round trip keeps the law, and the planner plans with it."""
    from scipy import stats as st

    from acmemodel.models.bundle import Bundle
    from acmemodel.models.distributions import LogNormal
    from acmemodel.planner.planner import Planner
    from acmemodel.planner.run.processes import PiecewiseHazard

    jobs, m, w, (k, b0, alpha) = lognormal_late
    i_lk, i_b0, i_a = m._idx()
    se = np.sqrt(np.diag(m.cov_))
    _within(m.params_[i_lk], math.log(k), se[i_lk])
    _within(m.alpha_, alpha, m.alpha_se_)
    _within(m.params_[i_b0], b0, se[i_b0])
    assert m.loglik_ > w.loglik_ + 10               # the right law wins clearly (same rows, same early part)
    law = m.late_law(1024)
    assert isinstance(law, LogNormal) and law.sigma == pytest.approx(1 / m.shape_)
    t = np.array([600.0, 3600.0, 86400.0])
    assert np.allclose(law.sf(t), m.survival(t, 1024, component="late"), rtol=1e-9)
    n_s = 40_000  # the sample mean within 4 standard errors (log-normal: sd / mean = sqrt(e^(sigma^2) - 1))
    x = m.sample(n_s, 1024, np.random.default_rng(3), component="late")
    assert float(np.mean(x)) == pytest.approx(m.mttf(1024), rel=4 * math.sqrt(math.expm1(law.sigma ** 2) / n_s))
    ks = st.kstest(m.sample(3000, 1024, np.random.default_rng(4), component="late"), lambda x: law.cdf(x))
    assert ks.pvalue > 1e-3
    m2 = type(m).from_dict(json.loads(json.dumps(m.to_dict())))
    assert m2.late_family == "lognormal" and m2.mttf(1024) == pytest.approx(m.mttf(1024), rel=1e-12)
    restart = type("R", (), {"fallback_": True})()
    proc = Planner(Bundle(models={"failure": m, "restart": restart})).failure_process(1024)
    assert isinstance(proc, PiecewiseHazard)     # planned with its own survival, not as a Weibull
    br, rates = np.ravel(proc.breaks), np.ravel(proc.rates)
    H = np.concatenate([[0.0], np.cumsum(np.diff(br) * rates[:-1])])
    assert np.allclose(np.exp(-H), law.sf(br), rtol=1e-9, atol=1e-12)


def test_the_shipped_bundle_is_read_as_a_weibull_late_regime():
    """The default bundle's JSON predates late_family: it is read as the Weibull it was fitted with."""
    import acmemodel
    from acmemodel.models.distributions import Weibull

    fm = acmemodel.load_default()["failure"]
    assert fm.late_family == "weibull" and isinstance(fm.late_law(1024), Weibull)
    with pytest.raises(ValueError, match="late_family"):
        FailureModel(late_family="gumbel").fit(simulate(200, seed=9))


def test_alike_rows_collapse_gives_the_same_likelihood_and_fit(monkeypatch):
    """Jobs alike in every likelihood term are one row with their count: the weighted negative log-likelihood,
    gradient and information equal those of the repeated rows (with delayed entry too), and a fit on
    whole-second times gives the row-by-row fit's estimates to the optimiser's tolerance."""
    from acmemodel.models import failure_mle as FM
    from acmemodel.models.failure_laws import late_regime

    rng = np.random.default_rng(7)
    n, P = 400, 2
    y = np.log(np.round(np.exp(rng.normal(0, 1.5, n)) * 100) / 100 + 0.01)
    E = rng.random(n) < 0.4
    Z = np.c_[np.ones(n), rng.integers(0, 2, n)].astype(float)
    X = np.c_[rng.normal(size=n), np.ones(n)]
    rep = rng.integers(1, 5, n)
    mix = FM._Mixture(2, P, X.shape[1], 3600.0, late_regime("weibull"))
    th = np.r_[-0.5, 0.2, -1.0, 0.1, -0.2, 0.3, -2.0]
    full = tuple(np.repeat(a, rep, axis=0) for a in (y, E, Z, X))
    ent = rng.random(n) < 0.2
    for entry in (False, True):
        if entry:
            ya = y - 1.0
            mix.entry = {"n": int(rep.sum()), "y": np.repeat(ya[ent], rep[ent]), "Z": np.repeat(Z[ent], rep[ent], 0),
                         "X": np.repeat(X[ent], rep[ent], 0), "w": None}
        f1, g1 = mix.nll_grad(th, *full)
        h1 = mix.hessian(th, *full)
        if entry:
            mix.entry = {"n": int(rep.sum()), "y": ya[ent], "Z": Z[ent], "X": X[ent], "w": rep[ent].astype(float)}
        f2, g2 = mix.nll_grad(th, y, E, Z, X, rep.astype(float))
        h2 = mix.hessian(th, y, E, Z, X, rep.astype(float))
        assert f2 == pytest.approx(f1, rel=1e-12) and np.allclose(g2, g1, rtol=1e-9, atol=1e-12)
        assert np.allclose(h2, h1, rtol=1e-6, atol=1e-6)

    jobs = simulate(6000, seed=3)
    jobs["run_s"] = np.maximum(np.round(jobs["run_s"] / 60) * 60, 60.0)  # (minute times: many ties)
    collapsed = FailureModel().fit(jobs)
    monkeypatch.setattr(FM, "ALIKE_MAX_SHARE", -1.0)
    rowwise = FailureModel().fit(jobs)
    se = np.sqrt(np.diag(rowwise.cov_))
    assert np.all(np.abs(collapsed.params_ - rowwise.params_) <= 1e-3 * np.maximum(se, 1e-3))
    assert collapsed.loglik_ == pytest.approx(rowwise.loglik_, abs=1e-3)
