"""CSV: one row per run (metric columns `<subject>.<name>`, raw values), or the operational envelope
(`table="envelope"`: one row per target x impl x load x probe x rule x threshold), or a trend's rows."""

from __future__ import annotations

import csv
import io
from pathlib import Path

from jitterlab.model.errors import UserError
from jitterlab.report.formats.base import EXPORTERS, write_text
from jitterlab.report.formats.rows import ExportData


def _text(columns: list[str], rows) -> str:
    buf = io.StringIO()
    writer = csv.DictWriter(buf, columns, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return buf.getvalue()


class CsvExporter:
    directory = False
    tables = ("runs", "envelope")
    trend = True

    def write(self, data: ExportData, table: str, out: Path | None) -> str | None:
        if table == "envelope":
            records = data.envelope
            if not records:
                raise UserError("--table envelope: these runs have no squarewave cells, so no envelope")
            return write_text(_text(list(records[0]), (
                {**r, "periods_ns": " ".join(map(str, r["periods_ns"]))} for r in records)), out)
        columns, flat = data.flat
        return write_text(_text(columns, flat), out)

    def write_trend(self, rows: list[dict], out: Path | None) -> str | None:
        return write_text(_text(list(rows[0]) if rows else [], rows), out)


EXPORTERS.add("csv", "one row per run (or --table envelope: the operational envelope)", CsvExporter())
