"""The program's own timestamps: what it believes it did, read from its edge log."""

from __future__ import annotations

from jitterlab.measure.squarewave.probes.base import PROBES, Capture, ProbeBase
from jitterlab.measure.squarewave.probes.logs import SelfLog
from jitterlab.model.traits import OWN_VIEW


class SelfProbe(ProbeBase):
    needs = ()  # the program's own log: whatever the pin
    independent = False
    location = "program"

    def stop(self, own: SelfLog) -> Capture:
        return Capture(own.t_ns, own.level)


PROBES.add(
    OWN_VIEW,
    "the program's own timestamps after each write (biased: it cannot see its own write latency)",
    SelfProbe,
)
