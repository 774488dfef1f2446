"""FakeTarget: canned answers, recorded argv, fake processes on a fake clock."""

from __future__ import annotations

import signal

import pytest

from jitterlab.targets.base import CommandTimeout, Completed, Process, Target
from jitterlab.targets.fake import FakeBehaviour, FakeTarget


def test_is_a_target_and_records_every_argv():
    t = FakeTarget()
    assert isinstance(t, Target)
    t.run(["uname", "-r"])
    proc = t.spawn(["stress-ng", "--cpu", "1"])
    assert isinstance(proc, Process)
    assert t.calls == [("uname", "-r"), ("stress-ng", "--cpu", "1")]


def test_run_answers_from_the_longest_matching_prefix():
    t = FakeTarget()
    t.respond(["cat"], "any file\n")
    t.respond(["cat", "/proc/loadavg"], "0.5 0.4 0.3 1/100 42\n")
    t.respond(["false"], rc=1, stderr="no")
    assert t.run(["cat", "/proc/loadavg"]).stdout.startswith("0.5")
    assert t.run(["cat", "/etc/hostname"]).stdout == "any file\n"
    done = t.run(["false", "x"])
    assert (done.argv, done.rc, done.stderr) == (("false", "x"), 1, "no")


def test_run_can_raise_or_compute_the_answer():
    t = FakeTarget()
    t.respond(["slow"], response=CommandTimeout("slow ran past 1s"))
    t.respond(["echo"], response=lambda argv: Completed(tuple(argv), 0, " ".join(argv[1:]), ""))
    with pytest.raises(CommandTimeout):
        t.run(["slow"])
    assert t.run(["echo", "a", "b"]).stdout == "a b"


def test_unanswered_commands_fail_or_run_locally():
    assert FakeTarget().run(["echo", "hi"]).rc == 127
    assert FakeTarget(fallback_local=True).run(["echo", "hi"]).stdout == "hi\n"


def test_process_runs_until_signalled_and_wait_advances_the_clock():
    t = FakeTarget()
    proc = t.spawn(["sleep", "inf"])
    with pytest.raises(CommandTimeout):
        proc.wait(5.0)
    assert t.clock_s == 5.0 and proc.poll() is None
    proc.signal(signal.SIGINT)
    assert proc.poll() == -signal.SIGINT
    assert proc.signals == [signal.SIGINT]
    assert proc.stop() == -signal.SIGINT  # idempotent once ended


def test_process_with_a_duration_exits_and_writes_its_files(tmp_path):
    t = FakeTarget(workdir=str(tmp_path))
    out = tmp_path / "result.yaml"
    t.behave(["job"], FakeBehaviour(rc=3, duration_s=2.0, log="hello\n", files={str(out): "x"}))
    proc = t.spawn(["job", "--fast"], log_path=str(tmp_path / "log"))
    assert (tmp_path / "log").read_text() == "hello\n"
    assert proc.poll() is None and not out.exists()
    t.clock_s += 2.0
    assert proc.poll() == 3
    assert out.read_text() == "x"
    assert t.spawn(["job"]).wait() == 3 and t.clock_s == 4.0


def test_ignoring_sigterm_costs_the_grace_then_sigkill():
    t = FakeTarget()
    t.behave(["stubborn"], FakeBehaviour(ignores=frozenset({signal.SIGTERM})))
    proc = t.spawn(["stubborn"])
    assert proc.stop(grace_s=1.5) == -signal.SIGKILL
    assert t.clock_s == 1.5
    assert proc.signals == [signal.SIGTERM, signal.SIGKILL]


def test_wait_forever_on_endless_process_is_a_test_bug():
    with pytest.raises(RuntimeError):
        FakeTarget().spawn(["daemon"]).wait()


def test_close_stops_everything(tmp_path):
    t = FakeTarget(workdir=str(tmp_path))
    procs = [t.spawn(["a"]), t.spawn(["b"])]
    t.close()
    assert t.closed
    assert [p.poll() for p in procs] == [-signal.SIGTERM, -signal.SIGTERM]


def test_put_and_get_use_the_workdir(tmp_path):
    t = FakeTarget(workdir=str(tmp_path / "target"))
    (tmp_path / "f").write_text("data")
    t.put(tmp_path / "f", f"{t.workdir}/in/f")
    t.get(f"{t.workdir}/in/f", tmp_path / "back")
    assert (tmp_path / "back").read_text() == "data"


def test_a_quiet_fake_answers_every_other_command_with_success_and_no_output():
    t = FakeTarget(quiet=True)
    t.respond(["cat"], "canned\n")
    assert (t.run(["make", "-C", "x"]).rc, t.run(["make"]).stdout) == (0, "")
    assert t.run(["cat", "f"]).stdout == "canned\n"


def test_a_lost_fake_raises_target_lost_for_every_command_and_its_processes_are_gone(tmp_path):
    from jitterlab.model.errors import TargetLost

    t = FakeTarget(workdir=str(tmp_path), quiet=True)
    proc = t.spawn(["daemon"])
    t.lose("cable pulled")
    assert proc.poll() == -signal.SIGKILL and t.running() == []
    for call in (lambda: t.run(["true"]), lambda: t.spawn(["x"]), lambda: t.get("/a", tmp_path / "b"),
                 lambda: t.put(tmp_path, "/a")):
        with pytest.raises(TargetLost, match="cable pulled"):
            call()


def test_close_tells_whoever_waits_on_it():
    t = FakeTarget()
    assert not t.closing.is_set()
    t.close()
    assert t.closing.wait(0)


def test_the_fake_is_its_own_controller():
    from jitterlab.targets.capabilities import ControllerMachine, has

    t = FakeTarget()
    assert has(t, ControllerMachine) is t


def test_the_fake_kind_is_registered_and_checks_its_options(tmp_path):
    from jitterlab.model.errors import UserError
    from jitterlab.targets import fake
    from jitterlab.targets.registry import TARGETS, check_options

    opened = TARGETS.get("fake", "test")("board", {"workdir": str(tmp_path)})
    assert opened in fake.OPENED and opened.quiet and opened.workdir == str(tmp_path)
    fake.OPENED.remove(opened)
    check_options("fake", {}, "c.toml: target[1]")
    with pytest.raises(UserError, match=r"^c.toml: target\[1\].workdir: must be an absolute path, got"):
        check_options("fake", {"workdir": "rel"}, "c.toml: target[1]")
    with pytest.raises(UserError, match=r"target\[1\].wrkdir: unknown option of a fake target; did you mean"):
        check_options("fake", {"wrkdir": "/x"}, "c.toml: target[1]")
