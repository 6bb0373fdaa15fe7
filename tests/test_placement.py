"""Step 5 of the generative story: pretraining chains placed within the reservation
(acmemodel.joblife.place_reserved / shift_chains, synth's pretrain_gpus)."""
from __future__ import annotations

import warnings

import numpy as np
import pytest


def _peak(start, span, gpus, t_grid):
    """Largest number of GPUs held at any of ``t_grid`` by intervals [start, start + span)."""
    held = np.zeros(len(t_grid))
    for s, d, g in zip(start, span, gpus):
        held[(t_grid >= s) & (t_grid < s + d)] += g
    return held.max()


def test_chains_that_fit_keep_their_time_and_the_rest_fit_the_reservation():
    from acmemodel.joblife import PLACE_BIN_S, place_reserved

    rng = np.random.default_rng(1)
    n = 300
    start = np.sort(rng.uniform(0, 30 * 86400, n))
    span = rng.exponential(20_000, n)
    gpus = rng.choice([64, 256, 512, 1024], n, p=[0.5, 0.3, 0.15, 0.05])
    new, rep = place_reserved(start, span, gpus, 2048, np.random.default_rng(2), window=(0, 30 * 86400))
    assert rep["chains"] == n and rep["unplaced"] == 0
    assert 0 < rep["moved"] < n
    # every chain is held within the reservation (checked off the placement's own timeline, on a finer grid)
    grid = np.arange(0, 31 * 86400 + span.max(), PLACE_BIN_S / 4)
    assert _peak(new, span, gpus, grid) <= 2048
    # independent placement exceeds it: the test is not vacuous
    assert _peak(start, span, gpus, grid) > 2048
    # the chains not moved are exactly at their nominal time; moved ones start inside the window
    kept = new == start
    assert kept.sum() == n - rep["moved"]
    assert np.all((new >= 0) & (new < 30 * 86400))


def test_a_chain_larger_than_the_reservation_is_left_alone():
    from acmemodel.joblife import place_reserved

    new, rep = place_reserved(np.array([0.0, 10.0]), np.array([100.0, 100.0]), np.array([4096, 8]), 2048,
                              np.random.default_rng(0))
    assert new[0] == 0.0 and rep["moved"] == 0


def test_shift_chains_moves_every_attempt_of_a_chain_by_one_offset():
    from acmemodel.joblife import shift_chains

    # two chains of 1,024 GPUs over the same hours (one must move, with both of its attempts) and 20
    # one-attempt 8-GPU chains spread over 12 days, whose submissions are where a moved chain may go
    submit = np.r_[0.0, 5_000.0, 100.0, 5_100.0, np.linspace(20_000, 1e6, 20)]
    run = np.r_[4_000.0, 4_000.0, 4_000.0, 4_000.0, np.full(20, 10.0)]
    chain = np.r_[7, 7, 9, 9, 100 + np.arange(20)]
    gpus = np.r_[np.full(4, 1024), np.full(20, 8)]
    new, rep = shift_chains(submit, run, gpus, chain, 1032, np.random.default_rng(0), window=(0.0, 1.1e6))
    assert rep["moved"] == 1 and rep["unplaced"] == 0
    d = new - np.floor(submit)
    assert d[0] == d[1] and d[2] == d[3]
    assert (d[0] == 0) != (d[2] == 0)
    assert np.all(d[4:] == 0)
    # the two big chains no longer overlap
    c7, c9 = (new[0], new[1] + run[1]), (new[2], new[3] + run[3])
    assert c7[0] >= c9[1] or c7[1] <= c9[0]


@pytest.fixture(scope="module")
def seren60():
    from acmemodel.synth import simulate_jobs

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        placed = simulate_jobs(None, days=60, cluster="Seren", seed=5)
        free = simulate_jobs(None, days=60, cluster="Seren", seed=5, pretrain_gpus=None)
    return placed, free


def test_synth_places_pretraining_within_the_bundles_reservation(seren60):
    from acmemodel import load_default
    from acmemodel.synth import pretrain_reservation

    placed, free = seren60
    cap = pretrain_reservation(load_default(), "Seren")
    assert cap is not None
    rep = placed.attrs["pretrain_placement"]
    assert rep["reservation_gpus"] == cap and rep["unplaced"] == 0
    p = placed[(placed["type"] == "Pretrain") & placed["run_s"].notna()]
    grid = np.arange(placed["submit_s"].min(), placed["submit_s"].max(), 30.0)
    assert _peak(p["submit_s"].to_numpy(), p["run_s"].to_numpy(), p["gpu_num"].to_numpy(), grid) <= cap
    # placement moves submissions only: the same jobs, GPU counts, states and run times otherwise
    assert "pretrain_placement" not in free.attrs
    for col in ("gpu_num", "state"):
        a = placed.loc[placed["type"] == "Pretrain", col].value_counts().sort_index()
        b = free.loc[free["type"] == "Pretrain", col].value_counts().sort_index()
        # a chain moved past the window's end loses its attempts there: at most a few jobs
        assert (a.reindex(b.index, fill_value=0) - b).abs().sum() <= max(3, 0.01 * b.sum()), col
    assert len(placed[placed["type"] != "Pretrain"]) == len(free[free["type"] != "Pretrain"])


def test_pretrain_gpus_is_validated():
    from acmemodel.synth import simulate_jobs

    with pytest.raises(ValueError, match="pretrain_gpus"):
        simulate_jobs(None, days=1, cluster="Seren", seed=0, pretrain_gpus="lots")
