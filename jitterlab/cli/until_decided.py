"""`run --until-decided`: the options read, the loop of execution/until_decided.py started after the
campaign's runs, and what it says: why each extra run is made, and at the run's very end what was
decided (each watched row with its interval), why it stopped and the command that goes on."""

from __future__ import annotations

import argparse
import functools

from jitterlab.analysis.sequential import MIN_RUNS
from jitterlab.model.errors import UserError

MAX_TIME = "1h"  # --max-time's default


def watch_of(args: argparse.Namespace, campaign, images: tuple[str, list[str]] | None = None):
    """The Watch the options ask for (None without --until-decided); refused before measuring.
    `images`: an image campaign's label and values, the groups it can compare."""
    from jitterlab.campaign.cells import names
    from jitterlab.execution.image_rounds import check_image_groups
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
    if images is not None:
        check_image_groups(watch, *images)
    else:
        check_measured_here(watch, campaign, names())
    check_watch_producible(watch, campaign)
    return watch


def run_until_decided(watch, campaign, store, sessions, campaign_id: int, display, args):
    """The loop and its log; returns the loop's Ended (`answer` says how it ended)."""
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
    return ended


def answer(ended, watch, args, interrupted: bool = False) -> list:
    """What the loop decided, printed last: each watched row with its interval (the decided ones
    first), then why it stopped and the command that goes on (an interrupted run says that itself)."""
    from rich.text import Text

    from jitterlab.cli.again import command
    from jitterlab.report import verdicts
    from jitterlab.store import shown_spec

    out: list = []
    if ended.comparison is not None:
        every_row = command("compare", "--results", shown_spec(args.results), "--baseline",
                            str(watch.baseline), "--candidate", str(watch.candidate),
                            *[w for m in watch.metrics for w in ("--metric", m)])
        out += [Text(line) for line in verdicts.lines(verdicts.summarized(ended.comparison), "", every_row,
                                                       every=True)]
    if not interrupted:
        out.append(Text(end_text(ended, watch, args)))
    return out


def asked_text(asked, watch) -> str:
    """"squarewave impl=c-fifo period=1ms idle, 3 vs 5 runs: the baseline target=standard gains run #4;
    p99_rel_period_error (vpin) undecided: +12.1 % [-8.4 % – +36.2 %]; max_rel_period_error (vpin)
    undecided: ...": the compared cell once, which group gains a run, every watched row that asks."""
    first = asked.rows[0]
    gains = " and ".join(f"the {x.side} {getattr(watch, x.side)} gains run #{x.repetition + 1}"
                         for x in asked.extras)
    if asked.alone:  # the other group is another campaign's: it stays as it is
        side, n = asked.alone
        gains += f" (the {side} {getattr(watch, side)}, measured by another campaign, stays at {n})"
    values = [str(v) for v in first.cell if str(v)]
    if values[:1] == [asked.extras[0].cell.target]:  # the notice names its target already
        values = values[1:]
    cell = " ".join(values)
    return f"{cell}, {first.runs} runs: {gains}; " + "; ".join(_row_text(r) for r in asked.rows)


def _row_text(row) -> str:
    """"fake_value undecided: +3.1 % [-12 % – +21 %]" (or why there is no interval yet)."""
    from jitterlab.analysis.compare import MIN_RUNS
    from jitterlab.report.comparison import change_text

    metric = f"{row.metric} ({row.probe})" if row.probe else row.metric
    if min(row.n_baseline, row.n_candidate) < MIN_RUNS:
        return f"{metric} {row.verdict}: no interval yet ({MIN_RUNS} runs per group needed)"
    return f"{metric} {row.verdict}: {change_text(row)}"


def end_text(ended, watch, args) -> str:
    """Why the loop stopped, and the command that goes on: it runs as printed and adds runs where
    they can move a verdict (the group behind, when this command cannot measure it)."""
    from jitterlab.analysis.compare import VERDICTS
    from jitterlab.analysis.sequential import GUARANTEE
    from jitterlab.model.units import format_duration_s

    where = f"--until-decided {watch.baseline}..{watch.candidate}"
    counts = {v: sum(r.verdict == v for r in ended.rows) for v in VERDICTS}  # each watched row once
    verdicts = ", ".join(f"{n} {v}" for v, n in counts.items() if n) or "no watched row"
    done = f"{_n(ended.extra_runs, 'extra run')} in {_n(ended.rounds, 'round')}"
    if ended.reason == "decided":
        return f"{where}: every watched verdict is decided after {done} ({verdicts}; {GUARANTEE})"
    left = f"{_n(len(ended.undecided), 'verdict')} still undecided ({verdicts})"
    others = _others_text(ended, watch, args)
    if ended.reason == "max-runs":
        # a bound that lets the loop go on as long again, and at least one more round
        raised = max(2 * ended.max_runs, ended.extra_so_far + ended.next_round_runs)
        so_far = f"{ended.extra_so_far} so far"
        bound = (f"this run's default bound of {DEFAULT_PER_CELL} extra runs per cell ({ended.max_runs} in "
                 f"all, {so_far})" if ended.default_bound else f"--max-runs {ended.max_runs} ({so_far})")
        return (f"{where}: stopped after {done}: {left}; the next round ({ended.next_round_runs} runs) would "
                f"pass {bound}; raise it: "
                f"{resume_command(args, '--max-runs', str(raised))}{others}")
    if ended.reason == "max-time":
        return (f"{where}: stopped after {done}: {left}; the next round (about "
                f"{format_duration_s(ended.next_round_s)}) would pass --max-time "
                f"{args.max_time or MAX_TIME}; go on: {resume_command(args)}{others}")
    if ended.reason == "interrupted":
        return f"{where}: interrupted after {done}; go on: {resume_command(args)}"
    return f"{where}: stopped after {done}: {left}{others}"


DEFAULT_PER_CELL = 10  # execution.until_decided.DEFAULT_MAX_RUNS_PER_CELL, said in words


def _others_text(ended, watch, args) -> str:
    """"; the baseline image=A needs runs (3 vs 6 runs: ...) and this command measures only image=B:
    with the target as it was for image=A, go on with: jitterlab run ... --label image=A ...": for
    each group the undecided rows wait for, its runs and the command that measures it."""
    out = []
    for side, (labels, extra) in ended.others.items():
        waiting = [w for w in ended.waiting if w.side == side]
        group, here = getattr(watch, side), getattr(watch, "candidate" if side == "baseline" else "baseline")
        n_other, n_here = min(w.n_other for w in waiting), max(w.n_here for w in waiting)
        rows = sum(len(w.rows) for w in waiting)
        narrow = "its interval" if rows == 1 else "their intervals"
        why = (f"a verdict needs {MIN_RUNS} in each" if n_other < MIN_RUNS
               else f"more of {here} alone would hardly narrow {narrow}")
        # --max-runs counts that campaign's own extra runs: one it has used up already is raised
        bound = () if args.max_runs is None else (
            "--max-runs", str(args.max_runs if extra < args.max_runs else extra + max(args.max_runs, 1)))
        go_on = resume_command(args, labels=[f"{k}={v}" for k, v in sorted(labels.items())], bounds=bound)
        out.append(f"the {side} {group} needs runs ({_n(rows, 'row')} at {n_other} vs {n_here} runs: {why}) "
                   f"and this command measures only {here}: with the target as it was for {group}, go on "
                   f"with: {go_on}")
    return "".join(f"; {o}" for o in out)


def resume_command(args, *raised: str, watch: bool = True, labels: list[str] | None = None,
                   bounds: tuple[str, ...] | None = None) -> str:
    """The command that goes on with this campaign's --until-decided: the labels it was run with
    (--resume finds the campaign by them; `labels`: another campaign's), what it watches, and its
    bounds (`raised` replaces --max-runs; `bounds` replaces it for another campaign)."""
    from jitterlab.cli.again import resume_run

    more = ["--until-decided", args.until_decided]
    if watch:
        more += [w for m in args.watch or () for w in ("--watch", m)]
    if args.max_time is not None:
        more += ["--max-time", args.max_time]
    if bounds is not None:
        more += bounds
    elif args.max_runs is not None and "--max-runs" not in raised:
        more += ["--max-runs", str(args.max_runs)]
    return resume_run(str(args.campaign), args.results, args.label if labels is None else labels, *more,
                      *raised, tunings=args.tuning)


def _n(count: int, what: str) -> str:
    return f"{count} {what}{'' if count == 1 else 's'}"
