"""The `report`, `compare`, `export` and `import` commands: argparse wiring and output."""

from __future__ import annotations

import argparse
import io
import json
import os
import sys
from pathlib import Path

from rich.markup import escape

from jitterlab.cli.paths import name_arg, path_arg
from jitterlab.model.errors import UserError, shown
from jitterlab.report.comparison import format_comparison
from jitterlab.report.console import escape_controls

EXIT_OK = 0
EXIT_WORSE = 1  # compare --fail-on worse


def add_commands(subparsers) -> None:
    """Add report, compare, export and import to the `jitterlab` subparsers."""
    _report(subparsers)
    _compare(subparsers)
    _export(subparsers)
    _import(subparsers)
    _push(subparsers)


def _results(p: argparse.ArgumentParser) -> None:
    from jitterlab.store import add_results_option

    add_results_option(p)


def _campaign(p: argparse.ArgumentParser, what: str) -> None:
    p.add_argument("--campaign", action="append", type=name_arg, metavar="NAME",
                   help=f"campaign name (its latest run of each label set, e.g. image=A and "
                   f"image=B); repeat to {what} several (default: the latest campaign)")


def _trend(p: argparse.ArgumentParser, verb: str) -> None:
    p.add_argument("--trend", metavar="METRIC",
                   help=f"instead: {verb} METRIC over label values, campaigns or days, one line per cell "
                   "(a long-term plot), from every campaign of the store or those of --campaign")
    p.add_argument("--by", default="campaign", metavar="KEY",
                   help="with --trend: a label key (kernel, image), or time (each run: monitoring), "
                   "date or campaign (default)")


def _trend_series(store, args):
    from jitterlab.analysis.trend import trend

    runs = store.runs() if not args.campaign else _runs(store, args.campaign)
    campaigns = {c["id"]: c for c in store.campaigns()}
    return trend(runs, campaigns, args.trend, args.by)


def _report(sub) -> None:
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
    _results(p)
    _campaign(p, "report on")
    p.add_argument("-o", "--output", type=path_arg, default=Path("report.html"), metavar="OUT",
                   help="HTML file to write (default: report.html)")
    _trend(p, "draw")
    p.add_argument("--max-run-figures", type=int, default=12, metavar="N",
                   help="draw histogram and timeline for the worst run of at most N impl x load "
                   "groups, and latency distributions of at most N cells (default: 12; every cell "
                   "is in the tables)")
    p.add_argument("--no-figure-files", action="store_true",
                   help="only the HTML file, no PNG/SVG files beside it")
    p.set_defaults(func=cmd_report)


def _compare(sub) -> None:
    p = sub.add_parser(
        "compare", help="compare two groups of runs (e.g. image=1.10 vs image=1.11)",
        description="For every cell present in both groups and every metric: each group's "
        "summary (the worst run for worst-case metrics, else the median), the change "
        "(candidate / baseline) with its 95 % CI, the test that judged it (Welch's t on log "
        "values below 8 runs per group, Mann-Whitney U from 8 on) and its p-value, adjusted with "
        "Holm's method over all rows shown, and a verdict: better or worse when the adjusted "
        "p < 0.05 and the CI excludes no change; the verdict knows whether lower (errors, "
        "latencies, loss) or higher (throughput, events/s) is better. With the raw series, also "
        "the pooled view: p99 and max of all periods or latencies of each group (hierarchical "
        "bootstrap over runs and samples). Groups are selected by a run label, a run field "
        "(target, impl, load, probe, pin, benchmark) or a benchmark key of the cell (e.g. "
        "policy=fifo, size=64). Exit status: 0, or 1 with --fail-on worse when a row got worse; "
        "2 for bad input.",
        epilog="example: jitterlab compare --baseline image=1.10 --candidate image=1.11 "
        "--metric max_rel_period_error --format json --fail-on worse")
    _results(p)
    _campaign(p, "compare across")
    p.add_argument("--baseline", required=True, metavar="KEY=VALUE", help="the reference group")
    p.add_argument("--candidate", required=True, metavar="KEY=VALUE", help="the group judged")
    p.add_argument("--metric", action="append", metavar="NAME",
                   help="only this metric; repeatable (default: every metric)")
    p.add_argument("--format", choices=("table", "markdown", "json"), default="table",
                   help="output format (default: table)")
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed (default: 0)")
    p.add_argument("--no-pooled", action="store_true",
                   help="skip the pooled view (it reads every run's raw series)")
    p.add_argument("--fail-on", choices=("worse",), metavar="worse",
                   help="exit 1 when any row's verdict is worse (a release gate in CI)")
    p.set_defaults(func=cmd_compare)


def _export(sub) -> None:
    p = sub.add_parser(
        "export", help="export runs, parameters, labels, sysinfo and metrics",
        description="Export the runs with their parameters, labels, a sysinfo summary and every "
        "metric, raw values in the metric's unit (named in JSON and metrics.parquet). csv/json: "
        "one row (object) per run, metric columns named PROBE.METRIC, written to -o or stdout; "
        "json also holds the operational envelope, and --table envelope writes it as CSV. "
        "parquet: -o is a directory that receives runs.parquet, metrics.parquet (long form with "
        "units and directions), envelope.parquet, raw.parquet (every edge series with run_id) "
        "and samples.parquet (every sample series: round-trip times, latency histograms).",
        epilog="example: jitterlab export --format parquet -o export/")
    _results(p)
    p.add_argument("--campaign", action="append", type=name_arg, metavar="NAME",
                   help="only this campaign (its latest run of each label set); repeatable "
                   "(default: all runs)")
    p.add_argument("--format", choices=("csv", "json", "parquet"), required=True,
                   help="csv, json or parquet")
    _trend(p, "export")
    p.add_argument("-o", "--output", type=path_arg, metavar="PATH",
                   help="file (csv, json) or directory (parquet); csv/json go to stdout without it")
    p.add_argument("--table", choices=("runs", "envelope"), default="runs",
                   help="csv: one row per run (default), or the operational envelope (one row per "
                   "impl x load x probe x rule x threshold)")
    p.set_defaults(func=cmd_export)


def _import(sub) -> None:
    from jitterlab.importers import KINDS
    from jitterlab.importers.edges_csv import TIME_UNITS

    p = sub.add_parser(
        "import", help="bring an external capture (CSV, VCD) into the store",
        description="Import an oscilloscope or logic-analyzer capture of a square wave and "
        "analyse it exactly like a measured run (benchmark squarewave, probe import). "
        "CSV: `time,level` rows, time in seconds or ns (header auto-detected; a header like "
        "time_ns or 'Time [s]' names the unit, else decimals are seconds and integers ns). "
        "A CSV is an edge list (one row per edge, level 0/1) unless --kind samples or its "
        "header names the level column for volts or samples ('V', '[V]', 'volts', 'sample'); "
        "a level that repeats in an edge list is a lost edge (a warning names the lines). "
        "VCD: as sigrok writes it; the first 1-bit signal or --signal NAME; times keep the "
        "file's $timescale resolution (e.g. 1 ps) in the metrics. "
        "Runs go into the campaign `import`; --label target=, impl=, load= set those fields "
        "(defaults external, external, unknown).",
        epilog="example: jitterlab import edges scope.csv --period 1ms --label impl=c-fifo "
        "--label image=1.10")
    what = p.add_subparsers(dest="what", metavar="WHAT", required=True)
    e = what.add_parser("edges", help="a capture of edges (CSV or VCD)",
                        description=p.description, epilog=p.epilog)
    e.add_argument("file", type=path_arg, metavar="FILE", help="CSV or VCD file")
    e.add_argument("--period", required=True, metavar="DURATION",
                   help="nominal period of the wave, e.g. 1ms, 250us")
    e.add_argument("--label", action="append", default=[], metavar="KEY=VALUE",
                   help="label of the run; repeatable (target, impl, load also set those fields)")
    e.add_argument("--format", choices=("auto", "csv", "vcd"), default="auto",
                   help="file format (default: from the suffix; .vcd is VCD, else CSV)")
    e.add_argument("--signal", metavar="NAME", help="VCD: the signal to use (default: first 1-bit)")
    e.add_argument("--time-unit", choices=TIME_UNITS, default="auto",
                   help="CSV: unit of the time column (default: auto)")
    e.add_argument("--kind", choices=KINDS, default="auto",
                   help="CSV: rows are edges (one per edge) or samples (an edge where the level "
                   "changes); default: from the header, else edges")
    e.add_argument("--warmup", default="0ns", metavar="DURATION",
                   help="drop this much from the start (default: 0ns; at least 2 periods are "
                   "always dropped)")
    e.add_argument("--campaign", default="import", type=name_arg, metavar="NAME",
                   help="campaign to add the run to (default: import)")
    _results(e)
    e.set_defaults(func=cmd_import)


def _push(sub) -> None:
    p = sub.add_parser(
        "push", help="copy the runs of one store into another (e.g. the lab's PostgreSQL database)",
        description="Copy every campaign and run of --results into --to, with sysinfo, warnings, raw "
        "series and attachments. Runs already there are left alone, so pushing twice changes nothing; "
        "raw files are checked against their recorded sha256.",
        epilog="example: jitterlab push --results results --to "
        "'postgresql://lab@db.lab/jitterlab?raw_dir=/srv/jitterlab'")
    _results(p)
    p.add_argument("--to", required=True, metavar="DIR|URL", help="the store to copy into")
    p.set_defaults(func=cmd_push)


# --- commands ----------------------------------------------------------------------------------


def cmd_report(args: argparse.Namespace) -> int:
    from jitterlab.report.html import render
    from jitterlab.report.terminal import console
    from jitterlab.store.catalog import Store

    if not 0 <= args.max_run_figures <= 10_000:
        raise UserError("--max-run-figures: give 0 to 10000")
    _writable_file(args.output, "-o")
    if not args.no_figure_files:
        figures = args.output.with_name(args.output.stem + "_figures")
        if figures.exists() and not figures.is_dir():
            raise UserError(f"-o {args.output}: the figures go to {figures}, which is a file; move it away "
                            "or pass --no-figure-files")
    store = Store(args.results, create=False)
    if args.trend:
        from jitterlab.report.trend import render as render_trend

        try:
            path = render_trend(_trend_series(store, args), args.trend, args.by, args.output)
        finally:
            store.close()
        console().print(f"trend report: {path}", highlight=False)
        return EXIT_OK
    try:
        report = render(store, args.output, campaigns=args.campaign,
                        max_run_figures=args.max_run_figures,
                        figure_files=not args.no_figure_files)
    except OSError as exc:  # the disk filled, a permission changed meanwhile
        raise UserError(f"-o {args.output}: cannot write the report: {exc.strerror or exc}") from None
    finally:
        store.close()
    out = console()
    out.print(f"report: {report.path} ({report.n_runs} runs, {len(report.figure_files)} figure files)")
    for s in report.skipped:
        out.print(f"[yellow]skipped[/]: {escape(s)}", highlight=False)
    return EXIT_OK


def _runs(store, campaigns: list[str] | None):
    if not campaigns:
        runs = store.runs()
        if not runs:
            raise UserError(f"{store.where}: the store has no runs; run a campaign or import a capture")
        return runs
    from jitterlab.report.html import select_runs

    return select_runs(store, campaigns)[1]


def cmd_compare(args: argparse.Namespace) -> int:
    from jitterlab.analysis.compare import WORSE, Selector, compare
    from jitterlab.analysis.samples import run_distribution
    from jitterlab.report.terminal import emulation_note
    from jitterlab.store.catalog import Store

    base = Selector.parse(args.baseline, "--baseline")
    cand = Selector.parse(args.candidate, "--candidate")
    if (base.key, base.value) == (cand.key, cand.value):
        raise UserError(f"--baseline and --candidate both select {base}: a group compared with itself "
                        "tells nothing; give two different groups, e.g. --baseline image=1.10 "
                        "--candidate image=1.11")
    if not 0 <= args.seed < 2**32:
        raise UserError(f"--seed {args.seed}: give a number from 0 to {2**32 - 1}")
    store = Store(args.results, create=False)
    try:
        pooled = None if args.no_pooled else (lambda r: run_distribution(store.root, r))
        runs = _runs(store, args.campaign)
        result = compare(runs, base, cand, metrics=args.metric, seed=args.seed, distributions=pooled)
        note = emulation_note([r for r in runs if base.matches(r) or cand.matches(r)], store)
    finally:
        store.close()
    sys.stdout.write(format_comparison(result, args.format, terminal=sys.stdout.isatty()))
    if note:  # on stderr: --format json stays one document
        sys.stderr.write(f"note: {note}; a timing verdict between them means nothing\n")
    if args.fail_on == "worse" and any(r.verdict == WORSE for r in result.rows):
        return EXIT_WORSE
    return EXIT_OK


def cmd_export(args: argparse.Namespace) -> int:
    from jitterlab.report.export import export
    from jitterlab.store.catalog import Store

    if args.output is not None and args.format == "parquet":
        if args.output.exists() and not args.output.is_dir():
            raise UserError(f"-o {args.output}: is a file; --format parquet writes a directory of files, "
                            "give the name of a directory")
        _writable_file(args.output, "-o", directory=True)
    elif args.output is not None:
        _writable_file(args.output, "-o")
    store = Store(args.results, create=False)
    if args.trend:
        from jitterlab.report.trend import rows

        try:
            text = _table_text(rows(_trend_series(store, args)), args.format, args.output)
        finally:
            store.close()
        if text is not None:
            sys.stdout.write(text)
        return EXIT_OK
    try:
        text = export(store, _runs(store, args.campaign), args.format, args.output, table=args.table)
    except OSError as exc:  # the disk filled, a permission changed meanwhile
        raise UserError(f"-o {args.output}: cannot write the export: {exc.strerror or exc}") from None
    finally:
        store.close()
    if text is not None:  # data for a file or a pipe; a terminal sees its controls escaped
        sys.stdout.write(escape_controls(text) if sys.stdout.isatty() else text)
    return EXIT_OK


def _writable_file(path: Path, option: str, *, directory: bool = False) -> None:
    """Refuse an output that cannot be written before anything is computed for it."""
    if path.is_dir() and not directory:
        raise UserError(f"{option} {path}: is a directory; give a file name, e.g. {path / 'out'}")
    parent = path.parent if not directory or not path.is_dir() else path
    if not parent.is_dir():
        raise UserError(f"{option} {path}: the directory {parent} does not exist; create it first")
    if not os.access(parent, os.W_OK | os.X_OK) or (path.exists() and not os.access(path, os.W_OK)):
        raise UserError(f"{option} {path}: not writable here; choose another place")


def parse_labels(items: list[str]) -> dict[str, str]:
    from jitterlab.model.labels import check_label

    labels = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UserError(f"--label {shown(item)}: write KEY=VALUE, e.g. --label image=1.10")
        check_label(key.strip(), value.strip(), f"--label {shown(item)}")
        labels[key.strip()] = value.strip()
    return labels


def cmd_import(args: argparse.Namespace) -> int:
    from jitterlab.importers import read_capture, store_capture
    from jitterlab.model.units import format_ns, parse_duration_ns
    from jitterlab.report.terminal import console, percent
    from jitterlab.store.catalog import Store

    period_ns = parse_duration_ns(args.period, "--period")
    warmup_ns = 0 if args.warmup.strip() in ("0", "0ns", "0s") else parse_duration_ns(args.warmup,
                                                                                       "--warmup")
    labels = parse_labels(args.label)
    capture = read_capture(args.file, args.format, signal=args.signal, time_unit=args.time_unit,
                           kind=args.kind)
    store = Store(args.results)
    try:
        run = store_capture(store, capture, period_ns=period_ns, warmup_ns=warmup_ns,
                            labels=labels, campaign=args.campaign)
    finally:
        store.close()
    out = console()
    for warning in capture.warnings:
        out.print(f"warning: {warning}", highlight=False, markup=False)
    out.print(escape(f"imported {args.file} as run {run.id} ({len(capture.t_ns)} edges, period "
                     f"{format_ns(period_ns)}): max relative period error "
                     f"{percent(run.metric('max_rel_period_error'))}"), highlight=False)
    return EXIT_OK


def cmd_push(args: argparse.Namespace) -> int:
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


def _table_text(table: list[dict], fmt: str, out: Path | None) -> str | None:
    """Rows as CSV or JSON text (to `out` when given)."""
    import csv

    if fmt == "parquet":
        raise UserError("--trend: export as csv or json")
    if fmt == "json":
        text = json.dumps({"format": "jitterlab.trend/1", "rows": table}, indent=1)
    else:
        buf = io.StringIO()
        writer = csv.DictWriter(buf, list(table[0]) if table else [], lineterminator="\n")
        writer.writeheader()
        writer.writerows(table)
        text = buf.getvalue()
    if out is None:
        return text
    Path(out).write_text(text, encoding="utf-8")
    return None
