"""Whatever ends a jitterlab that applied tunings (kill -9, Ctrl-C while applying, a lost target),
nothing stays applied: the journal it kept on the machine is found and put back by the next one."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from jitterlab import plugins
from jitterlab.model.errors import TargetLost
from jitterlab.model.registry import Entry
from jitterlab.model.tuning import Applied, Changed, Cpus
from jitterlab.targets import fake, processes
from jitterlab.targets.base import Completed
from jitterlab.tunings import files, journal
from jitterlab.tunings.base import TUNINGS
from tests.execution import fakes
from tests.execution.test_runner import campaign, run
from tests.tunings.machine import Machine, carries

REPO = Path(__file__).parents[2]
CELL = Cpus(program=(1,), probe=(2,))
DEAD = f"{processes.host_tag()}~999999999~1"  # an owner that no longer runs


def _applying_then_killed(tmp_path: Path) -> None:
    """A jitterlab (a process of its own) applies four tunings on the machine, then dies by SIGKILL."""
    script = textwrap.dedent(f"""
        import os, signal, sys
        sys.path.insert(0, {str(REPO)!r})
        from jitterlab.model.tuning import Cpus
        from jitterlab.targets.local import LocalTarget
        from jitterlab.tunings.base import TUNINGS
        from tests.tunings.machine import Machine, carries
        m = Machine(__import__("pathlib").Path({str(tmp_path)!r}), made=True)
        cell = Cpus((1,), (2,))
        for name in ("irq-away", "rt-unthrottled", "isolated"):
            TUNINGS.get(name, "t").at(m.root).apply(m.target, cell)
        TUNINGS.get("cpu-dma-latency", "t").at(m.root).apply(LocalTarget("local", str(m.workdir)), cell)
        print("applied", flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == -signal.SIGKILL and done.stdout == "applied\n", done.stderr


def test_a_killed_jitterlabs_tunings_are_put_back_by_the_next_one(tmp_path):
    machine = Machine(tmp_path)
    before = machine.snapshot()
    _applying_then_killed(tmp_path)
    assert len(machine.journal()) == 4
    assert machine.read("proc/sys/kernel/sched_rt_runtime_us") == "-1\n"
    assert machine.path(machine.group).exists()
    [entry] = [n for n in machine.journal() if n.endswith("~cpu-dma-latency.json")]
    held = json.loads(machine.read(f"run/jitterlab-tunings/{entry}").split("\n", 1)[1])["steps"][0]
    pid = int(Path(held["pidfile"]).read_text())
    assert carries(pid, held["marker"]), "the process holding /dev/cpu_dma_latency outlived its jitterlab"
    try:
        done = journal.restore_orphaned(machine.target, machine.root)
    finally:
        if carries(pid, held["marker"]):  # not stopped: this test's own leftover
            os.kill(pid, signal.SIGKILL)
    assert sorted(done) == [
        "restored tuning cpu-dma-latency left applied by a killed jitterlab run (1 process)",
        "restored tuning irq-away left applied by a killed jitterlab run (5 files)",
        "restored tuning isolated left applied by a killed jitterlab run (3 files, 1 directory)",
        "restored tuning rt-unthrottled left applied by a killed jitterlab run (1 file)",
    ]
    after = machine.snapshot()
    # the fake device is a plain file: the holder's request stays written in it, where the kernel
    # would drop it with the process; everything else is as it was, byte for byte
    assert after.pop("dev/cpu_dma_latency") == b"\0\0\0\0"
    before.pop("dev/cpu_dma_latency")
    assert after == before and machine.journal() == []
    assert not carries(pid, held["marker"]) and not Path(held["pidfile"]).exists()
    assert journal.restore_orphaned(machine.target, machine.root) == []


def test_what_a_live_jitterlab_has_applied_is_left_alone(tmp_path):
    machine = Machine(tmp_path)
    applied = TUNINGS.get("rt-unthrottled", "t").at(machine.root).apply(machine.target, CELL)
    assert journal.restore_orphaned(machine.target, machine.root) == []  # it is this one's
    assert machine.read("proc/sys/kernel/sched_rt_runtime_us") == "-1\n"
    assert TUNINGS.get("rt-unthrottled", "t").restore(machine.target, applied) == []


def test_ctrl_c_while_applying_undoes_what_was_done(tmp_path):
    machine = Machine(tmp_path)
    before = machine.snapshot()
    local = machine.target._local
    calls = []

    def interrupted(argv: list[str]) -> Completed:
        calls.append(argv)
        done = local.run(argv)
        if len(calls) == 1:
            raise KeyboardInterrupt  # the files were written when Ctrl-C came
        return done

    machine.target.respond(["sh", "-c", files._WRITE], response=interrupted)
    with pytest.raises(KeyboardInterrupt):
        TUNINGS.get("irq-away", "t").at(machine.root).apply(machine.target, CELL)
    assert len(calls) == 2  # the writes, then the writes that put them back
    assert machine.snapshot() == before and machine.journal() == []


def test_a_lost_target_keeps_its_journal_for_the_next_jitterlab(tmp_path):
    machine = Machine(tmp_path)
    before = machine.snapshot()
    lift = TUNINGS.get("rt-unthrottled", "t").at(machine.root)
    applied = lift.apply(machine.target, CELL)
    machine.target.lose("connection to the board lost")
    with pytest.raises(TargetLost):
        lift.restore(machine.target, applied)
    [entry] = machine.journal()
    # the next jitterlab (this one has gone since) reaches the board again
    journal_dir = machine.path("run/jitterlab-tunings")
    (journal_dir / entry).rename(journal_dir / f"{DEAD}~rt-unthrottled.json")
    again = Machine(tmp_path, made=True)
    assert journal.restore_orphaned(again.target, again.root) == [
        "restored tuning rt-unthrottled left applied by a killed jitterlab run (1 file)"]
    assert again.snapshot() == before and again.journal() == []


def test_an_entry_of_an_earlier_boot_is_dropped_not_restored(tmp_path):
    machine = Machine(tmp_path)
    sysctl = f"{machine.root}/proc/sys/kernel/sched_rt_runtime_us"
    stale = Applied("rt-unthrottled", CELL, (Changed(sysctl, "900000\n", "-1\n"),))
    machine.write(f"run/jitterlab-tunings/{DEAD}~rt-unthrottled.json",
                  f"an-earlier-boot\n{json.dumps(stale.as_json())}\n")
    assert journal.restore_orphaned(machine.target, machine.root) == [
        "dropped tuning rt-unthrottled of a jitterlab run gone before this machine last booted (the "
        "kernel forgot its changes at boot)"]
    assert machine.read("proc/sys/kernel/sched_rt_runtime_us") == "950000\n" and machine.journal() == []


def test_an_entry_that_does_not_read_is_named_and_kept(tmp_path):
    machine = Machine(tmp_path)
    name = f"{DEAD}~irq-away.json"
    machine.write(f"run/jitterlab-tunings/{name}", "6a8e58d0-boot-one\n{not json\n")
    [problem] = journal.restore_orphaned(machine.target, machine.root)
    entry = f"{machine.root}/run/jitterlab-tunings/{name}"
    assert problem.startswith(f"tuning irq-away: the journal entry {entry} does not read (")
    assert problem.endswith(f"check by hand, then rm {entry}")
    assert machine.journal() == [name]


def test_a_resumed_campaign_restores_a_tuning_left_applied_before_its_first_run(tmp_path, monkeypatch,
                                                                                capsys):
    """The runner asks the journal of each target right after sweeping the leftovers of killed runs."""
    fakes.register(monkeypatch)
    monkeypatch.setattr(fake, "OPENED", [])
    machine = Machine(tmp_path)
    monkeypatch.setattr(journal, "JOURNAL_DIR", f"{machine.root}/run/jitterlab-tunings")
    monkeypatch.setattr(journal, "BOOT_ID", f"{machine.root}/proc/sys/kernel/random/boot_id")
    sysctl = f"{machine.root}/proc/sys/kernel/sched_rt_runtime_us"
    machine.write("proc/sys/kernel/sched_rt_runtime_us", "-1\n")
    left = Applied("rt-unthrottled", CELL, (Changed(sysctl, "950000\n", "-1\n"),))
    machine.write(f"run/jitterlab-tunings/{DEAD}~rt-unthrottled.json",
                  f"6a8e58d0-boot-one\n{json.dumps(left.as_json())}\n")

    def opened(name, options, where=None):
        target = fake.open_fake(name, options, where)
        real = target._local.run  # the journal's scripts act on the machine's tree for real
        for script in (files._READ, files._WRITE):
            target.respond(["sh", "-c", script], response=real)
        target.respond(["rm", "-f", "--", f"{journal.JOURNAL_DIR}/{DEAD}~rt-unthrottled.json"], response=real)
        return target

    monkeypatch.setitem(plugins.TARGETS._entries, "fake", Entry("fake", "for tests", opened))
    assert run(campaign(tmp_path, reps=1)) == 0
    assert machine.read("proc/sys/kernel/sched_rt_runtime_us") == "950000\n" and machine.journal() == []
    assert "restored tuning rt-unthrottled left applied by a killed jitterlab run (1 file)" in (
        " ".join(capsys.readouterr().out.split()))
