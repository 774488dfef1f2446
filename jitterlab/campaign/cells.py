"""How a cell reads for people, by the registered benchmarks: its benchmark's own short label, and
its parameters as written in a campaign (period=1ms, size=64, bitrate=100M, breaktrace=off), in the
benchmark's order, defaults left out unless they tell the cells shown together apart
(`names().among(cells)`, model.cellnames); and which run labels tell cells apart
(image=1.10) rather than repetitions (capture=3).

The benchmarks are looked up when a cell is first named, not when this module is imported, so code
that only groups runs by their labels does not load every plug-in.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Sequence
from functools import cache
from typing import TYPE_CHECKING

from jitterlab.model.cellnames import CellNames
from jitterlab.model.params import Param
from jitterlab.model.records import Cell

if TYPE_CHECKING:
    from jitterlab.model.records import RunRecord


def _params_of(benchmark: str) -> Sequence[Param]:
    from jitterlab import plugins

    if benchmark not in plugins.BENCHMARKS:
        return ()
    return tuple(plugins.BENCHMARKS.get(benchmark, "benchmark").params)


def _label_of(cell: Cell) -> str | None:
    from jitterlab import plugins

    if cell.benchmark not in plugins.BENCHMARKS:
        return None
    bench: plugins.Cells = plugins.BENCHMARKS.get(cell.benchmark, "benchmark")
    # a key added later is left out of a cell at its default (matrix.py): the cell is whole without it
    return bench.label(cell) if all(cell.has(p.name) or p.added for p in bench.params) else None


@cache
def names() -> CellNames:
    """Cell naming by the registered benchmarks (for analysis.compare and analysis.trend)."""
    return CellNames(_params_of, _label_of)


def params_text(cell: Cell, keys: Iterable[str] | None = None, leave_out: Iterable[str] = (),
                *, defaults: bool = False) -> str:
    """"impl=c-fifo period=1ms probe=vpin": the parameters (or only `keys`), values as written,
    those at their default left out unless `defaults`."""
    return names().params_text(cell, keys, leave_out, defaults=defaults)


def label(cell: Cell) -> str:
    """The benchmark's own short name of the cell ("c-fifo 1ms cpu (vpin)"), else a generic one."""
    return names().label(cell)


def show_value(cell: Cell, key: str) -> str:
    """One parameter's value as written in a campaign ("1ms" for a period of 1000000 ns)."""
    return names().show_value(cell, key)


def identity_labels(runs: Sequence[RunRecord]) -> list[str]:
    """The run labels that tell cells apart, in name order: those that differ between runs, except
    labels that only number repetitions. A label set for a whole campaign (`run --label
    image=1.11`, [campaign.labels]) is identity; a label given run by run (`import --label
    capture=3`) is a repetition label when no two runs of one cell share a value of it, once the
    other identity labels are taken into account (keys with more values are judged first)."""
    values: dict[str, set[str]] = defaultdict(set)
    per_campaign: dict[str, dict[int, set[str]]] = defaultdict(lambda: defaultdict(set))
    for r in runs:
        for k, v in r.labels.items():
            values[k].add(str(v))
            per_campaign[k][r.campaign_id].add(str(v))
    varying = [k for k in sorted(values) if len({str(r.labels.get(k)) for r in runs}) > 1]
    identity = list(varying)
    for key in sorted(varying, key=lambda k: (-len(values[k]), k)):
        if all(len(v) == 1 for v in per_campaign[key].values()):
            continue  # one value per campaign: a campaign label, always identity
        others = [k for k in identity if k != key]
        groups: dict[tuple, list[str]] = defaultdict(list)
        for r in runs:
            cell = json.dumps([r.cell.key, *(str(r.labels.get(k)) for k in others)])
            groups[(cell,)].append(str(r.labels.get(key)))
        if any(len(g) > 1 for g in groups.values()) and all(len(set(g)) == len(g) for g in groups.values()):
            identity.remove(key)
    return identity


def labels_text(run: RunRecord, keys: Sequence[str]) -> str:
    """"image=1.10, board=b" for the given label keys the run has ("" when it has none of them): a
    key the run lacks is left out, never shown as "image=" with nothing after it."""
    return ", ".join(f"{k}={run.labels[k]}" for k in keys if k in run.labels)
