"""A comparison in a few lines for the summary screen: the decided verdicts first (worse, better,
then same), then how many rows are undecided and what would decide them. Only the headline
metrics are compared (the envelope's rules for squarewave); `jitterlab compare` shows every row."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from jitterlab.model.records import RunRecord
from jitterlab.report.format import change

DECIDED = ("worse", "better", "same")  # in the order they are listed; any other verdict is undecided
MAX_LISTED = 8  # decided rows listed per comparison; the rest are counted


@dataclass
class Verdicts:
    title: str  # "image=1.11 vs image=1.10"
    pair: str  # "image=1.10..image=1.11", as run --until-decided takes it
    decided: list[str] = field(default_factory=list)  # one line per row, worse first
    more_decided: int = 0
    counts: dict[str, int] = field(default_factory=dict)
    undecided_few: int = 0  # rows whose groups had fewer runs than a verdict needs
    undecided_wide: int = 0  # rows tested whose CI still allows a change that matters
    min_runs: int = 3
    runs_per_group: tuple[int, int] = (0, 0)  # the fewest runs of a cell in each group
    problem: str = ""  # why nothing could be compared


def headline_metrics(runs: list[RunRecord]) -> list[str]:
    """The metrics a screen compares: the envelope's rules for squarewave, the declared headline
    metrics of the other benchmarks."""
    from jitterlab.analysis.envelope import RULES, rules_of
    from jitterlab.report.summaries import headline_metrics as declared

    wanted: list[str] = []
    if any(r.benchmark == "squarewave" for r in runs):
        wanted += [RULES[rule] for rule in rules_of(runs)]
    for bench in sorted({r.benchmark for r in runs} - {"squarewave"}):
        wanted += declared(bench, [r for r in runs if r.benchmark == bench])
    present = {name for r in runs for (_, name) in r.metrics}
    return [m for m in dict.fromkeys(wanted) if m in present]


def verdicts(runs: list[RunRecord], baseline, candidate) -> Verdicts:
    """The comparison of `candidate` against `baseline` (analysis.compare.Selector), summarized."""
    from jitterlab.analysis.compare import MIN_RUNS, compare
    from jitterlab.campaign.cells import names
    from jitterlab.model.errors import UserError

    out = Verdicts(f"{candidate} vs {baseline}", f"{baseline}..{candidate}", min_runs=MIN_RUNS)
    try:
        result = compare(runs, baseline, candidate, metrics=headline_metrics(runs) or None, names=names())
    except UserError as exc:
        out.problem = str(exc)
        return out
    from jitterlab.analysis.compare import NOT_GRADED, cell_text

    rows = [r for r in result.rows if r.verdict != NOT_GRADED]  # load readings are shown, never graded
    out.counts = {v: sum(r.verdict == v for r in rows) for v in DECIDED}
    decided = sorted((r for r in rows if r.verdict in DECIDED), key=lambda r: DECIDED.index(r.verdict))
    for r in decided[:MAX_LISTED]:
        ci = (f" [{change(r.ci_low)} – {change(r.ci_high)}]"
              if math.isfinite(r.ci_low) and math.isfinite(r.ci_high) else "")
        probe = f" ({r.probe})" if r.probe else ""
        out.decided.append(
            f"{r.verdict:<6}  {cell_text(result, r)}{probe}  {r.metric}  {change(r.ratio)}{ci}")
    out.more_decided = max(0, len(decided) - MAX_LISTED)
    undecided = [r for r in rows if r.verdict not in DECIDED]
    out.undecided_few = sum(min(r.n_baseline, r.n_candidate) < MIN_RUNS for r in undecided)
    out.undecided_wide = len(undecided) - out.undecided_few
    if rows:
        out.runs_per_group = (min(r.n_baseline for r in rows), min(r.n_candidate for r in rows))
    return out


def lines(v: Verdicts, more_runs: str) -> list[str]:
    """The comparison as the screen prints it; `more_runs` says how to add repetitions (`{pair}` in
    it becomes BASELINE..CANDIDATE)."""
    out = [v.title]
    if v.problem:
        return [*out, f"  not compared: {v.problem}"]
    out += [f"  {line}" for line in v.decided]
    if v.more_decided:
        out.append(f"  ... and {v.more_decided} more decided rows (jitterlab compare)")
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
            why.append(f"{v.undecided_wide} whose 95 % CI still allows a change that matters: more "
                       "repetitions narrow it (4x the runs halve it)")
        out.append(f"  {undecided} undecided: {'; '.join(why)}; {more_runs.replace('{pair}', v.pair)}")
    return out
