"""Property-based tests (issue 18): mutated planner configs and trace rows fed to the CLI produce either
a result (exit 0) or the package's own error — exit 2 and exactly one ``error:`` line — never a
traceback or another exit code. (Mutated bundle files: tests of the bundle validation.)"""
from __future__ import annotations

import contextlib
import copy
import io
import warnings
from importlib import resources
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from acmemodel.cli import main

EXAMPLE = yaml.safe_load(Path(str(resources.files("acmemodel.planner").joinpath("examples", "example.yaml")))
                         .read_text())
EXAMPLE.pop("evaluation", None)  # the evaluation batch has its own tests; keep each example fast

#: values a user can write in YAML (and a few that only a typo or a generator produces)
VALUES = st.one_of(
    st.none(), st.booleans(),
    st.integers(min_value=-10, max_value=10), st.integers(min_value=-2 ** 80, max_value=2 ** 80),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(["", "auto", "10m", "-5s", "1e400d", "30d", "x", "[/b]", "Eval", "sync", "2w", "0"]),
    st.text(max_size=8),
    st.lists(st.integers(-3, 3), max_size=3),
    st.dictionaries(st.sampled_from(["a", "Eval", "gpus", "Infrastructure"]), st.integers(-3, 3), max_size=2),
)


def _paths(d, prefix=()):
    """Every key path of a nested dict/list (the places a mutation can hit)."""
    out = [prefix] if prefix else []
    if isinstance(d, dict):
        for k, v in d.items():
            out += _paths(v, prefix + (k,))
    elif isinstance(d, list):
        for i, v in enumerate(d):
            out += _paths(v, prefix + (i,))
    return out


PATHS = _paths(EXAMPLE)
EXTRA_KEYS = ["bogus", "gpus", "runs", "cluster", "replicas"]


def _mutate(d, path, value, op):
    d = copy.deepcopy(d)
    *head, last = path
    node = d
    for k in head:
        node = node[k]
    if op == "set":
        node[last] = value
    elif op == "delete":
        del node[last]
    else:  # add an unknown key next to it
        if isinstance(node, dict):
            node[f"{EXTRA_KEYS[len(str(value)) % len(EXTRA_KEYS)]}_x"] = value
    return d


def _run(argv):
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            main(argv)
            code = 0
        except SystemExit as e:
            code = e.code
    return code, err.getvalue()


def _assert_own_error(code, err, argv):
    assert code in (0, 2), (code, err, argv)
    if code == 2:
        lines = [ln for ln in err.strip().splitlines() if ln.strip()]
        assert len(lines) == 1 and lines[0].startswith("error: "), (err, argv)
    assert "Traceback" not in err, err


#: CLI examples take seconds each (bundle, Monte Carlo): generate without the slow shrinking phase
CLI = dict(deadline=None, phases=[Phase.explicit, Phase.reuse, Phase.generate],
           suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


@settings(max_examples=400, deadline=None)
@given(path=st.sampled_from(PATHS), value=VALUES, op=st.sampled_from(["set", "set", "set", "delete", "add"]))
def test_mutated_planner_config_validation(path, value, op):
    """Validation alone (fast, many examples): a mutated config is accepted or refused with a
    ConfigError/ValueError naming the field, never another exception (found: a list or mapping as a
    routing target raised TypeError)."""
    from acmemodel.errors import AcmeModelError
    from acmemodel.planner.config import ClusterConfig

    cfg = _mutate(EXAMPLE, path, value, op)
    try:
        ClusterConfig.from_dict(cfg)
    except (AcmeModelError, ValueError) as e:
        assert str(e)


@settings(max_examples=12, **CLI)
@given(path=st.sampled_from(PATHS), value=VALUES, op=st.sampled_from(["set", "set", "set", "delete", "add"]))
def test_mutated_planner_config(tmp_path, path, value, op):
    cfg = _mutate(EXAMPLE, path, value, op)
    p = tmp_path / "cfg.yaml"
    try:
        p.write_text(yaml.safe_dump(cfg))
    except (yaml.YAMLError, ValueError):  # pragma: no cover - unrepresentable value
        return
    argv = ["plan", str(p), "--no-cluster", "--replicas", "30"]
    _assert_own_error(*_run(argv), argv)


@settings(max_examples=4, **CLI)
@given(path=st.sampled_from([p for p in PATHS if p[0] in ("cluster", "workload", "queue_target")]),
       value=VALUES)
def test_mutated_planner_config_with_cluster(tmp_path, path, value):
    base = copy.deepcopy(EXAMPLE)
    base["workload"]["days"] = 0.25  # keep each example's cluster simulation short
    base["runs"] = base["runs"][:1]
    cfg = _mutate(base, path, value, "set")
    p = tmp_path / "cfg.yaml"
    p.write_text(yaml.safe_dump(cfg))
    argv = ["plan", str(p), "--replicas", "20"]
    _assert_own_error(*_run(argv), argv)


@pytest.fixture(scope="module")
def trace_lines():
    import gzip

    from acmemodel.datasets import sample_paths

    src = [p for p in sample_paths() if "seren" in str(p)][0]
    with gzip.open(src, "rt") as f:
        lines = f.read().splitlines()
    return lines[0], lines[1:200]


CELLS = st.one_of(st.sampled_from(["", "NaN", "-1", "0", "1e9", "1e400", "abc", "2023-13-45 25:61:00",
                                   "1500-01-01 00:00:00+08:00", "COMPLETED", "FAILED", "Eval", '"', ",",
                                   "2023-03-01 00:00:00", "inf", "-0"]),
                  st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\r\n"),
                          max_size=6),
                  st.integers(-2 ** 63, 2 ** 63).map(str))


@settings(max_examples=20, **CLI)
@given(edits=st.lists(st.tuples(st.integers(0, 198), st.integers(0, 20), CELLS), min_size=1, max_size=6),
       cmd=st.sampled_from([["describe"], ["forecast", "--method", "seasonal_naive", "--no-backtest", "--days", "3"],
                            ["export", "--format", "swf"], ["export", "--format", "helios"]]))
def test_mutated_trace_rows(tmp_path, trace_lines, edits, cmd):
    header, rows = trace_lines
    rows = list(rows)
    for r, c, v in edits:
        cells = rows[r].split(",")
        cells[c % len(cells)] = v
        rows[r] = ",".join(cells)
    p = tmp_path / "trace_seren.csv"
    p.write_text("\n".join([header, *rows]) + "\n", encoding="utf-8")
    argv = [cmd[0], str(p), *cmd[1:]]
    if cmd[0] == "export":
        argv += ["-o", str(tmp_path / "out")]
    _assert_own_error(*_run(argv), argv)
