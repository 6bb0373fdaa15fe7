"""Make the shipped sample traces ``sample_seren.csv.gz`` and ``sample_kalos.csv.gz``.

The raw AcmeTrace CSVs are not redistributed with this package. The sample is a *synthetic
look-alike* made from the published statistics (``data/reference/``), in the exact AcmeTrace schemas
and value formats, so that every command runs offline. How each column is drawn (seeded, reproducible):

* submissions: six months (2023-03-01 → 2023-08-31, local time) of an hour-of-day × weekday profile
  (working hours, half rate on weekends — an assumption, nothing was published); Eval jobs arrive in
  bursts of one user within seconds (geometric batch sizes, mean 8 on Seren, 20 on Kalos);
* type: the GPU-job mix by count of ``workload_mix.csv``; CPU jobs (``gpu_num = 0``) in the CPU-job
  proportion of ``cluster_summary.csv``;
* GPUs: a log-linear quantile function through the box-plot whiskers and quartiles of
  ``gpu_count_box_by_type.csv``, rounded to a power of two (the dominant sizes);
* run time: inverse of the per-type duration CDF of ``duration_cdf_by_type.csv`` (log-linear between
  the published points). For Kalos the published curve includes the queue; the sample treats it as
  run time (it is a look-alike, not a reconstruction);
* final state: failures concentrated in short runs, long Pretrain runs mostly cancelled (stopped by
  their owners), overall rates near ``cluster_summary.csv``; 1 % of failures TIMEOUT, 1 % NODE_FAIL;
* queue: an atom at 0–1 s plus a lognormal wait (Eval waits longest on Seren); 0.5 % of CANCELLED
  jobs are cancelled while queued (empty ``start_time``);
* restart chains: 70 % of failed Pretrain/SFT/MLLM jobs are resubmitted by the same user with the same
  GPUs after a lognormal gap (median 10 min).

Regenerate with ``python -m acmemodel.datasets._make_sample`` (writes into ``data/``).
"""
from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pandas as pd

from acmemodel.datasets.reference import _data_path

CLUSTERS = {
    # cluster: (rows, tz offset hours, eval batch mean, cpu share, schema)
    "Seren": dict(rows=5000, tz=8, batch_mean=8.0, cpu_share=0.356, schema="seren"),
    "Kalos": dict(rows=3000, tz=0, batch_mean=20.0, cpu_share=0.35, schema="kalos"),
}
START = pd.Timestamp("2023-03-01")
DAYS = 184
SEED = 20230301


def _ref(name: str) -> pd.DataFrame:
    with _data_path(f"reference/{name}").open("r") as f:
        return pd.read_csv(f)


def _hour_profile() -> np.ndarray:
    h = np.arange(24)
    prof = 0.25 + np.exp(-0.5 * ((h - 15.0) / 4.5) ** 2)  # busiest mid-afternoon, quiet at night
    return prof / prof.sum()


def _sample_times(rng, n: int) -> np.ndarray:
    """Local submission times (seconds since START) of ``n`` arrivals."""
    day_w = np.array([1.0 if (START + pd.Timedelta(days=d)).dayofweek < 5 else 0.5 for d in range(DAYS)])
    day = rng.choice(DAYS, size=n, p=day_w / day_w.sum())
    hour = rng.choice(24, size=n, p=_hour_profile())
    return day * 86400.0 + hour * 3600.0 + rng.uniform(0, 3600, n)


def _gpus(rng, box: pd.Series, n: int) -> np.ndarray:
    qs = np.log2(box[["whisker_low", "q1", "median", "q3", "whisker_high"]].to_numpy(dtype=float))
    u = rng.uniform(0, 1, n)
    lg = np.interp(u, [0.0, 0.25, 0.5, 0.75, 1.0], qs)
    return (2 ** np.round(lg)).astype(np.int64)


def _runtimes(rng, curve: pd.DataFrame, n: int) -> np.ndarray:
    x = np.log2(curve["x_s"].to_numpy(float))
    p = np.maximum.accumulate(curve["cdf_percent"].to_numpy(float) / 100.0)
    u = rng.uniform(0, 1, n)
    lo = p[0]
    out = np.empty(n)
    below = u < lo
    out[below] = rng.uniform(0, 1, below.sum())  # under one second
    pp, idx = np.unique(p, return_index=True)
    xx = x[idx]
    pp = np.r_[pp, 1.0] if pp[-1] < 1 else pp
    xx = np.r_[xx, x[-1] + 0.5] if len(xx) < len(pp) else xx
    out[~below] = 2 ** np.interp(u[~below], pp, xx)
    return np.round(out)


def _states(rng, typ: np.ndarray, run: np.ndarray) -> np.ndarray:
    n = len(run)
    short = run < 60
    p_fail = np.where(short, 0.62, np.where(run < 3600, 0.35, 0.18))
    p_cancel = np.where(run > 3600, 0.25, 0.05)
    p_cancel = np.where((typ == "Pretrain") & (run > 3600), 0.65, p_cancel)
    u = rng.uniform(0, 1, n)
    state = np.where(u < p_fail, "FAILED", np.where(u < p_fail + p_cancel, "CANCELLED", "COMPLETED"))
    v = rng.uniform(0, 1, n)
    state = np.where((state == "FAILED") & (v < 0.01), "TIMEOUT", state)
    state = np.where((state == "FAILED") & (v > 0.99), "NODE_FAIL", state)
    return state.astype(object)


def make_cluster(cluster: str, rng: np.random.Generator) -> pd.DataFrame:
    """A jobs frame (``submit_l``, ``start_l``, ``end_l`` local seconds) for one cluster."""
    cfg = CLUSTERS[cluster]
    mix = _ref("workload_mix.csv").query("cluster == @cluster")
    box = _ref("gpu_count_box_by_type.csv").query("cluster == @cluster").set_index("type")
    cdf = _ref("duration_cdf_by_type.csv").query("cluster == @cluster")
    n_total = cfg["rows"]
    n_gpu = int(round(n_total * (1 - cfg["cpu_share"])))
    types = mix["type"].to_numpy()
    p = mix["job_count_percent"].to_numpy() / mix["job_count_percent"].sum()
    typ = rng.choice(types, size=n_gpu, p=p)

    # Eval bursts: group the eval jobs into batches of one user
    users = np.array([f"u{rng.integers(1000, 9999)}" for _ in range(60)])
    uw = 1.0 / np.arange(1, len(users) + 1)
    uw /= uw.sum()
    is_eval = typ == "Eval"
    n_eval = int(is_eval.sum())
    sizes = []
    while sum(sizes) < n_eval:
        sizes.append(int(rng.geometric(1.0 / cfg["batch_mean"])))
    sizes[-1] -= sum(sizes) - n_eval
    sizes = np.array([s for s in sizes if s > 0])
    b_start = _sample_times(rng, len(sizes))
    b_user = rng.choice(users, size=len(sizes), p=uw)
    within = np.concatenate([np.cumsum(rng.exponential(4.0, s)) - 0 for s in sizes])
    submit = np.empty(n_gpu)
    user = np.empty(n_gpu, dtype=object)
    submit[is_eval] = np.repeat(b_start, sizes) + within
    user[is_eval] = np.repeat(b_user, sizes)
    submit[~is_eval] = _sample_times(rng, n_gpu - n_eval)
    user[~is_eval] = rng.choice(users, size=n_gpu - n_eval, p=uw)

    gpus = np.ones(n_gpu, dtype=np.int64)
    run = np.empty(n_gpu)
    for t in types:
        m = typ == t
        gpus[m] = _gpus(rng, box.loc[t], int(m.sum()))
        label = "Evaluation" if t == "Eval" else t
        run[m] = _runtimes(rng, cdf[cdf["type"] == label], int(m.sum()))
    # large jobs run longer: a mild size effect on top of the per-type curve
    run = np.round(run * np.where(gpus >= 256, 2.0, 1.0))
    state = _states(rng, typ, run)

    # CPU jobs
    n_cpu = n_total - n_gpu
    cpu_typ = rng.choice(np.array(["Other", "Eval", "Debug"]), size=n_cpu, p=[0.7, 0.2, 0.1])
    cpu_run = np.round(np.exp(rng.normal(np.log(14.0), 2.2, n_cpu)))
    cpu_state = np.where(rng.uniform(0, 1, n_cpu) < 0.86, "COMPLETED",
                         np.where(rng.uniform(0, 1, n_cpu) < 0.72, "FAILED", "CANCELLED")).astype(object)
    df = pd.DataFrame({
        "user": np.r_[user, rng.choice(users, size=n_cpu, p=uw)],
        "type": np.r_[typ, cpu_typ],
        "gpu_num": np.r_[gpus, np.zeros(n_cpu, np.int64)],
        "run": np.r_[run, cpu_run],
        "state": np.r_[state, cpu_state],
        "submit_l": np.r_[submit, _sample_times(rng, n_cpu)],
    })

    # restart chains: failed multi-GPU training jobs resubmitted by their owner
    extra = []
    cur = df[(df["state"] == "FAILED") & df["type"].isin(["Pretrain", "SFT", "MLLM"])]
    for _ in range(3):
        cur = cur[rng.uniform(0, 1, len(cur)) < 0.7]
        if cur.empty:
            break
        nxt = cur[["user", "type", "gpu_num"]].copy()
        nxt["submit_l"] = (cur["submit_l"] + cur["run"] + 30.0
                           + np.exp(rng.normal(np.log(600.0), 1.5, len(cur)))).to_numpy()
        label = {t: ("Evaluation" if t == "Eval" else t) for t in types}
        nxt["run"] = [(_runtimes(rng, cdf[cdf["type"] == label[t]], 1)[0]) for t in nxt["type"]]
        nxt["state"] = _states(rng, nxt["type"].to_numpy(), nxt["run"].to_numpy())
        extra.append(nxt)
        cur = nxt[nxt["state"] == "FAILED"]
    if extra:
        df = pd.concat([df, *extra], ignore_index=True)

    # queueing delay: atom at 0-1 s, else lognormal; Eval waits longest on Seren
    n = len(df)
    atom = rng.uniform(0, 1, n) < (0.55 if cluster == "Seren" else 0.25)
    med = np.where(df["type"] == "Eval", 600.0 if cluster == "Seren" else 40.0, 90.0 if cluster == "Seren" else 25.0)
    wait = np.where(atom, rng.integers(0, 2, n), np.round(np.exp(rng.normal(np.log(med), 1.8))))
    wait = np.where(df["gpu_num"] == 0, rng.integers(0, 3, n), wait)
    df["queue"] = wait
    df["start_l"] = df["submit_l"] + df["queue"]
    df["end_l"] = df["start_l"] + df["run"]
    never = (df["state"] == "CANCELLED").to_numpy() & (rng.uniform(0, 1, n) < 0.05)
    df.loc[never, "start_l"] = np.nan
    df.loc[never, "end_l"] = df.loc[never, "submit_l"] + df.loc[never, "queue"]
    df["node_num"] = np.maximum(1, np.ceil(df["gpu_num"] / 8)).astype(np.int64)
    df["cpu_num"] = np.where(df["gpu_num"] > 0, np.minimum(df["gpu_num"], 8) * 16 * df["node_num"] // np.maximum(1, np.minimum(df["gpu_num"], 8)),
                             rng.choice([4, 8, 16, 32, 64], n))
    df = df.sort_values("submit_l", kind="stable").reset_index(drop=True)
    df["submit_l"] = np.floor(df["submit_l"])
    df["start_l"] = np.floor(df["start_l"])
    df["end_l"] = np.floor(df["end_l"])
    return df


def _fmt(sec: pd.Series, tz_hours: int) -> pd.Series:
    ts = START + pd.to_timedelta(sec, unit="s")
    s = ts.dt.strftime("%Y-%m-%d %H:%M:%S") + f"+{tz_hours:02d}:00"
    return s.where(sec.notna(), "")


def to_acmetrace(df: pd.DataFrame, cluster: str) -> pd.DataFrame:
    """Format a sample frame as the cluster's published CSV columns and value formats."""
    cfg = CLUSTERS[cluster]
    started = df["start_l"].notna()
    run = (df["end_l"] - df["start_l"]).where(started, 0)
    queue = (df["start_l"] - df["submit_l"]).where(started, df["end_l"] - df["submit_l"])
    if cluster == "Seren":
        ids = (5778432 + np.arange(len(df)) * 7).astype(str)
        return pd.DataFrame({
            "job_id": ids, "user": df["user"], "node_num": df["node_num"], "gpu_num": df["gpu_num"],
            "cpu_num": df["cpu_num"].astype(np.int64), "type": df["type"], "state": df["state"],
            "submit_time": _fmt(df["submit_l"], cfg["tz"]), "start_time": _fmt(df["start_l"], cfg["tz"]),
            "end_time": _fmt(df["end_l"], cfg["tz"]), "duration": run.astype(np.int64),
            "queue": queue.astype(np.int64), "gpu_time": (df["gpu_num"] * run).astype(float),
        })
    rng = np.random.default_rng(SEED + 1)
    alphabet = np.array(list("abcdefghijklmnopqrstuvwxyz0123456789"))
    ids = ["dlc" + "".join(rng.choice(alphabet, 13)) for _ in range(len(df))]
    # Kalos publishes duration = end - submit (queue included) and gpu_time from it
    duration = (df["end_l"] - df["submit_l"]).astype(np.int64)
    failed = df["state"].isin(["FAILED", "TIMEOUT", "NODE_FAIL"])
    return pd.DataFrame({
        "job_id": ids, "user": "u" + df["user"].str[1:].map(lambda s: format(int(s), "x")),
        "node_num": df["node_num"], "gpu_num": df["gpu_num"], "cpu_num": (df["node_num"] * 120).astype(np.int64),
        "mem_per_pod_GB": np.where(df["gpu_num"] > 0, 1000, 100),
        "shared_mem_per_pod": np.where(df["gpu_num"] > 0, 100.0, 10.0),
        "type": df["type"], "state": df["state"],
        "submit_time": _fmt(df["submit_l"], cfg["tz"]), "start_time": _fmt(df["start_l"], cfg["tz"]),
        "end_time": _fmt(df["end_l"], cfg["tz"]),
        "fail_time": _fmt(df["end_l"].where(failed), cfg["tz"]),
        "stop_time": _fmt(df["end_l"].where(df["state"] == "CANCELLED"), cfg["tz"]),
        "duration": duration, "queue": queue.astype(float), "gpu_time": (df["gpu_num"] * duration).astype(float),
    })


def main(out_dir: str | Path | None = None) -> list[Path]:
    out_dir = Path(out_dir) if out_dir else Path(__file__).parent / "data"
    rng = np.random.default_rng(SEED)
    written = []
    for cluster in CLUSTERS:
        frame = to_acmetrace(make_cluster(cluster, rng), cluster)
        path = out_dir / f"sample_{cluster.lower()}.csv.gz"
        with gzip.GzipFile(path, "wb", mtime=0) as f:
            f.write(frame.to_csv(index=False).encode())
        written.append(path)
    return written


if __name__ == "__main__":  # pragma: no cover
    for p in main():
        print(p)
