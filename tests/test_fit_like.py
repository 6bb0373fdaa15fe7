"""`acmemodel fit --like BUNDLE`: the estimator settings a bundle records are reused; a bundle without
them is refused with one error line."""
import json

from typer.testing import CliRunner

from acmemodel.cli import app


def _sample_path():
    from importlib import resources

    return str(resources.files("acmemodel.datasets").joinpath("data", "sample_seren.csv.gz"))


def test_fit_like_reuses_and_records_the_estimators(tmp_path):
    from acmemodel.models.bundle import Bundle

    src = Bundle.load(_write_source(tmp_path))
    r = CliRunner().invoke(app, ["fit", _sample_path(), "--model", "failure", "--like", str(tmp_path / "src"),
                                 "-o", str(tmp_path / "out"), "--json"])
    assert r.exit_code == 0, r.output
    b = Bundle.load(tmp_path / "out")
    assert b.provenance["estimators"] == {"failure": src.provenance["estimators"]["failure"]}
    assert b["failure"].min_gpus == 64.0 and list(b["failure"].late_covariates) == ["cluster"]
    doc = json.loads(r.stdout)
    assert doc["provenance"]["estimators_from"] == str(tmp_path / "src")
    # without --like: every model's defaults, recorded as none
    r = CliRunner().invoke(app, ["fit", _sample_path(), "--model", "gpu_counts", "-o", str(tmp_path / "plain"),
                                 "--json"])
    assert r.exit_code == 0, r.output
    assert Bundle.load(tmp_path / "plain").provenance["estimators"] == {}


def _write_source(tmp_path):
    """A bundle recording the calibration's estimator settings (as the default does)."""
    import warnings

    from acmemodel.calibrate import estimator_settings
    from acmemodel.trace import load_sample
    from acmemodel.pipeline import fit_bundle

    t = load_sample()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        b = fit_bundle(t.jobs, t.timezones, models=["gpu_counts"], provenance={"estimators": estimator_settings()})
    return b.save(tmp_path / "src")


def test_fit_like_a_bundle_without_settings_is_one_error_line(tmp_path, capsys):
    import warnings

    from acmemodel.trace import load_sample
    from acmemodel.pipeline import fit_bundle

    t = load_sample()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit_bundle(t.jobs, t.timezones, models=["gpu_counts"]).save(tmp_path / "old")
    import pytest

    from acmemodel.cli import main

    with pytest.raises(SystemExit) as e:
        main(["fit", _sample_path(), "--like", str(tmp_path / "old"), "-o", str(tmp_path / "x")])
    assert e.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error:") and "estimator settings" in err[0]
