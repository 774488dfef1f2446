"""A comparison in a few lines for the summary screen: the decided verdicts first (worse, better,
then same), each with the runs that decided it and what its verdict guarantees, then how many rows
are undecided and what would decide them. The rows are the tested family (analysis.family: each
benchmark's headline metrics), judged exactly as `compare`, `report` and `run --until-decided`
judge them; `jitterlab compare` shows every row."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from jitterlab.model.records import RunRecord

DECIDED = ("worse", "better", "same")  # in the order they are listed; any other verdict is undecided
MAX_LISTED = 8  # decided rows listed per comparison; the rest are counted


@dataclass
class Verdicts:
    title: str  # "image=1.11 vs image=1.10"
    pair: str  # "image=1.10..image=1.11", as run --until-decided takes it
    decided: list[str] = field(default_factory=list)  # one line per row, worse first
    more_decided: int = 0
    undecided: list[str] = field(default_factory=list)  # one line per undecided row (lines(every=True))
    counts: dict[str, int] = field(default_factory=dict)
    undecided_few: int = 0  # rows whose groups had fewer runs than a verdict needs
    undecided_wide: int = 0  # rows tested whose CI still allows a change that matters
    min_runs: int = 3
    runs_per_group: tuple[int, int] = (0, 0)  # the fewest runs of a cell in each group
    problem: str = ""  # why nothing could be compared


def judged(runs: list[RunRecord], baseline, candidate, samples: Callable | None = None, *,
           metrics: list[str] | None = None):
    """The comparison every screen, page and loop makes of these runs: the family each benchmark
    declares (or `metrics`), tails compared on `samples` (analysis.samples.reader) when given."""
    from jitterlab import plugins
    from jitterlab.analysis.compare import compare
    from jitterlab.campaign.cells import names

    return compare(runs, baseline, candidate, metrics=metrics, names=names(), traits=plugins.traits,
                   distributions=samples)


def verdicts(runs: list[RunRecord], baseline, candidate, samples: Callable | None = None) -> Verdicts:
    """The comparison of `candidate` against `baseline` (analysis.compare.Selector), summarized."""
    from jitterlab.analysis.compare import MIN_RUNS
    from jitterlab.model.errors import UserError

    try:
        result = judged(runs, baseline, candidate, samples)
    except UserError as exc:
        return Verdicts(f"{candidate} vs {baseline}", f"{baseline}..{candidate}", min_runs=MIN_RUNS,
                        problem=str(exc))
    return summarized(result)


def summarized(result) -> Verdicts:
    """A comparison made (analysis.compare.Comparison) in the few lines of `lines`."""
    from jitterlab.analysis.compare import MIN_RUNS, cell_text
    from jitterlab.report.comparison import LOAD_DIFFERED, change_text, decided_text, load_text

    baseline, candidate = result.baseline, result.candidate
    out = Verdicts(f"{candidate} vs {baseline}", f"{baseline}..{candidate}", min_runs=MIN_RUNS)
    rows = result.tested_rows
    out.counts = {v: sum(r.verdict == v for r in rows) for v in DECIDED}
    decided = sorted((r for r in rows if r.verdict in DECIDED), key=lambda r: DECIDED.index(r.verdict))
    undecided = [r for r in rows if r.verdict not in DECIDED]
    for r in decided[:MAX_LISTED] + undecided[:MAX_LISTED]:
        probe = f" ({r.probe})" if r.probe else ""
        loads = f"; {LOAD_DIFFERED}: {load_text(result.loads[r.cell])}" if r.load_differs else ""
        why = decided_text(r) if r.verdict in DECIDED else f"{r.runs} runs"
        (out.decided if r.verdict in DECIDED else out.undecided).append(
            f"{r.verdict:<6}  {cell_text(result, r)}{probe}  {r.metric}  {change_text(r)}  — {why}{loads}")
    out.more_decided = max(0, len(decided) - MAX_LISTED)
    out.undecided_few = sum(min(r.n_baseline, r.n_candidate) < MIN_RUNS for r in undecided)
    out.undecided_wide = len(undecided) - out.undecided_few
    if rows:
        out.runs_per_group = (min(r.n_baseline for r in rows), min(r.n_candidate for r in rows))
    return out


def lines(v: Verdicts, more_runs: str, every_row: str = "jitterlab compare",
          every: bool = False) -> list[str]:
    """The comparison as the screen prints it; `more_runs` says how to add repetitions where rows are
    undecided (`{pair}` in it becomes BASELINE..CANDIDATE; "": said elsewhere), `every_row` the
    command that shows every row; `every` lists the undecided rows too, each with its interval."""
    out = [v.title]
    if v.problem:
        return [*out, f"  not compared: {v.problem}"]
    out += [f"  {line}" for line in v.decided]
    if v.more_decided:
        out.append(f"  ... and {v.more_decided} more decided rows: {every_row}")
    if not v.decided:
        out.append("  no row decided yet")
    undecided = v.undecided_few + v.undecided_wide
    if undecided:
        why = []
        if v.undecided_few:
            now = f"now {v.runs_per_group[0]} vs {v.runs_per_group[1]}"
            why.append(f"{v.undecided_few} with fewer than {v.min_runs} runs in a group ({now}): measure at "
                       f"least {v.min_runs}, better 5")
        if v.undecided_wide:
            why.append(f"{v.undecided_wide} whose interval still allows a change that matters: more "
                       "repetitions narrow it (4x the runs halve it)")
        more = f"; {more_runs.replace('{pair}', v.pair)}" if more_runs else ""
        out.append(f"  {undecided} undecided: {'; '.join(why)}{more}")
        if every:
            out += [f"  {line}" for line in v.undecided]
            if undecided > len(v.undecided):
                out.append(f"  ... and {undecided - len(v.undecided)} more undecided rows: {every_row}")
    return out
