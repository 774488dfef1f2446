"""GPIO register maps of the SoCs the gpiomem pin drives, as data: where a line's set, clear,
level and direction bits are in the memory-mapped GPIO block.

Sources: the BCM2835 ARM Peripherals datasheet (section 6.1: GPFSEL0 at 0x00, GPSET0 at 0x1C,
GPCLR0 at 0x28, GPLEV0 at 0x34; three function-select bits per line, 001 = output), the same
layout on the BCM2711 (Raspberry Pi 4, /dev/gpiomem maps the block at offset 0 for both); the
AM335x Technical Reference Manual (GPIO0 at 0x44E07000, GPIO1 0x4804C000, GPIO2 0x481AC000,
GPIO3 0x481AE000; GPIO_OE 0x134 (0 = output), GPIO_DATAIN 0x138, GPIO_CLEARDATAOUT 0x190,
GPIO_SETDATAOUT 0x194), reached through /dev/mem.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Registers:
    """What a program must do to drive one line: map `length` bytes of `device` at `base`, then
    write `mask` to the 32-bit register at `set_reg` (level 1) or `clr_reg` (level 0); before the
    first edge, read-modify-write the register at `dir_reg`: clear `dir_clear`, set `dir_set`.
    `lev_reg` & `mask` reads the level back. Offsets are from `base`."""

    device: str
    base: int
    length: int
    set_reg: int
    clr_reg: int
    lev_reg: int
    mask: int
    dir_reg: int
    dir_clear: int
    dir_set: int

    def flags(self, device: str | None = None) -> tuple[str, ...]:
        """The program flags that say all this (the C programs' --gpiomem mode)."""
        return ("--gpiomem", device or self.device, "--map-base", hex(self.base), "--map-len",
                str(self.length), "--set-reg", hex(self.set_reg), "--clr-reg", hex(self.clr_reg),
                "--mask", hex(self.mask), "--dir-reg", hex(self.dir_reg), "--dir-clear",
                hex(self.dir_clear), "--dir-set", hex(self.dir_set))


@dataclass(frozen=True)
class Soc:
    name: str
    help: str
    lines: int
    device: str

    def registers(self, line: int) -> Registers:
        raise NotImplementedError


class Bcm2835(Soc):
    """BCM2835/2836/2837 (Raspberry Pi 1-3) and BCM2711 (Pi 4): one block, /dev/gpiomem."""

    def registers(self, line: int) -> Registers:
        bank, bit = divmod(line, 32)
        fsel_reg, fsel_slot = divmod(line, 10)
        return Registers(self.device, 0, 4096, 0x1C + 4 * bank, 0x28 + 4 * bank, 0x34 + 4 * bank,
                         1 << bit, 4 * fsel_reg, 0b111 << (3 * fsel_slot), 0b001 << (3 * fsel_slot))


_AM335X_BANKS = (0x44E07000, 0x4804C000, 0x481AC000, 0x481AE000)


class Am335x(Soc):
    """TI AM335x (BeagleBone): four banks of 32 lines, line = 32 * bank + bit (gpio1_28 = 60)."""

    def registers(self, line: int) -> Registers:
        bank, bit = divmod(line, 32)
        return Registers(self.device, _AM335X_BANKS[bank], 4096, 0x194, 0x190, 0x138, 1 << bit, 0x134,
                         1 << bit, 0)


SOCS = {
    "bcm2835": Bcm2835("bcm2835", "Raspberry Pi 1-3 (BCM2835/6/7), /dev/gpiomem", 54, "/dev/gpiomem"),
    "bcm2711": Bcm2835("bcm2711", "Raspberry Pi 4 (BCM2711), /dev/gpiomem", 58, "/dev/gpiomem"),
    "am335x": Am335x("am335x", "BeagleBone (TI AM335x), /dev/mem", 128, "/dev/mem"),
}
