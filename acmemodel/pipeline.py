"""Fit every model family of the package on one trace and collect them in a :class:`Bundle`.

Used by ``acmemodel fit`` (a real trace) and by :mod:`acmemodel.calibrate` (the pseudo-trace built
from published statistics), so both bundles hold the same models fitted the same way.
"""
from __future__ import annotations

import time
from typing import Callable, Iterable

import numpy as np
import pandas as pd

from acmemodel.models.bundle import Bundle


def _builders() -> dict[str, Callable[[], object]]:
    """name → constructor of each model a fitted bundle holds (:data:`acmemodel.models.DEFAULT_MODELS`)."""
    from acmemodel.models import DEFAULT_MODELS, MODELS

    return {m: MODELS[m] for m in DEFAULT_MODELS}


def model_names() -> list[str]:
    return list(_builders())


#: trace columns no model of a bundle reads (provenance and display only: row origin, the datetime twins of the
#: ``*_s`` seconds, the AcmeTrace totals): :func:`drop_unused_columns` frees them before a fit
UNUSED_COLUMNS = ("source_file", "source_line", "submit_time", "start_time", "end_time", "shared_mem_per_pod",
                  "gpu_time_s")


def drop_unused_columns(jobs: pd.DataFrame) -> pd.DataFrame:
    """Drop :data:`UNUSED_COLUMNS` from ``jobs`` in place (the fit's memory: about 130 MB per million jobs of a
    Parquet trace, a quarter of its job table) and return it. Call it once the trace's provenance is taken."""
    jobs.drop(columns=[c for c in UNUSED_COLUMNS if c in jobs.columns], inplace=True)
    return jobs


def fit_bundle(jobs: pd.DataFrame, timezones: dict[str, str] | None = None, *,
               models: Iterable[str] | None = None, provenance: dict | None = None, name: str = "bundle",
               params: dict[str, dict] | None = None, subsets: dict[str, "pd.Series"] | None = None,
               log: Callable[[str], None] | None = None,
               progress: Callable[..., None] | None = None, clusters: dict | None = None,
               client=None, frames: dict[str, pd.DataFrame] | None = None,
               processes: int | None = None) -> Bundle:
    """Fit the named models (default: all) on ``jobs`` (the trace contract) and bundle them.

    ``params`` maps a model name to constructor keyword arguments; ``subsets`` maps a model name to a
    boolean mask of the rows it is fitted on (default: all rows). ``provenance`` is stored as given,
    plus per-model fit seconds under ``"fit_seconds"`` and, when a fit warned, one sentence per distinct
    warning under ``"fit_notes"`` (``{model: [sentence]}``; each is re-issued once as a warning).
    ``progress(done, total, description)`` is called before each model and at the end.
    ``clusters`` (name → :class:`~acmemodel.clusters.ClusterSpec`, e.g. ``Trace.cluster_specs``) is stored
    under ``provenance["clusters"]``: the bundle then describes its clusters (:meth:`Bundle.clusters`).

    With ``models=None`` (every model) a model the trace cannot inform is left out of the bundle with its
    reason as a note (its fit's ``ValueError``, e.g. a trace without a failed job has no failure model; a
    trace without a recorded wait no queue model); a model named in ``models`` raises instead.

    ``frames`` maps a model name to the jobs table it is fitted on instead of ``jobs`` (the out-of-core fit,
    :func:`fit_streamed`: every job for the models fitted exactly, a sample for the others).

    ``client``: a ``dask.distributed.Client``. The models are then fitted as one task each on its workers
    (the job table scattered once to every worker), the most expensive first, and each fitted model comes
    back as its bundle document (``to_dict`` JSON plus LightGBM text artifacts) and is rebuilt with
    ``BaseModel.from_dict``: the models are independent given the trace, so the bundle is the one the
    in-process fit gives (tests/test_pipeline_dask.py), and the wall time is that of the slowest model.

    ``processes``: without a ``client``, the models are fitted in that many processes forked from this one
    (Linux; the job table is shared with them copy-on-write, not copied), the most expensive first, each fitted
    model sent back whole: the same bundle as one process (in memory too), in about the slowest model's time. Default :func:`default_processes` (the CPUs this process may use, at most 4; one process
    below :data:`PARALLEL_MIN_JOBS` jobs, where a fork costs more than it saves, and where there is no fork).
    """
    from acmemodel.trace import Trace

    builders = _builders()
    names = list(models) if models is not None else list(builders)
    bad = [m for m in names if m not in builders]
    if bad:
        raise ValueError(f"models: unknown model(s) {bad}; choose from {', '.join(builders)}")
    params, subsets, frames = dict(params or {}), dict(subsets or {}), dict(frames or {})
    unknown = (set(params) | set(subsets) | set(frames)) - set(names)
    if unknown:
        raise ValueError(f"params/subsets name models that are not fitted: {sorted(unknown)}")
    trace = Trace(jobs=jobs, rejected=pd.DataFrame(), timezones=dict(timezones or {}))
    skips = {"queue": _no_recorded_waits(frames.get("queue", jobs))} if "queue" in names else {}
    skips = {m: why for m, why in skips.items() if why}
    if client is not None:
        return _fit_on_dask(client, jobs, trace.timezones, names, params, subsets, provenance, name, log, progress,
                            skips, explicit=models is not None, clusters=clusters, frames=frames)
    n_proc = default_processes(len(jobs)) if processes is None else max(int(processes), 1)
    if n_proc > 1 and len([m for m in names if m not in skips]) > 1 and _can_fork():
        return _fit_forked(n_proc, jobs, trace.timezones, names, params, subsets, provenance, name, log, progress,
                           skips, explicit=models is not None, clusters=clusters, frames=frames)
    docs = {m: {"skipped": why} for m, why in skips.items()}  # (e.g. unknown waits are missing, never zeros)
    for i, m in enumerate(names):
        if progress is not None:
            progress(i, len(names), f"fitting {m}")
        if m in skips:
            continue
        try:
            model, out = _fit_task(m, params.get(m, {}), frames.get(m, jobs), subsets.get(m), trace.timezones)
        except ValueError as e:  # the trace cannot inform this model (e.g. no failed job)
            if models is not None:  # asked for by name: the error is the answer
                raise
            docs[m] = {"skipped": _not_fitted(e)}
            continue
        docs[m] = {"fitted": model, **out}
        _release_memory()
        if log:
            log(f"fitted {m} in {out['seconds']:.1f} s")
    if progress is not None:
        progress(len(names), len(names), "fitted")
    return _bundle_of_documents(docs, names, provenance, jobs, clusters, name)


#: models in the order a parallel fit submits them: the slowest first (CPU seconds of a 1M-job trace: predictor
#: 18.8, queue 10.8, runtime 10.3, failure 6.6, arrival 2.3, restart 1.7)
_COST_ORDER = ("predictor", "queue", "runtime", "failure", "arrival", "restart", "gpu_counts")
#: the smallest trace (jobs) :func:`default_processes` fits in several processes
PARALLEL_MIN_JOBS = 50_000
#: the most processes :func:`default_processes` gives (each holds its own model's work arrays)
MAX_DEFAULT_PROCESSES = 4


def default_processes(n_jobs: int) -> int:
    """Processes of an in-process :func:`fit_bundle` by default: the CPUs this process may use, at most
    :data:`MAX_DEFAULT_PROCESSES`, for a trace of at least :data:`PARALLEL_MIN_JOBS` jobs; else 1."""
    if n_jobs < PARALLEL_MIN_JOBS:
        return 1
    return max(1, min(_cpus(), MAX_DEFAULT_PROCESSES))


def _cpus() -> int:
    """The CPUs this process may use."""
    import os

    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _can_fork() -> bool:
    """Whether the models can be fitted in forked processes (Linux: ``fork`` shares the job table with them
    copy-on-write; elsewhere fork is unavailable or unsafe, and the fit stays in one process)."""
    import multiprocessing
    import sys

    return sys.platform.startswith("linux") and "fork" in multiprocessing.get_all_start_methods()


#: what the forked fit processes read (set by :func:`_fit_forked` before it forks them: inherited, not sent)
_FORK_STATE: dict = {}


def _fit_forked_document(m: str, params: dict) -> dict:
    """One model's fit in a forked process, on the table the parent left in :data:`_FORK_STATE`: as
    :func:`fit_model_document`, but the fitted model itself comes back (``"fitted"``, through the pool's pipe, at
    full precision: the bundle in memory is the one-process fit's, not its saved and rounded document). The
    process's LightGBM threads are capped at its share of the CPUs (:func:`~acmemodel.models.lgbm_text.limit_threads`:
    the same trees, without two processes' threads contending for the same cores)."""
    from acmemodel.models.lgbm_text import limit_threads

    st = _FORK_STATE
    limit_threads(max(1, _cpus() // st["processes"]))
    model, out = _fit_task(m, params, st["frames"].get(m, st["jobs"]), st["subsets"].get(m), st["timezones"])
    return {"fitted": model, **out}


def _fit_forked(n_proc, jobs, timezones, names, params, subsets, provenance, name, log, progress, skips,
                explicit: bool, clusters=None, frames=None) -> Bundle:
    """:func:`fit_bundle` with the models fitted in ``n_proc`` forked processes (see its ``processes``)."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed

    todo = [m for m in _by_cost(names) if m not in skips]
    n_proc = min(n_proc, len(todo))
    _FORK_STATE.update(jobs=jobs, frames=dict(frames or {}), subsets=dict(subsets or {}), timezones=dict(timezones),
                       processes=n_proc)
    docs = {m: {"skipped": why} for m, why in skips.items()}
    try:
        with ProcessPoolExecutor(n_proc, mp_context=multiprocessing.get_context("fork")) as pool:
            futures = {pool.submit(_fit_forked_document, m, params.get(m, {})): m for m in todo}
            if progress is not None:
                progress(0, len(names), f"fitting {', '.join(todo)} in {n_proc} processes")
            for i, fut in enumerate(as_completed(futures)):
                _take_document(docs, futures[fut], fut, explicit, log)
                if progress is not None:
                    progress(i + 1, len(names), f"fitted {futures[fut]}")
    finally:
        _FORK_STATE.clear()
    return _bundle_of_documents(docs, names, provenance, jobs, clusters, name)


def _by_cost(names) -> list[str]:
    """``names``, the most expensive model first (:data:`_COST_ORDER`)."""
    return sorted(names, key=lambda m: _COST_ORDER.index(m) if m in _COST_ORDER else len(_COST_ORDER))


def _take_document(docs: dict, m: str, fut, explicit: bool, log) -> None:
    """Store a finished fit task's document (or, for a model the trace cannot inform, its skip note)."""
    try:
        docs[m] = fut.result()
    except ValueError as e:  # as in-process: the trace cannot inform this model
        if explicit:
            raise
        docs[m] = {"skipped": _not_fitted(e)}
    if log and "seconds" in docs[m]:
        log(f"fitted {m} in {docs[m]['seconds']:.1f} s")


def _bundle_of_documents(docs: dict, names, provenance, jobs, clusters, name) -> Bundle:
    """The bundle of the fit tasks' documents, in the in-process order (the same bundle document), their notes
    re-issued as warnings."""
    import warnings

    from acmemodel import errors
    from acmemodel.models.base import BaseModel

    fitted, seconds, notes = {}, {}, {}
    for m in names:
        d = docs[m]
        if "skipped" in d:
            notes[m] = {d["skipped"]: errors.DataWarning}
            warnings.warn(f"{m}: {d['skipped']}", errors.DataWarning, stacklevel=3)
            continue
        fitted[m] = d["fitted"] if "fitted" in d else BaseModel.from_dict(d["model"], d["artifacts"])
        seconds[m] = d["seconds"]
        if d["notes"]:  # (a category by name from a Dask worker's document)
            notes[m] = {text: cat if isinstance(cat, type) else getattr(errors, cat, UserWarning)
                        for text, cat in d["notes"]}
        for text, category in notes.get(m, {}).items():  # one warning per distinct message, not one per call
            warnings.warn(f"{m}: {text}", category, stacklevel=3)
    return Bundle(fitted, provenance=_provenance(provenance, seconds, notes, jobs, clusters), name=name)


def fit_model_document(m: str, params: dict, jobs: pd.DataFrame, mask, timezones: dict) -> dict:
    """One model's fit as a worker task: the model's bundle document (``to_dict`` JSON and LightGBM text
    artifacts), its fit seconds and its warnings as ``(sentence, category name)`` pairs."""
    model, out = _fit_task(m, params, jobs, mask, timezones)
    return {"model": model.to_dict(), "artifacts": model.artifacts(), "seconds": out["seconds"],
            "notes": [(text, cat.__name__) for text, cat in out["notes"]]}


def _fit_task(m: str, params: dict, jobs: pd.DataFrame, mask, timezones: dict):
    """(fitted model, {"seconds", "notes"}) of one model fitted on ``jobs`` (rows ``mask``), its warnings recorded
    as ``(sentence, category)`` pairs, one per distinct message."""
    import warnings

    from acmemodel.trace import Trace

    data = jobs if mask is None else jobs[mask].reset_index(drop=True)
    t = time.perf_counter()
    model = _builders()[m](**params)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _fit_one(model, Trace(jobs=data, rejected=pd.DataFrame(), timezones=dict(timezones)))
    return model, {"seconds": round(time.perf_counter() - t, 3), "notes": list(_warning_sentences(caught).items())}


def _release_memory() -> None:
    """Hand the memory a model's fit freed back to the system before the next fit (a full garbage collection,
    then glibc's ``malloc_trim`` where there is one): the fits' transient arrays otherwise stay in the
    allocator's arenas, and each fit's peak sits on top of the previous ones' leftovers."""
    import gc

    gc.collect()
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc
        pass


def _provenance(provenance, seconds: dict, notes: dict, jobs: pd.DataFrame, clusters) -> dict:
    """The bundle's provenance: as given, plus ``fit_seconds``, the trace's cluster descriptions and the
    fits' notes (see :func:`fit_bundle`)."""
    prov = dict(provenance or {})
    prov["fit_seconds"] = seconds
    if clusters:
        names = set(jobs["cluster"].astype(str).unique()) if "cluster" in jobs else set(clusters)
        prov["clusters"] = {str(k): v.to_dict() for k, v in clusters.items() if str(k) in names}
    if notes:
        prov["fit_notes"] = {m: list(v) for m, v in notes.items()}
    return prov


def _not_fitted(e: Exception) -> str:
    """The note of a model the trace cannot inform (its fit's ``ValueError``)."""
    text = " ".join(str(e).split()) or type(e).__name__
    return f"not fitted: {text.rstrip('.')}."


def _fit_on_dask(client, jobs, timezones, names, params, subsets, provenance, name, log, progress, skips,
                 explicit: bool, clusters=None, frames=None) -> Bundle:
    """:func:`fit_bundle` with one Dask task per model (see its ``client``); ``skips``: model -> why it is not
    fitted; ``explicit``: the models were named (a model that cannot be fitted is then an error)."""
    from dask.distributed import as_completed

    frames = frames or {}
    todo = [m for m in _by_cost(names) if m not in skips]
    # each distinct table once: the trace (to every worker) and the per-model frames (where their task runs)
    shared = client.scatter(jobs, broadcast=True) if any(m not in frames for m in todo) else None
    own: dict[int, object] = {}
    for m in todo:
        if m in frames and id(frames[m]) not in own:
            own[id(frames[m])] = client.scatter(frames[m])
    futures = {client.submit(fit_model_document, m, params.get(m, {}),
                             own[id(frames[m])] if m in frames else shared, subsets.get(m), dict(timezones),
                             pure=False): m for m in todo}
    docs = {m: {"skipped": why} for m, why in skips.items()}
    for i, fut in enumerate(as_completed(futures)):
        _take_document(docs, futures[fut], fut, explicit, log)
        if progress is not None:
            progress(i + 1, len(names), f"fitted {futures[fut]}")
    return _bundle_of_documents(docs, names, provenance, jobs, clusters, name)


def estimators_of(bundle_path) -> dict[str, dict]:
    """The estimator settings a bundle records (``provenance["estimators"]``: model → constructor keyword
    arguments, as :func:`fit_bundle`'s ``params``), for ``acmemodel fit --like BUNDLE``; a bundle without
    them raises :class:`~acmemodel.errors.BundleError` naming it."""
    from acmemodel.errors import BundleError

    b = Bundle.load(bundle_path)
    est = (b.provenance or {}).get("estimators")
    if not isinstance(est, dict):
        raise BundleError(f"bundle {bundle_path}: records no estimator settings (provenance.estimators); "
                          f"re-make it with this version (acmemodel calibrate / fit)")
    builders = _builders()
    bad = [m for m in est if m not in builders or not isinstance(est[m], dict)]
    if bad:
        raise BundleError(f"bundle {bundle_path}: provenance.estimators names unknown model(s) {bad}")
    return {m: dict(p) for m, p in est.items()}


def _warning_sentences(caught) -> dict:
    """Distinct warning messages of one model's fit → their category, as one sentence each (a
    statsmodels/scikit-learn ConvergenceWarning becomes "the optimiser did not converge ...")."""
    out: dict = {}
    for w in caught:
        cat = w.category
        text = " ".join(str(w.message).split())
        if "convergence" in cat.__name__.lower() and "converge" in text.lower() and \
                not cat.__module__.startswith("acmemodel"):
            from acmemodel.errors import ConvergenceWarning

            text, cat = ("the optimiser did not converge within its iteration limit; the estimates are "
                         "usable but less precise"), ConvergenceWarning
        if text and not text.endswith("."):
            text += "."
        out.setdefault(text[:1].upper() + text[1:] if text else text, cat)
    return out


def _no_recorded_waits(jobs: pd.DataFrame) -> str | None:
    """Why the queue model cannot be fitted when no started job has a recorded wait (e.g. an SWF log
    whose waits are all −1: unknown, read as missing), else None."""
    import numpy as np

    if "queue_s" not in jobs.columns or not len(jobs):
        return None
    q = jobs["queue_s"].to_numpy(dtype=float)
    if np.isfinite(q).any():
        return None
    return (f"not fitted: the trace records no waits ({len(q):,} jobs, every wait unknown, e.g. SWF "
            "wait -1); unknown waits are missing, not 0")


def _fit_one(model, trace):
    """Call ``model.fit`` with the trace (models accept a Trace or its jobs frame)."""
    return model.fit(trace)


# --- the out-of-core fit (issue 34) -----------------------------------------------------------------------------

#: models fitted on every job of a streamed trace (their estimates need every job: arrival counts per hour and
#: batches, GPU-count frequencies, restart chains), each on only the columns it reads (:data:`EXACT_COLUMNS`)
EXACT_MODELS = ("arrival", "gpu_counts", "restart")
#: the columns the exact models (and the restart chains and batches they derive) read
EXACT_COLUMNS = ("cluster", "job_id", "user", "type", "analysis_state", "gpu_num", "submit_s", "end_s", "queue_s",
                 "left_truncated", "failure_category", "job_name", "restart_of", "attempt", "prev_job_id", "chain_id",
                 "restart_gap_s")
#: the columns :func:`whole_trace_columns` reads (user history, job-name history, free at submit)
WHOLE_TRACE_COLUMNS = ("cluster", "user", "type", "analysis_state", "gpu_num", "submit_s", "start_s", "end_s",
                       "run_s", "run_censored", "job_name")
#: memory of a streamed fit per job of the trace (bytes) until the compact table is freed: the compact table
#: (about 110), what the reading leaves resident, the whole-trace columns' work arrays, then the exact models'
#: tables (:func:`exact_frames`: about 60) and the chain inference of one cluster (measured on the fleet trace
#: of docs/fit_scale.md, 10M jobs of 4 clusters: peak 3,330 MiB after the exact tables with a 350 MB base and
#: the 1M-job sample table: 314)
STREAM_READ_BYTES_PER_JOB = 320
#: ... and while the models are fitted (the compact table freed): the exact models' tables and their fits' work
#: arrays on every job (arrival: hourly counts, batch order; the chains and batches are already columns)
#: (measured: 10M jobs, peak 3,392 MiB with a sample of 1,000,015: (3.556e9 - 350e6 - 1e9) / 1e7 = 221)
STREAM_FIT_BYTES_PER_JOB = 230
#: memory per sampled job (bytes): the in-memory fit's peak per job (966 MB for 1M jobs)
SAMPLE_BYTES_PER_JOB = 1_000
#: the interpreter and the libraries a fit imports (bytes)
STREAM_BASE_BYTES = 350e6
#: the default largest sample (jobs): the sampled models' fit time grows with it (about 60 CPU s per million
#: jobs), their sampling error shrinks as 1/sqrt(rows); ``--sample`` sets another
DEFAULT_SAMPLE_ROWS = 1_000_000
#: jobs per chunk of the whole-trace user history (:func:`whole_trace_columns`)
HISTORY_CHUNK_ROWS = 1_000_000
#: the smallest sample a streamed fit accepts (below it the memory setting is refused)
MIN_SAMPLE_ROWS = 20_000


def sample_rows_for(memory: float, n_jobs: int) -> int:
    """The sample size the memory setting allows for a streamed fit of ``n_jobs`` jobs:
    ``(memory − STREAM_BASE_BYTES − n_jobs × STREAM_FIT_BYTES_PER_JOB) / SAMPLE_BYTES_PER_JOB``, at most
    :data:`DEFAULT_SAMPLE_ROWS`; 0 when the whole-trace part alone (``STREAM_BASE_BYTES + n_jobs ×
    STREAM_READ_BYTES_PER_JOB``) exceeds it (module constants, measured)."""
    if STREAM_BASE_BYTES + n_jobs * STREAM_READ_BYTES_PER_JOB > memory:
        return 0
    rows = max(0.0, memory - STREAM_BASE_BYTES - n_jobs * STREAM_FIT_BYTES_PER_JOB) // SAMPLE_BYTES_PER_JOB
    return int(min(rows, DEFAULT_SAMPLE_ROWS))


def stream_memory_needed(n_jobs: int, rows: int) -> float:
    """Bytes a streamed fit of ``n_jobs`` jobs with a sample of ``rows`` needs (:func:`sample_rows_for`)."""
    return STREAM_BASE_BYTES + max(n_jobs * STREAM_READ_BYTES_PER_JOB,
                                   n_jobs * STREAM_FIT_BYTES_PER_JOB + rows * SAMPLE_BYTES_PER_JOB)


def sample_strata(jobs: pd.DataFrame):
    """Stratum code per job (0..H−1, strata in sorted key order) for :func:`stratified_sample`: cluster × UTC
    calendar month of submission × type × analysis state × GPU bucket (0, 1, 2–8, 9–64, 65+ GPUs)."""
    import numpy as np

    sub = jobs["submit_s"].to_numpy(dtype=float)
    month = np.where(np.isfinite(sub), sub, 0).astype("datetime64[s]").astype("datetime64[M]").astype(np.int64)
    g = jobs["gpu_num"].to_numpy(dtype=np.int64)
    bucket = np.searchsorted(np.array([1, 2, 9, 65]), g, side="right")
    keys = pd.DataFrame({"cluster": jobs["cluster"], "month": month, "type": jobs["type"],
                         "state": jobs["analysis_state"], "bucket": bucket})
    return keys.groupby(list(keys.columns), sort=True, observed=True).ngroup().to_numpy(dtype=np.int64)


def stratified_sample(jobs: pd.DataFrame, rows: int, seed: int = 0):
    """Row positions (sorted) of a seeded proportional stratified sample of about ``rows`` jobs, and its
    description.

    Strata: :func:`sample_strata`. With the fraction ``f = rows / N``, stratum ``h`` of ``n_h`` jobs keeps
    ``k_h = ⌊f n_h⌋ + 1[U_h < f n_h − ⌊f n_h⌋]`` jobs (``U_h`` uniform) chosen uniformly without replacement, so
    every job is kept with probability exactly ``f``: the sample is self-weighting (each kept job stands for
    ``1/f`` jobs; an unweighted estimate on it is the trace's in expectation) and each stratum's share is the
    trace's to within one job. ``rows >= N``: every job. The draws come from ``numpy.random.default_rng(seed)``
    in a fixed order (stratum rounding, then one key per job in table order), so the sample depends only on the
    table and the seed."""
    import numpy as np

    n = len(jobs)
    if rows >= n:
        return np.arange(n), {"rows": n, "rows_sampled": n, "fraction": 1.0, "strata": None, "seed": seed}
    f = rows / n
    codes = sample_strata(jobs)
    n_h = np.bincount(codes)
    rng = np.random.default_rng(seed)
    target = f * n_h
    k_h = np.floor(target).astype(np.int64)
    k_h += rng.random(len(n_h)) < (target - k_h)
    u = rng.random(n)
    order = np.lexsort((u, codes))
    starts = np.r_[0, np.cumsum(n_h)[:-1]]
    rank = np.arange(n) - starts[codes[order]]
    idx = np.sort(order[rank < k_h[codes[order]]])
    return idx, {"rows": n, "rows_sampled": int(len(idx)), "fraction": f, "strata": int(len(n_h)), "seed": seed}


def whole_trace_columns(jobs: pd.DataFrame, names, params: dict, rows: np.ndarray | None = None) -> pd.DataFrame:
    """The columns the sampled models compute across jobs, computed on every job of ``jobs`` (expanded trace):
    the predictor's user history (and job-name history when there are names), the queue model's
    free-at-submit (:data:`acmemodel.models.queue.FREE_COLUMN`). A model fitted on a sample reads them as given,
    so each sampled job carries the value the whole-trace fit gives it. ``rows`` (sorted positions, e.g. the
    sample's): only those rows' values are returned (one row each, in that order; computed on every job all the
    same), so the stage holds the sample's values rather than every job's."""
    sel = np.arange(len(jobs)) if rows is None else np.asarray(rows, dtype=np.int64)
    out = pd.DataFrame(index=jobs.index[sel])
    if "predictor" in names:
        from acmemodel.features.history import user_history

        # a job's user history reads only the jobs of its (cluster, user, type): computed on chunks of whole
        # (cluster, user) groups of at most about HISTORY_CHUNK_ROWS jobs, the same values in a fraction of the
        # memory (the history's sort keys and medians of all jobs at once: about 170 bytes per job)
        k = -(-len(jobs) // HISTORY_CHUNK_ROWS)
        if k <= 1:
            h = user_history(jobs)
            for c in h.columns:
                out[c] = h[c].to_numpy()[sel]
        else:
            chunk = jobs.groupby(["cluster", "user"], sort=False, observed=True).ngroup().to_numpy() % k
            cols: dict = {}
            for i in range(k):
                at = np.flatnonzero(chunk == i)
                h = user_history(jobs.iloc[at])
                # the chunk's rows among ``sel``: their place there
                pos = np.minimum(np.searchsorted(sel, at), max(len(sel) - 1, 0))
                hit = (sel[pos] == at) if len(sel) else np.zeros(len(at), bool)
                for c in h.columns:
                    cols.setdefault(c, np.zeros(len(sel), dtype=h[c].dtype))[pos[hit]] = h[c].to_numpy()[hit]
                del h
                _release_memory()
            for c, v in cols.items():
                out[c] = v
        if "job_name" in jobs.columns:
            from acmemodel.features.names import name_history

            nh = name_history(jobs)
            for c in nh.columns:
                out[c] = nh[c].to_numpy()[sel]
    if "queue" in names:
        from acmemodel.models.queue import FREE_COLUMN, free_at_submit

        q = _builders()["queue"](**params.get("queue", {}))
        if getattr(q, "latency", False) and {"start_s", "end_s", "submit_s"} <= set(jobs.columns):
            from acmemodel.trace.stream import expand

            # one cluster at a time (a cluster's occupancy reads only its jobs; the same values), on object
            # strings: free_at_submit turns the cluster and type columns into strings per call, which for a
            # categorical of every job makes a string object per job (about 200 bytes per job at its peak)
            free = np.zeros(len(jobs), dtype=bool)
            cl_codes, _ = pd.factorize(jobs["cluster"])
            for i in range(int(cl_codes.max(initial=-1)) + 1):
                at = np.flatnonzero(cl_codes == i)
                sub = expand(jobs.iloc[at], ["cluster", "type", "gpu_num", "submit_s", "start_s", "end_s"])
                free[at] = free_at_submit(sub, cluster_gpus=q.cluster_gpus, margin_gpus=int(q.free_margin_gpus))
                del sub
            out[FREE_COLUMN] = free[sel]
    return out


#: the columns the restart model reads of a job (besides its chain columns)
RESTART_COLUMNS = ("cluster", "type", "analysis_state", "gpu_num", "end_s", "failure_category")
#: the columns the arrival model reads of a job (besides its chain and batch columns; GPU counts: the first three)
ARRIVAL_COLUMNS = ("cluster", "type", "gpu_num", "user", "submit_s", "left_truncated", "analysis_state")
#: the chain columns the restart model takes from its table when present (then it infers no chain)
RESTART_CHAIN_COLUMNS = ("attempt", "next_restart_gap_s", "next_queue_s")


def _smallest_int(values: np.ndarray) -> np.ndarray:
    """``values`` (integers) in the smallest of int8/int16/int32/int64 that holds them all (the same numbers)."""
    lo, hi = (int(values.min()), int(values.max())) if len(values) else (0, 0)
    for dt in (np.int8, np.int16, np.int32):
        if np.iinfo(dt).min <= lo and hi <= np.iinfo(dt).max:
            return values.astype(dt)
    return values.astype(np.int64)


def exact_frames(jobs: pd.DataFrame, exact, params: dict) -> dict[str, pd.DataFrame]:
    """The table each exact model (:data:`EXACT_MODELS` in ``exact``) is fitted on, from the compact trace table
    ``jobs`` (:func:`acmemodel.trace.stream.stream_trace`), with what the models would compute across every job
    computed **one cluster at a time** (the same values; the work arrays of one cluster's jobs, not of all):

    * ``restart``: the FAILED jobs only (the only rows the model reads: its resubmission counts and its chains'
      targets) and their chain columns (:data:`RESTART_CHAIN_COLUMNS`) from
      :func:`acmemodel.features.chains.restart_chains` of their cluster's jobs (every link joins two jobs of one
      cluster); the model then infers no chain;
    * ``arrival``: every job, its :data:`ARRIVAL_COLUMNS`, integers in the smallest type that holds them,
      with ``attempt`` and ``next_index`` (:func:`restart_chains` of the cluster's arrivals, as
      ``ArrivalModel._drop_restarts`` computes them) and ``batch_id`` (:func:`acmemodel.features.chains.batches`
      of the cluster's arrivals that are not dropped restarts, unique across clusters; -1 on the rows the model
      leaves out before it reads them) where the model would infer them (:func:`_arrival_inputs`);
    * ``gpu_counts``: cluster, type and GPU count of every job (the ``arrival`` table's arrays).

    String columns are object arrays of the categories' own strings (one object per distinct value: 8 bytes per
    job; the models' ``astype(str)`` keeps them, where on a categorical it makes a string per job). Each model
    reads these columns as given (documented inputs of ``ArrivalModel.fit`` / ``RestartModel.fit``), so the
    bundle is the one a fit on the whole table gives (tests/test_fit_stream.py)."""
    from acmemodel.features.chains import restart_chains
    from acmemodel.trace.stream import expand

    n = len(jobs)
    out: dict[str, pd.DataFrame] = {}
    cols = set(jobs.columns)
    chain_cols = [c for c in EXACT_COLUMNS if c in cols and (
        c != "job_id" or {"restart_of", "prev_job_id"} & cols)]  # (job ids only where chains are linked by them)
    cl_codes = jobs["cluster"].cat.codes.to_numpy() if isinstance(jobs["cluster"].dtype, pd.CategoricalDtype) \
        else pd.factorize(jobs["cluster"])[0]
    clusters = [np.flatnonzero(cl_codes == i) for i in range(int(cl_codes.max(initial=-1)) + 1)]
    clusters = [r for r in clusters if len(r)]
    del cl_codes

    frame = None
    if "arrival" in exact or "gpu_counts" in exact:
        keep = [c for c in ARRIVAL_COLUMNS + ("attempt", "next_index", "batch_id", "prev_job_id") if c in cols]
        frame = expand(jobs, keep)
        for c in keep:
            if frame[c].dtype.kind == "i":
                frame[c] = _smallest_int(frame[c].to_numpy())
    inputs = _ArrivalInputs(jobs, params.get("arrival", {})) if "arrival" in exact else None
    restart = "restart" in exact
    failed = (jobs["analysis_state"] == "FAILED").to_numpy() if "analysis_state" in cols else np.zeros(n, bool)
    have = set(RESTART_CHAIN_COLUMNS) <= cols
    rcols = [c for c in RESTART_COLUMNS if c in cols] + (list(RESTART_CHAIN_COLUMNS) if have else [])
    infer_restart = restart and not have and n > 0
    parts = []
    for rows in clusters:
        if not (infer_restart or (inputs is not None and inputs.needed)):
            break
        sub = expand(jobs.iloc[rows], chain_cols)
        ch = restart_chains(sub) if infer_restart else None
        if infer_restart:
            f = failed[rows]
            part = expand(jobs.iloc[rows[f]], rcols)
            for c in RESTART_CHAIN_COLUMNS:
                part[c] = ch[c].to_numpy()[f]
            parts.append(part)
        if inputs is not None and inputs.needed:
            inputs.add(rows, sub, ch)
        del sub, ch
        _release_memory()
    if restart:
        if infer_restart:
            out["restart"] = pd.concat(parts) if len(parts) > 1 else parts[0]
            out["restart"] = out["restart"].iloc[np.argsort(out["restart"].index.to_numpy(), kind="stable")]
        else:
            out["restart"] = expand(jobs.iloc[np.flatnonzero(failed)], rcols)
    if frame is not None:
        if "gpu_counts" in exact:
            out["gpu_counts"] = frame[["cluster", "type", "gpu_num"]]
        if inputs is not None:
            inputs.finish(frame)
            out["arrival"] = frame
    return out


class _ArrivalInputs:
    """The arrival model's chain (``attempt``, ``next_index``) and batch (``batch_id``) columns where
    ``ArrivalModel.fit`` would compute them on the whole table (the branches of its ``_drop_restarts`` and
    ``_batch_ids``), computed one cluster at a time the way it computes them (:func:`exact_frames`): ``add``
    per cluster, then ``finish`` adds them to the arrival table. ``needed`` is False where the model reads the
    data's own columns or warns and infers its batches itself (the table is then left as it is)."""

    def __init__(self, jobs: pd.DataFrame, params: dict):
        from acmemodel.models.arrival import ArrivalModel

        model = ArrivalModel(**params)
        model._validate()
        self.gap_s = float(model.batch_gap_s)
        n = len(jobs)
        cols = set(jobs.columns)
        self.needed = False
        if "submit_s" not in cols or not n:
            return
        keep = np.isfinite(jobs["submit_s"].to_numpy(dtype=float))
        if "left_truncated" in cols:
            keep &= ~jobs["left_truncated"].fillna(False).to_numpy(dtype=bool)
        self.keep = keep
        self.rtypes = None if model.restart_types is None else tuple(model.restart_types)
        if self.rtypes is not None and (not self.rtypes or not jobs["type"][keep].isin(self.rtypes).any()):
            self.infer, self.drops = False, False  # no restart is dropped: the batches of every kept job
        elif "attempt" in cols and not ("next_index" not in cols and "prev_job_id" in cols):
            self.infer, self.drops = False, True  # the data's own attempt (and next_index), read as they are
        elif "attempt" not in cols and not {"user", "analysis_state", "end_s", "queue_s"} <= cols:
            return  # the model warns that restarts are not excluded and infers its batches itself
        else:
            self.infer, self.drops = True, True
        if "batch_id" in cols and not self.infer:
            return  # every input is the data's own
        self.needed = True
        self.own_attempt = jobs["attempt"].to_numpy(dtype=float) if "attempt" in cols and not self.infer else None
        it = np.int32 if n < 2**31 - 1 else np.int64  # (row positions, attempts and batch numbers < n: exact)
        self.attempt = np.ones(n, dtype=it) if self.infer else None
        self.nxt = np.full(n, -1, dtype=it) if self.infer else None
        self.bid = np.full(n, -1, dtype=it) if "batch_id" not in cols else None
        self.offset = 0

    def add(self, rows: np.ndarray, sub: pd.DataFrame, chains: pd.DataFrame | None) -> None:
        """One cluster: ``rows`` (positions), ``sub`` its jobs (object strings), ``chains`` the
        :func:`restart_chains` of all of them (None: not computed)."""
        from acmemodel.features.chains import batches, restart_chains

        k = self.keep[rows]
        if not k.any():
            return
        if not k.all():
            sub, chains = sub[k], None
        rows = rows[k]
        a = None
        if self.infer:
            ch = chains if chains is not None else restart_chains(sub)
            a = ch["attempt"].to_numpy()
            self.attempt[rows], self.nxt[rows] = a, ch["next_index"].to_numpy()
            a = a.astype(float)
            del ch
        elif self.own_attempt is not None:
            a = self.own_attempt[rows]
        if self.drops and a is not None:
            is_r = np.ones(len(rows), bool) if self.rtypes is None else sub["type"].isin(self.rtypes).to_numpy()
            stay = ~(is_r & (np.nan_to_num(a, nan=1.0) > 1))
        else:
            stay = np.ones(len(rows), bool)
        if self.bid is not None:
            b = batches(sub[stay], gap_s=self.gap_s)["batch_id"].to_numpy()
            self.bid[rows[stay]] = b + self.offset
            self.offset += int(b.max(initial=-1)) + 1

    def finish(self, frame: pd.DataFrame) -> None:
        if not self.needed:
            return
        if self.infer:
            frame["attempt"] = _smallest_int(self.attempt)
            frame["next_index"] = _smallest_int(self.nxt)
            if "prev_job_id" in frame.columns:
                del frame["prev_job_id"]
        if self.bid is not None:
            frame["batch_id"] = _smallest_int(self.bid)


def fit_streamed(trace, *, memory: float | None = None, sample_rows: int | None = None, seed: int = 0,
                 models: Iterable[str] | None = None, provenance: dict | None = None, name: str = "bundle",
                 params: dict[str, dict] | None = None, log: Callable[[str], None] | None = None,
                 progress: Callable[..., None] | None = None, client=None,
                 read_seconds: float | None = None, release: bool = False) -> Bundle:
    """Fit a bundle on a streamed trace (:class:`acmemodel.trace.stream.StreamedTrace`) in bounded memory.

    The exact models (:data:`EXACT_MODELS`) are fitted on every job, each on its own table with the restart chains
    and batches computed one cluster at a time (:func:`exact_frames`: the whole table's fits, bit for bit). The
    others (runtime, queue, failure, predictor) are fitted on a seeded proportional stratified sample
    (:func:`stratified_sample`) of ``sample_rows`` jobs (default: what ``memory`` bytes allow,
    :func:`sample_rows_for`; every job when the trace fits), carrying the columns they compute across jobs from
    the whole trace (:func:`whole_trace_columns`). The bundle's ``provenance["sample"]`` records the design:
    trace and sample sizes, fraction, strata, seed, which models were sampled, and the seconds and peak
    resident memory after each stage (``read_seconds``: the caller's ``time.perf_counter()`` when it began
    reading the trace, to count the reading as the first stage). ``release=True`` sets ``trace.jobs`` to None
    once the models' tables are made (the compact table is then freed before the fits: ``acmemodel fit``).

    With ``client`` (Dask) the models are fitted as in :func:`fit_bundle`; the sample depends only on the table
    and the seed, so the bundle is the in-process one.
    """
    from acmemodel.limits import SizeError, human_bytes
    from acmemodel.trace.stream import expand

    stage: dict[str, float] = {} if read_seconds is None else {"read": time.perf_counter() - read_seconds}
    peaks: dict[str, float | None] = {"read": _peak_rss_mb()}
    cpus: dict[str, float] = {"read": _cpu_seconds()}
    t0 = time.perf_counter()
    builders = _builders()
    names = list(models) if models is not None else list(builders)
    params = dict(params or {})
    jobs = trace.jobs
    n = len(jobs)
    if sample_rows is None:
        from acmemodel.limits import memory_budget

        mem = float(memory if memory is not None else memory_budget())
        sample_rows = sample_rows_for(mem, n)
        least = min(n, MIN_SAMPLE_ROWS)
        if sample_rows < least:
            raise SizeError(f"--memory {human_bytes(mem)}: a streamed fit of {n:,} jobs needs at least "
                            f"{human_bytes(stream_memory_needed(n, least))} (a sample of at least {least:,} "
                            f"jobs; docs/fit_scale.md)")
    sampled = [m for m in names if m not in EXACT_MODELS]
    exact = [m for m in names if m in EXACT_MODELS]
    idx, design = stratified_sample(jobs, int(sample_rows), seed)
    stage["sample draw"] = time.perf_counter() - t0
    peaks["sample draw"] = _peak_rss_mb()
    cpus["sample draw"] = _cpu_seconds()
    t = time.perf_counter()
    frames: dict[str, pd.DataFrame] = {}
    sample = None
    if sampled:
        # the whole-trace columns need the cross-job columns of every job (not the GPU-count/resource columns)
        # (on the compact columns as they are: these functions group on the string columns' values, and a
        # categorical groups like its strings)
        whole = whole_trace_columns(jobs[[c for c in WHOLE_TRACE_COLUMNS if c in jobs.columns]], sampled, params,
                                    rows=idx)
        stage["whole-trace columns"] = time.perf_counter() - t
        peaks["whole-trace columns"] = _peak_rss_mb()
        cpus["whole-trace columns"] = _cpu_seconds()
        t = time.perf_counter()
        sample = expand(jobs.iloc[idx]).reset_index(drop=True) if len(idx) < n else expand(jobs)
        for c in whole.columns:
            sample[c] = whole[c].to_numpy()
        del whole
        _release_memory()
        stage["sample table"] = time.perf_counter() - t
        peaks["sample table"] = _peak_rss_mb()
        cpus["sample table"] = _cpu_seconds()
    if exact:
        t = time.perf_counter()
        frames.update(exact_frames(jobs, exact, params))
        stage["exact tables"] = time.perf_counter() - t
        peaks["exact tables"] = _peak_rss_mb()
        cpus["exact tables"] = _cpu_seconds()
    if release:
        trace.jobs = None
        del jobs
        _release_memory()
    if sample is None:
        sample = frames[exact[0]]
    design.update({"design": "proportional stratified by cluster x UTC month x type x analysis state x GPU bucket; "
                             "every job kept with probability rows_sampled/rows (self-weighting)",
                   "sampled_models": sampled, "exact_models": exact})
    t = time.perf_counter()
    # (one process: the memory setting bounds this process, and forked fits would add their work arrays beside it)
    bundle = fit_bundle(sample, trace.timezones, models=models, provenance=provenance, name=name, params=params,
                        log=log, progress=progress, clusters=trace.cluster_specs, client=client, frames=frames,
                        processes=1)
    stage["model fits"] = time.perf_counter() - t
    peaks["model fits"] = _peak_rss_mb()
    cpus["model fits"] = _cpu_seconds()
    design["stage_seconds"] = {k: round(v, 3) for k, v in stage.items()}
    design["stage_peak_rss_mb"] = peaks
    marks = list(cpus.values())
    design["stage_cpu_seconds"] = {k: round(c - (marks[i - 1] if i else 0.0), 3) for i, (k, c) in enumerate(cpus.items())}
    bundle.provenance["sample"] = design
    return bundle


def _peak_rss_mb() -> float | None:
    """This process's peak resident memory so far (MB; Linux ``VmHWM``), None where it cannot be read."""
    try:
        with open("/proc/self/status") as f:
            return round(next(int(x.split()[1]) for x in f if x.startswith("VmHWM")) / 1024, 1)
    except (OSError, StopIteration, ValueError):
        return None


def _cpu_seconds() -> float:
    """CPU seconds (user + system) of this process so far."""
    import resource

    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime
