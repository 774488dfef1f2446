"""The trend report: a metric over label values, campaigns or days, one line per cell (like a
long-term latency plot) with its change points, as a self-contained HTML page with the figure
inline, and as rows for export."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import jinja2
import matplotlib.dates as mdates
import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, NullFormatter

from jitterlab import __version__
from jitterlab.analysis.trend import Point, Series, natural
from jitterlab.report.figures.base import svg_text
from jitterlab.report.format import change, format_value

MAX_LINES = 12
TIMED = ("time", "date")  # drawn on a time axis


def trend_figure(series: list[Series], metric: str, by: str) -> Figure:
    """One line per cell (at most MAX_LINES, the rest in the table), median with min-max bars; by
    time or date on a time axis, else the x values in their order; values in the unit formatter's
    units; change points as dashed lines with the change beside them."""
    timed = by in TIMED and all(p.at_ns is not None for s in series for p in s.points)
    if timed:
        def where(p: Point) -> object:
            return mdates.date2num(dt.datetime.fromtimestamp(p.at_ns / 1e9))
    else:
        xs = _ordered_x(series)
        position = {x: i for i, x in enumerate(xs)}

        def where(p: Point) -> object:
            return position[p.x]
    width = 8.0 if timed else max(6.0, 0.6 * len(xs) + 3)
    fig = Figure(figsize=(width, 4.2), layout="constrained")
    ax = fig.subplots()
    values = []
    unit = series[0].unit if series else ""
    for i, s in enumerate(series[:MAX_LINES]):
        x = [where(p) for p in s.points]
        med = np.array([p.median for p in s.points])
        err = np.array([[p.median - p.low for p in s.points], [p.high - p.median for p in s.points]])
        ax.errorbar(x, med, yerr=err, fmt="o-", ms=4, capsize=3, color=f"C{i % 10}",
                    label=f"{s.cell} ({s.probe})" if s.probe else s.cell)
        values += [p.high for p in s.points] + [p.low for p in s.points]
        for c in s.changes:
            before, after = s.sides(c)
            at = (where(before) + where(after)) / 2
            ax.axvline(at, color=f"C{i % 10}", ls="--", lw=1)
            ax.annotate(f"change {change(c.ratio)}", (at, after.median), fontsize=7, color=f"C{i % 10}",
                        xytext=(3, 3), textcoords="offset points")
    positive = [v for v in values if v > 0]
    if positive and max(positive) / min(positive) > 100:
        ax.set_yscale("log")
    # ticks read as values do elsewhere ("12.5 µs", "3 %"): no offset, no exponent
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _pos: format_value(v, unit)))
    ax.yaxis.set_minor_formatter(NullFormatter())
    if timed:
        locator = mdates.AutoDateLocator()
        ax.xaxis.set_major_locator(locator)
        ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(locator))
        ax.set_xlabel("time" if by == "time" else "date")
    else:
        ax.set_xticks(range(len(xs)), xs, rotation=30, ha="right", fontsize=8)
        ax.set_xlabel(by)
    ax.set_ylabel(metric)
    ax.set_title(f"{metric} by {by}: median per cell, bars min-max over its runs, dashed: change points",
                 fontsize=9)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7, loc="best")
    return fig


def _ordered_x(series: list[Series]) -> list[str]:
    """Every x of the lines in one order: by when, where known, else natural order of the text."""
    points = {p.x: p for s in series for p in s.points}
    return sorted(points, key=lambda x: (points[x].at_ns or 0, natural(x)))


def change_rows(series: list[Series]) -> list[dict]:
    """Each change point as people read it: the cell, where, the values on both sides, the runs."""
    out = []
    for s in series:
        for c in s.changes:
            before, after = s.sides(c)
            out.append({"cell": s.cell, "probe": s.probe, "before_x": before.x, "after_x": after.x,
                        "before": format_value(c.before, s.unit), "after": format_value(c.after, s.unit),
                        "change": change(c.ratio), "p": p_text(c.p_value),
                        "runs_before": ", ".join(before.runs), "runs_after": ", ".join(after.runs)})
    return out


def change_lines(series: list[Series]) -> list[str]:
    """The change points for a terminal: one line each, or one line saying there is none."""
    rows = change_rows(series)
    if not rows:
        return ["change points: none (no cell's values changed significantly)"]
    lines = [f"change points: {len(rows)}"]
    for c in rows:
        probe = f" ({c['probe']})" if c["probe"] else ""
        lines.append(f"  {c['cell']}{probe}: {c['before_x']} → {c['after_x']}: {c['before']} → {c['after']} "
                     f"({c['change']}, p {c['p']}); runs {c['runs_before']} | {c['runs_after']}")
    return lines


def p_text(p: float) -> str:
    return "< 0.0001" if p < 1e-4 else f"{p:.2g}"


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
        n_cells=len(series), max_lines=MAX_LINES, rows=table, changes=change_rows(series),
        svg=svg_text(trend_figure(series, metric, by))), encoding="utf-8")
    return out
