"""A comparison's table laid out for the terminal it is shown in. Its cells are values a person
reads whole: a verdict, a number with its unit, an interval. What a table does to fit a width is
report/layout.py's (its rules dropped, its free-text column folded, one record per block); what a
comparison adds is the order in which it gives up what it shows, least needed first, when even that
is too wide: the columns that say how a row was tested, then the change's interval goes under its
change and then away, never the two values a verdict judges (baseline and candidate) nor the
verdict; then the rows are grouped under a heading per cell (the table loses its cell column), and
narrower still each row is a record of every column. Rich would cut "undecided" to "un…" and wrap
"[-68.2 % – +978 %]" inside a value; none of these does. Piped output gets `full_table()`, every
column at its natural width (terminal.Output prints it as plain rows)."""

from __future__ import annotations

from collections.abc import Iterable

from rich.console import Console
from rich.table import Table
from rich.text import Text

from jitterlab.report import layout

CELL, VERDICT, CHANGE = "cell", "verdict", "change [95 % CI]"
RIGHT = ("baseline", "candidate", "runs")
# how the change column shows its interval: on its line, under the change, or not at all
LINE, FOLDED, BARE = "line", "folded", "bare"
INTERVAL = "the change's interval"  # named among what was given up, once it is
# given up first to last while the table is too wide (a column, or how the change shows its
# interval); what is left is what a row must say: its cell, probe and metric, the two values, the
# change and the verdict
DROPPED: tuple[tuple[str, ...] | str, ...] = (("test",), ("view",), ("statistic",), ("p (Holm)",),
                                              ("decided by",), FOLDED, ("runs",), BARE)


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

    def table(self, heads: list[str], rows: list[list[str]], title: str | None = None,
              interval: str = LINE) -> Table:
        """A table of the columns `heads` (in the comparison's order) of `rows`, the change's
        interval shown as `interval` says."""
        at = {h: i for i, h in enumerate(self.heads)}
        table = Table(title=title, title_justify="left")
        for h in heads:
            head = "change" if h == CHANGE and interval == BARE else h
            table.add_column(Text(head), justify="right" if h in RIGHT else "left", no_wrap=True)
        for row in rows:
            table.add_row(*(self._cell(h, row[at[h]], interval) for h in heads))
        return table

    def _cell(self, head: str, text: str, interval: str) -> Text:
        if head == VERDICT:  # "worse (load differed)" has the look of "worse"
            return Text(text, style=self.styles.get(text.split(" (")[0], ""))
        if head == CHANGE and interval != LINE:
            change, sep, bounds = text.partition(" [")
            return Text(change + (f"\n[{bounds}" if sep and interval == FOLDED else ""))
        return Text(text)

    def _narrowed(self, console: Console, rows: list[list[str]],
                  leave_out: str = "") -> tuple[Table, list[str]] | None:
        """The first table of `rows` that fits the console (report.layout.fits), giving up the
        steps of DROPPED in turn, with what it gave up; None when none fits."""
        heads = [h for h in self.heads if h != leave_out]
        interval = LINE
        for step in ((), *DROPPED):
            if isinstance(step, str):
                interval = step
            else:
                heads = [h for h in heads if h not in step]
            table = self.table(heads, rows, interval=interval)
            if layout.fits(console, table):
                given_up = [h for h in self.heads if h not in heads and h != leave_out]
                return table, given_up + ([INTERVAL] if interval == BARE else [])
        return None

    def _by_cell(self) -> list[tuple[str, list[list[str]]]]:
        """The rows grouped under their cell, in order; what a verdict says of its whole cell
        ("worse (load differed)") goes to the cell's heading, once."""
        at, verdict = self.heads.index(CELL), self.heads.index(VERDICT)
        out: list[tuple[str, list[list[str]]]] = []
        for row in self.rows:
            if not out or out[-1][0] != row[at]:
                out.append((row[at], []))
            out[-1][1].append(row)
        grouped = []
        for cell, rows in out:
            remarks = {row[verdict].partition(" (")[2] for row in rows} - {""}
            if len(remarks) == 1:
                remark = remarks.pop()
                cell = f"{cell} ({remark}"
                rows = [[*row[:verdict], row[verdict].partition(" (")[0], *row[verdict + 1:]] for row in rows]
            grouped.append((cell, rows))
        return grouped

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
            yield from _given_up(sorted(dropped, key=[*self.heads, INTERVAL].index))
            return
        yield from layout.records(console, self.table(list(self.heads), self.rows), console.width)


def _given_up(heads: list[str]) -> list:
    if not heads:
        return []
    return [layout.Prose(Text(f"left out at this width: {', '.join(heads)} (a wider terminal, or output to "
                              "a pipe or file, shows them)", style="dim"))]
