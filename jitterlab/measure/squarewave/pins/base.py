"""What a pin is: it sets itself up for a run, hands over the forms in which programs and observers
can reach it (its offers, declared by the kind), and tears itself down on every path."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar, Protocol

from jitterlab.measure.squarewave.cell import WaveCell
from jitterlab.measure.squarewave.option_table import OptionTable
from jitterlab.measure.squarewave.pins.offers import Forms, Offer, OfferT
from jitterlab.model.errors import Where
from jitterlab.model.params import Param
from jitterlab.model.records import Cell, RunSettings
from jitterlab.model.registry import Registry
from jitterlab.targets.capabilities import Capability, Declared


@dataclass(frozen=True)
class PinHandle:
    """A pin set up for one run: the forms in which a program or an observer can reach it
    (pins/offers.py), each with what it takes (a path, a chip and line, a register map)."""

    kind: str
    offers: tuple[Offer, ...] = ()
    description: str = ""

    def get(self, form: type[OfferT]) -> OfferT | None:
        """The handle's offer of `form` (or of a form derived from it), else None."""
        return next((o for o in self.offers if isinstance(o, form)), None)

    def bind(self, needs: Forms) -> Offer | None:
        """The first of `needs` (a consumer's forms, preferred first) that the handle offers."""
        return next((found for form in needs if (found := self.get(form)) is not None), None)


class Pin(Protocol):
    """One kind of pin: class attributes describe it, an instance serves one run."""

    offers: ClassVar[frozenset[type[Offer]]]
    """The forms its handle offers (impls and probes bind to them; the handle carries each)."""
    params: ClassVar[tuple[Param, ...]]
    """Its options, in [pins.NAME]."""
    tools: ClassVar[dict[str, str]]
    """Commands it needs on the target -> Debian package."""
    reads: ClassVar[type[Capability] | None]
    """The target's capability it is reached through (a real-time unit beside the target), if any:
    the pin is usable only on a target that has it."""

    @classmethod
    def validate(cls, options: Mapping[str, object], where: str | Where) -> dict: ...

    @classmethod
    def check(cls, cell: Cell, settings: RunSettings, where: Where) -> None:
        """Refuse a cell this pin cannot serve with these settings (UserError); `where` names the
        matrix, and `where.at("pins", name)` the pin's table."""
        ...

    @classmethod
    def check_target(cls, cell: Cell, settings: RunSettings, where: Where, target: Declared) -> None:
        """Refuse a cell whose target, as its [[target]] declares it, cannot have this pin (an emulated
        board whose GPIO block is another SoC's): UserError; `where` as in check()."""
        ...

    @classmethod
    def declare(cls, settings: RunSettings) -> PinHandle:
        """The handle as the pin's options declare it, before anything is set up: the offers whose
        data the options fix (a line, a register block), for what a probe checks when the campaign is
        read; what only setup finds (a chip's label) is left out."""
        ...

    def setup(self) -> PinHandle:
        """Prepare the pin for the run; RunFailed (busy, missing, not permitted) with the fix."""
        ...

    def teardown(self) -> None:
        """Release the pin. Idempotent, and safe to call when setup() failed or never ran."""
        ...


class PinBase(OptionTable):
    """Defaults for the optional parts of the Pin protocol; its options: OptionTable."""

    named_by = "pin"
    offers: ClassVar[frozenset[type[Offer]]]  # no default: a pin kind says what its handle offers
    tools: ClassVar[dict[str, str]] = {}
    reads: ClassVar[type[Capability] | None] = None

    @classmethod
    def check(cls, cell: Cell, settings: RunSettings, where: Where) -> None:
        """By default the pin's options must be complete (a required one missing from [pins.NAME] is
        an error here)."""
        name = WaveCell.of_cell(cell).pin
        cls.options_in(settings, name, where.at("pins", name))

    @classmethod
    def check_target(cls, cell: Cell, settings: RunSettings, where: Where, target: Declared) -> None:
        return None

    @classmethod
    def declare(cls, settings: RunSettings) -> PinHandle:
        return PinHandle("")


PINS: Registry[type[PinBase]] = Registry("pin")
