"""Batsim JSON workload (https://batsim.readthedocs.io, "Workload" input).

``OUT/<cluster>_workload.json``::

    {"nb_res": 2288,
     "description": "...units, epoch, resource meaning...",
     "jobs": [{"id": "1", "subtime": 0, "res": 8, "profile": "delay_117",
               "type": "Other", "final_state": "FAILED", "attempt": 1, "user": "u5907",
               "trace_job_id": "5778432", "started": true}, ...,
              {"id": "9", ..., "attempt": 2, "prev_id": "4", "restart_gap": 362, ...}],
     "profiles": {"delay_117": {"type": "delay", "delay": 117}, ...}}

* One resource = one GPU (``res`` = ``gpu_num``; ``nb_res`` = the cluster's GPU count, raised to the
  largest job if needed — stated in ``description``). CPU-only jobs are omitted (``res`` must be
  positive) and counted.
* ``subtime``: seconds since the first submission (``description`` gives that epoch in UTC);
  ``delay`` profiles hold the run time ``end − start`` in seconds. Times keep millisecond precision
  (rounded to 1 ms); whole-second values are written as integers. Identical delays share one profile
  ``delay_<seconds>``.
* **Delays are at least 1 s.** Batsim rejects a delay profile whose ``delay`` is not strictly
  positive ("non-strictly-positive 'delay'", every version since 1.3), so run times under 1 s — and
  jobs that never started (cancelled in the queue, flagged ``"started": false``) — get a 1 s delay;
  the README counts them, and ``run_time`` keeps the true run time (s).
* No ``walltime`` field: the trace has no requested time, and Batsim reads an absent walltime as
  "no limit" in every version since 1.3 (Batsim 1.3–4.x also took ``-1``, Batsim >= 5 rejects it).
* Extra job fields (Batsim forwards them to the scheduler untouched): ``type``, ``final_state``
  (the original state: COMPLETED, FAILED, CANCELLED, TIMEOUT, NODE_FAIL), ``attempt`` (1-based
  position in the restart chain), ``prev_id`` / ``restart_gap`` (id of the failed attempt this one
  restarts and the gap between its end and this submission, s), ``user``, ``trace_job_id``,
  ``started``, ``run_time``.
* Profile type: ``"delay"`` is the name Batsim 1.3–4.x read; Batsim >= 5 only knows
  ``"DelayProfile"`` — write it with ``profile_type="DelayProfile"`` (CLI ``--batsim-profile
  DelayProfile``).
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from acmemodel.clusters import cluster_info
from acmemodel.export import _common as C
from acmemodel.export import _text as T
from acmemodel.export.philly import json_strings


#: shortest delay written (s): Batsim asserts ``delay > 0`` for every delay profile
MIN_DELAY_S = 1.0


def _ms_strings(x: np.ndarray) -> "pa.Array":
    """Seconds rounded to 1 ms: integers as ``117``, others as the shortest float text."""
    return T.short_float_strings(np.round(np.asarray(x, dtype=float), 3))


def write_batsim(jobs: Any, out: str | Path, *, cluster: str | None = None, total_gpus: int | None = None,
                 profile_type: str = "delay", timezones: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Write ``OUT/<cluster>_workload.json`` per cluster (module docstring)."""
    if profile_type not in ("delay", "DelayProfile"):
        raise ValueError(f"profile_type must be 'delay' or 'DelayProfile', got {profile_type!r}")
    _, chain_src, out, groups, _ = C.prepare(jobs, out, cluster=cluster, local_time=False)
    stems = C.safe_names([g for g, _ in groups])
    files, desc, frames, n_jobs = [], [], [], 0
    gpu_groups = C.GpuGroups(groups)
    for name, sub, n_cpu in gpu_groups:
        n = len(sub)
        t0 = float(sub["submit_s"].min())
        started = ~np.isnan(sub["start_s"].to_numpy())
        run = np.where(started, sub["end_s"].to_numpy() - sub["start_s"].fillna(0).to_numpy(), 0.0)
        run = np.round(np.maximum(run, 0.0), 3)
        raised = run < MIN_DELAY_S
        delay = _ms_strings(np.maximum(run, MIN_DELAY_S))
        prof_names = T.cat("delay_", delay)
        ids = T.int_strings(np.arange(1, n + 1))
        gpus = sub["gpu_num"].to_numpy(dtype="int64")
        info = cluster_info(name) or {}
        want = int(total_gpus or info.get("gpus") or gpus.max())
        nb_res = max(want, int(gpus.max()))
        attempt = sub["attempt"].fillna(1).to_numpy(dtype="int64")
        pos = C.prev_positions(sub)
        link = pos >= 0
        gap = np.where(link, sub["submit_s"].to_numpy() - sub["end_s"].to_numpy()[np.maximum(pos, 0)], 0.0)
        extra = pc.if_else(pa.array(link), T.cat(', "prev_id": "', ids.take(pa.array(np.maximum(pos, 0))),
                                                 '", "restart_gap": ', _ms_strings(gap)), "")
        job_lines = T.cat('{"id": "', ids, '", "subtime": ', _ms_strings(sub["submit_s"].to_numpy() - t0),
                          ', "res": ', T.int_strings(gpus), ', "profile": "', prof_names,
                          '", "type": ', json_strings(sub["type"].to_numpy()), ', "final_state": "',
                          sub["state"].astype(str).to_numpy(dtype=object), '", "attempt": ',
                          T.int_strings(attempt), extra, ', "user": ', json_strings(sub["user"].to_numpy()),
                          ', "trace_job_id": ', json_strings(sub["job_id"].to_numpy()), ', "started": ',
                          np.where(started, "true", "false").astype(object), ', "run_time": ',
                          _ms_strings(run), "},\n")
        uniq = pc.unique(delay).to_pylist()
        prof_lines = [f'"delay_{d}": {{"type": "{profile_type}", "delay": {d}}}' for d in uniq]
        description = (f"acmemodel export of cluster {name}: one resource = one GPU; subtime in seconds since "
                       f"{T.iso_utc(t0)} (first submission, UTC); delay profiles = run time end - start (s), "
                       f"at least {MIN_DELAY_S:g} s (Batsim needs delay > 0; {int(raised.sum()):,} jobs raised, "
                       f"{int((~started).sum()):,} of them never started; run_time = true run time); "
                       f"times rounded to 1 ms; no walltime field = no limit; "
                       f"{n_cpu:,} CPU-only jobs omitted"
                       + (f"; nb_res raised from {want} to the largest job ({nb_res})" if nb_res > want else ""))
        path = C.out_path(out, f"{stems[name]}_workload.json")
        with open(path, "wb") as f:
            f.write(('{\n"nb_res": %d,\n"description": %s,\n"jobs": [\n' % (nb_res, json.dumps(description)))
                    .encode())
            C.write_joined(f, job_lines, ",\n", terminated=True)
            f.write(('\n],\n"profiles": {\n' + ",\n".join(prof_lines) + "\n}\n}\n").encode())
        files.append(path)
        frames.append(sub)
        n_jobs += int(sub["chain_id"].nunique())
        desc.append(f"- `{path.name}`: {n} jobs of cluster **{name}**, {len(uniq):,} delay profiles "
                    f"(type `{profile_type}`), nb_res {nb_res}; subtime 0 = {T.iso_utc(t0)}; "
                    f"{int(link.sum()):,} restart attempts linked (chains from {chain_src}); {n_cpu:,} CPU-only "
                    f"jobs omitted; {int(raised.sum()):,} delays raised to {MIN_DELAY_S:g} s "
                    f"({int((~started).sum()):,} jobs that never started, {int((raised & started).sum()):,} "
                    "shorter runs).")
    if not frames:
        raise ValueError("no GPU jobs to write as a Batsim workload")
    allj = pd.concat(frames)
    sections = [("Files", "\n".join(desc)), ("Restart chains", C.chain_note(chain_src, len(allj) - n_jobs)),
                ("Format", __doc__.split("\n", 2)[2])]
    files.append(C.write_readme(out, "Batsim workload export", sections))
    return C.result("batsim", out, files, jobs=n_jobs, attempts=len(allj), df=allj,
                    clusters=[g for g, _ in groups], dropped={"cpu_jobs": gpu_groups.dropped}, chains=chain_src)
