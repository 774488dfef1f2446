"""A comparison as people and machines read it: table rows, the paragraph of method, JSON, text."""

from __future__ import annotations

import io
import json
import math
import shutil

from rich.table import Table
from rich.text import Text

from jitterlab.model.records import Warning_
from jitterlab.report.console import escape_controls
from jitterlab.report.warning_groups import Note, grouped

# "statistic" says what baseline and candidate are (geometric mean, mean, median of the runs, or
# pooled p99/max); the change is the ratio of exactly those two values
COMPARE_HEADS = ["cell", "probe", "metric", "view", "statistic", "baseline", "candidate", "runs",
                 "change [95 % CI]", "test", "p (Holm)", "verdict"]
NOT_GRADED_TEXT = "not graded"
# four verdicts, four looks: undecided is never shown like same
VERDICT_STYLES = {"better": "bold green", "worse": "bold red", "same": "", "undecided": "yellow",
                  NOT_GRADED_TEXT: "dim"}


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
                     f"{r.n_baseline}/{r.n_candidate}", change(r.ratio) + ci, r.test, p,
                     r.verdict or NOT_GRADED_TEXT])
    return COMPARE_HEADS, rows


def _p_text(p: float) -> str:
    return "< 0.0001" if p < 1e-4 else f"{p:.2g}"


def thresholds_text(result) -> str:
    """The practical thresholds as a reader wants them: "timing 20 %, rate 5 %, ..."."""
    from jitterlab.report.format import change

    return ", ".join(f"{k} {change(1 + t).lstrip('+')}" for k, t in result.thresholds.items())


def comparison_note(result) -> str:
    """How the verdicts were reached, and their count, in one paragraph."""
    from jitterlab.analysis.compare import common_text

    counts = ", ".join(f"{n} {v}" for v, n in result.counts().items() if n) or "no graded row"
    if result.n_not_graded:
        counts += (f"; {result.n_not_graded} {NOT_GRADED_TEXT} (load readings and descriptive numbers "
                   "describe the runs: shown, not graded)")
    common = common_text(result)
    every = f"Every row: {common}. " if common else ""
    verdicts = (f"Verdicts: better or worse when the test shows a change (adjusted p < {result.alpha:g} "
                f"and a CI that excludes no change); same when the 95 % CI excludes every change larger "
                f"than the threshold of the metric's kind ({thresholds_text(result)}; --threshold sets "
                f"them); undecided otherwise: more repetitions would decide it.")
    if not result.n_tests:
        return (f"{every}{counts}. No row could be tested: a verdict needs at least 3 runs per group "
                f"in a cell. Change: candidate / baseline, ratio of the statistic shown. {verdicts}")
    return (f"{every}{counts}. Change: candidate / baseline, the ratio of the statistic shown "
            f"(geometric means with Welch's t on log values below 8 runs per group, medians with "
            f"Mann-Whitney U from 8; pooled rows: p99 or max of all samples, hierarchical bootstrap). "
            f"p-values adjusted with Holm's method over the {result.n_tests} tests shown, so the chance "
            f"of any false better/worse among them stays under {result.alpha:g}. {verdicts} The CI is "
            f"each row's own 95 % interval: one that barely excludes no change can still fall short "
            f"of better/worse once the number of rows is taken into account.")


def comparison_warnings(result) -> list[Warning_]:
    """The comparison's warnings grouped by cause, once each: "too few runs for a verdict (2 vs
    2): 17 cells (idle impl=c-fifo, ... and 14 more)"; cells named as the table's rows name them."""
    from jitterlab.analysis.compare import cell_text, full_cell_text

    short = {full_cell_text(result, r): cell_text(result, r) for r in result.rows}
    out = []
    for g in grouped(Note(scope, short.get(where, where) if scope == "cell" else where, w)
                     for scope, where, w in result.notes):
        out.append(Warning_(f"{g.message}: {g.affected} ({g.examples})", g.remedy))
    return out


def comparison_json(result) -> dict:
    """The comparison for machines: format jitterlab.compare/2, documented in docs/reports.md."""
    def num(x: float) -> float | None:
        return x if isinstance(x, int | float) and math.isfinite(x) else None

    rows = [{"cell": dict(zip(result.cell_fields, r.cell, strict=True)), "probe": r.probe,
             "metric": r.metric, "unit": r.unit, "direction": r.direction, "view": r.view,
             "n_baseline": r.n_baseline, "n_candidate": r.n_candidate, "summary": r.rule,
             "baseline": num(r.baseline), "candidate": num(r.candidate), "effect": r.effect,
             "ratio": num(r.ratio), "change_pct": num(r.change_pct), "ci_low": num(r.ci_low),
             "ci_high": num(r.ci_high), "test": r.test, "p_value": num(r.p_value),
             "p_adjusted": num(r.p_adjusted), "threshold": num(r.threshold),
             "verdict": r.verdict or None} for r in result.rows]
    return {"format": "jitterlab.compare/2", "baseline": str(result.baseline),
            "candidate": str(result.candidate), "cell_fields": list(result.cell_fields),
            "alpha": result.alpha, "correction": result.correction, "n_tests": result.n_tests,
            "thresholds": dict(result.thresholds), "verdicts": result.counts(),
            "not_graded": result.n_not_graded, "rows": rows,
            "warnings": [{"message": w.message, "remedy": w.remedy} for w in comparison_warnings(result)]}


def format_comparison(result, fmt: str, *, terminal: bool = False) -> str:
    """The comparison as a table (plain rows unless `terminal`), Markdown or JSON text."""
    from jitterlab.report.terminal import console

    heads, rows = comparison_rows(result)
    notes = [f"warning: {w.message} — {w.remedy}" for w in comparison_warnings(result)]
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
    for row in rows:
        table.add_row(*(Text(c) for c in row[:-1]), Text(row[-1], style=VERDICT_STYLES.get(row[-1], "")))
    width = shutil.get_terminal_size().columns if terminal else None
    out = console(file=io.StringIO(), force_terminal=terminal, width=width)
    out.print(table)
    out.print(comparison_note(result), highlight=False, markup=False)
    for n in notes:
        out.print(n, highlight=False, markup=False)
    return out.file.getvalue()
