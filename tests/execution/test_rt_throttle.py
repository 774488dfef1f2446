"""RT throttling is lifted for the runs of a busy-polling probe where jitterlab may write it, recorded
in every run and the sysinfo, and put back on every path: the end, a failed run, Ctrl-C, an error
in jitterlab, and a killed jitterlab (its restore record, honoured by the next campaign)."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from jitterlab import plugins
from jitterlab.execution import rt_throttle
from jitterlab.model.errors import RunFailed
from jitterlab.model.facts import SystemFacts
from jitterlab.model.registry import Entry
from jitterlab.store.catalog import Store
from jitterlab.system import sysinfo
from jitterlab.targets import fake, processes
from jitterlab.targets.base import Completed
from jitterlab.targets.fake import FakeTarget
from jitterlab.tunings import files
from tests.execution import fakes
from tests.execution.test_runner import campaign, run

DEFAULT_US = 950000


class Sysctl:
    """The fake kernel setting: a file the fake targets' scripts read and write for real."""

    def __init__(self, tmp_path: Path, monkeypatch, value: int = DEFAULT_US, writable: bool = True):
        self.path = tmp_path / "sched_rt_runtime_us"
        self.path.write_text(f"{value}\n")
        if not writable:
            self.path.chmod(0o444)
        self.writes: list[str] = []
        monkeypatch.setattr(rt_throttle, "SYSCTL", str(self.path))
        self.records = tmp_path / "run" / "rt-throttle"  # the machine's /run/jitterlab-rt-throttle
        monkeypatch.setattr(rt_throttle, "RECORD_DIR", str(self.records))
        self.legacy = tmp_path / "run" / "jitterlab" / "rt-throttle"  # an older jitterlab's
        monkeypatch.setattr(rt_throttle, "LEGACY_DIRS", (str(self.legacy),))

    @property
    def value(self) -> int:
        return int(self.path.read_text())


def answering(target: FakeTarget, sysctl: Sysctl) -> FakeTarget:
    """The throttle's scripts and its record directory run for real on the target's files."""
    local = target._local  # the fake target's filesystem is this machine's

    def real(argv: list[str]) -> Completed:
        if argv[:3] == ["sh", "-c", files._WRITE]:
            sysctl.writes.append(argv[-1].strip())
        return local.run(argv)

    records = (rt_throttle.RECORD_DIR, *rt_throttle.LEGACY_DIRS)
    for script in (files._READ, files._WRITE, rt_throttle._KEEP):
        target.respond(["sh", "-c", script], response=real)
    for directory in records:
        target.respond(["ls", "-1", directory], response=real)

    def only_records(argv: list[str]) -> Completed:  # cat and rm act for real on the records only
        mine = [a for a in argv[1:] if not a.startswith("-")]
        return real(argv) if all(a.startswith(records) for a in mine) else Completed(tuple(argv), 0, "", "")

    target.respond(["cat"], response=only_records)
    target.respond(["rm", "-f"], response=only_records)
    return target


@pytest.fixture
def machine(tmp_path, monkeypatch):
    """`jitterlab run` on fake targets with a fake sysctl, whose benchmark busy-polls a probe CPU."""
    monkeypatch.setattr(fake, "OPENED", [])
    plan = fakes.register(monkeypatch)
    monkeypatch.setattr(fakes.FakeBenchmark, "needs_probe_cpu", lambda self, cell: True, raising=False)
    monkeypatch.setattr(sysinfo, "snapshot", lambda target: SystemFacts.given(
        n_cpus=2, rt_runtime_us=DEFAULT_US, rt_period_us=1_000_000, container="none"))
    sysctl = Sysctl(tmp_path, monkeypatch)

    def open_answering(name, options, where=None):
        target = fake.open_fake(name, options, where)
        return answering(target, sysctl)

    monkeypatch.setitem(plugins.TARGETS._entries, "fake", Entry("fake", "for tests", open_answering))
    return plan, sysctl


def _live_owner() -> str:
    """A restore record's name for another jitterlab that still runs (this test's parent)."""
    return f"{processes.host_tag()}~{os.getppid()}~{processes.owner_start_ticks(os.getppid())}.prev"


def _stored(tmp_path: Path) -> list:
    return sorted(Store(tmp_path / "results", create=False).runs(), key=lambda r: r.repetition)


def _records(tmp_path: Path) -> list[str]:
    d = Path(rt_throttle.RECORD_DIR)
    return sorted(os.listdir(d)) if d.exists() else []


def test_lifted_for_the_runs_recorded_in_each_and_put_back(tmp_path, machine):
    _, sysctl = machine
    assert run(campaign(tmp_path, reps=2)) == 0
    assert sysctl.writes == ["-1", str(DEFAULT_US)] and sysctl.value == DEFAULT_US
    assert _records(tmp_path) == []
    for r in _stored(tmp_path):
        assert r.settings.as_json()["rt_throttling"] == {
            "setting": "lift", "changed": True, "sched_rt_runtime_us_before": DEFAULT_US,
            "sched_rt_runtime_us_during": -1, "restored_to": DEFAULT_US}
    store = Store(tmp_path / "results", create=False)
    info = store.sysinfo(_stored(tmp_path)[0].sysinfo_id)
    assert info.rt_runtime_us == -1 and info.rt_throttling.changed is True
    warnings = [w.message for _, w in store.warnings(_stored(tmp_path)[0].campaign_id)]
    assert warnings and not any("RT throttling is active" in m for m in warnings)


@pytest.mark.parametrize("how", ["failed run", "interrupt", "sigterm", "jitterlab error", "lost target"])
def test_put_back_on_every_path(tmp_path, machine, monkeypatch, how):
    plan, sysctl = machine
    seen_during: list[int] = []
    original = fakes._hook

    def hook(ctx, phase):
        seen_during.append(sysctl.value)
        if how == "jitterlab error" and ctx.repetition == 1 and phase == "measure":
            raise ZeroDivisionError("a bug in jitterlab")
        if how == "sigterm" and ctx.repetition == 1 and phase == "measure":
            os.kill(os.getpid(), signal.SIGTERM)  # as a service manager stops jitterlab
            assert ctx.target.closing.wait(10)
            raise RunFailed("killed by SIGTERM")
        original(ctx, phase)

    monkeypatch.setattr(fakes, "_hook", hook)
    if how == "failed run":
        plan.fail = ("a", "measure", 1)
    elif how == "interrupt":
        plan.interrupt = ("a", "measure", 1)
    elif how == "lost target":
        plan.lose = ("a", "measure", 1)
    path = campaign(tmp_path, reps=3)
    if how == "jitterlab error":
        with pytest.raises(ZeroDivisionError):
            run(path)
    else:
        assert run(path) == {"failed run": 1, "interrupt": 130, "sigterm": 130, "lost target": 1}[how]
    assert seen_during and set(seen_during) == {-1}  # every phase ran unthrottled
    if how == "lost target":  # it cannot be reached: its record stays for the next campaign
        assert sysctl.value == -1 and len(_records(tmp_path)) == 1
        return
    assert sysctl.value == DEFAULT_US and sysctl.writes == ["-1", str(DEFAULT_US)]
    assert _records(tmp_path) == []


@pytest.mark.parametrize("older", [False, True])
def test_a_killed_jitterlab_is_put_back_by_the_next_campaign(tmp_path, machine, older):
    _, sysctl = machine
    # a jitterlab that lifted it and was killed (SIGKILL, power to the controller): its record
    # names an owner that no longer runs (`older`: in the directory an older jitterlab kept them in)
    records = sysctl.legacy if older else sysctl.records
    records.mkdir(parents=True)
    (records / f"{processes.host_tag()}~999999999~1.prev").write_text(f"{DEFAULT_US}\n")
    sysctl.path.write_text("-1\n")
    path = campaign(tmp_path, reps=1)
    path.write_text(path.read_text().replace('name = "fake"\n', 'name = "fake"\nrt_throttling = "keep"\n', 1))
    assert run(path) == 0
    assert sysctl.value == DEFAULT_US and _records(tmp_path) == [] and list(records.iterdir()) == []
    [r] = _stored(tmp_path)
    assert r.settings.as_json()["rt_throttling"] == {
        "setting": "keep", "changed": False, "sched_rt_runtime_us_before": DEFAULT_US,
        "sched_rt_runtime_us_during": DEFAULT_US, "why": 'campaign.rt_throttling = "keep"'}


def test_the_sweep_reads_both_directories_in_one_command(tmp_path, monkeypatch):
    """A campaign's start pays one round trip here when nothing was left, and per record left only
    what puts it back: reading it, writing the value, removing the records."""
    sysctl = Sysctl(tmp_path, monkeypatch, value=-1)
    target = answering(FakeTarget("t", str(tmp_path / "t")), sysctl)
    assert rt_throttle.restore_orphaned(target) == [] and target.calls == [
        ("ls", "-1", str(sysctl.records), str(sysctl.legacy))]
    for records in (sysctl.records, sysctl.legacy):
        records.mkdir(parents=True)
        (records / f"{processes.host_tag()}~999999999~1.prev").write_text(f"{DEFAULT_US}\n")
    target.calls.clear()
    assert rt_throttle.restore_orphaned(target) == [
        f"restored {sysctl.path} to {DEFAULT_US}: a killed jitterlab run had lifted RT throttling"]
    dead = f"{processes.host_tag()}~999999999~1.prev"
    assert [c[:2] for c in target.calls] == [("ls", "-1"), ("cat", str(sysctl.records / dead)),
                                             ("sh", "-c"), ("rm", "-f")]
    assert sysctl.value == DEFAULT_US and _records(tmp_path) == [] and list(sysctl.legacy.iterdir()) == []


def test_where_it_may_not_be_written_nothing_changes_and_the_runs_say_why(tmp_path, machine, monkeypatch):
    _, sysctl = machine
    if os.geteuid() == 0:  # root may write a read-only file: a container stands for "may not"
        inside = SystemFacts.given(n_cpus=2, container="docker")
        monkeypatch.setattr(sysinfo, "snapshot", lambda target: inside)
        why = "a container (docker): the kernel's setting belongs to its host"
    else:
        sysctl.path.chmod(0o444)
        why = f"{sysctl.path} is not writable here (run jitterlab as root to lift it)"
    assert run(campaign(tmp_path, reps=1)) == 0
    assert sysctl.writes == [] and sysctl.value == DEFAULT_US and _records(tmp_path) == []
    [r] = _stored(tmp_path)
    assert r.settings.rt_throttling.changed is False and r.settings.rt_throttling.why == why


def test_two_jitterlabs_share_the_original_and_the_last_puts_it_back(tmp_path, monkeypatch):
    sysctl = Sysctl(tmp_path, monkeypatch)
    target = answering(FakeTarget("t", str(tmp_path / "t")), sysctl)
    first = rt_throttle.lift(target, "lift", needed=True, info=SystemFacts.given())
    # a second jitterlab on the same machine, still running, started after the first had lifted it
    other = _live_owner()
    (sysctl.records / other).write_text(f"{DEFAULT_US}\n")
    assert first.changed and sysctl.value == -1
    assert first.restore() is None
    assert sysctl.value == -1  # the other one still runs unthrottled; it puts the original back
    assert sorted(os.listdir(sysctl.records)) == [other]
    assert first.restore() is None and sysctl.writes == ["-1"]  # once only


def _as(monkeypatch, user_id: int) -> None:
    monkeypatch.setattr(sysinfo, "snapshot", lambda target: SystemFacts.given(
        n_cpus=2, rt_runtime_us=DEFAULT_US, rt_period_us=1_000_000, container="none", user_id=user_id))


def _throttling_warnings(tmp_path: Path, printed: str) -> tuple[list, list[str]]:
    """The RT-throttling warnings stored for the campaign, and those printed when it started."""
    store = Store(tmp_path / "results", create=False)
    stored = [w for _, w in store.warnings(_stored(tmp_path)[0].campaign_id) if "RT throttling" in w.message]
    return stored, [line for line in printed.splitlines() if "RT throttling is active" in line]


def test_a_probe_outside_the_target_lifts_nothing_and_the_remedy_says_so(tmp_path, machine, monkeypatch,
                                                                           capsys):
    _, sysctl = machine
    # the emulator and register-poll probes run on the controller: none busy-polls on the target
    monkeypatch.setattr(fakes.FakeBenchmark, "needs_probe_cpu", lambda self, cell: False, raising=False)
    _as(monkeypatch, 0)  # jitterlab is root there (an emulated board's guest)
    assert run(campaign(tmp_path, reps=1)) == 0
    assert sysctl.writes == [] and sysctl.value == DEFAULT_US
    [stored], [printed] = _throttling_warnings(tmp_path, capsys.readouterr().out)
    assert "no probe of these runs polls on the target" in stored.message
    assert stored.remedy.startswith("nothing to do for the probes") and "root" not in stored.remedy
    assert "no probe of these runs polls on the target" in printed and "run jitterlab as root" not in printed
    info = Store(tmp_path / "results", create=False).sysinfo(_stored(tmp_path)[0].sysinfo_id)
    assert info.rt_throttling.needed is False and info.user_id == 0


def test_a_probe_polling_on_the_target_as_root_is_told_it_will_be_lifted_then_is(tmp_path, machine,
                                                                                   monkeypatch, capsys):
    _, sysctl = machine
    _as(monkeypatch, 0)
    assert run(campaign(tmp_path, reps=1)) == 0
    assert sysctl.writes == ["-1", str(DEFAULT_US)]
    stored, [printed] = _throttling_warnings(tmp_path, capsys.readouterr().out)
    assert stored == []  # lifted for the runs: nothing limited them
    assert "jitterlab lifts it for the runs" in printed and "run jitterlab as root" not in printed


def test_a_probe_polling_on_the_target_without_root_is_told_to_run_as_root(tmp_path, machine, monkeypatch,
                                                                             capsys):
    _, sysctl = machine
    # what a user who is not root finds (root, running these tests, would write a read-only file)
    monkeypatch.setattr(rt_throttle, "_read", lambda target: (DEFAULT_US, False))
    _as(monkeypatch, 1000)
    assert run(campaign(tmp_path, reps=1)) == 0
    assert sysctl.writes == []
    [stored], [printed] = _throttling_warnings(tmp_path, capsys.readouterr().out)
    assert stored.remedy.startswith("run jitterlab as root") and "run jitterlab as root" in printed
    [r] = _stored(tmp_path)
    why = f"{sysctl.path} is not writable here (run jitterlab as root to lift it)"
    assert r.settings.rt_throttling.why == why


def test_root_that_may_not_write_it_is_not_told_to_be_root(tmp_path, machine, monkeypatch):
    _, sysctl = machine
    monkeypatch.setattr(rt_throttle, "_read", lambda target: (DEFAULT_US, False))  # a read-only /proc/sys
    _as(monkeypatch, 0)
    assert run(campaign(tmp_path, reps=1)) == 0
    [stored], _ = _throttling_warnings(tmp_path, "")
    assert stored.remedy == (f"jitterlab could not lift it ({sysctl.path} is not writable here): "
                             "sysctl -w kernel.sched_rt_runtime_us=-1")


def test_the_campaign_setting_is_checked(tmp_path, machine, capsys):
    path = campaign(tmp_path)
    path.write_text(path.read_text().replace('name = "fake"\n', 'name = "fake"\nrt_throttling = "off"\n', 1))
    assert run(path) == 2
    err = capsys.readouterr().err.replace("\n", "")
    assert """campaign.rt_throttling: expected "lift" or "keep", got 'off'""" in err



def test_a_second_jitterlab_takes_the_original_from_the_first(tmp_path, monkeypatch):
    sysctl = Sysctl(tmp_path, monkeypatch, value=-1)  # the first one, still running, lifted it
    sysctl.records.mkdir(parents=True)
    first = sysctl.records / _live_owner()
    first.write_text(f"{DEFAULT_US}\n")
    target = answering(FakeTarget("t", str(tmp_path / "t")), sysctl)
    second = rt_throttle.lift(target, "lift", needed=True, info=SystemFacts.given())
    assert second.changed and second.before_us == -1 and second.original_us == DEFAULT_US
    first.unlink()  # the first one ended meanwhile (and left the value to the last one out)
    assert second.restore() is None
    assert sysctl.value == DEFAULT_US and os.listdir(sysctl.records) == []
