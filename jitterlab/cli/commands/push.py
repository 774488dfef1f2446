"""`jitterlab push`: copy the runs of one store into another (e.g. the lab's PostgreSQL database)."""

from __future__ import annotations

import argparse

from jitterlab.cli.exits import EXIT_OK
from jitterlab.cli.options import add_results


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "push", help="copy the runs of one store into another (e.g. the lab's PostgreSQL database)",
        description="Copy every campaign and run of --results into --to, with sysinfo, warnings, raw "
        "series and attachments. Runs already there are left alone, so pushing twice changes nothing; "
        "raw files are checked against their recorded sha256.",
        epilog="example: jitterlab push --results results --to "
        "'postgresql://lab@db.lab/jitterlab?raw_dir=/srv/jitterlab'")
    add_results(p)
    p.add_argument("--to", required=True, metavar="DIR|URL", help="the store to copy into")
    return p


def run(args: argparse.Namespace) -> int:
    from jitterlab.report.terminal import console
    from jitterlab.store.catalog import Store
    from jitterlab.store.push import push

    source = Store(args.results, create=False)
    try:
        dest = Store(args.to)
        try:
            done = push(source, dest)
        finally:
            dest.close()
    finally:
        source.close()
    console().print(f"pushed {done.runs} runs ({done.raw_bytes / 1e6:.1f} MB of raw series) and "
                    f"{done.campaigns} new campaigns to {dest.where}; {done.skipped} runs were there already",
                    highlight=False)
    return EXIT_OK
