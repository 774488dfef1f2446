"""One self-contained HTML report (inline SVG, no network) plus the figures as PNG/SVG beside it.

Figures cost ~50-100 ms each, so only a bounded number of individual runs get figures (the worst
run of the worst cells); every cell is in the tables. What could not be shown is listed, with why.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import statistics
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import jinja2
import numpy as np

from jitterlab import __version__
from jitterlab.analysis.compare import Comparison, cell_text, compare, label_pairs
from jitterlab.analysis.envelope import DEFAULT_THRESHOLDS, envelope
from jitterlab.analysis.latency import HISTOGRAM_UNIT, histogram_samples
from jitterlab.errors import UserError
from jitterlab.records import Warning_
from jitterlab.report import figures
from jitterlab.report.standard import format_value, run_label, summarize
from jitterlab.store.catalog import RunRecord, Store
from jitterlab.store.raw import EdgeSeries, Samples, blind_spans, read_raw
from jitterlab.units import format_ns

HEADLINE = figures.HEADLINE
PERCENTILES = ("p50_rel_period_error", "p99_rel_period_error", "p999_rel_period_error",
               "p9999_rel_period_error")
COMPARE_METRICS = ("max_rel_period_error", "p99_rel_period_error", "std_period_ns")
SYSINFO_KEYS = ("hostname", "os_name", "kernel_release", "preemption", "machine", "cpu_model",
                "n_cpus", "clocksource", "virtualization", "isolcpus", "nohz_full",
                "rt_permission", "cmdline")
MAX_RUN_FIGURES = 12
MAX_COMPARISONS = 4
HIGH_VARIANCE_CV = 0.5  # std/mean of the headline over repetitions above which we warn
BLIND_WARN_FRACTION = 0.01


@dataclass
class Report:
    path: Path
    figure_files: list[Path] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    n_runs: int = 0


def select_runs(store: Store, campaigns: list[str] | None) -> tuple[list[dict], list[RunRecord]]:
    """The named campaigns (latest of each name) or the latest one; UserError when none."""
    known = store.campaigns()
    if not known:
        raise UserError(f"{store.root}: the store is empty; run a campaign first "
                        "(jitterlab run CAMPAIGN) or import a capture (jitterlab import edges)")
    if not campaigns:
        chosen = [store.latest_campaign()]
    else:
        chosen = []
        for name in campaigns:
            # the latest of each label set: image=A and image=B measured with `run --label`
            latest: dict[str, dict] = {}
            for c in known:
                if c["name"] == name:
                    latest[json.dumps(c["labels"], sort_keys=True)] = c
            if not latest:
                names = ", ".join(sorted({k["name"] for k in known}))
                raise UserError(f"--campaign {name!r}: not in {store.root}; campaigns there: {names}")
            chosen += sorted(latest.values(), key=lambda c: c["id"])
    runs = [r for c in chosen for r in store.runs(c["id"])]
    return chosen, runs


def render(store: Store, out: Path, *, campaigns: list[str] | None = None,
           max_run_figures: int = MAX_RUN_FIGURES, figure_files: bool = True) -> Report:
    """Write the report to `out` (and figures to `<out stem>_figures/`)."""
    chosen, runs = select_runs(store, campaigns)
    out = Path(out)
    report = Report(out, n_runs=len(runs))
    fig_dir = out.with_name(out.stem + "_figures")
    if figure_files:
        fig_dir.mkdir(parents=True, exist_ok=True)

    def emit(fig, name: str) -> str:
        svg = figures.svg_text(fig)
        if figure_files:
            (fig_dir / f"{name}.svg").write_text(svg)
            png = fig_dir / f"{name}.png"
            fig.savefig(png, format="png", dpi=100)
            report.figure_files += [fig_dir / f"{name}.svg", png]
        return svg

    square = _with_variants([r for r in runs if r.benchmark == "squarewave"])
    if not runs:
        report.skipped.append("every section: the selected campaign has no runs")
    elif not square:
        report.skipped.append("paper figure, envelope, per-run figures: no squarewave runs "
                              f"(benchmarks here: {', '.join(sorted({r.benchmark for r in runs}))})")
    targets = sorted({r.target for r in square})
    paper = [{"target": t, "svg": emit(figures.envelope_figure(square, t), f"error_vs_period_{t}")}
             for t in targets]
    context = {
        "title": "jitterlab report: " + ", ".join(dict.fromkeys(c["name"] for c in chosen)),
        "generated": dt.datetime.now().isoformat(timespec="seconds"),
        "version": __version__,
        "campaigns": chosen,
        "n_runs": len(runs),
        "status_counts": sorted(Counter(r.status for r in runs).items()),
        "paper": paper,
        "thresholds": [f"{t * 100:g} %" for t in DEFAULT_THRESHOLDS],
        "envelope": _envelope_rows(square),
        "cells": _cell_rows(square),
        "run_figures": _run_figures(store, square, max_run_figures, emit, report.skipped),
        "bias": _bias_rows(square),
        "targets": _targets(store, runs),
        "warnings": _warnings(store, chosen, runs),
        "standard": _standard(store, runs, max_run_figures, emit, report.skipped),
        "comparisons": _comparisons(runs, emit, report.skipped),
        "failed": [{"id": r.id, "cell": _cell_label(r), "status": r.status, "error": r.error or ""}
                   for r in runs if r.status != "ok"],
        "skipped": report.skipped,
        "figure_dir": fig_dir.name if figure_files else None,
    }
    env = jinja2.Environment(loader=jinja2.PackageLoader("jitterlab.report", "templates"),
                             autoescape=True, undefined=jinja2.StrictUndefined)
    env.filters["pct"] = _pct
    out.write_text(env.get_template("report.html.j2").render(**context), encoding="utf-8")
    return report


def _with_variants(runs: list[RunRecord]) -> list[RunRecord]:
    """Runs whose labels differ (image=1.10 vs 1.11) must not merge into one cell: the labels
    that vary are appended to the impl for display ("c-fifo [image=1.10]")."""
    keys = sorted({k for r in runs for k in r.labels})
    varying = [k for k in keys if len({str(r.labels.get(k)) for r in runs}) > 1]
    if not varying:
        return runs
    return [dataclasses.replace(r, impl=f"{r.impl} [" + ", ".join(
        f"{k}={r.labels.get(k, '')}" for k in varying) + "]") for r in runs]


def _pct(value: float | None) -> str:
    if value is None:
        return "—"
    return f"{value * 100:,.0f} %" if abs(value) >= 10 else f"{value * 100:.3g} %"


def _cell_label(r: RunRecord) -> str:
    return f"{r.target} {run_label(r)}"


def _standard(store: Store, runs: list[RunRecord], limit: int, emit, skipped: list[str]) -> list[dict]:
    """A table, a bar chart of the first headline metric and the latency distributions of every
    benchmark but squarewave."""
    out = []
    for bench in summarize(runs):
        rows = [{"cell": c.name, "status": c.status, "errors": c.errors,
                 "shown": [_value_text(c.values.get(m)) for m in bench.columns]} for c in bench.cells]
        bars = None
        if bench.columns:
            bars = emit(figures.bars_figure(bench, bench.columns[0]), f"{bench.benchmark}_{bench.columns[0]}")
        distribution = _distribution(store, bench, limit, emit, skipped)
        out.append({"benchmark": bench.benchmark, "columns": bench.columns, "rows": rows, "bars": bars,
                    "distribution": distribution, "fixed": bench.fixed})
    return out


def _value_text(v) -> str:
    if v is None:
        return "—"
    text = format_value(v.median, v.unit)
    if v.n > 1 and v.high != v.low:
        text += f" ({format_value(v.low, v.unit)} – {format_value(v.high, v.unit)})"
    return text


def _distribution(store: Store, bench, limit: int, emit, skipped: list[str]) -> str | None:
    """Latency samples (or 1 µs histograms) of one run per cell, drawn together."""
    samples: dict[str, np.ndarray] = {}
    for cell in bench.cells:
        ok = [r for r in cell.runs if r.status == "ok" and r.raw_path]
        if not ok:
            continue
        if len(samples) >= limit:
            skipped.append(f"{bench.benchmark}: latency distributions of more than {limit} cells")
            break
        run = ok[-1]
        try:
            series = read_raw(store.root / run.raw_path, run.raw_sha256)
        except UserError as exc:
            skipped.append(f"run {run.id} ({_cell_label(run)}): {exc}")
            continue
        parts = [s.values if s.unit == "ns" else histogram_samples(s.values)
                 for s in series.values() if isinstance(s, Samples) and s.unit in ("ns", HISTOGRAM_UNIT)]
        if parts:
            samples[cell.name] = np.concatenate(parts)
    if not samples:
        return None
    title = f"{bench.benchmark}: latency distribution of one run per cell"
    return emit(figures.distribution_figure(samples, title), f"{bench.benchmark}_distribution")


def _cells(runs: list[RunRecord]) -> dict[tuple, list[RunRecord]]:
    cells: dict[tuple, list[RunRecord]] = defaultdict(list)
    for r in runs:
        cells[(r.target, r.impl, r.load, r.period_ns, r.probe)].append(r)
    return cells


def _envelope_rows(runs: list[RunRecord]) -> list[dict]:
    return [{"target": e.target, "impl": e.impl, "load": e.load, "probe": e.probe,
             "shortest": [format_ns(p) if p else "none" for p in e.shortest_ns.values()],
             "periods": ", ".join(format_ns(p) for p in e.periods_ns),
             "reps": e.min_repetitions} for e in envelope(runs)]


def _cell_rows(runs: list[RunRecord]) -> list[dict]:
    rows = []
    for (target, impl, load, period_ns, probe), cell in sorted(_cells(runs).items()):
        ok = [r for r in cell if r.status == "ok" and r.metric(HEADLINE) is not None]
        worst = max(ok, key=lambda r: r.metric(HEADLINE)) if ok else None
        rows.append({
            "target": target, "impl": impl, "load": load, "period": format_ns(period_ns),
            "probe": probe, "reps": len(cell), "ok": len(ok),
            "status": ", ".join(f"{n} {s}" for s, n in sorted(Counter(r.status for r in cell).items())),
            "worst": worst.metric(HEADLINE) if worst else None,
            "median": statistics.median(r.metric(HEADLINE) for r in ok) if ok else None,
            "percentiles": [worst.metric(p) if worst else None for p in PERCENTILES],
            "excluded": int(sum(r.metric("excluded_periods") or 0 for r in ok)),
            "worst_run": worst.id if worst else "",
        })
    return rows


def _run_figures(store: Store, runs: list[RunRecord], limit: int, emit, skipped: list[str]) -> list[dict]:
    """Histogram and timeline of the worst run of the worst cells, at most `limit` runs."""
    worst = []
    for cell in _cells(runs).values():
        ok = [r for r in cell if r.status == "ok" and r.metric(HEADLINE) is not None and r.raw_path]
        if ok:
            worst.append(max(ok, key=lambda r: r.metric(HEADLINE)))
    worst.sort(key=lambda r: -r.metric(HEADLINE))
    if len(worst) > limit:
        skipped.append(f"per-run figures of {len(worst) - limit} more cells (only the worst "
                       f"{limit} are drawn; all cells are in the table)")
    out = []
    for r in worst[:limit]:
        try:
            series = read_raw(store.root / r.raw_path, r.raw_sha256)
        except UserError as exc:
            skipped.append(f"run {r.id} ({_cell_label(r)}): {exc}")
            continue
        warmup_ns = int(r.params.get("warmup_ns", 0))
        errors, timeline = {}, {}
        for probe in ("vpin", "self", r.probe):
            if probe in series and probe not in errors:
                blind = series.get(f"{probe}.blind")
                spans = blind_spans(blind) if blind is not None and len(blind) else None
                t_s, e = figures.period_errors(series[probe], r.period_ns, warmup_ns, spans)
                errors[probe], timeline[probe] = e, (t_s, e)
        if not any(len(e) for e in errors.values()):
            skipped.append(f"run {r.id} ({_cell_label(r)}): no periods after the warm-up to draw")
            continue
        title = f"run {r.id}: {_cell_label(r)} #{r.repetition + 1}"
        out.append({
            "id": r.id, "title": title, "worst": r.metric(HEADLINE),
            "hist": emit(figures.histogram_figure(errors, title), f"run_{r.id}_histogram"),
            "timeline": emit(figures.timeline_figure(timeline, r.period_ns, title),
                             f"run_{r.id}_period"),
            "percentiles": [(p.split("_")[0], {pr: r.metric(p, pr) for pr in errors})
                            for p in (HEADLINE, *PERCENTILES)],
            "probes": list(errors),
        })
    return out


def _bias_rows(runs: list[RunRecord]) -> list[dict]:
    """Self-probe vs vpin-probe per cell: how far the program's own view is from the observer's."""
    rows = []
    for (target, impl, load, period_ns, _), cell in sorted(_cells(runs).items()):
        pairs = [(r.metric(HEADLINE, "self"), r.metric(HEADLINE, "vpin")) for r in cell
                 if r.status == "ok"]
        pairs = [(s, v) for s, v in pairs if s is not None and v is not None]
        if pairs:
            s = statistics.median(p[0] for p in pairs)
            v = statistics.median(p[1] for p in pairs)
            rows.append({"cell": f"{target} {impl} {load} {format_ns(period_ns)}", "self": s,
                         "vpin": v, "ratio": f"{v / s:.3g}" if s else "—", "n": len(pairs)})
    return rows


def _targets(store: Store, runs: list[RunRecord]) -> list[dict]:
    out = []
    for target in sorted({r.target for r in runs}):
        mine = [r for r in runs if r.target == target]
        ids = [r.sysinfo_id for r in mine if r.sysinfo_id is not None]
        info = store.sysinfo(ids[-1]) if ids else {}
        governors = sorted({c.get("governor") or "?" for c in info.get("cpus") or []})
        summary = [(k, info[k]) for k in SYSINFO_KEYS if info.get(k) not in (None, "", [])]
        if governors:
            summary.append(("governors", ", ".join(governors)))
        loads: dict[tuple[str, str, str], list[float]] = defaultdict(list)
        for r in mine:
            for (_, name), m in r.metrics.items():
                if name.startswith("load_"):
                    loads[(r.load, name, m.unit)].append(m.value)
        out.append({"name": target, "sysinfo": summary,
                    "loads": [{"load": k[0], "metric": k[1], "unit": k[2], "n": len(v),
                               "median": f"{statistics.median(v):.4g}"}
                              for k, v in sorted(loads.items())]})
    return out


def _warnings(store: Store, campaigns: list[dict], runs: list[RunRecord]) -> list[dict]:
    seen, out = set(), []

    def add(where: str, w: Warning_) -> None:
        if (where, w.message) not in seen:
            seen.add((where, w.message))
            out.append({"where": where, "message": w.message, "remedy": w.remedy})

    for c in campaigns:
        for run_id, w in store.warnings(c["id"]):
            add(f"run {run_id}" if run_id else c["name"], w)
    for cell in _cells([r for r in runs if r.benchmark == "squarewave"]).values():
        r0 = cell[0]
        if len(cell) < 3:
            add(_cell_label(r0), Warning_(f"{len(cell)} repetition(s) only",
                                          "set campaign.repetitions to 3 or more"))
        values = [v for r in cell if r.status == "ok" and (v := r.metric(HEADLINE)) is not None]
        if len(values) >= 2 and statistics.mean(values) > 0:
            cv = statistics.pstdev(values) / statistics.mean(values)
            if cv > HIGH_VARIANCE_CV:
                add(_cell_label(r0), Warning_(
                    f"high variance between repetitions (std/mean of {HEADLINE} = {cv:.2f})",
                    "measure longer (campaign.duration) or more repetitions; look for other load"))
        for r in cell:
            blind, duration = r.metric("blind_time_ns"), r.params.get("duration_ns")
            if blind and duration and blind / duration > BLIND_WARN_FRACTION:
                add(f"run {r.id}", Warning_(f"probe blind {blind / duration * 100:.1f} % of the time",
                                            "give the probe its own CPU (isolcpus=) or use probe self"))
    return out


def _comparisons(runs: list[RunRecord], emit, skipped: list[str]) -> list[dict]:
    out = []
    pairs = label_pairs(runs)
    if len(pairs) > MAX_COMPARISONS:
        skipped.append(f"{len(pairs) - MAX_COMPARISONS} label comparisons beyond the first "
                       f"{MAX_COMPARISONS} (use jitterlab compare)")
    for base, cand in pairs[:MAX_COMPARISONS]:
        try:
            result: Comparison = compare(runs, base, cand)
        except UserError as exc:
            skipped.append(f"comparison {cand} vs {base}: {exc}")
            continue
        wanted = set(COMPARE_METRICS) | {m for b in summarize(runs) for m in b.columns[:2]}
        headline = [r for r in result.rows if r.metric in wanted or r.metric.startswith("load_")]
        result.rows = headline
        out.append({
            "title": f"{cand} vs {base}",
            "svg": emit(figures.compare_figure(result), f"compare_{base.key}_{base.value}_{cand.value}"),
            "rows": [{"cell": cell_text(result, r), "probe": r.probe, "metric": r.metric,
                      "a": f"{r.median_baseline:.4g}", "b": f"{r.median_candidate:.4g}",
                      "n": f"{r.n_baseline}/{r.n_candidate}", "change": f"{r.change_pct:+.1f} %",
                      "ci": f"{r.ci_low:.3g}–{r.ci_high:.3g}", "p": f"{r.p_value:.3g}",
                      "verdict": r.verdict} for r in headline],
            "warnings": result.warnings,
        })
    return out


def load_series_for(store: Store, run: RunRecord) -> dict[str, EdgeSeries]:
    """The raw series of a run; UserError naming the run when missing or damaged."""
    if not run.raw_path:
        raise UserError(f"run {run.id}: has no raw series (status {run.status})")
    try:
        return read_raw(store.root / run.raw_path, run.raw_sha256)
    except UserError as exc:
        raise UserError(f"run {run.id}: {exc}") from None
