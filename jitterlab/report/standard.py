"""Summaries of the standard benchmarks (cyclictest, udp-echo, sysbench-cpu, ...), shared by the
terminal and the HTML report: one row per cell, the benchmark's headline metrics as columns,
each the median over the cell's successful repetitions with the spread (min-max) beside it.
"""

from __future__ import annotations

import json
import statistics
from collections import defaultdict
from dataclasses import dataclass

import numpy as np
from rich.table import Table

from jitterlab import cells, plugins
from jitterlab.analysis.latency import HISTOGRAM_UNIT, histogram_samples
from jitterlab.errors import UserError
from jitterlab.records import Warning_
from jitterlab.report import figures
from jitterlab.report.format import format_value
from jitterlab.report.sections import SECTIONS, SectionContext
from jitterlab.store.catalog import RunRecord
from jitterlab.store.raw import Samples, read_raw

MAX_COLUMNS = 6


@dataclass(frozen=True)
class Value:
    median: float
    low: float
    high: float
    unit: str
    n: int


@dataclass
class CellSummary:
    target: str
    params: str  # "size=64 policy=fifo"
    load: str
    labels: str  # the labels that vary between runs of the benchmark ("image=1.10")
    runs: list[RunRecord]
    values: dict[str, Value]

    @property
    def name(self) -> str:
        parts = [self.target, self.params, self.load, f"[{self.labels}]" if self.labels else ""]
        return " ".join(p for p in parts if p)

    @property
    def status(self) -> str:
        counts: dict[str, int] = defaultdict(int)
        for r in self.runs:
            counts[r.status] += 1
        return ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))

    @property
    def errors(self) -> list[str]:
        return sorted({r.error for r in self.runs if r.error})


@dataclass
class BenchmarkSummary:
    benchmark: str
    columns: list[str]
    cells: list[CellSummary]
    fixed: str = ""  # the parameters every cell shares ("interval=1ms priority=95")


def params_text(run: RunRecord, keys: list[str] | None = None) -> str:
    """The cell's parameters (or only `keys`) in the benchmark's order, as written in a campaign."""
    return cells.params_text(run.cell, keys)


def _varying(runs: list[RunRecord]) -> tuple[list[str], list[str]]:
    """Cell parameters that differ between these runs, and those that all share."""
    keys = sorted({k for r in runs for k, _ in r.cell.params})
    values = {k: {json.dumps(r.param(k)) for r in runs} for k in keys}
    return [k for k in keys if len(values[k]) > 1], [k for k in keys if len(values[k]) == 1]


def summarize(runs: list[RunRecord]) -> list[BenchmarkSummary]:
    """One summary per benchmark of these runs, in name order."""
    by_bench: dict[str, list[RunRecord]] = defaultdict(list)
    for r in runs:
        by_bench[r.benchmark].append(r)
    return [_summarize_one(name, by_bench[name]) for name in sorted(by_bench)]


def _summarize_one(benchmark: str, runs: list[RunRecord]) -> BenchmarkSummary:
    varying = _varying_labels(runs)
    differ, shared = _varying(runs)
    groups: dict[tuple, list[RunRecord]] = defaultdict(list)
    for r in runs:
        labels = ", ".join(f"{k}={r.labels.get(k, '')}" for k in varying)
        groups[(r.target, params_text(r, differ), r.load, labels)].append(r)
    columns = headline_metrics(benchmark, runs)
    cells = []
    for (target, params, load, labels), members in groups.items():
        values = {}
        for name in columns:
            found = [m for r in members if r.status == "ok" and (m := r.metrics.get(("", name)))]
            if found:
                xs = [m.value for m in found]
                values[name] = Value(statistics.median(xs), min(xs), max(xs), found[0].unit, len(xs))
        cells.append(CellSummary(target, params, load, labels, members, values))
    return BenchmarkSummary(benchmark, columns, cells, params_text(runs[0], shared) if runs else "")


def headline_metrics(benchmark: str, runs: list[RunRecord]) -> list[str]:
    """The benchmark's declared headline metrics that these runs have; else the first graded
    metrics they have, so that a benchmark without a declaration still shows something."""
    present = {name for r in runs for (probe, name) in r.metrics if probe == ""}
    declared: tuple[str, ...] = ()
    if benchmark in plugins.BENCHMARKS:
        declared = getattr(plugins.BENCHMARKS.get(benchmark, "benchmark"), "headline", ())
    chosen = [m for m in declared if m in present]
    if not chosen:
        graded = sorted(
            {
                name
                for r in runs
                for (probe, name), m in r.metrics.items()
                if probe == "" and m.direction in ("lower", "higher") and not name.startswith("load_")
            }
        )
        chosen = graded
    return chosen[:MAX_COLUMNS]


def _varying_labels(runs: list[RunRecord]) -> list[str]:
    keys = sorted({k for r in runs for k in r.labels})
    return [k for k in keys if len({str(r.labels.get(k)) for r in runs}) > 1]


def run_label(run: RunRecord) -> str:
    """A run's cell in a few words: "c-fifo 1ms cpu (vpin)" or "udp-echo 64B fifo every 1ms idle"."""
    return cells.label(run.cell)


def headline_value(run: RunRecord) -> str:
    """The run's first headline metric, formatted; "" when it has none."""
    for name in headline_metrics(run.benchmark, [run]):
        metric = run.metrics.get((run.probe, name)) or run.metrics.get(("", name))
        if metric is not None:
            return f"{name} {format_value(metric.value, metric.unit)}"
    return ""


class StandardSection:
    """The standard benchmarks: a table, a bar chart of the first headline metric and the latency
    distributions of each."""

    title = "Standard benchmarks"
    template = "standard.html.j2"

    def build(self, runs: list[RunRecord], ctx: SectionContext) -> dict:
        out = []
        for bench in summarize(runs):
            rows = [{"cell": c.name, "status": c.status, "errors": c.errors,
                     "shown": [_value_text(c.values.get(m)) for m in bench.columns]} for c in bench.cells]
            bars = None
            if bench.columns:
                bars = ctx.emit(figures.bars_figure(bench, bench.columns[0]),
                                f"{bench.benchmark}_{bench.columns[0]}")
            out.append({"benchmark": bench.benchmark, "columns": bench.columns, "rows": rows, "bars": bars,
                        "distribution": _distribution(bench, ctx), "fixed": bench.fixed})
        return {"benchmarks": out}

    def terminal(self, runs: list[RunRecord], campaign: str) -> list:
        tables = []
        for bench in summarize(runs):
            caption = "median over repetitions" + (f"; every cell: {bench.fixed}" if bench.fixed else "")
            table = Table(title=f"{campaign}: {bench.benchmark}", caption=caption)
            for name in ("cell", "runs", *bench.columns):
                table.add_column(name, justify="left" if name == "cell" else "right")
            for cell in bench.cells:
                values = [format_value(v.median, v.unit) if (v := cell.values.get(c)) else "—"
                          for c in bench.columns]
                ok = sum(r.status == "ok" for r in cell.runs)
                runs_text = f"{ok}/{len(cell.runs)}" if ok == len(cell.runs) else f"[red]{cell.status}[/]"
                table.add_row(cell.name, runs_text, *values)
            tables.append(table)
        return tables

    def warnings(self, runs: list[RunRecord]) -> list[tuple[str, Warning_]]:
        return []


def _value_text(v: Value | None) -> str:
    if v is None:
        return "—"
    text = format_value(v.median, v.unit)
    if v.n > 1 and v.high != v.low:
        text += f" ({format_value(v.low, v.unit)} – {format_value(v.high, v.unit)})"
    return text


def _distribution(bench: BenchmarkSummary, ctx: SectionContext) -> str | None:
    """Latency samples (or 1 µs histograms) of one run per cell, drawn together."""
    samples: dict[str, np.ndarray] = {}
    for cell in bench.cells:
        ok = [r for r in cell.runs if r.status == "ok" and r.raw_path]
        if not ok:
            continue
        if len(samples) >= ctx.max_run_figures:
            ctx.skipped.append(f"{bench.benchmark}: latency distributions of more than "
                               f"{ctx.max_run_figures} cells")
            break
        run = ok[-1]
        try:
            series = read_raw(ctx.store.root / run.raw_path, run.raw_sha256)
        except UserError as exc:
            ctx.skipped.append(f"run {run.id} ({run.target} {run_label(run)}): {exc}")
            continue
        parts = [s.values if s.unit == "ns" else histogram_samples(s.values)
                 for s in series.values() if isinstance(s, Samples) and s.unit in ("ns", HISTOGRAM_UNIT)]
        if parts:
            samples[cell.name] = np.concatenate(parts)
    if not samples:
        return None
    title = f"{bench.benchmark}: latency distribution of one run per cell"
    return ctx.emit(figures.distribution_figure(samples, title), f"{bench.benchmark}_distribution")


SECTIONS.add("standard", "every benchmark without a section of its own: tables, bars, distributions",
             StandardSection())
