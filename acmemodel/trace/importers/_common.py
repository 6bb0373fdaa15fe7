"""What every importer shares: the result record, job-type rules, quarantine and column helpers.

An importer turns one file of its format into an :class:`Imported`: a pyarrow Table in the AcmeTrace
columns (``job_id, user, type, state, gpu_num, node_num, cpu_num, mem_per_pod_GB, submit_time,
start_time, end_time`` — times ``timestamp[ns, UTC]``, null when unknown), extra columns the format
carries (``partition``, ``qos``, ``job_name``, ``vc``, ``restart_of``...), the file line of every row,
the rows it could not use (quarantined with a reason, like ``load_trace``) and a report of what it
mapped how. ``load_trace(paths, format=...)`` then validates the table exactly like an AcmeTrace
file, so the counts always add up: records in = accepted + rejected.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
import pandas as pd

from acmemodel.clusters import utc_offset_seconds
from acmemodel.errors import TraceFormatError

#: the job types of AcmeTrace (a source category equal to one of them, any case, maps onto it)
TYPES: tuple[str, ...] = ("Eval", "Pretrain", "SFT", "MLLM", "Debug", "Other")
#: fields a ``--type-map`` rule may test
RULE_FIELDS: tuple[str, ...] = ("partition", "qos", "name", "vc")
#: column of the imported table behind each rule field
_RULE_COLUMN = {"partition": "partition", "qos": "qos", "name": "job_name", "vc": "vc"}
TRACE_COLUMNS: tuple[str, ...] = ("job_id", "user", "type", "state", "gpu_num", "node_num", "cpu_num",
                                  "mem_per_pod_GB", "submit_time", "start_time", "end_time")
#: columns of :attr:`Imported.rejected`
REJECT_COLUMNS: tuple[str, ...] = ("file", "line", "reason", "detail", "raw")


@dataclass
class Imported:
    """One file read by an importer (see the module docstring).

    ``report`` keys: ``format``, ``file``, ``records_in`` (data records of the file), ``accepted_rows``
    (rows handed to the trace layer), ``rejected`` (quarantined here, by reason), ``folded``
    (records merged into another row, e.g. sacct steps into their job), ``mapping`` (AcmeTrace
    column ← source field/rule, human-readable), ``types`` (type → how many rows, and by which rule),
    ``states`` (source state → AcmeTrace state, counts). records_in = accepted_rows + folded +
    rejected rows, always (minus rows added by expansion: sacct ``expanded_array_tasks``, Philly
    ``attempt_rows_added``). Importers that see them also report ``left_truncated`` (accepted rows
    that existed before the trace began, extra column ``entry_time``), ``right_censored`` and
    ``unknown_waits`` (extra column ``queue_unknown``); ``acmemodel convert`` adds up the accounting
    of the loaded trace (``accounting``: records in = accepted + left-truncated + folded +
    quarantined − expanded).
    """

    format: str
    path: str
    table: object  # pyarrow.Table
    lines: np.ndarray
    rejected: pd.DataFrame
    cluster: str
    timezone: str
    report: dict = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


def empty_rejected() -> pd.DataFrame:
    return pd.DataFrame({c: pd.Series(dtype="int64" if c == "line" else object) for c in REJECT_COLUMNS})


class Quarantine:
    """Collects quarantined records: ``add(lines, reason, details, raws)``; ``frame()``."""

    def __init__(self, path: str):
        self.path = str(path)
        self._parts: list[pd.DataFrame] = []

    def add(self, lines, reason: str, details, raws) -> None:
        lines = np.asarray(lines, dtype=np.int64)
        if not len(lines):
            return
        details = [details] * len(lines) if isinstance(details, str) else list(details)
        self._parts.append(pd.DataFrame({"file": self.path, "line": lines, "reason": reason,
                                         "detail": details, "raw": list(raws)}))

    def frame(self) -> pd.DataFrame:
        if not self._parts:
            return empty_rejected()
        return pd.concat(self._parts, ignore_index=True).sort_values("line", kind="stable").reset_index(drop=True)

    def counts(self) -> dict[str, int]:
        f = self.frame()
        return {str(k): int(v) for k, v in f["reason"].value_counts().sort_index().items()} if len(f) else {}


# ------------------------------------------------------------------------------------- type rules
@dataclass(frozen=True)
class Rule:
    """``field:regex=Type`` — a job whose ``field`` (partition, qos, name, vc; any of them when
    omitted) matches ``regex`` (Python ``re.search``, case-insensitive) gets type ``Type``."""

    field: str | None
    pattern: str
    type: str

    def text(self) -> str:
        return f"{self.field + ':' if self.field else ''}{self.pattern}={self.type}"


class TypeMap:
    """Ordered job-type rules; the first matching rule wins.

    ``TypeMap.parse(["name:^eval=Eval", "partition:debug=Debug"])`` (or one comma-separated string).
    A job no rule matches keeps the source's own category (:func:`apply` ``default``), which the trace
    layer reports as an unrecognised type unless it is one of :data:`TYPES`.
    """

    def __init__(self, rules: Sequence[Rule] = ()):
        self.rules = list(rules)

    @classmethod
    def parse(cls, specs) -> "TypeMap":
        if specs is None:
            return cls()
        if isinstance(specs, TypeMap):
            return specs
        if isinstance(specs, str):
            specs = [specs]
        rules = []
        for spec in specs:
            for part in _split_rules(str(spec)):
                if "=" not in part:
                    raise ValueError(f"type-map rule {part!r}: expected [FIELD:]REGEX=TYPE")
                lhs, typ = part.rsplit("=", 1)
                typ = typ.strip()
                fld = None
                m = re.match(r"^\s*([A-Za-z]+):(.*)$", lhs)
                if m and m.group(1).lower() in RULE_FIELDS:
                    fld, lhs = m.group(1).lower(), m.group(2)
                if not typ:
                    raise ValueError(f"type-map rule {part!r}: empty type")
                canon = {t.lower(): t for t in TYPES}
                typ = canon.get(typ.lower(), typ)
                try:
                    re.compile(lhs)
                except re.error as e:
                    raise ValueError(f"type-map rule {part!r}: bad regex ({e})") from None
                rules.append(Rule(fld, lhs, typ))
        return cls(rules)

    def apply(self, fields: dict[str, np.ndarray], default: np.ndarray, default_label: str):
        """Types for rows with source ``fields`` (rule field → object array, None = not in the format).

        Returns (types, by-rule counts {rule text or "source <label>": rows})."""
        n = len(default)
        out = np.empty(n, dtype=object)
        done = np.zeros(n, dtype=bool)
        counts: dict[str, int] = {}
        for rule in self.rules:
            flds = [rule.field] if rule.field else list(RULE_FIELDS)
            hit = np.zeros(n, dtype=bool)
            for f in flds:
                vals = fields.get(f)
                if vals is None:
                    continue
                s = pd.Series(vals, dtype=object).fillna("").astype(str)
                hit |= s.str.contains(rule.pattern, case=False, regex=True).to_numpy(dtype=bool)
            hit &= ~done
            if hit.any():
                out[hit] = rule.type
                done |= hit
                counts[rule.text()] = int(hit.sum())
        rest = ~done
        if rest.any():
            canon = {t.lower(): t for t in TYPES}
            d = pd.Series(default[rest], dtype=object).fillna("").astype(str).str.strip()
            d = d.map(lambda v: canon.get(v.lower(), v if v else "Other"))
            out[rest] = d.to_numpy(dtype=object)
            counts[f"source {default_label}"] = int(rest.sum())
        return out, counts


    def apply_arrow(self, fields: dict, default, default_label: str):
        """:meth:`apply` on Arrow string arrays (vectorised regexes; the source categories are
        canonicalised on their distinct values). Returns (Arrow types, by-rule counts)."""
        import pyarrow as pa
        import pyarrow.compute as pc

        n = len(default)
        done = pa.array(np.zeros(n, dtype=bool))
        hits = []
        counts: dict[str, int] = {}
        for rule in self.rules:
            flds = [rule.field] if rule.field else list(RULE_FIELDS)
            hit = None
            for f in flds:
                vals = fields.get(f)
                if vals is None:
                    continue
                m = pc.fill_null(pc.match_substring_regex(vals, rule.pattern, ignore_case=True), False)
                hit = m if hit is None else pc.or_(hit, m)
            if hit is None:
                continue
            hit = pc.and_(hit, pc.invert(done))
            k = int(pc.sum(hit).as_py() or 0)
            if k:
                hits.append((hit, rule.type))
                done = pc.or_(done, hit)
                counts[rule.text()] = k
        enc = pc.dictionary_encode(pc.fill_null(pc.utf8_trim_whitespace(default), ""))
        if isinstance(enc, pa.ChunkedArray):
            enc = enc.combine_chunks()
        canon = {t.lower(): t for t in TYPES}
        cats = [canon.get(v.lower(), v if v else "Other") for v in enc.dictionary.to_pylist()]
        out = pc.take(pa.array(cats, type=pa.string()), enc.indices)
        for hit, typ in reversed(hits):  # (disjoint masks: order only matters for readability)
            out = pc.if_else(hit, typ, out)
        rest = n - int(pc.sum(done).as_py() or 0)
        if rest:
            counts[f"source {default_label}"] = rest
        return out, counts


def _split_rules(spec: str) -> list[str]:
    """``a=X,b=Y`` → rules, splitting on commas that follow ``=TYPE`` (a regex may hold commas)."""
    out, cur = [], ""
    for piece in spec.split(","):
        cur = f"{cur},{piece}" if cur else piece
        if re.search(r"=\s*[A-Za-z0-9_]+\s*$", cur):
            out.append(cur.strip())
            cur = ""
    if cur.strip():
        out.append(cur.strip())
    return [p for p in out if p]


# ------------------------------------------------------------------------------------- helpers
def timezone_offset(tz: str | None) -> str:
    """A UTC offset string ``+HH:MM`` (validated)."""
    if tz is None:
        return "+00:00"
    if isinstance(tz, str) and "/" in tz:  # (a zone name would stand for its standard offset: say so)
        raise ValueError(f"timezone: expected a UTC offset such as +08:00, got the zone name {tz!r} "
                         "(naive local times are read with one fixed offset)")
    try:
        sec = utc_offset_seconds(tz if isinstance(tz, (int, float)) else str(tz))
    except (ValueError, KeyError, TypeError):
        raise ValueError(f"timezone: expected a UTC offset such as +08:00, got {tz!r}") from None
    sign = "-" if sec < 0 else "+"
    sec = abs(int(sec))
    return f"{sign}{sec // 3600:02d}:{sec % 3600 // 60:02d}"


def cluster_from_path(path) -> str:
    from pathlib import Path

    p = Path(path)
    name = p.name
    for suf in (".gz", ".csv", ".json", ".swf", ".txt", ".psv", ".log", ".sacct"):
        if name.lower().endswith(suf):
            name = name[: -len(suf)]
    return name or p.name


def seconds_to_arrow_ts(sec: np.ndarray):
    """float Unix seconds (NaN = unknown) → Arrow ``timestamp[ns, UTC]`` with nulls."""
    import pyarrow as pa

    sec = np.asarray(sec, dtype=float)
    na = ~np.isfinite(sec)
    with np.errstate(invalid="ignore"):  # (years past 2262: quarantined as timestamp_out_of_range later)
        ns = np.where(na, 0, np.round(sec * 1e9)).astype(np.int64)
    return pa.array(ns, type=pa.timestamp("ns", tz="UTC"), mask=na)


def make_table(cols: dict):
    """A pyarrow Table from AcmeTrace columns + extras (numpy/pandas/arrow values; times in float Unix
    seconds are converted; strings kept as strings)."""
    import pyarrow as pa

    arrays, names = [], []
    for name, v in cols.items():
        if v is None:
            continue
        if name in ("submit_time", "start_time", "end_time") and not isinstance(v, (pa.Array, pa.ChunkedArray)):
            v = seconds_to_arrow_ts(v)
        elif name in ("gpu_num", "node_num", "cpu_num", "mem_per_pod_GB") and not isinstance(
                v, (pa.Array, pa.ChunkedArray)):
            a = np.asarray(v, dtype=float)
            v = pa.array(a, type=pa.float64(), from_pandas=True)
        elif not isinstance(v, (pa.Array, pa.ChunkedArray)):
            v = pa.array(pd.Series(v, dtype=object).where(pd.notna(pd.Series(v, dtype=object)), None)
                         .map(lambda x: x if x is None else str(x)).to_numpy(dtype=object), type=pa.string())
        arrays.append(v)
        names.append(name)
    return pa.table(arrays, names=names)


def iso_utc(sec: float) -> str | None:
    """Unix seconds → ``YYYY-MM-DD HH:MM:SS+00:00`` (None when not finite)."""
    if sec is None or not np.isfinite(sec):
        return None
    return pd.Timestamp(int(round(float(sec) * 1e9)), unit="ns", tz="UTC").strftime("%Y-%m-%d %H:%M:%S+00:00")


def entry_time_strings(sec: np.ndarray) -> np.ndarray:
    """The extra column ``entry_time`` of left-truncated rows (:mod:`acmemodel.trace`): the UTC time at
    which the row entered observation (the trace start), ``None`` for rows observed from their
    creation."""
    sec = np.asarray(sec, dtype=float)
    out = np.full(len(sec), None, dtype=object)
    for v in np.unique(sec[np.isfinite(sec)]):
        out[sec == v] = iso_utc(v)
    return out


def queue_unknown_strings(mask: np.ndarray) -> np.ndarray:
    """The extra column ``queue_unknown`` (``"1"`` where the source does not record the wait)."""
    return np.where(np.asarray(mask, dtype=bool), "1", None).astype(object)


def require_columns(path, header: Sequence[str], need: Sequence[str], what: str) -> None:
    missing = [c for c in need if c not in header]
    if missing:
        found = ", ".join(header[:25])
        raise TraceFormatError(f"{path}: not a {what} file: missing column(s) {', '.join(missing)} "
                               f"(found: {found[:400]})")


def numeric(values, *, allow_negative_one_as_missing: bool = False):
    """float array of values (text or numbers) and the mask of values present but not numbers."""
    s = pd.Series(values, dtype=object)
    txt = s.astype("string").str.strip()
    v = pd.to_numeric(txt, errors="coerce").to_numpy(dtype=float)
    present = (txt.notna() & (txt != "")).to_numpy(dtype=bool)
    bad = present & np.isnan(v)
    if allow_negative_one_as_missing:
        v = np.where(v == -1, np.nan, v)
    return v, bad


def parse_local_times(values, offset: str, *, missing=("", "unknown", "none", "null", "nan", "nat")):
    """Timestamp strings (ISO-like, ``YYYY-MM-DD[T ]HH:MM:SS``, an explicit offset honoured) → Unix
    seconds (NaN when missing) and the mask of values present but unparsable. Naive values are local
    time ``offset``."""
    s = pd.Series(values, dtype=object).astype("string").str.strip()
    low = s.str.lower()
    miss = (s.isna() | low.isin(list(missing))).to_numpy(dtype=bool)
    out = np.full(len(s), np.nan)
    bad = np.zeros(len(s), dtype=bool)
    idx = np.flatnonzero(~miss)
    if len(idx):
        vals = s.iloc[idx]
        # a date first: pandas would read "now" / "today" as the current time
        dated = vals.str.match(r"\d{4}-\d{1,2}-\d{1,2}").fillna(False).to_numpy(dtype=bool)
        vals = vals.where(dated, "not a date")
        has_off = vals.str.contains(r"(?:[+-]\d{2}:?\d{2}|Z)$", regex=True).fillna(False).to_numpy(dtype=bool)
        sec = np.full(len(idx), np.nan)
        if has_off.any():
            t = pd.to_datetime(vals[has_off], utc=True, errors="coerce", format="ISO8601")
            sec[has_off] = np.where(t.isna(), np.nan, t.astype("int64") / 1e9)
        if (~has_off).any():
            t = pd.to_datetime(vals[~has_off], errors="coerce", format="ISO8601")
            loc = np.where(t.isna(), np.nan, t.astype("int64") / 1e9)
            sec[~has_off] = loc - utc_offset_seconds(offset)
        out[idx] = sec
        bad[idx] = np.isnan(sec)
    return out, bad


def time_seconds(value, what: str) -> float:
    """A timestamp (ISO, UTC unless it has an offset), ``pd.Timestamp`` or Unix seconds (a number or its
    string) → Unix seconds; ``ValueError`` naming ``what`` otherwise."""
    if isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool):
        v = float(value)
    else:
        try:
            v = float(str(value).strip())
        except ValueError:
            try:
                ts = pd.Timestamp(value)
            except (ValueError, TypeError):
                raise ValueError(f"{what}: not a timestamp or Unix seconds: {value!r}") from None
            if ts is pd.NaT:
                raise ValueError(f"{what}: not a timestamp: {value!r}")
            ts = ts.tz_localize("UTC") if ts.tzinfo is None else ts.tz_convert("UTC")
            v = ts.value / 1e9
    if not np.isfinite(v):
        raise ValueError(f"{what}: not a finite time: {value!r}")
    return v
