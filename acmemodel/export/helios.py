"""Helios / Lucid ``cluster_log.csv`` plus the ``vc_config.csv`` quota split.

Layout (the ``data/<Cluster>/`` directories the Helios QSSF and Lucid simulators read)::

    OUT/<Cluster>/cluster_log.csv   job_id,user,vc,jobname,gpu_num,cpu_num,node_num,state,
                                    submit_time,start_time,end_time,duration,queue
    OUT/<Cluster>/vc_config.csv     ",num" header, one "<vc>,<nodes>" row per virtual cluster

* Times ``YYYY-MM-DD HH:MM:SS`` (no zone, as in Helios) in the cluster's local time, whole seconds
  (rounded to the nearest second; ``duration``/``queue`` from the rounded timestamps).
* ``duration = end − start`` and ``queue = start − submit`` (seconds, Helios definitions). Jobs that
  never started: empty ``start_time``, ``queue`` = end − submit.
* **Durations are at least 1 s.** The Helios QSSF and Lucid simulators never finish a job of
  ``duration`` 0 (their event loops spin forever), so runs shorter than 1 s and jobs that never
  started get ``duration`` 1; the README counts them.
* ``state``: the original state (COMPLETED, CANCELLED, FAILED, TIMEOUT, NODE_FAIL).
* ``vc`` = the quota partition a job runs in: a ``vc``/``partition`` column of the jobs, a
  type → partition mapping, or the default split: Pretrain jobs **and every job of at least
  ``large_gpus`` GPUs** (default 256, any type) → ``pretrain``, other jobs → ``shared``. Routing the
  large Debug/MLLM/SFT jobs with the pretraining runs keeps a 1,024-GPU debug job from holding the
  head of the shared FIFO queue for days.
* ``jobname`` = the job type (Lucid/QSSF estimators group history by user and jobname).
* ``vc_config.csv``: nodes per partition — given (``vc_nodes``, e.g. a planned quota split), or by
  default the cluster's nodes split in proportion to each partition's GPU time, with every partition
  at least as large as its largest job (a job larger than its partition would never run).

**Hard-coded windows.** Both simulators keep jobs submitted at or after ``2020-04-01 00:00:00``,
measure submit times from the *first kept job*, and simulate only an experiment window counted from
``2020-04-01``: ``Sept`` = 2020-09-01 00:00 .. 09-26 23:59 (days 153–178), ``July`` = 2020-07-01
.. 07-31 23:59 (days 91–121), chosen by the experiment name (``-e Venus_Sept``). A trace shorter
than 153 days therefore never reaches the Sept window, however it is shifted.

* ``rebase_to="Sept"`` (or ``"July"``, or an experiment name containing one, CLI ``--rebase-to``)
  shifts every timestamp by a whole number of weeks so the first submission day starts in the first
  week of that window (hour of day and weekday preserved), and writes one **anchor row** first:
  job ``0`` (or the largest numeric id + 1), user ``acmemodel-anchor``, 1 GPU, 1 s, submitted
  ``2020-04-01 00:00:00``. The simulators then measure time from 2020-04-01 and the window selects
  the trace's own jobs; the anchor lies outside every window and its user has no job in it, so it is
  neither simulated nor used as estimator history. Jobs after the window end are not simulated; the
  README says how many.
* ``rebase=True`` (CLI ``--rebase``) shifts by whole weeks so the first submission day starts in
  the week of 2020-04-01 (the AcmeTrace start 2023-03-01 maps exactly onto it), for traces long
  enough to reach the windows by themselves.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Mapping

import numpy as np
import pandas as pd

from acmemodel.clusters import cluster_info
from acmemodel.export import _common as C
from acmemodel.export import _text as T

HELIOS_COLUMNS = ["job_id", "user", "vc", "jobname", "gpu_num", "cpu_num", "node_num", "state", "submit_time",
                  "start_time", "end_time", "duration", "queue"]
#: the trace start hard-coded in Helios QSSF and Lucid ``trace_process``
HELIOS_EPOCH = "2020-04-01 00:00:00"
#: experiment windows hard-coded in Helios QSSF ``simulator.py`` and Lucid ``get_trace`` (local dates)
LUCID_WINDOWS = {"Sept": ("2020-09-01 00:00:00", "2020-09-26 23:59:00"),
                 "July": ("2020-07-01 00:00:00", "2020-07-31 23:59:00")}
#: shortest ``duration`` written (s): the simulators loop forever on a 0-second job
MIN_DURATION_S = 1
#: default size (GPUs) from which a job of any type goes to the large-job (``pretrain``) partition
LARGE_GPUS = 256
ANCHOR_USER = "acmemodel-anchor"


def experiment_window(experiment: str) -> tuple[str, str, str]:
    """``(label, start, end)`` of the window an experiment name selects (``"Sept"``, ``"Venus_Sept"``,
    ``"July"``); ``ValueError`` naming the known windows otherwise."""
    for label, (a, b) in LUCID_WINDOWS.items():
        if label.lower() in str(experiment).lower():
            return label, a, b
    known = "; ".join(f"{k} = {a[:10]} .. {b[:10]}" for k, (a, b) in LUCID_WINDOWS.items())
    raise ValueError(f"rebase_to: {experiment!r} names no window the Helios/Lucid simulators read "
                     f"({known})")


def _anchor_id(ids: np.ndarray) -> str:
    """A job id for the anchor row that cannot clash: 0, or the largest numeric id + 1."""
    num = pd.to_numeric(pd.Series(ids, dtype=object), errors="coerce")
    if num.notna().all():
        return "0" if not (num == 0).any() else str(int(num.max()) + 1)
    return "acmemodel-anchor"


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
        notes.append(f"the partitions' largest jobs need {int(minimum.sum()):,} nodes, more than the "
                     f"{total} available: each partition sized to its largest job")
    sizes = C.largest_remainder(w, total, minimum)
    return pd.Series(sizes, index=names, dtype="int64"), notes, (
        f"default: {total} nodes split in proportion to GPU time, each partition >= its largest job")


def write_helios(jobs: Any, out: str | Path, *, cluster: str | None = None,
                 timezones: Mapping[str, str] | None = None, vc: Mapping[str, str] | str | None = None,
                 vc_default: str = C.DEFAULT_VC_OTHER, vc_nodes: Mapping[str, int] | None = None,
                 total_nodes: int | None = None, rebase: bool = False, rebase_to: str | None = None,
                 include_cpu: bool = True, large_gpus: int | None = LARGE_GPUS,
                 vc_source: str | None = None) -> dict[str, Any]:
    """Write ``OUT/<Cluster>/cluster_log.csv`` and ``vc_config.csv`` per cluster (module docstring).

    Parameters
    ----------
    vc : column name, type → partition mapping, or None (see :func:`_common.assign_vc`).
    vc_default : partition of types the mapping does not name.
    large_gpus : with the default split, jobs of at least this many GPUs go to ``pretrain`` whatever
        their type (``None``/0: by type only).
    vc_nodes : partition → nodes for ``vc_config.csv`` (default: proportional split, see above), or
        cluster → (partition → nodes) for a layout per cluster (e.g. the bundle's calibrated policy).
    vc_source : how ``vc_nodes`` was chosen, for the README (e.g. "the bundle's calibrated policy").
    total_nodes : cluster nodes for the default split (default: the published size).
    rebase : shift timestamps (whole weeks) so the trace starts in the week of 2020-04-01.
    rebase_to : an experiment window (``"Sept"``, ``"July"`` or a name containing one): shift into
        that window and write the anchor row (module docstring); or an epoch timestamp replacing
        2020-04-01 for ``rebase``.
    include_cpu : keep CPU-only jobs (Helios logs have them; the simulators skip them).
    """
    window = None
    if rebase_to is not None and any(k.lower() in str(rebase_to).lower() for k in LUCID_WINDOWS):
        window = experiment_window(rebase_to)
    elif rebase_to is not None and not re.match(r"^\d{4}-\d{2}-\d{2}", str(rebase_to)):
        experiment_window(rebase_to)  # neither a window nor an epoch date: raises, naming the windows
    if large_gpus is not None and int(large_gpus) < 0:
        raise ValueError(f"large_gpus must be >= 0, got {large_gpus!r}")
    _, chain_src, out, groups, offsets = C.prepare(jobs, out, cluster=cluster, timezones=timezones)
    dirs = C.safe_names([g for g, _ in groups], lower=False)
    epoch = window[1] if window else (rebase_to or HELIOS_EPOCH)
    rebase = bool(rebase or rebase_to)
    files, desc, notes, frames = [], [], [], []
    gpu_groups = C.GpuGroups(groups, drop=not include_cpu)
    for name, sub, _ in gpu_groups:
        off = offsets[name]
        shift = T.rebase_shift(float(sub["submit_s"].min()), off, epoch) if rebase else 0
        s, st, st_miss, en, rounding = C.rounded_times(sub)
        started = ~st_miss
        parts, vc_desc = C.assign_vc(sub, vc, vc_default=vc_default)
        if vc is None and large_gpus and not any(c in sub.columns for c in ("vc", "partition")):
            big = sub["gpu_num"].to_numpy() >= int(large_gpus)
            parts = np.where(big, C.DEFAULT_VC["Pretrain"], parts).astype(object)
            vc_desc += f", and every job of >= {int(large_gpus)} GPUs → {C.DEFAULT_VC['Pretrain']}"
        run = np.where(started, en - st, 0)
        dur = np.maximum(run, MIN_DURATION_S)
        raised = run < MIN_DURATION_S
        gpu_time = np.where(sub["gpu_num"].to_numpy() > 0, sub["gpu_num"].to_numpy() * run, 0)
        info = cluster_info(name) or {}
        cl_nodes = vc_nodes
        if vc_nodes is not None and all(isinstance(v, Mapping) for v in dict(vc_nodes).values()):
            cl_nodes = dict(vc_nodes).get(name)  # per cluster: {cluster: {partition: nodes}}
        cfg, vnotes, how = vc_config(parts, gpu_time, sub["node_num"].to_numpy(),
                                     total_nodes=total_nodes or info.get("nodes"), vc_nodes=cl_nodes)
        if cl_nodes is not None and vc_source:
            how = vc_source
        notes += [f"{name}: {n}" for n in vnotes]
        cols = [sub["job_id"].to_numpy(dtype=object), sub["user"].to_numpy(dtype=object), parts,
                sub["type"].to_numpy(dtype=object), T.int_strings(sub["gpu_num"].to_numpy()),
                T.num_strings(sub["cpu_num"]), T.int_strings(sub["node_num"].to_numpy()),
                sub["state"].astype(str).to_numpy(dtype=object),
                T.format_times(s + shift, offset_s=off), T.format_times(st + shift, st_miss, offset_s=off),
                T.format_times(en + shift, offset_s=off), T.int_strings(dur),
                T.int_strings(np.where(started, st - s, en - s))]
        d = C.out_path(out, dirs[name])
        d.mkdir(parents=True, exist_ok=True)
        log, vcp = C.out_path(d, "cluster_log.csv"), C.out_path(d, "vc_config.csv")
        header_line = None
        if window:
            anchor_vc = str(cfg.idxmax())
            anchor = [_anchor_id(sub["job_id"].to_numpy()), ANCHOR_USER, anchor_vc, "anchor", "1", "0", "1",
                      "COMPLETED", HELIOS_EPOCH, HELIOS_EPOCH,
                      (pd.Timestamp(HELIOS_EPOCH) + pd.Timedelta(seconds=1)).strftime("%Y-%m-%d %H:%M:%S"),
                      "1", "0"]
            header_line = ",".join(HELIOS_COLUMNS) + "\n" + ",".join(anchor)
        C.write_csv(log, HELIOS_COLUMNS, cols, header_line=header_line)
        C.write_csv(vcp, ["", "num"], [np.array(cfg.index, dtype=object), T.int_strings(cfg.to_numpy())])
        files += [log, vcp]
        frames.append(sub)
        lines = [f"- `{dirs[name]}/cluster_log.csv`: {len(sub):,} jobs; times in local time {C.format_offset(off)}"
                 f" (largest rounding {rounding:.3f} s).",
                 f"- `{dirs[name]}/vc_config.csv`: {len(cfg):,} partitions, {int(cfg.sum()):,} nodes ({how}); "
                 f"jobs assigned {vc_desc}: " + ", ".join(f"{k}={v}" for k, v in cfg.items()) + "."]
        lines.append(f"- {int(raised.sum()):,} durations raised to {MIN_DURATION_S} s ({int(st_miss.sum()):,} jobs "
                     f"that never started, {int((raised & started).sum()):,} shorter runs): the simulators "
                     "never finish a 0-second job.")
        if window:
            gpu = sub["gpu_num"].to_numpy() > 0
            lines.append(_window_text(name, shift, (s + shift)[gpu], off, window, anchor[0], anchor_vc))
        elif rebase:
            lines.append(_rebase_text(name, shift, off, epoch))
        else:
            lines.append(f"- Not rebased: original dates kept (first submission "
                         f"{T.format_times(np.array([s.min()]), offset_s=off)[0]} local): the "
                         "simulators' Sept/July windows select nothing unless the trace is longer than "
                         "the window's offset; pass `--rebase-to Sept` (or July) to place it in a window.")
        desc.append("\n".join(lines))
    if not frames:
        raise ValueError("no jobs to write")
    allj = pd.concat(frames)
    n_jobs = int(allj["chain_id"].nunique())
    sections = [("Files", "\n".join(desc)), ("Restart chains", C.chain_note(chain_src, len(allj) - n_jobs)),
                ("What the simulators need that this export does not write", _needs_text(
                    [g for g, _ in groups], window[0] if window else "Sept")),
                ("Format", __doc__.split("\n", 2)[2])]
    if notes:
        sections.append(("Warnings", "\n".join(f"- {n}" for n in notes)))
    files.append(C.write_readme(out, "Helios / Lucid export", sections))
    return C.result("helios", out, files, jobs=n_jobs, attempts=len(allj), df=allj,
                    clusters=[g for g, _ in groups], dropped={"cpu_jobs": gpu_groups.dropped} if not include_cpu else {},
                    notes=notes, rebased=rebase, window=window[0] if window else None)


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


def _window_text(name: str, shift: int, submit_local: np.ndarray, off: int, window, anchor_id: str,
                 anchor_vc: str) -> str:
    label, a, b = window
    # the simulators compare naive local wall-clock times: local seconds of the shifted submissions
    loc = submit_local + off
    lo = pd.Timestamp(a).value // 10**9
    hi = pd.Timestamp(b).value // 10**9
    inside = int(((loc >= lo) & (loc <= hi)).sum())
    after = int((loc > hi).sum())
    return (f"- Placed in the **{label}** window ({a[:16]} .. {b[:16]}): every timestamp of {name} shifted "
            f"by {shift} s ({shift / 86400:+.0f} days, whole weeks: hour of day and weekday kept); "
            f"{inside} GPU jobs (the simulators read GPU jobs only) fall inside the window, {after} after "
            f"its end (not simulated). Anchor row "
            f"first: job `{anchor_id}` of user `{ANCHOR_USER}` in vc `{anchor_vc}`, submitted {HELIOS_EPOCH} "
            f"(1 GPU, 1 s) so the simulators count days from 2020-04-01; it is outside the window and "
            f"never simulated. Run with an experiment name containing `{label}` (e.g. `-e {name}_{label}`).")


def _needs_text(clusters: list[str], label: str) -> str:
    """The files Helios QSSF and Lucid read that this export does not write, with a command each."""
    c = clusters[0] if clusters else "Seren"
    exp = f"{c}_{label}"
    py = "python -c"
    return "\n".join([
        "Copy each `<Cluster>/` directory to the simulator's `data/<Cluster>/`; run from the "
        "simulator's directory (`framework/QSSF Service` of HeliosArtifact, `simulation` of Lucid).",
        "",
        "Helios QSSF (`python simulator.py -e " + exp + " -t ./data/" + c + " -s qssf`):",
        f"- `data/{c}/vc_dict_homo.pkl` (VC → nodes, a pickled dict) from our `vc_config.csv`:",
        f"  `{py} \"import pandas as pd; pd.to_pickle(pd.read_csv('data/{c}/vc_config.csv', "
        f"index_col=0)['num'].to_dict(), 'data/{c}/vc_dict_homo.pkl')\"`",
        f"- `estimators/{exp}_lgb.csv` (columns `job_id,priority`: the predicted duration, s, of every "
        "job): read at start-up whatever the scheduler (the simulator always builds its estimator), "
        "used by `qssf`; the authors' file holds LightGBM predictions. A stand-in from the true "
        "durations (an oracle — say so when you report results):",
        f"  `{py} \"import pandas as pd; d = pd.read_csv('data/{c}/cluster_log.csv'); "
        f"d[['job_id', 'duration']].rename(columns={{'duration': 'priority'}})"
        f".to_csv('estimators/{exp}_lgb.csv', index=False)\"`",
        "- Checked: Helios' `trace_process` selects the window's GPU jobs from these files, and its `fifo` "
        "and `qssf` schedulers run them (its closing `cluster_analysis` step expects the logs of all "
        "four schedulers, i.e. `--sweep`). Helios' estimator calls `DataFrame.append`: use pandas < 2.",
        "",
        f"Lucid (`python simulator.py -e {exp} -t ./data/{c} -s <scheduler>`):",
        f"- `data/{c}/cluster_full_log.csv`: `cluster_log.csv` plus Lucid's profiled columns `dataset, "
        "model, batchsize, amp, speed, gpu_util, gmem_util, gmem` (measured by Lucid's `profile/` "
        "tools on its DL benchmark models; AcmeTrace has no such data). Placeholders that make "
        "no two jobs look co-locatable (full GPU use, no speed-up):",
        f"  `{py} \"import pandas as pd; d = pd.read_csv('data/{c}/cluster_log.csv'); "
        "d = d.assign(dataset='none', model='none', batchsize=0, amp=0, speed=1.0, gpu_util=100.0, "
        f"gmem_util=100.0, gmem=80000); d.to_csv('data/{c}/cluster_full_log.csv', index=False)\"`",
        f"- `estimator/lgb/{exp}_lgb.csv` (read at start-up for every scheduler but `lucid`; same command "
        "as above, written to that path) and, for "
        f"`-s lucid`, `estimator/ebm/{exp}_ebm_weekly_updated.csv` (same columns). Lucid's own code only "
        "accepts `-s lucid` for experiments whose name contains `Venus`, and its profiler subtracts a "
        "node from the Venus VCs `vc8Gr` and `vcefl`; `predictor/<Cluster>_throughput_pred.csv` "
        "(throughput forecast, made by Lucid's `predictor/predictor.ipynb`) is needed by the `lucid` "
        "scheduler too. With our partitions use the QSSF/FIFO-family schedulers, or rename partitions "
        "with `--vc TYPE=NAME` to match.",
        "- `data/colocate_info.csv` ships with Lucid.",
    ])
