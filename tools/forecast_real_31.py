"""Issue 31, forecasting: ``auto`` against the naive baselines on real daily series, time-ordered.

Every series is backtested by :func:`acmemodel.models.forecast_backtest.backtest_series` (rolling 1 day
ahead and 4 weeks; weekly fit origins, the last ``--weeks``; every forecast uses only the days before
its origin; the settings of :func:`~acmemodel.models.forecast_methods.backtest_settings`). One line per
series × horizon: WAPE of ``auto``, of seasonal naive, of the best naive baseline (chosen in hindsight on
the same windows: the hardest comparison), and the paired differences ± SE (windows grouped by weeks of
origins as independent clusters; < 0 favours auto).

Weekly structure (the "series with weekly structure" of the issue), decided on data no evaluated
forecast is scored on: the weekday F-test of :func:`~acmemodel.models.forecast_models.weekly_structure`
(one-way ANOVA of the detrended log series by weekday, p < 0.05) on the days before the horizon's first
evaluated origin, at least the first 28 days.

Series (the files are read from the paths given; nothing is shipped): ``--real DIR`` holds the NASA
iPSC SWF log, the Alibaba DLRM instance trace and the LANL failure log (``../shared/data/real``);
``--lora`` / ``--openb`` are ``alibaba/clusterdata`` files (``cluster-trace-v2026-GenAI/
lora_request_trace.csv``, ``cluster-trace-gpu-v2023/csv/openb_pod_list_default.csv``). Two sets:
``design`` (the series the selection rule was developed on) and ``heldout`` (series evaluated once,
after the rule was fixed: other LANL systems, per-type and per-size series of the same traces)::

    python tools/forecast_real_31.py --real ../shared/data/real --lora lora_request_trace.csv \\
        --openb openb_pod_list_default.csv --set design --out design.csv
    python tools/forecast_real_31.py --table before.csv after.csv   # the two runs side by side
"""
from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

DAY = 86400.0
#: LANL systems of the design set (seen while the rule was developed); the others with >= 200 failures
#: are held out
LANL_DESIGN = (2, 16, 18, 19, 20, 23)
LANL_HELDOUT = (3, 4, 5, 8, 9, 10, 11, 12, 13, 22)


def _counts(t_s: np.ndarray, day0: float | None = None) -> np.ndarray:
    """Events per day over the complete days from ``day0`` (default: the first whole day) to the last
    event's day (excluded: partial)."""
    t_s = np.sort(t_s[np.isfinite(t_s)])
    d0 = np.ceil(t_s[0] / DAY) if day0 is None else day0
    d1 = np.floor(t_s[-1] / DAY)
    d = np.floor(t_s / DAY) - d0
    d = d[(d >= 0) & (d < d1 - d0)].astype(int)
    return np.bincount(d, minlength=int(d1 - d0)).astype(float)


def _held(s: np.ndarray, e: np.ndarray, w: np.ndarray, d0: float, d1: float) -> np.ndarray:
    """``Σ w × |[s, e) ∩ day|`` in hours for the days ``d0 .. d1 − 1`` (times in seconds)."""
    edges = np.arange(d0, d1 + 1) * DAY
    v = np.isfinite(s) & np.isfinite(e) & (e > s) & (w > 0)
    s, e, w = s[v], e[v], w[v]
    out = np.zeros(len(edges) - 1)
    for k in range(len(out)):
        a, b = edges[k], edges[k + 1]
        out[k] = float(np.sum(w * np.clip(np.minimum(e, b) - np.maximum(s, a), 0, None))) / 3600.0
    return out


def series(real: Path | None, lora: Path | None, openb: Path | None, which: str) -> dict[str, np.ndarray]:
    from acmemodel.models.forecast import daily_series
    from acmemodel.trace import load_trace

    D, H = {}, {}
    if real is not None:
        swf = real / "NASA-iPSC-1993-3.1-cln.swf"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tr = load_trace(swf, format="swf")
            s = daily_series(tr)
        a = s[s["type"] == "ALL"]
        D["NASA jobs/day"] = a["jobs"].to_numpy()
        D["NASA node-h/day"] = a["gpu_hours"].to_numpy()
        j = tr.jobs
        day = np.floor((j["submit_s"].to_numpy(float) - 8 * 3600) / DAY)
        u = pd.DataFrame({"d": day, "u": j["user"].astype(str)}).groupby("d")["u"].nunique()
        u = u.reindex(np.arange(u.index.min(), u.index.max() + 1), fill_value=0)
        D["NASA users/day"] = u.to_numpy(float)[1:-1]
        sub = j["submit_s"].to_numpy(float) - 8 * 3600
        g = j["gpu_num"].to_numpy(float)
        d0 = np.ceil(np.nanmin(sub) / DAY)
        for nm, m in (("NASA 1-node jobs/day", g <= 1), ("NASA >=16-node jobs/day", g >= 16)):
            H[nm] = _counts(sub[m], d0)
        dl = pd.read_csv(real / "disaggregated_DLRM_trace.csv")
        c = dl["creation_time"].to_numpy(float)
        D["DLRM instances/day"] = _counts(c[np.isfinite(c)], 0.0)
        n_dl = len(D["DLRM instances/day"])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            s = daily_series(load_trace(real / "disaggregated_DLRM_trace.csv", format="k8s"))
        D["DLRM GPU-h/day"] = s[s["type"] == "ALL"]["gpu_hours"].to_numpy()
        st = dl["scheduled_time"].to_numpy(float)
        en = dl["deletion_time"].to_numpy(float)
        st = np.where(np.isfinite(st), st, 0.0)       # running at the trace start: left-truncated
        en = np.where(np.isfinite(en), en, n_dl * DAY + DAY)
        D["DLRM CPU-h/day"] = _held(st, en, dl["cpu_request"].to_numpy(float), 0.0, float(n_dl))
        for role in ("CN", "HN"):
            m = (dl["role"] == role).to_numpy() & np.isfinite(c)
            H[f"DLRM {role} instances/day"] = _counts(c[m], 0.0)[:n_dl]
        f = pd.read_csv(real / "LA-UR-05-7318-failure-data-1996-2005.csv.xz", usecols=["System", "Prob Started"])
        f["t"] = pd.to_datetime(f["Prob Started"], format="%m/%d/%Y %H:%M", errors="coerce")
        f = f.dropna(subset=["t"])
        D["LANL failures/day"] = _counts(f["t"].astype("int64").to_numpy() / 1e9)
        for sy, tgt in [(s_, D) for s_ in LANL_DESIGN] + [(s_, H) for s_ in LANL_HELDOUT]:
            t = f[f["System"] == sy]["t"].astype("int64").to_numpy() / 1e9
            tgt[f"LANL sys {sy} failures/day"] = _counts(t)
    if lora is not None:
        d = pd.read_csv(lora)
        d["day"] = pd.to_datetime(d["gmt_create"], errors="coerce").dt.floor("D")
        d = d.dropna(subset=["day"])
        full = pd.date_range(d["day"].min(), d["day"].max(), freq="D")

        def per_day(m, col=None):
            x = d[m]
            v = x.groupby("day")[col].sum() if col else x["day"].value_counts()
            return v.reindex(full, fill_value=0).to_numpy(float)[1:-1]  # first/last day partial
        allm = np.ones(len(d), bool)
        D["LoRA requests/day"] = per_day(allm)
        D["LoRA with-LoRA/day"] = per_day((d["num_lora"] > 0).to_numpy())
        D["LoRA exec-s/day"] = per_day(allm, "exec_time_seconds")
        H["LoRA TXT_2_IMG/day"] = per_day((d["predict_type"] == "TXT_2_IMG").to_numpy())
        H["LoRA non-TXT_2_IMG/day"] = per_day((d["predict_type"] != "TXT_2_IMG").to_numpy())
    if openb is not None:
        o = pd.read_csv(openb)
        c = o["creation_time"].to_numpy(float)
        v = _counts(c[np.isfinite(c)], 0.0)
        first = int(np.argmax(v >= 10))   # the earlier days hold a handful of long-lived pods
        D["OpenB pods/day"] = v[first:]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            s = daily_series(load_trace(openb, format="k8s"))
        D["OpenB GPU-h/day"] = s[s["type"] == "ALL"]["gpu_hours"].to_numpy()[first:]
        for nm, m in (("OpenB LS pods/day", o["qos"] == "LS"), ("OpenB BE pods/day", o["qos"] == "BE"),
                      ("OpenB CPU-only pods/day", o["num_gpu"] == 0)):
            m = m.to_numpy() & np.isfinite(c)
            H[nm] = _counts(c[m], 0.0)[first:len(v)]
        st = o["scheduled_time"].to_numpy(float)
        en = o["deletion_time"].to_numpy(float)
        H["OpenB CPU-core-h/day"] = _held(st, en, o["cpu_milli"].to_numpy(float) / 1000, float(first), float(len(v)))
    out = D if which == "design" else H if which == "heldout" else {**D, **H}
    return {k: np.asarray(v, float) for k, v in out.items() if len(v) >= 21}


def weekly_before(y: np.ndarray, first_origin: int) -> dict:
    from acmemodel.models.forecast_models import weekly_structure

    return weekly_structure(y[:max(28, int(first_origin))])


def run(a) -> pd.DataFrame:
    from acmemodel.models.forecast_backtest import backtest_series
    from acmemodel.models.forecast_methods import backtest_settings

    rows = []
    S = series(Path(a.real) if a.real else None, Path(a.lora) if a.lora else None,
               Path(a.openb) if a.openb else None, a.set)
    for name, y in S.items():
        if a.only and not any(k in name for k in a.only):
            continue
        n = len(y)
        c0, t0 = time.process_time(), time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            bt = backtest_series(y, weeks=min(a.weeks, (n - 14) // 7), **backtest_settings(n))
        cpu, wall = time.process_time() - c0, time.perf_counter() - t0
        sc = bt.scores.set_index(["horizon", "method"])
        w = bt.windows
        for h in (1, 28):
            if (h, "auto") not in sc.index or int(sc.loc[(h, "auto"), "windows"]) == 0:
                continue
            r, sn = sc.loc[(h, "auto")], sc.loc[(h, "seasonal_naive")]
            ev = w[(w["horizon"] == h) & (w["method"] == "auto") & (w["pick"] != "")]  # the evaluated windows
            o1 = int(ev["origin"].min()) if len(ev) else n
            ws = weekly_before(y, o1)
            picks = ev.loc[ev["step"] == 1, "pick"].value_counts()
            rows.append({"series": name, "set": a.set, "days": n, "horizon": h, "windows": int(r["windows"]),
                         "weekly": bool(ws["weekly"]), "weekly_p": ws["p"], "auto": r["wape"], "auto_se": r["wape_se"],
                         "snaive": sn["wape"], "d_snaive": r["diff_snaive"], "d_snaive_se": r["diff_snaive_se"],
                         "best_naive": r["best_naive"], "best_naive_wape": sc.loc[(h, r["best_naive"]), "wape"],
                         "d_best": r["diff_best_naive"], "d_best_se": r["diff_best_naive_se"],
                         "picks": " ".join(f"{k}:{v}" for k, v in picks.items()), "cpu_s": cpu, "wall_s": wall})
            print(_line(rows[-1]), flush=True)
    return pd.DataFrame(rows)


def _pm(d: float, se: float) -> str:
    """``d ± se`` with three decimals, four when the standard error is under 0.001."""
    k = 4 if se < 0.001 else 3
    return f"{d:+.{k}f} ± {se:.{k}f}"


def _flags(r) -> str:
    f = []
    if r["d_best"] > r["d_best_se"]:
        f.append("LOSES to best naive")
    if r["weekly"] and r["auto"] > 0.9 * r["snaive"]:
        f.append("weekly: <10 % gain")
    return "; ".join(f)


def _line(r) -> str:
    rel = (r["auto"] / r["snaive"] - 1) * 100 if r["snaive"] > 0 else float("nan")
    return (f"{r['series'][:28]:28s} {'1 d ' if r['horizon'] == 1 else '4 wk'} W={r['windows']:3d} "
            f"wk={'y' if r['weekly'] else 'n'} auto {r['auto']:.3f} sn {r['snaive']:.3f} ({rel:+4.0f}%) "
            f"best {r['best_naive'][:8]} {r['best_naive_wape']:.3f} Δ {_pm(r['d_best'], r['d_best_se'])} "
            f"{_flags(r)}")


def table(before: Path, after: Path) -> str:
    """Markdown: series × horizon, before and after."""
    b = pd.read_csv(before).set_index(["series", "horizon"])
    a = pd.read_csv(after)
    out = ["| set | series | h | W | weekly (p) | auto before | auto after | s-naive | after vs s-naive | "
           "best naive | Δ best before | Δ best after | flags after |", "|" + "---|" * 13]
    for r in a.itertuples(index=False):
        r = r._asdict()
        k = (r["series"], r["horizon"])
        bb = b.loc[k] if k in b.index else None
        rel = (r["auto"] / r["snaive"] - 1) * 100 if r["snaive"] > 0 else float("nan")
        hz = "1 d" if r["horizon"] == 1 else "4 wk"
        out.append(f"| {r['set']} | {r['series']} | {hz} | {r['windows']} | "
                   f"{'yes' if r['weekly'] else 'no'} ({r['weekly_p']:.2g}) | "
                   + (f"{bb['auto']:.3f} | " if bb is not None else "– | ")
                   + f"{r['auto']:.3f} | {r['snaive']:.3f} | {rel:+.0f} % | "
                   + f"{r['best_naive']} {r['best_naive_wape']:.3f} | "
                   + (f"{_pm(bb['d_best'], bb['d_best_se'])} | " if bb is not None else "– | ")
                   + f"{_pm(r['d_best'], r['d_best_se'])} | {_flags(r) or 'ok'} |")
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--real", help="directory with the NASA SWF, DLRM and LANL files")
    ap.add_argument("--lora", help="alibaba/clusterdata lora_request_trace.csv")
    ap.add_argument("--openb", help="alibaba/clusterdata openb_pod_list_default.csv")
    ap.add_argument("--set", choices=("design", "heldout", "all"), default="design")
    ap.add_argument("--weeks", type=int, default=40, help="weekly fit origins (the latest ones)")
    ap.add_argument("--only", nargs="*", default=[], help="only the series whose names hold one of these")
    ap.add_argument("--out", help="CSV of the lines")
    ap.add_argument("--table", nargs=2, metavar=("BEFORE", "AFTER"), help="print the two runs side by side")
    a = ap.parse_args(argv)
    if a.table:
        print(table(Path(a.table[0]), Path(a.table[1])))
        return 0
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    df = run(a)
    if a.out:
        df.to_csv(a.out, index=False)
    print(f"CPU seconds of the backtests: {df['cpu_s'].drop_duplicates().sum():.0f}" if len(df) else "no series")
    return 0


if __name__ == "__main__":
    sys.exit(main())
