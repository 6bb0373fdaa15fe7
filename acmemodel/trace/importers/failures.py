"""Node failure / interrupt logs → per-node uptime intervals (``acmemodel convert --from failures``).

Many sites keep a log of node failures (or interrupts) rather than job-failure labels. This importer
reads such a log and cuts every node's observation window into **uptime intervals**, the input of
:class:`acmemodel.models.fleet_reliability.FleetReliability`.

Generic layout
--------------
A CSV file (``.csv``, ``.csv.gz``, ``.csv.xz``, ``.csv.bz2``; header names matched case- and
blank-insensitively), one row per failure:

================  ==========================================================================
column            meaning
================  ==========================================================================
``node``          node identifier (required)
``failure_start`` when the node failed / was interrupted (required; ISO 8601 or ``m/d/Y H:M``)
``repair_end``    when it was back in service; or ``down_time_s`` (seconds) /
                  ``down_time_min`` (minutes). One of the three is required.
``system``        system (cluster) the node belongs to (optional; default: the file's name)
``category``      failure category, e.g. Hardware, Software, Network (optional)
``nodes``         nodes in the system (optional): nodes never seen failing are observed too
``in_service``    when the node entered service (optional; default: the system's first record)
``decommission``  when the node left service (optional; default: the end of the log)
``gpus_per_node`` GPUs per node (optional; carried to the reliability preset)
================  ==========================================================================

Naive timestamps are read as UTC (only differences of times are used).

LANL alias set
--------------
The Los Alamos release LA-UR-05-7318 (``System, nodes, nodenumz, node prod, node decom,
Prob Started, Prob Fixed, Down Time`` and one column per blame category ``Facilities, Hardware,
Human Error, Network, Undetermined, Software``) is read unmodified: ``nodenumz`` is the node,
``Prob Started``/``Prob Fixed`` the failure start and repair end, ``Down Time`` (minutes) the
repair time when ``Prob Fixed`` is empty, the category is the name of the blame column that is
filled (``unrecorded`` when none is), ``node prod``/``node decom`` (month granularity, e.g.
``Jan-97``; Excel wrote 2000s months as ``5-Jun`` = June 2005) are the in-service and decommission
months (``before tracking`` / ``current`` = unknown). In-service dates are the first of their month,
decommission dates the first of the following month.

Intervals
---------
Per node, the observation window is [``in_service`` (else the system's earliest in-service date or
record; never after the node's first failure), ``decommission`` (else the end of the log: the latest time in the file or
``extracted_at``; never before the node's last repair)]. Its failures, sorted, cut it into rows of
``kind``:

* ``tbf`` — from a repair end to the next failure start of the same node (``event`` = 1): an
  uptime whose origin is a renewal (the node was just repaired);
* ``first`` — from the window start to the node's first failure (``event`` = 1). Its origin is
  **not** a repair: the node may have been up long before the log (or its in-service month) began,
  so this interval is left-truncated with an unknown age. It counts as exposure (node-days) but is
  **not** used for the time-between-failures law;
* ``censored`` — from the node's last repair end to the window end (``event`` = 0): right-censored
  at decommission or at the end of the log;
* ``no_failure`` — a node of the system (``nodes`` column) never seen failing: its whole window,
  ``event`` = 0, exposure only (its node id is ``unobserved-K``).

Each failure row carries its ``category`` and ``repair_s`` (down time). Exposure (calendar node-time)
of a node = the sum of its rows' ``duration_s`` and ``repair_s``.

Records in = failures accepted + folded + quarantined, always. **Folded**: a failure that starts
before (or the same minute as) the previous repair end of the same node — a failure during the
repair, or the same incident logged twice — is merged into that down period (its end extends it).
**Quarantined** (with a reason): ``missing_node``, ``unparsable_failure_start``,
``missing_repair_time`` (neither repair end nor down time), ``repair_before_start``,
``after_log_end`` (a failure that starts after ``extracted_at``).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from acmemodel.errors import TraceFormatError

#: columns of the intervals table
INTERVAL_COLUMNS: tuple[str, ...] = ("system", "node", "kind", "entry_s", "exit_s", "duration_s", "event",
                                     "category", "repair_s", "nodes_in_system", "gpus_per_node")
KINDS: tuple[str, ...] = ("tbf", "first", "censored", "no_failure")
#: the LANL blame-category columns (LA-UR-05-7318)
LANL_CATEGORIES: tuple[str, ...] = ("Facilities", "Hardware", "Human Error", "Network", "Undetermined",
                                    "Software")
UNRECORDED = "unrecorded"

#: generic field → accepted header names (normalised: lower case, blanks/dashes → "_")
ALIASES: dict[str, tuple[str, ...]] = {
    "system": ("system", "cluster", "machine"),
    "node": ("node", "node_id", "nodename", "node_name", "host", "hostname", "nodenumz"),
    "failure_start": ("failure_start", "start", "failed_at", "failure_time", "prob_started", "problem_started",
                      "down_start"),
    "repair_end": ("repair_end", "repaired_at", "end", "up_time", "prob_fixed", "problem_fixed", "down_end"),
    "down_time_s": ("down_time_s", "downtime_s", "repair_s", "repair_time_s"),
    "down_time_min": ("down_time_min", "downtime_min", "down_time"),
    "category": ("category", "cause", "root_cause", "blame", "failure_category", "type"),
    "nodes": ("nodes", "nodes_in_system", "num_nodes", "node_count"),
    "in_service": ("in_service", "production", "node_prod", "start_of_service"),
    "decommission": ("decommission", "decommissioned", "node_decom", "end_of_service"),
    "gpus_per_node": ("gpus_per_node",),
}


@dataclass
class FailureLog:
    """A failure log read into uptime intervals (see the module docstring).

    ``intervals``: DataFrame of :data:`INTERVAL_COLUMNS` (times in s since the epoch, UTC);
    ``rejected``: quarantined records (file, line, reason, detail); ``report``: counts and mapping —
    ``records_in == failures + folded + quarantined``.
    """

    intervals: pd.DataFrame
    rejected: pd.DataFrame
    report: dict = field(default_factory=dict)


def _norm(name: str) -> str:
    return re.sub(r"[\s\-]+", "_", str(name).strip().lstrip("\ufeff").lower())


def _read_frame(path: Path) -> pd.DataFrame:
    if not path.exists():
        raise TraceFormatError(f"{path}: no such file")
    if path.is_dir() or path.stat().st_size == 0:
        raise TraceFormatError(f"{path}: empty file or a directory")
    try:
        df = pd.read_csv(path, dtype=str, keep_default_na=False, encoding_errors="replace")
    except (pd.errors.ParserError, UnicodeDecodeError, pd.errors.EmptyDataError, EOFError, OSError) as e:
        first = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise TraceFormatError(f"{path}: not a readable CSV file ({first})") from None
    df.columns = [str(c).strip().lstrip("\ufeff") for c in df.columns]
    return df


def _mapping(path: Path, columns) -> tuple[dict[str, str], bool]:
    """generic field → source column; and whether the file is the LANL release."""
    norm = {}
    for c in columns:
        norm.setdefault(_norm(c), c)
    lanl = "nodenumz" in norm and "prob_started" in norm and all(_norm(c) in norm for c in LANL_CATEGORIES)
    m = {}
    for f, names in ALIASES.items():
        for n in names:
            if n in norm:
                m[f] = norm[n]
                break
    if lanl:
        m["down_time_min"] = norm["down_time"]
        m.pop("category", None)
    missing = [f for f in ("node", "failure_start") if f not in m]
    if not any(f in m for f in ("repair_end", "down_time_s", "down_time_min")):
        missing.append("repair_end (or down_time_s / down_time_min)")
    if missing:
        raise TraceFormatError(f"{path}: not a failure log: no {' and no '.join(missing)} column "
                               f"(columns: {', '.join(map(str, columns))[:200]})")
    return m, lanl


_MONTHS = {m: i for i, m in enumerate(("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct",
                                       "nov", "dec"), start=1)}


def _month_date(v: str, *, next_month: bool) -> float:
    """``Jan-97`` / ``5-Jun`` (Excel's June 2005) / an ISO date → s since the epoch; NaN when unknown."""
    s = str(v).strip()
    if not s:
        return np.nan
    m = re.fullmatch(r"([A-Za-z]{3})-(\d{2})", s) or None
    if m:
        mon, yy = _MONTHS.get(m.group(1).lower()), int(m.group(2))
    else:
        m = re.fullmatch(r"(\d{1,2})-([A-Za-z]{3})", s)
        if m:
            mon, yy = _MONTHS.get(m.group(2).lower()), int(m.group(1))
        else:
            t = pd.to_datetime(s, errors="coerce", utc=True)
            return np.nan if pd.isna(t) else t.value / 1e9
    if mon is None:
        return np.nan
    year = 1900 + yy if yy >= 70 else 2000 + yy
    if next_month:
        year, mon = (year + 1, 1) if mon == 12 else (year, mon + 1)
    return pd.Timestamp(year=year, month=mon, day=1, tz="UTC").value / 1e9


def _times(values: pd.Series) -> np.ndarray:
    """Timestamps → s since the epoch (naive = UTC); NaN when missing/unparsable. Formats tried in
    turn: ``m/d/Y H:M`` (LANL), ISO 8601, then whatever pandas reads."""
    v = values.astype(str).str.strip().to_numpy(object)
    out = np.full(len(v), np.nan)
    todo = np.array([len(x) > 0 for x in v], dtype=bool)
    for fmt in ("%m/%d/%Y %H:%M", "ISO8601", None):
        if not todo.any():
            break
        idx = np.flatnonzero(todo)
        if fmt is None:
            t = pd.Series([pd.to_datetime(x, errors="coerce", utc=True) for x in v[idx]], dtype="datetime64[ns, UTC]")
        else:
            t = pd.Series(pd.to_datetime(pd.Series(v[idx]), format=fmt, errors="coerce", utc=True))
        ok = t.notna().to_numpy()
        out[idx[ok]] = t[ok].astype("int64").to_numpy(dtype=float) / 1e9
        todo[idx[ok]] = False
    return out


def _num(values: pd.Series) -> np.ndarray:
    return pd.to_numeric(values.astype(str).str.strip().replace("", np.nan), errors="coerce").to_numpy(float)


def read_failures(paths, *, extracted_at: float | None = None) -> FailureLog:
    """Read failure logs (generic layout or the LANL alias set) into uptime intervals.

    ``extracted_at``: end of the log (s since the epoch); default the latest failure start or repair
    end of all files. See the module docstring for the layout, the intervals and the counts.
    """
    if isinstance(paths, (str, Path)):
        paths = [paths]
    frames, rejected, maps, records_in = [], [], {}, 0
    for p in map(Path, paths):
        df = _read_frame(p)
        m, lanl = _mapping(p, df.columns)
        maps[str(p)] = {"layout": "LANL LA-UR-05-7318" if lanl else "generic", **m}
        lines = np.arange(2, len(df) + 2)
        blank = np.all([(df[c].str.strip() == "").to_numpy() for c in df.columns], axis=0) if len(df.columns) \
            else np.zeros(len(df), bool)
        df, lines = df.loc[~blank].reset_index(drop=True), lines[~blank]
        records_in += len(df)
        f = pd.DataFrame({"file": str(p), "line": lines})
        f["system"] = df[m["system"]].str.strip() if "system" in m else p.name.split(".")[0]
        f["node"] = df[m["node"]].str.strip()
        f["start"] = _times(df[m["failure_start"]])
        end = _times(df[m["repair_end"]]) if "repair_end" in m else np.full(len(df), np.nan)
        if "down_time_s" in m:
            down = _num(df[m["down_time_s"]])
        elif "down_time_min" in m:
            down = 60.0 * _num(df[m["down_time_min"]])
        else:
            down = np.full(len(df), np.nan)
        end = np.where(np.isnan(end), f["start"].to_numpy() + down, end)
        f["end"] = end
        if lanl:
            cat = np.full(len(df), UNRECORDED, dtype=object)
            for c in reversed(LANL_CATEGORIES):
                filled = (df[c].str.strip() != "").to_numpy()
                cat[filled] = c
            f["category"] = cat
        elif "category" in m:
            c = df[m["category"]].str.strip()
            f["category"] = c.where(c != "", UNRECORDED)
        else:
            f["category"] = UNRECORDED
        f["nodes"] = _num(df[m["nodes"]]) if "nodes" in m else np.nan
        f["gpus_per_node"] = _num(df[m["gpus_per_node"]]) if "gpus_per_node" in m else np.nan
        for col, nxt in (("in_service", False), ("decommission", True)):
            if col in m:
                v = df[m[col]].str.strip()
                f[col] = v.map({u: _month_date(u, next_month=nxt) for u in v.unique()}).to_numpy(float)
            else:
                f[col] = np.nan
        bad = np.zeros(len(f), bool)
        for reason, mask, detail in (
                ("missing_node", (f["node"] == "").to_numpy(), "no node"),
                ("unparsable_failure_start", np.isnan(f["start"].to_numpy()), f"column {m['failure_start']}"),
                ("missing_repair_time", np.isnan(f["end"].to_numpy()), "no repair end nor down time"),
                ("repair_before_start", f["end"].to_numpy() < f["start"].to_numpy(), "repair end before start")):
            mask = mask & ~bad
            if mask.any():
                raw = df.loc[mask].astype(str).agg(",".join, axis=1).to_numpy(object)
                rejected.append(pd.DataFrame({"file": str(p), "line": f["line"].to_numpy()[mask], "reason": reason,
                                              "detail": detail, "raw": raw}))
            bad |= mask
        frames.append(f.loc[~bad])
    f = pd.concat(frames, ignore_index=True)
    rej = (pd.concat(rejected, ignore_index=True) if rejected else
           pd.DataFrame({c: pd.Series(dtype=object) for c in ("file", "line", "reason", "detail", "raw")}))
    if extracted_at is not None and len(f):
        late = (f["start"] > float(extracted_at)).to_numpy()
        if late.any():
            rej = pd.concat([rej, pd.DataFrame({"file": f["file"].to_numpy()[late], "line": f["line"].to_numpy()[late],
                                                "reason": "after_log_end", "detail": "failure after --extracted-at",
                                                "raw": ""})], ignore_index=True)
            f = f.loc[~late].reset_index(drop=True)
    if len(f) == 0:
        raise TraceFormatError(f"{', '.join(map(str, paths))}: no failure record could be used "
                               f"({len(rej)} quarantined)")
    log_end = float(np.nanmax(np.r_[f["start"].to_numpy(), f["end"].to_numpy()])) if extracted_at is None \
        else float(extracted_at)
    f = f.sort_values(["system", "node", "start", "end"], kind="stable").reset_index(drop=True)
    rows, folded = [], 0
    sys_first = np.fmin(f.groupby("system")["start"].min(), f.groupby("system")["in_service"].min())
    sys_nodes = f.groupby("system")["nodes"].max()
    sys_gpn = f.groupby("system")["gpus_per_node"].max()
    seen = f.groupby("system")["node"].nunique()
    window: dict[str, tuple[float, float]] = {}
    for (system, node), g in f.groupby(["system", "node"], sort=False):
        st, en = g["start"].to_numpy(), g["end"].to_numpy()
        cats = g["category"].to_numpy(object)
        # fold failures that start before (or the same minute as) the open down period's end
        keep_s, keep_e, keep_c = [st[0]], [en[0]], [cats[0]]
        for s, e, c in zip(st[1:], en[1:], cats[1:]):
            if s < keep_e[-1] + 60.0:
                keep_e[-1] = max(keep_e[-1], e)
                folded += 1
            else:
                keep_s.append(s), keep_e.append(e), keep_c.append(c)
        ins = np.nanmin(g["in_service"].to_numpy(float)) if g["in_service"].notna().any() else np.nan
        dec = np.nanmax(g["decommission"].to_numpy(float)) if g["decommission"].notna().any() else np.nan
        w0 = min(keep_s[0], ins if np.isfinite(ins) else sys_first[system])
        w1 = max(keep_e[-1], min(dec, log_end) if np.isfinite(dec) else log_end)
        window.setdefault(system, (w0, w1))
        window[system] = (min(window[system][0], w0), max(window[system][1], w1))
        nn, gpn = sys_nodes[system], sys_gpn[system]
        prev = w0
        for i, (s, e, c) in enumerate(zip(keep_s, keep_e, keep_c)):
            rows.append((system, node, "first" if i == 0 else "tbf", prev, s, s - prev, 1, c, e - s, nn, gpn))
            prev = e
        rows.append((system, node, "censored", prev, w1, w1 - prev, 0, "", 0.0, nn, gpn))
    for system, nn in sys_nodes.items():
        k = int(nn) - int(seen[system]) if np.isfinite(nn) else 0
        w0, w1 = window[system]
        for j in range(max(k, 0)):
            rows.append((system, f"unobserved-{j}", "no_failure", w0, w1, w1 - w0, 0, "", 0.0, nn, sys_gpn[system]))
    iv = pd.DataFrame.from_records(rows, columns=list(INTERVAL_COLUMNS))
    iv["event"] = iv["event"].astype("int8")
    failures = int(iv["event"].sum())
    report = {
        "files": [str(p) for p in paths], "mapping": maps, "records_in": int(records_in),
        "failures": failures, "folded": int(folded), "quarantined": int(len(rej)),
        "quarantined_by_reason": {str(k): int(v) for k, v in rej["reason"].value_counts().items()},
        "log_end_utc": pd.Timestamp(log_end, unit="s", tz="UTC").isoformat(),
        "systems": int(iv["system"].nunique()), "nodes_observed": int((iv["kind"] == "censored").sum()),
        "nodes_never_failing": int((iv["kind"] == "no_failure").sum()),
        "intervals": {k: int((iv["kind"] == k).sum()) for k in KINDS},
    }
    if report["records_in"] != failures + report["folded"] + report["quarantined"]:  # pragma: no cover
        raise AssertionError("failure log counts do not add up")
    return FailureLog(iv, rej, report)


def write_intervals(iv: pd.DataFrame, out: Path) -> None:
    """Write the intervals table to ``.csv``/``.csv.gz``/``.parquet``."""
    out.parent.mkdir(parents=True, exist_ok=True)
    if out.name.lower().endswith(".parquet"):
        iv.to_parquet(out, index=False)
    else:
        iv.to_csv(out, index=False)


def read_intervals(path) -> pd.DataFrame:
    """Read an intervals table written by :func:`write_intervals` (checks the columns)."""
    p = Path(path)
    df = pd.read_parquet(p) if p.name.lower().endswith(".parquet") else pd.read_csv(p, dtype={"node": str,
                                                                                           "system": str})
    miss = [c for c in INTERVAL_COLUMNS if c not in df.columns]
    if miss:
        raise TraceFormatError(f"{p}: not an intervals table: no column {', '.join(miss)}")
    df["category"] = df["category"].fillna("")
    return df
