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


def _build_jobs(p: dict, factors: "_Background", cluster: str, path: str, lines: np.ndarray, table):
    """Validate the parsed columns, flag rows to quarantine and assemble the accepted jobs.

    ``factors`` yields the :func:`_factorize_columns` of the table (computed in the background).
    Returns ``(jobs, rej_mask, reason, detail, inconsistencies, type_counts, int_ids)``: ``jobs`` holds
    the accepted rows only; ``reason``/``detail`` are for the flagged rows (in row order);
    ``type_counts`` {type: accepted rows}; ``int_ids`` the accepted job ids as int64 when every id is
    an integer literal (for a cheap uniqueness check), else a :class:`_Background` yielding
    :func:`_all_distinct` of the file's ids.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    n = len(lines)
    # reasons as small integer codes (0 = accepted); texts only for the flagged rows
    reasons = list(Reason)
    code = np.zeros(n, dtype=np.int8)
    detail: dict[int, str] = {}
    flagged = False

    def flag(mask, r: Reason, text):
        nonlocal flagged
        if mask is None or not mask.any():  # (None: the check cannot fail)
            return
        m = mask & (code == 0) if flagged else mask  # first reason wins
        if not m.any():
            return
        flagged = True
        code[m] = reasons.index(r) + 1
        idx = np.flatnonzero(m)
        texts = text(idx) if callable(text) else [text] * len(idx)
        detail.update(zip(idx.tolist(), texts))

    # --- the checks (masks computed first, then applied in the order of precedence below)
    jid = p["job_id"]
    if jid.null_count:
        jid = pc.fill_null(jid, "")
    all_int_ids = p["job_id_int"]  # integer ids (then none is empty): cheap uniqueness check later
    empty_id = None
    if all_int_ids is None and n and pc.min(pc.utf8_length(jid)).as_py() == 0:
        empty_id = np.asarray(pc.equal(jid, "").to_numpy(zero_copy_only=False), dtype=bool)

    def whole_numbers(c):
        """(int64 values, mask of values missing, negative or not whole)."""
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

    gpu, bad_gpu = whole_numbers("gpu_num")
    node, bad_node = whole_numbers("node_num")

    submit, start, end = p["submit_time"], p["start_time"], p["end_time"]
    submit_s, start_s, end_s = submit.seconds(), start.seconds(), end.seconds()
    not_started = start.na  # None: every job started
    with np.errstate(invalid="ignore"):
        end_before_start = end_s < start_s  # (NaN compares False: only started jobs)
        start_before_submit = start_s < submit_s
        end_before_submit = None if not_started is None else not_started & (end_s < submit_s)

    # --- derived columns (for every row; the rejected ones are dropped below)
    run_s = end_s - start_s  # NaN if never started
    queue_s = start_s - submit_s
    gpu_time = gpu * run_s
    if not_started is not None:  # a wait censored at the cancel; no GPU time
        np.subtract(end_s, submit_s, out=queue_s, where=not_started)
        gpu_time[not_started] = 0.0
    fail_s = p["fail_time"].seconds() - start_s if "fail_time" in p else np.full(n, np.nan)

    # the file's own duration/queue/gpu_time against the timestamps (counted on accepted rows below)
    def off(col, ref, tol):
        # rows where the file's value is finite and |value - ref| > tol (NaN compares False)
        x = np.subtract(col, ref)
        np.abs(x, out=x)
        m = x > tol
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

    f = factors.result()
    # non-integer ids: are they all distinct? (an Arrow sort, in the background once that is free)
    distinct = _Background(_all_distinct, jid) if all_int_ids is None else None
    st_cats, st_codes = f["state"]
    an_cats = np.array([STATE_MAP.get(s) for s in st_cats], dtype=object)
    unknown_cat = np.array([a is None for a in an_cats], dtype=bool)

    flag(empty_id, Reason.MISSING_JOB_ID, "job_id is empty")
    for c in ("submit_time", "start_time", "end_time", "fail_time", "stop_time"):
        if c in p:
            flag(p[c].fail, Reason.BAD_TIMESTAMP, f"{c} is not a timestamp")
    for c in ("submit_time", "start_time", "end_time", "fail_time", "stop_time"):
        if c in p:
            flag(p[c].oor, Reason.TIME_OUT_OF_RANGE, f"{c} outside 1970-01-01 .. 2100-01-01 UTC")
    flag(submit.na, Reason.MISSING_TIMESTAMP, "submit_time is empty")
    # unfinished jobs (RUNNING, SUSPENDED, PENDING) have no end: kept, censored at the extraction time
    # (readers._censor_unfinished)
    unfinished_cat = np.array([s in UNFINISHED_STATES for s in st_cats], dtype=bool)
    unfinished = unfinished_cat[st_codes] if unfinished_cat.any() else None
    end_na = end.na
    if end_na is not None and unfinished is not None:
        end_na = end_na & ~unfinished
    flag(end_na, Reason.MISSING_TIMESTAMP, "end_time is empty")
    for c, r, bad in (("gpu_num", Reason.BAD_GPU_NUM, bad_gpu), ("node_num", Reason.BAD_NODE_NUM, bad_node)):
        def text(idx, c=c):
            vals = _raw_frame(table.select([c]), idx)[c].to_numpy()
            return np.array([f"{c} = {_value_text(x)!r}" for x in vals], dtype=object)

        flag(bad, r, text)
    if unknown_cat.any():
        flag(unknown_cat[st_codes], Reason.UNKNOWN_STATE,
             lambda idx: np.array([f"state = {x!r}" for x in st_cats[st_codes[idx]]], dtype=object))
    flag(end_before_start, Reason.END_BEFORE_START, "end_time < start_time")
    flag(start_before_submit, Reason.START_BEFORE_SUBMIT, "start_time < submit_time")
    flag(end_before_submit, Reason.END_BEFORE_START, "end_time < submit_time")

    rej_mask = code > 0 if flagged else np.zeros(n, dtype=bool)
    keep = ~rej_mask if flagged else None  # None: every row accepted (no filtering copy)

    def take(a):
        return a if keep is None else a[keep]

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

    jobs = jobs_from_times(
        cluster=const(cluster),
        job_id=pd.array(jid if keep is None else jid.filter(pa.array(keep)), dtype=STR_DTYPE),
        user=us_cats[take(us_codes)], type=ty_cats[ty_codes_k], state=st_cats[st_codes_k],
        analysis_state=an_cats[st_codes_k], gpu_num=take(gpu), node_num=take(node), cpu_num=fnan("cpu_num"),
        submit_s=take(submit_s), start_s=take(start_s), end_s=take(end_s),
        times={"submit_time": submit.series(keep), "start_time": start.series(keep),
               "end_time": end.series(keep)},
        fail_time_s=take(fail_s), mem_per_pod_GB=fnan("mem_per_pod_GB"),
        shared_mem_per_pod=fnan("shared_mem_per_pod"), source_file=const(path), source_line=take(lines),
        run_censored=None if unfinished is None else take(unfinished) & np.isfinite(take(start_s)))
    # reason and detail of the flagged rows only, in row order
    flagged_rows = np.flatnonzero(rej_mask)
    reason = np.array([None] + [r.value for r in reasons], dtype=object)[code[flagged_rows]]
    detail_arr = np.array([detail[i] for i in flagged_rows.tolist()], dtype=object)

    # cross-check counts: accepted rows of started jobs only
    inc = {"duration": 0, "queue": 0, "gpu_time": 0, "duration_includes_queue": 0}
    for kind, m in deviates.items():
        if not m.any():
            continue
        if flagged:
            m &= ~rej_mask
        if not_started is not None:
            m &= ~not_started
        inc[kind] = int(np.count_nonzero(m))
        if kind == "duration" and inc[kind]:
            i = np.flatnonzero(m)
            with np.errstate(invalid="ignore"):
                inc["duration_includes_queue"] = int(np.count_nonzero(
                    np.abs(p["duration"][0][i] - (end_s[i] - submit_s[i])) <= CHECK_TOL_S))
    return jobs, rej_mask, reason, detail_arr, inc, type_counts, int_ids


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
