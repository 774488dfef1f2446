"""Leftovers of a killed run: record what a run spawns, and stop what an earlier run left behind.

`spawn_recorded` starts a command through a constant launcher that writes the group leader's pid
to `<workdir>/live/<marker>.pid` and puts `JITTERLAB_LIVE=<marker>` in its environment, which every
child inherits (stress-ng workers, hackbench senders, ...). `sweep` stops only processes that carry
the marker of a record whose owner (the jitterlab process that spawned it) is no longer alive, so
it cannot touch an unrelated process, nor one of a concurrent jitterlab run on the same host.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import socket
import time

from jitterlab.errors import RunFailed
from jitterlab.targets.base import CommandTimeout, Process, Target

MARKER_VAR = "JITTERLAB_LIVE"
LIVE_DIR = "live"

# Constant scripts; paths, markers and argv reach them as positional parameters, never as text.
LAUNCH = 'echo $$ > "$0" && exec "$@"'
# one "pid<TAB>marker<TAB>cmdline" line per live process carrying one of the markers "$@"
_FIND = r"""
for f in $(grep -l -a -F -e JITTERLAB_LIVE= /proc/[0-9]*/environ 2>/dev/null); do
  p=${f#/proc/}; p=${p%/environ}
  [ "$p" = "$$" ] && continue
  for m; do
    if grep -q -a -F -e "JITTERLAB_LIVE=$m" "$f" 2>/dev/null; then
      state=$(sed 's/.*) //' "/proc/$p/stat" 2>/dev/null | cut -c1)
      [ "$state" = Z ] && continue
      printf '%s\t%s\t%s\n' "$p" "$m" "$(tr '\000' ' ' < "/proc/$p/cmdline" 2>/dev/null)"
    fi
  done
done
exit 0
"""
# signal $1 to each "pid:marker" in the rest, re-checking the marker right before (pid reuse)
_KILL = r"""
sig=$1; shift
for pm; do
  p=${pm%%:*}; m=${pm#*:}
  grep -q -a -F -e "JITTERLAB_LIVE=$m" "/proc/$p/environ" 2>/dev/null && kill -s "$sig" "$p" 2>/dev/null
done
exit 0
"""

RUNS_DIR = "runs"
SHM_DIR = "/dev/shm"
_OWNER = r"(?P<host>[A-Za-z0-9_.-]+)~(?P<pid>\d+)~(?P<start>\d+)"
_SHM_FILE = re.compile(rf"^jitterlab-{_OWNER}-[0-9a-f]+\.[a-z]+$")
_RECORD = re.compile(r"^(?P<host>[A-Za-z0-9_.-]+)~(?P<pid>\d+)~(?P<start>\d+)~[0-9a-f]{16}$")
STOP_GRACE_S = 2.0


def _owner_start_ticks(pid: int) -> int | None:
    """Start time of a local process in clock ticks since boot (tells a pid from its reuse)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return int(f.read().rsplit(b")", 1)[1].split()[19])
    except (OSError, IndexError, ValueError):
        return None


def _host() -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", socket.gethostname()) or "host"


def new_marker() -> str:
    """A marker naming its owner (this host and process) and unique among runs."""
    return f"{_host()}~{os.getpid()}~{_owner_start_ticks(os.getpid()) or 0}~{secrets.token_hex(8)}"


def owner_tag() -> str:
    """This jitterlab process as the owner of a run's files: host~pid~start."""
    return f"{_host()}~{os.getpid()}~{_owner_start_ticks(os.getpid()) or 0}"


def scratch_dir(target: Target, run_id: str) -> str:
    """A run's directory on the target, under its owner's, so a killed owner's runs are found."""
    return f"{target.workdir}/{RUNS_DIR}/{owner_tag()}/{run_id}"


def shm_path(scratch: str, suffix: str) -> str:
    """A file of the run in /dev/shm (tmpfs, for mmap), named after its owner and run."""
    run_dir = scratch.rstrip("/")
    owner, run_id = run_dir.split("/")[-2:]
    return f"{SHM_DIR}/jitterlab-{owner}-{run_id}.{suffix}"


def _owner_alive(host: str, pid: str, start: str) -> bool:
    if host != _host():
        return False  # records of other hosts (a shared workdir) count as gone, as for processes
    ticks = _owner_start_ticks(int(pid))
    return ticks is not None and ticks == int(start)


def live_dir(target: Target) -> str:
    return f"{target.workdir}/{LIVE_DIR}"


class RecordedProcess:
    """A spawned Process whose record is removed when it is stopped."""

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
        forget(self)
        return rc

    def pgid(self) -> int | None:
        """The group leader's pid as written by the launcher on the target (None until then)."""
        text = self._target.run(["cat", self.pidfile]).stdout.strip()
        return int(text) if text.isdigit() else None


def spawn_recorded(target: Target, argv: list[str], log_path: str | None = None) -> RecordedProcess:
    """target.spawn(argv), recorded so that a later `sweep` can stop it if this run is killed."""
    marker = new_marker()
    target.run(["mkdir", "-p", live_dir(target)])
    wrapped = ["sh", "-c", LAUNCH, f"{live_dir(target)}/{marker}.pid"]
    wrapped += ["env", f"{MARKER_VAR}={marker}", *argv]
    return RecordedProcess(target.spawn(wrapped, log_path=log_path), target, marker)


def run_recorded(target: Target, argv: list[str], log_path: str, *, timeout_s: float, name: str,
                 budget: str) -> int:
    """Run `argv` to its end as spawn_recorded does; return its exit status. A program still
    running after `timeout_s` is stopped and the run fails as "timeout", saying what the time
    was made of (`budget`) and keeping the program's output with the run."""
    proc = spawn_recorded(target, argv, log_path=log_path)
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


def forget(proc: RecordedProcess) -> None:
    """Remove the record of a process that has been stopped (idempotent)."""
    if not proc._forgotten:
        proc._target.run(["rm", "-f", proc.pidfile])
        proc._forgotten = True


def _orphaned_markers(target: Target) -> list[str]:
    """Markers of records whose owner is gone (owners on other hosts count as gone)."""
    listing = target.run(["ls", "-1", live_dir(target)])
    markers = []
    for name in listing.stdout.split():
        stem = name.removesuffix(".pid")
        match = _RECORD.match(stem)
        if not name.endswith(".pid") or not match:
            continue
        if _owner_alive(match["host"], match["pid"], match["start"]):
            continue  # its owner still runs: not a leftover
        markers.append(stem)
    return markers


def _find(target: Target, markers: list[str]) -> list[tuple[int, str, str]]:
    out = target.run(["sh", "-c", _FIND, "sh", *markers], timeout_s=60.0).stdout
    found = []
    for line in out.splitlines():
        pid, _, rest = line.partition("\t")
        marker, _, cmdline = rest.partition("\t")
        if pid.isdigit() and marker in markers:
            found.append((int(pid), marker, cmdline.strip()))
    return found


def _stale_files(target: Target) -> list[str]:
    """Run directories and /dev/shm files whose owning jitterlab is gone."""
    runs = f"{target.workdir}/{RUNS_DIR}"
    stale = []
    for name in target.run(["ls", "-1", runs]).stdout.split():
        match = re.fullmatch(_OWNER, name)
        if match and not _owner_alive(match["host"], match["pid"], match["start"]):
            stale.append(f"{runs}/{name}")
    for name in target.run(["ls", "-1", SHM_DIR]).stdout.split():
        match = _SHM_FILE.match(name)
        if match and not _owner_alive(match["host"], match["pid"], match["start"]):
            stale.append(f"{SHM_DIR}/{name}")
    return stale


def sweep(target: Target, grace_s: float = STOP_GRACE_S) -> list[str]:
    """Stop what earlier, killed jitterlab runs left on `target` and remove their files; describe
    each stopped process."""
    stale = _stale_files(target)
    if stale:
        target.run(["rm", "-rf", "--", *stale])
    markers = _orphaned_markers(target)
    if not markers:
        return []
    found = _find(target, markers)
    if found:
        pairs = [f"{pid}:{marker}" for pid, marker, _ in found]
        target.run(["sh", "-c", _KILL, "sh", "TERM", *pairs])
        deadline = time.monotonic() + grace_s
        while True:
            left = _find(target, markers)
            if not left:
                break
            if time.monotonic() >= deadline:
                target.run(["sh", "-c", _KILL, "sh", "KILL", *[f"{p}:{m}" for p, m, _ in left]])
                with contextlib.suppress(CommandTimeout):
                    _await_gone(target, markers)
                break
            time.sleep(0.05)
    target.run(["rm", "-f", *[f"{live_dir(target)}/{m}.pid" for m in markers]])
    return [f"pid {pid}: {cmdline or '?'}" for pid, _, cmdline in found]


def _await_gone(target: Target, markers: list[str], timeout_s: float = 5.0) -> None:
    deadline = time.monotonic() + timeout_s
    while _find(target, markers) and time.monotonic() < deadline:
        time.sleep(0.05)
