"""Make the shipped sample traces ``sample_seren.csv.gz`` and ``sample_kalos.csv.gz``.

The raw AcmeTrace CSVs are not redistributed with this package. The sample is a *synthetic
look-alike*: a small draw of the calibrated pseudo-trace of :mod:`acmemodel.calibrate` (the same
generator the default bundle is fitted on, whose marginals are solved to the published statistics —
see its docstring for how every column is drawn), written by the package's AcmeTrace writer in the
exact schemas and value formats of the published files:

* scale: 0.5 % of the published Seren volume and 5 % of Kalos (a few thousand rows each), six months;
* job ids, ``cpu_num`` and the Kalos memory columns: the placeholders of
  :func:`acmemodel.synth.schema_columns` (Seren integer ids, Kalos ``dlc…`` ids);
* in addition to the pseudo-trace, ``QUEUED_CANCEL_SHARE`` of the CANCELLED GPU jobs were cancelled
  while queued (empty ``start_time``; the wait is censored at the cancel time), so that the loader's
  and the queue model's censoring paths are exercised.

A build script of the repository, not part of the installed package (the data package imports
nothing above itself). Regenerate with ``python tools/make_sample.py`` from the repository root
(writes into ``acmemodel/datasets/data/``).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

#: fraction of the published job volume per cluster
SCALES: dict[str, float] = {"Seren": 0.005, "Kalos": 0.05}
SEED = 20230301
#: share of CANCELLED GPU jobs turned into cancellations while queued
QUEUED_CANCEL_SHARE = 0.05


def sample_jobs(cluster: str) -> pd.DataFrame:
    """The sample's jobs of one cluster, in the trace contract (before formatting)."""
    from acmemodel.calibrate import published_jobs

    jobs, _ = published_jobs(cluster, scale=SCALES[cluster], seed=SEED)
    rng = np.random.default_rng([SEED, len(cluster)])
    queued = ((jobs["state"] == "CANCELLED") & jobs["is_gpu"]).to_numpy() \
        & (rng.uniform(0, 1, len(jobs)) < QUEUED_CANCEL_SHARE)
    # cancelled while queued: never started, the cancel ends the wait (end = submit + wait)
    end = jobs["submit_s"].to_numpy() + jobs["queue_s"].to_numpy()
    jobs.loc[queued, "end_s"] = end[queued]
    jobs.loc[queued, ["start_s", "run_s"]] = np.nan
    jobs.loc[queued, "gpu_time_s"] = 0.0
    jobs.loc[queued, "started"] = False
    jobs.loc[queued, "queue_censored"] = True
    # placeholders of the published formats (synth.schema_columns) instead of the pseudo-trace's own
    return jobs.drop(columns=["job_id", "cpu_num", "mem_per_pod_GB", "shared_mem_per_pod"])


def main(out_dir: str | Path | None = None) -> list[Path]:
    from acmemodel.synth import to_acmetrace, write_acmetrace

    out_dir = (Path(out_dir) if out_dir
               else Path(__file__).resolve().parents[1] / "acmemodel" / "datasets" / "data")
    written = []
    for cluster in SCALES:
        table = to_acmetrace(sample_jobs(cluster), cluster=cluster, id_seed=SEED)
        written.append(write_acmetrace(table, out_dir / f"sample_{cluster.lower()}.csv.gz"))
    return written


if __name__ == "__main__":  # pragma: no cover
    for p in main():
        print(p)
