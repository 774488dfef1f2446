"""A metric over time: per cell, one point per label value (kernel version, image build), per
campaign or per day, like a long-term latency plot. Pure: stored runs in, series out.

A point summarizes the successful runs of its cell at that x: the median and the range (min, max)
over them, how many they were and which. Cells are aligned by their identity (target, benchmark,
load and the benchmark's parameters), so the same cell measured on every image forms one line.
Each line carries its change points (analysis/changepoints.py, over the points' medians in order).
"""

from __future__ import annotations

import datetime as dt
import re
import statistics
from collections import defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from jitterlab.analysis.changepoints import ChangePoint, change_points
from jitterlab.model.campaigns import CampaignEntry
from jitterlab.model.cellnames import PLAIN, CellNames
from jitterlab.model.errors import UserError
from jitterlab.model.records import RunRecord
from jitterlab.model.registry import METRICS_LISTED, offered

SPECIAL = ("time", "date", "campaign")


@dataclass(frozen=True)
class Point:
    x: str
    median: float
    low: float
    high: float
    n: int
    runs: tuple[str, ...] = ()  # ids of the runs summarized, in start order
    at_ns: int | None = None  # when (by time, date or campaign): a time axis draws it there


@dataclass(frozen=True)
class Series:
    cell: str
    probe: str
    unit: str
    points: tuple[Point, ...]
    changes: tuple[ChangePoint, ...] = ()  # index: the first point after a change

    def sides(self, change: ChangePoint) -> tuple[Point, Point]:
        """The last point before a change and the first after it."""
        return self.points[change.index - 1], self.points[change.index]


def natural(text: str) -> list:
    """"1.10" sorts after "1.9", "6.12" after "6.1"."""
    return [(0, int(p), "") if p.isdigit() else (1, 0, p) for p in re.split(r"(\d+)", text)]


def trend(runs: list[RunRecord], campaigns: Mapping[int, CampaignEntry], metric: str, by: str, *,
          subject_of: Callable[[RunRecord], str], names: CellNames = PLAIN) -> list[Series]:
    """Series of `metric` per cell, x from the label `by`, or "date" / "campaign" (campaigns maps
    id -> {name, created_ns}); the run's own `metric` (of `subject_of(run)`, its benchmark's
    traits), else the run-wide one; `names` writes the cells (campaign.cells.names(): as a campaign
    does). UserError when no run has both the metric and the key."""
    grouped: dict[tuple[str, str, str], dict[str, list[tuple[float, int, str]]]] = defaultdict(
        lambda: defaultdict(list))
    order: dict[str, object] = {}
    at: dict[str, int] = {}
    for r in runs:
        probe = subject_of(r)
        value = r.metric(metric, probe)
        if value is None and (("", metric) in r.metrics):
            value, probe = r.metrics[("", metric)].value, ""
        if r.status != "ok" or value is None:
            continue
        x = _x(r, campaigns, by, order, at)
        if x is None:
            continue
        unit = next(m.unit for (p, n), m in r.metrics.items() if n == metric and p == probe)
        name = " ".join(p for p in (r.target, r.benchmark, names.params_text(r.cell), r.load) if p)
        grouped[(name, probe, unit)][x].append((value, r.started_ns, r.id))
    if not grouped:
        ok = [r for r in runs if r.status == "ok"]
        known = sorted({n for r in ok for (_, n) in r.metrics})
        if metric not in known:
            raise UserError(f"--trend {metric}: no successful run has this metric; they have: "
                            f"{offered(metric, known, METRICS_LISTED)}")
        keys = sorted({k for r in ok for k in r.labels})
        raise UserError(f"--trend {metric} --by {by}: no successful run has both; --by takes time, date, "
                        f"campaign or a label key ({', '.join(keys) or 'none in these runs'})")
    out = []
    for (name, probe, unit), by_x in sorted(grouped.items()):
        xs = sorted(by_x, key=lambda x: order.get(x, natural(x)))
        points = tuple(_point(x, by_x[x], at.get(x)) for x in xs)
        out.append(Series(name, probe, unit, points, tuple(change_points([p.median for p in points]))))
    return out


def _point(x: str, found: list[tuple[float, int, str]], at_ns: int | None) -> Point:
    values = [v for v, _, _ in found]
    ids = tuple(run_id for _, _, run_id in sorted(found, key=lambda f: f[1]))
    return Point(x, statistics.median(values), min(values), max(values), len(values), ids, at_ns)


def _x(r: RunRecord, campaigns: Mapping[int, CampaignEntry], by: str, order: dict,
       at: dict[str, int]) -> str | None:
    if by == "time":  # each run at its own start (monitoring: one run per cell and interval)
        x = dt.datetime.fromtimestamp(r.started_ns / 1e9).strftime("%Y-%m-%d %H:%M:%S")
        order[x] = (x,)
        at[x] = min(at.get(x, r.started_ns), r.started_ns)
        return x
    if by == "date":
        created = campaigns[r.campaign_id].created_ns
        day = dt.datetime.fromtimestamp(created / 1e9).date()
        x = day.isoformat()
        order[x] = (x,)
        at[x] = int(dt.datetime.combine(day, dt.time()).timestamp() * 1e9)
        return x
    if by == "campaign":
        camp = campaigns[r.campaign_id]
        x = f"{camp.name} #{r.campaign_id}"
        order[x] = (camp.created_ns,)
        at[x] = camp.created_ns
        return x
    value = r.labels.get(by)
    return None if value is None else str(value)
