"""Loads kept up between runs, with the real tools on this machine: sched read per run without being
stopped; cpu (stress-ng reports only when it exits) handing over to a fresh stress-ng at each
reading, never leaving the target without the load; nothing left running afterwards."""

from __future__ import annotations

import dataclasses
import shutil
import time

import pytest

from jitterlab.campaign.file import Campaign, load_campaign
from jitterlab.execution.loads import TargetLoads
from jitterlab.measure.context import Placement
from jitterlab.measure.loads import sched
from jitterlab.measure.loads.base import LoadContext, Sustained
from jitterlab.measure.loads.cpu import CpuLoad
from jitterlab.model.errors import RunFailed
from jitterlab.model.fakes import cell
from jitterlab.model.records import RunSettings
from jitterlab.targets.local import LocalTarget
from jitterlab.targets.processes import remove_records
from tests.support import eventually, local_campaign, processes_mentioning


def test_the_loads_that_can_stay_up_between_runs():
    assert isinstance(sched.SchedLoad(), Sustained) and isinstance(CpuLoad(), Sustained)


@pytest.mark.skipif(shutil.which("stress-ng") is None, reason="no stress-ng")
def test_cpu_hands_over_to_a_fresh_stress_ng_at_each_reading_and_never_goes_without(tmp_path):
    target = LocalTarget(workdir=str(tmp_path / "work"))
    load = CpuLoad()
    try:
        load.start(LoadContext(target, str(tmp_path / "scratch" / "load-cpu"), options={"workers": 1},
                               max_duration_s=60))
        first_pgid = next(iter(target._live)).pid
        time.sleep(0.3)
        first = {m.name: m.value for m in load.snapshot()}
        live = list(target._live)
        assert [p.pid for p in live] != [first_pgid] and len(live) == 1  # the old one gone, one left
        load.check()
        time.sleep(0.3)
        second = {m.name: m.value for m in load.snapshot()}
        load.check()
        third = {m.name: m.value for m in load.stop()}
        for figures in (first, second, third):
            assert figures["load_bogo_ops_per_s"] > 0 and figures["load_workers"] == 1
        # each stress-ng wrote in a directory of its own; the read ones are retired: gone with the
        # next run's directory made, or the target's records (no round trip of their own)
        remove_records(target)
        assert sorted(p.name for p in (tmp_path / "scratch").iterdir()) == ["load-cpu.2"]
    finally:
        load.stop()
        target.close()
    assert target._live == set() or not [p for p in target._live if p.poll() is None]
    assert processes_mentioning(str(tmp_path)) == []


def _rounds_beyond(load: sched.SchedLoad, n: int) -> None:
    """Wait until the log holds more than n finished hackbench rounds: how long a round takes is
    the machine's business (seconds on a loaded one), not this test's; 120 s only ends a hang."""
    eventually(lambda: len(sched.parse_rounds(load._tool.read(load._tool.log))) <= n, timeout_s=120)


@pytest.mark.skipif(shutil.which("hackbench") is None, reason="no hackbench (apt install rt-tests)")
def test_sched_is_read_per_run_and_runs_on_between_the_readings(tmp_path):
    target = LocalTarget(workdir=str(tmp_path / "work"))
    load = sched.SchedLoad()
    options = {"groups": 2, "fds": 5, "loops": 20}
    try:
        load.start(LoadContext(target, str(tmp_path / "scratch"), options=options, max_duration_s=60))
        _rounds_beyond(load, 0)
        first = {m.name: m.value for m in load.snapshot()}
        load.check()
        load.mark()
        before_mark = load._read
        assert before_mark >= first["load_sched_rounds"] >= 1
        _rounds_beyond(load, before_mark)
        second = {m.name: m.value for m in load.snapshot()}
        load.check()  # still running after both readings
        assert first["load_sched_messages_per_s"] > 0 and second["load_sched_messages_per_s"] > 0
        assert second["load_sched_rounds"] >= 1
        last = {m.name: m.value for m in load.stop()}  # like snapshot(): since the last mark()
        total = len(sched.parse_rounds(load._tool.read(load._tool.log)))
        assert last["load_sched_rounds"] == total - before_mark >= second["load_sched_rounds"]
    finally:
        load.stop()
        target.close()
    assert processes_mentioning(str(tmp_path)) == []


def _campaign(tmp_path, settings: RunSettings) -> Campaign:
    matrix = '[matrix]\nimpl = "c-mmap"\nperiod = "10ms"\nprobe = "self"\n'
    path = local_campaign(tmp_path, matrix, name="kept")
    return dataclasses.replace(load_campaign(path), settings=settings)


def _a_round_ends(loads: TargetLoads) -> None:
    """Wait until the sched load of a run finished a hackbench round since it was marked."""
    [(_, load)] = loads._running.loads
    _rounds_beyond(load, load._read)


@pytest.mark.skipif(shutil.which("hackbench") is None, reason="no hackbench (apt install rt-tests)")
def test_a_kept_load_killed_between_runs_is_restarted_and_all_stops_at_the_end(tmp_path):
    settings = RunSettings(load_warmup_ns=50_000_000, options={"loads": {"sched": {"loops": 20}}})
    target = LocalTarget(workdir=str(tmp_path / "work"))
    notices: list[str] = []
    loads = TargetLoads(_campaign(tmp_path, settings), target, Placement(None, None),
                        lambda name, message: notices.append(message))
    run = cell("squarewave", target="local", load="sched")
    try:
        loads.start(run, runs=3)
        loads.up()
        _a_round_ends(loads)
        assert {m.name for m in loads.down(keep=True)} >= {"load_sched_messages_per_s"}
        [proc] = list(target._live)
        proc.signal(9)  # dies between two runs
        proc.wait(5)
        loads.start(run, runs=2)
        assert notices and "restarting it" in notices[0]
        loads.up()
        _a_round_ends(loads)
        assert {m.name for m in loads.down(keep=True)} >= {"load_sched_messages_per_s"}
    finally:
        loads.stop()
        target.close()
    assert processes_mentioning(str(tmp_path)) == []


def test_a_load_that_cannot_start_leaves_nothing_behind(tmp_path, monkeypatch):
    def refuse(self, ctx):
        raise RunFailed("cannot start")

    monkeypatch.setattr(sched.SchedLoad, "start", refuse)
    settings = RunSettings(load_warmup_ns=1_000_000)
    target = LocalTarget(workdir=str(tmp_path / "work"))
    loads = TargetLoads(_campaign(tmp_path, settings), target, Placement(None, None), lambda *a: None)
    run = cell("squarewave", target="local", load="sched")
    with pytest.raises(RunFailed, match="cannot start"):
        loads.start(run, runs=2)
    loads.stop()  # nothing to stop: no error
    target.close()


def test_a_loads_lifetime_covers_the_longest_table_duration(tmp_path, monkeypatch):
    """The load tools bound their own lifetime by the runs they serve: a table running longer than
    campaign.duration must not outlive its load."""
    lifetimes: list[float] = []

    def record(self, ctx):
        lifetimes.append(ctx.max_duration_s)

    monkeypatch.setattr(sched.SchedLoad, "start", record)
    matrix = ('[[matrix]]\nimpl = "c-mmap"\nperiod = "10ms"\nprobe = "self"\n'
              '[[matrix]]\nimpl = "c-fifo"\nperiod = "10ms"\nprobe = "self"\nduration = "100s"\n')
    campaign = load_campaign(local_campaign(tmp_path, matrix, name="long", duration="1s", warmup="10ms",
                                            load_warmup="1s", run_timeout="10s"))
    target = LocalTarget(workdir=str(tmp_path / "work"))
    loads = TargetLoads(campaign, target, Placement(None, None), lambda *a: None)
    try:
        loads.start(cell("squarewave", target="local", load="sched"), runs=2)
    finally:
        loads.stop()
        target.close()
    # each of the 2 runs: the load's warm-up, the run's, the longest duration, the timeout; 30 s more
    assert lifetimes == [pytest.approx(2 * (1 + 0.01 + 100 + 10) + 30)]
