"""Campaign files: TOML -> validated Campaign -> the cells of its matrix.

Every error names the file, the key and the fix, and is raised before anything runs.
"""

from __future__ import annotations

import hashlib
import json
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path

from jitterlab import plugins
from jitterlab.campaign.matrix import check_tuning, read_matrix
from jitterlab.model.errors import UserError, Where, shown
from jitterlab.model.labels import CONTROL, MAX_NAME, check_label, printable
from jitterlab.model.records import NO_TUNING, OPTION_KEYS, TUNING_KEY, Cell, RunSettings
from jitterlab.model.registry import did_you_mean
from jitterlab.model.units import MAX_CAMPAIGN_NS, format_ns, parse_duration_ns
from jitterlab.targets.registry import declare

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
    "rt_throttling": '"lift" (default: RT throttling off during the runs of a busy-polling probe, as root, '
                     'restored after) or "keep" (never changed)',
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
# bounds, checked when the file is read (README, "Limits"): nothing later grows without end
MAX_FILE_BYTES = 10 << 20
MAX_REPETITIONS = 100_000
MAX_RUNS = 1_000_000
MAX_RUN_NS = MAX_CAMPAIGN_NS  # any one duration of the campaign: a week
MAX_CPU = 1023  # CPU numbers as the programs' cpu_set_t holds them


@dataclass(frozen=True)
class TargetSpec:
    name: str
    kind: str
    options: Mapping[str, object] = field(default_factory=dict)
    where: str = ""  # its table in messages: "campaign.toml: target[1]"


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
    pairing: tuple[str, ...] = ()  # what the matrix paired and left out ("matrix: ..."), for --dry-run
    # a [[matrix]] table's own duration for its cells (keyed by the cell without its tuning)
    durations: Mapping[Cell, int] = field(default_factory=dict)

    def settings_for(self, cell: Cell) -> RunSettings:
        """How the runs of `cell` are measured: the campaign's settings, with its table's duration."""
        duration_ns = self.durations.get(cell.with_tuning(NO_TUNING))
        return self.settings if duration_ns is None else replace(self.settings, duration_ns=duration_ns)

    @cached_property
    def duration_range_ns(self) -> tuple[int, int]:
        """The shortest and longest run duration of its cells (read at each load start: once)."""
        every = {self.durations.get(c.with_tuning(NO_TUNING), self.settings.duration_ns) for c in self.cells}
        every = every or {self.settings.duration_ns}
        return min(every), max(every)

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
            OPTION_KEYS["loads"]: {k: dict(v) for k, v in s.options.get("loads", {}).items()},
            "cpus": {k: list(v) for k, v in self.cpus.items()},
        }
        for kind in ("probes", "pins"):  # only when set, so older campaigns keep their fingerprint
            if s.options.get(kind):
                settings[OPTION_KEYS[kind]] = {k: dict(v) for k, v in s.options[kind].items()}
        if self.durations:  # the same: only when a table sets its own
            settings["durations_ns"] = {c.key: ns for c, ns in self.durations.items()}
        return hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()[:16]

    def runs(self) -> list[tuple[Cell, int]]:
        """(cell, repetition) in execution order: repetitions interleaved, a round of every cell each,
        every other round in reverse (A B C, C B A, ...): a drift that goes one way (a warming board) puts
        every cell at the same mean time, and a load of the last cells of a round runs on into the next
        round's first cells instead of being started and warmed up again."""
        return [(c, r) for r in range(self.repetitions) for c in (self.cells[::-1] if r % 2 else self.cells)]


def load_campaign(path: Path) -> Campaign:
    path = Path(path)
    try:
        with open(path, "rb") as f:
            raw = f.read(MAX_FILE_BYTES + 1)
    except FileNotFoundError:
        raise UserError(f"{path}: no such campaign file; see examples/ for ones to start from") from None
    except OSError as exc:
        raise UserError(f"{path}: cannot read campaign file: {exc.strerror}") from None
    if len(raw) > MAX_FILE_BYTES:
        raise UserError(f"{path}: over {MAX_FILE_BYTES >> 20} MiB; a campaign file is a short text file")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UserError(
            f"{path}: not UTF-8 text (byte 0x{raw[exc.start]:02x} at offset {exc.start}); "
            "a campaign file is TOML, which is UTF-8: save it as UTF-8"
        ) from None
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
    printable(name, MAX_NAME, f"{where}: campaign.name")
    repetitions = section.get("repetitions", 3)
    if (not isinstance(repetitions, int) or isinstance(repetitions, bool)
            or not 1 <= repetitions <= MAX_REPETITIONS):
        raise UserError(f"{where}: campaign.repetitions: expected a whole number from 1 to "
                        f"{MAX_REPETITIONS}, got {shown(repetitions)}")
    description = section.get("description", "")
    if not isinstance(description, str):
        raise UserError(f'{where}: campaign.description: expected text, e.g. description = "...", '
                        f"got {shown(description)}")

    def duration(key: str, default: str) -> int:
        return parse_duration_ns(section.get(key, default), f"{where}: campaign.{key}", MAX_RUN_NS)

    on_missing_rt = section.get("on_missing_rt", "error")
    if on_missing_rt not in ("error", "fallback"):
        raise UserError(
            f'{where}: campaign.on_missing_rt: expected "error" or "fallback", got {shown(on_missing_rt)}'
        )
    rt_throttling = section.get("rt_throttling", "lift")
    if rt_throttling not in ("lift", "keep"):
        raise UserError(f'{where}: campaign.rt_throttling: expected "lift" or "keep", '
                        f"got {shown(rt_throttling)}")
    labels = _labels(_table(section, "labels", where, prefix="campaign."), where)
    targets, declared = _targets(data, where)
    settings = RunSettings(
        duration_ns=duration("duration", "5s"),
        warmup_ns=duration("warmup", "50ms"),
        load_warmup_ns=duration("load_warmup", "300ms"),
        blind_threshold_ns=duration("blind_threshold", "5us"),
        run_timeout_ns=duration("run_timeout", "20s"),
        on_missing_rt=on_missing_rt,
        options={kind: _plugin_options(data, kind, where) for kind in _OPTION_TABLES},
        envelope=_envelope(section, where),
        rt_throttling=rt_throttling,
    )
    matrix = read_matrix(data, where, [t.name for t in targets])
    for key, ns in (("warmup", settings.warmup_ns), ("blind_threshold", settings.blind_threshold_ns)):
        if ns >= settings.duration_ns:
            raise UserError(
                f"{where}: campaign.{key}: {format_ns(ns)} is not shorter than campaign.duration "
                f"({format_ns(settings.duration_ns)}), so nothing would be measured; shorten it or "
                "lengthen the duration"
            )
        for prefix, table_ns in matrix.tables_durations:
            if ns >= table_ns:
                raise UserError(
                    f"{where}: {prefix}.duration: {format_ns(table_ns)} is not longer than "
                    f"campaign.{key} ({format_ns(ns)}), so nothing would be measured; lengthen it or "
                    f"shorten campaign.{key}"
                )
    cells = matrix.cells
    for key in labels:
        check_label_key(key, cells, f"{where}: campaign.labels.{key}")
    if len(cells) * repetitions > MAX_RUNS:
        raise UserError(
            f"{where}: campaign.repetitions: {len(cells)} cells x {repetitions} repetitions is over "
            f"{MAX_RUNS} runs; measure fewer repetitions or split the campaign"
        )
    campaign = Campaign(
        path=path,
        name=name.strip(),
        description=description,
        repetitions=repetitions,
        settings=settings,
        labels=labels,
        targets=targets,
        cells=cells,
        cpus=_cpus(section, where),
        source=source,
        pairing=matrix.pairing,
        durations=matrix.durations,
    )
    for cell in campaign.cells:
        bench: plugins.Checks = plugins.BENCHMARKS.get(cell.benchmark, "matrix.benchmark")
        cell_settings, at = campaign.settings_for(cell), Where(where, ("matrix",))
        bench.check(cell, cell_settings, at)
        bench.check_target(cell, cell_settings, at, declared[cell.target])
    for spec in targets:
        _check_cpus(campaign, spec.name, declared[spec.name].cpus, where)
    matrix.check_excludes()
    return campaign


def _check_cpus(campaign: Campaign, target: str, n_cpus: int | None, where: str) -> None:
    """What preflight would refuse on a target whose CPUs its [[target]] sets (a VM jitterlab boots):
    a CPU of [campaign.cpus] it lacks, a probe that needs a CPU of its own beside the program on one."""
    if n_cpus is None:
        return
    for role, cpus in campaign.cpus.items():
        if max(cpus) >= n_cpus:
            raise UserError(f"{where}: campaign.cpus.{role}: CPU {max(cpus)} does not exist on target "
                            f"{target!r}, which has {n_cpus} CPUs (0-{n_cpus - 1}, its cpus); give CPUs it "
                            "has or raise its cpus")
    polling = sorted({str(c.param("probe")) for c in campaign.cells if c.target == target
                      and plugins.BENCHMARKS.get(c.benchmark, "matrix.benchmark").needs_probe_cpu(c)})
    if polling and n_cpus == 1:
        raise UserError(f"{where}: matrix.probe: probe {', '.join(polling)} needs a CPU of its own beside "
                        f"the program, and target {target!r} has one CPU; give it cpus = 2, or use probe = "
                        '"self" or a probe outside the board')


def with_tunings(campaign: Campaign, text: str, option: str = "--tuning") -> Campaign:
    """The campaign with its matrix's `tuning` axis replaced by the names of `text` ("none,irq-away";
    "irq-away+cpu-dma-latency" applies both):
    each cell of the matrix once per tuning, the tuning varying fastest as the matrix has it."""
    names = [n.strip() for n in text.split(",")]
    if not all(names):
        raise UserError(f"{option} {shown(text)}: give tuning names separated by commas, e.g. "
                        f"{option} none,irq-away (jitterlab list tunings)")
    if len(set(names)) != len(names):
        raise UserError(f"{option} {shown(text)}: a tuning is named twice; name each once")
    for name in names:
        check_tuning(name, f"{option} {shown(text)}")
    bare = dict.fromkeys(c.with_tuning(NO_TUNING) for c in campaign.cells)
    cells = tuple(c.with_tuning(t) for c in bare for t in names)
    if len(cells) * campaign.repetitions > MAX_RUNS:
        raise UserError(f"{option} {shown(text)}: {len(cells)} cells x {campaign.repetitions} repetitions "
                        f"is over {MAX_RUNS} runs; name fewer tunings")
    return replace(campaign, cells=cells)


def check_label_key(key: str, cells: tuple[Cell, ...], where: str) -> None:
    """A label named like a key of the cells (target, impl, ...) would hide that key: compare and
    --until-decided match a selector against the labels first."""
    if key in {"target", "benchmark", "load", TUNING_KEY} | {k for c in cells for k, _ in c.params}:
        raise UserError(f"{where}: the label {key!r} is named like a key of this campaign's cells, and "
                        f"compare selects by labels first: {key}=... would no longer select cells; name the "
                        f"label otherwise, e.g. {key}_label")


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


def _labels(table: Mapping[str, object], where: str) -> dict[str, str]:
    labels = {}
    for key, value in table.items():
        if not isinstance(value, str | int | float) or isinstance(value, bool):
            raise UserError(f'{where}: campaign.labels.{shown(key)}: labels are strings, e.g. '
                            f'image = "1.10", got {shown(value)}')
        check_label(key, str(value), f"{where}: campaign.labels.{shown(key)[1:-1]}")
        labels[key] = str(value)
    return labels


def _no_unknown(table: Mapping[str, object], known: set[str], where: str, prefix: str) -> None:
    for key in table:
        if key not in known:
            hint = did_you_mean(key, sorted(known))
            raise UserError(f"{where}: {prefix}{shown(key)[1:-1]}: unknown key; {hint}"
                            f"known: {', '.join(sorted(known))}")


def _targets(data: Mapping[str, object], where: str) -> tuple[tuple[TargetSpec, ...], dict]:
    """The [[target]] tables, and each target as it declares itself (registry.declare: what it will
    offer), by name."""
    raw = data.get("target", [{"name": "local", "kind": "local"}])
    if not isinstance(raw, list) or not raw:
        raise UserError(f"{where}: target: expected one or more [[target]] tables")
    specs: list[TargetSpec] = []
    declared = {}
    for i, entry in enumerate(raw):
        key = f"target[{i}]"
        if not isinstance(entry, dict):
            raise UserError(f"{where}: {key}: expected a [[target]] table")
        kind = entry.get("kind", "local")
        plugins.TARGETS.get(kind, f"{where}: {key}.kind")
        name = entry.get("name", kind)
        if (not isinstance(name, str) or not name or len(name) > MAX_NAME or "/" in name
                or any(c.isspace() for c in name) or CONTROL.search(name)):
            raise UserError(f"{where}: {key}.name: a target name is one word of printable characters "
                            f"without '/' (at most {MAX_NAME}), got {shown(name)}")
        if any(s.name == name for s in specs):
            raise UserError(f"{where}: {key}.name: target name {name!r} is used twice; names must differ")
        options = {k: v for k, v in entry.items() if k not in _TARGET_KEYS}
        declared[name] = declare(name, kind, options, f"{where}: {key}")  # its options checked
        specs.append(TargetSpec(name=name, kind=kind, options=options, where=f"{where}: {key}"))
    return tuple(specs), declared


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


def _cpus(section: Mapping[str, object], where: str) -> dict[str, tuple[int, ...]]:
    """[campaign.cpus]: CPU lists per role, written like taskset -c ("0", "0-2,4") or [0, 1]."""
    table = _table(section, "cpus", where, prefix="campaign.")
    _no_unknown(table, set(_CPU_ROLES), where, "campaign.cpus.")
    result = {}
    for role, value in table.items():
        key = f"{where}: campaign.cpus.{role}"
        if isinstance(value, list):
            items = value
        elif isinstance(value, int | str) and not isinstance(value, bool):
            items = str(value).split(",")
        else:
            items = [value]
        cpus: set[int] = set()
        for item in items:
            match = re.fullmatch(r"\s*([0-9]{1,6})\s*(?:-\s*([0-9]{1,6})\s*)?", item) if isinstance(
                item, str) else None
            if isinstance(item, int) and not isinstance(item, bool) and item >= 0:
                lo = hi = item
            elif match is not None:
                lo, hi = int(match[1]), int(match[2] or match[1])
            else:
                lo, hi = 1, 0
            if hi < lo:
                raise UserError(
                    f"{key}: cannot read CPU list {shown(value)}; write it like taskset -c, "
                    'e.g. "1" or "0-2,4" or [0, 1]'
                )
            if hi > MAX_CPU:
                raise UserError(f"{key}: CPU {hi} is out of range; CPUs are numbered 0 to {MAX_CPU}")
            cpus.update(range(lo, hi + 1))
        if not cpus:
            raise UserError(f'{key}: the list is empty; give at least one CPU, e.g. {role} = "0"')
        if role == "probe" and len(cpus) != 1:
            raise UserError(f'{key}: the probe busy-polls one CPU; give exactly one, e.g. probe = "1"')
        result[role] = tuple(sorted(cpus))
    return result
