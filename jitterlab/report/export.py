"""Runs with parameters, labels, a sysinfo summary and metrics in the format asked for, and the
operational envelope; a trend's rows. One module per format in report/formats/, registered by name
in EXPORTERS; this picks the exporter and checks what it is asked against what it writes.

Machine formats: values are raw, in the metric's unit (ns, ratio, count, ...), which JSON and
metrics.parquet name beside each value with the metric's direction (lower/higher is better, or
none); nothing is formatted for people. The cell's parameters are columns `param.<key>`.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from jitterlab.model.errors import UserError
from jitterlab.model.records import RunRecord
from jitterlab.report.formats import EXPORTERS, Exporter
from jitterlab.report.formats.base import no_trend
from jitterlab.report.formats.rows import ExportData

if TYPE_CHECKING:
    from jitterlab.store.catalog import Store


def formats() -> list[str]:
    """The names `--format` takes."""
    return EXPORTERS.names()


def tables() -> list[str]:
    """The names `--table` takes: "runs", then what some format writes besides, by name."""
    return ["runs", *sorted({t for e in EXPORTERS for t in e.obj.tables} - {"runs"})]


def writes_directory(fmt: str) -> bool:
    """Whether the format writes a directory of files (-o DIR) rather than one file."""
    return _exporter(fmt).directory


def _exporter(fmt: str) -> Exporter:
    if fmt not in EXPORTERS:
        raise UserError(f"--format {fmt!r}: choose one of {', '.join(EXPORTERS.names())}")
    return EXPORTERS.get(fmt, "--format")


def export(store: Store, runs: list[RunRecord], fmt: str, out: Path | None, *,
           table: str = "runs") -> str | None:
    """Write the export to `out` (a file, or a directory for parquet); the text when out is None.
    `table` "envelope" makes CSV the envelope instead of the runs."""
    if not runs:
        raise UserError(f"{store.where}: no runs to export; run a campaign or import a capture first")
    exporter = _exporter(fmt)
    if table not in exporter.tables:
        offered = " or ".join(e.name for e in EXPORTERS if table in e.obj.tables)
        raise UserError(f"--table {table}: only with --format {offered} (--format {fmt} holds the {table} "
                        "beside the runs)")
    return exporter.write(ExportData(store, runs), table, out)


def export_trend(rows: list[dict], fmt: str, out: Path | None) -> str | None:
    """A trend's rows (report.trend.rows) to `out`; the text when out is None."""
    exporter = _exporter(fmt)
    if not exporter.trend:
        raise no_trend()
    return exporter.write_trend(rows, out)
