"""The trend report: a metric over label values, campaigns or days, one line per cell (like a
long-term latency plot), as a self-contained HTML page with the figure inline, and as rows for
export."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import jinja2
import numpy as np
from matplotlib.figure import Figure

from jitterlab import __version__
from jitterlab.analysis.trend import Series
from jitterlab.report.figures.base import svg_text
from jitterlab.report.format import format_value

MAX_LINES = 12


def trend_figure(series: list[Series], metric: str, by: str) -> Figure:
    """One line per cell (at most MAX_LINES, the rest in the table), median with min-max bars."""
    xs = sorted({p.x for s in series for p in s.points},
                key=lambda x: min(i for s in series for i, p in enumerate(s.points) if p.x == x))
    position = {x: i for i, x in enumerate(xs)}
    fig = Figure(figsize=(max(6.0, 0.6 * len(xs) + 3), 4.2), layout="constrained")
    ax = fig.subplots()
    values = []
    unit = series[0].unit if series else ""
    scale, unit = (100.0, "%") if unit == "ratio" else (1.0, unit)  # ratios read as percentages
    for i, s in enumerate(series[:MAX_LINES]):
        x = [position[p.x] for p in s.points]
        med = np.array([p.median for p in s.points]) * scale
        err = np.array([[p.median - p.low for p in s.points], [p.high - p.median for p in s.points]]) * scale
        ax.errorbar(x, med, yerr=err, fmt="o-", ms=4, capsize=3, color=f"C{i % 10}",
                    label=f"{s.cell} ({s.probe})" if s.probe else s.cell)
        values += [p.high * scale for p in s.points] + [p.low * scale for p in s.points]
    positive = [v for v in values if v > 0]
    if positive and max(positive) / min(positive) > 100:
        ax.set_yscale("log")
    ax.set_xticks(range(len(xs)), xs, rotation=30, ha="right", fontsize=8)
    ax.set_xlabel(by)
    ax.set_ylabel(f"{metric} [{unit}]" if unit else metric)
    ax.set_title(f"{metric} by {by}: median per cell, bars min-max over its runs", fontsize=9)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7, loc="best")
    return fig


def rows(series: list[Series]) -> list[dict]:
    """One row per cell and x, raw values (for CSV/JSON export)."""
    return [{"cell": s.cell, "probe": s.probe, "x": p.x, "median": p.median, "min": p.low, "max": p.high,
             "runs": p.n, "unit": s.unit} for s in series for p in s.points]


def render(series: list[Series], metric: str, by: str, out: Path) -> Path:
    env = jinja2.Environment(loader=jinja2.PackageLoader("jitterlab.report", "templates"), autoescape=True,
                             undefined=jinja2.StrictUndefined)
    table = [{"cell": s.cell, "probe": s.probe, "x": p.x, "median": format_value(p.median, s.unit),
              "range": f"{format_value(p.low, s.unit)} – {format_value(p.high, s.unit)}", "n": p.n}
             for s in series for p in s.points]
    out.write_text(env.get_template("trend.html.j2").render(
        metric=metric, by=by, version=__version__, generated=dt.datetime.now().isoformat(timespec="seconds"),
        n_cells=len(series), max_lines=MAX_LINES, rows=table,
        svg=svg_text(trend_figure(series, metric, by))), encoding="utf-8")
    return out
