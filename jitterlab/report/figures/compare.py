"""The comparison's figure: per cell and metric the effect (candidate / baseline) with its 95 % CI,
drawn by the verdict: each of the four verdicts has its own colour and marker, so that undecided
never looks like same. A maximum that is only a lower bound in a group (runs whose probe did not
observe every period: the tables' "≥", the envelope's caret) makes the change a bound too: a caret
beside the point shows which way the true change may lie, and its label says "≥" or "≤"."""

from __future__ import annotations

import math
import textwrap
from collections.abc import Collection, Mapping
from dataclasses import dataclass

import numpy as np
from matplotlib.figure import Figure
from matplotlib.legend_handler import HandlerTuple
from matplotlib.lines import Line2D
from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter, NullLocator
from matplotlib.transforms import offset_copy

from jitterlab.analysis.compare import BETTER, NOT_GRADED, SAME, UNDECIDED, WORSE, Comparison, cell_text
from jitterlab.analysis.groups import paired
from jitterlab.analysis.reading import reading
from jitterlab.model.cellnames import PLAIN, CellNames
from jitterlab.model.reading import MAX
from jitterlab.model.records import RunRecord
from jitterlab.report.figures.base import MAX_ROWS
from jitterlab.report.figures.squarewave import unobserved
from jitterlab.report.format import _digits, change

# verdict -> (colour, marker, filled, CI line style, legend text)
STYLES: dict[str, tuple[str, str, bool, str, str]] = {
    WORSE: ("#cf222e", "o", True, "-", "worse"),
    BETTER: ("#1a7f37", "o", True, "-", "better"),
    SAME: ("#57606a", "s", True, "-", "same (within the threshold)"),
    UNDECIDED: ("#bf8700", "D", False, "--", "undecided (more runs needed)"),
}
_NOT_GRADED_STYLE = ("#afb8c1", "x", True, ":", "not tested")
# ratios a person reads as factors near no change (×0.9, ×1.25); beyond them 1, 2 and 5 times a
# power of ten (×0.5, ×2, ×10): the candidates for the ticks of the log axis
_NEAR_ONE = (0.8, 0.9, 0.95, 1.05, 1.1, 1.25)
MAX_TICKS = 9
FACTOR_LABEL = 2.0  # a change this many times (or 1/this) or more is labelled with its factor too
CARET_LEFT, CARET_RIGHT = 4, 5  # matplotlib's CARETLEFT, CARETRIGHT: beside a point, where the change may lie
LOWER_BOUND_TEXT = "lower bound (≥): the candidate's probe missed periods, the change may be larger"
UPPER_BOUND_TEXT = "upper bound (≤): the baseline's probe missed periods, the change may be smaller"
EITHER_WAY_TEXT = ("either way (both carets): both groups' probes missed periods, the change may be larger "
                   "or smaller")


@dataclass(frozen=True)
class Censored:
    """Which group's value of a row is only a lower bound: a maximum over the periods its probe
    observed, in runs where it did not observe them all. The candidate's makes the change a lower
    bound (≥), the baseline's an upper bound (≤), both leave it open either way."""

    baseline: bool = False
    candidate: bool = False

    def label(self, changed: str) -> str:
        """The change as the chart labels it: "≥ +12 %", "≤ +12 %", "+12 % either way"."""
        if self.baseline and self.candidate:
            return f"{changed} either way"
        return f"≥ {changed}" if self.candidate else f"≤ {changed}" if self.baseline else changed


def censored_rows(comparison: Comparison, runs: list[RunRecord],
                  names: CellNames = PLAIN) -> dict[tuple, Censored]:
    """(cell, probe, metric) -> Censored, for the rows whose maximum is a lower bound in a group
    (`runs` and `names` as the comparison was made of them)."""
    groups = {cell: (a, b) for cell, a, b in paired(runs, comparison.baseline, comparison.candidate,
                                                      names).cells}

    def bounded(group: list[RunRecord], probe: str, metric: str) -> bool:
        found = [r for r in group if (probe, metric) in r.metrics]
        return (bool(found) and reading(found[0].metrics[(probe, metric)]).stat == MAX
                and any(unobserved(r, probe) for r in found))

    out = {}
    for row in comparison.rows:
        base, cand = groups.get(row.cell, ([], []))
        mark = Censored(bounded(base, row.probe, row.metric), bounded(cand, row.probe, row.metric))
        if mark.baseline or mark.candidate:
            out[(row.cell, row.probe, row.metric)] = mark
    return out


def change_ticks(low: float, high: float) -> list[float]:
    """Tick positions (ratios) between `low` and `high` that read as round changes, 1 among them,
    at most about MAX_TICKS, no two closer than an even share of the log range (labels that
    would overlap are left out), walking outward from "no change"."""
    gap = (math.log(high) - math.log(low)) / MAX_TICKS
    decades = range(math.floor(math.log10(low)), math.ceil(math.log10(high)) + 1)
    nice = {*_NEAR_ONE, *(m * 10.0 ** k for k in decades for m in (1, 2, 5))}
    kept = [1.0]
    for side in (sorted(r for r in nice if 1.0 < r <= high),
                 sorted((r for r in nice if low <= r < 1.0), reverse=True)):
        last = 1.0
        for r in side:
            if abs(math.log(r) - math.log(last)) >= gap:
                kept.append(r)
                last = r
    return sorted(kept)


_SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")
POWER_FROM = 4  # decades from ×1 from which a factor is written as a power of ten (×10⁴, ×2·10⁻⁵)


def factor(ratio: float) -> str:
    """A ratio as the axis reads it: "×0.5", "×2", "×10", "×1.25"; far from 1 as a power of ten
    ("×10⁴", "×5·10⁻⁶"), whose digits would run into the next tick's."""
    if not (math.isfinite(ratio) and ratio > 0):
        return change(ratio)
    k = math.floor(math.log10(ratio) + 1e-9)
    if abs(k) < POWER_FROM:
        return f"×{_digits(ratio, 3)}"
    mantissa = _digits(ratio / 10.0**k, 3)
    return f"×{'' if mantissa == '1' else mantissa + '·'}10{str(k).translate(_SUPERSCRIPT)}"


def point_label(ratio: float) -> str:
    """A point's change as the tables say it, and its factor where the change is large: "+42.6 %",
    "+1,525 % (×16.3)", "-99 % (×0.01)"."""
    text = change(ratio)
    return f"{text} ({factor(ratio)})" if ratio >= FACTOR_LABEL or ratio <= 1 / FACTOR_LABEL else text


def _x_range(rows) -> tuple[float, float]:
    """A log range holding every ratio and CI, no change, and at least -20 % ... +25 %."""
    values = [1.0, 0.8, 1.25]
    for r in rows:
        values += [v for v in (r.ratio, r.ci_low, r.ci_high) if math.isfinite(v) and v > 0]
    low, high = min(values), max(values)
    pad = (math.log(high) - math.log(low)) * 0.08
    return math.exp(math.log(low) - pad), math.exp(math.log(high) + pad)


def charted_rows(comparison: Comparison, metrics: Collection[str] | None = None) -> list:
    """The rows compare_figure draws: those of `metrics` (default all) that have a ratio (a signed
    metric's difference is left to the table), the first MAX_ROWS."""
    return [r for r in comparison.rows if math.isfinite(r.ratio) and r.ratio > 0
            and (metrics is None or r.metric in metrics)][:MAX_ROWS]


def compare_figure(comparison: Comparison, metrics: Collection[str] | None = None,
                   censored: Mapping[tuple, Censored] | None = None) -> Figure:
    """One row per cell x metric (charted_rows): the effect (candidate / baseline) with its
    repeated 95 % interval on a log axis, drawn by the verdict; labels wrapped to fit. `censored`
    (censored_rows) marks the rows whose change is only a bound."""
    rows = charted_rows(comparison, metrics)
    labels = ["\n".join(textwrap.wrap(f"{cell_text(comparison, r)} · {r.probe + ':' if r.probe else ''}"
                                      f"{r.metric}", 70)) for r in rows]
    height = 1.8 + 0.34 * sum(lab.count("\n") + 1 for lab in labels)
    fig = Figure(figsize=(11, max(2.8, height)), layout="constrained")
    ax = fig.subplots()
    bounds: set[str] = set()  # the carets drawn, for the legend
    for i, r in enumerate(rows):
        color, marker, filled, line, _ = STYLES.get(r.verdict, _NOT_GRADED_STYLE)
        if math.isfinite(r.ci_low) and math.isfinite(r.ci_high) and r.ci_low > 0:
            ax.plot([r.ci_low, r.ci_high], [i, i], ls=line, color=color, lw=2, alpha=0.7)
        ax.plot([r.ratio], [i], ls="none", marker=marker, color=color, ms=7,
                markerfacecolor=color if filled else "white", markeredgewidth=1.5)
        mark = (censored or {}).get((r.cell, r.probe, r.metric), Censored())
        for bounded, caret, dx, gid in ((mark.candidate, CARET_RIGHT, 11, "lower-bound"),
                                        (mark.baseline, CARET_LEFT, -11, "upper-bound")):
            if bounded:  # just beside the point, on the side the true change may lie
                bounds.add(gid)
                beside = offset_copy(ax.transData, fig=fig, x=dx, units="points")
                ax.plot([r.ratio], [i], ls="none", marker=caret, color=color, ms=9, mec="white", mew=0.5,
                        zorder=4, transform=beside, gid=gid)
        ax.annotate(f" {mark.label(point_label(r.ratio))}", (r.ratio, i), fontsize=7, va="bottom", ha="left")
    ax.axvline(1.0, color="black", lw=0.8)
    ax.set_xscale("log")
    low, high = _x_range(rows)
    ax.set_xlim(low, high)
    ax.xaxis.set_major_locator(FixedLocator(change_ticks(low, high)))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: factor(v)))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_yticks(np.arange(len(rows)), labels, fontsize=7)
    ax.set_ylim(len(rows) - 0.5, -0.5)
    ax.set_xlabel(f"{comparison.candidate} ÷ {comparison.baseline} (log axis: ×2 twice as large, ×0.5 half; "
                  "line: 95 % CI)")
    ax.set_title(f"{comparison.candidate} vs {comparison.baseline}: change per cell and metric", fontsize=10)
    ax.grid(True, axis="x", alpha=0.3)
    shown = [*STYLES.values()]
    if any(r.verdict == NOT_GRADED for r in rows):
        shown.append(_NOT_GRADED_STYLE)
    handles = [Line2D([], [], ls=line, marker=marker, color=color, label=text, ms=7,
                      markerfacecolor=color if filled else "white")
               for color, marker, filled, line, text in shown]
    carets: list = [Line2D([], [], ls="none", marker=caret, color="black", ms=7, mew=0, label=text)
                    for gid, caret, text in (("lower-bound", CARET_RIGHT, LOWER_BOUND_TEXT),
                                             ("upper-bound", CARET_LEFT, UPPER_BOUND_TEXT)) if gid in bounds]
    labels = [h.get_label() for h in handles + carets]
    marks = [(censored or {}).get((r.cell, r.probe, r.metric), Censored()) for r in rows]
    if any(m.baseline and m.candidate for m in marks):  # a point with both carets: said what it means
        carets.append(tuple(Line2D([], [], ls="none", marker=c, color="black", ms=7, mew=0)
                            for c in (CARET_LEFT, CARET_RIGHT)))
        labels.append(EITHER_WAY_TEXT)
    if carets:  # two columns, the verdicts', then the long bound entries' (in rows they ran past the edges)
        rows = max(len(handles), len(carets))
        blank = Line2D([], [], ls="none")
        entries = [*handles, *[blank] * (rows - len(handles)), *carets, *[blank] * (rows - len(carets))]
        texts = [*labels[:len(handles)], *[""] * (rows - len(handles)), *labels[len(handles):],
                 *[""] * (rows - len(carets))]
        fig.legend(handles=entries, labels=texts, loc="outside lower center", ncols=2, fontsize=8,
                   frameon=False, handler_map={tuple: HandlerTuple(ndivide=None, pad=0)})
    else:
        fig.legend(handles=handles, loc="outside lower center", ncols=len(handles), fontsize=8, frameon=False)
    return fig
