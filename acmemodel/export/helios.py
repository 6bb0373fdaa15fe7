"""Helios / Lucid ``cluster_log.csv`` plus the ``vc_config.csv`` quota split.

Layout (the ``data/<Cluster>/`` directories the Helios QSSF and Lucid simulators read)::

    OUT/<Cluster>/cluster_log.csv   job_id,user,vc,jobname,gpu_num,cpu_num,node_num,state,
                                    submit_time,start_time,end_time,duration,queue
    OUT/<Cluster>/vc_config.csv     ",num" header, one "<vc>,<nodes>" row per virtual cluster

* Times ``YYYY-MM-DD HH:MM:SS`` (no zone, as in Helios) in the cluster's local time, whole seconds
  (rounded to the nearest second; ``duration``/``queue`` from the rounded timestamps).
* ``duration = end − start`` and ``queue = start − submit`` (seconds, Helios definitions). Jobs that
  never started: empty ``start_time``, ``duration`` 0, ``queue`` = end − submit.
* ``state``: the original state (COMPLETED, CANCELLED, FAILED, TIMEOUT, NODE_FAIL).
* ``vc`` = the quota partition a job runs in: a ``vc``/``partition`` column of the jobs, a
  type → partition mapping, or the default split (Pretrain → ``pretrain``, other types → ``shared``).
* ``jobname`` = the job type (Lucid/QSSF estimators group history by user and jobname).
* ``vc_config.csv``: nodes per partition — given (``vc_nodes``, e.g. a planned quota split), or by
  default the cluster's nodes split in proportion to each partition's GPU time, with every partition
  at least as large as its largest job (a job larger than its partition would never run).

**Hard-coded epochs.** Both simulators assume the trace period of the original Helios data:
``trace_process`` keeps jobs submitted at or after ``2020-04-01 00:00:00``, re-bases submit times on
the first kept job, and cuts experiment windows by dates counted from that epoch (Lucid
``Venus_Sept`` = 2020-09-01 .. 2020-09-26 23:59, ``July`` = 2020-07-01 .. 2020-07-31 23:59).
An unshifted 2023 trace loads, but the windows then select the days at the same *offset* from the
first job. ``rebase=True`` shifts every timestamp by a whole number of weeks so the first
submission day starts in the week beginning 2020-04-01 (hour of day and weekday preserved; the
AcmeTrace start 2023-03-01 maps exactly onto 2020-04-01); the README lists the shift and what the
named windows select in original dates.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

import numpy as np
import pandas as pd

from acmemodel.clusters import cluster_info
from acmemodel.export import _common as C

HELIOS_COLUMNS = ["job_id", "user", "vc", "jobname", "gpu_num", "cpu_num", "node_num", "state", "submit_time",
                  "start_time", "end_time", "duration", "queue"]
#: the trace start hard-coded in Helios QSSF and Lucid ``trace_process``
HELIOS_EPOCH = "2020-04-01 00:00:00"
#: experiment windows hard-coded in Lucid ``get_trace`` (local wall-clock dates)
LUCID_WINDOWS = {"Sept": ("2020-09-01 00:00:00", "2020-09-26 23:59:00"),
                 "July": ("2020-07-01 00:00:00", "2020-07-31 23:59:00")}


def vc_config(parts: np.ndarray, gpu_time: np.ndarray, node_num: np.ndarray, *, total_nodes: int | None,
              vc_nodes: Mapping[str, int] | None) -> tuple[pd.Series, list[str], str]:
    """Nodes per partition (Series indexed by partition), notes, and how they were chosen."""
    names = sorted(set(parts.tolist()))
    peak = pd.Series(node_num, dtype="int64").groupby(parts).max().reindex(names).fillna(0).astype("int64")
    notes: list[str] = []
    if vc_nodes is not None:
        given = {str(k): int(v) for k, v in dict(vc_nodes).items()}
        missing = [v for v in names if v not in given]
        if missing:
            raise ValueError(f"vc_nodes has no size for partition(s) {', '.join(missing)}")
        bad = [k for k, v in given.items() if v < 0]
        if bad:
            raise ValueError(f"vc_nodes must be >= 0, got {bad[0]}={given[bad[0]]}")
        cfg = pd.Series(given, dtype="int64")
        small = [f"{v} ({cfg[v]} nodes < largest job {peak[v]})" for v in names if cfg[v] < peak[v]]
        if small:
            notes.append("partitions smaller than their largest job (those jobs can never run in the "
                         "simulator): " + "; ".join(small))
        return cfg, notes, "given (vc_nodes)"
    w = pd.Series(gpu_time, dtype=float).groupby(parts).sum().reindex(names).fillna(0).to_numpy()
    minimum = np.maximum(peak.to_numpy(), 1)
    total = int(total_nodes) if total_nodes else int(minimum.sum())
    if minimum.sum() > total:
        notes.append(f"the partitions' largest jobs need {int(minimum.sum())} nodes, more than the "
                     f"{total} available: each partition sized to its largest job")
    sizes = C.largest_remainder(w, total, minimum)
    return pd.Series(sizes, index=names, dtype="int64"), notes, (
        f"default: {total} nodes split in proportion to GPU time, each partition >= its largest job")


def write_helios(jobs: Any, out: str | Path, *, cluster: str | None = None,
                 timezones: Mapping[str, str] | None = None, vc: Mapping[str, str] | str | None = None,
                 vc_default: str = C.DEFAULT_VC_OTHER, vc_nodes: Mapping[str, int] | None = None,
                 total_nodes: int | None = None, rebase: bool = False, rebase_to: str | None = None,
                 include_cpu: bool = True) -> dict[str, Any]:
    """Write ``OUT/<Cluster>/cluster_log.csv`` and ``vc_config.csv`` per cluster (module docstring).

    Parameters
    ----------
    vc : column name, type → partition mapping, or None (see :func:`_common.assign_vc`).
    vc_default : partition of types the mapping does not name.
    vc_nodes : partition → nodes for ``vc_config.csv`` (default: proportional split, see above).
    total_nodes : cluster nodes for the default split (default: the published size).
    rebase, rebase_to : shift timestamps to the Helios/Lucid epoch (``rebase_to`` overrides
        ``2020-04-01 00:00:00``; giving ``rebase_to`` implies ``rebase``).
    include_cpu : keep CPU-only jobs (Helios logs have them; the simulators skip them).
    """
    _, chain_src, out, groups, offsets = C.prepare(jobs, out, cluster=cluster, timezones=timezones)
    epoch = rebase_to or HELIOS_EPOCH
    rebase = bool(rebase or rebase_to)
    files, desc, notes, frames = [], [], [], []
    gpu_groups = C.GpuGroups(groups, drop=not include_cpu)
    for name, sub, _ in gpu_groups:
        off = offsets[name]
        shift = C.rebase_shift(float(sub["submit_s"].min()), off, epoch) if rebase else 0
        s, st, st_miss, en, rounding = C.rounded_times(sub)
        started = ~st_miss
        parts, vc_desc = C.assign_vc(sub, vc, vc_default=vc_default)
        run = np.where(started, en - st, 0)
        gpu_time = np.where(sub["gpu_num"].to_numpy() > 0, sub["gpu_num"].to_numpy() * run, 0)
        info = cluster_info(name) or {}
        cfg, vnotes, how = vc_config(parts, gpu_time, sub["node_num"].to_numpy(),
                                     total_nodes=total_nodes or info.get("nodes"), vc_nodes=vc_nodes)
        notes += [f"{name}: {n}" for n in vnotes]
        cols = [sub["job_id"].to_numpy(dtype=object), sub["user"].to_numpy(dtype=object), parts,
                sub["type"].to_numpy(dtype=object), C.int_strings(sub["gpu_num"].to_numpy()),
                C.num_strings(sub["cpu_num"]), C.int_strings(sub["node_num"].to_numpy()),
                sub["state"].astype(str).to_numpy(dtype=object),
                C.format_times(s + shift, offset_s=off), C.format_times(st + shift, st_miss, offset_s=off),
                C.format_times(en + shift, offset_s=off), C.int_strings(run),
                C.int_strings(np.where(started, st - s, en - s))]
        d = out / name
        d.mkdir(parents=True, exist_ok=True)
        log, vcp = d / "cluster_log.csv", d / "vc_config.csv"
        C.write_csv(log, HELIOS_COLUMNS, cols)
        C.write_csv(vcp, ["", "num"], [np.array(cfg.index, dtype=object), C.int_strings(cfg.to_numpy())])
        files += [log, vcp]
        frames.append(sub)
        lines = [f"- `{name}/cluster_log.csv`: {len(sub)} jobs; times in local time {C.format_offset(off)}"
                 f" (largest rounding {rounding:.3f} s).",
                 f"- `{name}/vc_config.csv`: {len(cfg)} partitions, {int(cfg.sum())} nodes ({how}); "
                 f"jobs assigned {vc_desc}: " + ", ".join(f"{k}={v}" for k, v in cfg.items()) + "."]
        if rebase:
            lines.append(_rebase_text(name, shift, off, epoch))
        else:
            lines.append(f"- Not rebased: original dates kept (first submission "
                         f"{C.format_times(np.array([s.min()]), offset_s=off)[0]} local). Pass "
                         f"`--rebase` to move the trace onto the simulators' epoch {HELIOS_EPOCH}.")
        desc.append("\n".join(lines))
    if not frames:
        raise ValueError("no jobs to write")
    allj = pd.concat(frames)
    n_jobs = int(allj["chain_id"].nunique())
    sections = [("Files", "\n".join(desc)), ("Restart chains", C.chain_note(chain_src, len(allj) - n_jobs)),
                ("Format", __doc__.split("\n", 2)[2])]
    if notes:
        sections.append(("Warnings", "\n".join(f"- {n}" for n in notes)))
    files.append(C.write_readme(out, "Helios / Lucid export", sections))
    return C.result("helios", out, files, jobs=n_jobs, attempts=len(allj), df=allj,
                    clusters=[g for g, _ in groups], dropped={"cpu_jobs": gpu_groups.dropped} if not include_cpu else {},
                    notes=notes, rebased=rebase)


def _rebase_text(name: str, shift: int, off: int, epoch: str) -> str:
    days = shift / 86400
    wins = []
    for label, (a, b) in LUCID_WINDOWS.items():
        ta = (pd.Timestamp(a) - pd.Timedelta(seconds=shift)).strftime("%Y-%m-%d %H:%M")
        tb = (pd.Timestamp(b) - pd.Timedelta(seconds=shift)).strftime("%Y-%m-%d %H:%M")
        wins.append(f"Lucid '{label}' window = original {ta} .. {tb}")
    return (f"- Rebased: every timestamp of {name} shifted by {shift} s ({days:+.0f} days, a whole number "
            f"of weeks) so the first submission day starts in the week of {epoch} (hour of day and weekday "
            f"preserved). " + "; ".join(wins) + " (local dates).")
