"""The launcher that ties an emulator to jitterlab's life (targets/tied.py), with plain programs in
place of qemu: closing the pipe ends it with SIGTERM, and one that ignores SIGTERM is killed after
its grace. The launcher exits with the shell's status of the program: 128 + the signal."""

from __future__ import annotations

import os
import sys
import time

from jitterlab.targets import tied

SLEEPS = "import time; print('up', flush=True); time.sleep(120)"
IGNORES_TERM = "import signal; signal.signal(signal.SIGTERM, signal.SIG_IGN); " + SLEEPS


def _ended(code: str, tmp_path, grace_s: float) -> tuple[int, str]:
    log = tmp_path / "log"
    launcher, pipe = tied.start([sys.executable, "-c", code], log, grace_s)
    deadline = time.monotonic() + 30
    # up before the pipe closes, so that the end is the watcher's doing
    while "up" not in log.read_text() and launcher.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    os.close(pipe)
    return launcher.wait(60), log.read_text()


def test_closing_the_pipe_ends_the_program_with_sigterm(tmp_path):
    assert _ended(SLEEPS, tmp_path, 5.0) == (128 + 15, "up\nTerminated\n")  # the shell says how it ended


def test_a_program_that_ignores_sigterm_is_killed_after_its_grace(tmp_path):
    assert _ended(IGNORES_TERM, tmp_path, 0.2) == (128 + 9, "up\nKilled\n")
