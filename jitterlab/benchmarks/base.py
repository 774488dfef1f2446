"""What a benchmark is: tools it needs, how long it takes, and one run's measurement."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from jitterlab.records import Metric, Warning_
from jitterlab.registry import Registry
from jitterlab.store.raw import EdgeSeries
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
    """What a run produced: metrics, raw series to store, and warnings with remedies."""

    metrics: list[Metric]
    series: dict[str, EdgeSeries]
    warnings: list[Warning_] = field(default_factory=list)


class Benchmark(Protocol):
    def tools(self, cell: Cell) -> dict[str, str]:
        """Commands the cell needs on the target -> the Debian package that has them."""
        ...

    def estimate_s(self, campaign: Campaign, cell: Cell) -> float:
        """Expected wall time of one run, for --dry-run and the ETA."""
        ...

    def execute(self, ctx: RunContext) -> Measurement:
        """Measure once; raise RunFailed when the run cannot be measured."""
        ...


BENCHMARKS: Registry[Benchmark] = Registry("benchmark")
