"""The queue side of the default-bundle calibration: Acme's scheduling policy and start-up latency.

The published queueing facts (``queue_wait_by_type.csv``: paper Fig. 6 b/d read off the plot, per
cluster × type the share of jobs with wait ≤ x; ``cluster_summary.csv``: median and mean wait) are
reproduced by the cluster simulator (:func:`acmemodel.planner.cluster_sim.simulate_cluster`) running
Acme's policy on the calibrated workload, plus a start-up latency. :func:`calibrate_queue_jobs`
chooses, per cluster:

1. **The policy** — among :func:`policy_candidates` (the pretraining reservation size; whether
   evaluation may run best-effort on idle reserved GPUs; priorities by type with evaluation below the
   rest), the one whose simulated *contention* waits (no latency) best match the facts that latency
   cannot explain: the published shares at ≥ 100 s, "no more jobs start within 1 s than published"
   (latency only delays), the cluster mean wait (log ratio) and evaluation having the largest mean
   wait; a candidate's score is the worse of the pseudo-trace's and of a variant with
   :data:`STRESS` longer non-pretraining runs (robustness to the synthetic traces' GPU-time error).
   The workload is the calibration's pseudo-trace itself (its GPU jobs: submit, GPUs, type,
   run time), at the scale it is built at (the cluster is not scaled: choices are meaningful at
   full scale).
2. **The start-up latency** ``L`` per type — a hurdle: ``P(L <= 1 s) = a`` (uniform on {0, 1} s),
   else ``L = 1 + shift + LogNormal(mu, sigma)`` (``shift`` >= 0: the minimum time of pod creation
   beyond the first second) — fitted by least squares so that ``L + C`` (C: the chosen
   policy's contention waits of that type, resampled) has the published shares at every published
   point and the cluster mean wait; a type with fewer than three published points shares (mu,
   sigma) with the cluster's other types (Seren: evaluation's) and a type with none also shares the
   atom (the mean of the others').

The latency fit counts the draws as whole seconds (``round(L) + C <= x``), as the simulator adds them.

:func:`simulate_pseudo_waits` then gives the calibration's pseudo-trace its waits from the same
simulator (policy + latency draws), so that the queue model fitted on it recovers the latency from
the jobs that started on a free cluster. Where the published duration includes the wait (Kalos) the
wait stays independent of the job's own run and the run-time law is deconvolved
(:func:`deconvolve_run`) so that run + wait has the published total law. Everything is
deterministic given the seed.
"""
from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
from scipy import optimize, special

__all__ = ["policy_candidates", "calibrate_queue_jobs", "latency_sample", "latency_cdf", "fit_latency",
           "simulate_pseudo_waits", "deconvolve_run", "TYPES_PRIORITY"]

#: the policy must also fit a workload whose non-pretraining run times are this much longer (the synthetic
#: traces of a bundle differ from its pseudo-trace by about this much in GPU time per type)
STRESS = 0.15
#: priorities by type of Acme's policy: evaluation below everything else (higher = first)
TYPES_PRIORITY = {"Pretrain": 2, "SFT": 1, "MLLM": 1, "Debug": 1, "Other": 1, "Eval": 0}


def policy_candidates(cluster: str, total_gpus: int, types) -> list[dict]:
    """The policies searched: reservation of 2/3, 3/4, 5/6 and ~9/10 of the cluster (multiples of 64
    GPUs) x evaluation best-effort or not, and no reservation at all (one pool: priorities only);
    Pretrain first, evaluation last (:data:`TYPES_PRIORITY`)."""
    others = [t for t in types if t != "Pretrain"]
    out = []
    for frac in (2 / 3, 3 / 4, 5 / 6, 0.9, 1.0):
        r = int(round(total_gpus * frac / 64.0)) * 64 if frac < 1 else int(total_gpus)
        for eval_be in ((True, False) if frac < 1 else (True,)):
            out.append({"reservation_gpus": r, "priorities": {t: TYPES_PRIORITY.get(t, 1) for t in types},
                        "best_effort": True,
                        "best_effort_types": [t for t in others if eval_be or t != "Eval"]})
    return out


# ------------------------------------------------------------------------------------------- latency law
def latency_cdf(y, a: float, mu: float, sigma: float, shift: float = 0.0) -> np.ndarray:
    """CDF of the latency hurdle (module docstring) at y seconds."""
    y = np.asarray(y, dtype=float)
    out = np.where(y < 0, 0.0, np.where(y < 1, a / 2, a))
    with np.errstate(divide="ignore", invalid="ignore"):
        z = (np.log(np.maximum(y - 1.0 - shift, 1e-12)) - mu) / sigma
    cont = np.where(y > 1 + shift, 0.5 * special.erfc(-z / math.sqrt(2)), 0.0)
    return out + (1 - a) * cont


def latency_sample(n: int, rng: np.random.Generator, a: float, mu: float, sigma: float,
                   shift: float = 0.0) -> np.ndarray:
    """``n`` latencies (s, whole seconds) of the hurdle law."""
    atom = rng.random(n) < a
    x = np.where(atom, rng.integers(0, 2, n), 1.0 + shift + np.exp(mu + sigma * rng.standard_normal(n)))
    return np.round(x)


def _latency_mean(a, mu, sigma, shift=0.0):
    return a * 0.5 + (1 - a) * (1.0 + shift + math.exp(mu + sigma * sigma / 2))


def fit_latency(contention: dict, targets: pd.DataFrame, *, mean_target: float | None = None,
                weights: dict | None = None, max_sample: int = 4000, seed: int = 0) -> dict:
    """Latency parameters per type {type: {"a", "mu", "sigma"}} (module docstring, step 2).

    ``contention``: {type: contention waits (s) of simulated jobs}; ``targets``: rows ``type, x_s,
    cdf_percent``; ``mean_target``: the cluster mean wait (s), matched with the job-count ``weights``
    ({type: share}) of the types.
    """
    rng = np.random.default_rng(seed)
    types = list(contention)
    C = {t: np.asarray(contention[t], float) for t in types}
    C = {t: (rng.choice(v, max_sample) if len(v) > max_sample else v) for t, v in C.items() if len(v)}
    types = list(C)
    pts = {t: targets[targets["type"] == t][["x_s", "cdf_percent"]].to_numpy(float) for t in types}
    own = [t for t in types if len(pts[t]) >= 3]
    shared = [t for t in types if 0 < len(pts[t]) < 3]
    none = [t for t in types if len(pts[t]) == 0]
    # parameter vector: atom logits of own+shared, (mu, log sigma) of each own type, one shared pair
    idx, k = {}, 0
    for t in own + shared:
        idx[(t, "a")] = k
        k += 1
    for t in own:
        idx[(t, "mu")], idx[(t, "ls")], idx[(t, "sh")] = k, k + 1, k + 2
        k += 3
    idx[("*", "mu")], idx[("*", "ls")], idx[("*", "sh")] = k, k + 1, k + 2
    k += 3

    def params(th):
        out = {}
        for t in own + shared:
            key = t if t in own else "*"
            out[t] = {"a": float(special.expit(th[idx[(t, "a")]])), "mu": float(th[idx[(key, "mu")]]),
                      "sigma": float(np.exp(th[idx[(key, "ls")]])), "shift": float(th[idx[(key, "sh")]])}
        a_mean = float(np.mean([out[t]["a"] for t in shared])) if shared else (
            float(np.mean([out[t]["a"] for t in own])) if own else 0.5)
        for t in none:
            out[t] = {"a": a_mean, "mu": float(th[idx[("*", "mu")]]), "sigma": float(np.exp(th[idx[("*", "ls")]])),
                      "shift": float(th[idx[("*", "sh")]])}
        return out

    def res(th):
        p = params(th)
        r = []
        for t in types:
            for x, c in pts[t]:
                # latency draws are whole seconds: round(L) <= x - C  <=>  L < floor(x - C) + 1/2
                f = float(np.mean(latency_cdf(np.floor(x - C[t]) + 0.5, **p[t])))
                r.append(f - c / 100.0)
        if own and shared:  # tie the shared pair to the own types' (mean) pair
            mu_o = np.mean([th[idx[(t, "mu")]] for t in own])
            ls_o = np.mean([th[idx[(t, "ls")]] for t in own])
            sh_o = np.mean([th[idx[(t, "sh")]] for t in own])
            r += [0.3 * (th[idx[("*", "mu")]] - mu_o), 0.3 * (th[idx[("*", "ls")]] - ls_o),
                  0.03 * (th[idx[("*", "sh")]] - sh_o)]
        if mean_target and weights:
            w = np.array([weights.get(t, 0.0) for t in types], float)
            m = np.array([_latency_mean(**p[t]) + C[t].mean() for t in types])
            if w.sum() > 0:
                r.append(0.3 * math.log(max(float((w * m).sum() / w.sum()), 1e-3) / mean_target))
        return np.asarray(r)

    th0 = np.zeros(k)
    for t in own + shared:
        th0[idx[(t, "a")]] = 0.0
    for key in own + ["*"]:
        th0[idx[(key, "mu")]], th0[idx[(key, "ls")]], th0[idx[(key, "sh")]] = math.log(10.0), math.log(1.0), 1.0
    lo, hi = np.full(k, -8.0), np.full(k, 8.0)
    for key in own + ["*"]:
        lo[idx[(key, "mu")]], hi[idx[(key, "mu")]] = -3.0, 10.0
        lo[idx[(key, "ls")]], hi[idx[(key, "ls")]] = math.log(0.05), math.log(3.5)
        lo[idx[(key, "sh")]], hi[idx[(key, "sh")]] = 0.0, 30.0
    sol = optimize.least_squares(res, th0, bounds=(lo, hi))
    return params(sol.x)


# ------------------------------------------------------------------------------------------- policy search
def _contention_score(cluster: str, waits: dict, targets: pd.DataFrame, mean_target: float,
                      weights: dict) -> float:
    """Step 1 objective (module docstring) for contention waits {type: array}."""
    sq = 0.0
    for _, r in targets.iterrows():
        w = waits.get(r["type"])
        if w is None or not len(w):
            continue
        f = float(np.mean(w <= r["x_s"]))
        c = r["cdf_percent"] / 100.0
        if r["x_s"] >= 100:
            sq += (f - c) ** 2
        else:
            sq += max(0.0, c - f) ** 2  # latency can only lower the share
    w = np.array([weights.get(t, 0.0) for t in waits], float)
    m = np.array([float(np.mean(v)) if len(v) else 0.0 for v in waits.values()])
    mean = float((w * m).sum() / max(w.sum(), 1e-12))
    sq += 0.05 * math.log(max(mean, 1.0) / mean_target) ** 2
    if "Eval" in waits and len(waits) > 1:
        ev = float(np.mean(waits["Eval"]))
        top = max(float(np.mean(v)) for t, v in waits.items() if t != "Eval" and len(v))
        if ev < top:
            sq += 0.05 * math.log(top / max(ev, 1.0)) ** 2
    return sq


def _run_policy(d: pd.DataFrame, cluster: str, total: int, policy: dict, latency: dict | None,
                seed: int) -> pd.DataFrame:
    from acmemodel.errors import DataWarning
    from acmemodel.planner.cluster_sim import simulate_cluster

    parts = {"pretrain": int(policy["reservation_gpus"])}
    shared = total - parts["pretrain"]
    d = d.copy()
    d["partition"] = np.where((d["type"].astype(str) == "Pretrain") | (d["gpu_num"] > shared), "pretrain", "shared")
    if latency:
        rng = np.random.default_rng([seed, 41])
        lat = np.zeros(len(d))
        ty = d["type"].astype(str).to_numpy()
        for t in np.unique(ty):
            m = np.flatnonzero(ty == t)
            p = latency.get(t) or {"a": 1.0, "mu": 0.0, "sigma": 1.0}
            lat[m] = latency_sample(len(m), rng, **p)
        d["latency_s"] = lat
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)
        res = simulate_cluster(d, total_gpus=total, partitions=parts, reserved_partition="pretrain",
                               priorities=policy["priorities"], best_effort_on_reserved=bool(policy["best_effort"]),
                               best_effort_types=policy.get("best_effort_types"))
    return res.jobs


def calibrate_queue_jobs(gpu: pd.DataFrame, cluster: str, *, seed: int = 2023, log=None) -> dict:
    """Choose the policy and fit the latency (module docstring) on a job list of one cluster (``submit_s,
    run_s, gpu_num, type``: the pseudo-trace's GPU jobs). Returns ``{"policy", "latency": {type: {a, mu,
    sigma}}, "search": [rows], "contention_mean_s": {type: s}, "score"}``."""
    from acmemodel.clusters import cluster_gpus
    from acmemodel.datasets import load_reference

    total = cluster_gpus(cluster)
    mix = load_reference("workload_mix")
    types = list(mix.loc[mix["cluster"] == cluster, "type"])
    weights = dict(zip(types, mix.loc[mix["cluster"] == cluster, "job_count_percent"].astype(float)))
    targets = load_reference("queue_wait_by_type").query("cluster == @cluster")
    mean_target = float(load_reference("cluster_summary").set_index("id").loc[cluster, "avg_que_time_gpu"])
    d = gpu[["submit_s", "run_s", "gpu_num", "type"]].copy()
    d = d[(d["gpu_num"] > 0) & np.isfinite(d["run_s"].to_numpy(float))]
    best, best_score, rows, best_jobs = None, math.inf, [], None
    heavy = d.assign(run_s=np.where(d["type"].astype(str) == "Pretrain", d["run_s"], d["run_s"] * (1 + STRESS)))
    for pol in policy_candidates(cluster, total, types):
        j = _run_policy(d, cluster, total, pol, None, seed)
        waits = {t: g.to_numpy(float) for t, g in j.groupby("type")["contention_s"]}
        score = _contention_score(cluster, waits, targets, mean_target, weights)
        jh = _run_policy(heavy, cluster, total, pol, None, seed)
        score = max(score, _contention_score(cluster, {t: g.to_numpy(float) for t, g in
                                                        jh.groupby("type")["contention_s"]},
                                             targets, mean_target, weights))
        rows.append({"reservation_gpus": pol["reservation_gpus"],
                     "eval_best_effort": "Eval" in pol["best_effort_types"], "score": score,
                     "mean_contention_s": {t: float(np.mean(v)) for t, v in waits.items()}})
        if log:
            log(f"{cluster}: reservation {pol['reservation_gpus']}, eval best-effort "
                f"{'Eval' in pol['best_effort_types']}: score {score:.4f}")
        if score < best_score:
            best, best_score, best_jobs = pol, score, j
    waits = {t: g.to_numpy(float) for t, g in best_jobs.groupby("type")["contention_s"]}
    lat = fit_latency(waits, targets, mean_target=mean_target, weights=weights, seed=seed)
    return {"policy": dict(best, latency=True), "latency": lat, "search": rows, "score": best_score,
            "contention_mean_s": {t: float(np.mean(v)) for t, v in waits.items()}}


def deconvolve_run(total, wait, *, min_run: float = 1.0, grid: int = 64, max_wait_sample: int = 400,
                   smooth: float = 0.02) -> np.ndarray:
    """Run times ``R`` (s), one per element of ``total``, comonotone with ``total`` (the job with the
    k-th longest total gets the k-th longest run), whose law convolved with the law of ``wait``
    (an independent wait, s) is as close as it can be to the law of ``total``: ``R + W ~ T``.

    The run law is a piecewise log-linear CDF ``G`` on ``grid`` log-spaced points ``y_k`` from
    ``min_run`` to the longest total; since ``F_{R+W}(x) = mean_j G(x - w_j)`` is linear in the
    increments ``d_k = G(y_k) - G(y_{k-1}) >= 0`` (``w_j``: at most ``max_wait_sample`` quantiles of
    the waits), they are solved by non-negative least squares so that ``F_{R+W}`` matches the empirical
    CDF of ``total`` at the powers of sqrt(2) (the published curves' points and their midpoints),
    with ``sum d = 1`` and a second-difference penalty ``smooth``. Where the total law is sharper
    than the wait law allows (no exact deconvolution) this is the least-squares compromise.
    """
    t = np.asarray(total, dtype=float)
    w = np.asarray(wait, dtype=float)
    w = w[np.isfinite(w)]
    n = len(t)
    if n == 0 or len(w) == 0:
        return np.maximum(t, min_run)
    if len(w) > max_wait_sample:
        w = np.quantile(w, (np.arange(max_wait_sample) + 0.5) / max_wait_sample)
    order = np.argsort(t, kind="stable")
    ts = t[order]
    top = max(float(ts[-1]), 2.0 * min_run)
    y = np.geomspace(min_run, top, grid)
    ly = np.log(y)
    x = 2.0 ** (np.arange(0, 2 * math.ceil(math.log2(top + w.max() + 2)) + 1) / 2.0)
    f = np.searchsorted(ts, x, side="right") / n

    def basis(v):  # H_k(v): G(v) = sum_k d_k H_k(v)
        lv = np.log(np.maximum(v, 1e-12))[..., None]
        h = np.clip((lv - ly[:-1]) / np.diff(ly), 0.0, 1.0)
        h0 = (lv >= ly[0]).astype(float)
        return np.concatenate([h0, h], axis=-1) * (v[..., None] >= y[0])

    A = basis(x[:, None] - w[None, :]).mean(axis=1)
    k = A.shape[1]
    D = np.zeros((k - 2, k))
    for i in range(k - 2):
        D[i, i:i + 3] = (1.0, -2.0, 1.0)
    M = np.vstack([A, 10.0 * np.ones((1, k)), smooth * D])
    rhs = np.r_[f, 10.0, np.zeros(k - 2)]
    d, _ = optimize.nnls(M, rhs, maxiter=50 * k)
    G = np.cumsum(d)
    G = G / G[-1] if G[-1] > 0 else np.linspace(0, 1, k)
    u = (np.arange(n) + 0.5) / n
    # quantile of the piecewise log-linear CDF (flat parts of G skipped)
    keep = np.r_[True, np.diff(G) > 1e-12]
    r = np.exp(np.interp(u, G[keep], ly[keep]))
    out = np.empty(n)
    out[order] = np.maximum(r, min_run)
    return out


def simulate_pseudo_waits(gpu: pd.DataFrame, cluster: str, policy: dict, latency: dict, *, seed: int,
                          includes_queue: bool, rounds: int = 3) -> pd.DataFrame:
    """Waits of the pseudo-trace's GPU jobs (``type, gpu_num, submit_s, run_s``) from the simulator on
    ``policy`` with independent latency draws: returns ``gpu`` with ``queue_s`` (latency + contention).

    Where the published duration includes the queue (Kalos: ``run_s`` is the published total ``T``) the
    wait is still independent of the job's own run, as in the simulator, and the run time is obtained by
    deconvolution (:func:`deconvolve_run`, per type): ``run_s`` comonotone with ``T`` and such that
    run + wait has the law of ``T``, with the wait law that of this very simulation (policy + latency).
    Since the simulated waits depend on the run times (GPUs are held for them), the two are iterated
    ``rounds`` times from run = T − latency.
    """
    from acmemodel.clusters import cluster_gpus

    d = gpu[["submit_s", "run_s", "gpu_num", "type"]].copy()
    rng = np.random.default_rng([seed, 43])
    lat = np.zeros(len(d))
    ty = d["type"].astype(str).to_numpy()
    for t in np.unique(ty):
        m = np.flatnonzero(ty == t)
        p = latency.get(t) or {"a": 1.0, "mu": 0.0, "sigma": 1.0}
        lat[m] = latency_sample(len(m), rng, **p)
    total = d["run_s"].to_numpy(float)
    run = np.maximum(total - lat, 1.0) if includes_queue else total
    total_gpus = cluster_gpus(cluster)

    def waits(run_s):
        j = _run_policy(d.assign(run_s=run_s, latency_s=lat), cluster, total_gpus, policy, None, seed)
        w = j["wait_s"].reindex(d.index).to_numpy(float)
        return np.where(np.isfinite(w), w, lat)

    w = waits(run)
    if includes_queue:
        for _ in range(max(int(rounds), 1)):
            for t in np.unique(ty):
                m = np.flatnonzero(ty == t)
                run[m] = deconvolve_run(total[m], w[m])
            w = waits(run)
    out = gpu.copy()
    out["queue_s"] = w
    if includes_queue:
        out["run_s"] = run
    return out
