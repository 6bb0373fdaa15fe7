"""The calibration's passes on synthetic traces of a candidate bundle (:func:`acmemodel.calibrate.calibrate`):
the synthetic state rates and type shares of the traces ``reproduce`` draws and the fixed-point offsets
towards the published values (:func:`synthetic_state_calibration`, scored by :func:`fixed_point_score`),
and the queue policy and latency chosen on the synthesiser's workload (:func:`synthetic_queue_calibration`).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from acmemodel.calibrate_inputs import Workers, fixed_point_offsets, synthetic_rates
from acmemodel.calibrate_queue import calibrate_queue_jobs
from acmemodel.clusters import CLUSTER_TZ, published_duration_includes_queue
from acmemodel.reproduction.run import replica_seed, synthesize_cluster
from acmemodel.synth import simulate_jobs


def fixed_point_score(states: dict) -> float:
    """Miss of a candidate bundle: Σ over clusters and targets (state rates, type GPU-time shares) of
    ``((published − synthetic) / 2 pp)²`` (the quality bar), from :func:`synthetic_state_calibration`'s
    measurement."""
    return float(sum((v / 0.02) ** 2 for cl, st in states.items() if st["synthetic"] is not None
                     for v in fixed_point_offsets(cl, st["synthetic"]).values()))


def _synthetic_frame(bundle, cluster: str, seed: int, days: float) -> pd.DataFrame:
    """One synthetic trace of ``cluster`` as reproduce draws it, reduced to what :func:`synthetic_rates` reads
    (its GPU jobs with a run; columns ``gpu_num, run_s, queue_s, state, type``): a worker's answer."""
    j = synthesize_cluster(bundle, cluster, seed=seed, days=days)[0]
    j = j[(j["gpu_num"].to_numpy() > 0) & np.isfinite(j["run_s"].to_numpy(float))]
    return j[["gpu_num", "run_s", "queue_s", "state", "type"]].reset_index(drop=True)


def synthetic_state_calibration(bundle, *, days: float, seed: int, traces: dict[str, int], step: float = 1.0,
                                log=None, workers=None) -> dict:
    """The fixed-point step of the targets per cluster: ``bundle``'s synthetic state rates and type shares —
    ``traces[cluster]`` traces of ``days`` as :func:`acmemodel.reproduction.run.reproduce` draws them
    (:func:`~acmemodel.reproduction.run.synthesize_cluster`: the recorded policy and start-up latency; seeds
    ``replica_seed(seed + 31, cluster, r)``), pooled, on the published basis (Kalos: GPUs × (end − submit))
    — and the offsets ``step × (published − synthetic)`` (:func:`acmemodel.calibrate_inputs.fixed_point_offsets`)
    that the next pass adds to the published values (a cluster with 0 traces: none). The traces are
    independent (own seeds): ``workers`` (:class:`acmemodel.calibrate_inputs.Workers`) draw them in parallel
    and they are pooled in the replicas' order, the same result with any number of workers. Returns
    {cluster: {"synthetic", "offsets"}}."""
    out = {}
    todo = [(cluster, i, r) for i, cluster in enumerate(CLUSTER_TZ) for r in range(int(traces.get(cluster, 0)))]
    drawn = (workers or Workers(1)).map(_synthetic_frame, [(bundle, cluster, replica_seed(seed + 31, i, r), days)
                                                           for cluster, i, r in todo])
    for i, cluster in enumerate(CLUSTER_TZ):
        k = int(traces.get(cluster, 0))
        if k <= 0:
            out[cluster] = {"synthetic": None, "offsets": {}}
            continue
        frames = [f for (cl, _i, _r), f in zip(todo, drawn) if cl == cluster]
        syn = synthetic_rates(frames, queue_in_duration=published_duration_includes_queue(cluster))
        out[cluster] = {"synthetic": syn, "offsets": fixed_point_offsets(cluster, syn, step)}
        if log is not None:
            log(f"{cluster} on {k} synthetic traces: " + ", ".join(
                f"{key} {100 * syn.get(key, 0.0):.1f} % ({100 * v:+.1f} pp)" for key, v in out[cluster]["offsets"].items()))
    return out


def synthetic_queue_calibration(bundle, reports: dict, *, days: float, seed: int, log=None, workers=None) -> dict:
    """The policy and latency chosen per cluster (:func:`acmemodel.calibrate_queue.calibrate_queue_jobs`, every
    candidate) on a synthetic workload of ``bundle`` (:func:`acmemodel.synth.simulate_jobs`, ``days``, seed
    ``seed + 1``, the bundle's volume): the workload that synth and reproduce put on the simulator, which differs
    from the pseudo-trace in load and burstiness. The first pass's latency laws (``reports``) pre-score the
    candidates (``workers``: simulate them in parallel, the same result). Returns {cluster: calibrate_queue_jobs
    result}."""
    out = {}
    for cluster in CLUSTER_TZ:
        # independent pretraining arrivals: every candidate places them within its own reservation
        wl = simulate_jobs(bundle, days=days, cluster=cluster, seed=seed + 1, scale=1.0, pretrain_gpus=None)
        wl = wl[(wl["gpu_num"] > 0) & np.isfinite(wl["run_s"].to_numpy(float))].reset_index(drop=True)
        first = reports.get(cluster) or {}
        out[cluster] = calibrate_queue_jobs(wl, cluster, seed=seed, stress=0.0, latency_guess=first.get("latency"),
                                            log=log, workers=workers)
        out[cluster]["first_pass"] = first.get("policy")
    return out
