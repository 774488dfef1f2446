"""LAVA's results as lines for its test shell: each cell a test set, each of its headline figures a
test case named by what it is (the metric and the rule that summarized its runs,
"max_rel_period_error_worst_run.vpin") with its own result (report/cell_checks.py: the envelope rule
that holds the metric, else whether every run ended ok), its value and unit; a comparison
(`jitterlab compare --format lava`): each graded row a test case, fail when the candidate is worse,
skip when undecided, pass when better or the same, its change in percent.

The lines are tab-separated, in the characters LAVA takes in names and units, so the test
definition's script (jitterlab/lava/report-results.sh) calls lava-test-set and lava-test-case with
them as plain arguments:

    set     NAME
    case    NAME  pass|fail|skip  MEASUREMENT  UNITS     (MEASUREMENT and UNITS may be "-")
    end     NAME
"""

from __future__ import annotations

import math
import re
from pathlib import Path

from jitterlab.report.cell_checks import CellCheck, cell_checks, slug
from jitterlab.report.formats.base import EXPORTERS, no_trend, write_text
from jitterlab.report.formats.rows import ExportData

_UNIT_CHARS = re.compile(r"[^A-Za-z0-9/%_.-]+")
RESULTS = {"pass": "pass", "fail": "fail", "skip": "skip"}


def _measurement(value: float) -> str:
    return f"{value:.9g}" if math.isfinite(value) else "-"


def _units(unit: str) -> str:
    return _UNIT_CHARS.sub("_", unit) or "-"


def cells_lines(checks: list[CellCheck]) -> str:
    lines: list[str] = []
    used: set[str] = set()
    for c in checks:
        name = c.slug
        while name in used:  # two cells whose names differ only in characters LAVA does not take
            name += "_"
        used.add(name)
        lines.append(f"set\t{name}")
        if not c.headline:
            lines.append(f"case\truns\t{RESULTS[c.outcome]}\t-\t-")
        for h in c.headline:
            case = slug(h.name) + (f".{slug(h.subject)}" if h.subject else "")
            lines.append(f"case\t{case}\t{RESULTS[h.judged.outcome]}\t{_measurement(h.value)}\t{_units(h.unit)}")
        lines.append(f"end\t{name}")
    return "\n".join(lines) + "\n"


def comparison_lines(result) -> str:
    """A comparison (analysis.compare) as one test set per cell, a case per graded row."""
    from jitterlab.analysis.compare import cell_text

    by_cell: dict[str, list[str]] = {}
    for r in result.rows:
        if not r.verdict:
            continue
        outcome = "fail" if r.verdict == "worse" else "skip" if r.verdict == "undecided" else "pass"
        case = slug(" ".join(filter(None, (r.metric, r.probe, r.view))))
        change = _measurement((r.ratio - 1) * 100) if math.isfinite(r.ratio) else "-"
        by_cell.setdefault(slug(cell_text(result, r) or "all"), []).append(
            f"case\t{case}\t{outcome}\t{change}\t{'%' if change != '-' else '-'}")
    lines = []
    for cell, cases in by_cell.items():
        lines += [f"set\t{cell}", *cases, f"end\t{cell}"]
    return "\n".join(lines) + ("\n" if lines else "")


class LavaExporter:
    directory = False
    tables = ("runs",)
    trend = False

    def write(self, data: ExportData, table: str, out: Path | None) -> str | None:
        return write_text(cells_lines(cell_checks(data.runs)), out)

    def write_trend(self, rows: list[dict], out: Path | None) -> str | None:
        raise no_trend()


EXPORTERS.add("lava", "lines for LAVA's lava-test-set/lava-test-case: a set per cell, a case per "
              "headline figure", LavaExporter())
