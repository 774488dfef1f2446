"""Kernel trace events as arrays: one row per event, the columns every reader fills alike.

A row is one event of the recorder's set (`Kind`); what each column holds depends on its kind:

| kind | pid, prio, name | prev_pid, prev_prio, prev_name | number | number2 | timer, expires_ns, soft_ns |
| --- | --- | --- | --- | --- | --- |
| SWITCH | next_pid, next_prio, next_comm | prev_pid, prev_prio, prev_comm | prev_state | | |
| WAKING, WAKEUP | pid, prio, comm (the woken task) | the running task's pid | target_cpu | | |
| MIGRATE | pid, prio, comm (the moved task) | the running task's pid | dest_cpu | orig_cpu | |
| IRQ_ENTRY | name: the handler's name | the running task's pid | irq | | |
| IRQ_EXIT | | the running task's pid | irq | ret | |
| SOFTIRQ_ENTRY, _EXIT | | the running task's pid | vec | | |
| HRTIMER_START | | the arming task's pid | | | hrtimer, expires, softexpires |
| HRTIMER_EXPIRE_ENTRY | | the running task's pid | | | hrtimer, now (expires_ns) |
| HRTIMER_EXPIRE_EXIT | | the running task's pid | | | hrtimer |
| GPIO_VALUE | | the running task's pid | gpio | value | |
| LOST | | | events lost before it (-1: unknown) | | |
| MARK | name: the text written to trace_marker | the writing task's pid | | | |

Unused columns are 0 (names: 0 is ""). `prio` is the kernel's: 0..98 for SCHED_FIFO/RR (99 - the
real-time priority), 100..139 for the others (120 + nice), -1 for SCHED_DEADLINE. Times are
nanoseconds on the trace's clock (the recorder's is CLOCK_MONOTONIC). Names (commands, IRQ
handlers) are interned: a column holds an index into `names`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum

import numpy as np


class Kind(IntEnum):
    SWITCH = 1
    WAKING = 2
    WAKEUP = 3
    MIGRATE = 4
    IRQ_ENTRY = 5
    IRQ_EXIT = 6
    SOFTIRQ_ENTRY = 7
    SOFTIRQ_EXIT = 8
    HRTIMER_START = 9
    HRTIMER_EXPIRE_ENTRY = 10
    HRTIMER_EXPIRE_EXIT = 11
    GPIO_VALUE = 12
    LOST = 13
    MARK = 14


# The row as the C reader (tracing/trace_events.c, struct row) writes it: same order, same sizes.
EVENT_DTYPE = np.dtype([
    ("time_ns", "<i8"), ("timer", "<i8"), ("expires_ns", "<i8"), ("soft_ns", "<i8"),
    ("pid", "<i4"), ("prio", "<i4"), ("prev_pid", "<i4"), ("prev_prio", "<i4"),
    ("number", "<i4"), ("number2", "<i4"), ("name", "<u4"), ("prev_name", "<u4"),
    ("cpu", "<u2"), ("kind", "u1"), ("pad", "u1"), ("pad2", "<u4"),
])

SOFTIRQ_NAMES = ("HI", "TIMER", "NET_TX", "NET_RX", "BLOCK", "IRQ_POLL", "TASKLET", "SCHED", "HRTIMER",
                 "RCU")


def is_runnable(prev_state: int) -> bool:
    """Whether a task switched out with this prev_state was still runnable (preempted: "R" or "R+")."""
    return prev_state & 0xFF == 0


@dataclass(frozen=True)
class TraceEvents:
    """A trace's events in time order, and what the trace covers on each CPU.

    `covered_ns[cpu]` = (from, to): the span in which the trace holds every event of that CPU (from
    its start, or from the last loss of events on it, to its end); None where nothing is known.
    """

    rows: np.ndarray  # EVENT_DTYPE, sorted by time_ns (stable)
    names: tuple[str, ...]  # interned names; names[0] == ""
    covered_ns: tuple[tuple[int, int] | None, ...] = ()
    clock: str = "mono"

    def __post_init__(self) -> None:
        if self.rows.dtype != EVENT_DTYPE:
            raise ValueError(f"rows must be of EVENT_DTYPE, got {self.rows.dtype}")
        if not self.names or self.names[0] != "":
            raise ValueError('names[0] must be ""')
        t = self.rows["time_ns"]
        if len(t) > 1 and bool((np.diff(t) < 0).any()):
            order = np.argsort(t, kind="stable")
            object.__setattr__(self, "rows", self.rows[order])
        if not self.covered_ns:
            object.__setattr__(self, "covered_ns", _coverage(self.rows, None, None))

    def __len__(self) -> int:
        return len(self.rows)

    @property
    def cpus(self) -> int:
        return len(self.covered_ns)

    def name(self, index: int) -> str:
        return self.names[index]

    def covering(self, start_ns: int, stop_ns: int) -> TraceEvents:
        """The same events, known to cover [start_ns, stop_ns] on every CPU (the recording's start and
        stop) except where events were lost: there from the last loss on."""
        cpus = max(len(self.covered_ns), int(self.rows["cpu"].max()) + 1 if len(self.rows) else 0)
        return TraceEvents(self.rows, self.names, _coverage(self.rows, (start_ns, stop_ns), cpus), self.clock)


def _coverage(rows: np.ndarray, span: tuple[int, int] | None,
              cpus: int | None) -> tuple[tuple[int, int] | None, ...]:
    cpu_of, time = rows["cpu"], rows["time_ns"]
    n_cpus = cpus if cpus is not None else (int(cpu_of.max()) + 1 if len(rows) else 0)
    lost = np.flatnonzero(rows["kind"] == Kind.LOST)  # few: the columns are not copied per CPU
    out: list[tuple[int, int] | None] = []
    for cpu in range(n_cpus):
        losses = time[lost[cpu_of[lost] == cpu]]
        if span is not None:
            out.append((int(losses[-1]) if len(losses) else span[0], span[1]))
            continue
        mine = np.flatnonzero(cpu_of == cpu)
        if len(mine):
            start = int(losses[-1]) if len(losses) else int(time[mine[0]])
            out.append((start, int(time[mine[-1]])))
        else:
            out.append(None)
    return tuple(out)


@dataclass
class TraceBuilder:
    """Synthetic traces for tests and benchmarks: events appended in time order with the fields of
    their kind; `events()` makes the TraceEvents."""

    rows: list[tuple] = field(default_factory=list)
    names: dict[str, int] = field(default_factory=lambda: {"": 0})

    def _name(self, text: str) -> int:
        return self.names.setdefault(text, len(self.names))

    def _add(self, t_ns: int, cpu: int, kind: Kind, *, pid: int = 0, prio: int = 0, name: str = "",
             prev_pid: int = 0, prev_prio: int = 0, prev_name: str = "", number: int = 0, number2: int = 0,
             timer: int = 0, expires_ns: int = 0, soft_ns: int = 0) -> TraceBuilder:
        self.rows.append((t_ns, timer, expires_ns, soft_ns, pid, prio, prev_pid, prev_prio, number, number2,
                          self._name(name), self._name(prev_name), cpu, int(kind), 0, 0))
        return self

    def switch(self, t_ns: int, cpu: int, prev: tuple[str, int, int], nxt: tuple[str, int, int],
               prev_state: int = 1) -> TraceBuilder:
        """prev and nxt are (comm, pid, prio); prev_state 0 = preempted (runnable), 1 = sleeping."""
        return self._add(t_ns, cpu, Kind.SWITCH, pid=nxt[1], prio=nxt[2], name=nxt[0], prev_pid=prev[1],
                         prev_prio=prev[2], prev_name=prev[0], number=prev_state)

    def waking(self, t_ns: int, cpu: int, task: tuple[str, int, int], target_cpu: int,
               by: int = 0) -> TraceBuilder:
        self._add(t_ns, cpu, Kind.WAKING, pid=task[1], prio=task[2], name=task[0], prev_pid=by,
                  number=target_cpu)
        return self._add(t_ns, cpu, Kind.WAKEUP, pid=task[1], prio=task[2], name=task[0], prev_pid=by,
                         number=target_cpu)

    def migrate(self, t_ns: int, cpu: int, task: tuple[str, int, int], orig_cpu: int, dest_cpu: int,
                by: int = 0) -> TraceBuilder:
        return self._add(t_ns, cpu, Kind.MIGRATE, pid=task[1], prio=task[2], name=task[0], prev_pid=by,
                         number=dest_cpu, number2=orig_cpu)

    def irq(self, start_ns: int, end_ns: int, cpu: int, irq: int, name: str, by: int = 0) -> TraceBuilder:
        self._add(start_ns, cpu, Kind.IRQ_ENTRY, name=name, prev_pid=by, number=irq)
        return self._add(end_ns, cpu, Kind.IRQ_EXIT, prev_pid=by, number=irq, number2=1)

    def softirq(self, start_ns: int, end_ns: int, cpu: int, vec: int, by: int = 0) -> TraceBuilder:
        self._add(start_ns, cpu, Kind.SOFTIRQ_ENTRY, prev_pid=by, number=vec)
        return self._add(end_ns, cpu, Kind.SOFTIRQ_EXIT, prev_pid=by, number=vec)

    def hrtimer_start(self, t_ns: int, cpu: int, timer: int, expires_ns: int, soft_ns: int | None = None,
                      by: int = 0) -> TraceBuilder:
        return self._add(t_ns, cpu, Kind.HRTIMER_START, prev_pid=by, timer=timer, expires_ns=expires_ns,
                         soft_ns=expires_ns if soft_ns is None else soft_ns)

    def hrtimer_expire(self, start_ns: int, end_ns: int, cpu: int, timer: int, by: int = 0) -> TraceBuilder:
        self._add(start_ns, cpu, Kind.HRTIMER_EXPIRE_ENTRY, prev_pid=by, timer=timer, expires_ns=start_ns)
        return self._add(end_ns, cpu, Kind.HRTIMER_EXPIRE_EXIT, prev_pid=by, timer=timer)

    def mark(self, t_ns: int, cpu: int, text: str, by: int = 0) -> TraceBuilder:
        return self._add(t_ns, cpu, Kind.MARK, name=text, prev_pid=by)

    def lost(self, t_ns: int, cpu: int, count: int = -1) -> TraceBuilder:
        return self._add(t_ns, cpu, Kind.LOST, number=count)

    def events(self, start_ns: int | None = None, stop_ns: int | None = None, cpus: int | None = None
               ) -> TraceEvents:
        rows = np.array(self.rows, dtype=EVENT_DTYPE) if self.rows else np.zeros(0, EVENT_DTYPE)
        names = tuple(sorted(self.names, key=self.names.__getitem__))
        events = TraceEvents(rows, names)
        if start_ns is None or stop_ns is None:
            return events
        n = cpus if cpus is not None else events.cpus
        return TraceEvents(events.rows, names, _coverage(events.rows, (start_ns, stop_ns), n))
