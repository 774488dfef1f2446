"""A comparison as people and machines read it: table rows, the paragraph of method, JSON, text."""

from __future__ import annotations

import io
import json
import math
import shlex
import shutil

from jitterlab.model.records import Warning_
from jitterlab.report.console import escape_controls
from jitterlab.report.warning_groups import Note, grouped

# "statistic" says what baseline and candidate are (geometric mean, mean of the runs, or a pooled
# quantile of all their samples); the change is the ratio (or difference) of exactly those two values
COMPARE_HEADS = ["cell", "probe", "metric", "view", "statistic", "baseline", "candidate", "runs",
                 "change [95 % CI]", "test", "p (Holm)", "verdict", "decided by"]
NOT_GRADED_TEXT = "not tested"
NOT_YET = "not yet"  # a tested row no rule decided
# four verdicts, four looks: undecided is never shown like same
VERDICT_STYLES = {"better": "bold green", "worse": "bold red", "same": "", "undecided": "yellow",
                  NOT_GRADED_TEXT: "dim"}
FORMAT = "jitterlab.compare/3"
# what each deciding rule guarantees, in one short phrase (analysis.sequential, analysis.verdict)
PROMISES = {"sequential test": "≤ 5 % false better/worse, however often you look",
            "equivalence": "≤ 5 % false same, however often you look",
            "resolution": "no spread at all: within the metric's resolution"}
WHY = "how each statistic is compared, and why: docs/reports.md, section compare"
LOAD_DIFFERED = "load differed"  # beside a verdict whose cell's groups ran under different measured load


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
        return f"{r.runs} runs: {NOT_YET}"
    return f"{r.runs} runs, {PROMISES[r.decided_by]}"


def shown_rows(result, every_row: bool = False) -> list:
    """The rows a person is shown: the tested ones (the watched metrics), or with `every_row` all."""
    return list(result.rows) if every_row else result.tested_rows


def comparison_rows(result, rows: list | None = None) -> tuple[list[str], list[list[str]]]:
    """The rows of a comparison (`rows`, default all) as people read them: the effect and its
    interval first, the test and its adjusted p-value second, then the verdict and the rule that
    decided it (what it guarantees is said once, below); values in their unit."""
    from jitterlab.analysis.compare import cell_text
    from jitterlab.report.format import format_value

    out = []
    for r in result.rows if rows is None else rows:
        p = "—" if math.isnan(r.p_adjusted) else _p_text(r.p_adjusted)
        by = (r.decided_by or NOT_YET) if r.tested else ""
        out.append([cell_text(result, r), r.probe, r.metric, r.view, r.rule,
                    format_value(r.baseline, r.unit), format_value(r.candidate, r.unit),
                    r.runs, change_text(r), r.test, p, verdict_text(r), by])
    return COMPARE_HEADS, out


def verdict_text(r) -> str:
    """"worse", or "worse (load differed)" when the groups of its cell ran under different measured
    load (the readings are named in the comparison's warnings)."""
    if not r.tested:
        return r.verdict or NOT_GRADED_TEXT
    return f"{r.verdict} ({LOAD_DIFFERED})" if r.load_differs else r.verdict


def load_text(differences) -> str:
    """"load_loadavg_1m 2.25 → 0.41 (-81.8 %)": each reading that differs, baseline → candidate."""
    from jitterlab.report.format import change, format_value

    def one(d) -> str:
        moved = f" ({change(1 + d.change)})" if math.isfinite(d.change) else ""
        return f"{d.metric} {format_value(d.baseline, d.unit)} → {format_value(d.candidate, d.unit)}{moved}"

    return ", ".join(one(d) for d in differences)


def _p_text(p: float) -> str:
    return "< 0.0001" if p < 1e-4 else f"{p:.2g}"


def thresholds_text(result) -> str:
    """The practical thresholds as a reader wants them: "timing 20 %, rate 5 %, ..."."""
    from jitterlab.report.format import change

    return ", ".join(f"{k} {change(1 + t).lstrip('+')}" for k, t in result.thresholds.items())


def title(result) -> str:
    """"image=1.11 vs image=1.10: target=board benchmark=squarewave": what every row shares is said once."""
    from jitterlab.analysis.compare import common_text

    common = common_text(result)
    return f"{result.candidate} vs {result.baseline}" + (f": {common}" if common else "")


def note_lines(result, shown: int | None = None, every_row: str = "") -> list[str]:
    """How the verdicts were reached, in short lines: their count, the rows left out (`shown` of
    them are listed; `every_row` is the command that lists every row), what the change is, then
    each verdict with the rule that decides it and what that rule guarantees."""
    counts = ", ".join(f"{n} {v}" for v, n in result.counts().items() if n) or "no tested row"
    tested = len(result.tested_rows)
    family = _family_text(result)
    out = [f"verdicts: {counts}" + (f", of {tested} tested rows" if tested else "")]
    if tested:
        views = (f", and as {', '.join(result.probes)} saw them" if result.probes
                 else " (--probe adds another view)")
        out.append(f"tested: the watched metrics ({family}; --metric chooses them)")
        out.append(f"  as the probe each cell chose saw them{views}")
    hidden = len(result.rows) - (len(result.rows) if shown is None else shown)
    if hidden > 0:
        from jitterlab.report.format import counted

        out.append(f"not shown: {counted(hidden, 'more row')}, not tested (other metrics, other probes' "
                   "views, bounds, load readings)" + (f"; every row: {every_row}" if every_row else ""))
    elif result.n_not_graded:
        out.append(f"{result.n_not_graded} {NOT_GRADED_TEXT}: outside the watched metrics or views, or "
                   "descriptions and load readings: shown, no verdict")
    if not result.n_tests:
        return [*out, "No row could be tested: a verdict needs at least 3 runs per group in a cell; then "
                "better or worse when a test shows a change, same when it rules out any beyond the "
                f"threshold of the metric's kind ({thresholds_text(result)})"]
    return [*out,
            "change: candidate / baseline of the statistic shown, with its repeated 95 % interval",
            "worse / better (sequential test): a change is shown, p adjusted with Holm's method over the "
            f"{result.n_tests} tested rows",
            f"  {result.guarantee}",
            "same (equivalence): the repeated 90 % interval lies within the threshold",
            f"  {PROMISES['equivalence']}",
            f"  thresholds: {thresholds_text(result)} (--threshold sets them)",
            "same (resolution): every value of both groups lies within the metric's resolution",
            "undecided: neither yet; more repetitions decide it",
            WHY]


def comparison_note(result, shown: int | None = None, every_row: str = "") -> str:
    """note_lines as one paragraph."""
    return "; ".join(n.strip() for n in note_lines(result, shown, every_row)) + "."


def _family_text(result) -> str:
    names = sorted({r.metric for r in result.rows if r.tested})
    return ", ".join(names[:6]) + (f" and {len(names) - 6} more" if len(names) > 6 else "")


def comparison_warnings(result) -> list[Warning_]:
    """The comparison's warnings grouped by cause, once each: "too few runs for a verdict (2 vs
    2): 17 cells (idle impl=c-fifo, ... and 14 more)"; cells named as the table's rows name them."""
    from jitterlab.analysis.compare import cell_of, cell_text, full_cell_text

    short = {full_cell_text(result, r): cell_text(result, r) for r in result.rows}
    notes = list(result.notes)
    for cell, differences in result.loads.items():
        notes.append(("cell", cell_of(result.cell_fields, cell), Warning_(
            f"the groups ran under different measured load ({load_text(differences)}): a verdict there "
            "may be the load's as much as the groups'",
            "measure both groups under the same load: stop other work on the target (jitterlab show "
            "lists each run's load readings)")))
    out = []
    for g in grouped(Note(scope, short.get(where, where) if scope == "cell" else where, w)
                     for scope, where, w in notes):
        out.append(Warning_(f"{g.message}: {g.affected} ({g.examples})", g.remedy))
    return out


def mixed_lines(result, again: str = "") -> list[str]:
    """A note per label that takes several values among the runs compared (image=A and image=B
    behind --baseline impl=python): which values each group holds, and how to compare one of them
    (`again` is the command to add --where to)."""
    out = []
    for key, (base, cand) in result.mixed.items():
        held = f"baseline {', '.join(base)}; candidate {', '.join(cand)}"
        common = [v for v in base if v in cand]
        if not common:
            out.append(f"note: the groups differ in {key} too ({held}): the change may be the {key}'s as "
                       f"much as {result.baseline.key}'s")
            continue
        pin = f"--where {shlex.quote(f'{key}={common[0]}')}"
        out.append(f"note: the runs compared take several values of {key} ({held}), pooled in each group; "
                   f"compare one {key}: {f'{again} {pin}' if again else pin}")
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
             "decided_by": r.decided_by or None, "load_differs": list(r.load_differs) or None}
            for r in result.rows]
    loads = [{"cell": dict(zip(result.cell_fields, cell, strict=True)), "probe": d.probe, "metric": d.metric,
              "unit": d.unit, "baseline": num(d.baseline), "candidate": num(d.candidate),
              "change_pct": num(d.change * 100), "p_sequential": num(d.p_sequential)}
             for cell, differences in result.loads.items() for d in differences]
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
            "mixed_labels": {k: {"baseline": list(a), "candidate": list(b)}
                             for k, (a, b) in result.mixed.items()},
            "load_differences": loads, "probes": list(result.probes),
            "warnings": [{"message": w.message, "remedy": w.remedy} for w in comparison_warnings(result)]}


def format_comparison(result, fmt: str, *, terminal: bool = False, width: int | None = None,
                      every_row: bool = False, again: str = "") -> str:
    """The comparison as a table (plain full-width rows unless `terminal`, then laid out to fit
    `width` columns: report.comparison_layout), Markdown or JSON text. Tables and Markdown list the
    tested rows, or every row with `every_row`; `again` is the command that lists every row."""
    from jitterlab.report.comparison_layout import ComparisonTable
    from jitterlab.report.terminal import console

    if fmt == "json":
        return json.dumps(comparison_json(result), indent=1) + "\n"
    rows = shown_rows(result, every_row)
    heads, cells = comparison_rows(result, rows)
    notes = note_lines(result, len(rows), f"{again} --all" if again else "--all")
    notes += [f"warning: {w.message} — {w.remedy}" for w in comparison_warnings(result)]
    notes += mixed_lines(result, again)
    if fmt == "markdown":
        lines = ["| " + " | ".join(heads) + " |", "|" + "---|" * len(heads)]
        lines += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in cells]
        # a list: Markdown would run lines of text into one paragraph
        items = [f"  - {n.strip()}" if n.startswith("  ") else f"- {n}" for n in notes]
        return escape_controls("\n".join([f"**{title(result)}**", "", *lines, "", *items]) + "\n")
    table = ComparisonTable(title(result), heads, cells, VERDICT_STYLES)
    if not terminal:  # a log, a file: plain rows at their full width, nothing cut
        out = console(file=io.StringIO(), force_terminal=False)
        out.print(table.full_table())
    else:
        out = console(file=io.StringIO(), force_terminal=True,
                      width=width or shutil.get_terminal_size().columns)
        for part in table.fitted(out):
            out.print(part, crop=False)
    for n in notes:
        out.print(n, highlight=False, markup=False)
    return out.file.getvalue()
