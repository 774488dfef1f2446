"""What a tuning did to a target for one cell's runs, as a run stores it and the report reads it.

A tuning (jitterlab/tunings/) changes a machine or the way a program is started for the runs of
one cell and puts back exactly what was there afterwards. `Applied` says what it did, step by step
in the order done (a step is undone in reverse order): a file written (`Changed`, with the text it
held before and the text read back after, exactly as the kernel gave them), a directory made
(`Made`), a process started to hold something open for the runs (`Held`), a setting of the program's
own process (`ForProgram`, gone with it). What the kernel refused
is named (`Refused`). How the tuning reaches the program under test, when it does, is an argv
prefix (`launcher`: what must happen to the process before the program starts: its timer slack, its
cgroup) and flags (`flags`: what only the program can do to itself, since memory locks do not
survive exec).

Every record is frozen and round-trips through JSON (`as_json` / `applied_from_json`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

MLOCK_ITSELF, MLOCK_ON_FLAG, MLOCK_NEVER = "itself", "on flag", "never"


@dataclass(frozen=True)
class Cpus:
    """The CPUs of a cell: the program's, and the probe's (none when the probe has no CPU of its own)."""

    program: tuple[int, ...]
    probe: tuple[int, ...] = ()

    @property
    def all(self) -> tuple[int, ...]:
        return tuple(sorted(set(self.program) | set(self.probe)))


@dataclass(frozen=True)
class ProgramTraits:
    """What the program of an impl is, as the tunings that change how it runs need to know: whether
    it runs at SCHED_FIFO (a real-time task has no timer slack), and whether it locks its memory
    itself, on the `--mlock` flag, or never can (a shell script)."""

    realtime: bool
    mlock: str = MLOCK_ON_FLAG  # MLOCK_ITSELF | MLOCK_ON_FLAG | MLOCK_NEVER
    name: str = "its program"  # for the reasons people read: "bash", "c-fifo"


@dataclass(frozen=True)
class Changed:
    """A file written: its text before, the text read back after (None: not yet written, or
    unreadable after), and what to write to put it back when that is not `before` itself (a cgroup's
    subtree_control takes "-cpuset", not the list it held)."""

    path: str
    before: str
    after: str | None = None
    undo: str | None = None

    @property
    def restoring_text(self) -> str:
        return self.before if self.undo is None else self.undo


@dataclass(frozen=True)
class Made:
    """A directory made (a cgroup); removed when the tuning is restored."""

    path: str


@dataclass(frozen=True)
class Held:
    """A process that holds `path` open for the runs (recorded: `marker` and its `pidfile`, as
    targets/processes.spawn_recorded starts it); the value `path` read before and while held."""

    path: str
    marker: str
    pidfile: str
    before: str
    during: str | None = None


@dataclass(frozen=True)
class ForProgram:
    """A setting of the program's own process (its timer slack, its memory locked), made as it
    starts: it ends with the program, there is nothing to undo."""

    what: str
    before: str
    after: str


@dataclass(frozen=True)
class Refused:
    """A write the kernel refused: the file, the text asked for, and the kernel's words."""

    path: str
    wanted: str
    why: str


Step = Changed | Made | Held | ForProgram
_STEPS: dict[str, type] = {"changed": Changed, "made": Made, "held": Held, "for program": ForProgram}


@dataclass(frozen=True)
class Applied:
    """What one tuning did on one target for one cell (see the module's docstring)."""

    tuning: str
    cpus: Cpus
    steps: tuple[Step, ...] = ()
    refused: tuple[Refused, ...] = ()
    launcher: tuple[str, ...] = ()
    flags: tuple[str, ...] = ()
    note: str = ""  # what people should know beside the steps ("already -1: nothing to change")

    @property
    def changed(self) -> tuple[Changed, ...]:
        return tuple(s for s in self.steps if isinstance(s, Changed))

    def as_json(self) -> dict[str, Any]:
        kinds = {cls: name for name, cls in _STEPS.items()}
        return {
            "tuning": self.tuning,
            "cpus": {"program": list(self.cpus.program), "probe": list(self.cpus.probe)},
            "steps": [{"step": kinds[type(s)], **vars(s)} for s in self.steps],
            "refused": [vars(r) for r in self.refused],
            "launcher": list(self.launcher),
            "flags": list(self.flags),
            "note": self.note,
        }


def applied_from_json(data: dict[str, Any]) -> Applied:
    """The record `Applied.as_json` wrote; ValueError when it is not one."""
    try:
        steps = []
        for raw in data["steps"]:
            fields = dict(raw)
            steps.append(_STEPS[fields.pop("step")](**fields))
        return Applied(
            tuning=str(data["tuning"]),
            cpus=Cpus(tuple(data["cpus"]["program"]), tuple(data["cpus"]["probe"])),
            steps=tuple(steps),
            refused=tuple(Refused(**r) for r in data["refused"]),
            launcher=tuple(data["launcher"]),
            flags=tuple(data["flags"]),
            note=str(data.get("note", "")),
        )
    except (KeyError, TypeError, AttributeError) as exc:
        raise ValueError(f"not a record of an applied tuning: {exc}") from None


def launcher(applied: Iterable[Applied]) -> list[str]:
    """The tunings' launchers, one after the other (each execs the rest): what goes before a
    program's CPU pinning and the program. Before the pinning: the isolated partition's launcher
    moves the process to CPUs that nothing outside the partition may be pinned to."""
    return [word for a in applied for word in a.launcher]


def program_flags(applied: Iterable[Applied]) -> list[str]:
    """The flags the tunings ask of the program, after its common flags."""
    return [flag for a in applied for flag in a.flags]
