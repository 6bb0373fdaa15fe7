"""``acmemodel describe``: shares match a hand computation from the timestamps; errors exit 2."""
from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from acmemodel.cli import app, main
from tests.conftest import KALOS_HEADER, SEREN_HEADER

runner = CliRunner()


def _seren(tmp_path):
    rows = [
        # id,user,node,gpu,cpu,type,state,submit,start,end,duration,queue,gpu_time
        "1,u1,1,1,8,Eval,COMPLETED,2023-03-01 10:00:00+08:00,2023-03-01 10:00:30+08:00,2023-03-01 10:01:30+08:00,60,30,60",
        "2,u1,1,1,8,Eval,FAILED,2023-03-01 10:00:00+08:00,2023-03-01 10:00:10+08:00,2023-03-01 10:00:20+08:00,10,10,10",
        "3,u2,64,512,999,Pretrain,CANCELLED,2023-03-01 09:00:00+08:00,2023-03-01 09:00:00+08:00,2023-03-01 10:00:00+08:00,3600,0,1843200",
        "4,u3,1,0,4,Other,COMPLETED,2023-03-01 09:00:00+08:00,2023-03-01 09:00:00+08:00,2023-03-01 09:00:05+08:00,5,0,0",
        "5,u3,1,1,4,Eval,NOT_A_STATE,2023-03-01 09:00:00+08:00,2023-03-01 09:00:00+08:00,2023-03-01 09:00:05+08:00,5,0,0",
    ]
    p = tmp_path / "trace_seren.csv"
    p.write_text("\n".join([SEREN_HEADER, *rows]) + "\n")
    return p


def test_describe_json_matches_hand_computation(tmp_path):
    p = _seren(tmp_path)
    r = runner.invoke(app, ["describe", str(p), "--json", "--rejects", str(tmp_path / "rej.csv")])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["files"][0] == {"path": str(p), "cluster": "Seren", "schema": "seren", "rows": 5,
                               "accepted": 4, "rejected": 1}
    assert doc["rejected"] == {"total": 1, "by_reason": {"unknown_state": 1}}
    s = doc["clusters"]["Seren"]
    assert s["gpu_jobs"] == 3 and s["cpu_jobs"] == 1
    total = 60 + 10 + 512 * 3600
    ev, pt = s["by_type"]["Eval"], s["by_type"]["Pretrain"]
    assert ev["jobs"] == 2 and ev["job_share"] == pytest.approx(2 / 3)
    assert ev["gpu_time_share"] == pytest.approx(70 / total)
    assert ev["median_run_s"] == 35 and ev["median_queue_s"] == 20 and ev["mean_gpus"] == 1
    assert pt["gpu_time_share"] == pytest.approx(512 * 3600 / total)
    assert s["by_state"]["FAILED"]["jobs"] == 1 and s["by_state"]["CANCELLED"]["job_share"] == pytest.approx(1 / 3)
    assert set(doc["inconsistencies"]) >= {"duration", "queue", "gpu_time"}
    rej = (tmp_path / "rej.csv").read_text()
    assert "unknown_state" in rej and "NOT_A_STATE" in rej


def test_describe_kalos_uses_timestamps_not_duration(kalos_example):
    r = runner.invoke(app, ["describe", str(kalos_example), "--json"])
    doc = json.loads(r.stdout)
    k = doc["clusters"]["Kalos"]
    assert k["gpu_time_s"] == 64 * 8 + 64 * 70  # not 64 * (18 + 82)
    assert doc["inconsistencies"]["duration"] == 2


def test_describe_tables_and_sample():
    r = runner.invoke(app, ["describe", "--by", "type", "--by", "gpu-bucket"])
    assert r.exit_code == 0, r.output
    assert "Seren GPU jobs by type" in r.stdout and "Kalos GPU jobs by gpu-bucket" in r.stdout


@pytest.mark.parametrize("content", ["", "job_id,user\n1,u\n"])
def test_user_errors_exit_2_one_line(tmp_path, capsys, content):
    p = tmp_path / "bad.csv"
    p.write_text(content)
    with pytest.raises(SystemExit) as e:
        main(["describe", str(p)])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and str(p) in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def test_missing_file_and_bad_option_exit_2(tmp_path, capsys):
    for argv in (["describe", str(tmp_path / "missing.csv")], ["describe", "--by", "colour"]):
        with pytest.raises(SystemExit) as e:
            main(argv)
        assert e.value.code == 2
    assert "Traceback" not in capsys.readouterr().err


def test_kalos_header_constant_matches_example(kalos_example):
    assert kalos_example.read_text().splitlines()[0] == KALOS_HEADER


def test_state_table_counts_have_thousands_separators():
    """The by-state table prints job counts as the other tables do ("18,239", not "18239")."""
    import re

    r = runner.invoke(app, ["describe", "--by", "state"])
    assert r.exit_code == 0, r.output
    counts = [int(m.replace(",", "")) for m in re.findall(r"COMPLETED\s+([\d,]+)", r.stdout)]
    assert counts and max(counts) >= 1000
    assert not re.search(r"COMPLETED\s+\d{4,}\s", r.stdout)


def test_describe_summary_numbers_have_thousands_separators():
    """The per-cluster summary line and the Files table print counts and GPU-hours as 2,125 / 27,473, as the
    other tables do (a NASA SWF conversion printed '18239 GPU jobs ... 131733 GPU-h')."""
    import re

    out = CliRunner().invoke(app, ["describe"], env={"COLUMNS": "80"}).output
    assert re.search(r"\b\d{1,3}(,\d{3})+ CPU jobs; GPU time \d{1,3}(,\d{3})+ GPU-h", out), out[:800]
    assert not re.search(r"\b\d{4,} (GPU|CPU) jobs|\b\d{4,} GPU-h", out)
    rows = re.findall(r"\s(\d[\d,]*)\s+(\d[\d,]*)\s+(\d[\d,]*)\s*$", out, flags=re.M)
    assert rows and all(re.fullmatch(r"\d{1,3}(,\d{3})*", x) for r in rows for x in r)
