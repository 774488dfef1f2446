"""How `--help` lays out its text: paragraphs folded like the rest of the terminal output
(report/layout.py: never inside a command, between a value and its unit), and an example command on
a line of its own, whole, so that it can be copied and run."""

from __future__ import annotations

import argparse
import re

from rich.text import Text

from jitterlab.report.layout import wrap

_EXAMPLE = re.compile(r"^(examples?:)\s+(.*)$", re.S)


def _folded(text: str, width: int, indent: str = "") -> list[str]:
    text = " ".join(text.split())
    return [indent + line.plain for line in wrap(Text(text), max(width - len(indent), 20), hang=0)]


class HelpFormatter(argparse.HelpFormatter):
    """argparse's layout, with text folded by report/layout.py and examples left whole."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        example = _EXAMPLE.match(text.strip())
        if example is not None:  # "example: jitterlab ...": the command whole, on its own line
            return f"{indent}{example.group(1)}\n{indent}  {' '.join(example.group(2).split())}"
        return "\n".join(_folded(text, width, indent))

    def _split_lines(self, text: str, width: int) -> list[str]:
        return _folded(text, width)
