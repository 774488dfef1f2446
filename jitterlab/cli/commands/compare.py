"""`jitterlab compare`: two groups of runs, metric by metric, with a verdict per row."""

from __future__ import annotations

import argparse
import sys

from jitterlab.cli.exits import EXIT_FAILED, EXIT_OK
from jitterlab.cli.options import add_campaigns, add_results
from jitterlab.cli.selection import selected_runs
from jitterlab.model.errors import UserError


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "compare", help="compare two groups of runs (e.g. image=1.10 vs image=1.11)",
        description="For every cell present in both groups and every metric (or --metric): each "
        "group's statistic and the change on the metric's scale (a ratio of geometric means; a "
        "difference of means for counts that may be 0 and signed metrics; a tail such as p99 as the "
        "quantile of all periods or latencies of each group, hierarchical bootstrap over runs and "
        "samples; a maximum as the runs' maxima) with its repeated 95 % interval. The watched "
        "metrics (each benchmark's headline, or --metric), as the probe each cell chose saw them "
        "(--probe adds another's view), are tested: every look counts as one of a "
        "sequence that may go on (alpha spending over the run counts), so a false better/worse stays "
        "under 5 % however often you compare again; sequential p-values are adjusted with Holm's "
        "method. Verdicts: better or worse when the test shows a change; same when the repeated 90 % "
        "interval lies inside the metric kind's threshold (two one-sided tests; --threshold), or "
        "every value lies within the metric's resolution; undecided otherwise. Other rows are "
        "counted (--all lists them), not tested. Groups are selected by a run label, a run field "
        "(target, impl, load, probe, pin, benchmark) or a benchmark key of the cell (e.g. "
        "policy=fifo, size=64); groups that share a run are refused. Exit status: 0, or 1 with "
        "--fail-on when a row is worse (or undecided); 2 for bad input.",
        epilog="example: jitterlab compare --baseline image=1.10 --candidate image=1.11 "
        "--metric max_rel_period_error --format json --fail-on worse")
    add_results(p)
    add_campaigns(p, "compare across")
    p.add_argument("--baseline", required=True, metavar="KEY=VALUE", help="the reference group")
    p.add_argument("--candidate", required=True, metavar="KEY=VALUE", help="the group judged")
    p.add_argument("--where", action="append", metavar="KEY=VALUE",
                   help="only the runs with this label or field (e.g. image=A: compare impl=python with "
                   "impl=c-mmap on one image instead of pooling the images); repeatable")
    p.add_argument("--metric", action="append", metavar="NAME",
                   help="only this metric, shown and tested; repeatable (default: each benchmark's "
                   "headline metrics tested)")
    p.add_argument("--probe", action="append", metavar="NAME",
                   help="test the rows this probe saw too; repeatable (default: only the probe each cell "
                   "chose, e.g. vpin, is tested: the program's own timestamps, self, stored beside it are "
                   "shown, not tested, so they cost the chosen view no power)")
    p.add_argument("--all", action="store_true", dest="every_row",
                   help="list every row of the table and Markdown output: also the metrics not tested, "
                   "their bounds and the load readings (default: the tested rows, with their verdicts, "
                   "and a count of the rest; JSON, JUnit and LAVA output always hold every row)")
    p.add_argument("--format", choices=("table", "markdown", "json", "junit", "lava"), default="table",
                   help="output format (default: table); junit: a test case per graded row for CI "
                   "servers (worse fails, undecided is skipped); lava: lines for LAVA's test cases "
                   "(jitterlab/lava/report-results.sh)")
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed (default: 0)")
    p.add_argument("--no-pooled", action="store_true",
                   help="compare tails per run instead of on all samples (no raw series read)")
    p.add_argument("--threshold", action="append", metavar="[KIND=]PCT",
                   help="the practical threshold a 'same' must stay within: PCT for every kind, or "
                   "KIND=PCT with KIND timing (default 20%%), rate (5%%), loss (50%%) or other (10%%); "
                   "repeatable")
    p.add_argument("--fail-on", action="append", choices=("worse", "undecided"), metavar="worse|undecided",
                   help="exit 1 when any row's verdict is worse, or undecided (a release gate in CI "
                   "that must decide); repeatable")
    return p


def run(args: argparse.Namespace) -> int:
    from jitterlab import plugins
    from jitterlab.analysis.compare import Selector, compare
    from jitterlab.analysis.samples import reader
    from jitterlab.analysis.thresholds import parse_thresholds
    from jitterlab.campaign.cells import names
    from jitterlab.report.comparison import format_comparison
    from jitterlab.report.terminal import console, emulation_note
    from jitterlab.store.catalog import Store

    base = Selector.parse(args.baseline, "--baseline")
    cand = Selector.parse(args.candidate, "--candidate")
    if (base.key, base.value) == (cand.key, cand.value):
        raise UserError(f"--baseline and --candidate both select {base}: a group compared with itself "
                        "tells nothing; give two different groups, e.g. --baseline image=1.10 "
                        "--candidate image=1.11")
    if not 0 <= args.seed < 2**32:
        raise UserError(f"--seed {args.seed}: give a number from 0 to {2**32 - 1}")
    thresholds = parse_thresholds(args.threshold)
    store = Store(args.results, create=False)
    try:
        pooled = None if args.no_pooled else reader(store.read_series, plugins.traits)
        runs = _where(selected_runs(store, args.campaign), args.where or [])
        result = compare(runs, base, cand, metrics=args.metric, seed=args.seed, distributions=pooled,
                         names=names(), thresholds=thresholds, traits=plugins.traits,
                         probes=args.probe or ())
        note = emulation_note([r for r in runs if base.matches(r, names()) or cand.matches(r, names())],
                              store)
    finally:
        store.close()
    if args.format in ("junit", "lava"):
        from jitterlab.report.formats import junit, lava

        text = junit.comparison_xml(result) if args.format == "junit" else lava.comparison_lines(result)
        sys.stdout.write(text)
    else:
        shown = console()  # what stdout is: a terminal (and its width), or a pipe or a file
        sys.stdout.write(format_comparison(result, args.format, terminal=shown.is_terminal, width=shown.width,
                                           every_row=args.every_row, again=_again(args)))
    if note:  # on stderr: --format json stays one document
        sys.stderr.write(f"note: {note}; a timing verdict between them means nothing\n")
    failing = set(args.fail_on or ())
    if any(r.verdict in failing for r in result.rows):
        return EXIT_FAILED
    return EXIT_OK


def _where(runs: list, wheres: list[str]) -> list:
    """The runs that have every --where KEY=VALUE."""
    from jitterlab.analysis.compare import Selector
    from jitterlab.campaign.cells import names

    for text in wheres:
        where = Selector.parse(text, "--where")
        kept = [r for r in runs if where.matches(r, names())]
        if not kept:
            values = sorted({str(r.labels[where.key]) for r in runs if where.key in r.labels})
            known = f"; the label {where.key} takes {', '.join(values)} here" if values else ""
            raise UserError(f"--where {text}: no run of these has it{known}")
        runs = kept
    return runs


def _again(args: argparse.Namespace) -> str:
    """This comparison as a command a person pastes, to add an option to (--all, --where)."""
    from jitterlab.cli.again import command
    from jitterlab.store import shown_spec

    words = ["compare", "--results", shown_spec(args.results)]
    words += [w for name in args.campaign or () for w in ("--campaign", name)]
    words += [w for where in args.where or () for w in ("--where", where)]
    words += ["--baseline", args.baseline, "--candidate", args.candidate]
    words += [w for metric in args.metric or () for w in ("--metric", metric)]
    words += [w for probe in args.probe or () for w in ("--probe", probe)]
    words += [w for t in args.threshold or () for w in ("--threshold", t)]
    if args.no_pooled:
        words.append("--no-pooled")
    if args.seed:
        words += ["--seed", str(args.seed)]
    return command(*words)
