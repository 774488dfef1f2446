"""A core of the board's SoC that Linux starts with remoteproc (the kernel's ABI:
/sys/class/remoteproc/remoteprocN/{name,firmware,state}; firmware is a file name under /lib/firmware
that can be changed only while the core is stopped; "start" on a running core is refused).

jitterlab finds the core by its name, copies its firmware to /lib/firmware under a name of its own,
stops the core if it runs, starts it with that firmware, and waits until it runs and its RPMsg tty
appeared. What the core ran before (its firmware and state) is put back when the target closes, on
every path: a restore record on the board (/run/jitterlab-remoteproc/<owner>.prev, written before
anything changes; targets/records.py) lets the next jitterlab on that board put back what a killed
one had changed, as RT throttling is put back (execution/rt_throttle.py). A core that runs another firmware is
stopped only when the campaign says it may (`replace = true`).

Every change goes through one constant script with its data as positional parameters.
"""

from __future__ import annotations

from pathlib import Path

from jitterlab.model.errors import RunFailed
from jitterlab.programs.unit import UnitSpec
from jitterlab.targets import records
from jitterlab.targets.base import Target
from jitterlab.targets.capabilities import UnitLink
from jitterlab.targets.processes import owner_tag
from jitterlab.targets.unit import firmware

# where the kernel and jitterlab keep things on the board (module constants, so tests can point
# them at a directory that plays the kernel)
CLASS_DIR = "/sys/class/remoteproc"
FIRMWARE_DIR = "/lib/firmware"
# not under /run/jitterlab, which in jitterlab's qemu guests is the boot's read-only share
RECORD_DIR = "/run/jitterlab-remoteproc"
LEGACY_DIRS = ("/run/jitterlab/remoteproc",)  # where an older jitterlab kept them: read, never written
READY_TIMEOUT_S = 10
RUNS = ("running", "attached")  # states in which a core runs a firmware
RECORDS = records.Kind(".prev")  # its lines: the core's directory, firmware and state before, ours

# $1: the class directory, $2: the core's name. "found DIR" / "state S" / "firmware F", else the
# names of the cores there are ("other NAME") and status 3.
_FIND = r"""
for d in "$1"/remoteproc*; do
  [ -r "$d/name" ] || continue
  n=$(cat "$d/name")
  if [ "$n" = "$2" ]; then
    echo "found $d"
    echo "state $(cat "$d/state" 2>/dev/null)"
    echo "firmware $(cat "$d/firmware" 2>/dev/null)"
    [ -w "$3" ] && echo "writable"
    exit 0
  fi
  echo "other $n"
done
exit 3
"""
# waits up to 5 s for core $1 to be in state $2 (a driver may finish a stop after the write returns)
_SETTLE = r"""
settle() {
  i=0
  while [ "$(cat "$1/state")" != "$2" ]; do i=$((i + 1)); [ "$i" -gt 50 ] && return 1; sleep 0.1; done
}
"""
# $1 core dir, $2 record dir, $3 record, $4 firmware dir, $5 firmware name, $6 the staged ELF,
# $7 the firmware before, $8 the state before, $9 the tty, ${10} tenths of a second to wait
_LOAD = _SETTLE + r"""
mkdir -p "$2" && printf '%s\n%s\n%s\n%s\n' "$1" "$7" "$8" "$5" > "$3.tmp" && mv -f "$3.tmp" "$3" ||
  { echo "cannot write the restore record $3 (run as root)" >&2; exit 3; }
cp -- "$6" "$4/$5" 2>/dev/null ||
  { echo "cannot write $4/$5: the firmware directory is not writable (run as root)" >&2; rm -f "$3"; exit 4; }
s=$(cat "$1/state")
if [ "$s" = running ] || [ "$s" = attached ]; then
  echo stop > "$1/state" 2>/dev/null || { echo "the kernel refused to stop $1 ($s)" >&2; exit 5; }
  settle "$1" offline || { echo "$1 did not stop: it is $(cat "$1/state")" >&2; exit 5; }
fi
printf '%s' "$5" > "$1/firmware" 2>/dev/null || { echo "the kernel refused firmware $5 for $1" >&2; exit 6; }
k() { dmesg 2>/dev/null | tail -n 2 | tr '\n' ' '; }
echo start > "$1/state" 2>/dev/null || { echo "the kernel refused to start $1 with $5: $(k)" >&2; exit 7; }
i=0
until [ "$(cat "$1/state")" = running ] && [ -e "$9" ]; do
  i=$((i + 1))
  if [ "$i" -gt "${10}" ]; then
    [ -e "$9" ] && t=present || t=absent
    echo "the core is $(cat "$1/state") and $9 is $t after $((${10} / 10)) s: $(k)" >&2
    exit 8
  fi
  sleep 0.1
done
"""
# $1 core dir, $2 firmware before, $3 state before, $4 firmware dir, $5 our firmware's name, $6 record
_RESTORE = _SETTLE + r"""
s=$(cat "$1/state" 2>/dev/null)
if [ "$s" = running ] || [ "$s" = attached ]; then echo stop > "$1/state" 2>/dev/null; settle "$1" offline; fi
[ -n "$2" ] && printf '%s' "$2" > "$1/firmware" 2>/dev/null
bad=0
if [ "$3" = running ] || [ "$3" = attached ]; then
  { echo start > "$1/state" && settle "$1" running; } 2>/dev/null ||
    { echo "could not start $1 again with $2" >&2; bad=1; }
fi
rm -f -- "$4/$5" "$6"
exit $bad
"""


class RemoteprocUnit:
    """A remoteproc core: acquire() loads jitterlab's firmware, release() puts back what ran before."""

    def __init__(self, spec: UnitSpec, where: str) -> None:
        self.spec, self.where = spec, where
        self._link: UnitLink | None = None
        self._before: tuple[str, str, str] | None = None  # (core dir, firmware, state) while loaded
        self._name = ""
        self._firmware = firmware.Built(spec.profile)
        self._core_dir = ""

    def board_devices(self) -> tuple[str, ...]:
        return ()

    def facts(self) -> dict[str, object]:
        facts: dict[str, object] = {
            "unit_kind": "remoteproc", "unit_profile": self.spec.profile.name, "unit_core": self.spec.core,
            "unit_tty": self.spec.tty, "unit_pin": self.spec.profile.pin}
        if self._core_dir:
            facts["unit_remoteproc"] = self._core_dir
        facts.update(self._firmware.facts())
        if self._name:
            facts["unit_firmware"] = f"{FIRMWARE_DIR}/{self._name}"
        if self._before is not None:  # what the core was before: a firmware it ran was stopped
            before = f"{self._before[1] or '(none)'} ({self._before[2]})"
            facts["unit_replaced" if self._before[2] in RUNS else "unit_core_before"] = before
        return facts

    def checks(self, target: Target) -> list[tuple[str, str, str | None]]:
        found = _find(target, self.spec.core)
        if isinstance(found, str):
            return [("unit", found, "load the SoC's remoteproc driver (a vendor kernel has it), or set "
                                    "unit.core")]
        core_dir, state, fw, writable = found
        out: list[tuple[str, str, str | None]] = [
            ("unit", f"remoteproc core {self.spec.core!r} at {core_dir}: {state}"
                     + (f", firmware {fw}" if fw else ""),
             "set unit.replace = true to let jitterlab replace its firmware for a campaign"
             if state in RUNS and not self.spec.replace else None),
            ("unit firmware directory", FIRMWARE_DIR + (" is writable" if writable else " is not writable"),
             None if writable else "run jitterlab as root on the board (remoteproc loads from there)"),
        ]
        tty = target.run(["test", "-e", self.spec.tty])
        there = "is there" if tty.ok else "appears when the firmware runs"
        out.append(("unit tty", f"{self.spec.tty} {there}", None))
        return out

    def acquire(self, target: Target) -> UnitLink:
        if self._link is not None:
            return self._check(target)
        for problem in restore_orphaned(target):
            raise RunFailed(f"{self.where}: {problem}")
        found = _find(target, self.spec.core)
        if isinstance(found, str):
            raise RunFailed(f"{self.where}.core: {found}; set unit.core to one of them, or load the "
                            "SoC's remoteproc driver (a vendor kernel has it)", status="unavailable")
        core_dir, state, before_fw, _ = found
        if state in RUNS and not self.spec.replace:
            raise RunFailed(f"{self.where}.replace: remoteproc core {self.spec.core!r} ({core_dir}) is "
                            f"{state} with firmware {before_fw or '(unknown)'}; set unit.replace = true to "
                            "let jitterlab stop it for the campaign (it is started again with its firmware "
                            "after)")
        built = self._firmware.get()
        self._name = f"jitterlab-{self.spec.profile.name}-{built.sha256[:12]}.elf"
        staged = f"{target.workdir}/{self._name}"
        target.put(built.path, staged)
        self._core_dir = core_dir
        record = f"{RECORD_DIR}/{owner_tag()}.prev"
        done = target.run(["sh", "-c", _LOAD, "sh", core_dir, RECORD_DIR, record, FIRMWARE_DIR,
                           self._name, staged, before_fw, state, self.spec.tty, str(READY_TIMEOUT_S * 10)],
                          timeout_s=READY_TIMEOUT_S + 60)
        target.run(["rm", "-f", staged])
        if done.rc not in (0, 3, 4):  # it changed the core: put back what was there
            self._before = (core_dir, before_fw, state)
        if not done.ok:
            said = done.stderr.strip().splitlines()[-1] if done.stderr.strip() else f"status {done.rc}"
            problem = self.release(target)
            raise RunFailed(f"{self.where}: loading {self._name} on remoteproc core {self.spec.core!r} "
                            f"failed: {said}" + (f"; {problem}" if problem else ""))
        self._before = (core_dir, before_fw, state)
        self._link = UnitLink(self.spec.tty, self.spec.baud, self.facts())
        return self._link

    def _check(self, target: Target) -> UnitLink:
        """The loaded core, still running ours (a crash, or someone else stopping it, fails the run)."""
        assert self._link is not None
        state = target.run(["cat", f"{self._core_dir}/state"]).stdout.strip()
        if state != "running":
            raise RunFailed(f"{self.where}: remoteproc core {self.spec.core!r} is {state or 'gone'}, not "
                            "running jitterlab's firmware any more (dmesg tells why)")
        return self._link

    def release(self, target: Target | None) -> str | None:
        """Put back what the core ran before (idempotent); None, or why it could not (the record
        stays on the board for the next jitterlab there)."""
        if self._before is None or target is None:
            return None
        core_dir, fw, state = self._before
        done = target.run(["sh", "-c", _RESTORE, "sh", core_dir, fw, state, FIRMWARE_DIR, self._name,
                           f"{RECORD_DIR}/{owner_tag()}.prev"], timeout_s=60)
        self._before, self._link = None, None
        if not done.ok:
            return (f"could not put remoteproc core {self.spec.core!r} back ({done.stderr.strip()}); as "
                    f"root: echo {fw} > {core_dir}/firmware; echo start > {core_dir}/state")
        return None


def _find(target: Target, core: str) -> tuple[str, str, str, bool] | str:
    """(core dir, state, firmware, firmware dir writable), or why there is no such core."""
    done = target.run(["sh", "-c", _FIND, "sh", CLASS_DIR, core, FIRMWARE_DIR])
    lines = done.stdout.splitlines()
    if done.ok:
        field = {line.split(" ", 1)[0]: line.split(" ", 1)[1] if " " in line else "" for line in lines}
        return field["found"], field.get("state", ""), field.get("firmware", ""), "writable" in field
    others = [line.split(" ", 1)[1] for line in lines if line.startswith("other ")]
    there = f"its cores are {', '.join(others)}" if others else f"it has none ({CLASS_DIR} is empty)"
    return f"target has no remoteproc core named {core!r}: {there}"


def restore_orphaned(target: Target) -> list[str]:
    """Put back what killed jitterlab runs left on remoteproc cores (records whose owner is gone);
    the problems that remain, each with its fix."""
    problems = []
    for record in RECORDS.listed(target, RECORD_DIR, *LEGACY_DIRS):
        if record.alive():
            continue
        lines = records.lines_of(target, record.path)
        if len(lines) < 4:
            records.remove(target, record.path)
            continue
        core_dir, fw, state, ours = lines[:4]
        done = target.run(["sh", "-c", _RESTORE, "sh", core_dir, fw, state, FIRMWARE_DIR,
                           Path(ours).name, record.path], timeout_s=60)
        if not done.ok:
            problems.append(f"a killed jitterlab run left remoteproc core {core_dir} changed and it cannot "
                            f"be put back ({done.stderr.strip()}); as root: echo {fw} > {core_dir}/firmware")
    return problems

