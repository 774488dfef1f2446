"""What every load does: start on a target, prove it runs, stop, say what it achieved; and what a
load that can stay up from one run to the next does besides (Sustained: a reading per run)."""

from __future__ import annotations

import contextlib
import functools
import os
import signal
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from jitterlab.model.errors import RunFailed
from jitterlab.model.options import Options
from jitterlab.model.params import Param, parse_options
from jitterlab.model.records import Metric
from jitterlab.model.registry import Registry
from jitterlab.targets.base import CommandTimeout, Target
from jitterlab.targets.capabilities import SharesControllerFiles, has
from jitterlab.targets.processes import RecordedProcess, describe_exit, pinned, spawn_recorded

DEFAULT_MAX_DURATION_S = 3600.0


@dataclass(frozen=True)
class LoadContext:
    """Where and how a load runs for one run.

    `scratch` is a directory on the target private to this run (logs, temp files);
    `cpus` is the CPU set the load may use (None: all CPUs);
    `probe_cpu` is the CPU a busy-polling probe owns during the run (None: none), left out of the
    load's reading of how busy the machine was, since the probe's own polling is not load;
    `max_duration_s` bounds the life of the load's tools by themselves, so that nothing runs
    forever even if jitterlab is SIGKILLed (None: DEFAULT_MAX_DURATION_S).
    """

    target: Target
    scratch: str
    cpus: tuple[int, ...] | None = None
    options: dict[str, object] = field(default_factory=dict)
    max_duration_s: float | None = None
    probe_cpu: int | None = None


class Load(Protocol):
    """One disturbance beside the benchmark. An instance lives for one run, or for consecutive runs
    of a target that use it with the same options when it is Sustained."""

    def start(self, ctx: LoadContext) -> None:
        """Start the load; raise RunFailed if it cannot start."""
        ...

    def check(self) -> None:
        """Raise RunFailed if the load is not (or no longer) running and producing."""
        ...

    def stop(self) -> list[Metric]:
        """Stop everything the load started; return what it achieved (`load_*` metrics)."""
        ...


class Sustained(ABC):
    """A load that can stay up between consecutive runs that use it, its warm-up paid once: the
    runner checks it before each run, calls mark() when the run measures, reads it after the run
    with snapshot() (it keeps running), restarts it only when it failed, and stop()s it after the
    last of those runs, which then reads like snapshot(). A load whose tools report only when they
    exit (stress-ng) hands over to a fresh instance in snapshot(), so that the target is never
    without it; a load that starts and stops with every run is simply not Sustained."""

    @abstractmethod
    def mark(self) -> None:
        """A run's reading begins now (what the load did between two runs is no run's)."""

    @abstractmethod
    def snapshot(self) -> list[Metric]:
        """What the load achieved since the last mark() (or its start), leaving it running: the
        same `load_*` metrics stop() gives, which then also reads from the last mark()."""


@dataclass(frozen=True)
class LoadSpec:
    """A registered load: a factory, the tools it needs on the target (tool -> Debian package),
    its options as Params (read from [loads.NAME] like matrix keys) and the typed `record` the load
    reads them as (model/options.py), and `preflight(target, options, where)`, which, if given, runs
    once per target before the campaign and raises UserError for what only the target can tell (e.g.
    a network peer that does not answer).
    """

    factory: type
    tools: dict[str, str]
    params: tuple[Param, ...] = ()
    preflight: Callable[[Target, dict, str], None] | None = None
    record: type[Options] | None = None

    def validate(self, options: Mapping[str, object], where: str) -> dict:
        """The options with defaults filled in; UserError naming `where`.key otherwise."""
        parsed = parse_options(self.params, options, where, "this load")
        if self.record is not None:
            self.record.of(parsed)  # typed once where the campaign is read: a record at odds is a bug
        return parsed


LOADS: Registry[LoadSpec] = Registry("load")


def lifetime_s(ctx: LoadContext) -> int:
    """Whole seconds a tool may live by itself: ctx.max_duration_s or the default, at least 1."""
    limit = ctx.max_duration_s if ctx.max_duration_s is not None else DEFAULT_MAX_DURATION_S
    return max(1, int(limit + 0.999))


# --- helpers shared by the loads: one supervised tool -------------------------------------------

# Constant script: prints the recorded leader pid, then every /proc/<pid>/stat line (one cat: a
# missing record leaves a stat line first, which parse_group reads as no leader, as it should).
GROUP_SCRIPT = 'cat "$0" /proc/[0-9]*/stat 2>/dev/null; exit 0'
_USER_HZ = 100  # /proc/<pid>/stat ticks per second on every Linux ABI jitterlab targets


@dataclass(frozen=True)
class ProcGroup:
    """A tool's process group as /proc shows it."""

    workers: int  # members other than the leader: running or runnable, not stopped, no zombies
    stopped: int
    cpu_ticks: int  # user+system of the live members, and of the children they waited for


def parse_group(text: str) -> ProcGroup | None:
    """The group of the leader on the first line of GROUP_SCRIPT's output (None: leader gone)."""
    lines = text.splitlines()
    if not lines or not lines[0].strip().isdigit():
        return None
    leader = int(lines[0])
    procs = {}
    for line in lines[1:]:
        head, _, tail = line.rpartition(")")
        fields = tail.split()
        if len(fields) < 13 or not head.split(" ", 1)[0].isdigit():
            continue
        procs[int(head.split(" ", 1)[0])] = fields
    if leader not in procs or procs[leader][0] in "ZX":
        return None
    pgid = procs[leader][2]
    members = [f for pid, f in procs.items() if f[2] == pgid and pid != leader and f[0] not in "ZX"]
    ticks = sum(sum(int(v) for v in f[11:15]) for f in [procs[leader], *members])
    stopped = sum(1 for f in members if f[0] in "Tt")
    return ProcGroup(len(members) - stopped, stopped, ticks)


@functools.cache
def _lists_children() -> bool:
    """Whether this machine's kernel lists each task's children (CONFIG_PROC_CHILDREN): asked once."""
    return os.path.exists("/proc/thread-self/children")


def _family_here(leader: int) -> list[int] | None:
    """The leader and its descendants on this machine, from /proc/<pid>/task/<tid>/children; None
    when the kernel keeps no such lists. A member of the leader's group that is not its descendant
    (an orphan taken in by init) is not among them: a tool's workers are its children."""
    if not _lists_children():
        return None
    family, todo = [], [leader]
    while todo:
        pid = todo.pop()
        family.append(pid)
        with contextlib.suppress(OSError):  # gone meanwhile
            for tid in os.listdir(f"/proc/{pid}/task"):
                with contextlib.suppress(OSError), open(f"/proc/{pid}/task/{tid}/children", "rb") as f:
                    todo += [int(child) for child in f.read().split()]
    return family


class Tool:
    """One long-running tool of a load: recorded for the leftover sweep, in its own process
    group, pinned to ctx.cpus, output to `<scratch>/<log_name>`. `label` prefixes every error.
    `placed_by`: the tool's own flags that put it on a CPU list ("0,2"), for a tool that does so once it
    has started: its start (the dynamic loader, its options) runs where jitterlab does, not on CPUs a
    load already holds (stress-ng --taskset: its workers ran 8-9 ms sooner beside a running stress-ng,
    14 ms instead of 22 here), and then it and its workers keep to the list."""

    def __init__(self, ctx: LoadContext, label: str, argv: list[str], log_name: str, *,
                 placed_by: Callable[[str], list[str]] | None = None) -> None:
        self.target = ctx.target
        self.label = label
        self.log = f"{ctx.scratch}/{log_name}"
        if ctx.cpus and placed_by is not None:
            argv = [*argv, *placed_by(",".join(map(str, ctx.cpus)))]
        else:
            argv = [*pinned(ctx.cpus), *argv]
        self.proc: RecordedProcess = spawn_recorded(ctx.target, argv, log_path=self.log)
        self._last: tuple[float, int] | None = None

    def group(self) -> ProcGroup | None:
        here = has(self.target, SharesControllerFiles)
        if here is None:
            return parse_group(self.target.run(["sh", "-c", GROUP_SCRIPT, self.proc.pidfile]).stdout)
        # what the script prints, read without starting it: the stat lines of the leader's descendants
        # (a tool's workers; 3 files instead of every process's, 2 ms on a quiet PC, 10+ on a busy one)
        head = here.read_here([self.proc.pidfile])
        pids = _family_here(int(head)) if head.strip().isdigit() else []
        if pids is None:  # a kernel that lists no children (CONFIG_PROC_CHILDREN): every process's
            pids = [pid for pid in os.listdir("/proc") if pid.isdigit()]
        return parse_group(head + here.read_here([f"/proc/{pid}/stat" for pid in pids]))

    def alive_or_fail(self) -> None:
        rc = self.proc.poll()
        if rc is not None:
            raise RunFailed(f"{self.label} is no longer running ({describe_exit(rc)}); "
                            f"{self.log_tail()}")

    def await_running(self, workers: int = 0, timeout_s: float = 10.0) -> ProcGroup:
        """Return once the leader and `workers` more processes of its group run; stop it if not."""
        deadline = time.monotonic() + timeout_s
        try:
            while True:
                self.alive_or_fail()
                looked = time.monotonic()
                group = self.group()
                now = time.monotonic()
                if group is not None and group.workers >= workers:
                    self._last = (now, group.cpu_ticks)
                    return group
                if now > deadline:
                    raise RunFailed(f"{self.label} did not start {workers} workers within "
                                    f"{timeout_s:g}s; {self.log_tail()}")
                # a look costs 1 ms here, a round trip on another machine: the pause is twice what it
                # cost (2-20 ms), so a tool whose workers start in 15-30 ms is seen within a few ms
                time.sleep(min(0.02, max(0.002, 2 * (now - looked))))
        except BaseException:
            self.proc.stop()
            raise

    def check(self, workers: int = 0, idle_after_s: float = 3.0) -> ProcGroup:
        """Alive, `workers` processes running, none stopped, and CPU time used since the last
        check when that was more than `idle_after_s` ago (a busy VM may starve it briefly)."""
        self.alive_or_fail()
        group = self.group()
        if group is None:
            raise RunFailed(f"{self.label}: its process is gone from /proc")
        if group.stopped:
            raise RunFailed(f"{self.label}: {group.stopped} of its processes are stopped (SIGSTOP?)")
        if group.workers < workers:
            raise RunFailed(f"{self.label}: only {group.workers} of {workers} workers are running")
        now = time.monotonic()
        if self._last is not None and now - self._last[0] >= idle_after_s:
            if group.cpu_ticks <= self._last[1]:
                raise RunFailed(
                    f"{self.label} used no CPU time in the last {now - self._last[0]:.1f}s"
                )
            self._last = (now, group.cpu_ticks)
        elif self._last is None:
            self._last = (now, group.cpu_ticks)
        return group

    def finish(self, signum: int = signal.SIGINT, timeout_s: float = 10.0) -> int:
        """Send `signum` (the tool's "finish and report"), wait, then stop the whole group."""
        try:
            if self.proc.poll() is None:
                self.proc.signal(signum)
                with contextlib.suppress(CommandTimeout):  # then stop() below kills it
                    self.proc.wait(timeout_s)
        finally:
            rc = self.proc.stop()
        return rc

    def read(self, path: str) -> str:
        return self.target.run(["cat", path]).stdout

    def log_tail(self) -> str:
        tail = self.target.run(["tail", "-n", "3", self.log]).stdout.strip()
        return f"last lines of {self.log}: {tail}" if tail else f"{self.log} is empty"
