"""Planner configs that used to be read silently wrong (issue 19): duplicate YAML keys, values the bundle
does not know, a run larger than its reservation, a list where a partition name goes, YAML aliases that
expand a few hundred bytes into gigabytes, huge strings."""
from __future__ import annotations

from importlib import resources

import pytest
import yaml

from acmemodel.errors import ConfigError
from acmemodel.planner.config_fields import MAX_NODES, MAX_STRING
from acmemodel.planner.config import ClusterConfig

EXAMPLE = resources.files("acmemodel.planner").joinpath("examples", "example.yaml").read_text()


def _write(tmp_path, text, name="c.yaml"):
    p = tmp_path / name
    p.write_text(text)
    return p


def _err(tmp_path, text, name="c.yaml") -> str:
    with pytest.raises(ConfigError) as e:
        ClusterConfig.load(_write(tmp_path, text, name))
    return str(e.value)


def test_example_still_loads(tmp_path):
    cfg = ClusterConfig.load(_write(tmp_path, EXAMPLE))
    assert [r.name for r in cfg.runs] == ["llm-123b", "llm-20b"]


def test_duplicate_top_level_key_refused(tmp_path):
    msg = _err(tmp_path, EXAMPLE + "\nruns:\n  - {name: x, gpus: 8, work: 1d}\n")
    assert "duplicate key 'runs'" in msg and "line" in msg


def test_duplicate_nested_key_refused(tmp_path):
    text = EXAMPLE.replace("  gpus_per_node: 8\n", "  gpus_per_node: 8\n  gpus_per_node: 16\n")
    assert "duplicate key 'gpus_per_node'" in _err(tmp_path, text)


def test_billion_laughs_refused_quickly(tmp_path):
    text = ('a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n'
            + "".join(f"{n}: &{n} [{','.join(['*' + p] * 9)}]\n" for p, n in zip("abcdefgh", "bcdefghi"))
            + "name: *i\n")
    assert len(text) < 500
    msg = _err(tmp_path, text)
    assert "aliases" in msg or f"{MAX_NODES:,} values" in msg


def test_many_values_via_few_aliases_refused(tmp_path):
    # 4 levels of 50 copies: 50 aliases but 6.25 M values once expanded
    text = "a: &a [" + ",".join(["1"] * 50) + "]\n"
    for p, n in zip("abc", "bcd"):
        text += f"{n}: &{n} [" + ",".join([f"*{p}"] * 25) + "]\n"
    assert f"{MAX_NODES:,} values" in _err(tmp_path, text)


def test_a_few_aliases_are_fine(tmp_path):
    text = EXAMPLE.replace("Pretrain: shared ", "Pretrain: &p shared\n    Debug: *p ")
    cfg = ClusterConfig.load(_write(tmp_path, text))
    assert cfg.cluster.routing == {"Pretrain": "shared", "Debug": "shared"}


def test_long_string_refused(tmp_path):
    msg = _err(tmp_path, EXAMPLE.replace("name: seren-like-5632", "name: " + "x" * (MAX_STRING + 1)))
    assert "name: string of 1,001 characters" in msg


def test_name_must_be_a_string(tmp_path):
    assert "name must be a non-empty string" in _err(tmp_path, EXAMPLE.replace(
        "name: seren-like-5632", "name: [a, b]"))


def test_routing_to_a_list_is_a_config_error(tmp_path):
    msg = _err(tmp_path, EXAMPLE.replace("Pretrain: shared ", "Eval: [shared] "))
    assert "cluster.routing.Eval must be one partition name" in msg


def test_toml_duplicates_still_refused(tmp_path):
    text = '[cluster]\ngpus = 64\n[cluster]\ngpus = 64\n[[runs]]\ngpus = 8\nwork = "1d"\n'
    assert "cannot parse" in _err(tmp_path, text, "c.toml")


def test_huge_config_file_refused(tmp_path):
    assert "bytes; at most" in _err(tmp_path, EXAMPLE + "#" * (1 << 20))


@pytest.mark.parametrize("edit, field", [
    (("failures:\n", "failures:\n  job_type: Zzz\n"), "failures.job_type = 'Zzz'"),
    (("cluster: Seren ", "cluster: Mars "), "workload.cluster = 'Mars'"),
    (("  type: Eval", "  type: Zzz"), "queue_target.type = 'Zzz'"),
])
def test_values_the_bundle_does_not_know(tmp_path, edit, field):
    from acmemodel.planner.planner import Planner

    cfg = ClusterConfig.load(_write(tmp_path, EXAMPLE.replace(*edit).replace("replicas: 10000", "replicas: 50")))
    with pytest.raises(ConfigError, match=field.replace("(", r"\(").replace(".", r"\.")):
        Planner().plan(cfg)


def test_queue_target_type_checked_against_a_given_workload(tmp_path):
    import pandas as pd

    from acmemodel.planner.planner import Planner

    cfg = ClusterConfig.load(_write(tmp_path, EXAMPLE.replace("  type: Eval", "  type: Zzz")
                                    .replace("replicas: 10000", "replicas: 50")))
    jobs = pd.DataFrame({"submit_s": [0.0, 10.0], "run_s": [100.0, 100.0], "gpu_num": [8, 8],
                         "type": ["Eval", "Debug"]})
    with pytest.raises(ConfigError, match="queue_target.type = 'Zzz' is not a job type of the workload"):
        Planner().plan(cfg, workload=jobs)


def test_cli_duplicate_key_exit_2(tmp_path, capsys):
    from acmemodel.cli import main

    p = _write(tmp_path, EXAMPLE + "\nruns:\n  - {name: x, gpus: 8, work: 1d}\n")
    with pytest.raises(SystemExit) as e:
        main(["plan", str(p), "--json"])
    err = capsys.readouterr().err
    assert e.value.code == 2 and err.startswith("error:") and "duplicate key 'runs'" in err
    assert len(err.strip().splitlines()) == 1


def test_yaml_loader_is_safe(tmp_path):
    assert "cannot parse" in _err(tmp_path, "name: !!python/object/apply:os.system ['true']\n")
    assert yaml.safe_load("a: 1") == {"a": 1}
