"""Fit every model family of the package on one trace and collect them in a :class:`Bundle`.

Used by ``acmemodel fit`` (a real trace) and by :mod:`acmemodel.calibrate` (the pseudo-trace built
from published statistics), so both bundles hold the same models fitted the same way.
"""
from __future__ import annotations

import time
from typing import Callable, Iterable

import pandas as pd

from acmemodel.models.bundle import Bundle


def _builders() -> dict[str, Callable[[], object]]:
    """name → constructor of each model a fitted bundle holds (:data:`acmemodel.models.DEFAULT_MODELS`)."""
    from acmemodel.models import DEFAULT_MODELS, MODELS

    return {m: MODELS[m] for m in DEFAULT_MODELS}


def model_names() -> list[str]:
    return list(_builders())


def fit_bundle(jobs: pd.DataFrame, timezones: dict[str, str] | None = None, *,
               models: Iterable[str] | None = None, provenance: dict | None = None, name: str = "bundle",
               params: dict[str, dict] | None = None, subsets: dict[str, "pd.Series"] | None = None,
               log: Callable[[str], None] | None = None,
               progress: Callable[..., None] | None = None) -> Bundle:
    """Fit the named models (default: all) on ``jobs`` (the trace contract) and bundle them.

    ``params`` maps a model name to constructor keyword arguments; ``subsets`` maps a model name to a
    boolean mask of the rows it is fitted on (default: all rows). ``provenance`` is stored as given,
    plus per-model fit seconds under ``"fit_seconds"`` and, when a fit warned, one sentence per distinct
    warning under ``"fit_notes"`` (``{model: [sentence]}``; each is re-issued once as a warning).
    ``progress(done, total, description)`` is called before each model and at the end.
    """
    from acmemodel.trace import Trace

    builders = _builders()
    names = list(models) if models is not None else list(builders)
    bad = [m for m in names if m not in builders]
    if bad:
        raise ValueError(f"models: unknown model(s) {bad}; choose from {', '.join(builders)}")
    params, subsets = dict(params or {}), dict(subsets or {})
    unknown = (set(params) | set(subsets)) - set(names)
    if unknown:
        raise ValueError(f"params/subsets name models that are not fitted: {sorted(unknown)}")
    trace = Trace(jobs=jobs, rejected=pd.DataFrame(), timezones=dict(timezones or {}))
    import warnings

    fitted, seconds, notes = {}, {}, {}
    for i, m in enumerate(names):
        if progress is not None:
            progress(i, len(names), f"fitting {m}")
        t = time.perf_counter()
        model = builders[m](**params.get(m, {}))
        data = trace if m not in subsets else Trace(
            jobs=jobs[subsets[m]].reset_index(drop=True), rejected=pd.DataFrame(), timezones=trace.timezones)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            fitted[m] = _fit_one(model, data)
        seconds[m] = round(time.perf_counter() - t, 3)
        sentences = _warning_sentences(caught)
        if sentences:
            notes[m] = sentences
        for text, category in sentences.items():  # one warning per distinct message, not one per call
            warnings.warn(f"{m}: {text}", category, stacklevel=2)
        if log:
            log(f"fitted {m} in {seconds[m]:.1f} s")
    if progress is not None:
        progress(len(names), len(names), "fitted")
    prov = dict(provenance or {})
    prov["fit_seconds"] = seconds
    if notes:
        prov["fit_notes"] = {m: list(v) for m, v in notes.items()}
    return Bundle(fitted, provenance=prov, name=name)


def estimators_of(bundle_path) -> dict[str, dict]:
    """The estimator settings a bundle records (``provenance["estimators"]``: model → constructor keyword
    arguments, as :func:`fit_bundle`'s ``params``), for ``acmemodel fit --like BUNDLE``; a bundle without
    them raises :class:`~acmemodel.errors.BundleError` naming it."""
    from acmemodel.errors import BundleError

    b = Bundle.load(bundle_path)
    est = (b.provenance or {}).get("estimators")
    if not isinstance(est, dict):
        raise BundleError(f"bundle {bundle_path}: records no estimator settings (provenance.estimators); "
                          f"re-make it with this version (acmemodel calibrate / fit)")
    builders = _builders()
    bad = [m for m in est if m not in builders or not isinstance(est[m], dict)]
    if bad:
        raise BundleError(f"bundle {bundle_path}: provenance.estimators names unknown model(s) {bad}")
    return {m: dict(p) for m, p in est.items()}


def _warning_sentences(caught) -> dict:
    """Distinct warning messages of one model's fit → their category, as one sentence each (a
    statsmodels/scikit-learn ConvergenceWarning becomes "the optimiser did not converge ...")."""
    out: dict = {}
    for w in caught:
        cat = w.category
        text = " ".join(str(w.message).split())
        if "convergence" in cat.__name__.lower() and "converge" in text.lower() and \
                not cat.__module__.startswith("acmemodel"):
            from acmemodel.errors import ConvergenceWarning

            text, cat = ("the optimiser did not converge within its iteration limit; the estimates are "
                         "usable but less precise"), ConvergenceWarning
        if text and not text.endswith("."):
            text += "."
        out.setdefault(text[:1].upper() + text[1:] if text else text, cat)
    return out


def _fit_one(model, trace):
    """Call ``model.fit`` with the trace (models accept a Trace or its jobs frame)."""
    return model.fit(trace)
