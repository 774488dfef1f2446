"""rt-unthrottled: the kernel's RT throttling lifted for a cell's runs (sched_rt_runtime_us = -1).

With the default 950000 µs of every 1000000 µs, a SCHED_FIFO task that keeps its CPU busy is stopped
for 50 ms of every second. The knob is read and written here once, for this tuning and for the
campaign's own lifting of it for busy-polling probes (execution/rt_throttle.py).
"""

from __future__ import annotations

import re

from jitterlab.model.tuning import Applied, Changed, Cpus
from jitterlab.targets.base import Target
from jitterlab.tunings import files
from jitterlab.tunings.base import Keeper, TuningBase, refused, register

SYSCTL = "/proc/sys/kernel/sched_rt_runtime_us"
LIFTED_US = -1


def read_runtime(target: Target, path: str = SYSCTL) -> tuple[int | None, bool]:
    """sched_rt_runtime_us (None: unreadable) and whether this user may write it."""
    found = files.read(target, [path])[path]
    return _number(found.text), found.writable


def write_runtime(target: Target, value: int, path: str = SYSCTL) -> int | None:
    """Write sched_rt_runtime_us; what it reads afterwards (None: refused or unreadable)."""
    return _number(files.write(target, [(path, str(value))])[path].after)


@register
class RtUnthrottled(TuningBase):
    name = "rt-unthrottled"
    cost = "a runaway real-time task can starve the machine: nothing stops it any more"
    help = ("kernel.sched_rt_runtime_us = -1 for the runs: a busy SCHED_FIFO task keeps its CPU "
            "the whole second instead of losing 50 ms of each")

    def refusal(self, target: Target, cpus: Cpus) -> str | None:
        value, writable = read_runtime(target, self.path(SYSCTL))
        if value is None:
            return f"{SYSCTL} cannot be read (a kernel without RT throttling)"
        if not writable and value != LIFTED_US:
            return (f"{SYSCTL} is not writable here (run jitterlab as root; in a container the "
                    "setting is its host's)")
        return None

    def change(self, target: Target, cpus: Cpus, keeper: Keeper) -> Applied:
        path = self.path(SYSCTL)
        before = files.read(target, [path])[path]
        if _number(before.text) == LIFTED_US:
            return Applied(self.name, cpus, note=f"{SYSCTL} is -1 already: nothing to change")
        step = Changed(path, before.text or "")
        keeper.keep(Applied(self.name, cpus, (step,)))
        got = files.write(target, [(path, str(LIFTED_US))])[path]
        if _number(got.after) != LIFTED_US:
            raise refused(self.name, f"the kernel would not take {LIFTED_US} in {SYSCTL} "
                                     f"({got.refused or f'it reads {got.after!r}'})")
        note = f"{SYSCTL}: {(before.text or '').strip()} -> {LIFTED_US}"
        return keeper.keep(Applied(self.name, cpus, (Changed(path, step.before, got.after),), note=note))


def _number(text: str | None) -> int | None:
    return int(text.strip()) if text is not None and re.fullmatch(r"-?\d+", text.strip()) else None
