"""RuntimeModel and the shared cell machinery: recovery of known per-cell distributions (5-SE
tolerances), zero-duration atom, state probabilities, back-off, degenerate/sparse cells, round trips."""
from __future__ import annotations

import math
import types

import matplotlib

matplotlib.use("Agg")
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from scipy import stats  # noqa: E402

from acmemodel.errors import NotFittedError  # noqa: E402
from acmemodel.models import Bundle  # noqa: E402
from acmemodel.models.cells import CellTable, lattice_levels  # noqa: E402
from acmemodel.models.runtime import RuntimeModel  # noqa: E402


def make_jobs(spec, seed=0):
    """Contract-shaped jobs: ``spec`` = list of (cluster, type, gpus, state, n, sampler(n, rng))."""
    rng = np.random.default_rng(seed)
    parts = []
    t0 = 1.68e9
    for cluster, typ, gpus, state, n, draw in spec:
        run = np.asarray(draw(n, rng), dtype=float)
        submit = t0 + rng.random(n) * 86400 * 100
        start = submit + 10.0
        parts.append(pd.DataFrame({
            "cluster": cluster, "job_id": [f"{cluster}{typ}{state}{gpus}-{i}" for i in range(n)],
            "user": "u" + pd.Series(rng.integers(0, 20, n)).astype(str), "type": typ,
            "state": state, "analysis_state": state, "gpu_num": gpus, "node_num": max(1, gpus // 8),
            "cpu_num": 8.0, "is_gpu": gpus > 0, "submit_s": submit, "start_s": start, "end_s": start + run,
            "started": True, "run_s": run, "queue_s": 10.0, "queue_censored": False,
        }))
    jobs = pd.concat(parts, ignore_index=True).sort_values("submit_s", ignore_index=True)
    for c in ("submit", "start", "end"):
        jobs[f"{c}_time"] = pd.to_datetime(jobs[f"{c}_s"], unit="s", utc=True)
    return jobs


LN = (4.0, 1.0)        # Eval COMPLETED, 1 GPU: lognormal(mu, sigma)
WB = (0.6, 50.0)       # Eval FAILED, 1 GPU: Weibull(k, lam)
P_ZERO = 0.05          # zero-second share of the Eval FAILED cell


def _ln(n, rng):
    return np.exp(LN[0] + LN[1] * rng.standard_normal(n))


def _wb_with_zeros(n, rng):
    x = stats.weibull_min(c=WB[0], scale=WB[1]).rvs(n, random_state=rng)
    x[rng.random(n) < P_ZERO] = 0.0
    return x


SPEC = [
    ("A", "Eval", 1, "COMPLETED", 3000, _ln),
    ("A", "Eval", 1, "FAILED", 1500, _wb_with_zeros),
    ("A", "Eval", 1, "CANCELLED", 60, _ln),                              # sparse: backs off
    ("A", "Pretrain", 256, "COMPLETED", 300, lambda n, r: np.exp(10 + 0.8 * r.standard_normal(n))),
    ("A", "Debug", 8, "COMPLETED", 250, lambda n, r: np.full(n, 5.0)),  # degenerate
    ("A", "Other", 8, "COMPLETED", 220, lambda n, r: np.zeros(n)),       # all zero-second
    ("A", "Eval", 0, "COMPLETED", 400, _ln),                              # CPU jobs: excluded
]


@pytest.fixture(scope="module")
def jobs():
    return make_jobs(SPEC, seed=1)


@pytest.fixture(scope="module")
def model(jobs):
    return RuntimeModel(min_jobs=200).fit(jobs)  # the sparse cells of SPEC back off at 200


KEY_C = dict(cluster="A", type="Eval", gpus=1, state="COMPLETED")
KEY_F = dict(cluster="A", type="Eval", gpus=1, state="FAILED")


def test_lognormal_cell_recovered(model):
    cell = model.resolve(**KEY_C)
    assert cell.level == 0 and cell.n == 3000
    f = cell.value.family
    assert f.name == "lognormal"
    n = 3000
    assert abs(f.mu - LN[0]) <= 5 * LN[1] / math.sqrt(n)
    assert abs(f.sigma - LN[1]) <= 5 * LN[1] / math.sqrt(2 * n)


def test_weibull_cell_and_zero_atom(model):
    v = model.resolve(**KEY_F).value
    n = 1500
    se_p = math.sqrt(P_ZERO * (1 - P_ZERO) / n)
    assert abs(v.p_atom - P_ZERO) <= 5 * se_p
    assert v.atom_value == 0.0
    assert v.family.name == "weibull"
    n_pos = n - v.n_atom
    # asymptotic SEs of the Weibull MLE: Var(k)≈0.608 k²/n, Var(log lam)≈1.109/(k² n)
    assert abs(v.family.k - WB[0]) <= 5 * math.sqrt(0.608 / n_pos) * WB[0]
    assert abs(math.log(v.family.lam) - math.log(WB[1])) <= 5 * math.sqrt(1.109 / n_pos) / WB[0]
    # hurdle CDF: P(X <= 0) = p_atom, continuous above
    assert model.cdf(0.0, **KEY_F) == pytest.approx(v.p_atom)
    q = np.array([0.2, 0.5, 0.9])
    np.testing.assert_allclose(model.cdf(model.quantile(q, **KEY_F), **KEY_F), q, atol=1e-6)
    assert model.quantile(0.01, **KEY_F) == 0.0  # below the atom probability


def test_state_probabilities(model):
    p = model.state_probabilities(cluster="A", type="Eval", gpus=1)
    n = 3000 + 1500 + 60
    for state, k in (("COMPLETED", 3000), ("FAILED", 1500), ("CANCELLED", 60)):
        truth = k / n
        assert abs(p[state] - truth) <= 5 * math.sqrt(truth * (1 - truth) / n)
    assert sum(p.values()) == pytest.approx(1.0)
    assert model.state_probabilities(**KEY_C) == p  # state key ignored


def test_sample_jobs(model):
    rng = np.random.default_rng(3)
    df = model.sample_jobs(6000, rng, cluster="A", type="Eval", gpus=1)
    assert list(df.columns) == ["state", "run_s"]
    p = model.state_probabilities(cluster="A", type="Eval", gpus=1)
    frac = df["state"].value_counts(normalize=True)
    for s, ps in p.items():
        assert abs(frac.get(s, 0) - ps) <= 5 * math.sqrt(ps * (1 - ps) / 6000)
    done = df.loc[df.state == "COMPLETED", "run_s"].to_numpy()
    assert stats.kstest(done, lambda x: model.cdf(x, **KEY_C)).pvalue > 1e-4
    assert np.all(df.run_s >= 0)


def test_backoff_sparse_cell(model):
    r = model.resolve(cluster="A", type="Eval", gpus=1, state="CANCELLED")
    assert r.level == 1 and r.cell.state is None and r.cell.gpu_bucket == "1"
    s = model.summary()
    row = s[s.cell == "A/Eval/CANCELLED/1"].iloc[0]
    assert not row.fitted and row.backoff_level == 1 and row.resolved_cell == "A/Eval/*/1"
    assert "min_jobs" in row.note
    # a key not on the lattice (no cluster) resolves along the chain
    r2 = model.resolve(type="Pretrain")
    assert r2.cell.type == "Pretrain" and r2.level == 0


def test_type_level_keeps_small_types(jobs):
    """Pretrain has 300 jobs: with min_jobs=400 it keeps a type cell (≥ min_jobs_coarsest) instead of
    backing off to the all-jobs cell, whose median is ~100× too short."""
    m = RuntimeModel(min_jobs=400).fit(jobs)
    r = m.resolve(cluster="A", type="Pretrain", gpus=256, state="COMPLETED")
    assert r.cell.type == "Pretrain" and r.level == 3
    assert m.median(cluster="A", type="Pretrain", gpus=256) > 100 * m.median(cluster="A", type="Eval")
    strict = RuntimeModel(min_jobs=400, min_jobs_coarsest=None).fit(jobs)
    assert strict.resolve(cluster="A", type="Pretrain").cell.type is None
    assert strict.median(cluster="A", type="Pretrain") < m.median(cluster="A", type="Pretrain") / 100


def test_degenerate_and_zero_cells(model):
    v = model.resolve(cluster="A", type="Debug", gpus=8, state="COMPLETED").value
    assert v.source == "degenerate" and "degenerate" in v.note
    assert v.median() == pytest.approx(5.0, rel=0.02)
    z = model.resolve(cluster="A", type="Other", gpus=8, state="COMPLETED").value
    assert z.n_atom == 220 and z.source == "parent"
    assert z.p_atom > 0.99 and z.median() == 0.0
    assert np.isfinite(z.loglik([0.0, 10.0])).all()


def test_gpu_only_and_key_mapping(model):
    assert model.n_fit_ == sum(s[4] for s in SPEC if s[2] > 0)
    a = model.quantile([0.5], cluster="A", type="Eval", gpus=1, state="COMPLETED")
    b = model.quantile([0.5], cluster="A", type="Eval", gpu_bucket="1", state="COMPLETED")
    assert a == b
    with pytest.raises(ValueError, match="unknown cell key"):
        model.cdf(1.0, kind="Eval")


def test_summary_columns(model):
    s = model.summary()
    for c in ("cell", "n", "family", "parameters", "median_s", "backoff_level", "ks", "note", "fitted"):
        assert c in s.columns
    ok = s[s.fitted & (s.source != "degenerate")]
    assert (ok.ks < 0.1).all()  # a degenerate cell (point mass vs. sigma=0.01) has KS ≈ 0.5 by design
    top = s[(s.fitted) & (s.level == 4)]
    assert len(top) == 1 and top.iloc[0].cell == "*/*/*/*"


def test_round_trip_bundle(model, tmp_path):
    Bundle({"runtime": model}).save(tmp_path / "b")
    m2 = Bundle.load(tmp_path / "b")["runtime"]
    xs = np.array([0.0, 1.0, 30.0, 600.0, 1e5])
    for key in (KEY_C, KEY_F, dict(type="Pretrain"), dict(cluster="A", type="Other", gpus=8)):
        np.testing.assert_allclose(m2.cdf(xs, **key), model.cdf(xs, **key), rtol=1e-6, atol=1e-9)
    assert m2.state_probabilities(type="Eval", cluster="A", gpus=1) == \
        model.state_probabilities(type="Eval", cluster="A", gpus=1)
    pd.testing.assert_frame_equal(m2.summary().drop(columns=["parameters"]),
                                  model.summary().drop(columns=["parameters"]), check_exact=False, rtol=1e-5)
    assert m2.get_params() == model.get_params()


def test_plot(model):
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    out = model.plot(ax=ax, **KEY_C)
    assert out is ax and len(ax.lines) >= 2
    plt.close(fig)


def test_validation_and_not_fitted(jobs):
    with pytest.raises(NotFittedError):
        RuntimeModel().cdf(1.0, type="Eval")
    with pytest.raises(ValueError, match="min_jobs"):
        RuntimeModel(min_jobs=0).fit(jobs)
    with pytest.raises(ValueError, match="pareto"):
        RuntimeModel(families=("pareto",)).fit(jobs)
    with pytest.raises(ValueError, match="selection"):
        RuntimeModel(selection="aic").fit(jobs)
    with pytest.raises(ValueError, match="keys"):
        RuntimeModel(keys=("cluster", "user")).fit(jobs)
    with pytest.raises(ValueError, match="lacks column"):
        RuntimeModel().fit(jobs.drop(columns=["run_s"]))
    with pytest.raises(ValueError, match="no jobs"):
        RuntimeModel().fit(jobs[jobs.gpu_num == 0])
    with pytest.raises(ValueError, match="rng"):
        RuntimeModel().fit(jobs).sample(3, 42, type="Eval")


def test_trace_object_bic_and_tiny_inputs(jobs):
    trace = types.SimpleNamespace(jobs=jobs)
    m = RuntimeModel(selection="bic", families=("lognormal", "weibull")).fit(trace)
    assert m.resolve(**KEY_C).value.family.name == "lognormal"
    tiny = RuntimeModel().fit(jobs.head(7))  # root only, sparse
    assert np.isfinite(tiny.median(type="Eval"))
    assert tiny.summary().fitted.sum() == 1


def test_cell_table_generic():
    frame = pd.DataFrame({"cluster": ["A"] * 300 + ["B"] * 10, "type": ["Eval"] * 310,
                          "y": np.r_[np.ones(300), np.zeros(10)]})
    t = CellTable(("cluster", "type"), min_jobs=50).fit(frame, lambda s, c, p: float(s.y.mean()))
    assert t.resolve(cluster="A", type="Eval").value == 1.0
    r = t.resolve(cluster="B", type="Eval")
    assert r.level == 1 and r.cell.cluster is None and r.value == pytest.approx(300 / 310)
    t2 = CellTable.from_dict(t.to_dict(lambda v: v), lambda v: v)
    assert t2.resolve(cluster="B", type="Eval") == r
    assert lattice_levels(("cluster", "type", "gpu_bucket", "state")) == [
        ("cluster", "type", "gpu_bucket", "state"), ("cluster", "type", "gpu_bucket"),
        ("cluster", "type"), ("type",), ()]
    rf = t.resolve_frame(frame.iloc[[0, 305]])
    assert list(rf.level) == [0, 1]


def test_sample_trace_end_to_end(tmp_path, sample_trace, sample_runtime):
    trace, m = sample_trace, sample_runtime  # RuntimeModel().fit(load_sample()), shared (conftest)
    g = trace.jobs[trace.jobs.is_gpu & trace.jobs.started]
    assert m.n_fit_ == len(g)
    # paper facts (qualitative): GPU-job median is minutes; Eval far shorter than Pretrain
    assert 30 < m.median() < 600
    assert m.median(type="Eval") < m.median(type="Pretrain")
    Bundle({"runtime": m}).save(tmp_path / "s.zip")
    m2 = Bundle.load(tmp_path / "s.zip")["runtime"]
    assert m2.median(cluster="Seren", type="Eval", gpus=1) == pytest.approx(
        m.median(cluster="Seren", type="Eval", gpus=1))


def test_heldout_selection_with_an_all_censored_training_part():
    """When every value of the 3/4 training part is censored the held-out comparison is impossible:
    BIC selects the family (was: an empty comparison, NaN scores, a 'min() arg is an empty sequence'
    note and a lognormal fallback)."""
    import warnings

    from acmemodel.models.duration_cell import fit_duration_cell
    from acmemodel.models.distributions import FAMILIES

    n = 80
    x = np.exp(np.random.default_rng(0).normal(5, 1, n))
    c = (np.arange(n) % 4) != 3
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        cell = fit_duration_cell(x, c, threshold=1.0, families=tuple(FAMILIES))
    assert "min()" not in cell.note and "all censored" in cell.note
    assert cell.family is not None


def test_family_selection_gate_drops_a_family_that_misfits_the_shape():
    """The KS gate of the family selection (models.duration_cell): a family within one standard error
    of the best held-out likelihood is still not eligible when its KS distance exceeds the best
    candidate's by more than 1.63/sqrt(n); with none eligible, the candidates within the bound."""
    from acmemodel.models.duration_cell import KS_GATE, gof_eligible

    n = 569
    bar = KS_GATE / math.sqrt(n)  # 0.068
    # the Seren pretraining cell that motivated the gate: lognormal KS 0.095, empirical 0.026
    ks = {"lognormal": 0.095, "lognormal_mix2": 0.038, "empirical": 0.026}
    assert gof_eligible(ks, ["lognormal", "empirical"], n) == ["empirical"]
    assert gof_eligible(ks, ["lognormal"], n) == ["lognormal_mix2", "empirical"]
    assert gof_eligible({"lognormal": 0.026 + 0.99 * bar, "empirical": 0.026}, ["lognormal"], n) == ["lognormal"]


def test_fitted_cells_pass_the_gate():
    """On data of every shape the chosen family's KS is within the gate of the best candidate's (all
    candidates refitted on the same 3/4 the selection uses)."""
    from acmemodel.models.duration_cell import fit_duration_cell
    from acmemodel.models.distributions import FAMILIES, get_family
    from acmemodel.models.duration_cell import KS_GATE
    from acmemodel.models.gof import ks_distance

    rng = np.random.default_rng(4)
    n = 400
    k = rng.random(n) < 0.8
    x = np.round(np.exp(np.where(k, 5.6 + 1.6 * rng.standard_normal(n), 10.3 + 0.9 * rng.standard_normal(n))))
    x = x[x > 0]
    cell = fit_duration_cell(x, np.zeros(len(x), bool), threshold=0.0, families=tuple(FAMILIES))
    hold = (np.arange(len(x)) % 4) == 3
    best = min(ks_distance(x, get_family(f).fit(x[~hold], np.zeros((~hold).sum(), bool)).cdf) for f in FAMILIES)
    chosen = get_family(cell.family.name).fit(x[~hold], np.zeros((~hold).sum(), bool))
    assert ks_distance(x, chosen.cdf) <= best + KS_GATE / math.sqrt(len(x)) + 1e-9


def test_samples_stay_within_their_cell_s_longest_run(model, jobs):
    """max_run: a cell's draws are capped at its own longest fitted run (not only the cluster's), the
    cap survives the JSON round trip, and a key without gpus takes the pooled cell's."""
    ev = jobs[(jobs["type"] == "Eval") & (jobs["gpu_num"] == 1) & (jobs["run_s"] > 0)]
    top = float(ev["run_s"].max())
    assert model.max_run(cluster="A", type="Eval", gpus=1) == pytest.approx(top)
    assert model.max_run_["A"] > 10 * top  # the Pretrain cell's runs are far longer
    x = model.sample(100_000, np.random.default_rng(0), cluster="A", type="Eval", gpus=1, state="COMPLETED")
    assert x.max() <= top
    back = RuntimeModel.from_dict(model.to_dict())
    assert back.max_run(cluster="A", type="Eval", gpus=1) == pytest.approx(top)
    assert model.max_run(cluster="A") == pytest.approx(model.max_run_["A"])
    assert model.max_run(cluster="A", type="Pretrain", gpus=256) <= model.max_run_["A"]


def test_family_selection_prefers_the_parent_s_family_when_the_cell_cannot_tell():
    """Hierarchical tie-break (models.duration_cell): a small cell drawn from its parent's shape (a
    steep step no two-parameter family has) takes the parent's empirical family when the one-SE rule
    ties it with simpler families, while without the parent the fewest-parameters rule picks one of
    those; the child's law is then closer to the shape the cells share."""
    from acmemodel.models.duration_cell import fit_duration_cell
    from acmemodel.models.distributions import FAMILIES

    # the published Kalos debug-job duration curve (paper Fig. 5), as a piecewise-linear CDF in log x
    xp = np.log([8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 32768])
    fp = np.array([0, 0.013, 0.084, 0.173, 0.259, 0.387, 0.708, 0.888, 0.972, 0.991, 0.996, 1.0])

    def draw(n, seed):
        return np.round(np.exp(np.interp(np.random.default_rng(seed).random(n), fp, xp)))

    fams = tuple(FAMILIES)
    parent = fit_duration_cell(draw(3000, 0), None, threshold=0.0, families=fams)
    assert parent.family.name == "empirical"
    grid = np.geomspace(2, 1e5, 500)
    alone, child = [], []
    for seed in range(1, 9):                  # eight sibling cells of 90 runs each
        x = draw(90, seed)
        alone.append(fit_duration_cell(x, None, threshold=0.0, families=fams))
        child.append(fit_duration_cell(x, None, threshold=0.0, families=fams, parent=parent, parent_label="p"))
    assert sum(c.family.name == "empirical" for c in alone) <= 2
    assert sum(c.family.name == "empirical" for c in child) >= 6
    # the siblings' mixture (what a type-level curve sums): the smooth families' shared bias remains
    truth = np.interp(np.log(grid), xp, fp)
    mix = {k: np.mean([c.cdf(grid) for c in cells], axis=0) for k, cells in (("alone", alone), ("child", child))}
    err = {k: float(np.max(np.abs(v - truth))) for k, v in mix.items()}
    assert err["child"] < 0.7 * err["alone"], err
