"""The field parsers of the Slurm importer (:mod:`.slurm`, whose docstring states the mapping).

Timestamps (local time of the Slurm database, explicit offsets honoured), numbers, TRES strings
(``gres/gpu=N``, typed GPUs, ``cpu=``, ``mem=`` with unit suffixes), array ranges
(``123_[5-9,12%2]``), the few-row surgery on special job ids (array ranges, heterogeneous
components, requeued duplicates) and the file/magic checks; every name stays importable from
:mod:`acmemodel.trace.importers.slurm`.
"""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd

from acmemodel.errors import TraceFormatError
from acmemodel.trace.importers import _common as C

_TIME_FMT = "%Y-%m-%dT%H:%M:%S"
_MISSING_TIME = ("", "Unknown", "None", "unknown", "none", "N/A")

def _n_distinct(ids, raw) -> int:
    """Distinct job ids; when every JobIDRaw is an integer and they are all distinct (the usual
    case: one raw id per job and array task), ``len(ids)`` without hashing the strings."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if raw is not None:
        try:
            r = np.asarray(pc.cast(raw, pa.int64()).to_numpy(zero_copy_only=False))
            if len(r) < 2 or bool((np.diff(r) > 0).all()) or len(np.unique(r)) == len(r):
                # distinct raw ids: two records of one JobID would share their raw id, except a
                # pending array range (its raw id is the array's); those rows are special anyway
                return len(ids)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            pass
    return len(pc.unique(ids))


def _np(v) -> np.ndarray:
    return v if isinstance(v, np.ndarray) else np.asarray(v.to_numpy(zero_copy_only=False), dtype=float)


def _to_frame(cols: dict, lines: np.ndarray) -> pd.DataFrame:
    """The columns as a pandas frame (for the few-row id surgery)."""
    d = {}
    for k, v in cols.items():
        if isinstance(v, np.ndarray):
            d[k] = v
        elif hasattr(v, "type") and (str(v.type) in ("double", "float")):
            d[k] = np.asarray(v.to_numpy(zero_copy_only=False), dtype=float)
        else:
            d[k] = np.asarray(v.to_pylist(), dtype=object)
    d["_line"] = lines
    return pd.DataFrame(d)


# ------------------------------------------------------------------------------------------ helpers
def _check_file(path: Path) -> None:
    if not path.exists():
        raise TraceFormatError(f"{path}: no such file")
    if path.is_dir():
        raise TraceFormatError(f"{path}: is a directory, not a sacct file")
    if path.stat().st_size == 0:
        raise TraceFormatError(f"{path}: empty file")


def _magic(path: Path, k: int) -> bytes:
    with open(path, "rb") as f:
        return f.read(k)


def _few(arr, k: int = 64) -> list[str]:
    import pyarrow.compute as pc

    try:
        return [s for s in pc.unique(arr).to_pylist()[:k] if s]
    except Exception:  # noqa: BLE001 (a hint only)
        return []


def _times(c, tz: str):
    """sacct timestamps → Unix seconds (NaN unknown) and the mask of unparsable values."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if pa.types.is_timestamp(c.type):  # converted by the CSV reader: naive local seconds, null = unknown
        null = np.asarray(c.is_null().to_numpy(zero_copy_only=False), dtype=bool)
        sec = np.asarray(pc.fill_null(c.cast(pa.int64()), 0).to_numpy(zero_copy_only=False), dtype=float)
        return np.where(null, np.nan, sec - C.utc_offset_seconds(tz)), np.zeros(len(sec), dtype=bool)
    c = pc.utf8_trim_whitespace(c)
    missing = np.asarray(pc.is_in(c, value_set=pa.array(list(_MISSING_TIME))).to_numpy(zero_copy_only=False),
                         dtype=bool)
    ts = pc.strptime(c, format=_TIME_FMT, unit="s", error_is_null=True)
    null = np.asarray(ts.is_null().to_numpy(zero_copy_only=False), dtype=bool)
    sec = np.asarray(pc.fill_null(ts.cast(pa.int64()), 0).to_numpy(zero_copy_only=False), dtype=float)
    sec = np.where(null, np.nan, sec - C.utc_offset_seconds(tz))
    retry = null & ~missing
    fail = np.zeros(len(sec), dtype=bool)
    if retry.any():  # other spellings (a space separator, an explicit offset): pandas on the few
        idx = np.flatnonzero(retry)
        s2, bad2 = C.parse_local_times(c.take(pa.array(idx)).to_pylist(), tz)
        sec[idx] = s2
        fail[idx] = bad2
    return sec, fail


def _num(c, n: int) -> np.ndarray:
    import pyarrow as pa
    import pyarrow.compute as pc

    if c is None:
        return np.full(n, np.nan)
    if pa.types.is_floating(c.type) or pa.types.is_integer(c.type):
        return np.asarray(c.to_numpy(zero_copy_only=False), dtype=float)
    t = pc.utf8_trim_whitespace(c)
    try:  # (the usual case: every value a number or empty)
        v = pc.cast(pc.if_else(pc.equal(t, ""), pa.scalar(None, pa.string()), t), pa.float64())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        v = pc.cast(pc.if_else(pc.match_substring_regex(t, r"^-?\d+(\.\d+)?$"), t,
                               pa.scalar(None, pa.string())), pa.float64())
    return np.asarray(v.to_numpy(zero_copy_only=False), dtype=float)


_MEM_UNIT = {"K": 1 / 1024 ** 2, "M": 1 / 1024, "G": 1.0, "T": 1024.0, "P": 1024.0 ** 2}


def _tres(tres):
    """(GPUs, CPUs, memory GB) of TRES strings ``billing=16,cpu=16,gres/gpu=8,mem=128G,node=1``
    (see :func:`_tres_values`).

    A cluster's jobs repeat a few resource shapes: the column is dictionary-encoded and its distinct
    strings parsed once, then spread to the rows by their codes; a column of mostly distinct strings
    (more than a quarter of the rows) is parsed row by row."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if isinstance(tres, pa.ChunkedArray):
        tres = tres.combine_chunks()
    n = len(tres)
    if n > 4096:
        enc = pc.dictionary_encode(tres, null_encoding="encode")
        if len(enc.dictionary) <= n // 4:
            codes = np.asarray(enc.indices.to_numpy(zero_copy_only=False), dtype=np.intp)
            return tuple(v[codes] for v in _tres_values(enc.dictionary))
    return _tres_values(tres)


def _tres_values(tres):
    """(GPUs, CPUs, memory GB) of each TRES string ``billing=16,cpu=16,gres/gpu=8,mem=128G,node=1``.

    GPUs: ``gres/gpu=N``, else the sum of typed ``gres/gpu:<type>=N``; NaN when the field is empty
    (nothing allocated), 0 when it lists other resources only. CPUs ``cpu=``; memory ``mem=`` with
    Slurm's binary K/M/G/T suffixes (no suffix = MB); NaN when absent. The strings are split on ``,``
    in Arrow (no regex): one pass over the ``key=value`` items."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if isinstance(tres, pa.ChunkedArray):
        tres = tres.combine_chunks()
    n = len(tres)
    t = pc.fill_null(pc.utf8_trim_whitespace(tres), "")
    empty = np.asarray(pc.equal(pc.utf8_length(t), 0).to_numpy(zero_copy_only=False), dtype=bool)
    items = pc.split_pattern(t, ",")
    flat = pc.list_flatten(items)
    parent = np.asarray(pc.list_parent_indices(items).to_numpy(zero_copy_only=False), dtype=np.int64)

    def values(prefix: str):
        m = pc.starts_with(flat, prefix)
        rows = parent[np.asarray(m.to_numpy(zero_copy_only=False), dtype=bool)]
        v = pc.utf8_slice_codeunits(pc.filter(flat, m), len(prefix))
        return rows, v

    def as_float(v):
        try:
            return np.asarray(pc.cast(v, pa.float64()).to_numpy(zero_copy_only=False), dtype=float)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):  # (an odd value: the slow path)
            return _floats_slow(v)

    gpu = np.full(n, np.nan)
    rows, v = values("gres/gpu=")
    gpu[rows] = as_float(v)
    rows_t, vt = values("gres/gpu:")
    if len(rows_t):
        typed = np.zeros(n)
        num = pc.utf8_slice_codeunits(vt, 0)  # "a100=8" → value after '='
        after = pc.list_element(pc.split_pattern(num, "=", max_splits=1), 1)
        np.add.at(typed, rows_t, np.nan_to_num(as_float(pc.fill_null(after, ""))))
        has_t = np.zeros(n, dtype=bool)
        has_t[rows_t] = True
        gpu = np.where(np.isnan(gpu) & has_t, typed, gpu)
    gpu = np.where(np.isnan(gpu) & ~empty, 0.0, gpu)
    cpu = np.full(n, np.nan)
    rows, v = values("cpu=")
    cpu[rows] = as_float(v)
    mem = np.full(n, np.nan)
    rows, v = values("mem=")
    if len(rows):
        last = pc.utf8_slice_codeunits(v, -1)
        unit = np.ones(len(rows)) / 1024  # no suffix: MB
        suffixed = np.zeros(len(rows), dtype=bool)
        for k, f in _MEM_UNIT.items():
            m = np.asarray(pc.equal(last, k).to_numpy(zero_copy_only=False), dtype=bool)
            unit[m] = f
            suffixed |= m
        body = pc.if_else(pa.array(suffixed), pc.utf8_slice_codeunits(v, 0, -1), v)
        mem[rows] = as_float(body) * unit
    return gpu, cpu, mem


def _floats_slow(v) -> np.ndarray:
    return pd.to_numeric(pd.Series(v.to_pylist(), dtype=object), errors="coerce").to_numpy(dtype=float)


def _raw(table, read_names, wanted, idx) -> list[str]:
    """Rows ``idx`` as '|'-joined values of the columns read (for the quarantine's raw)."""
    import pyarrow as pa

    sub = table.take(pa.array(np.asarray(idx, dtype=np.int64)))
    cols = [sub.column(c).to_pylist() for c in sub.column_names]
    return ["|".join("" if v is None else str(v) for v in row) for row in zip(*cols)]


def _raw_rows_of(path: Path, compression, lines) -> list[str]:
    """The file's lines ``lines`` as written (one pass; only for quarantined rows)."""
    import gzip

    want = set(int(x) for x in lines)
    found = {}
    opener = gzip.open if compression == "gzip" else open
    with opener(path, "rb") as f:
        for i, line in enumerate(f, start=1):
            if i in want:
                found[i] = line.decode("utf-8", errors="replace").rstrip("\r\n")
    return [found.get(int(x), "") for x in lines]


#: most array tasks one file's pending ranges may expand to (a range past it is quarantined as
#: ``bad_array_range``: about 1 kB of memory per expanded job)
MAX_ARRAY_TASKS = 2_000_000


def expand_array_range(spec: str) -> list[int]:
    """``5-9,12,15-20:2%4`` → task indices (``:step`` honoured, ``%`` throttle ignored)."""
    spec = spec.split("%")[0]
    out: list[int] = []
    for k, part in enumerate(spec.split(",")):
        part = part.strip()
        m = re.fullmatch(r"(\d+)(?:-(\d+)(?::(\d+))?)?", part)
        if not m:
            raise ValueError(part)
        a = int(m.group(1))
        b = int(m.group(2)) if m.group(2) else a
        step = int(m.group(3)) if m.group(3) else 1
        if b < a or step < 1 or b - a > 1_000_000:
            raise ValueError(part)
        r = range(a, b + 1, step)
        if len(out) + len(r) > MAX_ARRAY_TASKS:  # counted before the list is built
            raise TooManyTasks(len(out) + len(r) + sum(_range_len(p) for p in spec.split(",")[k + 1:]))
        out.extend(r)
    return out


class TooManyTasks(ValueError):
    """An array range that expands past :data:`MAX_ARRAY_TASKS` (``args[0]``: its task count)."""


def _range_len(part: str) -> int:
    m = re.fullmatch(r"(\d+)(?:-(\d+)(?::(\d+))?)?", part.strip())
    if not m:
        return 0
    a = int(m.group(1))
    return len(range(a, (int(m.group(2)) if m.group(2) else a) + 1, int(m.group(3)) if m.group(3) else 1))


def _special_ids(frame: pd.DataFrame, special: np.ndarray, q: C.Quarantine, path, compression):
    """Expand pending array ranges ``123_[5-9]`` and fold heterogeneous components ``123+k``."""
    rows = frame.loc[special]
    rest = frame.loc[~special]
    new = []
    n_exp = n_het = 0
    bad_lines = []
    het = rows[rows["job_id"].str.contains("+", regex=False)]
    arr = rows[~rows.index.isin(het.index)]
    big: list[tuple[int, int]] = []
    pos, ids = [], []  # vectorised: one repeat of each record per task (not a pandas row copy per task)
    for k, (jid, line) in enumerate(zip(arr["job_id"].astype(str), arr["_line"])):
        m = re.fullmatch(r"(\d+)_\[(.+)\]", jid)
        try:
            tasks = expand_array_range(m.group(2)) if m else None
        except TooManyTasks as e:
            big.append((int(line), int(e.args[0])))
            continue
        except ValueError:
            tasks = None
        if not tasks:
            bad_lines.append(int(line))
            continue
        if n_exp + len(tasks) > MAX_ARRAY_TASKS:
            big.append((int(line), len(tasks)))
            continue
        pos.append(np.full(len(tasks), k))
        ids.append(np.char.add(f"{m.group(1)}_", np.asarray(tasks).astype(str)).astype(object))
        n_exp += len(tasks) - 1
    if pos:
        d = arr.iloc[np.concatenate(pos)].copy()
        d["job_id"] = np.concatenate(ids)
        new.append(d)
    if bad_lines:
        q.add(bad_lines, "bad_array_range", "array task range is not N-M[,..]", _raw_rows_of(path, compression, bad_lines))
    if big:
        lines_big = [b[0] for b in big]
        q.add(lines_big, "bad_array_range",
              [f"array range of {n:,} tasks: the file's ranges would expand past {MAX_ARRAY_TASKS:,} jobs"
               for _, n in big], _raw_rows_of(path, compression, lines_big))
    if len(het):
        base = het["job_id"].str.split("+").str[0]
        for b, g in het.groupby(base, sort=False):
            d = g.iloc[0].copy()
            d["job_id"] = b
            for c in ("gpu_num", "node_num", "cpu_num"):
                d[c] = g[c].sum()
            mem_tot = (g["mem_per_pod_GB"] * g["node_num"]).sum(min_count=1)
            d["mem_per_pod_GB"] = mem_tot / max(d["node_num"], 1.0)
            d["submit"] = g["submit"].min()
            d["start"] = g["start"].min()
            d["end"] = g["end"].max() if g["end"].notna().all() else np.nan
            new.append(d)
            n_het += len(g) - 1
    new = [x if isinstance(x, pd.DataFrame) else pd.DataFrame([x]) for x in new]
    out = pd.concat([rest, *new], ignore_index=False) if new else rest
    out = out.sort_values("_line", kind="stable").reset_index(drop=True)
    return out, n_exp, n_het


def _attempts(frame: pd.DataFrame):
    """Records of one job id listed several times (``--duplicates``: requeued attempts): the earlier
    ones become ``<id>@k`` in order of submission, each linked to the previous by ``restart_of``."""
    frame = frame.copy()
    order = frame.sort_values(["submit", "_line"], kind="stable").index
    k = frame.loc[order].groupby("job_id", sort=False).cumcount() + 1
    total = frame.groupby("job_id")["job_id"].transform("size")
    att = pd.Series(k, index=order).reindex(frame.index)
    ids = frame["job_id"].astype(str)
    new_id = np.where(att.to_numpy() < total.to_numpy(), ids + "@" + att.astype(str), ids)
    prev = np.where(att.to_numpy() > 1, ids + "@" + (att - 1).astype(str), None)
    frame["job_id"] = new_id
    frame["restart_of"] = np.where(pd.notna(prev), prev, frame["restart_of"])
    return frame, int((att.to_numpy() < total.to_numpy()).sum())
