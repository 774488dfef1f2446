"""tracefs on a target: found or mounted (and unmounted again), its files read and written through
constant scripts that take paths and values as positional parameters, every change recorded first
(changes.py) so that it is undone however jitterlab ends.

A kernel without a tracer a benchmark needs makes its cell unavailable, naming the kernel option
that builds it.
"""

from __future__ import annotations

from jitterlab.model.errors import RunFailed
from jitterlab.targets.base import Target
from jitterlab.tracing.changes import Changes

TRACEFS = "/sys/kernel/tracing"
DEBUGFS = "/sys/kernel/debug"
# the kernel option that builds each tracer
OPTIONS = {"timerlat": "CONFIG_TIMERLAT_TRACER", "osnoise": "CONFIG_OSNOISE_TRACER",
           "hwlat": "CONFIG_HWLAT_TRACER"}

NO_RECORD = "jitterlab cannot keep a restore record in /run/jitterlab-tracing (tracing needs root)"
_WRITE = 'printf "%s\\n" "$1" > "$0"'
_APPEND = 'printf "%s\\n" "$1" >> "$0"'
_TRUNCATE = ': > "$0"'


class TraceUnavailable(RunFailed):
    """The target cannot trace (no tracefs, not root, no such tracer or events); `reason` says why."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason, status="unavailable")


class Tracefs:
    """`with Tracefs(target) as fs:` tracefs is mounted at fs.path until the block ends, and what was
    changed through `fs.changes` is undone then."""

    def __init__(self, target: Target) -> None:
        self.target = target
        self.path = TRACEFS
        self.changes = Changes(target)

    def __enter__(self) -> Tracefs:
        return self.mount()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def mount(self, *, debugfs: bool = False) -> Tracefs:
        """Find tracefs (mounting it at TRACEFS when it is nowhere), and debugfs when asked (where
        cyclictest looks for the buffer); TraceUnavailable, with nothing left changed, otherwise."""
        try:
            mounts = [f for f in (line.split() for line in self.target.run(["cat", "/proc/mounts"]).stdout
                                  .splitlines()) if len(f) > 2]
            found = [f[1] for f in mounts if f[2] == "tracefs"]
            if found:
                self.path = TRACEFS if TRACEFS in found else found[0]
            else:
                self._mount("tracefs", TRACEFS)
            if debugfs and not any(f[1:3] == [DEBUGFS, "debugfs"] for f in mounts):
                # the kernel mounts tracefs inside debugfs when it is first looked at
                self._mount("debugfs", DEBUGFS, then=(("umount", f"{DEBUGFS}/tracing", "-"),))
        except BaseException:
            self.close()
            raise
        return self

    def _mount(self, fstype: str, where: str, then: tuple[tuple[str, str, str], ...] = ()) -> None:
        if not self.changes.before(*then, ("umount", where, "-")):
            raise TraceUnavailable(f"{fstype} is not mounted at {where} and {NO_RECORD}")
        done = self.target.run(["mount", "-t", fstype, "nodev", where], timeout_s=10.0)
        if not done.ok:
            why = done.stderr.strip() or f"mount exit status {done.rc}"
            raise TraceUnavailable(f"{fstype} is not mounted at {where} and mounting it failed: {why} (it "
                                   "needs root and a kernel with CONFIG_TRACING)")

    def close(self) -> list[str]:
        """Undo every recorded change (settings, instances, then the mounts); what could not be."""
        return self.changes.undo()

    def require(self, tracer: str) -> None:
        """TraceUnavailable unless the kernel has `tracer` and its files can be written."""
        done = self.target.run(["cat", f"{self.path}/available_tracers"])
        if not done.ok:
            why = done.stderr.strip() or done.rc
            raise TraceUnavailable(f"cannot read {self.path}/available_tracers ({why}): the kernel's tracers "
                                   "need root")
        available = done.stdout.split()
        if tracer not in available:
            have = " ".join(available) or "none"
            raise TraceUnavailable(f"this kernel has no {tracer} tracer (available: {have}); it needs a "
                                   f"kernel built with {OPTIONS[tracer]}=y")
        if not self.target.run(["test", "-w", f"{self.path}/current_tracer"]).ok:
            raise TraceUnavailable(f"cannot write {self.path}/current_tracer: the {tracer} tracer needs root")

    def file(self, name: str) -> str:
        return f"{self.path}/{name}"

    def read(self, name: str) -> str:
        return self.target.run(["cat", self.file(name)]).stdout

    def write(self, name: str, value: str) -> bool:
        return self.target.run(["sh", "-c", _WRITE, self.file(name), value]).ok

    def append(self, name: str, value: str) -> bool:
        return self.target.run(["sh", "-c", _APPEND, self.file(name), value]).ok

    def truncate(self, name: str) -> bool:
        return self.target.run(["sh", "-c", _TRUNCATE, self.file(name)]).ok
