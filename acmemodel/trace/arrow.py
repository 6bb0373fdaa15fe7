"""Arrow → numpy/pandas conversion of a read table: typed time and number columns with masks of
unparsable values, dictionary-encoded and normalised string columns (in a background thread), job-id
normalisation, and the rows as read for the quarantine.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from acmemodel.clusters import utc_offset_seconds
from acmemodel.trace.schema import NUMERIC_COLUMNS, TIME_COLUMNS


def _raw_frame(table, idx: np.ndarray | None, decode: bool = True) -> pd.DataFrame:
    """Rows ``idx`` (all if None) of the (normalised) Arrow table as pandas values.

    The values as read, for the quarantine's ``raw``/``detail`` (dictionary columns decoded to
    strings) and for the extras.
    """
    import pyarrow as pa

    if idx is not None:
        table = _normalise_strings(table.take(pa.array(idx, type=pa.int64())))
    for i, f in enumerate(table.schema):
        if decode and pa.types.is_dictionary(f.type):
            table = table.set_column(i, f.name, table.column(i).cast(f.type.value_type))
    str_dtype = pd.StringDtype("pyarrow")
    return table.to_pandas(split_blocks=True,
                           types_mapper={pa.string(): str_dtype, pa.large_string(): str_dtype}.get)


def _norm_values(arr, upper: bool):
    """Trimmed (and for ``state`` upper-cased) strings, in Arrow (vectorised C++, not Python)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if not pa.types.is_string(arr.type) and not pa.types.is_large_string(arr.type):
        arr = pc.cast(arr, pa.string())
    arr = pc.utf8_trim_whitespace(arr)
    return pc.utf8_upper(arr) if upper else arr


def _all_distinct(col) -> bool:
    """True when no value of the column repeats (sorted in Arrow, neighbours compared; no Python
    object per value). False when unsure (nulls, a column too large for one chunk)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if col.null_count > 1:
        return False
    try:
        c = col.combine_chunks()
        if len(c) < 2:
            return True
        s = c.take(pc.sort_indices(c))
        return not pc.any(pc.equal(s.slice(1), s.slice(0, len(s) - 1))).as_py()
    except pa.ArrowException:  # (e.g. too large for one chunk): the caller checks otherwise
        return False


def _normalise_job_ids(table):
    """The table with ``job_id`` trimmed, and the ids as int64 when all are integer literals (else None).

    Ids that Arrow casts to integers hold no blank (the cast accepts digits and a sign only), so the
    trim is skipped for them.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    col = table.column("job_id")

    def as_int(c):
        if c.null_count:
            return None
        first = c.slice(0, 1)
        if len(first) and not pc.all(pc.match_substring_regex(first, r"^[+-]?[0-9]+$")).as_py():
            return None  # (not an integer literal: the cast below would fail, after reading every id)
        try:
            return np.asarray(c.cast(pa.int64()).to_numpy())
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            return None

    if _is_text(col):
        ints = as_int(col)
        if ints is not None:
            return table, ints
    table = _normalise_strings(table, ("job_id",))
    return table, as_int(table.column("job_id"))


def _normalise_strings(table, names: Sequence[str] = ("job_id", "user", "type", "state")):
    """Trim the key string columns and upper-case ``state``.

    Dictionary-encoded columns are normalised on their (small) dictionaries only.
    """
    import pyarrow as pa

    for name in names:
        if name not in table.column_names:
            continue
        i = table.column_names.index(name)
        col = table.column(i)
        up = name == "state"
        if pa.types.is_dictionary(col.type):
            chunks = [pa.DictionaryArray.from_arrays(ch.indices, _norm_values(ch.dictionary, up))
                      for ch in col.chunks]
            col = pa.chunked_array(chunks, type=pa.dictionary(col.type.index_type, pa.string()))
        else:
            col = _norm_values(col, up)
        table = table.set_column(i, name, col)
    return table



_NAT = np.iinfo(np.int64).min  # numpy/pandas NaT as int64
#: plausible timestamps of a job trace, Unix seconds [1970-01-01, 2100-01-01) UTC: a value outside
#: is quarantined (``timestamp_out_of_range``) instead of stretching every calendar-sized array
PLAUSIBLE_S = (0, 4_102_444_800)
_UNIT_PER_S = {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}


def _out_of_range(i8: np.ndarray, na: np.ndarray | None, per_s: int = 1_000_000_000) -> np.ndarray | None:
    """Mask of present values outside :data:`PLAUSIBLE_S` (``i8`` in units of ``1/per_s`` s), or None."""
    lo, hi = PLAUSIBLE_S
    m = (i8 < lo * per_s) | (i8 >= hi * per_s)
    if na is not None:
        m &= ~na
    return m if m.any() else None


def _without_out_of_range(col):
    """A timestamp column in s/ms/us (parquet) checked in its own unit — a cast to nanoseconds would
    wrap values beyond 1677-2262 — with the implausible values nulled: ``(column in ns, mask or None)``."""
    import pyarrow as pa
    import pyarrow.compute as pc

    t = col.type
    raw, na = _arrow_i8(col)
    oor = _out_of_range(raw, na, _UNIT_PER_S[t.unit])
    if oor is not None:
        col = pc.if_else(pa.array(oor), pa.scalar(None, type=t), col)
    return col.cast(pa.timestamp("ns", tz=t.tz)), oor


@dataclass
class _Time:
    """A parsed time column: ``i8`` ns since the epoch UTC (``_NAT`` where missing), ``na`` mask or None
    (no value missing), ``fail`` mask of present but unparsable values or None (cannot fail), ``ts`` the
    pandas series when it was built on the way (else made from ``i8`` on demand)."""

    i8: np.ndarray
    na: np.ndarray | None
    fail: np.ndarray | None
    ts: pd.Series | None = None
    #: values outside :data:`PLAUSIBLE_S` (or outside what nanoseconds hold), None if none
    oor: np.ndarray | None = None

    def seconds(self) -> np.ndarray:
        v = self.i8.astype(np.float64)
        v /= 1e9
        if self.na is not None:
            v[self.na] = np.nan
        return v

    def series(self, keep: np.ndarray | None) -> pd.Series:
        if self.ts is not None:
            s = self.ts.reset_index(drop=True)
            return s if keep is None else s[keep].reset_index(drop=True)
        i8 = self.i8 if keep is None else self.i8[keep]
        return pd.Series(_writable(i8), dtype="datetime64[ns, UTC]")


def _writable(a: np.ndarray) -> np.ndarray:
    """Arrays viewed zero-copy on Arrow buffers are read-only: copy those (small, single-chunk files)."""
    return a if a.flags.writeable else a.copy()


def _arrow_i8(col) -> tuple[np.ndarray, np.ndarray | None]:
    """int64 values of an Arrow timestamp/number column with nulls as ``_NAT`` (+ null mask or None)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    v = col.cast(pa.int64())
    if v.null_count:
        na = np.asarray(v.is_null().to_numpy(zero_copy_only=False), dtype=bool)
        v = pc.fill_null(v, _NAT)
        return np.asarray(v.to_numpy()), na
    return np.asarray(v.to_numpy()), None


def _factorize(col, upper: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """``(values, codes)`` of a string column, normalised (trimmed; upper-cased if ``upper``): object
    array of its distinct values (missing → ``""``, the last entry) and the int code of each row.

    The column is dictionary-encoded (unless it already is) and normalised on its dictionary only.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    if col.num_chunks == 0:
        return np.array([""], dtype=object), np.zeros(0, dtype=np.intp)
    def unified(c):  # the chunks re-coded on one common dictionary
        return pa.table({"c": c}).unify_dictionaries().column(0).chunks

    if pa.types.is_dictionary(col.type):
        chunks = unified(col)
    else:
        try:  # one chunk: one dictionary, no unification
            chunks = [pc.dictionary_encode(col.combine_chunks())]
        except (pa.ArrowInvalid, pa.ArrowCapacityError):  # (too large for one chunk)
            chunks = unified(pc.dictionary_encode(col))
    dic = _norm_values(chunks[0].dictionary, upper)
    idx = pa.chunked_array([ch.indices for ch in chunks], type=chunks[0].type.index_type)
    if idx.null_count:
        idx = pc.fill_null(idx, len(dic))
    codes = np.asarray(idx.to_numpy()).astype(np.intp)  # (intp: fancy indexing without a conversion)
    cats = np.empty(len(dic) + 1, dtype=object)
    cats[:-1] = dic.to_numpy(zero_copy_only=False)
    cats[-1] = ""
    if dic.null_count:
        cats[:-1][dic.is_null().to_numpy(zero_copy_only=False)] = ""
    return cats, codes


class _Background:
    """Run ``fn(*args)`` in a thread; :meth:`result` joins it (and re-raises its exception)."""

    def __init__(self, fn, *args):
        import threading

        self._value = self._error = None
        self._thread = threading.Thread(target=self._run, args=(fn, args), daemon=True)
        self._thread.start()

    def _run(self, fn, args):
        try:
            self._value = fn(*args)
        except BaseException as e:  # re-raised in the caller's thread
            self._error = e

    def result(self):
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._value


def _factorize_columns(table) -> dict:
    """:func:`_factorize` of the ``user``, ``type`` and ``state`` columns present in the table."""
    return {c: _factorize(table.column(c), upper=c == "state")
            for c in ("user", "type", "state") if c in table.column_names}


def _parse_columns(table, tz: str, path: Path, warn: list[str]) -> dict:
    """Typed columns of the table, keyed by name, with masks of values present but unparsable.

    time column → :class:`_Time`; numeric → ``(float64 values, fail mask or None)``; ``job_id`` → the
    arrow column (``user``/``type``/``state``: see :func:`_factorize_columns`). Masks are None where
    the check cannot fail (a column Arrow already typed).
    """
    import pyarrow as pa

    out: dict = {}
    str_dtype = pd.StringDtype("pyarrow")
    for c in table.column_names:
        col = table.column(c)
        if c in TIME_COLUMNS:
            t = col.type
            oor0 = None
            if pa.types.is_timestamp(t) and t.unit != "ns":
                col, oor0 = _without_out_of_range(col)
                t = col.type
            if pa.types.is_timestamp(t) and t.unit == "ns" and t.tz in ("UTC", "+00:00"):
                i8, na = _arrow_i8(col)  # fast path: already UTC ns
                out[c] = _Time(i8, na, None, None, _or_masks(oor0, _out_of_range(i8, na)))
                continue
            fast = _iso_offset_times(col)
            if fast is not None:  # every value 'YYYY-MM-DD HH:MM:SS±HH:MM' (AcmeTrace's own format)
                i8, na = fast
                out[c] = _Time(i8, na, np.zeros(len(i8), dtype=bool), None, _or_masks(oor0, _out_of_range(i8, na)))
                continue
            s = col.to_pandas(types_mapper={pa.string(): str_dtype, pa.large_string(): str_dtype}.get)
            fail = None
            if isinstance(s.dtype, pd.DatetimeTZDtype):
                ts = s.dt.tz_convert("UTC")
            elif pd.api.types.is_datetime64_any_dtype(s):  # naive (parquet): local time of the cluster
                ts = s.dt.tz_localize(_tzinfo(tz)).dt.tz_convert("UTC")
                warn.append(f"{path}: column {c} has no time zone; read as local time {tz}")
            else:
                ts, fail = _parse_time_strings(s, tz, path, c, warn)
                if fail is not None and fail.any():  # a well-formed date beyond what ns can hold
                    idx = np.flatnonzero(fail)
                    yr = pd.to_numeric(s.iloc[idx].astype("string").str.strip().str.extract(
                        r"^(\d{4})-\d{2}-\d{2}", expand=False), errors="coerce").to_numpy(dtype=float)
                    far = (yr < 1678) | (yr > 2261)
                    if far.any():
                        fail = fail.copy()
                        fail[idx[far]] = False
                        far_mask = np.zeros(len(fail), dtype=bool)
                        far_mask[idx[far]] = True
                        oor0 = _or_masks(oor0, far_mask)
            na = ts.isna().to_numpy()
            i8 = ts.to_numpy(dtype="datetime64[ns]").view("int64")
            out[c] = _Time(i8, na if na.any() else None, fail, ts, _or_masks(oor0, _out_of_range(i8, na)))
        elif c in NUMERIC_COLUMNS:
            if pa.types.is_floating(col.type) or (pa.types.is_integer(col.type) and not col.null_count):
                out[c] = (_writable(np.asarray(col.to_numpy(), dtype=float)), None)  # (nulls → NaN)
            elif (v := _plain_whole_numbers(col)) is not None:  # every value digits, at most a '.0' tail
                out[c] = (v, np.zeros(len(v), dtype=bool))
            else:
                s = col.to_pandas(types_mapper={pa.string(): str_dtype, pa.large_string(): str_dtype}.get)
                if pd.api.types.is_numeric_dtype(s):
                    out[c] = (s.to_numpy(dtype=float), None)
                else:
                    txt = s.astype(str_dtype).str.strip()
                    v = pd.to_numeric(txt, errors="coerce").to_numpy(dtype=float)
                    present = txt.notna().to_numpy() & (txt != "").fillna(False).to_numpy()
                    out[c] = (v, present & np.isnan(v))
        elif c == "job_id":
            out[c] = col
    return out


#: a time string in AcmeTrace's own format: local time and its UTC offset, to the second
_ISO_OFFSET = r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}[+-]\d{2}:\d{2}$"
#: a number that pandas and Arrow read to the same float: up to 15 digits, at most a '.0…' tail, no sign
_PLAIN_WHOLE = r"^\d{1,15}(\.0+)?$"


def _is_text(col) -> bool:
    import pyarrow as pa

    return pa.types.is_string(col.type) or pa.types.is_large_string(col.type)


def _iso_offset_times(col):
    """``(i8, na)`` of a string column whose every value is empty, null or ``YYYY-MM-DD HH:MM:SS±HH:MM`` with a
    valid calendar date and time in the years 1678–2261 and an offset under 24 h (empty and null: missing), read
    from the strings' bytes at their fixed positions: the values the general (pandas) parser gives; None for any
    other column (the general parser then reads it, with its messages)."""
    import pyarrow as pa

    if not _is_text(col) or len(col) == 0:
        return None
    arr = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    _, off_buf, data_buf = arr.buffers()
    if off_buf is None or data_buf is None:
        return None
    off = np.frombuffer(off_buf, dtype=np.int64 if pa.types.is_large_string(arr.type) else np.int32)
    off = off[arr.offset: arr.offset + len(arr) + 1].astype(np.int64)
    lens = np.diff(off)
    valid = arr.is_valid().to_numpy(zero_copy_only=False) if arr.null_count else np.ones(len(arr), dtype=bool)
    present = valid & (lens > 0)
    if not present.any() or not (lens[present] == 25).all():
        return None
    data = np.frombuffer(data_buf, dtype=np.uint8)
    b = data[off[:-1][present][:, None] + np.arange(25)]  # (uint8: one row of 25 bytes per value)
    seps = {4: 45, 7: 45, 10: 32, 13: 58, 16: 58, 22: 58}  # - - ' ' : : :
    if not all((b[:, k] == v).all() for k, v in seps.items()) or not ((b[:, 19] == 43) | (b[:, 19] == 45)).all():
        return None
    digits = [k for k in range(25) if k not in seps and k != 19]
    dg = b[:, digits]
    if not ((dg >= 48) & (dg <= 57)).all():
        return None

    def num(a, n):  # the n-digit number at position a
        v = np.zeros(len(b), dtype=np.int64)
        for k in range(a, a + n):
            v = v * 10 + (b[:, k].astype(np.int64) - 48)
        return v

    y, mo, d, h, mi, sec, oh, om = (num(0, 4), num(5, 2), num(8, 2), num(11, 2), num(14, 2), num(17, 2), num(20, 2),
                                    num(23, 2))
    leap = ((y % 4 == 0) & (y % 100 != 0)) | (y % 400 == 0)
    dim = np.array([31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31])[np.clip(mo - 1, 0, 11)] + (leap & (mo == 2))
    if not ((y >= 1678) & (y <= 2261) & (mo >= 1) & (mo <= 12) & (d >= 1) & (d <= dim) & (h <= 23) & (mi <= 59)
            & (sec <= 59) & (oh <= 23) & (om <= 59)).all():
        return None
    days = ((y - 1970) * 12 + mo - 1).astype("datetime64[M]").astype("datetime64[D]").astype(np.int64) + d - 1
    sign = np.where(b[:, 19] == 45, -1, 1)
    secs = days * 86400 + h * 3600 + mi * 60 + sec - sign * (oh * 3600 + om * 60)
    i8 = np.full(len(arr), _NAT, dtype=np.int64)
    i8[present] = secs * 1_000_000_000
    na = ~present
    return i8, (na if na.any() else None)


def _plain_whole_numbers(col):
    """float64 values of a string column whose every value (nulls aside) is :data:`_PLAIN_WHOLE`, by Arrow's
    cast (exact: whole numbers of at most 15 digits; pandas' reading of them); None otherwise."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if not _is_text(col) or len(col) == 0 or col.null_count == len(col):
        return None
    try:
        if not pc.all(pc.match_substring_regex(col, _PLAIN_WHOLE)).as_py():
            return None
        return _writable(np.asarray(pc.cast(col, pa.float64()).to_numpy(zero_copy_only=False), dtype=float))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None


def _or_masks(a, b):
    return b if a is None else (a if b is None else a | b)


def _tzinfo(offset: str):
    import datetime as dt

    return dt.timezone(dt.timedelta(seconds=utc_offset_seconds(offset)))


def _parse_time_strings(s: pd.Series, tz: str, path: Path, col: str, warn: list[str]):
    """Parse ISO-8601 strings; strings without a zone offset are local time ``tz``."""
    txt = s.astype(pd.StringDtype("pyarrow")).str.strip()  # (Arrow's kernels: 10x the Python string methods)
    present = (txt.notna() & (txt != "")).to_numpy(dtype=bool)
    result = pd.Series(pd.NaT, index=s.index, dtype="datetime64[ns, UTC]")
    if present.any():
        vals = txt[present]
        has_off = vals.str.contains(r"(?:[+-]\d{2}:?\d{2}|Z)$", regex=True).fillna(False).to_numpy()
        if has_off.any():
            result.loc[vals.index[has_off]] = pd.to_datetime(
                vals[has_off], utc=True, errors="coerce", format="ISO8601")
        if (~has_off).any():
            naive = pd.to_datetime(vals[~has_off], errors="coerce", format="ISO8601")
            ok = naive.notna()
            if ok.any():
                warn.append(f"{path}: {int(ok.sum())} value(s) of {col} have no time zone; read as "
                            f"local time {tz}")
                result.loc[naive.index[ok]] = naive[ok].dt.tz_localize(_tzinfo(tz)).dt.tz_convert("UTC")
    fail = present & result.isna().to_numpy()
    return result, fail

