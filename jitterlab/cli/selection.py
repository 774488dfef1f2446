"""The runs a results command works on: those of --campaign, or every run of the store; and a
metric's trend over them (--trend/--by)."""

from __future__ import annotations

import argparse

from jitterlab.model.errors import UserError
from jitterlab.model.records import RunRecord


def selected_runs(store, campaigns: list[str] | None) -> list[RunRecord]:
    """The latest run of each label set of every campaign named, or every run of the store."""
    if not campaigns:
        runs = store.runs()
        if not runs:
            raise UserError(f"{store.where}: the store has no runs; run a campaign or import a capture")
        return runs
    from jitterlab.report.selection import select

    return select(store, campaigns).runs


def trend_series(store, args: argparse.Namespace):
    """--trend METRIC --by KEY over the runs of --campaign, or of the whole store."""
    from jitterlab.analysis.trend import trend
    from jitterlab.campaign.cells import names
    from jitterlab.report.traits import subject_of

    runs = store.runs() if not args.campaign else selected_runs(store, args.campaign)
    campaigns = {c.id: c for c in store.campaigns()}
    return trend(runs, campaigns, args.trend, args.by, subject_of=subject_of,
                 names=names().among(r.cell for r in runs))
