"""The trace contract: column names of the AcmeTrace files and of ``Trace.jobs``, quarantine
reasons, and the :class:`Trace` / :class:`FileInfo` containers returned by :func:`~acmemodel.trace.load_trace`.

Import-light (numpy, pandas and :mod:`acmemodel.errors` only): every layer may use it.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, field

import numpy as np
import pandas as pd


#: the job types of AcmeTrace
KNOWN_TYPES: tuple[str, ...] = ("Eval", "Pretrain", "SFT", "MLLM", "Debug", "Other")
#: final states of AcmeTrace jobs and their analysis state
STATE_MAP: dict[str, str] = {
    "COMPLETED": "COMPLETED", "CANCELLED": "CANCELLED", "FAILED": "FAILED",
    "TIMEOUT": "FAILED", "NODE_FAIL": "FAILED",
    # Slurm's other final states (imported sacct extracts): the job's own failure → FAILED; ended from
    # outside (preempted, requeued) → CANCELLED
    "OUT_OF_MEMORY": "FAILED", "BOOT_FAIL": "FAILED", "DEADLINE": "FAILED",
    "PREEMPTED": "CANCELLED", "REQUEUED": "CANCELLED",
    # unfinished at extraction time: right-censored observations (see UNFINISHED_STATES)
    "RUNNING": "RUNNING", "SUSPENDED": "RUNNING", "PENDING": "PENDING",
}
ANALYSIS_STATES: tuple[str, ...] = ("COMPLETED", "CANCELLED", "FAILED")
#: states of jobs that had not finished when the trace was extracted. RUNNING/SUSPENDED: started, run
#: time right-censored at the extraction time (``run_censored``); PENDING: never started, wait
#: right-censored at the extraction time (``queue_censored``). Their analysis state is RUNNING or
#: PENDING (not an outcome), and every model uses them as censored observations.
UNFINISHED_STATES: tuple[str, ...] = ("RUNNING", "SUSPENDED", "PENDING")
CENSORED_ANALYSIS_STATES: tuple[str, ...] = ("RUNNING", "PENDING")

SEREN_COLUMNS: tuple[str, ...] = (
    "job_id", "user", "node_num", "gpu_num", "cpu_num", "type", "state", "submit_time", "start_time",
    "end_time", "duration", "queue", "gpu_time")
KALOS_COLUMNS: tuple[str, ...] = (
    "job_id", "user", "node_num", "gpu_num", "cpu_num", "mem_per_pod_GB", "shared_mem_per_pod", "type",
    "state", "submit_time", "start_time", "end_time", "fail_time", "stop_time", "duration", "queue",
    "gpu_time")
KALOS_ONLY: tuple[str, ...] = ("mem_per_pod_GB", "shared_mem_per_pod", "fail_time", "stop_time")
#: columns without which a file cannot be read
REQUIRED_COLUMNS: tuple[str, ...] = (
    "job_id", "user", "node_num", "gpu_num", "type", "state", "submit_time", "start_time", "end_time")
TIME_COLUMNS = ("submit_time", "start_time", "end_time", "fail_time", "stop_time")
NUMERIC_COLUMNS = ("node_num", "gpu_num", "cpu_num", "duration", "queue", "gpu_time", "mem_per_pod_GB",
                   "shared_mem_per_pod")


def _str_dtype() -> pd.StringDtype:
    try:  # pandas >= 2.3: the "str" dtype of pandas 3 (Arrow storage, NaN for missing, numpy bool results)
        return pd.StringDtype("pyarrow", na_value=np.nan)
    except TypeError:  # pandas 2.1-2.2: the same semantics under its earlier name
        return pd.StringDtype("pyarrow_numpy")


#: dtype of ``Trace.jobs["job_id"]``: Arrow-backed strings (no Python object per row)
STR_DTYPE = _str_dtype()

#: tolerance (s) when cross-checking the files' duration/queue columns against the timestamps
CHECK_TOL_S = 1.0

JOB_COLUMNS: tuple[str, ...] = (
    "cluster", "job_id", "user", "type", "state", "analysis_state", "gpu_num", "node_num", "cpu_num",
    "is_gpu", "submit_time", "start_time", "end_time", "submit_s", "start_s", "end_s", "started", "run_s",
    "queue_s", "queue_censored", "run_censored", "gpu_time_s", "fail_time_s", "mem_per_pod_GB", "shared_mem_per_pod",
    "source_file", "source_line")


class Reason(str, enum.Enum):
    """Why a row was quarantined."""

    FIELD_COUNT = "wrong_field_count"
    UNBALANCED_QUOTE = "unbalanced_quote"
    TIME_OUT_OF_RANGE = "timestamp_out_of_range"
    MISSING_JOB_ID = "missing_job_id"
    BAD_TIMESTAMP = "unparsable_timestamp"
    MISSING_TIMESTAMP = "missing_timestamp"
    BAD_GPU_NUM = "invalid_gpu_num"
    BAD_NODE_NUM = "invalid_node_num"
    UNKNOWN_STATE = "unknown_state"
    END_BEFORE_START = "end_before_start"
    START_BEFORE_SUBMIT = "start_before_submit"
    DUPLICATE_JOB_ID = "duplicate_job_id"
    AFTER_EXTRACTION = "after_extraction"


@dataclass
class FileInfo:
    """What was read from one file."""

    path: str
    cluster: str
    schema: str  # "seren"/"kalos" (Acme's files), "acmetrace" (another cluster's), or the importer's format
    rows: int = 0  # data rows seen (accepted + rejected)
    accepted: int = 0
    rejected: int = 0
    extra_columns: list[str] = field(default_factory=list)
    missing_optional: list[str] = field(default_factory=list)
    fast_path: bool = True
    #: optional column → problem → count of accepted rows whose value was unusable (kept as missing)
    value_problems: dict = field(default_factory=dict)
    #: records in the file (header included) as the CSV reader counted them; 0 for parquet
    _records: int = field(default=0, repr=False, compare=False)

    def as_dict(self) -> dict:
        return {"path": self.path, "cluster": self.cluster, "schema": self.schema, "rows": self.rows,
                "accepted": self.accepted, "rejected": self.rejected}


@dataclass
class Trace:
    """A loaded trace: accepted jobs, quarantined rows and what was noticed while reading.

    Attributes
    ----------
    jobs : DataFrame, one row per accepted job (columns in the module docstring)
    rejected : DataFrame ``file, line, reason, detail, raw`` — the quarantine
    files : list of :class:`FileInfo`
    inconsistencies : dict kind → count of rows whose own ``duration``/``queue``/``gpu_time`` column
        disagrees with the timestamps by more than ``CHECK_TOL_S`` (plus the sub-kind
        ``duration_includes_queue``)
    warnings : list of human-readable warnings (unknown types, missing optional columns...)
    timezones : cluster → UTC offset string of its local time (for calendar features)
    extras : DataFrame of columns found in files beyond the known schemas (index = jobs.index)
    cluster_specs : cluster → :class:`~acmemodel.clusters.ClusterSpec` (see the attribute)
    """

    jobs: pd.DataFrame
    rejected: pd.DataFrame
    files: list[FileInfo] = field(default_factory=list)
    inconsistencies: dict[str, int] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    timezones: dict[str, str] = field(default_factory=dict)
    extras: pd.DataFrame | None = None
    #: extraction time (Unix s, UTC) at which unfinished jobs are censored; None if there are none
    extracted_at_s: float | None = None
    #: per imported file, the importer's report (what was mapped how, records in / accepted / rejected)
    imports: list[dict] = field(default_factory=list)
    #: optional column → problem → count of accepted rows whose value was unusable and is kept as
    #: missing (``cpu_num``: not a number / negative or infinite; ``fail_time``: before start_time...)
    value_problems: dict = field(default_factory=dict)
    #: cluster name → :class:`acmemodel.clusters.ClusterSpec`: what is known of each cluster (GPUs, GPUs
    #: per node, zone, partitions) from the file's sidecar or Parquet metadata (written by ``convert``),
    #: the importer's log header and options, or the published table for Seren and Kalos
    cluster_specs: dict = field(default_factory=dict)

    def cluster_spec(self, name: str):
        """The :class:`~acmemodel.clusters.ClusterSpec` of cluster ``name`` (``KeyError`` naming it)."""
        try:
            return self.cluster_specs[name]
        except KeyError:
            raise KeyError(f"cluster {name!r} is not in the trace (have: {', '.join(self.clusters)})") from None

    @property
    def clusters(self) -> list[str]:
        return sorted(self.jobs["cluster"].unique().tolist())

    def gpu_jobs(self) -> pd.DataFrame:
        """Accepted jobs that requested at least one GPU (the paper's per-type statistics)."""
        return self.jobs[self.jobs["is_gpu"]]

    def cpu_jobs(self) -> pd.DataFrame:
        return self.jobs[~self.jobs["is_gpu"]]

    def rejected_by_reason(self) -> dict[str, int]:
        if len(self.rejected) == 0:
            return {}
        return {str(k): int(v) for k, v in self.rejected["reason"].value_counts().sort_index().items()}

    def __len__(self) -> int:
        return len(self.jobs)

    def __repr__(self) -> str:
        return (f"Trace({len(self.jobs)} jobs, {len(self.rejected)} rejected, "
                f"clusters={self.clusters}, files={len(self.files)})")

