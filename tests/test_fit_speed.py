"""The shortcuts that keep a large fit cheap give what the direct computations give (docs/performance.md)."""
import numpy as np
import pandas as pd
import pytest
from scipy import special

from acmemodel.models.cells import CellTable, _key_categorical
from acmemodel.models.distributions_mix import Empirical
from acmemodel.models.duration_cell import _OnceCdf, fit_duration_cell
from acmemodel.models.gof import ks_distance


def test_empirical_cdf_window_matches_every_atom():
    rng = np.random.default_rng(0)
    y = np.concatenate([rng.normal(5, 3, 30_000), [np.inf, -np.inf, np.nan]])
    for h in (0.05, 0.3, 2.0):
        e = Empirical(atoms=np.sort(rng.normal(5, 2, 200)), h=h)
        full = special.ndtr((y[:, None] - e.atoms) / h).mean(-1)
        got = e._cdf_y(y)  # unsorted points, with infinities and a NaN
        assert np.nanmax(np.abs(got - full)) < 1e-15
        assert got[-3] == 1.0 and got[-2] == 0.0 and np.isnan(got[-1])


def test_ks_with_left_limits_reused_equals_plain_ks():
    rng = np.random.default_rng(1)
    x = np.round(np.where(rng.random(20_000) < 0.3, 0.0, rng.lognormal(5, 2, 20_000)))
    c = rng.random(20_000) < 0.05
    for fams in (("empirical",), ("lognormal", "weibull", "lognormal_mix2")):
        cell = fit_duration_cell(x, c, threshold=1.0, families=fams)
        keep = ~((x <= 1.0) & c)
        xk = np.where(x[keep] <= 1.0, cell.atom_value, x[keep])
        plain = ks_distance(xk, cell.cdf, c[keep])
        assert abs(cell.ks - plain) < 1e-12
        assert abs(ks_distance(xk, _OnceCdf.of_cell(cell), c[keep]) - plain) < 1e-12


def test_refit_without_selection_is_the_selected_family_fit():
    # the pooling choice's refit (select=False) fits the one family the selection would end with
    rng = np.random.default_rng(2)
    x = rng.lognormal(4, 1.5, 3000)
    c = rng.random(3000) < 0.1
    for fam in ("lognormal", "weibull", "empirical"):
        a = fit_duration_cell(x, c, threshold=0.0, families=(fam,))
        b = fit_duration_cell(x, c, threshold=0.0, families=(fam,), select=False, diagnostics=False)
        assert a.family.to_dict() == b.family.to_dict()
        assert a.own_p_atom == b.own_p_atom and a.atom_value == b.atom_value
        assert np.isnan(b.ks) and np.isfinite(a.ks)


def test_cell_table_groups_categorical_keys_like_strings():
    col = pd.Series(["b", None, "a", "b", 3, np.nan], dtype=object)
    cat = _key_categorical(col)
    assert list(cat.astype(str)) == ["b", "unknown", "a", "b", "3", "unknown"]
    assert list(cat.categories) == sorted(cat.categories)
    frame = pd.DataFrame({"cluster": ["B", "A", "B", "A", "B"] * 40, "type": ["x", "y"] * 100,
                          "v": np.arange(200.0)})
    seen = []
    t = CellTable(("cluster", "type"), min_jobs=10).fit(
        frame, lambda sub, cell, parent: (seen.append(list(sub.columns)), float(sub["v"].sum()))[1], columns=("v",))
    assert all(cols == ["cluster", "type", "v"] for cols in seen)
    for (cl, ty), sub in frame.groupby(["cluster", "type"]):
        assert t.resolve(cluster=cl, type=ty).value == sub["v"].sum()
    assert t.resolve().value == frame["v"].sum()


def test_pruned_ks_is_the_full_supremum():
    # ks_distance(monotone=True) evaluates the CDF at a fraction of a large sample's values: same supremum
    from acmemodel.models.distributions import LogNormal
    from acmemodel.models.gof import KS_PRUNE_MIN, ecdf_steps

    rng = np.random.default_rng(3)
    n = 4 * KS_PRUNE_MIN
    cases = [(rng.lognormal(3, 1, n), None, LogNormal(mu=3.05, sigma=0.97).cdf),              # continuous
             (np.round(rng.lognormal(3, 1, n)), None, LogNormal(mu=3.0, sigma=1.0).cdf),      # ties
             (rng.lognormal(3, 1, n), rng.random(n) < 0.2, LogNormal(mu=2.9, sigma=1.1).cdf),  # censored (KM)
             (rng.normal(5, 3, n), None, Empirical(atoms=np.sort(rng.normal(5, 2, 200)), h=0.3)._cdf_y)]
    for x, c, cdf in cases:
        full = ks_distance(x, cdf, c)
        assert ks_distance(x, cdf, c, monotone=True) == full
        assert ks_distance(x, cdf, c, steps=ecdf_steps(x, c), monotone=True) == full
    # a hurdle cell (an atom: the CDF jumps) through the left-limit reuse of _OnceCdf
    x = np.where(rng.random(n) < 0.3, 0.0, rng.lognormal(5, 2, n))
    cell = fit_duration_cell(x, None, threshold=1.0, families=("lognormal",))
    xk = np.where(x <= 1.0, cell.atom_value, x)
    assert cell.ks == ks_distance(xk, _OnceCdf.of_cell(cell))  # (the unpruned computation of the fit)


def test_bandwidth_cv_in_blocks_and_on_tied_values_equals_whole_matrix():
    """The bandwidth CV's score in cache-sized blocks equals the whole matrix's; on whole-second data (ties,
    scored once with their counts) it equals the mean over every value to rounding."""
    from acmemodel.models.distributions_mix import _cv_scores, _lse_rows
    from acmemodel.models.family import _LOG_2PI

    rng = np.random.default_rng(4)
    atoms = np.sort(rng.normal(3, 2, 200))
    for n, frac, whole in ((1000, 0.0, False), (1000, 0.1, False), (37, 0.3, False), (3000, 0.0, True),
                           (3000, 0.2, True)):
        y = rng.normal(3, 2, n)
        if whole:
            y = np.log(np.round(np.exp(y)) + 1.0)
        ch = rng.random(n) < frac
        d = y[:, None] - atoms
        for h in (0.05, 0.4):
            z = d / h
            ll = np.empty(n)
            ll[~ch] = _lse_rows(-0.5 * z[~ch] ** 2) - np.log(atoms.size * h) - 0.5 * _LOG_2PI
            if ch.any():
                ll[ch] = _lse_rows(special.log_ndtr(-z[ch])) - np.log(atoms.size)
            got = _cv_scores(y, ch, atoms, [h])
            if whole:
                assert got == pytest.approx([float(ll.mean())], rel=1e-12)
            else:
                assert got == [float(ll.mean())]


def test_predictor_boosters_share_one_dataset():
    # the quantiles' boosters are trained on one binned Dataset: the same trees as one Dataset each
    import lightgbm as lgb

    rng = np.random.default_rng(5)
    X = rng.normal(size=(3000, 4))
    y = X[:, 0] + rng.normal(size=3000)
    params = {"objective": "quantile", "num_leaves": 15, "min_data_in_leaf": 20, "num_threads": 1, "seed": 0,
              "verbose": -1, "deterministic": True, "force_row_wise": True}
    shared = lgb.Dataset(X, y, free_raw_data=True, params={"verbose": -1})
    for a in (0.1, 0.5, 0.9):
        own = lgb.train({**params, "alpha": a}, lgb.Dataset(X, y, free_raw_data=True, params={"verbose": -1}), 30)
        assert lgb.train({**params, "alpha": a}, shared, 30).model_to_string() == own.model_to_string()


def test_lightgbm_threads_wait_passively():
    # the predictor's default 2 LightGBM threads: idle OpenMP threads sleep (spinning ones cost many times
    # the fit's CPU on a shared machine); a setting of the user's is kept (os.environ.setdefault)
    import os
    import subprocess
    import sys

    code = ("import os; from acmemodel.models.lgbm_text import import_lightgbm; import_lightgbm(); "
            "print(os.environ['OMP_WAIT_POLICY'])")
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "PASSIVE"


def test_failure_normal_logpdf_is_scipys():
    from scipy import stats

    from acmemodel.models.failure_mle import _norm_logpdf

    z = np.r_[np.random.default_rng(6).normal(0, 3, 10_000), 0.0, -0.0, 40.0, -40.0, np.inf, -np.inf, np.nan]
    np.testing.assert_array_equal(_norm_logpdf(z), stats.norm.logpdf(z))


def test_predictor_capped_sample_copies_only_the_kept_rows():
    # the stratified sample drawn from the mask's rows (only those copied) is the sample of the masked frame
    from acmemodel.evaluation.synthetic import synthetic_jobs
    from acmemodel.models.predictor import RuntimePredictor

    jobs = synthetic_jobs(8000, 5)
    mask = jobs["started"].fillna(False).astype(bool) & jobs["run_s"].notna() & (jobs["gpu_num"] > 0)
    got = RuntimePredictor(max_train_jobs=1500)._capped(jobs, mask)
    sub = jobs.loc[mask]
    rng, n = np.random.default_rng(0), len(sub)
    codes = sub.groupby(["cluster", "type"], sort=True, observed=True).ngroup().to_numpy()
    keep = np.zeros(n, bool)
    for g in np.unique(codes):
        rows = np.flatnonzero(codes == g)
        keep[rng.choice(rows, size=min(max(1, int(round(len(rows) * 1500 / n))), len(rows)), replace=False)] = True
    assert got.equals(sub[keep])


def test_predictor_small_training_sets_train_on_one_thread():
    # below PARALLEL_MIN_ROWS the boosters train on one thread whatever n_jobs: the trees of n_jobs=1
    from acmemodel.evaluation.synthetic import synthetic_jobs
    from acmemodel.models.predictor import PARALLEL_MIN_ROWS, RuntimePredictor

    jobs = synthetic_jobs(3000, 7)
    assert len(jobs) < PARALLEL_MIN_ROWS
    one = RuntimePredictor(n_estimators=20, n_jobs=1).fit(jobs).artifacts()
    assert RuntimePredictor(n_estimators=20, n_jobs=2).fit(jobs).artifacts() == one


def test_logsumexp_rows_is_scipys_and_the_kernel_law_unchanged():
    from acmemodel.models.distributions_mix import _logsumexp_rows
    from acmemodel.models.family import _LOG_2PI

    rng = np.random.default_rng(8)
    a = rng.normal(0, 30, (600, 200))
    a[1, :] = -np.inf                       # every term zero
    a[2, 5] = np.inf                        # an infinite term
    a[3, 7] = np.nan                        # a missing term
    a[4, :] = 3.0                           # every term the maximum
    a[5, [1, 9, 40]] = a[5].max() + 1.0     # a tied maximum
    a[6, :] = np.where(rng.random(200) < 0.5, -np.inf, a[6])
    np.testing.assert_array_equal(_logsumexp_rows(a), special.logsumexp(a, axis=-1))
    e = Empirical(atoms=np.sort(rng.normal(5, 2, 200)), h=0.2)
    x = np.r_[rng.lognormal(5, 2, 5000), 0.0, -1.0, np.inf]
    y = np.log(np.where(x > 0, x, 1.0))
    z = (y[:, None] - e.atoms) / e.h
    dens = special.logsumexp(-0.5 * z * z, axis=-1) - np.log(e.atoms.size * e.h) - 0.5 * _LOG_2PI - y
    np.testing.assert_array_equal(e.logpdf(x), np.where(x > 0, dens, -np.inf))
    ys = np.where(x > 0, y, -np.inf)
    sf = special.logsumexp(special.log_ndtr(-(ys[:, None] - e.atoms) / e.h), axis=-1) - np.log(e.atoms.size)
    np.testing.assert_array_equal(e.logsf(x), sf)
