"""tracefs for the runs of the kernel's latency tracers (timerlat, osnoise, hwlat): mounted for the
run when it was not (and unmounted again), the tracers this kernel has, and its settings read and
written through constant scripts that take paths and values as positional parameters.

A kernel without a tracer makes the cell unavailable, naming the kernel option that builds it.
"""

from __future__ import annotations

from jitterlab.model.errors import RunFailed
from jitterlab.targets.base import Target

TRACEFS = "/sys/kernel/tracing"
# the kernel option that builds each tracer
OPTIONS = {"timerlat": "CONFIG_TIMERLAT_TRACER", "osnoise": "CONFIG_OSNOISE_TRACER",
           "hwlat": "CONFIG_HWLAT_TRACER"}

_WRITE = 'printf "%s\\n" "$1" > "$0"'
_TRUNCATE = ': > "$0"'


class Tracefs:
    """`with Tracefs(target) as fs:` tracefs is mounted at fs.path until the block ends."""

    def __init__(self, target: Target) -> None:
        self.target = target
        self.path = TRACEFS
        self._mounted = False

    def __enter__(self) -> Tracefs:
        mounts = self.target.run(["cat", "/proc/mounts"]).stdout
        fields = (line.split() for line in mounts.splitlines())
        found = [f[1] for f in fields if len(f) > 2 and f[2] == "tracefs"]
        if found:
            self.path = TRACEFS if TRACEFS in found else found[0]
            return self
        done = self.target.run(["mount", "-t", "tracefs", "nodev", TRACEFS], timeout_s=10.0)
        if not done.ok:
            why = done.stderr.strip() or f"mount exit status {done.rc}"
            raise RunFailed(f"tracefs is not mounted and mounting it at {TRACEFS} failed: {why} (it needs "
                            "root and a kernel with CONFIG_TRACING)", status="unavailable")
        self._mounted = True
        return self

    def __exit__(self, *exc: object) -> None:
        if self._mounted:
            self.target.run(["umount", self.path], timeout_s=10.0)
            self._mounted = False

    def require(self, tracer: str) -> None:
        """RunFailed "unavailable" unless the kernel has `tracer` and its files can be written."""
        done = self.target.run(["cat", f"{self.path}/available_tracers"])
        if not done.ok:
            raise RunFailed(f"cannot read {self.path}/available_tracers ({done.stderr.strip() or done.rc}): "
                            "the kernel's tracers need root", status="unavailable")
        available = done.stdout.split()
        if tracer not in available:
            have = " ".join(available) or "none"
            raise RunFailed(f"this kernel has no {tracer} tracer (available: {have}); it needs a kernel "
                            f"built with {OPTIONS[tracer]}=y", status="unavailable")
        if not self.target.run(["test", "-w", f"{self.path}/current_tracer"]).ok:
            raise RunFailed(f"cannot write {self.path}/current_tracer: the {tracer} tracer needs root",
                            status="unavailable")

    def read(self, name: str) -> str:
        return self.target.run(["cat", f"{self.path}/{name}"]).stdout

    def write(self, name: str, value: str) -> bool:
        return self.target.run(["sh", "-c", _WRITE, f"{self.path}/{name}", value]).ok

    def truncate(self, name: str) -> bool:
        return self.target.run(["sh", "-c", _TRUNCATE, f"{self.path}/{name}"]).ok
