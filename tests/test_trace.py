"""The trace layer: both schemas, quarantine reasons, file-level errors, encodings, UTC."""
from __future__ import annotations

import gzip

import numpy as np
import pandas as pd
import pytest

from acmemodel import load_trace
from acmemodel.errors import DataWarning, TraceFormatError
from acmemodel.trace import Reason
from tests.conftest import SEREN_HEADER

GOOD = "{id},u1,1,8,128,Eval,COMPLETED,2023-03-01 00:18:22+08:00,2023-03-01 00:18:54+08:00,2023-03-01 00:20:51+08:00,117,32,936.0"


def write(tmp_path, rows, name="trace_seren.csv", header=SEREN_HEADER, newline="\n", bom=False):
    p = tmp_path / name
    text = newline.join([header, *rows]) + newline
    p.write_text(("\ufeff" if bom else "") + text, newline="")
    return p


def test_readme_examples_verbatim(seren_example, kalos_example):
    t = load_trace([seren_example, kalos_example])
    j = t.jobs.set_index("job_id")
    assert len(t.rejected) == 0
    # Seren example: 2023-03-01 00:18:22+08:00 is 2023-02-28 16:18:22 UTC
    s = j.loc["5778432"]
    assert s.cluster == "Seren" and s.state == "FAILED" and s.analysis_state == "FAILED"
    assert s.submit_time == pd.Timestamp("2023-02-28 16:18:22", tz="UTC")
    assert s.run_s == 117 and s.queue_s == 32 and s.gpu_time_s == 8 * 117
    # Kalos example: the file's duration is end - submit (18 s) but the run is end - start = 8 s
    k = j.loc["dlctk696s0jbvitv"]
    assert k.cluster == "Kalos" and k.run_s == 8 and k.queue_s == 10 and k.gpu_time_s == 64 * 8
    assert k.fail_time_s == 8
    c = j.loc["dlc1t2ypl09b8qtp"]
    assert c.run_s == 70 and c.analysis_state == "CANCELLED" and np.isnan(c.fail_time_s)
    # both Kalos rows disagree on duration (queue included) and gpu_time; Seren rows agree
    assert t.inconsistencies["duration"] == 2
    assert t.inconsistencies["duration_includes_queue"] == 2
    assert t.inconsistencies["gpu_time"] == 2
    assert t.inconsistencies["queue"] == 0
    assert t.timezones == {"Seren": "+08:00", "Kalos": "+00:00"}
    assert {f.schema for f in t.files} == {"seren", "kalos"}


def test_seconds_columns_are_utc_epoch(seren_example):
    j = load_trace(seren_example).jobs
    assert j.loc[0, "submit_s"] == pd.Timestamp("2023-03-01 00:18:22+08:00").timestamp()
    assert str(j["submit_time"].dt.tz) == "UTC"


def test_every_row_reason(tmp_path):
    rows = [
        GOOD.format(id=1),
        GOOD.format(id=2).replace(",1,8,128,", ",1,x,128,"),  # gpu_num non-numeric
        GOOD.format(id=3).replace(",1,8,128,", ",1,-8,128,"),  # gpu_num negative
        GOOD.format(id=4).replace(",1,8,128,", ",abc,8,128,"),  # node_num non-numeric
        GOOD.format(id=5).replace("2023-03-01 00:18:22+08:00", "yesterday"),  # bad timestamp
        GOOD.format(id=6).replace("COMPLETED", "EXPLODED"),  # unknown state
        GOOD.format(id=7).replace("2023-03-01 00:20:51+08:00", "2023-03-01 00:10:51+08:00"),  # end < start
        "8,u1,1,8,128,Eval,COMPLETED",  # wrong number of fields
        GOOD.format(id=1),  # duplicate job id
        GOOD.format(id=9).replace("2023-03-01 00:18:54+08:00", "2023-03-01 00:10:54+08:00"),  # start<submit
        GOOD.format(id=""),  # missing job id
    ]
    p = write(tmp_path, rows)
    t = load_trace(p)
    assert t.jobs["job_id"].tolist() == ["1"]
    got = dict(zip(t.rejected["line"], t.rejected["reason"]))
    assert got == {
        3: Reason.BAD_GPU_NUM, 4: Reason.BAD_GPU_NUM, 5: Reason.BAD_NODE_NUM, 6: Reason.BAD_TIMESTAMP,
        7: Reason.UNKNOWN_STATE, 8: Reason.END_BEFORE_START, 9: Reason.FIELD_COUNT,
        10: Reason.DUPLICATE_JOB_ID, 11: Reason.START_BEFORE_SUBMIT, 12: Reason.MISSING_JOB_ID,
    }
    assert t.files[0].rows == 11 and t.files[0].accepted == 1 and t.files[0].rejected == 10
    assert set(t.rejected.columns) >= {"file", "line", "reason", "detail", "raw"}
    assert (t.rejected["file"] == str(p)).all()
    assert "yesterday" in t.rejected.set_index("line").loc[6, "raw"]


def test_line_numbers_survive_bad_field_count_rows(tmp_path):
    rows = [GOOD.format(id=1), "x,y", GOOD.format(id=2), "a", "b", GOOD.format(id=3).replace("COMPLETED", "NOPE")]
    t = load_trace(write(tmp_path, rows))
    assert t.jobs["source_line"].tolist() == [2, 4]
    assert dict(zip(t.rejected["line"], t.rejected["reason"])) == {
        3: "wrong_field_count", 5: "wrong_field_count", 6: "wrong_field_count", 7: "unknown_state"}


@pytest.mark.parametrize("content,match", [
    ("", "empty file"),
    (SEREN_HEADER + "\n", "no data rows"),
    ("job_id,user,gpu_num\n1,u,1\n", "missing required column"),
])
def test_file_level_errors(tmp_path, content, match):
    p = tmp_path / "trace_seren.csv"
    p.write_text(content)
    with pytest.raises(TraceFormatError, match=match) as e:
        load_trace(p)
    assert str(p) in str(e.value)


def test_missing_column_is_named(tmp_path):
    p = tmp_path / "t.csv"
    p.write_text(SEREN_HEADER.replace("gpu_num,", "") + "\n" + "1,u1,1,128,Eval,COMPLETED,a,b,c,1,2,3\n")
    with pytest.raises(TraceFormatError, match="gpu_num"):
        load_trace(p)


def test_missing_file_and_bad_gzip(tmp_path):
    with pytest.raises(TraceFormatError, match="no such file"):
        load_trace(tmp_path / "nope.csv")
    p = tmp_path / "trace_seren.csv.gz"
    p.write_bytes(b"\x1f\x8b" + b"not really gzip" * 10)
    with pytest.raises(TraceFormatError, match=str(p)):
        load_trace(p)


def test_bom_crlf_trailing_blanks_gzip_permuted(tmp_path):
    base = load_trace(write(tmp_path, [GOOD.format(id=1), GOOD.format(id=2)], name="a_seren.csv")).jobs
    # BOM + CRLF + trailing blank lines
    p = write(tmp_path, [GOOD.format(id=1), GOOD.format(id=2), "", ""], name="b_seren.csv",
              newline="\r\n", bom=True)
    b = load_trace(p).jobs
    # gzip
    g = tmp_path / "c_seren.csv.gz"
    with gzip.open(g, "wt") as f:
        f.write("\n".join([SEREN_HEADER, GOOD.format(id=1), GOOD.format(id=2)]) + "\n")
    c = load_trace(g).jobs
    # permuted columns
    df = pd.read_csv(tmp_path / "a_seren.csv", dtype=str)
    perm = tmp_path / "d_seren.csv"
    df[df.columns[::-1]].to_csv(perm, index=False)
    d = load_trace(perm).jobs
    # parquet
    pq = tmp_path / "e_seren.parquet"
    df.to_parquet(pq)
    e = load_trace(pq).jobs
    cols = ["job_id", "gpu_num", "submit_s", "run_s", "queue_s", "gpu_time_s", "state"]
    for other in (b, c, d, e):
        pd.testing.assert_frame_equal(base[cols], other[cols])


def test_cancelled_while_queued_is_censored_wait(tmp_path):
    row = "1,u1,1,8,128,Eval,CANCELLED,2023-03-01 00:18:22+08:00,,2023-03-01 00:28:22+08:00,0,600,0"
    j = load_trace(write(tmp_path, [row])).jobs.iloc[0]
    assert not j.started and j.queue_censored and j.queue_s == 600 and np.isnan(j.run_s)
    assert j.gpu_time_s == 0


def test_naive_timestamps_are_cluster_local_time(tmp_path):
    row = GOOD.format(id=1).replace("+08:00", "")
    with pytest.warns(DataWarning, match="no time zone"):
        j = load_trace(write(tmp_path, [row])).jobs.iloc[0]
    assert j.submit_time == pd.Timestamp("2023-02-28 16:18:22", tz="UTC")


def test_states_types_cpu_jobs(tmp_path):
    rows = [GOOD.format(id=1).replace("COMPLETED", "TIMEOUT"),
            GOOD.format(id=2).replace("COMPLETED", "NODE_FAIL"),
            GOOD.format(id=3).replace(",Eval,", ",Mystery,"),
            GOOD.format(id=4).replace(",1,8,128,", ",1,0,16,")]
    with pytest.warns(DataWarning, match="Mystery"):
        t = load_trace(write(tmp_path, rows))
    j = t.jobs.set_index("job_id")
    assert j.loc["1", "state"] == "TIMEOUT" and j.loc["1", "analysis_state"] == "FAILED"
    assert j.loc["2", "analysis_state"] == "FAILED"
    assert j.loc["3", "type"] == "Mystery"
    assert not j.loc["4", "is_gpu"] and len(t.cpu_jobs()) == 1 and len(t.gpu_jobs()) == 3


def test_cluster_from_name_argument_and_schema(tmp_path):
    p = write(tmp_path, [GOOD.format(id=1)], name="jobs.csv")
    with pytest.warns(DataWarning, match="named 'jobs' after the file"):  # never an Acme cluster
        assert load_trace(p).jobs.cluster.iloc[0] == "jobs"
    assert load_trace(p, cluster="Mine").jobs.cluster.iloc[0] == "Mine"
    with pytest.raises(ValueError, match="cluster"):
        load_trace([p], cluster=["a", "b"])


def test_extra_columns_kept_aside(tmp_path):
    p = write(tmp_path, [GOOD.format(id=1) + ",hello"], header=SEREN_HEADER + ",note")
    t = load_trace(p)
    assert t.extras["note"].tolist() == ["hello"]
    assert t.files[0].extra_columns == ["note"]


def test_fast_and_slow_paths_agree(tmp_path):
    rows = [GOOD.format(id=i) for i in range(1, 6)]
    fast = load_trace(write(tmp_path, rows, name="f_seren.csv"))
    slow = load_trace(write(tmp_path, rows + [GOOD.format(id=9).replace(",8,128,", ",z,128,")],
                            name="s_seren.csv"))
    assert fast.files[0].fast_path and not slow.files[0].fast_path
    cols = [c for c in fast.jobs.columns if c not in ("source_file",)]
    pd.testing.assert_frame_equal(fast.jobs[cols], slow.jobs[cols])


def test_sample_loads_clean(sample_trace):
    assert len(sample_trace.rejected) == 0
    assert set(sample_trace.clusters) == {"Seren", "Kalos"}
    # the Kalos sample keeps the published quirk duration = end - submit
    assert sample_trace.inconsistencies["duration_includes_queue"] > 0


def test_header_blanks_and_quotes_are_ignored(tmp_path):
    header = ", ".join(f'"{c}"' if i % 2 else c for i, c in enumerate(SEREN_HEADER.split(",")))
    t = load_trace(write(tmp_path, [GOOD.format(id=1)], header=header))
    assert t.jobs["job_id"].tolist() == ["1"] and t.jobs.loc[0, "run_s"] == 117


def test_one_bad_column_keeps_the_others_typed(tmp_path):
    """A naive timestamp in one column: only that column is re-read as text, rows keep their values."""
    rows = [GOOD.format(id=i) for i in range(1, 5)]
    rows.append(GOOD.format(id=9).replace("2023-03-01 00:20:51+08:00", "2023-03-01 00:20:51"))
    with pytest.warns(DataWarning, match="no time zone"):
        t = load_trace(write(tmp_path, rows))
    assert not t.files[0].fast_path and len(t.rejected) == 0
    assert t.jobs["run_s"].tolist() == [117.0] * 5


def test_never_started_jobs_get_nat_without_reading_uninitialised_memory():
    """pandas < 3 converts a float array with ``unit="s"`` through an uninitialised buffer at its NaN entries
    (pandas-dev/pandas#58419): left-over huge doubles there raise FloatingPointError (the once-seen flaky failure).
    Freed 3-element blocks filled with 1e305 make the unguarded call fail every time; the trace builder's
    conversion (and the tests' helper) must not."""
    from acmemodel.trace.jobs import _times
    from tests.conftest import utc_from_seconds

    x = np.array([1.6e9 + 0.25, np.nan, np.nan])
    for convert in (_times, utc_from_seconds):
        for _ in range(20):
            junk = [np.full(3, 1e305) for _ in range(8)]
            del junk
            t = convert(x)
            assert t.isna().tolist() == [False, True, True]
            assert t.iloc[0] == pd.Timestamp(1.6e9 + 0.25, unit="s", tz="UTC")


def test_chain_column_numbers_are_pandas_to_numeric():
    """The chain columns' fast parse (Arrow cast of integer literals) gives pd.to_numeric(errors="coerce")'s
    values: integers with empties, and the pandas fallback for anything else (decimals, text, blanks, NaN)."""
    from acmemodel.trace.readers import _to_numbers

    rng = np.random.default_rng(3)
    cases = [pd.Series(rng.integers(-5, 10**12, 5000).astype(str).astype(object)),
             pd.Series(np.where(rng.random(5000) < 0.8, "", rng.integers(0, 10**6, 5000).astype(str)).astype(object)),
             pd.Series(["1", "2", "x", ""], dtype=object), pd.Series(["1.5", "2", ""], dtype=object),
             pd.Series(["-3", "007", "", " 4"], dtype=object), pd.Series(["1", np.nan], dtype=object),
             pd.Series([1.0, np.nan]), pd.Series([], dtype=object)]
    for s in cases:
        want = pd.to_numeric(s, errors="coerce").to_numpy(float)
        assert np.array_equal(_to_numbers(s).to_numpy(float), want, equal_nan=True), s.head()


@pytest.mark.parametrize("values", [
    ["2023-03-01 08:00:00+08:00", "2024-02-29 23:59:59-05:30", "", None, "1999-12-31 00:00:00+00:00"],
    ["2023-02-29 10:00:00+00:00", "2023-03-01 08:00:00+08:00"],  # no 29 February in 2023: the general parser
    ["2023-03-01 24:00:00+00:00"], ["2023-03-01 08:00:00+08:00", "2023-03-01T08:00:00+08:00"],
    ["1600-01-01 00:00:00+00:00"], ["2023-03-01 08:00:00+24:00"], ["2023-03-01 08:00:00"], ["", None],
])
def test_fixed_format_time_reading_equals_the_general_parser(monkeypatch, values):
    """AcmeTrace's own time format read from the strings' bytes gives the general parser's values and masks; any
    value it cannot vouch for sends the whole column to the general parser (same result either way)."""
    from pathlib import Path

    import pyarrow as pa

    import acmemodel.trace.arrow as A

    table = pa.table({"submit_time": pa.array(values, pa.large_string()),
                      "gpu_num": pa.array([None if v is None else str(i) for i, v in enumerate(values)],
                                          pa.large_string())})
    fast = A._parse_columns(table, "+08:00", Path("t.csv"), [])
    if values[1:2] == ["2024-02-29 23:59:59-05:30"]:  # (the fixed-format reading is the one used here)
        assert A._iso_offset_times(table.column("submit_time")) is not None
    monkeypatch.setattr(A, "_iso_offset_times", lambda col: None)
    monkeypatch.setattr(A, "_plain_whole_numbers", lambda col: None)
    general = A._parse_columns(table, "+08:00", Path("t.csv"), [])
    a, b = fast["submit_time"], general["submit_time"]
    assert np.array_equal(a.i8, b.i8)
    for m in ("na", "fail", "oor"):
        x, y = getattr(a, m), getattr(b, m)
        assert (x is None or not x.any()) == (y is None or not y.any()) and (x is None or y is None or np.array_equal(x, y))
    assert np.array_equal(fast["gpu_num"][0], general["gpu_num"][0], equal_nan=True)
