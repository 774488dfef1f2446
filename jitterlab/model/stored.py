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
from collections.abc import Callable, Mapping
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
        layout = _layout(cls)
        made: dict[str, object] = {}
        absent = set()
        for name, key, read, sub in layout.fields:
            if sub is not None:
                made[name] = sub._read(data, flat=True) if sub.found_in(data) else None
            elif key in data:
                made[name] = read(data[key], key)
            else:
                absent.add(key)
        extra = {} if flat and not cls.PREFIX else {  # a flat record without a prefix names its keys
            k: v for k, v in data.items()
            if k not in layout.keys and k.startswith(cls.PREFIX) and not k.startswith(layout.claimed)}
        return cls(**made, extra=extra, absent=frozenset(absent))

    @classmethod
    def given(cls, **values: object) -> Self:
        """A record of these fields only: the others are absent, and not written."""
        fields = _layout(cls).fields
        return cls(**values, absent=frozenset(key for name, key, _, _ in fields  # type: ignore[arg-type]
                                              if name not in values))

    @classmethod
    def keys(cls) -> frozenset[str]:
        """Every key the record reads (a flat record's own included)."""
        return _layout(cls).keys

    @classmethod
    def found_in(cls, data: Mapping[str, object]) -> bool:
        """Whether a parent's object holds any key of this flat record."""
        known = _layout(cls).keys
        return any(k in known or (cls.PREFIX and k.startswith(cls.PREFIX)) for k in data)

    def as_json(self) -> dict[str, object]:
        """The object as stored: every field but a None one that was absent (or a nested record),
        then the keys kept in `extra`; keys sorted."""
        out: dict[str, object] = dict(self.extra)
        layout = _layout(type(self))
        for name, key, _, sub in layout.fields:
            value = getattr(self, name)
            if value is None and (key in self.absent or sub is not None or key in layout.nested):
                continue
            if sub is not None:
                out.update(value.as_json())
            else:
                out[key] = _write(value)
        return dict(sorted(out.items()))


Reader = Callable[[object, str], object]  # (value, its key) -> the value as its field holds it


@dataclasses.dataclass(frozen=True)
class _Layout:
    """How a record class is read: (name, key, reader, flat record or None) per field, every key it
    reads, the prefixes its flat records claim, and the keys of its nested records."""

    fields: tuple[tuple[str, str, Reader, type[Stored] | None], ...]
    keys: frozenset[str]
    claimed: tuple[str, ...]
    nested: frozenset[str]


@functools.cache
def _layout(cls: type[Stored]) -> _Layout:
    hints = typing.get_type_hints(cls)
    fields, keys, claimed, nested = [], set(), [], set()
    for f in dataclasses.fields(cls):
        if f.name in ("extra", "absent"):
            continue
        key, hint = f.metadata.get("key") or cls.PREFIX + f.name, hints[f.name]
        sub = _record_of(hint) if f.metadata.get("flat") else None
        fields.append((f.name, key, _reader(hint), sub))
        if sub is not None:
            keys |= _layout(sub).keys
            claimed += [sub.PREFIX] if sub.PREFIX else []
        else:
            keys.add(key)
            if _record_of(hint) is not None:
                nested.add(key)
    return _Layout(tuple(fields), frozenset(keys), tuple(claimed), frozenset(nested))


def _record_of(hint: object) -> type[Stored] | None:
    """The record class a field holds (`Rec | None`), else None."""
    for arg in (hint, *typing.get_args(hint)):
        if typing.get_origin(arg) is None and isinstance(arg, type) and issubclass(arg, Stored):
            return arg
    return None


_WHAT = {str: "text", bool: "true or false", int: "a whole number", float: "a number"}


@functools.cache
def _reader(hint: object) -> Reader:
    """What reads a value of a field typed `hint`; it raises Unreadable when the value is of another
    kind, named by its key (and its path inside: cpus[1].cur_mhz)."""
    if typing.get_origin(hint) in (types.UnionType, typing.Union):
        [inner] = [a for a in typing.get_args(hint) if a is not type(None)]
        read = _reader(inner)
        return lambda value, key: None if value is None else read(value, key)
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is object:
        return lambda value, key: value
    if isinstance(hint, type) and issubclass(hint, Stored):
        return functools.partial(_read_record, hint)
    if origin is tuple:
        return functools.partial(_read_list, _reader(args[0]))
    if origin is Mapping:
        return functools.partial(_read_mapping, args[0] is int, _reader(args[1]))
    kinds = (int, float) if hint is float else (hint,)  # a whole number where a fraction may be

    def scalar(value: object, key: str) -> object:
        if isinstance(value, bool) != (hint is bool) or not isinstance(value, kinds):  # type: ignore[arg-type]
            what = _WHAT[hint] + (" of ns" if hint is int and key.endswith("_ns") else "")  # type: ignore[index]
            raise _unreadable(key, value, what)
        return value

    return scalar


def _read_record(record: type[Stored], value: object, key: str) -> object:
    if not isinstance(value, Mapping):
        raise _unreadable(key, value, "an object")
    try:
        return record.from_json(value)
    except Unreadable as exc:
        raise Unreadable(f"{key}.{exc.key}", exc.detail) from None


def _read_list(read: Reader, value: object, key: str) -> object:
    if not isinstance(value, list | tuple):
        raise _unreadable(key, value, "a list")
    out = []
    for i, item in enumerate(value):
        try:
            out.append(read(item, key))
        except Unreadable as exc:  # the item's path: cpus[1], cpus[1].cur_mhz
            raise Unreadable(f"{key}[{i}]{exc.key.removeprefix(key)}", exc.detail) from None
    return tuple(out)


def _read_mapping(by_int: bool, read: Reader, value: object, key: str) -> object:
    if not isinstance(value, Mapping):
        raise _unreadable(key, value, "an object")
    if by_int and not all(isinstance(k, str) and k.isdigit() for k in value):  # JSON's keys are text
        raise _unreadable(key, value, "an object keyed by whole numbers")
    out = {}
    for k, item in value.items():
        try:
            out[int(k) if by_int else k] = read(item, key)
        except Unreadable as exc:
            raise Unreadable(f"{key}.{k}{exc.key.removeprefix(key)}", exc.detail) from None
    return out


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
