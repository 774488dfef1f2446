"""How a cell reads for people: its benchmark's own short label, and its parameters as written
in a campaign (period=1ms, size=64, bitrate=100M, breaktrace=off), in the benchmark's order,
defaults left out; and which run labels tell cells apart (image=1.10) rather than repetitions
(capture=3)."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Sequence
from functools import cache
from typing import TYPE_CHECKING

from jitterlab import plugins
from jitterlab.model.records import Cell, ParamValue

if TYPE_CHECKING:
    from jitterlab.model.records import RunRecord


def _params(benchmark: str) -> dict:
    if benchmark not in plugins.BENCHMARKS:
        return {}
    bench = plugins.BENCHMARKS.get(benchmark, "benchmark")
    return {p.name: p for p in getattr(bench, "params", ())}


def _show(benchmark: str, key: str, value: ParamValue | None) -> str:
    param = _params(benchmark).get(key)
    if isinstance(value, bool) and (param is None or param.show is str):
        return "true" if value else "false"  # as TOML writes it
    return param.show(value) if param is not None else str(value)


@cache
def _default(benchmark: str, key: str) -> object:
    """The canonical default of a key (None when it has none or it cannot be read)."""
    param = _params(benchmark).get(key)
    if param is None or param.default is None:
        return None
    try:
        return param.parse(param.default, key)
    except Exception:  # a default that needs the target to be read: never equal
        return None


def is_default(cell: Cell, key: str) -> bool:
    default = _default(cell.benchmark, key)
    return default is not None and cell.param(key) == default and type(cell.param(key)) is type(default)


def ordered(cell: Cell) -> list[str]:
    """The cell's parameter names in its benchmark's order (unknown ones last, by name)."""
    shown = _params(cell.benchmark)
    names = [name for name, _ in cell.params]
    return [k for k in shown if k in names] + sorted(k for k in names if k not in shown)


def params_text(cell: Cell, keys: Iterable[str] | None = None, leave_out: Iterable[str] = (),
                *, defaults: bool = False) -> str:
    """"impl=c-fifo period=1ms probe=vpin": the parameters (or only `keys`), values as written,
    those at their default left out unless `defaults`."""
    wanted, skip = None if keys is None else set(keys), set(leave_out)
    return " ".join(f"{k}={_show(cell.benchmark, k, cell.param(k))}" for k in ordered(cell)
                    if (wanted is None or k in wanted) and k not in skip
                    and (defaults or not is_default(cell, k)))


def label(cell: Cell) -> str:
    """The benchmark's own short name of the cell ("c-fifo 1ms cpu (vpin)"), else a generic one."""
    if cell.benchmark in plugins.BENCHMARKS:
        bench = plugins.BENCHMARKS.get(cell.benchmark, "benchmark")
        if all(cell.has(p.name) for p in bench.params):
            return bench.label(cell)
    return " ".join(p for p in (cell.benchmark, params_text(cell), cell.load) if p)


def show_value(cell: Cell, key: str) -> str:
    """One parameter's value as written in a campaign ("1ms" for a period of 1000000 ns)."""
    return _show(cell.benchmark, key, cell.param(key))


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
    """"image=1.10, board=b" for the given label keys of a run ("" without keys)."""
    return ", ".join(f"{k}={run.labels.get(k, '')}" for k in keys)
