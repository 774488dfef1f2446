"""What a benchmark is: tools it needs, how long it takes, and one run's measurement."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from jitterlab.measure.context import Placement, RunContext
from jitterlab.model.params import Param
from jitterlab.model.records import Cell, Metric, RunSettings, Warning_
from jitterlab.model.registry import Registry
from jitterlab.model.series import EdgeSeries, Samples
from jitterlab.targets.base import Target

__all__ = ["BENCHMARKS", "Benchmark", "BenchmarkBase", "Measurement", "Placement", "RunContext"]


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

    def programs(self, cell: Cell) -> dict[str, str]:
        """Programs of jitterlab/programs/c the cell needs on the target -> the Debian package
        their build needs beyond gcc, make and libc ("" for none)."""
        ...

    def needer(self, cell: Cell) -> str:
        """What in the cell needs its tools, for messages: "impl node", "benchmark sysbench-cpu"."""
        ...

    def estimate_s(self, settings: RunSettings, cell: Cell) -> float:
        """Expected wall time of one run, for --dry-run and the ETA."""
        ...

    def needs_rt(self, cell: Cell) -> bool:
        """True when the cell cannot be measured honestly without a real-time scheduling class."""
        ...

    def needs_probe_cpu(self, cell: Cell) -> bool:
        """True when the cell's probe needs a CPU of the target of its own."""
        ...

    def check(self, cell: Cell, settings: RunSettings, where: str, target_kind: str) -> None:
        """Reject a cell that cannot work with these settings on a target of this kind (UserError);
        `where` names the matrix ("campaign.toml: matrix"), keys are appended to it."""
        ...

    def preflight(self, target: Target, settings: RunSettings, cells: list[Cell], where: str) -> None:
        """Once per target before the campaign, with this benchmark's cells on it: raise UserError
        for what only the target can tell (e.g. a network peer that does not answer); `where`
        names the matrix as in check()."""
        ...

    def label(self, cell: Cell) -> str:
        """A short human name of the cell for progress lines and tables."""
        ...

    def warm(self) -> None:
        """Load on the controller what the analysis of a run compiles (once per process), while the
        targets are prepared, so that the first run's wall time does not pay for it."""
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

    def programs(self, cell: Cell) -> dict[str, str]:
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

    def check(self, cell: Cell, settings: RunSettings, where: str, target_kind: str) -> None:
        return None

    def preflight(self, target: Target, settings: RunSettings, cells: list[Cell], where: str) -> None:
        return None

    def warm(self) -> None:
        return None

    def label(self, cell: Cell) -> str:
        shown = {p.name: p.show for p in self.params}
        values = " ".join(f"{k}={shown.get(k, str)(v)}" for k, v in cell.params)
        return f"{cell.benchmark} {values} {cell.load}".replace("  ", " ")


BENCHMARKS: Registry[Benchmark] = Registry("benchmark")
