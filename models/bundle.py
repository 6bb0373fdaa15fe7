"""Model bundles: a directory (or ``.zip``) of JSON + LightGBM text. Never pickle.

Layout::

    BUNDLE/
      bundle.json          {"schema_version", "package_version", "created_utc", "name",
                            "provenance": {...}, "models": {NAME: model.to_dict() + {"artifacts": [...]}}}
      NAME.ARTIFACT.txt    LightGBM model text and other text artifacts

``schema_version`` is ``MAJOR.MINOR``; a bundle whose MAJOR differs from :data:`SCHEMA_VERSION`
is refused with :class:`~acmemodel.errors.BundleError`.
"""
from __future__ import annotations

import datetime as _dt
import hashlib
import io
import json
import zipfile
from pathlib import Path
from typing import Any

from acmemodel.errors import BundleError
from acmemodel.models.base import BaseModel, _jsonable

SCHEMA_VERSION = "1.0"

#: modules whose classes a bundle may hold (the registry :data:`acmemodel.models.MODELS` imports them)
MODEL_MODULES: tuple[str, ...] = ("runtime", "queue", "failure", "restart", "arrival", "gpu_counts",
                                  "predictor", "forecast")


def _import_model_modules() -> None:
    """Register every model class for loading (importing the registry imports them all)."""
    import acmemodel.models  # noqa: F401


def file_sha256(path: str | Path) -> str:
    """Hex SHA-256 of a file's bytes (provenance of fitted bundles)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


class Bundle:
    """A named set of fitted models plus provenance.

    Parameters
    ----------
    models : dict name → fitted model (``"runtime"``, ``"queue"``, ``"failure"``, ``"restart"``,
        ``"arrival"``, ``"predictor"``... by convention).
    provenance : free JSON-safe dict (input files and hashes, date range, calibration sources).
    name : bundle name, e.g. ``"acme-2023"``.
    """

    def __init__(self, models: dict[str, BaseModel] | None = None, *, provenance: dict | None = None,
                 name: str = "bundle"):
        self.models = dict(models or {})
        self.provenance = dict(provenance or {})
        self.name = name

    def __getitem__(self, key: str) -> BaseModel:
        try:
            return self.models[key]
        except KeyError:
            raise BundleError(f"bundle {self.name!r} has no {key!r} model "
                              f"(it has: {', '.join(sorted(self.models)) or 'none'})") from None

    def __contains__(self, key: str) -> bool:
        return key in self.models

    def get(self, key: str, default: Any = None) -> Any:
        return self.models.get(key, default)

    # ------------------------------------------------------------------ save/load
    def _document(self) -> tuple[dict, dict[str, str]]:
        from acmemodel._version import __version__

        files: dict[str, str] = {}
        models = {}
        for name, model in self.models.items():
            d = model.to_dict()
            arts = model.artifacts()
            d["artifacts"] = sorted(arts)
            for art, text in arts.items():
                files[f"{name}.{art}.txt"] = text
            models[name] = d
        doc = {
            "schema_version": SCHEMA_VERSION,
            "package_version": __version__,
            "created_utc": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            "name": self.name,
            "provenance": _jsonable(self.provenance),
            "models": models,
        }
        return doc, files

    def save(self, path: str | Path) -> Path:
        """Write the bundle to a directory, or to a zip file if ``path`` ends in ``.zip``."""
        path = Path(path)
        doc, files = self._document()
        text = json.dumps(doc, indent=1, allow_nan=False)
        if path.suffix == ".zip":
            path.parent.mkdir(parents=True, exist_ok=True)
            with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
                z.writestr("bundle.json", text)
                for fn, t in files.items():
                    z.writestr(fn, t)
        else:
            path.mkdir(parents=True, exist_ok=True)
            (path / "bundle.json").write_text(text)
            for fn, t in files.items():
                (path / fn).write_text(t)
        return path

    @classmethod
    def load(cls, path: str | Path) -> "Bundle":
        """Read a bundle written by :meth:`save`; validate schema version and contents."""
        path = Path(path)
        if not path.exists():
            raise BundleError(f"bundle {path}: no such file or directory")
        try:
            if path.is_dir():
                if not (path / "bundle.json").exists():
                    raise BundleError(f"bundle {path}: no bundle.json inside")
                doc = json.loads((path / "bundle.json").read_text())
                read = lambda fn: (path / fn).read_text()  # noqa: E731
            else:
                with zipfile.ZipFile(path) as z:
                    names = set(z.namelist())
                    if "bundle.json" not in names:
                        raise BundleError(f"bundle {path}: no bundle.json inside the zip")
                    blobs = {n: z.read(n).decode() for n in names}
                doc = json.loads(blobs["bundle.json"])
                read = blobs.__getitem__
        except (json.JSONDecodeError, zipfile.BadZipFile, UnicodeDecodeError) as e:
            raise BundleError(f"bundle {path}: not a valid bundle ({e})") from None
        return cls.from_document(doc, read, source=str(path))

    @classmethod
    def from_document(cls, doc: dict, read, source: str = "<memory>") -> "Bundle":
        if not isinstance(doc, dict) or "schema_version" not in doc or "models" not in doc:
            raise BundleError(f"bundle {source}: bundle.json lacks schema_version/models")
        major = str(doc["schema_version"]).split(".")[0]
        if major != SCHEMA_VERSION.split(".")[0]:
            raise BundleError(
                f"bundle {source}: schema version {doc['schema_version']} is incompatible with this "
                f"acmemodel (reads {SCHEMA_VERSION}); refit or recalibrate it with this version")
        _import_model_modules()

        models = {}
        for name, d in doc["models"].items():
            try:
                arts = {a: read(f"{name}.{a}.txt") for a in d.get("artifacts", [])}
            except (KeyError, FileNotFoundError) as e:
                raise BundleError(f"bundle {source}: model {name!r} misses artifact {e}") from None
            try:
                models[name] = BaseModel.from_dict(d, arts)
            except BundleError:
                raise
            except (KeyError, TypeError, ValueError) as e:
                raise BundleError(f"bundle {source}: model {name!r} is malformed ({e})") from None
        return cls(models, provenance=doc.get("provenance", {}), name=doc.get("name", "bundle"))

    def to_bytes(self) -> bytes:
        """The bundle as zip bytes (for embedding or transport)."""
        buf = io.BytesIO()
        doc, files = self._document()
        with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
            z.writestr("bundle.json", json.dumps(doc, indent=1, allow_nan=False))
            for fn, t in files.items():
                z.writestr(fn, t)
        return buf.getvalue()


def load_default() -> Bundle:
    """The shipped default :class:`Bundle` (``acme-2023``).

    Calibrated by :func:`acmemodel.calibrate.calibrate` to the published AcmeTrace statistics; its
    provenance (reference-file hashes, assumptions, calibration report) is in ``bundle.provenance``.
    """
    from acmemodel.datasets import default_bundle_path

    path = default_bundle_path()
    if not (path / "bundle.json").exists():
        raise BundleError(f"the default bundle is missing from the installation ({path}); "
                          "rebuild it with `acmemodel calibrate -o <that path>`")
    return Bundle.load(path)


def resolve_bundle(bundle=None) -> Bundle:
    """A :class:`Bundle` from a Bundle, a path, or ``None`` (the default bundle, :func:`load_default`)."""
    _import_model_modules()
    if bundle is None:
        return load_default()
    if isinstance(bundle, Bundle):
        return bundle
    return Bundle.load(bundle)
