"""A GPIO line through the legacy sysfs interface: exported, made an output, written through its
`value` file (what echo in a shell script, Python's file writes and c-file do), unexported after."""

from __future__ import annotations

import contextlib

from jitterlab.measure.squarewave.pins.base import PINS, PinBase, PinHandle
from jitterlab.measure.squarewave.pins.chips import LineOptions, explain, find_chip
from jitterlab.measure.squarewave.pins.offers import BoardLine, InstrumentInput, ValueFile
from jitterlab.model.errors import RunFailed
from jitterlab.model.params import Param, integer, text

GPIO = "/sys/class/gpio"
# $1: the global line number; exports it, makes it an output driven low, says the value path; a
# line it exported but could not make an output (the driver refused) is unexported again: the
# teardown undoes only a setup that succeeded, and the next run would find the line busy
_EXPORT = r"""
g=/sys/class/gpio
[ -d "$g" ] || { echo "no $g: the kernel lacks CONFIG_GPIO_SYSFS" >&2; exit 3; }
[ -e "$g/gpio$1" ] && { echo "gpio$1 is already exported: Device or resource busy" >&2; exit 4; }
echo "$1" > "$g/export" || exit 5
i=0; while [ ! -w "$g/gpio$1/direction" ] && [ $i -lt 50 ]; do sleep 0.02; i=$((i+1)); done
echo low > "$g/gpio$1/direction" 2>/dev/null || {
  echo "$1" > "$g/unexport"
  echo "the driver refused to make it an output (an input-only line?)" >&2; exit 6; }
echo "$g/gpio$1/value"
"""
_UNEXPORT = 'echo 0 > "/sys/class/gpio/gpio$1/value"; echo "$1" > /sys/class/gpio/unexport; exit 0'


class SysfsPin(PinBase):
    # no KernelLine: the export requests the line for sysfs, so a kernel module's request of it is
    # refused as busy (gpiochip_request_own_desc); the gpiod pin leaves the line free for one
    offers = frozenset({ValueFile, BoardLine, InstrumentInput})
    params = (
        Param("chip", "the GPIO chip: its label, gpiochipN or /dev/gpiochipN", text, '"pinctrl-bcm2711"',
              default="gpiochip0"),
        Param("line", "the line offset on the chip (the sysfs number is the chip's base + line)",
              integer(0, 65535), "17"),
    )
    record = LineOptions

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._number: int | None = None

    @classmethod
    def declare(cls, settings) -> PinHandle:
        line = LineOptions.of(cls.validate(settings.options_of("pins", "sysfs"), "pins.sysfs")).line
        return PinHandle("sysfs", (BoardLine(line=line),))  # its chip's label is known once set up

    def setup(self) -> PinHandle:
        opts = LineOptions.of(self.options())
        chip = find_chip(self.ctx.target, opts.chip, opts.line, "pins.sysfs", self.ctx.read_once)
        if chip.base < 0:
            raise RunFailed(f"pins.sysfs: {chip.name} has no sysfs number: the kernel lacks "
                            'CONFIG_GPIO_SYSFS (use pin = "gpiod")', status="unavailable")
        number = chip.base + opts.line
        done = self.ctx.target.run(["sh", "-c", _EXPORT, "sh", str(number)])
        if not done.ok:
            raise RunFailed(explain(done.stderr, f"pins.sysfs: exporting gpio{number} ({chip.name} line "
                                                 f"{opts.line})"), status="unavailable")
        self._number = number
        value, line = done.stdout.strip(), opts.line
        return PinHandle("sysfs", (ValueFile(value), BoardLine(chip.label, line), InstrumentInput()),
                         description=f"{value} ({chip.label} line {line})")

    def teardown(self) -> None:
        if self._number is not None:
            with contextlib.suppress(Exception):
                self.ctx.target.run(["sh", "-c", _UNEXPORT, "sh", str(self._number)])
            self._number = None


PINS.add(
    "sysfs",
    "a GPIO line through /sys/class/gpio (export, direction, value; unexported after): [pins.sysfs] "
    "chip, line",
    SysfsPin,
)
