"""The digest of cyclictest's breaktrace, read from a trace tail in ftrace's text format.

tests/data/cyclictest/trace-tail.txt is written by hand in the format a real breaktrace tail has
(ftrace's header, `comm-pid [cpu] flags seconds: event: fields` lines, cyclictest's "hit latency
threshold (LATENCY > THRESHOLD)" mark), with a known story: cyclictest-4242 slept on CPU 1 while
stress-ng-cpu ran; its timer fired at 1234.500001 inside a 40 µs network interrupt, it was woken
at .500002 but got the CPU only at .500070, 72 µs after it was due."""

from __future__ import annotations

from pathlib import Path

from jitterlab.analysis.breaktrace import digest, events

US = 1000
TAIL = (Path(__file__).parent.parent / "data" / "cyclictest" / "trace-tail.txt").read_text()


def test_the_digest_tells_who_waited_how_long_and_what_held_the_cpu():
    d = digest(TAIL)
    assert (d.thread, d.cpu, d.latency_us, d.threshold_us) == ("cyclictest-4242", 1, 72, 30)
    assert d.mark_ns == 1234_500_072_000 and d.due_ns == 1234_500_000_000
    # the window is the 72 µs before the mark: stress-ng held the CPU until the switch at .500070
    assert d.ran_ns == (("stress-ng-cpu (pid 5150)", 70 * US), ("cyclictest (pid 4242)", 2 * US))
    # the interrupt began 10 µs before the window: only its 30 µs inside count; CPU 0's is not here
    assert d.irqs_ns == (("IRQ 41 virtio3-rx", 30 * US), ("softirq TIMER", 9 * US))
    assert (d.woken_ns, d.switched_in_ns) == (1234_500_002_000, 1234_500_070_000)


def test_header_lines_are_left_out_and_a_tail_without_a_mark_has_no_digest():
    assert len(events(TAIL)) == 13
    without = "\n".join(line for line in TAIL.splitlines() if "tracing_mark_write" not in line)
    assert digest(without) is None
    assert digest("") is None


def test_lines_without_the_flags_column_and_with_ns_timestamps_are_read():
    tail = ("  stress-1 [000] 10.000000100: sched_switch: prev_comm=stress prev_pid=1 prev_prio=120 "
            "prev_state=R ==> next_comm=cyclictest next_pid=2 next_prio=4\n"
            "  cyclictest-2 [000] 10.000000150: tracing_mark_write: hit latency threshold (1 > 0)\n")
    d = digest(tail)
    # due 1 µs before the mark: stress held the CPU 950 ns of it
    assert d.mark_ns == 10_000_000_150 and d.ran_ns == (("stress (pid 1)", 950), ("cyclictest (pid 2)", 50))
    assert d.woken_ns is None and d.switched_in_ns == 10_000_000_100
