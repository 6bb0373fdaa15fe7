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
import json
import re
import zipfile
from pathlib import Path
from typing import Any

import pandas as pd

from acmemodel.errors import BundleError
from acmemodel.models.base import MODEL_REGISTRY, BaseModel, _jsonable
from acmemodel.models.lgbm_text import check_lightgbm_text

SCHEMA_VERSION = "1.0"

def _roles() -> dict[str, type]:
    """The one model registry, :data:`acmemodel.models.MODELS` (bundle name → class). Imported on use:
    the package imports this module, and importing it registers every model class for loading."""
    from acmemodel.models import MODELS

    return MODELS


#: largest single file of a bundle (``bundle.json`` or an artifact), bytes
MAX_FILE_BYTES = 256 << 20
#: largest total of the files read from one bundle, bytes
MAX_TOTAL_BYTES = 1 << 30
#: deepest nesting of JSON values allowed in ``bundle.json``
MAX_JSON_DEPTH = 64
#: model and artifact names: plain names (no path separators, no dots)
_PLAIN = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_-]{0,99}$")
def _check_size(path, fn: str, size: int, budget: list) -> None:
    if size > MAX_FILE_BYTES:
        raise BundleError(f"bundle {path}: {fn} is {size:,} bytes; at most {MAX_FILE_BYTES:,} per file")
    budget[0] -= size
    if budget[0] < 0:
        raise BundleError(f"bundle {path}: its files exceed {MAX_TOTAL_BYTES:,} bytes in total")


def _parse_json(path, data: bytes) -> Any:
    try:
        return json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as e:
        raise BundleError(f"bundle {path}: bundle.json is not UTF-8 text ({e.reason})") from None
    except json.JSONDecodeError as e:
        raise BundleError(f"bundle {path}: bundle.json is not valid JSON ({e})") from None
    except RecursionError:
        raise BundleError(f"bundle {path}: bundle.json is nested too deeply") from None


def _text_reader(path, names: set, read_bytes):
    """``read(file name) -> text`` over the bundle's own file list (``KeyError`` for any other name)."""
    def read(fn: str) -> str:
        if fn not in names:
            raise KeyError(fn)
        try:
            return read_bytes(fn).decode("utf-8")
        except UnicodeDecodeError as e:
            raise BundleError(f"bundle {path}: {fn} is not UTF-8 text ({e.reason})") from None
    return read


def _depth_ok(doc: Any) -> bool:
    stack = [(doc, 1)]
    while stack:
        v, d = stack.pop()
        if d > MAX_JSON_DEPTH:
            return False
        if isinstance(v, dict):
            stack.extend((x, d + 1) for x in v.values())
        elif isinstance(v, list):
            stack.extend((x, d + 1) for x in v)
    return True


def validate_document(doc: Any, source: str = "<memory>") -> None:
    """Check a parsed ``bundle.json`` against the schema (module docstring): an object with a
    compatible ``schema_version``, ``models`` an object of plain names to objects with a registered
    concrete ``class``, ``params``/``fitted`` objects and ``artifacts`` a list of plain names;
    ``provenance`` an object, ``name`` a string; nesting at most :data:`MAX_JSON_DEPTH`.
    :class:`BundleError` naming the field."""
    where = f"bundle {source}"
    if not isinstance(doc, dict):
        raise BundleError(f"{where}: bundle.json must hold a JSON object, got {type(doc).__name__}")
    if "schema_version" not in doc or "models" not in doc:
        raise BundleError(f"{where}: bundle.json lacks schema_version/models")
    if not _depth_ok(doc):
        raise BundleError(f"{where}: bundle.json is nested deeper than {MAX_JSON_DEPTH} levels")
    if isinstance(doc["schema_version"], bool) or not isinstance(doc["schema_version"], (str, int, float)):
        raise BundleError(f"{where}: schema_version must be a string like {SCHEMA_VERSION!r}")
    major = str(doc["schema_version"]).split(".")[0]
    if major != SCHEMA_VERSION.split(".")[0]:
        raise BundleError(
            f"{where}: schema version {doc['schema_version']} is incompatible with this "
            f"acmemodel (reads {SCHEMA_VERSION}); refit or recalibrate it with this version")
    if "name" in doc and not isinstance(doc["name"], str):
        raise BundleError(f"{where}: name must be a string, got {type(doc['name']).__name__}")
    if "provenance" in doc and not isinstance(doc["provenance"], dict):
        raise BundleError(f"{where}: provenance must be an object, got {type(doc['provenance']).__name__}")
    models = doc["models"]
    if not isinstance(models, dict):
        raise BundleError(f"{where}: models must be an object of name -> model, got {type(models).__name__}")
    roles = _roles()

    for name, d in models.items():
        f = f"{where}: models.{name}"
        if not _PLAIN.match(name):
            raise BundleError(f"{where}: model name {name!r} is not a plain name (letters, digits, _ and -)")
        if not isinstance(d, dict):
            raise BundleError(f"{f} must be an object, got {type(d).__name__}")
        cls_name = d.get("class")
        if not isinstance(cls_name, str) or cls_name not in MODEL_REGISTRY:
            raise BundleError(f"{f}.class {cls_name!r} is not a model class of this acmemodel "
                              f"({', '.join(sorted(MODEL_REGISTRY))})")
        for key in ("params", "fitted"):
            if key in d and not isinstance(d[key], dict):
                raise BundleError(f"{f}.{key} must be an object, got {type(d[key]).__name__}")
        if "fitted" not in d:
            raise BundleError(f"{f}.fitted is missing")
        arts = d.get("artifacts", [])
        if not isinstance(arts, list):
            raise BundleError(f"{f}.artifacts must be a list of names, got {type(arts).__name__}")
        for a in arts:
            if not isinstance(a, str) or not _PLAIN.match(a):
                raise BundleError(f"{f}.artifacts: {a!r} is not a plain name (letters, digits, _ and -)")
        role = roles.get(name)
        if role is not None and not issubclass(MODEL_REGISTRY[cls_name], role):
            raise BundleError(f"{f}.class is {cls_name}, but a {name!r} model must be a {role.__name__}")


def _check_role(model: BaseModel, name: str, source: str) -> None:
    """The model under a conventional name has the class callers need (:data:`acmemodel.models.MODELS`)."""
    role = _roles().get(name)
    if role is not None and not isinstance(model, role):
        raise BundleError(f"bundle {source}: models.{name} is a {type(model).__name__}, not a {role.__name__}")


def file_sha256(path: str | Path) -> str:
    """Hex SHA-256 of a file's bytes (provenance of fitted bundles)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _member(name: str) -> zipfile.ZipInfo:
    """A zip member with a fixed date (1980-01-01) and mode, so equal bundles give equal zip bytes."""
    info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
    info.compress_type = zipfile.ZIP_DEFLATED
    info.external_attr = 0o644 << 16
    return info


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
        #: ``created_utc`` written by :meth:`save`: ``"now"`` (the time of saving) or a fixed value; a calibrated
        #: bundle, a function of its inputs only, sets ``None`` (written as null) so equal inputs give equal bytes
        self.created_utc: str | None = "now"

    def __repr__(self) -> str:
        fitted = [k for k, m in self.models.items() if getattr(m, "is_fitted", False)]
        made = self.provenance.get("source") or ("calibrated" if self.provenance.get("calibration") else None)
        return (f"Bundle(name={self.name!r}, models=[{', '.join(self.models)}]"
                + (f", unfitted=[{', '.join(k for k in self.models if k not in fitted)}]"
                   if len(fitted) < len(self.models) else "")
                + (f", source={made!r}" if made else "") + ")")

    def summary(self) -> pd.DataFrame:
        """One row per model: ``model`` (the bundle name), ``class``, ``fitted`` and ``n_fit`` (the
        jobs it was fitted on, where the model records it)."""
        rows = [{"model": name, "class": type(m).__name__, "fitted": bool(getattr(m, "is_fitted", False)),
                 "n_fit": getattr(m, "n_fit_", None)} for name, m in self.models.items()]
        return pd.DataFrame(rows, columns=["model", "class", "fitted", "n_fit"])

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

    def calibration(self, cluster: str) -> dict:
        """The calibration's report for ``cluster`` (``provenance["calibration"][cluster]``: its policy,
        latency laws, per-type fits; ``{}`` for a bundle that was fitted, not calibrated)."""
        return ((self.provenance or {}).get("calibration") or {}).get(cluster) or {}

    def clusters(self) -> dict:
        """Cluster name → :class:`~acmemodel.clusters.ClusterSpec` of the clusters the bundle models.

        A fitted bundle stores its trace's descriptions (``provenance["clusters"]``, written by
        ``acmemodel fit``). A bundle without them — the default bundle, calibrated to the published
        statistics — describes the Acme clusters its arrival model generates with their published
        entries (Seren, Kalos); any other cluster of such a bundle has a description of its name alone
        (size unknown). ``BundleError`` naming the field when a stored description is invalid."""
        from acmemodel.clusters import ClusterSpec, acme_cluster

        stored = (self.provenance or {}).get("clusters")
        if stored:
            if not isinstance(stored, dict):
                raise BundleError(f"bundle {self.name!r}: provenance.clusters must be an object")
            out = {}
            for k, v in stored.items():
                try:
                    out[str(k)] = ClusterSpec.from_dict(v, where=f"bundle {self.name!r}: provenance.clusters.{k}")
                except ValueError as e:
                    raise BundleError(str(e)) from None
            return out
        arrival = self.models.get("arrival")
        names = [str(c) for c in getattr(arrival, "clusters_", None) or []]
        out = {}
        for c in names:
            a = acme_cluster(c)
            out[c] = a if a is not None and a.name == c else ClusterSpec(name=c, source="bundle; size unknown")
        return out

    def cluster(self, name: str):
        """The :class:`~acmemodel.clusters.ClusterSpec` of ``name`` (:meth:`clusters`), or ``None``."""
        return self.clusters().get(str(name))

    # ------------------------------------------------------------------ save/load
    def _document(self) -> tuple[dict, dict[str, str]]:
        from acmemodel._version import __version__

        files: dict[str, str] = {}
        models = {}
        for name, model in self.models.items():
            if not isinstance(name, str) or not _PLAIN.match(name):
                raise BundleError(f"model name {name!r} is not a plain name (letters, digits, _ and -)")
            d = model.to_dict()
            arts = model.saved_artifacts()
            bad = [a for a in arts if not _PLAIN.match(str(a))]
            if bad:
                raise BundleError(f"model {name!r}: artifact name(s) {bad} are not plain names")
            d["artifacts"] = sorted(arts)
            for art, text in arts.items():
                files[f"{name}.{art}.txt"] = text
            models[name] = d
        doc = {
            "schema_version": SCHEMA_VERSION,
            "package_version": __version__,
            "created_utc": (_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
                            if self.created_utc == "now" else self.created_utc),
            "name": self.name,
            "provenance": _jsonable(self.provenance),
            "models": models,
        }
        return doc, files

    def as_saved(self) -> "Bundle":
        """The bundle a :meth:`save` and :meth:`load` would give back (every model rebuilt from its saved JSON text
        and artifacts: the parameters as saved, e.g. rounded where ``to_dict`` rounds), without writing files."""
        doc, files = self._document()
        doc = json.loads(json.dumps(doc, allow_nan=False))
        b = type(self).from_document(doc, files.__getitem__)
        b.created_utc = self.created_utc
        return b

    def save(self, path: str | Path) -> Path:
        """Write the bundle to a directory, or to a zip file if ``path`` ends in ``.zip``."""
        path = Path(path)
        doc, files = self._document()
        text = json.dumps(doc, indent=1, allow_nan=False)
        if path.suffix == ".zip":
            path.parent.mkdir(parents=True, exist_ok=True)
            with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
                z.writestr(_member("bundle.json"), text)
                for fn, t in files.items():
                    z.writestr(_member(fn), t)
        else:
            path.mkdir(parents=True, exist_ok=True)
            (path / "bundle.json").write_text(text)
            for fn, t in files.items():
                (path / fn).write_text(t)
        return path

    @classmethod
    def load(cls, path: str | Path) -> "Bundle":
        """Read a bundle written by :meth:`save`; validate its structure, schema version and files.

        Only ``bundle.json`` and the artifact files it names are read (from a zip: member by member,
        each at most :data:`MAX_FILE_BYTES`, together at most :data:`MAX_TOTAL_BYTES`); artifact names
        are plain names that must be among the bundle's own files. Every problem is a
        :class:`BundleError` naming the file or the ``bundle.json`` field.
        """
        path = Path(path)
        if not path.exists():
            raise BundleError(f"bundle {path}: no such file or directory")
        budget = [MAX_TOTAL_BYTES]
        try:
            if path.is_dir():
                names = {p.name for p in path.iterdir() if p.is_file()}
                if "bundle.json" not in names:
                    raise BundleError(f"bundle {path}: no bundle.json inside")

                def read_bytes(fn: str) -> bytes:
                    f = path / fn
                    _check_size(path, fn, f.stat().st_size, budget)
                    return f.read_bytes()

                doc = _parse_json(path, read_bytes("bundle.json"))
                return cls.from_document(doc, _text_reader(path, names, read_bytes), source=str(path))
            with zipfile.ZipFile(path) as z:
                infos = {i.filename: i for i in z.infolist() if not i.is_dir()}
                if "bundle.json" not in infos:
                    raise BundleError(f"bundle {path}: no bundle.json inside the zip")

                def read_member(fn: str) -> bytes:
                    info = infos[fn]
                    _check_size(path, fn, info.file_size, budget)
                    with z.open(info) as f:  # the header's size may lie: read at most one byte more
                        data = f.read(info.file_size + 1)
                    if len(data) > info.file_size:
                        raise BundleError(f"bundle {path}: member {fn} is larger than its zip header says")
                    return data

                doc = _parse_json(path, read_member("bundle.json"))
                return cls.from_document(doc, _text_reader(path, set(infos), read_member), source=str(path))
        except (zipfile.BadZipFile, zipfile.LargeZipFile, NotImplementedError, EOFError) as e:
            raise BundleError(f"bundle {path}: not a valid bundle zip ({e})") from None
        except OSError as e:
            raise BundleError(f"bundle {path}: cannot read it ({e.strerror or e})") from None

    @classmethod
    def from_document(cls, doc: dict, read, source: str = "<memory>") -> "Bundle":
        """Build the bundle from a parsed ``bundle.json`` and ``read(file name) -> text``; the document
        is validated against the schema first (:func:`validate_document`)."""
        validate_document(doc, source)

        models = {}
        for name, d in doc["models"].items():
            files = {a: f"{name}.{a}.txt" for a in d.get("artifacts", [])}
            arts = {}
            for a, fn in files.items():
                try:
                    arts[a] = read(fn)
                except (KeyError, FileNotFoundError):
                    raise BundleError(f"bundle {source}: model {name!r} misses artifact file {fn}") from None
                if arts[a].startswith("tree\n") or not arts[a].strip():
                    check_lightgbm_text(arts[a], f"bundle {source}: {fn}")
            try:
                models[name] = BaseModel.from_dict(d, arts)
            except BundleError as e:
                raise BundleError(f"bundle {source}: model {name!r}"
                                  f"{' (' + ', '.join(files.values()) + ')' if files else ''}: {e}") from None
            except Exception as e:  # a field of the right name but the wrong shape
                what = f"{type(e).__name__}: {e}" if str(e) else type(e).__name__
                raise BundleError(f"bundle {source}: models.{name} is malformed ({what.splitlines()[0]})") from None
            _check_role(models[name], name, source)
        b = cls(models, provenance=doc.get("provenance", {}), name=doc.get("name", "bundle"))
        created = doc.get("created_utc", "now")
        b.created_utc = created if created is None or isinstance(created, str) else "now"  # kept on re-save
        return b


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
    if bundle is None:
        return load_default()
    if isinstance(bundle, Bundle):
        return bundle
    return Bundle.load(bundle)
