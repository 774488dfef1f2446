"""An emulator tied to jitterlab's life (qemu for a VM, and for an emulated real-time unit).

It runs under a small launcher in a session of its own, so Ctrl-C in jitterlab's terminal does
not reach it, and stops when the launcher's stdin, a pipe whose other end only jitterlab holds,
reaches EOF: when jitterlab closes the target, and when jitterlab dies in any way (Ctrl-C,
SIGTERM, SIGKILL, a crash), since the kernel then closes that end. The emulator gets SIGKILL if the
launcher itself dies (setpriv --pdeathsig), so none outlives both. Nothing from the user is put in
the script: the grace and the emulator's argv are its positional parameters.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

POLL_S = 0.05
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


def start(argv: list[str], log: Path, grace_s: float) -> tuple[subprocess.Popen, int]:
    """Start `argv` tied to the returned pipe's write end (close it to stop the emulator, which gets
    `grace_s` to end after SIGTERM); its output goes to `log`. The launcher's pid is its group's."""
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
    return launcher, write_end
