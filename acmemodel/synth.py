"""Synthetic AcmeTrace workloads: arrivals + GPU counts + (state, run time) + restart chains.

Generation (:func:`simulate_jobs`), for one cluster over ``[start, start + days)``:

1. **Arrivals** — :meth:`ArrivalModel.sample <acmemodel.models.arrival.ArrivalModel.sample>`:
   submission times from the compound NHPP of each type (batches of evaluation jobs included),
   GPU count per job, a user per batch. Knobs: ``scale`` (multiplies every arrival intensity),
   ``mix`` (``{type: share of jobs}``), ``gpu_scale`` (GPU requests, whole nodes above 8 GPUs).
2. **State and run time** — ``RuntimeModel.sample_jobs(n, rng, cluster=, type=, gpus=)`` →
   ``(state, run_s)`` per job (vectorised by type × GPU bucket). A NaN run time means the job never
   started.
3. **Restart chains** — a FAILED job of ``restart_types`` (default Pretrain) is resubmitted with
   probability ``restart_prob`` (default: the share of failed jobs of that type the arrival model saw
   resubmitted in its training trace; :data:`DEFAULT_RESTART_PROB` = 0.9, an assumption, when it has
   none) after a restart gap (failure end → resubmission), same user, type and
   GPU count, up to ``max_attempts`` attempts; each attempt gets its own (state, run time). The gap is
   drawn from the bundle's ``"restart"`` model when it has one (its ``"gap"`` component — failure end
   to resubmission — given the failure's GPUs, type, attempt, local hour and weekend; the ``"total"``
   time to restart when that model fell back to the published prior); otherwise from the default
   :data:`DEFAULT_RESTART_GAP`: a lognormal with the median (1.5 min) and mean (102.8 min) of the
   time-to-restart of the paper's Table 3 reasons seen on pretraining-scale jobs (median GPU demand
   ≥ 256; job-count weighted median of the medians, weighted mean of the means). The arrival model
   excludes restart attempts from its fit, so restarts are not double-counted.
4. **Queueing is not simulated**: by default every job starts at its submission (``queue = 0``,
   ``start_time = submit_time``), so the file round-trips through :func:`acmemodel.load_trace` as
   started jobs with run time ``end − start``. Pass ``fill_queue=callable`` (e.g. a wrapper of the
   cluster simulator) to assign waits: it receives the complete job table (``submit_s, gpu_num,
   node_num, run_s, state, type, user, cluster``) and returns one wait per row in seconds (NaN = never
   started, the job is then cancelled at ``submit + wait``); restart attempts are then re-timed so
   each is submitted its gap after its predecessor's actual end. :func:`cluster_queue` builds such a
   hook from the cluster simulator (:func:`acmemodel.planner.cluster_sim.simulate_cluster`).

Output (:func:`to_acmetrace`): the exact AcmeTrace schema of the cluster, every value a string as in
the published files — Seren ``job_id,user,node_num,gpu_num,cpu_num,type,state,submit_time,
start_time,end_time,duration,queue,gpu_time`` with ``+08:00`` timestamps, ``duration = end − start``;
Kalos adds ``mem_per_pod_GB,shared_mem_per_pod,fail_time,stop_time`` with ``+00:00`` timestamps and,
like the published Kalos rows, ``duration = end − submit`` (queue included). Columns the models do
not describe get deterministic placeholders taken from the published examples: Seren
``cpu_num = 16 · gpus`` (8 for CPU jobs); Kalos ``cpu_num = 120 · nodes``, ``mem_per_pod_GB`` 1000
(GPU) / 100 (CPU), ``shared_mem_per_pod`` 100.0 / 10.0; ``node_num = max(1, ceil(gpus / 8))``.
Timestamps are whole seconds (submit floored, run time rounded). Job ids: Seren consecutive integers
from 5,000,000 in submission order; Kalos ``dlc`` + 13 base-36 characters (a seeded bijection of the
row number, so unique).
"""
from __future__ import annotations

import math
import warnings
from pathlib import Path
from typing import Any, Callable, Mapping

import numpy as np
import pandas as pd

from acmemodel.errors import DataWarning

__all__ = ["simulate_jobs", "synthesize", "to_acmetrace", "write_acmetrace", "format_timestamps", "cluster_queue",
           "DEFAULT_RESTART_GAP", "DEFAULT_RESTART_PROB", "SEREN_COLUMNS", "KALOS_COLUMNS",
           "resolve_bundle"]

SEREN_COLUMNS = ["job_id", "user", "node_num", "gpu_num", "cpu_num", "type", "state", "submit_time",
                 "start_time", "end_time", "duration", "queue", "gpu_time"]
KALOS_COLUMNS = ["job_id", "user", "node_num", "gpu_num", "cpu_num", "mem_per_pod_GB", "shared_mem_per_pod",
                 "type", "state", "submit_time", "start_time", "end_time", "fail_time", "stop_time",
                 "duration", "queue", "gpu_time"]

#: default restart gap (seconds): lognormal from paper Table 3, see module docstring
DEFAULT_RESTART_GAP = {"median_s": 1.5 * 60, "mean_s": 102.8 * 60,
                       "source": "NSDI'24 Table 3, reasons with median GPU demand >= 256: weighted "
                                 "median of median time-to-restart, weighted mean of mean"}
#: default probability that a failed job of a restart type is resubmitted (an assumption: the paper
#: reports pretraining runs are restarted after failures but gives no abandonment rate)
DEFAULT_RESTART_PROB = 0.9
GPUS_PER_NODE = 8


# ---------------------------------------------------------------------- bundle and models
def resolve_bundle(bundle=None):
    """A :class:`~acmemodel.models.bundle.Bundle` from a Bundle, a path, or ``None`` (the default
    bundle of :func:`acmemodel.load_default`)."""
    from acmemodel.models.bundle import Bundle

    _register_model_classes()
    if bundle is None:
        try:
            from acmemodel.datasets import load_default
        except ImportError:
            raise ValueError("no --bundle given and this acmemodel has no default bundle yet") from None
        return load_default()
    if isinstance(bundle, Bundle):
        return bundle
    return Bundle.load(bundle)


def _register_model_classes() -> None:
    """Import the model modules a bundle may hold so their classes are registered for loading
    (``acmemodel.models`` does not import every family eagerly)."""
    import importlib

    for mod in ("restart", "failure", "runtime", "queue", "arrival", "gpu_counts"):
        try:
            importlib.import_module(f"acmemodel.models.{mod}")
        except ImportError:  # pragma: no cover - optional families
            pass


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
        from acmemodel.models.arrival import tz_offset_s

        off = tz_offset_s(timezone)

        def via_predict(rows, rng):
            local = rows["end_s"].to_numpy(dtype=float) + off
            X = pd.DataFrame({"gpu_num": rows["gpu_num"].to_numpy(dtype=float),
                              "type": rows["type"].astype(str).to_numpy(),
                              "attempt": rows["attempt"].to_numpy(dtype=float),
                              "hour": np.floor(local % 86400 / 3600),
                              "weekend": ((np.floor(local / 86400) + 3) % 7) >= 5})
            comp = "total" if getattr(restart, "fallback_", False) else "gap"
            return np.asarray(restart.predict(X, component=comp).sample(1, rng), dtype=float)[:, 0]
        return via_predict
    warnings.warn(f"restart model {type(restart).__name__} has neither sample_gaps nor predict; "
                  "using the default restart gap", DataWarning, stacklevel=3)
    return default


def _sample_runtime(runtime, cluster: str, types: np.ndarray, gpus: np.ndarray,
                    rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(state, run_s) per job, one ``sample_jobs`` call per type × GPU bucket."""
    from acmemodel.features.keys import gpu_bucket

    n = len(types)
    state = np.empty(n, dtype=object)
    run = np.empty(n, dtype=float)
    if n == 0:
        return state, run
    bucket = gpu_bucket(gpus) if n else np.zeros(0, dtype=object)
    key = pd.DataFrame({"t": pd.Categorical(types), "b": pd.Categorical(bucket)})
    for (ty, _b), idx in key.groupby(["t", "b"], observed=True, sort=True).indices.items():
        out = runtime.sample_jobs(len(idx), rng, cluster=cluster, type=str(ty), gpus=int(gpus[idx[0]]))
        state[idx] = out["state"].to_numpy(dtype=object)
        run[idx] = out["run_s"].to_numpy(dtype=float)
    return state, run


# ---------------------------------------------------------------------- simulation
def simulate_jobs(bundle=None, *, days: float = 30.0, cluster: str = "Seren", seed: int | None = None,
                  rng: np.random.Generator | None = None, start=None, scale: float = 1.0,
                  mix: Mapping[str, float] | None = None, gpu_scale: float = 1.0,
                  arrival=None, runtime=None, restart=None,
                  restart_types: tuple[str, ...] = ("Pretrain",), restart_prob: float | None = None,
                  max_attempts: int = 20, fill_queue: Callable[[pd.DataFrame], Any] | None = None
                  ) -> pd.DataFrame:
    """Simulate the jobs of one cluster (module docstring); typed columns, one row per job.

    Returns columns ``cluster, user, type, state, gpu_num, node_num, submit_s, queue_s, start_s,
    end_s, run_s`` (seconds, Unix UTC; ``start_s`` NaN = never started), ``batch_id``, ``chain_id``,
    ``attempt`` (1 = fresh submission), ``restart_gap_s``, sorted by submission. Models come from
    ``bundle`` (``"arrival"``, ``"runtime"``, optional ``"restart"``) unless given directly.
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
    if arrival is None or runtime is None:
        b = resolve_bundle(bundle)
        arrival = arrival if arrival is not None else b["arrival"]
        runtime = runtime if runtime is not None else b["runtime"]
        if restart is None:
            restart = b.get("restart")
    from acmemodel.models.arrival import to_unix_seconds, tz_offset_s

    if cluster not in arrival.clusters_:
        raise ValueError(f"cluster must be one of {arrival.clusters_}, got {cluster!r}")
    off = tz_offset_s(arrival.timezones_[cluster])
    t0 = (float(to_unix_seconds(start)) if start is not None and not isinstance(start, str)
          else _local_start(start, off))
    t1 = t0 + days * 86400.0

    arr = arrival.sample(t0, t1, rng, scale=scale, mix=mix, gpu_scale=gpu_scale, cluster=cluster)
    arr = arr[arr["submit_s"].to_numpy() < t1]
    n = len(arr)
    types = arr["type"].astype(str).to_numpy(dtype=object)
    gpus = arr["gpu_num"].to_numpy(dtype=np.int64)
    state, run = _sample_runtime(runtime, cluster, types, gpus, rng)
    jobs = {
        "user": arr["user"].astype(str).to_numpy(dtype=object), "type": types, "state": state,
        "gpu_num": gpus, "submit_s": np.floor(arr["submit_s"].to_numpy(dtype=float)), "run_s": run,
        "batch_id": arr["batch_id"].to_numpy(dtype=np.int64), "chain_id": np.arange(n, dtype=np.int64),
        "attempt": np.ones(n, dtype=np.int64), "restart_gap_s": np.full(n, np.nan),
        "prev": np.full(n, -1, dtype=np.int64),
    }
    # ---- restart chains (queue 0 while generating)
    gap_sampler = _restart_gap_sampler(restart, arrival.timezones_[cluster])
    rtypes = tuple(restart_types or ())
    p_restart = {}
    for ty in rtypes:
        fitted = arrival.cells_.get((cluster, ty), {}).get("restart_prob", float("nan"))
        p_restart[ty] = (float(restart_prob) if restart_prob is not None
                         else (fitted if np.isfinite(fitted) else DEFAULT_RESTART_PROB))
    cols = {k: [v] for k, v in jobs.items()}
    cur = {k: v for k, v in jobs.items()}
    cur_idx = np.arange(n, dtype=np.int64)
    total = n
    next_batch = int(jobs["batch_id"].max()) + 1 if n else 0
    for _ in range(int(max_attempts) - 1):
        end = cur["submit_s"] + np.nan_to_num(cur["run_s"], nan=0.0)
        pick = (cur["state"] == "FAILED") & np.isin(cur["type"], rtypes)
        p_row = pd.Series(cur["type"]).map(p_restart).fillna(0.0).to_numpy(dtype=float)
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
        st, rn = _sample_runtime(runtime, cluster, cur["type"][idx], cur["gpu_num"][idx], rng)
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
    df = pd.DataFrame(allj)
    df.insert(0, "cluster", cluster)
    df["run_s"] = np.round(df["run_s"].to_numpy())
    df["node_num"] = np.maximum(1, -(-df["gpu_num"].to_numpy() // GPUS_PER_NODE))
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
    df = df.sort_values(["submit_s", "batch_id"], kind="stable").drop(columns="prev").reset_index(drop=True)
    df["state"] = df["state"].astype(str)
    return df


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
    (:func:`acmemodel.planner.cluster_sim.simulate_cluster`: gang scheduling, FIFO + EASY backfill;
    one shared partition unless ``partitions=`` is given in ``sim_kwargs``) and returns its waits.
    CPU jobs are not simulated and start at submission; jobs that can never fit get NaN (never
    start). Restart attempts are simulated at their zero-queue submit times (see module docstring).
    """
    total_gpus = int(total_gpus)
    if total_gpus <= 0 or total_gpus % int(gpus_per_node):
        raise ValueError(f"total_gpus must be a positive multiple of gpus_per_node={gpus_per_node}, "
                         f"got {total_gpus}")

    def fill(df: pd.DataFrame) -> np.ndarray:
        from acmemodel.planner.cluster_sim import simulate_cluster

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


def cluster_gpus(cluster: str) -> int:
    """Published GPU count of an AcmeTrace cluster (paper Table 1: Seren 2,288, Kalos 2,416)."""
    from acmemodel.datasets import load_reference

    t = load_reference("clusters").set_index("cluster")
    if cluster not in t.index:
        raise ValueError(f"no published GPU count for cluster {cluster!r}; pass the GPU count explicitly")
    return int(t.loc[cluster, "gpus"])


def _local_start(start, off: int) -> float:
    """Unix seconds of a local date/time string (default 2023-03-01 00:00 local, AcmeTrace's start)."""
    ts = pd.Timestamp(start or "2023-03-01")
    if ts.tzinfo is not None:
        return ts.value / 1e9
    return ts.value / 1e9 - off


# ---------------------------------------------------------------------- formatting
def _civil_from_days(z: np.ndarray):
    """(year, month, day) from days since 1970-01-01 (H. Hinnant's algorithm, vectorised)."""
    z = z + 719468
    era = np.floor_divide(z, 146097)
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    y = yoe + era * 400
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    d = doy - (153 * mp + 2) // 5 + 1
    m = np.where(mp < 10, mp + 3, mp - 9)
    return y + (m <= 2), m, d


def format_timestamps(t_s, timezone: str) -> np.ndarray:
    """``YYYY-MM-DD HH:MM:SS+08:00`` byte strings (``S25``; ``b""`` where NaN) of Unix seconds,
    in the fixed-offset ``timezone``; fully vectorised (no per-row Python)."""
    from acmemodel.models.arrival import tz_offset_s

    t = np.asarray(t_s, dtype=float)
    ok = np.isfinite(t)
    sec = np.floor(np.where(ok, t, 0.0)).astype(np.int64) + tz_offset_s(timezone)
    days = np.floor_divide(sec, 86400)
    rem = sec - days * 86400
    y, mo, d = _civil_from_days(days)
    hh, mm, ss = rem // 3600, (rem // 60) % 60, rem % 60
    suffix = str(timezone) if str(timezone)[0] in "+-" else "+00:00"
    out = np.empty((len(t), 19 + len(suffix)), dtype=np.uint8)
    zero = ord("0")
    for col, (val, width) in zip((0, 5, 8, 11, 14, 17), ((y, 4), (mo, 2), (d, 2), (hh, 2), (mm, 2), (ss, 2))):
        v = val.copy()
        for i in range(width - 1, -1, -1):
            out[:, col + i] = zero + v % 10
            v //= 10
    out[:, 4] = out[:, 7] = ord("-")
    out[:, 10] = ord(" ")
    out[:, 13] = out[:, 16] = ord(":")
    out[:, 19:] = np.frombuffer(suffix.encode(), dtype=np.uint8)
    res = out.view(f"S{out.shape[1]}").ravel()
    if not ok.all():
        res = res.copy()
        res[~ok] = b""
    return res


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


def _int_str(a) -> np.ndarray:
    import pyarrow as pa
    import pyarrow.compute as pc

    return pc.cast(pa.array(np.asarray(a, dtype=np.int64)), pa.string())


def _float0_str(a, valid=None):
    """Integers rendered as ``"123.0"`` (the published float columns); empty where not ``valid``."""
    import pyarrow as pa
    import pyarrow.compute as pc

    s = pc.binary_join_element_wise(_int_str(np.nan_to_num(a)), pa.scalar(".0"), "")
    if valid is not None and not np.all(valid):
        s = pc.if_else(pa.array(np.asarray(valid)), s, pa.scalar(""))
    return s


def to_acmetrace(jobs: pd.DataFrame, *, cluster: str | None = None, timezone: str | None = None,
                 id_seed: int = 0):
    """Render :func:`simulate_jobs` output in the exact AcmeTrace schema of ``cluster`` (module
    docstring) as a ``pyarrow.Table`` of string columns in file order (``.to_pandas()`` for a
    DataFrame). ``cluster`` defaults to the jobs' cluster; ``timezone`` to the cluster's
    (+08:00 Seren, +00:00 Kalos)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from acmemodel.models.arrival import DEFAULT_TIMEZONES

    if cluster is None:
        cl = jobs["cluster"].unique() if len(jobs) else ["Seren"]
        if len(cl) != 1:
            raise ValueError(f"jobs hold several clusters {list(cl)}; pass cluster=")
        cluster = str(cl[0])
    kalos = cluster.lower() == "kalos"
    tz = timezone or DEFAULT_TIMEZONES.get(cluster, "+00:00")
    n = len(jobs)
    g = jobs["gpu_num"].to_numpy(dtype=np.int64)
    nodes = jobs["node_num"].to_numpy(dtype=np.int64) if "node_num" in jobs else np.maximum(1, -(-g // 8))
    sub = jobs["submit_s"].to_numpy(dtype=float)
    start = jobs["start_s"].to_numpy(dtype=float)
    end = jobs["end_s"].to_numpy(dtype=float)
    started = np.isfinite(start)
    state = jobs["state"].astype(str).to_numpy()
    s_sub, s_end = np.floor(sub), np.floor(end)
    s_start = np.floor(start)
    run = np.where(started, s_end - s_start, 0.0)
    queue = np.where(started, s_start - s_sub, s_end - s_sub)
    duration = (s_end - s_sub) if kalos else run
    gpu_time = g * duration

    def ts(x):
        return pa.array(format_timestamps(x, tz), type=pa.binary()).cast(pa.string())

    cols: dict[str, Any] = {}
    if kalos:
        cols["job_id"] = pa.array(_kalos_ids(n, id_seed), type=pa.binary()).cast(pa.string())
    else:
        cols["job_id"] = _int_str(5_000_000 + np.arange(n))
    cols["user"] = pa.array(jobs["user"].astype(str).to_numpy(dtype=object), type=pa.string())
    cols["node_num"] = _int_str(nodes)
    cols["gpu_num"] = _int_str(g)
    if kalos:
        cols["cpu_num"] = _int_str(120 * nodes)
        cols["mem_per_pod_GB"] = _int_str(np.where(g > 0, 1000, 100))
        cols["shared_mem_per_pod"] = pa.array(np.where(g > 0, "100.0", "10.0"), type=pa.string())
    else:
        cols["cpu_num"] = _int_str(np.where(g > 0, 16 * g, 8))
    cols["type"] = pa.array(jobs["type"].astype(str).to_numpy(dtype=object), type=pa.string())
    cols["state"] = pa.array(state.astype(object), type=pa.string())
    cols["submit_time"] = ts(s_sub)
    cols["start_time"] = ts(np.where(started, s_start, np.nan))
    cols["end_time"] = ts(s_end)
    if kalos:
        cols["fail_time"] = ts(np.where(state == "FAILED", s_end, np.nan))
        cols["stop_time"] = ts(np.where(state == "CANCELLED", s_end, np.nan))
    cols["duration"] = _int_str(duration)
    cols["queue"] = _float0_str(queue) if kalos else _int_str(queue)
    cols["gpu_time"] = _float0_str(gpu_time)
    names = KALOS_COLUMNS if kalos else SEREN_COLUMNS
    return pa.table({c: cols[c] for c in names})


def write_acmetrace(table, path: str | Path) -> Path:
    """Write a :func:`to_acmetrace` table (or a DataFrame of strings) as CSV (``.gz`` → gzip), with
    the unquoted header and values of the published files."""
    import pyarrow as pa
    import pyarrow.csv as pacsv

    if isinstance(table, pd.DataFrame):
        table = pa.Table.from_pandas(table.astype(str), preserve_index=False)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    header = (",".join(table.column_names) + "\n").encode()
    opts = pacsv.WriteOptions(include_header=False, quoting_style="none")
    if path.suffix == ".gz":
        with pa.CompressedOutputStream(str(path), "gzip") as out:
            out.write(header)
            pacsv.write_csv(table, out, opts)
    else:
        with pa.OSFile(str(path), "wb") as out:
            out.write(header)
            pacsv.write_csv(table, out, opts)
    return path


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
