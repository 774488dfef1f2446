"""A GPIO line driven through the SoC's memory-mapped GPIO registers (/dev/gpiomem on a Raspberry
Pi, /dev/mem on a BeagleBone): the fastest user-space path, and one the kernel does not see. The
register map comes from a SoC profile (model/socs.py)."""

from __future__ import annotations

from dataclasses import dataclass

from jitterlab.measure.squarewave.pins.base import PINS, PinBase, PinHandle
from jitterlab.measure.squarewave.pins.chips import explain
from jitterlab.measure.squarewave.pins.offers import BoardLine, InstrumentInput, RegisterBlock
from jitterlab.model.errors import RunFailed, UserError, Where
from jitterlab.model.options import Options
from jitterlab.model.params import Param, ParamValue, choice, integer
from jitterlab.model.socs import SOCS

_CHECK = '[ -e "$1" ] || { echo "$1: No such file or directory" >&2; exit 3; }; ' \
         '[ -w "$1" ] || { echo "$1: Permission denied" >&2; exit 4; }; exit 0'


def _device(value: object, where: str) -> ParamValue:
    if value == "" or (isinstance(value, str) and value.startswith("/dev/")):
        return value
    raise UserError(f'{where}: expected a device path like "/dev/gpiomem" (or "" for the SoC\'s), '
                    f"got {value!r}")


@dataclass(frozen=True)
class GpiomemOptions(Options):
    soc: str
    line: int
    device: str  # "": the SoC's


class GpiomemPin(PinBase):
    offers = frozenset({RegisterBlock, BoardLine, InstrumentInput})
    params = (
        Param("soc", "the SoC's register map: " + ", ".join(f"{s.name} ({s.help})" for s in SOCS.values()),
              choice(*SOCS), '"bcm2711"'),
        Param("line", "the line: BCM GPIO number on a Raspberry Pi, 32 * bank + bit on AM335x "
              "(gpio1_28 = 60), 32 * (bank - 1) + bit on i.MX6 (GPIO4_IO21 = 117), 0-7 on PL061",
              integer(0, 223), "17"),
        Param("device", 'the memory device ("": the SoC\'s, /dev/gpiomem or /dev/mem)', _device,
              '"/dev/gpiomem"', default=""),
    )
    record = GpiomemOptions

    @classmethod
    def _options(cls, settings, where: Where) -> GpiomemOptions:
        return GpiomemOptions.of(cls.validate(settings.options_of("pins", "gpiomem"), where))

    @classmethod
    def check(cls, cell, settings, where: Where) -> None:
        opts = cls._options(settings, where.at("pins", "gpiomem"))
        soc = SOCS[opts.soc]
        if opts.line >= soc.lines:
            raise where.at("pins", "gpiomem", "line").error(f"{soc.name} has lines 0-{soc.lines - 1}, "
                            f"not {opts.line}")
        holder = dict(soc.reserved).get(opts.line)
        if holder is not None:
            free = ", ".join(str(n) for n in range(soc.lines) if n not in dict(soc.reserved))
            raise where.at("pins", "gpiomem", "line").error(f"{soc.name} line {opts.line} belongs to "
                            f"{holder}; choose another line ({free})")

    @classmethod
    def check_target(cls, cell, settings, where: Where, target) -> None:
        soc = SOCS[cls._options(settings, where.at("pins", "gpiomem")).soc]
        target.need_soc(soc, where.at("pins", "gpiomem", "soc"))  # another SoC's registers are no GPIO there

    @classmethod
    def declare(cls, settings) -> PinHandle:
        opts = cls._options(settings, Where(keys=("pins", "gpiomem")))
        soc, line = SOCS[opts.soc], opts.line
        regs = soc.registers(line, opts.device)
        # the line's chip is not known here: a loopback probe is told it (probes.gpio-loopback.chip)
        offers = (RegisterBlock(regs, regs.device), BoardLine(soc=soc, soc_line=line), InstrumentInput())
        return PinHandle("gpiomem", offers, description=f"{soc.name} line {line} via {regs.device}")

    def setup(self) -> PinHandle:
        handle = self.declare(self.ctx.settings)
        block = handle.get(RegisterBlock)
        assert block is not None, "declare() offers the register block"
        device = block.device
        done = self.ctx.target.run(["sh", "-c", _CHECK, "sh", device])
        if not done.ok:
            raise RunFailed(explain(done.stderr, f"pins.gpiomem: {device}") +
                            ("" if "denied" not in done.stderr else
                             "; /dev/gpiomem needs the gpio group, /dev/mem root"), status="unavailable")
        return handle

    def teardown(self) -> None:
        return None  # the program leaves the line low; nothing is held


PINS.add(
    "gpiomem",
    "a GPIO line through the SoC's registers, mmap'd (/dev/gpiomem, /dev/mem): [pins.gpiomem] soc, line",
    GpiomemPin,
)
