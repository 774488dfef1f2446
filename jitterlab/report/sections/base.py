"""What a report section is and where sections register: one per benchmark that has its own
(squarewave) and one for the standard benchmarks; each builds its part of the HTML page and of the
terminal summary from stored runs. Nothing here runs a target."""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from jitterlab.model.records import Cell, RunRecord
from jitterlab.model.registry import Registry
from jitterlab.report.warning_groups import Note
from jitterlab.store.catalog import Store

if TYPE_CHECKING:  # matplotlib loads with the figures, for the report alone
    from matplotlib.figure import Figure

DEFAULT = "standard"


@dataclass
class SectionContext:
    """What a section may use: the store (raw series), `emit(figure, name, targets) -> inline svg`
    (`targets`: those whose data the figure shows; one with an emulated CPU marks it), the list of
    what could not be shown (with why), the per-run figure budget, and the targets whose CPU was
    emulated (functional evidence only)."""

    store: Store
    emit: Callable[[Figure, str, Collection[str]], str]
    skipped: list[str] = field(default_factory=list)
    max_run_figures: int = 12
    emulated: frozenset[str] = frozenset()


class Section(Protocol):
    title: str
    template: str
    """The jinja template (in report/templates) that renders build()'s result as `s`."""

    def build(self, runs: list[RunRecord], ctx: SectionContext) -> dict:
        """The template's variables for these runs (all of this section's benchmarks)."""
        ...

    def terminal(self, runs: list[RunRecord], campaign: str, planned: Collection[Cell] | None = None) -> list:
        """Rich renderables summarizing these runs for `run` and `show`; `planned`: the cells of the
        campaign's matrix when known (a cell without a run is then "not measured yet", else excluded)."""
        ...

    def warnings(self, runs: list[RunRecord]) -> list[Note]:
        """What only the stored runs can tell (too few repetitions, ...), each of a cell or a run."""
        ...


SECTIONS: Registry[Section] = Registry("report section")

