"""The comparison half of ``acmemodel reproduce``: a synthetic trace against the published AcmeTrace numbers.

What is compared and how (shares, state rates, summary, per-type queue, GPU time by size, the KS
distance at the published CDF points) is described in :mod:`acmemodel.reproduction.run`, which synthesises
the traces and calls :func:`_compare_cluster` per cluster. Here: the quality bar (:data:`QUALITY_BAR`),
the published curves (:func:`curve_points`), the KS distance at points (:func:`ks_at_points`), the
known reasons a number misses the bar (:func:`_explanations`) and one cluster's comparison tables.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from acmemodel.clusters import published_duration_includes_queue
from acmemodel.datasets.published import load_reference
from acmemodel.trace.schema import STATE_MAP

__all__ = ["ks_at_points", "curve_points", "queue_by_type", "gpu_time_by_size", "published_failure_rate",
           "failure_rate_check", "PooledJobs",
           "CLUSTERS", "QUALITY_BAR", "WAIT_POINTS", "KS95"]

#: clusters reproduced
CLUSTERS: tuple[str, ...] = ("Seren", "Kalos")
#: the issue's quality bar: KS distance and share difference in percentage points; queue fractions in pp and
#: medians/means as a relative difference
QUALITY_BAR = {"ks": 0.05, "share_pp": 2.0, "queue_pp": 5.0, "queue_rel": 0.5}
#: wait thresholds (s) of the per-type queue table
WAIT_POINTS: tuple[float, ...] = (1.0, 10.0, 100.0, 1000.0)
#: 95 % asymptotic Kolmogorov critical value coefficient (ks_crit95 = KS95 / sqrt(n))
KS95 = 1.3581

_STATES = ("COMPLETED", "CANCELLED", "FAILED")
_STATE_COLS = {"COMPLETED": "complete", "CANCELLED": "cancel", "FAILED": "fail"}

SEREN_SOURCES_NOTE = (
    "the Seren figure curves (per-type duration CDFs, GPU-count CDF, workload mix) and cluster_summary.csv were "
    "drawn from slightly different extracts of the trace (figures: median duration ~134 s, ~6.4 GPUs/job; "
    "summary: 122 s, 5.68): the calibration targets the figures for shapes and the summary for counts and "
    "state rates, so ~10% disagreement with the other source is the floor (reference/README.md)")
KALOS_QUEUE_NOTE = (
    "model limitation, not a source contradiction: a 17 s median wait on a lightly loaded cluster is most likely "
    "scheduling/start-up latency (Kubernetes pod creation), which a contention simulator does not model; below "
    "full scale the waits are also too short because the cluster size is not scaled")

KALOS_DURATION_NOTE = (
    "model limitation, not a source contradiction: the published Kalos durations include the wait (end - submit; "
    "median wait 17 s). The calibration fitted the run time as published total minus a wait coupled to it; here "
    "the wait is the simulator's (about 0 on a lightly loaded cluster) or, with --queue model, an independent "
    "draw, so queue + run does not rebuild the published total")




# ----------------------------------------------------------------------------------------- KS
def ks_at_points(sample, x, cdf) -> tuple[float, float]:
    """KS distance between a sample and a CDF known at points: ``max_i |F_n(x_i) − cdf_i|``.

    ``x`` are the published abscissae, ``cdf`` the published CDF there (fractions in [0, 1]);
    ``F_n(x)`` is the fraction of ``sample`` ≤ x. Returns ``(ks, x at the maximum)``; NaN for an
    empty sample.
    """
    s = np.sort(np.asarray(sample, dtype=float))
    x = np.asarray(x, dtype=float)
    cdf = np.asarray(cdf, dtype=float)
    if len(s) == 0 or len(x) == 0:
        return float("nan"), float("nan")
    f = np.searchsorted(s, x, side="right") / len(s)
    d = np.abs(f - cdf)
    i = int(np.argmax(d))
    return float(d[i]), float(x[i])


def curve_points() -> list[dict]:
    """Every published CDF of the two clusters: ``name, kind, cluster, type, x, cdf`` (fractions)."""
    out = []
    dur = load_reference("duration_cdf_by_type")
    for (cl, ty), g in dur[dur["cluster"].isin(CLUSTERS)].groupby(["cluster", "type"], sort=False):
        out.append({"name": f"duration/{cl}/{ty}", "kind": "duration_cdf_by_type", "cluster": cl, "type": ty,
                    "x": g["x_s"].to_numpy(float), "cdf": g["cdf_percent"].to_numpy(float) / 100})
    tot = load_reference("gpu_job_duration_cdf_by_cluster")
    for cl, g in tot[tot["cluster"].isin(CLUSTERS)].groupby("cluster", sort=False):
        out.append({"name": f"duration/{cl}", "kind": "gpu_job_duration_cdf_by_cluster", "cluster": cl,
                    "type": None, "x": g["x_s"].to_numpy(float), "cdf": g["cdf_percent"].to_numpy(float) / 100})
    gc = load_reference("gpu_count_cdf_by_jobs")
    for cl, g in gc[gc["cluster"].isin(CLUSTERS)].groupby("cluster", sort=False):
        out.append({"name": f"gpu_count/{cl}", "kind": "gpu_count_cdf_by_jobs", "cluster": cl, "type": None,
                    "x": g["x_gpus"].to_numpy(float), "cdf": g["cdf_percent"].to_numpy(float) / 100})
    return out



def _duration(jobs: pd.DataFrame, includes_queue: bool) -> np.ndarray:
    """The published ``duration`` column of each GPU job: ``end − submit`` (Kalos) or ``end − start``
    (Seren; 0 for a job that never started, as the synthetic files write it)."""
    if includes_queue:
        return (jobs["end_s"] - jobs["submit_s"]).to_numpy(float)
    return np.nan_to_num(jobs["run_s"].to_numpy(float), nan=0.0)


# ----------------------------------------------------------------------------------------- comparison
def _pp(x) -> float | None:
    return None if x is None or not math.isfinite(float(x)) else 100.0 * float(x)


def _diff(a, b) -> float | None:
    return None if a is None or b is None else b - a


def _explanations(bundle, cluster: str) -> dict:
    """Known contradictions / unreachable targets of the published sources, keyed by comparison."""
    cal = bundle.calibration(cluster)
    out: dict = {}
    for ty, rep in (cal.get("types") or {}).items():
        rho = rep.get("rho_gpus_duration")
        if rho is not None and abs(float(rho)) >= 0.95 - 1e-9 and ty != "Pretrain":
            out[("gpu_time_share", ty)] = (
                f"calibration limit: with the published {cluster} {ty} GPU-count box plot and duration CDF the "
                f"calibration could not reach the published share of its GPU-time total (GPU-count/duration rank "
                f"correlation stopped at its bound, {float(rho):+.2f}); the total is anchored on Pretrain, see the "
                f"bundle's calibration report")
    if cluster == "Seren":
        out["summary"] = SEREN_SOURCES_NOTE
    if cluster == "Kalos" and not (cal.get("policy") or {}).get("latency"):
        out["queue"] = KALOS_QUEUE_NOTE
        out["kalos_duration"] = KALOS_DURATION_NOTE
    return out


def queue_by_type(cluster: str, jobs: pd.DataFrame) -> tuple[list[dict], list[dict]]:
    """Per-type queue rows and the ordering/cluster checks (module docstring) of one cluster's synthetic
    jobs (``simulate_jobs`` columns; GPU jobs that started)."""
    g = jobs[(jobs["gpu_num"] > 0) & np.isfinite(jobs["start_s"].to_numpy(float))]
    return _queue_rows(cluster, g["queue_s"].to_numpy(float), g["type"].astype(str).to_numpy())


def _queue_rows(cluster: str, w_all: np.ndarray, types: np.ndarray) -> tuple[list[dict], list[dict]]:
    """:func:`queue_by_type` of the waits ``w_all`` (s) of the started GPU jobs and their ``types``."""
    bar_pp, bar_rel = QUALITY_BAR["queue_pp"], QUALITY_BAR["queue_rel"]
    pub = load_reference("queue_wait_by_type").query("cluster == @cluster")
    summ = load_reference("cluster_summary").set_index("id").loc[cluster]
    rows = []
    order = [t for t in load_reference("workload_mix").query("cluster == @cluster")["type"]]
    for ty in order:
        w = w_all[types == ty]
        pts = sorted(set(WAIT_POINTS) | set(pub.loc[pub["type"] == ty, "x_s"].astype(float)))
        for x in pts:
            p = pub[(pub["type"] == ty) & (pub["x_s"].astype(float) == x)]
            pv = float(p["cdf_percent"].iloc[0]) if len(p) else None
            rep = 100.0 * float(np.mean(w <= x)) if len(w) else None
            d = _diff(pv, rep)
            rows.append({"type": ty, "statistic": f"<= {x:g} s (%)", "x_s": x, "published": pv, "reproduced": rep,
                         "diff": d, "within_bar": None if d is None else abs(d) <= bar_pp, "n": int(len(w))})
        for stat, f in (("median_s", np.median), ("mean_s", np.mean)):
            rows.append({"type": ty, "statistic": stat, "x_s": None, "published": None,
                         "reproduced": float(f(w)) if len(w) else None, "diff": None, "within_bar": None,
                         "n": int(len(w))})
    checks = []
    by = {ty: w_all[types == ty] for ty in order if np.any(types == ty)}
    if "Eval" in by and len(by) > 1:
        f1 = {ty: float(np.mean(w <= 1.0)) for ty, w in by.items()}
        mean = {ty: float(np.mean(w)) for ty, w in by.items()}
        checks.append({"check": "Eval has the lowest <= 1 s share",
                       "value": f"Eval {100 * f1['Eval']:.1f}% vs min other "
                                f"{100 * min(v for k, v in f1.items() if k != 'Eval'):.1f}%",
                       "passed": bool(f1["Eval"] <= min(f1.values()))})
        checks.append({"check": "Eval has the largest mean wait",
                       "value": f"Eval {mean['Eval']:,.0f} s vs max other "
                                f"{max(v for k, v in mean.items() if k != 'Eval'):,.0f} s",
                       "passed": bool(mean["Eval"] >= max(mean.values()))})
    for name, col, f in (("median wait", "med_que_time_gpu", np.median), ("mean wait", "avg_que_time_gpu", np.mean)):
        pv, rep = float(summ[col]), float(f(w_all)) if len(w_all) else float("nan")
        rel = abs(rep - pv) / pv if pv else None
        checks.append({"check": f"cluster {name} within {100 * bar_rel:.0f}% of {pv:g} s",
                       "value": f"{rep:,.1f} s", "passed": bool(rel is not None and rel <= bar_rel)})
    return rows, checks


#: published GPU-time shares by job size (percent of the cluster's GPU time), read off the paper's
#: GPU-time-weighted CDF of requested GPUs (Seren): jobs of <= 511 GPUs hold about 64 %, jobs of >= 768 GPUs
#: about 30 % (768- and 1,024-GPU runs each over a tenth); checked within SIZE_SHARE_BAR_PP
SIZE_SHARES = {"Seren": (("GPU time of <= 511-GPU jobs (%)", lambda g: g <= 511, 64.0),
                         ("GPU time of >= 768-GPU jobs (%)", lambda g: g >= 768, 30.0))}
SIZE_SHARE_BAR_PP = 5.0


def gpu_time_by_size(cluster: str, jobs: pd.DataFrame, *, includes_queue: bool) -> list[dict]:
    """The published facts on GPU time by job size as bounds (module docstring); GPU time on the
    published basis (Kalos ``end − submit``)."""
    g = jobs[jobs["gpu_num"] > 0]
    return _size_rows(cluster, g["gpu_num"].to_numpy(float), _duration(g, includes_queue))


def _size_rows(cluster: str, gpus: np.ndarray, dur: np.ndarray) -> list[dict]:
    """:func:`gpu_time_by_size` of the GPU jobs' GPU counts and durations on the published basis."""
    gt = gpus * dur
    tot = gt.sum()
    rows = []

    def add(fact, value, bound, upper):
        ok = value < bound if upper else value > bound
        rows.append({"fact": fact, "published": f"{'<' if upper else '>'} {bound:g}%", "reproduced": value,
                     "within_bar": bool(ok)})

    add("GPU time of 1-GPU jobs (%)", 100 * gt[gpus == 1].sum() / tot, 2.0, True)
    add("jobs of > 8 GPUs (% of jobs)", 100 * float(np.mean(gpus > 8)), 7.0, True)
    if cluster == "Kalos":
        add("GPU time of >= 256-GPU jobs (%)", 100 * gt[gpus >= 256].sum() / tot, 96.0, False)
    for fact, m, pub in SIZE_SHARES.get(cluster, ()):
        value = 100 * gt[m(gpus)].sum() / tot
        rows.append({"fact": fact, "published": f"≈ {pub:g}% ± {SIZE_SHARE_BAR_PP:g}", "reproduced": value,
                     "within_bar": bool(abs(value - pub) <= SIZE_SHARE_BAR_PP)})
    for lo, hi in ((1, 1), (2, 8), (9, 64), (65, 255), (256, None)):
        m = (gpus >= lo) & (gpus <= (hi if hi is not None else np.inf))
        rows.append({"fact": f"GPU time of {lo}{'' if hi == lo else ('+' if hi is None else f'-{hi}')} GPU jobs (%)",
                     "published": None, "reproduced": 100 * gt[m].sum() / tot, "within_bar": None})
    return rows


#: share of a cluster's GPU time in the jobs exposed to the large-job infrastructure failures (≥ 256 GPUs):
#: Kalos published (> 96 % of GPU time in jobs of ≥ 256 GPUs); Seren from its GPU-time-weighted size CDF
#: (jobs of ≤ 511 GPUs about 64 %: ≥ 512 GPUs about 36 %; the 256–511 share is not published, so this is a
#: lower bound of the exposure and the rate an upper estimate)
LARGE_JOB_GPU_TIME_SHARE = {"Kalos": 0.96, "Seren": 0.36}
#: a reason's failures count as large-job infrastructure failures when its median GPU demand is at least this
LARGE_FAILURE_MEDIAN_GPUS = 256


def published_failure_rate(cluster: str) -> dict:
    """Large-job infrastructure failures per 1,000 node-days derived from the published numbers (PROVENANCE.md,
    "Failure rate per cluster"): the cluster's failed GPU time (``cluster_summary.csv``) × the share of it in
    the failure table's Infrastructure reasons of median demand ≥ 256 GPUs among the reasons seen on the
    cluster (Table 3 is not split by cluster: shares of the reasons seen there, renormalised), divided by
    those reasons' mean GPU time per failure (Table 3), gives the number of failures ``N``; the exposure is
    the GPU time of the large jobs (:data:`LARGE_JOB_GPU_TIME_SHARE` × the published total) in node-days
    (8 GPUs per node). ``rate = 1000 N / node-days`` with a 95 % Poisson interval on N (exact, Garwood)."""
    from scipy import stats

    from acmemodel.datasets.published import load_failure_table, load_reference

    ft = load_failure_table()
    code = cluster[0].upper()
    seen = ft[ft["clusters"].apply(lambda c: code in (c if isinstance(c, (tuple, list)) else str(c).split(";")))]
    large = seen[(seen["category"] == "Infrastructure") & (seen["gpu_demand_median"] >= LARGE_FAILURE_MEDIAN_GPUS)]
    share = float(large["failed_gpu_time_share_percent"].sum() / seen["failed_gpu_time_share_percent"].sum())
    summ = load_reference("cluster_summary").set_index("id").loc[cluster]
    failed_s = float(summ["fail_gpu_time"])
    total_s = float(summ["complete_gpu_time"] + summ["cancel_gpu_time"] + summ["fail_gpu_time"])
    per_failure_s = float((large["num"] * large["gpu_time_avg_gpu_min"]).sum() * 60.0 / large["num"].sum())
    n = failed_s * share / per_failure_s
    node_days = LARGE_JOB_GPU_TIME_SHARE[cluster] * total_s / 8.0 / 86400.0
    lo = float(stats.chi2.ppf(0.025, 2 * n) / 2) if n > 0 else 0.0
    hi = float(stats.chi2.ppf(0.975, 2 * (n + 1)) / 2)
    return {"cluster": cluster, "reasons": large["reason"].tolist(), "large_infra_share_of_failed_gpu_time": share,
            "failed_gpu_hours": failed_s / 3600.0, "gpu_hours_per_failure": per_failure_s / 3600.0,
            "failures": n, "exposed_node_days": node_days,
            "large_job_gpu_time_share": LARGE_JOB_GPU_TIME_SHARE[cluster],
            "per_1000_node_days": 1000.0 * n / node_days,
            "interval_per_1000_node_days": [1000.0 * lo / node_days, 1000.0 * hi / node_days]}


def failure_rate_check(bundle, cluster: str) -> dict | None:
    """The bundle's large-job failure rate (its failure model's MTTF at 1,024 GPUs as failures per 1,000
    node-days: ``1000 · 86,400 / (MTTF_s · 128)``) against :func:`published_failure_rate`'s interval;
    None without a failure model."""
    try:
        f = bundle["failure"]
    except Exception:  # a bundle without a failure model
        return None
    mttf = float(f.mttf(1024, cluster=cluster))
    rate = 1000.0 * 86400.0 / (mttf * 128.0)
    pub = published_failure_rate(cluster)
    lo, hi = pub["interval_per_1000_node_days"]
    return {"check": "large-job failures per 1,000 node-days in the published interval",
            "mttf_1024_h": mttf / 3600.0, "reproduced": rate, "published": pub["per_1000_node_days"],
            "interval": [lo, hi], "within_bar": bool(lo <= rate <= hi), "derivation": pub}


def _state_share_se(gpus: np.ndarray, states: np.ndarray, dur: np.ndarray) -> dict:
    """Standard error (pp) of each final-state share of the synthetic GPU jobs that started (``gpus``,
    their final ``states`` and durations ``dur`` on the published basis), ``{(state, basis): se}``:
    by count ``√(r(1 − r)/n)``; by GPU time the ratio estimator's ``√(Σ w_i² (I_i − r)²) / Σ w_i`` with
    ``w_i = gpus × dur`` a started job's GPU time on the published basis (Kalos end − submit,
    Seren run) and ``I_i`` its state indicator (TIMEOUT and NODE_FAIL count as FAILED): the spread of the
    share over iid draws of these jobs. It says how far another draw of the same model could land: where a
    few large runs hold the GPU time (Kalos: one pretraining run can hold 7 % of it), one synthetic trace's
    GPU-time shares carry several points of noise. synth's stratified draws spread about half as much
    (Kalos, ten seeds of the default bundle: sd 2.6 / 3.7 / 2.8 pp for completed / cancelled / failed,
    against an iid SE of 5–7 pp)."""
    w = (pd.Series(gpus) * pd.Series(dur)).to_numpy(float)
    st = pd.Series(states, dtype=object).astype(str).replace({"TIMEOUT": "FAILED", "NODE_FAIL": "FAILED"}).to_numpy()
    out = {}
    for s in _STATES:
        ind = (st == s).astype(float)
        if len(ind):
            r = float(ind.mean())
            out[(s, "count")] = 100.0 * math.sqrt(r * (1 - r) / len(ind))
        if w.sum() > 0:
            r = float((w * ind).sum() / w.sum())
            out[(s, "gpu_time")] = 100.0 * float(np.sqrt(((w * (ind - r)) ** 2).sum()) / w.sum())
    return out


class PooledJobs:
    """One cluster's synthetic GPU jobs pooled over its replicas, cut to what :func:`_compare_cluster` reads:
    added one replica at a time (:meth:`add`, a ``simulate_jobs`` table), so that each replica's full table
    can be dropped as soon as it is drawn (``reproduce`` streams its replicas). Kept per GPU job, in the
    order of the concatenated replicas: GPU count, type and state codes, whether it started, its duration
    and GPU time on the published basis (:func:`_duration`; the trace contract's ``gpu_time_s``, Kalos
    ``end − submit``) and, for the started jobs, the wait, the run time on the published basis and
    ``end − start`` — about 60 bytes a job, so every statistic (medians included) is the one of the
    concatenated replicas, computed the same way."""

    _FIELDS = ("gpu", "type", "state", "started", "dur", "gt", "queue", "run_pub", "run_tr")

    def __init__(self, cluster: str):
        self.cluster = cluster
        self.includes_queue = published_duration_includes_queue(cluster)
        self.type_names: list[str] = []
        self.state_names: list[str] = []
        self._parts: list[dict] = []

    @staticmethod
    def _codes(values: np.ndarray, names: list[str]) -> np.ndarray:
        codes, uniq = pd.factorize(pd.Series(values, dtype=object).astype(str))
        for u in uniq:
            if u not in names:
                names.append(u)
        remap = np.array([names.index(u) for u in uniq], dtype=np.int16)
        return remap[codes] if len(codes) else np.zeros(0, np.int16)

    def add(self, jobs: pd.DataFrame) -> None:
        """Add one replica (``simulate_jobs`` columns: ``gpu_num, type, state, submit_s, start_s, end_s, run_s,
        queue_s``)."""
        m = jobs["gpu_num"].to_numpy() > 0
        gpu = jobs["gpu_num"].to_numpy(np.int64)[m]
        submit, start, end, run, queue = (jobs[c].to_numpy(float)[m] for c in ("submit_s", "start_s", "end_s",
                                                                              "run_s", "queue_s"))
        started = np.isfinite(start)
        run_tr = end - start  # the trace contract's run_s (acmemodel.trace.jobs_from_times)
        if self.includes_queue:
            dur = end - submit
            gt = np.where(started, gpu * dur, 0.0)
            run_pub = dur[started]
        else:
            dur = np.nan_to_num(run, nan=0.0)
            gt = np.where(started, gpu * np.nan_to_num(run_tr), 0.0)
            run_pub = run[started]
        self._parts.append({
            "gpu": gpu, "type": self._codes(jobs["type"].to_numpy()[m], self.type_names),
            "state": self._codes(jobs["state"].to_numpy()[m], self.state_names), "started": started,
            "dur": dur, "gt": gt, "queue": queue[started], "run_pub": run_pub, "run_tr": run_tr[started]})

    def arrays(self) -> dict:
        """The pooled arrays (the replicas concatenated in order); the parts are released."""
        parts, self._parts = self._parts, []
        out = {}
        for f in self._FIELDS:
            out[f] = np.concatenate([p.pop(f) for p in parts]) if parts else np.zeros(0)
        return out


def _group_shares(codes: np.ndarray, names: list[str], gt: np.ndarray, n_total: int, gpu_total: float) -> dict:
    """``{key: {"job_share", "gpu_time_share"}}`` as :func:`acmemodel.describe.describe` groups the GPU
    jobs (``codes`` into ``names``; GPU time ``gt``)."""
    out = {}
    for k, key in enumerate(names):
        m = codes == k
        n = int(m.sum())
        if n == 0:
            continue
        share = float(pd.Series(gt[m]).sum() / gpu_total) if gpu_total > 0 else None
        out[key] = {"job_share": n / n_total if n_total else None,
                    "gpu_time_share": share if share is not None and math.isfinite(share) else None}
    return out


def _compare_cluster(cluster: str, pooled: PooledJobs, scale: float, expl: dict, curves: list[dict], *,
                     total_gpus: int, days: float) -> dict:
    """One cluster's comparison tables (module docstring of :mod:`acmemodel.reproduction.run`) of its pooled
    synthetic GPU jobs."""
    bar_pp, bar_ks = QUALITY_BAR["share_pp"], QUALITY_BAR["ks"]
    includes_queue = pooled.includes_queue
    basis = "queue+run" if includes_queue else "run"
    mix = load_reference("workload_mix").query("cluster == @cluster")
    summ = load_reference("cluster_summary").set_index("id").loc[cluster]
    a = pooled.arrays()
    gpu, started, dur, gt = a["gpu"], a["started"], a["dur"], a["gt"]
    types = np.asarray(pooled.type_names, dtype=object)[a["type"]] if len(gpu) else np.zeros(0, object)
    n = len(gpu)
    total = float(pd.Series(gt).sum())
    by_type = _group_shares(a["type"], pooled.type_names, gt, n, total)
    # the analysis states (TIMEOUT, NODE_FAIL -> FAILED) as the trace contract maps them
    an_names = sorted({STATE_MAP[s] for s in pooled.state_names})
    an_code = np.array([an_names.index(STATE_MAP[s]) for s in pooled.state_names], dtype=np.int16)
    by_state = _group_shares(an_code[a["state"]] if n else a["state"], an_names, gt, n, total)

    shares = []
    for _, r in mix.iterrows():
        t = r["type"]
        for metric, col in (("job_share", "job_count_percent"), ("gpu_time_share", "gpu_time_percent")):
            pub = float(r[col])
            rep = _pp((by_type.get(t) or {}).get(metric, 0.0))
            d = _diff(pub, rep)
            shares.append({"type": t, "metric": metric, "published": pub, "reproduced": rep, "diff_pp": d,
                           "within_bar": d is not None and abs(d) <= bar_pp,
                           "basis": basis if metric == "gpu_time_share" else "count",
                           "explanation": expl.get((metric, t))})

    run_pub_basis = pd.Series(a["run_pub"])
    states = []
    state_names = np.asarray(pooled.state_names, dtype=object)
    se = _state_share_se(gpu[started], state_names[a["state"][started]] if n else np.zeros(0, object),
                         a["run_pub"])
    for s in _STATES:
        k = _STATE_COLS[s]
        for b, col, metric in (("count", f"{k}_rate_gpu", "job_share"),
                               ("gpu_time", f"{k}_rate_gpu_time", "gpu_time_share")):
            pub = _pp(summ[col])
            rep = _pp((by_state.get(s) or {}).get(metric, 0.0))
            d = _diff(pub, rep)
            states.append({"state": s, "basis": b if b == "count" else f"gpu_time ({basis})", "published": pub,
                           "reproduced": rep, "se_pp": se.get((s, b)), "diff_pp": d,
                           "within_bar": d is not None and abs(d) <= bar_pp, "explanation": None})

    queue = pd.Series(a["queue"])
    pub_gt = float(summ[["complete_gpu_time", "cancel_gpu_time", "fail_gpu_time"]].sum())
    capacity = float(total_gpus) * days * 86400.0
    rows = [
        ("gpu_jobs", float(summ["gpu_job_num"]) * scale, float(n), "count (published x scale)"),
        ("median_run_s", float(summ["med_run_time_gpu"]), float(run_pub_basis.median()), basis),
        ("mean_run_s", float(summ["avg_run_time_gpu"]), float(run_pub_basis.mean()), basis),
        ("median_queue_s", float(summ["med_que_time_gpu"]), float(queue.median()), "start - submit"),
        ("mean_queue_s", float(summ["avg_que_time_gpu"]), float(queue.mean()), "start - submit"),
        ("mean_gpus", float(summ["avg_gpu_num"]), float(pd.Series(gpu).mean()), "GPUs per GPU job"),
        ("utilization", pub_gt / capacity, float((pd.Series(gpu) * dur).sum()) / capacity,
         f"GPU time ({basis}) / (GPUs x {days:g} days)"),
    ]
    util = rows[-1][2]
    overloaded = None
    if util > 1.0:
        overloaded = (f"model limitation, not a source contradiction: the synthetic workload asks for {util:.2f} x the "
                      f"cluster's GPU time (published {pub_gt / capacity:.2f}), so the simulated queue grows "
                      f"without bound and the queue statistics are meaningless until the synthetic GPU time matches")
    summary = []
    for name, pub, rep, b in rows:
        rel = (rep - pub) / pub if pub and math.isfinite(rep) else None
        note = None
        if cluster == "Seren" and name in ("median_run_s", "mean_run_s", "mean_gpus"):
            note = expl.get("summary")
        if includes_queue and name in ("median_queue_s", "mean_queue_s"):
            note = expl.get("queue")
        if name in ("median_queue_s", "mean_queue_s", "utilization") and overloaded:
            note = overloaded
        summary.append({"name": name, "published": pub, "reproduced": rep if math.isfinite(rep) else None,
                        "rel_diff": rel, "basis": b, "within_bar": None, "explanation": note})
    if includes_queue:
        med = float(pd.Series(a["run_tr"]).median()) if len(a["run_tr"]) else float("nan")
        summary.append({"name": "median_run_s (end - start)", "published": None,
                        "reproduced": med if math.isfinite(med) else None, "rel_diff": None, "basis": "run",
                        "within_bar": None, "explanation": "not published (the Kalos files include the queue)"})

    curve_rows = []
    for cv in curves:
        if cv["cluster"] != cluster:
            continue
        if cv["kind"] == "gpu_count_cdf_by_jobs":
            sample, b = gpu.astype(float), "gpus"
        elif cv["type"] is None:
            sample, b = dur, basis
        else:
            sample, b = dur[types == cv["type"]], basis
        ks, at = ks_at_points(sample, cv["x"], cv["cdf"])
        n_s = int(len(sample))
        within = bool(math.isfinite(ks) and ks <= bar_ks)
        e = None
        if not within and includes_queue and cv["kind"] != "gpu_count_cdf_by_jobs":
            e = expl.get("kalos_duration")
        curve_rows.append({"name": cv["name"], "kind": cv["kind"], "type": cv["type"], "basis": b,
                           "ks": ks if math.isfinite(ks) else None, "at_x": at if math.isfinite(at) else None,
                           "n": n_s, "ks_crit95": KS95 / math.sqrt(n_s) if n_s else None, "within_bar": within,
                           "explanation": e, "_sample": sample, "_x": cv["x"], "_cdf": cv["cdf"]})
    qrows, qchecks = _queue_rows(cluster, a["queue"], types[started])
    return {"shares": shares, "states": states, "summary": summary, "curves": curve_rows,
            "queue_by_type": qrows, "queue_checks": qchecks,
            "gpu_time_by_size": _size_rows(cluster, gpu.astype(float), dur)}
