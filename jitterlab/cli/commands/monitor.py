"""`jitterlab monitor CAMPAIGN --for 24h --every 1h`: measure the cells again every interval."""

from __future__ import annotations

import argparse
import shlex
import threading
from pathlib import Path

from rich.markup import escape

from jitterlab.cli.exits import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK
from jitterlab.cli.options import add_results
from jitterlab.model.errors import UserError
from jitterlab.report.format import counted


def add_parser(sub) -> argparse.ArgumentParser:
    mon = sub.add_parser(
        "monitor",
        help="measure a campaign's cells again every interval, for hours or days",
        description="Long-term monitoring: every --every, measure each cell of CAMPAIGN once (one "
        "repetition per interval, committed as it ends), until --for has passed. Each run keeps its "
        "histogram and maxima; `jitterlab report --trend METRIC --by time` draws them over time. "
        "After a crash or Ctrl-C, run the same command with --resume to go on with the next interval. "
        "Each interval ends with its headline values per cell and an ALERT line when a change of a "
        "cell's history (a change point, found by Apache Otava) is first seen: the interval that "
        "starts it, or the later one whose value makes it stand out, naming where it started.",
        epilog="example: jitterlab monitor examples/rt-latency.toml --for 24h --every 1h")
    mon.add_argument("campaign", type=Path, metavar="CAMPAIGN", help="campaign file (TOML)")
    mon.add_argument("--for", dest="for_", required=True, metavar="DURATION", help='how long, e.g. "24h"')
    mon.add_argument("--every", required=True, metavar="DURATION", help='interval, e.g. "1h"')
    mon.add_argument("--resume", action="store_true", help="go on with the latest monitoring of CAMPAIGN")
    mon.add_argument("--fail-on-change", action="store_true",
                     help="stop after the interval that alerts a change and exit 1 (a cron or CI job's "
                     "alarm); --resume goes on from there")
    add_results(mon)
    return mon


def run(args: argparse.Namespace) -> int:
    from jitterlab.campaign.file import load_campaign
    from jitterlab.execution.monitor import Schedule, monitor
    from jitterlab.execution.preflight import open_targets
    from jitterlab.model.units import parse_duration_ns
    from jitterlab.report.intervals import history_changes, interval_report, trend_metric
    from jitterlab.report.terminal import console
    from jitterlab.store.catalog import Store

    out = console()  # control characters escaped, lines not wrapped when piped
    campaign = load_campaign(args.campaign)
    alerts: list[str] = []
    history: list[str] = []  # every change point of the monitored history, said at the end
    metric: list[str] = []  # the metric the closing hint draws, once a run has one
    for_ns, every_ns = parse_duration_ns(args.for_, "--for"), parse_duration_ns(args.every, "--every")
    schedule = Schedule.of(campaign, for_ns, every_ns)
    if args.fail_on_change:
        _check_alarm(args, schedule)
    go_on = _command("monitor", str(args.campaign), "--for", args.for_, "--every", args.every, "--resume",
                     *(["--fail-on-change"] if args.fail_on_change else []), results=args.results)
    sessions = []
    store: Store | None = None
    try:  # whatever fails from here on, the targets opened (labgrid places, booted VMs) are let go
        sessions = open_targets(campaign)
        store = Store(args.results)
        stop = threading.Event()

        def ended(k: int, campaign_id: int) -> None:
            runs = store.runs(campaign_id)
            lines, found = interval_report(runs, k, cell_name)
            for line in lines:
                out.print(escape(line), highlight=False)
            for alert in found:
                alerts.append(alert.text(schedule.intervals))
                out.print(f"[bold red]{escape(alerts[-1])}[/]", highlight=False)
            if found and args.fail_on_change:
                stop.set()
            history[:] = history_changes(runs, cell_name)
            metric[:] = [m] if (m := trend_metric(runs)) else metric

        try:
            done, failed = monitor(campaign, store, sessions, schedule, resume=args.resume, stop=stop,
                                   notice=lambda text: out.print(f"{escape(campaign.name)}: {escape(text)}"),
                                   ended=ended)
        except KeyboardInterrupt:
            out.print("[yellow]interrupted[/]: go on with " + escape(go_on))
            return EXIT_INTERRUPTED
    finally:
        for session in sessions:
            session.target.close()
        if store is not None:
            store.close()
    draw = ""
    if metric:  # a placeholder would not run as printed: the metric a run of this monitoring has
        draw = "; draw them with " + _command("report", "--trend", metric[0], "--by", "time", "--campaign",
                                              campaign.name, "-o", "trend.html", results=args.results)
    out.print(escape(f"{counted(done, 'interval')} measured ({counted(failed, 'run')} failed){draw}"),
              highlight=False)
    if history:
        out.print("change points in the history so far:", highlight=False)
        for line in history:
            out.print(escape(line), highlight=False)
    if alerts and args.fail_on_change:
        out.print(escape(f"stopped: a change started (--fail-on-change); go on with {go_on}"),
                  highlight=False)
        return EXIT_FAILED
    return EXIT_FAILED if failed else EXIT_OK


def _check_alarm(args: argparse.Namespace, schedule) -> None:
    """--fail-on-change needs a schedule long enough for a change point: with fewer intervals than
    the change-point analysis takes values, the alarm could never ring."""
    from jitterlab.analysis.changepoints import MIN_VALUES
    from jitterlab.model.units import format_ns

    if schedule.intervals < MIN_VALUES:
        raise UserError(f"--fail-on-change with --for {args.for_} --every {args.every}: "
                        f"{schedule.intervals} interval{'s' if schedule.intervals > 1 else ''}, and a change "
                        f"point needs at least {MIN_VALUES}; give --for "
                        f"{format_ns(MIN_VALUES * schedule.every_ns)} or more, or leave out --fail-on-change")


def _command(*words: str, results: str) -> str:
    """A jitterlab command as it runs when pasted into a shell: its words quoted, with --results."""
    from jitterlab.store import shown_spec

    return shlex.join(["jitterlab", *words, "--results", shown_spec(results)])


def cell_name(run) -> str:
    """A cell as a campaign writes it (defaults left out), as the trend report names it."""
    from jitterlab.campaign.cells import names

    return " ".join(p for p in (run.target, run.benchmark, names().params_text(run.cell), run.load) if p)
