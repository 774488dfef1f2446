"""The report's figures of why periods were late: a stacked bar per traced cell of its causes'
shares of the lateness (report/causes.py), and the timeline of a cell's worst explained period —
the probe's edges above, the program's CPU below with what ran there as coloured spans
(ExplainedPeriod.spans), as KernelShark draws a trace. Each segment and span carries a gid naming
its cause, so the SVG can be read back (tests, a browser's search)."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from matplotlib.figure import Figure
from matplotlib.patches import Patch
from matplotlib.ticker import FuncFormatter

from jitterlab.model.explanation import ExplainedPeriod
from jitterlab.model.series import EdgeSeries
from jitterlab.report.causes import OTHER, UNCOVERED, Shares, cause_text, percent_share, who_key
from jitterlab.report.figures.base import MAX_ROWS, percent_axis
from jitterlab.report.format import counted, duration

# one colour per cause, alike in every figure (what another task did: warm; interrupts: blue; the
# program itself: green; no kernel event: grey)
COLOURS = {
    "wakeup": "#d62728", "switch": "#ff7f0e", "timer": "#e377c2", "migration": "#bcbd22",
    "irq": "#1f77b4", "softirq": "#17becf", "program": "#2ca02c", "slack": "#98df8a",
    "idle-exit": "#9467bd", "unaccounted": "#7f7f7f", OTHER: "#c7c7c7", UNCOVERED: "#ffffff",
}
AXES_PT = 0.88 * 11 * 72  # the width of a figure's axes in points, about (11 in wide figures)
CHAR_PT = 0.6 * 7  # the width of a character of the 7 pt labels, about


def fitting(width_share: float, *texts: str | None, axes_pt: float = AXES_PT) -> str | None:
    """The first text that fits in a span `width_share` of the axes (`axes_pt` wide); None when none
    does."""
    room = width_share * axes_pt
    return next((t for t in texts if t and len(t) * CHAR_PT <= room), None)
# the legend: each cause in words (analysis/attribution.py CAUSES)
LEGEND = {
    "wakeup": "another task ran instead", "switch": "a task ran on until the switch",
    "timer": "timer held off by a task", "migration": "migration", "irq": "IRQ handler",
    "softirq": "softirq", "program": "the program's own code", "slack": "timer slack",
    "idle-exit": "idle exit", "unaccounted": "unaccounted (no kernel event)", OTHER: "other causes",
    UNCOVERED: "not covered by the trace",
}


def colour(cause: str | None) -> str:
    return COLOURS.get(cause or UNCOVERED, "#8c564b")


def shares_figure(cells: Mapping[tuple[str, str], Shares], several_targets: bool = False) -> Figure:
    """One horizontal bar per cell (at most MAX_ROWS), 0 to 100 % of its explained lateness, in
    segments of its cause groups, longest first; a legend of the causes drawn."""
    shown = list(cells.items())[:MAX_ROWS]
    fig = Figure(figsize=(11, 1.6 + 0.42 * len(shown)), layout="constrained")
    ax = fig.subplots()
    drawn: dict[str, str] = {}
    for i, (_, s) in enumerate(shown):
        left = 0.0
        for g in s.groups:
            width = g.share * 100
            ax.barh(i, width, left=left, height=0.6, color=colour(g.cause), edgecolor="#555", lw=0.5,
                    gid=f"share-{g.cause}")
            words = fitting(g.share, f"{percent_share(g.share)} {g.text}", percent_share(g.share),
                            axes_pt=0.65 * AXES_PT)  # the cells' names take a third of the width
            if words is not None:
                ax.text(left + width / 2, i, words, ha="center", va="center", fontsize=7, clip_on=True)
            drawn.setdefault(g.cause, LEGEND.get(g.cause, g.cause))
            left += width
    names = [f"{t} {label}" if several_targets else label for (t, label), _ in shown]
    notes = [f" ({counted(s.periods, 'period')}, {duration(s.lateness_ns)})"
             + (" — emulated" if s.emulated else "") for _, s in shown]
    ax.set_yticks(np.arange(len(shown)), [n + note for n, note in zip(names, notes, strict=True)],
                  fontsize=8)
    ax.set_ylim(len(shown) - 0.5, -0.5)
    ax.set_xlim(0, 100)
    percent_axis(ax.xaxis)
    ax.set_xlabel("share of the explained periods' lateness [%]")
    ax.set_title("why periods were late: each traced cell's causes, from its kernel traces", fontsize=9)
    handles = [Patch(facecolor=colour(c), edgecolor="#555", label=words) for c, words in drawn.items()]
    below = -0.35 if len(shown) < 3 else -0.12
    ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, below), ncol=4, fontsize=7,
              frameon=False)
    return fig


def timeline_figure(period: ExplainedPeriod, edges: EdgeSeries | None, title: str) -> Figure:
    """The worst period on the trace's clock, from a quarter of its lateness before its due time to
    as long after its real edge: above, the probe's edges (`edges`: on the same clock, else None and
    only the due time and the edge are drawn); below, the program's CPU(s) with its spans coloured
    by cause, who written in the wide ones; the axis in time from the due time."""
    due, edge = period.due_ns, period.edge_ns
    margin = max((edge - due) // 4, 1)
    lo, hi = due - margin, edge + margin
    spans = period.spans or ()
    cpus = sorted({s.cpu for s in spans}) or [0]
    fig = Figure(figsize=(11, 2.2 + 0.45 * len(cpus)), layout="constrained")
    top, bottom = fig.subplots(2, 1, sharex=True, height_ratios=[1, 0.6 + 0.4 * len(cpus)])
    top.set_gid("probe-edges")
    if edges is not None:
        t, level = edges.t_ns, edges.level
        inside = (t >= lo) & (t <= hi)
        first = int(np.argmax(inside)) if inside.any() else int(np.searchsorted(t, lo))
        start_level = int(level[first - 1]) if first > 0 else 1 - int(level[first]) if len(level) else 0
        xs = np.concatenate([[lo], t[inside], [hi]]) - due
        last = level[inside][-1] if inside.any() else start_level
        ys = np.concatenate([[start_level], level[inside], [last]])
        top.step(xs, ys, where="post", color="#222", lw=1.2, gid="probe-wave")
        top.set_ylim(-0.2, 1.2)
        top.set_yticks([0, 1], ["low", "high"], fontsize=7)
    else:
        top.set_yticks([])
        top.text(0.5, 0.5, "edges on another clock: only the due time and the real edge are placed",
                 transform=top.transAxes, ha="center", va="center", fontsize=8, color="#555")
    for ax in (top, bottom):
        ax.axvline(0, color="#1a7f37", ls="--", lw=1, gid="due")
        ax.axvline(edge - due, color="#cf222e", ls="-", lw=1, gid="edge")
    top.text(0, 1.02, " due", transform=top.get_xaxis_transform(), fontsize=7, color="#1a7f37")
    top.text(edge - due, 1.02, f" edge, {duration(edge - due)} late", transform=top.get_xaxis_transform(),
             fontsize=7, color="#cf222e")
    top.set_ylabel("probe", fontsize=8)
    drawn: dict[str, str] = {}
    for s in spans:
        row = cpus.index(s.cpu)
        width = s.end_ns - s.start_ns
        bottom.broken_barh([(s.start_ns - due, width)], (row - 0.35, 0.7), facecolors=colour(s.cause),
                           edgecolor="#555", lw=0.5, gid=f"span-{s.cause or UNCOVERED}")
        who = who_key(s.who) if s.who is not None else None
        words = fitting(width / (hi - lo), cause_text(s.cause or UNCOVERED, who), who)
        if words is not None:
            bottom.text(s.start_ns - due + width / 2, row, words, ha="center", va="center", fontsize=7,
                        clip_on=True)
        drawn.setdefault(s.cause or UNCOVERED, LEGEND.get(s.cause or UNCOVERED, s.cause or UNCOVERED))
    bottom.set_yticks(range(len(cpus)), [f"CPU {c}" for c in cpus], fontsize=8)
    bottom.set_ylim(len(cpus) - 0.5, -0.5)
    bottom.set_xlim(lo - due, hi - due)
    bottom.xaxis.set_major_formatter(FuncFormatter(_signed))
    bottom.set_xlabel("time from the due time (the trace's clock)")
    if not spans:
        bottom.text(0.5, 0.5, "the run kept no spans of this period", transform=bottom.transAxes,
                    ha="center", va="center", fontsize=8, color="#555")
    if drawn:
        handles = [Patch(facecolor=colour(c), edgecolor="#555", label=w) for c, w in drawn.items()]
        bottom.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.45), ncol=4, fontsize=7,
                      frameon=False)
    top.set_title(title, fontsize=9)
    return fig


def _signed(v: float, _: object) -> str:
    """A tick of time from the due time: "−200 µs", "0", "1 ms"."""
    return f"{'−' if v < 0 else ''}{duration(abs(v), 3)}" if v else "0"
