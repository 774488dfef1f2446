"""What monitoring says at the end of each interval: the headline values of every cell measured in
it, and an alert when a change of a cell's history (analysis/changepoints.py, over the cell's runs
in interval order) is first seen: the interval that starts it, or a later one when the change
needed more values than its first to stand out."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from jitterlab import plugins
from jitterlab.analysis.changepoints import ChangePoint, change_points
from jitterlab.model.records import RunRecord
from jitterlab.report.format import change, format_value
from jitterlab.report.traits import subject_of
from jitterlab.report.trend import p_text


@dataclass(frozen=True)
class Alert:
    cell: str
    metric: str
    interval: int  # 0-based: the interval that starts the change
    change: ChangePoint
    unit: str
    run_before: str
    run_after: str
    probe: str = ""  # "" for a metric no probe observed
    seen: int = -1  # 0-based: the interval whose value made the change stand out (-1: `interval`)

    def text(self, intervals: int) -> str:
        c = self.change
        seen = self.interval if self.seen < 0 else self.seen
        when = (f"interval {self.interval + 1}/{intervals} starts a change" if seen == self.interval else
                f"a change from interval {self.interval + 1}, seen at interval {seen + 1}/{intervals}")
        return (f"ALERT {self.cell} {_named(self.metric, self.probe)}: {when}: "
                f"{format_value(c.before, self.unit)} → {format_value(c.after, self.unit)} "
                f"({change(c.ratio)}, p {p_text(c.p_value).replace('< ', '<')}); last run before "
                f"{self.run_before}, first after {self.run_after}")


def _named(metric: str, probe: str) -> str:
    """A metric as a line names it: with the probe that saw it, when one did."""
    return f"{metric} (probe {probe})" if probe else metric


def values_text(run: RunRecord, watched: list[tuple[str, str]]) -> str:
    """One labelled value per metric and probe: "max_rel_period_error vpin 388 %, self 289 %;
    p99_rel_period_error vpin 67.9 %, self 39 %" ("fake_value 100" without probes)."""
    by_metric: dict[str, list[str]] = defaultdict(list)
    for probe, metric in watched:
        by_metric[metric].append(probe)
    parts = []
    for metric, probes in by_metric.items():
        probes.sort(key=lambda p: (p != subject_of(run), p))  # the run's own subject first
        values = (f"{p} {format_value(run.metrics[(p, metric)].value, run.metrics[(p, metric)].unit)}".strip()
                  for p in probes)
        parts.append(f"{metric} {', '.join(values)}")
    return "; ".join(parts)


def trend_metric(runs: list[RunRecord]) -> str | None:
    """The metric a trend of these runs is best drawn for: the first headline metric of the newest
    successful run; None without one."""
    ok = [r for r in runs if r.status == "ok"]
    if not ok:
        return None
    newest = max(ok, key=lambda r: (r.repetition, r.started_ns))
    return next((metric for _, metric in _watched(newest)), None)


def _watched(run: RunRecord) -> list[tuple[str, str]]:
    """(probe, metric) of a run's headline metrics; every graded metric when its benchmark names none."""
    headline = plugins.traits(run.benchmark).headline
    keys = sorted(run.metrics)
    if headline:
        return [k for name in headline for k in keys if k[1] == name]
    return [k for k in keys if not k[1].startswith("load_")]


def interval_report(runs: list[RunRecord], interval: int, cell_name) -> tuple[list[str], list[Alert]]:
    """Lines with the headline values of the runs of `interval` (0-based), one per cell, and an
    alert for each change point of a cell's history (the runs up to it, by interval) that the
    history up to the interval before did not have: the change this interval starts, or one that
    started earlier and stands out only now that this interval's value is known. `cell_name(run)`
    writes a cell as the campaign does."""
    history: dict[str, list[RunRecord]] = defaultdict(list)
    for r in sorted(runs, key=lambda r: r.repetition):
        if r.repetition <= interval:
            history[r.cell.key].append(r)
    lines, alerts = [], []
    for key in sorted(history, key=lambda k: cell_name(history[k][-1])):
        newest = history[key][-1]
        name = cell_name(newest)
        if newest.repetition != interval:
            continue
        if newest.status != "ok":
            lines.append(f"  {name}: {newest.status}: {newest.error or ''}".rstrip())
            continue
        watched = _watched(newest)
        lines.append(f"  {name}: {values_text(newest, watched)}")
        ok = [r for r in history[key] if r.status == "ok"]
        for probe, metric in watched:
            series = [r for r in ok if (probe, metric) in r.metrics]
            values = [r.metrics[(probe, metric)].value for r in series]
            known = {c.index for c in change_points(values[:-1])}
            for found in change_points(values):
                if found.index not in known:
                    alerts.append(Alert(name, metric, series[found.index].repetition, found,
                                        newest.metrics[(probe, metric)].unit, series[found.index - 1].id,
                                        series[found.index].id, probe, interval))
    return lines, alerts


def history_changes(runs: list[RunRecord], cell_name) -> list[str]:
    """Every change point of every cell's history of headline values, with the runs on both sides."""
    by_cell: dict[str, list[RunRecord]] = defaultdict(list)
    for r in sorted(runs, key=lambda r: r.repetition):
        if r.status == "ok":
            by_cell[r.cell.key].append(r)
    out = []
    for key in sorted(by_cell, key=lambda k: cell_name(by_cell[k][0])):
        ok = by_cell[key]
        for probe, metric in _watched(ok[-1]):
            series = [r for r in ok if (probe, metric) in r.metrics]
            unit = series[-1].metrics[(probe, metric)].unit if series else ""
            for c in change_points([r.metrics[(probe, metric)].value for r in series]):
                before, after = series[c.index - 1], series[c.index]
                out.append(f"  {cell_name(after)} {_named(metric, probe)}: from interval "
                           f"{after.repetition + 1}: "
                           f"{format_value(c.before, unit)} → {format_value(c.after, unit)} "
                           f"({change(c.ratio)}); runs {before.id} | {after.id}")
    return out
