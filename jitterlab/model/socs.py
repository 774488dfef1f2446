"""GPIO register maps of SoCs, as data: where a line's set, clear, level and direction bits are in
the memory-mapped GPIO block. The gpiomem pin drives them, the register-poll probe reads them, and
a qemu machine's profile names its GPIO block by its record (so the model holds them: targets and
measure both read them).

Sources: the BCM2835 ARM Peripherals datasheet (section 6.1: GPFSEL0 at 0x00, GPSET0 at 0x1C,
GPCLR0 at 0x28, GPLEV0 at 0x34; three function-select bits per line, 001 = output), the same
layout on the BCM2836/7 and BCM2711; /dev/gpiomem (Raspberry Pi OS) maps the block at offset 0,
/dev/mem (a mainline kernel) at its physical address (0x20200000 on BCM2835, 0x3F200000 on
BCM2836/7, 0xFE200000 on BCM2711). The AM335x Technical Reference Manual (GPIO0 at 0x44E07000,
GPIO1 0x4804C000, GPIO2 0x481AC000, GPIO3 0x481AE000; GPIO_OE 0x134 (0 = output), GPIO_DATAIN
0x138, GPIO_CLEARDATAOUT 0x190, GPIO_SETDATAOUT 0x194). The ARM PrimeCell PL061 TRM (GPIODATA
at 0x000-0x3FC: address bits [9:2] mask the lines a write changes, GPIODIR 0x400, 1 = output;
qemu's `virt` machine has one at 0x09030000, its line 3 wired to gpio-keys). The i.MX6 reference
manual, GPIO chapter (GPIO1 at 0x0209C000, GPIO2-7 every 0x4000 after it; DR 0x00, GDIR 0x04,
1 = output, PSR 0x08). Both reached through /dev/mem.
"""

from __future__ import annotations

from dataclasses import dataclass

# How a line's level is written (the programs' --write flag):
SET_CLEAR = "set-clear"  # write `mask` to set_reg for 1, to clr_reg for 0 (write-one-to-set/clear)
MASKED = "masked"  # write `mask` (1) or 0 (0) to set_reg/clr_reg: the register changes only the
#                    masked bits (PL061's address-masked GPIODATA: the address carries the mask)
RMW = "rmw"  # read-modify-write set_reg: or `mask` in for 1, and it out for 0 (i.MX6 DR)
WRITES = (SET_CLEAR, MASKED, RMW)


@dataclass(frozen=True)
class Registers:
    """What a program must do to drive one line: map `length` bytes of `device` at `base`, then
    write the 32-bit register at `set_reg` (level 1) or `clr_reg` (level 0) the `write` way;
    before the first edge, read-modify-write the register at `dir_reg`: clear `dir_clear`, set
    `dir_set`. `lev_reg` & `mask` reads the level back. Offsets are from `base`."""

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
    write: str = SET_CLEAR

    def flags(self, device: str | None = None) -> tuple[str, ...]:
        """The program flags that say all this (the C programs' --gpiomem mode)."""
        return ("--gpiomem", device or self.device, "--map-base", hex(self.base), "--map-len",
                str(self.length), "--set-reg", hex(self.set_reg), "--clr-reg", hex(self.clr_reg),
                "--mask", hex(self.mask), "--dir-reg", hex(self.dir_reg), "--dir-clear",
                hex(self.dir_clear), "--dir-set", hex(self.dir_set), "--write", self.write)


@dataclass(frozen=True)
class Soc:
    """A GPIO block: its name (what [pins.gpiomem] soc says), its lines, the memory device that
    reaches it, and the lines something else holds."""

    name: str
    help: str
    lines: int
    device: str
    reserved: tuple[tuple[int, str], ...] = ()  # (line, what holds it): refused

    def registers(self, line: int, device: str = "") -> Registers:
        """The map for `line` reached through `device` ("": the SoC's own)."""
        raise NotImplementedError

    def line_refusal(self, line: int) -> str | None:
        """Why a probe cannot watch `line` ("pl061 has lines 0-7, not 8"), None when it can."""
        if not 0 <= line < self.lines:
            return f"{self.name} has lines 0-{self.lines - 1}, not {line}"
        holder = dict(self.reserved).get(line)
        if holder is not None:
            return f"{self.name} line {line} belongs to {holder}; drive another line"
        return None


@dataclass(frozen=True)
class Bcm2835(Soc):
    """BCM2835/2836/2837 (Raspberry Pi 1-3) and BCM2711 (Pi 4): one block; /dev/gpiomem maps it
    at offset 0, /dev/mem at `phys_base`."""

    phys_base: int = 0

    def registers(self, line: int, device: str = "") -> Registers:
        device = device or self.device
        base = 0 if device.startswith("/dev/gpiomem") else self.phys_base
        bank, bit = divmod(line, 32)
        fsel_reg, fsel_slot = divmod(line, 10)
        return Registers(device, base, 4096, 0x1C + 4 * bank, 0x28 + 4 * bank, 0x34 + 4 * bank,
                         1 << bit, 4 * fsel_reg, 0b111 << (3 * fsel_slot), 0b001 << (3 * fsel_slot))


_AM335X_BANKS = (0x44E07000, 0x4804C000, 0x481AC000, 0x481AE000)


class Am335x(Soc):
    """TI AM335x (BeagleBone): four banks of 32 lines, line = 32 * bank + bit (gpio1_28 = 60)."""

    def registers(self, line: int, device: str = "") -> Registers:
        bank, bit = divmod(line, 32)
        return Registers(device or self.device, _AM335X_BANKS[bank], 4096, 0x194, 0x190, 0x138,
                         1 << bit, 0x134, 1 << bit, 0)


class Pl061(Soc):
    """ARM PL061 (qemu `virt`): 8 lines; a write to GPIODATA + (mask << 2) changes only the
    masked lines, so the level is written there without touching the others."""

    def registers(self, line: int, device: str = "") -> Registers:
        mask = 1 << line
        return Registers(device or self.device, 0x09030000, 4096, mask << 2, mask << 2, mask << 2,
                         mask, 0x400, 0, mask, MASKED)


class Imx6(Soc):
    """NXP i.MX6 (gpio-mxc): banks GPIO1-GPIO7 of 32 lines, line = 32 * (bank - 1) + bit, as
    Linux numbers them (GPIO4_IO21 = 117); DR is read-modify-written (no set/clear registers) and
    read back as the level: PSR shows an output's pad only where its IOMUX sets SION."""

    def registers(self, line: int, device: str = "") -> Registers:
        bank, bit = divmod(line, 32)
        mask = 1 << bit
        return Registers(device or self.device, 0x0209C000 + 0x4000 * bank, 4096, 0x00, 0x00, 0x00,
                         mask, 0x04, 0, mask, RMW)


SOCS = {
    "bcm2835": Bcm2835("bcm2835", "Raspberry Pi 1/Zero (BCM2835), /dev/gpiomem or /dev/mem", 54,
                       "/dev/gpiomem", phys_base=0x20200000),
    "bcm2837": Bcm2835("bcm2837", "Raspberry Pi 2-3 (BCM2836/7), /dev/gpiomem or /dev/mem", 54,
                       "/dev/gpiomem", phys_base=0x3F200000),
    "bcm2711": Bcm2835("bcm2711", "Raspberry Pi 4 (BCM2711), /dev/gpiomem or /dev/mem", 58,
                       "/dev/gpiomem", phys_base=0xFE200000),
    "am335x": Am335x("am335x", "BeagleBone (TI AM335x), /dev/mem", 128, "/dev/mem"),
    "imx6": Imx6("imx6", "i.MX6 (gpio-mxc, GPIO1-7), /dev/mem", 224, "/dev/mem"),
    "pl061": Pl061("pl061", "ARM PL061 (qemu virt), /dev/mem", 8, "/dev/mem",
                   reserved=((3, "gpio-keys (qemu virt's power button)"),)),
}
