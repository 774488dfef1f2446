"""The [matrix] and [[exclude]] tables of a campaign -> its cells.

Every key of a [matrix] table is an axis when it holds a list and a fixed value otherwise; the keys
are the benchmark's params (each value read by its parser), plus `benchmark`, `load` and `tuning`
(jitterlab/tunings/: each cell's runs are measured under it; "none" by default). Cells are
counted before they are made, so a matrix of a billion cells is refused, never expanded. An
[[exclude]] rule names values the matrix has; a rule that matches no cell is refused (a misspelt
value would otherwise exclude nothing, silently). What is left of a table, its benchmark pairs
(Benchmark.pair: squarewave keeps each impl on the pins it drives) and says what it left out.

A table may also set its own `duration` (never an axis): its cells' runs last that long instead of
campaign.duration, e.g. a slow period's table runs longer so that it holds as many periods as the
fast ones. A cell keeps one duration under every tuning: a tuning is compared with none on runs of
one length.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from jitterlab import plugins
from jitterlab.model.errors import UserError, Where, shown
from jitterlab.model.params import ParamValue
from jitterlab.model.records import NO_TUNING, TUNING_KEY, Cell
from jitterlab.model.registry import did_you_mean
from jitterlab.model.units import MAX_CAMPAIGN_NS, parse_duration_ns

MAX_CELLS = 100_000
COMMON = ("benchmark", "load", TUNING_KEY)
DURATION = "duration"  # a table's own run duration: a setting of its cells, not an axis


@dataclass(frozen=True)
class Exclude:
    """One [[exclude]] rule: key -> the values it drops, and how those values are written."""

    where: str
    allowed: Mapping[str, frozenset]
    show: Mapping[str, Callable[[ParamValue], str]]

    def matches(self, cell: Cell) -> bool:
        return all(_value(cell, key) in values for key, values in self.allowed.items())


@dataclass(frozen=True)
class Matrix:
    every: tuple[Cell, ...]  # before exclusion
    cells: tuple[Cell, ...]  # what runs
    excludes: tuple[Exclude, ...]
    pairing: tuple[str, ...] = ()  # what the benchmarks paired and left out, for --dry-run
    # a table's own duration for each of its cells, keyed by the cell without its tuning
    durations: Mapping[Cell, int] = field(default_factory=dict)
    tables_durations: tuple[tuple[str, int], ...] = ()  # ("matrix[1]", ns) of each table with one

    def check_excludes(self) -> None:
        """Refuse a rule that matches no cell: it was meant to drop something, and drops nothing."""
        for rule in self.excludes:
            if not any(rule.matches(c) for c in self.every):
                raise UserError(
                    f"{rule.where}: matches no cell of the matrix, so it excludes nothing; check its "
                    f"keys and values against the matrix ({_taken(self.every, rule)})"
                )


def read_matrix(data: Mapping[str, object], where: str, targets: Sequence[str]) -> Matrix:
    """[matrix] (one table) or [[matrix]] (several, e.g. one per benchmark), less [[exclude]]."""
    raw = data.get("matrix")
    if raw is None:
        raise UserError(f"{where}: missing [matrix] table; see examples/quickstart.toml")
    tables = raw if isinstance(raw, list) else [raw]
    if not tables or not all(isinstance(t, dict) for t in tables):
        raise UserError(f"{where}: matrix: expected a [matrix] table or [[matrix]] tables")
    per_table: list[tuple[str, list[Cell], int | None]] = []
    every: list[Cell] = []
    for i, table in enumerate(tables):
        prefix = "matrix" if not isinstance(raw, list) else f"matrix[{i}]"
        cells = _table_cells(table, f"{where}: {prefix}.", targets, MAX_CELLS - len(every))
        per_table.append((prefix, cells, _duration(table, f"{where}: {prefix}.{DURATION}")))
        every += cells
    excludes = _excludes(data, where, {c.benchmark for c in every}, targets)
    kept: list[Cell] = []
    notes: list[str] = []
    durations: dict[Cell, tuple[int, str]] = {}
    for prefix, cells, duration_ns in per_table:
        left = [c for c in cells if not any(rule.matches(c) for rule in excludes)]
        for name in dict.fromkeys(c.benchmark for c in left):  # each benchmark pairs its own values
            paired, said = plugins.BENCHMARKS.get(name, "benchmark").pair(
                [c for c in cells if c.benchmark == name], [c for c in left if c.benchmark == name],
                Where(where, (prefix,)))
            kept += paired
            notes += [f"{prefix}: {line}" for line in said]
            for cell in paired if duration_ns is not None else ():
                bare = cell.with_tuning(NO_TUNING)
                other = durations.setdefault(bare, (duration_ns, prefix))
                if other[0] != duration_ns:
                    raise UserError(
                        f"{where}: {prefix}.{DURATION}: {other[1]} gives its cell {bare.key} another "
                        "duration under another tuning; a tuning is compared with none on runs of one "
                        f"length: give both tables the same {DURATION}")
    if len(set(kept)) != len(kept):
        raise UserError(f"{where}: matrix: two [[matrix]] tables give the same cell; remove one of them")
    if not kept:
        raise UserError(f"{where}: exclude: every cell of the matrix is excluded; nothing to run")
    return Matrix(tuple(every), tuple(kept), tuple(excludes), tuple(notes),
                  {cell: ns for cell, (ns, _) in durations.items()},
                  tuple((prefix, ns) for prefix, _, ns in per_table if ns is not None))


def _duration(table: Mapping[str, object], where: str) -> int | None:
    """A table's own run duration in ns, None when it has none (campaign.duration then)."""
    if DURATION not in table:
        return None
    value = table[DURATION]
    if isinstance(value, list):
        raise UserError(f"{where}: one duration per table, not a list (it is not an axis); write one "
                        f'[[matrix]] table per duration, e.g. duration = "{value[0] if value else "5s"}"')
    return parse_duration_ns(value, where, MAX_CAMPAIGN_NS)


def check_tuning(value: object, where: str) -> None:
    """A tuning's name, or several applied together ("irq-away+cpu-dma-latency", as loads combine);
    UserError naming `where` and the closest name otherwise."""
    if not isinstance(value, str):
        plugins.TUNINGS.get(value, where)  # type: ignore[arg-type]  (says what it expected)
        return
    parts = value.split("+")
    for part in parts:
        plugins.TUNINGS.get(part, where)
    if len(parts) > 1 and (len(set(parts)) != len(parts) or NO_TUNING in parts):
        raise UserError(f"{where}: {shown(value)} names a tuning twice or with none; name each once, "
                        "e.g. irq-away+cpu-dma-latency")


def _value(cell: Cell, key: str) -> object:
    common = {"target": cell.target, "benchmark": cell.benchmark, "load": cell.load, TUNING_KEY: cell.tuning}
    return common[key] if key in common else cell.param(key, None)  # type: ignore[arg-type]


def _taken(cells: Sequence[Cell], rule: Exclude) -> str:
    """The values the matrix gives the keys of a rule, e.g. "load takes cpu, idle"."""
    parts = []
    for key in rule.allowed:
        show = rule.show.get(key, str)
        values = sorted({show(v) for c in cells if (v := _value(c, key)) is not None})  # type: ignore[arg-type]
        listed = ", ".join(values[:20]) + (", ..." if len(values) > 20 else "")
        parts.append(f"{key} takes {listed or 'no value'}")
    return "; ".join(parts)


def _values(table: Mapping[str, object], key: str, where: str, default: object = None) -> list[object]:
    value = table.get(key, default)
    values = value if isinstance(value, list) else [value]
    if not values:
        raise UserError(f"{where}{key}: the list is empty; give at least one value")
    return values


def _table_cells(table: Mapping[str, object], where: str, targets: Sequence[str], room: int) -> list[Cell]:
    """The cells of one [matrix] table; at most `room` of them (counted before they are made)."""
    benchmarks = _values(table, "benchmark", where, "squarewave")
    loads = _values(table, "load", where, "idle")
    tunings = _values(table, TUNING_KEY, where, NO_TUNING)
    for tuning in tunings:
        check_tuning(tuning, f"{where}{TUNING_KEY}")
    for name in benchmarks:
        if not isinstance(name, str):
            raise UserError(f"{where}benchmark: expected names (strings), got {shown(name)}")
        plugins.BENCHMARKS.get(name, f"{where}benchmark")
    for load in loads:
        if not isinstance(load, str):
            raise UserError(f"{where}load: expected names (strings), got {shown(load)}")
        parts = load.split("+")
        for part in parts:
            plugins.LOADS.get(part, f"{where}load")
        if len(set(parts)) != len(parts):
            raise UserError(f"{where}load: {shown(load)} names a load twice; name each once")
    for key, values in (("benchmark", benchmarks), ("load", loads), (TUNING_KEY, tunings)):
        if len(set(values)) != len(values):  # type: ignore[arg-type]
            raise UserError(f"{where}{key}: a value is listed twice")
    cells: list[Cell] = []
    for name in benchmarks:
        bench: plugins.Cells = plugins.BENCHMARKS.get(str(name), f"{where}benchmark")
        params = {p.name: p for p in bench.params}
        unknown = [k for k in table if k not in params and k not in (*COMMON, DURATION)]
        if unknown:
            hint = did_you_mean(unknown[0], [*params, *COMMON, DURATION])
            raise UserError(
                f"{where}{shown(unknown[0])[1:-1]}: unknown key for benchmark {name!r}; {hint}"
                f"known: {', '.join([*COMMON, DURATION, *params])}"
            )
        axes: list[list[tuple[str, ParamValue] | None]] = []
        for param in bench.params:
            if param.name not in table and param.default is None:
                raise UserError(
                    f"{where}{param.name}: missing; benchmark {name!r} needs it "
                    f"({param.help}), e.g. {param.name} = {param.example}"
                )
            if param.whole:  # a list here is the value itself, not an axis
                raw_values = [table.get(param.name, param.default)]
            else:
                raw_values = _values(table, param.name, where, param.default)
            parsed = [param.parse(v, f"{where}{param.name}") for v in raw_values]
            if len(set(parsed)) != len(parsed):
                raise UserError(f"{where}{param.name}: a value is listed twice")
            axes.append([(param.name, v) for v in parsed])
            if param.added:  # at its default the key is left out: cells stored before it match
                default = param.parse(param.default, param.name)
                axes[-1] = [None if v == default else (k, v) for k, v in axes[-1]]
        count = len(targets) * len(loads) * len(tunings) * math.prod(len(axis) for axis in axes)
        if count > room - len(cells):
            raise UserError(
                f"{where}benchmark: the matrix gives over {MAX_CELLS} cells ({count} of {name!r} in "
                "this table); measure fewer values per axis, or split the campaign"
            )
        # the tuning varies fastest: a cell and its tuned twins run one after the other, under one load
        for target, load, *values, tuning in itertools.product(targets, loads, *axes, tunings):
            cell = Cell(target, str(name), str(load), tuple(v for v in values if v is not None))
            cells.append(cell.with_tuning(str(tuning)))
    return cells


def _excludes(data: Mapping[str, object], where: str, benchmarks: set[str],
              targets: Sequence[str]) -> list[Exclude]:
    raw = data.get("exclude", [])
    if not isinstance(raw, list):
        raise UserError(f"{where}: exclude: expected [[exclude]] tables")
    params = {
        p.name: p for name in sorted(benchmarks) for p in plugins.BENCHMARKS.get(name, "benchmark").params
    }
    known = sorted({*params, *COMMON, "target"})
    rules = []
    for i, rule in enumerate(raw):
        key = f"{where}: exclude[{i}]"
        if not isinstance(rule, dict) or not rule:
            raise UserError(f"{key}: expected a non-empty [[exclude]] table of axis = value")
        for axis in rule:
            if axis not in known:
                raise UserError(f"{key}.{shown(axis)[1:-1]}: unknown key; {did_you_mean(axis, known)}"
                                f"known: {', '.join(known)}")
        allowed: dict[str, frozenset] = {}
        for axis, value in rule.items():
            whole = axis in params and params[axis].whole
            values = value if isinstance(value, list) and not whole else [value]
            at = f"{key}.{axis}"
            if not values:
                raise UserError(f"{at}: the list is empty; give at least one value")
            if axis in params:
                allowed[axis] = frozenset(params[axis].parse(v, at) for v in values)
                continue
            for v in values:  # the names the matrix uses: a misspelt one would exclude nothing
                if not isinstance(v, str):
                    raise UserError(f"{at}: expected names (strings), got {shown(v)}")
                if axis == "target" and v not in targets:
                    raise UserError(f"{at}: no target {shown(v)}; {did_you_mean(v, targets)}"
                                    f"targets: {', '.join(targets)}")
                if axis == "benchmark":
                    plugins.BENCHMARKS.get(v, at)
                if axis == TUNING_KEY:
                    check_tuning(v, at)
                for part in v.split("+") if axis == "load" else ():
                    plugins.LOADS.get(part, at)
            allowed[axis] = frozenset(values)
        show = {p.name: p.show for p in params.values()}
        rules.append(Exclude(key, allowed, show))
    return rules
