"""The recorder: a tracing instance of jitterlab's own on a target, recording the scheduler, IRQ,
softirq and hrtimer events of a run on the monotonic clock, read once after the run.

Against the Target protocol only (run, get), so it works alike on local, ssh and qemu targets:

- tracefs is mounted where it is not (and said: `RawTrace.mounted`), and unmounted afterwards;
- an instance `instances/jitterlab-<pid>-<token>` (not the global buffer, which cyclictest's
  breaktrace and rtla use), `trace_clock` = mono (the clock of the programs' logs and the vpin and
  self probes), the events of events.py, a buffer sized from the run (`buffer_kb`), tracing_cpumask
  left alone (it cannot be written in containers: the reader filters by CPU instead);
- a mark written to the instance's trace_marker right after it starts and right before it stops, so
  the trace says on its own clock what span it covers;
- after the run, tracing off, each CPU's stats read (overrun: events the kernel dropped when the
  buffer was full, oldest first) and its trace_pipe_raw read once without blocking (a reader busy
  while the run lasts would trace itself), with the format files the .dat needs, in one archive;
- every change recorded on the target before it is made (changes.py), undone by close() on every
  path, or by the next campaign's sweep when jitterlab was killed.

`check(target)` says, without starting anything, why a target cannot trace.
"""

from __future__ import annotations

import math
import os
import secrets
import tarfile
from dataclasses import dataclass
from pathlib import Path

from jitterlab.model.records import Warning_
from jitterlab.targets.base import Target, extract_all
from jitterlab.targets.capabilities import command_timeout_s
from jitterlab.tracing.events import EVENTS, systems
from jitterlab.tracing.tracefs import NO_RECORD, TRACEFS, Tracefs, TraceUnavailable

KIB = 1024
MIN_BUFFER_KB = 1024
MAX_BUFFER_KB = 256 * 1024
BYTES_PER_PERIOD = 1024  # a period's own events (timer, wake-up, two switches) with room for interruptions
BYTES_PER_S = 512 * KIB  # what else a busy CPU logs in a second (a load's switches, ticks, interrupts)
MEMORY_SHARE = 4  # the buffers of all CPUs take at most a quarter of the memory available
START_MARK, STOP_MARK = "jitterlab-start", "jitterlab-stop"

# Facts for check() and start(): $1 the tracefs mount point (mounted or not), then the events.
_FACTS = r"""
T=$1; shift
echo "uid $(id -u)"
grep -qw tracefs /proc/filesystems && echo "kernel tracefs"
grep -qF " $T tracefs " /proc/mounts && echo mounted
[ -d "$T/instances" ] && echo instances
[ -w "$T/instances" ] && echo writable
for e; do [ -d "$T/events/${e%%:*}/${e#*:}" ] && echo "event $e"; done
grep -qw mono "$T/trace_clock" 2>/dev/null && echo "clock mono"
command -v tar >/dev/null 2>&1 && echo tar
command -v mount >/dev/null 2>&1 && echo mount
dd if=/dev/null of=/dev/null iflag=nonblock status=none 2>/dev/null && echo dd
echo "cpus $(ls -d "$T"/per_cpu/cpu* 2>/dev/null | wc -l)"
awk '$1 == "MemAvailable:" {print "available_kb", $2}' /proc/meminfo
exit 0
"""
# $1 the instance, $2 its buffer per CPU (KiB), then the events; prints "failed WHAT" per failure
_START = r"""
I=$1 kb=$2; shift 2
mkdir "$I" || { echo "failed mkdir"; exit 0; }
printf 'mono\n' > "$I/trace_clock" || echo "failed trace_clock"
printf '%s\n' "$kb" > "$I/buffer_size_kb" || echo "failed buffer_size_kb"
for e; do printf '1\n' > "$I/events/${e%%:*}/${e#*:}/enable" || echo "failed event $e"; done
printf '1\n' > "$I/tracing_on" || echo "failed tracing_on"
printf '%s' jitterlab-start > "$I/trace_marker"
exit 0
"""
# $1 the instance, $2 tracefs, $3 the output directory, then the event systems: the raw pages, each
# CPU's stats and the format files the .dat needs (tracefs files read as 0 bytes long: cat, not tar)
_STOP = r"""
I=$1 T=$2 out=$3; shift 3
printf '%s' jitterlab-stop > "$I/trace_marker"
printf '0\n' > "$I/tracing_on"
mkdir -p "$out/raw" "$out/tracefs/events" || exit 1
for d in "$I"/per_cpu/cpu*; do
  c=${d##*/cpu}
  cat "$d/stats" > "$out/raw/stats$c"
  # a kernel may end a nonblocking read with EAGAIN rather than EOF (Debian 12's 6.1): dd then fails
  # after reading every page, which is the end, not a loss
  dd if="$d/trace_pipe_raw" of="$out/raw/cpu$c" iflag=nonblock bs=65536 status=none 2>/dev/null ||
    [ -s "$out/raw/cpu$c" ] || { echo "unread $c"; : > "$out/raw/cpu$c"; }
done
cat "$T/events/header_page" > "$out/tracefs/events/header_page"
cat "$T/events/header_event" > "$out/tracefs/events/header_event"
for s in ftrace "$@"; do
  for f in "$T/events/$s"/*/format; do
    [ -f "$f" ] || continue
    e=${f%/format}; e=${e##*/}
    mkdir -p "$out/tracefs/events/$s/$e" && cat "$f" > "$out/tracefs/events/$s/$e/format"
  done
done
for f in printk_formats saved_cmdlines saved_tgids; do cat "$T/$f" > "$out/tracefs/$f" 2>/dev/null; done
tar -C "$out" -czf "$out.tgz" raw tracefs
"""


@dataclass(frozen=True)
class Facts:
    """What a target says about its tracing, without anything started."""

    root: bool
    kernel_tracefs: bool
    mounted: bool
    instances: bool
    events: frozenset[str]
    clock_mono: bool
    tools: bool  # tar and a dd that reads without blocking
    cpus: int
    available_kb: int | None
    mount: bool = True  # a mount command, for tracefs where it is not mounted

    @staticmethod
    def parse(text: str) -> Facts:
        lines = text.splitlines()
        words = {line.split()[0]: line.split()[1:] for line in lines if line.split()}
        available = words.get("available_kb", [])
        return Facts(
            root=words.get("uid") == ["0"], kernel_tracefs="kernel" in words, mounted="mounted" in words,
            instances="instances" in words and "writable" in words,
            events=frozenset(line.split()[1] for line in lines if line.startswith("event ")),
            clock_mono=words.get("clock") == ["mono"], tools="tar" in words and "dd" in words,
            cpus=int(words.get("cpus", ["0"])[0]), available_kb=int(available[0]) if available else None,
            mount="mount" in words)

    def reason(self, events: tuple[str, ...]) -> str | None:
        """Why these events cannot be recorded here; None when they can (as far as can be told)."""
        if not self.kernel_tracefs:
            return "the kernel has no tracefs (it needs a kernel built with CONFIG_TRACING)"
        if not self.root:
            return "tracing needs root: run jitterlab as root on the target (or give the target's user root)"
        if not self.mounted and not self.mount:
            return f"tracefs is not mounted at {TRACEFS} and the target has no mount command (apt install " \
                "mount)"
        if not self.mounted:
            return None  # mounted for the run; the rest is known only then
        if not self.instances:
            return f"cannot make a tracing instance under {TRACEFS}/instances (a kernel older than 3.x?)"
        missing = [e for e in events if e not in self.events]
        if missing:
            return f"the kernel lacks the trace events {', '.join(missing)}"
        if not self.clock_mono:
            return f"the kernel's trace clocks lack mono ({TRACEFS}/trace_clock)"
        if not self.tools:
            return ("reading the trace needs tar and GNU dd (iflag=nonblock) on the target: apt install tar "
                    "coreutils")
        return None


def facts(target: Target, events: tuple[str, ...] = EVENTS, path: str = TRACEFS) -> Facts:
    return Facts.parse(target.run(["sh", "-c", _FACTS, "sh", path, *events]).stdout)


def check(target: Target, events: tuple[str, ...] = EVENTS) -> str | None:
    """Why `target` cannot record `events`, without starting anything; None when it can (as far as
    can be told before tracefs is mounted)."""
    return facts(target, events).reason(events)


def buffer_kb(duration_ns: int, period_ns: int | None, *, cpus: int,
              available_kb: int | None) -> tuple[int, str | None]:
    """The buffer per CPU (KiB) for a run: BYTES_PER_S of the CPU's own traffic and BYTES_PER_PERIOD
    for each period of the program, at least MIN_BUFFER_KB, at most MAX_BUFFER_KB and the CPUs'
    share of a quarter of the memory available; with a note when memory bounded it."""
    periods = duration_ns // period_ns if period_ns else 0
    wanted = math.ceil((duration_ns / 1e9 * BYTES_PER_S + periods * BYTES_PER_PERIOD) / KIB)
    size = min(max(wanted, MIN_BUFFER_KB), MAX_BUFFER_KB)
    if available_kb is not None and cpus > 0:
        share = available_kb // MEMORY_SHARE // cpus
        if share < size:
            bounded = max(share, 64)
            return bounded, (f"the trace buffer was bounded by the target's memory to {bounded} KiB per CPU "
                             f"({size} KiB wanted)")
    return size, None


@dataclass(frozen=True)
class CpuStats:
    """One CPU's ring buffer after the run (per_cpu/cpuN/stats)."""

    cpu: int
    entries: int
    overrun: int  # events overwritten when the buffer was full (the oldest)
    dropped: int  # events refused (a buffer not overwriting) or lost by a commit that fell behind

    @staticmethod
    def parse(cpu: int, text: str) -> CpuStats:
        values = {k.strip(): v.split()[0] for k, _, v in (line.partition(":") for line in text.splitlines())
                  if v.split()}

        def number(key: str) -> int:
            word = values.get(key, "0")
            return int(word) if word.isdigit() else 0

        return CpuStats(cpu, number("entries"), number("overrun"),
                        number("dropped events") + number("commit overrun"))


@dataclass(frozen=True)
class RawTrace:
    """A recording fetched to this machine: `directory`/raw/cpuN (the ring buffer's pages) and
    `directory`/tracefs (the target's format files, for the .dat)."""

    directory: Path
    stats: tuple[CpuStats, ...]
    events: tuple[str, ...]
    buffer_kb: int
    mounted: bool  # jitterlab mounted tracefs for the recording
    notes: tuple[str, ...] = ()

    @property
    def cpus(self) -> int:
        return len(self.stats)

    @property
    def lost(self) -> int:
        return sum(s.overrun + s.dropped for s in self.stats)

    def raw_files(self) -> list[Path]:
        """One file per CPU, in CPU order (empty where a CPU logged nothing)."""
        return [self.directory / "raw" / f"cpu{s.cpu}" for s in self.stats]

    def warnings(self) -> list[Warning_]:
        """What a run traced this way says about its trace."""
        out = [Warning_(note, "") for note in self.notes]
        lossy = [s for s in self.stats if s.overrun or s.dropped]
        if lossy:
            where = ", ".join(f"CPU {s.cpu}: {s.overrun + s.dropped}" for s in lossy)
            out.append(Warning_(
                f"the kernel dropped {self.lost} trace events when its buffer of {self.buffer_kb} KiB per "
                f"CPU was full ({where}): the trace lacks the start of the run there, and periods before "
                "its first event are not explained", "shorten campaign.duration, or trace a lighter load"))
        if self.mounted:
            out.append(Warning_(f"tracefs was not mounted: jitterlab mounted it at {TRACEFS} for the run "
                                "and unmounted it afterwards", ""))
        return out


class Recorder:
    """`with Recorder(target, scratch, duration_ns=..., period_ns=...) as rec:` the events are
    recorded until `rec.stop(local)`; every change is undone when the block ends."""

    def __init__(self, target: Target, scratch: str, *, duration_ns: int, period_ns: int | None = None,
                 events: tuple[str, ...] = EVENTS, buffer_kb: int | None = None) -> None:
        self.target = target
        self.scratch = scratch
        self.duration_ns = duration_ns
        self.period_ns = period_ns
        self.events = events
        self.fs = Tracefs(target)
        self.instance = f"jitterlab-{os.getpid()}-{secrets.token_hex(4)}"
        self.buffer_kb = buffer_kb or 0  # per CPU; 0: sized from the run
        self._mounted = False
        self._notes: list[str] = []

    def __enter__(self) -> Recorder:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def instance_dir(self) -> str:
        return self.fs.file(f"instances/{self.instance}")

    def start(self) -> None:
        """Start recording; TraceUnavailable (nothing left changed) when the target cannot."""
        try:
            self._start()
        except BaseException:
            self.close()
            raise

    def _start(self) -> None:
        before = facts(self.target, self.events)
        reason = before.reason(self.events)
        if reason:
            raise TraceUnavailable(reason)
        self.fs.mount()
        self._mounted = bool(self.fs.changes.steps)
        got = before if before.mounted else facts(self.target, self.events, self.fs.path)
        reason = got.reason(self.events)
        if reason:
            raise TraceUnavailable(reason)
        if not self.buffer_kb:
            self.buffer_kb, note = buffer_kb(self.duration_ns, self.period_ns, cpus=got.cpus,
                                             available_kb=got.available_kb)
            self._notes += [note] if note else []
        if not self.fs.changes.before(("rmdir", self.instance_dir, "-")):
            raise TraceUnavailable(NO_RECORD)
        argv = ["sh", "-c", _START, "sh", self.instance_dir, str(self.buffer_kb), *self.events]
        out = self.target.run(argv, timeout_s=command_timeout_s(self.target, 60.0)).stdout
        failed = [line.removeprefix("failed ") for line in out.splitlines() if line.startswith("failed ")]
        if failed:
            raise TraceUnavailable(f"could not set up the tracing instance {self.instance_dir}: "
                                   f"{', '.join(failed)} failed")

    def stop(self, local: Path) -> RawTrace:
        """Stop recording and fetch the trace into `local` (a directory of this machine)."""
        out = f"{self.scratch}/trace"
        done = self.target.run(["sh", "-c", _STOP, "sh", self.instance_dir, self.fs.path, out,
                                *systems(self.events)], timeout_s=command_timeout_s(self.target, 120.0))
        if not done.ok:
            raise TraceUnavailable(f"could not read the trace of {self.instance_dir}: "
                                   f"{done.stderr.strip() or f'exit status {done.rc}'}")
        unread = [line.split()[1] for line in done.stdout.splitlines() if line.startswith("unread ")]
        if unread:  # an offline CPU's pages cannot be read; any other's loss is said
            self._notes.append(f"the trace of CPU {', '.join(unread)} could not be read: periods there are "
                               "not explained")
        local.mkdir(parents=True, exist_ok=True)
        archive = local / "trace.tgz"
        self.target.get(f"{out}.tgz", archive)
        with tarfile.open(archive) as tar:
            extract_all(tar, local)
        archive.unlink()
        self.target.run(["rm", "-rf", out, f"{out}.tgz"])
        raw = local / "raw"
        last = max((int(p.name.removeprefix("stats")) for p in raw.glob("stats*")), default=-1)
        stats = []
        for c in range(last + 1):  # the .dat wants a file for every CPU up to the last
            (raw / f"cpu{c}").touch()
            said = raw / f"stats{c}"
            stats.append(CpuStats.parse(c, said.read_text() if said.exists() else ""))
        return RawTrace(local, tuple(stats), self.events, self.buffer_kb, self._mounted, tuple(self._notes))

    def close(self) -> list[str]:
        """Remove the instance, unmount what was mounted, drop the record; what could not be undone."""
        return self.fs.close()
