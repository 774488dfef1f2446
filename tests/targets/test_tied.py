"""The launcher that ties an emulator to jitterlab's life (targets/tied.py), with plain programs in
place of qemu: closing the pipe ends it with SIGTERM, and one that ignores SIGTERM is killed after
its grace. The launcher exits with the shell's status of the program: 128 + the signal. stop()
leaves nothing of the launcher's process group, also when the launcher itself does not end."""

from __future__ import annotations

import os
import signal
import sys
import time

from jitterlab.targets import tied
from tests.support import eventually, group_members

SLEEPS = "import time; print('up', flush=True); time.sleep(120)"
IGNORES_TERM = "import signal; signal.signal(signal.SIGTERM, signal.SIG_IGN); " + SLEEPS


def _started(code: str, tmp_path, grace_s: float) -> tuple[tied.Tied, str]:
    """The program under the launcher, once it is up (so that its end is the launcher's doing)."""
    log = tmp_path / "log"
    emulator = tied.start([sys.executable, "-c", code], log, grace_s)
    deadline = time.monotonic() + 30
    while "up" not in log.read_text() and emulator.alive() and time.monotonic() < deadline:
        time.sleep(0.02)
    # the launcher, its watcher and the program
    assert not eventually(lambda: len(group_members(emulator.launcher.pid)) < 3, 10, interval_s=0.02)
    return emulator, log


def _ended(code: str, tmp_path, grace_s: float) -> tuple[int, str]:
    emulator, log = _started(code, tmp_path, grace_s)
    os.close(emulator.pipe)  # as the kernel does when jitterlab dies
    return emulator.launcher.wait(60), log.read_text()


def test_closing_the_pipe_ends_the_program_with_sigterm(tmp_path):
    assert _ended(SLEEPS, tmp_path, 5.0) == (128 + 15, "up\nTerminated\n")  # the shell says how it ended


def test_a_program_that_ignores_sigterm_is_killed_after_its_grace(tmp_path):
    assert _ended(IGNORES_TERM, tmp_path, 0.2) == (128 + 9, "up\nKilled\n")


def _stopped(emulator: tied.Tied, slack_s: float = tied.STOP_SLACK_S) -> list[int]:
    """What is left of the launcher's group after stop() (the watcher's last `sleep` may take a moment)."""
    emulator.stop(slack_s)
    assert not emulator.alive() and emulator.pipe == -1
    return eventually(lambda: group_members(emulator.launcher.pid), 10, interval_s=0.02)


def test_stop_leaves_nothing_of_the_group(tmp_path):
    emulator, log = _started(SLEEPS, tmp_path, 5.0)
    assert _stopped(emulator) == []
    assert (emulator.launcher.returncode, log.read_text()) == (128 + 15, "up\nTerminated\n")
    emulator.stop()  # again: nothing to do
    assert emulator.launcher.returncode == 128 + 15


def test_stop_leaves_nothing_of_the_group_when_the_program_ignores_sigterm(tmp_path):
    emulator, log = _started(IGNORES_TERM, tmp_path, 0.2)
    assert _stopped(emulator) == []
    assert (emulator.launcher.returncode, log.read_text()) == (128 + 9, "up\nKilled\n")


def test_stop_kills_the_group_when_the_launcher_does_not_end(tmp_path):
    emulator, _log = _started(SLEEPS, tmp_path, 0.2)
    os.killpg(emulator.launcher.pid, signal.SIGSTOP)  # neither the launcher nor its watcher acts
    assert _stopped(emulator, slack_s=0.2) == []
    assert emulator.launcher.returncode == -signal.SIGKILL  # killed with its group, not ended by itself
