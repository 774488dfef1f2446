"""`jitterlab show`: the runs of a campaign with the summary, or one run in detail."""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path

from rich.markup import escape

from jitterlab.cli.exits import EXIT_OK
from jitterlab.cli.options import add_results
from jitterlab.cli.paths import name_arg, run_id_arg
from jitterlab.model.errors import UserError
from jitterlab.store import shown_spec


def add_parser(sub) -> argparse.ArgumentParser:
    show = sub.add_parser(
        "show",
        help="show stored runs, or one run in detail",
        description="Without RUN_ID: the runs of the latest campaign (or "
        "--campaign NAME), its latest measurement of each label set (image=A and image=B), with "
        "status and headline metric, and the summary. "
        "With RUN_ID (a prefix is enough): every metric, warning and the sysinfo.",
    )
    show.add_argument("run_id", nargs="?", type=run_id_arg, metavar="RUN_ID",
                      help="run id or a unique prefix")
    add_results(show)
    show.add_argument("--campaign", type=name_arg, metavar="NAME",
                      help="campaign name: its latest run of each label set (default: the latest campaign)")
    return show


def run(args: argparse.Namespace) -> int:
    from jitterlab.report.selection import select
    from jitterlab.report.terminal import (
        console,
        emulation_note,
        run_detail,
        runs_table,
        show_warnings,
        summary_tables,
    )
    from jitterlab.report.why_late import why_late
    from jitterlab.store.catalog import Store

    out = console()  # piped: tables as plain rows, lines not wrapped; control characters escaped
    store = Store(args.results, create=False)
    try:
        if args.run_id:
            matches = store.runs(run_id=args.run_id)
            if len(matches) != 1:
                raise UserError(
                    f"RUN_ID {args.run_id!r}: "
                    + (
                        "no such run in " + store.where
                        if not matches
                        else f"matches {len(matches)} runs; give more characters"
                    )
                )
            one = matches[0]
            for part in run_detail(
                one,
                store.warnings(one.campaign_id, one.id),
                store.sysinfo(one.sysinfo_id) if one.sysinfo_id else None,
                why_late(one, store),
            ):
                out.print(part)
            return EXIT_OK
        if args.campaign is None and not store.campaigns():
            results = shlex.quote(shown_spec(args.results))
            raise UserError(f"{store.where}: no campaign here yet; measure one into it (jitterlab run "
                            f"CAMPAIGN --results {results}) or import a capture (jitterlab import edges FILE "
                            f"--period PERIOD --results {results})")
        shown = select(store, [args.campaign] if args.campaign else None)
        [name] = shown.names
        runs = shown.runs
        out.print(runs_table(runs))
        latest = shown.campaigns[-1].id
        for table in summary_tables(runs, name, planned=_planned(store, latest)):
            out.print(table)
        if note := emulation_note(runs, store):
            out.print(f"[yellow]note[/]: {escape(note)}")
        stored = [w for c in shown.campaigns for w in store.warnings(c.id)]
        for part in show_warnings(runs, stored, name):
            out.print(part)
        for line in shown.left_out(f"jitterlab show --results {shlex.quote(shown_spec(args.results))}"):
            out.print(escape(line), highlight=False)
        return EXIT_OK
    finally:
        store.close()


def _planned(store, campaign_id: int) -> list | None:
    """The cells of the campaign's matrix, read from the file it was measured with (stored with it);
    None when there is none (an import) or it no longer reads (a key since renamed)."""
    import tomllib

    from jitterlab.campaign.file import parse_campaign

    found = store.campaign(campaign_id)
    if not found.source:
        return None
    try:
        return list(parse_campaign(tomllib.loads(found.source), Path(found.source_path), found.source).cells)
    except (UserError, tomllib.TOMLDecodeError, OSError, ValueError):
        return None
