"""Shared fixtures: the published README example rows and small AcmeTrace-format files."""
from __future__ import annotations

import os

# The suite runs on two pytest-xdist workers (pyproject addopts; the CI has two cores): one BLAS / OpenMP thread
# per worker. With the libraries' default of one thread per core, each worker's LightGBM, OpenBLAS and
# OpenMP-using fits start two threads that spin-wait for a core the other worker holds (measured on the LightGBM /
# restart / bundle files: 24 s -> 14 s of CPU, 38 s -> 23 s wall). Set before numpy is imported (matplotlib
# imports it); an explicit setting in the environment wins.
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import matplotlib  # noqa: E402

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from acmemodel.datasets.published import _data_path  # noqa: E402

SEREN_HEADER = ("job_id,user,node_num,gpu_num,cpu_num,type,state,submit_time,start_time,end_time,"
                "duration,queue,gpu_time")
KALOS_HEADER = ("job_id,user,node_num,gpu_num,cpu_num,mem_per_pod_GB,shared_mem_per_pod,type,state,"
                "submit_time,start_time,end_time,fail_time,stop_time,duration,queue,gpu_time")


#: the most expensive test files, most expensive first (their share of the suite's CPU time, measured with
#: ``--durations=0``): scheduled before the rest (pyproject: ``--dist loadfile --no-loadscope-reorder``), so that
#: neither xdist worker is still in one of them while the other has run out of files. Only the order depends on
#: this list; a stale entry costs balance, nothing else.
HEAVY_FIRST = ("test_calibrate.py", "test_roundtrip.py", "test_survival_eval.py", "test_failure.py",
               "test_cli_output.py", "test_forecast.py", "test_sweep.py", "test_backtest.py", "test_arrival.py",
               "test_reproduce.py", "test_importers.py", "test_synth.py", "test_checkpoint.py", "test_layout.py",
               "test_placement.py", "test_queue_policy.py", "test_messy.py", "test_planner.py",
               "test_synth_formats.py", "test_cluster_sim.py", "test_fuzz_cli.py")


def pytest_collection_modifyitems(config, items):
    """The files of :data:`HEAVY_FIRST` first, in its order; every other file after them in collection order;
    the tests of each file in their order (a stable sort)."""
    rank = {name: i for i, name in enumerate(HEAVY_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))


#: public real logs of other clusters (``../shared/data/real/`` beside the checkout: its README gives each file's
#: source); never shipped in the package. Tests on them skip when the folder is absent.
REAL_DATA = __import__("pathlib").Path(__file__).resolve().parents[2] / "shared" / "data" / "real"


@pytest.fixture(scope="session")
def real_data():
    """The folder of real logs, or a skip when this checkout has none beside it."""
    if not REAL_DATA.is_dir():
        pytest.skip(f"no real logs at {REAL_DATA}")
    return REAL_DATA


def utc_from_seconds(seconds) -> pd.Series:
    """UTC timestamps of Unix seconds, NaN -> NaT, without handing NaNs to ``pd.to_datetime(unit="s")``: pandas < 3
    reads uninitialised memory at the NaN entries of a float array there and then raises a FloatingPointError now
    and then (pandas-dev/pandas#58419; the flaky failure of tests/test_export.py's job builder)."""
    s = np.asarray(seconds, dtype=float)
    nan = np.isnan(s)
    t = pd.Series(pd.to_datetime(np.where(nan, 0.0, s), unit="s", utc=True))
    t[nan] = pd.NaT
    return t


def readme_example(cluster: str) -> str:
    """The verbatim example rows of the AcmeTrace README (shipped with provenance)."""
    with _data_path(f"reference/readme_example_{cluster}.csv").open("r") as f:
        return f.read()


@pytest.fixture
def seren_example(tmp_path):
    p = tmp_path / "trace_seren.csv"
    p.write_text(readme_example("seren"))
    return p


@pytest.fixture
def kalos_example(tmp_path):
    p = tmp_path / "trace_kalos.csv"
    p.write_text(readme_example("kalos"))
    return p


@pytest.fixture(scope="session")
def sample_trace():
    from acmemodel.trace import load_sample

    return load_sample()


@pytest.fixture(scope="session")
def default_bundle():
    """The shipped default bundle, loaded once per session (JSON + LightGBM text)."""
    from acmemodel.models.bundle import load_default

    return load_default()


def _fit_quietly(model, trace):
    """``model.fit(trace)`` with its fit warnings ignored."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return model.fit(trace)


@pytest.fixture(scope="session")
def sample_arrival(sample_trace):
    """``ArrivalModel().fit(load_sample())``, fitted once per session (per xdist worker) for the tests that
    only read it (fit warnings ignored)."""
    from acmemodel.models.arrival import ArrivalModel

    return _fit_quietly(ArrivalModel(), sample_trace)


@pytest.fixture(scope="session")
def sample_runtime(sample_trace):
    """``RuntimeModel().fit(load_sample())``, fitted once per session (per xdist worker) for the tests that
    only read it (fit warnings ignored)."""
    from acmemodel.models.runtime import RuntimeModel

    return _fit_quietly(RuntimeModel(), sample_trace)
