"""`jitterlab list`: every registry of plug-ins, with one line of help each and their options."""

from __future__ import annotations

import argparse

from rich.markup import escape
from rich.table import Table

from jitterlab.cli.exits import EXIT_OK
from jitterlab.model.errors import UserError


def add_parser(sub) -> argparse.ArgumentParser:
    return sub.add_parser(
        "list",
        help="list benchmarks, impls, pins, probes, loads, targets and units",
        description="Every registry of plug-ins, with one line of help each.",
    )


def run(args: argparse.Namespace) -> int:
    from jitterlab.plugins import ALL
    from jitterlab.report.terminal import console

    out = console()  # piped: plain rows at their full width, never wrapped nor padded
    for kind, registry in ALL.items():
        table = Table(title=kind, title_justify="left", show_header=False, box=None, padding=(0, 2))
        for entry in registry:
            table.add_row(f"[bold]{escape(entry.name)}[/]", escape(entry.help))
            params = getattr(entry.obj, "params", ())
            if params and kind != "benchmarks":
                table.add_row("", f"  options in {escape(f'[{kind}.{entry.name}]')}:")
            for param in params:
                default = "required" if param.default is None else f"default {_shown_default(param)}"
                table.add_row("", f"  [cyan]{escape(param.name)}[/] — {escape(param.help)} "
                                  f"({escape(default)}; e.g. {escape(param.example)})")
        out.print(table)
        out.print()
    return EXIT_OK


def _shown_default(param) -> str:
    """A Param's default as the user writes it ("1ms"), whatever form the default is given in."""
    try:
        shown = param.show(param.parse(param.default, param.name))
    except (UserError, TypeError, ValueError):
        shown = str(param.default)
    if isinstance(param.default, bool):
        shown = str(param.default).lower()
    return shown if shown != "" else '""'
