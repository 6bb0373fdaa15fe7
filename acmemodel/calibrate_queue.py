"""The queue side of the default-bundle calibration: Acme's scheduling policy and start-up latency.

The published queueing facts (``queue_wait_by_type.csv``: paper Fig. 6 b/d read off the plot, per
cluster × type the share of jobs with wait ≤ x; ``cluster_summary.csv``: median and mean wait) are
reproduced by the cluster simulator (:func:`acmemodel.sim.cluster.simulate_cluster`) running
Acme's policy on the calibrated workload, plus a start-up latency. :func:`calibrate_queue_jobs`
chooses, per cluster:

1. **The policy** — among :func:`policy_candidates` (the pretraining reservation size; which types
   may run best-effort on idle reserved GPUs; an evaluation quota; priorities by type with
   evaluation below the rest), each simulated on the workload with its pretraining chains placed
   within its own reservation (:func:`place_pretrain`), the one whose waits — simulated contention
   plus the latency fitted to it (step 2) — score best against every published per-type share, the
   cluster mean and median wait and evaluation's two orderings (:func:`policy_score`, misses in
   units of their bars); among the candidates meeting every bar, one on which every
   non-pretraining type may use every idle GPU is preferred (its latency is what the queue model
   can estimate back from the trace, :func:`calibrate_queue_jobs`). With ``stress`` a candidate's
   score is the worse of the workload's and of a variant with :data:`STRESS` longer
   non-pretraining runs. The workload is the calibration's pseudo-trace (first pass) or a synthetic
   workload of the first-pass bundle (second pass), at full scale.
2. **The start-up latency** ``L`` per type — a hurdle: ``P(L <= 1 s) = a`` (uniform on {0, 1} s),
   else ``L = min(1 + shift + LogNormal(mu, sigma), cap)`` (``shift`` >= 0: the minimum time of pod
   creation beyond the first second; ``cap``: :data:`LATENCY_CAP_S`, 6 h, for evaluation and
   :data:`LATENCY_CAP_OTHER_S`, 1 h, for the other types — the published curves end at 1,000 s,
   and the cut keeps a small type's mean wait from being one draw's) — fitted by least squares so that ``L + C`` (C: the chosen
   policy's contention waits of that type, resampled) has the published shares at every published
   point and the cluster mean wait; a type with fewer than three published points shares (mu,
   sigma) with the cluster's other types (Seren: evaluation's) and a type with none also shares the
   atom (the mean of the others'). Where no share at ≤ 1 s is published (Kalos: "almost no job starts
   within 5 s") the atom is identified only through the first published point; evaluation's is then 0,
   which gives it the lowest ≤ 1 s share (the published curves put evaluation slowest at every x).

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

from acmemodel.calibrate_inputs import Workers

__all__ = ["policy_candidates", "calibrate_queue_jobs", "latency_sample", "latency_cdf", "fit_latency",
           "simulate_pseudo_waits", "deconvolve_run", "TYPES_PRIORITY", "place_pretrain", "chain_ids"]

#: the policy must also fit a workload whose non-pretraining run times are this much longer (the synthetic
#: traces of a bundle differ from its pseudo-trace by about this much in GPU time per type)
STRESS = 0.15
#: priorities by type of Acme's policy: evaluation below everything else (higher = first)
TYPES_PRIORITY = {"Pretrain": 2, "SFT": 1, "MLLM": 1, "Debug": 1, "Other": 1, "Eval": 0}
#: evaluation quotas searched (GPUs of a dedicated evaluation lane; :func:`policy_candidates`)
EVAL_LANES = (16, 24, 32, 48, 64, 128)
#: the latency fit keeps evaluation's mean wait this log ratio above every other type's (the heavy-tailed means
#: of a few hundred jobs are noisy)
EVAL_MEAN_MARGIN = math.log(1.25)
#: the start-up latency's upper bound (s) for evaluation jobs: the log-normal tail that carries the published mean
#: waits is cut at 6 h, so that a type's mean wait over a few hundred jobs has a finite, small variance (uncut,
#: sigma ~ 2.9 gives Kalos Debug's mean over ~540 jobs a standard error of ~500 s, larger than the mean itself)
LATENCY_CAP_S = 6 * 3600.0
#: ... and for every other type: 1 h. Evaluation runs best-effort on spare capacity, and its long waits are
#: published (5 % beyond 1,000 s); a pretraining run that started hours late would, in the simulator, collide
#: with the next run placed in the reservation (Seren, 6 h cap: Pretrain mean wait 909 s, evaluation's 577 s)
LATENCY_CAP_OTHER_S = 3600.0
#: the figures' bars in the policy score (:func:`policy_score`): shares in fractions, means/medians as log ratios
SCORE_BAR = {"share": 0.05, "log_ratio": math.log(1.5)}


def policy_candidates(cluster: str, total_gpus: int, types, *, lanes=None) -> list[dict]:
    """The policies searched: a pretraining reservation of 2/3, 3/4, 5/6 and ~9/10 of the cluster
    (multiples of 64 GPUs) or none (one pool: priorities only); Pretrain first, evaluation last
    (:data:`TYPES_PRIORITY`); and evaluation either (a) best-effort on idle reserved GPUs, (b) in the
    shared pool only, or (c) held to an **evaluation quota** of ``lanes`` GPUs (a dedicated lane carved
    from the shared pool, or from the one pool; :data:`EVAL_LANES`) and nowhere else. The other
    non-pretraining types run best-effort on idle reserved GPUs, except in (d): evaluation alone is
    best-effort on the spare reserved capacity (the paper's account) and the other types keep to the
    shared pool. ``lanes=()`` leaves (c) out."""
    lanes = EVAL_LANES if lanes is None else tuple(int(x) for x in lanes)
    others = [t for t in types if t != "Pretrain"]
    prio = {t: TYPES_PRIORITY.get(t, 1) for t in types}
    out = []
    for frac in (2 / 3, 3 / 4, 5 / 6, 0.9, 1.0):
        r = int(round(total_gpus * frac / 64.0)) * 64 if frac < 1 else int(total_gpus)
        shared = total_gpus - r
        modes = [(True, 0, True), (False, 0, True), (True, 0, False)] if frac < 1 else [(True, 0, True)]
        modes += [(False, e, True) for e in lanes if e > 0 and (e < shared or frac == 1.0)]
        for eval_be, lane, others_be in modes:
            out.append({"reservation_gpus": r - (lane if frac == 1.0 else 0), "eval_gpus": int(lane),
                        "priorities": dict(prio), "best_effort": True,
                        "best_effort_types": [t for t in others if (t == "Eval" and eval_be)
                                              or (t != "Eval" and others_be)]})
    return out


# ------------------------------------------------------------------------------------------- latency law
def latency_cdf(y, a: float, mu: float, sigma: float, shift: float = 0.0, cap: float = math.inf) -> np.ndarray:
    """CDF of the latency hurdle (module docstring) at y seconds (1 from ``cap`` on)."""
    y = np.asarray(y, dtype=float)
    out = np.where(y < 0, 0.0, np.where(y < 1, a / 2, a))
    with np.errstate(divide="ignore", invalid="ignore"):
        z = (np.log(np.maximum(y - 1.0 - shift, 1e-12)) - mu) / sigma
    cont = np.where(y >= cap, 1.0, np.where(y > 1 + shift, 0.5 * special.erfc(-z / math.sqrt(2)), 0.0))
    return out + (1 - a) * cont


def latency_sample(n: int, rng: np.random.Generator, a: float, mu: float, sigma: float,
                   shift: float = 0.0, cap: float = math.inf) -> np.ndarray:
    """``n`` latencies (s, whole seconds) of the hurdle law."""
    atom = rng.random(n) < a
    x = np.where(atom, rng.integers(0, 2, n),
                 np.minimum(1.0 + shift + np.exp(mu + sigma * rng.standard_normal(n)), cap))
    return np.round(x)


def _latency_mean(a, mu, sigma, shift=0.0, cap=math.inf):
    """E[L] (s) of the hurdle law: ``a/2 + (1 − a)(1 + shift + E[min(X, c)])``, X ~ LogNormal(mu, sigma),
    c = cap − 1 − shift; ``E[min(X, c)] = e^(mu + sigma²/2) Φ((ln c − mu − sigma²)/sigma) + c (1 − Φ((ln c − mu)/sigma))``."""
    c = cap - 1.0 - shift
    if not math.isfinite(c):
        body = math.exp(mu + sigma * sigma / 2)
    elif c <= 0:
        return a * 0.5 + (1 - a) * cap
    else:
        lc = math.log(c)
        body = (math.exp(mu + sigma * sigma / 2) * special.ndtr((lc - mu - sigma * sigma) / sigma)
                + c * special.ndtr(-(lc - mu) / sigma))
    return a * 0.5 + (1 - a) * (1.0 + shift + body)


def fit_latency(contention: dict, targets: pd.DataFrame, *, mean_target: float | None = None,
                weights: dict | None = None, max_sample: int = 4000, seed: int = 0,
                cap: float = LATENCY_CAP_S, cap_other: float = LATENCY_CAP_OTHER_S) -> dict:
    """Latency parameters per type {type: {"a", "mu", "sigma", "shift", "cap"}} (module docstring, step 2).

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
    # no published share at <= 1 s (Kalos): the atom is identified only through the first published point;
    # evaluation's is 0, so that it has the lowest <= 1 s share (published: evaluation is the slowest curve)
    eval_no_atom = "Eval" in types and not any(len(p) and float(np.min(p[:, 0])) <= 1.0 for p in pts.values())
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
            a = 0.0 if (eval_no_atom and t == "Eval") else float(special.expit(th[idx[(t, "a")]]))
            out[t] = {"a": a, "mu": float(th[idx[(key, "mu")]]),
                      "sigma": float(np.exp(th[idx[(key, "ls")]])), "shift": float(th[idx[(key, "sh")]]),
                      "cap": cap if t == "Eval" else cap_other}
        a_mean = float(np.mean([out[t]["a"] for t in shared])) if shared else (
            float(np.mean([out[t]["a"] for t in own])) if own else 0.5)
        for t in none:
            out[t] = {"a": a_mean, "mu": float(th[idx[("*", "mu")]]), "sigma": float(np.exp(th[idx[("*", "ls")]])),
                      "shift": float(th[idx[("*", "sh")]]), "cap": cap if t == "Eval" else cap_other}
        return out

    # latency draws are whole seconds: round(L) <= x - C  <=>  L < floor(x - C) + 1/2, so each published point
    # needs the law of the integer floor(x - C) only: its values >= 0 and their probabilities
    lev = {}
    for t in types:
        for x, _c in pts[t]:
            fl = np.floor(x - C[t])
            uk, cnt = np.unique(fl[fl >= 0], return_counts=True)
            lev[(t, x)] = (uk + 0.5, cnt / len(C[t]))
    shares = {t: _PointMisses([lev[(t, x)] for x, _c in pts[t]], pts[t][:, 1] / 100.0) for t in types}

    def res(th, means=True):
        p = params(th)
        r = []
        for t in types:
            r += shares[t](p[t])
        if own and shared:  # tie the shared pair to the own types' (mean) pair
            mu_o = np.mean([th[idx[(t, "mu")]] for t in own])
            ls_o = np.mean([th[idx[(t, "ls")]] for t in own])
            sh_o = np.mean([th[idx[(t, "sh")]] for t in own])
            r += [0.3 * (th[idx[("*", "mu")]] - mu_o), 0.3 * (th[idx[("*", "ls")]] - ls_o),
                  0.03 * (th[idx[("*", "sh")]] - sh_o)]
        m = {t: _latency_mean(**p[t]) + C[t].mean() for t in types}
        if means and mean_target and weights:
            w = np.array([weights.get(t, 0.0) for t in types], float)
            if w.sum() > 0:
                mean = float((w * np.array([m[t] for t in types])).sum() / w.sum())
                r.append(0.3 * math.log(max(mean, 1e-3) / mean_target))
        if means and "Eval" in m and len(m) > 1:  # published: evaluation has the largest mean wait (a hinge, log ratio)
            top = max(v for t, v in m.items() if t != "Eval")
            r.append(1.0 * max(0.0, math.log(max(top, 1e-3) / max(m["Eval"], 1e-3)) + EVAL_MEAN_MARGIN))
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
    # the shares alone first (each type's own curve), then with the mean and the hinge: started from the
    # shares' optimum, the hinge (a max over the types) cannot drag one type into another basin
    th0 = np.clip(optimize.least_squares(res, th0, bounds=(lo, hi), kwargs={"means": False}).x, lo, hi)
    sol = optimize.least_squares(res, th0, bounds=(lo, hi))
    return params(sol.x)


# ------------------------------------------------------------------------------------------- policy search
def _run_policy(d: pd.DataFrame, cluster: str, total: int, policy: dict, latency: dict | None,
                seed: int) -> pd.DataFrame:
    from acmemodel.errors import DataWarning
    from acmemodel.sim.cluster import SchedulingPolicy, simulate_cluster

    parts = {"pretrain": int(policy["reservation_gpus"])}
    lane = int(policy.get("eval_gpus") or 0)
    if lane:
        parts["eval"] = lane
    shared = total - sum(parts.values())
    d = place_pretrain(d, parts["pretrain"], seed)
    ty = d["type"].astype(str).to_numpy()
    g = d["gpu_num"].to_numpy()
    from acmemodel.joblife import in_reservation

    home = np.where(in_reservation(ty, g), "pretrain", "shared").astype(object)
    if lane:
        home[(ty == "Eval") & (g <= lane)] = "eval"
    home[(home == "shared") & (g > shared)] = "pretrain"
    d["partition"] = home
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
                               **SchedulingPolicy.from_calibration(policy).kwargs())
    return res.jobs


def _contention(jobs: pd.DataFrame) -> dict:
    """{type: contention waits (s)} of a simulation's jobs."""
    return {t: g.to_numpy(float) for t, g in jobs.groupby("type")["contention_s"]}


def _candidate_contention(d: pd.DataFrame, heavy: pd.DataFrame | None, cluster: str, total: int, policy: dict,
                          seed: int):
    """One candidate's contention waits on the workload ``d`` and on its ``heavy`` variant (None: not simulated)."""
    c = _contention(_run_policy(d, cluster, total, policy, None, seed))
    return c, (_contention(_run_policy(heavy, cluster, total, policy, None, seed)) if heavy is not None else None)


def chain_ids(d: pd.DataFrame) -> np.ndarray:
    """One restart-chain id per row: ``chain_id`` when present; else the root ``uid`` of the
    ``prev_uid`` links (the calibration's pseudo-trace; −1 = no predecessor); else the row itself."""
    if "chain_id" in d.columns:
        return d["chain_id"].to_numpy()
    if {"uid", "prev_uid"} <= set(d.columns):
        from acmemodel.features.chains import chain_heads

        prev = pd.Index(d["uid"].to_numpy()).get_indexer(d["prev_uid"].to_numpy())
        return d["uid"].to_numpy(np.int64)[chain_heads(prev)[0]]
    return np.arange(len(d))


def place_pretrain(d: pd.DataFrame, capacity: int, seed: int) -> pd.DataFrame:
    """``d`` with its chains at home in the reservation (:func:`acmemodel.joblife.in_reservation`) placed
    within a reservation of ``capacity`` GPUs
    (:func:`acmemodel.joblife.shift_chains`, the generator's step 5): the workload a policy with that
    reservation sees. Deterministic given ``seed``."""
    from acmemodel.joblife import place_reservation_jobs

    d = d.copy()
    if capacity and len(d):
        d["submit_s"], _ = place_reservation_jobs(
            d["type"].astype(str).to_numpy(), d["submit_s"].to_numpy(float), d["run_s"].to_numpy(float),
            d["gpu_num"].to_numpy(), chain_ids(d), int(capacity), np.random.default_rng([int(seed), 53]),
            window=(float(d["submit_s"].min()), float(d["submit_s"].max()) + 1.0))
    return d


def policy_score(waits: dict, targets: pd.DataFrame, *, mean_target: float, median_target: float,
                 weights: dict) -> tuple[float, dict]:
    """Score of full waits {type: array of latency + contention, s} against the published facts: the
    sum of squared misses, each in units of its bar (:data:`SCORE_BAR`: 5 pp for a share, a factor 1.5
    for a mean or median), over every published per-type share, the cluster mean and median wait
    (job-count ``weights`` of the types) and two hinges: evaluation's mean wait below the largest other
    type's mean (log ratio, in units of :data:`EVAL_MEAN_MARGIN`: zero from a margin above, one bar at
    equality) and evaluation's <= 1 s share above the smallest other type's. A candidate
    meeting every bar has every term <= 1. Returns (score, {term: value})."""
    sb, lb = SCORE_BAR["share"], SCORE_BAR["log_ratio"]
    terms = {}
    for _, r in targets.iterrows():
        w = waits.get(r["type"])
        if w is not None and len(w):
            terms[f"{r['type']}<={r['x_s']:g}"] = ((float(np.mean(w <= r["x_s"])) - r["cdf_percent"] / 100.0) / sb) ** 2
    types = [t for t in waits if len(waits[t])]
    wt = np.array([weights.get(t, 0.0) for t in types], float)
    means = {t: float(np.mean(waits[t])) for t in types}
    if wt.sum() > 0:
        mean = float((wt * np.array([means[t] for t in types])).sum() / wt.sum())
        terms["mean"] = (math.log(max(mean, 1e-3) / mean_target) / lb) ** 2
        # the cluster median of the job-count-weighted mixture of the types' waits
        pooled = np.concatenate([np.quantile(waits[t], (np.arange(200) + 0.5) / 200) for t in types])
        wts = np.repeat(wt / wt.sum() / 200, 200)
        o = np.argsort(pooled, kind="stable")
        med = float(pooled[o][np.searchsorted(np.cumsum(wts[o]), 0.5)])
        terms["median"] = (math.log((med + 1.0) / (median_target + 1.0)) / lb) ** 2
    if "Eval" in means and len(means) > 1:
        top = max(v for t, v in means.items() if t != "Eval")
        # a miss of EVAL_MEAN_MARGIN (the latency fit's margin) is one bar: within the bar, Eval's mean is the largest
        terms["eval_mean_largest"] = (max(0.0, math.log(max(top, 1.0) / max(means["Eval"], 1.0)) + EVAL_MEAN_MARGIN)
                                      / EVAL_MEAN_MARGIN) ** 2
        f1 = {t: float(np.mean(waits[t] <= 1.0)) for t in types}
        low = min(v for t, v in f1.items() if t != "Eval")
        terms["eval_share1_lowest"] = (max(0.0, f1["Eval"] - low) / sb) ** 2
    return float(sum(terms.values())), terms


def _latency_draws(contention: dict, latency: dict, seed: int) -> dict:
    """Full waits {type: contention + one whole-second latency draw per job}."""
    rng = np.random.default_rng([seed, 47])
    out = {}
    for t, c in contention.items():
        p = latency.get(t) or {"a": 1.0, "mu": 0.0, "sigma": 1.0}
        out[t] = np.asarray(c, float) + latency_sample(len(c), rng, **p)
    return out


def calibrate_queue_jobs(gpu: pd.DataFrame, cluster: str, *, seed: int = 2023, log=None,
                         candidates: list[dict] | None = None, stress: float = STRESS,
                         search_sample: int = 1000, latency_guess: dict | None = None, refit_top: int = 5,
                         lanes=None, workers=None) -> dict:
    """Choose the policy and fit the latency (module docstring) on a job list of one cluster (``submit_s,
    run_s, gpu_num, type``: the pseudo-trace's GPU jobs, or a synthetic workload of a fitted bundle).

    For every candidate (``candidates``, default :func:`policy_candidates` with ``lanes``): the simulator's contention
    waits (no latency), the latency laws fitted to them (:func:`fit_latency`), and the
    :func:`policy_score` of contention + latency draws (the latency fitted on at most ``search_sample``
    waits per type during the search, on 4,000 for the winner). With ``latency_guess`` (latency laws
    of an earlier calibration) every candidate is first scored with those laws and only the
    ``refit_top`` best get their own latency fit. With ``stress`` > 0 the score is the worse of
    the workload's and of a variant whose non-pretraining runs are ``1 + stress`` times longer (the
    same latency laws). The lowest score wins, except that a candidate meeting every bar (every score
    term ≤ 1) on which every non-pretraining type may use every idle GPU (all best effort, no lane) is
    preferred to the others: the queue model estimates the latency from jobs submitted while enough of
    the cluster's GPUs were idle, which is the latency only where a job may use any idle GPU, so on
    such a policy the refitted bundle gives back the waits simulated here. ``workers``
    (:class:`acmemodel.calibrate_inputs.Workers`) simulates the candidates in parallel (the same result). Returns ``{"policy", "latency": {type: {a, mu, sigma,
    shift}}, "search": [rows], "contention_mean_s": {type: s}, "score", "terms"}``."""
    from acmemodel.clusters import cluster_gpus
    from acmemodel.datasets.published import load_reference

    total = cluster_gpus(cluster)
    mix = load_reference("workload_mix")
    types = list(mix.loc[mix["cluster"] == cluster, "type"])
    weights = dict(zip(types, mix.loc[mix["cluster"] == cluster, "job_count_percent"].astype(float)))
    targets = load_reference("queue_wait_by_type").query("cluster == @cluster")
    summ = load_reference("cluster_summary").set_index("id").loc[cluster]
    mean_target, median_target = float(summ["avg_que_time_gpu"]), float(summ["med_que_time_gpu"])
    d = gpu[["submit_s", "run_s", "gpu_num", "type"]].copy()
    d["chain_id"] = chain_ids(gpu)
    d = d[(d["gpu_num"] > 0) & np.isfinite(d["run_s"].to_numpy(float))]
    best, rows = None, []
    heavy = d.assign(run_s=np.where(d["type"].astype(str) == "Pretrain", d["run_s"], d["run_s"] * (1 + stress)))

    def scored(c, ch, lat):
        score, terms = policy_score(_latency_draws(c, lat, seed), targets, mean_target=mean_target,
                                    median_target=median_target, weights=weights)
        if ch is not None:
            sh, th = policy_score(_latency_draws(ch, lat, seed), targets, mean_target=mean_target,
                                  median_target=median_target, weights=weights)
            if sh > score:
                score, terms = sh, th
        return score, terms

    pols = candidates if candidates is not None else policy_candidates(cluster, total, types, lanes=lanes)
    # every candidate's simulations are independent (the same seed): the workers run them, in the candidates' order
    sims = [(pol, c, ch) for pol, (c, ch) in zip(pols, (workers or Workers(1)).map(
        _candidate_contention, [(d, heavy if stress > 0 else None, cluster, total, pol, seed) for pol in pols]))]
    if latency_guess:
        pre = [scored(c, ch, latency_guess)[0] for _, c, ch in sims]
        refit = set(np.argsort(pre, kind="stable")[:max(int(refit_top), 1)].tolist())
    else:
        pre, refit = [None] * len(sims), set(range(len(sims)))
    # the refitted candidates' latency fits are independent too (each on its own contention waits, the same seed)
    todo = sorted(refit)
    fitted = dict(zip(todo, (workers or Workers(1)).map(
        fit_latency, [(sims[i][1], targets) for i in todo],
        kwargs=[dict(mean_target=mean_target, weights=weights, seed=seed, max_sample=search_sample)] * len(todo))))
    for i, (pol, c, ch) in enumerate(sims):
        score, lat, terms = pre[i], None, None
        if i in refit:
            lat = fitted[i]
            score, terms = scored(c, ch, lat)
        row = {"reservation_gpus": int(pol["reservation_gpus"]), "eval_gpus": int(pol.get("eval_gpus") or 0),
               "eval_best_effort": "Eval" in pol["best_effort_types"],
               "others_best_effort": any(t != "Eval" for t in pol["best_effort_types"]), "score": score,
               "latency_fitted": i in refit, "mean_contention_s": {t: float(np.mean(v)) for t, v in c.items()}}
        rows.append(row)
        if log:
            log(f"{cluster}: reservation {row['reservation_gpus']}, eval lane {row['eval_gpus']}, eval best-effort "
                f"{row['eval_best_effort']}, others best-effort {row['others_best_effort']}: score {score:.3f}"
                f"{'' if i in refit else ' (guessed latency)'}")
        if lat is not None:
            # open: every non-pretraining type may use every idle GPU (best effort on the reservation, no lane)
            open_ = (not int(pol.get("eval_gpus") or 0)
                     and set(pol["best_effort_types"]) >= {t for t in c if t != "Pretrain"})
            key = (not (open_ and max(terms.values(), default=0.0) <= 1.0), score)
            if best is None or key < best[0]:
                best = (key, pol, lat, c, terms)
    (_, score), pol, lat, c, terms = best
    lat = fit_latency(c, targets, mean_target=mean_target, weights=weights, seed=seed)
    return {"policy": dict(pol, latency=True), "latency": lat, "search": rows, "score": score,
            "terms": terms, "contention_mean_s": {t: float(np.mean(v)) for t, v in c.items()}}


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
    d["chain_id"] = chain_ids(gpu)
    # placed once: the deconvolved (shorter) runs below still fit, so _run_policy moves nothing more
    d = place_pretrain(d, int(policy["reservation_gpus"]), seed)
    placed = d["submit_s"].to_numpy(float)
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
    out["submit_s"] = placed
    out["queue_s"] = w
    if includes_queue:
        out["run_s"] = run
    return out


# ------------------------------------------------------------------------------------------- fit_latency's residuals
class _PointMisses:
    """The misses ``P(round(L) + C <= x) - target`` at one type's published points (``target``: the
    published shares, fractions) for latency parameters ``p``, as a list in the points' order; the share
    is ``sum_k w_k F_L(y_k)`` over each point's levels ``(y_k, w_k)`` (:func:`fit_latency`: ``y_k`` = the
    values of ``floor(x - C) + 1/2``, ``w_k`` their probabilities).

    Speed only, the same numbers as ``np.dot(w, latency_cdf(y, **p)) - target`` per point:
    :func:`latency_cdf` is element-wise, so one call on the union of the points' levels gives each
    point's values, and the answer is remembered per ``p`` (each step of the least-squares
    finite-difference Jacobian moves the parameters of one type, or of the types sharing a pair, and
    looks the other types' misses up)."""

    def __init__(self, levels, target):
        y = np.concatenate([yk for yk, _w in levels]) if levels else np.zeros(0)
        self.y, inv = np.unique(y, return_inverse=True)
        cuts = np.cumsum([0] + [len(yk) for yk, _w in levels])
        self.parts = [(inv[cuts[i]:cuts[i + 1]], w, float(c))
                      for i, ((_y, w), c) in enumerate(zip(levels, target))]
        self.memo = {}

    def __call__(self, p: dict) -> list:
        key = tuple(p.items())
        out = self.memo.get(key)
        if out is None:
            v = latency_cdf(self.y, **p)
            out = [float(np.dot(w, v[g])) - c for g, w, c in self.parts]
            if len(self.memo) >= 64:
                self.memo.clear()
            self.memo[key] = out
        return out
