"""Issue #31's run-time figures on real logs: one row per trace with the RuntimeModel's held-out
log-likelihood and log-scale CRPS against the global law (paired gain ± SE, > 0 favours the model),
the RuntimePredictor's MAE of log run time against each baseline, and its p10–p90 coverage ± SE.

Usage::

    python tools/runtime_real_31.py [--test-fraction F | --train-share S] [--json] FILE...

A FILE is read by its name: ``*.swf`` as a Standard Workload Format log, ``disaggregated_DLRM_trace.csv``
(Alibaba cluster-trace-gpu-v2025) as instances = jobs (role = type, app = user, creation → submit,
scheduled → start, deletion → end; an instance without deletion is censored at the file's last time,
one without creation time is left out), ``openb_pod_list*.csv`` (Alibaba cluster-trace-gpu-v2023) as a
Kubernetes pod list, anything else by :func:`acmemodel.trace.load_trace`'s own detection. The split is
by submission time (default: the latest 1/6 of the jobs are the test period), as ``acmemodel evaluate
runtime`` does; the queue model is not fitted (it is not part of these figures).

The data are public logs nobody on this project wrote; nothing here ships them.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from test_real_runtime import dlrm_jobs  # noqa: E402  (the tests' reading of the DLRM instance trace)


def read(path: Path):
    from acmemodel.trace import load_trace

    name = path.name.lower()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if name.endswith(".swf"):
            return load_trace(path, format="swf")
        if "dlrm" in name and name.endswith(".csv"):
            return dlrm_jobs(path)
        if name.startswith("openb_pod_list"):
            return load_trace(path, format="k8s", origin="2023-01-01")
        return load_trace(path)


def figures(path: Path, test_fraction: float | None, crps_draws: int, train_share: float | None = None) -> dict:
    from acmemodel.evaluation.backtest import runtime_backtest

    trace = read(path)
    cutoff = None
    if train_share is not None:  # the cutoff at that share of the jobs in submission order
        jobs = trace.jobs if hasattr(trace, "jobs") else trace
        cutoff = float(np.nanquantile(jobs["submit_s"].to_numpy(float), train_share))
    t0 = time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = runtime_backtest(trace, test_fraction=test_fraction, cutoff=cutoff, include_queue=False,
                               crps_draws=crps_draws)
    out = {"trace": path.name, "cpu_s": round(time.process_time() - t0, 1), "n_train": res.info.get("n_train"),
           "n_test": res.info.get("n_test"), "pooling_k": (res.info.get("runtime_pooling") or {}).get("k"),
           "predictor_error": res.info.get("predictor_error")}
    for c in res.card["comparisons"]:
        if c["model"] == "runtime_model_nostate" and c["baseline"] == "global":
            out[c["metric"]] = {"gain": c["diff"], "se": c["se"], "model": c["model_value"],
                                "base": c["baseline_value"]}
        if c["model"] == "predictor" and c["metric"] == "mae_log":
            out.setdefault("mae", {})[c["baseline"]] = {"gain": c["diff"], "se": c["se"], "model": c["model_value"],
                                                        "base": c["baseline_value"]}
    iv = next((i for i in res.card["intervals"] if i["model"] == "predictor" and i["interval"] == "p10-p90"), None)
    if iv:
        out["coverage"] = {"value": iv["coverage"], "se": iv["se"], "n": iv["n"]}
    return out


def _pm(d):
    return f"{d['gain']:+.3f}±{d['se']:.3f}" if d else "-"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="+", type=Path)
    ap.add_argument("--test-fraction", type=float, default=None)
    ap.add_argument("--train-share", type=float, default=None,
                    help="cutoff at this share of the jobs in submission order (instead of --test-fraction of the time)")
    ap.add_argument("--crps-draws", type=int, default=2000)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    rows = []
    for f in a.files:
        if not f.is_file():
            print(f"error: {f}: no such file", file=sys.stderr)
            return 2
        rows.append(figures(f, a.test_fraction, a.crps_draws, a.train_share))
    if a.json:
        print(json.dumps(rows, indent=1, default=float))
        return 0
    for r in rows:
        mae = r.get("mae", {})
        ok_dist = all(r[m]["gain"] >= -r[m]["se"] for m in ("loglik", "crps_log") if m in r)
        ok_mae = all(v["gain"] >= -v["se"] for v in mae.values())
        cov = r.get("coverage")
        ok_cov = cov is not None and 0.75 - cov["se"] <= cov["value"] <= 0.85 + cov["se"]
        print(f"{r['trace']}  (train {r['n_train']:,}, test {r['n_test']:,} jobs; pooling k {r['pooling_k']};"
              f" fit+score {r['cpu_s']} CPU s)")
        if r["predictor_error"]:
            print(f"  predictor not fitted: {r['predictor_error']}")
        print(f"  RuntimeModel vs global: loglik {_pm(r.get('loglik'))}  CRPS {_pm(r.get('crps_log'))}"
              f"  [{'ok' if ok_dist else 'FAIL'}]")
        if mae:
            m = next(iter(mae.values()))["model"]
            parts = "  ".join(f"{b} {v['base']:.3f} ({_pm(v)})" for b, v in mae.items())
            print(f"  predictor MAE {m:.3f} vs {parts}  [{'ok' if ok_mae else 'FAIL'}]")
        if cov:
            print(f"  p10-p90 coverage {cov['value']:.3f}±{cov['se']:.3f} (n={cov['n']:,})"
                  f"  [{'ok' if ok_cov else 'FAIL'}]")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
