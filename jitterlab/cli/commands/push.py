"""`jitterlab push`: copy the runs of one store into another (e.g. the lab's PostgreSQL database)."""

from __future__ import annotations

import argparse
from functools import partial

from jitterlab.cli.exits import EXIT_FAILED, EXIT_OK
from jitterlab.cli.options import add_results
from jitterlab.report.format import counted
from jitterlab.store import results_spec


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "push", help="copy the runs of one store into another (e.g. the lab's PostgreSQL database)",
        description="Copy every campaign and run of --results into --to, with sysinfo, warnings, raw "
        "series and attachments. Runs already there are left alone, so pushing twice changes nothing; "
        "raw files are checked against their recorded sha256. A run whose raw file or attachment is "
        "missing or changed is not pushed and is named (exit 1); the others are.",
        epilog="example: jitterlab push --results results --to "
        "'postgresql://lab@db.lab/jitterlab?raw_dir=/srv/jitterlab'")
    add_results(p)
    p.add_argument("--to", required=True, type=partial(results_spec, option="--to"), metavar="DIR|URL",
                   help="the store to copy into (checked like --results)")
    return p


def run(args: argparse.Namespace) -> int:
    from jitterlab.report.console import SafeConsole
    from jitterlab.report.terminal import console
    from jitterlab.store import named
    from jitterlab.store.catalog import Store
    from jitterlab.store.push import push

    source = Store(args.results, create=False)
    try:
        with named("--to"):
            dest = Store(args.to)
        try:
            done = push(source, dest)
        finally:
            dest.close()
    finally:
        source.close()
    there = f"{counted(done.skipped, 'run')} {'was' if done.skipped == 1 else 'were'} there already"
    console().print(f"pushed {counted(done.runs, 'run')} ({done.raw_bytes / 1e6:.1f} MB of raw series) and "
                    f"{counted(done.campaigns, 'new campaign')} to {dest.where}; {there}",
                    highlight=False)
    if not done.damaged:
        return EXIT_OK
    err = SafeConsole(stderr=True)
    for run_id, why in done.damaged:
        err.print(f"run {run_id} was not pushed: {why}", highlight=False, markup=False, soft_wrap=True)
    are, were = ("is", "was") if len(done.damaged) == 1 else ("are", "were")
    err.print(f"{counted(len(done.damaged), 'run')} of {source.where} {are} damaged and {were} not pushed; "
              "the others were",
              highlight=False, markup=False, soft_wrap=True)
    return EXIT_FAILED
