"""``acmemodel convert --from failures``: a node failure log → uptime intervals or a reliability preset.

``-o OUT.json`` fits :class:`~acmemodel.models.fleet_reliability.FleetReliability` and writes a
reliability preset file (``--reliability OUT.json`` of ``checkpoint``, ``plan``, ``sweep``);
``-o OUT.csv|.csv.gz|.parquet`` writes the tidy uptime intervals
(:mod:`acmemodel.trace.importers.failures`). See docs/fleet-reliability.md.
"""
from __future__ import annotations

from pathlib import Path

from acmemodel.cli._app import print_json
from acmemodel.cli._common import console

#: GPU counts at which the report shows a job's MTTF
REPORT_GPUS = (8, 64, 512, 4096, 16384)


def convert_failures(paths, out: Path, *, name: str | None = None, extracted_at: str | None = None) -> dict:
    """Read the failure logs ``paths`` and write ``out``; returns the report (JSON-ready)."""
    import pandas as pd

    from acmemodel.trace.importers.failures import read_failures, write_intervals

    low = out.name.lower()
    tabular = low.endswith((".csv", ".csv.gz", ".parquet"))
    if not (tabular or low.endswith(".json")):
        raise ValueError(f"-o/--out: {out} must end in .json (a reliability preset) or .csv, .csv.gz, .parquet "
                         "(the uptime intervals)")
    if out.exists() and out.is_dir():
        raise ValueError(f"-o/--out: {out} is a directory")
    if any(Path(p).resolve() == out.resolve() for p in paths):
        raise ValueError(f"-o/--out: {out} is one of the input files")
    end = None
    if extracted_at is not None:
        t = pd.to_datetime(extracted_at, errors="coerce", utc=True)
        if pd.isna(t):
            raise ValueError(f"--extracted-at: not a time: {extracted_at!r}")
        end = t.value / 1e9
    log = read_failures(paths, extracted_at=end)
    rep = {"format": "failures", "out": str(out), **log.report}
    if tabular:
        write_intervals(log.intervals, out)
        return rep
    from acmemodel.errors import AcmeModelError
    from acmemodel.models.fleet_reliability import FleetReliability
    from acmemodel.planner.reliability import preset_from_fleet, save_preset_file

    src = ", ".join(Path(p).name for p in paths)
    try:
        model = FleetReliability().fit(log.intervals)
    except AcmeModelError as e:
        raise AcmeModelError(f"{src}: {e}") from None
    preset = preset_from_fleet(model, name=name or out.name.split(".")[0], source=f"failure log {src}")
    save_preset_file(preset, out, fleet={"model": model.to_dict(), "import": log.report})
    r = model.rates_
    systems = r[(r["scope"] == "system") & (r["category"] == "all")].sort_values(["nodes", "node_days"],
                                                                                ascending=False)
    rep["preset"] = preset.to_dict()
    rep["rates_fleet"] = r[r["scope"] == "fleet"].drop(columns=["scope", "system"]).to_dict(orient="records")
    rep["rates_systems"] = r[r["scope"] == "system"].drop(columns="scope").to_dict(orient="records")
    rep["largest_systems"] = systems["system"].head(3).tolist()
    rep["tbf"] = model.tbf_
    rep["tbf_by_system"] = model.tbf_by_system_.to_dict(orient="records")
    rep["tbf_nodes"] = model.tbf_nodes_
    rep["repair"] = model.repair_
    rep["mttf_s"] = {str(g): preset.mttf_s(g) for g in REPORT_GPUS}
    return rep


def print_report(rep: dict, json_out: bool) -> None:
    from acmemodel.cli._fmt import dur, num, table

    if json_out:
        print_json(rep)
        return
    t = table(f"convert --from failures → {Path(rep['out']).name}", ["", "value"], right=set())
    t.show_header = False
    t.add_row("records in", num(rep["records_in"]))
    t.add_row("failures accepted", num(rep["failures"]))
    t.add_row("folded", f"{num(rep['folded'])} (failure during a repair: merged into it)")
    q = rep["quarantined_by_reason"]
    t.add_row("quarantined", num(rep["quarantined"]) + (" (" + ", ".join(f"{k} {num(v)}" for k, v in q.items())
                                                       + ")" if q else ""))
    iv = rep["intervals"]
    t.add_row("intervals", f"{num(iv['tbf'])} repair→failure, {num(iv['first'])} first (exposure only), "
                           f"{num(iv['censored'])} censored, {num(iv['no_failure'])} never failing")
    t.add_row("systems / log end", f"{rep['systems']} / {rep['log_end_utc'][:10]}")
    console.print(t)
    if "preset" not in rep:
        return
    rt = table("Failures per 1,000 node-days (95 % exact Poisson)", ["category", "failures", "rate", "interval"])
    for r in rep["rates_fleet"]:
        rt.add_row(r["category"], num(r["failures"]), num(r["per_1000_node_days"]),
                   f"{num(r['lower'])}–{num(r['upper'])}")
    console.print(rt)
    big = set(rep["largest_systems"])
    st = table("Largest systems (by nodes)", ["system", "nodes", "failures", "per 1,000 nd", "interval", "top"])
    for r in rep["rates_systems"]:
        if r["system"] in big and r["category"] == "all":
            cats = sorted((c for c in rep["rates_systems"] if c["system"] == r["system"] and c["category"] != "all"),
                          key=lambda c: -c["failures"])
            top = ", ".join(f"{c['category'][:4]} {num(c['per_1000_node_days'])}" for c in cats[:2])
            st.add_row(str(r["system"]), num(r["nodes"]), num(r["failures"]), num(r["per_1000_node_days"]),
                       f"{num(r['lower'])}–{num(r['upper'])}", top)
    console.print(st)
    lt = table("Laws (maximum likelihood; lower AIC is better)", ["law", "family", "log-lik", "AIC", "Weibull"])
    for law, d in (("between failures", rep["tbf"]), ("repair time", rep["repair"])):
        for f, v in d["families"].items():
            extra = f"k {v['shape']:.2f} ({v['shape_lower']:.2f}–{v['shape_upper']:.2f})" \
                if law.startswith("between") and f == "weibull" else ""
            lt.add_row(law, f + (" *" if f == d["best"] else ""), num(v["loglik"], 6), num(v["aic"], 6), extra)
            law = ""
    console.print(lt)
    tn = rep["tbf_nodes"]
    if tn["nodes"]:
        console.print(f"per-node Weibull shape: median {tn['median']:.2f} (quartiles {tn['q25']:.2f}–{tn['q75']:.2f}) "
                      f"over the {tn['nodes']} nodes with ≥ {tn['min_events']} failures; the pooled shape is lower "
                      "because nodes of different rates are mixed", highlight=False)
    p = rep["preset"]
    console.print(f"preset {p['name']}: {num(p['failures_per_1000_node_days'])} failures per 1,000 node-days, "
                  f"{p['gpus_per_node']} GPUs per node, restart (repair) mean {dur(p['restart_s'])}; MTTF "
                  + ", ".join(f"{num(int(g))} GPUs {dur(s)}" for g, s in rep["mttf_s"].items()),
                  highlight=False)
    console.print(f"use it: --reliability {rep['out']}  (* = chosen law)", highlight=False)
