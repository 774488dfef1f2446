"""The digest of cyclictest's breaktrace: what the kernel trace attached to a run (trace-tail.txt,
ftrace's text) says about the late wake-up it stopped at.

cyclictest -b --tracemark writes "hit latency threshold (LATENCY > THRESHOLD)" into the trace from
the late thread, on its CPU, just after it woke. Its wake-up was due LATENCY µs before the mark, so
what ran on that CPU in that window is what kept it waiting: the tasks on the CPU (from
sched_switch) with their time, the interrupts and softirqs handled there with theirs, and when the
thread was woken and when it got the CPU. Lines are ftrace's default text format:

    <comm>-<pid> [<cpu>] <flags> <seconds>: <event>: <fields>

(the flags column is optional). Anything else in the file (its header, a line of another form) is
left out, so a trace of another kernel version is read as far as its lines are of that form."""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass

_LINE = re.compile(r"^\s*(?P<comm>.+?)-(?P<pid>\d+)\s+(?:\(\s*[-\d]+\)\s+)?\[(?P<cpu>\d+)\]\s+"
                   r"(?:(?P<flags>[^\s\d][^\s]*)\s+)?(?P<ts>\d+\.\d+):\s+(?P<event>[\w:]+):\s?(?P<rest>.*)$")
_MARK = re.compile(r"hit latency threshold \((?P<latency>\d+) > (?P<threshold>\d+)\)")
_FIELD = re.compile(r"(\w+)=(\S+)")
US = 1000  # ns


@dataclass(frozen=True)
class Event:
    comm: str
    pid: int
    cpu: int
    ts_ns: int  # the trace clock's seconds, as printed (µs, or ns with a ns clock), in ns
    name: str
    rest: str

    def field(self, key: str) -> str | None:
        return dict(_FIELD.findall(self.rest)).get(key)


def events(text: str) -> list[Event]:
    """The trace's event lines, in the order written (ftrace's text: oldest first)."""
    out = []
    for line in text.splitlines():
        found = _LINE.match(line)
        if found and not line.lstrip().startswith("#"):
            seconds, _, fraction = found["ts"].partition(".")
            out.append(Event(found["comm"], int(found["pid"]), int(found["cpu"]),
                             int(seconds) * 10**9 + int(fraction.ljust(9, "0")[:9]), found["event"],
                             found["rest"]))
    return out


@dataclass(frozen=True)
class Digest:
    """What the trace says about the wake-up the break stopped at: times on the trace's clock, in ns."""

    thread: str  # "cyclictest-2866344"
    cpu: int
    mark_ns: int
    latency_us: int
    threshold_us: int
    ran_ns: tuple[tuple[str, int], ...]  # the tasks on the CPU in the window, longest first
    irqs_ns: tuple[tuple[str, int], ...]  # interrupt handlers and softirqs there, longest first
    woken_ns: int | None  # when the thread was woken (sched_waking, else sched_wakeup)
    switched_in_ns: int | None  # when it got the CPU after that

    @property
    def due_ns(self) -> int:
        """When the wake-up was due: the latency before the mark."""
        return self.mark_ns - self.latency_us * US


def digest(text: str) -> Digest | None:
    """The digest of a breaktrace's trace tail, or None when it holds no mark of cyclictest's."""
    found = events(text)
    marks = [(e, m) for e in found if e.name.endswith("tracing_mark_write") and (m := _MARK.search(e.rest))]
    if not marks:
        return None
    mark, m = marks[-1]
    latency_us = int(m["latency"])
    due_ns = mark.ts_ns - latency_us * US
    here = [e for e in found if e.cpu == mark.cpu and e.ts_ns <= mark.ts_ns]
    woken = [e for e in found if e.ts_ns <= mark.ts_ns and e.name in ("sched_waking", "sched_wakeup")
             and e.field("pid") == str(mark.pid)]
    woken_ns = woken[-1].ts_ns if woken else None
    switched = [e for e in here if e.name == "sched_switch" and e.field("next_pid") == str(mark.pid)
                and (woken_ns is None or e.ts_ns >= woken_ns)]
    return Digest(
        f"{mark.comm}-{mark.pid}", mark.cpu, mark.ts_ns, latency_us, int(m["threshold"]),
        _ran(here, due_ns, mark.ts_ns), _handled(here, due_ns, mark.ts_ns), woken_ns,
        switched[0].ts_ns if switched else None)


def _ran(here: list[Event], start_ns: int, end_ns: int) -> tuple[tuple[str, int], ...]:
    """Time each task held the CPU between start_ns and end_ns, from the CPU's sched_switch events
    (the task before the first switch in the window: the last one switched in before it, else the
    first switch's prev)."""
    switches = [e for e in here if e.name == "sched_switch"]
    before = [e for e in switches if e.ts_ns <= start_ns]
    inside = [e for e in switches if start_ns < e.ts_ns <= end_ns]
    if before:
        current = _task(before[-1], "next")
    elif inside:
        current = _task(inside[0], "prev")
    else:
        return ()
    held: dict[str, int] = defaultdict(int)
    at = start_ns
    for e in inside:
        held[current] += e.ts_ns - at
        current, at = _task(e, "next"), e.ts_ns
    held[current] += end_ns - at
    return _longest(held)


def _task(e: Event, side: str) -> str:
    return f"{e.field(f'{side}_comm') or '?'} (pid {e.field(f'{side}_pid') or '?'})"


def _handled(here: list[Event], start_ns: int, end_ns: int) -> tuple[tuple[str, int], ...]:
    """Time in each interrupt handler and softirq on the CPU between start_ns and end_ns (a handler
    entered before the window counts from the window's start; one not left by its end, to the end)."""
    held: dict[str, int] = defaultdict(int)
    open_at: dict[str, int] = {}
    names = {}  # an interrupt's name is on its entry only: both ends are matched by number
    for e in here:
        key = _handler(e)
        if e.name == "irq_handler_entry":
            names[key] = f"{key} {e.field('name') or ''}".rstrip()
        if e.name in ("irq_handler_entry", "softirq_entry"):
            open_at[key] = e.ts_ns
        elif e.name in ("irq_handler_exit", "softirq_exit") and key in open_at:
            begun = open_at.pop(key)
            if e.ts_ns > start_ns:
                held[key] += e.ts_ns - max(begun, start_ns)
    for key, begun in open_at.items():
        if begun < end_ns:
            held[key] += end_ns - max(begun, start_ns)
    return _longest({names.get(k, k): v for k, v in held.items()})


def _handler(e: Event) -> str:
    """"IRQ 24" for a hard interrupt, "softirq TIMER" for a softirq."""
    if e.name.startswith("irq_"):
        return f"IRQ {e.field('irq') or '?'}"
    action = re.search(r"action=(\w+)", e.rest)
    return f"softirq {action.group(1) if action else e.field('vec') or '?'}"


def _longest(held: dict[str, int]) -> tuple[tuple[str, int], ...]:
    return tuple(sorted(((k, v) for k, v in held.items() if v > 0), key=lambda kv: -kv[1]))
