"""The square wave's figures: the paper's figure (maximum relative period error vs period, one
panel per load), and per run the period-error histogram and the period over time, each probe
apart. Every figure's title names its target, cell or run."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable

import numpy as np
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import FuncFormatter, LogLocator, MaxNLocator, NullFormatter
from matplotlib.transforms import blended_transform_factory

from jitterlab.analysis import samples
from jitterlab.model.records import RunRecord
from jitterlab.report.figures.base import duration_axis, log_histograms, percent_axis
from jitterlab.report.format import _digits, duration

HEADLINE = "max_rel_period_error"
THRESHOLDS = (0.01, 0.10, 1.0)
LOAD_ORDER = ("idle", "cpu", "net")  # the paper's order; other loads follow by name
BLIND_MARK_FRACTION = 0.01  # □ where the plotted run had more than this share of periods excluded
MARKERS = "osD^vPX*<>"
LOG_PERIOD_SPAN = 20  # longest / shortest period of a run above which its timeline is drawn log
period_errors = samples.period_errors  # the figures draw exactly the periods the metrics used


def ordered_loads(loads: Iterable[str]) -> list[str]:
    """idle, cpu, net, then the others by name."""
    found = set(loads)
    return [x for x in LOAD_ORDER if x in found] + sorted(found - set(LOAD_ORDER))


def excluded_share(run: RunRecord) -> float:
    """Share of the run's periods excluded because the probe was blind (0 when unknown)."""
    excluded, used = run.metric("excluded_periods") or 0, run.metric("n_periods") or 0
    return excluded / (excluded + used) if excluded + used else 0.0


def envelope_figure(runs: list[RunRecord], target: str,
                    impl_of: Callable[[RunRecord], str] = lambda r: str(r.param("impl"))) -> Figure:
    """The paper's figure: the worst max_rel_period_error over repetitions (in %) vs period,
    log-log; one panel per load (idle, cpu, net, others), one line per impl; cells without a value
    marked × with why; □ where more than BLIND_MARK_FRACTION of the plotted run's periods were
    excluded as blind."""
    runs = [r for r in runs if r.target == target and r.benchmark == "squarewave"]
    loads = ordered_loads(r.load for r in runs) or ["—"]
    impls = sorted({impl_of(r) for r in runs})
    fig = Figure(figsize=(min(14.0, 3.4 * len(loads) + 2.5), 4.8), layout="constrained")
    axes = fig.subplots(1, len(loads), sharey=True, squeeze=False)[0]
    style = {impl: (f"C{i % 10}", MARKERS[i % len(MARKERS)]) for i, impl in enumerate(impls)}
    any_blind = any_trouble = False
    for ax, load in zip(axes, loads, strict=True):
        by_cell: dict[tuple[str, int], list[RunRecord]] = defaultdict(list)
        for r in runs:
            if r.load == load:
                by_cell[(impl_of(r), int(r.param("period")))].append(r)
        top = blended_transform_factory(ax.transData, ax.transAxes)
        for impl in impls:
            color, marker = style[impl]
            points, trouble = [], []
            for (i, period_ns), cell in sorted(by_cell.items()):
                if i != impl:
                    continue
                ok = [r for r in cell if r.status == "ok" and r.metric(HEADLINE) is not None]
                bad = sorted({r.status for r in cell if r.status != "ok"})
                if ok:
                    worst = max(ok, key=lambda r: r.metric(HEADLINE))
                    points.append((period_ns / 1e9, worst.metric(HEADLINE) * 100,
                                   excluded_share(worst) > BLIND_MARK_FRACTION))
                if bad:
                    trouble.append((period_ns / 1e9, "/".join(bad)))
            if points:
                x, y, _ = zip(*points, strict=True)
                ax.plot(x, y, "-", marker=marker, color=color, label=impl, ms=5)
                marked = [(px, py) for px, py, b in points if b]
                if marked:
                    any_blind = True
                    ax.plot(*zip(*marked, strict=True), "s", mfc="none", mec="black", ms=11, mew=1.2)
            for x_s, why in trouble:
                any_trouble = True
                ax.plot([x_s], [0.97], "x", color=color, ms=8, mew=2, transform=top, clip_on=False)
                ax.annotate(f"{impl}: {why}", (x_s, 0.93), xycoords=top, fontsize=7, rotation=90,
                            va="top", ha="center", color=color,
                            bbox={"boxstyle": "square,pad=0.1", "fc": "white", "ec": "none", "alpha": 0.8})
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.yaxis.set_major_locator(LogLocator(base=10, numticks=12))
        for threshold in THRESHOLDS:  # labelled by the y ticks, which always include them
            ax.axhline(threshold * 100, color="dimgrey", lw=0.9, ls=":")
        ax.set_title(f"{target} — load {load}", fontsize=10)
        ax.set_xlabel("period")
        duration_axis(ax.xaxis, 1e9)
        percent_axis(ax.yaxis)
        ax.grid(True, which="major", alpha=0.3)
    low = min((line.get_ydata().min() for ax in axes for line in ax.lines
               if len(line.get_ydata()) and line.get_transform() == ax.transData), default=1.0)
    axes[0].set_ylim(bottom=min(0.5, low / 2))  # the 1 % line is always in view
    axes[0].set_ylabel("max relative period error (worst repetition)")
    fig.suptitle(f"{target}: maximum relative period error vs period", fontsize=11)
    handles: list = [Line2D([], [], color=style[i][0], marker=style[i][1], label=i) for i in impls]
    if any_blind:
        handles.append(Line2D([], [], ls="none", marker="s", mfc="none", mec="black", ms=9,
                              label=f"> {BLIND_MARK_FRACTION * 100:g} % of periods excluded (probe blind)"))
    if any_trouble:
        handles.append(Line2D([], [], ls="none", marker="x", color="black", mew=2,
                              label="no value (failed / timeout / unmeasurable)"))
    if handles:  # as many columns as the longest label lets fit in the figure's width
        longest = max(len(h.get_label()) for h in handles)
        fits = int(fig.get_figwidth() / (0.08 * longest + 0.6))
        fig.legend(handles=handles, loc="outside lower center", ncols=max(1, min(len(handles), fits)),
                   fontsize=9, frameon=False)
    return fig


def probe_label(probe: str) -> str:
    return "self (the program's own timestamps)" if probe == "self" else f"{probe} (independent probe)"


def histogram_figure(errors: dict[str, np.ndarray], title: str) -> Figure:
    """Period error histogram per probe (in %) with a log count axis."""
    curves = {f"{probe_label(probe)}, {len(e):,} periods": e * 100 for probe, e in errors.items() if len(e)}
    edges = None
    if curves:
        lo = min(float(e.min()) for e in curves.values())
        hi = max(float(e.max()) for e in curves.values())
        edges = np.linspace(lo, hi if hi > lo else lo + 1e-6, 101)
    fig = log_histograms(curves, edges, size=(6, 3.4), xlabel="relative period error",
                          ylabel="periods", title=title)
    ax = fig.axes[0]
    ax.xaxis.set_major_locator(MaxNLocator(nbins=6))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{_digits(v, 3)} %"))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}" if v >= 1 else ""))
    ax.yaxis.set_minor_formatter(NullFormatter())
    return fig


def timeline_figure(series: dict[str, tuple[np.ndarray, np.ndarray]], period_ns: int,
                    title: str) -> Figure:
    """Period over time per probe, with the nominal period: periodic disturbances show up as
    stripes or combs. The independent probe as dots, the program's own view as crosses."""
    fig = Figure(figsize=(6, 3.4), layout="constrained")
    ax = fig.subplots()
    for i, (probe, (t_s, e)) in enumerate(series.items()):
        if len(e):
            own = probe == "self"  # the program's view underneath, the independent probe on top
            ax.plot(t_s, (1 + e) * period_ns, "x" if own else ".", ms=3.5 if own else 2.5,
                    color="C1" if own else f"C{0 if i == 0 else i + 1}", alpha=0.45 if own else 1.0,
                    zorder=1 if own else 2, label=probe_label(probe),
                    rasterized=len(e) > 1000)  # keeps the inline SVG small
    ax.axhline(period_ns, color="black", lw=0.9, ls="--", label=f"nominal {duration(period_ns)}")
    periods = [(1 + e) * period_ns for _, e in series.values() if len(e)]
    top = max((float(p.max()) for p in periods), default=period_ns)
    low = min((float(p.min()) for p in periods), default=period_ns)
    if low > 0 and top / low > LOG_PERIOD_SPAN:  # outliers would flatten the band: log axis
        ax.set_yscale("log")
    ax.set_xlabel("time since the first edge [s]")
    ax.set_ylabel("period" + (" (log axis)" if ax.get_yscale() == "log" else ""))
    duration_axis(ax.yaxis)
    ax.set_title(title, fontsize=9)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7, markerscale=3, loc="upper right")
    return fig
