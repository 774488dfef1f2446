"""`jitterlab summary`: one screen per campaign that answers what holds here, what a comparison
decided, and what limits the machine put on it (the screen `run` ends with)."""

from __future__ import annotations

import argparse
import shlex
from collections.abc import Mapping

from jitterlab.cli.exits import EXIT_OK
from jitterlab.cli.options import add_results
from jitterlab.cli.paths import name_arg
from jitterlab.model.campaigns import CampaignEntry
from jitterlab.model.errors import UserError
from jitterlab.model.records import NO_TUNING
from jitterlab.store import shown_spec


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "summary", help="one screen: what holds here, what a comparison decided, what limits the machine",
        description="One screen per campaign: per impl and load the shortest period it holds at the "
        "campaign's envelope rules, with the evidence (bare metal, VM or emulated; the probe "
        "independent or self; its blind share); for a comparison (a label with two values, or "
        "--baseline/--candidate) the decided verdicts first, then how many are undecided and what "
        "would decide them; then the machine's own problems (RT throttling, no isolated CPU, a VM), "
        "each with its fix and what it would likely change. `run` ends with this screen.",
        epilog="example: jitterlab summary --results results --campaign quickstart")
    add_results(p)
    p.add_argument("--campaign", type=name_arg, metavar="NAME",
                   help="campaign name: its latest run of each label set (default: the latest campaign)")
    p.add_argument("--baseline", metavar="KEY=VALUE", help="with --candidate: the reference group")
    p.add_argument("--candidate", metavar="KEY=VALUE", help="with --baseline: the group judged")
    return p


def run(args: argparse.Namespace) -> int:
    from jitterlab.analysis.compare import Selector
    from jitterlab.report.terminal import console
    from jitterlab.store.catalog import Store

    if (args.baseline is None) != (args.candidate is None):
        raise UserError("--baseline and --candidate: give both (e.g. --baseline image=1.10 "
                        "--candidate image=1.11), or neither to compare the campaign's label values")
    pair = None
    if args.baseline is not None:
        pair = (Selector.parse(args.baseline, "--baseline"), Selector.parse(args.candidate, "--candidate"))
    store = Store(args.results, create=False)
    try:
        latest = store.latest_campaign(args.campaign)
        if latest is None:
            known = ", ".join(sorted({c.name for c in store.campaigns()})) or "none"
            what = f"--campaign {args.campaign!r}: not" if args.campaign else "no campaign"
            raise UserError(f"{what} in {store.where}; campaigns there: {known}")
        out = console()
        for part in print_screen(store, latest.name, shown_spec(args.results), pair):
            out.print(part)  # in a terminal, folded between words: never inside a command
    finally:
        store.close()
    return EXIT_OK


def print_screen(store, name: str, results: str, pair=None, answered=None) -> list:
    """The screen of campaign `name` (its latest run of each label set) as renderables; shared
    with `run`, which ends with it (and with what its --until-decided loop decided of the pair
    `answered`, left out of the screen)."""
    from jitterlab import plugins
    from jitterlab.analysis.groups import label_pairs
    from jitterlab.analysis.samples import reader
    from jitterlab.report.causes import Explanations
    from jitterlab.report.limits import measure_of
    from jitterlab.report.selection import select
    from jitterlab.report.summary_screen import Screen, screen

    shown = select(store, [name])
    runs = shown.runs
    if not runs:
        raise UserError(f"campaign {name!r} in {store.where} has no runs yet; jitterlab run measures it")
    pairs = [pair] if pair else label_pairs(runs)
    if answered is not None:
        pairs = [p for p in pairs if (str(p[0]), str(p[1])) != (str(answered[0]), str(answered[1]))]
    how = Screen(results, store.sysinfo, pairs, samples=reader(store.read_series, plugins.traits),
                 explanations=Explanations(store.root))
    found = store.latest_campaign(name)
    if found is not None and found.imported:  # captures: more are imported
        how.more_runs = ("import more captures where undecided, into each group of {pair} (the same "
                         "--period and --label values)")
    elif found is not None and found.source_path:
        how.more_runs = more_runs(found.source_path, results, pairs, shown.campaigns, runs)
        how.measure = measure_of(found, runs, store.sysinfo, results)
    return screen(runs, name, how)


def more_runs(path: str, results: str, pairs: list, campaigns: list[CampaignEntry], runs: list) -> str:
    """The command that adds repetitions where a comparison is undecided, as it runs: `--resume`
    goes on with the campaign measured with the same labels, and the campaign file measures one
    group, so the command names the labels of the group to measure: the one with fewer runs (its
    loop adds to it), of two alike the one measured last, else the candidate: --label image=B;
    `{pair}` is left for each comparison's BASELINE..CANDIDATE."""
    latest = campaigns[-1].labels
    wanted: list[Mapping[str, str]] = []
    for baseline, candidate in pairs:
        last = baseline if latest.get(baseline.key) == baseline.value else candidate
        ok = {s: sum(r.status == "ok" and s.matches(r) for r in runs) for s in (baseline, candidate)}
        side = min((last, candidate if last is baseline else baseline), key=lambda s: ok[s])
        mine = [c.labels for c in campaigns if c.labels.get(side.key) == side.value]
        # a group told by the cells (impl=x..impl=y) is measured by the campaign measured last
        wanted.append(mine[-1] if mine else latest)
    # comparisons whose groups are measured with different labels each need their own command: the
    # screen has one for all of them, which names the first
    labels = wanted[0] if wanted else latest
    given = "".join(f" --label {shlex.quote(f'{k}={v}')}" for k, v in sorted(labels.items()))
    tunings = list(dict.fromkeys(r.cell.tuning for r in runs))
    if tunings != [NO_TUNING]:  # measured with --tuning, perhaps: the cells the runs have, again
        given += f" --tuning {shlex.quote(','.join(tunings))}"
    return (f"add repetitions where undecided: jitterlab run {shlex.quote(path)} --results "
            f"{shlex.quote(results)} --resume{given} --until-decided {{pair}}")
