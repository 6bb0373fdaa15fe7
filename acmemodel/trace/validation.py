"""Validation and quarantine: the per-row checks of a parsed file (ids, timestamps, GPU/node counts,
states, time order), the reasons and details of the rows set aside, the cross-check of the files' own
``duration``/``queue``/``gpu_time`` columns, and duplicate ids across files. The accepted rows become
the job table through :func:`~acmemodel.trace.jobs.jobs_from_times`.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd

from acmemodel.trace.arrow import _Background, _all_distinct, _raw_frame, _writable
from acmemodel.trace.jobs import jobs_from_times
from acmemodel.trace.schema import CHECK_TOL_S, STATE_MAP, STR_DTYPE, UNFINISHED_STATES, Reason


class _Flags:
    """The rows flagged for quarantine: a reason code per row (0 = accepted; the first reason wins) and
    the detail text of each flagged row."""

    def __init__(self, n: int):
        self.reasons = list(Reason)
        self.code = np.zeros(n, dtype=np.int8)
        self.detail: dict[int, str] = {}
        self.any = False

    def flag(self, mask, r: Reason, text) -> None:
        """Flag the rows of ``mask`` not flagged yet with ``r``; ``text``: one detail or ``idx -> texts``."""
        if mask is None or not mask.any():  # (None: the check cannot fail)
            return
        m = mask & (self.code == 0) if self.any else mask  # first reason wins
        if not m.any():
            return
        self.any = True
        self.code[m] = self.reasons.index(r) + 1
        idx = np.flatnonzero(m)
        texts = text(idx) if callable(text) else [text] * len(idx)
        self.detail.update(zip(idx.tolist(), texts))

    def mask(self) -> np.ndarray:
        return self.code > 0 if self.any else np.zeros(len(self.code), dtype=bool)

    def reason_detail(self) -> tuple[np.ndarray, np.ndarray]:
        """(reason, detail) of the flagged rows only, in row order."""
        rows = np.flatnonzero(self.mask())
        reason = np.array([None] + [r.value for r in self.reasons], dtype=object)[self.code[rows]]
        return reason, np.array([self.detail[i] for i in rows.tolist()], dtype=object)


def _whole_numbers(p: dict, c: str) -> tuple[np.ndarray, np.ndarray]:
    """(int64 values, mask of values missing, negative or not whole) of the parsed column ``c``."""
    v, fail = p[c]
    with np.errstate(invalid="ignore"):
        iv = v.astype(np.int64)
        bad = ~(v >= 0)  # missing (NaN) or negative
        bad |= iv != v  # not a whole number (or beyond int64)
    if fail is not None:
        bad |= fail
    if bad.any():  # the exact rule on the few flagged values: fail | NaN | < 0 | finite non-integer
        i = np.flatnonzero(bad)
        vb = v[i]
        with np.errstate(invalid="ignore"):
            # (also infinite or beyond int64, where the cast above gave garbage)
            bad[i] = (np.isnan(vb) | (vb < 0) | ~(vb < 2.0 ** 63) | (np.round(vb) != vb)
                      | (fail[i] if fail is not None else False))
    return iv, bad


def _deviations(p: dict, run_s, queue_s, gpu_time, gpu) -> dict[str, np.ndarray]:
    """Rows where the file's own ``duration``/``queue``/``gpu_time`` is finite and further than
    :data:`CHECK_TOL_S` (per GPU for the GPU time) from the value of the timestamps."""
    def off(col, ref, tol):
        x = np.subtract(col, ref)
        np.abs(x, out=x)
        m = x > tol  # (NaN compares False)
        m &= x != np.inf
        return m

    deviates = {}
    with np.errstate(invalid="ignore"):
        if "duration" in p:
            deviates["duration"] = off(p["duration"][0], run_s, CHECK_TOL_S)
        if "queue" in p:
            deviates["queue"] = off(p["queue"][0], queue_s, CHECK_TOL_S)
        if "gpu_time" in p:
            tol = np.maximum(gpu, 1).astype(np.float64)
            tol *= CHECK_TOL_S
            deviates["gpu_time"] = off(p["gpu_time"][0], gpu_time, tol)
    return deviates


def _inconsistencies(deviates: dict, rej_mask, not_started, p: dict, end_s, submit_s) -> dict[str, int]:
    """Counts of the cross-check deviations on the accepted rows of started jobs (and of the durations
    that match end − submit: a ``duration`` that includes the queue)."""
    inc = {"duration": 0, "queue": 0, "gpu_time": 0, "duration_includes_queue": 0}
    for kind, m in deviates.items():
        if not m.any():
            continue
        m &= ~rej_mask
        if not_started is not None:
            m &= ~not_started
        inc[kind] = int(np.count_nonzero(m))
        if kind == "duration" and inc[kind]:
            i = np.flatnonzero(m)
            with np.errstate(invalid="ignore"):
                inc["duration_includes_queue"] = int(np.count_nonzero(
                    np.abs(p["duration"][0][i] - (end_s[i] - submit_s[i])) <= CHECK_TOL_S))
    return inc


def _build_jobs(p: dict, factors: "_Background", cluster: str, path: str, lines: np.ndarray, table):
    """Validate the parsed columns, flag rows to quarantine and assemble the accepted jobs.

    ``factors`` yields the :func:`_factorize_columns` of the table (computed in the background).
    Returns ``(jobs, rej_mask, reason, detail, inconsistencies, type_counts, int_ids)``: ``jobs`` holds
    the accepted rows only; ``reason``/``detail`` are for the flagged rows (in row order);
    ``type_counts`` {type: accepted rows}; ``int_ids`` the accepted job ids as int64 when every id is
    an integer literal (for a cheap uniqueness check), else a :class:`_Background` yielding
    :func:`_all_distinct` of the file's ids.
    """
    import pyarrow.compute as pc

    n = len(lines)
    jid = p["job_id"]
    if jid.null_count:
        jid = pc.fill_null(jid, "")
    all_int_ids = p["job_id_int"]  # integer ids (then none is empty): cheap uniqueness check later
    empty_id = None
    if all_int_ids is None and n and pc.min(pc.utf8_length(jid)).as_py() == 0:
        empty_id = np.asarray(pc.equal(jid, "").to_numpy(zero_copy_only=False), dtype=bool)
    gpu, bad_gpu = _whole_numbers(p, "gpu_num")
    node, bad_node = _whole_numbers(p, "node_num")
    submit, start, end = p["submit_time"], p["start_time"], p["end_time"]
    t = {"submit_s": submit.seconds(), "start_s": start.seconds(), "end_s": end.seconds()}
    not_started = start.na  # None: every job started

    # --- derived columns (for every row; the rejected ones are dropped when the jobs are assembled)
    run_s = t["end_s"] - t["start_s"]  # NaN if never started
    queue_s = t["start_s"] - t["submit_s"]
    gpu_time = gpu * run_s
    if not_started is not None:  # a wait censored at the cancel; no GPU time
        np.subtract(t["end_s"], t["submit_s"], out=queue_s, where=not_started)
        gpu_time[not_started] = 0.0
    t["fail_time_s"] = p["fail_time"].seconds() - t["start_s"] if "fail_time" in p else np.full(n, np.nan)
    deviates = _deviations(p, run_s, queue_s, gpu_time, gpu)

    f = factors.result()
    # non-integer ids: are they all distinct? (an Arrow sort, in the background once that is free)
    distinct = _Background(_all_distinct, jid) if all_int_ids is None else None
    st_cats, st_codes = f["state"]
    unfinished_cat = np.array([s in UNFINISHED_STATES for s in st_cats], dtype=bool)
    unfinished = unfinished_cat[st_codes] if unfinished_cat.any() else None
    flags = _flag_rows(p, table, t, empty_id, bad_gpu, bad_node, st_cats, st_codes, unfinished)
    rej_mask = flags.mask()
    jobs, type_counts, int_ids = _accepted_jobs(
        p, f, None if not flags.any else ~rej_mask, cluster=cluster, path=path, lines=lines, jid=jid,
        all_int_ids=all_int_ids, distinct=distinct, gpu=gpu, node=node, t=t, unfinished=unfinished)
    reason, detail = flags.reason_detail()
    inc = _inconsistencies(deviates, rej_mask, not_started, p, t["end_s"], t["submit_s"])
    return jobs, rej_mask, reason, detail, inc, type_counts, int_ids


def _flag_rows(p: dict, table, t: dict, empty_id, bad_gpu, bad_node, st_cats, st_codes, unfinished) -> _Flags:
    """The quarantine checks, in their order of precedence (the first reason of a row wins): empty id,
    unparsable and out-of-range timestamps, missing submit/end times (an unfinished job has no end: kept,
    censored at the extraction time by readers._censor_unfinished), GPU/node counts, unknown states,
    time order."""
    flags = _Flags(len(st_codes))
    submit, end = p["submit_time"], p["end_time"]
    flags.flag(empty_id, Reason.MISSING_JOB_ID, "job_id is empty")
    for c in ("submit_time", "start_time", "end_time", "fail_time", "stop_time"):
        if c in p:
            flags.flag(p[c].fail, Reason.BAD_TIMESTAMP, f"{c} is not a timestamp")
    for c in ("submit_time", "start_time", "end_time", "fail_time", "stop_time"):
        if c in p:
            flags.flag(p[c].oor, Reason.TIME_OUT_OF_RANGE, f"{c} outside 1970-01-01 .. 2100-01-01 UTC")
    flags.flag(submit.na, Reason.MISSING_TIMESTAMP, "submit_time is empty")
    end_na = end.na
    if end_na is not None and unfinished is not None:
        end_na = end_na & ~unfinished
    flags.flag(end_na, Reason.MISSING_TIMESTAMP, "end_time is empty")
    for c, r, bad in (("gpu_num", Reason.BAD_GPU_NUM, bad_gpu), ("node_num", Reason.BAD_NODE_NUM, bad_node)):
        def text(idx, c=c):
            vals = _raw_frame(table.select([c]), idx)[c].to_numpy()
            return np.array([f"{c} = {_value_text(x)!r}" for x in vals], dtype=object)

        flags.flag(bad, r, text)
    unknown_cat = np.array([STATE_MAP.get(s) is None for s in st_cats], dtype=bool)
    if unknown_cat.any():
        flags.flag(unknown_cat[st_codes], Reason.UNKNOWN_STATE,
                   lambda idx: np.array([f"state = {x!r}" for x in st_cats[st_codes[idx]]], dtype=object))
    not_started = p["start_time"].na
    with np.errstate(invalid="ignore"):
        flags.flag(t["end_s"] < t["start_s"], Reason.END_BEFORE_START, "end_time < start_time")  # (NaN: False)
        flags.flag(t["start_s"] < t["submit_s"], Reason.START_BEFORE_SUBMIT, "start_time < submit_time")
        flags.flag(None if not_started is None else not_started & (t["end_s"] < t["submit_s"]),
                   Reason.END_BEFORE_START, "end_time < submit_time")
    return flags


def _accepted_jobs(p: dict, f: dict, keep, *, cluster, path, lines, jid, all_int_ids, distinct, gpu, node, t,
                   unfinished):
    """The job table of the accepted rows (``keep``; None: every row), ``{type: accepted rows}`` and the
    accepted ids as int64 when they all are integers (else ``distinct``, the background check)."""
    import pyarrow as pa

    def take(a):
        return a if keep is None else a[keep]

    st_cats, st_codes = f["state"]
    an_cats = np.array([STATE_MAP.get(s) for s in st_cats], dtype=object)
    ty_cats, ty_codes = f["type"]
    ty_cats = ty_cats.copy()
    ty_cats[ty_cats == ""] = "Unknown"
    us_cats, us_codes = f["user"]
    ty_codes_k, st_codes_k = take(ty_codes), take(st_codes)
    n_keep = len(ty_codes_k)
    type_counts: dict[str, int] = {}
    for name, k in zip(ty_cats, np.bincount(ty_codes_k, minlength=len(ty_cats))):
        if k:
            type_counts[name] = type_counts.get(name, 0) + int(k)
    int_ids = take(all_int_ids) if all_int_ids is not None else distinct
    if all_int_ids is None and keep is not None:  # (the rejected rows may hold the non-integer ids)
        try:
            int_ids = np.asarray(jid.filter(pa.array(keep)).cast(pa.int64()).to_numpy())
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            pass

    def const(value):
        a = np.empty(n_keep, dtype=object)
        a.fill(value)
        return a

    def fnan(c):
        return _writable(take(p[c][0])) if c in p else np.full(n_keep, np.nan)

    submit, start, end = p["submit_time"], p["start_time"], p["end_time"]
    jobs = jobs_from_times(
        cluster=const(cluster),
        job_id=pd.array(jid if keep is None else jid.filter(pa.array(keep)), dtype=STR_DTYPE),
        user=us_cats[take(us_codes)], type=ty_cats[ty_codes_k], state=st_cats[st_codes_k],
        analysis_state=an_cats[st_codes_k], gpu_num=take(gpu), node_num=take(node), cpu_num=fnan("cpu_num"),
        submit_s=take(t["submit_s"]), start_s=take(t["start_s"]), end_s=take(t["end_s"]),
        times={"submit_time": submit.series(keep), "start_time": start.series(keep),
               "end_time": end.series(keep)},
        fail_time_s=take(t["fail_time_s"]), mem_per_pod_GB=fnan("mem_per_pod_GB"),
        shared_mem_per_pod=fnan("shared_mem_per_pod"), source_file=const(path), source_line=take(lines),
        run_censored=None if unfinished is None else take(unfinished) & np.isfinite(take(t["start_s"])))
    return jobs, type_counts, int_ids


def _duplicated_ids(jobs: pd.DataFrame, int_ids: Sequence[np.ndarray | bool] = (),
                    n_clusters: int | None = None) -> np.ndarray:
    """Rows whose (cluster, job_id) appeared earlier (first occurrence kept); a uniqueness check first.

    ``int_ids``: per file, the accepted ids as integers when they all are integer literals, else
    whether all the file's ids are distinct (bool). Distinct integers imply distinct strings, so an
    increasing (or hash-unique) integer sequence proves there is no duplicate without hashing a
    million strings; so does a single file of distinct ids.
    """
    no_dup = np.zeros(len(jobs), dtype=bool)
    if len(int_ids) == 1 and int_ids[0] is True:
        return no_dup
    if int_ids and all(isinstance(ii, np.ndarray) for ii in int_ids):
        ids = np.concatenate(int_ids) if len(int_ids) > 1 else int_ids[0]
        if len(ids) < 2 or bool((ids[1:] > ids[:-1]).all()) or pd.Series(ids).is_unique:
            return no_dup
    if n_clusters is None:
        n_clusters = jobs["cluster"].nunique()
    if n_clusters <= 1 and jobs["job_id"].is_unique:
        return no_dup
    return jobs.duplicated(subset=["cluster", "job_id"], keep="first").to_numpy()


def _value_text(x) -> str:
    """A value as read, for a quarantine detail: missing → ``''``, a whole float without ``.0``."""
    if x is None or x is pd.NA or (isinstance(x, float) and np.isnan(x)):
        return ""
    if isinstance(x, float) and x.is_integer() and abs(x) < 1e15:
        return str(int(x))
    return str(x)


def _rejected_frame(files, lines, reason: Reason, details, raws) -> pd.DataFrame:
    return pd.DataFrame({"file": files, "line": np.asarray(lines, dtype=np.int64), "reason": reason.value,
                         "detail": list(details), "raw": list(raws)})


_RAW_JOB_COLUMNS = ("job_id", "user", "node_num", "gpu_num", "cpu_num", "type", "state", "submit_time",
                    "start_time", "end_time")


def _raw_rows(df: pd.DataFrame, columns: Sequence[str]) -> list[str]:
    """A rejected row as comma-separated text of ``columns`` (values as read or parsed)."""
    cols = list(columns)
    out = []
    for row in df[cols].itertuples(index=False, name=None):
        out.append(",".join("" if (v is None or (isinstance(v, float) and np.isnan(v)) or v is pd.NaT)
                            else str(v) for v in row))
    return out
