"""The standard benchmarks' figures: per-cell values on an axis that fits their range, and latency
distributions as CCDFs (log-log, the tail to the recorded maximum)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, NullFormatter

from jitterlab.analysis.summary import figure_name
from jitterlab.report.figures.base import (
    MAX_ROWS,
    axis_title,
    duration_axis,
    few_decades,
    linear_ticks,
    metric_words,
    percent_axis,
)
from jitterlab.report.format import RATIO_UNITS, TIME_UNITS, byte_unit, count, format_value

if TYPE_CHECKING:
    from jitterlab.report.summaries import BenchmarkSummary

DECADES_FOR_LOG = 2  # values spanning this many decades get a log axis
MAX_CURVES = 6  # curves an eye can follow in one panel; more are split into panels
LINE_STYLES = ("-", "--", "-.", ":")


def _value_axis(axis, unit: str) -> float:
    """Format an axis for values of `unit`; returns the factor to plot values with."""
    if unit in TIME_UNITS:
        duration_axis(axis, TIME_UNITS[unit])
        return 1.0
    if unit in RATIO_UNITS:
        percent_axis(axis)
        return 100.0
    if (sized := byte_unit(unit)) is not None:  # plotted in bytes: ticks at round MB/s, not MiB/s
        axis.set_major_formatter(FuncFormatter(lambda v, _: format_value(v, sized[1])))
        axis.set_minor_formatter(NullFormatter())
        return sized[0]
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
    runs = [f"{count(len(c.runs))} run{'s' if len(c.runs) != 1 else ''}" for c in cells]
    ax.set_yticks(np.arange(len(cells)), [f"{c.name} ({n})" for c, n in zip(cells, runs, strict=True)],
                  fontsize=7)
    ax.set_ylim(len(cells) - 0.5, -0.5)
    low, high = (min(positive), max(positive)) if positive else (None, None)
    ax.set_xlabel(axis_title(metric, unit, low, high) + (" (log axis)" if log else ""))
    if log:
        few_decades(ax.xaxis)
    else:
        linear_ticks(ax.xaxis)
    figure = figure_name(metric_words(metric), rule) if rule else metric_words(metric)
    ax.set_title(f"{summary.benchmark}: {figure} per cell — dot: that figure, line: min – max of the runs",
                 fontsize=9)
    ax.grid(True, axis="x", which="major", alpha=0.3)
    return fig


def _facets(labels: list[str], groups: dict[str, str]) -> list[tuple[str, list[str]]]:
    """Curves split into panels of at most MAX_CURVES: by their group (the cell's load), a group
    with more split again into runs of equal size, in the given order."""
    if len(labels) <= MAX_CURVES:
        return [("", labels)]
    by_group: dict[str, list[str]] = {}
    for label in labels:
        by_group.setdefault(groups.get(label, ""), []).append(label)
    out = []
    for group, members in by_group.items():
        n = math.ceil(len(members) / MAX_CURVES)
        size = math.ceil(len(members) / n)
        for k, i in enumerate(range(0, len(members), size)):
            name = " ".join(p for p in (f"load {group}" if group and len(by_group) > 1 else "",
                                        f"({k + 1} of {n})" if n > 1 else "") if p)
            out.append((name, members[i:i + size]))
    return out


def _ccdf(values: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(latency, % of samples at or above it) of the filled values above 0, in latency order."""
    order = np.argsort(values, kind="stable")
    v, c = np.asarray(values, np.float64)[order], np.asarray(counts, np.float64)[order]
    at_or_above = (c.sum() - np.concatenate([[0.0], np.cumsum(c)[:-1]])) / c.sum() * 100
    keep = v > 0
    return v[keep], at_or_above[keep]


def ccdf_figure(curves: dict[str, tuple[np.ndarray, np.ndarray]], title: str,
                overflow: dict[str, int] | None = None, groups: dict[str, str] | None = None) -> Figure:
    """Latency distributions as CCDFs on log-log axes: for each labelled run, the share of its
    samples at or above each latency, down to its recorded maximum (the last point); a run whose
    histogram overflowed has those samples at its maximum, marked ▲. More than MAX_CURVES curves
    are split into panels on shared axes (by `groups`: label -> the cell's load, when each fits),
    each panel's curves in colour over the others in grey."""
    overflow = overflow or {}
    facets = _facets(list(curves), groups or {})
    cols = 1 if len(facets) == 1 else 2
    rows = math.ceil(len(facets) / cols)
    per_panel = max(len(m) for _, m in facets)
    height = (3.8 + 0.15 * per_panel) * (1 if rows == 1 else 0.8 * rows)
    fig = Figure(figsize=(9 if cols == 1 else 11, height), layout="constrained")
    axes = fig.subplots(rows, cols, sharex=True, sharey=True, squeeze=False).ravel()
    drawn = {label: _ccdf(*curve) for label, curve in curves.items()}
    for ax, (name, members) in zip(axes, facets, strict=False):
        if len(facets) > 1:  # the other panels' curves as context
            for label in curves:
                if label not in members and len(drawn[label][0]):
                    ax.step(*drawn[label], where="post", color="lightgrey", lw=0.8, zorder=1)
        for i, label in enumerate(members):
            v, share = drawn[label]
            color = f"C{i % 10}"
            over = overflow.get(label, 0)
            extra = f", {count(over)} beyond the histogram ▲" if over else ""
            n = int(np.asarray(curves[label][1]).sum())
            ax.step(v, share, where="post", color=color, ls=LINE_STYLES[(i // 10) % len(LINE_STYLES)], lw=1.3,
                    zorder=2, label=f"{label} ({count(n)} samples{extra})")
            if len(v):
                ax.plot([v[-1]], [share[-1]], "^" if over else "o", color=color, ms=5, zorder=3)
        _ccdf_axes(ax, name, len(facets) > 1)
    ends = [float(x) for v, _ in drawn.values() if len(v) for x in (v[0], v[-1])]
    low, high = (min(ends), max(ends)) if ends else (None, None)
    for k, ax in enumerate(axes):
        if k >= len(facets):
            ax.set_visible(False)
            continue
        if k + cols >= len(facets):  # the lowest panel of its column carries the x axis
            ax.xaxis.set_tick_params(labelbottom=True)
            beyond = "\n▲ samples beyond the histogram, drawn at the run's recorded maximum" \
                if any(overflow.values()) else ""  # under the title: never over it
            ax.set_xlabel(axis_title("latency", "ns", low, high) + beyond)
        few_decades(ax.xaxis)
        if k % cols == 0:
            ax.set_ylabel("samples at or above\nthe latency [%, CCDF]")
    fig.suptitle(title, fontsize=10)
    return fig


def _ccdf_axes(ax, name: str, faceted: bool) -> None:
    ax.set_xscale("log")
    ax.set_yscale("log")
    duration_axis(ax.xaxis)
    percent_axis(ax.yaxis)
    for pct, mark in ((1.0, "p99"), (0.01, "p99.99")):  # named outside the panel: the legend never hides it
        ax.axhline(pct, color="grey", lw=0.7, ls=":")
        ax.annotate(mark, (1.0, pct), xycoords=("axes fraction", "data"), xytext=(3, 0),
                    textcoords="offset points", fontsize=7, color="dimgrey", va="center", ha="left")
    if name:
        ax.set_title(name, fontsize=9)
    ax.grid(True, which="major", alpha=0.3)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=6.5 if faceted else 7, loc="lower left", frameon=True, framealpha=0.85)
