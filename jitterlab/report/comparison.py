"""A comparison as people and machines read it: table rows, the paragraph of method, JSON, text."""

from __future__ import annotations

import io
import json
import math
import shutil

from rich.table import Table
from rich.text import Text

from jitterlab.report.console import escape_controls

COMPARE_HEADS = ["cell", "probe", "metric", "view", "summary", "baseline", "candidate", "runs",
                 "change [95 % CI]", "test", "p (Holm)", "verdict"]


def comparison_rows(result) -> tuple[list[str], list[list[str]]]:
    """The rows of a comparison as people read them: the effect and its CI first, the test and
    its adjusted p-value second; values in their unit."""
    from jitterlab.analysis.compare import cell_text
    from jitterlab.report.format import change, format_value

    rows = []
    for r in result.rows:
        ci = (f" [{change(r.ci_low)} – {change(r.ci_high)}]"
              if math.isfinite(r.ci_low) and math.isfinite(r.ci_high) else "")
        p = "—" if math.isnan(r.p_adjusted) else _p_text(r.p_adjusted)
        rows.append([cell_text(result, r), r.probe, r.metric, r.view, r.rule,
                     format_value(r.baseline, r.unit), format_value(r.candidate, r.unit),
                     f"{r.n_baseline}/{r.n_candidate}", change(r.ratio) + ci, r.test, p, r.verdict])
    return COMPARE_HEADS, rows


def _p_text(p: float) -> str:
    return "< 0.0001" if p < 1e-4 else f"{p:.2g}"


def comparison_note(result) -> str:
    """How the verdicts were reached, and their count, in one paragraph."""
    from jitterlab.analysis.compare import common_text

    counts = ", ".join(f"{n} {v}" for v, n in result.counts().items() if n)
    common = common_text(result)
    every = f"Every row: {common}. " if common else ""
    return (f"{every}{counts}. Change: candidate / baseline (ratio of geometric means with Welch's t on "
            f"log values below 8 runs per group, ratio of medians with Mann-Whitney U from 8; "
            f"pooled rows: p99 or max of all samples, hierarchical bootstrap). p-values adjusted "
            f"with Holm's method over the {result.n_tests} tests shown, so the chance of any false "
            f"better/worse among them stays under {result.alpha:g}; a verdict needs the adjusted "
            f"p < {result.alpha:g} and a CI that excludes no change. The CI is each row's own 95 % "
            f"interval: one that barely excludes no change can still be no significant change once "
            f"the number of rows is taken into account.")


def comparison_json(result) -> dict:
    """The comparison for machines: format jitterlab.compare/1, documented in docs/reports.md."""
    def num(x: float) -> float | None:
        return x if isinstance(x, int | float) and math.isfinite(x) else None

    rows = [{"cell": dict(zip(result.cell_fields, r.cell, strict=True)), "probe": r.probe,
             "metric": r.metric, "unit": r.unit, "direction": r.direction, "view": r.view,
             "n_baseline": r.n_baseline, "n_candidate": r.n_candidate, "summary": r.rule,
             "baseline": num(r.baseline), "candidate": num(r.candidate), "effect": r.effect,
             "ratio": num(r.ratio), "change_pct": num(r.change_pct), "ci_low": num(r.ci_low),
             "ci_high": num(r.ci_high), "test": r.test, "p_value": num(r.p_value),
             "p_adjusted": num(r.p_adjusted), "verdict": r.verdict} for r in result.rows]
    return {"format": "jitterlab.compare/1", "baseline": str(result.baseline),
            "candidate": str(result.candidate), "cell_fields": list(result.cell_fields),
            "alpha": result.alpha, "correction": result.correction, "n_tests": result.n_tests,
            "verdicts": result.counts(), "rows": rows,
            "warnings": [{"message": w.message, "remedy": w.remedy} for w in result.warnings]}


def format_comparison(result, fmt: str, *, terminal: bool = False) -> str:
    """The comparison as a table (plain rows unless `terminal`), Markdown or JSON text."""
    from jitterlab.report.terminal import console

    heads, rows = comparison_rows(result)
    notes = [f"warning: {w.message} — {w.remedy}" for w in result.warnings]
    if fmt == "json":
        return json.dumps(comparison_json(result), indent=1) + "\n"
    if fmt == "markdown":
        lines = ["| " + " | ".join(heads) + " |", "|" + "---|" * len(heads)]
        lines += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in rows]
        return escape_controls("\n".join([f"**{result.candidate}** vs **{result.baseline}**", "", *lines, "",
                                           comparison_note(result), "", *notes]) + "\n")
    table = Table(title=f"{result.candidate} vs {result.baseline}")
    for h in heads:
        table.add_column(h, justify="right" if h in ("baseline", "candidate", "runs") else "left")
    style = {"better": "green", "worse": "red"}
    for row in rows:
        table.add_row(*(Text(c) for c in row[:-1]), Text(row[-1], style=style.get(row[-1], "")))
    width = shutil.get_terminal_size().columns if terminal else None
    out = console(file=io.StringIO(), force_terminal=terminal, width=width)
    out.print(table)
    out.print(comparison_note(result), highlight=False, markup=False)
    for n in notes:
        out.print(n, highlight=False, markup=False)
    return out.file.getvalue()
