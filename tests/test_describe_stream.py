"""``describe`` of a large CSV input read in chunks of lines (issue 34): the statistics of the chunks gathered
(:func:`acmemodel.trace.stream.summarise_csv`) are the whole read's, and the printed output is the same."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pandas as pd
import pytest

from acmemodel.describe import describe
from acmemodel.trace import load_trace
from acmemodel.trace.stream import summarise_csv

CHUNK = 150_000  # bytes per chunk: about 1,200 rows, a dozen chunks per file


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """Two clusters' CSV files (Seren, Kalos) of 16,000 and 10,000 jobs: CPU and GPU jobs, every state,
    running and pending jobs (censored at the latest timestamp of both files: most chunks are read again),
    quarantined rows, a Kalos file with its own time zone in its timestamps."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    try:
        from bench_load import make_csv
    finally:
        sys.path.pop(0)
    d = tmp_path_factory.mktemp("describe_stream")
    make_csv(d / "seren_a.csv", 16_000, seed=1)
    make_csv(d / "kalos_b.csv", 10_000, seed=2)
    df = pd.read_csv(d / "kalos_b.csv", dtype=str, keep_default_na=False)
    df["job_id"] = "k" + df["job_id"]
    r = df.index[::50]
    df.loc[r, "state"], df.loc[r, "end_time"] = "RUNNING", ""
    r = df.index[7::61]
    df.loc[r, "state"], df.loc[r, "end_time"], df.loc[r, "start_time"] = "PENDING", "", ""
    df.loc[df.index[3::997], "state"] = "NOT_A_STATE"  # quarantined
    df.loc[df.index[5::1999], "gpu_num"] = "-3"
    df.to_csv(d / "kalos_b.csv", index=False)
    return [d / "seren_a.csv", d / "kalos_b.csv"]


def test_chunked_statistics_are_the_whole_read(files):
    whole = load_trace(files)
    s = summarise_csv(files, min_bytes=0, chunk_bytes=CHUNK)
    assert s is not None and s.chunks >= 20
    got, want = describe(s), describe(whole)
    assert json.dumps(got, sort_keys=True) == json.dumps(want, sort_keys=True)
    # (the cases are exercised: censoring across chunks, quarantine, both clusters)
    assert want["clusters"]["Kalos"]["unfinished"]["running"] > 100 and want["rejected"]["total"] > 5
    assert want["extracted_at_utc"] is not None and set(want["clusters"]) == {"Kalos", "Seren"}
    # compact: only describe's columns, the strings categorical
    from acmemodel.trace.stream import DESCRIBE_COLUMNS

    assert set(s.jobs.columns) <= set(DESCRIBE_COLUMNS)
    assert isinstance(s.jobs["type"].dtype, pd.CategoricalDtype) and "job_id" not in s.jobs.columns


def test_cli_output_is_the_same_streamed(files, monkeypatch, capsys):
    from acmemodel.cli import main
    import acmemodel.trace.stream as S

    def run(*args):
        with pytest.raises(SystemExit) as e:
            main(["describe", *map(str, files), *args])
        assert e.value.code in (0, None)
        return capsys.readouterr().out

    whole = run(), run("--json"), run("--by", "gpu-bucket")
    monkeypatch.setattr(S, "DESCRIBE_STREAM_BYTES", 0)
    monkeypatch.setattr(S, "CHUNK_BYTES", CHUNK)
    calls = []
    real = S.summarise_csv
    monkeypatch.setattr(S, "summarise_csv", lambda *a, **k: calls.append(1) or real(*a, min_bytes=0, chunk_bytes=CHUNK))
    streamed = run(), run("--json"), run("--by", "gpu-bucket")
    assert len(calls) == 3
    assert streamed == whole


def test_inputs_that_need_the_whole_read(tmp_path, files):
    import shutil

    small = summarise_csv(files, chunk_bytes=CHUNK)  # (below DESCRIBE_STREAM_BYTES: read whole)
    assert small is None
    # a job id in two chunks (the whole read quarantines the later one)
    dup = tmp_path / "seren_dup.csv"
    text = files[0].read_text().splitlines(keepends=True)
    dup.write_text("".join(text + text[1:200]))
    assert summarise_csv([dup], min_bytes=0, chunk_bytes=CHUNK) is None
    # a blank line between the rows (a warning that counts them over the whole file)
    blank = tmp_path / "seren_blank.csv"
    blank.write_text("".join(text[:500] + ["\n"] + text[500:]))
    assert summarise_csv([blank], min_bytes=0, chunk_bytes=CHUNK) is None
    # a quote (a quoted field may span lines) and a file named after no known cluster
    quoted = tmp_path / "seren_q.csv"
    quoted.write_text("".join(text[:1] + [text[1].replace(",u", ',"u', 1).replace(",", '",', 2)] + text[2:]))
    assert summarise_csv([quoted], min_bytes=0, chunk_bytes=CHUNK) is None
    other = tmp_path / "mylog.csv"
    shutil.copy(files[0], other)
    assert summarise_csv([other], min_bytes=0, chunk_bytes=CHUNK) is None
    assert summarise_csv([other], "mine", min_bytes=0, chunk_bytes=CHUNK) is not None
