"""The one machine setting a campaign changes for all of a target's runs: the kernel's RT
throttling, lifted for the runs of a target whose probe busy-polls at SCHED_FIFO, and put back. The
knob is read and written by tunings/rt_unthrottled.py, whose tuning lifts it for one cell's runs.

With the kernel's default `sched_rt_runtime_us = 950000` a busy SCHED_FIFO task loses 50 ms of
every second: the vpin observer is blind 5 % of the time, exactly when the machine is busiest.
`campaign.rt_throttling = "lift"` (the default) writes -1 for the duration of a target's runs
where jitterlab may (it can write the file: root; not in a container, whose kernel setting
belongs to its host) and where it is needed (a cell's probe polls on a CPU of its own); "keep"
never touches it. What was done is recorded in every run's settings and the target's sysinfo.

Restoring never depends on this process ending well. Before writing -1 a restore record
`/run/jitterlab-rt-throttle/<owner>.prev` is written (kept, listed and removed by
targets/records.py), holding the value to put back (one place per machine, whatever the workdir:
every jitterlab lifting it there sees the others; /run is emptied at boot, when the kernel forgets
the change too); `restore()` puts it back and removes the record on every path of the runner (end,
error, Ctrl-C, SIGTERM), and `restore_orphaned` (called by execution/sweep.py before a campaign)
puts back the value of a record whose jitterlab was killed. Two jitterlab processes on one machine
share the original: the second copies it from the first's record, and only the last one to finish
writes it back.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field

from jitterlab.model.facts import SystemFacts, ThrottleRecord
from jitterlab.targets import records
from jitterlab.targets.base import Target
from jitterlab.tunings.rt_unthrottled import LIFTED_US, SYSCTL, read_runtime, write_runtime

# on the target, beside tracing's and the tunings' records and like them not under /run/jitterlab,
# which in jitterlab's qemu guests is the boot's read-only share (targets/qemu/init.c)
RECORD_DIR = "/run/jitterlab-rt-throttle"
LEGACY_DIRS = ("/run/jitterlab/rt-throttle",)  # where an older jitterlab kept them: read, never written
SETTINGS = ("lift", "keep")
RECORDS = records.Kind(".prev")  # one a jitterlab: the value it puts back
_KEEP = records.KEEP  # the one script every kind of record is kept with


@dataclass
class ThrottleChange:
    """What a campaign did to one target's RT throttling, and the means to undo it."""

    target: Target
    setting: str  # "lift" or "keep", from campaign.rt_throttling
    before_us: int | None  # sched_rt_runtime_us when the campaign began (None: unreadable)
    changed: bool = False  # this process wrote -1 (and holds a restore record)
    why: str = ""  # when not changed: why
    original_us: int | None = None  # the value a restore puts back
    restored: bool = False
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def during_us(self) -> int | None:
        return LIFTED_US if self.changed else self.before_us

    def record(self) -> ThrottleRecord:
        """The change as every run records it (its settings' rt_throttling) and sysinfo."""
        done = {"restored_to_us": self.original_us} if self.changed else {"why": self.why}
        return ThrottleRecord.given(setting=self.setting, changed=self.changed,
                                    runtime_before_us=self.before_us, runtime_during_us=self.during_us,
                                    **done)

    def restore(self) -> str | None:
        """Put the original value back (once; later calls do nothing); None, or why it could not
        (the record stays, and the next campaign's sweep tries again)."""
        with self._lock:
            if not self.changed or self.restored:
                return None
            mine = RECORDS.path(RECORD_DIR)
            # the last one out puts the original back
            if not _live_others(RECORDS.listed(self.target, RECORD_DIR)):
                got = _write(self.target, int(self.original_us or 0))
                if got != self.original_us:
                    return (f"could not restore {SYSCTL} to {self.original_us} (it reads {got}); "
                            f"write it as root: sysctl -w kernel.sched_rt_runtime_us={self.original_us}")
            records.remove(self.target, mine)
            self.restored = True
            return None


def lift(target: Target, setting: str, *, needed: bool, info: SystemFacts) -> ThrottleChange:
    """Lift RT throttling on `target` when the setting, the need and the machine allow it; the
    returned change says what was done, or why nothing was."""
    before, writable = _read(target)
    change = ThrottleChange(target, setting, before)
    if setting != "lift":
        change.why = 'campaign.rt_throttling = "keep"'
    elif not needed:
        change.why = "no cell of this target busy-polls at SCHED_FIFO"
    elif before is None:
        change.why = f"{SYSCTL} cannot be read"
    elif info.in_container:
        change.why = f"a container ({info.container}): the kernel's setting belongs to its host"
    elif not writable:
        root = info.user_id == 0  # then /proc/sys is read-only: being root would not help
        change.why = f"{SYSCTL} is not writable here" + (
            "" if root else " (run jitterlab as root to lift it)")
    elif before == LIFTED_US and not _live_others(RECORDS.listed(target, RECORD_DIR)):
        change.why = "already lifted"
    else:
        others = _live_others(RECORDS.listed(target, RECORD_DIR))
        original = _kept_value(target, others[0].path) if others else before
        if original is None:  # another jitterlab's record is unreadable: its owner restores
            change.why = "lifted by another jitterlab run"
            return change
        path = RECORDS.path(RECORD_DIR)
        done = records.keep(target, RECORD_DIR, path, [str(original)])
        if done.rc != 0:
            change.why = f"no restore record could be written in {RECORD_DIR}"
            return change
        if _write(target, LIFTED_US) != LIFTED_US:
            records.remove(target, path)
            change.why = f"writing {LIFTED_US} to {SYSCTL} failed"
            return change
        change.changed, change.original_us = True, original
    return change


def restore_orphaned(target: Target) -> list[str]:
    """Put back the value recorded by jitterlab runs that were killed while they had lifted RT
    throttling (their owner is gone); describe what was done."""
    listed = RECORDS.listed(target, RECORD_DIR, *LEGACY_DIRS)
    dead = [record.path for record in listed if not record.alive()]
    if not dead:
        return []
    out = []
    if not _live_others([record for record in listed if record.directory == RECORD_DIR]):
        value = next((v for path in dead if (v := _kept_value(target, path)) is not None), None)
        if value is not None:
            got = _write(target, value)
            if got != value:  # keep the records: a later sweep, as root, tries again
                return [f"could not restore {SYSCTL} to {value} (a killed jitterlab run had lifted it); "
                        f"run as root, or sysctl -w kernel.sched_rt_runtime_us={value}"]
            out.append(f"restored {SYSCTL} to {value}: a killed jitterlab run had lifted RT throttling")
    records.remove(target, *dead)
    return out


def _live_others(listed: list[records.Record]) -> list[records.Record]:
    """The records of other jitterlab processes that still run, oldest name first."""
    return sorted((r for r in listed if not r.mine and r.alive()), key=lambda r: r.path)


def _kept_value(target: Target, path: str) -> int | None:
    text = "\n".join(records.lines_of(target, path)).strip()
    return int(text) if re.fullmatch(r"-?\d+", text) else None


def _read(target: Target) -> tuple[int | None, bool]:
    return read_runtime(target, SYSCTL)


def _write(target: Target, value: int) -> int | None:
    """Write `value` to the sysctl; what it reads afterwards."""
    return write_runtime(target, value, SYSCTL)
