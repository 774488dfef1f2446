"""What pins and probes share: a cell names one by a parameter (`pin`, `probe`), and its options are
a table of the campaign ([pins.NAME], [probes.NAME]), read with its `params` where the campaign is
read, typed once by its `record`, and given to a run with its defaults filled in."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from jitterlab.measure.context import RunContext
from jitterlab.model.errors import Where
from jitterlab.model.options import Options
from jitterlab.model.params import Param, parse_options
from jitterlab.model.records import RunSettings


class OptionTable:
    """A plug-in configured by a table of the campaign; subclasses keep the run context."""

    named_by: ClassVar[str]  # the cell's parameter that names it ("pin"); its table is [<named_by>s.NAME]
    params: ClassVar[tuple[Param, ...]] = ()
    record: ClassVar[type[Options] | None] = None  # its options as a typed record (model/options.py)

    def __init__(self, ctx: RunContext) -> None:
        self.ctx = ctx

    @classmethod
    def validate(cls, options: Mapping[str, object], where: str | Where) -> dict:
        parsed = parse_options(cls.params, options, where, f"this {cls.named_by}")
        if cls.record is not None:
            cls.record.of(parsed)  # typed once where the campaign is read: a record at odds is a bug
        return parsed

    @classmethod
    def options_in(cls, settings: RunSettings, name: str, where: Where) -> dict:
        """The [<named_by>s.NAME] options as the campaign read them (canonical values: a duration in
        ns), defaults filled in; UserError naming `where` when a required one is missing."""
        given = settings.options_of(f"{cls.named_by}s", name)
        rest = [p for p in cls.params if p.name not in given]
        return {**parse_options(rest, {}, where, f"this {cls.named_by}"), **given}

    def options(self) -> dict:
        """Its options for the run, defaults filled in."""
        name = str(self.ctx.cell.param(self.named_by, ""))
        return self.options_in(self.ctx.settings, name, Where(keys=(f"{self.named_by}s", name)))
