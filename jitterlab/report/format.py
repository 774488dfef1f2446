"""Values for people: every place a person reads a measured value formats it here."""

from __future__ import annotations

from jitterlab.units import format_ns


def percent(value: float | None) -> str:
    """A ratio as a percentage: 0.0123 -> "1.23 %", 17.9 -> "1,790 %"; None -> "—"."""
    if value is None:
        return "—"
    if abs(value) >= 10:
        return f"{value * 100:,.0f} %"
    return f"{value * 100:.3g} %"


def format_value(value: float, unit: str) -> str:
    """A measured value for people: 4 significant digits, durations in their best unit."""
    if unit == "ns":
        return format_ns(value, digits=4)
    if unit == "ratio":
        return f"{value * 100:.3g} %"
    if unit == "count":
        return f"{value:,.0f}" if value == int(value) else f"{value:,.4g}"
    shown = f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.4g}"  # 27,290 not 2.729e+04
    return f"{shown} {unit}".strip()
