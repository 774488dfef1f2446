"""LocalTarget: output capture, exit codes, timeouts and that no process outlives its stop."""

from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest

from jitterlab.targets.base import CommandTimeout, Process, Target
from jitterlab.targets.local import LocalTarget
from tests.support import check_signal_and_wait, group_members, put_and_get_a_tree


def wait_for_file(path: Path, timeout_s: float = 10.0) -> str:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if path.exists() and path.read_text().strip():
            return path.read_text().strip()
        time.sleep(0.01)
    raise AssertionError(f"{path} never appeared")


@pytest.fixture
def target(tmp_path):
    t = LocalTarget(workdir=str(tmp_path / "work"))
    yield t
    t.close()


def test_is_a_target(target):
    assert isinstance(target, Target)
    assert Path(target.workdir).is_dir()


def test_run_captures_rc_stdout_stderr(target):
    done = target.run(["sh", "-c", "echo out; echo err >&2; exit 3"])
    assert (done.rc, done.stdout, done.stderr, done.ok) == (3, "out\n", "err\n", False)
    assert done.argv == ("sh", "-c", "echo out; echo err >&2; exit 3")
    assert target.run(["true"]).ok


def test_run_missing_command_is_127(target):
    done = target.run(["/nonexistent/jitterlab-no-such-tool", "x"])
    assert done.rc == 127
    assert "not found" in done.stderr


def test_run_not_executable_is_126(target, tmp_path):
    script = tmp_path / "plain.txt"
    script.write_text("echo hi\n")
    assert target.run([str(script)]).rc == 126


def test_run_timeout_kills_the_whole_group(target, tmp_path):
    pidfile = tmp_path / "pid"
    with pytest.raises(CommandTimeout):
        target.run(["sh", "-c", 'echo $$ > "$0"; sleep 100 & sleep 100', str(pidfile)], 0.5)
    pgid = int(pidfile.read_text())
    assert group_members(pgid) == []


def test_run_leaves_no_background_child(target, tmp_path):
    pidfile = tmp_path / "pid"
    done = target.run(["sh", "-c", 'echo $$ > "$0"; sleep 100 >/dev/null 2>&1 &', str(pidfile)])
    assert done.ok
    assert group_members(int(pidfile.read_text())) == []


def test_spawn_stop_kills_children_and_is_idempotent(target, tmp_path):
    log = tmp_path / "log"
    proc = target.spawn(["sh", "-c", "echo started; sleep 100 & sleep 100"], log_path=str(log))
    assert isinstance(proc, Process)
    wait_for_file(log)
    assert len(group_members(proc.pid)) >= 2  # sh and its sleeps
    assert proc.poll() is None
    rc = proc.stop(grace_s=1.0)
    assert rc == -signal.SIGTERM
    assert group_members(proc.pid) == []
    assert proc.stop() == rc
    assert proc.poll() == rc
    assert target.live_pids() == []


def test_stop_waits_for_children_that_outlive_the_leader(target, tmp_path):
    # the child needs a moment after SIGTERM to write its result; the leader exits at once
    done = tmp_path / "done"
    child = 'trap "sleep 0.3; echo ok > $0; exit 0" TERM; while :; do sleep 0.01; done'
    script = f"sh -c '{child}' \"$0\" & wait"
    proc = target.spawn(["sh", "-c", script, str(done)])
    deadline = time.monotonic() + 10
    while len(group_members(proc.pid)) < 3 and time.monotonic() < deadline:
        time.sleep(0.01)
    proc.stop(grace_s=5.0)
    assert done.read_text() == "ok\n"
    assert group_members(proc.pid) == []


def test_ignoring_sigterm_gets_sigkill_after_grace(target, tmp_path):
    ready = tmp_path / "ready"
    proc = target.spawn(["sh", "-c", 'trap "" TERM; echo 1 > "$0"; sleep 100', str(ready)])
    wait_for_file(ready)
    rc = proc.stop(grace_s=0.2)
    assert rc == -signal.SIGKILL
    assert group_members(proc.pid) == []


def test_signal_and_wait(target):
    check_signal_and_wait(target, timeout_s=10)


@pytest.mark.parametrize("pidfd", [True, False], ids=["pidfd", "no-pidfd"])
def test_wait_with_a_timeout_returns_the_status_or_names_the_timeout(target, monkeypatch, pidfd):
    if not pidfd:  # a kernel before 5.3: Popen.wait does the waiting
        monkeypatch.setattr("os.pidfd_open", lambda pid: (_ for _ in ()).throw(OSError(38, "ENOSYS")))
    proc = target.spawn(["sh", "-c", "read x; exit 3"])  # runs until its stdin (DEVNULL) ends
    assert proc.wait(10) == 3
    assert proc.wait(0.01) == 3  # an exited process: its status again, at once
    slow = target.spawn(["sleep", "100"])
    with pytest.raises(CommandTimeout, match=r"sleep still running after 0\.2s"):
        slow.wait(0.2)
    assert slow.poll() is None  # a timed-out wait leaves the process alone
    slow.stop()


def test_close_stops_every_live_process(tmp_path):
    target = LocalTarget(workdir=str(tmp_path))
    procs = [target.spawn(["sh", "-c", "sleep 100 & sleep 100"]) for _ in range(2)]
    assert sorted(target.live_pids()) == sorted(p.pid for p in procs)
    target.close()
    assert all(p.poll() is not None for p in procs)
    assert all(group_members(p.pid) == [] for p in procs)
    assert target.live_pids() == []


def test_put_get_file_and_tree(target, tmp_path):
    put_and_get_a_tree(target, tmp_path)
