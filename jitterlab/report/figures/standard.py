"""The standard benchmarks' figures: per-cell values on an axis that fits their range, and latency
distributions as CCDFs (log-log, the tail to the recorded maximum)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, NullFormatter

from jitterlab.analysis.summary import WORST
from jitterlab.report.figures.base import MAX_ROWS, duration_axis, percent_axis
from jitterlab.report.format import RATIO_UNITS, TIME_UNITS, format_value

if TYPE_CHECKING:
    from jitterlab.report.summaries import BenchmarkSummary

DECADES_FOR_LOG = 2  # values spanning this many decades get a log axis
LINE_STYLES = ("-", "--", "-.", ":")


def _value_axis(axis, unit: str) -> float:
    """Format an axis for values of `unit`; returns the factor to plot values with."""
    if unit in TIME_UNITS:
        duration_axis(axis, TIME_UNITS[unit])
        return 1.0
    if unit in RATIO_UNITS:
        percent_axis(axis)
        return 100.0
    axis.set_major_formatter(FuncFormatter(lambda v, _: format_value(v, unit)))
    axis.set_minor_formatter(NullFormatter())
    return 1.0


def bars_figure(summary: BenchmarkSummary, metric: str) -> Figure:
    """One row per cell: the cell's summary of `metric` (by its rule) as a dot, the runs' min–max
    as a line, × for a cell without a value; a log axis when the values span decades."""
    cells = summary.cells[:MAX_ROWS]
    values = [c.values.get(metric) for c in cells]
    unit = next((v.unit for v in values if v is not None), "")
    rule = next((v.rule for v in values if v is not None), "")
    fig = Figure(figsize=(9, 1.1 + 0.3 * max(len(cells), 1)), layout="constrained")
    ax = fig.subplots()
    factor = _value_axis(ax.xaxis, unit)
    positive = [x for v in values if v is not None for x in (v.low, v.high) if x > 0]
    log = bool(positive) and math.log10(max(positive) / min(positive)) >= DECADES_FOR_LOG
    if log:
        ax.set_xscale("log")
        _value_axis(ax.xaxis, unit)
    for i, v in enumerate(values):
        if v is None:
            ax.plot([0.5], [i], "x", color="C3", ms=8, mew=2, transform=ax.get_yaxis_transform())
            ax.annotate(f" {cells[i].status}", (0.5, i), xycoords=ax.get_yaxis_transform(),
                        va="center", fontsize=7, color="C3")
            continue
        ax.plot([v.low * factor, v.high * factor], [i, i], "-", color="grey", lw=1.5)
        ax.plot([v.value * factor], [i], "o", color="C0", ms=6)
    ax.set_yticks(np.arange(len(cells)), [f"{c.name} ({len(c.runs)} runs)" for c in cells], fontsize=7)
    ax.set_ylim(len(cells) - 0.5, -0.5)
    ax.set_xlabel(f"{metric}" + (" (log axis)" if log else ""))
    dot = "the worst run" if rule == WORST else "the median of the runs"
    ax.set_title(f"{summary.benchmark}: {metric} per cell — dot: {dot}, line: min – max of the runs",
                 fontsize=9)
    ax.grid(True, axis="x", which="major", alpha=0.3)
    return fig


def ccdf_figure(curves: dict[str, tuple[np.ndarray, np.ndarray]], title: str,
                overflow: dict[str, int] | None = None) -> Figure:
    """Latency distributions as CCDFs on log-log axes: for each labelled run, the share of its
    samples at or above each latency, down to its recorded maximum (the last point); a run whose
    histogram overflowed has those samples at its maximum, marked ▲."""
    overflow = overflow or {}
    fig = Figure(figsize=(9, 3.8 + 0.15 * len(curves)), layout="constrained")
    ax = fig.subplots()
    for i, (label, (values, counts)) in enumerate(curves.items()):
        order = np.argsort(values, kind="stable")
        v, c = np.asarray(values, np.float64)[order], np.asarray(counts, np.float64)[order]
        at_or_above = (c.sum() - np.concatenate([[0.0], np.cumsum(c)[:-1]])) / c.sum() * 100
        keep = v > 0
        style = dict(color=f"C{i % 10}", ls=LINE_STYLES[(i // 10) % len(LINE_STYLES)], lw=1.3)
        over = overflow.get(label, 0)
        extra = f", {over:,} beyond the histogram ▲" if over else ""
        ax.step(v[keep], at_or_above[keep], where="post", label=f"{label} ({int(c.sum()):,} samples{extra})",
                **style)
        if len(v) and v[-1] > 0:
            ax.plot([v[-1]], [at_or_above[-1]], "^" if over else "o", color=style["color"], ms=5)
    ax.set_xscale("log")
    ax.set_yscale("log")
    duration_axis(ax.xaxis)
    percent_axis(ax.yaxis)
    for pct, name in ((1.0, "p99"), (0.01, "p99.99")):
        ax.axhline(pct, color="grey", lw=0.7, ls=":")
        ax.annotate(name, (0.005, pct), xycoords=("axes fraction", "data"), fontsize=7, color="dimgrey",
                    va="bottom")
    ax.set_xlabel("latency")
    ax.set_ylabel("samples at or above (CCDF)")
    ax.set_title(title, fontsize=9)
    ax.grid(True, which="major", alpha=0.3)
    if any(overflow.values()):
        ax.annotate("▲ samples beyond the histogram, drawn at the run's recorded maximum",
                    (0.995, 0.995), xycoords="axes fraction", ha="right", va="top", fontsize=7)
    if curves:
        fig.legend(loc="outside lower center", fontsize=7, ncols=1, frameon=False)
    return fig
