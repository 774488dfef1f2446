"""What a benchmark is: tools it needs, how long it takes, and the phases of one run's measurement.

The runner drives a run through explicit phases (execution/run.py):

    measuring = bench.prepare(ctx)      the loads warm up meanwhile (a pin set up, a probe started)
    (loads up: warmed up and checked)
    raw = measuring.measure()           with the loads running
    measuring.close()                   on every path, once prepare() returned
    (loads down: checked, read, stopped or kept for the next run)
    bench.analyse(ctx, raw)             with the loads down: no competition for the CPU
    (commit)

A benchmark that measures and analyses in one go implements `execute(ctx)` and inherits the rest
from BenchmarkBase (its loads then stay up through its analysis).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from jitterlab.measure.context import Placement, RunContext
from jitterlab.model.errors import Where
from jitterlab.model.options import Options
from jitterlab.model.params import Param
from jitterlab.model.records import Cell, Metric, RunSettings, Warning_
from jitterlab.model.registry import Registry
from jitterlab.model.series import EdgeSeries, Samples
from jitterlab.model.traits import BenchmarkTraits
from jitterlab.targets.base import Target
from jitterlab.targets.capabilities import Capability, Declared

__all__ = ["BENCHMARKS", "Benchmark", "BenchmarkBase", "Cells", "Checks", "Measurement", "Measuring",
           "Needs", "Phases", "Placement", "Results", "RunContext", "Scheduling"]


@dataclass(frozen=True)
class Measurement:
    """What a run produced: metrics, raw series to store, warnings with remedies, and files
    worth keeping beside the run (a tool's raw output, a kernel trace): name -> bytes."""

    metrics: list[Metric]
    series: dict[str, EdgeSeries | Samples] = field(default_factory=dict)
    warnings: list[Warning_] = field(default_factory=list)
    attachments: dict[str, bytes] = field(default_factory=dict)


class Measuring(Protocol):
    """One run's measurement once prepared: measure() once, then close() on every path."""

    def measure(self) -> object:
        """Measure with the loads up; return what Benchmark.analyse() turns into a Measurement.
        Raise RunFailed when the run cannot be measured."""
        ...

    def close(self) -> None:
        """Undo what prepare() set up (stop a probe, tear a pin down); idempotent."""
        ...


# What a benchmark is, split by who asks: each caller is written against the small protocol it
# needs; a registered benchmark (BenchmarkBase) is all of them.


class Cells(Protocol):
    """How its cells are made and named: the campaign's matrix (campaign/matrix.py), cell naming
    (campaign/cells.py), progress lines and doctor's sample cells."""

    params: tuple[Param, ...]
    """The matrix keys this benchmark understands besides target, benchmark and load."""

    def pair(self, named: list[Cell], cells: list[Cell], where: Where) -> tuple[list[Cell], tuple[str, ...]]:
        """Of `cells` (one [matrix] table's, after [[exclude]]), those whose values go together, and
        what was paired and left out, in lines for --dry-run ("each impl on the pins it drives: ...");
        UserError when a value the table names goes with none of its others (`named`: the table's
        cells before [[exclude]]; a pin no impl of it drives). `where` names the table
        (it formats as "campaign.toml: matrix")."""
        ...

    def label(self, cell: Cell) -> str:
        """A short human name of the cell for progress lines and tables."""
        ...


class Checks(Protocol):
    """What refuses a cell, at each moment something more is known: the campaign's settings and
    the [[target]] as declared (campaign/file.py, --dry-run included), the opened target
    (execution/preflight.py)."""

    def check(self, cell: Cell, settings: RunSettings, where: Where) -> None:
        """Reject a cell that cannot work with these settings (UserError; what its target cannot serve
        is check_target's, asked of what the [[target]] declares, never of its kind's name);
        `where` names the matrix (formatted "campaign.toml: matrix"; `where.key("period")` a key of it,
        `where.at("probes", "sigrok")` another table of the same file)."""
        ...

    def check_target(self, cell: Cell, settings: RunSettings, where: Where, target: Declared) -> None:
        """Reject a cell its target cannot measure, known from its [[target]] alone (a probe that reads
        what only an emulated board offers): UserError; `where` names the matrix as in check()."""
        ...

    def preflight(self, target: Target, settings: RunSettings, cells: list[Cell], where: Where) -> None:
        """Once per target before the campaign, with this benchmark's cells on it: raise UserError
        for what only the target can tell (e.g. a network peer that does not answer); `where`
        names the matrix as in check()."""
        ...


class Needs(Protocol):
    """What a cell needs before it can run, which preflight makes the cells that lack it unavailable
    for (execution/preflight.py) and doctor lists (the tools of every benchmark)."""

    def tools(self, cell: Cell) -> dict[str, str]:
        """Commands the cell needs on the target -> the Debian package that has them."""
        ...

    def programs(self, cell: Cell) -> dict[str, str]:
        """Programs of jitterlab/programs/c the cell needs on the target -> the Debian package
        their build needs beyond gcc, make and libc ("" for none)."""
        ...

    def controller_tools(self, cell: Cell) -> dict[str, str]:
        """Commands the cell needs on the controller (the machine jitterlab runs on, where an
        instrument's program runs) -> the Debian package that has them."""
        ...

    def capabilities(self, cell: Cell) -> dict[type[Capability], str]:
        """What the cell needs of its target beyond the Target protocol (targets/capabilities.py) ->
        who needs it, for messages ("probe emulator")."""
        ...

    def needer(self, cell: Cell) -> str:
        """What in the cell needs its tools, for messages: "impl node", "benchmark sysbench-cpu"."""
        ...


class Scheduling(Protocol):
    """How its runs are placed and timed: the real-time class and a CPU of the probe's own
    (preflight's placement, the campaign's [campaign.cpus] check), the estimate (--dry-run, the
    runner's ETA)."""

    def needs_rt(self, cell: Cell) -> bool:
        """True when the cell cannot be measured honestly without a real-time scheduling class."""
        ...

    def needs_probe_cpu(self, cell: Cell) -> bool:
        """True when the cell's probe needs a CPU of the target of its own."""
        ...

    def estimate_s(self, settings: RunSettings, cell: Cell) -> float:
        """Expected wall time of one run, for --dry-run and the ETA."""
        ...


class Phases(Protocol):
    """One run's measurement, as the runner drives it (execution/run.py, the module docstring)."""

    def warm(self) -> None:
        """Load on the controller what the analysis of a run compiles (once per process), while the
        targets are prepared, so that the first run's wall time does not pay for it."""
        ...

    def prepare(self, ctx: RunContext) -> Measuring:
        """Set up what the measurement needs while the loads warm up; raise RunFailed when it
        cannot (after undoing what it did: the runner closes only what prepare() returned)."""
        ...

    def analyse(self, ctx: RunContext, measured: object) -> Measurement:
        """Turn what Measuring.measure() returned into metrics, with the loads down."""
        ...


class Results(Protocol):
    """What its runs produce, known before anything is measured: for `run --until-decided --watch`
    (execution/until_decided.py) and whatever reads stored runs (the report, compare: its traits)."""

    headline: tuple[str, ...]
    """The metrics a summary shows first (the report's tables and bar charts), most important first."""
    traits: BenchmarkTraits
    """What its runs are for whoever reads them back (model.traits): its headline, period, samples,
    subject."""

    def metric_names(self, cell: Cell) -> frozenset[str]:
        """The names of every metric a run of the cell can produce (a run may lack some, never has
        another: tests hold each benchmark to it), known before anything is measured: `run
        --until-decided --watch` is checked against them. A load's readings are the load's."""
        ...


class Benchmark(Cells, Checks, Needs, Scheduling, Phases, Results, Protocol):
    """A registered benchmark: every part above (BenchmarkBase gives the defaults)."""


class _Executing:
    """The phases of a benchmark that measures and analyses in one call, execute(ctx)."""

    def __init__(self, bench: BenchmarkBase, ctx: RunContext) -> None:
        self._bench, self._ctx = bench, ctx

    def measure(self) -> object:
        return self._bench.execute(self._ctx)

    def close(self) -> None:
        return None


class BenchmarkBase:
    """Defaults for the optional parts of the Benchmark protocols."""

    params: tuple[Param, ...] = ()
    record: type[Options] | None = None  # a cell's params as a typed record (model/options.py)
    headline: tuple[str, ...] = ()
    metrics: tuple[str, ...] = ()  # the names its runs can produce beside the headline (metric_names)
    # model.traits: a periodic benchmark's nominal period of a cell, ns (read from its typed record)
    period_ns: Callable[[Cell], int] | None = None
    samples: str = ""  # model.traits: PERIOD_ERRORS, LATENCIES or ""
    subject: str = ""  # model.traits: the cell key naming whom its runs' own metrics are of

    @property
    def traits(self) -> BenchmarkTraits:
        return BenchmarkTraits(tuple(self.headline), self.period_ns, self.samples, self.subject)

    def metric_names(self, cell: Cell) -> frozenset[str]:
        return frozenset((*self.headline, *self.metrics))

    def tools(self, cell: Cell) -> dict[str, str]:
        return {}

    def programs(self, cell: Cell) -> dict[str, str]:
        return {}

    def controller_tools(self, cell: Cell) -> dict[str, str]:
        return {}

    def capabilities(self, cell: Cell) -> dict[type[Capability], str]:
        return {}

    def needer(self, cell: Cell) -> str:
        return f"benchmark {cell.benchmark}"

    def estimate_s(self, settings: RunSettings, cell: Cell) -> float:
        load_s = settings.load_warmup_ns / 1e9 if cell.load != "idle" else 0.0
        return settings.duration_ns / 1e9 + load_s + 0.5

    def needs_rt(self, cell: Cell) -> bool:
        return False

    def needs_probe_cpu(self, cell: Cell) -> bool:
        return False

    def pair(self, named: list[Cell], cells: list[Cell], where: Where) -> tuple[list[Cell], tuple[str, ...]]:
        return list(cells), ()  # every combination of the matrix's values goes

    def check(self, cell: Cell, settings: RunSettings, where: Where) -> None:
        return None

    def check_target(self, cell: Cell, settings: RunSettings, where: Where, target: Declared) -> None:
        return None

    def preflight(self, target: Target, settings: RunSettings, cells: list[Cell], where: Where) -> None:
        return None

    def warm(self) -> None:
        return None

    def prepare(self, ctx: RunContext) -> Measuring:
        return _Executing(self, ctx)

    def execute(self, ctx: RunContext) -> Measurement:
        """Measure and analyse once (the benchmarks that do not split their phases); RunFailed when
        the run cannot be measured."""
        raise NotImplementedError(f"{type(self).__name__} implements neither prepare() nor execute()")

    def analyse(self, ctx: RunContext, measured: object) -> Measurement:
        assert isinstance(measured, Measurement), "execute() returns a Measurement"
        return measured

    def label(self, cell: Cell) -> str:
        shown = {p.name: p.show for p in self.params}
        values = " ".join(f"{k}={shown.get(k, str)(v)}" for k, v in cell.params)
        return f"{cell.benchmark} {values} {cell.load}".replace("  ", " ")


BENCHMARKS: Registry[Benchmark] = Registry("benchmark")
