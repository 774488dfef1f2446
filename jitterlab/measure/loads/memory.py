"""The `memory` load: stress-ng vm workers that write, read and check memory, reporting bogo-ops/s.

It is the cpu load with another stressor: same start, check, stop and metrics (see cpu.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from jitterlab.measure.loads.base import LOADS, LoadSpec
from jitterlab.measure.loads.cpu import CpuLoad, StressOptions
from jitterlab.model.options import key
from jitterlab.model.params import Param, auto, format_size, integer, parse_options, size

PARAMS = (
    Param("workers", "stress-ng vm workers (auto: one per CPU the load may use)", auto(integer(1, 4096)),
          "2", default="auto"),
    Param("bytes", "memory each worker cycles through", size(4096), '"256M"', default="64M",
          show=format_size),
)


def validate_options(options: dict, where: str) -> dict:
    """Check memory's options; return them with defaults filled in (`bytes` as an int)."""
    return parse_options(PARAMS, options, where, "load 'memory'")


@dataclass(frozen=True)
class MemoryOptions(StressOptions):
    worker_bytes: int = key("bytes")  # memory each worker cycles through


class MemoryLoad(CpuLoad):
    """N stress-ng vm workers, each cycling through `bytes` of memory."""

    name = "memory"
    record = MemoryOptions

    @staticmethod
    def validate(options: dict, where: str) -> dict:
        return validate_options(options, where)

    def _stressor_argv(self, opts: MemoryOptions) -> list[str]:
        return ["--vm", str(self.workers), "--vm-bytes", str(opts.worker_bytes)]


LOADS.add(
    "memory",
    "stress-ng vm workers; options: workers, bytes (per worker, e.g. \"64M\")",
    LoadSpec(MemoryLoad, {"stress-ng": "stress-ng"}, PARAMS, record=MemoryOptions),
)
