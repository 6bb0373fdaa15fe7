"""The named steps of the calibration's pseudo-trace (:func:`acmemodel.calibrate.published_jobs`, whose docstring
states what each reproduces): type counts, GPU counts, the GPU-count × duration joint (:class:`SizeDurationJoint`,
solved by :func:`solve_gpu_time`), infrastructure failures, final states, the hurdle queue, submissions and users,
restart chains, the simulated waits and the CPU jobs. Every step takes the pseudo-trace's generator and draws from
it in a fixed order, so the pseudo-trace is a function of the seed.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import optimize, special, stats

from acmemodel.calibrate_inputs import (
    STATE_RATE_COLUMNS, _arrivals, _copula_base, _copula_second, _gpu_sampler, _inverse_cdf,
    _published_gpu_quantile, _queue_params, _ranks, _solve_states, _stratified, infra_reference,
)
from acmemodel.datasets.published import load_failure_table
from acmemodel.models.failure_types import lognormal_from_median_mean

FAILED_STATES = ["FAILED", "TIMEOUT", "NODE_FAIL"]
#: bounds of the copula's rank correlation and of the size classes' duration-score shifts
RHO_MAX = 0.95
SHIFT_MAX = 4.0


# ------------------------------------------------------------------------------ types and GPU counts
def type_counts(share: np.ndarray, n: int) -> np.ndarray:
    """Jobs per type: ``n`` split by ``share`` (largest remainder)."""
    share = np.asarray(share, float) / np.sum(share)
    counts = np.floor(share * n).astype(int)
    counts[np.argsort(-(share * n - counts))[: n - counts.sum()]] += 1
    return counts


def type_parts(cluster: str, types, counts, curves: pd.DataFrame, scale: float, rng) -> dict:
    """Per type: its job count ``n``, the duration quantile function ``qdur`` (published CDF), the box-plot
    GPU-count sampler ``gpus`` and the seed of its copula draws."""
    return {t: dict(n=int(k), qdur=_inverse_cdf(curves[curves["type"] == t]),
                    gpus=_gpu_sampler(cluster, t, int(round(k / scale))), seed=rng.integers(2**32))
            for t, k in zip(types, counts)}


def assign_gpu_counts(cluster: str, parts: dict, types, rng) -> None:
    """Each type's GPU counts (``parts[t]["g_sorted"]``, ascending): drawn from its box plot, then mapped by
    rank onto the published overall GPU-count CDF (``gpu_count_cdf_by_jobs``), so the cluster-wide
    distribution is the published one while each type keeps its place in the ordering of sizes."""
    box_g = {t: parts[t]["gpus"](_stratified(rng, parts[t]["n"]), rng) for t in types}
    pooled = np.concatenate([box_g[t] for t in types]).astype(float)
    order = np.lexsort((rng.uniform(0, 1, len(pooled)), pooled))
    mapped = np.empty(len(pooled))
    mapped[order] = _published_gpu_quantile(cluster, (np.arange(len(pooled)) + 0.5) / len(pooled))
    start = 0
    for t in types:
        k = parts[t]["n"]
        parts[t]["g_sorted"] = np.sort(mapped[start:start + k]).astype(np.int64)
        start += k


# ------------------------------------------------------------------------------ the size x duration joint
class SizeDurationJoint:
    """The pairing of each type's GPU counts with its durations: a Gaussian copula of rank correlation
    ``rho`` whose duration scores are shifted by ``-small`` for the jobs of at most ``small_max`` GPUs and by
    ``+large`` for the jobs of at least ``large_min`` GPUs (then re-ranked: the type's duration curve is kept,
    only the pairing moves). The draws that do not depend on (rho, shifts) are made once per type, so every
    solver step sees the same jobs; GPU-time sums are remembered per (type, rho, small, large)."""

    def __init__(self, parts: dict, small_max: int | None, large_min: int | None, cut=None):
        self.parts, self.small_max, self.large_min, self.cut = parts, small_max, large_min, cut
        self._base, self._sums, self._grid = {}, {}, {}

    def draw(self, t: str, rho: float, small: float = 0.0, large: float = 0.0):
        """(GPU counts, durations s) of type ``t``'s jobs."""
        p = self.parts[t]
        if t not in self._base:  # (the same generator state for every rho: drawn once)
            b = _copula_base(np.random.default_rng(p["seed"]), p["n"])
            self._base[t] = b, p["g_sorted"][_ranks(stats.norm.cdf(b[0]))]
        b, g = self._base[t]
        fast = self._draw_on_rank_grid(t, b, g, rho, small, large)
        if fast is not None:
            return g, fast
        ud = _copula_second(b, rho)
        use_small = bool(small) and self.small_max is not None
        use_large = bool(large) and self.large_min is not None
        if use_small or use_large:  # size classes' duration scores shifted
            zd = stats.norm.ppf(ud)
            if use_small:
                zd = zd - small * (g <= self.small_max)
            if use_large:
                zd = zd + large * (g >= self.large_min)
            ud = (_ranks(zd) + 1.0) / (len(zd) + 1.0)
        return g, p["qdur"](ud)

    def _draw_on_rank_grid(self, t: str, b, g, rho: float, small: float, large: float):
        """The durations :meth:`draw` computes, from tables on the rank grid: without ties every uniform the draw
        makes is ``(k + 1)/(n + 1)`` for a rank ``k``, so its normal score and its duration are looked up, not
        recomputed (the same floating-point values), and the ranks of the shifted scores come from merging the
        size classes' runs (each in the order of the first ranks) instead of a second full sort. None when the
        scores tie (the general path then ranks them as :func:`acmemodel.calibrate_inputs._ranks` does)."""
        p = self.parts[t]
        n = len(g)
        z1, e = b
        z2 = rho * z1 + np.sqrt(max(1 - rho * rho, 0.0)) * e  # (as _copula_second)
        o = np.argsort(z2)
        if n > 1 and not bool((z2[o][1:] > z2[o][:-1]).all()):
            return None
        grid = self._grid.get(t)
        if grid is None:  # per type: the uniforms of the rank grid, their normal scores and durations
            u = (np.arange(n, dtype=float) + 1.0) / (n + 1)
            grid = self._grid[t] = (u, stats.norm.ppf(u), p["qdur"](u))
        _u, ppf, qd = grid
        r = np.empty(n, dtype=np.intp)
        r[o] = np.arange(n)
        use_small = bool(small) and self.small_max is not None
        use_large = bool(large) and self.large_min is not None
        if not (use_small or use_large):
            return qd[r]
        gr = g[o]  # GPU counts in the order of the first ranks (rank k: job o[k])
        zd = ppf  # (the scores in that order: increasing)
        cls = np.zeros(n, dtype=np.int8)
        if use_small:
            zd = zd - small * (gr <= self.small_max)
            cls[gr <= self.small_max] = 1
        if use_large:
            zd = zd + large * (gr >= self.large_min)
            cls[gr >= self.large_min] = 2
        runs = [np.flatnonzero(cls == c) for c in (0, 1, 2)]
        at = np.concatenate(runs)
        seq = zd[at]
        if any(len(x) > 1 and not bool((zd[x][1:] > zd[x][:-1]).all()) for x in runs):
            return None
        perm = np.argsort(seq, kind="stable")  # (a merge of at most three increasing runs)
        if n > 1 and not bool((seq[perm][1:] > seq[perm][:-1]).all()):
            return None
        second = np.empty(n, dtype=np.intp)
        second[at[perm]] = np.arange(n)  # rank of the shifted score of the job at first rank k
        return qd[second[r]]

    def sums(self, t: str, rho: float, small: float = 0.0, large: float = 0.0) -> tuple[float, float, float]:
        """GPU time (GPU·s) of type ``t``: total, of its small jobs, of its large jobs (with ``cut``, each job's
        expected GPU time once the infrastructure failures cut it short: ``cut(g, d)`` → expected run s)."""
        key = (t, float(rho), float(small), float(large))
        if key not in self._sums:
            g, d = self.draw(t, rho, small, large)
            gd = g * (d if self.cut is None else self.cut(g, d))
            self._sums[key] = (float(gd.sum()),
                               float(gd[g <= self.small_max].sum()) if self.small_max is not None else 0.0,
                               float(gd[g >= self.large_min].sum()) if self.large_min is not None else 0.0)
        return self._sums[key]

    def solve_rho(self, t: str, target: float, small: float = 0.0, large: float = 0.0) -> float:
        """rho in [−0.95, 0.95] giving type ``t`` the GPU time ``target`` (a bound where none does)."""
        def f(r):
            return self.sums(t, r, small, large)[0] - target

        if f(-RHO_MAX) >= 0:
            return -RHO_MAX
        if f(RHO_MAX) <= 0:
            return RHO_MAX
        return float(optimize.brentq(f, -RHO_MAX, RHO_MAX, xtol=1e-3))

    def mixed(self, types, *, large: bool) -> list:
        """The types with jobs on both sides of the small (or large) bound."""
        if large:
            return [t for t in types if 0 < (self.parts[t]["g_sorted"] >= self.large_min).mean() < 1]
        return [t for t in types if 0 < (self.parts[t]["g_sorted"] <= self.small_max).mean() < 1]


def _bounded_root(f, lo: float, hi: float) -> float:
    """Root of increasing ``f`` in [lo, hi], or the end nearer to it."""
    if f(lo) >= 0:
        return lo
    if f(hi) <= 0:
        return hi
    return float(optimize.brentq(f, lo, hi, xtol=1e-3))


def _solve_small(joint, types, rho, small, large, gt_share, total_gt, cap, report) -> None:
    """Small jobs' shift (Assumptions.small_job_gpus): where the jobs of <= small_max GPUs hold more than ``cap``
    GPU·s, each type with small and larger jobs gets the shift that scales its small jobs' GPU time by one
    common factor, rho re-solved so its total stays (in place: ``rho``, ``small``)."""
    now = {t: joint.sums(t, rho[t], 0.0, large[t])[1] for t in types}
    mixed = joint.mixed(types, large=False)
    fixed_small = sum(v for t, v in now.items() if t not in mixed)
    adj = sum(now[t] for t in mixed)
    if sum(now.values()) <= cap or adj <= 0:
        return
    factor = max((cap - fixed_small) / adj, 0.05)
    for t in mixed:
        goal = factor * now[t]
        for _ in range(5):  # alternate: the shift for the small jobs' GPU time, rho for the total
            def fs(s, t=t, goal=goal):  # decreasing in the shift
                return joint.sums(t, rho[t], s, large[t])[1] - goal
            small[t] = SHIFT_MAX if fs(SHIFT_MAX) > 0 else (0.0 if fs(0.0) <= 0 else
                                                             float(optimize.brentq(fs, 0.0, SHIFT_MAX, xtol=1e-3)))
            rho[t] = joint.solve_rho(t, gt_share[t] * total_gt, small[t], large[t])
    report["small_jobs"] = {"max_gpus": joint.small_max, "share_before": sum(now.values()) / total_gt,
                            "share_target": cap / total_gt,
                            "share_after": sum(joint.sums(t, rho[t], small[t], large[t])[1] for t in types) / total_gt,
                            "factor": factor}


def _solve_large(joint, types, rho, small, large, gt_share, total_gt, goal, report) -> None:
    """Large jobs' shift (Assumptions.large_job_gpus): one shift common to the types with jobs on both sides of
    the bound, solved so that the jobs of >= large_min GPUs hold ``goal`` GPU·s, each type's rho re-solved so
    its total stays (in place: ``rho``, ``large``)."""
    mixed = joint.mixed(types, large=True)
    before = sum(joint.sums(t, rho[t], small[t], large[t])[2] for t in types)

    def share(s):
        out = 0.0
        for t in types:
            if t in mixed:
                rho[t] = joint.solve_rho(t, gt_share[t] * total_gt, small[t], s)
                large[t] = s
            out += joint.sums(t, rho[t], small[t], large[t])[2]
        return out - goal

    if mixed:
        share(_bounded_root(share, -SHIFT_MAX, SHIFT_MAX))
    report["large_jobs"] = {"min_gpus": joint.large_min, "share_before": before / total_gt,
                            "share_target": goal / total_gt, "types": mixed,
                            "share_after": sum(joint.sums(t, rho[t], small[t], large[t])[2] for t in types) / total_gt,
                            "shift": float(large[mixed[0]]) if mixed else 0.0}


def solve_gpu_time(joint: SizeDurationJoint, types, gt_share: dict, total_gt: float, *,
                   small_cap: float | None, large_goal: float | None, report: dict):
    """Each type's rho (its GPU time = its published share of the total), then the size classes' shifts
    (small jobs' cap, large jobs' goal, GPU·s), alternated so both hold. Returns (rho, small, large) by type."""
    rho = {t: joint.solve_rho(t, gt_share[t] * total_gt) for t in types}
    small = {t: 0.0 for t in types}
    large = {t: 0.0 for t in types}
    rounds = 3 if (large_goal is not None and small_cap is not None) else 1
    for _ in range(rounds):
        if small_cap is not None:
            _solve_small(joint, types, rho, small, large, gt_share, total_gt, small_cap, report)
        if large_goal is not None:
            _solve_large(joint, types, rho, small, large, gt_share, total_gt, large_goal, report)
    return rho, small, large


def size_duration_pairing(parts: dict, types, gt_share: dict, total_gt: float, a, cluster: str, summ,
                          report: dict, rounds: int = 2):
    """The GPU-count × duration joint of the GPU jobs and the infrastructure process's M_ref: (joint, rho, small,
    large, M_ref or None). With a large-job class (Assumptions.large_job_gpus) the GPU-time targets hold after the
    infrastructure failures have cut the large runs short, in expectation (:func:`expected_infra_cut`): M_ref
    known beforehand (:func:`known_infra_mttf_ref`), or solved in expectation for the failure table's
    Infrastructure share of the failed GPU time (:func:`expected_infra_mttf_ref`) alternately with the joint
    (``rounds`` times). Without one, the targets are on planned runs and M_ref is solved on the drawn jobs."""
    small_max, large_min = a.small_job_gpus.get(cluster), a.large_job_gpus.get(cluster)
    caps = dict(small_cap=None if small_max is None else float(a.small_job_gt_share[cluster]) * total_gt,
                large_goal=None if large_min is None else float(a.large_job_gt_share[cluster]) * total_gt)
    g_ref = infra_reference(a)[1]
    m_ref = known_infra_mttf_ref(a, cluster, report)
    if m_ref is None and large_min is None:
        joint = SizeDurationJoint(parts, small_max, large_min)
        return (joint, *solve_gpu_time(joint, types, gt_share, total_gt, report=report, **caps), None)
    if m_ref is not None:
        joint = SizeDurationJoint(parts, small_max, large_min, cut=expected_infra_cut(a, m_ref, g_ref))
        return (joint, *solve_gpu_time(joint, types, gt_share, total_gt, report=report, **caps), m_ref)
    ft = load_failure_table()
    target = float(ft.loc[ft["category"] == "Infrastructure", "failed_gpu_time_share_percent"].sum() / 100) \
        * float(summ["fail_rate_gpu_time"])
    joint = SizeDurationJoint(parts, small_max, large_min)
    rho, small, large = solve_gpu_time(joint, types, gt_share, total_gt, report=report, **caps)
    for _ in range(rounds):
        gd = [joint.draw(t, rho[t], small[t], large[t]) for t in types]
        m_ref = expected_infra_mttf_ref(a, np.concatenate([x[0] for x in gd]), np.concatenate([x[1] for x in gd]),
                                        target, report)
        joint = SizeDurationJoint(parts, small_max, large_min, cut=expected_infra_cut(a, m_ref, g_ref))
        rho, small, large = solve_gpu_time(joint, types, gt_share, total_gt, report=report, **caps)
    return joint, rho, small, large, m_ref


def draw_jobs(joint: SizeDurationJoint, types, rho, small, large, report: dict, rng) -> pd.DataFrame:
    """The GPU jobs' type, GPU count and planned duration (``dur``, s), in random order."""
    frames = []
    for t in types:
        g, d = joint.draw(t, rho[t], small[t], large[t])
        frames.append(pd.DataFrame({"type": t, "gpu_num": g, "dur": d}))
        report["types"][t] = {"jobs": joint.parts[t]["n"], "rho_gpus_duration": rho[t], "small_job_shift": small[t],
                              "large_job_shift": large[t]}
    jobs = pd.concat(frames, ignore_index=True)
    return jobs.sample(frac=1.0, random_state=int(rng.integers(2**31))).reset_index(drop=True)


# ------------------------------------------------------------------------------ failures and states
def known_infra_mttf_ref(a, cluster: str, report: dict) -> float | None:
    """M_ref (s) of the infrastructure-failure process when it does not depend on the draws (Assumptions.infra_*):
    given (``infra_mttf_ref_s``), or from the published large-job failure rate (``infra_from_rate``:
    :func:`acmemodel.reproduction.compare.published_failure_rate`, ``M(g) = 1000 · 86,400 · 8 / (rate · g)``, i.e.
    ``rate`` failures per 1,000 node-days of 8 GPUs); None when it is solved on the jobs (:func:`solve_infra_mttf_ref`)."""
    if a.infra_mttf_ref_s is not None:
        return float(a.infra_mttf_ref_s)
    if not a.infra_from_rate:
        return None
    from acmemodel.reproduction.compare import published_failure_rate

    rate = published_failure_rate(cluster)["per_1000_node_days"]
    report["infrastructure_rate_per_1000_node_days"] = rate
    return 1000.0 * 86400.0 * 8.0 / (rate * infra_reference(a)[1])


def solve_infra_mttf_ref(unit_fn, target: float, report: dict) -> float:
    """M_ref (s) such that the infrastructure failures carry ``target`` of the GPU time (the failure table's
    Infrastructure share of the published failed GPU time; ``unit_fn(m_ref)`` → (hit, dur, gt)). The share
    rises then falls with M_ref (tiny M: every big job dies at once, cheaply; huge M: no failures): the root on
    the falling branch (the rarer-failure solution)."""
    def f(log_m):
        hit, _, gt = unit_fn(np.exp(log_m))
        return gt[hit].sum() / gt.sum() - target
    grid = np.linspace(np.log(60.0), np.log(1e9), 40)
    vals = np.array([f(x) for x in grid])
    top = int(np.argmax(vals))
    if vals[top] <= 0:
        report.setdefault("notes", []).append(
            "infrastructure failures cannot reach the target share of failed GPU time; "
            "M_ref set where the share is largest")
        return float(np.exp(grid[top]))
    return float(np.exp(optimize.brentq(f, grid[top], grid[-1], xtol=1e-4)))


def expected_infra_cut(a, m_ref: float, g_ref: float):
    """``cut(g, d)``: a job's expected run (s) when it plans ``d`` s and, with >= ``infra_min_gpus`` GPUs, the
    infrastructure process (Weibull, shape k, mean ``M(g) = M_ref (g/g_ref)^(−alpha)``) may end it first:
    ``E[min(d, T)] = λ/k · Γ(1/k) · P(1/k, (d/λ)^k)``, λ = M(g)/Γ(1 + 1/k) (P: regularised lower gamma)."""
    k = float(a.infra_shape)

    def cut(g, d):
        g = np.asarray(g, float)
        d = np.asarray(d, float)
        lam = m_ref * (np.maximum(g, 1.0) / g_ref) ** (-a.infra_alpha) / special.gamma(1.0 + 1.0 / k)
        e = lam / k * special.gamma(1.0 / k) * special.gammainc(1.0 / k, (d / lam) ** k)
        return np.where(g >= a.infra_min_gpus, np.minimum(e, d), d)

    return cut


def expected_infra_mttf_ref(a, g: np.ndarray, d: np.ndarray, target: float, report: dict) -> float:
    """M_ref (s) such that, in expectation over the infrastructure process, its failures carry ``target`` of the
    GPU time of jobs with GPU counts ``g`` and planned runs ``d`` s (:func:`solve_infra_mttf_ref` on expected
    values: a job's failed GPU time ``g (E[min(d, T)] − d S(d))`` of its ``g E[min(d, T)]``)."""
    _, g_ref = infra_reference(a)
    k = float(a.infra_shape)
    g = np.asarray(g, float)
    d = np.asarray(d, float)
    big = g >= a.infra_min_gpus
    unit = (np.maximum(g[big], 1.0) / g_ref) ** (-a.infra_alpha) / special.gamma(1.0 + 1.0 / k)
    rest = float((g[~big] * d[~big]).sum())

    def share(log_m):
        lam = np.exp(log_m) * unit
        x = (d[big] / lam) ** k
        e = lam / k * special.gamma(1.0 / k) * special.gammainc(1.0 / k, x)
        hit = g[big] * np.maximum(e - d[big] * np.exp(-x), 0.0)
        return float(hit.sum() / ((g[big] * e).sum() + rest))

    grid = np.linspace(np.log(60.0), np.log(1e9), 40)
    vals = np.array([share(x) for x in grid]) - target
    top = int(np.argmax(vals))
    if vals[top] <= 0:
        report.setdefault("notes", []).append("infrastructure failures cannot reach the target share of failed GPU "
                                              "time; M_ref set where the share is largest")
        return float(np.exp(grid[top]))
    return float(np.exp(optimize.brentq(lambda x: share(x) - target, grid[top], grid[-1], xtol=1e-4)))


def infrastructure_failures(jobs: pd.DataFrame, a, cluster: str, summ, report: dict, rng, m_ref: float | None = None):
    """Large jobs' infrastructure failures: a Weibull process per job of >= ``infra_min_gpus`` GPUs with mean
    time to failure ``M(g) = M_ref (g / g_ref)^(−alpha)``; a job it hits before its planned end fails there.
    ``m_ref``: M_ref (s) when already chosen (:func:`size_duration_pairing`), else :func:`known_infra_mttf_ref` or
    solved on these jobs (:func:`solve_infra_mttf_ref`). Returns (hit, duration s, GPU time GPU·s) per job."""
    _, g_ref = infra_reference(a)
    g_arr = jobs["gpu_num"].to_numpy(float)
    dur0 = jobs["dur"].to_numpy(float)
    big = g_arr >= a.infra_min_gpus
    unit = (np.maximum(g_arr, 1.0) / g_ref) ** (-a.infra_alpha) * rng.weibull(a.infra_shape, len(jobs)) \
        / special.gamma(1.0 + 1.0 / a.infra_shape)

    def infra(m_ref):
        t_inf = m_ref * unit
        hit = big & (t_inf < dur0)
        d = np.where(hit, t_inf, dur0)
        return hit, d, g_arr * np.maximum(d, 1.0)

    ft = load_failure_table()
    infra_share = float(ft.loc[ft["category"] == "Infrastructure", "failed_gpu_time_share_percent"].sum() / 100)
    if m_ref is None:
        m_ref = known_infra_mttf_ref(a, cluster, report)
    if m_ref is None:
        m_ref = solve_infra_mttf_ref(infra, infra_share * summ["fail_rate_gpu_time"], report)
    hit, dur, gtime = infra(m_ref)
    report["infrastructure"] = {"mttf_ref_s": m_ref, "g_ref": g_ref, "alpha": a.infra_alpha,
                                "shape": a.infra_shape, "failures": int(hit.sum()),
                                "failed_gpu_time_share_target": infra_share * summ["fail_rate_gpu_time"],
                                "failed_gpu_time_share": float(gtime[hit].sum() / gtime.sum())}
    return hit, dur, gtime


def final_states(jobs: pd.DataFrame, hit, dur, gtime, summ, t_off: dict, report: dict, rng) -> None:
    """The other jobs' final states (state logit in standardised log GPU time, solved so the whole table has the
    published state rates by count and GPU time, moved by the fixed-point offsets ``t_off``); sets
    ``jobs["state"]`` and ``jobs["dur"]`` (the infrastructure failures cut short)."""
    n, n_hit = len(jobs), int(hit.sum())
    g_hit, g_tot = float(gtime[hit].sum()), float(gtime.sum())
    rest = ~hit
    lz = np.log(gtime)
    z = (lz - lz[rest].mean()) / lz[rest].std()
    rate = {k: float(summ[col]) + float(t_off.get(k, 0.0)) for k, col in STATE_RATE_COLUMNS.items()}
    targets = {"fail": (rate["fail"] * n - n_hit) / (n - n_hit),
               "cancel": rate["cancel"] * n / (n - n_hit),
               "fail_gt": (rate["fail_gt"] * g_tot - g_hit) / (g_tot - g_hit),
               "cancel_gt": rate["cancel_gt"] * g_tot / (g_tot - g_hit)}
    if t_off:
        report["state_targets"] = {"published": {k: float(summ[c]) for k, c in STATE_RATE_COLUMNS.items()},
                                   "offsets": {k: float(t_off.get(k, 0.0)) for k in STATE_RATE_COLUMNS},
                                   "targets": rate}
    th = _solve_states(z[rest], gtime[rest], gtime[rest], targets)
    ef = np.exp(np.clip(th[0] + th[1] * z, -50, 50))
    ec = np.exp(np.clip(th[2] + th[3] * z, -50, 50))
    pf, pc = ef / (1 + ef + ec), ec / (1 + ef + ec)
    u = rng.uniform(0, 1, n)
    state = np.where(u < pf, "FAILED", np.where(u < pf + pc, "CANCELLED", "COMPLETED")).astype(object)
    v = rng.uniform(0, 1, n)
    state[(state == "FAILED") & (v < 0.01)] = "TIMEOUT"
    state[(state == "FAILED") & (v > 0.995)] = "NODE_FAIL"
    state[hit] = np.where(rng.uniform(0, 1, n_hit) < 0.15, "NODE_FAIL", "FAILED")
    jobs["state"] = state
    jobs["dur"] = dur
    report["state_logit"] = dict(zip(("a_fail", "b_fail", "a_cancel", "b_cancel"), map(float, th)))


def hurdle_queue(jobs: pd.DataFrame, a, cluster: str, summ, includes_queue: bool, report: dict, rng):
    """Waits of the hurdle draw (an atom at <= 1 s + a lognormal matched to the published median and mean; Eval
    waits ``eval_queue_factor`` times longer); where the published duration includes the wait (Kalos) the wait
    is rank-coupled to the total and never exceeds it. Returns (queue s, run s)."""
    n = len(jobs)
    factor = np.where(jobs["type"].to_numpy() == "Eval", a.eval_queue_factor, 1.0)
    atom = a.queue_atom.get(cluster, 0.3)
    mu_q, sg_q = _queue_params(atom, summ["med_que_time_gpu"], summ["avg_que_time_gpu"], factor, rng)
    is_atom = rng.uniform(0, 1, n) < atom
    queue = np.where(is_atom, rng.integers(0, 2, n), np.exp(mu_q + sg_q * rng.standard_normal(n)) * factor)
    dur = jobs["dur"].to_numpy(float)
    if includes_queue:
        zq = stats.rankdata(dur) / (n + 1)
        zq = a.queue_total_rho * stats.norm.ppf(zq) + np.sqrt(1 - a.queue_total_rho ** 2) * rng.standard_normal(n)
        queue = np.sort(queue)[stats.rankdata(zq, method="ordinal").astype(int) - 1]
        queue = np.minimum(queue, dur)
        run = dur - queue
    else:
        run = dur
    report["queue_lognormal"] = {"atom": atom, "mu": mu_q, "sigma": sg_q}
    return queue, run


# ------------------------------------------------------------------------------ submissions, users, chains
def cluster_users(cluster: str, a):
    """(user names, Zipf activity weights) of a cluster."""
    uw = 1.0 / np.arange(1, a.users + 1) ** 1.1
    return np.array([f"u{cluster[0].lower()}{i:04d}" for i in range(a.users)], dtype=object), uw / uw.sum()


def gpu_submissions(jobs: pd.DataFrame, a, cluster: str, t0: float, off: float, rng):
    """Submission times (Eval in bursts of one user) and users of the GPU jobs: (submit s, user)."""
    n = len(jobs)
    sub = np.empty(n)
    is_eval = (jobs["type"] == "Eval").to_numpy()
    sub[is_eval], _ = _arrivals(rng, int(is_eval.sum()), a, a.eval_batch_mean.get(cluster, 1.0), t0, off)
    sub[~is_eval], _ = _arrivals(rng, int((~is_eval).sum()), a, 1.0, t0, off)
    users, uw = cluster_users(cluster, a)
    user = rng.choice(users, size=n, p=uw)
    # a burst belongs to one user: propagate the first job's user along close eval submissions
    order = np.argsort(sub, kind="stable")
    ev_sorted = order[is_eval[order]]
    gaps = np.diff(sub[ev_sorted])
    new_burst = np.r_[True, gaps > 30 * a.burst_gap_s]
    head = ev_sorted[np.maximum.accumulate(np.where(new_burst, np.arange(len(ev_sorted)), 0))]
    user[ev_sorted] = user[head]
    return sub, user


def restart_chains(gpu: pd.DataFrame, a, report: dict, rng) -> pd.DataFrame:
    """Restarts of failed training jobs (same user, type and GPUs; up to three attempts, each with probability
    ``restart_prob``), the next attempt's run and state drawn from a job of the same type; as many jobs of the
    same type outside any chain are dropped, so the type mix stays as published. Chains: ``prev_uid``,
    ``attempt``."""
    next_uid = len(gpu)
    extra, cur = [], gpu[gpu["state"].isin(FAILED_STATES)
                        & ((gpu["type"] == "Pretrain")
                           | (gpu["type"].isin(["SFT", "MLLM"]) & (gpu["gpu_num"] >= 32)))]
    for _ in range(3):
        cur = cur[rng.uniform(0, 1, len(cur)) < a.restart_prob]
        if cur.empty:
            break
        nxt = cur.copy()
        nxt["prev_uid"] = cur["uid"].to_numpy()
        nxt["attempt"] = cur["attempt"].to_numpy() + 1
        nxt["uid"] = next_uid + np.arange(len(nxt), dtype=np.int64)
        next_uid += len(nxt)
        gap = np.exp(np.log(a.restart_gap_median_s) + a.restart_gap_sigma * rng.standard_normal(len(cur)))
        nxt["submit_s"] = (cur["submit_s"] + cur["queue_s"] + cur["run_s"] + gap).to_numpy()
        donors = gpu.loc[gpu["type"].isin(nxt["type"].unique())]
        idx = np.concatenate([rng.choice(np.flatnonzero((donors["type"] == t).to_numpy()), size=int(m))
                              for t, m in nxt["type"].value_counts().sort_index().items()])
        ordered = nxt.sort_values("type", kind="stable")
        ordered["run_s"] = donors["run_s"].to_numpy()[idx]
        ordered["state"] = donors["state"].to_numpy()[idx]
        ordered["queue_s"] = donors["queue_s"].to_numpy()[idx]
        extra.append(ordered)
        cur = ordered[ordered["state"].isin(FAILED_STATES)]
    if not extra:
        return gpu
    added = pd.concat(extra, ignore_index=True)
    in_chain = set(np.concatenate([e.index.to_numpy() for e in extra]).tolist())
    drop = []
    for t, m in added["type"].value_counts().items():
        pool = gpu.index[(gpu["type"] == t).to_numpy() & ~gpu.index.isin(list(in_chain))
                         & ~gpu["state"].isin(FAILED_STATES).to_numpy()]
        drop.append(rng.choice(pool, size=min(int(m), len(pool)), replace=False))
    report["restart_attempts"] = int(len(added))
    return pd.concat([gpu.drop(index=np.concatenate(drop)), added], ignore_index=True)


def simulated_waits(gpu: pd.DataFrame, cluster: str, *, seed: int, includes_queue: bool,
                    queue_calibration: dict | None, a, report: dict, workers=None) -> pd.DataFrame:
    """The GPU jobs' waits from the cluster simulator on the calibrated policy + start-up latency
    (:mod:`acmemodel.calibrate_queue`; the policy chosen on the pseudo-trace itself when none is given and
    ``Assumptions.queue_policy``; ``workers`` simulate its candidates); unchanged (the hurdle draw) otherwise."""
    from acmemodel.calibrate_queue import calibrate_queue_jobs, simulate_pseudo_waits

    if queue_calibration is None and a.queue_policy:
        # reservation sizes and best effort (the evaluation quotas are searched on the synthetic workload)
        queue_calibration = calibrate_queue_jobs(gpu.reset_index(drop=True), cluster, seed=seed, lanes=(),
                                                 workers=workers)
    gpu = gpu.reset_index(drop=True)
    if queue_calibration is None:
        return gpu
    g2 = gpu
    if includes_queue:  # the published total is what the simulated wait is taken from
        g2 = g2.assign(run_s=g2["queue_s"] + g2["run_s"])
    g2 = simulate_pseudo_waits(g2, cluster, queue_calibration["policy"], queue_calibration["latency"],
                               seed=seed, includes_queue=includes_queue)
    gpu["submit_s"] = g2["submit_s"].to_numpy(float)  # pretraining chains placed in the reservation
    gpu["queue_s"] = g2["queue_s"].to_numpy(float)
    gpu["run_s"] = g2["run_s"].to_numpy(float)
    report["policy"] = queue_calibration["policy"]
    report["latency"] = queue_calibration["latency"]
    report["policy_search"] = queue_calibration.get("search")
    report.pop("queue_lognormal", None)
    return gpu


def cpu_jobs(cluster: str, n_cpu: int, a, summ, t0: float, off: float, first_uid: int, rng) -> pd.DataFrame:
    """CPU jobs: lognormal run time from the published median/mean, published state rates; types Other/Debug
    (0.85/0.15, not published: an assumption)."""
    mu_c, sg_c = lognormal_from_median_mean(summ["med_run_time_cpu"], summ["avg_run_time_cpu"], 0.0)
    pcs = np.array([summ["complete_rate_cpu"], summ["cancel_rate_cpu"], summ["fail_rate_cpu"]], float)
    users, uw = cluster_users(cluster, a)
    return pd.DataFrame({
        "type": rng.choice(np.array(["Other", "Debug"], dtype=object), size=n_cpu, p=[0.85, 0.15]),
        "gpu_num": np.zeros(n_cpu, np.int64),
        "state": rng.choice(np.array(["COMPLETED", "CANCELLED", "FAILED"], dtype=object), size=n_cpu,
                            p=pcs / pcs.sum()),
        "user": rng.choice(users, size=n_cpu, p=uw),
        "submit_s": _arrivals(rng, n_cpu, a, 1.0, t0, off)[0],
        "queue_s": np.where(rng.uniform(0, 1, n_cpu) < 0.6, 0.0,
                            np.exp(np.log(max(summ["med_que_time_cpu"], 1.0)) + 1.5 * rng.standard_normal(n_cpu))),
        "run_s": np.exp(mu_c + sg_c * rng.standard_normal(n_cpu)),
        "uid": first_uid + np.arange(n_cpu, dtype=np.int64), "prev_uid": -1, "attempt": 1,
    })
