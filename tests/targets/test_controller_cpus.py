"""jitterlab's own threads are kept off the CPU a probe polls on the machine it runs on, from the probe's
start to its end in every run, and get their CPUs back after (targets/local.py threads_kept_off,
execution/run.py probe_cpu_kept_free). Exact CPU sets: no timing is asserted."""

from __future__ import annotations

import os
import subprocess
import threading

import pytest

from jitterlab.cli.main import main
from jitterlab.execution.loads import TargetLoads
from jitterlab.measure.squarewave.probes import vpin
from jitterlab.targets.local import threads_kept_off
from tests.support import local_campaign

CPUS = sorted(os.sched_getaffinity(0))
pytestmark = pytest.mark.skipif(len(CPUS) < 2, reason="needs two CPUs this process may run on")


def _cpus_of(tid: int) -> set[int]:
    return os.sched_getaffinity(tid)


def _child_cpus() -> set[int]:
    """The CPUs a program started now may run on (as the kernel says in its /proc status)."""
    status = subprocess.run(["cat", "/proc/self/status"], capture_output=True, text=True, check=True).stdout
    line = next(x for x in status.splitlines() if x.startswith("Cpus_allowed_list"))
    cpus: set[int] = set()
    for part in line.split(":", 1)[1].strip().split(","):
        lo, _, hi = part.partition("-")
        cpus.update(range(int(lo), int(hi or lo) + 1))
    return cpus


def test_every_thread_and_program_started_meanwhile_is_kept_off_then_given_back():
    whole, probe = set(CPUS), CPUS[-1]
    release, started_inside = threading.Event(), {}
    waiting = threading.Thread(target=release.wait)
    waiting.start()
    narrowed = threading.Thread(target=release.wait)  # on other CPUs already: left as it is
    narrowed.start()
    os.sched_setaffinity(narrowed.native_id, {CPUS[0]})
    try:
        with threads_kept_off([probe]):
            assert _cpus_of(0) == _cpus_of(waiting.native_id) == whole - {probe}
            assert _cpus_of(narrowed.native_id) == {CPUS[0]}
            def note_and_wait() -> None:
                started_inside["cpus"] = _cpus_of(0)
                release.wait()

            inside = threading.Thread(target=note_and_wait)
            inside.start()
            assert _child_cpus() == whole - {probe}
        assert started_inside["cpus"] == whole - {probe}
        assert _cpus_of(0) == _cpus_of(waiting.native_id) == _cpus_of(inside.native_id) == whole
        assert _cpus_of(narrowed.native_id) == {CPUS[0]}
        assert _child_cpus() == whole
    finally:
        release.set()
        os.sched_setaffinity(0, whole)


def test_a_thread_given_only_the_probe_cpu_keeps_it():
    whole = set(CPUS)
    os.sched_setaffinity(0, {CPUS[-1]})
    try:
        with threads_kept_off([CPUS[-1]]):
            assert _cpus_of(0) == {CPUS[-1]}
        assert _cpus_of(0) == {CPUS[-1]}
    finally:
        os.sched_setaffinity(0, whole)


def test_blocks_of_two_threads_run_one_after_the_other():
    """A second block (a second local target's run) waits for the first: it would otherwise take the
    CPUs the first one kept as the ones to give back."""
    whole, probe = set(CPUS), CPUS[-1]
    inside, release, order = threading.Event(), threading.Event(), []

    def first() -> None:
        with threads_kept_off([probe]):
            order.append("first in")
            inside.set()
            release.wait()
            order.append("first out")

    def second() -> None:
        with threads_kept_off([probe]):
            order.append("second in")

    one = threading.Thread(target=first)
    one.start()
    inside.wait()
    two = threading.Thread(target=second)
    two.start()
    two.join(0.2)
    assert two.is_alive() and order == ["first in"]  # waiting for the first block to end
    release.set()
    one.join()
    two.join()
    assert order == ["first in", "first out", "second in"]
    assert _cpus_of(0) == whole


def test_a_local_campaign_measures_with_jitterlab_off_its_probe_cpu(tmp_path, monkeypatch):
    """The vpin observer is started by the target's thread: at that moment neither it nor the
    process' main thread may run on the probe's CPU; between two runs (the load read, the run stored)
    and after the campaign both have every CPU again."""
    probe = CPUS[-1]
    seen: list[tuple[set[int], set[int]]] = []
    between: list[tuple[set[int], set[int]]] = []
    start, down = vpin.Observer.start, TargetLoads.down

    def recorded(self, *args, **kwargs):
        seen.append((_cpus_of(0), _cpus_of(threading.main_thread().native_id)))
        return start(self, *args, **kwargs)

    def loads_down(self, *args, **kwargs):
        between.append((_cpus_of(0), _cpus_of(threading.main_thread().native_id)))
        return down(self, *args, **kwargs)

    monkeypatch.setattr(vpin.Observer, "start", recorded)
    monkeypatch.setattr(TargetLoads, "down", loads_down)
    path = local_campaign(tmp_path, f"""
[campaign.cpus]
program = "{CPUS[0]}"
probe = "{probe}"
[matrix]
impl = "c-mmap"
period = "10ms"
probe = "vpin"
""", name="off-probe", duration="300ms", warmup="20ms", repetitions=2)
    assert main(["run", str(path), "--results", str(tmp_path / "results")]) in (0, 1)
    assert len(seen) == 2, seen
    assert all(probe not in mine and probe not in main_thread for mine, main_thread in seen), seen
    assert between == [(set(CPUS), set(CPUS))] * 2, between
    assert _cpus_of(0) == set(CPUS)
