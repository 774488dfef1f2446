"""Summaries of the standard benchmarks (cyclictest, udp-echo, sysbench-cpu, ...), shared by the
terminal and the HTML report: one row per cell, the benchmark's headline metrics as columns,
each summarized over the cell's successful repetitions by the metric's rule (analysis.summary:
the worst run for worst-case metrics, else the median with the spread), named in the header.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass

from jitterlab.analysis import summary
from jitterlab.campaign import cells
from jitterlab.model.records import RunRecord
from jitterlab.report.format import format_value
from jitterlab.report.traits import headline_metrics, own_metric

MAX_COLUMNS = 6


@dataclass(frozen=True)
class Value:
    """A cell's summary of one metric: `value` by `rule` (worst / median), the runs' spread."""

    value: float
    low: float
    high: float
    unit: str
    n: int
    rule: str


@dataclass
class CellSummary:
    target: str
    params: str  # "size=64 policy=fifo"
    load: str
    labels: str  # the labels that vary between runs of the benchmark ("image=1.10")
    runs: list[RunRecord]
    values: dict[str, Value]

    show_target: bool = True  # False when every cell of the summary is on one target

    @property
    def name(self) -> str:
        parts = [self.target if self.show_target else "", self.params, self.load,
                 f"[{self.labels}]" if self.labels else ""]
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
    """The cell's parameters (or only `keys`, defaults included) in the benchmark's order, as
    written in a campaign."""
    return cells.params_text(run.cell, keys, defaults=keys is not None)


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
    varying = cells.identity_labels(runs)
    differ, shared = _varying(runs)
    groups: dict[tuple, list[RunRecord]] = defaultdict(list)
    for r in runs:
        groups[(r.target, params_text(r, differ), r.load, cells.labels_text(r, varying))].append(r)
    columns = shown_metrics(runs)
    out = []
    for (target, params, load, labels), members in groups.items():
        values = {}
        for name in columns:
            found = [m for r in members if r.status == "ok" and (m := r.metrics.get(("", name)))]
            s = summary.summarize_metrics(found)
            if s is not None:
                values[name] = Value(s.value, s.low, s.high, found[0].unit, s.n, s.rule)
        out.append(CellSummary(target, params, load, labels, members, values,
                               len({r.target for r in runs}) > 1))
    fixed = cells.params_text(runs[0].cell, shared) if runs else ""
    return BenchmarkSummary(benchmark, columns, out, fixed)


def column_title(bench: BenchmarkSummary, name: str) -> str:
    """A column's header: the metric in words and the rule its cells were summarized by
    ("maximum latency (worst run)")."""
    from jitterlab.report.words import metric_words  # the one wording of metric names

    rule = next((v.rule for c in bench.cells if (v := c.values.get(name))), "")
    return summary.figure_name(metric_words(name), rule) if rule else metric_words(name)


def shown_metrics(runs: list[RunRecord]) -> list[str]:
    """The metrics a summary of one benchmark's runs shows, at most MAX_COLUMNS: their headline
    metrics (report.traits) that are the runs' own (subject ""); else the graded ones they have, so
    that a benchmark without a declaration still shows something."""
    chosen = headline_metrics(runs, subject="")
    if not chosen:
        chosen = sorted(
            {
                name
                for r in runs
                for (subject, name), m in r.metrics.items()
                if subject == "" and m.direction in ("lower", "higher") and not name.startswith("load_")
            }
        )
    return chosen[:MAX_COLUMNS]


def run_label(run: RunRecord) -> str:
    """A run's cell in a few words: "c-fifo 1ms cpu (vpin)" or "udp-echo 64B fifo every 1ms idle"."""
    return cells.label(run.cell)


def headline_value(run: RunRecord) -> str:
    """The run's first headline metric in words, formatted ("maximum latency 40.2 ms"); "" when it
    has none."""
    from jitterlab.report.words import metric_words

    for name in shown_metrics([run]):
        metric = own_metric(run, name)
        if metric is not None:
            return f"{metric_words(name)} {format_value(metric.value, metric.unit)}"
    return ""
