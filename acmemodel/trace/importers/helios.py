"""Helios / Lucid ``cluster_log.csv`` (SenseTime Helios traces, the Lucid and QSSF simulators).

Columns (by name, any order): ``job_id, user, vc, [jobname], gpu_num, cpu_num, node_num, state,
submit_time, start_time, end_time, [duration, queue]``; times ``YYYY-MM-DD HH:MM:SS`` without zone,
in the cluster's local time (``timezone``; default ``+08:00``, the Helios clusters', with a
warning). States as in AcmeTrace (COMPLETED, CANCELLED, FAILED, TIMEOUT, NODE_FAIL; RUNNING/PENDING
accepted). ``type``: ``--type-map`` rules on ``vc``/``jobname``, else the ``vc`` (the source's own
category). Extras ``vc``, ``job_name``. Quarantined here: unparsable timestamps
(``unparsable_timestamp``); everything else is validated by the trace layer. ``duration``/``queue``
are not used (recomputed from the timestamps).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from acmemodel.errors import TraceFormatError
from acmemodel.trace.importers import _common as C

NEED = ("job_id", "user", "gpu_num", "state", "submit_time", "start_time", "end_time")


def read_csv_text(path: Path) -> pd.DataFrame:
    if not path.exists():
        raise TraceFormatError(f"{path}: no such file")
    if path.is_dir() or path.stat().st_size == 0:
        raise TraceFormatError(f"{path}: empty file or a directory")
    try:
        df = pd.read_csv(path, dtype=str, keep_default_na=False, skip_blank_lines=False,
                         encoding_errors="replace")
    except (pd.errors.ParserError, UnicodeDecodeError, pd.errors.EmptyDataError) as e:
        raise TraceFormatError(f"{path}: not a readable CSV file ({str(e).splitlines()[0]})") from None
    df.columns = [str(c).strip().lstrip("\ufeff") for c in df.columns]
    return df


def drop_blank(df: pd.DataFrame, lines: np.ndarray):
    """Rows whose every field is blank (blank lines) dropped."""
    blank = np.ones(len(df), dtype=bool)
    for c in df.columns:
        blank &= (df[c].str.len() == 0).to_numpy() | (df[c].str.strip() == "").to_numpy()
        if not blank.any():
            return df, lines
    return df.loc[~blank].reset_index(drop=True), lines[~blank]


class _Raw:
    """Rows of a text frame as comma-joined lines, built only for the rows asked for."""

    def __init__(self, df: pd.DataFrame):
        self.df = df

    def __getitem__(self, mask) -> list[str]:
        idx = np.flatnonzero(mask) if np.asarray(mask).dtype == bool else np.asarray(mask)
        sub = self.df.iloc[idx].astype(str)
        return [",".join(r) for r in sub.itertuples(index=False, name=None)]


def read(path, *, timezone: str | None = None, type_map=None) -> C.Imported:
    path = Path(path)
    df = read_csv_text(path)
    lines = np.arange(2, len(df) + 2, dtype=np.int64)
    df, lines = drop_blank(df, lines)
    cols = {c.lower(): c for c in df.columns}
    C.require_columns(path, list(cols), NEED, "Helios cluster_log.csv")
    g = lambda k: df[cols[k]].str.strip().to_numpy(object) if k in cols else None  # noqa: E731
    warnings = []
    if timezone is None:
        warnings.append(f"{path}: Helios timestamps have no zone; read as +08:00 (pass timezone=)")
    tz = C.timezone_offset(timezone or "+08:00")
    q = C.Quarantine(str(path))
    times, fail = {}, np.zeros(len(df), dtype=bool)
    for k in ("submit_time", "start_time", "end_time"):
        times[k], b = C.parse_local_times(g(k), tz)
        fail |= b
    raw = _Raw(df)
    q.add(lines[fail], "unparsable_timestamp", "a timestamp is not YYYY-MM-DD HH:MM:SS", raw[fail])
    ok = ~fail
    vc, name = g("vc"), g("jobname")
    default = vc if vc is not None else np.full(len(df), "Other", dtype=object)
    tmap = C.TypeMap.parse(type_map)
    types, tcounts = tmap.apply({"vc": vc, "name": name}, default, "vc" if vc is not None else "(none: Other)")
    out = {"job_id": g("job_id"), "user": g("user"), "type": types, "state": g("state"),
           "gpu_num": C.numeric(g("gpu_num"))[0], "node_num": C.numeric(g("node_num"))[0] if "node_num" in cols
           else np.ones(len(df)), "cpu_num": C.numeric(g("cpu_num"))[0] if "cpu_num" in cols else np.full(len(df), np.nan),
           "submit_time": times["submit_time"], "start_time": times["start_time"], "end_time": times["end_time"]}
    if vc is not None:
        out["vc"] = vc
    if name is not None:
        out["job_name"] = name
    # (gpu_num/node_num text that is not a number is left to the trace layer's checks: pass it on)
    for k in ("gpu_num", "node_num"):
        if k in cols:
            v, bad = C.numeric(g(k))
            out[k] = v
            if bad.any():
                q.add(lines[bad & ok], f"invalid_{k}", [f"{k} = {x!r}" for x in g(k)[bad & ok]], raw[bad & ok])
                ok &= ~bad
    out = {k: v[ok] for k, v in out.items()}
    table = C.make_table(out)
    report = {"format": "helios", "file": str(path), "records_in": int(len(df)), "accepted_rows": int(ok.sum()),
              "folded": 0, "rejected": q.counts(), "timezone": tz,
              "mapping": {"times": f"submit_time/start_time/end_time, local time {tz}",
                          "type": "type-map rules on vc/jobname, else vc", "duration/queue": "not used"},
              "types": tcounts}
    return C.Imported(format="helios", path=str(path), table=table, lines=lines[ok], rejected=q.frame(),
                      cluster=C.cluster_from_path(path.parent if path.stem == "cluster_log" else path),
                      timezone=tz, report=report, warnings=warnings)
