"""The time unit a capture's header names, in the words the tools that write captures use:

- sigrok-cli and PulseView (libsigrok's CSV output): the time column is named by its unit alone,
  `milliseconds`, `microseconds`, `nanoseconds`, `picoseconds` (`samples` when it holds sample
  numbers);
- Saleae Logic: `Time [s]` (Logic 2), `Time[s]` (Logic 1);
- oscilloscopes: a second header row of units (Keysight InfiniiVision `x-axis,1` then `second,Volt`),
  `in s` (Rohde & Schwarz), `Time (s)`, `t / s` (a quantity over its unit);
- people: `time_ns`, `t (us)`, `t_us`.

A unit word that is none of these is an error naming it: a capture read in the wrong unit is wrong
in every metric without a word (µs read as ns: a 40 µs period shown as 40 ns).
"""

from __future__ import annotations

import re

from jitterlab.model.errors import UserError, shown

# decimal digits of ns per unit: a time in the unit is int(text * 10**digits) ns
DIGITS = {"s": 9, "ms": 6, "us": 3, "ns": 0, "ps": -3, "fs": -6}
WORDS = {
    **dict.fromkeys(("s", "sec", "secs", "second", "seconds"), "s"),
    **dict.fromkeys(("ms", "msec", "msecs", "millisecond", "milliseconds"), "ms"),
    **dict.fromkeys(("us", "µs", "μs", "usec", "usecs", "microsecond", "microseconds"), "us"),
    **dict.fromkeys(("ns", "nsec", "nsecs", "nanosecond", "nanoseconds"), "ns"),
    **dict.fromkeys(("ps", "psec", "psecs", "picosecond", "picoseconds"), "ps"),
    **dict.fromkeys(("fs", "femtosecond", "femtoseconds"), "fs"),
}
# sample numbers, not times (libsigrok below 1 kHz; a scope's "Sequence" column)
SAMPLE_NUMBERS = ("samples", "sample", "sequence", "index", "points", "point")
# where a unit is written in a column's name: "[s]", "(us)", "in s", "t / s" (only a unit goes
# there), or "time_ns", or the whole name ("microseconds")
_MARKED = (re.compile(r"[\[(]\s*([^\])]*?)\s*[\])]"), re.compile(r"^in\s+(\S+)$"),
           re.compile(r"^[a-z]+\s*/\s*(\S+)$"))
_SUFFIX = re.compile(r"^[a-z]+[_ ]([a-zµμ]+)$")


def unit_in(name: str) -> str | None:
    """The unit written in a time column's name ("Time [s]" -> "s"; "microseconds" -> "us"), None
    when the name holds none ("Time", "x-axis"). UserError for a marked word that is not a time unit
    ("Time [UTC]") and for sample numbers ("samples")."""
    text = name.strip().strip('"').strip().lower()
    for place in _MARKED:
        found = place.search(text)
        if found:
            word = found.group(1).strip()
            if word not in WORDS:
                raise UserError(_unknown(name, word))
            return WORDS[word]
    if text in SAMPLE_NUMBERS:
        raise UserError(_unknown(name, text))
    suffix = _SUFFIX.match(text)
    return WORDS.get(text) or (WORDS.get(suffix.group(1)) if suffix else None)


def unit_of_units_row(field: str, row: str) -> str | None:
    """The unit a scope's row of units under its header gives the time column ("second", "(s)",
    "[us]": the whole field is the unit); None when the field is empty. UserError naming the row for
    a word that is not a time unit ("minute") and for sample numbers ("Sequence")."""
    word = field.strip().strip('"').strip().strip("[]()").strip().lower()
    if not word:
        return None
    if word in SAMPLE_NUMBERS:
        raise UserError(_unknown(field, word))
    if word not in WORDS:
        raise UserError(f"the units row {shown(row)} gives the time column's unit as {shown(word)}, "
                        f"{_NOT_KNOWN}")
    return WORDS[word]


UNITS = tuple(DIGITS)  # the units --time-unit takes, as a header may name them
_NOT_KNOWN = (f"a unit jitterlab does not know (it knows {', '.join(UNITS)}, also spelt out: seconds, "
              f"microseconds, ...); give --time-unit ({', '.join(UNITS)})")


def _unknown(name: str, word: str) -> str:
    if word in SAMPLE_NUMBERS:
        return (f"the time column {shown(name)} holds sample numbers, not times; export the capture with "
                "times (sigrok-cli: -O csv:time=true at 1 kHz or more; a scope: its time axis) or as VCD")
    return f"the time column {shown(name)} is in {shown(word)}, {_NOT_KNOWN}"
