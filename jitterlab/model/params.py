"""Matrix keys a benchmark understands: how a value is read from a campaign, checked and shown.

A benchmark declares its keys as Params; the campaign turns every key of a [matrix] table into
an axis (a list) or a fixed value, reading each value with the Param's parser so that a bad value
is a one-line error naming file, key and the fix. Values are stored canonical (int ns for a
duration, int bytes for a size, str for a name) so cell identities do not depend on spelling.

A `whole` key takes its list or tables as one value and is never an axis (the argv of a command,
the files it needs, its [[matrix.metric]] tables); its canonical value is JSON text.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from jitterlab.model.errors import UserError, Where, shown
from jitterlab.model.records import ParamValue
from jitterlab.model.registry import Registry, did_you_mean
from jitterlab.model.units import MAX_CAMPAIGN_NS, format_ns, parse_duration_ns

Parser = Callable[[object, str], ParamValue]


@dataclass(frozen=True)
class Param:
    """One matrix key. `default` None means the key is required. A `whole` key's value is read
    whole even when it is a list (or a list of tables): it is never an axis. A key `added` after
    cells were stored is left out of a cell at its default, so that the cells stored before it keep
    their identity (`Cell.key`, what --resume and the groups of a comparison match)."""

    name: str
    help: str
    parse: Parser
    example: str
    default: ParamValue | tuple | None = None
    show: Callable[[ParamValue], str] = str
    whole: bool = False
    added: bool = False


# bounds of keys that name none: what the programs and tools on a target read without overflow
MAX_INT = 2**31 - 1
MAX_SIZE = 1 << 50  # 1 PiB


def duration(lo_ns: int = 1, hi_ns: int | None = None) -> Parser:
    def parse(value: object, where: str) -> ParamValue:
        ns = parse_duration_ns(value, where, MAX_CAMPAIGN_NS)  # as every duration of a campaign
        _in_range(ns, lo_ns, hi_ns, where, format_ns)
        return ns

    return parse


def integer(lo: int, hi: int = MAX_INT) -> Parser:
    def parse(value: object, where: str) -> ParamValue:
        if isinstance(value, bool) or not isinstance(value, int):
            raise UserError(f"{where}: expected a whole number, got {shown(value)}")
        _in_range(value, lo, hi, where, str)
        return value

    return parse


_SIZE = re.compile(r"^\s*(\d+)\s*([kmgtKMGT]i?[bB]?|[bB])?\s*$")
_SIZE_FACTOR = {"": 1, "b": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def size(lo: int = 1, hi: int = MAX_SIZE) -> Parser:
    """Bytes: 64, "4k", "16MiB", "1G" (binary multiples); the one size grammar of campaigns."""

    def parse(value: object, where: str) -> ParamValue:
        ok = isinstance(value, int | str) and not isinstance(value, bool)
        match = _SIZE.match(str(value)) if ok and len(str(value)) <= 40 else None
        if match is None:
            raise UserError(f'{where}: cannot read size {shown(value)}; write bytes like 64, "4k", "16M"')
        n = int(match.group(1)) * _SIZE_FACTOR[(match.group(2) or "")[:1].lower()]
        _in_range(n, lo, hi, where, format_size)
        return n

    return parse


def format_size(n: ParamValue) -> str:
    n = int(n)
    for unit, factor in (("G", 1 << 30), ("M", 1 << 20), ("k", 1 << 10)):
        if n >= factor and n % factor == 0:
            return f"{n // factor}{unit}"
    return f"{n}B" if n < 1024 else str(n)


def choice(*names: str) -> Parser:
    def parse(value: object, where: str) -> ParamValue:
        if not isinstance(value, str) or value not in names:
            hint = did_you_mean(str(value)[:100], names)
            raise UserError(f"{where}: unknown value {shown(value)}; {hint}known: {', '.join(names)}")
        return str(value)

    return parse


def registered(registry: Registry) -> Parser:
    def parse(value: object, where: str) -> ParamValue:
        if not isinstance(value, str):
            raise UserError(f"{where}: expected a name (a string), got {shown(value)}")
        registry.get(value, where)
        return value

    return parse


def boolean(value: object, where: str) -> ParamValue:
    if not isinstance(value, bool):
        raise UserError(f"{where}: expected true or false, got {shown(value)}")
    return value


def text(value: object, where: str) -> ParamValue:
    if not isinstance(value, str) or not value:
        raise UserError(f"{where}: expected a non-empty string, got {shown(value)}")
    return value


def words(lo: int = 0, hi: int | None = None) -> Parser:
    """A list of strings taken whole (an argv, file names): JSON text of the list, so that a cell
    keeps one hashable, storable value. Each string is one word: nothing splits or joins them."""

    def parse(value: object, where: str) -> ParamValue:
        if not isinstance(value, list | tuple) or not all(isinstance(w, str) for w in value):
            raise UserError(f'{where}: expected a list of strings, e.g. ["python3", "fps.py"], got {value!r}')
        if any("\0" in w for w in value):
            raise UserError(f"{where}: a string holds a NUL byte, which no command line can carry")
        _in_range(len(value), lo, hi, where, lambda n: f"{n} item{'s' if n != 1 else ''}")
        return json.dumps(list(value))

    return parse


def word_list(value: ParamValue) -> list[str]:
    """The list a `words` value holds."""
    return list(json.loads(str(value)))


def show_words(value: ParamValue) -> str:
    """A `words` value as a shell would show it (quoted where needed), for people only."""
    if not (isinstance(value, str) and value.startswith("[")):
        return str(value)
    return shlex.join(word_list(value)) or "[]"


def _in_range(n: int, lo: int, hi: int | None, where: str, show: Callable[[int], str]) -> None:
    if n < lo or (hi is not None and n > hi):
        bound = f"between {show(lo)} and {show(hi)}" if hi is not None else f">= {show(lo)}"
        raise UserError(f"{where}: {show(n)} is out of range; give a value {bound}")


def by_name(params: Sequence[Param]) -> dict[str, Param]:
    return {p.name: p for p in params}


def auto(parser: Parser) -> Parser:
    """The word "auto" (the tool's own choice) or a value `parser` reads."""
    return or_word("auto", parser)


def or_word(word: str, parser: Parser) -> Parser:
    """The word `word` (a default that says where the value comes from: "auto", "pin") or a value
    `parser` reads."""

    def parse(value: object, where: str) -> ParamValue:
        return word if isinstance(value, str) and value == word else parser(value, where)

    return parse


def parse_options(params: Sequence[Param], table: Mapping[str, object], where: str | Where,
                  owner: str) -> dict[str, ParamValue]:
    """An option table ([loads.cpu], [probes.sigrok], [pins.gpiod]) read with `params`: unknown
    keys refused with the closest name, each value read by its Param, defaults filled in.
    `where` names the table ("campaign.toml: loads.cpu"), `owner` its plug-in ("load 'cpu'")."""
    known = by_name(params)
    for key in table:
        if key not in known:
            hint = did_you_mean(str(key), list(known))
            listed = f"known: {', '.join(known)}" if known else f"{owner} takes no options; remove it"
            raise UserError(f"{where}.{key}: unknown option of {owner}; {hint}{listed}")
    options: dict[str, ParamValue] = {}
    for param in params:
        if param.name in table:
            options[param.name] = param.parse(table[param.name], f"{where}.{param.name}")
        elif param.default is None:
            raise UserError(f"{where}.{param.name}: missing; {owner} needs it ({param.help}), "
                            f"e.g. {param.name} = {param.example}")
        else:
            options[param.name] = param.parse(param.default, f"{where}.{param.name}")
    return options
