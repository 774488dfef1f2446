"""`--until-decided` for an image campaign (`image=A..image=B`): after every image was measured, the
images are compared, and while a watched verdict is undecided a round adds one repetition of each
undecided cell on both images: every board is flashed with the baseline image and booted, its runs
measured, then the same with the candidate image. A round is a boot of each image, not more runs of
one boot: what differs between boots (where the image's pages landed, which services raced at
start-up) is part of what an image is, so runs of one boot alone would make an interval narrower
than the images' real difference allows.

The rounds are the same looks as those of execution/until_decided.py (a comparison `compare` makes
of the same runs, spent over the looks by analysis.sequential) with the same bounds (--max-runs in
all, counted from the store; --max-time per invocation, a round's estimate including each image's
last boot, preflight included). Each image's runs stay in its own campaign (labels image=A,
image=B), so `compare` reads them as after a plain image campaign, and `run --resume
--until-decided` goes on from them.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable

from jitterlab import plugins
from jitterlab.analysis.samples import reader
from jitterlab.campaign.file import Campaign
from jitterlab.execution import until_decided as loop
from jitterlab.execution.runner import Outcome, estimate_s
from jitterlab.execution.until_decided import (
    DEFAULT_MAX_RUNS_PER_CELL,
    Asked,
    Ended,
    ExtraRun,
    Watch,
    decided,
    judge,
)
from jitterlab.model.cellnames import CellNames
from jitterlab.model.errors import UserError
from jitterlab.model.records import Cell, RunRecord
from jitterlab.store.catalog import Store

# measures one image's runs of a round (flash, boot, measure, disconnect); returns their outcome
MeasureImage = Callable[[str, list[ExtraRun]], Outcome]


def check_image_groups(watch: Watch, label: str, values: list[str]) -> None:
    """An image campaign's --until-decided compares two of its images by their label, before
    anything is flashed: a round boots each image again, which only this campaign can do."""
    where = f"--until-decided {watch.baseline}..{watch.candidate}"
    for sel in (watch.baseline, watch.candidate):
        if sel.key != label:
            raise UserError(f"{where}: an image campaign compares its images: select two by their label, "
                            f"e.g. --until-decided {label}={values[0]}..{label}={values[-1]}")
        if sel.value not in values:
            raise UserError(f"{where}: no image has {sel} (the campaign's images: "
                            f"{', '.join(f'{label}={v}' for v in values)})")


def until_images_decided(campaign: Campaign, store: Store, ids: dict[str, int], watch: Watch, *,
                         names: CellNames, measure: MeasureImage, why: Callable[[Asked], None],
                         boot_s: dict[str, float] | None = None) -> Ended:
    """Rounds until every watched verdict between the two images is decided or a bound stops them;
    `ids`: each image's campaign, `boot_s`: each image's last boot up to ready for runs (seconds, for
    the time bound)."""
    start = loop.now()
    ended = Ended("decided", max_runs=watch.max_runs or 0, default_bound=watch.max_runs is None)
    seen: dict[str, dict] = {}
    read_samples = reader(store.read_series, plugins.traits)

    def samples(run: RunRecord) -> dict:
        if run.id not in seen:
            seen[run.id] = read_samples(run)
        return seen[run.id]

    sides = {watch.baseline.value: "baseline", watch.candidate.value: "candidate"}
    while True:
        runs = {value: store.runs(ids[value]) for value in sides}
        result = judge([r for value in sides for r in runs[value]], watch, names, samples)
        ended.comparison, ended.rows = result, result.tested_rows
        ended.undecided = [r for r in ended.rows if not decided(r.verdict)]
        ended.extra_so_far = sum(r.repetition >= campaign.repetitions for v in sides for r in runs[v])
        if ended.default_bound and not ended.rounds:  # this invocation's budget: both images' cells
            ended.max_runs = ended.extra_so_far + DEFAULT_MAX_RUNS_PER_CELL * len(campaign.cells) * 2
        asked = next_round(ended.undecided, runs, sides, result.cell_fields, watch, names)
        plan = [x for a in asked for x in a.extras]
        round_s = sum(_image_s(campaign, [x for x in plan if x.side == side])
                      + (boot_s or {}).get(value, 0.0) for value, side in sides.items())
        if ended.stops(len(plan), round_s, loop.now() - start, watch.max_time_s):
            return ended
        for a in asked:
            why(a)
        ended.rounds += 1
        for value, side in sides.items():  # the baseline's boot first, as the campaign measured it
            outcome = measure(value, [x for x in plan if x.side == side])
            ended.extra_runs += outcome.done
            ended.failed += outcome.failed
            if outcome.interrupted:
                ended.reason = "interrupted"
                return ended


def next_round(undecided: list, runs: dict[str, list[RunRecord]], sides: dict[str, str],
               fields: tuple[str, ...], watch: Watch, names: CellNames) -> list[Asked]:
    """One more repetition, on each image, of every cell that takes part in an undecided row (one
    Asked per compared cell); where an interrupted round left one image behind, only it catches up."""
    asking: dict[tuple, list] = defaultdict(list)
    for row in undecided:
        asking[row.cell].append(row)
    selected = (watch.baseline.key, watch.candidate.key)
    last: dict[tuple[str, str], int] = defaultdict(lambda: -1)  # (image, cell) -> its last repetition
    groups: dict[tuple, dict[tuple[str, str], Cell]] = defaultdict(dict)
    for value, image_runs in runs.items():
        for r in image_runs:
            last[(value, r.cell.key)] = max(last[(value, r.cell.key)], r.repetition)
            key = tuple(names.params_text(r.cell, leave_out=selected) if f == "params" else getattr(r, f)
                        for f in fields)
            if key in asking:
                groups[key][(value, r.cell.key)] = r.cell
    out = []
    for key, cells in groups.items():
        top = max(last[k] for k in cells)
        behind = [k for k in cells if last[k] < top]
        extras = tuple(ExtraRun(cells[k], last[k] + 1, sides[k[0]]) for k in behind or list(cells))
        ordered = tuple(sorted(extras, key=lambda x: (x.side != "candidate", x.repetition, str(x.cell))))
        out.append(Asked(tuple(asking[key]), ordered))
    return sorted(out, key=lambda a: (a.extras[0].repetition, str(a.extras[0].cell)))


def _image_s(campaign: Campaign, plan: list[ExtraRun]) -> float:
    """One image's runs of a round: its boards measure in parallel, a board's runs one after another."""
    per_target: dict[str, list[tuple[Cell, int]]] = defaultdict(list)
    for x in plan:
        per_target[x.cell.target].append((x.cell, x.repetition))
    return max((estimate_s(campaign, r) for r in per_target.values()), default=0.0)
