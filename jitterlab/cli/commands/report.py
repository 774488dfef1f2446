"""`jitterlab report`: one self-contained HTML file with figures, or a metric's trend."""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path

from rich.markup import escape

from jitterlab.cli.exits import EXIT_OK
from jitterlab.cli.options import add_campaigns, add_results, add_trend, check_trend
from jitterlab.cli.paths import path_arg, writable_file
from jitterlab.cli.selection import trend_series
from jitterlab.model.errors import UserError
from jitterlab.report.format import counted
from jitterlab.store import shown_spec


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "report", help="write a self-contained HTML report with figures",
        description="Write one self-contained HTML file (figures inline as SVG, no network needed): "
        "max relative period error vs period (log-log, one line per impl, one panel per load, per "
        "target), the operational envelope (shortest period under 1 % and 10 % in every "
        "repetition, by the campaign's rules: max and/or p99, p99.9 of |period error|), "
        "per-run histograms and period-over-time plots of the worst run of each impl and load, "
        "self vs vpin probe, the standard benchmarks (tables, charts, latency CCDFs), targets "
        "with sysinfo, achieved loads, warnings grouped by cause, and comparisons between label "
        "values. The figures are also written as PNG and SVG into <OUT stem>_figures/. Sections "
        "that cannot be drawn are listed at the end with why.",
        epilog="example: jitterlab report --results results --campaign image-1.10 "
        "--campaign image-1.11 -o report.html")
    add_results(p)
    add_campaigns(p, "report on", "the latest campaign, each of its label sets")
    p.add_argument("-o", "--output", type=path_arg, default=Path("report.html"), metavar="OUT",
                   help="HTML file to write (default: report.html)")
    add_trend(p, "draw")
    p.add_argument("--max-run-figures", type=int, default=12, metavar="N",
                   help="draw histogram and timeline for the worst run of at most N impl x load "
                   "groups, and latency distributions of at most N cells (default: 12; every cell "
                   "is in the tables)")
    p.add_argument("--no-figure-files", action="store_true",
                   help="only the HTML file, no PNG/SVG files beside it")
    return p


def run(args: argparse.Namespace) -> int:
    from jitterlab.report.html import render
    from jitterlab.report.terminal import console
    from jitterlab.store.catalog import Store

    check_trend(args)
    if not 0 <= args.max_run_figures <= 10_000:
        raise UserError("--max-run-figures: give 0 to 10000")
    writable_file(args.output, "-o")
    if not args.no_figure_files:
        figures = args.output.with_name(args.output.stem + "_figures")
        if figures.exists() and not figures.is_dir():
            raise UserError(f"-o {args.output}: the figures go to {figures}, which is a file; move it away "
                            "or pass --no-figure-files")
    store = Store(args.results, create=False)
    if args.trend:
        from jitterlab.report.trend import change_lines
        from jitterlab.report.trend import render as render_trend

        try:
            series = trend_series(store, args)
            path = render_trend(series, args.trend, args.by, args.output)
        finally:
            store.close()
        console().print(f"trend report: {path}", highlight=False)
        for line in change_lines(series):  # the change points, with the runs on both sides
            console().print(escape(line), highlight=False)
        return EXIT_OK
    try:
        report = render(store, args.output, campaigns=args.campaign,
                        max_run_figures=args.max_run_figures,
                        figure_files=not args.no_figure_files, results=shown_spec(args.results))
    except OSError as exc:  # the disk filled, a permission changed meanwhile
        raise UserError(f"-o {args.output}: cannot write the report: {exc.strerror or exc}") from None
    finally:
        store.close()
    out = console()
    shown = f" of {report.shown.groups()}" if report.shown else ""
    out.print(escape(f"report: {report.path} ({counted(report.n_runs, 'run')}{shown}; "
                     f"{counted(len(report.figure_files), 'figure file')})"), highlight=False)
    if report.shown:
        command = (f"jitterlab report --results {shlex.quote(shown_spec(args.results))} "
                   f"-o {shlex.quote(str(args.output))}")
        for line in report.shown.left_out(command):
            out.print(escape(line), highlight=False)
    for s in report.skipped:
        out.print(f"[yellow]skipped[/]: {escape(s)}", highlight=False)
    return EXIT_OK
