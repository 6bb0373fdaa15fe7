"""Philly ``cluster_job_log`` JSON (msr-fiddle/philly-traces schema).

``OUT/<Cluster>/cluster_job_log`` is a JSON array with one entry per *logical* job::

    {"status": "Pass", "vc": "pretrain", "jobid": "5778432",
     "attempts": [{"start_time": "2023-03-01 00:18:54", "end_time": "2023-03-01 00:20:51",
                   "detail": [{"ip": "node0", "gpus": ["gpu0", ..., "gpu7"]}]}, ...],
     "submitted_time": "2023-03-01 00:18:22", "user": "u5907"}

* A restart chain (``acmemodel.features.chains.restart_chains``) becomes one entry whose
  ``attempts`` are the chain's attempts in order; ``jobid``, ``user``, ``vc`` and
  ``submitted_time`` are those of the first attempt; ``status`` is the last attempt's outcome:
  ``Pass`` (COMPLETED), ``Killed`` (CANCELLED), ``Failed`` (FAILED, TIMEOUT, NODE_FAIL).
  Attempts that never started are not recorded (Philly records scheduling attempts only), so a job
  cancelled in the queue has ``"attempts": []``. The gap between attempts
  (end of attempt k → start of attempt k+1) is the restart gap plus the new attempt's queueing.
* Times ``YYYY-MM-DD HH:MM:SS`` in the cluster's local time (Philly's own logs are in the
  cluster's local time too), whole seconds (rounded to the nearest second).
* ``detail``: one entry per node with that node's GPUs; the trace has no placement, so ``ip`` is a
  placeholder ``node0``, ``node1``, ... per attempt and a job's ``gpu_num`` GPUs are spread evenly
  over its ``node_num`` nodes (``gpu0``.. on each). Counting ``len(detail)`` and
  ``len(gpus)`` gives back the node and GPU counts, which is what Philly analyses use.
* ``vc``: as in the Helios export (``vc``/``partition`` column, type mapping, or Pretrain →
  ``pretrain`` / others → ``shared``).
* A sidecar ``cluster_job_log_attempts.csv`` lists every written attempt (jobid, attempt, job_id,
  type, state) so types and per-attempt ids are not lost.

**Hard-coded epoch.** Helios QSSF and Lucid read Philly data from ``2017-10-01 00:00:00`` (their
``trace_philly_process`` experiment window 2017-10-01 .. 2017-10-07 23:59). ``rebase=True`` shifts
all timestamps by whole weeks so the first submission day starts in the week of 2017-10-01.
CPU-only jobs are omitted by default (Philly is a GPU trace); ``include_cpu=True`` keeps them with
empty GPU lists.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from acmemodel.clusters import GPUS_PER_NODE
from acmemodel.export import _common as C
from acmemodel.export import _text as T

PHILLY_EPOCH = "2017-10-01 00:00:00"
PHILLY_STATUS = {"COMPLETED": "Pass", "CANCELLED": "Killed", "FAILED": "Failed"}
_SAFE = r"^[A-Za-z0-9 _.:/@+=-]*$"


def detail_json(gpus: int, nodes: int) -> str:
    """The ``detail`` list of an attempt with ``gpus`` GPUs on ``nodes`` nodes (placeholder ips)."""
    gpus, nodes = int(gpus), int(nodes)
    if nodes <= 0:
        nodes = max(1, -(-gpus // GPUS_PER_NODE))
    base, extra = divmod(gpus, nodes)
    out = []
    for k in range(nodes):
        g = base + (1 if k < extra else 0)
        out.append({"ip": f"node{k}", "gpus": [f"gpu{i}" for i in range(g)]})
    return json.dumps(out)


def json_strings(values: Any) -> "pa.Array":
    """JSON string literals of ``values`` (fast path when nothing needs escaping)."""
    arr = T.to_arrow(values)
    if len(arr) == 0 or pc.all(pc.match_substring_regex(arr, _SAFE)).as_py():
        return T.cat('"', arr, '"')
    return T.to_arrow(np.array([json.dumps(v) for v in arr.to_pylist()], dtype=object))


def write_philly(jobs: Any, out: str | Path, *, cluster: str | None = None,
                 timezones: Mapping[str, str] | None = None, vc: Mapping[str, str] | str | None = None,
                 vc_default: str = C.DEFAULT_VC_OTHER, include_cpu: bool = False, rebase: bool = False,
                 rebase_to: str | None = None) -> dict[str, Any]:
    """Write ``OUT/<Cluster>/cluster_job_log`` per cluster (module docstring)."""
    _, chain_src, out, groups, offsets = C.prepare(jobs, out, cluster=cluster, timezones=timezones)
    dirs = C.safe_names([g for g, _ in groups], lower=False)
    epoch = rebase_to or PHILLY_EPOCH
    rebase = bool(rebase or rebase_to)
    files, desc, frames, n_entries = [], [], [], 0
    gpu_groups = C.GpuGroups(groups, drop=not include_cpu)
    for name, sub, _ in gpu_groups:
        off = offsets[name]
        shift = T.rebase_shift(float(sub["submit_s"].min()), off, epoch) if rebase else 0
        s, st, st_miss, en, _ = C.rounded_times(sub)
        started = ~st_miss
        parts, vc_desc = C.assign_vc(sub, vc, vc_default=vc_default)
        # detail JSON per distinct (gpus, nodes), expanded by index
        gn = sub["gpu_num"].to_numpy(dtype="int64")
        nn = sub["node_num"].to_numpy(dtype="int64")
        codes, uniq = pd.factorize(pd.MultiIndex.from_arrays([gn, nn]))
        dets = T.to_arrow(np.array([detail_json(g, k) for g, k in uniq], dtype=object)).take(pa.array(codes))
        att = T.cat('{"start_time": "', T.format_times(st + shift, st_miss, offset_s=off), '", "end_time": "',
                    T.format_times(en + shift, offset_s=off), '", "detail": ', dets, "}")  # null if unstarted
        # chains in order of their first submission; attempts in attempt order
        chain = sub["chain_id"].to_numpy()
        attempt = sub["attempt"].fillna(1).to_numpy(dtype="int64")
        ccode, cuniq = pd.factorize(chain)  # order of first appearance = first submission
        order = np.lexsort((attempt, ccode))
        ccode_o = ccode[order]
        first = np.r_[True, ccode_o[1:] != ccode_o[:-1]]
        last = np.r_[ccode_o[1:] != ccode_o[:-1], True]
        keep = started[order]
        counts = np.bincount(ccode_o[keep], minlength=len(cuniq))
        values = att.take(pa.array(order[keep]))
        lists = pa.LargeListArray.from_arrays(pa.array(np.r_[0, np.cumsum(counts)], type=pa.int64()), values)
        joined = pc.binary_join(lists, pa.scalar(", ", type=pa.large_string()))  # no attempt → ""
        fi = order[first]   # row position of each chain's first attempt (chain code order)
        li = order[last]    # row position of each chain's last attempt
        status = pd.Series(sub["analysis_state"].to_numpy()[li]).map(PHILLY_STATUS).fillna("Failed")
        entries = T.cat('{"status": "', status, '", "vc": ', json_strings(parts[fi]), ', "jobid": ',
                        json_strings(sub["job_id"].to_numpy()[fi]), ', "attempts": [', joined,
                        '], "submitted_time": "', T.format_times(s[fi] + shift, offset_s=off), '", "user": ',
                        json_strings(sub["user"].to_numpy()[fi]), "},\n")
        d = C.out_path(out, dirs[name])
        d.mkdir(parents=True, exist_ok=True)
        path = C.out_path(out, dirs[name], "cluster_job_log")
        with open(path, "wb") as f:
            f.write(b"[\n")
            C.write_joined(f, entries, ",\n", terminated=True)
            f.write(b"\n]\n")
        # sidecar: every attempt with its logical jobid
        jobid_of_row = sub["job_id"].to_numpy(dtype=object)[fi][ccode]
        mpath = C.out_path(out, dirs[name], "cluster_job_log_attempts.csv")
        C.write_csv(mpath, ["jobid", "attempt", "job_id", "type", "state", "started"], [
            jobid_of_row, T.int_strings(attempt), sub["job_id"].to_numpy(dtype=object),
            sub["type"].to_numpy(dtype=object), sub["state"].astype(str).to_numpy(dtype=object),
            np.where(started, "true", "false").astype(object)])
        files += [path, mpath]
        frames.append(sub)
        n_entries += len(cuniq)
        line = (f"- `{dirs[name]}/cluster_job_log`: {len(cuniq):,} logical jobs, {int(started.sum()):,} recorded attempts "
                f"({len(sub):,} trace rows; chains from {chain_src}); local time {C.format_offset(off)}; "
                f"vc {vc_desc}.")
        if rebase:
            line += (f" Rebased by {shift} s ({shift / 86400:+.0f} days, whole weeks) onto the week of {epoch}.")
        desc.append(line)
    if not frames:
        raise ValueError("no jobs to write as Philly JSON (CPU-only jobs are omitted; use include_cpu=True)")
    allj = pd.concat(frames)
    sections = [("Files", "\n".join(desc)), ("Restart chains", C.chain_note(chain_src, len(allj) - n_entries)),
                ("Format", __doc__.split("\n", 2)[2])]
    if not include_cpu:
        sections.append(("Omitted", f"{gpu_groups.dropped} CPU-only jobs (gpu_num = 0)."))
    files.append(C.write_readme(out, "Philly cluster_job_log export", sections))
    return C.result("philly", out, files, jobs=n_entries, attempts=len(allj), df=allj,
                    clusters=[g for g, _ in groups], dropped={"cpu_jobs": gpu_groups.dropped} if not include_cpu else {},
                    chains=chain_src, rebased=rebase)
