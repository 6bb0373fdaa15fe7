"""Synthetic AcmeTrace workloads: arrivals + GPU counts + (state, run time) + restart chains.

Generation (:func:`simulate_jobs`), for one cluster over ``[start, start + days)``:

1. **Arrivals** — :meth:`ArrivalModel.sample <acmemodel.models.arrival.ArrivalModel.sample>`:
   submission times from the compound NHPP of each type (batches of evaluation jobs included),
   GPU count per job, a user per batch. Knobs: ``scale`` (multiplies every arrival intensity),
   ``mix`` (``{type: share of jobs}``), ``gpu_scale`` (GPU requests, whole nodes above 8 GPUs).
2. **State and run time** — competing risks (the generative story, with its formulas, is told once
   in :mod:`acmemodel.joblife`): latent failure time from the bundle's ``"failure"`` model (for
   jobs of at least its ``min_gpus_``; the runtime model's cause-specific failure law below that),
   latent completion and cancellation times from the runtime model's cause-specific laws; the
   earliest decides the state and the run time. A NaN run time means the job never started.
3. **Restart chains** — a FAILED job is resubmitted with the bundle's ``"restart"`` model's
   probability ``RestartModel.resubmit_probability(cluster=, type=, gpus=)`` (``restart_prob`` overrides it
   for ``restart_types``) after a restart gap (failure end → resubmission), same user, type and GPU
   count, up to ``max_attempts`` attempts; each attempt draws its own latent times again
   (renewal). The gap is drawn from the restart model (its ``"gap"`` component given the failure's
   GPUs, type, attempt, local hour and weekend; the ``"total"`` time to restart when that model fell
   back to the published prior); without a restart model from :data:`DEFAULT_RESTART_GAP`: a
   lognormal with the median (1.5 min) and mean (102.8 min) of the time-to-restart of the paper's
   Table 3 reasons seen on pretraining-scale jobs (median GPU demand ≥ 256). The arrival model
   excludes restart attempts from its fit, so restarts are not double-counted. The chain travels
   with the data: columns ``chain_id``, ``attempt``, ``prev_job_id`` (job id of the attempt this one
   restarts, empty if none) and ``restart_gap_s``, written after the schema's columns of the
   AcmeTrace file and kept by :func:`acmemodel.load_trace`.
4. **Pretraining runs within the reservation** (:func:`acmemodel.joblife.place_reserved`, the
   generative story's step 5): with a reservation (``pretrain_gpus``; by default the bundle's
   calibrated one) each Pretrain chain — fresh run and restart attempts together — keeps its
   submission time if the GPUs it holds over its span fit beside the chains already placed, else
   its submission is redrawn from the arrival model's Pretrain submissions; the teams plan their
   runs within their reservation, so independent multi-day 1,024-GPU runs do not pile up in it.
5. **Queueing is not simulated**: by default every job starts at its submission (``queue = 0``,
   ``start_time = submit_time``), so the file round-trips through :func:`acmemodel.load_trace` as
   started jobs with run time ``end − start``. Pass ``fill_queue=callable`` (e.g. a wrapper of the
   cluster simulator) to assign waits: it receives the complete job table (``submit_s, gpu_num,
   node_num, run_s, state, type, user, cluster``) and returns one wait per row in seconds (NaN = never
   started, the job is then cancelled at ``submit + wait``); restart attempts are then re-timed so
   each is submitted its gap after its predecessor's actual end. :func:`cluster_queue` builds such a
   hook from the cluster simulator (:func:`acmemodel.sim.cluster.simulate_cluster`).

Output: :func:`simulate_jobs` returns a jobs frame that every :mod:`acmemodel.export` writer
takes as is (restart chains included), so ``acmemodel synth --format swf|helios|philly|batsim``
writes simulator inputs directly. The AcmeTrace file (:func:`to_acmetrace`, :func:`write_acmetrace`)
uses the one AcmeTrace formatter of :mod:`acmemodel.export.acmetrace`: the exact schema of the
cluster, every value a string as in the published files — Seren ``job_id,user,node_num,gpu_num,
cpu_num,type,state,submit_time,start_time,end_time,duration,queue,gpu_time`` with ``+08:00``
timestamps, ``duration = end − start``; Kalos adds ``mem_per_pod_GB,shared_mem_per_pod,fail_time,
stop_time`` with ``+00:00`` timestamps and, like the published Kalos rows, ``duration = end −
submit`` (queue included). Columns the models do not describe get deterministic placeholders taken
from the published examples (:func:`schema_columns`): Seren ``cpu_num = 16 · gpus`` (8 for CPU
jobs); Kalos ``cpu_num = 120 · nodes``, ``mem_per_pod_GB`` 1000 (GPU) / 100 (CPU),
``shared_mem_per_pod`` 100.0 / 10.0; ``node_num = max(1, ceil(gpus / 8))``. Timestamps are whole
seconds (submit floored, run time rounded). Job ids: Seren consecutive integers from 5,000,000 in
submission order; Kalos ``dlc`` + 13 base-36 characters (a seeded bijection of the row number, so
unique).
"""
from __future__ import annotations

import math
import warnings
from pathlib import Path
from typing import Any, Callable, Mapping

import numpy as np
import pandas as pd

from acmemodel.clusters import GPUS_PER_NODE, utc_offset_seconds
from acmemodel.errors import DataWarning
from acmemodel.export.acmetrace import KALOS_COLUMNS, SEREN_COLUMNS

__all__ = ["simulate_jobs", "synthesize", "to_acmetrace", "write_acmetrace", "format_timestamps", "cluster_queue",
           "schema_columns", "synthetic_job_ids", "DEFAULT_RESTART_GAP", "resubmit_probabilities",
           "pretrain_reservation",
           "SEREN_COLUMNS", "KALOS_COLUMNS", "CHAIN_FILE_COLUMNS", "resolve_bundle", "sample_workload"]

#: default restart gap (seconds): lognormal from paper Table 3, see module docstring
DEFAULT_RESTART_GAP = {"median_s": 1.5 * 60, "mean_s": 102.8 * 60,
                       "source": "NSDI'24 Table 3, reasons with median GPU demand >= 256: weighted "
                                 "median of median time-to-restart, weighted mean of mean"}
#: restart-chain columns written after the AcmeTrace schema's (read back by load_trace)
CHAIN_FILE_COLUMNS = ("chain_id", "attempt", "prev_job_id", "restart_gap_s")


# ---------------------------------------------------------------------- bundle and models
def resolve_bundle(bundle=None):
    """A :class:`~acmemodel.models.bundle.Bundle` from a Bundle, a path, or ``None`` (the default
    bundle); :func:`acmemodel.models.bundle.resolve_bundle`."""
    from acmemodel.models.bundle import resolve_bundle as _resolve

    return _resolve(bundle)


def sample_workload(bundle, workload, rng: np.random.Generator) -> pd.DataFrame:
    """The planner's workload sampler: :func:`simulate_jobs` of ``bundle`` for a planner config's
    ``workload`` section (``days``, ``cluster``, ``scale``), drawn with ``rng``."""
    return simulate_jobs(bundle, days=workload.days, cluster=workload.cluster, rng=rng, scale=workload.scale)


def _restart_gap_sampler(restart, timezone: str) -> Callable[[pd.DataFrame, np.random.Generator], np.ndarray]:
    """``f(failures, rng)`` → one restart gap (s) per failed row (columns ``type, gpu_num, attempt,
    end_s``): from a :class:`~acmemodel.models.restart.RestartModel` (its ``"gap"`` component with
    the failure's GPUs, type, attempt, local hour and weekend; its ``"total"`` when it fell back to
    the published prior, which describes only the total), else the default lognormal."""
    med, mean = DEFAULT_RESTART_GAP["median_s"], DEFAULT_RESTART_GAP["mean_s"]
    sigma = math.sqrt(2 * math.log(mean / med))

    def default(rows, rng):
        return med * np.exp(sigma * rng.standard_normal(len(rows)))

    if restart is None:
        return default
    if hasattr(restart, "sample_gaps"):
        return lambda rows, rng: np.asarray(restart.sample_gaps(rows, rng), dtype=float)
    if hasattr(restart, "predict"):
        from acmemodel.features.calendar import calendar_features

        def via_predict(rows, rng):
            # the failure's local hour and weekend, as RestartModel.restart_frame computes them
            cal = calendar_features(rows.assign(cluster="_"), {"_": timezone}, time_col="end_s")
            X = pd.DataFrame({"gpu_num": rows["gpu_num"].to_numpy(dtype=float),
                              "type": rows["type"].astype(str).to_numpy(),
                              "attempt": rows["attempt"].to_numpy(dtype=float),
                              "hour": cal["hour"].to_numpy(dtype=float),
                              "weekend": cal["weekend"].to_numpy(dtype=bool)})
            comp = "total" if getattr(restart, "fallback_", False) else "gap"
            return np.asarray(restart.predict(X, component=comp).sample(1, rng), dtype=float)[:, 0]
        return via_predict
    warnings.warn(f"restart model {type(restart).__name__} has neither sample_gaps nor predict; "
                  "using the default restart gap", DataWarning, stacklevel=3)
    return default


def resubmit_probabilities(restart, cluster: str, types, gpus, *, restart_prob: float | None = None,
                           restart_types: tuple[str, ...] = ("Pretrain",)) -> np.ndarray:
    """Per failed job (aligned ``types``, ``gpus``): the probability that it is resubmitted —
    ``restart_prob`` for ``restart_types`` when given, else the restart model's
    ``resubmit_probability(cluster=, type=, gpus=)`` (its prior without a fitted model)."""
    from acmemodel.features.keys import type_bucket_groups
    from acmemodel.models.restart import resubmit_prior

    types = np.asarray(types, dtype=object)
    gpus = np.asarray(gpus)
    out = np.zeros(len(types))
    for ty, _b, idx in type_bucket_groups(types, gpus):
        if restart_prob is not None:
            p = float(restart_prob) if ty in restart_types else 0.0
        elif restart is not None and hasattr(restart, "resubmit_probability"):
            try:
                p = float(restart.resubmit_probability(cluster=cluster, type=ty, gpus=float(gpus[idx[0]])))
            except ValueError:  # a type with no failed GPU job in the fit (a log's CPU-only type): none
                p = 0.0
        else:
            p = resubmit_prior(ty)
        out[idx] = p
    return out


# ---------------------------------------------------------------------- simulation
def simulate_jobs(bundle=None, *, days: float = 30.0, cluster: str = "Seren", seed: int | None = None,
                  rng: np.random.Generator | None = None, start=None, scale: float = 1.0,
                  mix: Mapping[str, float] | None = None, gpu_scale: float = 1.0,
                  arrival=None, runtime=None, restart=None, failure=None,
                  restart_types: tuple[str, ...] = ("Pretrain",), restart_prob: float | None = None,
                  max_attempts: int = 20, fill_queue: Callable[[pd.DataFrame], Any] | None = None,
                  id_seed: int | None = None, pretrain_gpus: int | str | None = "bundle") -> pd.DataFrame:
    """Simulate the jobs of one cluster (module docstring); typed columns, one row per job.

    Returns columns ``cluster, user, type, state, gpu_num, node_num, submit_s, queue_s, start_s,
    end_s, run_s`` (seconds, Unix UTC; ``start_s`` NaN = never started), ``batch_id``, the restart
    chain columns of :func:`acmemodel.features.chains.restart_chains` — ``chain_id``, ``attempt``
    (1 = fresh submission), ``prev_index`` (row label of the failed attempt this one restarts, −1
    if none), ``prev_job_id`` (its job id, ``""`` if none), ``restart_gap_s`` — and the
    placeholder columns of :func:`schema_columns`
    (``job_id``, ``cpu_num``; Kalos ``mem_per_pod_GB``, ``shared_mem_per_pod``), sorted by
    submission, index 0..n−1: a jobs frame every :mod:`acmemodel.export` writer takes as is.
    Models come from ``bundle`` (``"arrival"``, ``"runtime"``, optional ``"failure"`` and
    ``"restart"``) unless given directly; ``restart_types`` only matters with ``restart_prob``. ``id_seed`` (default
    ``seed``, else 0) seeds the Kalos job ids.
    ``pretrain_gpus``: the reservation (GPUs) pretraining chains are placed within
    (:func:`acmemodel.joblife.place_reserved`; module docstring, step 3): ``"bundle"`` (default) the
    bundle's calibrated reservation (:func:`pretrain_reservation`; no placement without one), an
    integer, or ``None``/0 for independent pretraining arrivals. The placement's report is in
    ``attrs["pretrain_placement"]``.
    """
    days = float(days)
    if not (np.isfinite(days) and days > 0):
        raise ValueError(f"days must be a positive number, got {days!r}")
    if restart_prob is not None and not (0 <= float(restart_prob) <= 1):
        raise ValueError(f"restart_prob must be in [0, 1], got {restart_prob!r}")
    if int(max_attempts) < 1:
        raise ValueError(f"max_attempts must be >= 1, got {max_attempts!r}")
    if rng is None:
        rng = np.random.default_rng(seed)
    elif not isinstance(rng, np.random.Generator):
        raise ValueError(f"rng must be a numpy Generator, got {type(rng).__name__}")
    b = None
    if arrival is None or runtime is None:
        b = resolve_bundle(bundle)
        arrival = arrival if arrival is not None else b["arrival"]
        runtime = runtime if runtime is not None else b["runtime"]
        if restart is None:
            restart = b.get("restart")
        if failure is None:
            failure = b.get("failure")
    elif bundle is not None:
        b = resolve_bundle(bundle)
    from acmemodel.joblife import sample_lives
    from acmemodel.models.arrival import to_unix_seconds

    if cluster not in arrival.clusters_:
        raise ValueError(f"cluster must be one of {arrival.clusters_}, got {cluster!r}")
    off = utc_offset_seconds(arrival.timezones_[cluster])
    t0 = (float(to_unix_seconds(start)) if start is not None and not isinstance(start, str)
          else _local_start(start, off))
    t1 = t0 + days * 86400.0
    from acmemodel.trace.arrow import PLAUSIBLE_S

    if not (PLAUSIBLE_S[0] <= t0 and t1 <= PLAUSIBLE_S[1]):
        raise ValueError(f"start/days: the synthetic trace would reach outside 1970-01-01 .. 2100-01-01 "
                         "(the range of trace timestamps load_trace accepts)")

    arr = arrival.sample(t0, t1, rng, scale=scale, mix=mix, gpu_scale=gpu_scale, cluster=cluster)
    arr = arr[arr["submit_s"].to_numpy() < t1]
    n = len(arr)
    types = arr["type"].astype(str).to_numpy(dtype=object)
    gpus = arr["gpu_num"].to_numpy(dtype=np.int64)
    state, run = sample_lives(runtime, failure, cluster, types, gpus, rng)
    jobs = {
        "user": arr["user"].astype(str).to_numpy(dtype=object), "type": types, "state": state,
        "gpu_num": gpus, "submit_s": np.floor(arr["submit_s"].to_numpy(dtype=float)), "run_s": run,
        "batch_id": arr["batch_id"].to_numpy(dtype=np.int64), "chain_id": np.arange(n, dtype=np.int64),
        "attempt": np.ones(n, dtype=np.int64), "restart_gap_s": np.full(n, np.nan),
        "prev": np.full(n, -1, dtype=np.int64),
    }
    # ---- restart chains (queue 0 while generating)
    gap_sampler = _restart_gap_sampler(restart, arrival.timezones_[cluster])
    cols = {k: [v] for k, v in jobs.items()}
    cur = {k: v for k, v in jobs.items()}
    cur_idx = np.arange(n, dtype=np.int64)
    total = n
    next_batch = int(jobs["batch_id"].max()) + 1 if n else 0
    for _ in range(int(max_attempts) - 1):
        end = cur["submit_s"] + np.nan_to_num(cur["run_s"], nan=0.0)
        pick = cur["state"] == "FAILED"
        p_row = resubmit_probabilities(restart, cluster, cur["type"], cur["gpu_num"], restart_prob=restart_prob,
                                       restart_types=tuple(restart_types or ()))
        pick &= rng.random(len(pick)) < p_row
        if not pick.any():
            break
        idx = np.flatnonzero(pick)
        rows = pd.DataFrame({"type": cur["type"][idx], "gpu_num": cur["gpu_num"][idx],
                             "attempt": cur["attempt"][idx], "end_s": end[idx]})
        gaps = np.asarray(gap_sampler(rows, rng), dtype=float)
        if gaps.shape != (len(idx),) or not np.all(np.isfinite(gaps)):
            raise ValueError("restart gap sampler must return one finite gap per failure")
        gaps = np.maximum(np.round(gaps), 0.0)
        sub = end[idx] + gaps
        keep = sub < t1
        idx, gaps, sub = idx[keep], gaps[keep], sub[keep]
        if len(idx) == 0:
            break
        k = len(idx)
        st, rn = sample_lives(runtime, failure, cluster, cur["type"][idx], cur["gpu_num"][idx], rng)
        new = {"user": cur["user"][idx], "type": cur["type"][idx], "state": st, "gpu_num": cur["gpu_num"][idx],
               "submit_s": np.floor(sub), "run_s": rn, "batch_id": next_batch + np.arange(k, dtype=np.int64),
               "chain_id": cur["chain_id"][idx], "attempt": cur["attempt"][idx] + 1, "restart_gap_s": gaps,
               "prev": cur_idx[idx]}
        next_batch += k
        cur_idx = total + np.arange(k, dtype=np.int64)
        total += k
        for c, v in new.items():
            cols[c].append(v)
        cur = new
    allj = {c: np.concatenate(v) for c, v in cols.items()}
    if isinstance(pretrain_gpus, str):
        if pretrain_gpus != "bundle":
            raise ValueError(f"pretrain_gpus must be 'bundle', an integer or None, got {pretrain_gpus!r}")
        pretrain_gpus = pretrain_reservation(b, cluster) if b is not None else None
    placement = _place_pretrain(allj, pretrain_gpus, rng, (t0, t1)) if pretrain_gpus else None
    df = pd.DataFrame(allj)
    df.insert(0, "cluster", cluster)
    df["run_s"] = np.round(df["run_s"].to_numpy())
    # nodes of the cluster's own size (the bundle's description of it; 8-GPU nodes when it does not say)
    spec = b.cluster(cluster) if b is not None and hasattr(b, "cluster") else None
    per_node = spec.gpus_per_node if spec is not None and spec.gpus_per_node else GPUS_PER_NODE
    df["node_num"] = np.maximum(1, -(-df["gpu_num"].to_numpy() // per_node))
    # ---- queueing
    queue = np.zeros(len(df))
    if fill_queue is not None:
        q = np.asarray(fill_queue(df[["cluster", "user", "type", "state", "gpu_num", "node_num", "submit_s",
                                      "run_s"]].copy()), dtype=float)
        if q.shape != (len(df),):
            raise ValueError(f"fill_queue returned {q.shape} values for {len(df)} jobs")
        if np.any(q[np.isfinite(q)] < 0):
            raise ValueError("fill_queue returned negative waits")
        queue = np.round(q)
    df["queue_s"] = queue
    _time_jobs(df)
    df = df[df["submit_s"].to_numpy() < t1]
    df = df.sort_values(["submit_s", "batch_id"], kind="stable")
    # previous attempt as a row label of the sorted frame (-1 = none), as restart_chains gives it
    new_pos = np.full(total, -1, dtype=np.int64)
    new_pos[df.index.to_numpy()] = np.arange(len(df))
    prev = df["prev"].to_numpy()
    df = df.drop(columns="prev").reset_index(drop=True)
    df.insert(df.columns.get_loc("attempt") + 1, "prev_index", np.where(prev >= 0, new_pos[np.maximum(prev, 0)], -1))
    df["state"] = df["state"].astype(str)
    if id_seed is None:
        id_seed = int(seed) if isinstance(seed, (int, np.integer)) else 0
    df = schema_columns(df, cluster, id_seed=id_seed)
    pi = df["prev_index"].to_numpy()
    ids = df["job_id"].to_numpy(dtype=object)
    df.insert(df.columns.get_loc("prev_index") + 1, "prev_job_id",
              np.where(pi >= 0, ids[np.maximum(pi, 0)] if len(df) else ids, "").astype(object))
    if placement is not None:
        df.attrs["pretrain_placement"] = placement
    return df


def pretrain_reservation(bundle, cluster: str) -> int | None:
    """GPUs of the pretraining reservation of ``bundle``'s calibrated queue policy for ``cluster``
    (the calibration's ``policy.reservation_gpus``), or ``None`` when the bundle has no calibrated policy."""
    pol = bundle.calibration(cluster).get("policy") or {}
    if not pol.get("reservation_gpus"):
        return None
    return int(pol["reservation_gpus"])


def _place_pretrain(jobs: dict, capacity, rng: np.random.Generator, window) -> dict:
    """Shift the chains at home in the reservation (Pretrain and pretraining-scale jobs,
    :func:`acmemodel.joblife.in_reservation`) of the generated ``jobs`` (column arrays, zero queue) so that they fit a
    reservation of ``capacity`` GPUs (:func:`acmemodel.joblife.shift_chains`); every attempt of a chain
    moves by the same offset. Returns the placement report."""
    from acmemodel.joblife import place_reservation_jobs

    jobs["submit_s"], rep = place_reservation_jobs(jobs["type"], jobs["submit_s"], jobs["run_s"], jobs["gpu_num"],
                                                   jobs["chain_id"], int(capacity), rng, window=window)
    return rep


def _time_jobs(df: pd.DataFrame) -> None:
    """start/end from submit, queue and run; restart attempts re-timed attempt by attempt so each is
    submitted its gap after its predecessor's actual end. A job starts iff its wait and its run
    time are finite; one that never starts ends (is cancelled) at ``submit + wait`` (wait 0 if NaN)."""
    qraw = df["queue_s"].to_numpy(dtype=float)
    rraw = df["run_s"].to_numpy(dtype=float)
    started = np.isfinite(qraw) & np.isfinite(rraw)
    q = np.nan_to_num(qraw, nan=0.0)
    run = np.where(started, rraw, 0.0)
    att = df["attempt"].to_numpy()
    prev = df["prev"].to_numpy()
    gap = df["restart_gap_s"].to_numpy(dtype=float)
    sub = df["submit_s"].to_numpy(dtype=float).copy()
    for a in range(2, int(att.max(initial=1)) + 1):
        m = np.flatnonzero(att == a)
        p = prev[m]
        sub[m] = sub[p] + q[p] + run[p] + gap[m]
    df["submit_s"] = sub
    df["start_s"] = np.where(started, sub + q, np.nan)
    df["end_s"] = sub + q + run
    df["run_s"] = np.where(started, run, np.nan)
    df["queue_s"] = np.where(started, q, np.nan)


def cluster_queue(*, total_gpus: int, gpus_per_node: int = GPUS_PER_NODE, **sim_kwargs
                  ) -> Callable[[pd.DataFrame], np.ndarray]:
    """A ``fill_queue`` hook that replays the synthetic jobs on the cluster simulator
    (:func:`acmemodel.sim.cluster.simulate_cluster`: gang scheduling, FIFO + EASY backfill;
    one shared partition unless ``partitions=`` is given in ``sim_kwargs``) and returns its waits.
    CPU jobs are not simulated and start at submission; jobs that can never fit get NaN (never
    start). Restart attempts are simulated at their zero-queue submit times (see module docstring).
    """
    total_gpus = int(total_gpus)
    if total_gpus <= 0 or total_gpus % int(gpus_per_node):
        raise ValueError(f"total_gpus must be a positive multiple of gpus_per_node={gpus_per_node}, "
                         f"got {total_gpus}")

    def fill(df: pd.DataFrame) -> np.ndarray:
        from acmemodel.sim.cluster import simulate_cluster

        q = np.zeros(len(df))
        q[~np.isfinite(df["run_s"].to_numpy(dtype=float))] = np.nan
        sim_in = df.reset_index(drop=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DataWarning)
            res = simulate_cluster(sim_in, total_gpus=total_gpus, gpus_per_node=int(gpus_per_node), **sim_kwargs)
        w = res.jobs["wait_s"]
        q[w.index.to_numpy()] = w.to_numpy(dtype=float)
        return q

    return fill


def _local_start(start, off: int) -> float:
    """Unix seconds of a local date/time string (default 2023-03-01 00:00 local, AcmeTrace's start)."""
    from acmemodel.trace.arrow import PLAUSIBLE_S

    try:
        ts = pd.Timestamp(start or "2023-03-01")
    except (ValueError, TypeError, OverflowError) as e:
        raise ValueError(f"start: cannot read {start!r} as a date ({str(e).splitlines()[0]})") from None
    if ts is pd.NaT:
        raise ValueError(f"start: cannot read {start!r} as a date")
    t0 = ts.timestamp() if ts.tzinfo is not None else ts.tz_localize("UTC").timestamp() - off
    if not PLAUSIBLE_S[0] <= t0 < PLAUSIBLE_S[1]:
        raise ValueError(f"start: {start!r} is outside 1970-01-01 .. 2100-01-01 (the range of trace "
                         "timestamps load_trace accepts)")
    return t0


# ---------------------------------------------------------------------- formatting
# The AcmeTrace formatter and CSV writer live in acmemodel.export (acmetrace.format_rows,
# _text.time_bytes/format_times, _common.write_csv); synth only adds the placeholder columns of
# synthetic jobs and keeps its historical entry points as thin wrappers.
def _is_kalos(cluster: str) -> bool:
    return str(cluster).lower().startswith("kalos")


def _kalos_ids(n: int, seed: int) -> np.ndarray:
    """``dlc`` + 13 base-36 chars of a bijective 64-bit mix of the row number (unique ids)."""
    x = (np.arange(n, dtype=np.uint64) + np.uint64(seed & 0xFFFFFFFF) * np.uint64(1 << 32))
    with np.errstate(over="ignore"):
        x = (x + np.uint64(0x632BE59BD9B4E019)) * np.uint64(0x9E3779B97F4A7C15)
        x ^= x >> np.uint64(29)
        x = x * np.uint64(0xBF58476D1CE4E5B9)
        x ^= x >> np.uint64(32)
    alphabet = np.frombuffer(b"0123456789abcdefghijklmnopqrstuvwxyz", dtype=np.uint8)
    out = np.empty((n, 16), dtype=np.uint8)
    out[:, :3] = np.frombuffer(b"dlc", dtype=np.uint8)
    v = x.copy()
    for i in range(15, 2, -1):
        out[:, i] = alphabet[(v % np.uint64(36)).astype(np.int64)]
        v //= np.uint64(36)
    return out.view("S16").ravel()


def synthetic_job_ids(n: int, cluster: str, seed: int = 0) -> np.ndarray:
    """Job ids (object array of str) in row order: Seren consecutive integers from 5,000,000;
    Kalos ``dlc`` + 13 base-36 characters (a seeded bijection of the row number, so unique)."""
    import pyarrow as pa

    if _is_kalos(cluster):
        arr = pa.array(_kalos_ids(n, int(seed)), type=pa.binary()).cast(pa.string())
    else:
        arr = pa.array(5_000_000 + np.arange(n, dtype=np.int64)).cast(pa.string())
    return arr.to_numpy(zero_copy_only=False)


def schema_columns(jobs: pd.DataFrame, cluster: str, *, id_seed: int = 0) -> pd.DataFrame:
    """``jobs`` with the AcmeTrace columns the models do not describe, where missing: ``job_id``
    (:func:`synthetic_job_ids`), ``cpu_num`` (Seren ``16 · gpus``, 8 for CPU jobs; Kalos
    ``120 · nodes``) and for Kalos ``mem_per_pod_GB`` (1000 GPU / 100 CPU jobs) and
    ``shared_mem_per_pod`` (100.0 / 10.0) — deterministic placeholders from the published
    example rows. Columns already present are kept."""
    df = jobs.copy(deep=False)
    g = df["gpu_num"].to_numpy(dtype=np.int64)
    nodes = (df["node_num"].to_numpy(dtype=np.int64) if "node_num" in df
             else np.maximum(1, -(-g // GPUS_PER_NODE)))
    kalos = _is_kalos(cluster)
    if "job_id" not in df:
        df["job_id"] = synthetic_job_ids(len(df), cluster, id_seed)
    if "cpu_num" not in df:
        df["cpu_num"] = (120.0 * nodes) if kalos else np.where(g > 0, 16.0 * g, 8.0)
    if kalos and "mem_per_pod_GB" not in df:
        df["mem_per_pod_GB"] = np.where(g > 0, 1000.0, 100.0)
    if kalos and "shared_mem_per_pod" not in df:
        df["shared_mem_per_pod"] = np.where(g > 0, 100.0, 10.0)
    return df


def format_timestamps(t_s, timezone: str) -> np.ndarray:
    """``YYYY-MM-DD HH:MM:SS+08:00`` byte strings (``b""`` where NaN) of Unix seconds (floored) in
    the fixed-offset ``timezone``: a wrapper of :func:`acmemodel.export._text.time_bytes`."""
    from acmemodel.export._common import format_offset
    from acmemodel.export._text import time_bytes

    t = np.asarray(t_s, dtype=float)
    ok = np.isfinite(t)
    off = utc_offset_seconds(timezone)
    b = time_bytes(np.floor(np.where(ok, t, 0.0)).astype(np.int64), offset_s=off, suffix=format_offset(off))
    res = b.view(f"S{b.shape[1]}").ravel()
    res[~ok] = b""
    return res


def to_acmetrace(jobs: pd.DataFrame, *, cluster: str | None = None, timezone: str | None = None,
                 id_seed: int = 0):
    """Render :func:`simulate_jobs` output in the exact AcmeTrace schema of ``cluster`` (module
    docstring) as a ``pyarrow.Table`` of string columns in file order (``.to_pandas()`` for a
    DataFrame): :func:`acmemodel.export.acmetrace.acmetrace_table` on the jobs completed by
    :func:`schema_columns`. ``cluster`` defaults to the jobs' cluster (and selects its rows);
    ``timezone`` to the cluster's (+08:00 Seren, +00:00 Kalos)."""
    from acmemodel.export.acmetrace import acmetrace_table

    if cluster is None:
        cl = jobs["cluster"].unique() if len(jobs) else ["Seren"]
        if len(cl) != 1:
            raise ValueError(f"jobs hold several clusters {list(cl)}; pass cluster=")
        cluster = str(cl[0])
    return acmetrace_table(schema_columns(jobs, cluster, id_seed=id_seed), cluster=cluster, timezone=timezone)


def trace_file_kind(path: str | Path) -> str:
    """``"csv"`` or ``"parquet"``: what :func:`write_acmetrace` writes to ``path`` (by suffix:
    ``.csv``, ``.csv.gz``/``.gz``, ``.parquet``); ``ValueError`` for any other suffix or a directory."""
    path = Path(path)
    suffix = path.suffix.lower()
    kind = "parquet" if suffix == ".parquet" else "csv" if suffix in (".csv", ".gz") else None
    if kind is None:
        raise ValueError(f"output {path}: an AcmeTrace file ends in .csv, .csv.gz or .parquet "
                         f"(got {''.join(path.suffixes[-2:]) or 'no suffix'}); other formats take --format")
    if path.is_dir():
        raise ValueError(f"output {path} is a directory; give a file name (.csv, .csv.gz or .parquet)")
    return kind


def write_acmetrace(table, path: str | Path) -> Path:
    """Write a :func:`to_acmetrace` table (or a DataFrame of strings) as one file: ``.csv`` (``.gz`` →
    gzip) with the unquoted header and values of the published files
    (:func:`acmemodel.export._common.write_csv`), or ``.parquet`` (the same string columns, empty values as
    nulls; :func:`acmemodel.trace.load_trace` reads both). Any other suffix is refused
    (``ValueError``). For a directory of per-cluster files with a README use
    :func:`acmemodel.export.write_acmetrace`."""
    import pyarrow as pa

    from acmemodel.export._common import write_csv

    path = Path(path)
    kind = trace_file_kind(path)
    if isinstance(table, pd.DataFrame):
        table = pa.table({str(c): pa.array(table[c].astype(str).to_numpy(dtype=object), type=pa.string())
                          for c in table.columns})
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "parquet":
        import pyarrow.compute as pc
        import pyarrow.parquet as pq

        cols = [pc.if_else(pc.equal(c, ""), pa.scalar(None, c.type), c) for c in table.columns]
        pq.write_table(pa.table(cols, names=table.column_names), path)
        return path
    return write_csv(path, list(table.column_names), list(table.columns))


def synthesize(bundle=None, *, days: float = 30.0, cluster: str = "Seren", seed: int | None = None,
               start=None, scale: float = 1.0, mix: Mapping[str, float] | None = None,
               gpu_scale: float = 1.0, fill_queue=None, output: str | Path | None = None,
               **kwargs) -> pd.DataFrame:
    """Synthetic trace of ``cluster`` in its exact AcmeTrace schema (DataFrame of strings); written
    to ``output`` when given. Knobs and assumptions: module docstring; ``kwargs`` go to
    :func:`simulate_jobs` (``arrival=``, ``runtime=``, ``restart=``, ``restart_prob=``...)."""
    jobs = simulate_jobs(bundle, days=days, cluster=cluster, seed=seed, start=start, scale=scale, mix=mix,
                         gpu_scale=gpu_scale, fill_queue=fill_queue, **kwargs)
    table = to_acmetrace(jobs, cluster=cluster, id_seed=seed or 0)
    if output is not None:
        write_acmetrace(table, output)
    return table.to_pandas()
