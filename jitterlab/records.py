"""Immutable records that carry measurements and their metadata."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Metric:
    """One number a run produced. `probe` is the observer it came from ("" for non-edge metrics)."""

    name: str
    value: float
    unit: str
    probe: str = ""


@dataclass(frozen=True)
class Warning_:
    """Something that may spoil a measurement, with what to do about it."""

    message: str
    remedy: str
