"""`jitterlab export`: runs, parameters, labels, sysinfo and metrics in any registered format
(report/formats/): a file, or a directory of files."""

from __future__ import annotations

import argparse
import sys

from jitterlab.cli.exits import EXIT_OK
from jitterlab.cli.options import add_results, add_trend, check_trend
from jitterlab.cli.paths import name_arg, path_arg, writable_file
from jitterlab.cli.selection import selected_runs, trend_series
from jitterlab.model.errors import UserError
from jitterlab.report.console import escape_controls


def _both(names: list[str]) -> str:
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def add_parser(sub) -> argparse.ArgumentParser:
    from jitterlab.report.export import formats, tables, writes_directory
    from jitterlab.report.formats.base import EXPORTERS

    files = [f for f in formats() if not writes_directory(f)]
    directories = [f for f in formats() if writes_directory(f)]
    p = sub.add_parser(
        "export", help="export runs, parameters, labels, sysinfo and metrics",
        description="Export the runs with their parameters, labels, a sysinfo summary and every "
        "metric, raw values in the metric's unit. "
        + "; ".join(f"{e.name}: {e.help}" for e in EXPORTERS) + ". "
        f"{_both(files)} write one file (-o FILE), or to stdout without -o; {_both(directories)} "
        "write a directory of files (-o DIR, required). CSV's metric columns are named PROBE.METRIC.",
        epilog="example: jitterlab export --format parquet -o export/")
    add_results(p)
    p.add_argument("--campaign", action="append", type=name_arg, metavar="NAME",
                   help="only this campaign (its latest run of each label set); repeatable "
                   "(default: all runs)")
    p.add_argument("--format", choices=formats(), required=True,
                   help=f"{', '.join(formats()[:-1])} or {formats()[-1]}")
    add_trend(p, "export")
    p.add_argument("-o", "--output", type=path_arg, metavar="PATH",
                   help=f"a file ({', '.join(files)}: stdout without it) or a directory "
                   f"({', '.join(directories)})")
    p.add_argument("--table", choices=tables(), default="runs",
                   help="csv: one row per run (default), or the operational envelope (one row per "
                   "impl x load x probe x rule x threshold)")
    return p


def run(args: argparse.Namespace) -> int:
    from jitterlab.report.export import export, export_trend, writes_directory
    from jitterlab.store.catalog import Store

    check_trend(args)
    if args.output is not None and writes_directory(args.format):
        if args.output.exists() and not args.output.is_dir():
            raise UserError(f"-o {args.output}: is a file; --format {args.format} writes a directory of "
                            "files, give the name of a directory")
        writable_file(args.output, "-o", directory=True)
    elif args.output is not None:
        writable_file(args.output, "-o")
    store = Store(args.results, create=False)
    if args.trend:
        from jitterlab.report.trend import rows

        try:
            text = export_trend(rows(trend_series(store, args)), args.format, args.output)
        finally:
            store.close()
        if text is not None:
            sys.stdout.write(text)
        return EXIT_OK
    try:
        text = export(store, selected_runs(store, args.campaign), args.format, args.output, table=args.table)
    except OSError as exc:  # the disk filled, a permission changed meanwhile
        raise UserError(f"-o {args.output}: cannot write the export: {exc.strerror or exc}") from None
    finally:
        store.close()
    if text is not None:  # data for a file or a pipe; a terminal sees its controls escaped
        sys.stdout.write(escape_controls(text) if sys.stdout.isatty() else text)
    return EXIT_OK

