"""Planning sweeps: a planner configuration evaluated over a grid of named axes, on Dask.

A **grid** (YAML/TOML file or mapping) crosses named axes of the planner configuration::

    seed: 0                                   # optional sweep seed (default: the config's simulation.seed)
    axes:
      cluster.partitions.eval: {values: [64, 128, 256]}
      checkpoint.sync_cost: {range: {start: 30s, stop: 5m, num: 4}}     # linspace, ends included
      failures.rate_multipliers.Infrastructure: {range: {start: 0.5, stop: 2, num: 4, scale: log}}
      runs.llm-123b.gpus: {range: {start: 1024, stop: 2048, step: 512}}  # arange, stop included

An axis is a dotted path into the configuration (:data:`AXES` lists the accepted ones: cluster GPUs,
partitions, scheduling priorities per job type and start-up latency, checkpoint mode/costs/interval, restart automation and failure-rate multipliers per failure
category or type, the explicit failure law or a published reliability preset, workload scale/days/replicas, the queue target, run sizes and
work — ``runs.NAME.FIELD`` or ``runs.*.FIELD`` for every run). ``values:`` is a list (numbers, durations
like ``"30s"``, or words like ``auto``); ``range:`` is numeric (``start``, ``stop`` and ``num`` or
``step``; ``scale: log`` for a geometric ``num``-point range). Points are the Cartesian product in the
order the axes are written, the last axis varying fastest.

**Evaluation.** Each point is the configuration with the point's values set, validated like any config
(an invalid combination — an eval lane bigger than the cluster — is that point's error, the others run).
A point's plan has two parts that :class:`~acmemodel.planner.planner.Planner` computes independently:
the *runs* (checkpoint optimum and Monte Carlo completion: ``Planner.plan(cfg, cluster=False)``) and
the *cluster* (workload simulation and quota search: ``Planner.quota(cfg)``); the plan's reliability
sensitivity band and the evaluation-batch section are not computed per point. Each part is a pure
function of the configuration sections it reads, so points that share them share one evaluation
(a grid over checkpoint cost × eval lane simulates the cluster once per lane). **Seeds**: each part
runs with its own seed, a hash of the sweep seed and that part's inputs — derived from the point, not
from where or in which order it runs — so a sweep gives identical rows in-process, on a
``LocalCluster`` or on a remote Dask cluster, and points that differ only in run-side axes see the
same simulated workload (common random numbers).

**Rows**: the axis values, ``point`` (grid index), ``point_id`` (hash of the values), ``status``
(``ok``/``error``), ``error``; per run ``RUN.completion_mean_s`` / ``_p50_s`` / ``_p90_s``,
``RUN.expected_failures``, ``RUN.ettr``, ``RUN.gpu_h_lost`` (GPU-hours) split into ``_work``,
``_restart``, ``_checkpoint`` and by failure category (``RUN.gpu_h_lost.Infrastructure`` ...),
``RUN.interval_s`` (used), ``RUN.optimal_interval_s``, ``RUN.kwh_lost`` / ``RUN.tco2e_lost`` (energy and
carbon of the loss, :mod:`acmemodel.planner.energy`); totals over runs ``gpu_h_lost*``, ``kwh_lost``,
``tco2e_lost``; the cluster's
``eval_wait_p50_s`` / ``eval_wait_p90_s`` (``inf`` when some Eval jobs never run), ``quota.PARTITION``
GPUs, ``quota_feasible``. The Parquet file's metadata (key ``acmemodel.sweep``) holds the grid, the base
configuration, the seed, the bundle's name and provenance and the package version.

**Execution** (:func:`sweep`): ``client=None`` runs the parts one after the other in this process;
a ``dask.distributed.Client`` (e.g. of a ``LocalCluster`` or an existing scheduler) runs them as
tasks. With ``out=`` rows are checkpointed to ``OUT.partial/`` as points complete and ``resume=True``
reuses the successful rows of ``OUT`` and ``OUT.partial/`` (errored points run again).

The grid (axes, parsing, point ids, seeds) is in :mod:`.grid` and the plots in :mod:`.plots`.
"""
from __future__ import annotations

import copy
import json
import shutil
import threading
import time
from pathlib import Path
from typing import Callable, Mapping

import numpy as np
import pandas as pd

from acmemodel.errors import ConfigError
from acmemodel.planner.sweep.grid import (
    _apply, _canon, _check_axes_against_config, _hash, _read_mapping, derive_seed, grid_points, load_grid,
    point_id,
)
from acmemodel.planner.config import ClusterConfig
from acmemodel.planner.config_fields import with_reliability
from acmemodel.planner.planner import Planner
from acmemodel.planner.run.montecarlo import FailureMix

#: largest grid run without ``allow_large`` (``--yes``)
MAX_POINTS = 1_000_000
#: metadata key of the Parquet file
META_KEY = b"acmemodel.sweep"



# ------------------------------------------------------------------------------------------ parts
_RUN_SECTIONS = ("checkpoint", "restart", "failures", "runs", "simulation")
_CLUSTER_SECTIONS = ("cluster", "workload", "queue_target")


def _part_keys(raw: dict) -> tuple[str, str]:
    """Canonical inputs of the run part and of the cluster part of a point's plan (seed excluded)."""
    sim = dict(raw.get("simulation") or {})
    sim.pop("seed", None)
    run_in = {k: raw.get(k) for k in _RUN_SECTIONS if k != "simulation"}
    run_in["simulation"] = sim
    cl_in = {k: raw.get(k) for k in _CLUSTER_SECTIONS}
    # the cluster simulation places the runs in the pretrain reservation and draws from the bundle
    cl_in["runs"] = [{"name": r.get("name"), "gpus": r.get("gpus")} for r in (raw.get("runs") or [])
                     if isinstance(r, Mapping)]
    cl_in["failures.job_type"] = (raw.get("failures") or {}).get("job_type")
    return _canon(run_in), _canon(cl_in)


_BUNDLES: dict = {}
#: one load per process when several worker threads start on the same bundle
_BUNDLES_LOCK = threading.Lock()


def _bundle(ref):
    """The bundle of a reference (path string or None = the default), loaded once per process."""
    key = str(ref) if ref is not None else None
    with _BUNDLES_LOCK:
        if key not in _BUNDLES:
            from acmemodel.models.bundle import resolve_bundle

            _BUNDLES[key] = resolve_bundle(ref)
        return _BUNDLES[key]


def _num(v) -> float:
    return float("nan") if v is None else float(v)


def evaluate_part(kind: str, raw: dict, base_dir: str | None, bundle_ref, seed: int, sampler=None) -> dict:
    """Evaluate one plan part of a point (a task: pure function of its arguments).

    ``kind``: ``"runs"`` (``Planner.plan(cfg, cluster=False)``) or ``"cluster"`` (``Planner.quota``);
    ``raw``: the point's configuration mapping; ``seed``: the part's seed (``simulation.seed``).
    ``sampler``: the workload sampler of the cluster part (:class:`~acmemodel.planner.planner.Planner`'s
    ``sampler``, e.g. :func:`acmemodel.synth.sample_workload`; the planner does not import the synthesiser).
    Returns the part's columns, or ``{"error": message}`` when it fails.
    """
    import warnings


    try:
        raw = copy.deepcopy(raw)
        raw.pop("evaluation", None)  # the evaluation batch (evalplan) is not a sweep column
        raw.setdefault("simulation", {})["seed"] = int(seed)
        if kind == "runs":
            raw["sensitivity"] = False  # the plan's reliability band is not a sweep column (6 more plans)
        cfg = ClusterConfig.from_dict(raw, base_dir=Path(base_dir) if base_dir else None)
        planner = Planner(_bundle(bundle_ref), sampler=sampler)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if kind == "runs":
                res = planner.plan(cfg, cluster=False).to_dict()
                cat = dict(zip(FailureMix.from_failure_table(1024).names, FailureMix.from_failure_table(1024).categories))
                out: dict = {}
                tot: dict = {}
                for r in res["runs"]:
                    n = r["name"]
                    ct, loss = r["completion_time_s"], r["gpu_time_loss_gpu_h"]
                    cols = {
                        "finishes": bool(r["finishes"]),
                        "completion_mean_s": _num(ct["mean"]), "completion_p50_s": _num(ct["p50"]),
                        "completion_p90_s": _num(ct["p90"]),
                        "expected_failures": _num(r["expected_failures"]), "ettr": _num(r["ettr"]),
                        "gpu_h_lost": _num(loss["total"]), "gpu_h_lost_work": _num(loss["lost_work"]),
                        "gpu_h_lost_restart": _num(loss["restart"]),
                        "gpu_h_lost_checkpoint": _num(loss["checkpoint"]),
                        "interval_s": _num(r["checkpoint_interval_s"]),
                        "optimal_interval_s": _num(r["optimal_interval_s"]),
                        "kwh_lost": _num(((r.get("energy") or {}).get("total") or {}).get("kwh")),
                        "tco2e_lost": _num(((r.get("energy") or {}).get("total") or {}).get("tco2e")),
                    }
                    bycat: dict = {}
                    for t, v in (loss.get("by_failure_type") or {}).items():
                        c = cat.get(t, "Other")
                        bycat[c] = bycat.get(c, 0.0) + float(v)
                    for c in sorted(set(cat.values())):
                        cols[f"gpu_h_lost.{c}"] = bycat.get(c, 0.0 if r["finishes"] else float("nan"))
                    for k, v in cols.items():
                        out[f"{n}.{k}"] = v
                        if k.startswith("gpu_h_lost") or k in ("kwh_lost", "tco2e_lost"):
                            tot[k] = tot.get(k, 0.0) + v
                out.update(tot)
                return out
            cl = planner.quota(cfg)
            q = cl["queue_s"].get("Eval", {})
            out = {"eval_wait_p50_s": float("inf") if q and q.get("p50") is None else _num(q.get("p50")),
                   "eval_wait_p90_s": float("inf") if q and q.get("p90") is None else _num(q.get("p90"))}
            for p, g in cl["quotas"].items():
                out[f"quota.{p}"] = float("nan") if g is None else float(g)
            qs = cl.get("quota_search")
            out["quota_feasible"] = bool(qs["feasible"]) if qs else True
            return out
    except Exception as e:  # reported in the point's row; the other points go on
        msg = str(e).splitlines()[0] if str(e) else type(e).__name__
        return {"error": f"{kind}: {type(e).__name__}: {msg}"}


def evaluate_parts(arglist: list) -> list:
    """:func:`evaluate_part` of each argument tuple (one Dask task for several parts)."""
    return [evaluate_part(*a) for a in arglist]


def warm_worker(bundle_ref) -> bool:
    """Load what the parts need on a worker — the planner's modules and the bundle (:func:`_bundle`, kept
    for the worker's later tasks) — before its first chunk arrives: :func:`sweep` sends one per worker
    before it plans the grid, so a fresh worker's start (about 1 s of CPU) overlaps the client's planning.
    False when the bundle cannot be loaded (the parts then report it)."""
    try:
        _bundle(bundle_ref)
        return True
    except Exception:  # noqa: BLE001 (each part reports the error in its row)
        return False


# ------------------------------------------------------------------------------------------ sweep
def _raw_config(config, reliability: str | None = None) -> tuple[dict, str | None, str | None]:
    """(raw mapping, base_dir, source) of a config path, mapping or loaded ClusterConfig; ``reliability``:
    a preset that replaces the config's failure rate (:func:`~acmemodel.planner.config.with_reliability`)."""
    if isinstance(config, ClusterConfig):
        if not config.source:
            raise ConfigError("sweep needs the configuration as a file or a mapping (a ClusterConfig built "
                              "in memory has no raw form to apply grid axes to)")
        config = config.source
    if isinstance(config, Mapping):
        raw = copy.deepcopy(dict(config))
        if reliability is not None:
            raw = with_reliability(raw, reliability)
        ClusterConfig.from_dict(raw)  # the base must be valid
        return raw, None, None
    p = Path(config)
    raw = _read_mapping(p, "config")
    if reliability is not None:
        raw = with_reliability(raw, reliability, where=p.name)
    ClusterConfig.from_dict(raw, base_dir=p.parent)
    return raw, str(p.parent), str(p)


def plan_sweep(config, grid, *, seed: int | None = None, allow_large: bool = False,
               reliability: str | None = None) -> dict:
    """Check a sweep before any work: the base config, the grid, the point count (> :data:`MAX_POINTS`
    needs ``allow_large``). ``reliability``: a preset for the base config's failure rate. Returns the
    sweep description used by :func:`sweep`."""
    raw, base_dir, source = _raw_config(config, reliability)
    g = load_grid(grid)
    _check_axes_against_config(g["axes"], raw)
    n = int(np.prod([len(a.values) for a in g["axes"]]))
    if n > MAX_POINTS and not allow_large:
        raise ConfigError(f"grid has {n:,} points, more than {MAX_POINTS:,}; pass --yes (allow_large=True) "
                          "to run it")
    if seed is None:
        seed = g["seed"] if g["seed"] is not None else int((raw.get("simulation") or {}).get("seed", 0))
    return {"raw": raw, "base_dir": base_dir, "source": source, "axes": g["axes"], "grid": g["spec"],
            "n_points": n, "seed": int(seed)}


def _metadata(plan: dict, bundle_ref) -> dict:
    from acmemodel import __version__

    try:
        b = _bundle(bundle_ref)
        bundle = {"name": getattr(b, "name", None), "ref": None if bundle_ref is None else str(bundle_ref),
                  "provenance": getattr(b, "provenance", {})}
    except Exception as e:  # pragma: no cover - reported per point as well
        bundle = {"ref": None if bundle_ref is None else str(bundle_ref), "error": str(e).splitlines()[0]}
    return {"grid": plan["grid"], "config": plan["raw"], "config_source": plan["source"], "seed": plan["seed"],
            "n_points": plan["n_points"], "bundle": bundle, "package_version": __version__}


def _fingerprint(meta: dict) -> str:
    return _hash(meta["config"], meta["seed"], meta["bundle"].get("ref"), meta["package_version"])


def read_sweep(path) -> tuple[pd.DataFrame, dict]:
    """A sweep's table and its metadata (the ``acmemodel.sweep`` key) from a Parquet file."""
    import pyarrow.parquet as pq

    t = pq.read_table(path)
    meta = json.loads((t.schema.metadata or {}).get(META_KEY, b"{}"))
    return t.to_pandas(), meta


def _write(df: pd.DataFrame, path: Path, meta: dict | None) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    t = pa.Table.from_pandas(df, preserve_index=False)
    if meta is not None:
        t = t.replace_schema_metadata({**(t.schema.metadata or {}), META_KEY: json.dumps(meta, default=str).encode()})
    tmp = path.with_name(path.name + ".tmp")
    pq.write_table(t, tmp)
    tmp.replace(path)


def _previous_rows(out: Path, fingerprint: str) -> dict:
    """Successful rows of an earlier run of the same sweep (OUT and OUT.partial/), by point_id."""
    rows: dict = {}
    frames = []
    if out.exists():
        df, meta = read_sweep(out)
        if meta and meta.get("fingerprint") != fingerprint:
            raise ConfigError(f"--resume: {out} was written by a sweep of another configuration, seed, bundle "
                              "or package version")
        frames.append(df)
    part = out.with_name(out.name + ".partial")
    if part.is_dir():
        for f in sorted(part.glob("part-*.parquet")):
            df, meta = read_sweep(f)
            if meta and meta.get("fingerprint") != fingerprint:
                raise ConfigError(f"--resume: {f} belongs to a sweep of another configuration, seed, bundle "
                                  "or package version")
            frames.append(df)
    for df in frames:
        for rec in df.to_dict("records"):
            if rec.get("status") == "ok":
                rows[rec["point_id"]] = rec
    return rows


class _Progress:
    """Points done, rate and time left on stderr (rich), or nothing."""

    def __init__(self, total: int, enabled: bool):
        self.bar = None
        if enabled and total:
            from rich.console import Console
            from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn,
                                       TimeRemainingColumn)

            self.bar = Progress(TextColumn("sweep"), BarColumn(), MofNCompleteColumn(), TextColumn("points"),
                                TextColumn("{task.fields[rate]}"), TimeRemainingColumn(),
                                console=Console(stderr=True), transient=False)
            self.task = self.bar.add_task("sweep", total=total, rate="")
            self.t0 = time.perf_counter()
            self.n = 0
            self.bar.start()

    def advance(self, k: int = 1):
        if self.bar is not None:
            self.n += k
            rate = self.n / max(time.perf_counter() - self.t0, 1e-9)
            self.bar.update(self.task, advance=k, rate=f"{rate:,.1f}/s")

    def close(self):
        if self.bar is not None:
            self.bar.stop()


def sweep(config, grid, *, client=None, bundle=None, seed: int | None = None, out=None, resume: bool = False,
          progress: bool = False, allow_large: bool = False, flush_every: int = 50,
          sampler: Callable | None = None, reliability: str | None = None,
          _on_point: Callable | None = None) -> pd.DataFrame:
    """Evaluate the planner configuration ``config`` (path or mapping) over ``grid`` (path or mapping, see
    the module docstring); one row per point, in grid order.

    ``client``: ``None`` (in-process) or a ``dask.distributed.Client``; ``bundle``: bundle path (``None``:
    the default bundle; workers load it themselves); ``seed``: sweep seed (default: the grid's, else the
    config's ``simulation.seed``); ``out``: Parquet path written at the end (rows checkpointed to
    ``OUT.partial/`` every ``flush_every`` points); ``resume``: reuse the successful rows already in
    ``out``; ``progress``: a progress bar on stderr; ``allow_large``: run grids over :data:`MAX_POINTS`;
    ``sampler``: the workload sampler of the cluster parts (``acmemodel sweep`` passes
    :func:`acmemodel.synth.sample_workload`; without one the cluster columns report the error);
    ``reliability``: a reliability preset for the base config's failure rate (a grid axis
    ``failures.reliability`` varies it per point).
    """
    bundle_ref = None if bundle is None else str(bundle)
    warming = _warm_workers(client, bundle_ref)  # (kept referenced: a released future is cancelled)
    plan = plan_sweep(config, grid, seed=seed, allow_large=allow_large, reliability=reliability)
    meta = _metadata(plan, bundle_ref)
    meta["fingerprint"] = _fingerprint(meta)
    out = None if out is None else Path(out)
    previous = _previous_rows(out, meta["fingerprint"]) if (out is not None and resume) else {}
    partial = None
    if out is not None:
        partial = out.with_name(out.name + ".partial")
        if not resume and partial.exists():
            shutil.rmtree(partial)

    axes = plan["axes"]
    points = grid_points(axes)
    pending: list[int] = []
    rows: list[dict | None] = [None] * len(points)
    tasks: dict = {}        # (kind, key) -> (raw, seed)
    needs: list = []        # per point: (run task key, cluster task key) or an error
    for i, values in enumerate(points):
        pid = point_id(values)
        if pid in previous:
            rows[i] = {**previous[pid], "point": i}
            needs.append(None)
            continue
        raw = copy.deepcopy(plan["raw"])
        raw.pop("evaluation", None)  # validated once with the base config; not evaluated per point
        for a in axes:
            _apply(raw, a, values[a.name])
        try:
            ClusterConfig.from_dict(raw, base_dir=Path(plan["base_dir"]) if plan["base_dir"] else None)
        except Exception as e:
            needs.append(("error", f"config: {str(e).splitlines()[0]}"))
            pending.append(i)
            continue
        rk, ck = _part_keys(raw)
        keys = []
        for kind, key in (("runs", rk), ("cluster", ck)):
            if kind == "runs" and not raw.get("runs"):
                continue
            # task key: the part's inputs, seed and bundle (unique on a scheduler shared by several sweeps)
            tk = (kind, _hash(kind, key, plan["seed"], bundle_ref)[:24])
            if tk not in tasks:
                tasks[tk] = (raw, derive_seed(plan["seed"], kind, key))
            keys.append(tk)
        needs.append(("ok", keys))
        pending.append(i)

    results: dict = {}
    bar = _Progress(len(pending), progress)
    done_since_flush: list[dict] = []
    n_parts = [0]

    def finish_point(i: int):
        values = points[i]
        row: dict = {**values, "point": i, "point_id": point_id(values), "status": "ok", "error": ""}
        state, payload = needs[i]
        if state == "error":
            row.update(status="error", error=payload)
        else:
            for tk in payload:
                res = results[tk]
                if "error" in res:
                    row.update(status="error", error=res["error"] if not row["error"] else row["error"])
                else:
                    row.update(res)
            row["seed_runs"] = next((tasks[tk][1] for tk in payload if tk[0] == "runs"), -1)
            row["seed_cluster"] = next((tasks[tk][1] for tk in payload if tk[0] == "cluster"), -1)
        rows[i] = row
        done_since_flush.append(row)
        bar.advance()
        if _on_point is not None:
            _on_point(i, row)
        if partial is not None and len(done_since_flush) >= flush_every:
            flush()

    def flush():
        if partial is None or not done_since_flush:
            return
        partial.mkdir(parents=True, exist_ok=True)
        n_parts[0] += 1
        name = f"part-{int(time.time() * 1e3):013d}-{n_parts[0]:05d}.parquet"
        _write(pd.DataFrame(done_since_flush), partial / name, meta)
        done_since_flush.clear()

    try:
        waiting = {i: set(needs[i][1]) if needs[i][0] == "ok" else set() for i in pending}
        users: dict = {}
        for i in pending:
            for tk in waiting[i]:
                users.setdefault(tk, []).append(i)
        for i in pending:  # config errors complete at once
            if not waiting[i]:
                finish_point(i)

        def on_result(tk, res):
            results[tk] = res
            for i in users.get(tk, []):
                waiting[i].discard(tk)
                if not waiting[i]:
                    finish_point(i)

        args = lambda tk: (tk[0], tasks[tk][0], plan["base_dir"], bundle_ref, tasks[tk][1], sampler)  # noqa: E731
        order = []  # tasks in the order points need them (points complete in grid order in-process)
        seen = set()
        for i in pending:
            for tk in (needs[i][1] if needs[i][0] == "ok" else []):
                if tk not in seen:
                    seen.add(tk)
                    order.append(tk)
        if client is None:
            for tk in order:
                on_result(tk, evaluate_part(*args(tk)))
        else:
            from dask.distributed import as_completed

            # a run part takes ~10-100 ms: parts go to the workers in chunks so that the per-task overhead
            # of the scheduler (a few ms of client, scheduler and worker CPU per task) does not dominate.
            # A cluster part (a workload simulation, ~1 s) is a task of its own, submitted first: the long
            # tasks start at once and the run chunks fill in behind them. The chunks shrink as the parts
            # left do (a quarter of the remaining parts' share per worker, at most 50 and at least 4
            # parts): few tasks, and the workers finish together (the last chunk is short)
            n_workers = max(1, len(client.scheduler_info().get("workers", {})))
            runs = [tk for tk in order if tk[0] != "cluster"]
            chunks = [[tk] for tk in order if tk[0] == "cluster"]
            j = 0
            while j < len(runs):
                size = max(4, min(50, -(-(len(runs) - j) // (4 * n_workers))))
                chunks.append(runs[j:j + size])
                j += size
            futs = {client.submit(evaluate_parts, [args(tk) for tk in ch],
                                  key=f"acmemodel-sweep-{_hash([list(tk) for tk in ch])[:24]}", pure=False): ch
                    for ch in chunks}
            for fut in as_completed(list(futs)):
                ch = futs[fut]
                try:
                    out_ch = fut.result()
                except Exception as e:  # a worker died or the task could not run
                    msg = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
                    out_ch = [{"error": f"{tk[0]}: {msg}"} for tk in ch]
                for tk, res in zip(ch, out_ch):
                    on_result(tk, res)
    except BaseException:
        flush()
        bar.close()
        raise
    bar.close()
    del warming
    df = _frame(rows, axes)
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        _write(df, out, meta)
        if partial is not None and partial.exists():
            shutil.rmtree(partial)
    df.attrs["acmemodel.sweep"] = meta
    return df


def _warm_workers(client, bundle_ref) -> list:
    """One :func:`warm_worker` task pinned to each worker of ``client`` (none in-process), submitted before
    the grid is planned; returns their futures."""
    if client is None:
        return []
    import uuid

    workers = list(client.scheduler_info().get("workers", {}))
    tag = uuid.uuid4().hex[:12]
    return [client.submit(warm_worker, bundle_ref, workers=[w], allow_other_workers=False, pure=False,
                          key=f"acmemodel-sweep-warm-{tag}-{i}") for i, w in enumerate(workers)]


def _frame(rows: list, axes) -> pd.DataFrame:
    df = pd.DataFrame(rows)
    first = [a.name for a in axes] + ["point", "point_id", "status", "error", "seed_runs", "seed_cluster"]
    first = [c for c in first if c in df.columns]
    rest = sorted(c for c in df.columns if c not in first)
    df = df[first + rest].sort_values("point", kind="stable").reset_index(drop=True)
    for a in axes:  # an axis mixing words and numbers (interval: auto | 30m) is stored as text
        if df[a.name].map(type).nunique() > 1:
            df[a.name] = df[a.name].astype(str)
    return df
