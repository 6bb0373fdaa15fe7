"""Shared fixtures: the published README example rows and small AcmeTrace-format files."""
from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402

from acmemodel.datasets.reference import _data_path  # noqa: E402

SEREN_HEADER = ("job_id,user,node_num,gpu_num,cpu_num,type,state,submit_time,start_time,end_time,"
                "duration,queue,gpu_time")
KALOS_HEADER = ("job_id,user,node_num,gpu_num,cpu_num,mem_per_pod_GB,shared_mem_per_pod,type,state,"
                "submit_time,start_time,end_time,fail_time,stop_time,duration,queue,gpu_time")


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
