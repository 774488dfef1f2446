"""The runs a results command works on: those of --campaign, or every run of the store; the filters
of `show` (--label, --since); and a metric's trend over them (--trend/--by)."""

from __future__ import annotations

import argparse
import datetime as dt
import re
import time
from dataclasses import dataclass

from jitterlab.model.errors import UserError, shown
from jitterlab.model.labels import label_pair
from jitterlab.model.records import RunRecord
from jitterlab.model.units import parse_duration_ns

_DAYS = re.compile(r"^\s*(\d{1,5})\s*d\s*$", re.ASCII)
DAY_NS = 86_400 * 10**9


def selected_runs(store, campaigns: list[str] | None) -> list[RunRecord]:
    """The latest run of each label set of every campaign named, or every run of the store."""
    if not campaigns:
        runs = store.runs()
        if not runs:
            raise UserError(f"{store.where}: the store has no runs; run a campaign or import a capture")
        return runs
    from jitterlab.report.selection import select

    return select(store, campaigns).runs


def label_arg(text: str) -> tuple[str, str]:
    """--label KEY=VALUE of a filter, as a (key, value) pair; what is wrong with it said as it is read."""
    try:
        return label_pair(text)
    except UserError as exc:
        raise argparse.ArgumentTypeError(str(exc).split(": ", 1)[-1]) from None


def since_arg(text: str) -> int:
    """--since DATE|AGO: a date or a time of day in ISO form ("2026-12-01", "2026-12-01 14:00", local
    time) or a time ago ("36h", "90min", "7d"): the epoch ns from which runs are kept."""
    days = _DAYS.match(text)
    if days:
        return time.time_ns() - int(days.group(1)) * DAY_NS
    try:
        return time.time_ns() - parse_duration_ns(text, "--since")
    except UserError:
        pass
    try:
        when = dt.datetime.fromisoformat(text.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(
            f'give a date ("2026-12-01", "2026-12-01 14:00") or a time ago ("36h", "7d"), got {shown(text)}'
        ) from None
    return int(when.timestamp() * 10**9) if when.tzinfo else int(when.astimezone().timestamp() * 10**9)


@dataclass(frozen=True)
class RunFilter:
    """Which runs `show` keeps: those with every label of `labels`, started at or after `since_ns`."""

    labels: tuple[tuple[str, str], ...] = ()
    since_ns: int | None = None

    def keeps(self, run: RunRecord) -> bool:
        return (all(str(run.labels.get(k)) == v for k, v in self.labels)
                and (self.since_ns is None or run.started_ns >= self.since_ns))

    def said(self) -> str:
        """The filter as typed: "--label image=A --since 2026-12-01 10:00:00"."""
        words = [f"--label {k}={v}" for k, v in self.labels]
        if self.since_ns is not None:
            words.append(f"--since {dt.datetime.fromtimestamp(self.since_ns / 1e9):%Y-%m-%d %H:%M:%S}")
        return " ".join(words)


def trend_series(store, args: argparse.Namespace):
    """--trend METRIC --by KEY over the runs of --campaign, or of the whole store."""
    from jitterlab.analysis.trend import trend
    from jitterlab.campaign.cells import names
    from jitterlab.report.traits import subject_of

    runs = store.runs() if not args.campaign else selected_runs(store, args.campaign)
    campaigns = {c.id: c for c in store.campaigns()}
    return trend(runs, campaigns, args.trend, args.by, subject_of=subject_of,
                 names=names().among(r.cell for r in runs))
