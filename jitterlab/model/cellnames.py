"""How a cell reads for people: its parameters as written in a campaign (period=1ms, size=64,
breaktrace=off), in the benchmark's order, and the benchmark's own short label of the cell.

One rule everywhere: a parameter at its default is left out, unless it tells apart the cells shown
together (`among(cells)`): "protocol=tcp" is named beside "protocol=udp bitrate=100M", never left
out so that "iperf3 idle" reads like a cell without parameters.

Only the benchmarks know their keys, and the model imports no plug-in: whoever names cells (the
report, the command line) builds a CellNames with `params_of` (benchmark name -> its Params) and
`label_of`, and hands it to the code that names (analysis.compare, analysis.trend). PLAIN knows no
benchmark: every key shown, values as stored.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from jitterlab.model.params import Param
from jitterlab.model.records import Cell

ParamsOf = Callable[[str], Sequence[Param]]
LabelOf = Callable[[Cell], "str | None"]


def _no_params(benchmark: str) -> Sequence[Param]:
    return ()


def _no_label(cell: Cell) -> str | None:
    return None


class CellNames:
    """Cell naming by the benchmarks' Params: `params_of(benchmark)` gives a benchmark's keys in
    its order (() for one it does not know), `label_of(cell)` its own short label (None: none)."""

    def __init__(self, params_of: ParamsOf = _no_params, label_of: LabelOf = _no_label) -> None:
        self._params_of = params_of
        self._label_of = label_of
        self._defaults: dict[tuple[str, str], object] = {}
        self._telling: frozenset[tuple[str, str]] = frozenset()  # (benchmark, key) named at default too

    def among(self, cells: Iterable[Cell]) -> CellNames:
        """This naming for cells shown together: a key whose value differs between these cells of
        one benchmark is named in each of them, at its default too."""
        values: dict[tuple[str, str], set[str]] = {}
        for cell in cells:
            for key, value in cell.params:
                values.setdefault((cell.benchmark, key), set()).add(repr(value))
        named = CellNames(self._params_of, self._label_of)
        named._defaults = self._defaults
        named._telling = frozenset(k for k, v in values.items() if len(v) > 1)
        return named

    def params(self, benchmark: str) -> dict[str, Param]:
        return {p.name: p for p in self._params_of(benchmark)}

    def show_value(self, cell: Cell, key: str) -> str:
        """One parameter's value as written in a campaign ("1ms" for a period of 1000000 ns)."""
        param = self.params(cell.benchmark).get(key)
        value = cell.param(key)
        if isinstance(value, bool) and (param is None or param.show is str):
            return "true" if value else "false"  # as TOML writes it
        return param.show(value) if param is not None else str(value)  # type: ignore[arg-type]

    def default(self, benchmark: str, key: str) -> object:
        """The canonical default of a key (None when it has none or it cannot be read)."""
        if (benchmark, key) not in self._defaults:
            param = self.params(benchmark).get(key)
            value = None
            if param is not None and param.default is not None:
                try:
                    value = param.parse(param.default, key)
                except Exception:  # a default that needs the target to be read: never equal
                    value = None
            self._defaults[(benchmark, key)] = value
        return self._defaults[(benchmark, key)]

    def is_default(self, cell: Cell, key: str) -> bool:
        default = self.default(cell.benchmark, key)
        value = cell.param(key)
        return default is not None and value == default and type(value) is type(default)

    def ordered(self, cell: Cell) -> list[str]:
        """The cell's parameter names in its benchmark's order (unknown ones last, by name)."""
        known = self.params(cell.benchmark)
        names = [name for name, _ in cell.params]
        return [k for k in known if k in names] + sorted(k for k in names if k not in known)

    def params_text(self, cell: Cell, keys: Iterable[str] | None = None, leave_out: Iterable[str] = (),
                    *, defaults: bool = False) -> str:
        """"impl=c-fifo period=1ms probe=vpin": the parameters (or only `keys`), values as written,
        those at their default left out unless `defaults`."""
        wanted, skip = None if keys is None else set(keys), set(leave_out)
        return " ".join(f"{k}={self.show_value(cell, k)}" for k in self.ordered(cell)
                        if (wanted is None or k in wanted) and k not in skip
                        and (defaults or (cell.benchmark, k) in self._telling
                             or not self.is_default(cell, k)))

    def label(self, cell: Cell) -> str:
        """The benchmark's own short name of the cell ("c-fifo 1ms cpu (vpin)"), else a generic one."""
        own = self._label_of(cell)
        if own is not None:
            return own
        return " ".join(p for p in (cell.benchmark, self.params_text(cell), cell.load) if p)


PLAIN = CellNames()
