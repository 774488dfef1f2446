"""A target with a real-time unit: any target kind, wrapped, with the unit's loader beside it.

The `unit` table of a [[target]] is taken off its options before the kind sees them; the target
the kind opens is wrapped so that it has the CommandsUnit capability, and everything else of it
(its capabilities included) is passed on. The unit is loaded when a run first needs it and put
back when the target closes, before the target itself closes. An emulated unit beside an emulated
board gives the board its serial port before the board boots (`board_devices`)."""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Mapping
from typing import Protocol

from jitterlab.model.errors import UserError
from jitterlab.programs.unit import UNIT_HELP, UnitSpec, parse_unit
from jitterlab.targets.base import Target
from jitterlab.targets.capabilities import Capability, CommandsUnit, UnitLink, Wrapper
from jitterlab.targets.unit.emulated import EmulatedUnit
from jitterlab.targets.unit.remoteproc import RemoteprocUnit
from jitterlab.targets.unit.serial import SerialUnit

KEY = "unit"


class Loader(Protocol):
    def board_devices(self) -> tuple[str, ...]: ...

    def facts(self) -> dict[str, object]: ...

    def checks(self, target: Target) -> list[tuple[str, str, str | None]]: ...

    def acquire(self, target: Target) -> UnitLink: ...

    def release(self, target: Target | None) -> str | None: ...


def loader_for(spec: UnitSpec, where: str, target_kind: str) -> Loader:
    if spec.loader == "emulated":
        return EmulatedUnit(spec, where, board=target_kind != ON_CONTROLLER)
    if spec.loader == "remoteproc":
        return RemoteprocUnit(spec, where)
    return SerialUnit(spec, where)


class UnitTarget(Wrapper, CommandsUnit):
    """The wrapped target, and its unit."""

    def __init__(self, inner: Target, loader: Loader) -> None:
        super().__init__(inner)
        self._loader = loader
        self._lock = threading.Lock()

    def unit_ready(self) -> UnitLink:
        with self._lock:
            return self._loader.acquire(self.inner)

    def unit_facts(self) -> dict[str, object]:
        return self._loader.facts()

    def unit_checks(self) -> list[tuple[str, str, str | None]]:
        return self._loader.checks(self.inner)

    def close(self) -> None:
        try:
            with self._lock:
                problem = self._loader.release(self.inner)
        except Exception as exc:  # the board went away: its restore record stays there
            problem = f"could not put the unit back ({exc}); the next jitterlab on this board does"
        finally:
            self.inner.close()
        if problem:
            print(f"target {self.name!r}: {problem}", file=sys.stderr, flush=True)


def without(options: Mapping[str, object]) -> dict[str, object]:
    """A [[target]]'s options but its unit table: what its kind reads."""
    return {k: v for k, v in options.items() if k != KEY}


# where each loader can reach a unit: an emulated one is started on this machine and wired to it or
# to an emulated board; a remoteproc core is the board's own (a qemu board has none)
TARGET_KINDS = {
    "emulated": ("local", "qemu"),
    "serial": ("local", "ssh", "labgrid"),
    "remoteproc": ("local", "ssh", "labgrid"),
}
ON_CONTROLLER = "local"  # the kind whose target is the machine jitterlab runs on


def read_unit(value: object, where: str, kind: str) -> UnitSpec | None:
    """The unit table of a [[target]] of `kind`, read (`where`: "file: target[0].unit"): UserError
    naming the key and the fix, a unit the kind cannot reach included."""
    spec = parse_unit(value, where, on_controller=kind == ON_CONTROLLER)
    if spec is not None and kind not in TARGET_KINDS[spec.loader]:
        kinds = " or ".join(f'"{k}"' for k in TARGET_KINDS[spec.loader])
        why = ("an emulated unit runs on this machine, wired to it or to an emulated board"
               if spec.emulated else 'an emulated board has no such unit: use kind = "emulated"')
        raise UserError(f"{where}.kind: a {spec.loader} unit is reached from a target of kind {kinds}, not "
                        f"{kind!r}; {why}")
    return spec


def declared(kind: str, options: Mapping[str, object], where: str) -> UnitSpec | None:
    """The unit table of a [[target]] of `kind`, read (`where`: "file: target[0]")."""
    return read_unit(options.get(KEY), f"{where}.{KEY}", kind)


def capabilities(spec: UnitSpec | None) -> frozenset[type[Capability]]:
    """What a unit table makes a target offer."""
    return frozenset() if spec is None else frozenset({CommandsUnit})


def check(kind: str, check_kind: Callable[[Mapping[str, object], str], object]
          ) -> Callable[[Mapping[str, object], str], object]:
    """The option check of `kind` with the unit table checked first (`where`: "file: target[0]")."""

    def checked(options: Mapping[str, object], where: str) -> object:
        declared(kind, options, where)
        return check_kind(without(options), where)

    return checked


def with_option(options: Callable[[], Mapping[str, str]]) -> Callable[[], Mapping[str, str]]:
    """A kind's [[target]] keys and the unit table, for `jitterlab list`."""
    return lambda: {**options(), KEY: UNIT_HELP}


def opener(kind: str, open_kind: Callable[..., Target]) -> Callable[..., Target]:
    """The factory of `kind`: its target, wrapped with its unit when it has one. `open_kind` takes
    (name, options, where) and, for a kind that can wire an emulated unit to its board, devices."""

    def factory(name: str, options: Mapping[str, object], where: str | None = None) -> Target:
        spec = declared(kind, options, where or f"target {name!r}")
        if spec is None:
            return open_kind(name, without(options), where)
        loader = loader_for(spec, f"{where or f'target {name!r}'}.{KEY}", kind)
        devices = loader.board_devices()
        try:
            inner = (open_kind(name, without(options), where, devices) if devices
                     else open_kind(name, without(options), where))
        except BaseException:
            loader.release(None)
            raise
        return UnitTarget(inner, loader)

    return factory
