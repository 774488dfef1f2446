"""What a probe is: something that timestamps the edges of a pin during a run, says where it
runs and what it needs, and hands back a capture (edges, the spans it could not see, its own
metrics and warnings)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import ClassVar, Protocol, TypeVar

import numpy as np

from jitterlab.measure.squarewave.cell import WaveCell
from jitterlab.measure.squarewave.option_table import OptionTable
from jitterlab.measure.squarewave.pins.base import PinHandle
from jitterlab.measure.squarewave.pins.offers import Forms
from jitterlab.measure.squarewave.probes.logs import SelfLog
from jitterlab.model.errors import RunFailed, Where
from jitterlab.model.params import Param
from jitterlab.model.records import Cell, Metric, RunSettings, Warning_
from jitterlab.model.registry import Registry
from jitterlab.model.series import EdgeSeries
from jitterlab.targets.base import Target
from jitterlab.targets.capabilities import Capability, Declared, has, lacks

# where a probe runs: a process on a CPU of the target, the program itself, the controller
# machine (a logic analyzer plugged in there), or an instrument reached over the network
LOCATIONS = ("target", "program", "controller", "instrument")
C = TypeVar("C", bound=Capability)


def no_blind() -> np.ndarray:
    return np.empty((0, 2), dtype=np.int64)


@dataclass(frozen=True)
class Capture:
    """What a probe saw in one run. Times in ns on the clock of the probe (int64), levels 0/1.

    `blind` holds (start_ns, end_ns) spans the probe could not see; `series` raw series to store
    beside the edges (e.g. "vpin.blind"); `metrics` the probe's own figures (poll interval,
    resolution) with the probe's name.

    A probe that sees no edges but statistics (an oscilloscope's period measurement) leaves t_ns and
    level empty and hands its squarewave metrics in `summary` instead; `unavailable` names the
    metrics it cannot give (percentiles from min/max/mean/std), which are then reported missing.
    """

    t_ns: np.ndarray
    level: np.ndarray
    blind: np.ndarray = field(default_factory=no_blind)
    metrics: tuple[Metric, ...] = ()
    warnings: tuple[Warning_, ...] = ()
    series: Mapping[str, EdgeSeries] = field(default_factory=dict)
    summary: tuple[Metric, ...] | None = None
    unavailable: tuple[str, ...] = ()


@dataclass(frozen=True)
class Instruments:
    """What the controller has of the instruments a probe reads, for doctor: a line under a topic of
    its own ("logic analyzers": what sigrok-cli --scan found), and whether one the probe can use is
    there (doctor then lists the probe among the usable ones)."""

    topic: str
    found: str
    usable: bool


class Probe(Protocol):
    """One kind of probe: class attributes describe it, an instance serves one run."""

    needs: ClassVar[Forms]
    """The forms of a pin (pins/offers.py) it can observe, any one of them; () observes every pin."""
    independent: ClassVar[bool]
    """False when it is the program under test observing itself."""
    location: ClassVar[str]
    """One of LOCATIONS."""
    needs_cpu: ClassVar[bool]
    """True when it needs a CPU of the target of its own (the runner places it there)."""
    params: ClassVar[tuple[Param, ...]]
    """Its options, in [probes.NAME]."""
    tools: ClassVar[dict[str, str]]
    """Commands it needs on the target -> Debian package."""
    controller_tools: ClassVar[dict[str, str]]
    """Commands it needs on the controller -> Debian package."""
    programs: ClassVar[dict[str, str]]
    """Programs of jitterlab/programs/c it needs on the target -> the package their build needs."""
    reads: ClassVar[type[Capability] | None]
    """The target's capability it reads the pin through (an emulated board's trace or memory), if
    any: the probe is usable only on a target that has it."""
    metrics: ClassVar[tuple[str, ...]]
    """The names of the metrics its captures can carry (Capture.metrics and summary), declared before
    anything is measured; the squarewave analysis of its edges is the benchmark's."""

    @classmethod
    def validate(cls, options: Mapping[str, object], where: str | Where) -> dict: ...

    @classmethod
    def reads_of(cls, cell: Cell) -> type[Capability] | None:
        """What it reads of the cell's target to watch the cell's pin: `reads`, unless the pin brings
        what it reads itself (an emulated unit's pin, traced beside the target)."""
        ...

    @classmethod
    def check(cls, cell: Cell, settings: RunSettings, where: Where) -> None:
        """Refuse a cell this probe cannot measure with these settings (UserError)."""
        ...

    @classmethod
    def check_target(cls, cell: Cell, settings: RunSettings, where: Where, target: Declared) -> None:
        """Refuse a cell whose target, as its [[target]] declares it, cannot serve this probe (it lacks
        what the probe `reads`, or its GPIO block is not the one the options name): UserError."""
        ...

    @classmethod
    def instruments(cls, controller: Target) -> Instruments | None:
        """What the controller (this machine) has of the instruments this probe reads, for doctor;
        None for a probe that reads none."""
        ...

    def start(self, pin: PinHandle) -> None:
        """Start observing `pin`; return once the probe sees it. RunFailed if it cannot."""
        ...

    def stop(self, own: SelfLog) -> Capture:
        """Stop (the program has ended) and return what was seen. `own` is the program's own
        edge log, for probes that align their clock with it or count edges they missed."""
        ...

    def close(self) -> None:
        """Stop whatever still runs. Idempotent; called on every path."""
        ...


class ProbeBase(OptionTable):
    """Defaults for the optional parts of the Probe protocol; its options: OptionTable. `needs` has
    no default: a probe says what it watches (a probe that binds to every pin says `needs = ()`)."""

    named_by = "probe"
    needs: ClassVar[Forms]
    independent: ClassVar[bool] = True
    location: ClassVar[str] = "target"
    needs_cpu: ClassVar[bool] = False
    tools: ClassVar[dict[str, str]] = {}
    controller_tools: ClassVar[dict[str, str]] = {}
    programs: ClassVar[dict[str, str]] = {}
    reads: ClassVar[type[Capability] | None] = None
    metrics: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def check(cls, cell: Cell, settings: RunSettings, where: Where) -> None:
        return None

    @classmethod
    def reads_of(cls, cell: Cell) -> type[Capability] | None:
        """What the probe reads of the cell's target to watch the cell's pin (by default `reads`)."""
        return cls.reads

    @classmethod
    def check_target(cls, cell: Cell, settings: RunSettings, where: Where, target: Declared) -> None:
        reads = cls.reads_of(cell)
        if reads is not None:
            target.need(reads, f"probe {cell.param('probe')!r}", where.key("probe"))

    @classmethod
    def instruments(cls, controller: Target) -> Instruments | None:
        return None

    def start(self, pin: PinHandle) -> None:
        return None

    def close(self) -> None:
        return None

    @property
    def period_ns(self) -> int:
        """The run's nominal period (the cell's WaveCell)."""
        return WaveCell.of_cell(self.ctx.cell).period_ns

    def read_through(self, cap: type[C]) -> C:
        """The run's target as `cap`, what the probe reads the pin through; RunFailed (unavailable)
        when it lacks it. The campaign's checks and preflight refuse such a cell first, naming the
        targets that can (from the registries of target kinds and qemu machines)."""
        found = has(self.ctx.target, cap)
        if found is None:
            raise RunFailed(f"probes.{self.ctx.cell.param('probe')}: " + lacks(
                self.ctx.target, cap, "`jitterlab run --dry-run` names the targets that can"),
                status="unavailable")
        return found


PROBES: Registry[type[ProbeBase]] = Registry("probe")
