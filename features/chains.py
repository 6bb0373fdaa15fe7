"""Restart chains and evaluation batches.

Restart chains
--------------
**From the data when it carries them.** A trace written by :mod:`acmemodel.synth` has the chain
as columns (``chain_id``, ``attempt``, ``prev_job_id`` / ``prev_index``, ``restart_gap_s``;
:func:`acmemodel.load_trace` keeps them): :func:`restart_chains` then uses those links as they are
(``source = "columns"``).

**Inferred otherwise** (``source = "inferred"``). A FAILED job *f* (analysis state, so TIMEOUT and
NODE_FAIL too) of user *u*, type *y* and *g* GPUs on cluster *c* has one candidate restart *n*: the
first job of the same key (c, u, y, g) submitted at or after f's end, at the gap
``Δ = submit_n − end_f`` (at most ``window_s``, 24 h). Jobs of the same key also follow jobs by chance or
on purpose (evaluation sweeps, bursts, a user's next experiment, a resubmitted configuration that
COMPLETED); COMPLETED jobs are never restarted, so their followers measure that rate and its gaps.
Strata are cluster × type × GPU bucket.

*Rows left out.* A row with no cluster, user, type or analysis state, no or a negative GPU count, a
missing or non-finite submit or end time, or an end before its submission takes no part (it is neither
restarted nor a restart); ``attrs["inference"]["excluded"]`` counts them by reason. Rows of an unknown
user are never put in one key together.

*Mixture rule* (strata with at least ``MIN_MIXTURE_FOLLOWERS`` = 50 failures followed within the window
and ``MIN_MIXTURE_COMPLETED`` = 50 COMPLETED jobs; the GPU buckets of a (cluster, type) that have fewer
are pooled into one stratum, which gets the rule if the pool has enough).
The followers of a stratum's failures are a mixture, in ``x = log Δ``, of restarts (log-normal gaps:
share π_R of the failures, a normal density φ(x; μ, σ)) and chance followers (share π_0·m_κ, with the
density g_C(x) of the stratum's COMPLETED followers: a Gaussian kernel estimate plus a quarter of a
follower spread over the window). ``m_κ`` is the key's chance multiplier: its COMPLETED jobs' follow
rate over the stratum's, shrunk to 1 with a weight of two COMPLETED jobs, so a user who often
resubmits finished configurations gets a higher chance rate than one who never does. EM estimates
π_R, π_0, μ, σ (π_0 is free: users resubmit completed work on purpose, after failures they restart,
so failures are followed by chance less often than completions are); the posterior that a follower at
x is a restart is::

    P(restart | x, κ) = π_R φ(x) / (π_R φ(x) + π_0 m_κ g_C(x))

— the likelihood ratio of the gap after failure against the gap after completion, per key. A stratum
links its candidates with posterior ≥ ½ from the most probable down, as many as keep their mean
posterior (the estimated precision) ≥ ``min_precision`` (0.95).

*Window rule* (thinner strata, the conservative rule of earlier versions; everywhere with
``rule="window"``). *f* is linked when Δ is at most the window ``w(s)`` of its stratum *s* (strata
here also split by activity of the key, ``⌊log2(jobs of the key)⌋`` capped at 12). With ``r_F(w)`` /
``r_C(w)`` the shares of FAILED / COMPLETED jobs of the stratum followed by a job of their key within
``w``::

    precision(w) = 1 − r_C⁺(w) / r_F(w),   r_C⁺ = (k_C + √k_C + ¼) / n_C

(``k_C`` of the stratum's ``n_C`` COMPLETED jobs followed within ``w``: the chance rate with a one-sigma
margin on its count and a quarter of a follower in every stratum, so small strata stay conservative)
and ``w(s)`` is the largest of 31 log-spaced windows from 1 s to ``window_s`` whose estimated precision
is at least ``min_precision``; a stratum where no window reaches it gets no links (rule ``"none"`` in
``attrs["inference"]["strata"]``, which also gives every stratum's counts, links and fit).

Each job restarts at most one failure (the latest-ending candidate wins). Restarts after more than
``window_s`` are never linked.

*Measured* (``tests/test_chain_inference.py``; figures of ``tests/chain_trace.py`` at seeds 0, 1, 2).
On the 180-day synthetic Seren trace of ``tests/test_roundtrip.py`` (default bundle, seed 11) with its
chain columns removed: precision 0.986, recall 0.980 of the 791 links. On the trace of
``tests/chain_trace.py`` (60 days, users who also resubmit completed configurations after a
log-normal gap of median 1.5 h; restarts with gaps 43 s to 1.6 h, median 9.5 min): Pretrain precision
0.987–0.998, recall 0.987–0.995 (window rule alone: recall 0.43–0.48); with resubmission gaps of
median 30 min: recall 0.81–0.99; median 10 min (restarts and resubmissions at the same gaps): recall
0.51–0.68, precision ≥ 0.99; Pretrain failure probability 0.08 instead of 0.35 (110–145 restarts):
recall 0.99–1.00; 15 users over 20 days (70–140 restarts): recall 0.98–1.00, precision ≥ 0.968.

*Limits.* The rule cannot tell a restart from a submission that a job's end prompts whatever its
outcome (a user's next job of a sequence): the gaps after failures are then the gaps after completions
plus restarts, which the mixture's free π_0 may read as restarts. On the real NASA iPSC/860 log (SWF;
users who submit the same size again seconds to minutes after a job ends) with 15 % of its jobs made
FAILED at random and 85 % of those restarted (gaps as above; ``inject_restarts`` of
``tests/chain_trace.py``, seeds 0, 1, 2), the mixture links 91–640 of ≈ 2,700
restarts at precision 0.60–0.75 (the window rule: 0–2 links). Use ``rule="window"`` on such traces.

A ``restart_of`` column (the job id of the previous attempt, from imported traces: SWF
preceding-job links, Philly attempts, Slurm requeues) gives explicit links, which replace the
inferred ones for the jobs it names.

Linked jobs form a chain:

* ``chain_id`` — id of the logical job (every job has one; a job with no links is a chain of one);
* ``attempt`` — 1 for the first attempt, k for the k-th;
* ``prev_index`` / ``next_index`` — row labels of the neighbouring attempts (−1 if none);
* ``restart_gap_s`` — on an attempt k ≥ 2: ``submit_k − end_{k−1}`` seconds (the time to restart,
  until resubmission); NaN on first attempts;
* ``next_restart_gap_s``, ``next_queue_s`` — the same gap and the next attempt's queueing delay, on
  the failed row that was restarted (NaN otherwise). Time to restart = gap + queue.

Batches
-------
Jobs of one (cluster, user, type) whose submissions follow each other by at most ``gap_s`` (default
60 s) form a batch (an evaluation burst after a checkpoint): ``batch_id`` and ``batch_size``.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

DEFAULT_WINDOW_S = 24 * 3600.0
#: estimated precision the inference window of a (cluster, type) must reach (module docstring)
DEFAULT_MIN_PRECISION = 0.95
#: margin (in Poisson standard deviations of its count) added to the chance rate of COMPLETED jobs
CHANCE_MARGIN_SIGMA = 1.0
#: a quarter of a chance follower counted in every stratum (module docstring): a stratum whose few COMPLETED jobs
#: were never followed is not taken as proof that its failures' followers are restarts
CHANCE_PRIOR_COUNT = 0.25
#: candidate windows of the window rule (s): 31 log-spaced from 1 s to 24 h (those below window_s, then window_s)
WINDOW_GRID_S = tuple(float(w) for w in np.round(np.geomspace(1.0, 86400.0, 31)))
#: a (cluster, type) with at least this many failures followed within the window gets the mixture rule
MIN_MIXTURE_FOLLOWERS = 50
#: ... and at least this many COMPLETED jobs (which estimate the chance followers)
MIN_MIXTURE_COMPLETED = 50
#: weight (in COMPLETED jobs) of the stratum's chance rate in each key's chance multiplier
KEY_PRIOR_COUNT = 2.0
#: gaps below this (s) count as this in logs (timestamps have a 1 s resolution)
GAP_FLOOR_S = 0.5
#: a link needs at least this posterior probability (more likely a restart than chance)
MIN_POSTERIOR = 0.5
#: columns that carry a known chain (``prev_job_id`` in files, ``prev_index`` in frames)
CHAIN_DATA_COLUMNS = ("chain_id", "attempt", "restart_gap_s")
DEFAULT_BATCH_GAP_S = 60.0


def _codes(jobs: pd.DataFrame, cols) -> np.ndarray:
    return jobs.groupby(list(cols), sort=False, observed=True).ngroup().to_numpy()


def _key_codes(*arrays) -> np.ndarray:
    """Dense int64 code of each row's combination of ``arrays`` (arrays or Series, no missing
    values)."""
    code = np.zeros(len(arrays[0]), dtype=np.int64)
    for a in arrays:
        c, u = pd.factorize(a)
        code = pd.factorize(code * (len(u) + 1) + c)[0].astype(np.int64)
    return code


def has_chain_columns(jobs: pd.DataFrame) -> bool:
    """Whether ``jobs`` carries its restart chain (``attempt`` and ``prev_index`` or
    ``prev_job_id``), as synthetic traces do."""
    if "attempt" in jobs.columns and ("prev_index" in jobs.columns or "prev_job_id" in jobs.columns):
        return True
    # a complete restart_of column ("" on first attempts, as the calibration's pseudo-trace has it)
    return "restart_of" in jobs.columns and len(jobs) > 0 and bool(jobs["restart_of"].notna().all())


def _prev_from_columns(jobs: pd.DataFrame) -> np.ndarray:
    """Row position of each row's previous attempt (−1 if none) from the chain columns."""
    n = len(jobs)
    prev = np.full(n, -1, dtype=np.int64)
    if "prev_index" in jobs.columns:
        lab = pd.to_numeric(jobs["prev_index"], errors="coerce").to_numpy(dtype=float)
        pos = pd.Index(jobs.index).get_indexer(np.where(np.isfinite(lab) & (lab >= 0), lab, -1).astype(np.int64))
        ok = np.isfinite(lab) & (lab >= 0) & (pos >= 0)
        prev[ok] = pos[ok]
        return prev
    col = "prev_job_id" if "prev_job_id" in jobs.columns else "restart_of"
    pj = jobs[col].astype(object).where(jobs[col].notna(), "").astype(str).to_numpy()
    has = pj != ""
    if has.any():
        # (cluster, job_id) of every row and (cluster, previous job id) of the rows that have one, as one int64
        # code each (one factorisation of both: a tenth of the cost of two string MultiIndexes on 1M rows)
        cl = jobs["cluster"].astype(str).to_numpy()
        cc, _ = pd.factorize(np.concatenate([cl, cl[has]]))
        jc, uniq = pd.factorize(np.concatenate([jobs["job_id"].astype(str).to_numpy(), pj[has]]))
        code = cc.astype(np.int64) * (len(uniq) + 1) + jc
        pos = pd.Index(code[:n]).get_indexer(code[n:])  # (raises on duplicate keys, as the MultiIndex did)
        ok = pos >= 0
        prev[np.flatnonzero(has)[ok]] = pos[ok]
    return prev


def _restart_posterior(xf: np.ndarray, has: np.ndarray, m: np.ndarray, xc: np.ndarray, n_c: float,
                       x_max: float) -> tuple[np.ndarray, dict]:
    """Posterior probability that each failed job's follower is its restart (module docstring), and
    the fitted mixture: ``pi_restart`` (π_R), ``pi_chance`` (π_0 times the mean key multiplier: chance
    followers per failure), ``mu`` and ``sigma`` (of the restart log-gap, log s).

    ``xf``: log-gap to the follower of each failed job (used where ``has``); ``m``: its key's chance
    multiplier; ``xc``: log-gaps of the COMPLETED jobs' followers within the window (``n_c`` COMPLETED
    jobs in all); ``x_max``: log of the window. The followers of failures are a mixture of restarts
    (log-normal gap: a normal density in x, mean μ and sd σ, share π_R of the failures) and chance
    followers (the COMPLETED jobs' gap density g_C, share π_0·m of the failures); EM estimates
    π_R, π_0, μ, σ; the posterior of a follower at x is π_R·φ(x) / (π_R·φ(x) + π_0·m·g_C(x))."""
    def norm_pdf(x, mu=0.0, sd=1.0):
        return np.exp(-0.5 * ((x - mu) / sd) ** 2) / (sd * np.sqrt(2 * np.pi))

    nf = len(xf)
    out = np.zeros(nf)
    fit = {"pi_restart": 0.0, "pi_chance": float("nan"), "mu": float("nan"), "sigma": float("nan")}
    if not has.any():
        return out, fit
    xs = xf[has]
    ms = m[has]
    # g_C: a Gaussian kernel density of the COMPLETED followers' log-gaps, with a prior share of a
    # follower spread uniformly over the window (so a type with few COMPLETED jobs stays conservative)
    lo = np.log(GAP_FLOOR_S)
    w_u = CHANCE_PRIOR_COUNT
    k = len(xc)
    if k:  # the density on a grid of 512 points (binned kernel estimate: linear in the counts)
        bw = max(1.06 * float(np.std(xc)) * k ** -0.2, 0.3) if k > 1 else 1.0
        grid = np.linspace(lo - 3 * bw, x_max + 3 * bw, 512)
        cnt = np.histogram(xc, bins=len(grid), range=(grid[0] - (grid[1] - grid[0]) / 2,
                                                        grid[-1] + (grid[1] - grid[0]) / 2))[0]
        kern = norm_pdf((grid - grid[len(grid) // 2]) / bw) / bw
        dens = np.convolve(cnt, kern, mode="same")
        kde = np.interp(xs, grid, dens)
    else:
        kde = np.zeros(len(xs))
    g_c = (kde + w_u / (x_max - lo)) / (k + w_u)
    # chance share per failure: the COMPLETED follow rate with a one-sigma margin on its count
    p0_obs = (k + CHANCE_MARGIN_SIGMA * np.sqrt(k) + w_u) / max(n_c, 1.0)
    pi0, pir = p0_obs, max(len(xs) / nf - p0_obs, 0.05)
    mu, sd = float(np.median(xs)), max(float(np.std(xs)), 0.5)
    for _ in range(200):
        fr = pir * norm_pdf(xs, mu, sd)
        fc = pi0 * ms * g_c
        r = fr / np.maximum(fr + fc, 1e-300)
        sr = r.sum()
        if sr <= 1e-9:
            return out, fit
        mu_n = float((r * xs).sum() / sr)
        sd_n = max(float(np.sqrt((r * (xs - mu_n) ** 2).sum() / sr)), 0.2)
        pir_n = sr / nf
        pi0_n = float((1 - r).sum() / max(m.sum(), 1e-9))
        if abs(mu_n - mu) < 1e-6 and abs(sd_n - sd) < 1e-6 and abs(pir_n - pir) < 1e-9:
            mu, sd, pir, pi0 = mu_n, sd_n, pir_n, pi0_n
            break
        mu, sd, pir, pi0 = mu_n, sd_n, pir_n, pi0_n
    fr = pir * norm_pdf(xs, mu, sd)
    fc = pi0 * ms * g_c
    out[has] = fr / np.maximum(fr + fc, 1e-300)
    fit.update(pi_restart=float(pir), pi_chance=float(pi0 * np.mean(m)), mu=mu, sigma=sd)
    return out, fit


def _window_links(jobs, g, gap, failed, completed, window_s, min_precision) -> tuple[np.ndarray, np.ndarray]:
    """Failed rows linked to their follower by the window rule (module docstring) — used for the
    strata with fewer than ``MIN_MIXTURE_FOLLOWERS`` followed failures — and each row's window (s;
    −1 where no window reaches ``min_precision``)."""
    n = len(jobs)
    link = np.zeros(n, dtype=bool)
    if not failed.any():
        return link, np.full(n, -1.0)
    # strata: (cluster, type) x GPU bucket x activity of the key (log2 of its job count): busy keys get
    # their own, shorter windows without shortening those of quiet keys
    activity = np.minimum(np.floor(np.log2(np.bincount(g)[g])), 12).astype(np.int64)
    from acmemodel.features.keys import gpu_bucket

    bucket = np.asarray(gpu_bucket(jobs["gpu_num"].to_numpy(float)), dtype=object).astype(str)
    ct = _codes(jobs.assign(_act=activity, _bucket=bucket), ["cluster", "type", "_bucket", "_act"])
    win = np.zeros(ct.max() + 1)
    grid = np.array([w for w in WINDOW_GRID_S if w < window_s] + [window_s])
    for c in np.unique(ct[failed]):
        f, k = failed & (ct == c), completed & (ct == c)
        r_f = (gap[f][:, None] <= grid[None, :]).mean(axis=0)
        # chance rate with a margin (Poisson sigmas) on its count: small strata stay conservative
        k_c = (gap[k][:, None] <= grid[None, :]).sum(axis=0) if k.any() else np.zeros(len(grid))
        r_c = (k_c + CHANCE_MARGIN_SIGMA * np.sqrt(k_c) + CHANCE_PRIOR_COUNT) / max(int(k.sum()), 1)
        with np.errstate(divide="ignore", invalid="ignore"):
            prec = np.where(r_f > 0, 1.0 - r_c / r_f, 0.0)
        good = np.flatnonzero((prec >= min_precision) & (r_f > 0))
        win[c] = grid[good[-1]] if len(good) else -1.0
    return failed & (gap <= win[ct]), win[ct]


def _mixture_links(g, cty, gap, failed, completed, inwin, window_s, min_precision) -> tuple[np.ndarray, dict]:
    """Failed rows linked to their follower by the mixture rule (module docstring), and the fit of
    each stratum (:func:`_restart_posterior`'s, with ``est_precision``: the mean posterior of its
    links)."""
    n = len(g)
    x = np.log(np.maximum(np.where(inwin, gap, 1.0), GAP_FLOOR_S))  # log-gap of the followers
    # each key's chance multiplier: its COMPLETED jobs' follow rate over its type's, shrunk to 1
    n_key_c = np.bincount(g, weights=completed, minlength=g.max() + 1)
    k_key_c = np.bincount(g, weights=completed & inwin, minlength=g.max() + 1)
    n_t_c = np.bincount(cty, weights=completed, minlength=cty.max() + 1)
    k_t_c = np.bincount(cty, weights=completed & inwin, minlength=cty.max() + 1)
    r_t = (k_t_c + CHANCE_PRIOR_COUNT) / np.maximum(n_t_c, 1.0)
    a = KEY_PRIOR_COUNT
    m_key = (k_key_c[g] + a * r_t[cty]) / ((n_key_c[g] + a) * r_t[cty])
    post = np.zeros(n)
    fits: dict[int, dict] = {}
    for t in np.unique(cty[failed]):
        f = failed & (cty == t)
        kc = completed & (cty == t) & inwin
        post[np.flatnonzero(f)], fits[int(t)] = _restart_posterior(
            x[f], inwin[f], m_key[f], x[kc], float((completed & (cty == t)).sum()), float(np.log(window_s)))
    # the links: per type the most probable ones, as many as keep their mean posterior (the estimated
    # precision) >= min_precision
    cand_f = np.flatnonzero(failed & inwin & (post >= MIN_POSTERIOR))
    link = np.zeros(n, dtype=bool)
    if len(cand_f):
        o = np.lexsort((-post[cand_f], cty[cand_f]))
        cf, pc, cc = cand_f[o], post[cand_f][o], cty[cand_f][o]
        start = np.r_[True, cc[1:] != cc[:-1]]
        grp = np.cumsum(start) - 1
        cs = np.cumsum(pc)
        base = np.r_[0.0, cs][np.flatnonzero(start)][grp]
        rank = np.arange(len(cf)) - np.flatnonzero(start)[grp] + 1
        mean = (cs - base) / rank
        good = mean >= min_precision
        last = pd.Series(np.where(good, rank, 0)).groupby(grp).transform("max").to_numpy()
        link[cf[rank <= last]] = True
    for t, fit in fits.items():
        sel = link & (cty == t)
        fit["est_precision"] = float(post[sel].mean()) if sel.any() else float("nan")
    return link, fits


#: why a row takes no part in the inference (``attrs["inference"]["excluded"]`` of restart_chains)
_EXCLUSION_REASONS = {
    "user": "no user", "type": "no type", "gpu_num": "no or negative GPU count", "cluster": "no cluster",
    "times": "submit or end time missing or not finite", "order": "ends before it is submitted",
    "state": "no analysis state",
}


def _eligible(jobs: pd.DataFrame) -> tuple[np.ndarray, dict[str, int]]:
    """Rows the inference can use (key fields present, finite times, end ≥ submit) and how many
    are left out for each reason (a row counts under its first reason)."""
    n = len(jobs)
    ok = np.ones(n, dtype=bool)
    excluded: dict[str, int] = {}

    def drop(reason, bad):
        nonlocal ok
        k = int((bad & ok).sum())
        if k:
            excluded[_EXCLUSION_REASONS[reason]] = k
        ok &= ~bad

    for col in ("cluster", "user", "type"):
        v = jobs[col] if col in jobs.columns else pd.Series(np.nan, index=jobs.index)
        drop(col, (v.isna() | ((v == "") & (col != "type"))).to_numpy(dtype=bool))
    gpu = pd.to_numeric(jobs["gpu_num"], errors="coerce").to_numpy(dtype=float)
    drop("gpu_num", ~(np.isfinite(gpu) & (gpu >= 0)))
    sub = jobs["submit_s"].to_numpy(dtype=float)
    end = jobs["end_s"].to_numpy(dtype=float)
    drop("times", ~(np.isfinite(sub) & np.isfinite(end)))
    with np.errstate(invalid="ignore"):
        drop("order", end < sub)
    drop("state", jobs["analysis_state"].isna().to_numpy(dtype=bool))
    return ok, excluded


def _inferred_next(jobs: pd.DataFrame, window_s: float, min_precision: float, rule: str = "auto"
                   ) -> tuple[np.ndarray, dict]:
    """Row position of each failed row's inferred next attempt (−1 if none): the module
    docstring's mixture rule, or the window rule in thin strata; and what the inference did
    (``attrs["inference"]`` of :func:`restart_chains`)."""
    n_all = len(jobs)
    nxt_all = np.full(n_all, -1, dtype=np.int64)
    info: dict = {"excluded": {}, "strata": []}
    if not n_all:
        return nxt_all, info
    if "type" not in jobs.columns:  # no job types: one type
        jobs = jobs.assign(type="")
    ok, info["excluded"] = _eligible(jobs)
    rows = np.flatnonzero(ok)
    if not len(rows):
        return nxt_all, info
    jobs = jobs[["cluster", "user", "type", "gpu_num", "analysis_state", "submit_s", "end_s"]]
    if len(rows) < n_all:
        jobs = jobs.iloc[rows]
    n = len(jobs)
    failed = (jobs["analysis_state"] == "FAILED").to_numpy(dtype=bool)
    if not failed.any():
        return nxt_all, info
    gpu = pd.to_numeric(jobs["gpu_num"], errors="coerce").to_numpy(dtype=float)
    g = _key_codes(jobs["cluster"], jobs["user"], jobs["type"], gpu)
    sub = jobs["submit_s"].to_numpy(dtype=float)
    end = jobs["end_s"].to_numpy(dtype=float)
    t0 = min(float(sub.min()), float(end.min()))
    span = max(float(sub.max()), float(end.max())) - t0 + window_s + 1e6
    order = np.lexsort((sub, g))
    skey = g[order].astype(float) * span + (sub[order] - t0)
    # every job's candidate: the first job of its key submitted at or after its end and after the job itself in
    # the key's (submit time, row) order — so that links only go forward and can never close a cycle (two jobs
    # submitted and ended in the same second would otherwise each find the other)
    fkey = g.astype(float) * span + (end - t0)
    rank = np.empty(n, dtype=np.int64)
    rank[order] = np.arange(n)
    pos = np.maximum(np.searchsorted(skey, fkey, side="left"), rank + 1)
    valid = pos < n
    cand = np.full(n, -1, dtype=np.int64)
    cand[valid] = order[pos[valid]]
    fol = valid & (g[np.maximum(cand, 0)] == g)
    gap = np.where(fol, sub[np.maximum(cand, 0)] - end, np.inf)
    completed = (jobs["analysis_state"] == "COMPLETED").to_numpy(dtype=bool)
    inwin = fol & (gap <= window_s)
    from acmemodel.features.keys import gpu_bucket

    bucket = np.asarray(gpu_bucket(gpu), dtype=object).astype(str)
    # strata with enough followed failures and COMPLETED jobs: the mixture rule, per GPU bucket where the
    # bucket has enough, else over the thin buckets of the (cluster, type) together; the others: the window rule
    def rich_of(code):
        n_follow = np.bincount(code, weights=failed & inwin, minlength=code.max() + 1)
        n_comp = np.bincount(code, weights=completed, minlength=code.max() + 1)
        return (n_follow[code] >= MIN_MIXTURE_FOLLOWERS) & (n_comp[code] >= MIN_MIXTURE_COMPLETED)

    ct = _key_codes(jobs["cluster"], jobs["type"])
    cty = _key_codes(ct, bucket)
    rich_b = rich_of(cty)
    bucket = np.where(rich_b, bucket, "pooled")
    cty = _key_codes(ct, bucket)
    rich = rich_of(cty) & (rule == "auto")
    link, win = _window_links(jobs, g, gap, failed & ~rich, completed, window_s, min_precision)
    fits: dict[int, dict] = {}
    if (failed & rich).any():
        l2, fits = _mixture_links(g, cty, gap, failed & rich, completed, inwin, window_s, min_precision)
        link |= l2
    f_ok, c_ok = np.flatnonzero(link), cand[link]
    # each candidate restarts at most one failure: keep the latest-ending failure
    o = np.lexsort((-end[f_ok], c_ok))
    f_ok, c_ok = f_ok[o], c_ok[o]
    first = np.ones(len(c_ok), dtype=bool)
    first[1:] = c_ok[1:] != c_ok[:-1]
    nxt_all[rows[f_ok[first]]] = rows[c_ok[first]]
    linked = np.zeros(n, dtype=bool)
    linked[f_ok[first]] = True
    for t in np.unique(cty[failed]):
        s = cty == t
        i = int(np.flatnonzero(s)[0])
        row = {"cluster": str(jobs["cluster"].iat[i]), "type": str(jobs["type"].iat[i]),
               "gpu_bucket": str(bucket[i]),
               "failed": int((failed & s).sum()), "completed": int((completed & s).sum()),
               "followed": int((failed & s & inwin).sum()), "links": int((linked & s).sum())}
        if int(t) in fits:
            row.update(rule="mixture", **fits[int(t)])
        else:
            w = float(win[failed & s].max())
            row.update(rule="window" if w > 0 else "none", window_s=w)
        info["strata"].append(row)
    return nxt_all, info


def chain_heads(prev: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row: the position of its chain's first attempt and its attempt number (1 = first), from
    ``prev`` (position of the attempt each row restarts, −1 if none); walks the links one step per
    pass (passes = the longest chain)."""
    prev = np.asarray(prev, dtype=np.int64)
    head = np.arange(len(prev), dtype=np.int64)
    attempt = np.ones(len(prev), dtype=np.int64)
    p = prev.copy()
    for step in range(len(prev) + 1):
        active = p >= 0
        if not active.any():
            break
        if step == len(prev):  # (a chain longer than the rows: the links close a cycle)
            raise ValueError(f"restart links form a cycle: row {int(np.flatnonzero(active)[0])}'s chain never "
                             "reaches a first attempt")
        idx = np.flatnonzero(active)
        attempt[idx] += 1  # one more predecessor
        head[idx] = p[idx]
        p_new = p.copy()
        p_new[idx] = prev[p[idx]]
        p = p_new
    return head, attempt


def restart_chains(jobs: pd.DataFrame, window_s: float = DEFAULT_WINDOW_S, *,
                   min_precision: float = DEFAULT_MIN_PRECISION, infer: bool | None = None,
                   rule: str = "auto") -> pd.DataFrame:
    """Chain columns of the module docstring, aligned on ``jobs.index``; ``attrs["source"]`` is
    ``"columns"`` (the data's own chain) or ``"inferred"``. ``infer=True`` ignores chain columns.

    ``rule`` (inference only): ``"auto"`` — the mixture rule where a stratum has the data for it, the
    window rule elsewhere; ``"window"`` — the window rule everywhere (it assumes users submit after a
    failure as often as after a completion: right when they do, far fewer links when they restart
    failures instead; module docstring, *Limits*). An inferred result carries ``attrs["inference"]``:
    ``excluded`` (rows left out, by reason) and ``strata`` (per cluster × type × GPU bucket: failed,
    completed and followed jobs, links, the rule used and its fit)."""
    if rule not in ("auto", "window"):
        raise ValueError(f"rule must be 'auto' or 'window', got {rule!r}")
    if window_s <= 0:
        raise ValueError(f"window_s must be > 0, got {window_s!r}")
    if not 0 < min_precision < 1:
        raise ValueError(f"min_precision must be in (0, 1), got {min_precision!r}")
    n = len(jobs)
    sub = jobs["submit_s"].to_numpy(dtype=float)
    end = jobs["end_s"].to_numpy(dtype=float)
    use_cols = has_chain_columns(jobs) if infer is None else not infer
    if use_cols:
        prev_pos = _prev_from_columns(jobs)
        nxt = np.full(n, -1, dtype=np.int64)
        hp_ = prev_pos >= 0
        nxt[prev_pos[hp_]] = np.flatnonzero(hp_)
    else:
        nxt, info = _inferred_next(jobs, float(window_s), float(min_precision), rule)
    if n and "restart_of" in jobs.columns:  # explicit links of imported traces replace the rule
        ro = jobs["restart_of"].astype(object)
        has = (ro.notna() & (ro.astype(str).str.len() > 0)).to_numpy(dtype=bool)
        if has.any():
            cl = jobs["cluster"].astype(str).to_numpy(object)
            key = pd.Index(cl + "\x1f" + jobs["job_id"].astype(str).to_numpy(object))
            rows = np.flatnonzero(has)
            tgt = key.get_indexer(pd.Index(cl[rows] + "\x1f" + ro.to_numpy(object)[rows].astype(str)))
            ok = (tgt >= 0) & (tgt != rows)
            src, dst = tgt[ok], rows[ok]
            nxt[np.isin(nxt, dst)] = -1
            nxt[src] = dst
    prev = np.full(n, -1, dtype=np.int64)
    has_next = nxt >= 0
    prev[nxt[has_next]] = np.flatnonzero(has_next)

    head, attempt = chain_heads(prev)
    # head holds the first attempt of each chain; renumber densely
    _, chain_id = np.unique(head, return_inverse=True)

    labels = jobs.index.to_numpy()
    restart_gap = np.full(n, np.nan)
    hp = prev >= 0
    restart_gap[hp] = sub[hp] - end[prev[hp]]
    next_gap = np.full(n, np.nan)
    next_queue = np.full(n, np.nan)
    next_gap[has_next] = sub[nxt[has_next]] - end[has_next]
    q = jobs["queue_s"].to_numpy(dtype=float)
    next_queue[has_next] = q[nxt[has_next]]
    out = pd.DataFrame({
        "chain_id": chain_id.astype(np.int64),
        "attempt": attempt,
        "prev_index": np.where(hp, labels[np.maximum(prev, 0)], -1) if n else prev,
        "restart_gap_s": restart_gap,
        "next_index": np.where(has_next, labels[np.maximum(nxt, 0)], -1) if n else nxt,
        "next_restart_gap_s": next_gap,
        "next_queue_s": next_queue,
    }, index=jobs.index)
    out.attrs["source"] = "columns" if use_cols else "inferred"
    if not use_cols:
        out.attrs["inference"] = info
    return out


def batches(jobs: pd.DataFrame, gap_s: float = DEFAULT_BATCH_GAP_S) -> pd.DataFrame:
    """``batch_id`` and ``batch_size`` (see module docstring), aligned on ``jobs.index``."""
    if gap_s < 0:
        raise ValueError(f"gap_s must be >= 0, got {gap_s!r}")
    n = len(jobs)
    if n == 0:
        return pd.DataFrame({"batch_id": np.zeros(0, np.int64), "batch_size": np.zeros(0, np.int64)},
                            index=jobs.index)
    g = _codes(jobs, ["cluster", "user", "type"])
    sub = jobs["submit_s"].to_numpy(dtype=float)
    order = np.lexsort((sub, g))
    gs, ss = g[order], sub[order]
    new = np.r_[True, (gs[1:] != gs[:-1]) | (np.diff(ss) > gap_s)]
    bid_sorted = np.cumsum(new) - 1
    size = np.bincount(bid_sorted)
    batch_id = np.empty(n, dtype=np.int64)
    batch_id[order] = bid_sorted
    return pd.DataFrame({"batch_id": batch_id, "batch_size": size[batch_id]}, index=jobs.index)
