"""Reading one AcmeTrace file: file checks and sniffing (compression, format, header, cluster name,
zone offset), the repair of unbalanced quotes and of non-UTF-8 bytes, the Arrow CSV/parquet read
with its fast and fallback paths (:func:`_read_one`), the per-column value problems and the original
text of quarantined rows (the byte-level repairs are in :mod:`acmemodel.trace.csvbytes`).
:func:`acmemodel.trace.readers.load_trace` calls it once per file and merges the files.
"""
from __future__ import annotations

import gzip
import zlib
import re
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from acmemodel.clusters import CLUSTER_TZ
from acmemodel.errors import TraceFormatError
from acmemodel.trace.csvbytes import (
    _CLOSED_LINE, _QUOTE_MASK, _file_bytes, _has_quote, _is_gzip, _mask_unbalanced_quotes, _physical_lines,
    _utf8_repaired,
)
from acmemodel.trace.arrow import _Background, _factorize_columns, _normalise_job_ids, _parse_columns, _raw_frame
from acmemodel.trace.schema import (
    KALOS_COLUMNS, KALOS_ONLY, NUMERIC_COLUMNS, REQUIRED_COLUMNS, SEREN_COLUMNS, TIME_COLUMNS, FileInfo, Reason,
)
from acmemodel.trace.validation import _build_jobs, _raw_rows, _rejected_frame


# ------------------------------------------------------------------------------------------ reading
def _cluster_name(name) -> str:
    """A ``cluster=`` name, trimmed; a known cluster in its canonical spelling (``seren`` → Seren)."""
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"cluster: expected a non-empty cluster name, got {name!r}")
    name = name.strip()
    for c in CLUSTER_TZ:
        if c.lower() == name.lower():
            return c
    return name


def _column_names(table, column: str) -> list[str]:
    """Distinct non-empty values of a string column of an Arrow table, in order of appearance."""
    import pyarrow.compute as pc

    vals = pc.unique(table.column(column).cast("string")).to_pylist()
    return [str(v).strip() for v in vals if v is not None and str(v).strip()]


def file_cluster_spec(path: Path):
    """The cluster description a trace file carries, or None: the Parquet schema's metadata
    (:data:`acmemodel.clusters.PARQUET_KEY`) or the sidecar ``<file>.cluster.yaml`` beside it.
    :class:`TraceFormatError` naming the file and field when it is unreadable."""
    from acmemodel.clusters import read_cluster_file, sidecar_path, spec_from_parquet_metadata

    try:
        if path.suffix.lower() == ".parquet" and path.is_file():
            import pyarrow as pa
            import pyarrow.parquet as pq

            try:
                meta = pq.read_schema(path).metadata
            except (pa.ArrowException, OSError):
                meta = None  # (_read_table names the unreadable file)
            spec = spec_from_parquet_metadata(meta, str(path))
            if spec is not None:
                return spec
        side = sidecar_path(path)
        if side.is_file():
            return read_cluster_file(side)
    except ValueError as e:
        raise TraceFormatError(str(e)) from None
    return None


def _cluster_from_name(path: Path) -> str | None:
    name = path.name.lower()
    for c in CLUSTER_TZ:
        if c.lower() in name:
            return c
    return None


def _open_text_head(path: Path, nbytes: int = 65536) -> str:
    """The first bytes of a (possibly gzipped) file as text, for header sniffing."""
    try:
        with open(path, "rb") as f:
            magic = f.read(2)
        if magic == b"\x1f\x8b":
            with gzip.open(path, "rb") as f:
                raw = f.read(nbytes)
        else:
            with open(path, "rb") as f:
                raw = f.read(nbytes)
    except (OSError, EOFError, gzip.BadGzipFile, zlib.error) as e:
        raise TraceFormatError(f"{path}: unreadable compressed file ({e or type(e).__name__})") from None
    return raw.decode("utf-8-sig", errors="replace")


def _read_table(path: Path, notes: list[str] | None = None):
    """Read a file into a pyarrow Table (typed if possible) + bad-field-count rows + fast flag.

    ``notes`` receives warnings (bytes that are not UTF-8, replaced by U+FFFD)."""
    import pyarrow as pa
    import pyarrow.csv as pcsv

    if not path.exists():
        raise TraceFormatError(f"{path}: no such file")
    if path.is_dir():
        raise TraceFormatError(f"{path}: is a directory, not a trace file")
    if path.stat().st_size == 0:
        raise TraceFormatError(f"{path}: empty file")
    if path.suffix.lower() == ".parquet":
        import pyarrow.parquet as pq  # (only here: its import alone costs tens of ms)

        try:
            table = pq.read_table(path)
        except (pa.ArrowException, OSError) as e:
            raise TraceFormatError(f"{path}: not a readable parquet file ({e})") from None
        for name, typ in zip(table.column_names, table.schema.types):
            if pa.types.is_nested(typ) or pa.types.is_dictionary(typ) and pa.types.is_nested(typ.value_type):
                raise TraceFormatError(f"{path}: column {name!r} has the nested type {typ}; a trace column "
                                       "holds strings, numbers or timestamps")
            if pa.types.is_dictionary(typ):
                table = table.set_column(table.column_names.index(name), name, table.column(name).cast(typ.value_type))
        return table.rename_columns(_canonical_names(table.column_names)), [], True

    with open(path, "rb") as f:
        magic = f.read(6)
    for sig, what in _OTHER_FORMATS:
        if magic.startswith(sig):
            raise TraceFormatError(f"{path}: {what}; give a .csv, .csv.gz or .parquet file")
    head = _open_text_head(path)
    if not head.strip():
        raise TraceFormatError(f"{path}: empty file")
    if "\x00" in head:
        raise TraceFormatError(f"{path}: not a text (CSV) file: it holds NUL bytes")
    # column names from our own read of the header line: surrounding blanks and quotes are dropped
    header = _canonical_names([h.strip().strip('"').strip() for h in head.splitlines()[0].split(",")])
    _check_columns(path, header)

    col_types = {}
    for c in header:
        if c in TIME_COLUMNS:
            col_types[c] = pa.timestamp("ns", tz="UTC")
        elif c in NUMERIC_COLUMNS:
            col_types[c] = pa.float64()
        else:  # (user/type/state are dictionary-encoded after the read: cheaper than in the reader)
            col_types[c] = pa.string()

    compression = "gzip" if _is_gzip(path) else None
    block_size = 1 << 20  # (pyarrow's default; raised when a row is longer than a block)
    repaired = None  # the file's bytes with invalid UTF-8 replaced or unterminated quotes masked (rare)
    unbalanced: dict[int, str] = {}  # line number -> text of the lines with an unterminated quote

    # Small files are read on the calling thread: with threads, Arrow's reader can release the Python
    # row handler on a worker thread after read_csv has returned, and when the process exits right
    # away (a header-only file's error) that thread takes the GIL during interpreter shutdown and the
    # process aborts ("terminate called without an active exception"). Threads gain nothing below a block.
    small = path.stat().st_size < block_size

    def read(types, threads=True):
        threads = threads and not small
        bad: list[tuple] = []

        def handler(row):
            bad.append((row.number, row.text, row.actual_columns, row.expected_columns))
            return "skip"

        if repaired is not None:
            src = pa.BufferReader(repaired)
        else:
            src = pa.input_stream(str(path), compression=compression)
        table = pcsv.read_csv(
            src,
            read_options=pcsv.ReadOptions(use_threads=threads, column_names=header, skip_rows=1,
                                          block_size=block_size),
            # (blank lines are read as rows of empty fields, so that row k is line k + 2; they are
            # dropped in _drop_blank_rows)
            parse_options=pcsv.ParseOptions(invalid_row_handler=handler, ignore_empty_lines=False),
            convert_options=pcsv.ConvertOptions(column_types=types, strings_can_be_null=False,
                                                null_values=[""], quoted_strings_can_be_null=False),
        )
        return table, bad

    fast = True
    try:
        for attempt in range(2):
            # a column with a value Arrow cannot convert is re-read as text (and parsed value by value
            # later), one column at a time: the other columns keep their typed fast path
            for _ in range(len(header) + 8):
                try:
                    table, bad = read(col_types)
                    break
                except pa.ArrowInvalid as e:
                    if "straddl" in str(e) and block_size < (1 << 31) // 4:  # a row longer than a block
                        block_size *= 8
                        continue
                    if "invalid UTF8" in str(e) and (repaired is None or unbalanced):
                        repaired, n_bad = _utf8_repaired(path, compression)
                        if unbalanced:
                            repaired, unbalanced = _mask_unbalanced_quotes(repaired)
                        if notes is not None:
                            notes.append(f"{path}: not valid UTF-8 text; {n_bad} undecodable byte(s) "
                                         "replaced by U+FFFD")
                        continue
                    m = re.search(r"In CSV column #(\d+): (?:Row #\d+: )?CSV conversion error", str(e))
                    if not m or int(m.group(1)) >= len(header) or col_types[header[int(m.group(1))]] == pa.string():
                        raise
                    fast = False
                    col_types[header[int(m.group(1))]] = pa.string()
            if bad and any(b[0] is None for b in bad):
                # line numbers are only known when reading single-threaded: re-read (rare path)
                table, bad = read(col_types, threads=False)
            # records swallowed by a quote that does not close on its line (the reader counted fewer
            # records than the file has lines): mask those lines and read once more (rare path)
            if (attempt or unbalanced or not _has_quote(path, compression)
                    or _physical_lines(path, compression, repaired) == 1 + table.num_rows + len(bad)):
                break
            masked, unbalanced = _mask_unbalanced_quotes(
                repaired if repaired is not None else _file_bytes(path, compression))
            if not unbalanced:
                break
            repaired = masked
    except (OSError, EOFError) as e:
        raise TraceFormatError(f"{path}: unreadable file or compression ({e})") from None
    except pa.ArrowInvalid as e:
        raise TraceFormatError(f"{path}: not a readable CSV file ({str(e).splitlines()[0]})") from None
    if unbalanced:  # the masked lines came back as one-field rows: quarantine them with their text
        bad = [(b[0], unbalanced[b[0]], b[2], b[3], Reason.UNBALANCED_QUOTE,
                "a quote opened on this line is not closed on it")
               if b[0] in unbalanced and b[1] == _QUOTE_MASK else b for b in bad]
    # a quote left open on the file's last line swallows nothing (the line counts agree), so the reader
    # reports a short row: name the cause as for any other line
    bad = [(b[0], b[1], b[2], b[3], Reason.UNBALANCED_QUOTE, "a quote opened on this line is not closed on it")
           if len(b) == 4 and isinstance(b[1], str) and '"' in b[1]
           and not _CLOSED_LINE.fullmatch(b[1].rstrip("\r\n").encode("utf-8", errors="replace")) else b
           for b in bad]
    return table, bad, fast


#: leading bytes of formats that are not read (with what to tell the user)
_OTHER_FORMATS = (
    (b"PAR1", "a parquet file without the .parquet suffix (rename it)"),
    (b"BZh", "bzip2-compressed, which is not supported"),
    (b"\xfd7zXZ", "xz-compressed, which is not supported"),
    (b"PK\x03\x04", "a zip archive, which is not supported (unzip it)"),
    (b"\x28\xb5\x2f\xfd", "zstd-compressed, which is not supported"),
)


def _canonical_names(header: Sequence[str]) -> list[str]:
    """Header names; a known column in another case (``Job_ID``) under its schema name."""
    known = {c.lower(): c for c in (*KALOS_COLUMNS, *SEREN_COLUMNS)}
    return [known.get(h.lower(), h) if isinstance(h, str) else h for h in header]


def _check_columns(path: Path, header: Sequence[str]) -> None:
    missing = [c for c in REQUIRED_COLUMNS if c not in header]
    if missing:
        hint = ""
        if len(header) == 1 and any(d in str(header[0]) for d in "\t;|"):
            hint = "; the file must be comma-separated"
        found = ", ".join(str(h) for h in header[:20]).encode("unicode_escape").decode("ascii")
        raise TraceFormatError(
            f"{path}: missing required column(s) {', '.join(missing)} (found: {found[:500]}){hint}")
    seen = set()
    for c in header:
        if c in seen:
            raise TraceFormatError(f"{path}: column {c!r} appears twice in the header")
        seen.add(c)


def _read_one(path: Path, cluster: str | None, imported=None):
    """One file → its accepted jobs, quarantine, info, extras, inconsistencies, warnings, zone, type
    counts and integer ids. ``imported``: an :class:`acmemodel.trace.importers.Imported` (a file of another
    format already converted to the AcmeTrace columns, with its own line numbers and zone)."""
    warn: list[str] = []
    if imported is None:
        try:
            table, bad, fast = _read_table(path, warn)
        except (EOFError, zlib.error) as e:  # damaged deflate data, a truncated gzip member
            raise TraceFormatError(f"{path}: damaged or truncated compressed data "
                                   f"({str(e) or type(e).__name__})") from None
    else:
        table, bad, fast = imported.table, [], True
    header = table.column_names
    _check_columns(path, header)
    schema = "kalos" if any(c in header for c in KALOS_ONLY) else "seren"
    if imported is not None:
        schema = imported.format
        if cluster is None:
            cluster = imported.cluster
    if cluster is None and "cluster" in header:  # (files written by convert name their cluster)
        names = _column_names(table, "cluster")
        if len(names) == 1:
            cluster = _cluster_name(names[0])
        elif len(names) > 1:
            raise TraceFormatError(f"{path}: column 'cluster' holds {len(names)} names "
                                   f"({', '.join(map(repr, names[:5]))}); pass cluster= or split the file")
    if cluster is None:
        cluster = _cluster_from_name(path)
        if cluster is None:  # (never an Acme cluster by default: the file is named after itself)
            cluster = _cluster_name(path.name.split(".")[0] or path.name)
            warn.append(f"{path}: cluster not given, not in the file and no sidecar; named {cluster!r} "
                        "after the file (pass cluster= to set it)")
    known = set(KALOS_COLUMNS) | set(SEREN_COLUMNS) | {"cluster"}
    extra_cols = [c for c in header if c not in known]
    optional = [c for c in (KALOS_COLUMNS if schema == "kalos" else SEREN_COLUMNS)
                if c not in header and c not in REQUIRED_COLUMNS]
    if imported is not None:
        optional = []
    if optional:
        warn.append(f"{path}: optional column(s) {', '.join(optional)} absent"
                    + ("; the cross-check of the file's own values is skipped for them"
                       if {"duration", "queue", "gpu_time"} & set(optional) else ""))
    if imported is None and cluster not in CLUSTER_TZ:  # (a layout, not a cluster: no Acme name for others')
        schema = "acmetrace"
    info = FileInfo(path=str(path), cluster=cluster, schema=schema, extra_columns=extra_cols,
                    missing_optional=optional, fast_path=fast)
    n = table.num_rows
    if path.suffix.lower() != ".parquet" and imported is None:
        info._records = 1 + n + len(bad)
    # line numbers of the rows: data row k is line k + 2, shifted past skipped bad rows
    bad_lines = np.array(sorted(b[0] for b in bad), dtype=np.int64)
    lines = (np.arange(2, n + 2, dtype=np.int64) if imported is None
             else np.asarray(imported.lines, dtype=np.int64))
    if len(bad_lines):
        # the k-th good row sits at the smallest line L with L - 2 - (#bad lines < L) == k
        offs = bad_lines - 2 - np.arange(len(bad_lines))  # good rows before each bad line
        lines = lines + np.searchsorted(offs, np.arange(n), side="right")
    # blank (or blank-only) lines: skipped, not quarantined, after they served the line numbering
    n_space = len(bad)
    bad = [b for b in bad if b[1].strip()]
    n_space -= len(bad)  # (lines of blanks only)
    table, lines, n_blank = _drop_blank_rows(table, lines)
    n_blank += n_space
    n = table.num_rows
    if n_blank:
        warn.append(f"{path}: {n_blank} blank line(s) (or lines of empty fields) between the rows skipped")
    if table.num_rows == 0 and not bad and (imported is None or not len(imported.rejected)):
        raise TraceFormatError(f"{path}: header has no data rows")
    # user/type/state are dictionary-encoded (and normalised on their dictionaries) in a background
    # thread: Arrow releases the GIL, so this runs beside the numeric work of the main thread.
    factors = _Background(_factorize_columns, table)
    table, int_ids = _normalise_job_ids(table)
    tz = (imported.timezone if imported is not None
          else CLUSTER_TZ.get(cluster) or _sniff_offset(path) or "+00:00")

    # The columns are taken from the Arrow table one by one (no whole-table pandas conversion); the
    # table stays around so that the few quarantined rows can be shown as read (see _raw_frame).
    p = _parse_columns(table, tz, path, warn)
    p["job_id_int"] = int_ids
    jobs, rej_mask, reasons, details, inc, type_counts, int_ids = _build_jobs(
        p, factors, cluster, str(path), lines, table)
    problems = _value_problems(p, rej_mask, jobs)
    if problems:
        warn.append(f"{path}: optional values not usable (kept as missing, the rows are accepted): "
                    + "; ".join(f"{c}: " + ", ".join(f"{v} {k}" for k, v in d.items())
                                for c, d in problems.items()))

    # bad rows: wrong field count, or (5-tuples with a reason) a line with an unterminated quote
    rej = [_rejected_frame(np.full(len(bad), str(path), dtype=object),
                           np.array([b[0] for b in bad], dtype=np.int64), Reason.FIELD_COUNT,
                           [b[5] if len(b) > 4 else f"{b[2]} fields, expected {b[3]}" for b in bad],
                           [b[1] for b in bad])]
    if any(len(b) > 4 for b in bad):
        rej[0]["reason"] = [b[4].value if len(b) > 4 else Reason.FIELD_COUNT.value for b in bad]
    keep = ~rej_mask
    if rej_mask.any():
        idx = np.flatnonzero(rej_mask)
        rej.append(pd.DataFrame({
            "file": str(path), "line": lines[idx], "reason": reasons, "detail": details,
            "raw": _raw_rows(_raw_frame(table, idx), header),
        }))
    if imported is not None and len(imported.rejected):
        rej.append(imported.rejected)
        n += len(imported.rejected)
    rejected = pd.concat(rej, ignore_index=True).sort_values("line", kind="stable").reset_index(drop=True)
    if extra_cols:
        extra = _raw_frame(table.select(extra_cols), None, decode=False)
        extra = (extra.loc[keep] if not keep.all() else extra).reset_index(drop=True)
    else:
        extra = pd.DataFrame(index=jobs.index)
    del table
    info.rows = n + len(bad)
    info.value_problems = problems
    info.accepted = len(jobs)
    info.rejected = len(rejected)
    if info.accepted == 0:
        warn.append(f"{path}: no row was accepted ({info.rejected} rejected)")
    never = ~jobs["started"].to_numpy()
    if never.any():  # kept as never started (no run time, wait censored at the end), but unexpected
        odd = jobs["state"].to_numpy()[never]
        odd = odd[(odd != "CANCELLED") & (odd != "PENDING")]
        if len(odd):
            warn.append(f"{path}: {len(odd)} row(s) with state {', '.join(sorted(set(odd)))} but no start_time; "
                        "kept as never started (no run time, wait censored at end_time)")
    if isinstance(int_ids, _Background):
        int_ids = int_ids.result()
    return jobs, rejected, info, extra, inc, warn, tz, type_counts, int_ids


#: optional numeric columns whose unparsable values are counted (the row is kept, the value missing)
_OPTIONAL_NUMERIC = ("cpu_num", "duration", "queue", "gpu_time", "mem_per_pod_GB", "shared_mem_per_pod")


def _value_problems(p: dict, rej_mask: np.ndarray, jobs: pd.DataFrame) -> dict[str, dict[str, int]]:
    """Per optional column, the accepted rows whose value is unusable: ``not a number`` (present but
    unparsable), for ``cpu_num``/``mem_per_pod_GB``/``shared_mem_per_pod`` ``negative or infinite``
    (set to NaN in ``jobs``), for ``fail_time`` ``before start_time`` or ``not a timestamp`` (set to NaN).
    Timestamps are sound, so the rows stay accepted."""
    out: dict[str, dict[str, int]] = {}
    keep = ~rej_mask
    for c in _OPTIONAL_NUMERIC:
        if c in p and p[c][1] is not None:
            n = int(np.count_nonzero(p[c][1] & keep))
            if n:
                out.setdefault(c, {})["not a number"] = n
    for c in ("cpu_num", "mem_per_pod_GB", "shared_mem_per_pod"):
        if c in jobs.columns:
            v = jobs[c].to_numpy(dtype=float)
            bad = (v < 0) | np.isinf(v)
            if bad.any():
                out.setdefault(c, {})["negative or infinite"] = int(bad.sum())
                jobs[c] = np.where(bad, np.nan, v)
    if "fail_time" in p:
        f = p["fail_time"].fail
        if f is not None and (f & keep).any():  # (the row is quarantined only for the required times)
            out.setdefault("fail_time", {})["not a timestamp"] = int(np.count_nonzero(f & keep))
        if "fail_time_s" in jobs.columns:
            v = jobs["fail_time_s"].to_numpy(dtype=float)
            bad = v < 0
            if bad.any():
                out.setdefault("fail_time", {})["before start_time"] = int(bad.sum())
                jobs["fail_time_s"] = np.where(bad, np.nan, v)
    return out


def _original_text(rejected: pd.DataFrame, infos: Sequence[FileInfo]) -> pd.DataFrame:
    """``raw`` of the quarantined CSV rows replaced by their lines as written in the file (one pass
    over each file with such rows, only when there are some). Kept as parsed when the file's
    physical lines are not its records (a quoted value holding a newline)."""
    raw = rejected["raw"].to_numpy(dtype=object).copy()
    changed = False
    for info in infos:
        if not info._records:
            continue
        rows = np.flatnonzero((rejected["file"] == info.path).to_numpy())
        if not len(rows):
            continue
        want = {int(ln): [] for ln in rejected["line"].to_numpy()[rows]}
        for i, ln in zip(rows, rejected["line"].to_numpy()[rows]):
            want[int(ln)].append(i)
        found: dict[int, str] = {}
        path = Path(info.path)
        try:
            opener = gzip.open if _is_gzip(path) else open
            n_lines = 0
            with opener(path, "rb") as f:
                for n_lines, line in enumerate(f, start=1):
                    if n_lines in want:
                        found[n_lines] = line.decode("utf-8", errors="replace").rstrip("\r\n").lstrip("\ufeff")
        except (OSError, EOFError):
            continue
        if n_lines != info._records:  # records spanning lines: the numbers are not physical lines
            continue
        for ln, idx in want.items():
            if ln in found:
                raw[idx] = found[ln]
                changed = True
    return rejected.assign(raw=raw) if changed else rejected


def _drop_blank_rows(table, lines: np.ndarray):
    """The table and line numbers without the rows whose every field is empty (blank lines, read as
    such rows), and how many of them were not trailing. Cheap when ``job_id`` is never empty (the usual case)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if "job_id" not in table.column_names or table.num_rows == 0:
        return table, lines, 0
    jid = table.column("job_id")
    if not (pa.types.is_string(jid.type) or pa.types.is_large_string(jid.type)):
        return table, lines, 0  # (typed by a parquet writer: no blank lines)
    if not jid.null_count and pc.min(pc.utf8_length(jid)).as_py() != 0:
        return table, lines, 0
    cand = np.flatnonzero(np.asarray(pc.fill_null(pc.equal(jid, ""), True).to_numpy(zero_copy_only=False)))
    rows = table.take(pa.array(cand, type=pa.int64()))
    blank = np.ones(len(cand), dtype=bool)
    for col in rows.columns:
        empty = col.is_null()
        if pa.types.is_string(col.type) or pa.types.is_large_string(col.type):
            empty = pc.or_(empty, pc.fill_null(pc.equal(pc.utf8_trim_whitespace(col), ""), True))
        blank &= np.asarray(empty.to_numpy(zero_copy_only=False), dtype=bool)
    if not blank.any():
        return table, lines, 0
    keep = np.ones(table.num_rows, dtype=bool)
    keep[cand[blank]] = False
    n_trailing = table.num_rows - (int(np.flatnonzero(keep)[-1]) + 1 if keep.any() else 0)
    return table.filter(pa.array(keep)), lines[keep], int(blank.sum()) - n_trailing


_OFFSET_RE = re.compile(r"\d{2}:\d{2}:\d{2}(?:\.\d+)?([+-]\d{2}:?\d{2}|Z)")


def _sniff_offset(path: Path) -> str | None:
    if path.suffix.lower() == ".parquet":
        return None
    m = _OFFSET_RE.search(_open_text_head(path, 8192))
    if not m:
        return None
    off = m.group(1)
    return "+00:00" if off == "Z" else (off if ":" in off else off[:3] + ":" + off[3:])
