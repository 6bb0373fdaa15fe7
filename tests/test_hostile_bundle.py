"""Damaged and hostile bundles (issues 18 and 19): every problem is a BundleError naming the file or the
bundle.json field — never a LightGBM abort, LightGBMError, AttributeError, RecursionError, a read outside
the bundle, or a zip member expanded into memory without limit."""
from __future__ import annotations

import json
import shutil
import zipfile

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from acmemodel.errors import BundleError
from acmemodel.models import Bundle
from acmemodel.models import bundle as B
from acmemodel.models.lgbm_text import booster_from_text, check_lightgbm_text


@pytest.fixture(scope="module")
def lgbm_bundle(tmp_path_factory):
    """A saved bundle with a small RuntimePredictor (three LightGBM boosters as text files)."""
    from acmemodel.evaluation.synthetic import synthetic_jobs
    from acmemodel.models.predictor import RuntimePredictor, submission_features

    jobs = submission_features(synthetic_jobs(1500, seed=1))
    m = RuntimePredictor(n_estimators=5, num_leaves=4, conformal=None).fit(jobs)
    path = tmp_path_factory.mktemp("b") / "pred"
    Bundle({"predictor": m}, name="t").save(path)
    return path


@pytest.fixture
def copy(lgbm_bundle, tmp_path):
    dst = tmp_path / "b"
    shutil.copytree(lgbm_bundle, dst)
    return dst


def _doc(path):
    return json.loads((path / "bundle.json").read_text())


def _put(path, doc):
    (path / "bundle.json").write_text(json.dumps(doc))


def test_good_bundle_loads(lgbm_bundle):
    b = Bundle.load(lgbm_bundle)
    assert sorted(b["predictor"].boosters_) == ["p10", "p50", "p90"]


@pytest.mark.parametrize("damage", ["empty", "garbage", "truncated_half", "truncated_tree", "no_end"])
def test_damaged_lightgbm_text_is_a_bundle_error_naming_the_file(copy, damage):
    f = copy / "predictor.p50.txt"
    text = f.read_text()
    f.write_text({"empty": "", "garbage": "hello\x00world\n" * 20, "truncated_half": text[: len(text) // 2],
                  "truncated_tree": text[: text.index("Tree=1")],
                  "no_end": text.replace("end of trees", "")}[damage])
    with pytest.raises(BundleError, match="predictor.p50.txt"):
        Bundle.load(copy)


def test_every_truncation_is_refused_or_loads(lgbm_bundle):
    """A prefix of LightGBM text either fails the check (BundleError) or still holds every tree and the
    end marker (what is cut is the optional importances/parameters tail); then it loads or the library's
    complaint comes back as a BundleError."""
    text = (lgbm_bundle / "predictor.p10.txt").read_text()
    n = check_lightgbm_text(text)
    end = text.index("\nend of trees\n") + len("\nend of trees\n")
    accepted = []
    for k in range(0, len(text), 7):
        try:
            assert check_lightgbm_text(text[:k]) == n
            accepted.append(k)
        except BundleError:
            pass
    assert all(k >= end for k in accepted)
    loaded = 0
    for k in accepted[:: max(1, len(accepted) // 8)]:
        try:  # a cut inside the last line (pandas_categorical JSON) is the library's BundleError
            loaded += booster_from_text(text[:k]).num_trees() == n
        except BundleError as e:
            assert "LightGBM cannot read it" in str(e)
    assert loaded


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_random_byte_damage_never_escapes(data):
    """Random edits of valid LightGBM text: only BundleError, or a booster that loads."""
    import lightgbm as lgb
    import numpy as np

    X = np.random.default_rng(0).random((100, 2))
    text = lgb.train({"objective": "regression", "verbose": -1, "num_leaves": 4, "min_data_in_leaf": 5},
                     lgb.Dataset(X, X[:, 0]), num_boost_round=2).model_to_string()
    pos = data.draw(st.integers(0, len(text) - 1))
    rep = data.draw(st.sampled_from(["", "0", "9", "-", " ", "\n", "=", "x", "Tree=7\n", "1e999"]))
    cut = data.draw(st.integers(0, 3))
    bad = text[:pos] + rep + text[pos + cut:]
    try:
        booster_from_text(bad, "f.txt")
    except BundleError as e:
        assert str(e).startswith("f.txt")


@pytest.mark.parametrize("edit, field", [
    (lambda d: d.update(models=[1, 2]), "models must be an object"),
    (lambda d: d.update(models="x"), "models must be an object"),
    (lambda d: d["models"].update(predictor="RuntimePredictor"), "models.predictor must be an object"),
    (lambda d: d["models"]["predictor"].update(params=[1]), "models.predictor.params must be an object"),
    (lambda d: d.update(provenance=[1]), "provenance must be an object"),
    (lambda d: d.update(name=["x"]), "name must be a string"),
    (lambda d: d["models"]["predictor"].update({"class": "BaseModel"}), "models.predictor.class 'BaseModel'"),
    (lambda d: d["models"]["predictor"].update({"class": "DurationModel"}), "models.predictor.class"),
    (lambda d: d["models"]["predictor"].update({"class": "QueueModel"}), "must be a RuntimePredictor"),
    (lambda d: d["models"]["predictor"].update(artifacts="p10"), "artifacts must be a list"),
    (lambda d: d["models"]["predictor"].update(fitted={"boosters": 5}), "models.predictor is malformed"),
    (lambda d: d.update(schema_version=[1]), "schema_version must be a string"),
])
def test_wrong_shapes_are_field_named(copy, edit, field):
    doc = _doc(copy)
    edit(doc)
    _put(copy, doc)
    with pytest.raises(BundleError, match=field.replace(".", r"\.").replace("(", r"\(")):
        Bundle.load(copy)


def test_deep_nesting(copy):
    (copy / "bundle.json").write_text('{"schema_version": "1.0", "models": {}, "provenance": '
                                      + "[" * 100_000 + "]" * 100_000 + "}")
    with pytest.raises(BundleError, match="nested"):
        Bundle.load(copy)
    doc = _doc(copy) if False else {"schema_version": "1.0", "models": {}, "provenance": {"a": [[[[[]]]]] * 2}}
    x = doc["provenance"]
    for _ in range(80):
        x["a"] = {"a": None}
        x = x["a"]
    _put(copy, doc)
    with pytest.raises(BundleError, match="deeper than"):
        Bundle.load(copy)


@pytest.mark.parametrize("key", ["../../outside/evil", "/etc/evil", "a.b", "..", "x/y"])
def test_model_keys_cannot_reach_outside(copy, tmp_path, key):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "evil.p10.txt").write_text("tree\n")
    doc = _doc(copy)
    doc["models"][key] = doc["models"].pop("predictor")
    _put(copy, doc)
    with pytest.raises(BundleError, match="not a plain name"):
        Bundle.load(copy)


@pytest.mark.parametrize("art", ["../../../etc/passwd", "/abs", "p10.txt", ""])
def test_artifact_names_are_plain(copy, art):
    doc = _doc(copy)
    doc["models"]["predictor"]["artifacts"] = [art]
    _put(copy, doc)
    with pytest.raises(BundleError, match="not a plain name"):
        Bundle.load(copy)


def test_artifact_must_be_a_bundle_file(copy):
    (copy / "predictor.p50.txt").unlink()
    with pytest.raises(BundleError, match="misses artifact file predictor.p50.txt"):
        Bundle.load(copy)


def test_zip_bundle_round_trip_and_member_limits(lgbm_bundle, tmp_path, monkeypatch):
    z = tmp_path / "b.zip"
    Bundle.load(lgbm_bundle).save(z)
    assert sorted(Bundle.load(z)["predictor"].boosters_) == ["p10", "p50", "p90"]
    # a member larger than the limit is refused from its header, before it is decompressed
    bomb = tmp_path / "bomb.zip"
    with zipfile.ZipFile(z) as src, zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as dst:
        for n in src.namelist():
            dst.writestr(n, src.read(n))
        dst.writestr("junk.bin", b"\0" * (8 << 20))  # not named by bundle.json: never read
    monkeypatch.setattr(B, "MAX_FILE_BYTES", 4 << 20)
    assert Bundle.load(bomb) is not None
    with zipfile.ZipFile(z) as src, zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as dst:
        for n in src.namelist():
            dst.writestr(n, src.read(n) if n != "predictor.p50.txt" else b"tree\n" + b" " * (8 << 20))
    with pytest.raises(BundleError, match=r"predictor.p50.txt is 8,388,613 bytes; at most"):
        Bundle.load(bomb)
    monkeypatch.setattr(B, "MAX_TOTAL_BYTES", 1000)
    with pytest.raises(BundleError, match="in total"):
        Bundle.load(z)


def test_save_refuses_path_like_names(tmp_path, lgbm_bundle):
    m = Bundle.load(lgbm_bundle)["predictor"]
    with pytest.raises(BundleError, match="not a plain name"):
        Bundle({"../x": m}).save(tmp_path / "o")


def test_cli_truncated_booster_exit_2(copy, capsys):
    from acmemodel.cli import main

    f = copy / "predictor.p90.txt"
    f.write_text(f.read_text()[:300])
    with pytest.raises(SystemExit) as e:
        main(["synth", "--bundle", str(copy), "-o", str(copy.parent / "x.csv"), "--days", "1"])
    err = capsys.readouterr().err
    assert e.value.code == 2 and err.startswith("error:") and "predictor.p90.txt" in err
