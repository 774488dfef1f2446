"""timer-slack and mlock: tunings of how the program under test runs rather than of the machine.

They reach the program in one of two ways, as `Applied` says (model/tuning.py):
- a launcher, an argv put before the program (after its CPU pinning): what must happen to the
  process before the program starts. The timer slack is such a setting: kept across exec and
  inherited by children (a script's `sleep`), it is written to /proc/self/timerslack_ns by a constant
  shell that then execs the program, so every impl gets it without a flag of its own.
- flags, put after the program's common flags: what only the program can do to itself. Memory
  locks are dropped at exec, so `--mlock` asks the program to call mlockall(MCL_CURRENT |
  MCL_FUTURE) once its buffers are prefaulted (programs/c/sw_common.h, the Python impl); a program
  that cannot (a shell or Node.js script) exits unavailable, and the tuning skips such impls.
Neither changes the machine: nothing is journaled, nothing is left to undo.
"""

from __future__ import annotations

import re

from jitterlab.model.tuning import MLOCK_ITSELF, MLOCK_NEVER, Applied, Cpus, ForProgram, ProgramTraits
from jitterlab.targets.base import Target
from jitterlab.tunings.base import Keeper, TuningBase, register

SLACK_FILE = "/proc/self/timerslack_ns"
SLACK_NS = 1  # the least there is: 0 means "back to the default" to the kernel
MLOCK_FLAG = "--mlock"
# $1 the file: prints the shell's own slack, and "writable" when the shell may set its own (it
# writes back the value it has: nothing changes)
_SLACK = r"""
[ -e "$1" ] || exit 0
v=$(cat -- "$1" 2>/dev/null) || exit 0
echo "value $v"
printf '%s\n' "$v" > "$1" 2>/dev/null && echo writable
exit 0
"""
# $0 a name, $1 the slack (ns), $2 the file, then the program's argv
_LAUNCH = r"""
printf '%s' "$1" > "$2" || { echo "$0: cannot set its timer slack ($2)" >&2; exit 69; }
shift 2
exec "$@"
"""
_MEMLOCK = r"""
echo "uid $(id -u)"
echo "memlock $(ulimit -l)"
"""


def _no_program(program: ProgramTraits | None) -> str | None:
    return "the impl runs no Linux program of its own" if program is None else None


@register
class TimerSlack(TuningBase):
    name = "timer-slack"
    cost = "the program's timers fire on time, never batched: more wake-ups, a little more power"
    help = (f"the program's timer slack at {SLACK_NS} ns instead of the default 50 µs (a sleep may "
            "end that much late): userspace impls that do not run at SCHED_FIFO")
    changes_machine = False

    def refusal(self, target: Target, cpus: Cpus) -> str | None:
        before, writable = self._read(target)
        if before is None:
            return f"no {SLACK_FILE} here (Linux 4.6 and later have it)"
        if not writable:
            return f"{SLACK_FILE} cannot be written here"
        return None

    def change(self, target: Target, cpus: Cpus, keeper: Keeper) -> Applied:
        before, _ = self._read(target)
        step = ForProgram("timerslack_ns", str(before), str(SLACK_NS))
        launcher = ("sh", "-c", _LAUNCH, "jitterlab-timer-slack", str(SLACK_NS), self.path(SLACK_FILE))
        return Applied(self.name, cpus, (step,), launcher=launcher,
                       note=f"the program's timer slack: {before} ns -> {SLACK_NS} ns")

    def skips(self, program: ProgramTraits | None) -> str | None:
        if program is not None and program.realtime:
            return f"{program.name} runs at SCHED_FIFO, which has no timer slack"
        return _no_program(program)

    def _read(self, target: Target) -> tuple[int | None, bool]:
        out = target.run(["sh", "-c", _SLACK, "sh", self.path(SLACK_FILE)]).stdout
        value = re.search(r"^value (\d+)$", out, re.M)
        return (int(value[1]) if value else None), "writable" in out.split()


@register
class Mlock(TuningBase):
    name = "mlock"
    cost = "the program's memory stays resident: that much RAM less for everything else"
    help = ("the program's memory locked (mlockall, asked with --mlock) so that no page fault "
            "lands in its loop: the C and Python impls that do not lock it themselves")
    changes_machine = False

    def refusal(self, target: Target, cpus: Cpus) -> str | None:
        out = target.run(["sh", "-c", _MEMLOCK]).stdout
        uid = re.search(r"^uid (\d+)$", out, re.M)
        limit = re.search(r"^memlock (\S+)$", out, re.M)
        if (uid is not None and uid[1] == "0") or (limit is not None and limit[1] == "unlimited"):
            return None
        shown = f"{limit[1]} KiB" if limit is not None else "unknown"
        return (f"this user may lock {shown} of memory (RLIMIT_MEMLOCK): run jitterlab as root, or "
                "raise memlock in /etc/security/limits.conf")

    def change(self, target: Target, cpus: Cpus, keeper: Keeper) -> Applied:
        step = ForProgram("memory", "paged", "locked: mlockall(MCL_CURRENT | MCL_FUTURE)")
        return Applied(self.name, cpus, (step,), flags=(MLOCK_FLAG,), note="the program locks its memory")

    def skips(self, program: ProgramTraits | None) -> str | None:
        if program is not None and program.mlock == MLOCK_ITSELF:
            return f"{program.name} locks its memory itself"
        if program is not None and program.mlock == MLOCK_NEVER:
            return f"{program.name} cannot lock its memory (mlockall cannot be called from it)"
        return _no_program(program)
