"""What a jitterlab process changed in a target's tracing, kept on the target until it is undone.

Every change to tracing (tracefs mounted, a setting of the global buffer written, an instance made)
is preceded by a restore record (kept, listed and removed by targets/records.py, as every kind of
record is), `/run/jitterlab-tracing/<owner>~<token>.undo` on the target: the
steps that undo what was done so far, one word a line, in threes (`write FILE VALUE`, `events
FILE "EVENT EVENT ..."`, `rmdir DIR`, `umount DIR`), exactly the arguments of the constant script
that carries them out. `Changes.undo()` takes the steps and removes the record on every path of
its owner (end, error, Ctrl-C); `restore_orphaned` (called before a campaign measures, beside the
sweep of killed runs' processes) carries out the records whose owner was killed. /run is emptied
at boot, when the kernel forgets the changes too. Not under /run/jitterlab: in jitterlab's qemu guests
that is the boot's read-only share (targets/qemu/init.c), where no record could be kept.
"""

from __future__ import annotations

import secrets

from jitterlab.targets import records
from jitterlab.targets.base import Target

RECORD_DIR = "/run/jitterlab-tracing"
LEGACY_DIRS = ("/run/jitterlab/tracing",)  # where an older jitterlab kept them: read, never written
RECORDS = records.Kind(".undo", key="[0-9a-f]{8}")
_KEEP = records.KEEP  # the one script every kind of record is kept with

# Constant script; paths and values come as positional parameters:
# the steps, in threes; prints "failed OP PATH" for a step that did not take
UNDO = r"""
set -f
while [ $# -ge 3 ]; do
  op=$1 path=$2 value=$3; shift 3
  case $op in
    write) printf '%s\n' "$value" > "$path" ;;
    events) : > "$path" && for e in $value; do printf '%s\n' "$e" >> "$path" || exit 1; done ;;
    rmdir) [ ! -d "$path" ] || rmdir "$path" ;;
    umount) if grep -qF " $path tracefs " /proc/mounts || grep -qF " $path debugfs " /proc/mounts; then
              umount "$path"; fi ;;
    *) false ;;
  esac 2>/dev/null || echo "failed $op $path"
done
exit 0
"""


class Changes:
    """The steps that undo what this process changed in one target's tracing, kept on the target."""

    def __init__(self, target: Target) -> None:
        self.target = target
        self.path = RECORDS.path(RECORD_DIR, secrets.token_hex(4))
        self.steps: list[tuple[str, str, str]] = []  # in the order they are carried out
        self._kept = False

    def before(self, *steps: tuple[str, str, str]) -> bool:
        """Record `steps` (carried out before the ones already recorded) on the target, before the
        change they undo is made; False when the record cannot be written (then make no change)."""
        steps_now = [*steps, *self.steps]
        words = [word for step in steps_now for word in step]
        done = records.keep(self.target, RECORD_DIR, self.path, words)
        if done.ok:
            self.steps, self._kept = steps_now, True
        return done.ok

    def undo(self) -> list[str]:
        """Carry out the steps and remove the record (once); what could not be undone."""
        if not self._kept:
            return []
        words = [word for step in self.steps for word in step]
        out = self.target.run(["sh", "-c", UNDO, "sh", *words]).stdout
        records.remove(self.target, self.path)
        self.steps, self._kept = [], False
        return [f"could not {line.split()[1]} {line.split(None, 2)[2]}" for line in out.splitlines()
                if line.startswith("failed ")]


def restore_orphaned(target: Target) -> list[str]:
    """Undo what killed jitterlab processes left changed in the target's tracing (records whose owner
    is gone); describe what was done. tracefs is left mounted while a live process has a record."""
    listed = RECORDS.listed(target, RECORD_DIR, *LEGACY_DIRS)
    dead = [record.path for record in listed if not record.alive()]
    if not dead:
        return []
    live = len(listed) - len(dead)
    out = []
    for path in sorted(dead):
        lines = records.lines_of(target, path)
        steps = [tuple(lines[i:i + 3]) for i in range(0, len(lines) - len(lines) % 3, 3)]
        steps = [s for s in steps if not (live and s[0] == "umount")]
        if steps:
            failed = target.run(["sh", "-c", UNDO, "sh", *[w for s in steps for w in s]]).stdout
            undone = ", ".join(f"{op} {path}" for op, path, _ in steps)
            out.append(f"undid the tracing changes of a killed jitterlab run: {undone}"
                       + (f" ({' '.join(failed.split())})" if failed.strip() else ""))
        records.remove(target, path)
    return out

