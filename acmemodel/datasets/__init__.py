"""Data shipped in the package: a sample trace and the published AcmeTrace reference tables.

* :func:`load_sample` — a synthetic look-alike of AcmeTrace (Seren + Kalos, a few thousand rows each,
  exact AcmeTrace schemas; made by :mod:`acmemodel.datasets._make_sample`, see its docstring);
* :func:`sample_paths` — the paths of those CSV files (for the CLI);
* :func:`load_reference`, :func:`load_failure_table` — published tables with provenance
  (``data/PROVENANCE.md``).
"""
from __future__ import annotations

from importlib import resources
from pathlib import Path

from acmemodel.datasets.reference import (  # noqa: F401
    REFERENCE_TABLES, load_failure_table, load_reference,
)

SAMPLE_CLUSTERS: tuple[str, ...] = ("Seren", "Kalos")


def sample_paths(cluster: str | None = None) -> list[Path]:
    """Paths of the shipped sample files (``sample_seren.csv.gz``, ``sample_kalos.csv.gz``)."""
    names = SAMPLE_CLUSTERS if cluster is None else (cluster,)
    bad = [c for c in names if c not in SAMPLE_CLUSTERS]
    if bad:
        raise ValueError(f"cluster must be one of {', '.join(SAMPLE_CLUSTERS)}; got {cluster!r}")
    root = resources.files("acmemodel.datasets").joinpath("data")
    return [Path(str(root.joinpath(f"sample_{c.lower()}.csv.gz"))) for c in names]


def load_sample(cluster: str | None = None):
    """The shipped sample trace as a :class:`~acmemodel.trace.Trace` (both clusters by default)."""
    from acmemodel.trace import load_trace

    return load_trace(sample_paths(cluster))


#: name of the shipped default bundle (calibrated to the published AcmeTrace statistics)
DEFAULT_BUNDLE = "acme-2023"


def default_bundle_path() -> Path:
    """Directory of the shipped default bundle inside the package."""
    root = resources.files("acmemodel.datasets").joinpath("data")
    return Path(str(root.joinpath(DEFAULT_BUNDLE)))


def load_default():
    """The shipped default :class:`~acmemodel.models.bundle.Bundle` (``acme-2023``).

    Calibrated by :func:`acmemodel.calibrate.calibrate` to the published AcmeTrace statistics; its
    provenance (reference-file hashes, assumptions, calibration report) is in ``bundle.provenance``.
    """
    from acmemodel.errors import BundleError
    from acmemodel.models.bundle import Bundle

    path = default_bundle_path()
    if not (path / "bundle.json").exists():
        raise BundleError(f"the default bundle is missing from the installation ({path}); "
                          "rebuild it with `acmemodel calibrate -o <that path>`")
    return Bundle.load(path)
