"""The terminal: text from outside jitterlab reaches it with its control characters escaped.

Campaign names, labels, file names, a tool's output and error messages come from files and other
people; printed raw, an ESC sequence in them could move the cursor, recolour or retitle the terminal,
or hide what follows. Every console jitterlab prints with is a `SafeConsole`, which shows such a
character as `\\x1b` (or `\\u202e`) wherever it appears: plain strings, markup, tables, progress.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from rich.console import Console, ConsoleOptions, RenderableType
from rich.segment import Segment
from rich.text import Text

# C0 and C1 controls but newline and tab, DEL, the invisible characters that reorder or break lines
# (bidi overrides and isolates, line/paragraph separators), and lone surrogates (the bytes of a
# non-UTF-8 file name or argument, which a UTF-8 terminal cannot be sent)
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069"
                      r"\ud800-\udfff]")


def _escaped(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def escape_controls(text: str) -> str:
    """`text` with every control character written as an escape (\\x1b); newline and tab stay."""
    return _CONTROL.sub(_escaped, text)


class SafeConsole(Console):
    """A rich Console that escapes control characters in everything it renders."""

    def render_str(self, text: str, **kwargs) -> Text:  # type: ignore[override]
        return super().render_str(escape_controls(text), **kwargs)

    def render(self, renderable: RenderableType, options: ConsoleOptions | None = None) -> Iterable[Segment]:
        for segment in super().render(renderable, options):
            # segments with `control` set are rich's own cursor movements; text is anyone's
            if segment.control is None and _CONTROL.search(segment.text):
                yield Segment(escape_controls(segment.text), segment.style)
            else:
                yield segment
