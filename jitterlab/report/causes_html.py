"""The HTML report's section on why periods were late: per traced cell its causes' shares (one
stacked bar each) and their fixes, and the timeline of each cell's worst explained period
(report/figures/causes.py). Read from the runs' stored explanations only."""

from __future__ import annotations

from collections.abc import Callable, Collection

from jitterlab.model.errors import UserError
from jitterlab.model.explanation import DIRECT, ExplainedPeriod, Explanation
from jitterlab.model.records import RunRecord
from jitterlab.model.series import EdgeSeries
from jitterlab.report import causes
from jitterlab.report.causes_view import shares_text, trace_commands
from jitterlab.report.figures.causes import shares_figure, timeline_figure
from jitterlab.report.format import duration
from jitterlab.report.limits import NO_MEASURE, Measure

MAX_TIMELINES = 6  # cells whose worst period gets a timeline; the rest are listed as skipped

Emit = Callable[[object, str, Collection[str]], str]  # (figure, file name, targets shown) -> inline SVG


def why_late_section(store, runs: list[RunRecord], emit: Emit, skipped: list[str],
                     measure: Measure = NO_MEASURE) -> dict | None:
    """The section's context: the cells' lines, fixes (a tuning's with the command that measures it:
    `measure`, report/limits.measure_tuning) and bar chart, the timelines, the runs that were traced
    but explain nothing (with why); None when no run of the report was traced."""
    found = causes.Explanations(store.root)
    traced = [r for r in runs if causes.traced(r)]
    if not traced:
        return None
    cells = causes.cell_shares(traced, found)
    several = len({t for t, _ in cells}) > 1
    out: dict = {"cells": [], "bars": None, "timelines": [], "refused": [],
                 "damaged": list(found.damaged.values())}
    for r in traced:
        e = found.of(r)
        if e is not None and (e.refused or not e.periods):
            out["refused"].append(f"run {r.id} ({r.target} {causes.cell_of(r)[1]}): "
                                  f"{e.refused or 'no period late enough to explain'}")
    if not cells:
        return out
    for (target, label), s in cells.items():
        out["cells"].append({"name": f"{target} {label}" if several else label, "line": shares_text(s),
                             "emulated": s.emulated,
                             "fixes": [_fix(g.text, r, measure) for g, r in causes.remedies(s)]})
    targets = {t for t, _ in cells}
    out["bars"] = emit(shares_figure(cells, several), "why_late_shares", targets)
    worst = _worst_per_cell(found.explained(traced))
    for i, (cell, (run, e, period)) in enumerate(worst.items()):
        if i >= MAX_TIMELINES:
            skipped.append(f"timeline of the worst period of {cell[1]} on {cell[0]}: past the first "
                           f"{MAX_TIMELINES} cells (jitterlab explain {run.id})")
            continue
        title = (f"{cell[1]}: its worst explained period, {run.id} period {period.index + 1}, "
                 f"{duration(period.lateness_ns)} late")
        title += " — functional evidence only" if e.emulated else ""
        svg = emit(timeline_figure(period, _edges(store, run, e), title), f"why_late_timeline_{run.id}",
                   {run.target})
        path = causes.trace_path(run, store.root)
        out["timelines"].append({"title": title, "svg": svg, "run": run.id,
                                 "trace": trace_commands(path) if path is not None else None,
                                 "traced": causes.traced_note(e)})
    return out


def _worst_per_cell(explained: list[tuple[RunRecord, Explanation]]
                    ) -> dict[tuple[str, str], tuple[RunRecord, Explanation, ExplainedPeriod]]:
    """Each cell's latest explained period that kept its spans (else its latest)."""
    out: dict[tuple[str, str], tuple[RunRecord, Explanation, ExplainedPeriod]] = {}
    for run, e in explained:
        for p in e.periods:
            cell = causes.cell_of(run)
            best = out.get(cell)
            key = (p.spans is not None, p.lateness_ns)
            if best is None or key > (best[2].spans is not None, best[2].lateness_ns):
                out[cell] = (run, e, p)
    return dict(sorted(out.items()))


def _edges(store, run: RunRecord, e: Explanation) -> EdgeSeries | None:
    """The probe's edges where they are on the trace's clock (aligned directly); None otherwise, or
    when the run's series cannot be read."""
    if e.aligned_by != DIRECT or not run.raw_path:
        return None
    try:
        series = store.read_series(run)
    except UserError:  # a figure without the wave; the rest of the report stands
        return None
    return next((s for s in series.values() if isinstance(s, EdgeSeries)), None)


def _fix(what: str, r: causes.Remedy, measure: Measure) -> dict[str, str]:
    """A fix as the page shows it: "cause: remedy (tuning T)", and the command that measures its
    tuning ("" when there is none to give) with the words before it, or why the tuning is not
    proposed (no command)."""
    if r.tuning and r.tuning in measure.refused:
        return {"text": f"{what}: {causes.remedy_text(r)}", "measure": measure.line(r.tuning), "command": ""}
    line = measure.line(r.tuning) if r.tuning else ""
    head, _, command = line.partition(": ")
    return {"text": f"{what}: {causes.remedy_text(r)}", "measure": head, "command": command}
