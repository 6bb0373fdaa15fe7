"""Helpers shared by the CLI commands: trace loading, the trace/held-out-split options, rich console.
(Durations: :func:`acmemodel.planner.config.parse_duration`.)"""
from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path

import typer
from rich.console import Console

class _Console(Console):
    """A rich Console whose text with a bracket that is not valid markup (a job type or user named
    ``[/b]``, a path with ``[...]`` in it) is printed as plain text instead of raising MarkupError."""

    def render_str(self, text, **kwargs):
        from rich.errors import MarkupError

        try:
            return super().render_str(text, **kwargs)
        except MarkupError:
            kwargs["markup"] = False
            return super().render_str(text, **kwargs)


console = _Console()

#: largest ``--seed`` (numpy's legacy seeds and the C kernels' are 32-bit unsigned)
SEED_MAX = 2**32 - 1
err_console = _Console(stderr=True)

# Options shared by the commands that fit or evaluate models on a trace (typer copies them per command).
#: positional trace files (none = the shipped sample)
TRACE_PATHS = typer.Argument(None, help="AcmeTrace files, directories of them or glob patterns; none = the shipped sample")
#: ``--cluster``: one cluster name for all files
CLUSTER = typer.Option(None, "--cluster", help="Cluster name for all files.")
#: ``--test-fraction`` / ``--cutoff``: the time-ordered held-out split (:func:`acmemodel.evaluation.split.time_split`)
TEST_FRACTION = typer.Option(
    None, "--test-fraction", help="Last share of the submission-time span held out (default 1/6).")
CUTOFF = typer.Option(None, "--cutoff", help="Hold out jobs submitted at/after this UTC time (e.g. 2023-08-01).")


def check_holdout(test_fraction: float | None, cutoff: str | None, min_cell_jobs: int) -> None:
    """Validate the held-out split options (``--test-fraction``, ``--cutoff``, ``--min-cell-jobs``) of the
    backtest commands; ``ValueError`` naming the option."""
    if test_fraction is not None and cutoff is not None:
        raise ValueError("give either --test-fraction or --cutoff, not both")
    if test_fraction is not None and not 0 < test_fraction < 1:
        raise ValueError(f"--test-fraction must be in (0, 1), got {test_fraction}")
    if min_cell_jobs < 1:
        raise ValueError(f"--min-cell-jobs must be >= 1, got {min_cell_jobs}")


def load_traces(paths: list[Path] | None, cluster: str | None = None):
    """Load trace files for a command; with no paths, the shipped sample."""
    import warnings

    from acmemodel.errors import DataWarning
    from acmemodel.trace import load_trace

    import tempfile

    paths = list(paths or [])
    if not paths:
        from acmemodel.datasets import sample_paths

        paths = sample_paths()
    with tempfile.TemporaryDirectory() as tmp, warnings.catch_warnings():
        # '-': the trace from stdin (copied: the reader sniffs and re-reads its file)
        paths = [stdin_file(tmp, "stdin.csv") if str(p) == "-" else p for p in paths]
        warnings.simplefilter("ignore", DataWarning)  # reported by the commands themselves
        return load_trace(paths, cluster=cluster)


def bundle_cluster(bundle, cluster: str | None, source=None, option: str = "--cluster"):
    """(name, :class:`~acmemodel.clusters.ClusterSpec` or None) of the bundle cluster a command uses:
    ``cluster`` when the bundle models it (``ValueError`` naming the option, the bundle and the known
    clusters otherwise), else the bundle's only cluster, else Seren when the bundle models it (the default
    bundle). Never an Acme cluster for a bundle fitted on another."""
    known = bundle.clusters()
    arrival = bundle.get("arrival")
    names = list(getattr(arrival, "clusters_", None) or known)
    where = f"bundle {source}" if source is not None else "the default bundle"
    if cluster is None:
        if len(names) == 1:
            cluster = names[0]
        elif "Seren" in names:  # (a bundle of Acme's clusters, e.g. the default one)
            cluster = "Seren"
        else:
            raise ValueError(f"{option}: {where} models several clusters ({', '.join(names)}); name one")
    if names and cluster not in names:
        low = {n.lower(): n for n in names}
        if str(cluster).lower() not in low:
            raise ValueError(f"{option}: unknown cluster {cluster!r}: {where} models "
                             f"{', '.join(names) or 'no cluster'}")
        cluster = low[str(cluster).lower()]
    return cluster, known.get(cluster)


def describe_size(spec) -> str:
    """One line for a cluster's size: ``"128 GPUs (16 nodes × 8) — convert --gpus"`` or ``"unknown
    (...)"``; ``spec`` a :class:`~acmemodel.clusters.ClusterSpec` or its dict."""
    d = spec.to_dict() if hasattr(spec, "to_dict") else dict(spec)
    if d.get("gpus") is None:
        per = f"; {d['gpus_per_node']} GPUs per node" if d.get("gpus_per_node") else ""
        return f"unknown (the log does not say; pass --gpus){per}"
    nodes = (f" ({d['nodes']:,} nodes × {d['gpus_per_node']})" if d.get("nodes") else "")
    return f"{d['gpus']:,} GPUs{nodes}" + (f" — {d['source']}" if d.get("source") else "")


#: longest submission span (days) of a trace that commands fitting calendar series accept (ten years):
#: their hourly/daily arrays are sized by the span (a job in 1970 and one in 2099: 6 GB, hours of fitting)
MAX_SPAN_DAYS = 3660


def check_trace_span(trace, what: str) -> None:
    """Refuse (``ValueError`` naming the dates) a trace whose submissions span more than
    :data:`MAX_SPAN_DAYS` days, before ``what`` sizes calendar arrays by the span."""
    j = trace.jobs
    if not len(j):
        return
    import pandas as pd

    t0, t1 = float(j["submit_s"].min()), float(j["submit_s"].max())
    days = (t1 - t0) / 86400.0
    if days > MAX_SPAN_DAYS:
        d0, d1 = (pd.Timestamp(t, unit="s", tz="UTC").strftime("%Y-%m-%d") for t in (t0, t1))
        raise ValueError(f"{what}: the trace's submissions span {days:,.0f} days ({d0} to {d1}); at most "
                         f"{MAX_SPAN_DAYS:,} days (ten years) are modelled: drop the outlying jobs")


#: most bytes read from stdin (``-`` as an input file): 4 GiB
MAX_STDIN_BYTES = 4 * 2 ** 30


def stdin_file(directory, name: str) -> Path:
    """Copy stdin (``-`` given as an input file) into ``directory/name`` and return that path: the readers
    sniff and re-read their files, which a pipe does not allow. ``ValueError`` past
    :data:`MAX_STDIN_BYTES` or when stdin is a terminal."""
    import sys

    if sys.stdin is None or sys.stdin.isatty():
        raise ValueError("'-' reads the input from stdin, but stdin is a terminal: pipe a file in")
    p = Path(directory) / name
    n = 0
    src = getattr(sys.stdin, "buffer", sys.stdin)
    with open(p, "wb") as f:
        while chunk := src.read(1 << 20):
            chunk = chunk.encode() if isinstance(chunk, str) else chunk
            n += len(chunk)
            if n > MAX_STDIN_BYTES:
                raise ValueError(f"stdin holds more than {MAX_STDIN_BYTES:,} bytes; write it to a file")
            f.write(chunk)
    return p


def check_bundle_out(out: Path, option: str = "-o/--out") -> None:
    """Refuse, before any work, a bundle output path that :meth:`Bundle.save` cannot write: an existing
    file for a directory bundle, a directory for a ``.zip`` bundle (``ValueError`` naming the option)."""
    if out.suffix != ".zip" and out.exists() and not out.is_dir():
        raise ValueError(f"{option}: {out} is an existing file; give a directory or a .zip path")
    if out.suffix == ".zip" and out.is_dir():
        raise ValueError(f"{option}: {out} is a directory; a .zip bundle path must be a file")


def check_output_not_input(out: Path, inputs, option: str = "-o/--output") -> None:
    """Refuse an output path that is one of the command's inputs or lies inside an input directory (a
    directory bundle), e.g. ``synth --bundle B -o B/bundle.json`` (``ValueError`` naming the option)."""
    o = Path(out).resolve()
    for i in inputs:
        if i is None:
            continue
        r = Path(i).resolve()
        if o == r or (r.is_dir() and r in o.parents):
            raise ValueError(f"{option}: {out} would overwrite the input {i}; write the output elsewhere")


def check_dir_out(out: Path | None, option: str) -> None:
    """Refuse an output directory path that is an existing file (``ValueError`` naming the option)."""
    if out is not None and out.exists() and not out.is_dir():
        raise ValueError(f"{option}: {out} is an existing file, not a directory")


def identifiability_note(bundle) -> str | None:
    """The failure model's one-line identifiability warning (``FailureModel.identifiability``) of a
    bundle, or None (no failure model, or a usable one)."""
    f = bundle.get("failure") if bundle is not None else None
    if f is None or not hasattr(f, "identifiability"):
        return None
    return f.identifiability()


def print_identifiability(note: str | None) -> None:
    """Print the identifiability note as one ``warning:`` line (nothing when None)."""
    if note:
        # (wrapped at the terminal width: within 80 columns)
        console.print(f"[yellow]warning:[/yellow] {note}", markup=True, highlight=False)


@contextmanager
def counted_backoffs():
    """Collect the model back-offs (:class:`~acmemodel.errors.DataWarning`) raised inside the block: the
    yielded list receives their distinct messages, sorted, for a one-line count and the ``--json``
    ``model_backoffs`` field, instead of one raw warning per sparse cell; other warnings are shown as usual."""
    import warnings

    from acmemodel.errors import DataWarning

    out: list[str] = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", DataWarning)
        yield out
    for w in caught:
        if not issubclass(w.category, DataWarning):  # re-raised: the CLI's collector summarises them
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    out.extend(sorted({str(w.message) for w in caught if issubclass(w.category, DataWarning)}))
