"""What a kernel trace says about each CPU and about one program at any instant: the task running,
the handlers open (IRQ, softirq, hrtimer callback, innermost last), and the program's own state.

Built once per trace (the per-CPU indexes) and once per program (its events), then asked for the
state before a row of the trace (after every earlier row): every event at a time t takes effect at
t, so the state "at t" is the one before the first row at t.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from jitterlab.model.trace import Kind, TraceEvents, is_runnable

# handler families: entry kind, exit kind
FAMILIES = {"irq": (Kind.IRQ_ENTRY, Kind.IRQ_EXIT), "softirq": (Kind.SOFTIRQ_ENTRY, Kind.SOFTIRQ_EXIT),
            "timer": (Kind.HRTIMER_EXPIRE_ENTRY, Kind.HRTIMER_EXPIRE_EXIT)}
FAMILY_OF = {int(k): (name, k == entry) for name, (entry, exit_) in FAMILIES.items() for k in (entry, exit_)}

RUNNING, RUNNABLE, BLOCKED = "running", "runnable", "blocked"


@dataclass(frozen=True)
class Handler:
    family: str  # "irq", "softirq", "timer"
    number: int  # irq number, softirq vector; -1 for a timer callback
    name: int  # interned IRQ handler name (0 for the others)
    start_ns: int


@dataclass
class ProgramState:
    """The program's tasks as the trace last showed them: state and CPU per pid."""

    states: dict[int, str] = field(default_factory=dict)
    cpus: dict[int, int] = field(default_factory=dict)
    moved: dict[int, tuple[int, int]] = field(default_factory=dict)  # runnable pid -> (from, to) CPU
    timer: tuple[int, int, int] | None = None  # the last armed: (hrtimer, softexpires, expires)
    prio: int | None = None  # the kernel's, as the program's last event said

    def apply(self, row: np.void, pids: frozenset[int]) -> None:
        """Take one event of the program's into account."""
        kind, cpu = int(row["kind"]), int(row["cpu"])
        if kind == Kind.SWITCH:
            prev, nxt = int(row["prev_pid"]), int(row["pid"])
            if prev in pids:
                self.states[prev] = RUNNABLE if is_runnable(int(row["number"])) else BLOCKED
                self.cpus[prev], self.prio = cpu, int(row["prev_prio"])
            if nxt in pids:
                self.states[nxt], self.cpus[nxt], self.prio = RUNNING, cpu, int(row["prio"])
                self.moved.pop(nxt, None)
            return
        if kind != Kind.HRTIMER_START:
            self.prio = int(row["prio"])
        if kind in (Kind.WAKING, Kind.WAKEUP):
            pid = int(row["pid"])
            if self.states.get(pid) != RUNNING:
                self.states[pid], self.cpus[pid] = RUNNABLE, int(row["number"])
        elif kind == Kind.MIGRATE:
            pid, dest = int(row["pid"]), int(row["number"])
            if self.states.get(pid) == RUNNABLE and dest != self.cpus.get(pid, dest):
                origin = self.moved.get(pid, (self.cpus[pid], dest))[0]
                self.moved[pid] = (origin, dest)
            self.cpus[pid] = dest
        elif kind == Kind.HRTIMER_START:
            self.timer = (int(row["timer"]), int(row["soft_ns"]), int(row["expires_ns"]))

    def summary(self, default_cpu: int) -> tuple[str | None, int, tuple[int, int] | None]:
        """(state, CPU, migration): running if a task runs, else runnable, else blocked; None when the
        trace has not shown any of its tasks yet. The CPU is the running (or runnable) task's."""
        for wanted in (RUNNING, RUNNABLE, BLOCKED):
            pids = [p for p, s in self.states.items() if s == wanted]
            if pids:
                pid = pids[-1]
                return wanted, self.cpus.get(pid, default_cpu), self.moved.get(pid)
        return None, default_cpu, None


class TraceIndex:
    """Per-CPU indexes of a trace: its switches and each handler family's entries and exits.

    `leave_prio[i]` of a switch row is the kernel priority its incoming task had when it left the
    CPU (the next switch's prev_prio there): a task may change its priority while it runs, and what
    let it keep the CPU is the priority it had then.
    """

    def __init__(self, events: TraceEvents) -> None:
        self.events = events
        rows = events.rows
        self.time = rows["time_ns"]
        kind, cpu = rows["kind"], rows["cpu"]
        n_cpus = max(events.cpus, int(cpu.max()) + 1 if len(rows) else 0)
        self.cpus = n_cpus
        on = [cpu == c for c in range(n_cpus)]
        self.switches = [np.flatnonzero((kind == Kind.SWITCH) & on[c]) for c in range(n_cpus)]
        self.handlers = {
            name: [np.flatnonzero(((kind == entry) | (kind == exit_)) & on[c]) for c in range(n_cpus)]
            for name, (entry, exit_) in FAMILIES.items()}
        self.leave_prio = rows["prio"].copy()  # read at switch rows only
        for idx in self.switches:
            self.leave_prio[idx[:-1]] = rows["prev_prio"][idx[1:]]

    def task_at(self, cpu: int, row: int) -> tuple[int, int, int] | None:
        """(pid, prio, name) of the task running on `cpu` before row `row` (prio: as it left the CPU);
        None when unknown."""
        idx = self.switches[cpu] if 0 <= cpu < self.cpus else ()
        if not len(idx):
            return None
        rows = self.events.rows
        at = int(np.searchsorted(idx, row, side="left")) - 1
        if at >= 0:
            row = rows[idx[at]]
            return int(row["pid"]), int(self.leave_prio[idx[at]]), int(row["name"])
        row = rows[idx[0]]  # before the first switch: the task it switched from
        return int(row["prev_pid"]), int(row["prev_prio"]), int(row["prev_name"])

    def handlers_at(self, cpu: int, row: int) -> list[Handler]:
        """The handlers open on `cpu` before row `row`, outermost first."""
        rows = self.events.rows
        open_: list[Handler] = []
        for family, per_cpu in self.handlers.items():
            idx = per_cpu[cpu] if 0 <= cpu < self.cpus else np.zeros(0, np.int64)
            at = int(np.searchsorted(idx, row, side="left")) - 1
            if at >= 0 and FAMILY_OF[int(rows["kind"][idx[at]])][1]:
                entry = rows[idx[at]]
                open_.append(handler(family, int(entry["number"]), int(entry["name"]), int(entry["time_ns"])))
        return sorted(open_, key=lambda h: h.start_ns)

    def window(self, start_ns: int, end_ns: int) -> range:
        """Indices of the events at start_ns <= t < end_ns."""
        lo = int(np.searchsorted(self.time, start_ns, side="left"))
        return range(lo, int(np.searchsorted(self.time, end_ns, side="left")))


def handler(family: str, number: int, name: int, t_ns: int) -> Handler:
    """The handler an entry of `family` opens (its row's number, name and time)."""
    return Handler(family, -1 if family == "timer" else number, name if family == "irq" else 0, t_ns)


class ProgramEvents:
    """The events of one program (its pids): switches in or out, wake-ups, migrations, timers armed."""

    def __init__(self, events: TraceEvents, pids: frozenset[int]) -> None:
        rows = events.rows
        kind = rows["kind"]
        wanted = np.array(sorted(pids), dtype=np.int64)
        task, running = np.isin(rows["pid"], wanted), np.isin(rows["prev_pid"], wanted)
        mine = ((kind == Kind.SWITCH) & (task | running)) | (
            np.isin(kind, (Kind.WAKING, Kind.WAKEUP, Kind.MIGRATE)) & task) | (
            (kind == Kind.HRTIMER_START) & running)
        self.pids = pids
        self.index = np.flatnonzero(mine)
        self.rows = rows
        self.times = rows["time_ns"][self.index]
        mine_rows = rows[self.index]
        switch = mine_rows["kind"] == Kind.SWITCH
        # where each pid was last switched in or out: what came before no longer matters to its state
        self._switches = [np.flatnonzero(switch & ((mine_rows["pid"] == p) | (mine_rows["prev_pid"] == p)))
                          for p in sorted(pids)]
        self._timers = np.flatnonzero(mine_rows["kind"] == Kind.HRTIMER_START)

    def states_at(self, times_ns: list[int]) -> list[ProgramState]:
        """The program's state just before each of `times_ns`: its events replayed from each pid's last
        switch before it (the timer: the last one armed)."""
        out = []
        for t in times_ns:
            end = int(np.searchsorted(self.times, t, side="left"))
            lasts = [int(s[k - 1]) if (k := int(np.searchsorted(s, end, side="left"))) else 0
                     for s in self._switches]
            state = ProgramState()
            for at in range(min(lasts, default=0), end):
                if self.rows["kind"][self.index[at]] != Kind.HRTIMER_START:
                    state.apply(self.rows[self.index[at]], self.pids)
            armed = int(np.searchsorted(self._timers, end, side="left"))
            if armed:
                state.apply(self.rows[self.index[self._timers[armed - 1]]], self.pids)
            out.append(state)
        return out

    def is_mine(self, kind: int, pid: int, prev_pid: int) -> bool:
        """Whether an event of these columns is one of the program's."""
        if kind == Kind.SWITCH:
            return pid in self.pids or prev_pid in self.pids
        if kind in (Kind.WAKING, Kind.WAKEUP, Kind.MIGRATE):
            return pid in self.pids
        return kind == Kind.HRTIMER_START and prev_pid in self.pids
