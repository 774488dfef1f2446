"""The `report`, `compare`, `export` and `import` commands: argparse wiring and output."""

from __future__ import annotations

import argparse
import io
import json
import math
import os
import sys
from pathlib import Path

from rich.markup import escape
from rich.table import Table

from jitterlab.console import SafeConsole, escape_controls
from jitterlab.errors import UserError, shown
from jitterlab.userpaths import name_arg, path_arg

DEFAULT_RESULTS = Path("results")
EXIT_OK = 0


def add_commands(subparsers) -> None:
    """Add report, compare, export and import to the `jitterlab` subparsers."""
    _report(subparsers)
    _compare(subparsers)
    _export(subparsers)
    _import(subparsers)


def _results(p: argparse.ArgumentParser) -> None:
    p.add_argument("--results", type=path_arg, default=DEFAULT_RESULTS, metavar="DIR",
                   help=f"results directory (default: ./{DEFAULT_RESULTS})")


def _campaign(p: argparse.ArgumentParser, what: str) -> None:
    p.add_argument("--campaign", action="append", type=name_arg, metavar="NAME",
                   help=f"campaign name (its latest run of each label set, e.g. image=A and "
                   f"image=B); repeat to {what} several (default: the latest campaign)")


def _report(sub) -> None:
    p = sub.add_parser(
        "report", help="write a self-contained HTML report with figures",
        description="Write one self-contained HTML file (figures inline as SVG, no network needed): "
        "max relative period error vs period (log-log, one line per impl, one panel per load, per "
        "target), the operational envelope (shortest period under 1 %% and 10 %% in every "
        "repetition), per-run histograms and period-over-time plots of the worst runs, "
        "self vs vpin probe, targets with sysinfo, achieved loads and warnings, and comparisons "
        "between label values. The figures are also written as PNG and SVG into "
        "<OUT stem>_figures/. Sections that cannot be drawn are listed at the end with why.",
        epilog="example: jitterlab report --results results --campaign image-1.10 "
        "--campaign image-1.11 -o report.html")
    _results(p)
    _campaign(p, "report on")
    p.add_argument("-o", "--output", type=path_arg, default=Path("report.html"), metavar="OUT",
                   help="HTML file to write (default: report.html)")
    p.add_argument("--max-run-figures", type=int, default=12, metavar="N",
                   help="draw histogram and timeline for the worst run of at most N cells "
                   "(default: 12; every cell is in the tables)")
    p.add_argument("--no-figure-files", action="store_true",
                   help="only the HTML file, no PNG/SVG files beside it")
    p.set_defaults(func=cmd_report)


def _compare(sub) -> None:
    p = sub.add_parser(
        "compare", help="compare two groups of runs (e.g. image=1.10 vs image=1.11)",
        description="For every cell present in both groups and every metric: median of each "
        "group, ratio and %% change (candidate vs baseline), bootstrap 95 %% CI of the ratio, "
        "Mann-Whitney U p-value, and a verdict. A change is significant when p < 0.05 and the "
        "CI excludes 1; the verdict knows whether lower (errors, latencies, loss) or higher "
        "(throughput, events/s) is better from each metric's stored direction. Groups are "
        "selected by a run label, a run field (target, impl, load, probe, pin, benchmark) or a "
        "benchmark key of the cell (e.g. policy=fifo, size=64).",
        epilog="example: jitterlab compare --baseline image=1.10 --candidate image=1.11 "
        "--metric max_rel_period_error --format markdown")
    _results(p)
    _campaign(p, "compare across")
    p.add_argument("--baseline", required=True, metavar="KEY=VALUE", help="the reference group")
    p.add_argument("--candidate", required=True, metavar="KEY=VALUE", help="the group judged")
    p.add_argument("--metric", action="append", metavar="NAME",
                   help="only this metric; repeatable (default: every metric)")
    p.add_argument("--format", choices=("table", "markdown", "json"), default="table",
                   help="output format (default: table)")
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed (default: 0)")
    p.set_defaults(func=cmd_compare)


def _export(sub) -> None:
    p = sub.add_parser(
        "export", help="export runs, parameters, labels, sysinfo and metrics",
        description="Export the runs with their parameters, labels, a sysinfo summary and every "
        "metric. csv/json: one row (object) per run, metric columns named PROBE.METRIC, written "
        "to -o or stdout. parquet: -o is a directory that receives runs.parquet, metrics.parquet "
        "(long form with units and directions), raw.parquet (every edge series with run_id) and "
        "samples.parquet (every sample series: round-trip times, latency histograms).",
        epilog="example: jitterlab export --format parquet -o export/")
    _results(p)
    p.add_argument("--campaign", action="append", type=name_arg, metavar="NAME",
                   help="only this campaign (its latest run of each label set); repeatable "
                   "(default: all runs)")
    p.add_argument("--format", choices=("csv", "json", "parquet"), required=True,
                   help="csv, json or parquet")
    p.add_argument("-o", "--output", type=path_arg, metavar="PATH",
                   help="file (csv, json) or directory (parquet); csv/json go to stdout without it")
    p.set_defaults(func=cmd_export)


def _import(sub) -> None:
    from jitterlab.importers.edges_csv import TIME_UNITS

    p = sub.add_parser(
        "import", help="bring an external capture (CSV, VCD) into the store",
        description="Import an oscilloscope or logic-analyzer capture of a square wave and "
        "analyse it exactly like a measured run (benchmark squarewave, probe import). "
        "CSV: `time,level` rows, time in seconds or ns (header auto-detected; a header like "
        "time_ns or 'Time [s]' names the unit, else decimals are seconds and integers ns); "
        "level 0/1 or volts. VCD: as sigrok writes it; the first 1-bit signal or --signal NAME. "
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
    e.add_argument("--warmup", default="0ns", metavar="DURATION",
                   help="drop this much from the start (default: 0ns; at least 2 periods are "
                   "always dropped)")
    e.add_argument("--campaign", default="import", type=name_arg, metavar="NAME",
                   help="campaign to add the run to (default: import)")
    _results(e)
    e.set_defaults(func=cmd_import)


# --- commands ----------------------------------------------------------------------------------


def cmd_report(args: argparse.Namespace) -> int:
    from jitterlab.report.html import render
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
    try:
        report = render(store, args.output, campaigns=args.campaign,
                        max_run_figures=args.max_run_figures,
                        figure_files=not args.no_figure_files)
    except OSError as exc:  # the disk filled, a permission changed meanwhile
        raise UserError(f"-o {args.output}: cannot write the report: {exc.strerror or exc}") from None
    finally:
        store.close()
    out = SafeConsole()
    out.print(f"report: {report.path} ({report.n_runs} runs, {len(report.figure_files)} figure files)")
    for s in report.skipped:
        out.print(f"[yellow]skipped[/]: {escape(s)}", highlight=False)
    return EXIT_OK


def _runs(store, campaigns: list[str] | None):
    if not campaigns:
        runs = store.runs()
        if not runs:
            raise UserError(f"{store.root}: the store has no runs; run a campaign or import a capture")
        return runs
    from jitterlab.report.html import select_runs

    return select_runs(store, campaigns)[1]


def cmd_compare(args: argparse.Namespace) -> int:
    from jitterlab.analysis.compare import Selector, compare
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
        result = compare(_runs(store, args.campaign), base, cand, metrics=args.metric, seed=args.seed)
    finally:
        store.close()
    sys.stdout.write(format_comparison(result, args.format))
    return EXIT_OK


def format_comparison(result, fmt: str) -> str:
    """The comparison as a rich table, Markdown or JSON text."""
    from jitterlab.analysis.compare import cell_text

    heads = ["cell", "probe", "metric", "baseline", "candidate", "n", "change", "95% CI ratio",
             "p", "verdict"]
    rows = [[cell_text(result, r), r.probe, r.metric, f"{r.median_baseline:.4g}",
             f"{r.median_candidate:.4g}", f"{r.n_baseline}/{r.n_candidate}",
             f"{r.change_pct:+.1f} %" if math.isfinite(r.change_pct) else "—",
             f"{r.ci_low:.3g}–{r.ci_high:.3g}", f"{r.p_value:.3g}", r.verdict] for r in result.rows]
    notes = [f"warning: {w.message} — {w.remedy}" for w in result.warnings]
    if fmt == "json":
        return json.dumps({
            "baseline": str(result.baseline), "candidate": str(result.candidate),
            "cell_fields": list(result.cell_fields),
            "rows": [{**{k: v for k, v in r.__dict__.items() if k != "cell"},
                      "cell": dict(zip(result.cell_fields, r.cell, strict=True))} for r in result.rows],
            "warnings": [w.__dict__ for w in result.warnings]}, indent=1, default=str) + "\n"
    if fmt == "markdown":
        lines = ["| " + " | ".join(heads) + " |", "|" + "---|" * len(heads)]
        lines += ["| " + " | ".join(row) + " |" for row in rows]
        return escape_controls("\n".join([f"**{result.candidate}** vs **{result.baseline}**", "", *lines,
                                           "", *notes]) + "\n")
    table = Table(title=f"{result.candidate} vs {result.baseline}")
    for h in heads:
        table.add_column(h, justify="right" if h in ("baseline", "candidate", "change", "p") else "left")
    style = {"better": "green", "worse": "red"}
    for row in rows:
        s = style.get(row[-1])
        table.add_row(*row[:-1], f"[{s}]{row[-1]}[/]" if s else row[-1])
    console = SafeConsole(file=io.StringIO(), width=200, force_terminal=False)
    console.print(table)
    for n in notes:
        console.print(n, highlight=False)
    return console.file.getvalue()


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
    try:
        text = export(store, _runs(store, args.campaign), args.format, args.output)
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
    from jitterlab.labels import check_label

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
    from jitterlab.report.terminal import percent
    from jitterlab.store.catalog import Store
    from jitterlab.units import format_ns, parse_duration_ns

    period_ns = parse_duration_ns(args.period, "--period")
    warmup_ns = 0 if args.warmup.strip() in ("0", "0ns", "0s") else parse_duration_ns(args.warmup,
                                                                                       "--warmup")
    labels = parse_labels(args.label)
    capture = read_capture(args.file, args.format, signal=args.signal, time_unit=args.time_unit)
    store = Store(args.results)
    try:
        run = store_capture(store, capture, period_ns=period_ns, warmup_ns=warmup_ns,
                            labels=labels, campaign=args.campaign)
    finally:
        store.close()
    SafeConsole().print(escape(f"imported {args.file} as run {run.id} ({len(capture.t_ns)} edges, period "
                               f"{format_ns(period_ns)}): max relative period error "
                               f"{percent(run.metric('max_rel_period_error'))}"), highlight=False)
    return EXIT_OK
