"""Frozen records kept as JSON objects in the store (a run's settings, a target's system facts),
typed when read and written back key for key, so that stores written by older and newer jitterlab
read alike.

A field reads the JSON key of its name, or the one `stored(key)` gives; a record whose keys sit in
its parent's object (a VM's `vm_*` facts beside the kernel's) is a field with `metadata=FLAT`, of
a class whose fields' keys begin with its `PREFIX` (or say their keys). Reading checks each value
against the field's type (a whole number where `int`, a number where `float`, a list where
`tuple[...]`, an object where a record or a `Mapping`) and raises Unreadable naming the key. A
key no field reads is kept in `extra`; a key the object lacks is None, remembered in `absent`, and
not written back; a nested record that is None is not written either. `as_json()` gives the
object as the store keeps it: keys sorted, lists for tuples, objects for records and mappings.
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from collections.abc import Mapping
from typing import Any, ClassVar, Self


class Unreadable(ValueError):
    """A stored value that is not of its field's type: `key` (as stored) and what it is instead."""

    def __init__(self, key: str, detail: str) -> None:
        super().__init__(f"{key} {detail}")
        self.key, self.detail = key, detail


FLAT = {"flat": True}  # the metadata of a field whose record's keys are in its parent's object


def stored(key: str) -> Any:
    """A field read from the JSON key `key` (when its name is not its key); None when absent."""
    return dataclasses.field(default=None, metadata={"key": key})


@dataclasses.dataclass(frozen=True, kw_only=True)
class Stored:
    """Base of a record kept as a JSON object (subclass it as a frozen, kw_only dataclass)."""

    PREFIX: ClassVar[str] = ""  # of a flat record: the start of its keys in its parent's object

    extra: Mapping[str, object] = dataclasses.field(default_factory=dict)  # keys no field reads
    absent: frozenset[str] = dataclasses.field(default=frozenset(), compare=False, repr=False)

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> Self:
        """The record of a JSON object; Unreadable when a value is not of its field's type."""
        return cls._read(data, flat=False)

    @classmethod
    def _read(cls, data: Mapping[str, object], *, flat: bool) -> Self:
        """`flat`: `data` is the parent's object, whose keys of this record's PREFIX are its own."""
        made: dict[str, object] = {}
        absent = set()
        claimed = set()  # the prefixes of flat records inside: their keys are theirs
        for f, key, hint in _fields(cls):
            if f.metadata.get("flat"):
                sub = typing.cast(type[Stored], _record_of(hint))
                made[f.name] = sub._read(data, flat=True) if sub.found_in(data) else None
                claimed |= {sub.PREFIX} - {""}
            elif key in data:
                made[f.name] = _read(hint, data[key], key)
            else:
                absent.add(key)
        known = cls.keys()
        extra = {} if flat and not cls.PREFIX else {  # a flat record without a prefix names its keys
            k: v for k, v in data.items()
            if k not in known and k.startswith(cls.PREFIX) and not k.startswith(tuple(claimed))}
        return cls(**made, extra=extra, absent=frozenset(absent))

    @classmethod
    def given(cls, **values: object) -> Self:
        """A record of these fields only: the others are absent, and not written."""
        keys = {f.name: key for f, key, _ in _fields(cls)}
        return cls(**values, absent=frozenset(keys[n] for n in keys if n not in values))  # type: ignore[arg-type]

    @classmethod
    def keys(cls) -> frozenset[str]:
        """Every key the record reads (a flat record's own included)."""
        out = set()
        for f, key, hint in _fields(cls):
            out |= _record_of(hint).keys() if f.metadata.get("flat") else {key}  # type: ignore[union-attr]
        return frozenset(out)

    @classmethod
    def found_in(cls, data: Mapping[str, object]) -> bool:
        """Whether a parent's object holds any key of this flat record."""
        known = cls.keys()
        return any(k in known or (cls.PREFIX and k.startswith(cls.PREFIX)) for k in data)

    def as_json(self) -> dict[str, object]:
        """The object as stored: every field but a None one that was absent (or a nested record),
        then the keys kept in `extra`; keys sorted."""
        out: dict[str, object] = dict(self.extra)
        for f, key, hint in _fields(type(self)):
            value = getattr(self, f.name)
            if value is None and (key in self.absent or _record_of(hint) is not None):
                continue
            if f.metadata.get("flat"):
                out.update(value.as_json())
            else:
                out[key] = _write(value)
        return dict(sorted(out.items()))


@functools.cache
def _fields(cls: type[Stored]) -> tuple[tuple[dataclasses.Field, str, object], ...]:
    """(field, its JSON key, its type) of every stored field of a record class."""
    hints = typing.get_type_hints(cls)
    return tuple((f, f.metadata.get("key") or cls.PREFIX + f.name, hints[f.name])
                 for f in dataclasses.fields(cls) if f.name not in ("extra", "absent"))


def _record_of(hint: object) -> type[Stored] | None:
    """The record class a field holds (`Rec | None`), else None."""
    for arg in (hint, *typing.get_args(hint)):
        if typing.get_origin(arg) is None and isinstance(arg, type) and issubclass(arg, Stored):
            return arg
    return None


_WHAT = {str: "text", bool: "true or false", int: "a whole number", float: "a number"}


def _read(hint: object, value: object, key: str) -> object:
    """`value` as a field typed `hint` holds it; Unreadable when it is of another kind."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (types.UnionType, typing.Union):
        if value is None and type(None) in args:
            return None
        [hint] = [a for a in args if a is not type(None)]
        origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is object:
        return value
    if isinstance(hint, type) and issubclass(hint, Stored):
        if not isinstance(value, Mapping):
            raise _unreadable(key, value, "an object")
        try:
            return hint.from_json(value)
        except Unreadable as exc:  # named by its path: cpus[1].cur_mhz
            raise Unreadable(f"{key}.{exc.key}", exc.detail) from None
    if origin is tuple:
        if not isinstance(value, list | tuple):
            raise _unreadable(key, value, "a list")
        return tuple(_read(args[0], v, f"{key}[{i}]") for i, v in enumerate(value))
    if origin is Mapping:
        if not isinstance(value, Mapping):
            raise _unreadable(key, value, "an object")
        by_int = args[0] is int  # a JSON object's keys are text: "0" is CPU 0
        if by_int and not all(isinstance(k, str) and k.isdigit() for k in value):
            raise _unreadable(key, value, "an object keyed by whole numbers")
        return {int(k) if by_int else k: _read(args[1], v, f"{key}.{k}")  # type: ignore[arg-type]
                for k, v in value.items()}
    kinds = (int, float) if hint is float else (hint,)  # a whole number where a fraction may be
    if isinstance(value, bool) != (hint is bool) or not isinstance(value, kinds):  # type: ignore[arg-type]
        what = _WHAT[hint] + (" of ns" if hint is int and key.endswith("_ns") else "")  # type: ignore[index]
        raise _unreadable(key, value, what)
    return value


def _unreadable(key: str, value: object, what: str) -> Unreadable:
    return Unreadable(key, f"is {value!r:.40}, not {what}")


def _write(value: object) -> object:
    if isinstance(value, Stored):
        return value.as_json()
    if isinstance(value, tuple | list):
        return [_write(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): _write(v) for k, v in value.items()}
    return value
