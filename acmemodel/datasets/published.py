"""Loaders of the published AcmeTrace reference tables shipped in ``acmemodel/datasets/data/``.

Provenance of every file is in ``acmemodel/datasets/data/PROVENANCE.md``. Nothing here reads outside
the package.
"""
from __future__ import annotations

import functools
from importlib import resources

import pandas as pd

#: failure categories of the paper's Table 3, in the paper's order
FAILURE_CATEGORIES: tuple[str, ...] = ("Infrastructure", "Framework", "Script")

_FAILURE_COLUMNS = (
    "category", "reason", "num", "gpu_demand_avg", "gpu_demand_median", "time_to_failure_avg_min",
    "time_to_failure_median_min", "gpu_time_avg_gpu_min", "failed_gpu_time_share_percent",
    "time_to_restart_avg_min", "time_to_restart_median_min", "restart_over_failure_percent", "clusters",
)


def _data_path(name: str):
    return resources.files("acmemodel.datasets").joinpath("data", name)


@functools.lru_cache(maxsize=None)
def _read_failure_table() -> pd.DataFrame:
    with _data_path("failure_table.csv").open("r") as f:
        df = pd.read_csv(f)
    missing = [c for c in _FAILURE_COLUMNS if c not in df.columns]
    if missing:  # pragma: no cover - shipped file is fixed
        raise RuntimeError(f"shipped failure_table.csv lacks columns {missing}")
    df["clusters"] = df["clusters"].str.split(";").map(tuple)
    return df


def load_failure_table() -> pd.DataFrame:
    """The paper's Table 3: 29 failure reasons in three categories (one row per reason).

    Columns (units as published): ``category`` (Infrastructure / Framework / Script), ``reason``,
    ``num`` (occurrences), ``gpu_demand_avg`` / ``gpu_demand_median`` (GPUs),
    ``time_to_failure_avg_min`` / ``time_to_failure_median_min`` (TF, minutes from start to failure),
    ``gpu_time_avg_gpu_min`` (TF × GPUs, GPU·minutes), ``failed_gpu_time_share_percent``,
    ``time_to_restart_avg_min`` / ``time_to_restart_median_min`` (TR, minutes from failure to restart),
    ``restart_over_failure_percent`` (TR/TF in %), ``clusters`` (tuple of ``"S"`` Seren / ``"K"`` Kalos).

    The table describes a failure-log subset (Kalos 32,500 tasks, mostly evaluation; Seren 675
    pretraining jobs): a prior for the mix of failure types, not a global failure rate. Returns a copy.
    """
    return _read_failure_table().copy()


#: the published reference tables shipped under ``data/reference/`` (see PROVENANCE.md)
REFERENCE_TABLES: tuple[str, ...] = (
    "cluster_summary", "clusters", "workload_mix", "duration_cdf_by_type", "gpu_job_duration_cdf_by_cluster",
    "gpu_count_cdf_by_jobs", "gpu_count_box_by_type", "gpu_count_outliers_by_type", "power_cdf",
    "queue_wait_by_type",
)


@functools.lru_cache(maxsize=None)
def _read_reference(name: str) -> pd.DataFrame:
    with _data_path(f"reference/{name}.csv").open("r") as f:
        return pd.read_csv(f)


def load_reference(name: str) -> pd.DataFrame:
    """A published AcmeTrace reference table by name (one of :data:`REFERENCE_TABLES`), as a copy.

    ``duration_cdf_by_type`` labels Eval jobs ``"Evaluation"`` as the paper's figure does; the copy
    returned here renames them to the trace's ``"Eval"``.
    """
    if name not in REFERENCE_TABLES:
        raise ValueError(f"name must be one of {', '.join(REFERENCE_TABLES)}; got {name!r}")
    df = _read_reference(name).copy()
    if "type" in df.columns:
        df["type"] = df["type"].replace({"Evaluation": "Eval"})
    return df
