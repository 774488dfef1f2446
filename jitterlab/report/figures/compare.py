"""The comparison's figure: per cell and metric the effect (candidate / baseline) with its 95 % CI,
coloured by the verdict."""

from __future__ import annotations

import math
import textwrap

import numpy as np
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

from jitterlab.analysis.compare import BETTER, WORSE, Comparison, cell_text
from jitterlab.report.figures.base import MAX_ROWS
from jitterlab.report.format import change


def compare_figure(comparison: Comparison, metrics: list[str] | None = None) -> Figure:
    """One row per cell x metric (per run; only `metrics` when given): the effect (candidate /
    baseline) with its 95 % CI on a log axis, coloured by the verdict; labels wrapped to fit."""
    rows = [r for r in comparison.rows if math.isfinite(r.ratio) and r.ratio > 0 and r.view == "per-run"
            and (metrics is None or r.metric in metrics)][:MAX_ROWS]
    labels = ["\n".join(textwrap.wrap(f"{cell_text(comparison, r)} · {r.probe + ':' if r.probe else ''}"
                                      f"{r.metric}", 70)) for r in rows]
    height = 1.6 + 0.34 * sum(lab.count("\n") + 1 for lab in labels)
    fig = Figure(figsize=(11, max(2.8, height)), layout="constrained")
    ax = fig.subplots()
    colors = {BETTER: "C2", WORSE: "C3"}
    for i, r in enumerate(rows):
        color = colors.get(r.verdict, "C0")
        if math.isfinite(r.ci_low) and math.isfinite(r.ci_high) and r.ci_low > 0:
            ax.plot([r.ci_low, r.ci_high], [i, i], "-", color=color, lw=2, alpha=0.6)
        ax.plot([r.ratio], [i], "o", color=color, ms=6)
        ax.annotate(f" {change(r.ratio)}", (r.ratio, i), fontsize=7, va="bottom", ha="left")
    ax.axvline(1.0, color="black", lw=0.8)
    ax.set_xscale("log")
    ax.xaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: change(v)))
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_yticks(np.arange(len(rows)), labels, fontsize=7)
    ax.set_ylim(len(rows) - 0.5, -0.5)
    ax.set_xlabel(f"{comparison.candidate} relative to {comparison.baseline} (log axis; line: 95 % CI)")
    ax.set_title(f"{comparison.candidate} vs {comparison.baseline}: change per cell and metric", fontsize=10)
    ax.grid(True, axis="x", alpha=0.3)
    handles = [Line2D([], [], ls="none", marker="o", color=c, label=lab)
               for c, lab in (("C3", "worse"), ("C2", "better"), ("C0", "no significant change"))]
    fig.legend(handles=handles, loc="outside lower center", ncols=3, fontsize=8, frameon=False)
    return fig
