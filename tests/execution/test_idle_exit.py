"""The idle-exit bound of a traced run (execution/traced.py idle_exit_ns): what the target's cpuidle
states say, the kernel's default halt where it has none (a guest under TCG), and what a period late
by a stopped emulator then reads as. Synthetic traces and a fake target: exact answers."""

from __future__ import annotations

from jitterlab.analysis.attribution import LatePeriod, Task, attribute
from jitterlab.execution import traced
from jitterlab.model.trace import TraceBuilder
from jitterlab.targets.fake import FakeTarget

US, MS = 1_000, 1_000_000
RT_PROG = ("c-fifo", 100, 49)  # SCHED_FIFO 50
IDLE = ("swapper/1", 0, 120)
DUE = 10 * MS


def said(stdout: str) -> FakeTarget:
    fake = FakeTarget("guest", quiet=True)
    fake.respond(["sh", "-c", traced._IDLE_EXIT[2]], stdout)
    return fake


def test_the_deepest_cpuidle_state_is_the_bound():
    assert traced.idle_exit_ns(said("0\n2\n133\n0\n2\n133\ncpus\n")) == 133 * US


def test_a_machine_without_cpuidle_states_idles_in_the_default_halt():
    # /sys/devices/system/cpu/cpuidle/current_driver "none": no state directories, CPUs listed
    assert traced.idle_exit_ns(said("cpus\n")) == traced.DEFAULT_IDLE_EXIT_NS == 2 * US


def test_a_kernel_that_lists_no_cpu_gives_no_bound():
    assert traced.idle_exit_ns(said("")) is None


def stopped_guest() -> TraceBuilder:
    """c-fifo asleep on idle CPU 1, due at DUE; the emulator stopped for 300 ms: the next event is
    its timer's interrupt 300 ms after DUE, then the wake-up and the switch to it."""
    trace = TraceBuilder().switch(DUE - 5 * MS, 1, RT_PROG, IDLE, prev_state=1)
    trace.hrtimer_start(DUE - 5 * MS, 1, timer=0xABC, expires_ns=DUE, by=100)
    trace.hrtimer_expire(DUE + 300 * MS, DUE + 300 * MS + 4 * US, 1, timer=0xABC)
    trace.waking(DUE + 300 * MS + 2 * US, 1, RT_PROG, target_cpu=1)
    trace.switch(DUE + 300 * MS + 10 * US, 1, IDLE, RT_PROG, prev_state=0)
    return trace


def test_a_stopped_emulator_reads_as_unaccounted_past_the_default_halts_exit():
    events = stopped_guest().events(0, DUE + 400 * MS)
    period = LatePeriod(DUE, DUE + 300 * MS + 20 * US, frozenset({100}), 1)
    [got] = attribute(events, [period], idle_exit_ns=traced.idle_exit_ns(said("cpus\n")))
    assert got.by_cause() == {"unaccounted": 300 * MS - 2 * US, "idle-exit": 2 * US, "irq": 4 * US,
                              "switch": 6 * US, "program": 10 * US}
    assert got.remainder_ns == 0
    assert [(p.cause, p.who) for p in got.parts if p.cause == "idle-exit"] == [("idle-exit", Task(*IDLE))]
    # without a bound the whole stop would have read as the CPU's idle exit
    [unbounded] = attribute(events, [period], idle_exit_ns=None)
    assert unbounded.by_cause()["idle-exit"] == 300 * MS and "unaccounted" not in unbounded.by_cause()
