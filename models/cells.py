"""Per-cell fitting with hierarchical back-off, shared by every category-conditioned model.

A :class:`CellTable` groups observations by a set of cell keys (``cluster``, ``type``, ``state``,
``gpu_bucket``; see :mod:`acmemodel.features.keys`) and fits one *value* per cell — whatever the
caller's ``fit_fn`` returns (a duration distribution, a failure probability, an arrival rate...).

Back-off lattice. Level 0 groups by all ``keys``; level ``l`` drops the first ``l`` keys of
``order`` that are in ``keys`` (default order: ``state``, then ``gpu_bucket``, then ``cluster``);
the last level is the all-wildcard cell ``Cell()``. A cell is fitted when it holds at least
``min_jobs`` observations; the all-wildcard cell is always fitted (if there is any data at all).
Levels are fitted coarsest first, so ``fit_fn`` receives the fitted *parent* entry (the nearest
fitted coarser cell) and can borrow from it (shrinkage, sparse sub-parts).

A query ``resolve(**key)`` walks :func:`~acmemodel.features.keys.backoff_chain` from the finest
cell the key specifies to the all-wildcard cell and returns the first fitted one together with the
number of back-off steps taken (``level`` 0 = the query's own cell). A query with a key combination
that is not on the lattice (e.g. ``type`` and ``state`` but no ``cluster``) resolves to its first
fitted coarsening along the same chain.

Key semantics (:meth:`CellTable.query`, the one policy of every model that answers by key):

* a key that is **not given is marginalised**: the answer is the mixture over that key's values,
  weighted by their counts in the fitted data (:attr:`Answer.parts` and :attr:`Answer.weights`). When
  the given keys are themselves a level of the lattice (e.g. ``cluster`` + ``type``), that cell's own
  fit on the pooled jobs *is* the count-weighted mixture, and is used directly;
* a given key is never silently dropped: when a cell has too few jobs to be fitted the query backs off
  along the chain, and says so — the fitted cell used is in the answer (``Resolved.cell``,
  ``level`` > 0) and one :class:`~acmemodel.errors.DataWarning` is issued per table and query cell
  (however many parts of a mixture back off; the warning lists them with their share of the weight);
* a value the table never saw (``type="Evl"``) raises ``ValueError`` naming the key and the known
  values. GPU counts are numeric: an unseen size bucket backs off to the cell without the bucket
  (reported and warned as above).

:meth:`CellTable.resolve` is the low-level walk along the back-off chain that ``query`` builds on.

Usage (helpers for failure / arrival models)::

    table = CellTable(keys=("cluster", "type", "gpu_bucket"), min_jobs=200)
    table.fit(frame, lambda sub, cell, parent: float(sub["failed"].mean()))
    table.resolve(cluster="Seren", type="Eval", gpus=8)   # -> Resolved(cell, level, value, n)
    d = table.to_dict(lambda v: v); CellTable.from_dict(d, lambda v: v)

``frame`` must hold one column per key, named like the key (build ``gpu_bucket`` with
:func:`~acmemodel.features.keys.gpu_bucket`); missing key values are grouped under ``"unknown"``.
"""
from __future__ import annotations

from typing import Any, Callable, NamedTuple, Sequence

import numpy as np
import pandas as pd

from acmemodel.features.keys import (
    CELL_KEYS, DEFAULT_BACKOFF, DEFAULT_GPU_EDGES, Cell, backoff_chain, bucket_bounds, normalize_key,
)

__all__ = ["CellEntry", "Resolved", "Answer", "CellTable", "lattice_levels", "cell_from_dict", "cell_to_dict",
           "check_key_values", "warn_backoff"]


class CellEntry(NamedTuple):
    """A fitted cell: ``level`` = number of keys dropped (lattice level), ``n`` = observations."""

    cell: Cell
    level: int
    n: int
    value: Any


class Resolved(NamedTuple):
    """Result of a query: the fitted ``cell`` used, the back-off ``level`` (0 = exact), its value."""

    cell: Cell
    level: int
    value: Any
    n: int


class Answer(NamedTuple):
    """Result of :meth:`CellTable.query`: the query ``cell`` (given keys; ``None`` = marginalised), the
    fitted cells answering it (``parts``, one :class:`Resolved` each) and their count ``weights``
    (sum 1). ``backed_off`` lists the parts that are not the cell asked for."""

    cell: Cell
    parts: tuple
    weights: np.ndarray
    backed_off: tuple

    @property
    def level(self) -> int:
        return max(p.level for p in self.parts)


def check_key_values(key: dict, known: dict, what: str = "model") -> None:
    """Raise ``ValueError`` naming the key and its known values when ``key`` holds a value the fitted
    data never had (``known``: key → collection of values seen; keys absent from ``known`` are not
    checked)."""
    for k, v in key.items():
        vals = known.get(k)
        if vals is None or v is None:
            continue
        if str(v) not in {str(x) for x in vals}:
            shown = ", ".join(sorted(map(str, vals))) or "none"
            raise ValueError(f"unknown {k} {v!r}: the {what} was fitted on {k} values {shown}")


def warn_backoff(registry: set, query: Cell, used: Cell, what: str, stacklevel: int = 3) -> None:
    """One :class:`~acmemodel.errors.DataWarning` per ``(query, used)`` pair and table: the answer for
    ``query`` comes from the coarser fitted cell ``used``, which drops the key(s) named."""
    import warnings

    from acmemodel.errors import DataWarning

    if (query, used) in registry:
        return
    registry.add((query, used))
    dropped = [k for k in CELL_KEYS if getattr(query, k) is not None and getattr(used, k) is None]
    warnings.warn(f"{what}: cell {query.label()} is not fitted (too few jobs, or a GPU size never seen); answered from "
                  f"{used.label()} (drops {', '.join(dropped) or 'nothing'})", DataWarning, stacklevel=stacklevel)


def _dropped(query: Cell, used: Cell) -> str:
    return ", ".join(k for k in CELL_KEYS if getattr(query, k) is not None and getattr(used, k) is None) or "nothing"


def _warn_query(asked: Cell, parts: Sequence[Resolved], weights: np.ndarray, bucket_unseen: bool,
                buckets: Sequence[str], what: str) -> None:
    """The one :class:`~acmemodel.errors.DataWarning` of a query that backed off (see :meth:`CellTable.query`):
    names the cell asked, why it is not answered by its own fit, and the fitted cells that answer it
    (for a mixture, the parts that back off and their share of the weight)."""
    import warnings

    from acmemodel.errors import DataWarning

    coarser = [(r, w) for r, w in zip(parts, weights) if r.level > 0]
    used = "; ".join(f"{r.cell.label()} (drops {_dropped(asked, r.cell)}"
                     + (f", {100 * w:.0f}% of the weight)" if len(parts) > 1 else ")") for r, w in coarser)
    if bucket_unseen:
        msg = (f"{what}: cell {asked.label()} is not fitted: GPU size never seen (bucket {asked.gpu_bucket!r}; fitted "
               f"buckets {', '.join(sorted(buckets, key=bucket_bounds)) or 'none'}); answered from the same cell without the GPU size: "
               f"{len(parts)} fitted cell(s) mixed by their job counts")
        if coarser:
            msg += f", of which {len(coarser)} back off: {used}"
    elif len(parts) > 1:
        msg = (f"{what}: cell {asked.label()} is a mixture of {len(parts)} cells by job count, {len(coarser)} of them "
               f"not fitted (too few jobs) and answered from a coarser cell: {used}")
    else:
        msg = f"{what}: cell {asked.label()} is not fitted (too few jobs); answered from {used}"
    warnings.warn(msg, DataWarning, stacklevel=4)


def lattice_levels(keys: Sequence[str], order: Sequence[str] = DEFAULT_BACKOFF) -> list[tuple[str, ...]]:
    """Key sets of the back-off lattice, finest first, ending with ``()`` (the all-wildcard cell)."""
    keys = tuple(keys)
    levels = [keys]
    cur = list(keys)
    for drop in order:
        if drop in cur:
            cur.remove(drop)
            levels.append(tuple(cur))
    if levels[-1] != ():
        levels.append(())
    return levels


def cell_to_dict(cell: Cell) -> dict[str, str]:
    return {k: v for k, v in cell._asdict().items() if v is not None}


def cell_from_dict(d: dict[str, Any]) -> Cell:
    return Cell(**{k: (None if v is None else str(v)) for k, v in d.items()})


def _check_keys(keys: Sequence[str], order: Sequence[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    keys = tuple(keys)
    bad = [k for k in keys if k not in CELL_KEYS]
    if bad or len(set(keys)) != len(keys):
        raise ValueError(f"keys must be distinct names from {CELL_KEYS}, got {keys!r}")
    order = tuple(order)
    bad = [k for k in order if k not in CELL_KEYS]
    if bad:
        raise ValueError(f"backoff order must name keys from {CELL_KEYS}, got {order!r}")
    return keys, order


def _key_categorical(col: pd.Series) -> pd.Categorical:
    """A key column as a categorical of its values' strings (missing: ``"unknown"``), categories sorted: the
    groups come out in the order of the strings, and grouping 1M rows costs a few ms instead of a second."""
    codes, uniq = pd.factorize(col, use_na_sentinel=True)
    names = np.array([str(u) for u in uniq] + ["unknown"], dtype=object)
    cats, inv = np.unique(names, return_inverse=True)
    return pd.Categorical.from_codes(inv[np.where(codes < 0, len(uniq), codes)], categories=cats)


class CellTable:
    """One fitted value per cell with hierarchical back-off (see module docstring).

    Parameters
    ----------
    keys : cell keys of the finest level (subset of ``cluster``, ``type``, ``state``, ``gpu_bucket``).
    order : back-off order, keys dropped first to last (default ``state``, ``gpu_bucket``, ``cluster``).
    min_jobs : minimum observations for a cell to be fitted (the all-wildcard cell is always fitted).
    min_jobs_coarsest : if given, the threshold for the coarsest non-root level instead (e.g. the
        type-only cells: backing off from a job type to "all jobs" costs far more than any other
        step, so a duration model accepts a smaller type cell).
    gpu_edges : GPU bucket edges used to map a ``gpus=`` query to ``gpu_bucket``.

    Attributes (after ``fit``): ``entries_`` {Cell: CellEntry}, ``counts_`` {Cell: n} for every
    observed level-0 cell (fitted or not), ``n_fit_`` total observations.
    """

    def __init__(self, keys: Sequence[str] = ("cluster", "type", "gpu_bucket", "state"), *,
                 order: Sequence[str] = DEFAULT_BACKOFF, min_jobs: int = 200,
                 min_jobs_coarsest: int | None = None,
                 gpu_edges: Sequence[int] = DEFAULT_GPU_EDGES):
        self.keys, self.order = _check_keys(keys, order)
        for name, v in (("min_jobs", min_jobs), ("min_jobs_coarsest", min_jobs_coarsest)):
            if v is not None and (int(v) != v or v < 1):
                raise ValueError(f"{name} must be a positive integer, got {v!r}")
        self.min_jobs = int(min_jobs)
        self.min_jobs_coarsest = None if min_jobs_coarsest is None else int(min_jobs_coarsest)
        self.gpu_edges = tuple(gpu_edges)
        self.levels = lattice_levels(self.keys, self.order)

    # ------------------------------------------------------------------ fitting
    def fit(self, frame: pd.DataFrame,
            fit_fn: Callable[[pd.DataFrame, Cell, CellEntry | None], Any],
            exclude: dict[str, Sequence[str]] | None = None,
            columns: Sequence[str] | None = None) -> "CellTable":
        """Fit ``fit_fn(sub_frame, cell, parent_entry)`` on every cell with ≥ ``min_jobs`` rows.

        ``columns``: the columns ``fit_fn`` reads besides the keys (default: all); ``sub_frame`` holds
        only those and the keys (as categoricals of strings, missing values "unknown").

        ``parent_entry`` is the nearest fitted coarser :class:`CellEntry` (``None`` for the root).
        ``exclude``: key → values whose cells are not fitted (their rows still count in the levels
        without that key), e.g. ``{"state": ["RUNNING"]}``: jobs still running have no final state,
        so they inform the state-free cells only. Returns self.
        """
        exclude = {k: set(map(str, v)) for k, v in (exclude or {}).items()}
        missing = [k for k in self.keys if k not in frame.columns]
        if missing:
            raise ValueError(f"frame lacks key column(s) {missing}")
        if len(frame) == 0:
            raise ValueError("no observations to fit")
        cols = list(frame.columns) if columns is None else \
            list(self.keys) + [c for c in columns if c not in self.keys]
        frame = pd.DataFrame({c: (_key_categorical(frame[c]) if c in self.keys else frame[c].to_numpy())
                              for c in cols}, index=pd.RangeIndex(len(frame)))
        self.entries_: dict[Cell, CellEntry] = {}
        for level in range(len(self.levels) - 1, -1, -1):
            lk = list(self.levels[level])
            need = self.min_jobs
            if self.min_jobs_coarsest is not None and level == len(self.levels) - 2:
                need = self.min_jobs_coarsest
            if not lk:
                groups = {(): np.arange(len(frame))}
            else:
                groups = frame.groupby(lk, sort=True, observed=True).indices
            for gkey, pos in groups.items():
                if not isinstance(gkey, tuple):
                    gkey = (gkey,)
                cell = Cell(**dict(zip(lk, map(str, gkey))))
                n = len(pos)
                if lk and n < need:
                    continue
                if any(k in exclude and str(v) in exclude[k] for k, v in zip(lk, gkey)):
                    continue
                parent = self._parent(cell)
                value = fit_fn(frame.iloc[pos], cell, parent)
                self.entries_[cell] = CellEntry(cell, level, n, value)
        lk0 = list(self.levels[0])
        if lk0:
            sizes = frame.groupby(lk0, sort=True, observed=True).size()
            self.counts_ = {Cell(**dict(zip(lk0, map(str, (k if isinstance(k, tuple) else (k,)))))): int(v)
                            for k, v in sizes.items()}
        else:
            self.counts_ = {Cell(): len(frame)}
        self.n_fit_ = len(frame)
        return self

    def _parent(self, cell: Cell) -> CellEntry | None:
        for _, c in backoff_chain(cell._asdict(), self.keys, self.order)[1:]:
            if c in self.entries_:
                return self.entries_[c]
        return None

    # ------------------------------------------------------------------ queries
    def normalize(self, **key) -> dict:
        """Validated query key (``gpus=`` mapped to ``gpu_bucket``); keys outside ``keys`` dropped."""
        key = normalize_key(self.gpu_edges, **key)
        return {k: str(v) for k, v in key.items() if k in self.keys}

    def resolve(self, **key) -> Resolved:
        """The first fitted cell on the back-off chain of ``key`` (see module docstring)."""
        if not hasattr(self, "entries_"):
            from acmemodel.errors import NotFittedError
            raise NotFittedError("CellTable is not fitted yet: call fit() first")
        key = self.normalize(**key)
        for level, cell in backoff_chain(key, self.keys, self.order):
            e = self.entries_.get(cell)
            if e is not None:
                return Resolved(cell, level, e.value, e.n)
        raise LookupError("no fitted cell (the table is empty)")  # pragma: no cover

    def known_values(self) -> dict[str, list[str]]:
        """Key → the values seen in the fitted data (from the finest observed cells)."""
        out: dict[str, set] = {k: set() for k in self.keys}
        for cell in list(self.counts_) + list(self.entries_):
            for k in self.keys:
                v = getattr(cell, k)
                if v is not None:
                    out[k].add(v)
        return {k: sorted(v) for k, v in out.items()}

    def query(self, what: str = "model", **key) -> Answer:
        """The answer for ``key`` under the package's key semantics (module docstring): unknown values
        raise, keys not given are marginalised with count weights, back-off is reported and warned."""
        if not hasattr(self, "entries_"):
            from acmemodel.errors import NotFittedError
            raise NotFittedError("CellTable is not fitted yet: call fit() first")
        key = self.normalize(**key)
        known = self.known_values()
        check_key_values({k: v for k, v in key.items() if k != "gpu_bucket"}, known, what)
        asked = Cell(**key)
        bucket_unseen = "gpu_bucket" in key and key["gpu_bucket"] not in known.get("gpu_bucket", [])
        if bucket_unseen:  # GPU counts are numeric: an unseen size backs off to the cell without it
            key = {k: v for k, v in key.items() if k != "gpu_bucket"}
        given = set(key)
        level_keys = next((lv for lv in reversed(self.levels) if given <= set(lv)), self.levels[0])
        combos: dict[tuple, float] = {}
        if any(k not in given for k in level_keys):  # marginalise the keys not given
            for cell, n in self.counts_.items():
                if all(getattr(cell, k) == v for k, v in key.items()):
                    c = tuple(getattr(cell, k) for k in level_keys)
                    combos[c] = combos.get(c, 0.0) + n
        if not combos:  # every key of the level given, or a combination never observed: the chain
            combos = {tuple(key.get(k) for k in level_keys): 1.0}
        parts: list[Resolved] = []
        weights: list[float] = []
        backed: list[Resolved] = []
        index: dict[Cell, int] = {}
        for c, w in combos.items():
            r = self.resolve(**{k: v for k, v in zip(level_keys, c) if v is not None})
            if r.level > 0 or bucket_unseen:
                backed.append(r)
            if r.cell in index:
                weights[index[r.cell]] += w
                continue
            index[r.cell] = len(parts)
            parts.append(r)
            weights.append(w)
        wts = np.asarray(weights, dtype=float)
        wts = wts / wts.sum()
        if backed:
            registry = self.__dict__.setdefault("_warned", set())
            if asked not in registry:  # once per table (model) and question, however many parts backed off
                registry.add(asked)
                _warn_query(asked, parts, wts, bucket_unseen, known.get("gpu_bucket", []), what)
        return Answer(asked, tuple(parts), wts, tuple(backed))

    def resolve_frame(self, frame: pd.DataFrame) -> pd.DataFrame:
        """Resolve every row of ``frame`` (key columns) at once: DataFrame with ``cell`` (the fitted
        Cell object), ``level`` (back-off steps), aligned on ``frame.index``. Rows are grouped so each
        distinct key combination is resolved once."""
        cols = [k for k in self.keys if k in frame.columns]
        keyed = frame[cols].astype(object).where(frame[cols].notna(), None)
        out_cell = np.empty(len(frame), dtype=object)
        out_level = np.zeros(len(frame), dtype=np.int64)
        if cols:
            groups = keyed.groupby(cols, sort=False, dropna=False).indices
        else:
            groups = {(): np.arange(len(frame))}
        for gkey, pos in groups.items():
            if not isinstance(gkey, tuple):
                gkey = (gkey,)
            key = {k: (None if (v is None or (isinstance(v, float) and np.isnan(v))) else str(v))
                   for k, v in zip(cols, gkey)}
            r = self.resolve(**key)
            one = np.empty(1, dtype=object)
            one[0] = r.cell
            out_cell[pos] = one  # broadcast the Cell object (a tuple) without unpacking it
            out_level[pos] = r.level
        return pd.DataFrame({"cell": out_cell, "level": out_level}, index=frame.index)

    # ------------------------------------------------------------------ serialisation
    def to_dict(self, value_to_dict: Callable[[Any], Any]) -> dict[str, Any]:
        return {
            "keys": list(self.keys), "order": list(self.order), "min_jobs": self.min_jobs,
            "min_jobs_coarsest": self.min_jobs_coarsest,
            "gpu_edges": list(self.gpu_edges), "n_fit": self.n_fit_,
            "entries": [{"cell": cell_to_dict(e.cell), "level": e.level, "n": e.n,
                         "value": value_to_dict(e.value)} for e in self.entries_.values()],
            "counts": [{"cell": cell_to_dict(c), "n": n} for c, n in self.counts_.items()],
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any], value_from_dict: Callable[[Any], Any]) -> "CellTable":
        t = cls(tuple(d["keys"]), order=tuple(d["order"]), min_jobs=int(d["min_jobs"]),
                min_jobs_coarsest=d.get("min_jobs_coarsest"),
                gpu_edges=tuple(d.get("gpu_edges", DEFAULT_GPU_EDGES)))
        t.entries_ = {}
        for e in d["entries"]:
            cell = cell_from_dict(e["cell"])
            t.entries_[cell] = CellEntry(cell, int(e["level"]), int(e["n"]), value_from_dict(e["value"]))
        t.counts_ = {cell_from_dict(c["cell"]): int(c["n"]) for c in d["counts"]}
        t.n_fit_ = int(d["n_fit"])
        return t
