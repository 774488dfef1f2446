"""What a pin's handle offers: one small class per form in which a program or an observer can
reach the line (a value file, a mappable level byte, a register block, a line on a chip, ...).

A pin kind declares the forms its handle offers (`offers`); an impl and a probe declare the forms
they can work with (`needs`, any one of them suffices, preferred first). Nobody lists anybody by
name, so a new pin, impl or probe binds to the others through these classes, and a new form is a
new class here (or in the module of the pin that offers it).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import ClassVar, TypeVar

from jitterlab.model.socs import Registers, Soc
from jitterlab.targets.capabilities import GpioTrace


class Offer:
    """A form of access to a pin; `what` completes "it needs ..." in a refusal."""

    what: ClassVar[str] = ""

    @property
    def program_args(self) -> tuple[str, ...]:
        """The flags a wave-making program (jitterlab/programs/*) gets to reach the pin this way."""
        return ()


@dataclass(frozen=True)
class ValueFile(Offer):
    """A file whose first byte the program writes, '0' or '1' (write(), pwrite, echo)."""

    what: ClassVar[str] = "a value file to write '0'/'1' into"
    path: str

    @property
    def program_args(self) -> tuple[str, ...]:
        return ("--pin", self.path)


@dataclass(frozen=True)
class MappedLevel(Offer):
    """A file the program maps and stores the level byte into ('0'/'1' at byte 0)."""

    what: ClassVar[str] = "a level byte to store into through mmap"
    path: str

    @property
    def program_args(self) -> tuple[str, ...]:
        return ("--pin", self.path)


@dataclass(frozen=True)
class RegisterBlock(Offer):
    """A memory-mapped GPIO block: the program maps it and writes the line's set/clear registers."""

    what: ClassVar[str] = "a GPIO register block to map"
    registers: Registers
    device: str

    @property
    def program_args(self) -> tuple[str, ...]:
        return self.registers.flags(self.device)


@dataclass(frozen=True)
class ChipLine(Offer):
    """A line of a GPIO character device that the program requests itself (libgpiod)."""

    what: ClassVar[str] = "a GPIO line to request from /dev/gpiochipN"
    device: str
    line: int

    @property
    def program_args(self) -> tuple[str, ...]:
        return ("--chip", self.device, "--line", str(self.line))


@dataclass(frozen=True)
class KernelLine(Offer):
    """A line the kernel's GPIO consumer API finds by its chip's label and offset (a kernel module)."""

    what: ClassVar[str] = "a GPIO line the kernel can find by chip label and offset"
    chip_label: str
    line: int


@dataclass(frozen=True)
class LevelPage(Offer):
    """A file whose byte at `offset` is the line's level, which an observer may map and poll."""

    what: ClassVar[str] = "a level byte an observer can map and poll"
    path: str
    offset: int = 0


@dataclass(frozen=True)
class BoardLine(Offer):
    """A line on the board's header that a wire can take to another GPIO input of the board, or an
    observer outside an emulated board can follow. It says which line it is, as far as the pin knows:
    `chip_label` and `line` (its offset on that chip; "" and -1 where the pin does not know them),
    `soc` and `soc_line` (that SoC's register map, model/socs.py, and the line's number in it, where
    the pin drives the registers; None and -1 otherwise)."""

    what: ClassVar[str] = "a board line that another GPIO input can be wired to"
    chip_label: str = ""
    line: int = -1
    soc: Soc | None = None
    soc_line: int = -1


@dataclass(frozen=True)
class InstrumentInput(Offer):
    """A signal an instrument's input (a logic analyzer, an oscilloscope) is connected to."""

    what: ClassVar[str] = "a signal an instrument's input is wired to"


@dataclass(frozen=True)
class OutsideSignal(InstrumentInput):
    """The instrument's input carries a signal from outside (a generator, sigrok's demo pattern),
    not the program's wave: what the instrument measures is not the program's."""

    what: ClassVar[str] = "an outside signal on the instrument's input"


@dataclass(frozen=True)
class TracedOutput(Offer):
    """An output line of an emulated GPIO controller whose levels the emulator traces on the
    controller (`trace`, line `line`): an observer there follows it without the target's help."""

    what: ClassVar[str] = "an output line whose levels an emulator traces"
    trace: GpioTrace
    line: int


OfferT = TypeVar("OfferT", bound=Offer)
Forms = tuple[type[Offer], ...]


def serves(needs: Forms, offers: Iterable[type[Offer]]) -> bool:
    """True when a pin offering `offers` gives a consumer that needs any one of `needs` what it
    needs (a consumer that needs nothing binds to every pin)."""
    offers = tuple(offers)
    return not needs or any(issubclass(o, n) for n in needs for o in offers)


def describe(needs: Forms) -> str:
    """"a value file ... or a GPIO line ...", for a refusal."""
    return " or ".join(n.what for n in needs) or "nothing"
