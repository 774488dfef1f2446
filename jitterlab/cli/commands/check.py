"""`jitterlab check`: is a store sound? Every row the commands read, every raw file by its sha256."""

from __future__ import annotations

import argparse
import shlex

from jitterlab.cli.exits import EXIT_FAILED, EXIT_OK
from jitterlab.cli.options import add_results
from jitterlab.report.format import counted


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "check", help="check a store for damage: tables, rows, raw files",
        description="Read the whole store as the other commands read it: its schema (every table and "
        "column), every campaign, run and sysinfo row (their JSON, metric values), and every run's "
        "raw file (against its recorded sha256) and attachments. Names each damaged row or file, one "
        "per line, and what to do. Nothing is written. Exit status: 0 when the store is sound, 1 when "
        "something is damaged, 2 for bad input (no store there).",
        epilog="example: jitterlab check --results results")
    add_results(p)
    return p


def run(args: argparse.Namespace) -> int:
    from jitterlab.report.console import SafeConsole
    from jitterlab.report.terminal import console
    from jitterlab.store import shown_spec
    from jitterlab.store.catalog import Store
    from jitterlab.store.check import scan
    from jitterlab.store.damage import StoreDamaged, salvage

    err = SafeConsole(stderr=True)
    try:
        store = Store(args.results, create=False)
    except StoreDamaged as exc:  # the check's finding, not a mistake in the command
        err.print(str(exc), highlight=False, markup=False, soft_wrap=True)
        return EXIT_FAILED
    try:
        found = scan(store)
    except StoreDamaged as exc:  # a table or the file went bad while it was read
        err.print(str(exc), highlight=False, markup=False, soft_wrap=True)
        return EXIT_FAILED
    finally:
        store.close()
    checked = (f"{counted(found.campaigns, 'campaign')}, {counted(found.runs, 'run')} and their "
               f"{counted(found.raw_files, 'raw file')} checked")
    if not found.damaged:
        console().print(f"{store.where}: sound ({checked})", highlight=False, markup=False)
        return EXIT_OK
    for whose, why in found.damaged:
        err.print(f"{whose}: {why}", highlight=False, markup=False, soft_wrap=True)
    remedy = salvage(shown_spec(args.results))
    if found.files_damaged:
        results = shlex.quote(shown_spec(args.results))
        remedy += ("; a run whose raw file is damaged is measured again by jitterlab run CAMPAIGN --results "
                   f"{results} --resume --retry-damaged (with its campaign's --label options)")
    err.print(f"{store.where}: {len(found.damaged)} damaged ({checked}); {remedy}",
              highlight=False, markup=False, soft_wrap=True)
    return EXIT_FAILED
