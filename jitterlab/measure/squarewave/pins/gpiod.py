"""A GPIO line through the character device (/dev/gpiochipN, the v2 uAPI): the program requests
the line itself (libgpiod, the gpiod bindings, or the kernel's consumer API for a kernel module),
so the kernel releases it when the program ends, whatever happens."""

from __future__ import annotations

from jitterlab.measure.squarewave.pins.base import PINS, PinBase, PinHandle
from jitterlab.measure.squarewave.pins.chips import LineOptions, explain, find_chip
from jitterlab.measure.squarewave.pins.offers import BoardLine, ChipLine, InstrumentInput, KernelLine
from jitterlab.model.errors import RunFailed
from jitterlab.model.params import Param, integer, text

# $1: the chip device, $2: the line; fails when the line is taken (gpioinfo says "used")
_CHECK = r"""
[ -r "$1" ] && [ -w "$1" ] || { echo "$1: Permission denied" >&2; exit 3; }
command -v gpioinfo >/dev/null 2>&1 || exit 0
info=$(gpioinfo "${1##*/}" 2>/dev/null | grep -E "^[[:space:]]*line +$2:") || exit 0
case "$info" in *" used"*|*"[used"*) echo "line $2 is used: $info: Device or resource busy" >&2; exit 4;; esac
exit 0
"""


class GpiodPin(PinBase):
    offers = frozenset({ChipLine, KernelLine, BoardLine, InstrumentInput})
    params = (
        Param("chip", "the GPIO chip: its label, gpiochipN or /dev/gpiochipN", text, '"pinctrl-bcm2711"',
              default="gpiochip0"),
        Param("line", "the line offset on the chip", integer(0, 65535), "17"),
    )
    record = LineOptions

    @classmethod
    def declare(cls, settings) -> PinHandle:
        line = LineOptions.of(cls.validate(settings.options_of("pins", "gpiod"), "pins.gpiod")).line
        return PinHandle("gpiod", (BoardLine(line=line),))  # its chip's label is known once set up

    def setup(self) -> PinHandle:
        opts = LineOptions.of(self.options())
        line = opts.line
        chip = find_chip(self.ctx.target, opts.chip, line, "pins.gpiod", self.ctx.read_once)
        done = self.ctx.target.run(["sh", "-c", _CHECK, "sh", chip.device, str(line)])
        if not done.ok:
            raise RunFailed(explain(done.stderr, f"pins.gpiod: {chip.device} line {line}"),
                            status="unavailable")
        return PinHandle("gpiod", (ChipLine(chip.device, line), KernelLine(chip.label, line),
                                   BoardLine(chip.label, line), InstrumentInput()),
                         description=f"{chip.device} [{chip.label}] line {line}")

    def teardown(self) -> None:
        return None  # the program's request ends with the program


PINS.add(
    "gpiod",
    "a GPIO line through the character device /dev/gpiochipN (libgpiod): [pins.gpiod] chip, line",
    GpiodPin,
)
