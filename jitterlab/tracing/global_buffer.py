"""The kernel's global trace buffer recording scheduler and interrupt events for one run, for a tool
that stops it itself (cyclictest -b --tracemark), and put back as it was afterwards.

cyclictest (rt-tests 2.x) writes its mark into the global buffer and switches tracing off when a
latency exceeds its threshold, so the buffer ends with what the kernel did just before the late
wake-up; it looks for the buffer under debugfs (/sys/kernel/debug/tracing) and mounts debugfs itself,
never unmounting it, when it is not there: debugfs is mounted first. The settings changed are
recorded before they are changed (changes.py) and put back by close(), or by the next campaign's
sweep when jitterlab was killed meanwhile.
"""

from __future__ import annotations

from jitterlab.targets.base import Target
from jitterlab.tracing.events import EVENTS
from jitterlab.tracing.tracefs import NO_RECORD, Tracefs, TraceUnavailable

BUFFER_KB = 2048  # per CPU, while the run lasts
TAIL_LINES = 3000
_FILES = ("tracing_on", "trace_marker", "current_tracer", "set_event", "buffer_size_kb", "trace")


class TraceSession:
    """The global ftrace buffer of one target, recording EVENTS until someone turns tracing off."""

    def __init__(self, target: Target) -> None:
        self.target = target
        self.fs = Tracefs(target)
        self.events: list[str] = []  # the EVENTS this kernel has, enabled by open()

    def open(self) -> None:
        """Mount tracefs (and debugfs) if needed, record the settings, start recording.

        Raises TraceUnavailable (with everything put back) when the target cannot trace.
        """
        try:
            self.fs.mount(debugfs=True)
            self._start()
        except BaseException:
            self.close()
            raise

    def _start(self) -> None:
        fs = self.fs
        for name in _FILES:
            if not self.target.run(["test", "-w", fs.file(name)]).ok:
                raise TraceUnavailable(f"cannot write {fs.file(name)} (tracing needs root, and a kernel "
                                       "built with CONFIG_FTRACE)")
        # "7 (expanded: 1408)": the kernel had not grown the buffer yet; the size it would have
        size = fs.read("buffer_size_kb").replace("(expanded:", " ").replace(")", " ").split()
        undo = [("write", fs.file("tracing_on"), "0"), ("write", fs.file("trace"), ""),
                ("events", fs.file("set_event"), " ".join(fs.read("set_event").split())),
                ("write", fs.file("current_tracer"), fs.read("current_tracer").strip() or "nop")]
        if size:
            undo.append(("write", fs.file("buffer_size_kb"), size[-1]))
        undo.append(("write", fs.file("tracing_on"), fs.read("tracing_on").strip() or "1"))
        if not fs.changes.before(*undo):
            raise TraceUnavailable(NO_RECORD)
        fs.write("tracing_on", "0")
        fs.write("current_tracer", "nop")
        fs.truncate("set_event")
        self.events = [e for e in EVENTS if fs.append("set_event", e)]
        fs.write("buffer_size_kb", str(BUFFER_KB))
        fs.truncate("trace")  # clears the buffer
        if not fs.write("tracing_on", "1"):
            raise TraceUnavailable(f"cannot switch tracing on ({fs.file('tracing_on')})")

    def stopped(self) -> bool:
        """True when tracing is off (cyclictest --tracemark switched it off at the threshold)."""
        return self.fs.read("tracing_on").strip() == "0"

    def tail(self, lines: int = TAIL_LINES) -> bytes:
        """The last `lines` lines of the trace buffer (what happened just before it stopped)."""
        self.fs.write("tracing_on", "0")
        done = self.target.run(["tail", "-n", str(lines), self.fs.file("trace")], timeout_s=60.0)
        return done.stdout.encode()

    def close(self) -> list[str]:
        """Put back every setting open() changed; unmount what it mounted. What could not be undone."""
        return self.fs.close()
