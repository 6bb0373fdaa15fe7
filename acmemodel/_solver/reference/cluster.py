"""Pure Python/NumPy twin of the C cluster simulator (``acmemodel._solver._cluster.simulate``).

This module is the *specification* of the discrete-event cluster simulator: it is written for clarity, and the C
kernel (``acmemodel/_solver/cluster/cluster_sim.c``) implements exactly the same rules with faster data structures
(event heaps, per-partition free-level histograms, linked-list queues). On the same inputs both return identical
start/end times (bit for bit; the per-partition busy GPU-second totals agree to floating-point summation order).

Model
-----
* The cluster is a set of nodes of ``G`` GPUs (``gpus_per_node``). Partition ``p`` owns ``part_nodes[p]`` whole nodes
  (partitions are node sets, as in Slurm); nodes are numbered partition by partition.
* A job asks for ``g >= 1`` GPUs and runs for ``run`` seconds once started (gang scheduling: all GPUs at once).
  A job with ``g <= G`` is packed on a single node (needs a node with at least ``g`` free GPUs); a job with ``g > G``
  takes ``k = ceil(g / G)`` whole, fully free nodes and holds all ``k*G`` GPUs (its *allocation*).
* A job whose home partition can never hold it (``k`` larger than the partition, or a partition of 0 nodes, or
  ``part < 0``) is *unschedulable*: status 1, never queued, never started.
* Scheduling inside each partition is by priority (``prio``, higher first; None = all equal) and FIFO within a
  priority (by submit time, ties by input position) -- the *queue order* -- with EASY backfill: when the
  queue head does not fit, it gets a reservation -- the earliest time ``T`` (the *shadow time*) at which it would fit
  given the end times of the running jobs (run-time estimates are the actual run times, so the reservation is
  exact), and the node set ``R`` it would use then (single-GPU-node heads: the best-fit node at ``T``; multi-node
  heads: the lowest-numbered fully free nodes at ``T``). A later job may start now if it fits now and either ends by
  ``T`` or does not touch the nodes of ``R`` (the reservation holds whole nodes, slightly conservative for heads
  smaller than a node). The head therefore starts exactly at ``T``. At most ``backfill_depth`` queued jobs behind the
  head are examined per pass (like Slurm's ``bf_max_job_test``; ``-1`` = unlimited).
* Node choice when a job starts: ``g <= G``: the node with the fewest free GPUs that still fit it (best fit), ties to
  the lowest node number; ``g > G``: the ``k`` lowest-numbered fully free nodes.
* Best effort (``best_effort=True`` with a ``reserved`` partition): jobs of other partitions with ``be_ok`` may run
  on idle GPUs of the reserved partition. They are **preemptible**: they are started only in a way that respects the
  reserved queue head's reservation (as backfill), and when a reserved-partition job needs their GPUs it evicts them.
  An evicted job loses its progress (``lost`` seconds of run), goes back into its home queue at its original
  queue-order position and later reruns from scratch; its wait is measured to the start of the run that completes.
  Reserved-partition jobs see GPUs held by best-effort jobs as free. When they must evict: ``g <= G`` -- if no node
  fits without eviction, the eligible node with the most free GPUs (ties lowest number) is cleared of best-effort jobs,
  latest started first, until the job fits; ``g > G`` -- fully free nodes first, then nodes that are free apart from
  best-effort jobs in order (most free GPUs, lowest number), and all best-effort jobs on them are evicted.
  Best-effort candidates are examined in global queue order (priority, then FIFO) over the other partitions'
  queues: the first ``backfill_depth`` queued jobs per pass (jobs not allowed best effort count towards the
  depth, as Slurm's ``bf_max_job_test`` counts every job it tests), and use only GPUs that are really free.
  With ``backfill=False`` best-effort jobs start only while the reserved queue is empty.
* Event processing: at each event time ``t`` first every run ending at ``t`` completes, then every job submitted at
  ``t`` arrives; then the reserved partition is scheduled (if something changed in it), then the other changed
  partitions in index order, then the best-effort pass (if the reserved partition changed or jobs arrived in another
  partition), then once more every partition whose queue head the best-effort pass took away.

Outputs (per job, in the sorted input order): ``start`` (start of the completed run, NaN if never), ``first_start``,
``end``, ``ran_in`` (partition of the completed run, -1 if none), ``preempt`` (number of evictions), ``lost``
(seconds of run thrown away by evictions), ``status`` (0 ran, 1 unschedulable), and ``busy`` of shape ``(P, 2)``:
allocated GPU-seconds inside the window ``[w0, w1]`` per partition, column 0 by the partition's own jobs, column 1 by
best-effort jobs (evicted runs included).
"""
from __future__ import annotations

import heapq
from bisect import insort

import numpy as np

_WAIT, _RUN, _RUN_BE, _DONE, _UNSCHED = 0, 1, 2, 3, 4


def simulate_reference(submit, run, gpus, part, be_ok, part_nodes, gpus_per_node, reserved=-1, backfill=True,
                       best_effort=False, backfill_depth=1000, w0=-np.inf, w1=np.inf, prio=None):
    """Run the simulation; arguments as :func:`acmemodel._solver._cluster.simulate` (jobs sorted by submit).

    Returns a dict of NumPy arrays ``start, first_start, end, ran_in, preempt, lost, status, busy``.
    """
    submit = np.asarray(submit, dtype=np.float64)
    run = np.asarray(run, dtype=np.float64)
    gpus = np.asarray(gpus, dtype=np.int64)
    part = np.asarray(part, dtype=np.int64)
    be_ok = np.asarray(be_ok, dtype=bool)
    part_nodes = np.asarray(part_nodes, dtype=np.int64)
    prio = [0] * len(submit) if prio is None else np.asarray(prio, dtype=np.int64).tolist()
    sim = _Sim(submit.tolist(), run.tolist(), gpus.tolist(), part.tolist(), be_ok.tolist(), part_nodes.tolist(),
               int(gpus_per_node), int(reserved), bool(backfill), bool(best_effort), int(backfill_depth),
               float(w0), float(w1), prio)
    sim.run_all()
    n = len(submit)
    out = {
        "start": np.array(sim.start, dtype=np.float64),
        "first_start": np.array(sim.first_start, dtype=np.float64),
        "end": np.array(sim.end, dtype=np.float64),
        "ran_in": np.array(sim.ran_in, dtype=np.int32),
        "preempt": np.array(sim.preempt, dtype=np.int32),
        "lost": np.array(sim.lost, dtype=np.float64),
        "status": np.array([1 if s == _UNSCHED else 0 for s in sim.state], dtype=np.int8),
        "busy": np.array(sim.busy, dtype=np.float64).reshape(len(part_nodes), 2),
    }
    for k in ("start", "end"):
        out[k][out["status"] == 1] = np.nan
    assert len(out["start"]) == n
    return out


class _Sim:
    def __init__(self, submit, run, gpus, part, be_ok, part_nodes, G, reserved, backfill, best_effort, depth,
                 w0, w1, prio):
        self.submit, self.run, self.gpus, self.part, self.be_ok = submit, run, gpus, part, be_ok
        self.prio = prio
        self.G, self.reserved, self.backfill = G, reserved, backfill
        self.best_effort = best_effort and reserved >= 0
        self.depth = depth if depth >= 0 else len(submit) + 1
        self.w0, self.w1 = w0, w1
        self.P = len(part_nodes)
        self.nodes = []  # node ids of each partition
        off = 0
        for nn in part_nodes:
            self.nodes.append(list(range(off, off + nn)))
            off += nn
        N = off
        self.free = [G] * N
        self.be = [0] * N
        n = len(submit)
        self.state = [_WAIT] * n
        nan = float("nan")
        self.start = [nan] * n
        self.first_start = [nan] * n
        self.end = [nan] * n
        self.ran_in = [-1] * n
        self.preempt = [0] * n
        self.lost = [0.0] * n
        self.epoch = [0] * n
        self.alloc = [None] * n  # list of (node, gpus) of the current run
        self.busy = [0.0] * (2 * self.P)
        self.queue = [[] for _ in range(self.P)]  # waiting job ids in queue order (priority desc, then index)
        self.running = [set() for _ in range(self.P)]  # own (non best-effort) running jobs per partition
        self.be_running = set()
        self.heap = []  # (end, job, epoch)
        self.resv = [None] * self.P  # cached reservation: (shadow time T, set of nodes R) or None
        self.dirty = set()

    # ---- helpers -------------------------------------------------------------------------------------------
    def _k(self, g):
        return -(-g // self.G)

    def _schedulable(self, j):
        p = self.part[j]
        if p < 0 or p >= self.P or not self.nodes[p]:
            return False
        return self.gpus[j] <= self.G or self._k(self.gpus[j]) <= len(self.nodes[p])

    def _avail(self, n, use_be):
        return self.free[n] + (self.be[n] if use_be else 0)

    def _eligible(self, p, exclude):
        if exclude and self.resv[p] is not None:
            R = self.resv[p][1]
            return [n for n in self.nodes[p] if n not in R]
        return self.nodes[p]

    def _fits(self, p, g, use_be, exclude):
        nodes = self._eligible(p, exclude)
        if g <= self.G:
            return any(self._avail(n, use_be) >= g for n in nodes)
        return sum(1 for n in nodes if self._avail(n, use_be) == self.G) >= self._k(g)

    def _q_remove(self, p, j):
        q = self.queue[p]
        if q[0] == j:
            self.resv[p] = None
        q.remove(j)

    def _order(self, j):
        """Queue-order key: higher priority first, then FIFO (input position)."""
        return (-self.prio[j], j)

    def _q_insert(self, p, j):
        q = self.queue[p]
        insort(q, j, key=self._order)
        if q[0] == j:
            self.resv[p] = None

    def _account(self, j, t, be):
        s = self.start[j]
        lo, hi = max(s, self.w0), min(t, self.w1)
        if hi > lo:
            a = sum(c for _, c in self.alloc[j])
            self.busy[2 * self.ran_in[j] + (1 if be else 0)] += a * (hi - lo)

    def _release(self, j, be):
        for n, c in self.alloc[j]:
            self.free[n] += c
            if be:
                self.be[n] -= c

    # ---- job transitions --------------------------------------------------------------------------------------
    def _start(self, j, q, t, as_be, exclude):
        """Start job j in partition q now (caller checked it fits)."""
        g, G = self.gpus[j], self.G
        use_be = (not as_be) and q == self.reserved and self.best_effort
        nodes = self._eligible(q, exclude)
        if g <= G:
            fit = [n for n in nodes if self.free[n] >= g]
            if fit:
                node = min(fit, key=lambda n: (self.free[n], n))
            else:
                assert use_be
                node = min((n for n in nodes if self.free[n] + self.be[n] >= g), key=lambda n: (-self.free[n], n))
                while self.free[node] < g:
                    victims = [b for b in self.be_running if any(m == node for m, _ in self.alloc[b])]
                    self._evict(max(victims, key=lambda b: (self.start[b], b)), t)
            alloc = [(node, g)]
        else:
            k = self._k(g)
            chosen = [n for n in nodes if self.free[n] == G][:k]
            if len(chosen) < k:
                assert use_be
                extra = sorted((n for n in nodes if self.free[n] < G and self.free[n] + self.be[n] == G),
                               key=lambda n: (-self.free[n], n))
                chosen += extra[:k - len(chosen)]
                for node in chosen:
                    victims = [b for b in self.be_running if any(m == node for m, _ in self.alloc[b])]
                    for b in sorted(victims, key=lambda b: (self.start[b], b), reverse=True):
                        self._evict(b, t)
            alloc = [(n, G) for n in chosen]
        for n, c in alloc:
            assert self.free[n] >= c
            self.free[n] -= c
            if as_be:
                self.be[n] += c
        self.alloc[j] = alloc
        self.start[j] = t
        if self.first_start[j] != self.first_start[j]:
            self.first_start[j] = t
        self.end[j] = t + self.run[j]
        self.ran_in[j] = q
        if as_be:
            self.state[j] = _RUN_BE
            self.be_running.add(j)
        else:
            self.state[j] = _RUN
            self.running[q].add(j)
        heapq.heappush(self.heap, (self.end[j], j, self.epoch[j]))

    def _evict(self, b, t):
        self._account(b, t, True)
        self._release(b, True)
        self.be_running.discard(b)
        self.lost[b] += t - self.start[b]
        self.preempt[b] += 1
        self.epoch[b] += 1
        self.state[b] = _WAIT
        self.ran_in[b] = -1
        self.start[b] = self.end[b] = float("nan")
        home = self.part[b]
        self._q_insert(home, b)
        self.dirty.add(home)

    def _complete(self, j, t):
        be = self.state[j] == _RUN_BE
        self._account(j, t, be)
        self._release(j, be)
        if be:
            self.be_running.discard(j)
        else:
            self.running[self.ran_in[j]].discard(j)
        self.state[j] = _DONE
        self.dirty.add(self.ran_in[j])

    # ---- scheduling -------------------------------------------------------------------------------------------
    def _reservation(self, p):
        """(T, R) for the head of partition p, computed from the own running jobs' end times (cached)."""
        if self.resv[p] is not None:
            return self.resv[p]
        h = self.queue[p][0]
        g, G = self.gpus[h], self.G
        use_be = p == self.reserved and self.best_effort
        proj = {n: self._avail(n, use_be) for n in self.nodes[p]}
        ends = sorted((self.end[j], j) for j in self.running[p])

        def ok():
            if g <= G:
                return any(v >= g for v in proj.values())
            return sum(1 for v in proj.values() if v == G) >= self._k(g)

        T = None
        for e, j in ends:
            if T is not None and e != T:
                break
            for n, c in self.alloc[j]:
                proj[n] += c
            if T is None and ok():
                T = e
        assert T is not None, "head can never fit (should be unschedulable)"
        if g <= G:
            R = {min((n for n in self.nodes[p] if proj[n] >= g), key=lambda n: (proj[n], n))}
        else:
            R = set([n for n in self.nodes[p] if proj[n] == G][:self._k(g)])
        self.resv[p] = (T, R)
        return self.resv[p]

    def _own_pass(self, p, t):
        use_be = p == self.reserved and self.best_effort
        q = self.queue[p]
        while q:
            h = q[0]
            if not self._fits(p, self.gpus[h], use_be, False):
                break
            self._q_remove(p, h)
            self._start(h, p, t, False, False)
        if not q or not self.backfill:
            return
        T, _ = self._reservation(p)
        examined = 0
        for j in list(q[1:]):
            if examined >= self.depth:
                break
            if sum(self._avail(n, use_be) for n in self.nodes[p]) == 0:
                break
            examined += 1
            short = t + self.run[j] <= T
            if self._fits(p, self.gpus[j], use_be, not short):
                self._q_remove(p, j)
                self._start(j, p, t, False, not short)

    def _be_pass(self, t):
        """Start best-effort jobs on idle GPUs of the reserved partition; returns partitions whose head left."""
        rp = self.reserved
        changed = set()
        if self.queue[rp]:
            if not self.backfill:
                return changed
            T, _ = self._reservation(rp)
            has_r = True
        else:
            T, has_r = None, False
        cands = sorted((j for p in range(self.P) if p != rp for j in self.queue[p]), key=self._order)
        for j in cands[:self.depth]:  # the first `depth` queued jobs in queue order, eligible or not
            if not self.be_ok[j]:
                continue
            if sum(self.free[n] for n in self.nodes[rp]) == 0:
                break
            short = (not has_r) or t + self.run[j] <= T
            if self._fits(rp, self.gpus[j], False, not short):
                home = self.part[j]
                if self.queue[home][0] == j:
                    changed.add(home)
                self._q_remove(home, j)
                self._start(j, rp, t, True, not short)
        return changed

    def _schedule(self, t, be_trigger):
        rp = self.reserved
        if rp >= 0 and rp in self.dirty:
            self.dirty.discard(rp)
            self._own_pass(rp, t)
        for p in range(self.P):
            if p != rp and p in self.dirty:
                self._own_pass(p, t)
        self.dirty.clear()
        if self.best_effort and be_trigger:
            changed = self._be_pass(t)
            for p in sorted(changed):
                self._own_pass(p, t)

    def run_all(self):
        n = len(self.submit)
        i = 0
        heap = self.heap
        while True:
            while heap and (self.epoch[heap[0][1]] != heap[0][2]
                            or self.state[heap[0][1]] not in (_RUN, _RUN_BE)):
                heapq.heappop(heap)
            t = min(self.submit[i] if i < n else np.inf, heap[0][0] if heap else np.inf)
            if t == np.inf:
                break
            while heap and heap[0][0] == t:
                e, j, ep = heapq.heappop(heap)
                if ep == self.epoch[j] and self.state[j] in (_RUN, _RUN_BE):
                    self._complete(j, t)
            be_trigger = False
            while i < n and self.submit[i] == t:
                if self._schedulable(i):
                    p = self.part[i]
                    self._q_insert(p, i)
                    self.dirty.add(p)
                    if p != self.reserved:
                        be_trigger = True
                else:
                    self.state[i] = _UNSCHED
                i += 1
            if self.reserved >= 0 and self.reserved in self.dirty:
                be_trigger = True
            self._schedule(t, be_trigger)
