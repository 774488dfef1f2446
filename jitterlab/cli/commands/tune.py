"""`jitterlab tune CAMPAIGN`: ask the machine which remedies help. The campaign is measured (or
resumed) as it is; the cells that break its envelope (a run whose worst period is off by the
strictest threshold or more; every cell when none does, said so) are measured under each tuning
that applies to what limits them (the limits of the summary screen; --tuning names others), one
at a time against themselves under none, each until decided or bounded (execution/tune.py); then
the tunings that made cells better and none worse, applied together. It ends on one table:
tuning, the cells it made better (by how much, with the interval), worse, same, undecided, and
what it costs. Each run puts its tuning back: nothing stays applied."""

from __future__ import annotations

import argparse

from rich.markup import escape
from rich.table import Table

from jitterlab.cli.exits import EXIT_INTERRUPTED, EXIT_OK
from jitterlab.cli.options import _extra_runs, add_results
from jitterlab.cli.paths import path_arg

MAX_CELLS_NAMED = 3  # better or worse cells named per tuning in the table; the rest counted


def add_parser(sub) -> argparse.ArgumentParser:
    tune = sub.add_parser(
        "tune",
        help="try the tunings that apply to what limits a campaign, each decided against none",
        description="Measure the campaign, then the cells that break its envelope under each tuning "
        "that applies to what limits them (IRQs moved off the program's CPUs, deep C-states held "
        "off, RT throttling lifted, ...), one at a time against the same cells under none, each "
        "until decided (as run --until-decided), then the ones that helped together. Ends on one "
        "table: tuning, cells better (by how much), worse, same, undecided, and its cost. Nothing "
        "stays applied afterwards.",
    )
    tune.add_argument("campaign", type=path_arg, metavar="CAMPAIGN", help="campaign file (TOML)")
    add_results(tune)
    tune.add_argument("--tuning", metavar="NAME[,NAME...]",
                      help="try these tunings instead of those the campaign's limits call for "
                      "(jitterlab list tunings)")
    tune.add_argument("--max-runs", type=_extra_runs, metavar="N",
                      help="at most N extra runs per tuning tried (default: 10 per cell)")
    return tune


def run(args: argparse.Namespace) -> int:
    from jitterlab.campaign.cells import names
    from jitterlab.campaign.file import load_campaign, with_tunings
    from jitterlab.cli.progress import RunProgress
    from jitterlab.execution.preflight import open_targets
    from jitterlab.execution.runner import Runner
    from jitterlab.execution.tune import plan_of, try_tuning
    from jitterlab.model.records import NO_TUNING
    from jitterlab.report.terminal import console
    from jitterlab.store.catalog import Store

    out = console()
    campaign = with_tunings(load_campaign(args.campaign), NO_TUNING)  # the campaign as it is, untuned
    asked = _asked(args.tuning)

    def notice(target: str, message: str) -> None:
        out.print(escape(f"{target + ': ' if target else ''}{message}"), highlight=False)

    # a bar per target with its ETA while runs are measured (transient: the table ends the screen)
    display = RunProgress(out)
    store = Store(args.results)
    sessions: list = []
    tried: list = []
    try:
        runner = Runner(campaign, store, resume=True, notice=notice, progress=display)
        runner.resumed_campaign()
        sessions = open_targets(campaign)
        campaign_id = runner.campaign_id()
        out.print(escape(f"{campaign.name}: measuring its cells as they are (committed runs are kept)"))
        with display:
            display.plan(plan_of(campaign, runner.pending(campaign_id)[0], sessions))
            if runner.execute(sessions, campaign_id).interrupted:
                return EXIT_INTERRUPTED
            runs = store.runs(campaign_id)
            cells, why = _cells_to_tune(campaign, runs)
            notice("", why)
            tunings = asked or _called_for(runs, store)
            if not tunings:
                notice("", "no limit of this machine calls for a tuning; name some with --tuning")
                return EXIT_OK
            measuring = dict(names=names(), max_runs=args.max_runs, notice=notice, progress=display,
                             planned=display.plan)
            for tuning in tunings:
                notice("", f"trying {tuning} on {len(cells)} cell(s) against none")
                tried.append(try_tuning(campaign, store, sessions, cells, tuning, **measuring))
            best = [t.tuning for t in tried if t.helps]
            if len(best) > 1:
                together = "+".join(best)
                notice("", f"trying {together} (each made cells better and none worse) together")
                tried.append(try_tuning(campaign, store, sessions, cells, together, **measuring))
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    finally:
        for session in sessions:
            session.target.close()
        store.close()
    for t in tried:  # above the table, which ends the screen
        for why in [*dict.fromkeys(t.refused.values()), *([t.problem] if t.problem else [])]:
            notice("", f"{t.tuning}: {why}")
    out.print(_table(tried))
    return EXIT_OK


def _asked(text: str | None) -> list[str]:
    """--tuning's names, each checked (closest name when unknown); [] when not given."""
    from jitterlab.campaign.matrix import check_tuning
    from jitterlab.model.errors import UserError, shown

    if text is None:
        return []
    names = [n.strip() for n in text.split(",")]
    if not all(names) or "none" in names:
        raise UserError(f"--tuning {shown(text)}: name the tunings to try, separated by commas, e.g. "
                        "--tuning irq-away,cpu-dma-latency (none is what each is compared with)")
    for name in names:
        check_tuning(name, f"--tuning {shown(text)}")
    return list(dict.fromkeys(names))


def _cells_to_tune(campaign, runs) -> tuple[list, str]:
    """The cells whose runs break the envelope at its strictest threshold; every cell when none
    does (or no cell has an envelope), and the sentence that says which."""
    from jitterlab.analysis.envelope import DEFAULT_THRESHOLDS
    from jitterlab.report.format import percent
    from jitterlab.report.traits import own, periodic

    threshold = min(DEFAULT_THRESHOLDS)
    breaking = {r.cell for r in periodic(runs) if r.status == "ok"
                and (v := own(r, "max_rel_period_error")) is not None and v >= threshold}
    cells = [c for c in campaign.cells if c in breaking]
    if cells:
        return cells, (f"{len(cells)} of {len(campaign.cells)} cell(s) break the envelope (a period "
                       f"off by {percent(threshold)} or more): the tunings are tried on them")
    return list(campaign.cells), (f"no cell breaks the envelope (no period off by {percent(threshold)} or "
                                  "more, or no cell has one): the tunings are tried on every cell")


def _called_for(runs, store) -> list[str]:
    """The tunings that apply to what limits these runs here: each limit's own (RT throttling,
    no isolated CPU, the governor), IRQs moved away where no CPU is isolated, deep C-states held
    off where the CPUs have them."""
    from jitterlab.report import limits

    found = limits.limits(runs, store.sysinfo)
    out = [x.tuning for x in found if x.tuning]
    if "isolated" in out:
        out.insert(out.index("isolated"), "irq-away")
    infos = limits.sysinfo_by_target(runs, store.sysinfo).values()
    if any(s.name not in (None, "POLL") and not s.disabled for i in infos for s in i.cpuidle_states or ()):
        out.append("cpu-dma-latency")
    return list(dict.fromkeys(out))


def _table(tried) -> Table:
    """One row per tuning tried: the cells it made better, worse and left undecided (how many, the
    first few with their change and interval), same (how many), and what it costs."""
    table = Table(title="tunings tried, each against the same cells under none")
    table.add_column("tuning", no_wrap=True)  # a name the reader types: never cut
    for head in ("better", "worse", "same", "undecided", "cost"):
        table.add_column(head)
    for t in tried:
        if t.ended is None:  # refused on every cell, or nothing to compare: said below the table
            table.add_row(escape(t.tuning), "—", "—", "—", "—", escape(t.cost or "—"))
            continue

        undecided = _named(t, "undecided")
        if t.refused:
            undecided += f" ({len(t.refused)} refused)"
        table.add_row(escape(t.tuning), escape(_named(t, "better")), escape(_named(t, "worse")),
                      str(t.count("same")), undecided, escape(t.cost or "—"))
    return table


def _named(tried, verdict: str) -> str:
    """How many cells got the verdict, and the first few with the row that says it and its change."""
    from jitterlab.analysis.groups import cell_text
    from jitterlab.report.comparison import change_text

    mine = [c for c in tried.cells if c.verdict == verdict]
    shown = [f"{cell_text(tried.ended.comparison, c.row)}: {c.row.metric} {change_text(c.row)}"
             for c in mine[:MAX_CELLS_NAMED]]
    more = [f"and {len(mine) - MAX_CELLS_NAMED} more"] if len(mine) > MAX_CELLS_NAMED else []
    return f"{len(mine)}: {'; '.join([*shown, *more])}" if mine else "0"
