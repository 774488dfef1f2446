"""Values for people: every place a person reads a measured value formats it here, through
`format_value(value, unit)`, which knows the metric's unit: durations with an adaptive SI prefix
(ns, µs, ms, s), ratios and fractions as %, counts as whole numbers, sizes and byte rates with SI
prefixes whatever unit a tool gave them in (mbw's MiB/s and dd's MB/s both read GB/s: one family in
every view, never a MiB beside a GB), other rates with their unit. Machine formats (JSON, CSV,
Parquet) keep the raw values and name the unit beside them instead."""

from __future__ import annotations

import math

TIME_UNITS = {"ns": 1.0, "us": 1e3, "µs": 1e3, "ms": 1e6, "s": 1e9}  # unit -> ns
RATIO_UNITS = ("ratio", "fraction")
COUNT_UNITS = ("count",)
_TIME_STEPS = (("s", 1e9), ("ms", 1e6), ("µs", 1e3), ("ns", 1.0))
_SI_STEPS = (("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3))
# a size's unit as tools give it -> bytes (a rate's: the same with "/s")
BYTE_UNITS = {"bytes": 1.0, "B": 1.0, "kB": 1e3, "MB": 1e6, "GB": 1e9, "KiB": 1024.0, "MiB": 2.0**20,
              "GiB": 2.0**30}


def byte_unit(unit: str) -> tuple[float, str] | None:
    """(bytes per unit, "B" or "B/s") for a size or byte rate's unit ("MiB/s" -> (1048576, "B/s")),
    None for any other unit."""
    base, rate = (unit[:-2], "/s") if unit.endswith("/s") else (unit, "")
    factor = BYTE_UNITS.get(base)
    return None if factor is None else (factor, "B" + rate)
MISSING = "—"


def _digits(x: float, sig: int = 4) -> str:
    """`sig` significant digits, no exponent for the magnitudes people read (27,290 not 2.729e+04)."""
    if x == 0:
        return "0"
    if abs(x) >= 10 ** sig:
        return f"{x:,.0f}"
    decimals = max(0, sig - 1 - math.floor(math.log10(abs(x))))
    text = f"{x:,.{decimals}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def _rounded(x: float, sig: int) -> float:
    """`x` at `sig` significant digits: what decides its unit, so 999,999.6 ns is "1 ms", never
    "1,000 µs" beside the other periods' "1 ms"."""
    if x == 0 or not math.isfinite(x):
        return x
    return round(x, sig - 1 - math.floor(math.log10(abs(x))))


def duration(value_ns: float, sig: int = 4) -> str:
    """A duration in ns for people: 184000 -> "184 µs", 40200000 -> "40.2 ms", 523 -> "523 ns"."""
    shown = abs(_rounded(value_ns, sig))
    for unit, scale in _TIME_STEPS:
        if shown >= scale or unit == "ns":
            return f"{_digits(value_ns / scale, sig)} {unit}"
    raise AssertionError("unreachable")


def percent(value: float | None) -> str:
    """A ratio as a percentage: 0.0123 -> "1.23 %", 17.9 -> "1,790 %"; None -> "—"."""
    if value is None or not math.isfinite(value):
        return MISSING if value is None or math.isnan(value) else ("∞ %" if value > 0 else "-∞ %")
    return f"{_digits(value * 100, 3)} %"


def count(value: float) -> str:
    """A count: whole numbers with thousands separators (a count that is not whole keeps 4 digits)."""
    return f"{round(value):,}" if value == round(value) else _digits(value)


def counted(n: int, noun: str) -> str:
    """"1 run", "2 runs", "1,204 cells": a count with its noun (a regular plural)."""
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


def _si(value: float, unit: str) -> str:
    shown = abs(_rounded(value, 4))
    for prefix, scale in _SI_STEPS:
        if shown >= scale:
            return f"{_digits(value / scale)} {prefix}{unit}"
    return f"{_digits(value)} {unit}"


def format_value(value: float | None, unit: str) -> str:
    """A measured value for people, by its unit (4 significant digits; "—" when there is none)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return MISSING
    if isinstance(value, float) and math.isinf(value):
        return "∞" if value > 0 else "-∞"
    if unit in TIME_UNITS:
        return duration(value * TIME_UNITS[unit])
    if unit in RATIO_UNITS:
        return percent(value)
    if unit in COUNT_UNITS:
        return count(value)
    if unit in ("bool", "flag"):  # a flag (max_is_lower_bound) is a yes or a no, never "1 flag"
        return "yes" if value else "no"
    if unit == "%":
        return f"{_digits(value, 3)} %"
    if (sized := byte_unit(unit)) is not None:
        return _si(value * sized[0], sized[1])
    if unit == "":
        return count(value) if value == round(value) else _digits(value)
    return f"{_digits(value)} {unit}"


def change(ratio: float) -> str:
    """A ratio candidate/baseline as a change: 1.5 -> "+50 %", 0.25 -> "-75 %", 3.007 -> "+201 %"."""
    if not math.isfinite(ratio):
        return MISSING
    pct = (ratio - 1) * 100
    return f"{'-' if pct < 0 else '+'}{_digits(abs(pct), 3)} %"
