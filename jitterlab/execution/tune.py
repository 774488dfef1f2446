"""`jitterlab tune`: a campaign's cells measured under one tuning at a time against the same cells
under none, each decided with the sequential verdicts of `run --until-decided` (no more runs than
deciding needs, bounded), then the tunings that made cells better and none worse applied together.

Every tried tuning is one more `tuning` value of the same campaign in the store: its runs under
`none` are measured once and shared by every comparison, and `run --resume` or a second `tune`
goes on where this one stopped. Each run applies its tuning and puts it back (execution/tuning.py):
nothing stays applied afterwards. Which cells and which tunings to try is the caller's (the cli
reads the stored runs' limits); what a verdict per cell is, is analysis/compare's.
"""

from __future__ import annotations

import dataclasses
import functools
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from jitterlab import plugins
from jitterlab.analysis.compare import Row, Selector
from jitterlab.campaign.file import Campaign
from jitterlab.execution.preflight import TargetSession
from jitterlab.execution.runner import Progress, Runner, estimate_s
from jitterlab.execution.tuning import refusals
from jitterlab.execution.until_decided import Ended, Watch, until_decided
from jitterlab.model.cellnames import CellNames
from jitterlab.model.errors import UserError
from jitterlab.model.records import NO_TUNING, TUNING_KEY, Cell
from jitterlab.store.catalog import Store

BASELINE = Selector(TUNING_KEY, NO_TUNING)


@dataclass(frozen=True)
class CellVerdict:
    """What a tuning did to one cell: the verdict of its watched rows taken together (worse when
    one is worse, better when one is better and none worse, same when all are, else undecided) and
    the row that says it, with its change and interval."""

    verdict: str
    row: Row


@dataclass
class Tried:
    """One tuning tried: its cost, the cells it could not be applied to (why), and the verdict per
    cell of the rest; `ended` how its loop ended (None: nothing could be compared)."""

    tuning: str
    cost: str
    refused: dict[str, str] = dataclasses.field(default_factory=dict)
    problem: str = ""  # why its runs could not be compared
    cells: list[CellVerdict] = dataclasses.field(default_factory=list)
    ended: Ended | None = None

    def count(self, verdict: str) -> int:
        return sum(c.verdict == verdict for c in self.cells)

    @property
    def helps(self) -> bool:
        """It made a cell better and none worse: one of the best, to be applied with the others."""
        return self.count("better") > 0 and self.count("worse") == 0


def cost_of(tuning: str) -> str:
    """What the tuning (or the tunings of "a+b") takes, each in its words."""
    return "; ".join(c for name in tuning.split("+") if (c := plugins.TUNINGS.get(name, "--tuning").cost))


def cell_verdicts(rows: Sequence[Row]) -> list[CellVerdict]:
    """The watched rows of a comparison, one verdict per cell (see CellVerdict)."""
    by_cell: dict[tuple, list[Row]] = defaultdict(list)
    for row in rows:
        by_cell[row.cell].append(row)
    out = []
    for mine in by_cell.values():
        verdicts = [r.verdict for r in mine]
        for verdict in ("worse", "better"):
            if verdict in verdicts:
                out.append(CellVerdict(verdict, mine[verdicts.index(verdict)]))
                break
        else:
            same = all(v == "same" for v in verdicts)
            out.append(CellVerdict("same" if same else "undecided",
                                   mine[0] if same else next(r for r in mine if r.verdict != "same")))
    return out


Planned = Callable[[dict[str, tuple[int, float]]], None]  # target -> (runs to measure, estimated s)


def plan_of(campaign: Campaign, todo: Sequence[tuple[Cell, int]], sessions: Sequence[TargetSession]
            ) -> dict[str, tuple[int, float]]:
    """The runs to measure per target and their estimated seconds, as a progress display plans them."""
    mine = {s.spec.name: [x for x in todo if x[0].target == s.spec.name] for s in sessions}
    return {name: (len(runs), estimate_s(campaign, runs)) for name, runs in mine.items()}


def try_tuning(campaign: Campaign, store: Store, sessions: list[TargetSession], cells: Sequence[Cell],
               tuning: str, *, names: CellNames, max_runs: int | None,
               notice: Callable[[str, str], None], progress: Progress | None = None,
               planned: Planned | None = None) -> Tried:
    """Measure `cells` under `tuning` beside themselves under none (committed runs are kept), then
    add repetitions where a verdict is undecided; `max_runs`: extra runs for this tuning (None: the
    until-decided default per cell); `progress` hears of each run as the Runner tells it, `planned`
    of the runs of each round before it starts (a progress display)."""
    tried = Tried(tuning, cost_of(tuning))
    tuned = [c.with_tuning(tuning) for c in cells]
    for session in sessions:
        mine = [c for c in tuned if c.target == session.spec.name]
        refused = refusals(session.target, mine, session.placement) if session.lost is None else {}
        session.unavailable.update(refused)
        tried.refused.update(refused)
    measurable = [c for c in tuned if c.key not in tried.refused]
    if not measurable:
        return tried
    both = dataclasses.replace(campaign, cells=tuple(
        c for base in cells for c in (base, base.with_tuning(tuning)) if c.with_tuning(tuning) in measurable))
    runner = Runner(both, store, resume=True, notice=notice, progress=progress)
    campaign_id = runner.campaign_id()
    if planned is not None:
        planned(plan_of(both, runner.pending(campaign_id)[0], sessions))
    outcome = runner.execute(sessions, campaign_id)
    if outcome.interrupted:
        raise KeyboardInterrupt
    extra_now = sum(r.repetition >= campaign.repetitions for r in store.runs(campaign_id))
    watch = Watch(BASELINE, Selector(TUNING_KEY, tuning),
                  max_runs=None if max_runs is None else extra_now + max_runs)
    try:
        tried.ended = until_decided(both, store, sessions, campaign_id, watch, names=names,
                                    why=lambda asked: None,
                                    runner=functools.partial(Runner, notice=notice, progress=progress),
                                    planned=planned)
    except UserError as exc:  # no ok run in a group: nothing to compare (the runs say why)
        tried.problem = str(exc)
        return tried
    if tried.ended.reason == "interrupted":
        raise KeyboardInterrupt
    tried.cells = cell_verdicts(tried.ended.rows)
    return tried
