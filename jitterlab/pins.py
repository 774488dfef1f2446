"""Where the wave goes. Only the virtual pin for now; GPIO pins need a board."""

from __future__ import annotations

from dataclasses import dataclass

from jitterlab.registry import Registry


@dataclass(frozen=True)
class PinSpec:
    """A pin kind and the probes that can observe it."""

    probes: tuple[str, ...]


PINS: Registry[PinSpec] = Registry("pin")
PINS.add(
    "vpin",
    "virtual pin: a GPIO-value-like file in /dev/shm, written in place, mmap-able",
    PinSpec(probes=("vpin", "self")),
)
