"""The bytes of a CSV trace file, before any table is read: whether it holds a quote, its physical
lines, the masking of lines whose quotes do not close (:func:`_mask_unbalanced_quotes`) and the repair
of invalid UTF-8 (:func:`_utf8_repaired`). :mod:`acmemodel.trace.files` reads the table from them.
"""
from __future__ import annotations

import gzip
import re
from pathlib import Path

#: what a line with an unterminated quote is replaced by before the CSV read: one field, no quote
_QUOTE_MASK = "\x01"
#: a complete CSV line under Arrow's rules: fields separated by commas; a field is either quoted
#: (``"..."`` with ``""`` for a quote, then any unquoted rest) or unquoted (a quote inside it is literal)
#: (after the closing quote a further quote would be an escaped one, hence the look-ahead)
_FIELD = rb'(?:"(?:[^"]|"")*"(?!")[^,]*|[^",][^,]*|)'
_CLOSED_LINE = re.compile(_FIELD + rb"(?:," + _FIELD + rb")*")


def _has_quote(path: Path, compression: str | None) -> bool:
    """Whether the file holds a ``"`` anywhere (a memory map of a plain file; a compressed one is
    streamed in 16 MiB chunks; stops at the first)."""
    import mmap

    import pyarrow as pa

    if compression is None:
        with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
            return m.find(b'"') >= 0
    with pa.input_stream(str(path), compression=compression) as f:
        while True:
            chunk = f.read(1 << 24)
            if not chunk:
                return False
            if b'"' in chunk:
                return True


def _physical_lines(path: Path, compression: str | None, data: bytes | None = None) -> int:
    """Lines of the file (or of ``data``): newlines, plus one for a last line without one."""
    import pyarrow as pa

    if data is not None:
        return data.count(b"\n") + (0 if data.endswith(b"\n") else 1)
    n, last = 0, b""
    with pa.input_stream(str(path), compression=compression) as f:
        while True:
            chunk = f.read(1 << 24)
            if not chunk:
                break
            n += chunk.count(b"\n")
            last = chunk[-1:]
    return n + (0 if last == b"\n" else 1)


def _file_bytes(path: Path, compression: str | None) -> bytes:
    import pyarrow as pa

    with pa.input_stream(str(path), compression=compression) as f:
        return f.read()


def _mask_unbalanced_quotes(data: bytes) -> tuple[bytes, dict[int, str]]:
    """Count by physical line: every line whose quotes do not close on that line (it would swallow
    the lines after it into one value) is replaced by :data:`_QUOTE_MASK`, so the CSV reader sees it as
    a one-field row and resumes on the next line. Returns ``(bytes, {line number: original text})``;
    the header (line 1) is masked too but not reported (the column names are read separately)."""
    import numpy as np

    buf = np.frombuffer(data, dtype=np.uint8)
    nl = np.flatnonzero(buf == 10)
    starts = np.concatenate(([0], nl + 1))
    ends = np.concatenate((nl, [len(data)]))
    q = np.flatnonzero(buf == 34)
    if not len(q):
        return data, {}
    cand = np.unique(np.searchsorted(starts, q, side="right") - 1)  # lines holding a quote
    bad_lines: list[int] = []
    for i in cand.tolist():
        a, b = int(starts[i]), int(ends[i])
        line = data[a:b]
        if line.endswith(b"\r"):
            line = line[:-1]
        if not _CLOSED_LINE.fullmatch(line):
            bad_lines.append(i)
    if not bad_lines:
        return data, {}
    parts, texts, pos = [], {}, 0
    for i in bad_lines:
        a, b = int(starts[i]), int(ends[i])
        parts += [data[pos:a], _QUOTE_MASK.encode()]
        if i > 0:
            texts[i + 1] = data[a:b].decode("utf-8", errors="replace").rstrip("\r").lstrip("\ufeff")
        pos = b
    parts.append(data[pos:])
    return b"".join(parts), texts


def _utf8_repaired(path: Path, compression: str | None):
    """The file's bytes (decompressed) with invalid UTF-8 sequences replaced by U+FFFD, and how many
    bytes were replaced."""
    opener = gzip.open if compression == "gzip" else open
    with opener(path, "rb") as f:
        raw = f.read()
    text = raw.decode("utf-8", errors="replace")
    fixed = text.encode("utf-8")
    n_bad = text.count("\ufffd") - raw.count("\ufffd".encode("utf-8"))
    return fixed, n_bad


def _is_gzip(path: Path) -> bool:
    with open(path, "rb") as f:
        return f.read(2) == b"\x1f\x8b"
