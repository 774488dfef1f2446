"""The journal of tunings applied on a machine, kept on that machine, and the undoing of its steps.

A tuning writes its entry before it changes anything (the text each file held, the directory it
will make, the process it will start) and again once done, so that whatever ends jitterlab (Ctrl-C,
a failed run, a lost target, kill -9) the next jitterlab on that machine finds what is left applied
and puts it back (`restore_orphaned`: a resumed campaign does it before its first run, right after
execution/sweep.py stopped the leftovers' processes).

The journal is one place per machine, whatever jitterlab's workdir: /run/jitterlab-tunings, its
entries kept, listed and removed by targets/records.py as every kind of record is (beside
tracing's records, and like them not under /run/jitterlab, which in jitterlab's qemu guests is the
boot's read-only share: targets/qemu/init.c), one entry per owner (`processes.owner_tag`) and tuning. Every
jitterlab on the machine sees the others' entries (a tuning applied by a live one is refused to
the others), and an entry names the boot it was made in: /run is emptied at boot, when the kernel
forgets the changes too, and on a machine where it is not, an entry of another boot is dropped,
never "restored" over a fresh kernel's settings.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from jitterlab.model.errors import RunFailed
from jitterlab.model.tuning import Applied, Changed, Held, Made, Step, applied_from_json
from jitterlab.targets import records
from jitterlab.targets.base import Target
from jitterlab.tunings import files

JOURNAL_DIR = "/run/jitterlab-tunings"  # not under /run/jitterlab: a qemu guest's read-only boot share
BOOT_ID = "/proc/sys/kernel/random/boot_id"
ENTRIES = records.Kind(".json", key="[^~/]+")  # <owner>~<tuning>.json: the boot id, then the JSON
# the scripts every kind of record is kept and looked for with
_KEEP, _LOOK = records.KEEP, records.LOOK
# $1 the pidfile of a held process, $2 its marker: the process stopped (TERM, then KILL) only while
# it still carries the marker (a pid is reused), its record removed
_STOP = r"""
p=$(cat -- "$1" 2>/dev/null) || exit 0
case $p in ''|*[!0-9]*) rm -f -- "$1"; exit 0 ;; esac
alive() { grep -q -a -F -e "JITTERLAB_LIVE=$1" "/proc/$p/environ" 2>/dev/null; }
for sig in TERM KILL; do
  alive "$2" || break
  kill -s "$sig" "$p" 2>/dev/null
  i=0
  while alive "$2" && [ "$i" -lt 40 ]; do sleep 0.05; i=$((i + 1)); done
done
if alive "$2"; then echo "pid $p still runs"; exit 1; fi
rm -f -- "$1"
exit 0
"""
# $1 a directory to remove (a cgroup): the kernel's words when it stays
_RMDIR = r"""
[ -e "$1" ] || exit 0
rmdir -- "$1" 2>&1 | sed 's/.*: //'
[ ! -e "$1" ]
"""


@dataclass(frozen=True)
class Journal:
    """This jitterlab's entry for one tuning on one machine."""

    target: Target
    root: str  # "" on a real machine; a fake machine's tree in tests
    tuning: str

    @property
    def directory(self) -> str:
        return f"{self.root}{JOURNAL_DIR}"

    @property
    def path(self) -> str:
        return ENTRIES.path(self.directory, self.tuning)

    def keep(self, applied: Applied) -> None:
        """Write the entry (whole, then renamed into place); RunFailed when it cannot be."""
        record = json.dumps(applied.as_json(), sort_keys=True)
        done = records.keep(self.target, self.directory, self.path, [record], head=f"{self.root}{BOOT_ID}")
        if not done.ok:
            raise RunFailed(f"tuning {self.tuning}: its journal {self.path} cannot be written "
                            f"({done.stderr.strip() or 'no reason given'}); run jitterlab as root",
                            status="unavailable")

    def drop(self) -> None:
        records.remove(self.target, self.path)

    def refusal(self) -> str | None:
        """Why this tuning cannot be journaled here now: the directory cannot be written, or another
        jitterlab that still runs has it applied on this machine."""
        entries, writable = ENTRIES.looked(self.target, self.directory)
        if not writable:
            return f"its journal cannot be kept in {self.directory} (not writable: run jitterlab as root)"
        for entry in entries:
            if entry.key == self.tuning and not entry.mine and entry.alive():
                pid = entry.owner.split("~")[1]
                return f"another jitterlab (pid {pid}) has it applied on this machine now"
        return None


def restore_orphaned(target: Target, root: str = "") -> list[str]:
    """Put back the tunings that jitterlab runs which are gone left applied on `target` (their
    entries in its journal); what was done, and the problems left, each with its fix."""
    directory = f"{root}{JOURNAL_DIR}"
    boot_file = f"{root}{BOOT_ID}"
    found = files.read(target, [boot_file], within=directory)
    boot = (found[boot_file].text or "").strip() if boot_file in found else ""
    out = []
    for path, entry in sorted(found.items()):
        half = ENTRIES.named(path.removesuffix(".tmp")) if path.endswith(".tmp") else None
        if half is not None and not half.alive():
            # killed while writing: the entry it was to replace is whole (written before each change)
            records.remove(target, path)
            continue
        kept = ENTRIES.named(path) if path != boot_file else None
        if kept is None or entry.text is None or kept.alive():
            continue
        tuning = kept.key
        made_in, _, record = entry.text.partition("\n")
        if boot and made_in.strip() and made_in.strip() != boot:
            records.remove(target, path)
            out.append(f"dropped tuning {tuning} of a jitterlab run gone before this machine last "
                       "booted (the kernel forgot its changes at boot)")
            continue
        try:
            applied = applied_from_json(json.loads(record))
        except ValueError as exc:
            out.append(f"tuning {tuning}: the journal entry {path} does not read ({exc}); what it "
                       f"changed is not known: check by hand, then rm {path}")
            continue
        problems = undo(target, applied)
        if problems:
            out += [f"tuning {tuning} left applied by a killed jitterlab run: {p}" for p in problems]
            continue
        records.remove(target, path)
        out.append(f"restored tuning {tuning} left applied by a killed jitterlab run "
                   f"({_counted(applied.steps)})")
    return out


def undo(target: Target, applied: Applied) -> list[str]:
    """Undo the steps of `applied` in reverse order; the problems left (none: all put back)."""
    made = [s.path for s in applied.steps if isinstance(s, Made)]
    problems: list[str] = []
    batch: list[Changed] = []
    for step in reversed(applied.steps):
        if isinstance(step, Changed):
            if not any(step.path.startswith(m + "/") for m in made):  # gone with its directory
                batch.append(step)
            continue
        problems += _put_back(target, batch)
        batch = []
        if isinstance(step, Held):
            stopped = target.run(["sh", "-c", _STOP, "sh", step.pidfile, step.marker])
            if not stopped.ok:
                problems.append(f"the process holding {step.path} ({stopped.stdout.strip()}) could not "
                                f"be stopped: kill it as root")
        elif isinstance(step, Made):
            removed = target.run(["sh", "-c", _RMDIR, "sh", step.path])
            if not removed.ok:
                problems.append(f"{step.path} could not be removed ({removed.stdout.strip() or 'refused'}):"
                                f" as root, move its tasks to the parent's cgroup.procs and rmdir it")
    return problems + _put_back(target, batch)


def _put_back(target: Target, steps: list[Changed]) -> list[str]:
    """Write back, in the order given, the files that no longer hold their text of before."""
    if not steps:
        return []
    now = files.read(target, [s.path for s in steps])
    todo = [s for s in steps if now[s.path].text != s.before]
    written = files.write(target, [(s.path, s.restoring_text) for s in todo])
    problems = []
    for step in todo:
        got = written[step.path]
        if got.after != step.before:
            said = f"refused: {got.refused}" if got.refused else f"it reads {got.after!r}"
            problems.append(f"{step.path} could not be put back to {step.before!r} ({said}); "
                            f"as root: echo {step.restoring_text.strip()} > {step.path}")
    return problems


def _counted(steps: tuple[Step, ...]) -> str:
    kinds = [(Changed, "file", "files"), (Made, "directory", "directories"),
             (Held, "process", "processes")]
    counts = [(sum(isinstance(s, kind) for s in steps), one, many) for kind, one, many in kinds]
    shown = [f"{n} {one if n == 1 else many}" for n, one, many in counts if n]
    return ", ".join(shown) or "nothing changed yet"
