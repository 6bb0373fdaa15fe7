"""``acmemodel fit``: fit every model on a trace and write a bundle (JSON + LightGBM text)."""
from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import List, Optional

import typer

from acmemodel.cli._app import app, print_json
from acmemodel.cli._common import (CLUSTER, TRACE_PATHS, check_bundle_out, check_trace_span, console,
                                   describe_size, identifiability_note, load_traces, print_identifiability)


def trace_provenance(trace) -> dict:
    """Input files with SHA-256, rows accepted/rejected, and the submission date range (UTC)."""
    from acmemodel.models.bundle import file_sha256

    j = trace.jobs
    n_rej = trace.n_rejected if hasattr(trace, "n_rejected") else len(trace.rejected)
    span = [None, None]
    if len(j):
        span = [dt.datetime.fromtimestamp(float(j["submit_s"].min()), dt.timezone.utc).isoformat(),
                dt.datetime.fromtimestamp(float(j["submit_s"].max()), dt.timezone.utc).isoformat()]
    return {
        "source": "trace",
        "files": [{**f.as_dict(), "sha256": file_sha256(f.path)} for f in trace.files],
        "date_range_utc": span,
        "jobs": int(len(j)),
        "rejected": int(n_rej),
        "timezones": dict(trace.timezones),
    }


@app.command("fit")
def fit_cmd(
    paths: Optional[List[Path]] = TRACE_PATHS,
    out: Path = typer.Option(..., "-o", "--out", help="Bundle to write: a directory, or a .zip file."),
    models: Optional[List[str]] = typer.Option(None, "--model", help="Fit only these models (repeatable)."),
    cluster: Optional[str] = CLUSTER,
    workers: Optional[int] = typer.Option(None, "--workers", help="Fit the models in parallel on a local Dask "
                                                                  "cluster of N worker processes."),
    scheduler: Optional[str] = typer.Option(None, "--scheduler", help="Fit the models on an existing Dask cluster: "
                                                                    "the scheduler address, e.g. tcp://host:8786."),
    json_out: bool = typer.Option(False, "--json", help="Print what was written as JSON."),
    like: Optional[Path] = typer.Option(
        None, "--like", help="Use the estimator settings recorded in this bundle (e.g. the default's: "
                             "the failure model's min_gpus and late-hazard levels)."),
    memory: Optional[str] = typer.Option(
        None, "--memory", help="Memory the fit may use, e.g. 4GB (default: half the machine's). A trace too "
                               "large to fit in it is streamed: read file by file, the arrival, GPU-count and "
                               "restart models fitted on every job, the others on a seeded stratified sample "
                               "(at most 1,000,000 jobs unless --sample; docs/fit_scale.md)."),
    stream: Optional[bool] = typer.Option(
        None, "--stream/--in-memory", help="Stream the trace (see --memory) or read it whole (default: stream "
                                           "when the whole trace would not fit in --memory)."),
    sample: Optional[int] = typer.Option(
        None, "--sample", help="Streamed fit: fit the sampled models on at most this many jobs (default: what "
                               "--memory allows). Implies --stream."),
    seed: int = typer.Option(0, "--seed", help="Seed of the streamed fit's sample."),
    processes: Optional[int] = typer.Option(
        None, "--processes", min=1, max=64, help="Fit the models in N processes of this machine (default: the "
                                                 "CPUs available, at most 4; 1 for traces under 50,000 jobs); "
                                                 "the bundle is the same with any number."),
) -> None:
    """Fit runtime, queue, failure, restart, arrival, GPU-count and predictor models; save a bundle.

    With --workers/--scheduler each model is one Dask task (the bundle is the same as in-process); a streamed
    fit also reads its files there."""
    from acmemodel.cli._dask import close_client, dask_client
    from acmemodel.pipeline import drop_unused_columns, estimators_of, fit_bundle

    check_bundle_out(out)
    params = estimators_of(like) if like is not None else {}
    mem = parse_size(memory, "--memory") if memory is not None else None
    if sample is not None and sample < 1:
        raise ValueError(f"--sample must be a positive number of jobs, got {sample}")
    if sample is not None and stream is False:
        raise ValueError("--sample needs a streamed fit: drop --in-memory")
    if stream is None:
        stream = sample is not None or (bool(paths) and _too_large(paths, mem))
    if stream:
        return _fit_streamed(paths, out, models, cluster, workers, scheduler, json_out, like, params, mem, sample,
                             seed)
    trace = load_traces(paths, cluster)
    check_trace_span(trace, "fit")
    import warnings

    from acmemodel.cli._fmt import dur, progress, table
    from acmemodel.features.names import jobs_with_extras

    # (an imported trace's job names, partitions and restart links go to the models that use them)
    client, cluster_ = dask_client(workers, scheduler)
    try:
        with warnings.catch_warnings(), progress("fitting", enabled=not json_out) as upd:
            warnings.simplefilter("ignore")  # summarised below, one sentence per model (provenance fit_notes)
            names = list(models) if models else None
            use = {m: p for m, p in params.items() if names is None or m in names}
            prov = trace_provenance(trace)
            prov["estimators"] = use  # the non-default constructor settings ({}: every model's defaults)
            drop_unused_columns(trace.jobs)  # (provenance taken: what no model reads is freed)
            if like is not None:
                prov["estimators_from"] = str(like)
            bundle = fit_bundle(jobs_with_extras(trace), trace.timezones, models=models,
                                provenance=prov, name=out.stem, params=use,
                                progress=lambda i, n, d: upd(i, n, d), clusters=trace.cluster_specs,
                                client=client, processes=processes)
    finally:
        close_client(client, cluster_)
    _report(bundle, out, json_out)


def _report(bundle, out: Path, json_out: bool) -> None:
    """Save the bundle and print what was written (a table, or ``--json``)."""
    from acmemodel.cli._fmt import dur, table

    path = bundle.save(out)
    doc = {"bundle": str(path), "models": sorted(bundle.models), "provenance": bundle.provenance,
           "clusters": {k: v.to_dict() for k, v in bundle.clusters().items()}}
    note = identifiability_note(bundle)
    if note:
        doc["identifiability"] = note
    if json_out:
        print_json(doc)
        return
    samp = bundle.provenance.get("sample")
    if samp and samp.get("fraction", 1.0) < 1.0:
        console.print(f"streamed fit: {', '.join(samp['sampled_models'])} on a stratified sample of "
                      f"{samp['rows_sampled']:,} of {samp['rows']:,} jobs (seed {samp['seed']}); "
                      f"{', '.join(samp['exact_models'])} on every job", markup=False, highlight=False)
    secs = bundle.provenance.get("fit_seconds", {})
    fit_notes = bundle.provenance.get("fit_notes", {})
    t = table(f"wrote bundle {path}", ["model", "fit time", "notes"], right={"fit time"})
    for m in bundle.models:
        t.add_row(m, dur(secs.get(m)), " ".join(fit_notes.get(m, [])))
    for m in fit_notes:  # (models skipped for want of data, e.g. queue without a recorded wait)
        if m not in bundle.models:
            t.add_row(m, "–", " ".join(fit_notes[m]))
    console.print(t)
    for name, spec in bundle.clusters().items():
        console.print(f"cluster {name}: {describe_size(spec)}; zone {spec.timezone}"
                      + (f"; partitions {', '.join(spec.partitions)}" if spec.partitions else ""),
                      markup=False, highlight=False)
    print_identifiability(note)


_UNITS = {"": 1, "b": 1, "kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12, "kib": 2 ** 10, "mib": 2 ** 20, "gib": 2 ** 30,
          "tib": 2 ** 40, "k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12}


def parse_size(text: str, option: str) -> float:
    """Bytes of a size such as ``4GB``, ``512MiB`` or ``2e9`` (powers of 1,000; ``KiB``... of 1,024)."""
    import re

    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:e[0-9]+)?)\s*([a-zA-Z]*)\s*", str(text))
    if not m or m.group(2).lower() not in _UNITS or float(m.group(1)) <= 0:
        raise ValueError(f"{option}: expected a size such as 4GB or 512MB, got {text!r}")
    return float(m.group(1)) * _UNITS[m.group(2).lower()]


def _estimated_rows(paths) -> int:
    """Rows of the trace's files without reading them: Parquet from the files' metadata, CSV from their size
    (120 bytes a row; gzip: 25)."""
    from acmemodel.trace.readers import expand_trace_paths

    rows = 0
    for p in expand_trace_paths([Path(x) for x in paths if str(x) != "-"]):
        if p.suffix.lower() == ".parquet":
            import pyarrow.parquet as pq

            try:
                rows += pq.ParquetFile(p).metadata.num_rows
                continue
            except Exception:  # (the reader names an unreadable file)
                pass
        try:
            rows += p.stat().st_size // (120 if not p.name.lower().endswith("gz") else 25)
        except OSError:
            pass
    return int(rows)


def _too_large(paths, memory: float | None) -> bool:
    """Whether reading the trace whole would exceed ``memory`` (default: the machine's budget): its estimated
    rows × the in-memory fit's bytes per job."""
    from acmemodel.limits import memory_budget
    from acmemodel.pipeline import SAMPLE_BYTES_PER_JOB, STREAM_BASE_BYTES

    budget = float(memory if memory is not None else memory_budget())
    return STREAM_BASE_BYTES + _estimated_rows(paths) * SAMPLE_BYTES_PER_JOB > budget


def _fit_streamed(paths, out, models, cluster, workers, scheduler, json_out, like, params, memory, sample,
                  seed) -> None:
    """``fit`` of a trace read file by file (:func:`acmemodel.trace.stream.stream_trace`,
    :func:`acmemodel.pipeline.fit_streamed`)."""
    import time
    import warnings

    from acmemodel.cli._dask import close_client, dask_client
    from acmemodel.cli._fmt import progress
    from acmemodel.pipeline import UNUSED_COLUMNS, fit_streamed
    from acmemodel.trace.stream import stream_trace

    if not paths:
        from acmemodel.datasets import sample_paths

        paths = sample_paths()
    if any(str(p) == "-" for p in paths):
        raise ValueError("a streamed fit reads files: the trace cannot come from stdin (-)")
    if sample is None:  # refused before reading when the files' rows alone say the setting is too small
        from acmemodel.limits import SizeError, human_bytes, memory_budget
        from acmemodel.pipeline import MIN_SAMPLE_ROWS, sample_rows_for, stream_memory_needed

        mem = float(memory if memory is not None else memory_budget())
        est = _estimated_rows(paths)
        least = min(est, MIN_SAMPLE_ROWS)
        if est and sample_rows_for(mem, est) < least:
            raise SizeError(f"--memory {human_bytes(mem)}: a streamed fit of about {est:,} jobs needs at least "
                            f"{human_bytes(stream_memory_needed(est, least))} (a sample of at least {least:,} "
                            f"jobs; docs/fit_scale.md)")
    client, cluster_ = dask_client(workers, scheduler)
    try:
        with warnings.catch_warnings(), progress("fitting", enabled=not json_out) as upd:
            warnings.simplefilter("ignore")
            map_fn = None
            if client is not None:
                def map_fn(fn, args):
                    return client.gather(client.map(fn, args, pure=False))
            upd(0, 1, "reading files")
            t_read = time.perf_counter()
            trace = stream_trace(paths, cluster, drop=UNUSED_COLUMNS, map_fn=map_fn,
                                 progress=lambda i, n: upd(i, n, "reading files"))
            check_trace_span(trace, "fit")
            names = list(models) if models else None
            use = {m: p for m, p in params.items() if names is None or m in names}
            prov = trace_provenance(trace)
            prov["estimators"] = use
            if like is not None:
                prov["estimators_from"] = str(like)
            bundle = fit_streamed(trace, memory=memory, sample_rows=sample, seed=seed, models=models,
                                  provenance=prov, name=out.stem, params=use,
                                  progress=lambda i, n, d: upd(i, n, d), client=client, read_seconds=t_read,
                                  release=True)
    finally:
        close_client(client, cluster_)
    _report(bundle, out, json_out)
