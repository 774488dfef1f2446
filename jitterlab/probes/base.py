"""How edges are observed."""

from __future__ import annotations

from dataclasses import dataclass

from jitterlab.registry import Registry


@dataclass(frozen=True)
class ProbeSpec:
    """`independent`: the probe is not the program under test observing itself."""

    independent: bool


PROBES: Registry[ProbeSpec] = Registry("probe")
PROBES.add(
    "vpin",
    "independent observer: busy-polls the virtual pin from its own CPU, records blind intervals",
    ProbeSpec(independent=True),
)
PROBES.add(
    "self",
    "the program's own timestamps after each write (biased: it cannot see its own write latency)",
    ProbeSpec(independent=False),
)
