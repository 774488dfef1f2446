"""The recorder without a kernel: what a target says it can trace, the buffer's size, what a recording
says of itself, and a set-up that fails undoing what it did (tracing/recorder.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from jitterlab.targets.base import Completed
from jitterlab.targets.fake import FakeTarget
from jitterlab.tracing import changes, recorder
from jitterlab.tracing.events import EVENTS
from jitterlab.tracing.recorder import CpuStats, Facts, RawTrace, Recorder, buffer_kb, check
from jitterlab.tracing.tracefs import TraceUnavailable

ALL_EVENTS = "".join(f"event {e}\n" for e in EVENTS)
READY = f"uid 0\nkernel tracefs\nmounted\ninstances\nwritable\n{ALL_EVENTS}clock mono\ntar\ndd\nmount\n" \
        "cpus 2\navailable_kb 1000000\n"
STATS = """entries: 5108
overrun: 17
commit overrun: 0
bytes: 203544
oldest event ts:  1096.594240
now ts:  1097.602718
dropped events: 3
read events: 0
"""


@pytest.fixture(autouse=True)
def _records(tmp_path, monkeypatch):
    monkeypatch.setattr(changes, "RECORD_DIR", str(tmp_path / "run" / "tracing"))


def said(facts: str) -> FakeTarget:
    target = FakeTarget()
    target.respond(["sh", "-c", recorder._FACTS], facts)
    return target


@pytest.mark.parametrize(("facts", "reason"), [
    (READY, None),
    ("uid 0\nkernel tracefs\nmount\ncpus 0\n", None),  # not mounted yet: mounted for the run
    ("uid 0\nkernel tracefs\ncpus 0\n", "tracefs is not mounted at /sys/kernel/tracing and the target has no "
                                         "mount command (apt install mount)"),  # a minimal board root
    ("uid 0\n", "the kernel has no tracefs (it needs a kernel built with CONFIG_TRACING)"),
    ("uid 1000\nkernel tracefs\n", "tracing needs root: run jitterlab as root on the target (or give the "
                                   "target's user root)"),
    (READY.replace("writable\n", ""), "cannot make a tracing instance under /sys/kernel/tracing/instances (a "
                                      "kernel older than 3.x?)"),
    (READY.replace("event sched:sched_waking\n", "").replace("event irq:softirq_exit\n", ""),
     "the kernel lacks the trace events sched:sched_waking, irq:softirq_exit"),
    (READY.replace("clock mono\n", ""),
     "the kernel's trace clocks lack mono (/sys/kernel/tracing/trace_clock)"),
    (READY.replace("dd\n", ""), "reading the trace needs tar and GNU dd (iflag=nonblock) on the target: apt "
                                "install tar coreutils"),
])
def test_check_says_why_a_target_cannot_trace_without_starting_anything(facts, reason):
    target = said(facts)
    assert check(target) == reason
    [call] = target.calls
    assert call[:5] == ("sh", "-c", recorder._FACTS, "sh", "/sys/kernel/tracing") and call[5:] == EVENTS


def test_the_facts_script_runs_on_a_machine_without_tracefs_mounted(tmp_path):
    target = FakeTarget(fallback_local=True)
    facts = recorder.facts(target, EVENTS, str(tmp_path / "no-tracefs-here"))
    assert (facts.mounted, facts.instances, facts.events, facts.cpus) == (False, False, frozenset(), 0)
    assert facts.available_kb and facts.available_kb > 0


def test_the_buffer_is_sized_from_the_run_and_bounded():
    assert buffer_kb(10 * 10**9, 1_000_000, cpus=2, available_kb=None) == (5120 + 10_000, None)
    assert buffer_kb(10**9, None, cpus=2, available_kb=None) == (1024, None)  # at least 1 MiB
    assert buffer_kb(3600 * 10**9, 100_000, cpus=4, available_kb=None) == (256 * 1024, None)  # at most
    assert buffer_kb(10 * 10**9, 1_000_000, cpus=2, available_kb=80_000) == (
        10_000, "the trace buffer was bounded by the target's memory to 10000 KiB per CPU (15120 KiB wanted)")


def test_a_recording_says_what_it_lost_and_that_it_mounted_tracefs(tmp_path):
    stats = (CpuStats.parse(0, STATS), CpuStats(1, 10, 0, 0))
    assert stats[0] == CpuStats(0, 5108, 17, 3)  # dropped events and commit overruns
    raw = RawTrace(tmp_path, stats, EVENTS, 2048, mounted=True)
    assert raw.lost == 20 and raw.raw_files() == [tmp_path / "raw" / "cpu0", tmp_path / "raw" / "cpu1"]
    assert [w.message for w in raw.warnings()] == [
        "the kernel dropped 20 trace events when its buffer of 2048 KiB per CPU was full (CPU 0: 20): the "
        "trace lacks the start of the run there, and periods before its first event are not explained",
        "tracefs was not mounted: jitterlab mounted it at /sys/kernel/tracing for the run and unmounted it "
        "afterwards"]
    assert RawTrace(tmp_path, (stats[1],), EVENTS, 2048, mounted=False).warnings() == []


def test_a_set_up_the_kernel_refuses_is_undone_and_said(tmp_path):
    target = FakeTarget(fallback_local=True)
    target.respond(["cat", "/proc/mounts"], f"nodev {tmp_path} tracefs rw 0 0\n")
    target.respond(["sh", "-c", recorder._FACTS], READY)
    target.respond(["sh", "-c", recorder._START], "failed event sched:sched_waking\n")
    rec = Recorder(target, str(tmp_path / "scratch"), duration_ns=10**9)
    with pytest.raises(TraceUnavailable) as info:
        rec.start()
    assert info.value.status == "unavailable"
    assert info.value.reason == (f"could not set up the tracing instance {tmp_path}/instances/"
                                 f"{rec.instance}: event sched:sched_waking failed")
    [undone] = [c for c in target.calls if c[:3] == ("sh", "-c", changes.UNDO)]
    assert undone[4:] == ("rmdir", f"{tmp_path}/instances/{rec.instance}", "-")
    assert not list((tmp_path / "run" / "tracing").iterdir())


def test_a_target_that_cannot_trace_is_refused_before_anything_changes():
    target = said("uid 1000\nkernel tracefs\n")
    with pytest.raises(TraceUnavailable, match="tracing needs root"):
        Recorder(target, "/tmp/x", duration_ns=10**9).start()
    assert [c[:3] for c in target.calls] == [("sh", "-c", recorder._FACTS)]


def test_facts_parse_every_line():
    facts = Facts.parse(READY)
    assert facts == Facts(root=True, kernel_tracefs=True, mounted=True, instances=True,
                          events=frozenset(EVENTS), clock_mono=True, tools=True, cpus=2,
                          available_kb=1_000_000)
    assert Facts.parse("").reason(EVENTS) == ("the kernel has no tracefs (it needs a kernel built with "
                                              "CONFIG_TRACING)")


def test_stopping_fetches_one_archive_and_fills_missing_cpus(tmp_path):
    """The stop script's archive as a target leaves it: raw pages and stats of CPUs 0 and 2 (1 offline)."""
    scratch = tmp_path / "scratch"
    (scratch / "trace" / "raw").mkdir(parents=True)
    (scratch / "trace" / "tracefs" / "events").mkdir(parents=True)
    for c in (0, 2):
        (scratch / "trace" / "raw" / f"cpu{c}").write_bytes(b"\0" * 4096)
        (scratch / "trace" / "raw" / f"stats{c}").write_text(STATS)

    def stop(argv: list[str]) -> Completed:
        out = argv[6]
        assert Path(out) == scratch / "trace" and argv[4:6] == [f"{tmp_path}/instances/x", str(tmp_path)]
        FakeTarget(fallback_local=True).run(["tar", "-C", out, "-czf", f"{out}.tgz", "raw", "tracefs"])
        return Completed(tuple(argv), 0, "unread 1\n", "")

    target = FakeTarget(fallback_local=True)
    target.respond(["sh", "-c", recorder._STOP], response=stop)
    rec = Recorder(target, str(scratch), duration_ns=10**9)
    rec.fs.path, rec.instance = str(tmp_path), "x"
    raw = rec.stop(tmp_path / "local")
    assert [s.cpu for s in raw.stats] == [0, 1, 2] and raw.stats[1] == CpuStats(1, 0, 0, 0)
    assert [p.stat().st_size for p in raw.raw_files()] == [4096, 0, 4096]
    assert raw.notes == ("the trace of CPU 1 could not be read: periods there are not explained",)
    assert not (scratch / "trace").exists() and not (tmp_path / "local" / "trace.tgz").exists()
