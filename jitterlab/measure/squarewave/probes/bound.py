"""What an outside probe reads from the pin it is bound to: the board line, with which line it is on
its chip or in its SoC's register map (pins/offers.py BoardLine), as labgrid's drivers read their
bound resource. A probe key that repeats it (an older campaign's `[probes.emulator] line`) defaults
to PIN, "the pin's"; given, it must agree with the pin, and it is what counts where the pin does not
say (a gpiod pin names no register map)."""

from __future__ import annotations

from jitterlab.measure.squarewave.cell import WaveCell
from jitterlab.measure.squarewave.pins.base import PINS, PinHandle
from jitterlab.measure.squarewave.pins.offers import BoardLine
from jitterlab.model.errors import Where
from jitterlab.model.params import ParamValue
from jitterlab.model.records import Cell, RunSettings

PIN = "pin"  # the default of such a key: the value the bound pin carries


def show_pins(value: ParamValue) -> str:
    return "the pin's" if value == PIN else str(value)


def declared_line(cell: Cell, settings: RunSettings) -> tuple[str, BoardLine]:
    """The cell's pin and the board line it will offer, as its options declare it (when the campaign
    is read: what only its setup finds, a chip's label, is not there)."""
    name = WaveCell.of_cell(cell).pin
    return name, _line(PINS.get(name, "matrix.pin").declare(settings))


def bound_line(pin: PinHandle) -> BoardLine:
    """The board line a set-up pin offers (an empty one when it offers none)."""
    return _line(pin)


def agreed(own: ParamValue, carried: ParamValue | None, *, key: Where, pin: str, what: str,
           example: str) -> ParamValue:
    """The value of probe key `key` (e.g. probes.emulator.line): the pin's (`carried`, None when the
    pin does not say `what` it drives: "the line") unless given (`own` is not PIN), and then the same
    as the pin's. UserError "<key>: ..." naming the fix otherwise."""
    if own == PIN:
        if carried is None:
            raise key.error(f"pin {pin!r} does not say {what} it drives; set it, e.g. "
                            f"{key.keys[-1]} = {example}")
        return carried
    if carried is not None and own != carried:
        raise key.error(f"{own!r} is not {what} pin {pin!r} drives ({carried!r}); remove it (the "
                        "probe reads the pin's) or make the two agree")
    return own


def _line(handle: PinHandle) -> BoardLine:
    return handle.get(BoardLine) or BoardLine()
