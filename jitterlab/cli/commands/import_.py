"""`jitterlab import edges FILE`: an oscilloscope or logic-analyzer capture analysed like a run."""

from __future__ import annotations

import argparse

from rich.markup import escape

from jitterlab.cli.exits import EXIT_OK
from jitterlab.cli.options import add_results
from jitterlab.cli.paths import name_arg, path_arg


def add_parser(sub) -> argparse.ArgumentParser:
    from jitterlab.importers import KINDS
    from jitterlab.importers.time_units import UNITS  # not the CSV reader: pyarrow's, at every start

    p = sub.add_parser(
        "import", help="bring an external capture (CSV, VCD) into the store",
        description="Import an oscilloscope or logic-analyzer capture of a square wave and "
        "analyse it exactly like a measured run (benchmark squarewave, probe import). "
        "CSV: `time,level` rows (header auto-detected). A header names the time unit as the tools "
        "that write captures do: sigrok-cli/PulseView's 'microseconds', Saleae's 'Time [s]', a "
        "scope's row of units ('second,Volt'), time_ns, 't (us)'; a header without a unit, or with "
        "one jitterlab does not know, is an error (give --time-unit), and so is a --time-unit that "
        "contradicts the header's unit; without a header, decimals are seconds and integers ns. "
        "libsigrok's CSV is read as samples. "
        "A CSV is an edge list (one row per edge, level 0/1) unless --kind samples or its "
        "header names the level column for volts or samples ('V', '[V]', 'volts', 'sample'); "
        "a level that repeats in an edge list is a lost edge (a warning names the lines). "
        "VCD: as sigrok writes it; the first 1-bit signal or --signal NAME; times keep the "
        "file's $timescale resolution (e.g. 1 ps) in the metrics (one $timescale; --time-unit and --kind "
        "are for CSV). When the edges' median period is more than 1.5 times off --period, the run is stored "
        "with a warning. "
        "Runs go into the campaign `import`; --label target=, impl=, load= set those fields "
        "(defaults unknown, external, unknown).",
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
    e.add_argument("--time-unit", choices=("auto", *UNITS), default="auto",
                   help="CSV: unit of the time column (default: auto)")
    e.add_argument("--kind", choices=KINDS, default="auto",
                   help="CSV: rows are edges (one per edge) or samples (an edge where the level "
                   "changes); default: from the header, else edges")
    e.add_argument("--warmup", default="0ns", metavar="DURATION",
                   help="drop this much from the start (default: 0ns; at least 2 periods are "
                   "always dropped)")
    e.add_argument("--campaign", default="import", type=_campaign_name, metavar="NAME",
                   help="campaign to add the run to (default: import)")
    add_results(e)
    return p


def _campaign_name(text: str) -> str:
    """The campaign the run goes into: named as a campaign file names one (not blank)."""
    if not text.strip():
        raise argparse.ArgumentTypeError('a campaign has a name, e.g. --campaign bench-scope; leave out '
                                         '--campaign for "import"')
    return name_arg(text).strip()


def _labels(items: list[str]) -> dict[str, str]:
    from jitterlab.model.labels import label_pair

    return dict(label_pair(item) for item in items)


def run(args: argparse.Namespace) -> int:
    from jitterlab.importers import read_capture, store_capture
    from jitterlab.model.units import parse_duration_ns
    from jitterlab.report.format import format_value
    from jitterlab.report.terminal import console, percent
    from jitterlab.report.traits import own
    from jitterlab.store.catalog import Store

    period_ns = parse_duration_ns(args.period, "--period")
    warmup_ns = 0 if args.warmup.strip() in ("0", "0ns", "0s") else parse_duration_ns(args.warmup,
                                                                                       "--warmup")
    labels = _labels(args.label)
    capture = read_capture(args.file, args.format, signal=args.signal, time_unit=args.time_unit,
                           kind=args.kind)
    store = Store(args.results)
    try:
        imported = store_capture(store, capture, period_ns=period_ns, warmup_ns=warmup_ns,
                                 labels=labels, campaign=args.campaign)
        warnings = [w for _, w in store.warnings(imported.campaign_id, imported.id)]
    finally:
        store.close()
    out = console()
    for warning in warnings:  # as stored with the run, which show repeats
        out.print(f"warning: {warning.message}; {warning.remedy}", highlight=False, markup=False)
    out.print(escape(f"imported {args.file} as run {imported.id} ({len(capture.t_ns)} edges, period "
                     f"{format_value(period_ns, 'ns')}): max relative period error "
                     f"{percent(own(imported, 'max_rel_period_error'))}"), highlight=False)
    return EXIT_OK
