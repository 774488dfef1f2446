"""What a tuning is: a change made for one cell's runs, checked before, recorded, and undone after.

Every tuning is one small class against the Target protocol only (run, spawn, put, get), so that it
works on local, ssh and qemu targets alike:

- `check(target, cpus)`: why it cannot be applied there now (permission, the file is missing, the
  kernel lacks the knob, another jitterlab has it applied), in one line; None when it can. It
  changes nothing: `run --dry-run` shows its reason per cell.
- `apply(target, cpus)`: applies it for one cell's runs; the `Applied` record (model/tuning.py)
  says exactly what changed, before and after. A tuning that changes the machine writes its journal
  entry on the machine first (tunings/journal.py), so whatever ends jitterlab, the next one puts it
  back; when applying fails half-way, what was done is undone before the error goes on.
- `restore(target, applied)`: puts back exactly what was there, byte for byte, in reverse order;
  idempotent; returns the problems left, each with its fix (none: all put back).
- `skips(program)`: why it does nothing for an impl's program (timer slack for a SCHED_FIFO
  program, memory locks for one that locks its memory itself); None for a machine tuning.

A tuning reads and writes its files under `root` ("" on a machine; a tree of fake kernel files in
tests: `tuning.at(root)`).
"""

from __future__ import annotations

import contextlib
from abc import ABC, abstractmethod
from typing import ClassVar, Protocol, Self

from jitterlab.model.errors import RunFailed
from jitterlab.model.registry import Registry
from jitterlab.model.tuning import Applied, Cpus, ProgramTraits
from jitterlab.targets.base import Target
from jitterlab.tunings.journal import Journal, undo


class Tuning(Protocol):
    cost: str  # what it takes from the machine or other work, in one line

    def check(self, target: Target, cpus: Cpus) -> str | None:
        """Why it cannot be applied on `target` for these CPUs now; None when it can. Changes nothing."""
        ...

    def apply(self, target: Target, cpus: Cpus) -> Applied:
        """Apply it for one cell's runs; RunFailed (unavailable) with check()'s reason when it cannot."""
        ...

    def restore(self, target: Target, applied: Applied) -> list[str]:
        """Put back what `applied` changed (idempotent); the problems left, each with its fix."""
        ...

    def skips(self, program: ProgramTraits | None) -> str | None:
        """Why it does nothing for an impl whose program is this (None: no Linux program of its own)."""
        ...

    def at(self, root: str) -> Self:
        """The same tuning on the files of a machine's tree under `root`."""
        ...


class Keeper:
    """What apply() has done so far: each state written to the journal before it is made true."""

    def __init__(self, journal: Journal | None) -> None:
        self.journal = journal
        self.applied: Applied | None = None

    def keep(self, applied: Applied) -> Applied:
        if self.journal is not None:
            self.journal.keep(applied)
        self.applied = applied
        return applied


class TuningBase(ABC):
    """A tuning of the registry: its name and help, its own refusals and its change."""

    name: ClassVar[str]
    help: ClassVar[str]
    changes_machine: ClassVar[bool] = True  # False: it changes only how the program starts
    cost: ClassVar[str] = ""  # what it takes from the machine or other work, in one line (`tune` says it)

    def __init__(self, root: str = "") -> None:
        self.root = root

    def at(self, root: str) -> Self:
        return type(self)(root)

    def path(self, path: str) -> str:
        return f"{self.root}{path}"

    @abstractmethod
    def refusal(self, target: Target, cpus: Cpus) -> str | None:
        """The tuning's own reason why it cannot be applied (check() adds the journal's)."""

    @abstractmethod
    def change(self, target: Target, cpus: Cpus, keeper: Keeper) -> Applied:
        """Make the change, each state kept (keeper.keep) before it is made; the final record."""

    def skips(self, program: ProgramTraits | None) -> str | None:
        return None

    def check(self, target: Target, cpus: Cpus) -> str | None:
        why = self.refusal(target, cpus)
        if why is None and self.changes_machine:
            why = self._journal(target).refusal()
        return why

    def apply(self, target: Target, cpus: Cpus) -> Applied:
        why = self.check(target, cpus)
        if why is not None:
            raise refused(self.name, why)
        keeper = Keeper(self._journal(target) if self.changes_machine else None)
        try:
            return self.change(target, cpus, keeper)
        except BaseException:
            if keeper.applied is not None:
                with contextlib.suppress(Exception):  # a lost target: the journal stays for the next one
                    self.restore(target, keeper.applied)
            raise

    def restore(self, target: Target, applied: Applied) -> list[str]:
        problems = undo(target, applied)
        if not problems and self.changes_machine:
            self._journal(target).drop()
        return problems

    def _journal(self, target: Target) -> Journal:
        return Journal(target, self.root, self.name)


TUNINGS: Registry[Tuning] = Registry("tuning")


def register(cls: type[TuningBase]) -> type[TuningBase]:
    """Class decorator: the tuning in TUNINGS under its name, with its help."""
    TUNINGS.add(cls.name, cls.help, cls())
    return cls


def refused(tuning: str, why: str) -> RunFailed:
    """The failure of a tuning the kernel would not take (its cells are unavailable, saying why)."""
    return RunFailed(f"tuning {tuning}: {why}", status="unavailable")
