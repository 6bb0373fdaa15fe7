"""The export writers' text columns, built as Arrow string arrays: timestamps (``time_bytes``,
``format_times``: local wall-clock text at a fixed offset, vectorised through a clock table),
integers and floats as text, concatenation, and the time-span / rebase helpers of the result
record. Casting, concatenation and CSV writing run in Arrow's C++ kernels instead of per-value
Python calls (~10x faster on a million rows). Every name stays importable from
:mod:`acmemodel.export._common`.
"""
from __future__ import annotations

import datetime as _dt
import math
from typing import Any

import numpy as np
import pandas as pd


# --------------------------------------------------------------------------- strings (Arrow)
# Columns are built as Arrow large_string arrays: casting, concatenation and CSV writing then run in
# Arrow's C++ kernels instead of per-value Python calls (~10x faster on a million rows).
def to_arrow(col: Any) -> "pa.Array":
    """A string column as an Arrow ``large_string`` array (None/NaN → null)."""
    import pyarrow as pa

    if isinstance(col, pa.ChunkedArray):  # combine_chunks copies even a single chunk
        col = col.chunk(0) if col.num_chunks == 1 else col.combine_chunks()
    if isinstance(col, pa.Array):
        return col if col.type == pa.large_string() else col.cast(pa.large_string())
    if isinstance(col, pd.Series):
        col = col.to_numpy(dtype=object)
    return pa.array(np.asarray(col, dtype=object), type=pa.large_string(), from_pandas=True)


def cat(*parts: Any) -> "pa.Array":
    """Element-wise concatenation of string columns and constant strings (a null part → null)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    args = [pa.scalar(p, type=pa.large_string()) if isinstance(p, str) else to_arrow(p) for p in parts]
    if not any(isinstance(a, pa.Array) for a in args):
        raise ValueError("cat needs at least one column")
    return pc.binary_join_element_wise(*args, pa.scalar("", type=pa.large_string()))


def _validity(missing: np.ndarray | None):
    import pyarrow as pa

    if missing is None or not np.any(missing):
        return None, 0
    return pa.py_buffer(np.packbits(~np.asarray(missing, bool), bitorder="little")), int(np.sum(missing))


def time_bytes(sec: np.ndarray, *, offset_s: int = 0, suffix: str = "", sep: str = " ") -> np.ndarray:
    """``YYYY-MM-DD HH:MM:SS`` + ``suffix`` of integer Unix seconds shifted by ``offset_s`` (local
    wall-clock time), as an ``(n, 19 + len(suffix))`` uint8 matrix of ASCII bytes (one row a string).

    Two small lookup tables do the work: the ``YYYY-MM-DD`` text of every day in the range (a
    trace spans a few hundred days; :func:`numpy.datetime_as_string` on those) and the
    ``HH:MM:SS`` text of the 86,400 seconds of a day; each row is two gathers from them.
    """
    sec = np.asarray(sec, dtype="int64") + int(offset_s)
    n = len(sec)
    suf = np.frombuffer(suffix.encode("ascii"), dtype=np.uint8)
    out = np.empty((n, 19 + len(suf)), dtype=np.uint8)
    if n == 0:
        return out
    days, sod = np.divmod(sec, 86400)
    d0, d1 = int(days.min()), int(days.max())
    if d1 - d0 < max(4 * n, 1 << 16):
        day_values, day_idx = np.arange(d0, d1 + 1), days - d0
    else:  # sparse dates over a very long range
        day_values, day_idx = np.unique(days, return_inverse=True)
    text = np.datetime_as_string(day_values.astype("datetime64[D]"), unit="D").astype("U10")
    codes = text.view(np.uint32).reshape(len(text), 10)
    if not (codes < 128).all():  # years beyond 9999 or before 0 would not be fixed width
        raise ValueError("timestamps out of the range 0000..9999")
    out[:, :10] = codes.astype(np.uint8)[day_idx]
    out[:, 10:19] = _clock_table(sep)[sod]
    out[:, 19:] = suf
    return out


_CLOCK: dict[str, np.ndarray] = {}


def _clock_table(sep: str) -> np.ndarray:
    """``sep + "HH:MM:SS"`` of every second of a day, (86400, 9) uint8 (cached)."""
    if sep not in _CLOCK:
        h, rem = np.divmod(np.arange(86400), 3600)
        m, s = np.divmod(rem, 60)
        t = np.empty((86400, 9), dtype=np.uint8)
        t[:, 0] = ord(sep)
        for col, v in ((1, h), (4, m), (7, s)):
            t[:, col] = ord("0") + v // 10
            t[:, col + 1] = ord("0") + v % 10
        t[:, 3] = t[:, 6] = ord(":")
        _CLOCK[sep] = t
    return _CLOCK[sep]


def format_times(sec: np.ndarray, missing: np.ndarray | None = None, *, offset_s: int = 0,
                 suffix: str = "", sep: str = " ") -> "pa.Array":
    """Vectorised ``YYYY-MM-DD HH:MM:SS`` + ``suffix`` of integer Unix seconds shifted by
    ``offset_s`` (local wall-clock time) as an Arrow ``large_string`` array; missing entries are
    null. The fixed-width bytes of :func:`time_bytes` become the array's data buffer directly (no
    per-value Python objects).
    """
    import pyarrow as pa

    b = time_bytes(sec, offset_s=offset_s, suffix=suffix, sep=sep)
    n, w = b.shape
    if n == 0:
        return pa.array([], type=pa.large_string())
    offsets = np.arange(0, (n + 1) * w, w, dtype=np.int64)
    validity, nulls = _validity(missing)
    return pa.LargeStringArray.from_buffers(n, pa.py_buffer(offsets), pa.py_buffer(b), validity, nulls)


def int_strings(x: np.ndarray, missing: np.ndarray | None = None, *, float_suffix: bool = False) -> "pa.Array":
    """Integers as decimal strings (``"936"``, or ``"936.0"`` with ``float_suffix``); missing → null."""
    import pyarrow as pa

    x = np.asarray(x)
    arr = pa.array(x.astype("int64"), mask=None if missing is None else np.asarray(missing, bool))
    s = arr.cast(pa.large_string())
    return cat(s, ".0") if float_suffix else s


def float_strings(x: np.ndarray) -> "pa.Array":
    """Floats as Python's ``repr`` (``100.0``, ``2.5``; the published files' style); NaN → null."""
    x = np.asarray(x, dtype=float)
    out = np.empty(len(x), dtype=object)
    ok = ~np.isnan(x)
    values, codes = np.unique(x[ok], return_inverse=True)  # few distinct values in a trace column
    out[ok] = np.array([repr(float(v)) for v in values], dtype=object)[codes.ravel()]
    out[~ok] = None
    return to_arrow(out)


def short_float_strings(x: np.ndarray) -> "pa.Array":
    """Floats as their shortest round-trip text, integral values without a decimal point
    (``117``, ``12.25``, ``1e-07`` style from Arrow); for JSON numbers."""
    import pyarrow as pa

    x = np.asarray(x, dtype=float)
    integral = np.isfinite(x) & (x == np.floor(x)) & (np.abs(x) < 2 ** 53)
    ints = int_strings(np.where(integral, x, 0))
    floats = pa.array(x).cast(pa.large_string())
    import pyarrow.compute as pc

    return pc.if_else(pa.array(integral), ints, floats)


def num_strings(x: pd.Series) -> "pa.Array":
    """Integral numbers as ints (``128``), others as Python floats; NaN → null."""
    import pyarrow as pa
    import pyarrow.compute as pc

    v = pd.to_numeric(x, errors="coerce").to_numpy(dtype=float)
    miss = np.isnan(v)
    vv = np.where(miss, 0, v)
    integral = ~miss & (np.floor(vv) == vv)
    ints = int_strings(np.where(integral, vv, 0), miss)
    if integral.sum() == (~miss).sum():
        return ints
    rest = np.where(integral | miss, np.nan, v)
    return pc.if_else(pa.array(integral | miss), ints, float_strings(rest))


def iso_utc(s: float) -> str | None:
    if s is None or not math.isfinite(s):
        return None
    return _dt.datetime.fromtimestamp(s, tz=_dt.timezone.utc).isoformat().replace("+00:00", "Z")


def time_span(df: pd.DataFrame) -> dict[str, Any]:
    """First submit and last end (UTC ISO) and the span in seconds."""
    if len(df) == 0:
        return {"start_utc": None, "end_utc": None, "seconds": 0.0}
    t0 = float(df["submit_s"].min())
    t1 = float(np.nanmax(df["end_s"].to_numpy()))
    return {"start_utc": iso_utc(t0), "end_utc": iso_utc(t1), "seconds": t1 - t0}


def rebase_shift(first_submit_s: float, offset_s: int, epoch: str) -> int:
    """Seconds to add to every timestamp so the trace starts at the simulator's hard-coded epoch.

    The shift is a whole number of weeks, chosen so that local midnight of the first submission
    day lands in ``[epoch, epoch + 7 days)``: hour of day and day of week are preserved (the
    diurnal and weekly cycles of the trace stay where they were).
    """
    ep = pd.Timestamp(epoch)
    if ep.tzinfo is not None:
        ep = ep.tz_convert(None)
    ep_s = int(ep.value // 10**9)
    local_first = int(math.floor(first_submit_s)) + offset_s
    local_midnight = local_first - (local_first % 86400)
    week = 7 * 86400
    weeks = math.ceil((ep_s - local_midnight) / week)
    return int(weeks * week)
