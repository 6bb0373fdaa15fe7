"""Data shipped in the package (data only: it imports nothing above itself): a sample trace, the
published AcmeTrace reference tables and the default bundle's files.

* :func:`sample_paths` — the paths of the sample CSV files, a synthetic look-alike of AcmeTrace
  (Seren + Kalos, a few thousand rows each, exact AcmeTrace schemas; made by the repository script
  ``tools/make_sample.py``, see its docstring); read them with :func:`acmemodel.trace.load_sample`;
* :func:`default_bundle_path` — the directory of the shipped ``acme-2023`` bundle (loaded by
  :func:`acmemodel.models.bundle.load_default`);
* :func:`load_reference`, :func:`load_failure_table` — published tables with provenance
  (``data/PROVENANCE.md``).
"""
from __future__ import annotations

from importlib import resources
from pathlib import Path


SAMPLE_CLUSTERS: tuple[str, ...] = ("Seren", "Kalos")


def sample_paths(cluster: str | None = None) -> list[Path]:
    """Paths of the shipped sample files (``sample_seren.csv.gz``, ``sample_kalos.csv.gz``)."""
    names = SAMPLE_CLUSTERS if cluster is None else (cluster,)
    bad = [c for c in names if c not in SAMPLE_CLUSTERS]
    if bad:
        raise ValueError(f"cluster must be one of {', '.join(SAMPLE_CLUSTERS)}; got {cluster!r}")
    root = resources.files("acmemodel.datasets").joinpath("data")
    return [Path(str(root.joinpath(f"sample_{c.lower()}.csv.gz"))) for c in names]


#: name of the shipped default bundle (calibrated to the published AcmeTrace statistics)
DEFAULT_BUNDLE = "acme-2023"


def default_bundle_path() -> Path:
    """Directory of the shipped default bundle inside the package."""
    root = resources.files("acmemodel.datasets").joinpath("data")
    return Path(str(root.joinpath(DEFAULT_BUNDLE)))


def reference_rows(name: str) -> list[dict[str, str]]:
    """The rows of the published reference table ``data/reference/NAME.csv`` as ``{column: text}``, read
    with the standard library (for code that starts without pandas, e.g. the energy price of
    ``acmemodel checkpoint``); :func:`acmemodel.datasets.published.load_reference` gives the typed table."""
    import csv

    f = resources.files("acmemodel.datasets").joinpath("data", "reference", f"{name}.csv")
    if not f.is_file():
        raise ValueError(f"no published reference table named {name!r}")
    with f.open("r", newline="") as fh:
        return list(csv.DictReader(fh))
