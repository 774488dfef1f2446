"""Campaign files: TOML -> validated Campaign -> the cells of its matrix.

Every error names the file, the key and the fix, and is raised before anything runs.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from jitterlab import plugins
from jitterlab.errors import UserError
from jitterlab.params import ParamValue
from jitterlab.records import Cell, RunSettings
from jitterlab.registry import did_you_mean
from jitterlab.targets.registry import check_options as check_target_options
from jitterlab.units import parse_duration_ns

_CAMPAIGN_KEYS = {
    "name": 'a short name, e.g. "quickstart"',
    "description": "free text",
    "repetitions": "runs per cell, e.g. 3",
    "duration": 'time per run, e.g. "5s"',
    "warmup": 'time dropped at the start of each run, e.g. "50ms"',
    "load_warmup": 'time a load runs before the measurement starts, e.g. "300ms"',
    "blind_threshold": 'gap between two observer polls that counts as blind, e.g. "5us"',
    "run_timeout": "extra time a run may take beyond its duration before it is killed",
    "on_missing_rt": '"error" (default) or "fallback" when SCHED_FIFO is not permitted',
    "labels": "a table of strings attached to every run",
    "cpus": 'CPU placement: program = "0", probe = "1", load = "0-1" (CPU lists like taskset -c)',
    "envelope": 'rules of the report\'s operational envelope, e.g. ["max", "p99"] (also "p99.9", "p99.99")',
}
_ENVELOPE_RULES = ("max", "p99", "p99.9", "p99.99")
_CPU_ROLES = ("program", "probe", "load")
_TOP_KEYS = {"campaign", "target", "matrix", "exclude", "loads", "probes", "pins"}
# option tables of plug-ins: kind -> its registry (looked up late: plugins imports this module's users)
_OPTION_TABLES = {
    "loads": lambda: plugins.LOADS,
    "probes": lambda: plugins.PROBES,
    "pins": lambda: plugins.PINS,
}
# keys every [[target]] has; the others are options of its kind, checked by the kind's own check
_TARGET_KEYS = {"name", "kind"}


@dataclass(frozen=True)
class TargetSpec:
    name: str
    kind: str
    options: Mapping[str, object] = field(default_factory=dict)


@dataclass(frozen=True)
class Campaign:
    path: Path
    name: str
    description: str
    repetitions: int
    settings: RunSettings
    labels: Mapping[str, str]
    targets: tuple[TargetSpec, ...]
    cells: tuple[Cell, ...]
    cpus: Mapping[str, tuple[int, ...]]
    source: str

    @property
    def fingerprint(self) -> str:
        """Hash of everything that changes what a run measures; resume refuses a mismatch."""
        s = self.settings
        settings = {
            "repetitions": self.repetitions,
            "duration_ns": s.duration_ns,
            "warmup_ns": s.warmup_ns,
            "load_warmup_ns": s.load_warmup_ns,
            "blind_threshold_ns": s.blind_threshold_ns,
            "on_missing_rt": s.on_missing_rt,
            "labels": dict(self.labels),
            "load_options": {k: dict(v) for k, v in s.options.get("loads", {}).items()},
            "cpus": {k: list(v) for k, v in self.cpus.items()},
        }
        for kind in ("probes", "pins"):  # only when set, so older campaigns keep their fingerprint
            if s.options.get(kind):
                settings[f"{kind[:-1]}_options"] = {k: dict(v) for k, v in s.options[kind].items()}
        return hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()[:16]

    def target_kind(self, name: str) -> str:
        return next((t.kind for t in self.targets if t.name == name), "")

    def runs(self) -> list[tuple[Cell, int]]:
        """(cell, repetition) in execution order: repetitions interleaved so drift spreads evenly."""
        return [(c, r) for r in range(self.repetitions) for c in self.cells]


def load_campaign(path: Path) -> Campaign:
    path = Path(path)
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise UserError(f"{path}: no such campaign file; see examples/ for ones to start from") from None
    except OSError as exc:
        raise UserError(f"{path}: cannot read campaign file: {exc.strerror}") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise UserError(f"{path}: not valid TOML: {exc}") from None
    return parse_campaign(data, path, text)


def parse_campaign(data: Mapping[str, object], path: Path, source: str = "") -> Campaign:
    where = str(path)
    _no_unknown(data, _TOP_KEYS, where, "")
    section = _table(data, "campaign", where, required=True)
    _no_unknown(section, set(_CAMPAIGN_KEYS), where, "campaign.")
    name = section.get("name")
    if not isinstance(name, str) or not name.strip():
        raise UserError(f'{where}: campaign.name: give the campaign a name, e.g. name = "quickstart"')
    repetitions = section.get("repetitions", 3)
    if not isinstance(repetitions, int) or isinstance(repetitions, bool) or repetitions < 1:
        raise UserError(f"{where}: campaign.repetitions: expected a whole number >= 1, got {repetitions!r}")

    def duration(key: str, default: str) -> int:
        return parse_duration_ns(section.get(key, default), f"{where}: campaign.{key}")

    on_missing_rt = section.get("on_missing_rt", "error")
    if on_missing_rt not in ("error", "fallback"):
        raise UserError(
            f'{where}: campaign.on_missing_rt: expected "error" or "fallback", got {on_missing_rt!r}'
        )
    labels = _table(section, "labels", where, prefix="campaign.")
    for key, value in labels.items():
        if not isinstance(value, str | int | float) or isinstance(value, bool):
            raise UserError(f'{where}: campaign.labels.{key}: labels are strings, e.g. {key} = "1.10"')
    targets = _targets(data, where)
    settings = RunSettings(
        duration_ns=duration("duration", "5s"),
        warmup_ns=duration("warmup", "50ms"),
        load_warmup_ns=duration("load_warmup", "300ms"),
        blind_threshold_ns=duration("blind_threshold", "5us"),
        run_timeout_ns=duration("run_timeout", "20s"),
        on_missing_rt=on_missing_rt,
        options={kind: _plugin_options(data, kind, where) for kind in _OPTION_TABLES},
        envelope=_envelope(section, where),
    )
    campaign = Campaign(
        path=path,
        name=name.strip(),
        description=str(section.get("description", "")),
        repetitions=repetitions,
        settings=settings,
        labels={str(k): str(v) for k, v in labels.items()},
        targets=targets,
        cells=_cells(data, where, targets),
        cpus=_cpus(section, where),
        source=source,
    )
    for cell in campaign.cells:
        bench = plugins.BENCHMARKS.get(cell.benchmark, "matrix.benchmark")
        bench.check(cell, settings, f"{where}: matrix", campaign.target_kind(cell.target))
    return campaign


def _envelope(section: Mapping[str, object], where: str) -> tuple[str, ...]:
    rules = section.get("envelope", ["max", "p99"])
    if isinstance(rules, str):
        rules = [rules]
    if not isinstance(rules, list) or not rules or any(r not in _ENVELOPE_RULES for r in rules):
        raise UserError(f"{where}: campaign.envelope: expected a list of rules from "
                        f"{', '.join(map(repr, _ENVELOPE_RULES))}, e.g. envelope = [\"max\", \"p99\"]; "
                        f"got {rules!r}")
    return tuple(dict.fromkeys(rules))


def _table(
    data: Mapping[str, object], key: str, where: str, *, required: bool = False, prefix: str = ""
) -> Mapping[str, object]:
    value = data.get(key)
    if value is None:
        if required:
            raise UserError(f"{where}: missing [{prefix}{key}] table; see examples/quickstart.toml")
        return {}
    if not isinstance(value, dict):
        raise UserError(f"{where}: {prefix}{key}: expected a table, e.g. [{prefix}{key}]")
    return value


def _no_unknown(table: Mapping[str, object], known: set[str], where: str, prefix: str) -> None:

    for key in table:
        if key not in known:
            hint = did_you_mean(key, sorted(known))
            raise UserError(f"{where}: {prefix}{key}: unknown key; {hint}known: {', '.join(sorted(known))}")


def _targets(data: Mapping[str, object], where: str) -> tuple[TargetSpec, ...]:
    raw = data.get("target", [{"name": "local", "kind": "local"}])
    if not isinstance(raw, list) or not raw:
        raise UserError(f"{where}: target: expected one or more [[target]] tables")
    specs: list[TargetSpec] = []
    for i, entry in enumerate(raw):
        key = f"target[{i}]"
        if not isinstance(entry, dict):
            raise UserError(f"{where}: {key}: expected a [[target]] table")
        kind = entry.get("kind", "local")
        plugins.TARGETS.get(kind, f"{where}: {key}.kind")
        name = entry.get("name", kind)
        if not isinstance(name, str) or not name or any(c in name for c in "/ \n\t"):
            raise UserError(f"{where}: {key}.name: a target name is one word without '/', got {name!r}")
        if any(s.name == name for s in specs):
            raise UserError(f"{where}: {key}.name: target name {name!r} is used twice; names must differ")
        options = {k: v for k, v in entry.items() if k not in _TARGET_KEYS}
        check_target_options(kind, options, f"{where}: {key}")
        specs.append(TargetSpec(name=name, kind=kind, options=options))
    return tuple(specs)


def _plugin_options(data: Mapping[str, object], kind: str, where: str) -> dict[str, dict[str, object]]:
    """[loads.NAME], [probes.NAME], [pins.NAME]: each plug-in's options, read with its Params."""
    section = _table(data, kind, where)
    registry = _OPTION_TABLES[kind]()
    result: dict[str, dict[str, object]] = {}
    for name, options in section.items():
        spec = registry.get(name, f"{where}: {kind}.{name}")
        if not isinstance(options, dict):
            raise UserError(f"{where}: {kind}.{name}: expected a table of options, e.g. [{kind}.{name}]")
        result[name] = dict(spec.validate(options, f"{where}: {kind}.{name}"))
    return result


_COMMON = ("benchmark", "load")


def _cells(
    data: Mapping[str, object], where: str, targets: tuple[TargetSpec, ...]
) -> tuple[Cell, ...]:
    """[matrix] (one table) or [[matrix]] (several, e.g. one per benchmark) -> cells. Every key is
    an axis when it holds a list and a fixed value otherwise (a `whole` key is always one value);
    keys are the benchmark's params."""
    raw = data.get("matrix")
    if raw is None:
        raise UserError(f"{where}: missing [matrix] table; see examples/quickstart.toml")
    tables = raw if isinstance(raw, list) else [raw]
    if not tables or not all(isinstance(t, dict) for t in tables):
        raise UserError(f"{where}: matrix: expected a [matrix] table or [[matrix]] tables")
    cells: list[Cell] = []
    for i, table in enumerate(tables):
        prefix = "matrix." if not isinstance(raw, list) else f"matrix[{i}]."
        cells += _matrix_cells(table, f"{where}: {prefix}", targets)
    excludes = _excludes(data, where, {c.benchmark for c in cells})
    kept = [c for c in cells if not any(_matches(c, rule) for rule in excludes)]
    if len(set(kept)) != len(kept):
        raise UserError(f"{where}: matrix: two [[matrix]] tables give the same cell; remove one of them")
    if not kept:
        raise UserError(f"{where}: exclude: every cell of the matrix is excluded; nothing to run")
    return tuple(kept)


def _values(table: Mapping[str, object], key: str, where: str, default: object = None) -> list[object]:
    value = table.get(key, default)
    values = value if isinstance(value, list) else [value]
    if not values:
        raise UserError(f"{where}{key}: the list is empty; give at least one value")
    return values


def _matrix_cells(table: Mapping[str, object], where: str, targets: tuple[TargetSpec, ...]) -> list[Cell]:
    benchmarks = _values(table, "benchmark", where, "squarewave")
    loads = _values(table, "load", where, "idle")
    for name in benchmarks:
        if not isinstance(name, str):
            raise UserError(f"{where}benchmark: expected names (strings), got {name!r}")
        plugins.BENCHMARKS.get(name, f"{where}benchmark")
    for load in loads:
        if not isinstance(load, str):
            raise UserError(f"{where}load: expected names (strings), got {load!r}")
        for part in load.split("+"):
            plugins.LOADS.get(part, f"{where}load")
    for key, values in (("benchmark", benchmarks), ("load", loads)):
        if len(set(values)) != len(values):  # type: ignore[arg-type]
            raise UserError(f"{where}{key}: a value is listed twice")
    cells: list[Cell] = []
    for name in benchmarks:
        bench = plugins.BENCHMARKS.get(str(name), f"{where}benchmark")
        params = {p.name: p for p in bench.params}
        unknown = [k for k in table if k not in params and k not in _COMMON]
        if unknown:

            hint = did_you_mean(unknown[0], [*params, *_COMMON])
            raise UserError(
                f"{where}{unknown[0]}: unknown key for benchmark {name!r}; {hint}"
                f"known: {', '.join([*_COMMON, *params])}"
            )
        axes: list[list[tuple[str, ParamValue]]] = []
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
        for target, load, *values in itertools.product(targets, loads, *axes):
            cells.append(Cell(target.name, str(name), str(load), tuple(values)))
    return cells


def _excludes(data: Mapping[str, object], where: str, benchmarks: set[str]) -> list[dict[str, set]]:
    raw = data.get("exclude", [])
    if not isinstance(raw, list):
        raise UserError(f"{where}: exclude: expected [[exclude]] tables")
    params = {
        p.name: p for name in sorted(benchmarks) for p in plugins.BENCHMARKS.get(name, "benchmark").params
    }
    rules = []
    for i, rule in enumerate(raw):
        key = f"exclude[{i}]"
        if not isinstance(rule, dict) or not rule:
            raise UserError(f"{where}: {key}: expected a non-empty [[exclude]] table of axis = value")
        _no_unknown(rule, {*params, *_COMMON, "target"}, where, f"{key}.")
        parsed: dict[str, set] = {}
        for axis, value in rule.items():
            whole = axis in params and params[axis].whole
            values = value if isinstance(value, list) and not whole else [value]
            if axis in params:
                parsed[axis] = {params[axis].parse(v, f"{where}: {key}.{axis}") for v in values}
            else:
                parsed[axis] = {str(v) for v in values}
        rules.append(parsed)
    return rules


def _matches(cell: Cell, rule: Mapping[str, set]) -> bool:
    common = {"target": cell.target, "benchmark": cell.benchmark, "load": cell.load}
    missing = object()
    for axis, allowed in rule.items():
        value = common[axis] if axis in common else cell.param(axis, missing)  # type: ignore[arg-type]
        if value is missing or value not in allowed:
            return False
    return True


def _cpus(section: Mapping[str, object], where: str) -> dict[str, tuple[int, ...]]:
    """[campaign.cpus]: CPU lists per role, written like taskset -c ("0", "0-2,4") or [0, 1]."""
    table = _table(section, "cpus", where, prefix="campaign.")
    _no_unknown(table, set(_CPU_ROLES), where, "campaign.cpus.")
    result = {}
    for role, value in table.items():
        key = f"{where}: campaign.cpus.{role}"
        items = value if isinstance(value, list) else str(value).split(",")
        cpus: set[int] = set()
        for item in items:
            text = str(item).strip()
            lo, _, hi = text.partition("-")
            if not lo.isdigit() or (hi and not hi.isdigit()) or (hi and int(hi) < int(lo)):
                raise UserError(
                    f"{key}: cannot read CPU list {value!r}; write it like taskset -c, "
                    'e.g. "1" or "0-2,4" or [0, 1]'
                )
            cpus.update(range(int(lo), int(hi or lo) + 1))
        if role == "probe" and len(cpus) != 1:
            raise UserError(f'{key}: the probe busy-polls one CPU; give exactly one, e.g. probe = "1"')
        result[role] = tuple(sorted(cpus))
    return result
