"""Typed option records: a plug-in's options (a [probes.sigrok] table) or a benchmark's matrix keys
(a cell's params), read once into a small frozen record whose attributes have the types their
Params' parsers give, instead of a dict whose values are cast wherever they are read.

The values are validated where the campaign is read, by the Params (a bad one is a one-line
UserError naming its key); a record only types them. A field whose name carries its unit reads the
key users type (`width_ns: int = key("width")`). A record that disagrees with its Params (a field
of another type than the parser gives, a key no Param has) is a bug: TypeError, and
tests/test_options.py builds every plug-in's record from its Params' examples and defaults.
"""

from __future__ import annotations

import dataclasses
import functools
import types as types_
import typing
from collections.abc import Mapping
from typing import Any, Self

from jitterlab.model.records import Cell, ParamValue


def key(name: str) -> Any:
    """A field read from the option `name` (when the field's own name says its unit)."""
    return dataclasses.field(metadata={"key": name})


@dataclasses.dataclass(frozen=True)
class Options:
    """Base of an option record (subclass it as a frozen dataclass)."""

    @classmethod
    def keys(cls) -> dict[str, str]:
        """The option each field reads, by field name."""
        return {f.name: f.metadata.get("key", f.name) for f in dataclasses.fields(cls)}

    @classmethod
    def of(cls, values: Mapping[str, ParamValue]) -> Self:
        """The record of validated values (a plug-in's option table, defaults filled in)."""
        types, keys = _fields(cls)
        made: dict[str, object] = {}
        for name, option in keys.items():
            if option not in values:
                raise TypeError(f"{cls.__name__}.{name}: no value of option {option!r} (has it a Param?)")
            value, hint = values[option], types[name]
            origin = typing.get_origin(hint)  # tuple[str, ...] is checked as a tuple, int | str as is
            wanted = hint if origin in (None, types_.UnionType, typing.Union) else origin
            if wanted is float and isinstance(value, int) and not isinstance(value, bool):
                value = float(value)  # a whole number where a fraction may be given
            if not isinstance(value, wanted) or (wanted is int and isinstance(value, bool)):
                raise TypeError(f"{cls.__name__}.{name}: option {option!r} is {value!r}, not {hint}")
            made[name] = value
        return cls(**made)

    @classmethod
    def of_cell(cls, cell: Cell) -> Self:
        """The record of a cell's matrix keys."""
        return cls.of(dict(cell.params))


@functools.cache
def _fields(cls: type[Options]) -> tuple[dict[str, Any], dict[str, str]]:
    """A record class's field types and option keys, read once per class: typing.get_type_hints
    evaluates every annotation's text at each call (0.2 ms; a run's end screen reads 700 records)."""
    return typing.get_type_hints(cls), cls.keys()
