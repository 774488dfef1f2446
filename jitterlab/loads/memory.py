"""The `memory` load: stress-ng vm workers that write, read and check memory, reporting bogo-ops/s.

It is the cpu load with another stressor: same start, check, stop and metrics (see cpu.py).
"""

from __future__ import annotations

from jitterlab.loads.base import LOADS, LoadSpec, byte_size, check_keys, whole_number
from jitterlab.loads.cpu import CpuLoad

DEFAULTS: dict[str, object] = {"workers": None, "bytes": "64M"}


def validate_options(options: dict, where: str) -> dict:
    """Check memory's options; return them with defaults filled in (`bytes` as an int)."""
    opts = check_keys(options, DEFAULTS, "memory", where)
    if opts["workers"] is not None:
        whole_number(opts["workers"], "workers", where, extra=" (or left out for one per CPU)")
    opts["bytes"] = byte_size(opts["bytes"], "bytes", where)
    return opts


class MemoryLoad(CpuLoad):
    """N stress-ng vm workers, each cycling through `bytes` of memory."""

    name = "memory"

    @staticmethod
    def validate(options: dict, where: str) -> dict:
        return validate_options(options, where)

    def _stressor_argv(self, opts: dict) -> list[str]:
        return ["--vm", str(self.workers), "--vm-bytes", str(opts["bytes"])]


LOADS.add(
    "memory",
    "stress-ng vm workers; options: workers, bytes (per worker, e.g. \"64M\")",
    LoadSpec(MemoryLoad, {"stress-ng": "stress-ng"}, validate_options),
)
