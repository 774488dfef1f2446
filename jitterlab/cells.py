"""How a cell reads for people: its benchmark's own short label, and its parameters as written
in a campaign (period=1ms, size=64, bitrate=100M), in the benchmark's order."""

from __future__ import annotations

from collections.abc import Iterable

from jitterlab import plugins
from jitterlab.records import Cell


def _shows(benchmark: str) -> dict:
    if benchmark not in plugins.BENCHMARKS:
        return {}
    bench = plugins.BENCHMARKS.get(benchmark, "benchmark")
    return {p.name: p.show for p in getattr(bench, "params", ())}


def ordered(cell: Cell) -> list[str]:
    """The cell's parameter names in its benchmark's order (unknown ones last, by name)."""
    shown = _shows(cell.benchmark)
    names = [name for name, _ in cell.params]
    return [k for k in shown if k in names] + sorted(k for k in names if k not in shown)


def params_text(cell: Cell, keys: Iterable[str] | None = None, leave_out: Iterable[str] = ()) -> str:
    """"impl=c-fifo period=1ms probe=vpin": the parameters (or only `keys`), values as written."""
    shown, wanted, skip = _shows(cell.benchmark), None if keys is None else set(keys), set(leave_out)
    return " ".join(f"{k}={shown.get(k, str)(cell.param(k))}" for k in ordered(cell)
                    if (wanted is None or k in wanted) and k not in skip)


def label(cell: Cell) -> str:
    """The benchmark's own short name of the cell ("c-fifo 1ms cpu (vpin)"), else a generic one."""
    if cell.benchmark in plugins.BENCHMARKS:
        bench = plugins.BENCHMARKS.get(cell.benchmark, "benchmark")
        if all(cell.has(p.name) for p in bench.params):
            return bench.label(cell)
    return " ".join(p for p in (cell.benchmark, params_text(cell), cell.load) if p)


def show_value(cell: Cell, key: str) -> str:
    """One parameter's value as written in a campaign ("1ms" for a period of 1000000 ns)."""
    return _shows(cell.benchmark).get(key, str)(cell.param(key))
