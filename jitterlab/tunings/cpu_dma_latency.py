"""cpu-dma-latency: no deep C-state for the cell's runs: /dev/cpu_dma_latency held open at 0 µs.

The kernel's PM QoS interface (Documentation/power/pm_qos_interface.rst) keeps a CPU latency request
only while the file stays open, so a process on the target holds it: a shell opens it, writes the
request as one 4-byte word (the kernel reads a write of exactly that size as the binary value) and
execs sleep, which keeps the descriptor. It is started with processes.spawn_recorded, so a sweep of a
killed run's leftovers stops it, and restoring is stopping it: the kernel drops the request when the
file closes. Reading the file gives the machine's current target (PM_QOS_DEFAULT: 2000000000 µs).
"""

from __future__ import annotations

import re
import time

from jitterlab.model.tuning import Applied, Cpus, Held
from jitterlab.targets.base import Target
from jitterlab.targets.processes import describe_exit, live_dir, new_marker, spawn_recorded
from jitterlab.tunings.base import Keeper, TuningBase, refused, register

DEVICE = "/dev/cpu_dma_latency"
HELD_US = 0
READY_TIMEOUT_S = 5.0
# $1 the device: prints "there", its current value (µs), "writable" when this user may write it
_READ = r"""
[ -e "$1" ] || exit 0
echo there
v=$(od -An -td4 -N4 -- "$1" 2>/dev/null) && echo "value" $v
[ -w "$1" ] && echo writable
exit 0
"""
# $1 the device: the request written as one 4-byte word of zeros, the descriptor kept by sleep
_HOLD = r"""
exec 3>"$1" || exit 1
printf '\000\000\000\000' >&3 || exit 1
exec sleep 2147483647
"""


@register
class CpuDmaLatency(TuningBase):
    name = "cpu-dma-latency"
    cost = "no CPU sleeps deeper than polling while it is held: more power drawn, more heat"
    help = ("/dev/cpu_dma_latency held open at 0 µs for the runs: the CPUs stay out of deep "
            "C-states (their exit latency), as real-time applications do")

    def refusal(self, target: Target, cpus: Cpus) -> str | None:
        value, writable, there = self._read(target)
        if not there:
            return f"no {DEVICE} here (a kernel without PM QoS)"
        if value is None:
            return f"{DEVICE} cannot be read here (run jitterlab as root)"
        if not writable:
            return f"{DEVICE} is not writable here (run jitterlab as root)"
        return None

    def change(self, target: Target, cpus: Cpus, keeper: Keeper) -> Applied:
        before, _, _ = self._read(target)
        if before is None:
            raise refused(self.name, f"{DEVICE} cannot be read")
        device = self.path(DEVICE)
        marker = new_marker()
        held = Held(device, marker, f"{live_dir(target)}/{marker}.pid", str(before))
        keeper.keep(Applied(self.name, cpus, (held,)))
        proc = spawn_recorded(target, ["sh", "-c", _HOLD, "jitterlab-cpu-dma-latency", device], marker=marker)
        deadline = time.monotonic() + READY_TIMEOUT_S
        while (now := self._read(target)[0]) != HELD_US:
            rc = proc.poll()
            if rc is not None:
                raise refused(self.name, f"the process holding {DEVICE} ended at once ({describe_exit(rc)})")
            if time.monotonic() > deadline:
                raise refused(self.name, f"{DEVICE} still reads {now} µs {READY_TIMEOUT_S:g} s after it "
                                         f"was held at {HELD_US}")
            time.sleep(0.02)
        during = Held(device, marker, held.pidfile, str(before), str(HELD_US))
        return keeper.keep(Applied(self.name, cpus, (during,), note=f"{DEVICE}: {before} µs -> {HELD_US} µs"))

    def _read(self, target: Target) -> tuple[int | None, bool, bool]:
        """(its value in µs, writable, there)."""
        out = target.run(["sh", "-c", _READ, "sh", self.path(DEVICE)]).stdout
        value = re.search(r"^value (-?\d+)$", out, re.M)
        words = out.split()
        return (int(value.group(1)) if value else None), "writable" in words, "there" in words
