"""Repetitions until decided: after a campaign's runs, compare two of its groups (`--until-decided
BASELINE..CANDIDATE`, selectors as compare takes them) and measure one more repetition of only the
cells whose watched verdict is still undecided, round after round, until every watched verdict is
decided or a bound stops it: extra runs (--max-runs: in all, counted from the store, so that a
resumed campaign goes on where it stopped; without it DEFAULT_MAX_RUNS_PER_CELL per cell for each
invocation, so that a loop run again goes on) and time (per invocation). Nothing is measured twice:
the runner skips what is committed.

Both groups gain a run where this campaign measures both (two values of a cell key: target, impl,
period, ...). Where the groups are told apart by a label (image=A..image=B), this campaign measures
only the group its labels name: the other is an earlier campaign of the same name, measured under
conditions jitterlab did not make (an image flashed, a kernel booted) and cannot make again, so it
is never measured under this one's. The group measured here gains runs up to AHEAD times the other's:
beyond, one group's runs no longer narrow the interval (the smaller group's variance and degrees of
freedom bound it: at equal spreads the expected repeated interval of 3 vs 3 runs is 5 % narrower at
3 vs 6 and wider from 3 vs 7 on; of 5 vs 5, 15 % narrower at 5 vs 10, then no narrower), so the loop
stops and names the group that needs runs, with the command that measures it once the target is as
it was for that group.

A verdict is decided when it is better, worse or same; undecided when neither. Each round is the
comparison `compare`, `summary` and `report` make of the same runs (report.verdicts.judged's
arguments: the family each benchmark declares or --watch, tails on the runs' samples), and it
counts as one look of a sequence (analysis.sequential): however many rounds, a false better/worse
stays under 5 % (bench/until_decided.py measures it). Each round is announced per compared cell,
once, with every watched row that asks for it and which group gains a run.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass

from jitterlab import plugins
from jitterlab.analysis.compare import MIN_RUNS, Comparison, Row, Selector, compare
from jitterlab.analysis.family import load_reading
from jitterlab.analysis.samples import reader
from jitterlab.campaign.file import Campaign
from jitterlab.execution.preflight import TargetSession
from jitterlab.execution.runner import Outcome, Runner, estimate_s
from jitterlab.model.cellnames import CellNames
from jitterlab.model.errors import UserError, shown
from jitterlab.model.records import TUNING_KEY, Cell, RunRecord
from jitterlab.model.registry import did_you_mean
from jitterlab.store.catalog import Store

DECIDED = ("better", "worse", "same")
DEFAULT_MAX_RUNS_PER_CELL = 10  # extra repetitions per cell the default bound allows an invocation
AHEAD = 2  # a group measured here gains runs up to this many times those of a group it cannot measure
DEFAULT_MAX_TIME_S = 3600.0
MAX_LISTED = 20  # of the names a campaign's benchmarks can produce, those a refused --watch lists
now = time.monotonic  # the clock of the time bound (tests put the fake targets' clock here)


class UnknownWatch(UserError):
    """--watch names a metric the compared runs lack, known only once they are measured: a load's
    reading, or a metric a benchmark can produce that these runs did not (a bound, a tool's figure
    that depends on what happened or on its version); check_watch_producible refuses every other
    name before measuring."""


def decided(verdict: str) -> bool:
    """Whether a verdict settles its row: better, worse or same; undecided (and compare's former
    "no significant change", which did not say whether a change that matters was excluded) is not."""
    return verdict in DECIDED


@dataclass(frozen=True)
class Watch:
    """What --until-decided watches and its bounds."""

    baseline: Selector
    candidate: Selector
    metrics: tuple[str, ...] = ()  # empty: each benchmark's headline metrics
    # extra runs in all; None: DEFAULT_MAX_RUNS_PER_CELL per cell for this invocation
    max_runs: int | None = None
    max_time_s: float = DEFAULT_MAX_TIME_S

    @classmethod
    def parse(cls, text: str, option: str = "--until-decided", **bounds) -> Watch:
        base, sep, cand = text.partition("..")
        if not sep or not base.strip() or not cand.strip():
            raise UserError(f"{option} {shown(text)}: write BASELINE..CANDIDATE, e.g. {option} "
                            "target=standard..target=rt")
        if ".." in cand:  # a third group would become part of the candidate's value, selecting nothing
            raise UserError(f"{option} {shown(text)}: write two groups, BASELINE..CANDIDATE, e.g. {option} "
                            "target=standard..target=rt")
        baseline, candidate = Selector.parse(base, option), Selector.parse(cand, option)
        for side, raw, sel in (("baseline", base, baseline), ("candidate", cand, candidate)):
            if not sel.value:
                raise UserError(f"{option} {shown(text)}: the {side} {shown(raw)} has no value; write "
                                "KEY=VALUE, e.g. target=rt")
        if (baseline.key, baseline.value) == (candidate.key, candidate.value):
            raise UserError(f"{option} {text!r}: both sides select {baseline}; give two different groups")
        return cls(baseline, candidate, **bounds)


@dataclass(frozen=True)
class ExtraRun:
    """An extra run: its cell, its repetition, and the group it adds to ("baseline" or "candidate")."""

    cell: Cell
    repetition: int
    side: str = ""


@dataclass(frozen=True)
class Asked:
    """Why a compared cell gets runs this round: its undecided watched rows (every metric and probe)
    and the extra runs, of one group or both; `alone` names the group this campaign cannot measure
    when only the other gains (its side and its runs)."""

    rows: tuple[Row, ...]
    extras: tuple[ExtraRun, ...]
    alone: tuple[str, int] | None = None


@dataclass(frozen=True)
class Waiting:
    """A compared cell whose undecided rows need runs of the group this campaign does not measure
    (`side`, at `n_other` runs) before more of its own (at `n_here`) can help."""

    rows: tuple[Row, ...]
    side: str
    n_here: int
    n_other: int


@dataclass
class Ended:
    reason: str  # "decided", "max-runs", "max-time", "interrupted", "other-group"
    rounds: int = 0
    extra_runs: int = 0  # measured by this invocation
    extra_so_far: int = 0  # of the campaign, beyond its repetitions (earlier invocations too)
    next_round_runs: int = 0
    next_round_s: float = 0.0
    used_s: float = 0.0
    max_runs: int = 0
    failed: int = 0
    undecided: list[Row] = dataclasses.field(default_factory=list)
    rows: list[Row] = dataclasses.field(default_factory=list)  # the watched rows at the end
    comparison: Comparison | None = None  # the last look, whose tested rows are `rows`
    waiting: list[Waiting] = dataclasses.field(default_factory=list)
    # side -> the campaign that measured a group this one cannot: its labels (to resume it by) and
    # the extra runs it has already (to bound its loop by)
    others: dict[str, tuple[dict[str, str], int]] = dataclasses.field(default_factory=dict)
    default_bound: bool = False  # max_runs is this invocation's default, not --max-runs

    def stops(self, planned: int, next_round_s: float, used_s: float, max_time_s: float) -> bool:
        """Whether the loop ends before a round of `planned` runs taking `next_round_s` (its reason
        set): everything decided, nothing to add, or a bound the round would pass."""
        if not self.undecided or not planned:
            self.reason = "decided" if not self.undecided else "other-group"
            return True
        self.next_round_runs, self.next_round_s, self.used_s = planned, next_round_s, used_s
        if self.extra_so_far + planned > self.max_runs:
            self.reason = "max-runs"
            return True
        if used_s + next_round_s > max_time_s:
            self.reason = "max-time"
            return True
        return False


_CELL_FIELDS = ("target", "benchmark", "load")


def check_measured_here(watch: Watch, campaign: Campaign, names: CellNames) -> None:
    """Refuse, before anything is measured, what compare would refuse once the campaign's runs are in:
    a group this campaign cannot add to and no earlier campaign can hold (a cell value no cell has, a
    key that is neither label nor cell key), neither group measured here, groups that share cells of
    this campaign, or groups with no cell in common. (The other value of a label may be an earlier
    campaign's: only the store knows.)"""
    where = f"--until-decided {watch.baseline}..{watch.candidate}"
    cells = campaign.cells

    def value(cell: Cell, key: str) -> set[str]:
        """The cell's value of `key`, as stored (1000000) and as a campaign writes it (1ms)."""
        if key in _CELL_FIELDS:
            return {str(getattr(cell, key))}
        if key == TUNING_KEY:  # a cell without one is measured under "none"
            return {cell.tuning}
        return {str(cell.param(key)), names.show_value(cell, key)} if cell.has(key) else set()

    def selected(sel: Selector) -> list[Cell]:
        if sel.key in campaign.labels:  # all of this campaign's runs, or none (an earlier campaign's)
            return list(cells) if str(campaign.labels[sel.key]) == sel.value else []
        return [c for c in cells if sel.value in value(c, sel.key)]

    base, cand = selected(watch.baseline), selected(watch.candidate)
    if not base and not cand:
        raise UserError(f"{where}: this campaign measures neither group; select cells of its matrix "
                        "(target=..., impl=...) or a label it sets")
    labelled = [s.key for s in (watch.baseline, watch.candidate) if s.key in campaign.labels]
    if labelled and watch.baseline.key != watch.candidate.key:
        raise UserError(f"{where}: select both groups by the label {labelled[0]} (two of its values), or "
                        f"both by the cells: a cell selector takes the runs of every {labelled[0]}")
    for sel, found in ((watch.baseline, base), (watch.candidate, cand)):
        if found or sel.key in campaign.labels:
            continue
        taken = sorted({c.tuning if sel.key == TUNING_KEY else str(getattr(c, sel.key))
                        if sel.key in _CELL_FIELDS else names.show_value(c, sel.key)
                        for c in cells if sel.key in (*_CELL_FIELDS, TUNING_KEY) or c.has(sel.key)})
        if not taken:
            keys = [*_CELL_FIELDS, *dict.fromkeys(k for c in cells for k, _ in c.params)]
            raise UserError(f"{where}: {sel.key} is neither a label of this campaign nor a key of its cells "
                            f"({', '.join(keys)})")
        raise UserError(f"{where}: no cell of this campaign has {sel} (its cells have {sel.key} "
                        f"{', '.join(taken[:20])}{', ...' if len(taken) > 20 else ''})")
    if not (base and cand):
        return
    shared = [c for c in base if c in cand]
    if shared:
        raise UserError(f"{where}: both groups hold {len(shared)} cell(s) of this campaign (e.g. "
                        f"{_cell_text(shared[0], names)}): a run would be compared with itself; select two "
                        "groups apart, e.g. two values of one key")
    keys = (watch.baseline.key, watch.candidate.key)
    if not {_identity(c, keys, names) for c in base} & {_identity(c, keys, names) for c in cand}:
        aside = " and ".join(dict.fromkeys(keys))
        raise UserError(f"{where}: no cell of one group has a counterpart in the other ({aside} set aside), "
                        "so nothing could be compared; select groups measured with the same matrix")


def check_watch_producible(watch: Watch, campaign: Campaign) -> None:
    """Refuse, before any target is opened, a --watch naming a metric no benchmark of this campaign
    can produce in its cells (Benchmark.metric_names), and a load's reading: it is stored beside the
    runs to show what the load did, never compared, so no verdict on it could ever be reached."""
    if not watch.metrics:
        return
    if readings := [m for m in watch.metrics if load_reading(m)]:
        raise UserError(f"--watch {', '.join(readings)}: a load's reading (load_*) tells what the load "
                        "did and is never compared, so it gets no verdict; watch a metric of the "
                        "benchmarks, or leave out --watch to watch each benchmark's headline metrics")
    declared: dict[str, set[str]] = {}  # benchmark -> what its cells of this campaign can produce
    for cell in campaign.cells:
        bench: plugins.Results = plugins.BENCHMARKS.get(cell.benchmark, "matrix.benchmark")
        declared.setdefault(cell.benchmark, set()).update(bench.metric_names(cell))
    known = set().union(*declared.values())
    unknown = [m for m in watch.metrics if m not in known]
    if not unknown:
        return
    listed = list(dict.fromkeys(name for bench, names in declared.items() for name in (
        *(h for h in plugins.traits(bench).headline if h in names), *sorted(names))))  # headlines first
    more = f", ... ({len(listed) - MAX_LISTED} more)" if len(listed) > MAX_LISTED else ""
    close = did_you_mean(unknown[0], known) if len(unknown) == 1 else ""
    benchmarks = f"its benchmark{'s' if len(declared) > 1 else ''} {', '.join(declared)}"
    raise UserError(f"--watch {', '.join(unknown)}: no benchmark of this campaign produces such a metric; "
                    f"{close}{benchmarks} can produce {', '.join(listed[:MAX_LISTED])}{more}; watch one of "
                    "these, or leave out --watch to watch each benchmark's headline metrics")


def _identity(cell: Cell, selected: tuple[str, ...], names: CellNames) -> tuple:
    """A cell as compare pairs the groups' runs: its fields and parameters less the selecting keys."""
    fields = tuple(str(getattr(cell, f)) for f in _CELL_FIELDS if f not in selected)
    return (*fields, names.params_text(cell, leave_out=selected))


def _cell_text(cell: Cell, names: CellNames) -> str:
    return " ".join(p for p in (cell.target, cell.benchmark, names.params_text(cell), cell.load) if p)


def compared_runs(store: Store, campaign: Campaign, campaign_id: int) -> list[RunRecord]:
    """This campaign's runs and, for other label sets of the same campaign name (image=A measured
    earlier), the latest campaign of each: what `compare --campaign NAME` compares."""
    latest: dict[str, int] = {}
    for c in store.campaigns():
        if c.name == campaign.name and c.id != campaign_id:
            latest[json.dumps(dict(c.labels), sort_keys=True)] = c.id
    latest[json.dumps(dict(campaign.labels), sort_keys=True)] = campaign_id
    return [r for cid in sorted(latest.values()) for r in store.runs(cid)]


def watched_metrics(watch: Watch, runs: list[RunRecord]) -> list[str] | None:
    """--watch's metrics, checked against the runs (None: the family each benchmark declares)."""
    known = {name for r in runs for (_, name) in r.metrics}
    if watch.metrics:
        unknown = [m for m in watch.metrics if m not in known]
        if unknown:
            raise UnknownWatch(f"--watch {', '.join(unknown)}: no such metric in the runs compared; they "
                               f"have: {', '.join(sorted(known))}")
        return list(watch.metrics)
    return None


def judge(runs: list[RunRecord], watch: Watch, names: CellNames, samples) -> Comparison:
    """The comparison `summary`, `compare` and `report` make of these runs (the same family, tails
    on the same samples): the loop's verdicts are theirs."""
    return compare(runs, watch.baseline, watch.candidate, metrics=watched_metrics(watch, runs), names=names,
                   traits=plugins.traits, distributions=samples)


def until_decided(campaign: Campaign, store: Store, sessions: list[TargetSession], campaign_id: int,
                  watch: Watch, *, names: CellNames, why: Callable[[Asked], None],
                  runner: Callable[..., Runner] = Runner,
                  planned: Callable[[dict[str, tuple[int, float]]], None] | None = None) -> Ended:
    """Rounds of one more repetition of every cell still undecided, until decided or bounded;
    `why` hears of each compared cell that gets runs, before its round, `planned` of each round's
    runs and estimated seconds per target (a progress display)."""
    start = now()
    ended = Ended("decided", max_runs=watch.max_runs or 0, default_bound=watch.max_runs is None)
    seen: dict[str, dict] = {}  # each run's samples, read once for all rounds

    def samples(run: RunRecord) -> dict:
        if run.id not in seen:
            seen[run.id] = read_samples(run)
        return seen[run.id]

    read_samples = reader(store.read_series, plugins.traits)
    while True:
        runs = compared_runs(store, campaign, campaign_id)
        result = judge(runs, watch, names, samples)
        ended.comparison = result
        ended.rows = result.tested_rows
        ended.undecided = [r for r in ended.rows if not decided(r.verdict)]
        mine = [r for r in runs if r.campaign_id == campaign_id]
        ended.extra_so_far = sum(r.repetition >= campaign.repetitions for r in mine)
        if ended.default_bound and not ended.rounds:  # a budget for this invocation, from where it starts
            ended.max_runs = ended.extra_so_far + DEFAULT_MAX_RUNS_PER_CELL * len(campaign.cells)
        asked, ended.waiting = _next_round(ended.undecided, mine, result.cell_fields, watch, names)
        ended.others = _others(ended.waiting, runs, campaign, campaign_id, watch, names)
        plan = [x for a in asked for x in a.extras]
        if ended.stops(len(plan), _round_s(campaign, [(x.cell, x.repetition) for x in plan]) if plan else 0.0,
                       now() - start, watch.max_time_s):
            return ended
        for a in asked:
            why(a)
        if planned is not None:
            planned(_per_target(campaign, plan))
        outcome = _measure(campaign, store, sessions, campaign_id, plan, runner)
        ended.rounds += 1
        ended.extra_runs += outcome.done
        ended.failed += outcome.failed
        if outcome.interrupted:
            ended.reason = "interrupted"
            return ended


def _others(waiting: list[Waiting], runs: list[RunRecord], campaign: Campaign, campaign_id: int,
            watch: Watch, names: CellNames) -> dict[str, tuple[dict[str, str], int]]:
    """For each group a waiting row needs, the latest campaign that measured it: its labels (what
    `run --resume --label ...` finds it by) and its extra runs so far."""
    out: dict[str, tuple[dict[str, str], int]] = {}
    for side in dict.fromkeys(w.side for w in waiting):
        theirs = [r for r in runs if r.campaign_id != campaign_id and getattr(watch, side).matches(r, names)]
        if theirs:
            latest = max(r.campaign_id for r in theirs)
            mine = [r for r in runs if r.campaign_id == latest]
            out[side] = (dict(mine[0].labels), sum(r.repetition >= campaign.repetitions for r in mine))
    return out


def _next_round(undecided: list[Row], mine: list[RunRecord], fields: tuple[str, ...], watch: Watch,
                names: CellNames) -> tuple[list[Asked], list[Waiting]]:
    """One more repetition of each cell of this campaign that takes part in an undecided row (one
    Asked per compared cell, with all its undecided rows), of both groups where this campaign
    measures both; where an interrupted round left the cells of one row uneven, only those behind
    catch up first. Where it measures one group only, that group gains runs up to AHEAD times the
    other's (up to MIN_RUNS while the other has fewer: no test is possible before); beyond, the cell
    waits for the other group (a Waiting)."""
    asking: dict[tuple, list[Row]] = defaultdict(list)
    for row in undecided:
        asking[row.cell].append(row)
    selected = (watch.baseline.key, watch.candidate.key)
    last: dict[str, int] = defaultdict(lambda: -1)
    groups: dict[tuple, dict[str, tuple[Cell, str]]] = defaultdict(dict)
    for r in mine:
        last[r.cell.key] = max(last[r.cell.key], r.repetition)
        side = ("baseline" if watch.baseline.matches(r, names) else
                "candidate" if watch.candidate.matches(r, names) else "")
        if not side:
            continue
        key = tuple(names.params_text(r.cell, leave_out=selected) if f == "params" else getattr(r, f)
                    for f in fields)
        if key in asking:
            groups[key][r.cell.key] = (r.cell, side)
    out, waiting = [], []
    for key, cells in groups.items():
        rows = asking[key]
        sides = {side for _, side in cells.values()}
        alone = None
        if len(sides) == 1:  # the other group is another campaign's
            [here] = sides
            other = "candidate" if here == "baseline" else "baseline"
            n = {"baseline": min(r.n_baseline for r in rows), "candidate": min(r.n_candidate for r in rows)}
            # up to AHEAD times the other's runs; with too few for a test there, up to a test's own
            if n[here] >= (MIN_RUNS if n[other] < MIN_RUNS else AHEAD * n[other]):
                waiting.append(Waiting(tuple(rows), other, n[here], n[other]))
                continue
            alone = (other, n[other])
        top = max(last[k] for k in cells)
        behind = [k for k in cells if last[k] < top]
        extras = tuple(ExtraRun(cells[k][0], last[k] + 1, cells[k][1]) for k in behind or list(cells))
        ordered = tuple(sorted(extras, key=lambda x: (x.repetition, str(x.cell))))
        out.append(Asked(tuple(rows), ordered, alone))
    return sorted(out, key=lambda a: (a.extras[0].repetition, str(a.extras[0].cell))), waiting


def _per_target(campaign: Campaign, plan: list[ExtraRun]) -> dict[str, tuple[int, float]]:
    out: dict[str, tuple[int, float]] = {}
    for extra in plan:
        n, s = out.get(extra.cell.target, (0, 0.0))
        out[extra.cell.target] = (n + 1, s + estimate_s(campaign, [(extra.cell, extra.repetition)]))
    return out


def _round_s(campaign: Campaign, runs: list[tuple[Cell, int]]) -> float:
    """A round's expected time: targets measure in parallel, a target's runs one after another."""
    per_target: dict[str, list[tuple[Cell, int]]] = defaultdict(list)
    for cell, rep in runs:
        per_target[cell.target].append((cell, rep))
    return max((estimate_s(campaign, r) for r in per_target.values()), default=0.0)


def _measure(campaign: Campaign, store: Store, sessions: list[TargetSession], campaign_id: int,
             plan: list[ExtraRun], runner: Callable[..., Runner]) -> Outcome:
    """The round's runs, one runner per repetition number (cells may be at different ones); runs
    already committed (a resumed round) are skipped by the runner."""
    total = Outcome(campaign_id)
    by_rep: dict[int, list[Cell]] = defaultdict(list)
    for extra in plan:
        by_rep[extra.repetition].append(extra.cell)
    for rep, cells in sorted(by_rep.items()):
        # the campaign as far as this round goes: these cells, up to this repetition
        narrowed = dataclasses.replace(campaign, cells=cells, repetitions=rep + 1)
        outcome = runner(narrowed, store, only_repetitions={rep}).execute(sessions, campaign_id)
        total.done += outcome.done
        total.failed += outcome.failed
        if outcome.interrupted:
            total.interrupted = True
            break
    return total
