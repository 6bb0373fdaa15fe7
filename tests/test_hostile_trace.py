"""Rows are never lost silently (issue 19): rows are counted by physical line — a stray quote
quarantines only the line it starts on (``unbalanced_quote``) — and ``accepted + rejected == rows``
under random quote and delimiter damage."""
from __future__ import annotations

import gzip

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from acmemodel.datasets import sample_paths
from acmemodel.trace import load_trace


@pytest.fixture(scope="module")
def seren_lines():
    path = [p for p in sample_paths() if "seren" in p.name][0]
    with gzip.open(path, "rt") as f:
        return [next(f).rstrip("\n") for _ in range(121)]


def _load(tmp_path, lines, name="t.csv"):
    p = tmp_path / name
    p.write_text("\n".join(lines) + "\n")
    return load_trace(p, cluster="Seren")


def test_issue_example_stray_quote_keeps_the_rest(tmp_path, seren_lines):
    lines = list(seren_lines)
    lines[101 - 1 + 1 - 1] = lines[100].replace(",us", ',"us', 1)  # line 102 of the file: data row 101
    t = _load(tmp_path, lines)
    info = t.files[0]
    assert info.rows == len(lines) - 1 and info.accepted + info.rejected == info.rows
    rej = t.rejected
    assert list(rej["reason"]) == ["unbalanced_quote"] and list(rej["line"]) == [101]
    assert rej["raw"].iloc[0] == lines[100]


def test_stray_quote_on_the_last_line_is_named_too(tmp_path, seren_lines):
    lines = list(seren_lines)
    lines[-1] = lines[-1].replace(",us", ',"us', 1)
    t = _load(tmp_path, lines)
    info = t.files[0]
    assert info.rows == len(lines) - 1 and info.accepted + info.rejected == info.rows
    assert list(t.rejected["reason"]) == ["unbalanced_quote"] and list(t.rejected["line"]) == [len(lines)]


def test_quoted_values_that_close_are_fine(tmp_path, seren_lines):
    lines = [seren_lines[0]] + [ln.replace(",us", ',"us', 1).replace(",", '",', 2).replace('"",', '",', 1)
                                for ln in seren_lines[1:20]]
    lines = [seren_lines[0]] + ['"' + ln.replace(",", '","') + '"' for ln in seren_lines[1:20]]
    t = _load(tmp_path, lines)
    assert t.files[0].rows == 19 and t.files[0].accepted == 19


def test_quote_in_the_middle_of_a_field_is_literal(tmp_path, seren_lines):
    lines = list(seren_lines[:10])
    lines[3] = lines[3].replace(",us", ',u"s', 1)  # not a field start: a literal quote, no swallowing
    t = _load(tmp_path, lines)
    assert t.files[0].rows == 9 and "unbalanced_quote" not in set(t.rejected["reason"])


def test_gzip_file_with_stray_quote(tmp_path, seren_lines):
    lines = list(seren_lines[:30])
    lines[5] = lines[5].replace(",us", ',"us', 1)
    p = tmp_path / "t.csv.gz"
    with gzip.open(p, "wt") as f:
        f.write("\n".join(lines) + "\n")
    t = load_trace(p, cluster="Seren")
    assert t.files[0].rows == 29 and list(t.rejected["line"]) == [6]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.integers(1, 40), st.integers(0, 400), st.sampled_from(['"', ",", "del", '""', ',"'])),
                min_size=1, max_size=8))
def test_random_quote_and_delimiter_damage_counts_every_line(tmp_path, seren_lines, edits):
    lines = list(seren_lines[:41])
    for ln, pos, what in edits:
        s = lines[ln]
        pos = min(pos, len(s))
        if what == "del":
            i = s.find(",", pos)
            s = s if i < 0 else s[:i] + s[i + 1:]
        else:
            s = s[:pos] + what + s[pos:]
        lines[ln] = s
    t = _load(tmp_path, lines)
    info = t.files[0]
    assert info.rows == 40                      # every physical data line is a row
    assert info.accepted + info.rejected == info.rows
    assert len(t.jobs) == info.accepted and len(t.rejected) == info.rejected
    assert set(t.rejected["line"]) <= set(range(2, 42))
    undamaged = set(range(2, 42)) - {ln + 1 for ln, _, _ in edits}
    assert set(t.jobs["source_line"]) >= undamaged - set(t.rejected["line"])


# ------------------------------------------------------------------------------------------ timestamps
def _edit_times(lines):
    lines = list(lines)
    lines[3] = lines[3].replace(lines[3].split(",")[7][:10], "1500-01-01", 1)   # submit in year 1500
    lines[4] = lines[4].replace(lines[4].split(",")[7][:10], "1900-01-01", 1)   # year 1900 (in ns range)
    end = lines[5].split(",")[9]
    lines[5] = lines[5].replace(end, "2300" + end[4:], 1)                      # end in year 2300
    return lines


def test_implausible_csv_timestamps_are_quarantined(tmp_path, seren_lines):
    t = _load(tmp_path, _edit_times(seren_lines[:21]))
    rej = t.rejected.set_index("line")
    assert t.files[0].rows == 20 and t.files[0].accepted == 17
    assert set(rej["reason"]) == {"timestamp_out_of_range"} and sorted(rej.index) == [4, 5, 6]
    assert "submit_time" in rej.loc[4, "detail"] and "end_time" in rej.loc[6, "detail"]
    assert t.jobs["submit_s"].min() > 1.6e9 and t.jobs["end_s"].max() < 1.7e9


@pytest.mark.parametrize("unit", ["s", "ms", "us"])
def test_parquet_timestamps_beyond_nanoseconds_do_not_wrap(tmp_path, seren_lines, unit):
    import datetime as dt

    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = [ln.split(",") for ln in _edit_times(seren_lines[:21])]
    header, rows = rows[0], rows[1:]
    cols = {}
    for i, c in enumerate(header):
        vals = [r[i] for r in rows]
        if c in ("submit_time", "start_time", "end_time"):
            cols[c] = pa.array([dt.datetime.fromisoformat(v) for v in vals], type=pa.timestamp(unit, tz="UTC"))
        elif c in ("job_id", "user", "type", "state"):
            cols[c] = pa.array(vals)
        else:
            cols[c] = pa.array([float(v) for v in vals])
    p = tmp_path / "t.parquet"
    pq.write_table(pa.table(cols), p)
    t = load_trace(p, cluster="Seren")
    assert sorted(t.rejected["line"]) == [4, 5, 6]
    assert set(t.rejected["reason"]) == {"timestamp_out_of_range"}
    assert (t.jobs["run_s"].dropna() < 1e7).all()  # nothing wrapped into a run of decades


@pytest.mark.parametrize("col, arr", [("type", [["Eval"]]), ("user", [{"x": 1}])])
def test_nested_parquet_column_is_named(tmp_path, seren_lines, col, arr):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from acmemodel.errors import TraceFormatError

    p = tmp_path / "t.csv"
    p.write_text("\n".join(seren_lines[:6]) + "\n")
    import pyarrow.csv as pcsv

    tab = pcsv.read_csv(p)
    tab = tab.set_column(tab.column_names.index(col), col, pa.array(arr * tab.num_rows))
    q = tmp_path / "t.parquet"
    pq.write_table(tab, q)
    with pytest.raises(TraceFormatError, match=f"column '{col}' has the nested type"):
        load_trace(q, cluster="Seren")


@pytest.mark.parametrize("argv, msg", [
    (["synth", "--start", "2300-01-01"], "outside 1970-01-01"),
    (["synth", "--start", "1500-01-01"], "outside 1970-01-01"),
    (["synth", "--start", "2099-12-31", "--days", "30"], "outside 1970-01-01"),
    (["synth", "--seed", str(10**30)], "--seed"),
    (["calibrate", "--seed", str(10**30)], "--seed"),
    (["reproduce", "--seed", "-1"], "--seed"),
])
def test_out_of_range_start_and_seeds_exit_2(tmp_path, capsys, argv, msg):
    from acmemodel.cli import main

    out = {"synth": ["-o", str(tmp_path / "x.csv")], "calibrate": ["-o", str(tmp_path / "o")]}.get(argv[0], [])
    with pytest.raises(SystemExit) as e:
        main(argv + out)
    err = capsys.readouterr().err
    assert e.value.code == 2 and msg in err and len(err.strip().splitlines()) == 1


def test_config_seed_range(tmp_path):
    from importlib import resources

    from acmemodel.errors import ConfigError
    from acmemodel.planner.config import ClusterConfig

    text = resources.files("acmemodel.planner").joinpath("examples", "example.yaml").read_text()
    p = tmp_path / "c.yaml"
    p.write_text(text.replace("seed: 0", f"seed: {10**30}"))
    with pytest.raises(ConfigError, match="simulation.seed must be at most"):
        ClusterConfig.load(p)


# ------------------------------------------------------------------------------------------ optional values
def test_unusable_optional_values_are_counted_per_column(tmp_path, seren_lines, capsys):
    import json

    from acmemodel.cli import main

    lines = list(seren_lines[:21])
    h = lines[0].split(",")

    def put(i, col, value):
        f = lines[i].split(",")
        f[h.index(col)] = value
        lines[i] = ",".join(f)

    put(1, "cpu_num", "abc")
    put(2, "cpu_num", "-4")
    put(3, "cpu_num", "inf")
    put(4, "duration", "x1")
    put(5, "queue", "zz")
    put(6, "gpu_time", "?")
    t = _load(tmp_path, lines)
    assert t.files[0].accepted == 20  # the timestamps are sound: nothing quarantined
    assert t.value_problems == {"cpu_num": {"not a number": 1, "negative or infinite": 2},
                                "duration": {"not a number": 1}, "queue": {"not a number": 1},
                                "gpu_time": {"not a number": 1}}
    assert t.jobs["cpu_num"].isna().sum() == 3
    assert any("cpu_num: 1 not a number, 2 negative or infinite" in w for w in t.warnings)
    with pytest.raises(SystemExit):
        main(["describe", "--json", str(tmp_path / "t.csv"), "--cluster", "Seren"])
    doc = json.loads(capsys.readouterr().out)
    assert doc["value_problems"]["cpu_num"] == {"not a number": 1, "negative or infinite": 2}


def test_kalos_fail_time_before_start(tmp_path):
    from tests.conftest import readme_example

    text = readme_example("kalos").splitlines()
    h = text[0].split(",")
    rows = [r.split(",") for r in text[1:]]
    i = next(k for k, r in enumerate(rows) if r[h.index("start_time")])
    rows[i][h.index("fail_time")] = "2000-01-01 00:00:00+00:00"
    p = tmp_path / "trace_kalos.csv"
    p.write_text("\n".join([text[0]] + [",".join(r) for r in rows]) + "\n")
    t = load_trace(p)
    assert t.value_problems.get("fail_time") == {"before start_time": 1}
    assert len(t.jobs) == len(rows) - len(t.rejected)
    assert not (t.jobs["fail_time_s"] < 0).any()
