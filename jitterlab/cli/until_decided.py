"""`run --until-decided`: the options read, the loop of execution/until_decided.py started after the
campaign's runs, and what it says: why each extra run is made, and why it stopped."""

from __future__ import annotations

import argparse
import functools

from rich.console import Console
from rich.markup import escape

from jitterlab.model.errors import UserError

MAX_TIME = "1h"  # --max-time's default


def watch_of(args: argparse.Namespace, campaign):
    """The Watch the options ask for (None without --until-decided); refused before measuring."""
    from jitterlab.campaign.cells import names
    from jitterlab.execution.until_decided import Watch, check_measured_here, check_watch_producible
    from jitterlab.model.units import parse_duration_ns

    bounds = (("--watch", args.watch), ("--max-runs", args.max_runs), ("--max-time", args.max_time))
    given = [f for f, v in bounds if v is not None]
    if args.until_decided is None:
        if given:
            raise UserError(f"{given[0]}: only with --until-decided BASELINE..CANDIDATE")
        return None
    if args.max_runs is not None and args.max_runs < 0:
        raise UserError(f"--max-runs {args.max_runs}: give 0 or more extra runs")
    max_time = MAX_TIME if args.max_time is None else args.max_time  # an empty one is refused, not 1 h
    watch = Watch.parse(args.until_decided, metrics=tuple(args.watch or ()), max_runs=args.max_runs,
                        max_time_s=parse_duration_ns(max_time, "--max-time") / 1e9)
    check_measured_here(watch, campaign, names())
    check_watch_producible(watch, campaign)
    return watch


def run_until_decided(out: Console, watch, campaign, store, sessions, campaign_id: int, display, args):
    """The loop, its log and its end; returns the loop's Ended."""
    from jitterlab.campaign.cells import names
    from jitterlab.execution.runner import Runner
    from jitterlab.execution.until_decided import UnknownWatch, until_decided

    def why(asked) -> None:
        # one notice per compared cell and round (the notice escapes what it prints)
        display.notice(asked.extras[0].cell.target, asked_text(asked, watch))

    runner = functools.partial(Runner, progress=display, notice=display.notice)
    try:
        ended = until_decided(campaign, store, sessions, campaign_id, watch, names=names(), why=why,
                              runner=runner, planned=display.plan)
    except UnknownWatch as exc:  # a name only the runs could tell: a load's reading, a metric they lack
        go_on = (f"go on with {resume_command(args, watch=False)} (each benchmark's headline metrics), "
                 "or add --watch with one of them")
        raise UserError(f"{exc}; the campaign's runs are stored: {go_on}") from None
    out.print(escape(end_text(ended, watch, campaign, args)), highlight=False)
    return ended


def asked_text(asked, watch) -> str:
    """"squarewave impl=c-fifo period=1ms idle, 3 vs 5 runs: the baseline target=standard gains run #4;
    p99_rel_period_error (vpin) undecided: +12.1 % [-8.4 % – +36.2 %]; max_rel_period_error (vpin)
    undecided: ...": the compared cell once, which group gains a run, every watched row that asks."""
    first = asked.rows[0]
    gains = " and ".join(f"the {x.side} {getattr(watch, x.side)} gains run #{x.repetition + 1}"
                         for x in asked.extras)
    cell = " ".join(str(v) for v in first.cell if str(v))
    return f"{cell}, {first.runs} runs: {gains}; " + "; ".join(_row_text(r) for r in asked.rows)


def _row_text(row) -> str:
    """"fake_value undecided: +3.1 % [-12 % – +21 %]" (or why there is no interval yet)."""
    from jitterlab.analysis.compare import MIN_RUNS
    from jitterlab.report.comparison import change_text

    metric = f"{row.metric} ({row.probe})" if row.probe else row.metric
    if min(row.n_baseline, row.n_candidate) < MIN_RUNS:
        return f"{metric} {row.verdict}: no interval yet ({MIN_RUNS} runs per group needed)"
    return f"{metric} {row.verdict}: {change_text(row)}"


def end_text(ended, watch, campaign, args) -> str:
    from jitterlab.model.units import format_duration_s

    where = f"--until-decided {watch.baseline}..{watch.candidate}"
    from jitterlab.analysis.compare import VERDICTS
    from jitterlab.analysis.sequential import GUARANTEE

    counts = {v: sum(r.verdict == v for r in ended.rows) for v in VERDICTS}  # each watched row once
    verdicts = ", ".join(f"{n} {v}" for v, n in counts.items() if n) or "no watched row"
    done = f"{_n(ended.extra_runs, 'extra run')} in {_n(ended.rounds, 'round')}"
    resume = resume_command(args)
    if ended.reason == "decided":
        return f"{where}: every watched verdict is decided after {done} ({verdicts}; {GUARANTEE})"
    left = f"{_n(len(ended.undecided), 'verdict')} still undecided ({verdicts})"
    if ended.reason == "max-runs":
        # a bound that lets the loop go on as long again, and at least one more round
        raised = max(2 * ended.max_runs, ended.extra_so_far + ended.next_round_runs)
        return (f"{where}: stopped after {done}: {left}; the next round ({ended.next_round_runs} runs) would "
                f"pass --max-runs {ended.max_runs} ({_n(ended.extra_so_far, 'extra run')} so far); raise it: "
                f"{resume_command(args, '--max-runs', str(raised))}")
    if ended.reason == "max-time":
        return (f"{where}: stopped after {done}: {left}; the next round (about "
                f"{format_duration_s(ended.next_round_s)}) would pass --max-time "
                f"{args.max_time or MAX_TIME}; go on: {resume}")
    if ended.reason == "interrupted":
        return f"{where}: interrupted after {done}; go on: {resume}"
    return (f"{where}: {left}; more runs here cannot decide them: the other group has fewer than 3 runs "
            "and is not measured by this campaign; measure it again with more repetitions")


def resume_command(args, *bounds: str, watch: bool = True) -> str:
    """The command that goes on with this campaign's --until-decided: the labels it was run with
    (--resume finds the campaign by them), what it watches, and its bounds."""
    from jitterlab.cli.again import resume_run

    more = ["--until-decided", args.until_decided]
    if watch:
        more += [w for m in args.watch or () for w in ("--watch", m)]
    if args.max_time is not None:
        more += ["--max-time", args.max_time]
    if args.max_runs is not None and "--max-runs" not in bounds:
        more += ["--max-runs", str(args.max_runs)]
    return resume_run(str(args.campaign), args.results, args.label or (), *more, *bounds)


def _n(count: int, what: str) -> str:
    return f"{count} {what}{'' if count == 1 else 's'}"
