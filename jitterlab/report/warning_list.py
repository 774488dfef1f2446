"""Warnings and their remedies as a person copies them: a remedy is often a command
(`sysctl -w kernel.sched_rt_runtime_us=-1`), and a command broken over two lines, or cut inside a
word, no longer runs when pasted. Piped, the warnings are a plain table whose rows are never
wrapped (terminal.Output). In a terminal too narrow for the table, each cause gets its line(s) and
its remedy lines of its own, broken only between clauses ("; ", ", or "), else between words,
never inside a word: a word wider than the terminal is left whole for the terminal to show."""

from __future__ import annotations

from rich.console import Console, ConsoleOptions, RenderResult
from rich.table import Table
from rich.text import Text

from jitterlab.report.layout import Prose, wrap

INDENT = "    "
_CLAUSE_ENDS = ("; ", ", or ")  # where a remedy's sentence may break first (outside parentheses)


def _clauses(text: str) -> list[str]:
    """`text` cut after each clause end that is outside parentheses; the pieces join back to it."""
    pieces, depth, start, i = [], 0, 0, 0
    while i < len(text):
        c = text[i]
        depth += (c == "(") - (c == ")")
        end = next((e for e in _CLAUSE_ENDS if depth == 0 and text.startswith(e, i)), None)
        if end is not None:
            cut = i + len(end.rstrip(" ")) + 1  # the clause keeps its punctuation, the space is eaten
            pieces.append(text[start:cut].rstrip())
            start = i = cut
            continue
        i += 1
    pieces.append(text[start:])
    return [p for p in pieces if p]


def paste_safe_lines(text: str, width: int) -> list[str]:
    """`text` in lines of at most `width` characters where it can be: broken between clauses first,
    then where report/layout.py allows (between words, never inside a command, a value or its
    unit); a longer piece is a line of its own, whole."""
    width = max(width, 20)
    lines: list[str] = []
    for clause in _clauses(text):
        if lines and len(lines[-1]) + 1 + len(clause) <= width:
            lines[-1] += " " + clause
            continue
        lines += [line.plain for line in wrap(Text(clause), width, hang=0)]
    return lines


class WarningList:
    """Warnings grouped by cause, with who they affect and their remedy (`rows`: message, affects,
    remedy); rendered as a table when it fits, else as a list with each remedy on lines of its own."""

    def __init__(self, title: str, rows: list[tuple[str, str, str]]) -> None:
        self.title = title
        self.rows = rows

    def table(self) -> Table:
        table = Table(title=self.title)
        for name in ("warning", "affects", "remedy"):
            table.add_column(name, overflow="fold")
        for message, affects, remedy in self.rows:
            table.add_row(Text(message), Text(affects), Text(remedy))
        return table

    def _fits(self, options: ConsoleOptions) -> bool:
        """Whether every row fits on one line of the table: cells, their padding and the rules."""
        widths = [max(len(name), *(len(row[i]) for row in self.rows))
                  for i, name in enumerate(("warning", "affects", "remedy"))]
        return sum(widths) + 2 * len(widths) + len(widths) + 1 <= options.max_width

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        if self._fits(options):
            yield self.table()
            return
        yield Text(self.title, style="italic", justify="center")
        for message, affects, remedy in self.rows:
            yield Prose(Text.assemble("• ", message, (f" — {affects}", "dim")))
            for line in paste_safe_lines(remedy, options.max_width - len(INDENT)):
                yield Text(INDENT + line, no_wrap=True, overflow="ignore", style="cyan")
