"""`jitterlab show`: the campaigns of a store (one line each), their runs (--runs), or one run in
detail; --campaign, --label and --since choose what is shown."""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path
from typing import TYPE_CHECKING

from rich.markup import escape

from jitterlab.cli.exits import EXIT_OK
from jitterlab.cli.options import add_results
from jitterlab.cli.paths import name_arg, run_id_arg
from jitterlab.cli.selection import RunFilter, label_arg, since_arg
from jitterlab.model.errors import UserError
from jitterlab.model.registry import did_you_mean
from jitterlab.report.campaign_list import MAX_JUDGED, CampaignLine, campaigns_table, headline
from jitterlab.report.format import counted
from jitterlab.report.terminal import console
from jitterlab.store import shown_spec

if TYPE_CHECKING:
    from jitterlab.report.limits import Measure


def add_parser(sub) -> argparse.ArgumentParser:
    show = sub.add_parser(
        "show",
        help="list the campaigns of a store (one line each), their runs, or one run in detail",
        description="Without RUN_ID: the campaigns of the store, one line each (the latest measurement of "
        "each label set, such as image=A and image=B): its runs, when it last ran, its headline metric and "
        "the verdict of its comparison where one was decided (judged as summary judges it, for the "
        f"{MAX_JUDGED} latest). --runs: every run instead, one line each, with the warnings (and the cells' "
        "tables when one campaign is shown). --campaign, --label and --since choose what is shown. "
        "With RUN_ID (a prefix is enough): every metric, when its worst period was, warning and the sysinfo.",
        epilog="examples: jitterlab show; jitterlab show --runs --campaign quickstart --label image=B; "
        "jitterlab show --since 7d; jitterlab show 3f9c1a",
    )
    show.add_argument("run_id", nargs="?", type=run_id_arg, metavar="RUN_ID",
                      help="run id or a unique prefix")
    add_results(show)
    show.add_argument("--campaign", action="append", type=name_arg, metavar="NAME",
                      help="only this campaign (its latest measurement of each label set); repeatable "
                      "(default: every campaign)")
    show.add_argument("--label", action="append", type=label_arg, metavar="KEY=VALUE",
                      help="only the runs with this label; repeatable (every one must match)")
    show.add_argument("--since", type=since_arg, metavar="DATE|AGO",
                      help='only the runs started since a date ("2026-12-01", "2026-12-01 14:00", local '
                      'time) or a time ago ("36h", "7d")')
    show.add_argument("--runs", action="store_true",
                      help="every run of what is chosen, one line each, instead of one line per campaign")
    return show


def run(args: argparse.Namespace) -> int:
    from jitterlab.store.catalog import Store

    out = console()  # piped: tables as plain rows, lines not wrapped; control characters escaped
    store = Store(args.results, create=False)
    try:
        if args.run_id:
            return _one_run(out, store, args)
        if not args.campaign and not store.campaigns():
            results = shlex.quote(shown_spec(args.results))
            raise UserError(f"{store.where}: no campaign here yet; measure one into it (jitterlab run "
                            f"CAMPAIGN --results {results}) or import a capture (jitterlab import edges FILE "
                            f"--period PERIOD --results {results})")
        chosen = RunFilter(tuple(args.label or ()), args.since)
        lines = _chosen(store, args.campaign, chosen)
        results = shlex.quote(shown_spec(args.results))
        measure = _measure(store, lines, shown_spec(args.results))
        if args.runs:
            _runs(out, store, lines, results, measure)
        else:
            _campaigns(out, store, lines, results, measure)
        return EXIT_OK
    finally:
        store.close()


def _one_run(out, store, args: argparse.Namespace) -> int:
    """`show RUN_ID`: every metric, when its worst moment was, its warnings and sysinfo."""
    from jitterlab.report.terminal import run_detail
    from jitterlab.report.why_late import why_late

    given = [o for o, v in (("--runs", args.runs), ("--label", args.label), ("--since", args.since)) if v]
    if given:
        raise UserError(f"RUN_ID {args.run_id} shows one run: leave out {', '.join(given)} (they choose "
                        "the runs the list shows)")
    matches = store.runs(run_id=args.run_id)
    if len(matches) != 1:
        raise UserError(f"RUN_ID {args.run_id!r}: " + (
            f"no such run in {store.where}" if not matches else f"matches {len(matches)} runs; give more "
            "characters"))
    one = matches[0]
    sysinfo = store.sysinfo(one.sysinfo_id) if one.sysinfo_id else None
    from jitterlab.report.causes import traced
    from jitterlab.report.limits import NO_MEASURE, measure_of

    # the campaign row is read only for a traced run's causes: a run shows without it otherwise
    measure = (measure_of(store.campaign(one.campaign_id), [one], store.sysinfo, shown_spec(args.results))
               if traced(one) else NO_MEASURE)
    moments = why_late(one, store, shown_spec(args.results), measure)
    for part in run_detail(one, store.warnings(one.campaign_id, one.id), sysinfo, moments):
        out.print(part)
    return EXIT_OK


def _chosen(store, names: list[str] | None, chosen: RunFilter) -> list[CampaignLine]:
    """Each campaign asked for (default: every one), the latest measurement of each label set, with the
    runs the filter keeps; UserError when none is left, naming what there is."""
    from jitterlab.report.selection import select

    known = list(dict.fromkeys(c.name for c in store.campaigns()))
    lines = []
    for name in dict.fromkeys(names or known):
        shown = select(store, [name])
        kept = [r for r in shown.runs if chosen.keeps(r)]
        if kept:
            lines.append(CampaignLine(name, kept, shown.replaced))
    if not lines:
        runs = [r for name in dict.fromkeys(names or known) for r in select(store, [name]).runs]
        there = sorted({f"{k}={v}" for r in runs for k, v in r.labels.items()})
        close = "".join(did_you_mean(f"{k}={v}", there) for k, v in chosen.labels[:1])
        raise UserError(f"{chosen.said()}: no run of {', '.join(names or known)} in {store.where} has it; "
                        f"{close}labels there: {', '.join(there) or 'none'}; runs from "
                        f"{_day(min(r.started_ns for r in runs))} to {_day(max(r.started_ns for r in runs))}")
    return sorted(lines, key=lambda line: line.last_ns)  # the latest last, where the eye lands


def _measure(store, lines: list[CampaignLine], results: str) -> Measure:
    """The command measuring a tuning on the campaign shown (report/limits.measure_of; `results`
    unquoted), none when several are shown or its file is not here."""
    from jitterlab.report.causes import traced
    from jitterlab.report.limits import NO_MEASURE, measure_of

    runs = [r for line in lines for r in line.runs]
    if not any(traced(r) for r in runs):  # no cause shown: the facts are not read
        return NO_MEASURE
    ids = {r.campaign_id for r in runs}
    return measure_of(store.campaign(ids.pop()) if len(ids) == 1 else None, runs, store.sysinfo, results)


def _campaigns(out, store, lines: list[CampaignLine], results: str, measure: Measure) -> None:
    """One line per campaign, then how to see more (`results`: --results as given, quoted; `measure`:
    the command measuring a cause's tuning)."""
    from jitterlab import plugins
    from jitterlab.analysis.samples import reader

    out.print(campaigns_table(lines, reader(store.read_series, plugins.traits)))
    if len(lines) == 1:  # one campaign: why its traced cells' periods were late, one line each
        from jitterlab.report.causes import Explanations
        from jitterlab.report.causes_view import traced_lines

        for line in traced_lines(lines[0].runs, Explanations(store.root), measure):
            out.print(escape(line), highlight=False)
    command = f"jitterlab show --results {results}"
    latest = lines[-1]
    more = [f"every run: {command} --runs --campaign {shlex.quote(latest.name)}"]
    if (worst := headline(latest.runs).worst) is not None and _typable(worst.id):
        more.append(f"its worst run by its headline, in detail: {command} {worst.id}")
    if len(lines) > MAX_JUDGED:
        oldest = shlex.quote(lines[0].name)
        more.append(f"the verdicts of the {len(lines) - MAX_JUDGED} campaigns not judged here, one at a "
                    f"time: jitterlab summary --results {results} --campaign {oldest}")
    earlier = sum(line.earlier for line in lines)
    if earlier:
        more.append(f"not shown: {counted(earlier, 'run')} of earlier measurements of the same labels "
                    "(measured again since; jitterlab export has every run)")
    for line in more:
        out.print(escape(line), highlight=False)


def _runs(out, store, lines: list[CampaignLine], results: str, measure: Measure) -> None:
    """Every run chosen, one line each; the cells' tables when one campaign is shown; the warnings."""
    from jitterlab.report.causes import Explanations
    from jitterlab.report.causes_view import traced_lines
    from jitterlab.report.terminal import emulation_note, runs_table, show_warnings, summary_tables

    runs = [r for line in lines for r in line.runs]
    out.print(runs_table(runs))
    if len(lines) == 1:
        latest = max(r.campaign_id for r in runs)
        for table in summary_tables(runs, lines[0].name, planned=_planned(store, latest)):
            out.print(table)
    else:
        out.print(escape(f"the cells' tables of one campaign: jitterlab show --results {results} --runs "
                         f"--campaign {shlex.quote(lines[-1].name)}"), highlight=False)
    for line in traced_lines(runs, Explanations(store.root), measure):
        out.print(escape(line), highlight=False)
    if note := emulation_note(runs, store):
        out.print(f"[yellow]note[/]: {escape(note)}")
    ids = {r.campaign_id for r in runs}
    stored = [w for cid in sorted(ids) for w in store.warnings(cid)]
    for part in show_warnings(runs, stored, ", ".join(line.name for line in lines)):
        out.print(part)
    earlier = sum(line.earlier for line in lines)
    if earlier:
        out.print(escape(f"not shown: {counted(earlier, 'run')} of earlier measurements of the same labels "
                         "(measured again since; jitterlab export has every run)"), highlight=False)


def _typable(run_id: str) -> bool:
    """Whether RUN_ID takes the id as printed (a store made by hand may hold any id)."""
    try:
        run_id_arg(run_id)
    except argparse.ArgumentTypeError:
        return False
    return True


def _day(ns: int) -> str:
    import datetime as dt

    return dt.datetime.fromtimestamp(ns / 1e9).strftime("%Y-%m-%d %H:%M")


def _planned(store, campaign_id: int) -> list | None:
    """The cells of the campaign's matrix, read from the file it was measured with (stored with it);
    None when there is none (an import) or it no longer reads (a key since renamed)."""
    import tomllib

    from jitterlab.campaign.file import parse_campaign

    found = store.campaign(campaign_id)
    if not found.source:
        return None
    try:
        return list(parse_campaign(tomllib.loads(found.source), Path(found.source_path), found.source).cells)
    except (UserError, tomllib.TOMLDecodeError, OSError, ValueError):
        return None
