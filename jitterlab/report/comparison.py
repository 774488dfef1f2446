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

# "statistic" says what baseline and candidate are (geometric mean, mean of the runs, or a pooled
# quantile of all their samples); the change is the ratio (or difference) of exactly those two values
COMPARE_HEADS = ["cell", "probe", "metric", "view", "statistic", "baseline", "candidate", "runs",
                 "change [95 % CI]", "test", "p (Holm)", "verdict", "decided"]
NOT_GRADED_TEXT = "not tested"
# four verdicts, four looks: undecided is never shown like same
VERDICT_STYLES = {"better": "bold green", "worse": "bold red", "same": "", "undecided": "yellow",
                  NOT_GRADED_TEXT: "dim"}
FORMAT = "jitterlab.compare/3"
# what each deciding rule guarantees, in one short phrase (analysis.sequential, analysis.verdict)
PROMISES = {"sequential test": "≤ 5 % false better/worse, however often you look",
            "equivalence": "≤ 5 % false same, however often you look",
            "resolution": "no spread at all: within the metric's resolution"}


def change_text(r) -> str:
    """The change of a row as its scale reads it: a ratio with its interval ("+12.5 % [-3 % – +31 %]"),
    a difference in the unit for a signed metric or a count from 0 ("+2 [+0 – +5]"), or "no change"
    when every value lies within the metric's resolution."""
    from jitterlab.report.format import change, format_value

    if r.test == "none: within resolution":
        return "no change (within resolution)"
    if math.isfinite(r.ratio):
        ci = (f" [{change(r.ci_low)} – {change(r.ci_high)}]"
              if math.isfinite(r.ci_low) and math.isfinite(r.ci_high) else "")
        return change(r.ratio) + ci
    if math.isfinite(r.difference):
        ci = (f" [{_signed(r.diff_low, r.unit)} – {_signed(r.diff_high, r.unit)}]"
              if math.isfinite(r.diff_low) and math.isfinite(r.diff_high) else "")
        return f"{_signed(r.difference, r.unit)}{ci}"
    return format_value(math.nan, r.unit)


def _signed(x: float, unit: str) -> str:
    from jitterlab.report.format import format_value

    return ("-" if x < 0 else "+") + format_value(abs(x), unit)


def decided_text(r) -> str:
    """"5 vs 5 runs, ≤ 5 % false better/worse, however often you look" for a decided row; how many
    runs left it undecided, else."""
    if not r.tested:
        return ""
    if not r.decided_by:
        return f"{r.runs} runs: not yet"
    return f"{r.runs} runs, {PROMISES[r.decided_by]}"


def comparison_rows(result) -> tuple[list[str], list[list[str]]]:
    """The rows of a comparison as people read them: the effect and its interval first, the test
    and its adjusted p-value second, then the verdict and what decided it; values in their unit."""
    from jitterlab.analysis.compare import cell_text
    from jitterlab.report.format import format_value

    rows = []
    for r in result.rows:
        p = "—" if math.isnan(r.p_adjusted) else _p_text(r.p_adjusted)
        rows.append([cell_text(result, r), r.probe, r.metric, r.view, r.rule,
                     format_value(r.baseline, r.unit), format_value(r.candidate, r.unit),
                     f"{r.n_baseline}/{r.n_candidate}", change_text(r), r.test, p,
                     r.verdict or NOT_GRADED_TEXT, decided_text(r)])
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

    counts = ", ".join(f"{n} {v}" for v, n in result.counts().items() if n) or "no tested row"
    if result.n_not_graded:
        counts += (f"; {result.n_not_graded} {NOT_GRADED_TEXT} (outside the watched metrics "
                   f"{_family_text(result)}, or descriptions and load readings: shown, not tested)")
    common = common_text(result)
    every = f"Every row: {common}. " if common else ""
    verdicts = (f"Verdicts: better or worse when the sequential test shows a change (its p-value, "
                f"adjusted with Holm's method, under {result.alpha:g}); same when the repeated 90 % "
                f"interval lies inside the threshold of the metric's kind ({thresholds_text(result)}; "
                f"--threshold sets them), or when every value lies within the metric's resolution; "
                f"undecided otherwise: more repetitions decide it.")
    if not result.n_tests:
        return (f"{every}{counts}. No row could be tested: a verdict needs at least 3 runs per group "
                f"in a cell; then better or worse when a test shows a change, same when it rules out "
                f"any beyond the threshold of the metric's kind ({thresholds_text(result)}).")
    return (f"{every}{counts}. Change: candidate / baseline, of the statistic shown (geometric means "
            f"of the runs, Welch's t on log values; a count that may be 0 or a signed metric as a "
            f"difference of means; a tail as the quantile of all samples of each group, hierarchical "
            f"bootstrap; a maximum as the runs' maxima). Every look counts as one of a sequence that "
            f"may go on (alpha spending over the run counts): {result.guarantee}. The sequential "
            f"p-values are adjusted with Holm's method over the {result.n_tests} tested rows. "
            f"{verdicts} The interval is the row's own repeated 95 % interval.")


def _family_text(result) -> str:
    names = sorted({r.metric for r in result.rows if r.tested})
    return ", ".join(names[:6]) + (f" and {len(names) - 6} more" if len(names) > 6 else "")


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
    """The comparison for machines: format jitterlab.compare/3, documented in docs/reports.md."""
    from jitterlab.analysis import sequential

    def num(x: float) -> float | None:
        return x if isinstance(x, int | float) and math.isfinite(x) else None

    rows = [{"cell": dict(zip(result.cell_fields, r.cell, strict=True)), "probe": r.probe,
             "metric": r.metric, "unit": r.unit, "direction": r.direction, "scale": r.scale, "view": r.view,
             "n_baseline": r.n_baseline, "n_candidate": r.n_candidate, "summary": r.rule,
             "samples_baseline": r.samples_baseline or None, "samples_candidate": r.samples_candidate or None,
             "baseline": num(r.baseline), "candidate": num(r.candidate), "effect": r.effect,
             "ratio": num(r.ratio), "change_pct": num(r.change_pct), "ci_low": num(r.ci_low),
             "ci_high": num(r.ci_high), "difference": num(r.difference), "diff_low": num(r.diff_low),
             "diff_high": num(r.diff_high), "test": r.test, "note": r.note or None,
             "p_value": num(r.p_value), "p_sequential": num(r.p_sequential), "p_adjusted": num(r.p_adjusted),
             "threshold": num(r.threshold), "tested": r.tested, "verdict": r.verdict or None,
             "decided_by": r.decided_by or None} for r in result.rows]
    return {"format": FORMAT, "baseline": str(result.baseline),
            "candidate": str(result.candidate), "cell_fields": list(result.cell_fields),
            "alpha": result.alpha, "correction": result.correction, "n_tests": result.n_tests,
            "family": sorted({r.metric for r in result.rows if r.tested}), "guarantee": result.guarantee,
            "sequential": {"spending": "linear in runs per group up to reference_runs, the rest beyond",
                           "first_look_runs": sequential.MIN_RUNS,
                           "reference_runs": sequential.REFERENCE_RUNS,
                           "reference_share": sequential.REFERENCE_SHARE},
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
