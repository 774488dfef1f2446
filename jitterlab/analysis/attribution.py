"""Why a period was late: its lateness split into what the program's CPU did, read from a kernel trace.

A late period is its due time D and its real edge E on the trace's clock (E > D; lateness = E - D),
the program's pids and the CPU it is on at D where the trace does not say. Every instant of [D, E)
is given exactly one cause, from the state of the trace just before it (trace_index.py: an event
at t takes effect at t), on the program's CPU: the CPU of its running task, else of its runnable
task (where it was woken or moved to), else where it last ran, else the given one. In this order:

1. `uncovered` (the remainder, not a cause): the program's CPU is outside what the trace covers
   there (before its start or its last loss of events, after its end), or the trace has not shown
   which task runs on it. Shown as the remainder, never spread over the causes.
2. a handler open on that CPU, the innermost (the last entered): `irq` (Irq: its number and name),
   `irq` with number -1 for an hrtimer callback (the local timer interrupt's work, the program's
   own wake-up among it), `softirq` (Softirq: its vector).
3. the program **waits for its timer** (it was blocked at D and has not been woken since):
   - `program` before the softexpires of the timer it armed last, when that is after D (it asked to
     wake later than it was due);
   - `slack` from there until the timer's expires (hrtimer's hard expiry): the kernel may fire a
     timer that late on purpose (timer slack, 50 µs for SCHED_OTHER by default);
   - `idle-exit` while the idle task runs, for at most `idle_exit_ns` in the period (the deepest
     enabled idle state's exit latency of the machine, the default halt's where it has no cpuidle
     state: execution/traced.py; None: unknown, no bound); past it
     `unaccounted`: the CPU was idle with a timer due and no kernel event accounts for it (a
     hypervisor not running the CPU, an SMI, firmware);
   - `timer` while another task runs (Task: who): the timer's interrupt was held off there
     (interrupts disabled) or delivered late.
4. the program **runs**: `program` (its own code: an interpreter, a fork in bash).
5. the program is **runnable** (woken, not running): `migration` (Move: from, to) after the kernel
   moved it to another CPU and until it runs; else, by the task on its CPU (Task):
   - `switch` when that task is the idle task, or ranks below a SCHED_FIFO/RR/DEADLINE program
     (its kernel prio is greater): it runs only until the kernel switches to the program (the
     return from the interrupt; long only in a section of its kernel code that cannot be
     preempted, on a kernel without full preemption);
   - `wakeup` otherwise: it ran instead of the program (it outranks it, or the program is
     SCHED_OTHER, whose CPU time the kernel shares out).
6. the program is **blocked again** after its wake-up (I/O, waiting for its children): `program`.

Parts with the same cause and who are added up. The parts plus the remainder make up the lateness
exactly, in whole nanoseconds. A Task's policy is read from the kernel's priority (the trace does
not carry the policy): prio < 0 SCHED_DEADLINE, 0..98 SCHED_FIFO/RR (real-time priority 99 - prio),
else SCHED_OTHER (or BATCH/IDLE; nice prio - 120), as the task had it when it left the CPU (a task
may change its priority while it runs: what let it keep the CPU is the one it had then).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

from jitterlab.analysis.trace_index import (
    FAMILY_OF,
    RUNNABLE,
    RUNNING,
    Handler,
    ProgramEvents,
    TraceIndex,
    handler,
)
from jitterlab.model.trace import SOFTIRQ_NAMES, Kind, TraceEvents

_ABOUT_A_TASK = (Kind.WAKING, Kind.WAKEUP, Kind.MIGRATE)
_WOKEN = (Kind.WAKING, Kind.WAKEUP)
CAUSES = ("timer", "slack", "idle-exit", "wakeup", "switch", "irq", "softirq", "program", "migration",
          "unaccounted")


@dataclass(frozen=True)
class LatePeriod:
    due_ns: int
    edge_ns: int
    pids: frozenset[int]
    cpu: int  # the program's CPU at due_ns where the trace does not say

    @property
    def lateness_ns(self) -> int:
        return self.edge_ns - self.due_ns


@dataclass(frozen=True)
class Task:
    comm: str
    pid: int
    prio: int  # the kernel's

    @property
    def policy(self) -> str:
        if self.prio < 0:
            return "SCHED_DEADLINE"
        return "SCHED_FIFO/RR" if self.prio < 100 else "SCHED_OTHER"

    @property
    def priority(self) -> int:
        """The real-time priority (1..99) of a SCHED_FIFO/RR task, the nice value of the others."""
        return 99 - self.prio if 0 <= self.prio < 100 else self.prio - 120

    @property
    def idle(self) -> bool:
        return self.pid == 0


@dataclass(frozen=True)
class Irq:
    number: int  # -1: an hrtimer callback (the local timer interrupt)
    name: str


@dataclass(frozen=True)
class Softirq:
    vector: int

    @property
    def name(self) -> str:
        return SOFTIRQ_NAMES[self.vector] if 0 <= self.vector < len(SOFTIRQ_NAMES) else str(self.vector)


@dataclass(frozen=True)
class Move:
    from_cpu: int
    to_cpu: int


Who = Task | Irq | Softirq | Move | None


@dataclass(frozen=True)
class Segment:
    start_ns: int
    end_ns: int
    cause: str | None  # None: uncovered (the remainder)
    who: Who
    cpu: int


@dataclass(frozen=True)
class Part:
    cause: str
    who: Who
    duration_ns: int


@dataclass(frozen=True)
class Attribution:
    period: LatePeriod
    parts: tuple[Part, ...]  # longest first
    remainder_ns: int  # what the trace does not cover
    segments: tuple[Segment, ...]  # [due, edge) in order, contiguous

    @property
    def lateness_ns(self) -> int:
        return self.period.lateness_ns

    def by_cause(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for part in self.parts:
            out[part.cause] = out.get(part.cause, 0) + part.duration_ns
        return out


def attribute(events: TraceEvents, periods: Sequence[LatePeriod], *, idle_exit_ns: int | None,
              index: TraceIndex | None = None) -> list[Attribution]:
    """The attribution of each late period (module docstring), in the order given."""
    index = index or TraceIndex(events)
    out: list[Attribution | None] = [None] * len(periods)
    by_pids: dict[frozenset[int], list[int]] = {}
    for i, period in enumerate(periods):
        if period.edge_ns <= period.due_ns:
            raise ValueError(f"period {i}: its edge {period.edge_ns} is not after its due time "
                             f"{period.due_ns}")
        by_pids.setdefault(period.pids, []).append(i)
    for pids, which in by_pids.items():
        program = ProgramEvents(events, pids)
        states = program.states_at([periods[i].due_ns for i in which])
        for i, state in zip(which, states, strict=True):
            segments = _walk(index, program, state, periods[i], idle_exit_ns)
            out[i] = _attribution(periods[i], segments)
    return [a for a in out if a is not None]


def _walk(index: TraceIndex, program: ProgramEvents, state, period: LatePeriod,
          idle_exit_ns: int | None) -> list[Segment]:
    """The period's segments: the events of the window read in order, those neither of the program
    nor on its CPU skipped (when the program moves, its new CPU's state is looked up instead)."""
    events, rows = index.events, index.events.rows
    due, edge = period.due_ns, period.edge_ns
    status, cpu_now, _ = state.summary(period.cpu)
    waiting = status not in (RUNNING, RUNNABLE)
    window = index.window(due, edge)
    tasks = {cpu_now: index.task_at(cpu_now, window.start)}
    stacks = {cpu_now: index.handlers_at(cpu_now, window.start)}
    idle_left = [idle_exit_ns]
    segments: list[Segment] = []
    at, pids = due, program.pids
    part = rows[window.start:window.stop]
    read = {c: part[c].tolist() for c in ("time_ns", "kind", "cpu", "pid", "name", "prev_pid", "number")}
    read["prio"] = index.leave_prio[window.start:window.stop].tolist()  # a switch's: as its task left
    names = ("time_ns", "kind", "cpu", "pid", "prio", "name", "prev_pid", "number")
    columns = zip(window, *(read[c] for c in names), strict=True)
    for i, t, kind, cpu, pid, prio, name, prev_pid, number in columns:
        if kind == Kind.SWITCH:
            mine = pid in pids or prev_pid in pids
        elif kind in _ABOUT_A_TASK:
            mine = pid in pids
        else:
            mine = kind == Kind.HRTIMER_START and prev_pid in pids
        if not mine and (cpu != cpu_now or (kind != Kind.SWITCH and kind not in FAMILY_OF)):
            continue  # changes nothing the causes read
        if t > at:
            segments += _classify(events, at, t, tasks, stacks, state, period, waiting, idle_left)
            at = t
        if cpu == cpu_now:
            if kind == Kind.SWITCH:
                tasks[cpu] = (pid, prio, name)
            elif kind in FAMILY_OF:
                family, entry = FAMILY_OF[kind]
                stack = stacks[cpu]
                if entry:
                    stack.append(handler(family, number, name, t))
                else:
                    open_ = [j for j, h in enumerate(stack) if h.family == family]
                    if open_:
                        del stack[open_[-1]]
        if mine:
            state.apply(rows[i], pids)
            waiting = waiting and not ((kind == Kind.SWITCH and pid in pids) or kind in _WOKEN)
            moved_to = state.summary(period.cpu)[1]
            if moved_to != cpu_now:
                cpu_now = moved_to
                tasks[cpu_now] = index.task_at(cpu_now, i + 1)
                stacks[cpu_now] = index.handlers_at(cpu_now, i + 1)
    if edge > at:
        segments += _classify(events, at, edge, tasks, stacks, state, period, waiting, idle_left)
    return segments


def _classify(events: TraceEvents, start: int, end: int, tasks, stacks, state, period: LatePeriod,
              waiting: bool, idle_left: list[int | None]) -> list[Segment]:
    """The segments of [start, end), in which nothing changes but the time-bound rules' limits."""
    status, cpu, moved = state.summary(period.cpu)
    covered = events.covered_ns[cpu] if cpu < len(events.covered_ns) else None
    cuts = sorted({start, end, *[t for t in (covered or ()) if start < t < end]})
    if waiting and state.timer is not None:
        _, soft, hard = state.timer
        cuts = sorted({*cuts, *[t for t in (soft, hard) if start < t < end]})
    out = []
    for a, b in itertools.pairwise(cuts):
        if covered is None or a < covered[0] or b > covered[1] or tasks.get(cpu) is None:
            out.append(Segment(a, b, None, None, cpu))
            continue
        stack: list[Handler] = stacks.get(cpu, [])
        if stack:
            top = stack[-1]
            who = Softirq(top.number) if top.family == "softirq" else Irq(
                top.number, events.name(top.name) if top.family == "irq" else "hrtimer callback")
            out.append(Segment(a, b, "softirq" if top.family == "softirq" else "irq", who, cpu))
            continue
        pid, prio, name = tasks[cpu]
        task = Task(events.name(name), pid, prio)
        if waiting:
            out += _waiting(a, b, task, state.timer, period.due_ns, idle_left, cpu)
        elif status != RUNNABLE:  # running, or blocked on its own after its wake-up
            out.append(Segment(a, b, "program", None, cpu))
        elif moved is not None:
            out.append(Segment(a, b, "migration", Move(*moved), cpu))
        else:
            outranked = state.prio is not None and state.prio < 100 and task.prio > state.prio
            out.append(Segment(a, b, "switch" if task.idle or outranked else "wakeup", task, cpu))
    return out


def _waiting(a: int, b: int, task: Task, timer, due: int, idle_left: list[int | None],
             cpu: int) -> list[Segment]:
    if timer is not None:
        _, soft, hard = timer
        if soft > due and b <= soft:
            return [Segment(a, b, "program", None, cpu)]
        if max(soft, due) <= a and b <= hard:
            return [Segment(a, b, "slack", None, cpu)]
    if not task.idle:
        return [Segment(a, b, "timer", task, cpu)]
    left = idle_left[0]
    if left is None:
        return [Segment(a, b, "idle-exit", task, cpu)]
    took = min(b - a, left)
    idle_left[0] = left - took
    out = [Segment(a, a + took, "idle-exit", task, cpu)] if took else []
    return out + ([Segment(a + took, b, "unaccounted", None, cpu)] if a + took < b else [])


def _attribution(period: LatePeriod, segments: list[Segment]) -> Attribution:
    merged: list[Segment] = []
    for s in segments:
        if merged and (merged[-1].cause, merged[-1].who, merged[-1].cpu, merged[-1].end_ns) == (
                s.cause, s.who, s.cpu, s.start_ns):
            merged[-1] = Segment(merged[-1].start_ns, s.end_ns, s.cause, s.who, s.cpu)
        else:
            merged.append(s)
    totals: dict[tuple[str, Who], int] = {}
    remainder = 0
    for s in merged:
        if s.cause is None:
            remainder += s.end_ns - s.start_ns
        else:
            totals[(s.cause, s.who)] = totals.get((s.cause, s.who), 0) + s.end_ns - s.start_ns
    parts = sorted((Part(c, w, d) for (c, w), d in totals.items()), key=lambda p: -p.duration_ns)
    return Attribution(period, tuple(parts), remainder, tuple(merged))
