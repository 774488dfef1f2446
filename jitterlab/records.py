"""Immutable records that carry measurements and their metadata."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Metric:
    """One number a run produced. `probe` is the observer it came from ("" for non-edge metrics).

    `direction` says which way is better: "lower", "higher", or "none" for numbers that describe
    a run rather than grade it; "" leaves it to the table in analysis.compare (older stores).
    """

    name: str
    value: float
    unit: str
    probe: str = ""
    direction: str = ""

    def __post_init__(self) -> None:
        if self.direction not in ("", "lower", "higher", "none"):
            raise ValueError(f"metric {self.name}: direction {self.direction!r}")


@dataclass(frozen=True)
class Warning_:
    """Something that may spoil a measurement, with what to do about it."""

    message: str
    remedy: str
