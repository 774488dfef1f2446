"""Durations: TOML strings like "10s", "500ms", "50us" <-> integer nanoseconds."""

from __future__ import annotations

import re
from decimal import Decimal

from jitterlab.model.errors import UserError, shown

_NS_PER_UNIT = {
    "ns": 1,
    "us": 1_000,
    "µs": 1_000,
    "ms": 1_000_000,
    "s": 1_000_000_000,
    "min": 60_000_000_000,
    "m": 60_000_000_000,
    "h": 3_600_000_000_000,
}
_DURATION = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*(ns|us|µs|ms|s|min|m|h)\s*$", re.ASCII)
# what every program and file format holds: int64 nanoseconds (292 years)
MAX_DURATION_NS = 2**63 - 1
_MAX_DIGITS = 40  # longer numbers are over MAX_DURATION_NS in any unit, or typing accidents
# any one duration a campaign file gives (README, "Limits"): a week
MAX_CAMPAIGN_NS = 7 * 24 * 3600 * 10**9


def parse_duration_ns(text: object, where: str, max_ns: int = MAX_DURATION_NS) -> int:
    """Parse "10s", "500ms", "50us", "1.5ms" into nanoseconds; `where` names the key for errors.
    A duration is > 0 and at most `max_ns`."""
    if not isinstance(text, str):
        raise UserError(
            f'{where}: expected a duration string like "10ms" or "50us", got {shown(text)}; '
            "write the unit (ns, us, ms, s, min, h) after the number, in quotes"
        )
    match = _DURATION.match(text)
    if not match:
        raise UserError(
            f"{where}: cannot read duration {shown(text)}; write a number and a unit "
            '(ns, us, ms, s, min, h), e.g. "100ms" or "50us"'
        )
    number, unit = match.groups()
    if len(number.lstrip("0")) > _MAX_DIGITS:
        value_ns = max_ns + 1
    else:  # exact: "0.1s" is 100000000 ns, not what a float makes of it
        value_ns = round(Decimal(number) * _NS_PER_UNIT[unit])
    if value_ns <= 0:
        raise UserError(f"{where}: duration {shown(text)} must be greater than zero")
    if value_ns > max_ns:
        most = "292 years (int64 ns)" if max_ns == MAX_DURATION_NS else format_duration_s(max_ns / 1e9)
        raise UserError(f"{where}: duration {shown(text)} is too long; give at most {most}")
    return value_ns


def format_ns(value_ns: float, digits: int = 6) -> str:
    """The shortest readable form: 100000000 -> "100ms", 50000 -> "50us", 1500000 -> "1.5ms";
    `digits` significant digits at most (a measured latency wants 4, a configured period all)."""
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("us", 1e3)):
        if abs(value_ns) >= scale:
            return f"{value_ns / scale:.{digits}g}{unit}"
    return f"{value_ns:.{digits}g}ns"


def format_duration_s(seconds: float) -> str:
    """Wall time for people: 42 -> "42 s", 173 -> "2 min 53 s", 5400 -> "1 h 30 min"."""
    seconds = round(seconds)
    if seconds < 60:
        return f"{seconds} s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes} min {seconds} s" if seconds else f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min" if minutes else f"{hours} h"


def cpu_list(cpus) -> str:
    """CPU numbers in taskset's syntax: {0, 1, 2, 5} -> "0-2,5" (any order, duplicates once)."""
    spans: list[list[int]] = []
    for cpu in sorted(set(cpus)):
        if spans and cpu == spans[-1][-1] + 1:
            spans[-1].append(cpu)
        else:
            spans.append([cpu])
    return ",".join(str(s[0]) if len(s) == 1 else f"{s[0]}-{s[-1]}" for s in spans)


def parse_cpu_list(text: str | None) -> tuple[int, ...] | None:
    """A CPU list as the kernel writes it ("0-2,5\n"; "" for none) -> (0, 1, 2, 5); None when it
    is not one."""
    if text is None:
        return None
    cpus: set[int] = set()
    for part in filter(None, text.strip().split(",")):
        lo, _, hi = part.partition("-")
        if not lo.isdigit() or not (hi.isdigit() or not hi) or int(hi or lo) < int(lo):
            return None
        cpus.update(range(int(lo), int(hi or lo) + 1))
    return tuple(sorted(cpus))
