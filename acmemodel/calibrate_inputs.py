"""Inputs and samplers of the calibration (:mod:`acmemodel.calibrate`): its stated assumptions
(:class:`Assumptions`), the published tables read as inverse CDFs and GPU-count samplers, the arrival-time sampler of the stated assumptions, the Gaussian
copula of GPU count and duration, the state-logit and queue solvers, and the reference point of the
infrastructure-failure process; the pseudo-trace's conversion to the trace contract; the fixed-point
step of the state and type targets (:func:`synthetic_rates`, :func:`fixed_point_offsets`).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy import optimize, stats

from acmemodel.datasets.published import load_failure_table, load_reference
from acmemodel.models.restart import RESUBMIT_PRIOR
from acmemodel.trace import jobs_from_times


# ------------------------------------------------------------------------------ assumptions
@dataclass
class Assumptions:
    """What was not published, stated and overridable (``acmemodel calibrate --set name=value``)."""

    #: length of the pseudo-trace (days from 2023-03-01 local time; the trace covers Mar–Aug 2023)
    days: float = 184.0
    #: relative submission rate per local hour of day (working hours, quiet nights)
    hour_profile: tuple[float, ...] = (
        0.45, 0.35, 0.28, 0.22, 0.2, 0.2, 0.25, 0.35, 0.55, 0.8, 1.0, 1.05,
        0.95, 1.0, 1.1, 1.15, 1.15, 1.1, 1.0, 0.95, 0.95, 0.9, 0.75, 0.6)
    #: weekend rate relative to weekdays
    weekend_factor: float = 0.55
    #: mean evaluation burst size (jobs of one user within seconds after a checkpoint)
    eval_batch_mean: dict[str, float] = field(default_factory=lambda: {"Seren": 8.0, "Kalos": 30.0})
    #: mean gap between jobs of a burst (s)
    burst_gap_s: float = 3.0
    #: share of zero-wait (≤ 1 s) jobs in the queue atom, per cluster (Seren: about half start at once)
    queue_atom: dict[str, float] = field(default_factory=lambda: {"Seren": 0.5, "Kalos": 0.25})
    #: Eval waits this many times longer than other types (paper: evaluation waits longest)
    eval_queue_factor: float = 3.0
    #: Kalos (published duration includes the queue), hurdle-draw queue only (queue_policy=False): rank
    #: correlation of queue and total duration (with queue_policy the wait is independent of the run and
    #: the run-time law is deconvolved, acmemodel.calibrate_queue.deconvolve_run)
    queue_total_rho: float = 0.8
    #: probability that a failed Pretrain job (or SFT/MLLM job of >= 32 GPUs) is resubmitted by its
    #: owner with the same GPUs (default: the restart model's prior for Pretrain,
    #: acmemodel.models.restart.RESUBMIT_PRIOR), and the resubmission gap (lognormal: median s, sigma).
    #: The pseudo-trace carries its chains (restart_of links); the bundle's RestartModel fits the
    #: resubmission probability per cluster x type from them
    restart_prob: float = RESUBMIT_PRIOR["Pretrain"]
    restart_gap_median_s: float = 600.0
    restart_gap_sigma: float = 1.5
    #: infrastructure failures of jobs of >= infra_min_gpus GPUs: Weibull with this shape and a mean time
    #: to failure M(g) = M_ref (g / g_ref)^(-infra_alpha). g_ref (None = the count-weighted GPU demand of
    #: the failure table's Infrastructure reasons with median demand >= 256); M_ref (None = solved so
    #: that infrastructure failures carry the table's Infrastructure share of the published failed GPU
    #: time). alpha = 1: independent per-GPU failures in series (an assumption; nothing published
    #: measures the exponent)
    infra_min_gpus: int = 64
    infra_alpha: float = 1.0
    infra_shape: float = 1.0
    infra_mttf_ref_s: float | None = None  # None: solved (see published_jobs)
    infra_g_ref: float | None = None
    #: M_ref from the published large-job infrastructure failure rate per cluster (failures per 1,000
    #: node-days, acmemodel.reproduction.compare.published_failure_rate; PROVENANCE.md) instead of solving it
    #: for the failure table's Infrastructure share of the failed GPU time
    infra_from_rate: bool = False
    #: number of users per cluster (Zipf-distributed activity)
    users: int = 300
    #: waits from the cluster simulator on the calibrated Acme policy + start-up latency
    #: (acmemodel.calibrate_queue); False: the independent hurdle draw above
    queue_policy: bool = True
    #: calibrate(): choose the policy again (every candidate, evaluation quotas included) on a synthetic
    #: workload of the first fitted bundle, the workload synth and reproduce simulate, then rebuild the
    #: pseudo-trace's waits with that choice and refit (two passes)
    policy_on_synthetic: bool = True
    #: GPU time by job size (published: single-GPU jobs < 2 % of the GPU time in both clusters, jobs of
    #: >= 256 GPUs > 96 % of Kalos's): where the jobs of at most small_job_gpus[cluster] GPUs would hold
    #: more than small_job_gt_share[cluster] of the cluster's GPU time (a value inside the published
    #: bound, with room for sampling noise; an assumption), their durations are shortened within their
    #: type (a second copula parameter; the type's duration curve and GPU time are kept). Kalos is left
    #: out by default: its <= 255-GPU jobs are short already (GPU time by size meets the bound within
    #: 1 pp), and lengthening its large jobs to keep the types' GPU time hands them to the failure
    #: model's infrastructure hazard (failed GPU time 13 -> 24 %)
    small_job_gpus: dict[str, int] = field(default_factory=lambda: {"Seren": 1})
    small_job_gt_share: dict[str, float] = field(default_factory=lambda: {"Seren": 0.015, "Kalos": 0.03})
    #: GPU time by job size, the largest runs: the jobs of at least large_job_gpus[cluster] GPUs hold
    #: large_job_gt_share[cluster] of the cluster's GPU time (published: Seren's GPU-time-weighted size CDF,
    #: jobs of >= 768 GPUs about 30 %, of <= 511 about 64 %; Kalos > 96 % in jobs of >= 256 GPUs). One shift of
    #: those jobs' duration scores, common to the types with jobs on both sides of the bound, solved with each
    #: type's rho re-solved (its duration curve and GPU time kept): the pairing of size and duration moves, so
    #: the few largest runs are the long ones. Without it one rho per type spreads the long runs over all
    #: sizes (Seren: 17.6 % of the GPU time in >= 768-GPU jobs, Kalos 94.5 % in >= 256)
    #: (off by default: with {"Seren": 768, "Kalos": 256} / {"Seren": 0.28, "Kalos": 0.97} the pseudo-trace meets
    #: both, but the regenerated default's reproduce put Seren at 72.7 % / 16.7 % and missed Kalos's queue figures
    #: and both clusters' GPU-time state shares; see docs/calibration.md)
    large_job_gpus: dict[str, int] = field(default_factory=dict)
    large_job_gt_share: dict[str, float] = field(default_factory=dict)
    #: the runtime model's partial pooling (``RuntimeModel(pooling=)``, recorded in the estimators): "heldout"
    #: shrinks each cell's law towards its parent's by n / (n + k), k chosen on held-out jobs (300 in the
    #: default); "none" keeps every fitted cell's own law (cells under min_jobs still back off). Pooling
    #: mixes each state's run-time law of the large pretraining cells with the cell's, so synthesis moves
    #: GPU time from CANCELLED to COMPLETED runs: the shipped default misses both clusters' GPU-time state
    #: shares by 5-7 pp. With "none" (reproduce, seeds 0/1/2) those four shares and Kalos's Debug/Other
    #: duration curves pass, and Kalos's >= 256-GPU share falls to 94.9-95.5 % (published > 96 %; its Pretrain
    #: share, published 95.5 %, comes to 95.7-96.3 %): six checks gained for one lost by about 1 pp, so the
    #: default (docs/calibration.md, "Run-time pooling"). The pseudo-trace's cells are large (scale 0.1 of
    #: AcmeTrace): pooling, which serves sparse cells of a real log, only blurred the states' laws here.
    runtime_pooling: str = "none"
    #: calibrate()'s fixed-point iteration (passes after the second): the targets of the pseudo-trace's state logit and of the
    #: types' GPU-time shares are the published values plus fixed_point_step × (published − synthetic), the
    #: synthetic values measured on fixed_point_traces[cluster] traces of the second-pass bundle drawn as
    #: reproduce draws them (0 traces: no third pass). Fitting the pseudo-trace and drawing from the fit does
    #: not return its GPU time by state (a few long large-job runs hold it; acmemodel.joblife), and the
    #: synthetic shares move about twice as far as the targets (measured on the default bundle: Kalos failed
    #: GPU time +6.5 pp for a +2.2 pp target, cancelled −8.1 for −3.7; Seren cancelled +4.2 for +2.2), hence a
    #: half step. Kalos gets more traces (each is cheap): its GPU-time state shares vary by an sd of 2.6–3.7 pp between traces
    fixed_point_traces: dict[str, int] = field(default_factory=lambda: {"Seren": 6, "Kalos": 32})
    fixed_point_step: float = 0.5
    #: fixed-point iterations (each: add fixed_point_step × (published − synthetic) to the offsets, rebuild the
    #: pseudo-trace, refit, measure); every measured candidate (the second-pass bundle and one per iteration)
    #: is scored against the published values and the nearest is kept: the synthetic shares respond to the
    #: targets through a few large jobs' states (a +0.8 pp Kalos cancelled target moved the synthetic share
    #: by +9 pp), so the iteration need not settle. One iteration (two candidates): the shipped calibration with
    #: two (2023, scale 1) scored its candidates 52.3 / 15.8 / 25.6 and kept the second; the half step after it
    #: moves the targets by about the noise of the measurement (Kalos: an sd of 2.6–3.7 pp per trace, 0.5–0.7 pp
    #: over 32 traces, against the score's 2 pp bar), so a further candidate costs a pass (a pseudo-trace, a fit
    #: and 38 synthetic traces) for no expected gain, and candidates 0 and 1 are the same either way
    fixed_point_iterations: int = 1


# ------------------------------------------------------------------------------ published inputs
def _summary(cluster: str) -> pd.Series:
    s = load_reference("cluster_summary").set_index("id")
    return s.loc[cluster]


def _inverse_cdf(curve: pd.DataFrame):
    """Quantile function of a published CDF (x in s, cdf in percent), log-linear between points.

    Below the first point: uniform on [0, x0]; above the last: log-linear extrapolation by half an
    octave.
    """
    x = np.log2(curve["x_s"].to_numpy(float))
    p = np.maximum.accumulate(np.clip(curve["cdf_percent"].to_numpy(float) / 100.0, 0, 1))
    keep = np.r_[True, np.diff(p) > 0]
    x, p = x[keep], p[keep]
    if p[-1] < 1.0:
        x, p = np.r_[x, x[-1] + 0.5], np.r_[p, 1.0]

    def q(u):
        u = np.asarray(u, float)
        out = 2.0 ** np.interp(u, p, x)
        low = u < p[0]
        out[low] = (u[low] / p[0]) * 2.0 ** x[0]
        return out

    return q


def _stratified(rng, n: int) -> np.ndarray:
    """n stratified uniforms in random order: (perm(i) + U_i) / n."""
    return (rng.permutation(n) + rng.uniform(0, 1, n)) / n


def _gpu_sampler(cluster: str, typ: str, n_type: int):
    box = load_reference("gpu_count_box_by_type").set_index(["cluster", "type"])
    out = load_reference("gpu_count_outliers_by_type")
    b = box.loc[(cluster, typ)]
    q = np.log2(b[["whisker_low", "q1", "median", "q3", "whisker_high"]].to_numpy(float))
    o = out[(out["cluster"] == cluster) & (out["type"] == typ)]
    vals = o["gpu_num"].to_numpy(int)
    p_out = o["outlier_markers"].to_numpy(float) / max(n_type, 1)
    if p_out.sum() > 0.5:  # markers are a lower bound; never let them dominate the box
        p_out *= 0.5 / p_out.sum()

    def sample(u: np.ndarray, rng) -> np.ndarray:
        """GPU counts at uniforms u (monotone in u within the box part)."""
        g = 2.0 ** np.round(np.interp(u, [0, .25, .5, .75, 1], q))
        if len(vals):
            pick = rng.uniform(0, 1, len(u))
            cum = np.cumsum(p_out)
            k = np.searchsorted(cum, pick, side="right")
            is_out = k < len(vals)
            g[is_out] = vals[k[is_out]]
        return g.astype(np.int64)

    return sample


def _published_gpu_quantile(cluster: str, v: np.ndarray) -> np.ndarray:
    """Quantile function of the published GPU-count CDF by jobs, read stepwise.

    The curve is published as vertices only: between vertices x_{i-1} < x_i the CDF jumps somewhere in
    (x_{i-1}, x_i]. The jump is placed at the largest power of two in that interval, else the largest
    multiple of 8 (whole nodes), else x_i; the quantile of v is the jump value of the first vertex
    whose CDF reaches v.
    """
    cdf = load_reference("gpu_count_cdf_by_jobs").query("cluster == @cluster")
    x = cdf["x_gpus"].to_numpy(float)
    p = np.maximum.accumulate(cdf["cdf_percent"].to_numpy(float) / 100.0)
    p[-1] = 1.0
    jump = x.copy()
    for i in range(1, len(x)):
        lo, hi = int(x[i - 1]), int(x[i])
        cands = range(hi, lo, -1)
        pow2 = [c for c in cands if c & (c - 1) == 0]
        mult8 = [c for c in cands if c % 8 == 0]
        jump[i] = pow2[0] if pow2 else (mult8[0] if mult8 else hi)
    return jump[np.minimum(np.searchsorted(p, v, side="left"), len(x) - 1)]


def infra_reference(a) -> tuple[float, float]:
    """(M_ref seconds, g_ref GPUs) of the infrastructure-failure assumption (see :class:`Assumptions`)."""
    ft = load_failure_table()
    big = ft[(ft["category"] == "Infrastructure") & (ft["gpu_demand_median"] >= 256)]
    w = big["num"].to_numpy(float)
    m = float((w * big["time_to_failure_avg_min"]).sum() / w.sum() * 60.0)
    g = float((w * big["gpu_demand_avg"]).sum() / w.sum())
    return (a.infra_mttf_ref_s or m), (a.infra_g_ref or g)


# ------------------------------------------------------------------------------ building blocks
def _arrivals(rng, n: int, a, batch_mean: float, t0: float, off: float):
    """Submission times (UTC s) of n jobs in bursts of mean ``batch_mean`` (1 = no bursts)."""
    days = int(np.ceil(a.days))
    t0_local = t0 + off
    dow0 = int((np.floor(t0_local / 86400) + 3) % 7)
    day_w = np.array([a.weekend_factor if (dow0 + d) % 7 >= 5 else 1.0 for d in range(days)])
    prof = np.asarray(a.hour_profile, float)
    if len(prof) != 24 or (prof < 0).any():
        raise ValueError("hour_profile must be 24 non-negative weights")
    w = (day_w[:, None] * prof[None, :]).ravel()
    if batch_mean > 1:
        sizes = rng.geometric(1.0 / batch_mean, size=int(n / batch_mean * 1.2) + 10)
        cs = np.cumsum(sizes)
        k = int(np.searchsorted(cs, n)) + 1
        sizes = sizes[:k]
        sizes[-1] -= cs[k - 1] - n
        sizes = sizes[sizes > 0]
    else:
        sizes = np.ones(n, dtype=np.int64)
    slot = rng.choice(len(w), size=len(sizes), p=w / w.sum())
    start = t0 + slot * 3600.0 + rng.uniform(0, 3600, len(sizes))
    within = rng.exponential(a.burst_gap_s, n)
    first = np.cumsum(sizes) - sizes  # index of each burst's first job (empty when n = 0)
    within[first] = 0.0
    batch = np.repeat(np.arange(len(sizes)), sizes)
    offs = np.cumsum(within)
    offs -= np.repeat(offs[first], sizes)
    return np.repeat(start, sizes) + offs, batch


def _ranks(x: np.ndarray, *, average: bool = False) -> np.ndarray:
    """0-based ranks of ``x``, tied values in order of position: ``argsort(argsort(x, stable), stable)``, the
    inverse of the stable sorting permutation. With ``average``, ``scipy.stats.rankdata(x) - 1`` (ties share
    their mean rank). Speed only: without ties (the continuous draws here) any sort gives that permutation, so
    the fast one is used and the stable one (or rankdata) only where ties or NaN show."""
    x = np.asarray(x)
    o = np.argsort(x)
    xs = x[o]
    if len(xs) > 1 and not bool((xs[1:] > xs[:-1]).all()):
        if average:
            return stats.rankdata(x) - 1.0
        o = np.argsort(x, kind="stable")
    r = np.empty(len(o), dtype=o.dtype)
    r[o] = np.arange(len(o), dtype=o.dtype)
    return r.astype(float) if average else r


def _copula_base(rng, n: int) -> tuple[np.ndarray, np.ndarray]:
    """The draws of a Gaussian-copula pair of uniforms (stratified margins) that do not depend on rho: the stratified normal scores z1 and
    the independent standard normals e (``z2 = rho z1 + sqrt(1 - rho²) e``)."""
    return stats.norm.ppf(_stratified(rng, n)), rng.standard_normal(n)


def _copula_second(base, rho: float) -> np.ndarray:
    """The second uniform of the copula pair from its rho-free draws ``base = (z1, e)``
    (:func:`_copula_base`): the ranks of ``z2 = rho z1 + sqrt(1 - rho²) e`` over ``n + 1``; a solver trying
    several rho on one seed draws ``base`` once."""
    z1, e = base
    z2 = rho * z1 + np.sqrt(max(1 - rho * rho, 0.0)) * e
    return (_ranks(z2, average=True) + 1.0) / (len(z2) + 1)


def _solve_states(z: np.ndarray, gt: np.ndarray, gt_fail: np.ndarray, targets: dict[str, float]) -> np.ndarray:
    """(a_f, b_f, a_c, b_c) of the state logit matching the count and GPU-time rates in expectation.

    ``gt`` is each job's GPU time if it does not fail, ``gt_fail`` if it fails (a failure may cut
    the run short), so the expected GPU-time rates are
    ``Σ p_f gt_fail / Σ (p_f gt_fail + (1 − p_f) gt)`` and likewise for cancellations.
    """
    def probs(th):
        ef = np.exp(np.clip(th[0] + th[1] * z, -50, 50))
        ec = np.exp(np.clip(th[2] + th[3] * z, -50, 50))
        d = 1 + ef + ec
        return ef / d, ec / d

    def res(th):
        pf, pc = probs(th)
        tot = (pf * gt_fail + (1 - pf) * gt).sum()
        return [pf.mean() - targets["fail"], pc.mean() - targets["cancel"],
                (pf * gt_fail).sum() / tot - targets["fail_gt"], (pc * gt).sum() / tot - targets["cancel_gt"]]

    # bounded slopes: where the four targets cannot all be met, a best compromise rather than a
    # step function of job size
    sol = optimize.least_squares(res, x0=[0.0, 0.0, -2.0, 0.5], bounds=([-10, -3, -10, -3], [10, 3, 10, 3]))
    return sol.x


def _queue_params(atom: float, median: float, mean: float, factor: np.ndarray, rng) -> tuple[float, float]:
    """(mu, sigma) of the lognormal part so the hurdle mixture has the published median and mean."""
    u = _stratified(rng, len(factor))
    zz = stats.norm.ppf(np.clip((u - atom) / (1 - atom), 1e-9, 1 - 1e-9))
    is_atom = u < atom

    def q(th):
        mu, ls = th
        x = np.exp(mu + np.exp(ls) * zz) * factor
        return np.where(is_atom, 0.0, x)

    def res(th):
        x = q(th)
        return [np.log1p(np.median(x)) - np.log1p(median), np.log(x.mean()) - np.log(mean)]

    sol = optimize.least_squares(res, x0=[np.log(max(mean, 2.0)) - 2, np.log(2.0)])
    return float(sol.x[0]), float(np.exp(sol.x[1]))


# ------------------------------------------------------------------------------ pseudo-trace


def _to_contract(df: pd.DataFrame, cluster: str, rng) -> pd.DataFrame:
    """Whole-second timestamps and every column of the trace contract."""

    df = df.sort_values("submit_s", kind="stable").reset_index(drop=True)
    n = len(df)
    sub = np.floor(df["submit_s"].to_numpy(float))
    start = sub + np.round(df["queue_s"].to_numpy(float))
    end = start + np.round(df["run_s"].to_numpy(float))
    gpu = df["gpu_num"].to_numpy(np.int64)
    failed = df["state"].isin(["FAILED", "TIMEOUT", "NODE_FAIL"]).to_numpy()
    job_id = np.array([f"{cluster[0].lower()}{i:07d}" for i in range(n)], dtype=object)
    out = jobs_from_times(
        cluster=cluster, job_id=job_id,
        user=df["user"].to_numpy(object), type=df["type"].to_numpy(object), state=df["state"].to_numpy(object),
        gpu_num=gpu, submit_s=sub, start_s=start, end_s=end,
        # (assumed: 16 CPUs per GPU, 8 for a CPU job; Kalos files give fail_time for failed jobs)
        cpu_num=np.where(gpu > 0, 16.0 * np.maximum(gpu, 1), 8.0),
        fail_time_s=np.where(failed & (cluster == "Kalos"), end - start, np.nan),
        source_file=f"<calibration:{cluster}>")
    if "uid" not in df.columns:
        return out
    # the restart chain as data: the previous attempt's job id per row ("" = first attempt), kept
    # beside the contract columns (published_trace puts it in Trace.extras as ``restart_of``)
    pos = pd.Index(df["uid"].to_numpy()).get_indexer(df["prev_uid"].to_numpy())
    out.attrs["restart_of"] = np.where(pos >= 0, job_id[np.maximum(pos, 0)], "").astype(object)
    return out


# ------------------------------------------------------------------------------ fixed point of the targets
#: the published state rates the pseudo-trace's state logit targets (cluster_summary.csv columns), by the
#: name of the logit's target (``_solve_states``)
STATE_RATE_COLUMNS = {"fail": "fail_rate_gpu", "cancel": "cancel_rate_gpu",
                      "fail_gt": "fail_rate_gpu_time", "cancel_gt": "cancel_rate_gpu_time"}
#: prefix of a type's GPU-time share target (``gt_share:Pretrain``: workload_mix.csv ``gpu_time_percent``)
TYPE_SHARE = "gt_share:"
#: largest correction (fraction of 1) of a published rate or share by the fixed-point step
TARGET_OFFSET_MAX = 0.10


def synthetic_rates(frames, *, queue_in_duration: bool = False) -> dict[str, float]:
    """The calibration targets measured on synthetic traces (``simulate_jobs`` frames of one cluster,
    pooled), fractions of 1: over the GPU jobs with a run, the FAILED (TIMEOUT and NODE_FAIL counted as
    failed) and CANCELLED shares of jobs (``fail``, ``cancel``) and of GPU time (``fail_gt``,
    ``cancel_gt``), and each type's share of GPU time (``gt_share:<type>``) — GPU time ``gpu_num ×
    run_s``, or with ``queue_in_duration`` ``gpu_num × (run_s + queue_s)`` (published Kalos GPU time is
    end − submit) — plus ``jobs`` and ``traces``."""
    g = pd.concat(list(frames), ignore_index=True)
    run = g["run_s"].to_numpy(float)
    g = g[(g["gpu_num"].to_numpy() > 0) & np.isfinite(run)]
    st = g["state"].astype(str).to_numpy()
    failed = np.isin(st, ["FAILED", "TIMEOUT", "NODE_FAIL"])
    cancelled = st == "CANCELLED"
    dur = g["run_s"].to_numpy(float) + (g["queue_s"].to_numpy(float) if queue_in_duration else 0.0)
    w = g["gpu_num"].to_numpy(float) * dur
    tot = max(float(w.sum()), 1e-300)
    out = {"fail": float(failed.mean()), "cancel": float(cancelled.mean()),
           "fail_gt": float(w[failed].sum() / tot), "cancel_gt": float(w[cancelled].sum() / tot)}
    by_type = pd.Series(w).groupby(g["type"].astype(str).to_numpy()).sum() / tot
    out.update({f"{TYPE_SHARE}{t}": float(v) for t, v in by_type.items()})
    out.update({"jobs": int(len(g)), "traces": len(frames)})
    return out


def fixed_point_offsets(cluster: str, synthetic: dict[str, float], step: float = 1.0) -> dict[str, float]:
    """One fixed-point step of the pseudo-trace's targets: ``step × (published − synthetic)`` for the state rates
    (:data:`STATE_RATE_COLUMNS`) and each type's GPU-time share (``gt_share:<type>``; a type absent from
    the synthetic traces counts as 0), clipped to ±:data:`TARGET_OFFSET_MAX`. Added to the published
    values, the next pass's targets move the bundle's synthetic figures towards the published ones where
    fitting the pseudo-trace and drawing from the fit does not return them (the generative model is not
    a fixed point of fit → synth where large jobs fail, :mod:`acmemodel.joblife`; run time capped per
    cell and scaled by GPU count)."""
    summ = _summary(cluster)
    mix = load_reference("workload_mix").query("cluster == @cluster")
    pub = {k: float(summ[col]) for k, col in STATE_RATE_COLUMNS.items()}
    pub.update({f"{TYPE_SHARE}{t}": float(v) / 100.0 for t, v in zip(mix["type"], mix["gpu_time_percent"])})
    return {k: float(np.clip(step * (v - synthetic.get(k, 0.0)), -TARGET_OFFSET_MAX, TARGET_OFFSET_MAX))
            for k, v in pub.items()}


# ------------------------------------------------------------------------------ worker processes
def default_workers() -> int:
    """Worker processes of the calibration by default: the CPUs this process may use, at most 2 (each worker
    holds one full-volume synthetic trace or simulated workload, ~1 GB at scale 1)."""
    import os

    try:
        n = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        n = os.cpu_count() or 1
    return max(1, min(int(n), 2))


def _task(fn, args, kwargs=None):
    """``fn(*args, **kwargs)`` with its warnings recorded (re-issued by :meth:`Workers.map` in the tasks' order)."""
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        value = fn(*args, **(kwargs or {}))
    return value, [(str(w.message), w.category) for w in caught]


class Workers:
    """An ordered map of a module-level function over argument tuples, in ``n`` worker processes (``spawn``:
    each starts clean, nothing of this process's state is shared) or, with ``n`` <= 1, here.

    Deterministic whatever ``n``: every task draws from its own seed (part of its arguments), the results
    come back in the tasks' order and the caller merges them in that order; a task's warnings are re-issued
    here in that order too. The pool is started at the first parallel map and kept until :meth:`close`
    (``with Workers(n) as w: ...``)."""

    def __init__(self, n: int | None = None):
        self.n = default_workers() if n is None else max(int(n), 1)
        self._pool = None

    def map(self, fn, tasks, kwargs=None) -> list:
        """``[fn(*t, **k) for t, k in zip(tasks, kwargs)]``, in parallel when there are workers and more than one
        task (``kwargs``: one dict per task, default none)."""
        import warnings

        tasks = [tuple(t) for t in tasks]
        kwargs = list(kwargs) if kwargs is not None else [{}] * len(tasks)
        if self.n <= 1 or len(tasks) <= 1:
            done = [_task(fn, t, k) for t, k in zip(tasks, kwargs)]
        else:
            if self._pool is None:
                import multiprocessing
                from concurrent.futures import ProcessPoolExecutor

                self._pool = ProcessPoolExecutor(self.n, mp_context=multiprocessing.get_context("spawn"))
            done = list(self._pool.map(_task, [fn] * len(tasks), tasks, kwargs))
        out = []
        for value, caught in done:
            for message, category in caught:
                warnings.warn(message, category, stacklevel=2)
            out.append(value)
        return out

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown()
            self._pool = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False
