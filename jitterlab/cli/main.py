"""The command line: parse, then read like the pipeline. UserError is caught once, here."""

from __future__ import annotations

import argparse
import signal
import sys
import threading
import time
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table

from jitterlab import __version__, plugins
from jitterlab.cli.paths import name_arg, path_arg, run_id_arg
from jitterlab.model.errors import UserError, shown
from jitterlab.report.console import SafeConsole

EXIT_OK, EXIT_RUNS_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130

_DESCRIPTION = """\
Measure how precisely Linux programs keep time on a machine.

A campaign file (TOML) describes a matrix: targets x benchmark x load x the benchmark's own
keys (for squarewave: impl x period x probe; for cyclictest, udp-echo, iperf3, ...: see
`jitterlab list`), with repetitions. `jitterlab run` measures every cell on local, ssh or
labgrid targets, stores raw series and metrics in a results directory, and prints a summary
per benchmark. Start from examples/quickstart.toml.
"""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # argparse exits 2 too, but with a usage dump
        raise UserError(f"{self.prog}: {message} (see {self.prog} --help)")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="jitterlab", description=_DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--version", action="version", version=f"jitterlab {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True

    run = sub.add_parser(
        "run",
        help="measure every cell of a campaign",
        description="Measure every cell of a campaign and store the results. "
        "Each run is committed whole or not at all; after a crash or Ctrl-C, "
        "--resume continues where it stopped.",
    )
    run.add_argument("campaign", type=path_arg, metavar="CAMPAIGN", help="campaign file (TOML)")
    _results_option(run)
    run.add_argument(
        "--resume",
        action="store_true",
        help="continue the latest run of this campaign in DIR, skipping committed runs",
    )
    run.add_argument(
        "--retry-failed", action="store_true", help="with --resume: measure failed/timed-out runs again"
    )
    run.add_argument(
        "--retry-damaged", action="store_true",
        help="with --resume: measure again the runs whose raw file is missing or damaged (sha256)",
    )
    run.add_argument(
        "--dry-run",
        action="store_true",
        help="print the expanded matrix and the estimated time; measure nothing",
    )
    run.add_argument(
        "--label",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="set a label of every run (over [campaign.labels]), e.g. --label image=1.11; repeatable. "
        "Measure the same campaign on two images with two labels, then `jitterlab compare`",
    )
    run.set_defaults(func=cmd_run)

    lst = sub.add_parser(
        "list",
        help="list benchmarks, impls, pins, probes, loads and targets",
        description="Every registry of plug-ins, with one line of help each.",
    )
    lst.set_defaults(func=cmd_list)

    show = sub.add_parser(
        "show",
        help="show stored runs, or one run in detail",
        description="Without RUN_ID: the runs of the latest campaign (or "
        "--campaign NAME) with status and headline metric, and the summary. "
        "With RUN_ID (a prefix is enough): every metric, warning and the sysinfo.",
    )
    show.add_argument("run_id", nargs="?", type=run_id_arg, metavar="RUN_ID",
                      help="run id or a unique prefix")
    _results_option(show)
    show.add_argument("--campaign", type=name_arg, metavar="NAME", help="campaign name (default: the latest)")
    show.set_defaults(func=cmd_show)

    mon = sub.add_parser(
        "monitor",
        help="measure a campaign's cells again every interval, for hours or days",
        description="Long-term monitoring: every --every, measure each cell of CAMPAIGN once (one "
        "repetition per interval, committed as it ends), until --for has passed. Each run keeps its "
        "histogram and maxima; `jitterlab report --trend METRIC --by time` draws them over time. "
        "After a crash or Ctrl-C, run the same command with --resume to go on with the next interval.",
        epilog="example: jitterlab monitor examples/rt-latency.toml --for 24h --every 1h")
    mon.add_argument("campaign", type=Path, metavar="CAMPAIGN", help="campaign file (TOML)")
    mon.add_argument("--for", dest="for_", required=True, metavar="DURATION", help='how long, e.g. "24h"')
    mon.add_argument("--every", required=True, metavar="DURATION", help='interval, e.g. "1h"')
    mon.add_argument("--resume", action="store_true", help="go on with the latest monitoring of CAMPAIGN")
    _results_option(mon)
    mon.set_defaults(func=cmd_monitor)

    from jitterlab.cli.commands.results import add_commands
    from jitterlab.system.doctor import add_command as add_doctor

    add_commands(sub)
    add_doctor(sub)
    return parser


def _results_option(parser: argparse.ArgumentParser) -> None:
    from jitterlab.store import add_results_option

    add_results_option(parser)


MAX_ERROR_CHARS = 2000  # an error echoing a huge input still prints as one readable line


def main(argv: list[str] | None = None) -> int:
    console = SafeConsole(stderr=True)
    try:
        with _sigterm_as_interrupt():
            args = build_parser().parse_args(argv)
            return args.func(args)
    except UserError as exc:
        message = " ".join(str(exc).splitlines())
        if len(message) > MAX_ERROR_CHARS:
            message = f"{message[:MAX_ERROR_CHARS]}… ({len(message)} characters)"
        console.print(f"[bold red]error:[/] {escape(message)}", highlight=False, soft_wrap=True)
        return EXIT_USAGE
    except KeyboardInterrupt:  # Ctrl-C or SIGTERM before a campaign started: nothing to keep
        console.print("[yellow]interrupted[/]", highlight=False)
        return EXIT_INTERRUPTED


def cmd_list(args: argparse.Namespace) -> int:
    from jitterlab.plugins import ALL

    out = SafeConsole()
    for kind, registry in ALL.items():
        table = Table(title=kind, title_justify="left", show_header=False, box=None, padding=(0, 2))
        for entry in registry:
            table.add_row(f"[bold]{escape(entry.name)}[/]", escape(entry.help))
            params = getattr(entry.obj, "params", ())
            if params and kind != "benchmarks":
                table.add_row("", f"  options in {escape(f'[{kind}.{entry.name}]')}:")
            for param in params:
                default = "required" if param.default is None else f"default {_shown_default(param)}"
                table.add_row("", f"  [cyan]{escape(param.name)}[/] — {escape(param.help)} "
                                  f"({escape(default)}; e.g. {escape(param.example)})")
        out.print(table)
        out.print()
    return EXIT_OK


def _with_labels(campaign, pairs: list[str]):
    """The campaign with --label KEY=VALUE pairs set (they take part in the resume fingerprint)."""
    import dataclasses

    from jitterlab.model.labels import check_label

    labels = dict(campaign.labels)
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip() or not value.strip():
            raise UserError(f"--label {shown(pair)}: write KEY=VALUE, e.g. --label image=1.11")
        check_label(key.strip(), value.strip(), f"--label {shown(pair)}")
        labels[key.strip()] = value.strip()
    return dataclasses.replace(campaign, labels=labels) if pairs else campaign


def _shown_default(param) -> str:
    """A Param's default as the user writes it ("1ms"), whatever form the default is given in."""
    try:
        shown = param.show(param.parse(param.default, param.name))
    except (UserError, TypeError, ValueError):
        shown = str(param.default)
    if isinstance(param.default, bool):
        shown = str(param.default).lower()
    return shown if shown != "" else '""'


def cmd_run(args: argparse.Namespace) -> int:
    from jitterlab.campaign.file import load_campaign
    from jitterlab.execution.preflight import open_targets
    from jitterlab.execution.runner import Runner, estimate_s
    from jitterlab.model.units import format_duration_s
    from jitterlab.report.standard import run_label
    from jitterlab.report.terminal import console, emulation_note, summary_tables
    from jitterlab.store.catalog import Store

    out = console()  # piped: tables as plain rows, lines not wrapped; control characters escaped
    campaign = _with_labels(load_campaign(args.campaign), args.label)
    for flag, given in (("--retry-failed", args.retry_failed), ("--retry-damaged", args.retry_damaged)):
        if given and not args.resume:
            raise UserError(f"{flag}: only with --resume (it re-measures runs of an earlier run)")
    if args.dry_run:
        return _dry_run(out, campaign)
    from jitterlab.execution.farm import image_targets

    boards = image_targets(campaign)
    if boards:
        if args.resume:
            raise UserError("--resume: an image campaign measures every image afresh; run it again")
        return _run_images(out, campaign, boards, args)
    from jitterlab.store.postgres import is_url

    store: Store | None = None
    sessions = []
    try:
        # a campaign to resume is locked before any target is opened: a second --resume stops at once;
        # a new one is created once the targets are ready (a refused start leaves nothing behind)
        if args.resume and (is_url(args.results) or (Path(args.results) / "results.sqlite").is_file()):
            store = Store(args.results)
            Runner(campaign, store, resume=True).resumed_campaign()
        sessions = open_targets(campaign)
        store = store or Store(args.results)
        runner = Runner(campaign, store, resume=args.resume, retry_failed=args.retry_failed,
                        retry_damaged=args.retry_damaged)
        campaign_id = runner.campaign_id()
        todo, skipped = runner.pending(campaign_id)
        total_s = estimate_s(campaign, todo)
        out.print(
            f"[bold]{escape(campaign.name)}[/]: {len(todo)} runs to measure"
            + (f", {skipped} already committed" if skipped else "")
            + f", about {format_duration_s(total_s)} on {len(sessions)} target(s)"
        )
        for session in sessions:
            for w in session.warnings:
                out.print(f"[yellow]warning[/] ({escape(session.spec.name)}): "
                          f"{escape(w.message)} — {escape(w.remedy)}")
        per_target = {s.spec.name: [x for x in todo if x[0].target == s.spec.name] for s in sessions}
        with _progress(out) as progress:
            tasks = {
                name: progress.add_task(name, total=max(estimate_s(campaign, runs), 1e-9))
                for name, runs in per_target.items()
            }
            started = dict.fromkeys(per_target, 0)
            first_start: dict[str, float] = {}

            def report(target: str, what: str | None, seconds: float) -> None:
                if what is None:
                    progress.advance(tasks[target], seconds)
                    return
                progress.update(tasks[target], description=escape(f"{target}: {what}"))
                started[target] += 1
                now = time.monotonic()
                first_start.setdefault(target, now)
                if not out.is_terminal:  # logs get one line per run instead of a live bar
                    task = progress.tasks[tasks[target]]
                    eta = eta_s(task.total, task.completed, now - first_start[target])
                    out.print(
                        escape(f"{target}: [{started[target]}/{len(per_target[target])}] {what}, "
                               f"about {format_duration_s(eta)} left"),
                        highlight=False,
                    )

            runner.progress = report
            runner.notice = lambda target, message: out.print(
                f"[yellow]{escape(target)}[/]: {escape(message)}")
            outcome = runner.execute(sessions, campaign_id)
        runs = store.runs(campaign_id)
        for table in summary_tables(runs, campaign.name):
            out.print(table)
        if note := emulation_note(runs, store):
            out.print(f"[yellow]note[/]: {escape(note)}")
        failed = [r for r in runs if r.status != "ok"]
        for r in failed[:10]:
            out.print(f"[red]{r.status}[/] {r.id} "
                      + escape(f"{r.target} {run_label(r)}: {r.error or ''}"))
        if len(failed) > 10:
            out.print(escape(f"... and {len(failed) - 10} more (jitterlab show --results {args.results})"))
        out.print(escape(
            f"results: {store.where} (raw series in {store.raw_dir}/); "
            f"details: jitterlab show --results {args.results}"
        ))
        if outcome.interrupted:
            out.print(
                f"[yellow]interrupted[/]: {outcome.done} runs committed this time; continue with "
                + escape(f"jitterlab run {args.campaign} --results {args.results} --resume")
            )
            return EXIT_INTERRUPTED
        return EXIT_RUNS_FAILED if failed else EXIT_OK
    finally:
        for session in sessions:
            session.target.close()
        if store is not None:
            store.close()


def _run_images(out, campaign, boards, args) -> int:
    """Each image on every board in turn (farm.py), one campaign per image value."""
    from jitterlab.execution.farm import run_images
    from jitterlab.report.terminal import summary_tables
    from jitterlab.store.catalog import Store

    store = Store(args.results)
    try:
        def notice(target: str, message: str) -> None:
            out.print(escape(f"{target + ': ' if target else ''}{message}"), highlight=False)

        def progress(target: str, what: str | None, seconds: float) -> None:
            if what is not None:
                out.print(escape(f"{target}: {what}"), highlight=False)

        with _sigterm_as_interrupt():
            done = run_images(campaign, store, boards, notice, progress)
        failed = 0
        for value, campaign_id, _ in done:
            runs = store.runs(campaign_id)
            failed += sum(r.status != "ok" for r in runs)
            for table in summary_tables(runs, f"{campaign.name} {boards[0][1].label}={value}"):
                out.print(table)
        label = boards[0][1].label
        out.print(escape(f"results: {store.where}; compare the images with jitterlab compare --results "
                         f"{args.results} --baseline {label}=A --candidate {label}=B"), highlight=False)
        if done and done[-1][2].interrupted:
            return EXIT_INTERRUPTED
        return EXIT_RUNS_FAILED if failed else EXIT_OK
    finally:
        store.close()


DRY_RUN_ROWS = 200  # cells listed by --dry-run; the rest are counted


def _dry_run(out: Console, campaign) -> int:
    from jitterlab.model.units import format_duration_s, format_ns

    table = Table(
        title=f"{escape(campaign.name)}: {len(campaign.cells)} cells x {campaign.repetitions} "
        f"repetitions of {format_ns(campaign.settings.duration_ns)}"
    )
    for name in ("target", "benchmark", "cell", "load", "estimate"):
        table.add_column(name)
    per_cell_s = 0.0
    for i, c in enumerate(campaign.cells):
        bench = plugins.BENCHMARKS.get(c.benchmark, "matrix.benchmark")
        seconds = bench.estimate_s(campaign.settings, c)
        per_cell_s += seconds
        if i < DRY_RUN_ROWS:
            shown = {p.name: p.show for p in bench.params}
            params = " ".join(f"{k}={shown[k](v)}" for k, v in c.params)
            table.add_row(c.target, c.benchmark, params, c.load, format_duration_s(seconds))
    out.print(table)
    if len(campaign.cells) > DRY_RUN_ROWS:
        out.print(f"... and {len(campaign.cells) - DRY_RUN_ROWS} more cells")
    total_s = per_cell_s * campaign.repetitions  # counted, not listed: a matrix may be large
    out.print(
        f"{len(campaign.cells) * campaign.repetitions} runs, estimated {format_duration_s(total_s)} "
        "(plus building the programs once per target)"
    )
    return EXIT_OK


def eta_s(total_s: float, completed_s: float, elapsed_s: float) -> float:
    """Time left: the estimate of the runs still to come, scaled by how long the runs so far took
    against their estimate (a loaded or slow machine takes longer than the estimates say)."""
    pace = elapsed_s / completed_s if completed_s > 0 else 1.0
    return max(total_s - completed_s, 0.0) * pace


def _progress(console: Console) -> Progress:
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.percentage:>3.0f}%"),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
        console=console,
        transient=False,
        disable=not console.is_terminal,
    )


class _sigterm_as_interrupt:
    """SIGTERM stops jitterlab like Ctrl-C: processes stopped, committed runs kept, exit 130."""

    def __enter__(self) -> None:
        self._previous = None
        if threading.current_thread() is threading.main_thread():
            self._previous = signal.signal(signal.SIGTERM, signal.default_int_handler)

    def __exit__(self, *exc: object) -> None:
        if self._previous is not None:
            signal.signal(signal.SIGTERM, self._previous)


def cmd_show(args: argparse.Namespace) -> int:
    from jitterlab.report.terminal import (
        console,
        emulation_note,
        run_detail,
        runs_table,
        show_warnings,
        summary_tables,
    )
    from jitterlab.store.catalog import Store

    out = console()  # piped: tables as plain rows, lines not wrapped; control characters escaped
    store = Store(args.results, create=False)
    try:
        if args.run_id:
            matches = store.runs(run_id=args.run_id)
            if len(matches) != 1:
                raise UserError(
                    f"RUN_ID {args.run_id!r}: "
                    + (
                        "no such run in " + store.where
                        if not matches
                        else f"matches {len(matches)} runs; give more characters"
                    )
                )
            run = matches[0]
            for part in run_detail(
                run,
                store.warnings(run.campaign_id, run.id),
                store.sysinfo(run.sysinfo_id) if run.sysinfo_id else {},
            ):
                out.print(part)
            return EXIT_OK
        campaign = store.latest_campaign(args.campaign)
        if campaign is None:
            known = ", ".join(sorted({c["name"] for c in store.campaigns()})) or "none"
            raise UserError(f"--campaign {args.campaign!r}: not in {store.where}; campaigns there: {known}")
        runs = store.runs(campaign["id"])
        out.print(runs_table(runs))
        for table in summary_tables(runs, campaign["name"]):
            out.print(table)
        if note := emulation_note(runs, store):
            out.print(f"[yellow]note[/]: {escape(note)}")
        for part in show_warnings(runs, store.warnings(campaign["id"]), campaign["name"]):
            out.print(part)
        return EXIT_OK
    finally:
        store.close()



def cmd_monitor(args: argparse.Namespace) -> int:
    from jitterlab.campaign.file import load_campaign
    from jitterlab.execution.monitor import Schedule, monitor
    from jitterlab.execution.preflight import open_targets
    from jitterlab.model.units import parse_duration_ns
    from jitterlab.store.catalog import Store

    out = Console()
    campaign = load_campaign(args.campaign)
    for_ns, every_ns = parse_duration_ns(args.for_, "--for"), parse_duration_ns(args.every, "--every")
    schedule = Schedule.of(campaign, for_ns, every_ns)
    sessions = open_targets(campaign)
    store = Store(args.results)
    stop = threading.Event()
    try:
        with _sigterm_as_interrupt():
            try:
                done, failed = monitor(campaign, store, sessions, schedule, resume=args.resume, stop=stop,
                                       notice=lambda text: out.print(f"{campaign.name}: {escape(text)}"))
            except KeyboardInterrupt:
                out.print(f"[yellow]interrupted[/]: go on with jitterlab monitor {args.campaign} --for "
                          f"{args.for_} --every {args.every} --resume")
                return EXIT_INTERRUPTED
    finally:
        for session in sessions:
            session.target.close()
        store.close()
    out.print(f"{done} intervals measured ({failed} runs failed); draw them with jitterlab report --trend "
              f"METRIC --by time --campaign {campaign.name}", highlight=False)
    return EXIT_RUNS_FAILED if failed else EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
