"""What a pin is: it sets itself up for a run, tells the program how to reach it, tells an
observer what it may watch, and tears itself down on every path."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar, Protocol

from jitterlab.measure.context import RunContext
from jitterlab.model.params import Param, parse_options
from jitterlab.model.records import Cell, RunSettings
from jitterlab.model.registry import Registry


@dataclass(frozen=True)
class PinHandle:
    """A pin set up for one run.

    `program_args` are the flags every impl gets for it (e.g. ("--pin", path)). `level_path`, when
    not None, is a file whose first byte is the line's level ('0'/'1') and that an observer may
    mmap and poll (the vpin pin; a virtual GPIO chip's level page).
    """

    kind: str
    program_args: tuple[str, ...]
    level_path: str | None = None
    description: str = ""
    level_offset: int = 0  # the level's byte in level_path
    chip_label: str = ""  # a real line: its chip's label and offset, for kernel-space impls and
    line: int = -1  # for probes that watch it from the same chip (gpio-loopback)


class Pin(Protocol):
    """One kind of pin: class attributes describe it, an instance serves one run."""

    probes: ClassVar[frozenset[str]]
    """The probes that can observe it."""
    params: ClassVar[tuple[Param, ...]]
    """Its options, in [pins.NAME]."""
    tools: ClassVar[dict[str, str]]
    """Commands it needs on the target -> Debian package."""

    @classmethod
    def validate(cls, options: Mapping[str, object], where: str) -> dict: ...

    @classmethod
    def check(cls, cell: Cell, settings: RunSettings, where: str) -> None:
        """Refuse a cell this pin cannot serve with these settings (UserError); `where` is the
        campaign file's prefix ("campaign.toml: ")."""
        ...

    def setup(self) -> PinHandle:
        """Prepare the pin for the run; RunFailed (busy, missing, not permitted) with the fix."""
        ...

    def teardown(self) -> None:
        """Release the pin. Idempotent, and safe to call when setup() failed or never ran."""
        ...


class PinBase:
    """Defaults for the optional parts of the Pin protocol; subclasses set `ctx` in __init__."""

    probes: ClassVar[frozenset[str]] = frozenset({"self"})
    params: ClassVar[tuple[Param, ...]] = ()
    tools: ClassVar[dict[str, str]] = {}

    def __init__(self, ctx: RunContext) -> None:
        self.ctx = ctx

    @classmethod
    def validate(cls, options: Mapping[str, object], where: str) -> dict:
        return parse_options(cls.params, options, where, "this pin")

    @classmethod
    def check(cls, cell: Cell, settings: RunSettings, where: str) -> None:
        """`where` is the campaign file's prefix ("campaign.toml: "); by default the pin's options
        must be complete (a required one missing from [pins.NAME] is an error here)."""
        name = str(cell.param("pin", ""))
        cls.validate(settings.options_of("pins", name), f"{where}pins.{name}")

    def options(self) -> dict:
        """This pin's [pins.NAME] options for the run, defaults filled in."""
        name = str(self.ctx.cell.param("pin", ""))
        return self.validate(self.ctx.settings.options_of("pins", name), f"pins.{name}")


PINS: Registry[type[PinBase]] = Registry("pin")
