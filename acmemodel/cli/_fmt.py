"""Terminal formatting shared by the commands: compact rich tables that fit 80 columns, human numbers
and durations, and a progress bar on stderr.

* :func:`table` — a rich ``Table`` with a light box (``SIMPLE_HEAD``) and one space of padding, so
  that a table of eight short columns fits an 80-column terminal; long labels wrap instead of being
  cut (``overflow="fold"``);
* :func:`num` — ``50,280``, ``1,234.5``, ``0.021``: thousands separators, integers without decimals,
  no float noise;
* :func:`dur` — seconds in the largest sensible unit (``45 s``, ``12 min``, ``3.2 h``, ``4.5 d``);
* :func:`progress` — a context manager giving ``update(done, total)``, a rich progress bar on
  stderr (nothing when disabled, e.g. with ``--json``).
"""
from __future__ import annotations

import contextlib
import math
from typing import Iterator

from rich import box
from rich.table import Table

__all__ = ["table", "CompactTable", "num", "dur", "progress"]


class CompactTable(Table):
    """A rich ``Table`` with the light box of :func:`table` whose columns wrap (``overflow="fold"``)
    instead of cutting values with an ellipsis."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("box", box.SIMPLE_HEAD)
        kwargs.setdefault("padding", (0, 1))
        kwargs.setdefault("collapse_padding", True)
        kwargs.setdefault("pad_edge", False)
        kwargs.setdefault("title_justify", "left")
        super().__init__(*args, **kwargs)

    def add_column(self, *args, **kwargs):
        kwargs.setdefault("overflow", "fold")
        return super().add_column(*args, **kwargs)


def table(title: str | None = None, columns=(), *, right=None) -> Table:
    """A compact table; ``columns``: header strings (``right``: headers to right-align; default every
    column but the first). Put legends in a line printed after the table (a caption would widen it)."""
    t = CompactTable(title=title)
    cols = list(columns)
    for i, c in enumerate(cols):
        r = (i > 0) if right is None else (c in right)
        t.add_column(c, justify="right" if r else "left", overflow="fold")
    return t


def num(x, digits: int = 3) -> str:
    """A human number: ``–`` for None/NaN, ``inf``; integers (and values ≥ 1,000) without decimals and
    with thousands separators; otherwise ``digits`` significant digits (``0.0213``, ``12.3``)."""
    if x is None:
        return "–"
    try:
        v = float(x)
    except (TypeError, ValueError):
        return str(x)
    if math.isnan(v):
        return "–"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    if abs(v) >= 1000 or float(v).is_integer():
        return f"{v:,.0f}"
    if v == 0:
        return "0"
    mag = math.floor(math.log10(abs(v)))
    dec = max(0, digits - 1 - mag)
    return f"{v:,.{dec}f}"


def dur(seconds, digits: int = 2) -> str:
    """Seconds as ``45 s``, ``12 min``, ``3.2 h`` or ``4.5 d`` (``–`` for None/NaN, ``inf``)."""
    if seconds is None:
        return "–"
    s = float(seconds)
    if math.isnan(s):
        return "–"
    if math.isinf(s):
        return "inf"
    for unit, size, nxt in (("s", 1.0, 60.0), ("min", 60.0, 3600.0), ("h", 3600.0, 86400.0)):
        if abs(s) < nxt * 0.995:
            return f"{num(s / size, digits if abs(s / size) >= 1 else 2)} {unit}"
    return f"{num(s / 86400.0, digits if abs(s) < 86400.0 * 1000 else 3)} d"


@contextlib.contextmanager
def progress(description: str, *, enabled: bool = True) -> Iterator:
    """``with progress("fitting", enabled=not json_out) as update: ... update(done, total)``: a rich
    progress bar on stderr; a no-op callable when disabled."""
    if not enabled:
        yield lambda done, total=None, description=None: None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from acmemodel.cli._common import err_console

    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=err_console, transient=True) as p:
        task = p.add_task(description, total=None)

        def update(done, total=None, description=None):
            p.update(task, completed=done, total=total,
                     **({"description": description} if description else {}))

        yield update
