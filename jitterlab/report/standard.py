"""Summaries of the standard benchmarks (cyclictest, udp-echo, sysbench-cpu, ...), shared by the
terminal and the HTML report: one row per cell, the benchmark's headline metrics as columns,
each the median over the cell's successful repetitions with the spread (min-max) beside it.
"""

from __future__ import annotations

import json
import statistics
from collections import defaultdict
from dataclasses import dataclass

from jitterlab import plugins
from jitterlab.store.catalog import RunRecord
from jitterlab.units import format_ns

MAX_COLUMNS = 6
_SQUAREWAVE_COLUMNS = {"impl", "period", "probe", "pin"}


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
    """The cell's parameters (or only `keys`) in the benchmark's order (the store keeps them
    sorted by name)."""
    cell = run.params.get("cell", {})
    shown = _shows(run.benchmark)
    order = [k for k in shown if k in cell] + sorted(k for k in cell if k not in shown)
    return " ".join(f"{k}={shown.get(k, str)(cell[k])}" for k in order if keys is None or k in keys)


def _varying(runs: list[RunRecord]) -> tuple[list[str], list[str]]:
    """Cell parameters that differ between these runs, and those that all share."""
    keys = sorted({k for r in runs for k in r.params.get("cell", {})})
    values = {k: {json.dumps(r.params.get("cell", {}).get(k)) for r in runs} for k in keys}
    return [k for k in keys if len(values[k]) > 1], [k for k in keys if len(values[k]) == 1]


def summarize(runs: list[RunRecord]) -> list[BenchmarkSummary]:
    """Every benchmark but squarewave (which has its own figures), in name order."""
    by_bench: dict[str, list[RunRecord]] = defaultdict(list)
    for r in runs:
        if r.benchmark != "squarewave":
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


def format_value(value: float, unit: str) -> str:
    """A measured value for people: 4 significant digits, durations in their best unit."""
    if unit == "ns":
        return format_ns(value, digits=4)
    if unit == "ratio":
        return f"{value * 100:.3g} %"
    if unit == "count":
        return f"{value:,.0f}" if value == int(value) else f"{value:,.4g}"
    shown = f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.4g}"  # 27,290 not 2.729e+04
    return f"{shown} {unit}".strip()


def _varying_labels(runs: list[RunRecord]) -> list[str]:
    keys = sorted({k for r in runs for k in r.labels})
    return [k for k in keys if len({str(r.labels.get(k)) for r in runs}) > 1]


def _shows(benchmark: str) -> dict:
    if benchmark not in plugins.BENCHMARKS:
        return {}
    bench = plugins.BENCHMARKS.get(benchmark, "benchmark")
    return {p.name: p.show for p in getattr(bench, "params", ())}


def run_label(run: RunRecord) -> str:
    """A run's cell in a few words: "c-fifo 1ms cpu (vpin)" or "udp-echo size=64 policy=fifo idle"."""
    if run.benchmark == "squarewave":
        return f"{run.impl} {format_ns(run.period_ns)} {run.load} ({run.probe})"
    cell = run.params.get("cell", {})
    if run.benchmark in plugins.BENCHMARKS and cell:  # the benchmark's own short name of the cell
        from jitterlab.campaign import Cell

        bench = plugins.BENCHMARKS.get(run.benchmark, "benchmark")
        order = [p.name for p in bench.params if p.name in cell]
        if len(order) == len(cell):
            return bench.label(Cell(run.target, run.benchmark, run.load, tuple((k, cell[k]) for k in order)))
    return " ".join(p for p in (run.benchmark, params_text(run), run.load) if p)


def headline_value(run: RunRecord) -> str:
    """The run's first headline metric, formatted; "" when it has none."""
    for name in headline_metrics(run.benchmark, [run]):
        metric = run.metrics.get((run.probe, name)) or run.metrics.get(("", name))
        if metric is not None:
            return f"{name} {format_value(metric.value, metric.unit)}"
    return ""
