"""GpuCountModel: recovery of a known pmf, the stated smoothing, back-off, round trip."""
from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from acmemodel.errors import DataWarning, NotFittedError
from acmemodel.models.bundle import Bundle
from acmemodel.models.gpu_counts import GpuCountModel, scale_gpu_counts


def _jobs(cells: dict, rng) -> pd.DataFrame:
    """Jobs drawn from known pmfs ``{(cluster, type): (n, {gpus: p})}``."""
    frames = []
    for (cl, ty), (n, pmf) in cells.items():
        v = np.array(list(pmf))
        p = np.array(list(pmf.values()), dtype=float)
        frames.append(pd.DataFrame({"cluster": cl, "type": ty, "gpu_num": rng.choice(v, n, p=p / p.sum())}))
    return pd.concat(frames, ignore_index=True)


TRUE = {("Seren", "Eval"): (20000, {0: 0.1, 1: 0.5, 2: 0.1, 4: 0.1, 8: 0.2}),
        ("Seren", "Pretrain"): (3000, {64: 0.2, 128: 0.3, 256: 0.3, 512: 0.15, 1024: 0.05}),
        ("Kalos", "Eval"): (5000, {1: 0.9, 8: 0.1})}


def test_recovers_known_pmf_within_binomial_error():
    rng = np.random.default_rng(3)
    m = GpuCountModel().fit(_jobs(TRUE, rng))
    for (cl, ty), (n, pmf) in TRUE.items():
        fitted = m.pmf(cluster=cl, type=ty)
        for g, p in pmf.items():
            se = np.sqrt(p * (1 - p) / n)
            assert abs(fitted[g] - p) < 5 * se + 1.0 / n, (cl, ty, g)  # smoothing moves at most a/(N+a)
        assert fitted.sum() == pytest.approx(1.0)
        assert m.mean_gpus(cluster=cl, type=ty) == pytest.approx(
            sum(g * p for g, p in pmf.items()), rel=0.05)


def test_smoothing_formula_by_hand():
    jobs = pd.DataFrame({"cluster": ["S"] * 8, "type": ["A"] * 4 + ["B"] * 4,
                         "gpu_num": [1, 1, 1, 8, 64, 64, 64, 64]})
    m = GpuCountModel(smoothing=1.0, base_smoothing=1.0).fit(jobs)
    # base: powers of two 1..64 (7 values), uniform 1/7
    base = {g: 1 / 7 for g in (1, 2, 4, 8, 16, 32, 64)}
    pooled_n = {1: 3, 8: 1, 64: 4}
    p_cl = {g: (pooled_n.get(g, 0) + base[g]) / (8 + 1) for g in base}
    n_a = {1: 3, 8: 1}
    p_a = {g: (n_a.get(g, 0) + p_cl[g]) / (4 + 1) for g in base}
    got = m.pmf(cluster="S", type="A")
    for g, p in p_a.items():
        assert got[g] == pytest.approx(p, rel=1e-12)
    # a size seen only in type B gets mass in A through the cluster pool
    assert got[64] > got[32] > 0
    s = m.summary()
    row = s[(s["type"] == "A") & (s["gpu_num"] == 64)].iloc[0]
    assert row["n"] == 0 and row["p_empirical"] == 0 and row["p"] > 0


def test_no_smoothing_is_raw_empirical():
    jobs = pd.DataFrame({"cluster": "S", "type": "A", "gpu_num": [1, 1, 2, 8]})
    m = GpuCountModel(smoothing=0, base_smoothing=0).fit(jobs)
    assert m.pmf(cluster="S", type="A").to_dict() == {1: 0.5, 2: 0.25, 8: 0.25}


def test_sampling_matches_pmf_and_is_reproducible():
    m = GpuCountModel.from_pmfs({("S", "A"): {1: 0.7, 8: 0.3}, ("S", "B"): {64: 1.0}})
    rng = np.random.default_rng(0)
    x = m.sample(10000, rng, cluster="S", type="A")
    assert set(np.unique(x)) <= {1, 8, 2, 4, 16, 32, 64}
    p8 = np.mean(x == 8)
    assert abs(p8 - 0.3) < 5 * np.sqrt(0.3 * 0.7 / 10000)
    a = m.sample_cells(["S", "S", "S"] * 100, ["A", "B", "A"] * 100, np.random.default_rng(1))
    b = m.sample_cells(["S", "S", "S"] * 100, ["A", "B", "A"] * 100, np.random.default_rng(1))
    assert np.array_equal(a, b)
    assert np.all(a[1::3] == 64)


def test_backoff_and_errors():
    m = GpuCountModel().fit(_jobs({("S", "A"): (100, {1: 1.0}), ("K", "B"): (50, {8: 1.0})},
                                  np.random.default_rng(0)))
    with pytest.raises(ValueError, match=r"unknown type 'Nope'.*A, B"):  # never seen: an error
        m.pmf(cluster="S", type="Nope")
    with pytest.warns(DataWarning, match="no jobs of type 'B' in S"):  # seen elsewhere: back-off, warned
        p = m.pmf(cluster="S", type="B")
    assert p.sum() == pytest.approx(1) and p.idxmax() == 1
    # cluster not given: the job-count-weighted mixture of the clusters (100 S jobs of 1 GPU, 50 K of 8)
    mix = m.pmf()
    assert mix.sum() == pytest.approx(1)
    assert mix[1] == pytest.approx(100 / 150 * m.pmf(cluster="S")[1] + 50 / 150 * m.pmf(cluster="K").get(1, 0))
    assert m.mean_gpus(type="B") == pytest.approx(m.mean_gpus(cluster="K", type="B"))
    with pytest.raises(ValueError, match="cluster"):
        m.pmf(cluster="X", type="A")
    with pytest.raises(ValueError, match="smoothing"):
        GpuCountModel(smoothing=-1).fit(pd.DataFrame({"cluster": ["S"], "type": ["A"], "gpu_num": [1]}))
    with pytest.raises(ValueError, match="gpu_num"):
        GpuCountModel().fit(pd.DataFrame({"cluster": ["S"], "type": ["A"]}))
    with pytest.raises(NotFittedError):
        GpuCountModel().pmf(cluster="S")


def test_scale_gpu_counts():
    g = np.array([0, 1, 2, 8, 64, 1024])
    assert np.array_equal(scale_gpu_counts(g, 1.0), g)
    assert np.array_equal(scale_gpu_counts(g, 2.0), [0, 2, 4, 16, 128, 2048])
    assert np.array_equal(scale_gpu_counts(g, 0.25), [0, 1, 1, 2, 16, 256])
    x = scale_gpu_counts(np.array([24]), 1.5)  # 36 -> whole nodes
    assert x[0] % 8 == 0
    with pytest.raises(ValueError, match="gpu scale"):
        scale_gpu_counts(g, 0)


def test_bundle_roundtrip(tmp_path):
    m = GpuCountModel(smoothing=2.0).fit(_jobs(TRUE, np.random.default_rng(5)))
    Bundle({"gpu": m}).save(tmp_path / "b")
    m2 = Bundle.load(tmp_path / "b")["gpu"]
    assert isinstance(m2, GpuCountModel) and m2.smoothing == 2.0
    pd.testing.assert_frame_equal(m.summary(), m2.summary())
    assert np.array_equal(m.sample(50, np.random.default_rng(2), cluster="Seren", type="Eval"),
                          m2.sample(50, np.random.default_rng(2), cluster="Seren", type="Eval"))


def test_plot_draws():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    m = GpuCountModel().fit(_jobs(TRUE, np.random.default_rng(5)))
    fig, ax = plt.subplots()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert m.plot(ax, cluster="Seren", type="Eval") is ax
    plt.close(fig)
