"""Leftovers of a killed run: stop what an earlier jitterlab run left behind on a target.

`processes.spawn_recorded` records every process a run starts (a pidfile named by a marker that
the process and its children carry in their environment). `sweep` stops only processes that carry
the marker of a record whose owner (the jitterlab process that spawned it) is no longer alive, so
it cannot touch an unrelated process, nor one of a concurrent jitterlab run on the same host; it
also removes the run directories, /dev/shm files and unfinished program builds of dead owners.
A machine setting a killed run had changed is put back from its record by what the runner calls
right after this sweep: execution/rt_throttle.restore_orphaned (RT throttling) and
tunings/journal.restore_orphaned (a tuning left applied; a process that held one is stopped here).
"""

from __future__ import annotations

import contextlib
import re
import time

from jitterlab.model.errors import TargetLost
from jitterlab.targets.base import CommandTimeout, Target
from jitterlab.targets.capabilities import command_timeout_s
from jitterlab.targets.processes import RUNS_DIR, SHM_DIR, host_tag, live_dir, owner_start_ticks

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

_OWNER = r"(?P<host>[A-Za-z0-9_.-]+)~(?P<pid>\d+)~(?P<start>\d+)"
_SHM_FILE = re.compile(rf"^jitterlab-{_OWNER}-[0-9a-f]+\.[a-z]+$")
_RECORD = re.compile(r"^(?P<host>[A-Za-z0-9_.-]+)~(?P<pid>\d+)~(?P<start>\d+)~[0-9a-f]{16}$")
_BUILD_DIR = re.compile(rf"^programs-[0-9a-f]+\.build-{_OWNER}$")  # deploy.py builds there
STOP_GRACE_S = 2.0


def _owner_alive(host: str, pid: str, start: str) -> bool:
    if host != host_tag():
        return False  # records of other hosts (a shared workdir) count as gone, as for processes
    ticks = owner_start_ticks(int(pid))
    return ticks is not None and ticks == int(start)


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
    timeout_s = command_timeout_s(target, 60.0)
    try:
        out = target.run(["sh", "-c", _FIND, "sh", *markers], timeout_s=timeout_s).stdout
    except CommandTimeout:
        raise TargetLost(f"target {target.name!r}: looking for leftovers of killed runs took longer than "
                         f"{timeout_s:g} s; if the board is only slow, raise alive_timeout in its [[target]]"
                         ) from None
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
    for name in target.run(["ls", "-1", target.workdir]).stdout.split():
        match = _BUILD_DIR.match(name)
        # another host's build may be going on now: only this host's dead builders are known dead
        if match and match["host"] == host_tag() and not _owner_alive(match["host"], match["pid"],
                                                                         match["start"]):
            stale.append(f"{target.workdir}/{name}")
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
