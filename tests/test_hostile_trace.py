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
