"""The standard benchmarks' section of the report and of the terminal summary (cyclictest,
udp-echo, sysbench-cpu, ...): per benchmark a table of its cells (report.summaries), a chart of
the first headline metric and the latency distribution of each cell's worst run."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text

from jitterlab.analysis.direction import direction_of
from jitterlab.analysis.samples import distribution, overflow_count
from jitterlab.model.errors import UserError
from jitterlab.model.records import RunRecord
from jitterlab.report.format import format_value
from jitterlab.report.sections.base import SECTIONS, SectionContext
from jitterlab.report.summaries import BenchmarkSummary, Value, column_title, run_label, summarize
from jitterlab.report.warning_groups import Note


class StandardSection:
    """The standard benchmarks: a table, a chart of the first headline metric and the latency
    distributions of each."""

    title = "Standard benchmarks"
    template = "standard.html.j2"

    def build(self, runs: list[RunRecord], ctx: SectionContext) -> dict:
        from jitterlab.report.figures import standard as figures  # matplotlib: for the report alone

        out = []
        for bench in summarize(runs):
            rows = [{"cell": c.name, "status": c.status, "errors": c.errors,
                     "shown": [_value_text(c.values.get(m)) for m in bench.columns]} for c in bench.cells]
            bars = None
            if bench.columns:
                bars = ctx.emit(figures.bars_figure(bench, bench.columns[0]),
                                f"{bench.benchmark}_{bench.columns[0]}",
                                {r.target for c in bench.cells for r in c.runs})
            out.append({"benchmark": bench.benchmark, "rows": rows, "bars": bars,
                        "columns": [column_title(bench, m) for m in bench.columns],
                        "distribution": _distribution(bench, ctx), "fixed": bench.fixed})
        return {"benchmarks": out}

    def terminal(self, runs: list[RunRecord], campaign: str, planned=None) -> list:
        tables = []
        for bench in summarize(runs):
            caption = ("worst run: the worst repetition; median of runs: over the ok repetitions"
                       + (f"; every cell: {bench.fixed}" if bench.fixed else ""))
            table = Table(title=f"{campaign}: {bench.benchmark}", caption=caption)
            table.add_column("cell")
            table.add_column("runs", justify="right")
            for name in bench.columns:
                table.add_column(column_title(bench, name), justify="right")
            for cell in bench.cells:
                values = [format_value(v.value, v.unit) if (v := cell.values.get(c)) else "—"
                          for c in bench.columns]
                ok = sum(r.status == "ok" for r in cell.runs)
                runs_text = (Text(f"{ok}/{len(cell.runs)}") if ok == len(cell.runs)
                             else Text(cell.status, style="red"))
                table.add_row(Text(cell.name), runs_text, *values)
            tables.append(table)
        return tables

    def warnings(self, runs: list[RunRecord]) -> list[Note]:
        return []


def _value_text(v: Value | None) -> str:
    if v is None:
        return "—"
    text = format_value(v.value, v.unit)
    if v.n > 1 and v.high != v.low:
        text += f" ({format_value(v.low, v.unit)} – {format_value(v.high, v.unit)})"
    return text


def _distribution(bench: BenchmarkSummary, ctx: SectionContext) -> str | None:
    """The latency distribution of the worst run of each cell (by the first headline metric), as
    CCDFs in one figure (split into panels by load when there are more than an eye can follow),
    each curve naming its run."""
    from jitterlab.report.figures import standard as figures

    curves: dict[str, tuple] = {}
    targets: set[str] = set()
    overflow: dict[str, int] = {}
    groups: dict[str, str] = {}
    first = bench.columns[0] if bench.columns else None
    for cell in bench.cells:
        ok = [r for r in cell.runs if r.status == "ok" and r.raw_path]
        if not ok:
            continue
        if len(curves) >= ctx.max_run_figures:
            ctx.skipped.append(f"{bench.benchmark}: latency distributions of more than "
                               f"{ctx.max_run_figures} cells (raise --max-run-figures)")
            break
        run = _worst(ok, first)
        try:
            found = distribution(run, ctx.store.read_series(run))
        except UserError as exc:
            ctx.skipped.append(f"run {run.id} ({run.target} {run_label(run)}): {exc}")
            continue
        if "latency" in found:
            label = f"run {run.id}: {cell.name}"
            curves[label] = found["latency"]
            targets.add(run.target)
            overflow[label] = overflow_count(run)
            groups[label] = cell.load
    if not curves:
        return None
    title = f"{bench.benchmark}: latency distribution (CCDF) of the worst run of each cell"
    return ctx.emit(figures.ccdf_figure(curves, title, overflow, groups), f"{bench.benchmark}_distribution",
                    targets)


def _worst(runs: list[RunRecord], metric: str | None) -> RunRecord:
    """The worst of these runs by `metric` (the last one without it)."""
    rated = [r for r in runs if metric and r.metric(metric, "") is not None]
    if not rated or metric is None:
        return runs[-1]
    way = direction_of(rated[0].metrics[("", metric)])
    pick = min if way == "higher" else max
    return pick(rated, key=lambda r: r.metric(metric, ""))


SECTIONS.add("standard", "every benchmark without a section of its own: tables, charts, distributions",
             StandardSection())
