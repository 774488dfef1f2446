"""`jitterlab explain RUN_ID [--period K]`: why a traced run's periods were late, each explained
period's lateness split into what its CPU did, with the fix of each cause and the commands that
open the run's kernel trace."""

from __future__ import annotations

import argparse
import shlex

from jitterlab.cli.exits import EXIT_OK
from jitterlab.cli.options import add_results
from jitterlab.cli.paths import run_id_arg
from jitterlab.model.errors import UserError
from jitterlab.model.registry import offered
from jitterlab.store import shown_spec

SHOWN = 10  # periods broken down without --period, the latest first


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "explain", help="why a traced run's periods were late: each one's lateness split into causes",
        description="For a run measured with a kernel trace (trace = \"sched\" in the campaign's [matrix]): "
        f"its explained periods, the {SHOWN} latest first (or the one --period names), each with its due "
        "time on the trace's clock, its lateness, and the parts it is made of, longest first: who ran "
        "instead of the program (command, pid, policy, priority), IRQ handlers (number, name), softirqs, "
        "the timer held off, idle exit, the program's own code, a migration, and time no kernel event "
        "accounts for (hardware or hypervisor); what the trace does not cover is shown apart, never "
        "spread. Each cause has its fix, naming the tuning that makes it where there is one. Then the "
        "commands that open the run's trace (trace-cmd report, kernelshark). Reads the store only.",
        epilog="examples: jitterlab explain 3f9c1a; jitterlab explain 3f9c1a --period 281")
    p.add_argument("run_id", type=run_id_arg, metavar="RUN_ID", help="run id or a unique prefix")
    add_results(p)
    p.add_argument("--period", type=_period_arg, metavar="K",
                   help="only period K, numbered as explain and show print it (period 1: the first after "
                   "the warm-up); it must be one the run explained")
    return p


def _period_arg(text: str) -> int:
    try:
        k = int(text)
    except ValueError:
        k = 0
    if k < 1:
        raise argparse.ArgumentTypeError(f"a period's number as explain prints it (1 or more), got {text!r}")
    return k


def run(args: argparse.Namespace) -> int:
    from jitterlab.report import causes
    from jitterlab.report.causes_view import explain_lines
    from jitterlab.report.limits import measure_of
    from jitterlab.report.terminal import console
    from jitterlab.store.catalog import Store

    store = Store(args.results, create=False)
    try:
        run_ = _one_run(store, args.run_id)
        results = shlex.quote(shown_spec(args.results))
        e = causes.read_explanation(run_, store.root)
        if e is None:
            raise UserError(f"RUN_ID {run_.id}: the run was not traced, so nothing explains its periods; "
                            f"trace its cell with {causes.HOW_TO_TRACE} and run it again")
        if e.refused or not e.periods:
            why = e.refused or "no period of it was late enough to be explained"
            raise UserError(f"RUN_ID {run_.id}: the run was traced but explains no period: {why}")
        periods = sorted(e.periods, key=lambda p: (-p.lateness_ns, p.index))
        if args.period is not None:
            periods = [p for p in e.periods if p.index + 1 == args.period]
            if not periods:
                there = ", ".join(str(p.index + 1) for p in sorted(e.periods, key=lambda p: p.index))
                raise UserError(f"--period {args.period}: run {run_.id} did not explain that period; it "
                                f"explained periods {there}")
        out = console()
        found = store.campaign(run_.campaign_id)
        measure = measure_of(found, [run_], store.sysinfo, shown_spec(args.results))
        for part in explain_lines(run_, e, store.root, periods[:SHOWN], measure):
            out.print(part)
        if len(periods) > SHOWN:
            left = len(periods) - SHOWN
            after = ", ".join(str(p.index + 1) for p in periods[SHOWN:2 * SHOWN])
            rest = f" and {left - SHOWN} more" if left > SHOWN else ""
            out.print(f"{left} more explained periods, the latest first: {after}{rest}; one of them: "
                      f"jitterlab explain --results {results} {run_.id} --period K", highlight=False)
        return EXIT_OK
    finally:
        store.close()


def _one_run(store, run_id: str):
    """The run RUN_ID names (a unique prefix); UserError offering the closest ids when none does."""
    matches = store.runs(run_id=run_id)
    if len(matches) > 1:
        ids = ", ".join(sorted(r.id for r in matches)[:6])
        raise UserError(f"RUN_ID {run_id!r}: matches {len(matches)} runs ({ids}); give more characters")
    if not matches:
        ids = [r.id for r in store.runs()]
        raise UserError(f"RUN_ID {run_id!r}: no such run in {store.where}; runs there: "
                        f"{offered(run_id, ids, 'jitterlab show --runs lists every run')}")
    return matches[0]
