"""Evaluation planner: how long one checkpoint's evaluation batch takes on N nodes, coupled or decoupled.

An evaluation *trial* scores one checkpoint on one dataset. It is a pipeline of four phases (paper §6,
"decoupled evaluation scheduling"):

1. **load** — fetch the checkpoint (``model_size_gb`` GB) from remote storage through the node's storage
   NIC (``storage_gbit_s``, one per node, shared by every concurrent load on that node);
2. **preprocess** — tokenise/prepare the dataset (CPU), ``preprocess_s``;
3. **generate** — inference on one GPU, ``generate_s``;
4. **metric** — score the generations (CPU; for code datasets, run the programs), ``metric_s``.

Two policies are modelled on ``nodes`` nodes of ``gpus_per_node`` GPUs (all times in seconds):

**coupled** (the baseline: one single-GPU job per dataset). Trials are submitted at once in the batch's
order and a FIFO scheduler gives the next trial to the lowest-numbered free GPU. A trial holds its GPU
through all four phases. Concurrent loads on a node share its link equally (processor sharing, a fluid
model): with ``k`` loads active each progresses at ``B/k`` bytes/s, ``B = storage_gbit_s·1e9/8``.
Trial time = load + ``preprocess_s`` + ``generate_s`` + ``metric_s``.

**decoupled** (the paper's system). Per node a precursor job loads the model once into host shared memory
(``M/B`` s, the only load on that link); each trial copies it from shared memory to its GPU over PCIe
(``M/P`` s, ``P = pcie_gbyte_s·1e9``), pipelined with the precursor's load, so a trial started at ``t``
has its weights at ``max(t + M/P, M/B)``. Preprocessing runs on the CPU ahead of the GPU (each GPU has a
preprocessing worker that prepares its trials in order, from time 0). The GPU is held only for the copy
and the generation, then released; the metric runs as a CPU job on the node's pool of
``cpu_slots_per_node`` slots (FIFO by ready time). Packing rules, applied in this order:

* *split*: a dataset with ``generate_s > split_above_s`` is split into ``ceil(generate_s/split_above_s)``
  equal shards (preprocess, generate and metric divided evenly); default ``split_above_s`` = the batch's
  total generate time divided by its GPUs (a dataset longer than one GPU's fair share is split);
* *merge*: datasets with ``generate_s < merge_below_s`` are merged, in sorted order, into one trial until
  its generation reaches ``merge_below_s`` (one weight copy for the group; each dataset's metric starts
  when its own part of the generation ends);
* *sort*: trials whose longest metric is ``>= long_metric_s`` first (longest metric first), then the rest
  by expected GPU time (copy + generate), longest first; *deal* them round-robin to the GPUs (GPUs ordered
  node-interleaved, so long metrics spread over the nodes' CPU pools).

The scheduler knows the expected phase times (historical per-dataset times are stable, the paper's
premise), so it also evaluates two other packings of the same predicted times — greedy list scheduling of
the sorted trials (each to the GPU that frees first) and the coupled run's own GPU assignment — and runs
the one with the shortest predicted makespan; the result names the packing used and every candidate's
makespan. With ``P >= B`` and enough CPU slots, the coupled assignment alone makes decoupled never
slower than coupled: every phase start is no later than in the coupled schedule (induction over each
GPU's sequence).

Outputs (:class:`BatchSchedule`): makespan (batch start to the last metric), time to first result,
GPU-hours held (GPU allocated to a trial) and used (generation), the GPU idle share ``1 − used/held`` and
the per-GPU intervals for a Gantt chart. The shipped default batch and its assumptions:
:func:`default_batch` (``data/eval_batch_default.csv``).
"""
from __future__ import annotations

import heapq
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from acmemodel.errors import ConfigError

PHASES = ("load", "preprocess", "generate", "metric")
_EPS = 1e-9


# ----------------------------------------------------------------------------------------- inputs
@dataclass(frozen=True)
class Dataset:
    """Expected phase times of one dataset's trial (seconds, for the configured model size)."""

    name: str
    preprocess_s: float
    generate_s: float
    metric_s: float

    def validate(self) -> "Dataset":
        if not self.name:
            raise ConfigError("a dataset has an empty name")
        for f in ("preprocess_s", "generate_s", "metric_s"):
            v = getattr(self, f)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
                raise ConfigError(f"dataset {self.name!r}: {f} must be a finite number >= 0 seconds, got {v!r}")
        if self.generate_s <= 0:
            raise ConfigError(f"dataset {self.name!r}: generate_s must be > 0 seconds, got {self.generate_s!r}")
        return self


@dataclass(frozen=True)
class EvalHardware:
    """Node layout and links. ``storage_gbit_s``: per-node storage NIC (Gb/s); ``pcie_gbyte_s``: host→GPU
    copy rate per GPU (GB/s); memories in GB; ``cpu_slots_per_node``: concurrent CPU metric jobs per node
    (decoupled policy)."""

    model_size_gb: float = 14.0
    gpus_per_node: int = 8
    storage_gbit_s: float = 25.0
    pcie_gbyte_s: float = 20.0
    gpu_memory_gb: float = 80.0
    node_memory_gb: float = 1024.0
    cpu_slots_per_node: int = 64

    def validate(self) -> "EvalHardware":
        for f in ("model_size_gb", "storage_gbit_s", "pcie_gbyte_s", "gpu_memory_gb", "node_memory_gb"):
            v = getattr(self, f)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
                raise ConfigError(f"hardware.{f} must be a finite number > 0, got {v!r}")
        for f in ("gpus_per_node", "cpu_slots_per_node"):
            v = getattr(self, f)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or int(v) != v or v < 1:
                raise ConfigError(f"hardware.{f} must be a positive integer, got {v!r}")
        if self.model_size_gb > self.gpu_memory_gb:
            raise ConfigError(f"model_size_gb = {self.model_size_gb:g} does not fit in one GPU's memory "
                              f"(hardware.gpu_memory_gb = {self.gpu_memory_gb:g}); trials are single-GPU")
        if self.model_size_gb > self.node_memory_gb:
            raise ConfigError(f"model_size_gb = {self.model_size_gb:g} does not fit in a node's memory "
                              f"(hardware.node_memory_gb = {self.node_memory_gb:g}) for the shared-memory copy")
        return self

    @property
    def storage_bytes_s(self) -> float:
        """Per-node storage link, bytes/s."""
        return self.storage_gbit_s * 1e9 / 8.0

    @property
    def model_bytes(self) -> float:
        return self.model_size_gb * 1e9

    @property
    def load_alone_s(self) -> float:
        """``M/B``: one load alone on a node's link (s)."""
        return self.model_bytes / self.storage_bytes_s

    @property
    def pcie_s(self) -> float:
        """``M/P``: shared memory → GPU copy (s)."""
        return self.model_bytes / (self.pcie_gbyte_s * 1e9)


@dataclass(frozen=True)
class PackingRules:
    """Decoupled packing thresholds (seconds); ``split_above_s=None``: total generate time / GPUs."""

    merge_below_s: float = 60.0
    split_above_s: float | None = None
    long_metric_s: float = 300.0

    def validate(self) -> "PackingRules":
        for f in ("merge_below_s", "long_metric_s"):
            v = getattr(self, f)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
                raise ConfigError(f"packing.{f} must be a finite number >= 0 seconds, got {v!r}")
        v = self.split_above_s
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v)
                              or v <= 0):
            raise ConfigError(f"packing.split_above_s must be > 0 seconds or auto, got {v!r}")
        return self


class EvalBatch:
    """The datasets evaluated for one checkpoint (in submission order), validated."""

    def __init__(self, datasets: Iterable[Dataset], *, source: str | None = None):
        self.datasets = [d.validate() for d in datasets]
        self.source = source
        if not self.datasets:
            raise ConfigError("the evaluation batch has no datasets")
        seen: set[str] = set()
        for d in self.datasets:
            if d.name in seen:
                raise ConfigError(f"dataset {d.name!r} appears twice in the batch")
            seen.add(d.name)

    def __len__(self) -> int:
        return len(self.datasets)

    @classmethod
    def from_frame(cls, df: pd.DataFrame, *, source: str | None = None) -> "EvalBatch":
        """From a table with columns ``dataset, preprocess_s, generate_s, metric_s`` (extra columns ignored)."""
        where = source or "datasets"
        missing = [c for c in ("dataset", "preprocess_s", "generate_s", "metric_s") if c not in df.columns]
        if missing:
            raise ConfigError(f"{where}: missing column(s) {missing}; need dataset, preprocess_s, generate_s, "
                              "metric_s")
        out = []
        for i, row in enumerate(df.itertuples(index=False)):
            name = str(getattr(row, "dataset")).strip() if pd.notna(getattr(row, "dataset")) else ""
            vals = {}
            for f in ("preprocess_s", "generate_s", "metric_s"):
                v = pd.to_numeric(pd.Series([getattr(row, f)]), errors="coerce").iloc[0]
                if pd.isna(v):
                    raise ConfigError(f"{where}: dataset {name or f'row {i + 1}'!r}: {f} is missing or not a "
                                      f"number ({getattr(row, f)!r})")
                vals[f] = float(v)
            if not name:
                raise ConfigError(f"{where}: row {i + 1} has an empty dataset name")
            out.append(Dataset(name, **vals))
        return cls(out, source=source)

    @classmethod
    def from_csv(cls, path: str | Path) -> "EvalBatch":
        """Read a priors CSV (``dataset, preprocess_s, generate_s, metric_s``)."""
        p = Path(path)
        if not p.exists():
            raise FileNotFoundError(f"dataset priors file not found: {p}")
        try:
            df = pd.read_csv(p, comment="#")
        except Exception as e:  # parser errors
            raise ConfigError(f"cannot read {p.name}: {str(e).splitlines()[0] if str(e) else type(e).__name__}")
        return cls.from_frame(df, source=p.name)

    def to_frame(self) -> pd.DataFrame:
        return pd.DataFrame([{"dataset": d.name, "preprocess_s": d.preprocess_s, "generate_s": d.generate_s,
                              "metric_s": d.metric_s} for d in self.datasets])


def default_batch() -> EvalBatch:
    """The shipped default batch: 63 datasets for a 7B model (``data/eval_batch_default.csv``; every
    assumption behind its times is in that file's header and in PROVENANCE.md)."""
    from importlib import resources

    p = resources.files("acmemodel.datasets").joinpath("data", "eval_batch_default.csv")
    return EvalBatch.from_csv(Path(str(p)))


# ----------------------------------------------------------------------------------------- priors
#: phase shares of one coupled trial in the paper's HumanEval profile (7B): load + preprocess 29.5 %,
#: metric 19.0 % (the GPU's idle last 42 s), generation the rest
PROFILE_SHARES = {"load_preprocess": 0.295, "metric": 0.190}


class DatasetPriors:
    """Per-dataset expected phase times from past trials: the median of each phase per dataset.

    ``fit(trials)`` takes one row per past trial with ``dataset`` and ``preprocess_s``, ``generate_s``,
    ``metric_s`` — or, from a job trace that only has a run time per job, ``fit_trace(jobs, name_column)``
    splits each dataset's median run time ``T`` by the HumanEval profile shares (:data:`PROFILE_SHARES`):
    metric ``0.19·T``, preprocess ``max(0, 0.295·T − load)`` with the load of 8 trials sharing a node's link
    (``8·M/B``), generation the rest. ``summary()`` shows the medians, counts and the relative spread
    (IQR / median of the total), the check that per-dataset times are stable.
    """

    def __init__(self, *, hardware: EvalHardware | None = None):
        self.hardware = hardware

    def fit(self, trials: pd.DataFrame) -> "DatasetPriors":
        need = ["dataset", "preprocess_s", "generate_s", "metric_s"]
        missing = [c for c in need if c not in trials.columns]
        if missing:
            raise ConfigError(f"trials: missing column(s) {missing}")
        df = trials[need].copy()
        for c in need[1:]:
            df[c] = pd.to_numeric(df[c], errors="coerce")
        bad = df[need[1:]].isna().any(axis=1) | (df[need[1:]] < 0).any(axis=1)
        self.n_rejected_ = int(bad.sum())
        df = df[~bad]
        if df.empty:
            raise ConfigError("trials: no row with valid phase times")
        df["total_s"] = df[need[1:]].sum(axis=1)
        g = df.groupby("dataset", sort=False)
        med = g[need[1:]].median()
        q = g["total_s"].quantile([0.25, 0.75]).unstack()
        self.priors_ = med.assign(trials=g.size(), spread=(q[0.75] - q[0.25]) / g["total_s"].median())
        return self

    def fit_trace(self, jobs: pd.DataFrame, name_column: str = "job_name", *, type_value: str = "Eval"
                  ) -> "DatasetPriors":
        if name_column not in jobs.columns:
            raise ConfigError(f"the trace has no {name_column!r} column to group evaluation jobs by dataset "
                              f"(AcmeTrace has no job names: use a CSV of past trials)")
        df = jobs
        if "type" in df.columns:
            df = df[df["type"].astype(str) == type_value]
        if "run_s" not in df.columns:
            raise ConfigError("the trace has no run_s column")
        df = df[np.isfinite(df["run_s"].to_numpy(float)) & (df["run_s"].to_numpy(float) > 0)]
        if df.empty:
            raise ConfigError(f"the trace has no {type_value} job with a positive run time")
        hw = (self.hardware or EvalHardware()).validate()
        load8 = 8 * hw.load_alone_s
        t = df.groupby(name_column)["run_s"].median()
        metric = PROFILE_SHARES["metric"] * t
        pre = np.maximum(0.0, PROFILE_SHARES["load_preprocess"] * t - load8)
        gen = np.maximum(t - metric - pre - np.minimum(load8, PROFILE_SHARES["load_preprocess"] * t), 1e-3)
        trials = pd.DataFrame({"dataset": t.index.astype(str), "preprocess_s": pre.to_numpy(),
                               "generate_s": gen.to_numpy(), "metric_s": metric.to_numpy()})
        return self.fit(trials)

    def summary(self) -> pd.DataFrame:
        return self.priors_.reset_index()

    def batch(self) -> EvalBatch:
        """The fitted priors as an :class:`EvalBatch` (one trial per dataset)."""
        return EvalBatch.from_frame(self.priors_.reset_index(), source="fitted priors")


# ----------------------------------------------------------------------------------------- schedules
@dataclass
class Interval:
    """One phase of one trial on one GPU (``gpu = -1``: a CPU job of ``node``)."""

    gpu: int
    node: int
    trial: str
    phase: str
    start_s: float
    end_s: float


@dataclass
class BatchSchedule:
    """The predicted schedule of one batch under one policy on ``nodes`` nodes."""

    policy: str
    nodes: int
    gpus: int
    intervals: list
    results_s: dict            # dataset -> time its metric finished (s after batch start)
    gpu_held_s: float          # sum over trials of the time a GPU was allocated
    gpu_used_s: float          # sum of generation time
    packing: str | None = None
    candidates: dict = field(default_factory=dict)

    @property
    def makespan_s(self) -> float:
        return max(self.results_s.values())

    @property
    def first_result_s(self) -> float:
        return min(self.results_s.values())

    @property
    def gpu_idle_share(self) -> float:
        """``1 − used/held``: share of the GPU time held by trials without generation."""
        return 1.0 - self.gpu_used_s / self.gpu_held_s if self.gpu_held_s > 0 else 0.0

    def to_dict(self) -> dict:
        return {"policy": self.policy, "nodes": self.nodes, "gpus": self.gpus, "makespan_s": self.makespan_s,
                "first_result_s": self.first_result_s, "last_result_s": self.makespan_s,
                "gpu_hours_held": self.gpu_held_s / 3600.0, "gpu_hours_used": self.gpu_used_s / 3600.0,
                "gpu_hours_allocated": self.gpus * self.makespan_s / 3600.0,
                "gpu_idle_share": self.gpu_idle_share, "packing": self.packing,
                "packing_candidates_makespan_s": dict(self.candidates)}

    def plot(self, ax=None):
        """Gantt chart: one row per GPU with its phases coloured; the decoupled policy's CPU jobs (the
        precursor load and the metrics) on extra rows per node below the GPUs, concurrent jobs stacked."""
        import matplotlib.pyplot as plt
        from matplotlib.patches import Patch

        cpu = [iv for iv in self.intervals if iv.gpu < 0]
        lanes: list[tuple[int, float]] = []          # (node, busy until)
        rows: list[tuple[Interval, int]] = []
        for iv in sorted(cpu, key=lambda iv: (iv.node, iv.start_s)):
            k = next((j for j, (n, busy) in enumerate(lanes) if n == iv.node and busy <= iv.start_s + 1e-9), None)
            if k is None:
                lanes.append((iv.node, iv.end_s))
                k = len(lanes) - 1
            else:
                lanes[k] = (iv.node, iv.end_s)
            rows.append((iv, self.gpus + k))
        rows += [(iv, iv.gpu) for iv in self.intervals if iv.gpu >= 0]
        n_rows = self.gpus + len(lanes)
        if ax is None:
            _, ax = plt.subplots(figsize=(10, max(2.0, 0.18 * n_rows + 1)))
        colors = {"load": "#9ecae1", "copy": "#3182bd", "preprocess": "#fdd0a2", "generate": "#31a354",
                  "metric": "#de2d26"}
        scale, unit = (60.0, "min") if self.makespan_s < 3 * 3600 else (3600.0, "h")
        for iv, y in rows:
            ax.broken_barh([(iv.start_s / scale, (iv.end_s - iv.start_s) / scale)], (y - 0.4, 0.8),
                           facecolors=colors.get(iv.phase, "#999999"), edgecolor="white", linewidth=0.3)
        used = [p for p in colors if any(iv.phase == p for iv in self.intervals)]
        ax.legend(handles=[Patch(color=colors[p], label=p) for p in used], loc="lower right", fontsize=7,
                  ncol=len(used))
        ticks = list(range(self.gpus)) + [self.gpus + k for k in range(len(lanes))]
        labels = [f"GPU {g}" for g in range(self.gpus)] + [f"node {n} CPU" for n, _ in lanes]
        step = max(1, len(ticks) // 24)
        ax.set_yticks(ticks[::step], labels[::step], fontsize=7)
        ax.set_xlabel(f"time since batch start ({unit})")
        ax.set_ylim(n_rows - 0.5, -0.5)
        ax.set_title(f"{self.policy}, {self.nodes} node(s): makespan {self.makespan_s / scale:.3g} {unit}")
        return ax


def _gpu_node(g: int, gpn: int) -> int:
    return g // gpn


def simulate_coupled(batch: EvalBatch, nodes: int, hardware: EvalHardware | None = None) -> BatchSchedule:
    """The coupled policy (see the module docstring): FIFO to the lowest free GPU, fluid sharing of each
    node's storage link by concurrent loads, the GPU held through all four phases."""
    hw = (hardware or EvalHardware()).validate()
    nodes = check_nodes(nodes)
    gpn = hw.gpus_per_node
    G = nodes * gpn
    B, M = hw.storage_bytes_s, hw.model_bytes
    queue = list(range(len(batch)))[::-1]          # pop() gives batch order
    free = list(range(G))                            # heap of free GPU ids
    heapq.heapify(free)
    loads: dict[int, list] = {n: [] for n in range(nodes)}   # node -> [[remaining bytes, gpu, trial, t0]]
    timers: list = []                                # heap of (end time, seq, gpu, trial, phase, start)
    seq = 0
    intervals, results = [], {}
    held = used = 0.0
    trial_start: dict[int, float] = {}
    t = 0.0

    def push(end, g, i, phase, start):
        nonlocal seq
        heapq.heappush(timers, (end, seq, g, i, phase, start))
        seq += 1

    def dispatch(now):
        while queue and free:
            g = heapq.heappop(free)
            i = queue.pop()
            trial_start[g] = now
            loads[_gpu_node(g, gpn)].append([M, g, i, now])

    dispatch(0.0)
    while timers or any(loads.values()):
        t_next = timers[0][0] if timers else math.inf
        for n, act in loads.items():
            if act:
                t_next = min(t_next, t + min(a[0] for a in act) * len(act) / B)
        dt = t_next - t
        for n, act in loads.items():
            if act:
                rate = B / len(act)
                for a in act:
                    a[0] -= rate * dt
        t = t_next
        for n, act in loads.items():
            done = [a for a in act if a[0] <= M * _EPS]
            if done:
                loads[n] = [a for a in act if a[0] > M * _EPS]
                for _, g, i, t0 in done:
                    intervals.append(Interval(g, n, batch.datasets[i].name, "load", t0, t))
                    push(t + batch.datasets[i].preprocess_s, g, i, "preprocess", t)
        while timers and timers[0][0] <= t + _EPS * max(1.0, t):
            end, _, g, i, phase, start = heapq.heappop(timers)
            d = batch.datasets[i]
            n = _gpu_node(g, gpn)
            intervals.append(Interval(g, n, d.name, phase, start, end))
            if phase == "preprocess":
                push(end + d.generate_s, g, i, "generate", end)
            elif phase == "generate":
                used += d.generate_s
                push(end + d.metric_s, g, i, "metric", end)
            else:
                results[d.name] = end
                held += end - trial_start[g]
                heapq.heappush(free, g)
        dispatch(t)
    sched = BatchSchedule("coupled", nodes, G, intervals, results, held, used)
    sched.assignment = _assignment(intervals, batch)  # type: ignore[attr-defined]
    return sched


def _assignment(intervals, batch) -> dict[int, list[int]]:
    """GPU -> the batch indices it ran, in start order (from a coupled schedule)."""
    index = {d.name: i for i, d in enumerate(batch.datasets)}
    starts = sorted((iv.start_s, iv.gpu, index[iv.trial]) for iv in intervals if iv.phase == "load")
    out: dict[int, list[int]] = {}
    for _, g, i in starts:
        out.setdefault(g, []).append(i)
    return out


@dataclass
class _Trial:
    """A decoupled trial: consecutive segments (dataset, preprocess, generate, metric) on one GPU."""

    name: str
    segments: list

    @property
    def preprocess_s(self) -> float:
        return sum(s[1] for s in self.segments)

    @property
    def generate_s(self) -> float:
        return sum(s[2] for s in self.segments)

    @property
    def max_metric_s(self) -> float:
        return max(s[3] for s in self.segments)


def pack_trials(batch: EvalBatch, gpus: int, rules: PackingRules | None = None, hardware: EvalHardware | None = None
                ) -> list[_Trial]:
    """Split, merge and sort the batch's datasets into decoupled trials (module docstring: packing rules)."""
    rules = (rules or PackingRules()).validate()
    hw = hardware or EvalHardware()
    total_gen = sum(d.generate_s for d in batch.datasets)
    split_above = rules.split_above_s if rules.split_above_s is not None else total_gen / gpus
    split_above = max(split_above, rules.merge_below_s, _EPS)
    pieces = []
    for d in batch.datasets:
        k = max(1, math.ceil(d.generate_s / split_above - 1e-12)) if d.generate_s > split_above else 1
        for j in range(k):
            nm = d.name if k == 1 else f"{d.name}#{j + 1}/{k}"
            pieces.append((nm, d.preprocess_s / k, d.generate_s / k, d.metric_s / k))
    # merge small pieces (shortest first) into groups reaching merge_below_s
    small = sorted([p for p in pieces if p[2] < rules.merge_below_s], key=lambda p: (p[2], p[0]))
    trials = [_Trial(p[0], [p]) for p in pieces if p[2] >= rules.merge_below_s]
    group: list = []
    for p in small:
        group.append(p)
        if sum(s[2] for s in group) >= rules.merge_below_s:
            trials.append(_Trial("+".join(s[0] for s in group), group))
            group = []
    if group:
        trials.append(_Trial("+".join(s[0] for s in group), group))
    for tr in trials:   # within a merged trial, long metrics first so they start earliest
        tr.segments.sort(key=lambda s: -s[3])
    long_ = sorted([t for t in trials if t.max_metric_s >= rules.long_metric_s], key=lambda t: -t.max_metric_s)
    rest = sorted([t for t in trials if t.max_metric_s < rules.long_metric_s],
                  key=lambda t: -(hw.pcie_s + t.generate_s))
    return long_ + rest


def _node_interleaved(nodes: int, gpn: int) -> list[int]:
    return [n * gpn + i for i in range(gpn) for n in range(nodes)]


def _run_decoupled(per_gpu: dict[int, list[_Trial]], nodes: int, hw: EvalHardware
                   ) -> tuple[list, dict, float, float]:
    """Timelines of given per-GPU trial sequences under the decoupled policy."""
    gpn = hw.gpus_per_node
    precursor = hw.load_alone_s
    intervals, metric_jobs = [], []   # metric job: (ready, node, name, duration)
    held = used = 0.0
    for n in range(nodes):
        intervals.append(Interval(-1, n, "precursor", "load", 0.0, precursor))
    for g, seq in per_gpu.items():
        n = _gpu_node(g, gpn)
        gpu_free = ready = 0.0
        for tr in seq:
            ready += tr.preprocess_s
            start = max(gpu_free, ready)
            weights = max(start + hw.pcie_s, precursor)
            intervals.append(Interval(g, n, tr.name, "copy", start, weights))
            t = weights
            for name, _, gen, met in tr.segments:
                intervals.append(Interval(g, n, name, "generate", t, t + gen))
                t += gen
                metric_jobs.append((t, n, name, met))
            held += t - start
            used += tr.generate_s
            gpu_free = t
    results = {}
    pools = {n: [0.0] * hw.cpu_slots_per_node for n in range(nodes)}
    for ready, n, name, met in sorted(metric_jobs):
        slot_free = heapq.heappop(pools[n])
        s = max(ready, slot_free)
        heapq.heappush(pools[n], s + met)
        intervals.append(Interval(-1, n, name, "metric", s, s + met))
        results[name] = s + met
    return intervals, results, held, used


def _greedy(trials: list[_Trial], order: list[int], hw: EvalHardware) -> dict[int, list[_Trial]]:
    """List scheduling: each trial (in order) to the GPU whose previous trial ends first."""
    per_gpu: dict[int, list[_Trial]] = {g: [] for g in order}
    state = [(0.0, k, g, 0.0) for k, g in enumerate(order)]   # (gpu free, tie, gpu, preprocess ready)
    heapq.heapify(state)
    precursor = hw.load_alone_s
    for tr in trials:
        free_t, k, g, ready = heapq.heappop(state)
        ready += tr.preprocess_s
        start = max(free_t, ready)
        end = max(start + hw.pcie_s, precursor) + tr.generate_s
        per_gpu[g].append(tr)
        heapq.heappush(state, (end, k, g, ready))
    return per_gpu


def simulate_decoupled(batch: EvalBatch, nodes: int, hardware: EvalHardware | None = None,
                       rules: PackingRules | None = None) -> BatchSchedule:
    """The decoupled policy (module docstring): precursor per node, GPU held for copy + generation only,
    metrics on the node's CPU pool; the packing with the shortest predicted makespan among the paper's
    round-robin rule, greedy list scheduling and the coupled run's assignment."""
    hw = (hardware or EvalHardware()).validate()
    nodes = check_nodes(nodes)
    gpn = hw.gpus_per_node
    G = nodes * gpn
    if hw.pcie_gbyte_s * 8 < hw.storage_gbit_s:
        raise ConfigError(f"hardware.pcie_gbyte_s = {hw.pcie_gbyte_s:g} GB/s is slower than the storage link "
                          f"({hw.storage_gbit_s:g} Gb/s): the shared-memory copy would not help")
    trials = pack_trials(batch, G, rules, hw)
    order = _node_interleaved(nodes, gpn)
    cands: dict[str, dict] = {}
    rr: dict[int, list[_Trial]] = {g: [] for g in order}
    for k, tr in enumerate(trials):
        rr[order[k % G]].append(tr)
    cands["round-robin"] = rr
    cands["greedy"] = _greedy(trials, order, hw)
    coupled = simulate_coupled(batch, nodes, hw)
    cands["coupled-assignment"] = {
        g: [_Trial(batch.datasets[i].name, [(batch.datasets[i].name, batch.datasets[i].preprocess_s,
                                             batch.datasets[i].generate_s, batch.datasets[i].metric_s)])
            for i in idx] for g, idx in coupled.assignment.items()}
    best, runs = None, {}
    for name, per_gpu in cands.items():
        iv, res, held, used = _run_decoupled(per_gpu, nodes, hw)
        runs[name] = (iv, res, held, used)
        if best is None or max(res.values()) < max(runs[best][1].values()) - _EPS:
            best = name
    iv, res, held, used = runs[best]
    # results per dataset: a split dataset is done when its last shard's metric is
    per_ds: dict[str, float] = {}
    for nm, t in res.items():
        base = nm.split("#", 1)[0]
        per_ds[base] = max(per_ds.get(base, 0.0), t)
    return BatchSchedule("decoupled", nodes, G, iv, per_ds, held, used, packing=best,
                         candidates={k: max(v[1].values()) for k, v in runs.items()})


def check_nodes(nodes) -> int:
    if isinstance(nodes, bool) or not isinstance(nodes, (int, np.integer)) or nodes < 1:
        raise ConfigError(f"nodes must be a positive integer, got {nodes!r}")
    if nodes > 4096:
        raise ConfigError(f"nodes must be <= 4096, got {nodes}")
    return int(nodes)


# ----------------------------------------------------------------------------------------- planner
@dataclass
class EvalPlanConfig:
    """An evaluation-batch configuration (YAML/TOML)::

        model_size_gb: 14             # checkpoint size (GB)
        hardware: {gpus_per_node: 8, storage_gbit_s: 25, pcie_gbyte_s: 20, gpu_memory_gb: 80,
                   node_memory_gb: 1024, cpu_slots_per_node: 64}
        datasets: default             # default | a priors CSV (relative to this file) | a list of
                                      #   {name, preprocess, generate, metric} (durations: 90s, 2m...)
        packing: {merge_below: 60s, split_above: auto, long_metric: 5m}
        nodes: [1, 4]
        policy: both                  # coupled | decoupled | both
    """

    batch: EvalBatch
    hardware: EvalHardware = field(default_factory=EvalHardware)
    rules: PackingRules = field(default_factory=PackingRules)
    nodes: list = field(default_factory=lambda: [1, 2, 4, 8])
    policy: str = "both"
    source: str | None = None

    @classmethod
    def from_dict(cls, data: Mapping | None, *, base_dir: Path | None = None) -> "EvalPlanConfig":
        from acmemodel.planner.config import _check_keys, parse_duration

        top = _check_keys(data or {}, {"model_size_gb", "hardware", "datasets", "packing", "nodes", "policy"},
                          "evaluation config")
        hw_d = _check_keys(top.get("hardware"), {f for f in EvalHardware.__dataclass_fields__
                                                 if f != "model_size_gb"}, "hardware")
        if "model_size_gb" in top:
            hw_d["model_size_gb"] = top["model_size_gb"]
        hw = EvalHardware(**hw_d).validate()
        pk = _check_keys(top.get("packing"), {"merge_below", "split_above", "long_metric"}, "packing")
        rules = PackingRules(
            merge_below_s=parse_duration(pk.get("merge_below", 60.0), "packing.merge_below", allow_zero=True),
            split_above_s=(None if pk.get("split_above", "auto") == "auto"
                           else parse_duration(pk["split_above"], "packing.split_above")),
            long_metric_s=parse_duration(pk.get("long_metric", 300.0), "packing.long_metric", allow_zero=True),
        ).validate()
        ds = top.get("datasets", "default")
        if ds == "default":
            batch = default_batch()
        elif isinstance(ds, str):
            p = Path(ds)
            if not p.is_absolute() and base_dir is not None:
                p = base_dir / p
            batch = EvalBatch.from_csv(p)
        elif isinstance(ds, list):
            out = []
            for i, item in enumerate(ds):
                it = _check_keys(item, {"name", "preprocess", "generate", "metric"}, f"datasets[{i}]")
                name = str(it.get("name", "")).strip()
                if not name:
                    raise ConfigError(f"datasets[{i}].name is missing")
                vals = {}
                for k in ("preprocess", "generate", "metric"):
                    if k not in it:
                        raise ConfigError(f"dataset {name!r}: {k} is missing")
                    vals[f"{k}_s"] = parse_duration(it[k], f"dataset {name!r}: {k}", allow_zero=k != "generate")
                out.append(Dataset(name, **vals))
            batch = EvalBatch(out, source="config")
        else:
            raise ConfigError(f"datasets must be 'default', a CSV path or a list, got {type(ds).__name__}")
        nodes = top.get("nodes", [1, 2, 4, 8])
        nodes = [nodes] if isinstance(nodes, int) else nodes
        if not isinstance(nodes, list) or not nodes:
            raise ConfigError(f"nodes must be a positive integer or a non-empty list, got {nodes!r}")
        nodes = [check_nodes(n) for n in nodes]
        policy = top.get("policy", "both")
        if policy not in ("coupled", "decoupled", "both"):
            raise ConfigError(f"policy must be one of coupled, decoupled, both, got {policy!r}")
        return cls(batch, hw, rules, nodes, policy)

    @classmethod
    def load(cls, path: str | Path) -> "EvalPlanConfig":
        from acmemodel.planner.config import read_config_file

        p = Path(path)
        cfg = cls.from_dict(read_config_file(p), base_dir=p.parent)
        cfg.source = str(p)
        return cfg


@dataclass
class EvalPlanResult:
    """Schedules of one batch per node count and policy; ``summary()`` one row per node count."""

    config: EvalPlanConfig
    schedules: dict            # (policy, nodes) -> BatchSchedule

    def speedup(self, nodes: int) -> float | None:
        c, d = self.schedules.get(("coupled", nodes)), self.schedules.get(("decoupled", nodes))
        return c.makespan_s / d.makespan_s if c and d else None

    def summary(self) -> pd.DataFrame:
        rows = []
        for (policy, n), s in sorted(self.schedules.items(), key=lambda kv: (kv[0][1], kv[0][0])):
            d = s.to_dict()
            rows.append({"nodes": n, "policy": policy, "makespan_s": d["makespan_s"],
                         "first_result_s": d["first_result_s"], "gpu_hours_held": d["gpu_hours_held"],
                         "gpu_hours_used": d["gpu_hours_used"], "gpu_idle_share": d["gpu_idle_share"],
                         "speedup": self.speedup(n) if policy == "decoupled" else None,
                         "packing": d["packing"]})
        return pd.DataFrame(rows)

    def to_dict(self) -> dict:
        cfg = self.config
        return {"datasets": len(cfg.batch), "source": cfg.batch.source, "hardware": asdict(cfg.hardware),
                "packing": asdict(cfg.rules), "nodes": cfg.nodes, "policy": cfg.policy,
                "schedules": [s.to_dict() for _, s in sorted(self.schedules.items(), key=lambda kv: (kv[0][1],
                                                                                                   kv[0][0]))],
                "speedup": {str(n): self.speedup(n) for n in cfg.nodes}}

    def report(self, path: str | Path) -> str:
        from acmemodel.planner.report import write_eval_report

        return write_eval_report(self, path)


class EvalPlanner:
    """Plan one evaluation batch: ``EvalPlanner().plan(config)`` → :class:`EvalPlanResult`."""

    def plan(self, config: EvalPlanConfig) -> EvalPlanResult:
        scheds = {}
        for n in config.nodes:
            if config.policy in ("coupled", "both"):
                scheds[("coupled", n)] = simulate_coupled(config.batch, n, config.hardware)
            if config.policy in ("decoupled", "both"):
                scheds[("decoupled", n)] = simulate_decoupled(config.batch, n, config.hardware, config.rules)
        return EvalPlanResult(config, scheds)


def plan_batch(batch: EvalBatch | None = None, nodes: Sequence[int] = (1, 2, 4, 8), *, policy: str = "both",
               hardware: EvalHardware | None = None, rules: PackingRules | None = None) -> EvalPlanResult:
    """Convenience: plan ``batch`` (default: :func:`default_batch`) on each node count."""
    cfg = EvalPlanConfig(batch or default_batch(), (hardware or EvalHardware()).validate(),
                         (rules or PackingRules()).validate(), [check_nodes(n) for n in nodes], policy)
    return EvalPlanner().plan(cfg)


def feedback_from_plan(config: EvalPlanConfig, cluster: Mapping) -> list[dict]:
    """Evaluation feedback delay of a checkpoint, per configured node count and policy: the Eval queue
    wait of the plan's cluster simulation (p50 and p90 of one Eval job's wait, taken as the wait for the
    batch's GPUs) plus the batch makespan, in seconds. Without a simulated Eval queue the waits are
    ``None`` and only the makespan is known."""
    q = (cluster.get("queue_s") or {}).get("Eval") if cluster.get("available", True) else None
    wait = {k: (None if q is None else q.get(k)) for k in ("p50", "p90")}
    out = []
    for (policy, n), s in sorted(EvalPlanner().plan(config).schedules.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        row = {"nodes": n, "policy": policy, "makespan_s": s.makespan_s,
               "eval_wait_p50_s": wait["p50"], "eval_wait_p90_s": wait["p90"],
               "wait_source": "cluster simulation" if q is not None else "not simulated"}
        for k in ("p50", "p90"):
            row[f"feedback_{k}_s"] = None if wait[k] is None else wait[k] + s.makespan_s
        out.append(row)
    return out


__all__ = ["Dataset", "EvalHardware", "PackingRules", "EvalBatch", "default_batch", "DatasetPriors",
           "BatchSchedule", "Interval", "simulate_coupled", "simulate_decoupled", "pack_trials",
           "EvalPlanConfig", "EvalPlanResult", "EvalPlanner", "plan_batch", "feedback_from_plan", "check_nodes"]
