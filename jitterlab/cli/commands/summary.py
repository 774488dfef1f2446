"""`jitterlab summary`: one screen per campaign that answers what holds here, what a comparison
decided, and what limits the machine put on it (the screen `run` ends with)."""

from __future__ import annotations

import argparse
import functools

from jitterlab.cli.exits import EXIT_OK
from jitterlab.cli.options import add_results
from jitterlab.cli.paths import name_arg
from jitterlab.model.errors import UserError
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
    from rich.table import Table

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
            known = ", ".join(sorted({c["name"] for c in store.campaigns()})) or "none"
            what = f"--campaign {args.campaign!r}: not" if args.campaign else "no campaign"
            raise UserError(f"{what} in {store.where}; campaigns there: {known}")
        out = console()
        for part in print_screen(store, latest["name"], shown_spec(args.results), pair):
            out.print(part, soft_wrap=not isinstance(part, Table))  # a fix command is never split
    finally:
        store.close()
    return EXIT_OK


def print_screen(store, name: str, results: str, pair=None) -> list:
    """The screen of campaign `name` (its latest run of each label set) as renderables; shared
    with `run`, which ends with it."""
    import json

    from jitterlab import plugins
    from jitterlab.analysis.compare import label_pairs
    from jitterlab.analysis.samples import reader
    from jitterlab.importers.capture import FINGERPRINT
    from jitterlab.report.summary_screen import Screen, screen

    latest: dict[str, dict] = {}
    for c in store.campaigns():
        if c["name"] == name:
            latest[json.dumps(c["labels"], sort_keys=True)] = c  # campaigns() lists oldest first
    runs = [r for c in sorted(latest.values(), key=lambda c: c["id"]) for r in store.runs(c["id"])]
    if not runs:
        raise UserError(f"campaign {name!r} in {store.where} has no runs yet; jitterlab run measures it")
    how = Screen(results, store.sysinfo, [pair] if pair else label_pairs(runs),
                 samples=reader(store.read_series, plugins.traits))
    found = store.campaign(max(c["id"] for c in latest.values()))  # the one run --resume goes on with
    if found.get("fingerprint") == FINGERPRINT:  # captures, not a campaign file: more are imported
        how.more_runs = lambda b, c: (f"import more captures where undecided, into each group of {b}..{c} "
                                      "(the same --period and --label values)")
    elif found.get("source_path"):
        how.more_runs = functools.partial(_more_runs, found, [r for r in runs if r.campaign_id == found["id"]],
                                          results)
    return screen(runs, name, how)


def _more_runs(campaign: dict, mine: list, results: str, baseline, candidate) -> str | None:
    """`run --resume --until-decided`, as it runs when pasted: --resume goes on with the latest campaign
    of the name, found by the labels it was run with; None when that campaign measures neither group
    (no command adds runs to an earlier one)."""
    from jitterlab.campaign.cells import names
    from jitterlab.cli.again import labels_beyond_file, resume_run

    if not any(sel.matches(r, names()) for r in mine for sel in (baseline, candidate)):
        return None
    labels = labels_beyond_file(campaign["labels"], campaign.get("source") or "")
    go_on = resume_run(campaign["source_path"], results, labels, "--until-decided", f"{baseline}..{candidate}")
    return f"add repetitions where undecided: {go_on}"
