"""The kernel's function tracer (ftrace) set up for one run, and put back as it was afterwards.

cyclictest -b THRESHOLD --tracemark writes a mark into the global trace buffer and switches
tracing off when a latency exceeds the threshold, so the buffer ends with what the kernel did
just before the late wake-up. cyclictest only stops the trace; recording it is ours: tracefs
mounted, scheduler/interrupt/timer events enabled, the buffer cleared and switched on. cyclictest
(rt-tests 2.x) looks for the buffer under debugfs (/sys/kernel/debug/tracing) and mounts debugfs
itself, never unmounting it, when it is not there: we mount it first. Every setting touched is
saved first and restored by close(), and what we mounted is unmounted again.
"""

from __future__ import annotations

from jitterlab.targets.base import Target

TRACEFS = "/sys/kernel/tracing"
DEBUGFS = "/sys/kernel/debug"  # where cyclictest looks: DEBUGFS/tracing, the same buffer
# what ran on the CPU and what interrupted it: enough to see why a wake-up was late, cheap to record
EVENTS = (
    "sched:sched_switch",
    "sched:sched_wakeup",
    "sched:sched_waking",
    "sched:sched_migrate_task",
    "irq:irq_handler_entry",
    "irq:irq_handler_exit",
    "irq:softirq_entry",
    "irq:softirq_exit",
    "timer:hrtimer_expire_entry",
    "timer:hrtimer_expire_exit",
    "timer:hrtimer_start",
)
BUFFER_KB = 2048  # per CPU, while the run lasts
TAIL_LINES = 3000

# Constant scripts; paths and values reach them as positional parameters, never as text.
_WRITE = 'printf "%s\\n" "$1" > "$0"'
_APPEND = 'printf "%s\\n" "$1" >> "$0"'
_TRUNCATE = ': > "$0"'


class TraceUnavailable(Exception):
    """The target cannot trace (no tracefs, not root, ...); `reason` says why."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class TraceSession:
    """The global ftrace buffer of one target, recording EVENTS until someone turns tracing off."""

    def __init__(self, target: Target) -> None:
        self.target = target
        self.mounted: list[str] = []  # mount points we mounted, in order
        self.events: list[str] = []  # the EVENTS this kernel has, enabled by open()
        self._saved: dict[str, str] | None = None
        self._saved_events: list[str] = []

    def open(self) -> None:
        """Mount tracefs (and debugfs) if needed, save the tracer settings, start recording.

        Raises TraceUnavailable (with everything put back) when the target cannot trace.
        """
        try:
            self._mount("tracefs", TRACEFS)
            self._mount("debugfs", DEBUGFS)
            self._start()
        except BaseException:
            self.close()
            raise

    def _mount(self, fstype: str, where: str) -> None:
        mounts = self.target.run(["cat", "/proc/mounts"]).stdout
        if any(f[1:3] == [where, fstype] for f in (line.split() for line in mounts.splitlines())):
            return
        done = self.target.run(["mount", "-t", fstype, "nodev", where], timeout_s=10.0)
        if not done.ok:
            why = done.stderr.strip() or f"mount exit status {done.rc}"
            raise TraceUnavailable(f"{fstype} is not mounted at {where} and mounting it failed: {why}")
        self.mounted.append(where)

    def _start(self) -> None:
        files = ("tracing_on", "trace_marker", "current_tracer", "set_event", "buffer_size_kb", "trace")
        for name in files:
            if not self.target.run(["test", "-w", f"{TRACEFS}/{name}"]).ok:
                raise TraceUnavailable(
                    f"cannot write {TRACEFS}/{name} (tracing needs root, and a kernel built with "
                    "CONFIG_FTRACE)"
                )
        saved = {name: self._read(name) for name in ("tracing_on", "current_tracer", "buffer_size_kb")}
        self._saved_events = self._read("set_event").split()
        self._saved = saved
        self._write("tracing_on", "0")
        self._write("current_tracer", "nop")
        self._truncate("set_event")
        self.events = [e for e in EVENTS if self._append("set_event", e)]
        self._write("buffer_size_kb", str(BUFFER_KB))
        self._truncate("trace")  # clears the buffer
        if not self._write("tracing_on", "1"):
            raise TraceUnavailable(f"cannot switch tracing on ({TRACEFS}/tracing_on)")

    def stopped(self) -> bool:
        """True when tracing is off (cyclictest --tracemark switched it off at the threshold)."""
        return self._read("tracing_on").strip() == "0"

    def tail(self, lines: int = TAIL_LINES) -> bytes:
        """The last `lines` lines of the trace buffer (what happened just before it stopped)."""
        self._write("tracing_on", "0")
        done = self.target.run(["tail", "-n", str(lines), f"{TRACEFS}/trace"], timeout_s=60.0)
        return done.stdout.encode()

    def close(self) -> None:
        """Put back every setting open() changed; unmount tracefs if open() mounted it."""
        if self._saved is not None:
            saved, self._saved = self._saved, None
            self._write("tracing_on", "0")
            self._truncate("trace")
            self._truncate("set_event")
            for event in self._saved_events:
                self._append("set_event", event)
            self._write("current_tracer", saved["current_tracer"].strip() or "nop")
            # "7 (expanded: 1408)": the kernel had not grown the buffer yet; the size it would have
            size = saved["buffer_size_kb"].replace("(expanded:", " ").replace(")", " ").split()
            if size:
                self._write("buffer_size_kb", size[-1])
            self._write("tracing_on", saved["tracing_on"].strip() or "1")
        while self.mounted:
            where = self.mounted.pop()
            if where == DEBUGFS:  # the kernel mounted tracefs inside it when it was first looked at
                self.target.run(["umount", f"{DEBUGFS}/tracing"], timeout_s=10.0)
            self.target.run(["umount", where], timeout_s=10.0)

    def _read(self, name: str) -> str:
        return self.target.run(["cat", f"{TRACEFS}/{name}"]).stdout

    def _write(self, name: str, value: str) -> bool:
        return self.target.run(["sh", "-c", _WRITE, f"{TRACEFS}/{name}", value]).ok

    def _append(self, name: str, value: str) -> bool:
        return self.target.run(["sh", "-c", _APPEND, f"{TRACEFS}/{name}", value]).ok

    def _truncate(self, name: str) -> bool:
        return self.target.run(["sh", "-c", _TRUNCATE, f"{TRACEFS}/{name}"]).ok
