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
        "--campaign NAME) with status and headline metric, and the summary. "
        "With RUN_ID (a prefix is enough): every metric, warning and the sysinfo.",
    )
    show.add_argument("run_id", nargs="?", type=run_id_arg, metavar="RUN_ID",
                      help="run id or a unique prefix")
    add_results(show)
    show.add_argument("--campaign", type=name_arg, metavar="NAME", help="campaign name (default: the latest)")
    return show


def run(args: argparse.Namespace) -> int:
    from jitterlab.report.terminal import (
        console,
        emulation_note,
        run_detail,
        runs_table,
        show_warnings,
        summary_tables,
    )
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
                store.sysinfo(one.sysinfo_id) if one.sysinfo_id else {},
            ):
                out.print(part)
            return EXIT_OK
        campaign = store.latest_campaign(args.campaign)
        if campaign is None and args.campaign is None:
            results = shlex.quote(shown_spec(args.results))
            raise UserError(f"{store.where}: no campaign here yet; measure one into it (jitterlab run "
                            f"CAMPAIGN --results {results}) or import a capture (jitterlab import edges FILE "
                            f"--period PERIOD --results {results})")
        if campaign is None:
            known = ", ".join(sorted({c["name"] for c in store.campaigns()})) or "none"
            raise UserError(f"--campaign {args.campaign!r}: not in {store.where}; campaigns there: {known}")
        runs = store.runs(campaign["id"])
        out.print(runs_table(runs))
        for table in summary_tables(runs, campaign["name"], planned=_planned(store, campaign["id"])):
            out.print(table)
        if note := emulation_note(runs, store):
            out.print(f"[yellow]note[/]: {escape(note)}")
        for part in show_warnings(runs, store.warnings(campaign["id"]), campaign["name"]):
            out.print(part)
        return EXIT_OK
    finally:
        store.close()


def _planned(store, campaign_id: int) -> list | None:
    """The cells of the campaign's matrix, read from the file it was measured with (stored with it);
    None when there is none (an import) or it no longer reads (a key since renamed)."""
    import tomllib

    from jitterlab.campaign.file import parse_campaign

    found = store.campaign(campaign_id)
    if not found["source"]:
        return None
    try:
        return list(parse_campaign(tomllib.loads(found["source"]), Path(found["source_path"]),
                                   found["source"]).cells)
    except (UserError, tomllib.TOMLDecodeError, OSError, ValueError):
        return None
