"""A comparison's table laid out for the terminal it is shown in. Its cells are values a person
reads whole: a verdict, a number with its unit, an interval. A table too wide for the terminal
is never squeezed (rich would cut "undecided" to "un…" and wrap "[-68.2 % – +978 %]" inside a
value): it gives up columns, least needed first; when the cell, the metric, the change and the
verdict still do not fit, the rows are grouped under a heading per cell (the table loses its cell
column); narrower still, each row is a block of lines, broken only between values. Piped output
gets `full_table()`, every column at its natural width (terminal.Output prints it as plain rows)."""

from __future__ import annotations

from rich.console import Console, ConsoleOptions, RenderResult
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

CELL, VERDICT = "cell", "verdict"
RIGHT = ("baseline", "candidate", "runs")
# given up first to last while the table is too wide; what is left is what a row must say
DROPPED = (("test",), ("view",), ("statistic",), ("p (Holm)",), ("decided by",), ("runs",),
           ("baseline", "candidate"))
INDENT = "  "


def verdict_text(text: str) -> Text:
    from jitterlab.report.comparison import VERDICT_STYLES

    return Text(text, style=VERDICT_STYLES.get(text, ""))


class ComparisonTable:
    """The rows of a comparison (report.comparison.comparison_rows) under a title, rendered to fit."""

    def __init__(self, title: str, heads: list[str], rows: list[list[str]]) -> None:
        self.title, self.heads, self.rows = title, heads, rows

    def full_table(self) -> Table:
        """Every column, with the title: what a log or a file gets."""
        return self._table(list(range(len(self.heads))), self.rows, self.title)

    def _table(self, columns: list[int], rows: list[list[str]], title: str | None = None) -> Table:
        table = Table(title=title, title_justify="left")
        for i in columns:
            table.add_column(self.heads[i], justify="right" if self.heads[i] in RIGHT else "left", no_wrap=True)
        for row in rows:
            table.add_row(*(verdict_text(row[i]) if self.heads[i] == VERDICT else Text(row[i]) for i in columns))
        return table

    def _fitting(self, rows: list[list[str]], width: int, leave_out: str = "") -> list[int] | None:
        """The columns of a table of `rows` at most `width` wide: all, or all less the first groups
        of DROPPED; None when what must stay does not fit."""
        columns = [i for i, h in enumerate(self.heads) if h != leave_out]
        natural = {i: max([len(self.heads[i]), *(len(r[i]) for r in rows)]) for i in columns}

        def wide(cols: list[int]) -> int:  # a column: its text, a space either side, one rule
            return sum(natural[i] for i in cols) + 3 * len(cols) + 1

        for group in DROPPED:
            if wide(columns) <= width:
                return columns
            columns = [i for i in columns if self.heads[i] not in group]
        return columns if wide(columns) <= width else None

    def _by_cell(self) -> list[tuple[str, list[list[str]]]]:
        """The rows grouped under their cell, in order."""
        at = self.heads.index(CELL)
        out: list[tuple[str, list[list[str]]]] = []
        for row in self.rows:
            if not out or out[-1][0] != row[at]:
                out.append((row[at], []))
            out[-1][1].append(row)
        return out

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        width = options.max_width
        yield Text(self.title, style="bold")
        if not self.rows:
            return
        columns = self._fitting(self.rows, width)
        if columns is not None:
            yield self._table(columns, self.rows)
            return
        for cell, rows in self._by_cell():
            columns = self._fitting(rows, width - len(INDENT), leave_out=CELL)
            yield Text(cell, style="bold")
            if columns is not None:
                yield Padding(self._table(columns, rows), (0, 0, 0, len(INDENT)))
                continue
            for row in rows:
                yield from self._block(row, width)

    def _block(self, row: list[str], width: int) -> list[Text]:
        """One row as lines: "metric (probe): verdict", the change, then each other column as
        "head value"; broken only between those values."""
        at = {h: i for i, h in enumerate(self.heads)}
        probe = f" ({row[at['probe']]})" if row[at["probe"]] else ""
        first = Text(f"{INDENT}{row[at['metric']]}{probe}: ")
        first.append_text(verdict_text(row[at[VERDICT]]))
        out = [first]
        shown = {CELL, "probe", "metric", VERDICT}
        parts = [row[at["change [95 % CI]"]]] + [f"{h} {row[i]}" for h, i in at.items()
                                                 if h not in shown | {"change [95 % CI]"} and row[i]]
        out += [Text(line, no_wrap=True, overflow="ignore") for line in _lines(parts, width, INDENT * 2)]
        return out


def _lines(parts: list[str], width: int, indent: str) -> list[str]:
    """`parts` joined by ", " in lines of at most `width` where they fit, each part whole."""
    lines: list[str] = []
    for part in parts:
        if lines and len(lines[-1]) + 2 + len(part) <= width:
            lines[-1] += ", " + part
        else:
            lines.append(indent + part)
    return lines
