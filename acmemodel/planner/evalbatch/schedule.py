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
Trial time = load + ``preprocess_s`` + ``generate_s`` + ``metric_s`` (without overheads).

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
makespan. With ``P >= B``, enough CPU slots and no overheads, the coupled assignment alone makes
decoupled never slower than coupled: every phase start is no later than in the coupled schedule
(induction over each GPU's sequence). The cluster's CPU queue (``metric_queue_s``) is a cost only the
decoupled policy pays, so with it a batch whose metrics are short can lose.

Outputs (:class:`BatchSchedule`): makespan (batch start to the last metric), time to first result,
GPU-hours held (GPU allocated to a trial) and used (generation), the GPU idle share ``1 − used/held`` and
the per-GPU intervals for a Gantt chart. The shipped default batch and its assumptions:
:func:`default_batch` (``data/eval_batch_default.csv``).

**Overheads** (:class:`~acmemodel.planner.evalbatch.inputs.EvalOverheads`, each fixed from published
numbers, see its docstring): a per-trial GPU start-up carved out of the set-up (coupled trial =
load + ``max(preprocess_s, trial_startup_s)`` + generate + metric; decoupled: the start-up on the GPU, the
rest of the set-up on the CPU), a metric pool of ``(128 − 8) // 16 = 7`` jobs per node, the cluster's CPU
queue before each decoupled metric job (``metric_queue_s``, Kalos's mean CPU-job wait 88.4 s), the
precursor's link share, and the coupled baseline's packing: by default one trial per dataset (the
profile's trial) in an order the scheduler cannot relate to run time — the median over ``coupled_orders``
random submission orders, each run FIFO to the lowest free GPU.

**What the default batch's speed-ups measure.** With the shipped batch both decoupled makespans are the
apps trial's critical path (its assumed 30-min metric) plus the metric job's CPU queue: 1 node 43.6 min
(set-up + 658 s generation + 88.4 s queue + 30 min metric), 4 nodes 22.6 min (apps split in two shards,
each scoring its half). The coupled makespan is then where the baseline's order puts apps: over random
orders the 1-node speed-up ranges 0.98–1.67× (median 1.26×), and on 4 nodes no coupled baseline that
does not split apps can be shorter than its trial (≥ 42.7 min), so the 4-node speed-up (1.89×) is set by
the decoupled critical path, i.e. by the metric queue: without it 2.03× (``benchmarks/bench_evalplan.py``
prints the table).

This module holds the two policy simulations; the planner front is :mod:`acmemodel.planner.evalbatch.plan`.
"""
from __future__ import annotations

import heapq
import math
from dataclasses import dataclass, field, replace

from acmemodel.errors import ConfigError
from acmemodel.planner.evalbatch.inputs import EvalBatch, EvalHardware, EvalOverheads, PackingRules, check_nodes

PHASES = ("load", "preprocess", "generate", "metric")
_EPS = 1e-9


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
    #: GPU -> the dataset parts (:class:`Dataset`) it ran, in start order (the coupled policy; the decoupled one
    #: reuses it)
    assignment: dict = field(default_factory=dict)

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


#: OpenCompass's ``SizePartitioner`` defaults (``max_task_size = 40000`` cost units, ``gen_task_coef = 20``
#: units per sample of a generation dataset) as generation seconds of the default 7B batch: HumanEval's 164
#: problems are 164 · 20 = 3,280 units and its profiled generation 113.8 s, so a task of 40,000 units is
#: 40,000 / 3,280 · 113.8 s = 1,387.8 s of generation (every dataset taken at HumanEval's cost per second)
OPENCOMPASS_MAX_TASK_S = 40000.0 / (164 * 20) * 113.8


#: at most this many (trials × nodes × orders) steps for the ``"random"`` coupled baseline's orders
COUPLED_ORDER_BUDGET = 700_000


def _shard(d, j: int, k: int):
    """Part ``j`` (1-based) of ``k`` equal parts of dataset ``d`` (phase times divided evenly)."""
    if k == 1:
        return d
    return type(d)(f"{d.name}#{j}/{k}", d.preprocess_s / k, d.generate_s / k, d.metric_s / k)


def coupled_tasks(batch: EvalBatch, overheads: EvalOverheads, rules: PackingRules | None = None) -> list[list]:
    """The coupled baseline's trials, in submission order, each a list of the :class:`Dataset` parts it runs
    (a whole dataset, or a shard named ``name#j/k`` holding ``1/k`` of each phase), by
    ``overheads.coupled_packing``:

    * ``"submission"`` — one trial per dataset in the batch's order (a toolkit's naive partitioner);
    * ``"random"`` — one trial per dataset, in the batch's order here; :func:`simulate_coupled` then runs
      ``overheads.coupled_orders`` random permutations of them (:func:`coupled_submission_orders`);
    * ``"toolkit"`` — datasets with ``generate_s < merge_below_s`` merged shortest first into groups
      reaching it, then every trial by size (its generation time) largest first — the toolkit knows the
      datasets' sizes, not their metric times;
    * ``"opencompass"`` — OpenCompass's ``SizePartitioner`` (strategy ``heuristic``) with its default
      task size, :data:`OPENCOMPASS_MAX_TASK_S` of generation: datasets sorted by size (generation)
      largest first; one larger than the task size split into ``ceil(size / max)`` equal parts; then
      the parts, again largest first, packed in order into a task until the next part would overflow it
      (next fit); tasks submitted in that order.
    """
    ds = batch.datasets
    n = len(batch)
    if overheads.coupled_packing in ("submission", "random"):
        return [[d] for d in ds]
    if overheads.coupled_packing == "opencompass":
        cap = OPENCOMPASS_MAX_TASK_S
        parts = []
        for d in sorted(ds, key=lambda d: -d.generate_s):
            k = math.ceil(d.generate_s / cap - 1e-12) if d.generate_s > cap else 1
            parts += [_shard(d, j + 1, k) for j in range(k)]
        parts.sort(key=lambda d: -d.generate_s)
        tasks, cur, size = [], [], 0.0
        for i, d in enumerate(parts):
            cur.append(d)
            size += d.generate_s
            if i == len(parts) - 1 or size + parts[i + 1].generate_s > cap:
                tasks.append(cur)
                cur, size = [], 0.0
        return tasks
    rules = (rules or PackingRules()).validate()
    big = [[i] for i in range(n) if ds[i].generate_s >= rules.merge_below_s]
    small = sorted((i for i in range(n) if ds[i].generate_s < rules.merge_below_s),
                   key=lambda i: (ds[i].generate_s, ds[i].name))
    groups, cur = [], []
    for i in small:
        cur.append(i)
        if sum(ds[j].generate_s for j in cur) >= rules.merge_below_s:
            groups.append(cur)
            cur = []
    if cur:
        groups.append(cur)
    order = sorted(big + groups, key=lambda t: (-sum(ds[i].generate_s for i in t), t[0]))
    return [[ds[i] for i in t] for t in order]


def coupled_submission_orders(batch: EvalBatch, overheads: EvalOverheads, rules: PackingRules | None = None
                              ) -> list[list[list]]:
    """The coupled baseline's submissions to simulate: one task list (:func:`coupled_tasks`), or for
    ``coupled_packing="random"`` ``coupled_orders`` random permutations of the one-dataset trials
    (``numpy.random.default_rng(0)``; the first is the listing order itself only by chance)."""
    tasks = coupled_tasks(batch, overheads, rules)
    if overheads.coupled_packing != "random":
        return [tasks]
    import numpy as np

    rng = np.random.default_rng(0)
    return [[tasks[i] for i in rng.permutation(len(tasks))] for _ in range(overheads.coupled_orders)]


def _by_dataset(results: dict) -> dict:
    """Results per dataset: a split dataset is done when its last shard's metric is."""
    out: dict[str, float] = {}
    for nm, t in results.items():
        base = nm.split("#", 1)[0]
        out[base] = max(out.get(base, 0.0), t)
    return out


def simulate_coupled(batch: EvalBatch, nodes: int, hardware: EvalHardware | None = None,
                     overheads: EvalOverheads | None = None, rules: PackingRules | None = None) -> BatchSchedule:
    """The coupled policy (see the module docstring): FIFO to the lowest free GPU, fluid sharing of each
    node's storage link by concurrent loads, the GPU held through all phases. ``overheads`` (default
    :meth:`EvalOverheads.ideal`): the trials' start-up after the load (carved out of the set-up) and
    the baseline's packing (:func:`coupled_tasks`; a merged trial loads and starts once, then prepares
    and generates its datasets in turn, then scores them).

    With ``coupled_packing="random"`` the batch is run in ``coupled_orders`` random submission orders
    (:func:`coupled_submission_orders`) and the schedule returned is the order with the median makespan;
    its ``candidates`` hold the spread over the orders (``orders min/p10/median/mean/p90/max``, seconds).
    With ``nodes·gpus_per_node >= `` the number of trials every trial starts at once and the order only
    decides which trials share the last, partly filled node's link, so the listing order alone is run.
    One run costs about 3 µs per trial and node, so at most :data:`COUPLED_ORDER_BUDGET` trial·node
    steps are spent on the orders (about 2 s): a batch too large for ``coupled_orders`` runs the largest
    odd number of orders that fits (at least one), named in ``packing``."""
    hw = (hardware or EvalHardware()).validate()
    ov = (overheads or EvalOverheads.ideal()).validate()
    nodes = check_nodes(nodes)
    if ov.coupled_packing == "random" and nodes * hw.gpus_per_node < len(batch):
        k = ov.coupled_orders
        budget = COUPLED_ORDER_BUDGET // (len(batch) * nodes)
        if k > budget:          # a very large batch: fewer orders (odd), named in ``packing``
            k = max(1, budget - (1 - budget % 2))
            ov = replace(ov, coupled_orders=k)
        runs = [_coupled_run(t, nodes, hw, ov) for t in coupled_submission_orders(batch, ov, rules)]
        spans = sorted(r.makespan_s for r in runs)
        import numpy as np

        best = sorted(runs, key=lambda r: r.makespan_s)[len(runs) // 2]
        best.packing = f"random order (median of {len(runs):,})"
        best.candidates = {"orders min": spans[0], "orders p10": float(np.percentile(spans, 10)),
                           "orders median": best.makespan_s, "orders mean": float(np.mean(spans)),
                           "orders p90": float(np.percentile(spans, 90)), "orders max": spans[-1]}
        return best
    out = _coupled_run(coupled_tasks(batch, ov, rules), nodes, hw, ov)
    out.packing = "listing order" if ov.coupled_packing in ("random", "submission") else ov.coupled_packing
    return out


def _coupled_run(tasks: list, nodes: int, hw: EvalHardware, ov: EvalOverheads) -> BatchSchedule:
    """One coupled run of ``tasks`` (lists of dataset parts) in submission order."""
    gpn = hw.gpus_per_node
    G = nodes * gpn
    B, M = hw.storage_bytes_s, hw.model_bytes
    queue = list(range(len(tasks)))[::-1]          # pop() gives submission order
    free = list(range(G))                            # heap of free GPU ids
    heapq.heapify(free)
    loads: dict[int, list] = {}      # node with loads in flight -> [[remaining bytes, gpu, task, t0]]
    timers: list = []                                # heap of (end time, seq, gpu)
    seq = 0
    intervals, results = [], {}
    held = used = 0.0
    trial_start: dict[int, float] = {}
    assignment: dict[int, list] = {}
    t = 0.0

    def dispatch(now):
        while queue and free:
            g = heapq.heappop(free)
            k = queue.pop()
            trial_start[g] = now
            assignment.setdefault(g, []).extend(tasks[k])
            loads.setdefault(_gpu_node(g, gpn), []).append([M, g, k, now])

    def run_task(g, k, t_loaded):
        """Phases after the load (no shared resource): start-up, then preprocess + generate of each
        dataset, then their metrics; returns the end."""
        nonlocal used
        n = _gpu_node(g, gpn)
        name = "+".join(d.name for d in tasks[k])
        t1 = t_loaded
        if ov.trial_startup_s > 0:
            intervals.append(Interval(g, n, name, "startup", t1, t1 + ov.trial_startup_s))
            t1 += ov.trial_startup_s
        for d in tasks[k]:
            pre = ov.data_prep_s(d.preprocess_s)
            intervals.append(Interval(g, n, d.name, "preprocess", t1, t1 + pre))
            intervals.append(Interval(g, n, d.name, "generate", t1 + pre, t1 + pre + d.generate_s))
            t1 += pre + d.generate_s
            used += d.generate_s
        for d in tasks[k]:
            intervals.append(Interval(g, n, d.name, "metric", t1, t1 + d.metric_s))
            t1 += d.metric_s
            results[d.name] = t1
        return t1

    dispatch(0.0)
    while timers or loads:
        t_next = timers[0][0] if timers else math.inf
        for n, act in loads.items():
            t_next = min(t_next, t + min(a[0] for a in act) * len(act) / B)
        dt = t_next - t
        for n, act in loads.items():
            rate = B / len(act)
            for a in act:
                a[0] -= rate * dt
        t = t_next
        for n, act in list(loads.items()):
            done = [a for a in act if a[0] <= M * _EPS]
            if done:
                rest = [a for a in act if a[0] > M * _EPS]
                if rest:
                    loads[n] = rest
                else:
                    del loads[n]
                for _, g, k, t0 in done:
                    intervals.append(Interval(g, n, "+".join(d.name for d in tasks[k]), "load",
                                              t0, t))
                    heapq.heappush(timers, (run_task(g, k, t), seq, g))
                    seq += 1
        while timers and timers[0][0] <= t + _EPS * max(1.0, t):
            end, _, g = heapq.heappop(timers)
            held += end - trial_start[g]
            heapq.heappush(free, g)
        dispatch(t)
    return BatchSchedule("coupled", nodes, G, intervals, _by_dataset(results), held, used, assignment=assignment)


@dataclass
class _Trial:
    """A decoupled trial: consecutive segments (dataset, preprocess, generate, metric) on one GPU."""

    name: str
    segments: list

    @property
    def preprocess_s(self) -> float:
        return sum(s[1] for s in self.segments)

    def data_prep_s(self, ov: EvalOverheads) -> float:
        """CPU data preparation ahead of the GPU: each segment's set-up less the GPU-side start-up."""
        return sum(ov.data_prep_s(s[1]) for s in self.segments)

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


def _run_decoupled(per_gpu: dict[int, list[_Trial]], nodes: int, hw: EvalHardware, ov: EvalOverheads
                   ) -> tuple[list, dict, float, float]:
    """Timelines of given per-GPU trial sequences under the decoupled policy."""
    gpn = hw.gpus_per_node
    precursor = hw.load_alone_s / ov.precursor_efficiency
    intervals, metric_jobs = [], []   # metric job: (ready, node, name, duration)
    held = used = 0.0
    for n in range(nodes):
        intervals.append(Interval(-1, n, "precursor", "load", 0.0, precursor))
    for g, seq in per_gpu.items():
        n = _gpu_node(g, gpn)
        gpu_free = ready = 0.0
        for tr in seq:
            ready += tr.data_prep_s(ov)
            start = max(gpu_free, ready)
            if ov.trial_startup_s > 0:
                intervals.append(Interval(g, n, tr.name, "startup", start, start + ov.trial_startup_s))
            weights = max(start + ov.trial_startup_s + hw.pcie_s, precursor)
            intervals.append(Interval(g, n, tr.name, "copy", max(start + ov.trial_startup_s, weights - hw.pcie_s),
                                      weights))
            t = weights
            for name, _, gen, met in tr.segments:
                intervals.append(Interval(g, n, name, "generate", t, t + gen))
                t += gen
                metric_jobs.append((t, n, name, met))
            held += t - start
            used += tr.generate_s
            gpu_free = t
    results = {}
    pools = {n: [0.0] * ov.metric_slots(hw) for n in range(nodes)}
    for ready, n, name, met in sorted(metric_jobs):
        slot_free = heapq.heappop(pools[n])
        s = max(ready + ov.metric_queue_s, slot_free)   # the cluster's CPU queue, then a node slot
        heapq.heappush(pools[n], s + met)
        intervals.append(Interval(-1, n, name, "metric", s, s + met))
        results[name] = s + met
    return intervals, results, held, used


def _greedy(trials: list[_Trial], order: list[int], hw: EvalHardware, ov: EvalOverheads
            ) -> dict[int, list[_Trial]]:
    """List scheduling: each trial (in order) to the GPU whose previous trial ends first."""
    per_gpu: dict[int, list[_Trial]] = {g: [] for g in order}
    state = [(0.0, k, g, 0.0) for k, g in enumerate(order)]   # (gpu free, tie, gpu, preprocess ready)
    heapq.heapify(state)
    precursor = hw.load_alone_s / ov.precursor_efficiency
    for tr in trials:
        free_t, k, g, ready = heapq.heappop(state)
        ready += tr.data_prep_s(ov)
        start = max(free_t, ready)
        end = max(start + ov.trial_startup_s + hw.pcie_s, precursor) + tr.generate_s
        per_gpu[g].append(tr)
        heapq.heappush(state, (end, k, g, ready))
    return per_gpu


def simulate_decoupled(batch: EvalBatch, nodes: int, hardware: EvalHardware | None = None,
                       rules: PackingRules | None = None, overheads: EvalOverheads | None = None,
                       coupled: BatchSchedule | None = None) -> BatchSchedule:
    """The decoupled policy (module docstring): precursor per node, GPU held for copy + generation only,
    metrics queued ``metric_queue_s`` for the cluster's CPU pool then run on the node's slots; the
    packing with the shortest predicted makespan among the paper's round-robin rule, greedy list
    scheduling and the coupled run's assignment (``coupled``: that run, if already simulated with the
    same inputs)."""
    hw = (hardware or EvalHardware()).validate()
    ov = (overheads or EvalOverheads.ideal()).validate()
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
    cands["greedy"] = _greedy(trials, order, hw, ov)
    if coupled is None:
        coupled = simulate_coupled(batch, nodes, hw, ov, rules)
    cands["coupled-assignment"] = {
        g: [_Trial(d.name, [(d.name, d.preprocess_s, d.generate_s, d.metric_s)]) for d in parts]
        for g, parts in coupled.assignment.items()}
    best, runs = None, {}
    for name, per_gpu in cands.items():
        iv, res, held, used = _run_decoupled(per_gpu, nodes, hw, ov)
        runs[name] = (iv, res, held, used)
        if best is None or max(res.values()) < max(runs[best][1].values()) - _EPS:
            best = name
    iv, res, held, used = runs[best]
    return BatchSchedule("decoupled", nodes, G, iv, _by_dataset(res), held, used, packing=best,
                         candidates={k: max(v[1].values()) for k, v in runs.items()})
