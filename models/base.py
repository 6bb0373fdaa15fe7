"""Shared machinery of every model: parameters, fitted-state checks, JSON (de)serialisation.

A model class states only its math; this base gives it

* ``get_params(deep=True)`` / ``set_params(**params)`` — the keyword-only constructor arguments
  (scikit-learn convention: ``__init__`` only stores them, ``fit`` validates them), so
  ``sklearn.base.clone(model)`` gives an unfitted copy;
* ``to_dict()`` / ``from_dict()`` — a JSON-safe representation (``{"class", "params", "fitted"}``)
  used by :mod:`acmemodel.models.bundle`; subclasses implement ``_fitted_to_dict`` and
  ``_fitted_from_dict``; LightGBM boosters travel as text through ``artifacts()``;
* ``_check_fitted()`` — raises :class:`~acmemodel.errors.NotFittedError`.

Every concrete model registers itself with :func:`register` so a bundle can rebuild it by name.
"""
from __future__ import annotations

import json

import inspect
from typing import Any, ClassVar

from acmemodel.errors import BundleError, NotFittedError

MODEL_REGISTRY: dict[str, type["BaseModel"]] = {}


def register(cls: type["BaseModel"]) -> type["BaseModel"]:
    """Class decorator: make ``cls`` loadable from a bundle under ``cls.__name__``."""
    MODEL_REGISTRY[cls.__name__] = cls
    return cls


class BaseModel:
    """Base of all acmemodel models (see module docstring)."""

    #: name of the attribute whose presence means "fitted"
    _fitted_marker: ClassVar[str] = "n_fit_"

    # ----------------------------------------------------------------- parameters
    @classmethod
    def _param_names(cls) -> list[str]:
        sig = inspect.signature(cls.__init__)
        return [p.name for p in sig.parameters.values()
                if p.name != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """The constructor parameters, as stored by ``__init__``; with ``deep``, a parameter that is
        itself an estimator adds its own as ``name__param`` (scikit-learn's convention)."""
        out = {name: getattr(self, name) for name in self._param_names()}
        if deep:
            for name, value in list(out.items()):
                if hasattr(value, "get_params") and not isinstance(value, type):
                    out.update({f"{name}__{k}": v for k, v in value.get_params(deep=True).items()})
        return out

    def set_params(self, **params) -> "BaseModel":
        """Set constructor parameters (``name__param`` reaches into a nested estimator); returns ``self``.
        Unknown names raise ValueError; the values are checked by the next ``fit``."""
        known = self._param_names()
        for key, value in params.items():
            name, _, sub = key.partition("__")
            if name not in known:
                raise ValueError(f"{type(self).__name__} has no parameter {name!r} (parameters: {', '.join(known)})")
            if sub:
                getattr(self, name).set_params(**{sub: value})
            else:
                setattr(self, name, value)
        return self

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={v!r}" for k, v in self.get_params(deep=False).items())
        return f"{type(self).__name__}({params})"

    # ----------------------------------------------------------------- fitted state
    @property
    def is_fitted(self) -> bool:
        return hasattr(self, self._fitted_marker)

    def _check_fitted(self) -> None:
        if not self.is_fitted:
            raise NotFittedError(f"{type(self).__name__} is not fitted yet: call fit() first")

    # ----------------------------------------------------------------- serialisation
    def _fitted_to_dict(self) -> dict[str, Any]:  # pragma: no cover - abstract
        raise NotImplementedError

    def _fitted_from_dict(self, d: dict[str, Any], artifacts: dict[str, str]) -> None:  # pragma: no cover
        raise NotImplementedError

    def artifacts(self) -> dict[str, str]:
        """Text artifacts saved beside the JSON (LightGBM model text), name → text."""
        return {}

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe representation: ``{"class", "params", "fitted"}``."""
        self._check_fitted()
        return {"class": type(self).__name__, "params": _jsonable(self.get_params(deep=False)),
                "fitted": _jsonable(self._fitted_to_dict())}

    @classmethod
    def from_dict(cls, d: dict[str, Any], artifacts: dict[str, str] | None = None) -> "BaseModel":
        """Rebuild a fitted model from :meth:`to_dict` output (dispatches on ``d["class"]``)."""
        name = d.get("class")
        target = MODEL_REGISTRY.get(name, cls if name == cls.__name__ else None)
        if target is None:
            raise BundleError(f"unknown model class {name!r} in bundle")
        params = d.get("params", {})
        known = set(target._param_names())
        obj = target(**{k: _unjson_param(v) for k, v in params.items() if k in known})
        obj._fitted_from_dict(d.get("fitted", {}), artifacts or {})
        # the texts as read: saving a loaded model writes them again byte for byte (a booster rebuilt
        # from text re-dumps without its training-parameter block)
        # (kept only while the model is the one loaded: a refit changes its document)
        if artifacts:
            obj._loaded_artifacts = (dict(artifacts), json.dumps(obj.to_dict(), sort_keys=True))
        return obj

    def saved_artifacts(self) -> dict[str, str]:
        """The artifact texts a bundle writes: those the model was loaded from while it is that model,
        else :meth:`artifacts`."""
        loaded = getattr(self, "_loaded_artifacts", None)
        if loaded and json.dumps(self.to_dict(), sort_keys=True) == loaded[1]:
            return dict(loaded[0])
        return self.artifacts()


def _unjson_param(v: Any) -> Any:
    return tuple(_unjson_param(x) for x in v) if isinstance(v, list) else v


def _jsonable(obj: Any) -> Any:
    """Convert numpy/pandas scalars and arrays inside ``obj`` into plain JSON types."""
    import math

    import numpy as np

    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return [_jsonable(v) for v in obj.tolist()]
    if isinstance(obj, (np.integer,)):
        return int(obj)
    if isinstance(obj, (np.floating, float)):
        f = float(obj)
        return f if math.isfinite(f) else (None if math.isnan(f) else ("inf" if f > 0 else "-inf"))
    if isinstance(obj, np.bool_):
        return bool(obj)
    return obj


def unjson_float(v: Any) -> float:
    """Inverse of :func:`_jsonable` for one float (``None`` → NaN, ``"inf"`` → inf)."""
    if v is None:
        return float("nan")
    return float(v)
