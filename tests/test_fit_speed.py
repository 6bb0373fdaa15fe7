"""The shortcuts that keep a large fit cheap give what the direct computations give (docs/performance.md)."""
import numpy as np
import pandas as pd
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
