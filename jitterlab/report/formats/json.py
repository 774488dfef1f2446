"""JSON (format jitterlab.export/2): one object per run with its metrics' values, units and
directions (a traced run with its `explanation`: why its periods were late, report/causes.py), and
the operational envelope beside the runs; a trend as jitterlab.trend/1."""

from __future__ import annotations

import json
from pathlib import Path

from jitterlab.report.formats.base import EXPORTERS, write_text
from jitterlab.report.formats.rows import ExportData


class JsonExporter:
    directory = False
    tables = ("runs",)
    trend = True

    def write(self, data: ExportData, table: str, out: Path | None) -> str | None:
        explained = data.explanations
        runs = [{**row, "explanation": explained[row["id"]]} if row["id"] in explained else row
                for row in data.rows]
        doc = {"format": "jitterlab.export/2", "runs": runs, "envelope": data.envelope}
        return write_text(json.dumps(doc, indent=1, default=str), out)

    def write_trend(self, rows: list[dict], out: Path | None) -> str | None:
        return write_text(json.dumps({"format": "jitterlab.trend/1", "rows": rows}, indent=1), out)


EXPORTERS.add("json", "one object per run with units and directions, and the envelope", JsonExporter())
