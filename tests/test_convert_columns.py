"""``convert`` keeps every column of a row with its row whatever the input order: for every importer,
the fixture's records are shuffled (out of submission order), converted, and the written file read
back with ``load_trace`` is compared row by row, every column, with ``load_trace(format=...)`` of the
same shuffled input. Also: the cluster travels with the file (sidecar / Parquet metadata / ``cluster``
column) and the file's own duration column agrees with its timestamps."""
from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from acmemodel.cli.convert import EXTRA_ORDER, convert
from acmemodel.errors import DataWarning
from acmemodel.trace import load_trace

D = Path(__file__).parent / "data" / "importers"
RNG_SEED = 7


def _perm(n: int) -> np.ndarray:
    """A seeded permutation of n records that is not the identity (reversed, then shuffled)."""
    p = np.random.default_rng(RNG_SEED).permutation(n)
    return p[::-1] if (np.diff(p) > 0).all() else p


def _shuffle_lines(src: Path, dst: Path, *, keep_head) -> Path:
    lines = src.read_text(encoding="utf-8").splitlines()
    head = [ln for i, ln in enumerate(lines) if keep_head(i, ln)]
    body = [ln for i, ln in enumerate(lines) if not keep_head(i, ln) and ln.strip()]
    dst.write_text("\n".join(head + [body[i] for i in _perm(len(body))]) + "\n", encoding="utf-8")
    return dst


def shuffled(fmt: str, tmp: Path) -> Path:
    """The fixture of ``fmt`` with its records in a shuffled order (a new file under ``tmp``)."""
    if fmt == "slurm":
        return _shuffle_lines(D / "sacct_parsable2.txt", tmp / "sacct.txt", keep_head=lambda i, ln: i == 0)
    if fmt == "swf":
        return _shuffle_lines(D / "sample.swf", tmp / "log.swf", keep_head=lambda i, ln: ln.startswith(";"))
    if fmt == "helios":
        return _shuffle_lines(D / "cluster_log.csv", tmp / "cluster_log.csv", keep_head=lambda i, ln: i == 0)
    if fmt == "k8s":
        return _shuffle_lines(D / "openb_pod_list_default.csv", tmp / "openb_pod_list_default.csv",
                              keep_head=lambda i, ln: i == 0)
    if fmt == "pai2020":
        shutil.copy(D / "pai_task_table.csv", tmp / "pai_task_table.csv")
        return _shuffle_lines(D / "pai_job_table.csv", tmp / "pai_job_table.csv", keep_head=lambda i, ln: False)
    if fmt == "philly":
        data = json.loads((D / "cluster_job_log").read_text(encoding="utf-8"))
        (tmp / "cluster_job_log").write_text(json.dumps([data[i] for i in _perm(len(data))]), encoding="utf-8")
        return tmp / "cluster_job_log"
    raise AssertionError(fmt)


def quiet_load(*a, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)
        return load_trace(*a, **kw)


JOB_COLS = ("job_id", "user", "type", "state", "gpu_num", "node_num", "cpu_num", "mem_per_pod_GB",
            "submit_s", "start_s", "end_s", "run_censored", "queue_censored", "cluster")


@pytest.mark.parametrize("fmt", ["slurm", "swf", "helios", "philly", "pai2020", "k8s"])
@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_convert_rows_aligned_on_shuffled_input(fmt, suffix, tmp_path):
    src = shuffled(fmt, tmp_path)
    ref = quiet_load(src, format=fmt, cluster="site")
    sub = ref.jobs["submit_s"].to_numpy()
    assert not (np.diff(sub) >= 0).all(), "the shuffled input must be out of submission order"
    out = tmp_path / f"site{suffix}"
    convert([src], fmt, out)
    back = quiet_load(out)
    # the reference in the written order (submission order, ties in input order)
    order = np.argsort(sub, kind="stable")
    rj = ref.jobs.iloc[order].reset_index(drop=True)
    rx = ref.extras.iloc[order].reset_index(drop=True)
    bj = back.jobs
    assert len(bj) == len(rj)
    for c in JOB_COLS:
        a, b = rj[c].to_numpy(), bj[c].to_numpy()
        if c in ("submit_s", "start_s", "end_s"):  # whole seconds in the file
            np.testing.assert_allclose(b, np.round(a), atol=0.5, err_msg=c)
        elif c in ("gpu_num", "node_num", "cpu_num", "mem_per_pod_GB"):
            np.testing.assert_allclose(b.astype(float), a.astype(float), rtol=1e-9, equal_nan=True, err_msg=c)
        else:
            assert [str(x) for x in a] == [str(x) for x in b], c
    extras = [c for c in EXTRA_ORDER if c in rx.columns]
    assert extras, "every fixture has at least one extra column"
    for c in extras:
        want = rx[c].astype(object).where(rx[c].notna(), "").astype(str).tolist()
        got = back.extras[c].astype(object).where(back.extras[c].notna(), "").astype(str).tolist()
        assert got == want, f"{fmt}: column {c} out of step with its rows"
    # the file's own duration/queue/gpu_time agree with its timestamps
    assert not any(back.inconsistencies.values()), back.inconsistencies
    # the cluster travels with the file: its name, zone and description
    assert back.clusters == ["site"]
    assert back.cluster_spec("site") == ref.cluster_spec("site")
    assert "cluster" not in back.extras.columns
