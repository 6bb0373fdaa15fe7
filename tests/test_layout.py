"""The house: moved names live in one place (no deprecated aliases left behind), every module says what
it is for, and the job-table builders agree."""
from __future__ import annotations

import ast
import importlib
import warnings
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("name, new", [("load_sample", "acmemodel.trace"),
                                       ("load_default", "acmemodel.models.bundle")])
def test_moved_datasets_names_live_in_one_place(name, new):
    import acmemodel.datasets as ds

    assert not hasattr(ds, name)
    assert callable(getattr(importlib.import_module(new), name))


def _reexported_only(path):
    """Names a module imports at its top level and never uses itself (and does not list in __all__)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    used |= {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)}
    return [(a.asname or a.name) for node in tree.body if isinstance(node, ast.ImportFrom) and node.module != "__future__"
            for a in node.names if (a.asname or a.name) not in used]


def test_no_module_re_exports_names_it_does_not_use():
    """0.x: a name that moved is imported from its new home by every caller; only a package's __init__
    states an API of names defined elsewhere (the public entry points)."""
    found = {str(p.relative_to(ROOT)): names for p in _modules() if p.name != "__init__.py"
             for names in [_reexported_only(p)] if names}
    assert found == {}


def _modules():
    for top in ("acmemodel", "features", "models", "evaluation"):
        for p in sorted((ROOT / top).rglob("*.py")):
            if "data" not in p.relative_to(ROOT).parts[:3]:
                yield p


@pytest.mark.parametrize("path", list(_modules()), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_module_opens_with_its_purpose(path):
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")))
    assert doc and len(doc.split()) >= 4, f"{path.relative_to(ROOT)} has no module docstring"


def test_job_table_builders_share_one_contract():
    """The reader, the calibration, reproduce and the synthetic jobs all go through jobs_from_times:
    same columns, same derived semantics (censored waits, GPU time, CPU/failure columns NaN when unknown)."""
    from acmemodel.calibrate import Assumptions, published_jobs
    from acmemodel.evaluation.synthetic import synthetic_jobs
    from acmemodel.reproduction.run import to_trace
    from acmemodel.trace import JOB_COLUMNS, load_sample

    # (the hurdle queue draw: the waits go through the same builder; the policy search, 5 s, has its own tests)
    cal = published_jobs("Kalos", scale=0.002, seed=1, assumptions=Assumptions(queue_policy=False))[0]
    tables = {"reader": load_sample().jobs, "calibrate": cal,
              "synthetic": synthetic_jobs(300, seed=1)}
    sj = tables["synthetic"]
    tables["reproduce"] = to_trace(sj[["cluster", "user", "type", "state", "gpu_num", "submit_s", "start_s",
                                       "end_s"]]).jobs
    for name, j in tables.items():
        assert list(j.columns) == list(JOB_COLUMNS), name
        started = j["started"].to_numpy()
        assert np.array_equal(started, np.isfinite(j["start_s"].to_numpy())), name
        assert np.allclose(j["run_s"][started], (j["end_s"] - j["start_s"])[started]), name
        assert (j["queue_censored"] == ~j["started"]).all(), name
        assert np.allclose(j["gpu_time_s"], np.where(started, j["gpu_num"] * np.nan_to_num(j["run_s"]), 0.0)), name
    # reproduce does not know CPUs or failure times: NaN, not a guess
    assert tables["reproduce"]["cpu_num"].isna().all() and tables["reproduce"]["fail_time_s"].isna().all()


def test_jobs_from_times_rejects_unknown_states():
    from acmemodel.trace import jobs_from_times

    with pytest.raises(ValueError, match="unknown state.*'DONE'"):
        jobs_from_times(cluster="Seren", submit_s=[0.0], start_s=[1.0], end_s=[2.0], gpu_num=[1], type="Eval",
                        state=["DONE"], user="u")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        j = jobs_from_times(cluster="Seren", submit_s=[0.0, 0.0], start_s=[1.0, np.nan], end_s=[5.0, 3.0],
                            gpu_num=[8, 2], type="Eval", state=["NODE_FAIL", "CANCELLED"], user="u")
    assert j["analysis_state"].tolist() == ["FAILED", "CANCELLED"]
    assert j["queue_s"].tolist() == [1.0, 3.0] and j["gpu_time_s"].tolist() == [32.0, 0.0]
    assert j["node_num"].tolist() == [1, 1]


def test_one_model_registry():
    """acmemodel.models lists every model class; the pipeline, the calibration and bundle loading use it."""
    import acmemodel.models as models
    from acmemodel import calibrate, pipeline

    assert set(models.MODEL_REGISTRY) <= set(models.__all__)
    assert {"FailureModel", "RestartModel"} <= set(models.__all__)
    assert pipeline.model_names() == list(models.DEFAULT_MODELS)
    assert set(calibrate.DEFAULT_MODELS) == set(models.DEFAULT_MODELS) - {"predictor"}
    assert all(models.MODELS[m].__name__ in models.MODEL_REGISTRY for m in models.MODELS)


def test_import_contract_names_every_top_level_module():
    """Every module and subpackage of acmemodel sits in a layer of .importlinter (a new module cannot
    slip past the contract); features/, models/ and evaluation/ are installed as acmemodel.*."""
    text = (ROOT / ".importlinter").read_text()
    layer_lines = text.split("layers =", 1)[1].split("\n[", 1)[0]
    listed = {name.strip() for line in layer_lines.splitlines() for name in line.replace(":", "|").split("|")
              if name.strip()}
    tops = {p.stem for p in (ROOT / "acmemodel").glob("*.py") if p.stem != "__init__"}
    tops |= {p.name for p in (ROOT / "acmemodel").iterdir() if (p / "__init__.py").is_file()}
    tops |= {"features", "models", "evaluation"}
    missing = sorted(t for t in tops if f"acmemodel.{t}" not in listed)
    assert not missing, f"modules outside the import contract: {missing}"


# ---------------------------------------------------------------------------------------- consistency
def test_every_model_clones_and_sets_params():
    """scikit-learn's clone works for every model class: an unfitted copy with equal parameters;
    set_params sets one and refuses unknown names."""
    from sklearn.base import clone

    import acmemodel.models as models

    for name, cls in [*models.MODELS.items(), *((c.__name__, c) for c in models.SUBMODELS)]:
        m = cls()
        c = clone(m)
        assert type(c) is cls and c is not m and not c.is_fitted, name
        assert c.get_params(deep=False) == m.get_params(deep=False), name
        first = next(iter(m.get_params(deep=False)))
        assert c.set_params(**{first: m.get_params()[first]}) is c
        with pytest.raises(ValueError, match="no parameter"):
            c.set_params(no_such_parameter=1)


def test_bundle_repr_and_summary():
    from acmemodel.models.bundle import load_default

    b = load_default()
    assert repr(b).startswith(f"Bundle(name={b.name!r}, models=[") and "runtime" in repr(b)
    tab = b.summary()
    assert list(tab["model"]) == list(b.models) and tab["fitted"].all()
    assert tab.set_index("model").loc["failure", "class"] == "FailureModel"


def test_one_fit_signature():
    """Every model: fit(trace_or_jobs, *, timezones=None), returning self."""
    import inspect

    import acmemodel.models as models

    for name, cls in models.MODELS.items():
        sig = inspect.signature(cls.fit)
        ps = [p for p in sig.parameters.values() if p.kind is not p.VAR_POSITIONAL]
        assert ps[1].name == "trace_or_jobs", name
        tz = sig.parameters.get("timezones")
        assert tz is not None and tz.kind is tz.KEYWORD_ONLY and tz.default is None, name


def test_atom_and_backend_names_are_one_each():
    from acmemodel.models.queue import QueueModel
    from acmemodel.sim.cluster import simulate_cluster

    assert "atom_s" in QueueModel().get_params() and RuntimeModel_atom() == 2.0
    jobs = {"submit_s": np.array([0.0, 1.0]), "run_s": np.array([10.0, 5.0]), "gpu_num": np.array([8, 8]),
            "type": np.array(["Eval", "Eval"], dtype=object)}
    a = simulate_cluster(jobs, total_gpus=8, backend="numpy")
    assert a.backend == "numpy"
    with pytest.raises(TypeError):
        simulate_cluster(jobs, total_gpus=8, engine="numpy")


def RuntimeModel_atom() -> float:
    from acmemodel.models.runtime import RuntimeModel

    with pytest.raises(TypeError):
        RuntimeModel(zero_s=2.0)
    return RuntimeModel(atom_s=2.0).atom_s


@pytest.mark.parametrize("backend", ["c", "numpy"])
def test_checkpoint_kernels_explain_bad_values(backend):
    """_core checks every value like _cluster does: a ValueError naming argument, row and rule (not status -1);
    its NumPy twin says the same."""
    from acmemodel.planner.run.checkpoint import _kernels

    k = _kernels(backend)
    one = lambda v: np.array([v], dtype=float)  # noqa: E731
    rn, rw = np.array([[0.0]]), np.array([[1.0]])
    with pytest.raises(ValueError, match=r"work\[0\] must be > 0"):
        k.ckpt_expected_time(one(10.0), one(-5.0), one(1.0), 0, np.array([[100.0]]), rn, rw)
    with pytest.raises(ValueError, match=r"params\[0\]: Weibull failures need shape k > 0"):
        k.ckpt_optimize(one(100.0), one(1.0), 1, np.array([[0.0, 5.0]]), rn, rw)
    with pytest.raises(ValueError, match=r"r_weights\[0\] must have a positive sum"):
        k.ckpt_optimize(one(100.0), one(1.0), 0, np.array([[50.0]]), rn, np.array([[0.0]]))
    with pytest.raises(ValueError, match=r"last hazard of a piecewise hazard must be > 0"):
        k.ckpt_optimize(one(100.0), one(1.0), 2, np.array([[0.0, 10.0, 0.01, 0.0]]), rn, rw)
