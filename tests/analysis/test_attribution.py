"""Attribution of late periods on synthetic traces with exact answers (analysis/attribution.py)."""

from __future__ import annotations

import pytest

from jitterlab.analysis.attribution import Irq, LatePeriod, Move, Softirq, Task, attribute
from jitterlab.model.trace import TraceBuilder

US = 1000
PROG = ("c-fifo", 100, 120)  # comm, pid, kernel prio (SCHED_OTHER, nice 0)
RT_PROG = ("c-fifo", 100, 49)  # SCHED_FIFO 50
BURST = ("burst", 77, 9)  # SCHED_FIFO 90
OTHER = ("stress-ng-cpu", 55, 120)
IDLE = ("swapper/1", 0, 120)
DUE = 10_000 * US


def period(edge_us: int, cpu: int = 1, pids: tuple[int, ...] = (100,)) -> LatePeriod:
    return LatePeriod(DUE, DUE + edge_us * US, frozenset(pids), cpu)


def asleep_on_idle_cpu(prog=PROG) -> TraceBuilder:
    """The program went to sleep on CPU 1 (idle since) 5 ms before its due time."""
    return TraceBuilder().switch(DUE - 5000 * US, 1, prog, IDLE, prev_state=1)


def parts(attribution) -> list[tuple[str, object, int]]:
    return [(p.cause, p.who, p.duration_ns // US) for p in attribution.parts]


def test_another_task_an_irq_and_time_no_event_accounts_for_read_exactly_that():
    """700 µs of another task + 200 µs of an IRQ + 100 µs with no event."""
    trace = asleep_on_idle_cpu()
    trace.waking(DUE + 100 * US, 1, PROG, target_cpu=1)  # the timer fired 100 µs late, the CPU idle
    trace.waking(DUE + 100 * US, 1, BURST, target_cpu=1)
    trace.switch(DUE + 100 * US, 1, IDLE, BURST, prev_state=0)
    trace.irq(DUE + 800 * US, DUE + 1000 * US, 1, 11, "virtio0", by=77)
    trace.switch(DUE + 1000 * US, 1, BURST, PROG, prev_state=1)
    events = trace.events(0, DUE + 2000 * US, cpus=2)
    [got] = attribute(events, [period(1000)], idle_exit_ns=0)
    assert parts(got) == [("wakeup", Task("burst", 77, 9), 700), ("irq", Irq(11, "virtio0"), 200),
                          ("unaccounted", None, 100)]
    assert got.remainder_ns == 0
    assert sum(p.duration_ns for p in got.parts) == got.lateness_ns == 1000 * US
    assert got.by_cause() == {"wakeup": 700 * US, "irq": 200 * US, "unaccounted": 100 * US}
    burst = got.parts[0].who
    assert (burst.policy, burst.priority) == ("SCHED_FIFO/RR", 90)
    assert [(s.start_ns - DUE) // US for s in got.segments] == [0, 100, 800]


def test_nested_interrupts_in_a_preemption():
    trace = TraceBuilder().switch(DUE - 3000 * US, 1, PROG, OTHER, prev_state=1)
    trace.waking(DUE, 1, PROG, target_cpu=1, by=55)
    trace.irq(DUE + 100 * US, DUE + 300 * US, 1, 30, "eth0", by=55)
    trace.softirq(DUE + 300 * US, DUE + 350 * US, 1, 3, by=55)
    trace.irq(DUE + 320 * US, DUE + 330 * US, 1, 30, "eth0", by=55)  # inside the softirq
    trace.switch(DUE + 500 * US, 1, OTHER, PROG, prev_state=0)
    [got] = attribute(trace.events(0, DUE + 1000 * US), [period(520)], idle_exit_ns=None)
    assert parts(got) == [("wakeup", Task("stress-ng-cpu", 55, 120), 250), ("irq", Irq(30, "eth0"), 210),
                          ("softirq", Softirq(3), 40), ("program", None, 20)]
    assert got.parts[2].who.name == "NET_RX"
    assert got.parts[0].who.policy == "SCHED_OTHER" and got.parts[0].who.priority == 0


def test_a_migration():
    trace = TraceBuilder().switch(DUE - 3000 * US, 1, PROG, BURST, prev_state=1)
    trace.switch(DUE - 3000 * US, 0, IDLE, OTHER, prev_state=0)
    trace.waking(DUE, 1, PROG, target_cpu=1, by=77)
    trace.migrate(DUE + 200 * US, 0, PROG, orig_cpu=1, dest_cpu=0, by=55)  # pulled by CPU 0
    trace.switch(DUE + 300 * US, 0, OTHER, PROG, prev_state=0)
    [got] = attribute(trace.events(0, DUE + 1000 * US), [period(350)], idle_exit_ns=None)
    assert parts(got) == [("wakeup", Task("burst", 77, 9), 200), ("migration", Move(1, 0), 100),
                          ("program", None, 50)]
    assert [s.cpu for s in got.segments] == [1, 0, 0]


def test_an_idle_exit_within_the_machines_bound_and_the_rest_unaccounted():
    trace = asleep_on_idle_cpu(RT_PROG)
    trace.hrtimer_expire(DUE + 30 * US, DUE + 32 * US, 1, timer=0xABC)
    trace.waking(DUE + 31 * US, 1, RT_PROG, target_cpu=1)
    trace.switch(DUE + 35 * US, 1, IDLE, RT_PROG, prev_state=0)
    events = trace.events(0, DUE + 1000 * US)
    [got] = attribute(events, [period(40)], idle_exit_ns=50 * US)
    assert parts(got) == [("idle-exit", Task("swapper/1", 0, 120), 30), ("program", None, 5),
                          ("switch", Task("swapper/1", 0, 120), 3), ("irq", Irq(-1, "hrtimer callback"), 2)]
    [bounded] = attribute(events, [period(40)], idle_exit_ns=10 * US)
    assert bounded.by_cause() == {"idle-exit": 10 * US, "unaccounted": 20 * US, "program": 5 * US,
                                  "switch": 3 * US, "irq": 2 * US}


def test_interrupts_held_off_by_the_running_task_delay_the_timer():
    trace = TraceBuilder().switch(DUE - 1000 * US, 1, RT_PROG, OTHER, prev_state=1)
    trace.hrtimer_start(DUE - 1000 * US, 1, timer=0xABC, expires_ns=DUE, by=100)
    trace.hrtimer_expire(DUE + 300 * US, DUE + 301 * US, 1, timer=0xABC, by=55)
    trace.waking(DUE + 300 * US, 1, RT_PROG, target_cpu=1, by=55)
    trace.switch(DUE + 301 * US, 1, OTHER, RT_PROG, prev_state=0)
    [got] = attribute(trace.events(0, DUE + 1000 * US), [period(305)], idle_exit_ns=0)
    assert parts(got) == [("timer", Task("stress-ng-cpu", 55, 120), 300), ("program", None, 4),
                          ("irq", Irq(-1, "hrtimer callback"), 1)]


def test_timer_slack_and_a_wake_up_asked_for_later_than_due():
    trace = TraceBuilder().switch(DUE - 1000 * US, 1, PROG, IDLE, prev_state=1)
    trace.hrtimer_start(DUE - 1000 * US, 1, timer=0xABC, soft_ns=DUE + 10 * US, expires_ns=DUE + 60 * US,
                        by=100)
    trace.waking(DUE + 60 * US, 1, PROG, target_cpu=1)
    trace.switch(DUE + 62 * US, 1, IDLE, PROG, prev_state=0)
    [got] = attribute(trace.events(0, DUE + 1000 * US), [period(65)], idle_exit_ns=0)
    assert got.by_cause() == {"program": 10 * US + 3 * US, "slack": 50 * US, "switch": 2 * US}


def test_what_the_trace_does_not_cover_is_the_remainder_never_spread():
    trace = asleep_on_idle_cpu()
    trace.lost(DUE + 100 * US, 1, count=1234)  # the buffer overflowed: CPU 1 known from here on
    trace.waking(DUE + 150 * US, 1, PROG, target_cpu=1)
    trace.switch(DUE + 160 * US, 1, IDLE, PROG, prev_state=0)
    events = trace.events(0, DUE + 170 * US)  # ...and the trace ends before the edge
    [got] = attribute(events, [period(200)], idle_exit_ns=None)
    assert got.remainder_ns == 100 * US + 30 * US
    assert got.by_cause() == {"idle-exit": 50 * US, "switch": 10 * US, "program": 10 * US}
    assert sum(p.duration_ns for p in got.parts) + got.remainder_ns == got.lateness_ns


def test_a_program_blocked_on_its_own_after_its_wake_up_and_several_periods_at_once():
    trace = asleep_on_idle_cpu()
    trace.waking(DUE, 1, PROG, target_cpu=1)
    trace.switch(DUE + 10 * US, 1, IDLE, PROG, prev_state=0)
    trace.switch(DUE + 20 * US, 1, PROG, OTHER, prev_state=2)  # waits for its child (D)
    trace.waking(DUE + 120 * US, 1, PROG, target_cpu=1, by=55)
    trace.switch(DUE + 130 * US, 1, OTHER, PROG, prev_state=0)
    trace.switch(DUE + 2000 * US, 1, PROG, IDLE, prev_state=1)
    events = trace.events(0, DUE + 3000 * US)
    later = LatePeriod(DUE + 2100 * US, DUE + 2200 * US, frozenset({100}), 1)
    first, second = attribute(events, [period(140), later], idle_exit_ns=None)
    assert first.by_cause() == {"switch": 10 * US, "wakeup": 10 * US, "program": 120 * US}
    assert parts(second) == [("idle-exit", Task("swapper/1", 0, 120), 100)]


def test_a_task_below_a_real_time_program_only_delays_the_switch_to_it_one_above_runs_instead():
    trace = TraceBuilder().switch(DUE - 1000 * US, 1, RT_PROG, OTHER, prev_state=1)
    trace.waking(DUE, 1, RT_PROG, target_cpu=1, by=55)
    trace.switch(DUE + 4 * US, 1, OTHER, RT_PROG, prev_state=0)
    trace.switch(DUE + 10 * US, 1, RT_PROG, BURST, prev_state=0)  # a higher one takes the CPU
    trace.switch(DUE + 510 * US, 1, BURST, RT_PROG, prev_state=1)
    [got] = attribute(trace.events(0, DUE + 1000 * US), [period(515)], idle_exit_ns=None)
    assert parts(got) == [("wakeup", Task("burst", 77, 9), 500), ("program", None, 11),
                          ("switch", Task("stress-ng-cpu", 55, 120), 4)]


def test_a_task_reads_with_the_priority_it_left_the_cpu_with():
    """A poller switched in as SCHED_OTHER that made itself SCHED_FIFO 99 while it ran kept the CPU
    from a SCHED_FIFO 50 program: it ran instead of it, not merely delayed the switch."""
    poller_in, poller_out = ("observer", 60, 120), ("observer", 60, 0)
    trace = TraceBuilder().switch(DUE - 1000 * US, 1, RT_PROG, poller_in, prev_state=1)
    trace.waking(DUE, 1, RT_PROG, target_cpu=1, by=60)
    trace.switch(DUE + 900 * US, 1, poller_out, RT_PROG, prev_state=0)
    [got] = attribute(trace.events(0, DUE + 1000 * US), [period(950)], idle_exit_ns=None)
    assert parts(got) == [("wakeup", Task("observer", 60, 0), 900), ("program", None, 50)]
    assert got.parts[0].who.priority == 99


def test_a_period_whose_edge_is_not_after_its_due_time_is_refused():
    with pytest.raises(ValueError, match="is not after its due time"):
        attribute(TraceBuilder().events(), [LatePeriod(DUE, DUE, frozenset({1}), 0)], idle_exit_ns=None)
