"""The exporter interface and its registry: one module per format registers an Exporter by name in
EXPORTERS, and `jitterlab export --format` offers every registered name.

An exporter writes the runs of an ExportData as one table (`tables`: "runs", and any other it
offers, e.g. "envelope"), and a trend's rows when it can (`trend`). A text format returns its text
when no file is given (stdout); a `directory` format writes several files into -o DIR.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from jitterlab.model.errors import UserError
from jitterlab.model.registry import Registry

if TYPE_CHECKING:
    from jitterlab.report.formats.rows import ExportData


class Exporter(Protocol):
    directory: bool  # writes files into a directory (-o DIR), never to stdout
    tables: tuple[str, ...]  # the tables of runs it writes, "runs" first
    trend: bool  # whether it writes a trend's rows (report.trend.rows)

    def write(self, data: ExportData, table: str, out: Path | None) -> str | None:
        """Write `table` of the runs to `out`; the text itself when `out` is None."""
        ...

    def write_trend(self, rows: list[dict], out: Path | None) -> str | None:
        """Write a trend's rows (one per cell and x) to `out`; the text when `out` is None."""
        ...


EXPORTERS: Registry[Exporter] = Registry("export format")


def write_text(text: str, out: Path | None) -> str | None:
    """`text` into the file `out`, or back to the caller (for stdout) without one."""
    if out is None:
        return text
    Path(out).write_text(text, encoding="utf-8")
    return None


def no_trend() -> UserError:
    """The error for a trend asked of a format that cannot write one."""
    return UserError(f"--trend: export as {' or '.join(e.name for e in EXPORTERS if e.obj.trend)}")
