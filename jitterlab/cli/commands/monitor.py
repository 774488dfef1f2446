"""`jitterlab monitor CAMPAIGN --for 24h --every 1h`: measure the cells again every interval."""

from __future__ import annotations

import argparse
import threading
from pathlib import Path

from rich.markup import escape

from jitterlab.cli.exits import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK
from jitterlab.cli.options import add_results


def add_parser(sub) -> argparse.ArgumentParser:
    mon = sub.add_parser(
        "monitor",
        help="measure a campaign's cells again every interval, for hours or days",
        description="Long-term monitoring: every --every, measure each cell of CAMPAIGN once (one "
        "repetition per interval, committed as it ends), until --for has passed. Each run keeps its "
        "histogram and maxima; `jitterlab report --trend METRIC --by time` draws them over time. "
        "After a crash or Ctrl-C, run the same command with --resume to go on with the next interval.",
        epilog="example: jitterlab monitor examples/rt-latency.toml --for 24h --every 1h")
    mon.add_argument("campaign", type=Path, metavar="CAMPAIGN", help="campaign file (TOML)")
    mon.add_argument("--for", dest="for_", required=True, metavar="DURATION", help='how long, e.g. "24h"')
    mon.add_argument("--every", required=True, metavar="DURATION", help='interval, e.g. "1h"')
    mon.add_argument("--resume", action="store_true", help="go on with the latest monitoring of CAMPAIGN")
    add_results(mon)
    return mon


def run(args: argparse.Namespace) -> int:
    from jitterlab.campaign.file import load_campaign
    from jitterlab.execution.monitor import Schedule, monitor
    from jitterlab.execution.preflight import open_targets
    from jitterlab.model.units import parse_duration_ns
    from jitterlab.report.terminal import console
    from jitterlab.store.catalog import Store

    out = console()  # control characters escaped, lines not wrapped when piped
    campaign = load_campaign(args.campaign)
    for_ns, every_ns = parse_duration_ns(args.for_, "--for"), parse_duration_ns(args.every, "--every")
    schedule = Schedule.of(campaign, for_ns, every_ns)
    sessions = []
    store: Store | None = None
    try:  # whatever fails from here on, the targets opened (labgrid places, booted VMs) are let go
        sessions = open_targets(campaign)
        store = Store(args.results)
        try:
            done, failed = monitor(campaign, store, sessions, schedule, resume=args.resume,
                                   stop=threading.Event(),
                                   notice=lambda text: out.print(f"{escape(campaign.name)}: {escape(text)}"))
        except KeyboardInterrupt:
            out.print("[yellow]interrupted[/]: go on with "
                      + escape(f"jitterlab monitor {args.campaign} --for {args.for_} --every {args.every} "
                               "--resume"))
            return EXIT_INTERRUPTED
    finally:
        for session in sessions:
            session.target.close()
        if store is not None:
            store.close()
    out.print(escape(f"{done} intervals measured ({failed} runs failed); draw them with jitterlab report "
                     f"--trend METRIC --by time --campaign {campaign.name}"), highlight=False)
    return EXIT_FAILED if failed else EXIT_OK
