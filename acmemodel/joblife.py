"""The generative model of one job's life, as competing risks (what :mod:`acmemodel.synth` draws).

A synthetic GPU job of cluster *c*, type *y* and *g* GPUs is built from the bundle's models:

1. **Arrival** ``s`` (submission, UTC seconds) and the job's user and batch: the compound
   non-homogeneous Poisson process of :class:`~acmemodel.models.arrival.ArrivalModel` (evaluation
   bursts included); **GPU count** ``g`` from :class:`~acmemodel.models.gpu_counts.GpuCountModel`
   (the arrival model's per-type GPU-count table).
2. **Latent end times**, one per way a run can end, drawn independently:

   * failure ``T_F`` from :class:`~acmemodel.models.failure.FailureModel` where it was fitted
     (``g ≥ failure.min_gpus_``; 64 GPUs in the default bundle) — both regimes, per cluster × type::

         S_F(t | g, c, y) = p(g, c, y) · S_E(t) + (1 − p(g, c, y)) · exp(−(t/t_ref)^k e^{b0} (g/g_ref)^α)

     and, for smaller jobs (outside the failure model's data), the runtime model's cause-specific
     failure law below;
   * completion ``T_C`` and cancellation ``T_X`` from their **cause-specific laws, fitted with the
     other causes censored**. They are read off the runtime model of the job's cell
     (cluster × type × GPU bucket): with ``π_j = P(state j)`` and ``G_j`` the run-time CDF of state
     *j* (:class:`~acmemodel.models.runtime.RuntimeModel`), the observed sub-distributions are
     ``F_j(t) = π_j G_j(t)``, the all-cause survival ``S(t) = 1 − Σ_j F_j(t)``, and the
     cause-specific cumulative hazard on a grid ``0 = t_0 < t_1 < … < t_K`` (piecewise-constant
     hazards, the Nelson–Aalen estimator's continuous form) is::

         H_j(t_k) = Σ_{i ≤ k} [ΔF_j(t_i) / Σ_l ΔF_l(t_i)] · log(S(t_{i−1}) / S(t_i)),

     linear in t inside an interval; ``T_j = H_j^{−1}(E_j)``, ``E_j ~ Exp(1)`` (``∞`` when
     ``E_j > H_j(t_K)``). Under independent latent times the cause-specific hazard of a cause is its
     net hazard, whatever the other causes do, so these laws are exactly what a fit "with the other
     causes censored" (Kaplan–Meier / Nelson–Aalen of one cause) recovers from the synthetic data.
     Failure times are drawn within the failure model's **support**: the hazard is zero past the
     longest failure it saw for the job's cluster × GPU bucket (``FailureModel.failure_support_s``;
     on the grid: from the grid point after it).
     Beyond it the Weibull tail is an extrapolation, and the few multi-day failures of 256–1,024-GPU
     jobs it would add held as much GPU time as all the trace's failures of those jobs (Seren,
     expected failed GPU time of the pseudo-trace's ≥ 64-GPU jobs: 818 k GPU-h without the support,
     596 k with it, 575 k in the pseudo-trace);
   * a run that outlives every cause within the grid (``S(t_K) > 0``: the fitted laws' tails need not
     sum to one) takes the cause of the hazards continued past the grid (the last grid interval with
     any hazard), not COMPLETED by default: with the failure model's support, about one Seren
     pretraining run of 256–1,024 GPUs in six months outlived every cause, and as a multi-day
     "completed" run it held 2 % of the cluster's GPU time;
   * zero-second runs: with probability ``π_j · G_j(0)`` the run ends at once with state *j* (the
     runtime model's atom); the failure model has no atom, so inside its domain only completion and
     cancellation keep theirs.

3. **Observed end**: ``T = min(T_F, T_C, T_X)`` and the state is the cause that came first
   (FAILED / COMPLETED / CANCELLED); ``end = start + T`` (the queue of :mod:`acmemodel.synth`
   decides ``start``). With independent latent times this pair is drawn without the latent times
   themselves: ``T`` by inverting the all-cause survival ``S(t) = exp(−H(t))``,
   ``H = H_C + H_X + H_F`` (``H_F = −log S_F`` of the failure model inside its domain), at
   ``E = −log(1 − U)``, and the cause with probability ``ΔH_j / ΔH`` of the grid interval ``T``
   falls in (the hazards are constant inside an interval, so this is the law of the argmin).
   **Stratified draws** (``stratified=True``, default): within a type × GPU bucket the ``k`` jobs'
   ``U`` take one value in each stratum ``[i/k, (i+1)/k)`` in random order, and the cause
   uniforms run along the sorted end times as ``frac(v0 + φ·rank)`` (φ the golden ratio, ``v0 ~
   U(0, 1)``): every job's (state, run time) keeps its law, while sums over many jobs (GPU time by
   type and state, which a few long large-job runs dominate) have the noise of a stratified sample.
   Run times are capped at the longest fitted run of the job's runtime cell (``RuntimeModel.max_run``,
   cluster × type × GPU bucket, as ``RuntimeModel.sample`` does), after the runtime model's size law
   rescales each run to its own GPU count within the bucket. The runtime model's state probabilities and per-state run times are
   therefore not drawn independently: ``P(FAILED, T ≤ t) = ∫_0^t h_F(u) S_F(u) S_C(u) S_X(u) du``
   etc. Outside the failure model's domain this reproduces the runtime model's ``(π_j, G_j)``
   exactly (up to the grid). Inside it, failures follow the failure model, which is not the
   runtime cell's own failure law, so the generator and the trace it was fitted on differ there:
   the shipped bundle is *not* a fixed point of fit → synth (the calibration,
   :func:`acmemodel.calibrate.calibrate`, fits its pseudo-trace as is; fitting a synthetic trace
   back gives the same models — the round-trip test — but the synthetic GPU time by state departs
   from the pseudo-trace's where large jobs fail; the calibration's fixed-point iteration moves the
   pseudo-trace's state targets until the synthetic GPU time by state is the published one, see
   :func:`acmemodel.calibrate.calibrate`).
   CPU jobs (0 GPUs) of a runtime model fitted on GPU jobs only (``gpu_only``) take their type's
   single-GPU law (there is no CPU cell to query; the smallest GPU job is the nearest one).
4. **Restarts** (:class:`~acmemodel.models.restart.RestartModel`): a FAILED job of cluster *c*,
   type *y* and *g* GPUs is resubmitted with probability ``q(c, y, bucket(g))``
   (``RestartModel.resubmit_probability``; the cluster × type value where a bucket had too few
   failures)
   after a gap ``Δ`` (``RestartModel`` gap model; the published prior by default), same user, type
   and GPUs; the new attempt draws its own latent times again (renewal: a fresh ``T_F``, the
   assumption of the planner's checkpoint kernel), so chains of several attempts appear, up to
   ``max_attempts``.

5. **Pretraining runs within the reservation** (:func:`place_reserved`): pretraining teams plan
   their runs within the GPUs reserved for them, so pretraining chains (a fresh run and its restart
   attempts, which reuse its GPUs; with them every chain of a pretraining-scale job of another type,
   :func:`in_reservation`) are not independent arrivals: the generator places each chain at
   a submission time drawn from the arrival model's own Pretrain submissions (its nominal time
   first, then redraws ``s' = s_j + U(−h, h)`` of a random other chain's nominal time ``s_j``,
   ``h`` = :data:`PLACE_JITTER_S`) while the GPUs the chain holds over its whole span
   ``[s, s + Σ(run + gap))`` would exceed the reservation of ``C`` GPUs where already-placed
   chains hold theirs; the largest chains (GPUs × span) are placed first. Count, GPU counts, lives
   and restart chains are the models'; only the overlap of pretraining runs is constrained (a
   chain that fits nowhere after :data:`PLACE_TRIES` draws keeps the draw of least excess and is
   counted). Independent 1,024-GPU runs of several days otherwise collide: a 184-day Seren synth
   of the default bundle asks for more than its 2,048 reserved GPUs 4% of the time and its
   Pretrain jobs wait 4,748 s on average, while the published cluster mean wait (446 s) and
   evaluation having the largest mean wait (65% of the jobs) leave pretraining at most ≈ 690 s.

Times are seconds; the grid :data:`LIFE_GRID_S` runs from 1 s to 2^25 s (≈ 388 days).
"""
from __future__ import annotations

import math

import numpy as np

from acmemodel.models.distributions import uniforms

__all__ = ["LIFE_GRID_S", "CAUSES", "cause_hazards", "sample_latent", "sample_lives", "failure_domain",
           "place_reserved", "place_reservation_jobs", "chain_spans", "shift_chains", "in_reservation", "RESERVED_MIN_GPUS",
           "PLACE_JITTER_S", "PLACE_TRIES"]

#: time grid (s) of the cause-specific cumulative hazards: 0, then 1 s … 2^25 s log-spaced
LIFE_GRID_S: np.ndarray = np.r_[0.0, np.geomspace(1.0, 2.0 ** 25, 600)]
#: half-width (s) of the jitter of a redrawn pretraining submission time (:func:`place_reserved`)
PLACE_JITTER_S = 1800.0
#: redraws of a pretraining chain's submission time before it keeps its least-excess draw
PLACE_TRIES = 400
#: jobs of at least this many GPUs are pretraining-scale whatever their type (a 1,024-GPU debug or fine-tuning
#: run is the pretraining team's): they run in the reservation and are placed within it with the Pretrain chains
RESERVED_MIN_GPUS = 256
#: time bin (s) of the reservation's occupancy timeline (spans are rounded outwards)
PLACE_BIN_S = 60.0
#: states in the order of the latent causes
CAUSES: tuple[str, ...] = ("COMPLETED", "CANCELLED", "FAILED")


def cause_hazards(runtime, **key) -> dict:
    """Cause-specific laws of one runtime cell (module docstring, step 2).

    Returns ``{"atom": {state: P(run = 0 s, state)}, "H": {state: H_j on LIFE_GRID_S}}``; the
    hazards are those of the continuous part (after the zero-second atom), ``H_j(0) = 0``.
    """
    probs = runtime.state_probabilities(**key)
    t = LIFE_GRID_S
    F, atom = {}, {}
    for s in CAUSES:
        p = float(probs.get(s, 0.0))
        if p <= 0:
            F[s] = np.zeros(len(t))
            atom[s] = 0.0
            continue
        G = np.asarray(runtime.cdf(t, state=s, **key), dtype=float)
        G = np.maximum.accumulate(np.clip(G, 0.0, 1.0))
        F[s] = p * G
        atom[s] = float(F[s][0])
    tot = sum(F.values())
    S = np.clip(1.0 - tot, 0.0, 1.0)
    dF = {s: np.diff(F[s]) for s in CAUSES}
    dtot = sum(dF.values())
    with np.errstate(divide="ignore", invalid="ignore"):
        dH = np.log(S[:-1] / S[1:])  # +inf where S reaches 0
        share = {s: np.where(dtot > 0, dF[s] / dtot, 0.0) for s in CAUSES}
    dH = np.where(np.isfinite(dH), np.maximum(dH, 0.0), 1e6)  # all-cause end inside the interval
    H = {s: np.r_[0.0, np.cumsum(share[s] * dH)] for s in CAUSES}
    return {"atom": atom, "H": H}


def sample_latent(H: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` latent times (s) with cumulative hazard ``H`` on :data:`LIFE_GRID_S` (linear in t
    between grid points); ``inf`` when the Exp(1) draw exceeds ``H(t_K)``."""
    e = rng.exponential(size=int(n))
    t = LIFE_GRID_S
    i = np.searchsorted(H, e, side="left")
    out = np.full(int(n), np.inf)
    ok = i < len(H)
    i = np.clip(i[ok], 1, len(H) - 1)
    h0, h1 = H[i - 1], H[i]
    w = np.where(h1 > h0, (e[ok] - h0) / np.where(h1 > h0, h1 - h0, 1.0), 1.0)
    out[ok] = t[i - 1] + np.clip(w, 0.0, 1.0) * (t[i] - t[i - 1])
    return out


def failure_domain(failure) -> float:
    """Smallest GPU count at which ``failure`` describes failures (``min_gpus_``: the smallest job
    it was fitted on); ``inf`` without a failure model."""
    if failure is None:
        return math.inf
    return float(getattr(failure, "min_gpus_", 1.0))


def _failure_key(failure, cluster: str, type_: str) -> dict:
    """The failure model's key for (cluster, type): a level it never saw is marginalised."""
    key = {}
    d = failure.design_
    if cluster in d.clusters:
        key["cluster"] = cluster
    if type_ in d.type_map:
        key["type"] = type_
    return key


def _invert(H: np.ndarray, dHc: np.ndarray, e: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Observed end of the continuous part (module docstring, step 3): time (s) where the all-cause
    cumulative hazard ``H`` (on :data:`LIFE_GRID_S`, linear in between) reaches ``e``, and the index of
    the cause in :data:`CAUSES` chosen by ``v`` with the probabilities ``dHc[:, i] / ΔH_i`` of the grid
    interval ``i`` it falls in (``dHc``: (3, K) per-cause increments); ``inf`` / -1 past the grid."""
    t = LIFE_GRID_S
    i = np.searchsorted(H, e, side="left")
    out = np.full(len(e), np.inf)
    cause = np.full(len(e), -1)
    ok = i < len(H)
    i = np.clip(i[ok], 1, len(H) - 1)
    h0, h1 = H[i - 1], H[i]
    dh = h1 - h0
    w = np.where(dh > 0, (e[ok] - h0) / np.where(dh > 0, dh, 1.0), 1.0)
    out[ok] = t[i - 1] + np.clip(w, 0.0, 1.0) * (t[i] - t[i - 1])
    share = dHc[:, i - 1] / np.where(dh > 0, dh, 1.0)
    cum = np.cumsum(share, axis=0)
    c = (v[ok][None, :] >= cum[:-1]).sum(axis=0)  # 0 (COMPLETED) .. 2 (FAILED)
    cause[ok] = np.where(dh > 0, c, 0)
    return out, cause


def runtime_edges(runtime) -> tuple:
    """The GPU-bucket edges of ``runtime``'s cells (its ``gpu_edges``; the default edges for a model without
    them): jobs are drawn once per type × bucket of these, so a query with the group's first GPU count
    resolves the cell of every job of the group."""
    from acmemodel.features.keys import DEFAULT_GPU_EDGES

    return tuple(getattr(runtime, "gpu_edges", None) or DEFAULT_GPU_EDGES)


def _knows_type(runtime, key: dict) -> bool:
    """Whether ``runtime`` has fitted cells of ``key``'s type (an unknown type value raises there)."""
    try:
        if hasattr(runtime, "state_probabilities"):
            runtime.state_probabilities(**key)
        return True
    except ValueError:
        return False


def sample_lives(runtime, failure, cluster: str, types, gpus, rng: np.random.Generator, *,
                 stratified: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """(state, run_s) per job by competing risks (module docstring), vectorised per
    type × GPU bucket; ``failure=None`` uses the runtime model's failure law for every job. A
    runtime object without ``state_probabilities``/``cdf`` (only ``sample_jobs(n, rng, **key)``,
    e.g. a test double) is sampled directly.

    ``stratified`` (default True): within a type × GPU bucket the all-cause draws are stratified and
    the causes assigned along the sorted end times by a golden-ratio sequence (module docstring,
    step 3): every job's (state, run time) still has the model's law; sums over many jobs (GPU time
    by state) get the sampling noise of a stratified sample instead of an iid one. CPU jobs (0 GPUs)
    of a runtime model fitted on GPU jobs only take their type's single-GPU law. A type the runtime
    model never saw (no GPU job of it in the fit, e.g. a log's CPU-only role) is marginalised: the
    cluster's law over every type, as the failure model does (:func:`_failure_key`).
    """
    from acmemodel.features.keys import type_bucket_groups

    types = np.asarray(types, dtype=object)
    gpus = np.asarray(gpus, dtype=np.int64)
    n = len(types)
    state = np.empty(n, dtype=object)
    run = np.empty(n, dtype=float)
    caps = np.full(n, np.inf)
    g_min = failure_domain(failure)
    direct = not (hasattr(runtime, "state_probabilities") and hasattr(runtime, "cdf"))
    gpu_only = bool(getattr(runtime, "gpu_only", False))
    causes = np.asarray(CAUSES, dtype=object)
    for ty, _b, idx in type_bucket_groups(types, gpus, runtime_edges(runtime)):
        g0 = int(gpus[idx[0]])
        key = {"cluster": cluster, "type": ty, "gpus": g0}
        if g0 == 0 and gpu_only:  # no CPU cell in a GPU-only fit: the type's single-GPU law
            key["gpus"] = 1
        if not _knows_type(runtime, key):  # a type without a GPU job in the fit (a log's CPU-only type,
            del key["type"]                # whose jobs drew GPUs from a coarser cell): marginalised
        if direct:  # a runtime with only the sample_jobs interface: its (state, run time) pairs
            out = runtime.sample_jobs(len(idx), rng, **key)
            state[idx] = out["state"].to_numpy(dtype=object)
            run[idx] = out["run_s"].to_numpy(dtype=float)
            continue
        law = cause_hazards(runtime, **key)
        k = len(idx)
        g = gpus[idx]
        in_fm = g >= g_min
        # zero-second atom (failure's only outside the failure model's domain)
        atom = law["atom"]
        a_c, a_x, a_f = atom["COMPLETED"], atom["CANCELLED"], atom["FAILED"]
        a_f_row = np.where(in_fm, 0.0, a_f)
        a_tot = a_c + a_x + a_f_row
        u = uniforms(k, rng, stratified)
        # the continuous part conditions on surviving the atom; inside the failure model's domain
        # the failure atom's mass is left to the failure model's own law
        zero = u < a_tot
        z_state = np.where(u < a_c, "COMPLETED", np.where(u < a_c + a_x, "CANCELLED", "FAILED"))
        uc = np.clip((u - a_tot) / np.maximum(1.0 - a_tot, 1e-300), 0.0, 1.0 - 1e-16)
        e = -np.log1p(-uc)
        # the cause along the sorted end times: v_i = frac(v0 + φ·rank_i) (each v_i ~ U(0, 1))
        v = rng.random(k)
        dH = {c: np.diff(law["H"][c]) for c in CAUSES}
        t_end = np.empty(k)
        first = np.empty(k, dtype=np.int64)
        laws = [(np.flatnonzero(~in_fm), dH["FAILED"])]
        if in_fm.any():
            fk = _failure_key(failure, cluster, ty)
            for gv in np.unique(g[in_fm]):
                t1 = LIFE_GRID_S[1:]
                S_F = np.asarray(failure.survival(t1, np.full(len(t1), float(gv)), **fk), float)
                H_F = np.r_[0.0, -np.log(np.clip(S_F, 1e-300, 1.0))]  # S_F(0) = 1: no failure atom
                H_F = np.maximum.accumulate(H_F)
                top = failure.failure_support_s(gv, cluster) if hasattr(failure, "failure_support_s") else math.inf
                if math.isfinite(top):  # no failure past the longest one the model saw (its support)
                    H_F = np.where(LIFE_GRID_S > top, np.interp(top, LIFE_GRID_S, H_F), H_F)
                laws.append((np.flatnonzero(g == gv), np.diff(H_F)))
        # per law: its jobs, the per-cause increments and the all-cause cumulative hazard (built once)
        stacks = []
        for m, dHf in laws:
            if len(m):
                dHc = np.vstack([dH["COMPLETED"], dH["CANCELLED"], dHf])
                stacks.append((m, dHc, np.r_[0.0, np.cumsum(dHc.sum(axis=0))]))
        for m, dHc, H in stacks:
            t_end[m], first[m] = _invert(H, dHc, e[m], v[m])
        if stratified and k > 1:
            rank = np.argsort(np.argsort(t_end, kind="stable"), kind="stable")
            v0 = rng.random()
            v = np.mod(v0 + _PHI * rank, 1.0)
            for m, dHc, H in stacks:
                _, first[m] = _invert(H, dHc, e[m], v[m])
        never = ~np.isfinite(t_end)  # no cause within the grid: the run ends at its last point (then the cap)
        t_end[never] = LIFE_GRID_S[-1]
        for m, dHc, _H in stacks:  # ... with the cause of the hazards continued past the grid
            mm = m[never[m]]
            if len(mm):
                first[mm] = _tail_cause(dHc, v[mm])
        st = causes[np.maximum(first, 0)]
        st = np.where(zero, z_state, st)
        t_end = np.where(zero, 0.0, t_end)
        state[idx] = st
        run[idx] = t_end
        if not direct and hasattr(runtime, "max_run"):  # the cell's longest fitted run (RuntimeModel.max_run)
            cap_cell = runtime.max_run(**key)
            if cap_cell is not None:
                caps[idx] = cap_cell
    _size_law(runtime, cluster, types, gpus, run)
    np.minimum(run, caps, out=run)  # as RuntimeModel.sample caps
    return state, run


def _tail_cause(dHc: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Cause index (:data:`CAUSES`) of runs that outlive every cause within the grid: the hazards are
    continued as the constants of the last grid interval where any cause has one, so the cause is
    chosen by ``v`` with that interval's shares ``dHc[:, i] / Σ dHc[:, i]`` (COMPLETED when no cause
    has any hazard)."""
    tot = dHc.sum(axis=0)
    live = np.flatnonzero(tot > 0)
    if not len(live):
        return np.zeros(len(v), dtype=np.int64)
    share = np.cumsum(dHc[:, live[-1]] / tot[live[-1]])
    return (v[None, :] >= share[:-1, None]).sum(axis=0).astype(np.int64)


#: golden-ratio step of the low-discrepancy cause assignment
_PHI = (math.sqrt(5.0) - 1.0) / 2.0


def _size_law(runtime, cluster, types, gpus, run) -> None:
    """Rescale run times within a GPU bucket to each job's own GPU count by the runtime model's
    size law (``size_factors``) when it has one (in place)."""
    from acmemodel.features.keys import type_bucket_groups

    factors = getattr(runtime, "size_factors", None)
    if factors is None:
        return
    for ty, _b, idx in type_bucket_groups(types, gpus, runtime_edges(runtime)):
        if gpus[idx[0]] == 0:  # CPU jobs: no size law
            continue
        try:
            f = np.asarray(factors(gpus[idx], cluster=cluster, type=ty), dtype=float)
        except ValueError:  # a type the model never saw (marginalised in sample_lives): no size law
            continue
        if f[0] > 0:
            run[idx] *= f / f[0]


# ------------------------------------------------------------------------------- step 5: placement
def in_reservation(types, gpus) -> np.ndarray:
    """Boolean per job: at home in the pretraining reservation — a Pretrain job, or a job of at least
    :data:`RESERVED_MIN_GPUS` GPUs of any type (pretraining-scale debugging and fine-tuning runs)."""
    return (np.asarray(types, dtype=object) == "Pretrain") | (np.asarray(gpus, float) >= RESERVED_MIN_GPUS)


def chain_spans(submit_s, run_s, chain) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per chain (ids ``np.unique(chain)``, in that order): its first submission (s), the span (s) it
    holds its GPUs — from its first submission to the end of its last attempt, ``max(submit + run) −
    min(submit)`` (NaN runs count 0; restart gaps are inside the span) — and the row → chain map."""
    submit_s = np.asarray(submit_s, float)
    end = submit_s + np.nan_to_num(np.asarray(run_s, float), nan=0.0)
    ids, inv = np.unique(np.asarray(chain), return_inverse=True)
    first = np.full(len(ids), np.inf)
    np.minimum.at(first, inv, submit_s)
    last = np.full(len(ids), -np.inf)
    np.maximum.at(last, inv, end)
    return first, np.maximum(last - first, 0.0), inv


def shift_chains(submit_s, run_s, gpus, chain, capacity: int, rng: np.random.Generator, *,
                 window: tuple[float, float] | None = None) -> tuple[np.ndarray, dict]:
    """Submission times (s) of jobs whose chains (``chain``: one id per row) are placed within a
    reservation of ``capacity`` GPUs by :func:`place_reserved`; every row of a chain moves by its
    chain's offset (floored to whole seconds). Returns ``(submit_s, report)``."""
    submit_s = np.asarray(submit_s, float)
    first, span, inv = chain_spans(submit_s, run_s, chain)
    g = np.zeros(len(first), np.int64)
    np.maximum.at(g, inv, np.asarray(gpus, np.int64))
    new, rep = place_reserved(first, span, g, int(capacity), rng, window=window)
    rep["reservation_gpus"] = int(capacity)
    return np.floor(submit_s + (new - first)[inv]), rep


def place_reservation_jobs(types, submit_s, run_s, gpus, chain, capacity: int, rng: np.random.Generator, *,
                           window: tuple[float, float] | None = None) -> tuple[np.ndarray, dict]:
    """Submission times (s) of every job, with the chains at home in the reservation
    (:func:`in_reservation`) placed within ``capacity`` GPUs by :func:`shift_chains` and every other
    job left where it was. Returns ``(submit_s, report)``."""
    out = np.array(submit_s, dtype=float)
    m = np.flatnonzero(in_reservation(types, gpus))
    out[m], rep = shift_chains(out[m], np.asarray(run_s, float)[m], np.asarray(gpus)[m], np.asarray(chain)[m],
                               int(capacity), rng, window=window)
    return out, rep


def place_reserved(start_s, span_s, gpus, capacity: int, rng: np.random.Generator, *,
                   window: tuple[float, float] | None = None, jitter_s: float = PLACE_JITTER_S,
                   tries: int = PLACE_TRIES) -> tuple[np.ndarray, dict]:
    """New start times (s) of pretraining chains placed within a reservation of ``capacity`` GPUs
    (module docstring, step 5).

    ``start_s`` (nominal first submission), ``span_s`` (s the chain holds its GPUs) and ``gpus``, one
    per chain; ``window = (t0, t1)`` bounds the starts (default the nominal starts' range). Chains
    are placed largest first (``gpus × span``); a chain is kept at its nominal start when it fits,
    else its start is redrawn as ``s_j + U(−jitter_s, jitter_s)`` (``s_j`` a random chain's nominal
    start, clipped to the window) until the GPUs held over ``[s, s + span)`` by the chains already
    placed leave room for it (occupancy on a :data:`PLACE_BIN_S` timeline, spans rounded outwards).
    A chain of more than ``capacity`` GPUs keeps its nominal start (and holds none of the
    reservation); one that fits nowhere in
    ``tries`` draws keeps the draw of least excess. Returns ``(starts, report)`` with ``report =
    {"chains", "moved", "unplaced", "mean_shift_s"}``.
    """
    s0 = np.asarray(start_s, float)
    span = np.maximum(np.nan_to_num(np.asarray(span_s, float), nan=0.0), 0.0)
    g = np.asarray(gpus, np.int64)
    n = len(s0)
    out = s0.copy()
    if n == 0:
        return out, {"chains": 0, "moved": 0, "unplaced": 0, "mean_shift_s": 0.0}
    t0, t1 = (float(s0.min()), float(s0.max()) + 1.0) if window is None else map(float, window)
    b = PLACE_BIN_S
    nb = int(math.ceil((t1 - t0 + span.max()) / b)) + 3
    occ = np.zeros(nb, np.int64)
    cap = int(capacity)
    order = np.argsort(-(g * span), kind="stable")
    moved = unplaced = 0

    def bins(s, d):
        i0 = max(math.floor((s - t0) / b), 0)
        return i0, max(math.ceil((s + d - t0) / b), i0 + 1)

    hi = t1 - 1.0
    integers, uniform = rng.integers, rng.uniform
    for c in order:
        gc, d = int(g[c]), float(span[c])
        i0, i1 = bins(s0[c], d)
        if gc > cap:  # can never run in the reservation: left alone, holding none of it
            continue
        if int(occ[i0:i1].max()) + gc <= cap:
            occ[i0:i1] += gc
            continue
        best, best_x = None, None
        for _ in range(int(tries)):  # (scalar min/max, not np.clip: the same value at a fifth of the cost)
            s = min(max(float(s0[integers(n)] + uniform(-jitter_s, jitter_s)), t0), hi)
            j0, j1 = bins(s, d)
            x = int(occ[j0:j1].max()) + gc - cap
            if best_x is None or x < best_x:
                best, best_x = s, x
            if x <= 0:
                break
        j0, j1 = bins(best, d)
        occ[j0:j1] += gc
        out[c] = best
        moved += 1
        unplaced += int(best_x > 0)
    return out, {"chains": int(n), "moved": int(moved), "unplaced": int(unplaced),
                 "mean_shift_s": float(np.mean(np.abs(out - s0)))}
