"""What a terminal of a given width shows: prose broken between words, never inside a command a
person copies (`jitterlab show --results results`, `sysctl -w kernel.sched_rt_runtime_us=-1`),
between a number and its unit ("7.63 %"), after a mark that belongs to a value ("≥ 5,588 %") or
inside an interval ("[-68 % – +978 %]"); tables at their natural width when it fits, else without
their rules (columns two spaces apart), else with their one column of free text folded that way,
else one record per block: a column, a value or a verdict is never cut. A piece longer than the
terminal is left whole on a line of its own: the terminal folds it, and copying that line gives it
back whole, which a newline put inside it would not.

Piped output never comes here (terminal.Output prints plain rows at their full width)."""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable

from rich.console import Console, ConsoleOptions, RenderResult
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

# the programs whose command lines jitterlab's suggestions and remedies name
COMMAND_WORDS = ("jitterlab", "sysctl", "cpupower", "modprobe", "apt", "apt-get", "pip", "echo", "setcap",
                 "systemctl", "chrt", "taskset", "sudo")
# words that end a command written inside a sentence ("apt install x to use ...")
_STOP_WORDS = frozenset(("and", "or", "for", "to", "then", "until", "as", "on", "in", "where", "when", "if",
                         "with", "the", "a", "an", "that", "which", "so", "is", "was", "once", "at", "by",
                         "from", "of", "it", "—", "–", "(as", "(until", "(or"))
_MARKS = frozenset(("≥", "≤", "<", ">", "=", "~", "±", "–", "x"))  # they belong with the value after them
_ENDS_IN_DIGIT = re.compile(r"[\d]\W*$")
_TOKEN = re.compile(r"\S+")
MIN_TEXT_COLUMN = 24  # narrower than this, a table's free-text column is read better as records
INDENT = "    "


def command_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of every command in `text`: from a COMMAND_WORDS word to the end of its
    arguments (a clause end "; " or ", ", a closing parenthesis or backtick it did not open, or a
    word of the sentence around it), trailing punctuation left out."""
    tokens = [(m.start(), m.end(), m.group()) for m in _TOKEN.finditer(text)]
    spans: list[tuple[int, int]] = []
    i = 0
    while i < len(tokens):
        start, _, word = tokens[i]
        lead = len(word) - len(word.lstrip("(`\"'"))
        if word[lead:] not in COMMAND_WORDS or i + 1 >= len(tokens) or not _argument(tokens[i + 1][2]):
            i += 1
            continue
        end, j = tokens[i][1], i
        while True:
            _, tok_end, tok = tokens[j]
            end = tok_end
            if tok.endswith((";", ",", ")", "`", ".", ":")) or j + 1 >= len(tokens) or \
                    tokens[j + 1][2] in _STOP_WORDS or tokens[j + 1][2].startswith("("):
                break
            j += 1
        chunk = text[start + lead:end]
        opened = chunk.count("(") - chunk.count(")")
        while chunk and (chunk[-1] in ";,.:`" or (chunk[-1] == ")" and opened < 0)
                         or (chunk[-1] in "\"'" and chunk.count(chunk[-1]) % 2)):
            opened += chunk[-1] == ")"
            chunk = chunk[:-1]
        if " " in chunk:
            spans.append((start + lead, start + lead + len(chunk)))
        i = j + 1
    return spans


def _argument(word: str) -> bool:
    """Whether the word after a program's name reads as its first argument ("run", "-w"), not as
    the sentence going on ("jitterlab 0.1.0", "jitterlab report: tiny", "sysctl settings to")."""
    return word not in _STOP_WORDS and (word[0].isalpha() or word[0] == "-") and not word.endswith(":")


def commands_in(text: str) -> list[str]:
    """The commands a text tells a person to run (see command_spans)."""
    return [text[a:b] for a, b in command_spans(text)]


def _bracket_spans(text: str) -> list[tuple[int, int]]:
    """Short [...] groups (intervals, labels): read as one value."""
    return [(m.start(), m.end()) for m in re.finditer(r"\[[^\[\]]{1,40}\]", text)]


def _breaks(text: str) -> list[tuple[int, int]]:
    """The runs of spaces where a line may end: (start, end) of each."""
    inside = command_spans(text) + _bracket_spans(text)
    tokens = [(m.start(), m.end(), m.group()) for m in _TOKEN.finditer(text)]
    out = []
    for (_, a_end, a), (b_start, _, b) in itertools.pairwise(tokens):
        if any(s < a_end and b_start < e for s, e in inside):
            continue
        glued = (a in _MARKS or b in _MARKS or b == "—"
                 or (_ENDS_IN_DIGIT.search(a) is not None and len(b) <= 12 and not b[0].isdigit()))
        if not glued:
            out.append((a_end, b_start))
    return out


def hanging_indent(line: str, width: int) -> int:
    """Where a folded line continues: under the value of a "key   value" line, else two
    columns in from the line's own indent (under the text of a "- " item)."""
    lead = len(line) - len(line.lstrip(" "))
    gap = re.search(r"\S {2,}(?=\S)", line[lead:])
    if gap is not None and lead + gap.end() <= width // 2:
        return lead + gap.end()
    return lead + 2


def wrap(text: Text, width: int, hang: int | None = None) -> list[Text]:
    """`text` (one line) in lines of at most `width` cells where its pieces allow; continued
    lines are indented by `hang` (default: hanging_indent)."""
    plain = text.plain
    if len(plain) <= width:
        return [text]
    indent = hanging_indent(plain, width) if hang is None else hang
    ends = _breaks(plain)
    # the pieces a line is made of: from the text's start (with its indent) or the end of a break
    pieces = list(zip([0, *(b for _, b in ends)], [*(a for a, _ in ends), len(plain.rstrip())], strict=True))
    lines: list[Text] = []
    start, end = pieces[0]
    limit = width
    for s, e in pieces[1:]:
        if e - start <= limit:
            end = e
            continue
        lines.append(text[start:end])
        start, end, limit = s, e, width - indent
    lines.append(text[start:end])
    return [lines[0], *(Text(" " * indent) + line for line in lines[1:])]


def wrapped_lines(text: Text, width: int, hang: int | None = None) -> list[Text]:
    """Every line of `text` wrapped by wrap()."""
    return [part for line in text.split("\n", allow_blank=True) for part in wrap(line, width, hang)]


class Prose:
    """Text for a terminal: each line wrapped by wrap() at the console's width (continued lines
    indented by `hang`, default: hanging_indent)."""

    def __init__(self, text: Text | str, style: str = "", hang: int | None = None) -> None:
        self.text = text if isinstance(text, Text) else Text(text)
        self.hang = hang
        if style:
            self.text.stylize(style)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        if not console.is_terminal:  # piped: each line whole, whatever its length
            for line in self.text.split("\n", allow_blank=True):
                line.no_wrap, line.overflow = True, "ignore"
                yield line
            return
        for line in wrapped_lines(self.text, options.max_width, self.hang):
            line.no_wrap, line.overflow = True, "ignore"
            yield line


# --- tables --------------------------------------------------------------------------------------


def _text(console: Console, cell: object) -> Text:
    if isinstance(cell, Text):
        return cell.copy()
    if isinstance(cell, str):
        return console.render_str(cell)
    return Text(str(cell))


def _cells(table: Table) -> list[list[object]]:
    return [list(column.cells) for column in table.columns]


def _width(console: Console, table: Table) -> int:
    """The table's natural width (a measurement at the console's width would be clamped to it)."""
    return Measurement.get(console, console.options.update_width(100_000), table).maximum


def _rebuilt(table: Table, columns: list[list[object]], no_wrap: bool = True, **widths: int) -> Table:
    """A copy of `table` (no title or caption) holding `columns`; `widths` by column index."""
    out = Table(box=table.box, show_header=table.show_header, show_edge=table.show_edge,
                show_lines=table.show_lines, padding=table.padding, pad_edge=table.pad_edge,
                header_style=table.header_style, collapse_padding=table.collapse_padding)
    return _filled(out, table, columns, no_wrap, **widths)


def _compact(table: Table) -> Table:
    """`table` without its rules: columns two spaces apart, as piped output has them."""
    out = Table(box=None, show_header=table.show_header, show_edge=False, padding=(0, 1),
                pad_edge=False, header_style="bold", collapse_padding=table.collapse_padding)
    return _filled(out, table, _cells(table), True)


def _filled(out: Table, table: Table, columns: list[list[object]], no_wrap: bool, **widths: int) -> Table:
    for k, column in enumerate(table.columns):
        width = widths.get(str(k))
        out.add_column(column.header, justify=column.justify, style=column.style,
                       header_style=column.header_style, no_wrap=no_wrap,
                       width=width, min_width=width, max_width=width)
    for row in zip(*columns, strict=True):
        out.add_row(*row)
    return out


def _text_column(console: Console, table: Table) -> int | None:
    """The column of free text (left-justified, words apart): the widest such one."""
    best, best_width = None, 0
    for k, column in enumerate(table.columns):
        texts = [_text(console, c).plain for c in column.cells]
        if column.justify != "left" or not any(" " in t for t in texts):
            continue
        width = max((len(t) for t in texts), default=0)
        if width > best_width:
            best, best_width = k, width
    return best


def _with_text_column_wrapped(console: Console, table: Table, width: int) -> Table | None:
    """The table (without its rules) with its free-text column folded by wrap() so that it fits
    `width`; None when the column would be too narrow to read, or a piece of it longer than that."""
    table = _compact(table)
    k = _text_column(console, table)
    if k is None:
        return None
    columns = _cells(table)
    others = _width(console, _rebuilt(table, [c if j != k else [""] * len(c) for j, c in enumerate(columns)]))
    header = _text(console, table.columns[k].header).plain
    room = width - others
    if room < max(MIN_TEXT_COLUMN, len(header)):
        return None
    folded = []
    for cell in columns[k]:
        lines = wrapped_lines(_text(console, cell), room)
        if any(len(line.plain) > room for line in lines):
            return None
        folded.append(Text("\n").join(lines))
    columns[k] = folded
    out = _rebuilt(table, columns, **{str(k): room})
    return out if _width(console, out) <= width else None


def _key_columns(console: Console, table: Table, width: int) -> int:
    """How many leading columns name a record (left-justified ones, as many as fit a line)."""
    n, used = 0, 0
    for column in table.columns:
        if column.justify != "left":
            break
        column_width = max(len(_text(console, c).plain) for c in [column.header, *column.cells])
        if n and used + 2 + column_width > width:
            break
        used += column_width + (2 if n else 0)
        n += 1
    return max(n, 1)


def records(console: Console, table: Table, width: int) -> list:
    """One block per row: the leading columns that name it on a line (under a line of their
    headers), then each other column as "header  value", indented."""
    columns = _cells(table)
    heads = [_text(console, c.header) for c in table.columns]
    n_rows = max((len(c) for c in columns), default=0)
    cell = [[_text(console, col[i]) if i < len(col) else Text("") for col in columns] for i in range(n_rows)]
    if not table.show_header:  # a key and its value: each row a "key  value" line
        return [Prose(Text("  ").join(row)) for row in cell]
    keys = _key_columns(console, table, width)
    key_widths = [max(len(x.plain) for x in [heads[j], *(row[j] for row in cell)]) for j in range(keys)]
    head_width = max((len(h.plain) for h in heads[keys:]), default=0)

    def aligned(parts: list[Text]) -> Text:
        out = Text()
        for j, part in enumerate(parts):
            out.append_text(part)
            if j < len(parts) - 1:
                out.append(" " * (key_widths[j] - len(part.plain) + 2))
        return out

    out: list = [Prose(aligned([h.copy() for h in heads[:keys]]), style="bold")]
    for row in cell:
        out.append(Prose(aligned(row[:keys])))
        for j in range(keys, len(heads)):
            gap = Text(" " * (head_width - len(heads[j].plain) + 2))
            line = Text(INDENT) + heads[j].copy() + gap + row[j]
            out.append(Prose(line, hang=len(INDENT) + head_width + 2))
    return out


def narrowed_to_fit(console: Console, table: Table) -> Table | None:
    """`table` (no title or caption) without its rules, or else with its free-text column folded,
    if that fits the console's width; None when only records() would."""
    compact = _compact(table)
    if _width(console, compact) <= console.width:
        return compact
    return _with_text_column_wrapped(console, table, console.width)


def fits(console: Console, table: Table) -> bool:
    """Whether fitted() shows `table` as a table (whole, without rules or folded), not as records."""
    whole = _rebuilt(table, _cells(table), no_wrap=True)
    return _width(console, whole) <= console.width or narrowed_to_fit(console, table) is not None


def fitted(console: Console, table: Table) -> Iterable:
    """`table` as renderables that fit the console's width (see the module's docstring); its
    caption as prose at the console's width, never squeezed under a narrow table."""
    width = console.width
    caption = table.caption
    columns = _cells(table)
    whole = _rebuilt(table, columns, no_wrap=True)
    if _width(console, whole) <= width:
        title = _text(console, table.title) if table.title else None
        if title is not None and len(title.plain) <= _width(console, whole):
            whole.title, whole.title_justify = title, table.title_justify
            whole.title_style = table.title_style
        elif title is not None:  # wider than the table: a line of its own, never folded to its width
            yield Prose(title, style="italic")
        yield whole
    else:
        if table.title:
            yield Prose(_text(console, table.title), style="italic")
        narrowed = narrowed_to_fit(console, table)
        if narrowed is not None:
            yield narrowed
        else:
            yield from records(console, table, width)
    if caption:
        yield Prose(_text(console, caption), style="dim")
