"""`run --until-decided`: the options read, the loop of execution/until_decided.py started after the
campaign's runs, and what it says: why each extra run is made, and why it stopped."""

from __future__ import annotations

import argparse
import functools
import math

from rich.console import Console
from rich.markup import escape

from jitterlab.model.errors import UserError

MAX_TIME = "1h"  # --max-time's default


def watch_of(args: argparse.Namespace, campaign):
    """The Watch the options ask for (None without --until-decided); refused before measuring."""
    from jitterlab.campaign.cells import names
    from jitterlab.execution.until_decided import Watch, check_measured_here
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
    return watch


def run_until_decided(out: Console, watch, campaign, store, sessions, campaign_id: int, display, args):
    """The loop, its log and its end; returns the loop's Ended."""
    from jitterlab.campaign.cells import names
    from jitterlab.execution.runner import Runner
    from jitterlab.execution.until_decided import UnknownWatch, until_decided

    def why(extra) -> None:
        # the notice escapes what it prints
        display.notice(extra.cell.target, f"extra run {_cell(extra.cell)} #{extra.repetition + 1}: "
                                          f"{_row_text(extra.row)}")

    runner = functools.partial(Runner, progress=display, notice=display.notice)
    try:
        ended = until_decided(campaign, store, sessions, campaign_id, watch, names=names(), why=why,
                              runner=runner, planned=display.plan)
    except UnknownWatch as exc:  # a name --watch took for a metric, which the measured runs lack
        go_on = f"go on with {_resume(args)} --watch METRIC"
        raise UserError(f"{exc}; the campaign's runs are stored: {go_on}") from None
    out.print(escape(end_text(ended, watch, campaign, args)), highlight=False)
    return ended


def _cell(cell) -> str:
    from jitterlab.campaign.cells import names

    return " ".join(p for p in (cell.benchmark, names().params_text(cell), cell.load) if p)


def _row_text(row) -> str:
    """"fake_value undecided: +3.1 % [-12 % – +21 %], 3 vs 3 runs" (or why there is no CI yet)."""
    from jitterlab.analysis.compare import MIN_RUNS
    from jitterlab.report.format import change

    metric = f"{row.metric} ({row.probe})" if row.probe else row.metric
    runs = f"{row.n_baseline} vs {row.n_candidate} runs"
    if math.isfinite(row.ci_low) and math.isfinite(row.ci_high):
        ci = f"[{change(row.ci_low)} – {change(row.ci_high)}]"
        return f"{metric} {row.verdict}: {change(row.ratio)} {ci}, {runs}"
    return f"{metric} {row.verdict}: no CI yet ({runs}; {MIN_RUNS} per group needed)"


def end_text(ended, watch, campaign, args) -> str:
    from jitterlab.model.units import format_duration_s

    where = f"--until-decided {watch.baseline}..{watch.candidate}"
    counts: dict[str, int] = {}
    for r in ended.rows:
        counts[r.verdict] = counts.get(r.verdict, 0) + 1
    verdicts = ", ".join(f"{n} {v}" for v, n in sorted(counts.items())) or "no watched row"
    done = f"{_n(ended.extra_runs, 'extra run')} in {_n(ended.rounds, 'round')}"
    resume = _resume(args)
    if ended.reason == "decided":
        return f"{where}: every watched verdict is decided after {done} ({verdicts})"
    left = f"{_n(len(ended.undecided), 'verdict')} still undecided ({verdicts})"
    if ended.reason == "max-runs":
        return (f"{where}: stopped after {done}: {left}; the next round ({ended.next_round_runs} runs) would "
                f"pass --max-runs {ended.max_runs} ({_n(ended.extra_so_far, 'extra run')} so far); raise it: "
                f"{resume} --max-runs N")
    if ended.reason == "max-time":
        return (f"{where}: stopped after {done}: {left}; the next round (about "
                f"{format_duration_s(ended.next_round_s)}) would pass --max-time "
                f"{args.max_time or MAX_TIME}; go on: {resume}")
    if ended.reason == "interrupted":
        return f"{where}: interrupted after {done}; go on: {resume}"
    return (f"{where}: {left}; more runs here cannot decide them: the other group has fewer than 3 runs "
            "and is not measured by this campaign; measure it again with more repetitions")


def _resume(args) -> str:
    """The command that goes on with this campaign's --until-decided."""
    from jitterlab.store import shown_spec

    return (f"jitterlab run {args.campaign} --results {shown_spec(args.results)} --resume --until-decided "
            f"{args.until_decided}")


def _n(count: int, what: str) -> str:
    return f"{count} {what}{'' if count == 1 else 's'}"
