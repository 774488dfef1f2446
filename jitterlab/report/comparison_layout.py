"""A comparison's table laid out for the terminal it is shown in. Its cells are values a person
reads whole: a verdict, a number with its unit, an interval. What a table does to fit a width is
report/layout.py's (its rules dropped, its free-text column folded, one record per block); what a
comparison adds is the order in which it gives up columns, least needed first, when even that is too
wide: then the rows are grouped under a heading per cell (the table loses its cell column), and
narrower still each row is a record of every column. Rich would cut "undecided" to "un…" and wrap
"[-68.2 % – +978 %]" inside a value; none of these does. Piped output gets `full_table()`, every
column at its natural width (terminal.Output prints it as plain rows)."""

from __future__ import annotations

from collections.abc import Iterable

from rich.console import Console
from rich.table import Table
from rich.text import Text

from jitterlab.report import layout

CELL, VERDICT = "cell", "verdict"
RIGHT = ("baseline", "candidate", "runs")
# given up first to last while the table is too wide; what is left is what a row must say
DROPPED = (("test",), ("view",), ("statistic",), ("p (Holm)",), ("decided by",), ("runs",),
           ("baseline", "candidate"))


class ComparisonTable:
    """The rows of a comparison (report.comparison.comparison_rows) under a title; `styles` gives
    each verdict its look."""

    def __init__(self, title: str, heads: list[str], rows: list[list[str]],
                 styles: dict[str, str] | None = None) -> None:
        self.title, self.heads, self.rows = title, heads, rows
        self.styles = styles or {}

    def full_table(self) -> Table:
        """Every column, with the title: what a log or a file gets."""
        return self.table(list(self.heads), self.rows, self.title)

    def table(self, heads: list[str], rows: list[list[str]], title: str | None = None) -> Table:
        """A table of the columns `heads` (in the comparison's order) of `rows`."""
        at = {h: i for i, h in enumerate(self.heads)}
        table = Table(title=title, title_justify="left")
        for h in heads:
            table.add_column(Text(h), justify="right" if h in RIGHT else "left", no_wrap=True)
        for row in rows:
            table.add_row(*(Text(row[at[h]], style=self.styles.get(row[at[h]], "")) if h == VERDICT
                            else Text(row[at[h]]) for h in heads))
        return table

    def _narrowed(self, console: Console, rows: list[list[str]],
                  leave_out: str = "") -> tuple[Table, list[str]] | None:
        """The first table of `rows` that fits the console (report.layout.fits), giving up the
        groups of DROPPED in turn, with the columns it gave up; None when none fits."""
        heads = [h for h in self.heads if h != leave_out]
        for group in ((), *DROPPED):
            heads = [h for h in heads if h not in group]
            table = self.table(heads, rows)
            if layout.fits(console, table):
                return table, [h for h in self.heads if h not in heads and h != leave_out]
        return None

    def _by_cell(self) -> list[tuple[str, list[list[str]]]]:
        """The rows grouped under their cell, in order."""
        at = self.heads.index(CELL)
        out: list[tuple[str, list[list[str]]]] = []
        for row in self.rows:
            if not out or out[-1][0] != row[at]:
                out.append((row[at], []))
            out[-1][1].append(row)
        return out

    def fitted(self, console: Console) -> Iterable:
        """The renderables that show the comparison at the console's width, each printed with
        crop=False: the title, the table (or a table per cell, or a record per row), and a line
        naming the columns given up."""
        yield layout.Prose(Text(self.title, style="bold"))
        if not self.rows:
            return
        found = self._narrowed(console, self.rows)
        if found is not None:
            table, dropped = found
            yield from layout.fitted(console, table)
            yield from _given_up(dropped)
            return
        groups = self._by_cell()
        per_cell = [self._narrowed(console, rows, leave_out=CELL) for _, rows in groups]
        if all(per_cell):
            for (cell, _), (table, _) in zip(groups, per_cell, strict=True):
                yield layout.Prose(Text(cell or "(every cell)", style="bold"))
                yield from layout.fitted(console, table)
            dropped = {h for _, left_out in per_cell for h in left_out}
            yield from _given_up(sorted(dropped, key=self.heads.index))
            return
        yield from layout.records(console, self.table(list(self.heads), self.rows), console.width)


def _given_up(heads: list[str]) -> list:
    if not heads:
        return []
    return [layout.Prose(Text(f"columns left out at this width: {', '.join(heads)} (a wider terminal, or "
                              "output to a pipe or file, shows them)", style="dim"))]
