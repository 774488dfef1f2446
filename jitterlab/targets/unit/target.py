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

from jitterlab.programs.unit import UnitSpec, parse_unit
from jitterlab.targets.base import Target
from jitterlab.targets.capabilities import CommandsUnit, UnitLink, Wrapper
from jitterlab.targets.unit.emulated import EmulatedUnit
from jitterlab.targets.unit.remoteproc import RemoteprocUnit
from jitterlab.targets.unit.serial import SerialUnit

KEY = "unit"
# how a kind opens its target: (name, options without `unit`, qemu devices for a board) -> Target
Opener = Callable[[str, Mapping[str, object], tuple[str, ...]], Target]


class Loader(Protocol):
    def board_devices(self) -> tuple[str, ...]: ...

    def facts(self) -> dict[str, object]: ...

    def checks(self, target: Target) -> list[tuple[str, str, str | None]]: ...

    def acquire(self, target: Target) -> UnitLink: ...

    def release(self, target: Target | None) -> str | None: ...


def loader_for(spec: UnitSpec, where: str, target_kind: str) -> Loader:
    if spec.loader == "emulated":
        return EmulatedUnit(spec, where, board=target_kind != "local")
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


def check(kind: str, check_kind: Callable[[Mapping[str, object], str], object] | None
          ) -> Callable[[Mapping[str, object], str], object]:
    """The option check of `kind` with the unit table checked first (`where`: "file: target[0]")."""

    def checked(options: Mapping[str, object], where: str) -> object:
        parse_unit(options.get(KEY), f"{where}.{KEY}", kind)
        rest = {k: v for k, v in options.items() if k != KEY}
        return check_kind(rest, where) if check_kind is not None else None

    return checked


def opener(kind: str, open_kind: Opener) -> Callable[[str, Mapping[str, object]], Target]:
    """The factory of `kind`: its target, wrapped with its unit when it has one."""

    def factory(name: str, options: Mapping[str, object]) -> Target:
        where = f"target {name!r}.{KEY}"
        spec = parse_unit(options.get(KEY), where, kind)
        rest = {k: v for k, v in options.items() if k != KEY}
        if spec is None:
            return open_kind(name, rest, ())
        loader = loader_for(spec, where, kind)
        try:
            inner = open_kind(name, rest, loader.board_devices())
        except BaseException:
            loader.release(None)
            raise
        return UnitTarget(inner, loader)

    return factory

