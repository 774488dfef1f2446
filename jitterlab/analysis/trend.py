"""A metric over time: per cell, one point per label value (kernel version, image build), per
campaign or per day, like a long-term latency plot. Pure: stored runs in, series out.

A point summarizes the successful runs of its cell at that x: the median and the range (min, max)
over them, and how many they were. Cells are aligned by their identity (target, benchmark, load and
the benchmark's parameters), so the same cell measured on every image forms one line.
"""

from __future__ import annotations

import datetime as dt
import re
import statistics
from collections import defaultdict
from dataclasses import dataclass

from jitterlab.model.cellnames import PLAIN, CellNames
from jitterlab.model.errors import UserError
from jitterlab.model.records import RunRecord

SPECIAL = ("time", "date", "campaign")


@dataclass(frozen=True)
class Point:
    x: str
    median: float
    low: float
    high: float
    n: int


@dataclass(frozen=True)
class Series:
    cell: str
    probe: str
    unit: str
    points: tuple[Point, ...]


def natural(text: str) -> list:
    """"1.10" sorts after "1.9", "6.12" after "6.1"."""
    return [(0, int(p), "") if p.isdigit() else (1, 0, p) for p in re.split(r"(\d+)", text)]


def trend(runs: list[RunRecord], campaigns: dict[int, dict], metric: str, by: str, *,
          names: CellNames = PLAIN) -> list[Series]:
    """Series of `metric` per cell, x from the label `by`, or "date" / "campaign" (campaigns maps
    id -> {name, created_ns}); `names` writes the cells (campaign.cells.names(): as a campaign
    does). UserError when no run has both the metric and the key."""
    grouped: dict[tuple[str, str, str], dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    order: dict[str, object] = {}
    for r in runs:
        value = r.metric(metric)
        probe = r.probe
        if value is None and (("", metric) in r.metrics):
            value, probe = r.metrics[("", metric)].value, ""
        if r.status != "ok" or value is None:
            continue
        x = _x(r, campaigns, by, order)
        if x is None:
            continue
        unit = next(m.unit for (p, n), m in r.metrics.items() if n == metric and p == probe)
        name = " ".join(p for p in (r.target, r.benchmark, names.params_text(r.cell), r.load) if p)
        grouped[(name, probe, unit)][x].append(value)
    if not grouped:
        raise UserError(f"--trend {metric} --by {by}: no successful run has both (try a metric named by "
                        "jitterlab show RUN_ID, and a label key, date or campaign)")
    out = []
    for (name, probe, unit), by_x in sorted(grouped.items()):
        xs = sorted(by_x, key=lambda x: order.get(x, natural(x)))
        out.append(Series(name, probe, unit, tuple(
            Point(x, statistics.median(by_x[x]), min(by_x[x]), max(by_x[x]), len(by_x[x])) for x in xs)))
    return out


def _x(r: RunRecord, campaigns: dict[int, dict], by: str, order: dict) -> str | None:
    if by == "time":  # each run at its own start (monitoring: one run per cell and interval)
        x = dt.datetime.fromtimestamp(r.started_ns / 1e9).strftime("%Y-%m-%d %H:%M:%S")
        order[x] = (x,)
        return x
    if by == "date":
        created = campaigns[r.campaign_id]["created_ns"]
        x = dt.datetime.fromtimestamp(created / 1e9).date().isoformat()
        order[x] = (x,)
        return x
    if by == "campaign":
        camp = campaigns[r.campaign_id]
        x = f"{camp['name']} #{r.campaign_id}"
        order[x] = (camp["created_ns"],)
        return x
    value = r.labels.get(by)
    return None if value is None else str(value)
