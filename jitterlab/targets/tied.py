"""An emulator tied to jitterlab's life (qemu for a VM, and for an emulated real-time unit).

It runs under a small launcher in a session of its own, so Ctrl-C in jitterlab's terminal does
not reach it, and stops when the launcher's stdin, a pipe whose other end only jitterlab holds,
reaches EOF: when jitterlab closes the target, and when jitterlab dies in any way (Ctrl-C,
SIGTERM, SIGKILL, a crash), since the kernel then closes that end. The emulator gets SIGKILL if the
launcher itself dies (setpriv --pdeathsig), so none outlives both. Nothing from the user is put in
the script: the grace and the emulator's argv are its positional parameters.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path

POLL_S = 0.05
# how long past its grace the launcher may take to end before its group is killed: its polls of POLL_S
# each start a `sleep`, which a busy machine delays
STOP_SLACK_S = 5.0
# $1: how many polls of POLL_S the emulator gets to end after SIGTERM; then $@: its argv. The watcher,
# on file descriptor 3 (a background job's stdin would be /dev/null), stops it when the pipe closes.
LAUNCH = r"""
polls=$1
shift
exec 3<&0
setpriv --pdeathsig KILL -- "$@" </dev/null 3<&- &
q=$!
{
  while read -r _; do :; done
  kill -s TERM "$q"
  n=0
  while kill -s 0 "$q" && [ "$n" -lt "$polls" ]; do sleep 0.05; n=$((n + 1)); done
  kill -s KILL "$q"
} <&3 >/dev/null 2>&1 &
w=$!
exec 3<&-
wait "$q"
rc=$?
kill "$w" 2>/dev/null
exit "$rc"
"""


@dataclass
class Tied:
    """An emulator started under the launcher; stop() (idempotent) ends it and waits for the launcher."""

    launcher: subprocess.Popen  # its pid is its process group's: the launcher, its watcher, the emulator
    pipe: int  # the write end only jitterlab holds; -1 once closed
    grace_s: float  # the emulator's time to end after SIGTERM

    def alive(self) -> bool:
        return self.launcher.poll() is None

    def stop(self, slack_s: float = STOP_SLACK_S) -> None:
        """Close the pipe (the launcher TERMs the emulator, KILLs it after its grace); KILL the whole group
        if the launcher has not ended `slack_s` after that grace."""
        if self.pipe >= 0:
            with contextlib.suppress(OSError):
                os.close(self.pipe)
            self.pipe = -1
        try:
            self.launcher.wait(self.grace_s + slack_s)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.launcher.pid, signal.SIGKILL)
            self.launcher.wait()


def start(argv: list[str], log: Path, grace_s: float) -> Tied:
    """Start `argv` tied to the returned pipe's write end (closing it stops the emulator, which gets
    `grace_s` to end after SIGTERM); its output goes to `log`."""
    read_end, write_end = os.pipe()  # non-inheritable: only the launcher gets it, as stdin
    try:
        with open(log, "ab") as out:
            launcher = subprocess.Popen(
                ["sh", "-c", LAUNCH, "launch", str(max(1, round(grace_s / POLL_S))), *argv],
                stdin=read_end, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    except BaseException:
        os.close(write_end)
        raise
    finally:
        os.close(read_end)
    return Tied(launcher, write_end, grace_s)
