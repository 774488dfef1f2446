"""`jitterlab run CAMPAIGN`: measure every cell of a campaign (or print its matrix with --dry-run)."""

from __future__ import annotations

import argparse
import shlex

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from jitterlab.cli.exits import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, sigterm_as_interrupt
from jitterlab.cli.options import add_results, add_until_decided
from jitterlab.cli.paths import path_arg
from jitterlab.model.errors import UserError, shown
from jitterlab.report.format import counted, duration
from jitterlab.store import shown_spec


def add_parser(sub) -> argparse.ArgumentParser:
    run = sub.add_parser(
        "run",
        help="measure every cell of a campaign",
        description="Measure every cell of a campaign and store the results. "
        "Each run is committed whole or not at all; after a crash or Ctrl-C, "
        "--resume continues where it stopped.",
    )
    run.add_argument("campaign", type=path_arg, metavar="CAMPAIGN", help="campaign file (TOML)")
    add_results(run)
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
    run.add_argument(
        "--tuning", metavar="NAME[,NAME...]",
        help="measure every cell of the matrix under each of these tunings (over the matrix's `tuning` "
        "key), e.g. --tuning none,irq-away; compare them with --until-decided tuning=none..tuning=irq-away "
        "(jitterlab list tunings)")
    add_until_decided(run)
    run.add_argument(
        "--timings", type=path_arg, metavar="FILE",
        help="append where the wall time goes to FILE: one JSON line per phase (preflight, each run's "
        "phases, store writes, the end screen); bench/campaign_speed.py reads it",
    )
    return run


def run(args: argparse.Namespace) -> int:
    from jitterlab.campaign.file import load_campaign
    from jitterlab.report.terminal import console

    out = console()  # piped: tables as plain rows, lines not wrapped; control characters escaped
    campaign = load_campaign(args.campaign)
    if args.tuning is not None:
        from jitterlab.campaign.file import with_tunings

        campaign = with_tunings(campaign, args.tuning)
    campaign = _with_labels(campaign, args.label)
    for flag, given in (("--retry-failed", args.retry_failed), ("--retry-damaged", args.retry_damaged)):
        if given and not args.resume:
            raise UserError(f"{flag}: only with --resume (it re-measures runs of an earlier run)")
    from jitterlab.analysis.trend import natural
    from jitterlab.cli.until_decided import watch_of
    from jitterlab.execution.farm import image_targets

    # what the file and the options alone tell is refused here, so that --dry-run refuses it too
    boards = image_targets(campaign)
    if boards and args.resume and args.until_decided is None:
        raise UserError("--resume: an image campaign measures every image afresh; run it again (with "
                        "--until-decided, --resume goes on with its rounds)")
    if boards and (args.retry_failed or args.retry_damaged):
        raise UserError(f"{'--retry-failed' if args.retry_failed else '--retry-damaged'}: an image campaign "
                        "measures every image afresh; run it again")
    images = None
    if boards:
        values = sorted({v for _, options in boards for v, _ in options.images}, key=natural)
        images = (boards[0][1].label, values)
    watch = watch_of(args, campaign, images)  # --until-decided and its bounds
    if args.dry_run:
        return _dry_run(out, campaign)
    if boards:
        return _run_images(out, campaign, boards, args, watch)
    return _measure(out, campaign, args)


def _measure(out: Console, campaign, args: argparse.Namespace) -> int:
    """The run as a pipeline: open the store and the targets, say what will be measured, measure
    (going on until decided when asked), then show what was measured and how it ended."""
    from jitterlab.cli.until_decided import watch_of

    watch = watch_of(args, campaign)  # refused before any target is opened
    run = _Run(out, campaign, args)
    timings = run.timings
    try:
        with timings.phase("open (store, preflight)"):
            run.open()
        with timings.phase("announce"):
            run.announce()
        with timings.phase("measure (the runner)"):
            outcome = run.measure(watch)
        with timings.phase("end (tables, summary screen)"):
            return run.end(outcome)
    finally:
        with timings.phase("close"):
            run.close()
        timings.close()


class _Run:
    """One `jitterlab run` of a campaign: what it holds open, and its steps in order."""

    def __init__(self, out: Console, campaign, args: argparse.Namespace) -> None:
        self.out, self.campaign, self.args = out, campaign, args
        # what `open` makes: closed by `close` whatever happens after
        self.store = None
        self.sessions: list = []
        self.display = None  # the progress display, and the runner that reports to it
        self.runner = None
        self.campaign_id = 0
        self.todo: list = []  # the runs to measure, and how many were committed before
        self.skipped = 0
        self.watch = None  # --until-decided's groups, and how its loop ended (the run ends on it)
        self.ended = None
        from jitterlab.execution.timings import Timings

        self.timings = Timings(args.timings)  # where the wall time goes (nothing unless --timings)

    def open(self) -> None:
        """The store and the targets. A campaign to resume is locked before any target is opened (a
        second --resume stops at once); a new one is created once the targets are ready (a refused
        start leaves nothing behind)."""
        from jitterlab.cli.progress import RunProgress
        from jitterlab.execution.preflight import open_targets
        from jitterlab.execution.runner import Runner, start_warming
        from jitterlab.store import store_exists
        from jitterlab.store.catalog import Store

        args = self.args
        if args.resume and store_exists(args.results):
            self.store = Store(args.results)
            Runner(self.campaign, self.store, resume=True).resumed_campaign()
        warming = start_warming(self.campaign.cells)  # beside the targets' preflight, not after it
        with self.timings.phase("preflight (open targets)"):
            self.sessions = open_targets(self.campaign)
        self.store = self.store or Store(args.results)
        self.display = RunProgress(self.out)
        self.runner = Runner(self.campaign, self.store, resume=args.resume, retry_failed=args.retry_failed,
                             retry_damaged=args.retry_damaged, progress=self.display,
                             notice=self.display.notice, timings=self.timings, warming=warming)
        self.campaign_id = self.runner.campaign_id()
        self.todo, self.skipped = self.runner.pending(self.campaign_id)

    def announce(self) -> None:
        """How many runs, how long, on how many targets; then each target's warnings."""
        from jitterlab.execution.runner import estimate_s
        from jitterlab.model.units import format_duration_s

        out, total_s = self.out, estimate_s(self.campaign, self.todo)
        out.print(
            f"[bold]{escape(self.campaign.name)}[/]: {counted(len(self.todo), 'run')} to measure"
            + (f", {self.skipped} already committed" if self.skipped else "")
            + f", about {format_duration_s(total_s)} on {counted(len(self.sessions), 'target')}"
        )
        for session in self.sessions:
            for w in session.warnings:
                out.print(f"[yellow]warning[/] ({escape(session.spec.name)}): "
                          f"{escape(w.message)} — {escape(w.remedy)}")

    def measure(self, watch):
        """Every pending run, under the progress display; then repetitions until decided."""
        from jitterlab.cli.until_decided import run_until_decided
        from jitterlab.execution.runner import estimate_s

        per_target = {s.spec.name: [x for x in self.todo if x[0].target == s.spec.name]
                      for s in self.sessions}
        self.watch = watch
        with self.display:
            self.display.plan({name: (len(runs), estimate_s(self.campaign, runs))
                               for name, runs in per_target.items()})
            outcome = self.runner.execute(self.sessions, self.campaign_id)
            if watch is not None and not outcome.interrupted:
                self.ended = run_until_decided(watch, self.campaign, self.store, self.sessions,
                                               self.campaign_id, self.display, self.args)
                outcome.done += self.ended.extra_runs
                outcome.interrupted = self.ended.reason == "interrupted"
        return outcome

    def end(self, outcome) -> int:
        """The cells' tables, what failed, the summary screen, what --until-decided decided (the run
        ends on its answer), and the exit status."""
        from jitterlab.report.summaries import run_label
        from jitterlab.report.terminal import emulation_note, summary_tables

        out, args, store = self.out, self.args, self.store
        runs = store.runs(self.campaign_id)
        for table in summary_tables(runs, self.campaign.name, planned=self.campaign.cells):
            out.print(table)
        if note := emulation_note(runs, store):
            out.print(f"[yellow]note[/]: {escape(note)}")
        failed = [r for r in runs if r.status != "ok"]
        for r in failed[:10]:
            out.print(f"[red]{r.status}[/] {r.id} "
                      + escape(f"{r.target} {run_label(r)}: {r.error or ''}"))
        if len(failed) > 10:
            out.print(escape(f"... and {len(failed) - 10} more (jitterlab show --runs --results "
                             f"{shlex.quote(shown_spec(args.results))})"))
        if any(r.status in ("failed", "timeout") for r in failed) and not outcome.interrupted:
            again = f"measure the failed runs again: {_again(args)} --retry-failed"
            out.print(escape(again), highlight=False)
        answered = (self.watch.baseline, self.watch.candidate) if self.ended is not None else None
        _end(out, store, self.campaign, self.campaign_id, runs, args, answered)
        if self.ended is not None:
            from jitterlab.cli.until_decided import answer

            out.print()
            for part in answer(self.ended, self.watch, args, interrupted=outcome.interrupted):
                out.print(part)  # in a terminal, folded between words: never inside a command
        if outcome.interrupted:
            out.print(
                f"[yellow]interrupted[/]: {counted(outcome.done, 'run')} committed this time; continue with "
                + escape(_go_on(args))
            )
            return EXIT_INTERRUPTED
        return EXIT_FAILED if failed else EXIT_OK

    def close(self) -> None:
        for session in self.sessions:
            session.target.close()
        if self.store is not None:
            self.store.close()


def _again(args: argparse.Namespace) -> str:
    """The command that goes on with this campaign: the same file, store and labels, --resume."""
    from jitterlab.cli.again import resume_run

    return resume_run(str(args.campaign), args.results, args.label, tunings=args.tuning)


def _end(out: Console, store, campaign, campaign_id: int, runs: list, args: argparse.Namespace,
         answered: tuple | None = None) -> None:
    """The end of a run: the warnings of its runs and cells grouped by cause (the target's own were
    printed before the first run), where the results are, then the summary screen (without the
    comparison --until-decided `answered`: the run ends on that)."""
    from jitterlab.cli.commands.summary import print_screen
    from jitterlab.report.summary_screen import run_warnings

    for part in run_warnings(runs, store.warnings(campaign_id)):
        out.print(part)
    out.print(escape(f"results: {store.where} (raw series in {store.raw_dir}/)"), highlight=False)
    if not runs:  # interrupted before the first commit: nothing to summarize
        return
    out.print()
    for part in print_screen(store, campaign.name, shown_spec(args.results), answered=answered):
        out.print(part)  # in a terminal, folded between words: never inside a command


def _go_on(args: argparse.Namespace) -> str:
    """The command that goes on with an interrupted run: the same labels (--resume finds the campaign
    by them), and the same --until-decided loop when one was asked for."""
    from jitterlab.cli.until_decided import resume_command

    if args.until_decided is not None:
        return resume_command(args)
    return _again(args)


def _with_labels(campaign, pairs: list[str]):
    """The campaign with --label KEY=VALUE pairs set (they take part in the resume fingerprint)."""
    import dataclasses

    from jitterlab.campaign.file import check_label_key
    from jitterlab.model.labels import label_pair

    labels = dict(campaign.labels)
    for pair in pairs:
        key, value = label_pair(pair)
        check_label_key(key, campaign.cells, f"--label {shown(pair)}")
        labels[key] = value
    return dataclasses.replace(campaign, labels=labels) if pairs else campaign


def _run_images(out: Console, campaign, boards, args: argparse.Namespace, watch=None) -> int:
    """Each image on every board in turn (farm.py), one campaign per image value; with --until-decided,
    rounds that boot the two images again until decided, ending on the loop's answer."""
    from jitterlab.cli.until_decided import answer, asked_text
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

        def why(asked) -> None:
            notice(asked.extras[0].cell.target, asked_text(asked, watch))

        with sigterm_as_interrupt():
            images = run_images(campaign, store, boards, notice, progress, watch=watch, resume=args.resume,
                                why=why)
        failed = again = 0  # runs not ok; of them, those a new run may measure (not unmeasurable)
        measured = []  # the images with runs to compare
        for value, campaign_id in images.ids.items():
            runs = store.runs(campaign_id)
            failed += sum(r.status != "ok" for r in runs)
            again += sum(r.status in ("failed", "timeout") for r in runs)
            measured += [value] if any(r.status == "ok" for r in runs) else []
            for table in summary_tables(runs, f"{campaign.name} {boards[0][1].label}={value}"):
                out.print(table)
        out.print(escape(f"results: {store.where}"), highlight=False)
        ended = images.ended
        interrupted = (bool(images.done) and images.done[-1][2].interrupted) or (
            ended is not None and ended.reason == "interrupted")
        for hint in image_hints(args, boards, measured, again > 0 and not interrupted, ended is None):
            out.print(escape(hint), highlight=False)
        if ended is not None:
            out.print()
            for part in answer(ended, watch, args, interrupted=interrupted):
                out.print(part)
        if interrupted:
            return EXIT_INTERRUPTED
        return EXIT_FAILED if failed else EXIT_OK
    finally:
        store.close()


def image_hints(args: argparse.Namespace, boards, measured: list[str], failed: bool,
                compare: bool = True) -> list[str]:
    """What to do after an image campaign, as commands that run as printed: compare the first image
    `measured` (with ok runs) with each other one (nothing to compare with one image; not after
    --until-decided, which ends on its comparison), and, when runs failed, measure again the only way
    an image campaign is (afresh: it refuses --resume)."""
    from jitterlab.cli.again import command, label_options

    label = boards[0][1].label
    results = ("--results", shown_spec(args.results))
    hints = ["compare the images: " + command("compare", *results, "--baseline", f"{label}={first}",
                                              "--candidate", f"{label}={other}")
             for first in measured[:1] for other in measured[1:] if compare]
    if failed:
        again = command("run", str(args.campaign), *results, *label_options(args.label))
        hints.append(f"measure the failed runs again: {again} (an image campaign measures every image "
                     "afresh; --resume is refused)")
    return hints


DRY_RUN_ROWS = 200  # cells listed by --dry-run; the rest are counted


def _durations(campaign) -> str:
    """A run's duration, or the range of them when tables set their own ("1 s to 3 s")."""
    shortest, longest = campaign.duration_range_ns
    return duration(shortest) if shortest == longest else f"{duration(shortest)} to {duration(longest)}"


def _dry_run(out: Console, campaign) -> int:
    from jitterlab import plugins
    from jitterlab.campaign.cells import names
    from jitterlab.model.units import format_duration_s

    table = Table(
        title=f"{escape(campaign.name)}: {counted(len(campaign.cells), 'cell')} x "
        f"{counted(campaign.repetitions, 'repetition')} of {_durations(campaign)}"
    )
    reps = campaign.repetitions  # a person plans per cell: its runs' time, and one run's
    for name in ("target", "benchmark", "cell", "load", "per run", f"per cell ({counted(reps, 'run')})"):
        table.add_column(name, justify="right" if name.startswith("per ") else "left")
    per_cell_s = 0.0
    naming = names().among(campaign.cells)
    for i, c in enumerate(campaign.cells):
        bench: plugins.Scheduling = plugins.BENCHMARKS.get(c.benchmark, "matrix.benchmark")
        seconds = bench.estimate_s(campaign.settings_for(c), c)
        per_cell_s += seconds
        if i < DRY_RUN_ROWS:  # named as everywhere: defaults left out unless they tell cells apart
            table.add_row(c.target, c.benchmark, naming.params_text(c), c.load, format_duration_s(seconds),
                          format_duration_s(seconds * reps))
    out.print(table)
    if len(campaign.cells) > DRY_RUN_ROWS:
        out.print(f"... and {counted(len(campaign.cells) - DRY_RUN_ROWS, 'more cell')}")
    for line in campaign.pairing:
        out.print(escape(line), highlight=False)
    for line in _tunings_checked(campaign, naming):  # and the traced cells of the targets it opens
        out.print(escape(line), highlight=False)
    total_s = per_cell_s * campaign.repetitions  # counted, not listed: a matrix may be large
    out.print(
        f"{counted(len(campaign.cells) * campaign.repetitions, 'run')}, estimated "
        f"{format_duration_s(total_s)} "
        "(plus building the programs once per target)"
    )
    return EXIT_OK


def _tunings_checked(campaign, naming) -> list[str]:
    """Where the matrix has tunings, each target asked whether it can apply them to its cells (a
    check changes nothing): the cells they cannot be applied to, with the reason, as `run` would
    store them; and the traced cells whose target cannot trace (each target opened once for both)."""
    from jitterlab.execution import traced
    from jitterlab.execution.preflight import open_targets
    from jitterlab.measure.squarewave.cell import traced as is_traced
    from jitterlab.model.records import NO_TUNING

    tuned = {c.target for c in campaign.cells if c.tuning != NO_TUNING}
    untraced = traced.untraceable(campaign, skip=frozenset(tuned))  # the targets not opened below
    if not tuned:
        return untraced
    import dataclasses

    sessions = open_targets(dataclasses.replace(campaign, targets=tuple(
        t for t in campaign.targets if t.name in tuned)))
    lines = untraced
    try:
        for session in sessions:
            name = session.spec.name
            if session.lost is not None:
                lines.append(f"target {name}: its tunings could not be checked: {session.lost}")
                continue
            # preflight asked it whether it can trace (the reason `run` stores for its traced cells)
            lines += [f"{name} {c.benchmark} {naming.params_text(c)} {c.load}: unavailable, "
                      f"{session.unavailable[c.key]}" for c in campaign.cells
                      if c.target == name and is_traced(c) and c.tuning == NO_TUNING
                      and c.key in session.unavailable]
            mine = [c for c in campaign.cells if c.target == name and c.tuning != NO_TUNING]
            refused = [c for c in mine if c.key in session.unavailable]
            lines += [f"unavailable: {name} {c.benchmark} {naming.params_text(c)} {c.load}: "
                      f"{session.unavailable[c.key]}" for c in refused]
            tunings = sorted({c.tuning for c in mine if c.key not in session.unavailable})
            if tunings:
                lines.append(f"target {name}: tuning {', '.join(tunings)} can be applied to "
                             f"{counted(len(mine) - len(refused), 'cell')} (checked on the target)")
    finally:
        for session in sessions:
            session.target.close()
    return lines
