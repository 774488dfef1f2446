"""`jitterlab tune`'s table, from the verdicts of a real comparison on synthetic runs with known
answers: one row per tuning; better, worse and undecided each name how many cells and the first few
with their change and interval, the rest counted; same counted; the cost; refused cells counted
beside the undecided. Its structure holds on a narrow (80 columns) and a wide (200) terminal."""

from __future__ import annotations

import re

import pytest
from rich.console import Console

from jitterlab.analysis.compare import Selector, compare
from jitterlab.cli.commands.tune import MAX_CELLS_NAMED, _table
from jitterlab.execution.tune import BASELINE, Tried, cell_verdicts, cost_of
from jitterlab.execution.until_decided import Ended
from jitterlab.model.fakes import cell, run_record
from jitterlab.model.records import TUNING_KEY, Metric

TUNING = "irq-away"
NONE = [100.0, 104.0, 97.0, 102.0, 99.0, 101.0]
# per cell, the tuned runs' values: lower is better
BETTER = [50.0, 52.0, 48.5, 51.0, 49.5, 50.5]
WORSE = [200.0, 208.0, 194.0, 204.0, 198.0, 202.0]
UNDECIDED = [40.0, 190.0, 70.0, 160.0, 101.0, 100.0]
CELLS = {"a": BETTER, "b": BETTER, "c": BETTER, "d": BETTER, "e": BETTER,  # 5 better: 3 named, 2 counted
         "f": WORSE, "g": UNDECIDED, "h": UNDECIDED, "i": UNDECIDED, "j": UNDECIDED, "k": NONE}


def _tried() -> Tried:
    runs = []
    for name, tuned in CELLS.items():
        base = cell("fake", {"case": name})
        for tuning, values in (("none", NONE), (TUNING, tuned)):
            for rep, value in enumerate(values):
                runs.append(run_record(base.with_tuning(tuning), id=f"{name}-{tuning}-{rep}", repetition=rep,
                                       metrics=[Metric("fake_value", value, "", direction="lower")]))
    comparison = compare(runs, BASELINE, Selector(TUNING_KEY, TUNING), metrics=["fake_value"])
    ended = Ended("max-runs", rows=comparison.rows, comparison=comparison)
    tried = Tried(TUNING, cost_of(TUNING), refused={"x": "the kernel has no IRQ affinity"},
                  cells=cell_verdicts(comparison.rows), ended=ended)
    return tried


def _render(width: int) -> str:
    out = Console(width=width, record=True, force_terminal=False, color_system=None)
    out.print(_table([_tried(), Tried("cpu-dma-latency", cost_of("cpu-dma-latency"))]))
    return out.export_text()


def test_the_verdicts_are_the_known_answers():
    tried = _tried()
    # k: the same values under both: same (equivalent within the metric's margin)
    assert [tried.count(v) for v in ("better", "worse", "same", "undecided")] == [5, 1, 1, 4]


def _rows(text: str) -> list[list[str]]:
    """The table's body as rows of column texts, each column's wrapped lines joined by a space."""
    rows: list[list[str]] = []
    body = text[text.index("┡"):].splitlines()[1:]
    for line in body:
        if not line.startswith("│"):
            break
        cols = [c.strip() for c in line.strip("│").split("│")]
        if cols[0] or not rows:
            rows.append(cols)
        else:
            rows[-1] = [f"{a} {b}".strip() for a, b in zip(rows[-1], cols, strict=True)]
    return rows


@pytest.mark.parametrize("width", [80, 200])
def test_the_table_names_better_worse_and_undecided_cells_with_their_interval(width):
    text = _render(width)
    assert all(len(line) <= width for line in text.splitlines())
    head = next(x for x in text.splitlines() if x.startswith("┃"))
    header = [c.strip() for c in head.strip("┃").split("┃")]
    assert header == ["tuning", "better", "worse", "same", "undecided", "cost"]
    [tuned, refused] = _rows(text)
    assert tuned[0] == TUNING and refused[0] == "cpu-dma-latency"  # names whole, however narrow
    change = r"case=(?P<case>\w): fake_value [-+][\d.]+ % \[[-+][\d.]+ % – [-+][\d.]+ %\]"

    def named(column: str) -> tuple[int, list[str], str]:
        count, _, rest = column.partition(": ")
        cases = [m["case"] for m in re.finditer(change, rest)]
        return int(count), cases, re.sub(change, "", rest).strip("; ")

    # the first MAX_CELLS_NAMED cells with their change and interval, then the rest counted
    assert named(tuned[1]) == (5, ["a", "b", "c"], f"and {5 - MAX_CELLS_NAMED} more")
    assert named(tuned[2]) == (1, ["f"], "")
    assert tuned[3] == "1"
    assert named(tuned[4]) == (4, ["g", "h", "i"], f"and {4 - MAX_CELLS_NAMED} more (1 refused)")
    assert tuned[5] == cost_of(TUNING)
    # refused everywhere: nothing measured, said below the table; its cost still given
    assert refused[1:5] == ["—"] * 4 and refused[5] == cost_of("cpu-dma-latency")
