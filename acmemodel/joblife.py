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
   * zero-second runs: with probability ``π_j · G_j(0)`` the run ends at once with state *j* (the
     runtime model's atom); the failure model has no atom, so inside its domain only completion and
     cancellation keep theirs.

3. **Observed end**: ``T = min(T_F, T_C, T_X)`` and the state is the cause that came first
   (FAILED / COMPLETED / CANCELLED); ``end = start + T`` (the queue of :mod:`acmemodel.synth`
   decides ``start``). The runtime model's state probabilities and per-state run times are therefore
   not drawn independently: ``P(FAILED, T ≤ t) = ∫_0^t h_F(u) S_F(u) S_C(u) S_X(u) du`` etc.
   Outside the failure model's domain this reproduces the runtime model's ``(π_j, G_j)`` exactly
   (up to the grid); inside it, failures follow the failure model and the calibration
   (:func:`acmemodel.calibrate.calibrate`) draws its pseudo-trace's large jobs through this same
   generator before fitting, so the shipped bundle is a fixed point: fitting the synthetic data
   back gives the same models.
4. **Restarts** (:class:`~acmemodel.models.restart.RestartModel`): a FAILED job of cluster *c*,
   type *y* and *g* GPUs is resubmitted with probability ``q(c, y, bucket(g))``
   (``RestartModel.resubmit_probability``; the cluster × type value where a bucket had too few
   failures)
   after a gap ``Δ`` (``RestartModel`` gap model; the published prior by default), same user, type
   and GPUs; the new attempt draws its own latent times again (renewal: a fresh ``T_F``, the
   assumption of the planner's checkpoint kernel), so chains of several attempts appear, up to
   ``max_attempts``.

Times are seconds; the grid :data:`LIFE_GRID_S` runs from 1 s to 2^25 s (≈ 388 days).
"""
from __future__ import annotations

import math

import numpy as np

__all__ = ["LIFE_GRID_S", "CAUSES", "cause_hazards", "sample_latent", "sample_lives", "failure_domain"]

#: time grid (s) of the cause-specific cumulative hazards: 0, then 1 s … 2^25 s log-spaced
LIFE_GRID_S: np.ndarray = np.r_[0.0, np.geomspace(1.0, 2.0 ** 25, 600)]
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


def sample_lives(runtime, failure, cluster: str, types, gpus, rng: np.random.Generator
                 ) -> tuple[np.ndarray, np.ndarray]:
    """(state, run_s) per job by competing risks (module docstring), vectorised per
    type × GPU bucket; ``failure=None`` uses the runtime model's failure law for every job. A
    runtime object without ``state_probabilities``/``cdf`` (only ``sample_jobs(n, rng, **key)``,
    e.g. a test double) is sampled directly."""
    from acmemodel.features.keys import type_bucket_groups

    types = np.asarray(types, dtype=object)
    gpus = np.asarray(gpus, dtype=np.int64)
    n = len(types)
    state = np.empty(n, dtype=object)
    run = np.empty(n, dtype=float)
    g_min = failure_domain(failure)
    direct = not (hasattr(runtime, "state_probabilities") and hasattr(runtime, "cdf"))
    for ty, _b, idx in type_bucket_groups(types, gpus):
        key = {"cluster": cluster, "type": ty, "gpus": int(gpus[idx[0]])}
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
        u = rng.random(k)
        a_f_row = np.where(in_fm, 0.0, a_f)
        # the continuous part conditions on surviving the atom; inside the failure model's domain
        # the failure atom's mass is left to the failure model's own law
        zero = u < a_c + a_x + a_f_row
        z_state = np.where(u < a_c, "COMPLETED", np.where(u < a_c + a_x, "CANCELLED", "FAILED"))
        T = {s: sample_latent(law["H"][s], k, rng) for s in CAUSES}
        if in_fm.any():
            fk = _failure_key(failure, cluster, ty)
            for gv in np.unique(g[in_fm]):
                m = np.flatnonzero(g == gv)
                T["FAILED"][m] = failure.sample(len(m), float(gv), rng, **fk)
        Tm = np.column_stack([T[s] for s in CAUSES])
        first = np.argmin(Tm, axis=1)
        t_end = Tm[np.arange(k), first]
        st = np.asarray(CAUSES, dtype=object)[first]
        never = ~np.isfinite(t_end)  # no cause within the grid: the run ends at its last point
        t_end[never] = LIFE_GRID_S[-1]
        st[never] = "COMPLETED"
        st = np.where(zero, z_state, st)
        t_end = np.where(zero, 0.0, t_end)
        state[idx] = st
        run[idx] = t_end
    _size_law(runtime, cluster, types, gpus, run)
    return state, run


def _size_law(runtime, cluster, types, gpus, run) -> None:
    """Rescale run times within a GPU bucket to each job's own GPU count by the runtime model's
    size law (``size_factors``) when it has one (in place)."""
    from acmemodel.features.keys import type_bucket_groups

    factors = getattr(runtime, "size_factors", None)
    if factors is None:
        return
    for ty, _b, idx in type_bucket_groups(types, gpus):
        f = np.asarray(factors(gpus[idx], cluster=cluster, type=ty), dtype=float)
        if f[0] > 0:
            run[idx] *= f / f[0]
