"""The external pin: the program drives a virtual pin as usual, and the probe's instrument watches a
signal that jitterlab does not wire to it: sigrok's demo pattern generator, a signal generator on
the analyzer's input, a simulated oscilloscope. It exists to say so: the instrument chain
(capture, decoding, alignment, storage, report) is exercised end to end, and the probe's figures
describe that outside signal, never the program. Every run says it in a warning."""

from __future__ import annotations

from jitterlab.measure.squarewave.pins.base import PINS, PinHandle
from jitterlab.measure.squarewave.pins.offers import LevelPage, OutsideSignal
from jitterlab.measure.squarewave.pins.vpin import VirtualPin


class ExternalPin(VirtualPin):
    # what the program drives, but not its level page: no observer on the target may watch it
    offers = (VirtualPin.offers - {LevelPage}) | {OutsideSignal}

    def setup(self) -> PinHandle:
        handle = super().setup()
        drives = tuple(o for o in handle.offers if not isinstance(o, LevelPage))
        return PinHandle("external", (*drives, OutsideSignal()),
                         description=f"{handle.description} (the instrument watches an outside signal)")


PINS.add(
    "external",
    "the program drives a virtual pin; the instrument (sigrok, scpi) watches an outside signal, e.g. "
    "sigrok's demo generator: tests the instrument chain, the probe's figures are not the program's",
    ExternalPin,
)
