"""How a run starts processes on a target: recorded (so a killed run's leftovers can be found),
pinned to CPUs, in a scratch directory of their owner, with their exit described for people.

`spawn_recorded` starts a command through a constant launcher that writes the group leader's pid
to `<workdir>/live/<marker>.pid` and puts `JITTERLAB_LIVE=<marker>` in its environment, which every
child inherits (stress-ng workers, hackbench senders, ...); `sweep.py` stops what such records
name once their owner is gone. Every benchmark, probe, pin and load starts its processes here.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import signal
import socket
import threading
import time
from collections.abc import Sequence

from jitterlab.model.errors import RunFailed
from jitterlab.targets.base import CommandTimeout, Process, Target
from jitterlab.targets.capabilities import SharesControllerFiles, WaitsForPath, has

MARKER_VAR = "JITTERLAB_LIVE"
LIVE_DIR = "live"
RUNS_DIR = "runs"
SHM_DIR = "/dev/shm"

# Constant script; paths, markers and argv reach it as positional parameters, never as text. It
# makes the record's directory itself: a round trip less per process (tens of ms on a small board);
# only when it is missing (`[` is built into the shell, mkdir is one more program started). The
# `env NAME=VALUE` in front of the command (spawn_recorded's marker) is done by the shell itself:
# exported, then the command exec'd, one program fewer started per process.
LAUNCH = ('{ [ -d "${0%/*}" ] || mkdir -p -- "${0%/*}"; } && echo $$ > "$0" && '
          'if [ "$1" = env ]; then export "$2"; shift 2; fi && exec "$@"')
# removes a run's directory and what was retired (records of processes that have exited, files and
# directories of runs done with them), then its owner's directory when that is left empty
_REMOVE_SCRATCH = 'd=$1 o=$2; shift 2; rm -rf -- ${d:+"$d"} "$@"; rmdir -- "$o" 2>/dev/null; exit 0'
# makes a run's directory, removing what was retired in the same round trip
_RENEW_SCRATCH = 'd=$1; shift; [ $# -eq 0 ] || rm -rf -- "$@"; mkdir -p -- "$d"'
# records of stopped processes (and what else was retired), removed with the next run directory of
# their target: a round trip less per process (tens of ms on a small board). A record left meanwhile
# is harmless: sweep.py stops only a process that still carries its marker, and removes a dead
# owner's records and run directories.
_RETIRED: dict[int, list[str]] = {}  # id(target) -> paths
_RETIRED_LOCK = threading.Lock()


def owner_start_ticks(pid: int) -> int | None:
    """Start time of a local process in clock ticks since boot (tells a pid from its reuse)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return int(f.read().rsplit(b")", 1)[1].split()[19])
    except (OSError, IndexError, ValueError):
        return None


def host_tag() -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", socket.gethostname()) or "host"


def owner_tag() -> str:
    """This jitterlab process as the owner of a run's files: host~pid~start."""
    return f"{host_tag()}~{os.getpid()}~{owner_start_ticks(os.getpid()) or 0}"


OWNER = r"(?P<host>[A-Za-z0-9_.-]+)~(?P<pid>\d+)~(?P<start>\d+)"  # an owner_tag()


def owner_alive(owner: str) -> bool:
    """Whether the jitterlab process an owner tag names still runs (owners on other hosts count as
    gone: a record of theirs in a shared workdir is a leftover for this host)."""
    match = re.fullmatch(OWNER, owner)
    if match is None or match["host"] != host_tag():
        return False
    ticks = owner_start_ticks(int(match["pid"]))
    return ticks is not None and ticks == int(match["start"])


def new_marker() -> str:
    """A marker naming its owner (this host and process) and unique among runs."""
    return f"{owner_tag()}~{secrets.token_hex(8)}"


def scratch_dir(target: Target, run_id: str) -> str:
    """A run's directory on the target, under its owner's, so a killed owner's runs are found."""
    return f"{target.workdir}/{RUNS_DIR}/{owner_tag()}/{run_id}"


def remove_scratch(target: Target, scratch: str) -> None:
    """Remove a run's directory (and its owner's when it was the last one in it), and what was
    retired on the target since the last time (records of stopped processes, runs' leftovers)."""
    target.run(["sh", "-c", _REMOVE_SCRATCH, "sh", scratch, scratch.rsplit("/", 1)[0],
                *_retired(target)])


def renew_scratch(target: Target, scratch: str) -> None:
    """Make a run's directory, and remove what was retired since the last time (the directory of the
    run before it, among others) in the same round trip."""
    renew_dir(target, scratch, _retired(target))


def renew_dir(target: Target, directory: str, removed: Sequence[str] = ()) -> None:
    """`rm -rf REMOVED; mkdir -p DIRECTORY` on the target in one round trip (where its files are this
    machine's: done here, without one)."""
    here = has(target, SharesControllerFiles)
    if here is not None:
        here.renew_here(directory, removed)
    else:
        target.run(["sh", "-c", _RENEW_SCRATCH, "sh", directory, *removed])


def remove_records(target: Target) -> None:
    """Remove what was retired on the target (remove_scratch and renew_scratch do it too), and this
    jitterlab's directory of runs when that is left empty."""
    records = _retired(target)
    if records:
        owner = f"{target.workdir}/{RUNS_DIR}/{owner_tag()}"
        target.run(["sh", "-c", _REMOVE_SCRATCH, "sh", "", owner, *records])


def retire(target: Target, path: str) -> None:
    """Remove a file or directory of a run that is done with it (a pin's file in /dev/shm, the run's
    directory) with the target's next run directory (renew_scratch, remove_scratch) or its records
    (remove_records): a round trip less per run. One left by a killed run is removed by sweep.py, as
    its owner is gone."""
    with _RETIRED_LOCK:
        _RETIRED.setdefault(id(target), []).append(path)


def _retired(target: Target) -> list[str]:
    with _RETIRED_LOCK:
        return _RETIRED.pop(id(target), [])


def shm_path(scratch: str, suffix: str) -> str:
    """A file of the run in /dev/shm (tmpfs, for mmap), named after its owner and run."""
    run_dir = scratch.rstrip("/")
    owner, run_id = run_dir.split("/")[-2:]
    return f"{SHM_DIR}/jitterlab-{owner}-{run_id}.{suffix}"


def live_dir(target: Target) -> str:
    return f"{target.workdir}/{LIVE_DIR}"


def pinned(cpus: Sequence[int] | None) -> list[str]:
    """The `taskset -c CPUS` prefix that keeps a command on `cpus` (nothing when unplaced)."""
    return ["taskset", "-c", ",".join(map(str, cpus))] if cpus else []


def describe_exit(rc: int | None) -> str:
    """An exit status for people: "exit status 3", "killed by SIGKILL", "still running"."""
    if rc is None:
        return "still running"
    if rc < 0:
        try:
            return f"killed by {signal.Signals(-rc).name}"
        except ValueError:
            return f"killed by signal {-rc}"
    return f"exit status {rc}"


class RecordedProcess:
    """A spawned Process whose record is retired when it is stopped."""

    def __init__(self, inner: Process, target: Target, marker: str) -> None:
        self._inner = inner
        self._target = target
        self.marker = marker
        self.pidfile = f"{live_dir(target)}/{marker}.pid"
        self.argv = inner.argv
        self._forgotten = False

    def poll(self) -> int | None:
        return self._inner.poll()

    def wait(self, timeout_s: float | None = None) -> int:
        return self._inner.wait(timeout_s)

    def signal(self, signum: int) -> None:
        self._inner.signal(signum)

    def stop(self, grace_s: float = 2.0) -> int:
        rc = self._inner.stop(grace_s)
        self.forget()
        return rc

    def forget(self) -> None:
        """Retire the record of a process that has been stopped (idempotent): it is removed with
        the run's directory (remove_scratch) or by remove_records."""
        if not self._forgotten:
            retire(self._target, self.pidfile)
            self._forgotten = True

    def pgid(self) -> int | None:
        """The group leader's pid as written by the launcher on the target (None until then)."""
        text = self._target.run(["cat", self.pidfile]).stdout.strip()
        return int(text) if text.isdigit() else None


def spawn_recorded(target: Target, argv: list[str], log_path: str | None = None, *,
                   marker: str | None = None) -> RecordedProcess:
    """target.spawn(argv), recorded so that a later sweep can stop it if this run is killed; under
    `marker` (a new_marker()) when its owner has recorded it elsewhere before it starts."""
    marker = marker or new_marker()
    wrapped = ["sh", "-c", LAUNCH, f"{live_dir(target)}/{marker}.pid"]
    wrapped += ["env", f"{MARKER_VAR}={marker}", *argv]
    return RecordedProcess(target.spawn(wrapped, log_path=log_path), target, marker)


def run_recorded(target: Target, argv: list[str], log_path: str, *, timeout_s: float, name: str,
                 budget: str, marker: str | None = None) -> int:
    """Run `argv` to its end as spawn_recorded does; return its exit status. A program still
    running after `timeout_s` is stopped and the run fails as "timeout", saying what the time
    was made of (`budget`) and keeping the program's output with the run."""
    proc = spawn_recorded(target, argv, log_path=log_path, marker=marker)
    try:
        return proc.wait(timeout_s)
    except CommandTimeout:
        proc.stop()
        output = target.run(["cat", log_path]).stdout
        raise RunFailed(
            f"{name} still running {timeout_s:.0f}s after start ({budget}); killed",
            status="timeout",
            attachments={log_path.rsplit("/", 1)[-1]: output.encode()},
        ) from None
    finally:
        with contextlib.suppress(Exception):
            proc.stop()


def wait_for_path(target: Target, path: str, timeout_s: float, alive: Process | None = None) -> bool:
    """Poll until `path` exists on the target; False on timeout or when `alive` exits first."""
    fast = has(target, WaitsForPath)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if fast is not None:
            if fast.wait_for_path(path, 0.05):
                return True
        elif target.run(["test", "-e", path]).ok:
            return True
        else:
            time.sleep(0.02)
        if alive is not None and alive.poll() is not None:
            return fast.wait_for_path(path, 0) if fast else target.run(["test", "-e", path]).ok
    return False
