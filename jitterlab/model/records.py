"""Immutable records that carry measurements and their metadata: the cell, the run settings,
metrics and warnings. Nothing here imports a plug-in: every layer may import this module."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from jitterlab.model.facts import ThrottleRecord
from jitterlab.model.reading import check_declared
from jitterlab.model.stored import FLAT, Stored

ParamValue = str | int | float | bool


TUNING_KEY, NO_TUNING = "tuning", "none"  # the matrix key of a cell's tuning, and its baseline


@dataclass(frozen=True)
class Cell:
    """One point of the matrix: target x benchmark x load x the benchmark's own parameters.

    `params` holds the benchmark's matrix keys with canonical values (int ns for a duration, int
    bytes for a size, str for a name), in the benchmark's order, then the cell's tuning
    (`TUNING_KEY`) when it is not "none": a cell without a tuning keeps the identity it always had.
    """

    target: str
    benchmark: str
    load: str
    params: tuple[tuple[str, ParamValue], ...] = ()

    def param(self, name: str, default: ParamValue | None = None) -> ParamValue | None:
        for key, value in self.params:
            if key == name:
                return value
        return default

    def has(self, name: str) -> bool:
        return any(key == name for key, _ in self.params)

    @property
    def tuning(self) -> str:
        """The tuning its runs are measured under (jitterlab/tunings/); "none" for the baseline."""
        return str(self.param(TUNING_KEY, NO_TUNING))

    def with_tuning(self, tuning: str) -> Cell:
        """The same cell under another tuning ("none": without one)."""
        params = tuple((k, v) for k, v in self.params if k != TUNING_KEY)
        if tuning != NO_TUNING:
            params += ((TUNING_KEY, tuning),)
        return Cell(self.target, self.benchmark, self.load, params)

    @property
    def key(self) -> str:
        """Stable text identity, used to find committed runs on --resume."""
        values = " ".join(f"{k}={v}" for k, v in self.params)
        return f"target={self.target} benchmark={self.benchmark} load={self.load} {values}".rstrip()

    def field(self, name: str, default: object = None) -> object:
        """A cell field by the name users select it with: target, benchmark, load or a param."""
        if name in ("target", "benchmark", "load"):
            return getattr(self, name)
        if name == TUNING_KEY:
            return self.tuning
        return self.param(name, default)  # type: ignore[arg-type]


@dataclass(frozen=True)
class RunSettings:
    """How every run of a campaign is measured: what benchmarks, probes, pins and loads receive
    instead of the whole campaign. Durations in ns.

    `options` holds the validated option tables by kind and name: options["loads"]["cpu"],
    options["probes"]["sigrok"], options["pins"]["gpiod"] (defaults filled in).
    """

    duration_ns: int = 5_000_000_000
    warmup_ns: int = 50_000_000
    load_warmup_ns: int = 300_000_000
    blind_threshold_ns: int = 5_000
    run_timeout_ns: int = 20_000_000_000
    on_missing_rt: str = "error"  # "error" | "fallback": run RT cells as SCHED_OTHER, marked
    options: Mapping[str, Mapping[str, Mapping[str, object]]] = field(default_factory=dict)
    envelope: tuple[str, ...] = ("max", "p99")  # the report's envelope rules; measures nothing
    # "lift": RT throttling off for the runs of a target whose probe busy-polls, where jitterlab
    # may write it (root, not a container), restored after; "keep": never changed
    rt_throttling: str = "lift"

    def options_of(self, kind: str, name: str) -> dict[str, object]:
        """The options of one plug-in (e.g. kind "probes", name "sigrok"); {} when none are set."""
        return dict(self.options.get(kind, {}).get(name, {}))


# the key of each kind of option table in a run's stored settings
OPTION_KEYS = {"loads": "load_options", "probes": "probe_options", "pins": "pin_options"}
OptionTables = Mapping[str, Mapping[str, object]]  # plug-in name -> its options


@dataclass(frozen=True, kw_only=True)
class ImportedFrom(Stored):
    """The capture file an imported run was read from (importers/)."""

    source: str | None = None
    source_sha256: str | None = None
    time_resolution: str | None = None


@dataclass(frozen=True, kw_only=True)
class StoredSettings(Stored):
    """What a stored run ran with, as its JSON (the runs' params_json) keeps it: the campaign's
    RunSettings, the CPUs the run was placed on, whether SCHED_FIFO was permitted and what was done
    about RT throttling; for an imported capture, its file. None where a run's JSON does not say
    (a capture says no more than its duration and warm-up; an older store lacks newer keys)."""

    duration_ns: int | None = None
    warmup_ns: int | None = None
    load_warmup_ns: int | None = None
    blind_threshold_ns: int | None = None
    run_timeout_ns: int | None = None
    on_missing_rt: str | None = None
    envelope: tuple[str, ...] | None = None
    load_options: OptionTables | None = None
    probe_options: OptionTables | None = None
    pin_options: OptionTables | None = None
    probe_cpu: int | None = None
    program_cpus: tuple[int, ...] | None = None
    load_cpus: tuple[int, ...] | None = None
    rt_permitted: bool | None = None
    rt_throttling: ThrottleRecord | None = None
    imported: ImportedFrom | None = field(default=None, metadata=FLAT)

    @classmethod
    def of(cls, settings: RunSettings, **run: object) -> StoredSettings:
        """The settings of a run measured with `settings`; `run`: what else it ran with (probe_cpu,
        program_cpus, load_cpus, rt_permitted, rt_throttling)."""
        tables = {OPTION_KEYS[kind]: {name: dict(v) for name, v in by_name.items()}
                  for kind, by_name in settings.options.items()}
        return cls.given(
            duration_ns=settings.duration_ns, warmup_ns=settings.warmup_ns,
            load_warmup_ns=settings.load_warmup_ns, blind_threshold_ns=settings.blind_threshold_ns,
            run_timeout_ns=settings.run_timeout_ns, on_missing_rt=settings.on_missing_rt,
            envelope=tuple(settings.envelope), **tables, **run)


@dataclass(frozen=True)
class Metric:
    """One number a run produced. `subject` is what it is of: "" for the run as a whole, else one
    part of it the benchmark measured apart (an observer of a square wave such as "vpin" or the
    program's own view, a thread "thread0", a CPU "cpu1", a pair of processes "pair0").

    How it is read (model.reading): `direction` which way is better ("lower", "higher", or "none"
    for numbers that describe a run rather than grade it), `summary` how a cell's repetitions are
    summarized ("worst", "median"), `scale` how two groups are compared ("ratio", "count",
    "signed"), `stat` the statistic of the run's own samples it is ("max", "p99", ...). "" leaves
    one to the tables by name in analysis.reading (stores written before metrics declared it).
    """

    name: str
    value: float
    unit: str
    subject: str = ""
    direction: str = ""
    summary: str = ""
    scale: str = ""
    stat: str = ""

    def __post_init__(self) -> None:
        check_declared(self.name, self.direction, self.summary, self.scale, self.stat)


@dataclass(frozen=True)
class Warning_:
    """Something that may spoil a measurement, with what to do about it."""

    message: str
    remedy: str


@dataclass(frozen=True)
class RunRecord:
    """A run as stored: its cell, the settings it ran with, labels, status, metrics keyed
    (subject, name). `cell_key` is its identity for --resume (the cell's key unless given). Whose
    metrics are the run's own (a square wave's observer) its benchmark declares
    (model.traits.BenchmarkTraits.subject_of), not the record."""

    id: str
    campaign_id: int
    cell: Cell
    repetition: int
    settings: StoredSettings
    labels: dict
    status: str
    error: str | None
    started_ns: int
    wall_s: float
    raw_path: str | None
    raw_sha256: str | None
    sysinfo_id: int | None
    metrics: dict[tuple[str, str], Metric]
    attachments: dict[str, str] = field(default_factory=dict)  # name -> path in the results dir
    cell_key: str = ""

    def __post_init__(self) -> None:
        if not self.cell_key:
            object.__setattr__(self, "cell_key", self.cell.key)

    @property
    def target(self) -> str:
        return self.cell.target

    @property
    def benchmark(self) -> str:
        return self.cell.benchmark

    @property
    def load(self) -> str:
        return self.cell.load

    def param(self, name: str, default: object = None) -> object:
        """A matrix parameter of the run's cell (e.g. "size" of a udp-echo run)."""
        return self.cell.param(name, default)  # type: ignore[arg-type]

    def metric(self, name: str, subject: str = "") -> float | None:
        """The value of a metric of `subject` ("": of the run as a whole), None when absent."""
        found = self.metrics.get((subject, name))
        return found.value if found else None
