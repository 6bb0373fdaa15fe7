"""Standard Workload Format (SWF) v2.2 of the Parallel Workloads Archive.

One ``<cluster>.swf`` per cluster: ``;`` header comments, then one line per job attempt with the 18
whitespace-separated integer fields of SWF v2.2 (``-1`` = unknown):

====  ==============================  ==========================================================
 #    field                           written as
====  ==============================  ==========================================================
 1    job number                      1..N in submission order
 2    submit time                     s since ``UnixStartTime`` (= the first submission)
 3    wait time                       start − submit; never-started jobs: end − submit (the wait
                                      until cancellation)
 4    run time                        end − start; never-started jobs 0
 5    allocated processors            GPUs (``gpu_num``); never-started jobs −1
 6    average CPU time                −1
 7    used memory                     −1
 8    requested processors            GPUs
 9    requested time                  −1 (AcmeTrace has no time limits)
 10   requested memory                −1
 11   status                          1 completed, 0 failed (FAILED, TIMEOUT, NODE_FAIL), 5 cancelled
 12   user ID                         1.. in order of first appearance (map in the sidecar CSV)
 13   group ID                        −1
 14   executable number               −1
 15   queue number                    job type code: 1 Eval, 2 Pretrain, 3 SFT, 4 MLLM, 5 Debug,
                                      6 Other, 7.. other types alphabetically (legend in header)
 16   partition number                −1
 17   preceding job number            restart attempt k>1: the job number of the failed attempt
                                      k−1 of the same restart chain; else −1
 18   think time from preceding job   restart attempt: the restart gap (this submit − failed
                                      attempt's end, s); else −1
====  ==============================  ==========================================================

Times are integers: every timestamp is rounded to the nearest second (half to even) and the
fields are differences of rounded timestamps, so ``submit + wait + run`` equals the rounded end
exactly; the header states the largest rounding. CPU-only jobs (``gpu_num == 0``) are omitted by
default (processors = GPUs) and counted in the header; ``include_cpu=True`` keeps them with 0
processors. The header has one ``Queue: N name`` line per queue number (SWF 2.1 queue information)
and states the share of GPU time in cancelled (status 5) jobs: in AcmeTrace most cancelled jobs ran
before being stopped, so a tool that drops status 5 loses that share of the load. A sidecar
``<cluster>_swf_jobs.csv`` maps job numbers back to job ids, users, types, states and restart chains.
"""
from __future__ import annotations

import datetime as _dt
from pathlib import Path
from typing import Any, Mapping

import numpy as np
import pandas as pd

from acmemodel.clusters import cluster_info, utc_offset_seconds
from acmemodel.export import _common as C
from acmemodel.export import _text as T

SWF_FIELDS = ("job_number", "submit_time", "wait_time", "run_time", "allocated_processors",
              "average_cpu_time", "used_memory", "requested_processors", "requested_time",
              "requested_memory", "status", "user_id", "group_id", "executable_number", "queue_number",
              "partition_number", "preceding_job_number", "think_time")
STATUS_CODES = {"COMPLETED": 1, "FAILED": 0, "CANCELLED": 5}


def tz_string(cluster: str, offset_s: int) -> str:
    """An Olson time-zone name for the header's ``TimeZoneString``."""
    info = cluster_info(cluster)
    if info is not None and utc_offset_seconds(info["tz"]) == offset_s:
        return info["tzname"]
    if offset_s == 0:
        return "UTC"
    if offset_s % 3600 == 0:
        h = offset_s // 3600
        return f"Etc/GMT{'-' if h > 0 else '+'}{abs(h)}"  # POSIX sign convention
    return f"UTC{C.format_offset(offset_s)}"


def _date_string(sec: int, tzname: str, offset_s: int) -> str:
    """Like the output of ``date``: ``Wed Mar  1 00:18:22 CST 2023``."""
    try:
        from zoneinfo import ZoneInfo

        tz = ZoneInfo(tzname)
    except Exception:  # non-Olson name: fixed offset
        tz = _dt.timezone(_dt.timedelta(seconds=offset_s))
    d = _dt.datetime.fromtimestamp(sec, tz=tz)
    return d.strftime("%a %b ") + f"{d.day:2d}" + d.strftime(" %H:%M:%S %Z %Y")


def swf_fields(sub: pd.DataFrame) -> tuple[np.ndarray, dict[str, Any]]:
    """The (n, 18) int64 field matrix of one cluster's rows (sorted by submit time) and facts for
    the header (``t0``, rounding, user codes, type codes, clipped think times)."""
    n = len(sub)
    s, st, st_miss, en, rounding = C.rounded_times(sub)
    started = ~st_miss
    t0 = int(s.min()) if n else 0
    gpus = sub["gpu_num"].to_numpy(dtype="int64")
    F = np.full((n, 18), -1, dtype="int64")
    F[:, 0] = np.arange(1, n + 1)
    F[:, 1] = s - t0
    F[:, 2] = np.where(started, st - s, en - s)
    F[:, 3] = np.where(started, en - st, 0)
    F[:, 4] = np.where(started, gpus, -1)
    F[:, 7] = gpus
    F[:, 10] = sub["analysis_state"].map(STATUS_CODES).fillna(-1).to_numpy(dtype="int64")
    ucodes, uniques = pd.factorize(sub["user"], sort=False)
    F[:, 11] = ucodes + 1
    tcodes = C.type_codes(sub["type"].unique())
    F[:, 14] = sub["type"].map(tcodes).to_numpy(dtype="int64")
    pos = C.prev_positions(sub)
    link = pos >= 0
    F[link, 16] = pos[link] + 1
    think = s[link] - en[pos[link]]
    clipped = int((think < 0).sum())
    F[link, 17] = np.maximum(think, 0)
    facts = {"t0": t0, "t_end": int(en.max()) if n else 0, "rounding_s": rounding,
             "users": uniques, "type_codes": tcodes, "think_clipped": clipped,
             "never_started": int((~started).sum()), "links": int((F[:, 16] > 0).sum())}
    return F, facts


def write_swf(jobs: Any, out: str | Path, *, cluster: str | None = None,
              timezones: Mapping[str, str] | None = None, include_cpu: bool = False,
              total_gpus: int | None = None, total_nodes: int | None = None) -> dict[str, Any]:
    """Write ``jobs`` as SWF v2.2, one ``<cluster>.swf`` per cluster (see the module docstring).

    Parameters
    ----------
    jobs : jobs DataFrame of the Trace contract (or a ``Trace``); restart chains are taken from
        its chain columns or computed with :func:`acmemodel.features.chains.restart_chains`.
    out : output directory.
    cluster : export only this cluster.
    timezones : cluster → UTC offset for ``TimeZoneString`` / ``StartTime``.
    include_cpu : keep CPU-only jobs (0 processors); default drop them (counted in the header).
    total_gpus, total_nodes : ``MaxProcs`` / ``MaxNodes``; default the published cluster size,
        else the largest job.
    """
    import pyarrow as pa
    import pyarrow.csv as pacsv

    from acmemodel._version import __version__

    _, chain_src, out, groups, offsets = C.prepare(jobs, out, cluster=cluster, timezones=timezones)
    stems = C.safe_names([g for g, _ in groups])
    files, desc, written, n_jobs, frames = [], [], 0, 0, []
    gpu_groups = C.GpuGroups(groups, drop=not include_cpu, keep_empty=True)
    for name, sub, n_cpu in gpu_groups:
        if len(sub) == 0:
            desc.append(f"- cluster **{name}**: no GPU jobs, no file written ({n_cpu:,} CPU-only jobs omitted).")
            continue
        F, facts = swf_fields(sub)
        gpu_time = F[:, 3].astype(float) * np.maximum(F[:, 7], 0)
        cancel_share = float(gpu_time[F[:, 10] == 5].sum() / gpu_time.sum()) if gpu_time.sum() > 0 else 0.0
        info = cluster_info(name) or {}
        max_procs = int(total_gpus or info.get("gpus") or sub["gpu_num"].max())
        max_nodes = int(total_nodes or info.get("nodes") or sub["node_num"].max())
        off = offsets[name]
        tzname = tz_string(name, off)
        tc = facts["type_codes"]
        max_q = int(F[:, 14].max())
        legend = ", ".join(f"{c} {t}" for t, c in sorted(tc.items(), key=lambda kv: kv[1]) if c <= max_q)
        hdr = [
            "Version: 2.2",
            f"Computer: {name}" + (f" ({info['nodes']} nodes x {info['gpus_per_node']} GPUs, "
                                   f"{info['scheduler']})" if info else ""),
            "Installation: AcmeTrace (Shanghai AI Laboratory), https://github.com/InternLM/AcmeTrace"
            if info else f"Installation: {name}",
            f"Conversion: acmemodel {__version__} "
            f"{_dt.datetime.now(_dt.timezone.utc).strftime('%d %b %Y')}",
            f"MaxJobs: {len(sub):,}",
            f"MaxRecords: {len(sub):,}",
            "Preemption: No",
            f"UnixStartTime: {facts['t0']}",
            f"TimeZoneString: {tzname}",
            f"StartTime: {_date_string(facts['t0'], tzname, off)}",
            f"EndTime:   {_date_string(facts['t_end'], tzname, off)}",
            f"MaxNodes: {max_nodes}",
            f"MaxProcs: {max_procs}",
            f"MaxQueues: {max_q}",
            f"Queues: queue number = job type code: {legend}",
            *[f"Queue: {c} {t}" for t, c in sorted(tc.items(), key=lambda kv: kv[1]) if c <= max_q],
            "Note: processors are GPUs (fields 5 and 8 count GPUs; MaxProcs is the cluster's GPU count).",
            "Note: status 1 = COMPLETED, 0 = FAILED (incl. TIMEOUT and NODE_FAIL), 5 = CANCELLED.",
            f"Note: status 5 (cancelled) jobs hold {cancel_share:.1%} of the GPU time (run time x GPUs): "
            "keep them; a reader that drops status 5 loses that work.",
            f"Note: times are integer seconds: each timestamp was rounded to the nearest second (half to "
            f"even; largest adjustment {facts['rounding_s']:.3f} s) and wait/run/think times are differences "
            "of rounded timestamps, so submit + wait + run = end exactly.",
            "Note: a restart attempt is a new job: field 17 = job number of the failed attempt it restarts, "
            f"field 18 = restart gap (its submit - that attempt's end, s); {facts['links']} restart links "
            f"(chains from {chain_src})"
            + (f"; {facts['think_clipped']} negative gaps written as 0." if facts["think_clipped"] else "."),
            f"Note: {facts['never_started']} jobs never started (cancelled while queued): wait = time until "
            "cancellation, run = 0, allocated processors = -1.",
            f"Note: user IDs numbered 1..{len(facts['users'])} in order of first appearance; "
            f"map in {C.safe_name(name)}_swf_jobs.csv.",
        ]
        if not include_cpu:
            hdr.append(f"Note: {n_cpu:,} CPU-only jobs (gpu_num = 0) omitted.")
        else:
            hdr.append(f"Note: {n_cpu:,} CPU-only jobs (gpu_num = 0) kept with 0 processors.")
        path = C.out_path(out, f"{stems[name]}.swf")
        table = pa.table({f"f{i + 1}": F[:, i] for i in range(18)})
        with open(path, "wb") as f:
            f.write(("".join(f"; {h}\n" for h in hdr)).encode())
            pacsv.write_csv(table, f, pacsv.WriteOptions(include_header=False, delimiter=" "))
        mpath = C.out_path(out, f"{stems[name]}_swf_jobs.csv")
        C.write_csv(mpath, ["job_number", "job_id", "user_id", "user", "type", "state", "chain_id", "attempt"], [
            T.int_strings(F[:, 0]), sub["job_id"].to_numpy(dtype=object), T.int_strings(F[:, 11]),
            sub["user"].to_numpy(dtype=object), sub["type"].to_numpy(dtype=object),
            sub["state"].astype(str).to_numpy(dtype=object), sub["chain_id"].astype(str).to_numpy(dtype=object),
            T.int_strings(sub["attempt"].fillna(1).to_numpy())])
        files += [path, mpath]
        written += len(sub)
        n_jobs += int(sub["chain_id"].nunique())
        frames.append(sub)
        desc.append(f"- `{path.name}`: {len(sub):,} job lines of cluster **{name}** (UnixStartTime "
                    f"{facts['t0']}, TimeZoneString {tzname}); `{mpath.name}`: job number → job id map.\n"
                    f"  **Cancelled jobs (status 5) hold {cancel_share:.1%} of this file's GPU time.** Many "
                    "SWF tools and simulators drop status 5 by default (cancelled = never ran on classic "
                    "HPC logs; e.g. evalys' `Workload.from_csv` keeps status 0 and 1 only); here most "
                    "cancelled jobs ran for hours before being stopped, so dropping them loses that share "
                    "of the load: keep status 5.\n"
                    f"  {int(((F[:, 3] == 0) & (F[:, 4] > 0)).sum()):,} jobs ran for under 0.5 s (run time 0, which "
                    "SWF allows); converters that need a positive run time skip them (Batsim's "
                    "`swf_to_batsim_workload_delay.py` does): `--format batsim` writes them as 1 s instead.")
    if not frames:
        raise ValueError("no GPU jobs to write as SWF (CPU-only jobs are omitted; use include_cpu=True)")
    sections = [("Files", "\n".join(desc)), ("Restart chains", C.chain_note(chain_src, written - n_jobs)),
                ("Format", __doc__.split("\n", 2)[2])]
    files.append(C.write_readme(out, "SWF v2.2 export", sections))
    return C.result("swf", out, files, jobs=n_jobs, attempts=written, df=pd.concat(frames),
                    clusters=[g for g, _ in groups], dropped={"cpu_jobs": gpu_groups.dropped} if not include_cpu else {},
                    chains=chain_src)
