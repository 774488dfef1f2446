"""Explicit registries of plug-ins, keyed by the names users type in campaigns."""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Generic, TypeVar

from jitterlab.model.errors import UserError, shown

T = TypeVar("T")


def did_you_mean(name: object, known) -> str:
    """"did you mean 'x'? " for the known name closest to a mistyped one, else ""."""
    close = difflib.get_close_matches(str(name)[:100], [str(k) for k in known], n=1)
    return f"did you mean {close[0]!r}? " if close else ""


NEAREST = 3  # names an error offers for an unknown one, when there are many more
METRICS_LISTED = "`jitterlab show RUN_ID` lists every metric of a run"  # for an unknown metric's error


def nearest(name: object, known: Iterable[object], n: int = NEAREST) -> list[str]:
    """The `n` known names most like `name`, the likest first (however unlike: a list to choose from)."""
    return difflib.get_close_matches(str(name)[:100], sorted({str(k) for k in known}), n=n, cutoff=0.0)


def offered(name: object, known: Iterable[object], listing: str = "") -> str:
    """The known names an error offers for an unknown `name`: every one when they are few, else the
    nearest NEAREST, how many there are and `listing`, what lists them all: "a, b, c" / "a, b, c
    (the nearest of 33; see `jitterlab show RUN_ID`)"."""
    names = sorted({str(k) for k in known})
    if len(names) <= 2 * NEAREST:
        return ", ".join(names) or "none"
    where = f"; {listing}" if listing else ""
    return f"{', '.join(nearest(name, names))} (the nearest of {len(names)}{where})"


@dataclass(frozen=True)
class Entry(Generic[T]):
    name: str
    help: str
    obj: T
    listed: bool = True  # False: for jitterlab's own tests, found by name but never shown to users


class Registry(Generic[T]):
    """Name -> plug-in. A duplicate name is a bug (ValueError); an unknown name is a UserError.
    Iterating, names() and the suggestions of an error see only the entries shown to users."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._entries: dict[str, Entry[T]] = {}

    def add(self, name: str, help: str, obj: T, *, listed: bool = True) -> T:
        if name in self._entries:
            raise ValueError(f"{self.kind} {name!r} is registered twice")
        self._entries[name] = Entry(name, help, obj, listed)
        return obj

    def register(self, name: str, help: str) -> Callable[[T], T]:
        """Decorator form of add()."""

        def decorate(obj: T) -> T:
            return self.add(name, help, obj)

        return decorate

    def get(self, name: str, where: str) -> T:
        """Look up `name`; an unknown one raises UserError naming `where` and the closest name."""
        if not isinstance(name, str):
            raise UserError(f"{where}: expected a {self.kind} name (a string), got {shown(name)}")
        try:
            return self._entries[name].obj
        except KeyError:
            raise UserError(f"{where}: {self.unknown(name)}") from None

    def unknown(self, name: str) -> str:
        hint = did_you_mean(name, self.names())
        return f"unknown {self.kind} {shown(name)}; {hint}known: {', '.join(self.names())}"

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[Entry[T]]:
        return iter(sorted((e for e in self._entries.values() if e.listed), key=lambda e: e.name))

    def names(self) -> list[str]:
        return [e.name for e in self]
