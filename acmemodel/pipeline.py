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
               log: Callable[[str], None] | None = None) -> Bundle:
    """Fit the named models (default: all) on ``jobs`` (the trace contract) and bundle them.

    ``params`` maps a model name to constructor keyword arguments; ``subsets`` maps a model name to a
    boolean mask of the rows it is fitted on (default: all rows). ``provenance`` is stored as given,
    plus per-model fit seconds under ``"fit_seconds"``.
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
    fitted, seconds = {}, {}
    for m in names:
        t = time.perf_counter()
        model = builders[m](**params.get(m, {}))
        data = trace if m not in subsets else Trace(
            jobs=jobs[subsets[m]].reset_index(drop=True), rejected=pd.DataFrame(), timezones=trace.timezones)
        fitted[m] = _fit_one(model, data)
        seconds[m] = round(time.perf_counter() - t, 3)
        if log:
            log(f"fitted {m} in {seconds[m]:.1f} s")
    prov = dict(provenance or {})
    prov["fit_seconds"] = seconds
    return Bundle(fitted, provenance=prov, name=name)


def _fit_one(model, trace):
    """Call ``model.fit`` with the trace (models accept a Trace or its jobs frame)."""
    return model.fit(trace)
