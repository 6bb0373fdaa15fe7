"""Messy inputs through ``load_trace`` and ``acmemodel.cli.main``: odd encodings and layouts, bad values,
file-level errors, and every CLI command given one bad input (exit 2, one ``error:`` line, no traceback)."""
from __future__ import annotations

import gzip
import json
import warnings

import numpy as np
import pandas as pd
import pytest

from acmemodel import load_trace
from acmemodel.cli import main
from acmemodel.errors import TraceFormatError

H = ("job_id,user,node_num,gpu_num,cpu_num,type,state,submit_time,start_time,end_time,duration,queue,"
     "gpu_time")
# submit 16:18:22 UTC, start +32 s, end +117 s later
ROW = ("{id},u1,1,8,128,Eval,COMPLETED,2023-03-01 00:18:22+08:00,2023-03-01 00:18:54+08:00,"
       "2023-03-01 00:20:51+08:00,117,32,936.0")
KH = ("job_id,user,node_num,gpu_num,cpu_num,mem_per_pod_GB,shared_mem_per_pod,type,state,submit_time,"
      "start_time,end_time,fail_time,stop_time,duration,queue,gpu_time")
KROW = ("{id},u2,8,64,1024,1024,256,Pretrain,FAILED,2023-07-01 10:00:00+00:00,2023-07-01 10:00:10+00:00,"
        "2023-07-01 10:00:18+00:00,{fail},{stop},18,10,1152")
SUBMIT_UTC = pd.Timestamp("2023-02-28 16:18:22", tz="UTC")


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def put(tmp_path, name, text, newline="\n"):
    p = tmp_path / name
    if isinstance(text, bytes):
        p.write_bytes(text)
    else:
        if isinstance(text, list):
            text = newline.join(text) + newline
        p.write_text(text, newline="")
    return p


def cli(*argv):
    """(exit code, stderr, stdout) of ``acmemodel ARGV``; an uncaught exception fails the test."""
    import contextlib
    import io

    err, out = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
        try:
            main([str(a) for a in argv])
            code = 0
        except SystemExit as e:
            code = e.code
    return code, err.getvalue(), out.getvalue()


def assert_user_error(argv, *needles):
    code, err, _ = cli(*argv)
    lines = err.strip().splitlines()
    assert code == 2, (argv, code, err)
    assert len(lines) == 1 and lines[0].startswith("error: "), (argv, err)
    assert "Traceback" not in err
    for n in needles:
        assert str(n) in lines[0], (n, lines[0])
    return lines[0]


def reasons(t):
    return dict(zip(t.rejected["line"], t.rejected["reason"]))


# ------------------------------------------------------------------------------------ layouts
def test_both_schemas_permuted_with_extra_columns(tmp_path):
    cols = H.split(",")
    perm = cols[::-1] + ["note"]
    df = pd.DataFrame([ROW.format(id=i).split(",") for i in (1, 2)], columns=cols).assign(note="x")
    s = put(tmp_path, "a_seren.csv", df[perm].to_csv(index=False))
    kcols = KH.split(",")
    kdf = pd.DataFrame([KROW.format(id="k1", fail="2023-07-01 10:00:15+00:00", stop="").split(",")],
                       columns=kcols).assign(extra="y")
    k = put(tmp_path, "b_kalos.csv", kdf[kcols[5:] + ["extra"] + kcols[:5]].to_csv(index=False))
    t = load_trace([s, k])
    assert len(t.rejected) == 0
    j = t.jobs.set_index("job_id")
    assert j.loc["1", "submit_time"] == SUBMIT_UTC and j.loc["1", "run_s"] == 117
    assert j.loc["k1", "cluster"] == "Kalos" and j.loc["k1", "fail_time_s"] == 5 and j.loc["k1", "run_s"] == 8
    assert {"note", "extra"} <= set(t.extras.columns)


def test_bom_crlf_blank_lines_quotes_spaces_lowercase(tmp_path):
    rows = ['"1","u,1",1,8,128,"Eval","COMPLETED",2023-03-01 00:18:22+08:00,2023-03-01 00:18:54+08:00,'
            '2023-03-01 00:20:51+08:00,117,32,936.0',
            "",
            " 2 , u2 , 1 , 8 ,128, Eval , completed , 2023-03-01 00:18:22+08:00 ,2023-03-01 00:18:54+08:00,"
            "2023-03-01 00:20:51+08:00,117,32,936.0",
            ROW.format(id=3), "", ""]
    p = put(tmp_path, "x_seren.csv", "\ufeff" + "\r\n".join([H, *rows]) + "\r\n")
    t = load_trace(p)
    assert len(t.rejected) == 0 and len(t.jobs) == 3
    j = t.jobs.set_index("job_id")
    assert j.loc["1", "user"] == "u,1" and j.loc["2", "user"] == "u2" and j.loc["2", "state"] == "COMPLETED"
    assert (t.jobs["submit_time"] == SUBMIT_UTC).all()
    assert j.loc["3", "source_line"] == 5  # line numbers count the blank line


@pytest.mark.parametrize("gz", [False, True])
def test_blank_and_empty_lines_between_rows_keep_line_numbers(tmp_path, gz):
    text = "\n".join([H, ROW.format(id=1), "   ", ROW.format(id=2), "," * 12, "", ROW.format(id=3),
                      ROW.format(id=4).replace(",1,8,128,", ",1,x,128,"), "", ""]) + "\n"
    p = put(tmp_path, "b_seren.csv" + (".gz" if gz else ""), gzip.compress(text.encode()) if gz else text)
    t = load_trace(p)
    assert t.jobs["source_line"].tolist() == [2, 4, 7]
    assert reasons(t) == {8: "invalid_gpu_num"}
    assert any("3 blank line(s)" in w for w in t.warnings)
    assert t.files[0].rows == 4


def test_header_case_and_delimiter_hint(tmp_path):
    t = load_trace(put(tmp_path, "u_seren.csv", [H.upper(), ROW.format(id=1)]))
    assert len(t.jobs) == 1 and t.jobs["run_s"][0] == 117
    pd.read_csv(tmp_path / "u_seren.csv").to_parquet(tmp_path / "u_seren.parquet")
    assert len(load_trace(tmp_path / "u_seren.parquet").jobs) == 1
    tab = put(tmp_path, "t_seren.csv", [H.replace(",", "\t"), ROW.format(id=1).replace(",", "\t")])
    with pytest.raises(TraceFormatError, match="comma-separated"):
        load_trace(tab)
    line = assert_user_error(["describe", tab], "comma-separated")
    assert "\t" not in line


def test_unknown_and_empty_type_empty_user(tmp_path):
    p = put(tmp_path, "t_seren.csv", [H, ROW.format(id=1).replace("Eval", "eval"), ROW.format(id=2).replace("Eval", ""),
                                      ROW.format(id=3).replace("u1", "")])
    t = load_trace(p)
    assert len(t.jobs) == 3
    assert any("unrecognised job type" in w for w in t.warnings)


@pytest.mark.parametrize("value, ok", [("8.0", True), ("1e3", True), ("8.5", False), ("-1", False),
                                       ("", False), ("x", False), ("inf", False), ("1e23", False)])
def test_gpu_num_values(tmp_path, value, ok):
    p = put(tmp_path, "g_seren.csv", [H, ROW.format(id=1), ROW.format(id=2).replace(",1,8,128,", f",1,{value},128,")])
    t = load_trace(p)
    if ok:
        assert len(t.jobs) == 2 and t.jobs["gpu_num"].min() >= 0
    else:
        assert reasons(t) == {3: "invalid_gpu_num"}
        assert t.rejected["detail"][0] == f"gpu_num = {value!r}" or value in ("1e23",)
        assert len(t.jobs) == 1


@pytest.mark.parametrize("value", ["-1", "1.5", "x", "inf"])
def test_node_num_values(tmp_path, value):
    p = put(tmp_path, "n_seren.csv", [H, ROW.format(id=1).replace(",1,8,128,", f",{value},8,128,")])
    t = load_trace(p)
    assert reasons(t) == {2: "invalid_node_num"} and len(t.jobs) == 0


def test_timestamp_formats(tmp_path):
    tail = ",,,"
    rows = [
        "1,u,1,8,1,Eval,COMPLETED,2023-03-01 00:18:22.5+08:00,2023-03-01 00:18:54.25+08:00,2023-03-01 00:20:51+08:00",
        "2,u,1,8,1,Eval,COMPLETED,2023-02-28T16:18:22Z,2023-02-28T16:18:54Z,2023-02-28T16:20:51Z",
        "3,u,1,8,1,Eval,COMPLETED,2023-03-01 00:18:22+0800,2023-03-01 00:18:54+0800,2023-03-01 00:20:51+0800",
        "4,u,1,8,1,Eval,COMPLETED,2023-03-01 00:18:22,2023-03-01 00:18:54,2023-03-01 00:20:51",  # Seren local
        "5,u,1,8,1,Eval,COMPLETED,2023-02-28 16:18:22+00:00,2023-03-01 00:18:54+08:00,2023-02-28T16:20:51Z",
    ]
    t = load_trace(put(tmp_path, "ts_seren.csv", [H] + [r + tail for r in rows]))
    assert len(t.rejected) == 0
    j = t.jobs.set_index("job_id")
    assert j.loc["1", "submit_time"] == SUBMIT_UTC + pd.Timedelta("500ms")
    assert j.loc["1", "queue_s"] == pytest.approx(31.75)
    for i in "2345":
        assert j.loc[i, "submit_time"] == SUBMIT_UTC and j.loc[i, "run_s"] == 117 and j.loc[i, "queue_s"] == 32


def test_start_end_edge_cases(tmp_path):
    B = "2023-03-01 00:18:22+08:00"
    S = "2023-03-01 00:18:54+08:00"
    E = "2023-03-01 00:20:51+08:00"
    EARLY = "2023-03-01 00:10:00+08:00"
    rows = [
        f"1,u,1,8,1,Eval,CANCELLED,{B},,{E},,,",  # cancelled while queued: censored wait
        f"2,u,1,8,1,Eval,COMPLETED,{B},,{E},,,",  # odd but kept as never started (warned)
        f"3,u,1,8,1,Eval,COMPLETED,{B},{S},,,,",  # end empty
        f"4,u,1,8,1,Eval,COMPLETED,{B},{S},{EARLY},,,",  # end < start
        f"5,u,1,8,1,Eval,COMPLETED,{B},{EARLY},{E},,,",  # start < submit
        f"6,u,1,8,1,Eval,COMPLETED,garbage,{S},{E},,,",
        f"7,u,1,8,1,Eval,CANCELLED,{B},,{EARLY},,,",  # cancelled before submitted
        f"8,u,1,8,1,Eval,WEIRD,{B},{S},{E},,,",
    ]
    t = load_trace(put(tmp_path, "se_seren.csv", [H, *rows]))
    assert reasons(t) == {4: "missing_timestamp", 5: "end_before_start", 6: "start_before_submit",
                          7: "unparsable_timestamp", 8: "end_before_start", 9: "unknown_state"}
    j = t.jobs.set_index("job_id")
    for i in "12":
        assert not j.loc[i, "started"] and j.loc[i, "queue_censored"] and np.isnan(j.loc[i, "run_s"])
        assert j.loc[i, "queue_s"] == 149 and j.loc[i, "gpu_time_s"] == 0
    assert any("COMPLETED but no start_time" in w for w in t.warnings)


def test_kalos_fail_stop_and_name_without_cluster(tmp_path):
    rows = [KROW.format(id="a1", fail="2023-07-01 10:00:15+00:00", stop=""), KROW.format(id="a2", fail="", stop=""),
            KROW.format(id="a3", fail="garbage", stop=""), KROW.format(id="a4", fail="", stop="nope")]
    t = load_trace(put(tmp_path, "trace.csv", [KH, *rows]))
    assert t.clusters == ["trace"] and t.timezones == {"trace": "+00:00"}  # never an Acme cluster
    assert any("named 'trace' after the file" in w for w in t.warnings)
    assert t.cluster_spec("trace").gpus is None  # (its size is not invented)
    assert reasons(t) == {4: "unparsable_timestamp", 5: "unparsable_timestamp"}
    j = t.jobs.set_index("job_id")
    assert j.loc["a1", "fail_time_s"] == 5 and np.isnan(j.loc["a2", "fail_time_s"])


def test_duplicates_within_and_across_files_and_clusters(tmp_path):
    a = put(tmp_path, "a_seren.csv", [H, ROW.format(id=1), ROW.format(id=2), ROW.format(id=1)])
    b = put(tmp_path, "b_seren.csv", [H, ROW.format(id=2), ROW.format(id=3)])
    k = put(tmp_path, "c_kalos.csv", [KH, KROW.format(id="1", fail="", stop=""), KROW.format(id="3", fail="", stop="")])
    t = load_trace([a, b, k])
    rej = t.rejected
    assert list(zip(rej["file"], rej["line"], rej["reason"])) == [
        (str(a), 4, "duplicate_job_id"), (str(b), 2, "duplicate_job_id")]
    assert sorted(zip(t.jobs["cluster"], t.jobs["job_id"])) == [
        ("Kalos", "1"), ("Kalos", "3"), ("Seren", "1"), ("Seren", "2"), ("Seren", "3")]
    assert [(f.accepted, f.rejected) for f in t.files] == [(2, 1), (1, 1), (2, 0)]
    assert rej["detail"].tolist() == ["job_id '1' already at line 2", f"job_id '2' already at {a} line 3"]
    assert rej["raw"].tolist() == [ROW.format(id=1), ROW.format(id=2)]


def test_cluster_argument(tmp_path):
    a = put(tmp_path, "a.csv", [H, ROW.format(id=1)])
    k = put(tmp_path, "b.csv", [KH, KROW.format(id="1", fail="", stop="")])
    t = load_trace([a, k], cluster=["seren", " Kalos "])  # known names in their canonical spelling
    assert t.clusters == ["Kalos", "Seren"] and t.timezones == {"Seren": "+08:00", "Kalos": "+00:00"}
    assert load_trace(a, cluster="Lab").clusters == ["Lab"]
    with pytest.raises(ValueError, match="cluster"):
        load_trace([a, k], cluster=["Seren"])
    with pytest.raises(ValueError, match="cluster"):
        load_trace(a, cluster="")


# ------------------------------------------------------------------------------ file formats
def test_gzip_and_truncated_gzip(tmp_path):
    text = "\n".join([H] + [ROW.format(id=i) for i in range(2000)]) + "\n"
    t = load_trace(put(tmp_path, "g_seren.csv.gz", gzip.compress(text.encode())))
    assert len(t.jobs) == 2000
    for cut in (300, 30):
        p = put(tmp_path, f"t{cut}_seren.csv.gz", gzip.compress(text.encode())[:-cut])
        with pytest.raises(TraceFormatError, match=str(p)):
            load_trace(p)


def test_parquet_variants(tmp_path):
    base = pd.DataFrame([ROW.format(id=i).split(",") for i in (1, 2, 3)], columns=H.split(","))
    base[["node_num", "gpu_num"]] = base[["node_num", "gpu_num"]].astype(int)
    strings = tmp_path / "s_seren.parquet"
    base.to_parquet(strings)
    aware = base.copy()
    for c in ("submit_time", "start_time", "end_time"):
        aware[c] = pd.to_datetime(aware[c]).astype("datetime64[us, Asia/Shanghai]")
    aware.to_parquet(tmp_path / "a_seren.parquet")
    naive = aware.copy()
    for c in ("submit_time", "start_time", "end_time"):
        naive[c] = naive[c].dt.tz_localize(None)  # Seren local wall time
    naive.to_parquet(tmp_path / "n_seren.parquet")
    for name in ("s", "a", "n"):
        t = load_trace(tmp_path / f"{name}_seren.parquet")
        assert len(t.rejected) == 0 and (t.jobs["submit_time"] == SUBMIT_UTC).all(), name
        assert (t.jobs["run_s"] == 117).all()
    odd = base.copy()
    odd["gpu_num"] = pd.array([8, None, 4], dtype="Int64")
    for c in ("user", "type"):
        odd[c] = odd[c].astype("category")
    odd["state"] = pd.Categorical(["completed", "FAILED", "bogus"])
    odd.to_parquet(tmp_path / "o_seren.parquet")
    t = load_trace(tmp_path / "o_seren.parquet")
    assert reasons(t) == {3: "invalid_gpu_num", 4: "unknown_state"}
    assert t.rejected["detail"][0] == "gpu_num = ''"
    assert t.jobs["state"].tolist() == ["COMPLETED"]
    not_parquet = put(tmp_path, "x_seren.parquet", "job_id\n1\n")
    with pytest.raises(TraceFormatError, match="parquet"):
        load_trace(not_parquet)


@pytest.mark.parametrize("content, match", [
    ("", "empty file"), ("\n\n  \n", "empty file"), (H + "\n", "no data rows"), (H + "\r\n\r\n", "no data rows"),
    (H.replace("state,", "") + "\n" + "1\n", "missing required column.*state"),
    (bytes(range(256)) * 20, "not a text"),
])
def test_file_level_errors(tmp_path, content, match):
    p = put(tmp_path, "f_seren.csv", content)
    with pytest.raises(TraceFormatError, match=match):
        load_trace(p)
    line = assert_user_error(["describe", p], p)
    assert "\x00" not in line


def test_other_compressions_and_misnamed_parquet(tmp_path):
    import bz2
    import lzma
    import zipfile

    csv = ("\n".join([H, ROW.format(id=1)]) + "\n").encode()
    put(tmp_path, "a_seren.csv.bz2", bz2.compress(csv))
    put(tmp_path, "b_seren.csv.xz", lzma.compress(csv))
    with zipfile.ZipFile(tmp_path / "c_seren.zip", "w") as z:
        z.writestr("trace_seren.csv", csv)
    pd.read_csv(tmp_path / "a_seren.csv.bz2").to_parquet(tmp_path / "d_seren.csv")
    for name, match in (("a_seren.csv.bz2", "bzip2"), ("b_seren.csv.xz", "xz"), ("c_seren.zip", "zip"),
                        ("d_seren.csv", "parquet")):
        with pytest.raises(TraceFormatError, match=match):
            load_trace(tmp_path / name)
    put(tmp_path, "e_seren.gz", gzip.compress(csv))  # gzip is recognised by its bytes, not its name
    put(tmp_path, "f_seren.csv", gzip.compress(csv))
    assert len(load_trace([tmp_path / "e_seren.gz"]).jobs) == 1
    assert len(load_trace([tmp_path / "f_seren.csv"]).jobs) == 1


def test_paths_that_are_not_files(tmp_path):
    with pytest.raises(TraceFormatError, match="directory"):
        load_trace(tmp_path)
    with pytest.raises(TraceFormatError, match="no such file"):
        load_trace(tmp_path / "nope.csv")


def test_only_bad_rows_and_field_counts(tmp_path):
    p = put(tmp_path, "b_seren.csv", [H, ROW.format(id=1).replace(",1,8,128,", ",1,x,128,"), "2,u", ROW.format(id=3) + ",9"])
    t = load_trace(p)
    assert len(t.jobs) == 0 and reasons(t) == {2: "invalid_gpu_num", 3: "wrong_field_count", 4: "wrong_field_count"}
    assert any("no row was accepted" in w for w in t.warnings)
    code, _, out = cli("describe", p, "--json")
    assert code == 0 and json.loads(out)["rejected"]["total"] == 3


def test_very_long_lines_and_non_utf8(tmp_path):
    long_user = put(tmp_path, "l_seren.csv", [H, ROW.format(id=1).replace("u1", "u" * 2_000_000), ROW.format(id=2)])
    assert len(load_trace(long_user).jobs) == 2
    long_extra = put(tmp_path, "x_seren.csv", [H + ",note", ROW.format(id=1) + "," + "z" * 3_000_000, ROW.format(id=2) + ",n"])
    assert len(load_trace(long_extra).jobs) == 2  # (a row longer than Arrow's CSV block)
    latin = put(tmp_path, "u_seren.csv", ("\n".join([H, ROW.format(id=1).replace("u1", "J\xfcrgen"), ROW.format(id=2)])
                                          + "\n").encode("latin-1"))
    t = load_trace(latin)
    assert len(t.jobs) == 2 and t.jobs["user"][0] == "J\ufffdrgen"
    assert any("UTF-8" in w for w in t.warnings)


def test_big_file_with_a_few_bad_rows(tmp_path):
    n = 200_000
    ids = np.arange(n) + 1000
    lines = [H] + [f"{i},u{i % 97},1,{8 if i % 3 else 0},16,Eval,COMPLETED,2023-03-01 00:18:22+08:00,"
                   "2023-03-01 00:18:54+08:00,2023-03-01 00:20:51+08:00,117,32,936.0" for i in ids]
    bad = {11: "invalid_gpu_num", 5001: "wrong_field_count", 77778: "unparsable_timestamp",
           150001: "unknown_state", 200000: "duplicate_job_id"}  # line numbers (header = line 1)
    lines[10] = lines[10].replace(",1,8,16,", ",1,abc,16,").replace(",1,0,16,", ",1,abc,16,")
    lines[5000] = ",".join(lines[5000].split(",")[:5])
    lines[77777] = lines[77777].replace("00:18:54+08:00", "not-a-time")
    lines[150000] = lines[150000].replace("COMPLETED", "WEIRD")
    lines[199999] = lines[199999].replace(str(ids[199998]), str(ids[4]), 1)  # = the id at line 6
    p = put(tmp_path, "big_seren.csv", lines)
    t = load_trace(p)   # speed: benchmarks/bench_load.py (not a timed test)
    assert reasons(t) == bad
    assert len(t.jobs) == n - len(bad)
    assert t.jobs["source_line"].iloc[[0, 9, 10, 4998, 4999]].tolist() == [2, 12, 13, 5002, 5003]
    assert t.jobs["source_line"].iloc[-1] == n + 1
    assert "line 6" in t.rejected.set_index("line").loc[200000, "detail"]
    # the quarantined rows as written in the file (not re-formatted parsed values)
    assert t.rejected["raw"].tolist() == [lines[ln - 1] for ln in sorted(bad)]
    out = tmp_path / "rej.csv"
    code, err, doc = cli("describe", p, "--json", "--rejects", out)
    assert code == 0, err
    assert json.loads(doc)["rejected"]["by_reason"] == {r: 1 for r in bad.values()}
    assert pd.read_csv(out)["line"].tolist() == sorted(bad)


# ----------------------------------------------------------------------------------------- CLI
def test_cli_user_errors_are_one_line(tmp_path):
    good = put(tmp_path, "g_seren.csv", [H, ROW.format(id=1), ROW.format(id=2)])
    missing = tmp_path / "nope.csv"
    notbundle = tmp_path / "notbundle"
    notbundle.mkdir()
    badver = tmp_path / "badver"
    badver.mkdir()
    (badver / "bundle.json").write_text('{"schema_version": 999, "models": {}}')
    bad_yaml = put(tmp_path, "bad.yaml", "cluster:\n  gpus: 64\nbogus_field: 1\n")
    o = tmp_path / "out"
    cases = [
        (["describe", missing], [missing]),
        (["describe", good, "--by", "nope"], ["--by"]),
        (["describe", good, "--cluster", ""], ["cluster"]),
        (["describe", good, "--rejects", good / "sub" / "r.csv"], []),  # (a file used as a directory)
        (["nosuchcommand"], ["nosuchcommand"]),
        (["fit", missing, "-o", o], [missing]),
        (["fit", good, "-o", good], [good]),
        (["evaluate", "runtime", missing], [missing]),
        (["evaluate", "runtime", good, "--test-fraction", "2"], ["--test-fraction"]),
        (["evaluate", "failure", missing], [missing]),
        (["evaluate", "arrival", missing], [missing]),
        (["forecast", missing], [missing]),
        (["forecast", "--days", "-3"], ["--days"]),
        (["synth", "-o", o / "s.csv", "--days", "-1"], ["--days"]),
        (["synth", "-o", o / "s.csv", "--bundle", notbundle], [notbundle]),
        (["export", missing, "-f", "swf", "-o", o / "e.swf"], [missing]),
        (["export", good, "-f", "nope", "-o", o / "e"], ["--format"]),
        (["checkpoint", "--gpus", "8", "--ckpt-cost", "abc"], ["--ckpt-cost"]),
        (["checkpoint", "--gpus", "8", "--ckpt-cost", "5m", "--bundle", badver], ["schema version"]),
        (["plan", bad_yaml], ["bogus_field"]),
        (["plan", "--bundle", notbundle], [notbundle]),
        (["calibrate", "-o", o / "c", "--scale", "0.01", "--set", "nonsense"], ["--set"]),
        (["calibrate", "-o", o / "c", "--scale", "0"], ["--scale"]),
        (["reproduce", "--scale", "0.01", "--bundle", badver], ["schema version"]),
        (["reproduce", "--scale", "0.01", "--bundle", missing], [missing]),
        # output paths refused before any work (and never an input file overwritten)
        (["describe", good, "--rejects", good], ["--rejects"]),
        (["calibrate", "-o", good, "--scale", "0.01"], ["-o/--out", good]),
        (["reproduce", "--scale", "0.01", "--plots", good], ["--plots"]),
    ]
    before = good.read_text()
    for argv, needles in cases:
        assert_user_error(argv, *needles)
    assert good.read_text() == before


def test_cli_prints_data_that_looks_like_rich_markup(tmp_path):
    d = tmp_path / "[red]"
    d.mkdir()
    p = put(d, "m_seren.csv", [H, ROW.format(id=1).replace("Eval", "[/bold]"), ROW.format(id=2).replace("u1", "[/]")])
    from acmemodel.cli._common import console

    width = console.width
    console.width = 300  # (no wrapping of the long path)
    try:
        code, err, out = cli("describe", p, "--by", "type")
    finally:
        console.width = width
    assert code == 0, err
    assert "[/bold]" in out and "[red]" in out

    with console.capture() as cap:  # every command's console: invalid markup printed as text
        console.print("type [/b] has 3 jobs")
    assert "[/b]" in cap.get()
