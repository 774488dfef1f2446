"""Attribution on this machine's kernel (root): a disturber of known name and size on the program's
CPU is named as what ran instead of a SCHED_OTHER program, with its burst's order of magnitude, and
never ran instead of a SCHED_FIFO program above it. The programs are jitterlab's c-mmap (relative sleeps,
SCHED_OTHER) and c-fifo (absolute deadlines, SCHED_FIFO 50); their own edge logs give due times and
edges on CLOCK_MONOTONIC, the trace's clock. Structure and orders of magnitude, never a timing bound."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from jitterlab.analysis.attribution import LatePeriod, Task, attribute
from jitterlab.programs import C
from jitterlab.targets.local import LocalTarget
from jitterlab.tracing import datfile, reader
from jitterlab.tracing.recorder import Recorder
from tests.tracing.test_recording_here import BURST_MS, DISTURBER

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(os.geteuid() != 0, reason="tracing needs root"),
    pytest.mark.skipif(shutil.which("trace-cmd") is None, reason="needs trace-cmd (scripts/install-deps)"),
]
PERIOD_NS, SECONDS, CPU = 1_000_000, 1.5, 1


@pytest.fixture(scope="module")
def programs(tmp_path_factory) -> Path:
    where = tmp_path_factory.mktemp("c")
    shutil.copytree(C.path, where, dirs_exist_ok=True)
    subprocess.run(["make", "-s", "-C", str(where), "c-mmap", "c-fifo"], check=True)
    return where


def traced(tmp_path: Path, program: Path) -> tuple[list[Path], int, np.ndarray]:
    """The trace of `program` toggling a file pin every half period on CPU 1 beside the disturber, its
    pid and its logged edge times."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    pin, log = tmp_path / "pin", tmp_path / "edges.log"
    pin.write_bytes(b"\0" * 4096)
    target = LocalTarget(workdir=str(tmp_path / "wd"))
    try:
        recording = Recorder(target, str(tmp_path / "wd"), duration_ns=int(SECONDS * 1e9),
                             period_ns=PERIOD_NS)
        with recording as rec:
            disturber = subprocess.Popen([sys.executable, "-c", DISTURBER, str(CPU), str(SECONDS + 0.2)])
            victim = subprocess.Popen(
                ["taskset", "-c", str(CPU), str(program), "--period-ns", str(PERIOD_NS), "--duration-ns",
                 str(int(SECONDS * 1e9)), "--pin", str(pin), "--log", str(log), "--prio", "50"])
            assert victim.wait(30) == 0 and disturber.wait(30) == 0
            raw = rec.stop(tmp_path / "trace")
    finally:
        target.close()
    lines = [line.split() for line in log.read_text().splitlines() if not line.startswith("#")]
    return [datfile.build(raw, tmp_path / "run.dat")], victim.pid, np.array([int(f[0]) for f in lines])


def late_periods(edges: np.ndarray, due: np.ndarray, pid: int) -> list[LatePeriod]:
    """Every edge later than 200 µs after its due time."""
    late = edges - due > 200_000
    return [LatePeriod(int(d), int(e), frozenset({pid}), CPU)
            for d, e in zip(due[late], edges[late], strict=True)]


def test_a_real_time_disturber_ran_instead_of_a_sched_other_program_not_of_one_above_it(programs, tmp_path):
    half = PERIOD_NS // 2
    [dat], pid, edges = traced(tmp_path / "other", programs / "c-mmap")
    events = reader.read(dat)
    periods = late_periods(edges[1:], edges[:-1] + half, pid)  # relative sleeps: due half a period on
    assert periods, "the disturber made no period late: nothing to explain"
    explained = attribute(events, periods, idle_exit_ns=None)
    for a in explained:
        assert sum(p.duration_ns for p in a.parts) + a.remainder_ns == a.lateness_ns
    by_burst = [p for a in explained for p in a.parts if isinstance(p.who, Task) and p.who.comm == "jl-burst"]
    # it ran instead of the woken program (and, in a VM, while the program's timer interrupt came late)
    assert {p.cause for p in by_burst} <= {"wakeup", "timer"}, by_burst
    preempted = [p for p in by_burst if p.cause == "wakeup"]
    assert {(p.who.policy, p.who.priority) for p in preempted} == {("SCHED_FIFO/RR", 10)}
    longest_ms = max(p.duration_ns for p in preempted) / 1e6
    assert BURST_MS / 10 < longest_ms < BURST_MS * 10  # of the order of its 3 ms burst

    [dat], pid, edges = traced(tmp_path / "fifo", programs / "c-fifo")
    events = reader.read(dat)
    due = edges[0] + half * np.arange(len(edges))  # absolute deadlines from the first edge
    late = [LatePeriod(int(d), int(e), frozenset({pid}), CPU)
            for d, e in zip(due[1:], edges[1:], strict=True) if e > d]
    # every period late by less than a half period, and the 20 worst: after a stall (another
    # tenant's SCHED_FIFO 99 poller, say) the program catches up on its deadlines, and the windows of
    # those periods all lie within the first one's
    chosen = [p for p in late if p.lateness_ns < half] + sorted(late, key=lambda p: -p.lateness_ns)[:20]
    explained = attribute(events, chosen, idle_exit_ns=None)
    ran_instead = {p.who.comm for a in explained for p in a.parts if p.cause == "wakeup"}
    assert "jl-burst" not in ran_instead, ran_instead  # (it may run while the program sleeps)
    assert len(explained) == len(chosen) >= 20  # explained: each late by at least the wake-up path
    for a in explained:
        assert sum(p.duration_ns for p in a.parts) + a.remainder_ns == a.lateness_ns
