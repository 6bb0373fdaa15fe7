"""acmemodel.clusters: the one home of the AcmeTrace cluster facts and of the UTC-offset parser."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from acmemodel.clusters import (CLUSTER_TZ, GPUS_PER_NODE, cluster_gpus, cluster_info, cluster_table,
                                cluster_timezones, utc_offset_seconds)


def test_facts_agree_with_the_shipped_table():
    t = cluster_table()
    assert set(t.index) == set(CLUSTER_TZ)
    for name, tz in CLUSTER_TZ.items():
        assert t.loc[name, "trace_timezone"] == tz
        assert t.loc[name, "gpus_per_node"] == GPUS_PER_NODE
        assert t.loc[name, "gpus"] == t.loc[name, "nodes"] * t.loc[name, "gpus_per_node"]
        assert cluster_gpus(name) == int(t.loc[name, "gpus"])
    # paper Table 1
    assert cluster_gpus("Seren") == 2288 and cluster_gpus("Kalos") == 2416


def test_cluster_info():
    info = cluster_info("seren")
    assert info["name"] == "Seren" and info["tz"] == "+08:00" and info["tzname"] == "Asia/Shanghai"
    assert info["nodes"] == 286 and info["scheduler"] == "Slurm" and isinstance(info["gpus"], int)
    info["gpus"] = 0  # a copy: the cached facts stay intact
    assert cluster_info("SEREN")["gpus"] == 2288
    assert cluster_info("KALOS")["tz"] == "+00:00" and cluster_info("Philly") is None


def test_cluster_gpus_unknown_names_the_cluster():
    with pytest.raises(ValueError, match="'Philly'"):
        cluster_gpus("Philly")


@pytest.mark.parametrize("value, seconds", [
    ("+08:00", 28800), ("+0800", 28800), ("+8", 28800), ("08:00", 28800), ("-05:30", -19800),
    ("-0530", -19800), ("+00:00", 0), ("-00:00", 0), ("Z", 0), ("utc", 0), ("GMT", 0),
    (" UTC+08:00 ", 28800), ("UTC-3", -10800), (28800, 28800), (-3600.0, -3600), (np.int64(3600), 3600),
])
def test_utc_offset_seconds(value, seconds):
    assert utc_offset_seconds(value) == seconds


@pytest.mark.parametrize("value", ["+8:0", "+08:60", "+24:00", "+800", "Asia/Nowhere", "", "28800",
                                   None, True, float("nan"), 86400, [8]])
def test_utc_offset_seconds_rejects(value):
    with pytest.raises(ValueError, match="timezone must be a UTC offset") as e:
        utc_offset_seconds(value)
    assert repr(value) in str(e.value)


def test_cluster_timezones_precedence():
    class T:
        timezones = {"Seren": "+09:00", "X": "+01:00"}

    assert cluster_timezones() == CLUSTER_TZ and cluster_timezones() is not CLUSTER_TZ
    assert cluster_timezones(T()) == {"Seren": "+09:00", "Kalos": "+00:00", "X": "+01:00"}
    assert cluster_timezones(T(), {"X": "Z"})["X"] == "Z"
    assert cluster_timezones(object(), None) == CLUSTER_TZ  # a jobs frame has no timezones


def test_import_is_light():
    code = "import sys, acmemodel.clusters; print(sorted(m for m in ('pandas', 'numpy', 'acmemodel.trace', " \
           "'acmemodel.datasets') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_published_duration_includes_queue_is_one_fact():
    """Kalos's published durations count the queue, Seren's do not; names are case-insensitive, an
    unknown cluster's do not."""
    from acmemodel.clusters import PUBLISHED_DURATION_INCLUDES_QUEUE, published_duration_includes_queue

    assert PUBLISHED_DURATION_INCLUDES_QUEUE == frozenset({"Kalos"})
    assert published_duration_includes_queue("Kalos") and published_duration_includes_queue("kalos")
    assert not published_duration_includes_queue("Seren") and not published_duration_includes_queue("Helios")


def test_cluster_spec_is_data():
    """A cluster description: validated fields, a dict round trip, nodes derived; Seren and Kalos are
    entries of the same kind (the default bundle's); errors name the field."""
    from acmemodel.clusters import ClusterSpec, acme_cluster, acme_clusters

    s = ClusterSpec("mine", gpus=64, gpus_per_node=8, timezone="-05:00", partitions=["a", "b"])
    assert s.nodes == 8 and s.partitions == ("a", "b")
    assert ClusterSpec.from_dict(s.to_dict()) == s
    assert ClusterSpec("x").gpus is None and ClusterSpec("x").nodes is None  # unknown, not invented
    for kw, field in (({"gpus": 0}, "gpus"), ({"gpus": 12, "gpus_per_node": 8}, "gpus"),
                      ({"gpus_per_node": 2.5}, "gpus_per_node"), ({"timezone": "Mars"}, "Mars")):
        with pytest.raises(ValueError, match=field):
            ClusterSpec("x", **kw)
    with pytest.raises(ValueError, match=r"f\.yaml: unknown field\(s\) size"):
        ClusterSpec.from_dict({"name": "x", "size": 3}, where="f.yaml")
    with pytest.raises(ValueError, match=r"f\.yaml\.nodes"):
        ClusterSpec.from_dict({"name": "x", "gpus": 16, "gpus_per_node": 8, "nodes": 3}, where="f.yaml")
    assert set(acme_clusters()) == {"Seren", "Kalos"}
    k = acme_cluster("kalos")
    assert (k.name, k.gpus, k.gpus_per_node, k.nodes, k.timezone, k.duration_includes_queue) == \
        ("Kalos", 2416, 8, 302, "+00:00", True)
    assert acme_cluster("mine") is None


def test_default_bundle_describes_seren_and_kalos():
    from acmemodel.clusters import acme_cluster
    from acmemodel.models.bundle import resolve_bundle

    b = resolve_bundle(None)
    assert b.clusters() == {"Seren": acme_cluster("Seren"), "Kalos": acme_cluster("Kalos")}


def test_sidecar_round_trip_and_errors(tmp_path):
    from acmemodel.clusters import ClusterSpec, read_cluster_file, sidecar_path, write_sidecar

    s = ClusterSpec("mine", gpus=16, gpus_per_node=4, tzname="Europe/Paris", timezone="+01:00")
    p = write_sidecar(s, tmp_path / "mine.csv.gz")
    assert p == sidecar_path(tmp_path / "mine.csv.gz") and p.name == "mine.csv.gz.cluster.yaml"
    assert read_cluster_file(p) == s
    p.write_text("name: mine\ngpus: [1, 2]\n")
    with pytest.raises(ValueError, match=r"mine\.csv\.gz\.cluster\.yaml\.gpus"):
        read_cluster_file(p)
    p.write_text("name: [unclosed\n")
    with pytest.raises(ValueError, match="not YAML"):
        read_cluster_file(p)
