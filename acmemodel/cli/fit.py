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
    span = [None, None]
    if len(j):
        span = [dt.datetime.fromtimestamp(float(j["submit_s"].min()), dt.timezone.utc).isoformat(),
                dt.datetime.fromtimestamp(float(j["submit_s"].max()), dt.timezone.utc).isoformat()]
    return {
        "source": "trace",
        "files": [{**f.as_dict(), "sha256": file_sha256(f.path)} for f in trace.files],
        "date_range_utc": span,
        "jobs": int(len(j)),
        "rejected": int(len(trace.rejected)),
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
) -> None:
    """Fit runtime, queue, failure, restart, arrival, GPU-count and predictor models; save a bundle.

    With --workers/--scheduler each model is one Dask task (the bundle is the same as in-process)."""
    from acmemodel.cli._dask import close_client, dask_client
    from acmemodel.pipeline import drop_unused_columns, estimators_of, fit_bundle

    check_bundle_out(out)
    params = estimators_of(like) if like is not None else {}
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
                                client=client)
    finally:
        close_client(client, cluster_)
    path = bundle.save(out)
    doc = {"bundle": str(path), "models": sorted(bundle.models), "provenance": bundle.provenance,
           "clusters": {k: v.to_dict() for k, v in bundle.clusters().items()}}
    note = identifiability_note(bundle)
    if note:
        doc["identifiability"] = note
    if json_out:
        print_json(doc)
        return
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
