"""What a benchmark is: tools it needs, how long it takes, and one run's measurement."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from jitterlab.params import Param
from jitterlab.records import Metric, Warning_
from jitterlab.registry import Registry
from jitterlab.store.raw import EdgeSeries, Samples
from jitterlab.targets.base import Target

if TYPE_CHECKING:
    from jitterlab.campaign import Campaign, Cell


@dataclass(frozen=True)
class Placement:
    """CPUs for the program under test, the probe and the loads (None: let the scheduler decide)."""

    program_cpus: tuple[int, ...] | None
    probe_cpu: int | None
    load_cpus: tuple[int, ...] | None = None


@dataclass(frozen=True)
class RunContext:
    """Everything one run needs. `scratch` is on the target, `local_dir` on the controller."""

    target: Target
    campaign: Campaign
    cell: Cell
    repetition: int
    scratch: str
    local_dir: Path
    bindir: str
    placement: Placement
    rt_permitted: bool


@dataclass(frozen=True)
class Measurement:
    """What a run produced: metrics, raw series to store, warnings with remedies, and files
    worth keeping beside the run (a tool's raw output, a kernel trace): name -> bytes."""

    metrics: list[Metric]
    series: dict[str, EdgeSeries | Samples] = field(default_factory=dict)
    warnings: list[Warning_] = field(default_factory=list)
    attachments: dict[str, bytes] = field(default_factory=dict)


class Benchmark(Protocol):
    params: tuple[Param, ...]
    """The matrix keys this benchmark understands besides target, benchmark and load."""
    headline: tuple[str, ...]
    """The metrics a summary shows first (the report's tables and bar charts), most important first."""

    def tools(self, cell: Cell) -> dict[str, str]:
        """Commands the cell needs on the target -> the Debian package that has them."""
        ...

    def estimate_s(self, campaign: Campaign, cell: Cell) -> float:
        """Expected wall time of one run, for --dry-run and the ETA."""
        ...

    def needs_rt(self, cell: Cell) -> bool:
        """True when the cell cannot be measured honestly without a real-time scheduling class."""
        ...

    def check(self, campaign: Campaign, cell: Cell) -> None:
        """Reject a cell that cannot work with the campaign's settings (UserError)."""
        ...

    def preflight(self, target: Target, campaign: Campaign, cells: list[Cell]) -> None:
        """Once per target before the campaign, with this benchmark's cells on it: raise UserError
        for what only the target can tell (e.g. a network peer that does not answer)."""
        ...

    def label(self, cell: Cell) -> str:
        """A short human name of the cell for progress lines and tables."""
        ...

    def execute(self, ctx: RunContext) -> Measurement:
        """Measure once; raise RunFailed when the run cannot be measured."""
        ...


class BenchmarkBase:
    """Defaults for the optional parts of the Benchmark protocol."""

    params: tuple[Param, ...] = ()
    headline: tuple[str, ...] = ()

    def tools(self, cell: Cell) -> dict[str, str]:
        return {}

    def estimate_s(self, campaign: Campaign, cell: Cell) -> float:
        load_s = campaign.load_warmup_ns / 1e9 if cell.load != "idle" else 0.0
        return campaign.duration_ns / 1e9 + load_s + 0.5

    def needs_rt(self, cell: Cell) -> bool:
        return False

    def check(self, campaign: Campaign, cell: Cell) -> None:
        return None

    def preflight(self, target: Target, campaign: Campaign, cells: list[Cell]) -> None:
        return None

    def label(self, cell: Cell) -> str:
        shown = {p.name: p.show for p in self.params}
        values = " ".join(f"{k}={shown.get(k, str)(v)}" for k, v in cell.params)
        return f"{cell.benchmark} {values} {cell.load}".replace("  ", " ")


BENCHMARKS: Registry[Benchmark] = Registry("benchmark")
