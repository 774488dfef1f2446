"""The square wave's figures: the paper's figure (maximum relative period error vs period, one
panel per load), and per run the histogram of |period error| on log-spaced bins and the period over
time, each probe apart. Every figure's title names its target, cell or run."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import FixedLocator, FuncFormatter, LogLocator, NullFormatter, NullLocator
from matplotlib.transforms import offset_copy

from jitterlab.analysis import samples
from jitterlab.analysis.watched import NOT_WATCHED, watched_program_pin
from jitterlab.model.records import RunRecord
from jitterlab.report.figures.base import duration_axis, few_decades, percent_axis
from jitterlab.report.format import count, duration, percent
from jitterlab.report.traits import observer, own, traits_of
from jitterlab.report.traits import period_ns as nominal_ns
from jitterlab.report.wave_rules import HEADLINE, LOAD_ORDER, ordered_loads, unobserved  # noqa: F401

THRESHOLDS = (0.01, 0.10, 1.0)
BLIND_MARK_FRACTION = 0.01  # a ring where the plotted run had at least this share of periods excluded
# the ring's grade by the share of periods excluded as blind: (from share, marker size, line width, grey)
BLIND_GRADES = ((BLIND_MARK_FRACTION, 9, 0.8, "#b0b0b0"), (0.05, 11, 1.5, "#606060"),
                (0.20, 13, 2.6, "black"))
DODGE_DECADES = 0.025  # impls side by side around a period, at most this far apart on the log axis
BAND_DECADES = 0.1  # ... within a band this wide around it (×0.89 … ×1.12), however many impls
BAND_OF_GAP = 0.4  # ... and at most this share of the log distance to the next period drawn
MAX_PERIOD_TICKS = 8  # periods that each get a tick of the period axis; more get the decades
BINS_PER_DECADE = 8
MAX_DECADES = 6  # of |period error| a histogram spans below its largest value
MARK_MERGE = 1.3  # percentile marks closer than this factor share one line and label
MARKERS = "osDvPX*<>"  # "^" is left to the lower bound's caret
LOWER_BOUND_MARK = 6  # matplotlib's CARETUP, drawn just above a point whose value is a lower bound
LOWER_BOUND_TEXT = "caret above a point: ≥, a lower bound (periods the probe did not observe)"
LOG_PERIOD_SPAN = 20  # longest / shortest period of a run above which its timeline is drawn log
period_errors = samples.period_errors  # the figures draw exactly the periods the metrics used


def excluded_share(run: RunRecord) -> float:
    """Share of the run's periods excluded because the probe was blind (0 when unknown)."""
    excluded, used = own(run, "excluded_periods") or 0, own(run, "n_periods") or 0
    return excluded / (excluded + used) if excluded + used else 0.0


def blind_grade(share: float) -> int | None:
    """The index in BLIND_GRADES of a blind share (None below the first grade)."""
    graded = [i for i, (low, *_rest) in enumerate(BLIND_GRADES) if share >= low]
    return graded[-1] if graded else None


def blind_grade_text(i: int) -> str:
    low = BLIND_GRADES[i][0]
    if i + 1 < len(BLIND_GRADES):
        return f"probe blind {percent(low)} – {percent(BLIND_GRADES[i + 1][0])} of periods"
    return f"probe blind ≥ {percent(low)} of periods"


def worst_of(r: RunRecord) -> float:
    """A run's worst period as far as it is proven: a blind run's reached its bound, and may have
    gone beyond."""
    return max(own(r, HEADLINE), own(r, "max_rel_period_error_bound") or 0.0)


@dataclass(frozen=True)
class Point:
    """One impl's value at one period of one load: the worst repetition (in %), its blind share,
    whether its probe watched the program's pin, and whether the value is only a lower bound (a
    repetition's probe did not observe every period: the terminal's "≥")."""

    period_s: float
    value_pct: float
    blind_share: float
    watched: bool
    lower_bound: bool = False


def envelope_points(runs: list[RunRecord], load: str, impl: str, impl_of
                    ) -> tuple[list[Point], list[tuple[float, str]]]:
    """The points of one impl's line in one load's panel, and the periods with repetitions without
    a value (why)."""
    by_period: dict[int, list[RunRecord]] = defaultdict(list)
    for r in runs:
        if r.load == load and impl_of(r) == impl:
            by_period[nominal_ns(r)].append(r)
    points, missing = [], []
    for period_ns, cell in sorted(by_period.items()):
        ok = [r for r in cell if r.status == "ok" and own(r, HEADLINE) is not None]
        if any(not math.isfinite(own(r, HEADLINE)) for r in ok):  # no point on a log axis
            missing.append((period_ns / 1e9, "not finite"))
            ok = [r for r in ok if math.isfinite(own(r, HEADLINE))]
        program = [r for r in ok if watched_program_pin(r)]  # never another signal's when both exist
        if program or ok:
            shown = program or ok
            worst = max(shown, key=worst_of)
            points.append(Point(period_ns / 1e9, worst_of(worst) * 100, excluded_share(worst),
                                bool(program), any(unobserved(r) for r in shown)))
        bad = sorted({r.status for r in cell if r.status != "ok"})
        if bad:  # a failed repetition is news also where others have a value
            missing.append((period_ns / 1e9, "/".join(bad)))
    return points, missing


def band_decades(periods_s: list[float]) -> float:
    """How wide (in decades of the period axis) the band is in which impls stand side by side around
    each period: BAND_DECADES, narrowed to BAND_OF_GAP of the closest two periods drawn, so that a
    marker is always read at its own period, never near the next one."""
    steps = np.diff(np.log10(sorted(set(periods_s))))
    return min(BAND_DECADES, BAND_OF_GAP * float(steps.min())) if len(steps) else BAND_DECADES


def _dodge(n: int, band: float = BAND_DECADES) -> list[float]:
    """Factors that set n impls side by side around a period on a log axis: DODGE_DECADES apart, closer
    when n of them would not fit in the band."""
    step = min(DODGE_DECADES, band / (n - 1)) if n > 1 else 0.0
    return [10 ** (step * (i - (n - 1) / 2)) for i in range(n)]


def envelope_figure(runs: list[RunRecord], target: str,
                    impl_of: Callable[[RunRecord], str] = lambda r: str(r.param("impl"))) -> Figure:
    """The paper's figure: the worst max_rel_period_error over repetitions (in %) vs period,
    log-log; one panel per load (idle, cpu, net, others), one line per impl, impls set side by side
    around each period so that equal values stay visible; the share of periods the probe was blind
    graded by the ring around a point; hollow markers where the probe watched another signal
    (not the program's pin); cells without a value as × in a strip below the panels, with why."""
    runs = [r for r in runs if r.target == target and traits_of(r).periodic]
    loads = ordered_loads(r.load for r in runs) or ["—"]
    impls = sorted({impl_of(r) for r in runs})
    lines = {(load, impl): envelope_points(runs, load, impl, impl_of) for load in loads for impl in impls}
    missing_impls = [i for i in impls if any(lines[(load, i)][1] for load in loads)]
    fig = Figure(figsize=(min(14.0, 3.4 * len(loads) + 3.5), 5.4 + 0.22 * len(missing_impls)),
                 layout="constrained")
    if missing_impls:
        grid = fig.subplots(2, len(loads), sharex="col", squeeze=False,
                            gridspec_kw={"height_ratios": [4.2, 0.3 + 0.2 * len(missing_impls)]})
        axes, strips = grid[0], grid[1]
        for ax in axes[1:]:
            ax.sharey(axes[0])
    else:
        axes, strips = fig.subplots(1, len(loads), sharey=True, squeeze=False)[0], None
    style = {impl: (f"C{i % 10}", MARKERS[i % len(MARKERS)]) for i, impl in enumerate(impls)}
    # a wave an emulated real-time unit made is functional evidence only: its line says so
    emulated = {impl_of(r) for r in runs if r.metric("unit_emulated")}
    named = {impl: f"{impl} (emulated)" if impl in emulated else impl for impl in impls}
    periods = sorted({p.period_s for pts, _ in lines.values() for p in pts} |
                     {x for _, missing in lines.values() for x, _ in missing})
    band = band_decades(periods)
    dodge = dict(zip(impls, _dodge(len(impls), band), strict=True))
    grades, demo, bounds = set(), False, False
    values = [p.value_pct for pts, _ in lines.values() for p in pts]
    for k, (ax, load) in enumerate(zip(axes, loads, strict=True)):
        for impl in impls:
            color, marker = style[impl]
            points, _ = lines[(load, impl)]
            program = [p for p in points if p.watched]
            if program:
                ax.plot([p.period_s * dodge[impl] for p in program], [p.value_pct for p in program], "-",
                        marker=marker, color=color, label=named[impl], ms=5, zorder=3)
            for p in points:
                x = p.period_s * dodge[impl]
                if not p.watched:
                    demo = True
                    ax.plot([x], [p.value_pct], marker, mfc="white", mec=color, mew=1.3, ms=6, zorder=3,
                            gid="demo-signal")
                if p.lower_bound:  # "≥": a caret just above the point, the true worst may lie higher
                    bounds = True
                    above = offset_copy(ax.transData, fig=fig, y=10, units="points")
                    ax.plot([x], [p.value_pct], marker=LOWER_BOUND_MARK, color=color, ms=7, mew=0,
                            zorder=4, transform=above, gid="lower-bound")
                grade = blind_grade(p.blind_share)
                if grade is not None:
                    grades.add(grade)
                    _, ms, lw, grey = BLIND_GRADES[grade]
                    ax.plot([x], [p.value_pct], "o", mfc="none", mec=grey, ms=ms, mew=lw, zorder=2,
                            gid=f"blind-{grade}")
        if len(impls) > 1:  # the band the impls of each period stand in, so each is read at its period
            spread = max(dodge.values())
            for period_s in periods:
                ax.axvspan(period_s / spread, period_s * spread, color="#eeeeee", zorder=0, lw=0,
                           gid="period-band")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.yaxis.set_major_locator(LogLocator(base=10, numticks=12))
        for threshold in THRESHOLDS:  # labelled by the y ticks, which always include them
            ax.axhline(threshold * 100, color="dimgrey", lw=0.9, ls=":")
        ax.set_title(f"load {load}", fontsize=10)  # the figure's title names the target
        duration_axis(ax.xaxis, 1e9)
        percent_axis(ax.yaxis)
        ax.grid(True, which="major", alpha=0.3)
        if strips is not None:
            ax.tick_params(labelbottom=False)
            _missing_strip(strips[k], [(i, lines[(load, i)][1]) for i in missing_impls], style, k == 0)
            strips[k].set_xlabel("period")
        else:
            ax.set_xlabel("period")
    # the 1 % line always in view; the highest point with room above it (never on the frame)
    axes[0].set_ylim(min(0.5, min(values, default=1.0) / 2), max(200.0, max(values, default=1.0) * 3))
    if periods:  # the periods' extent with room for the side-by-side impls
        for ax in axes:
            ax.set_xlim(min(periods) / 1.6, max(periods) * 1.6)
            if len(periods) <= MAX_PERIOD_TICKS:  # each period measured is a tick, in its band's middle
                ax.xaxis.set_major_locator(FixedLocator(periods))
                ax.xaxis.set_minor_locator(NullLocator())
    axes[0].set_ylabel("max relative period error\n(worst repetition)")
    # at the left: the impls' legend runs down the right from the top
    fig.suptitle(f"{target}: maximum relative period error vs period", fontsize=11, x=0.02, ha="left")
    _envelope_legend(fig, impls, style, sorted(grades), demo, bool(missing_impls), named, bounds)
    return fig


def _missing_strip(ax, rows: list[tuple[str, list[tuple[float, str]]]], style, first: bool) -> None:
    """Below a panel: one row per impl that has cells without a value, × at each such period with why."""
    for y, (impl, missing) in enumerate(rows):
        color, _ = style[impl]
        for x_s, why in missing:
            ax.plot([x_s], [y], "x", color=color, ms=7, mew=2, gid="no-value")
            ax.annotate(why, (x_s, y), xytext=(6, 0), textcoords="offset points", fontsize=7,
                        color=color, va="center", ha="left", annotation_clip=False)
    ax.set_ylim(len(rows) - 0.5, -0.5)
    ax.set_yticks(range(len(rows)), [impl for impl, _ in rows] if first else [], fontsize=7)
    ax.tick_params(axis="y", length=0)
    ax.set_facecolor("#f4f4f4")
    ax.set_gid("no-value-strip")


def _envelope_legend(fig: Figure, impls, style, grades: list[int], demo: bool, missing: bool,
                     named: dict[str, str], bounds: bool = False) -> None:
    """The impls beside the panels (one line each), what the marks mean under them."""
    lines = [Line2D([], [], color=style[i][0], marker=style[i][1], label=named[i]) for i in impls]
    marks: list = []
    if bounds:
        marks.append(Line2D([], [], ls="none", marker=LOWER_BOUND_MARK, color="black", ms=7, mew=0,
                            label=LOWER_BOUND_TEXT))
    for g in grades:
        _, ms, lw, grey = BLIND_GRADES[g]
        marks.append(Line2D([], [], ls="none", marker="o", mfc="none", mec=grey, ms=ms, mew=lw,
                            label=blind_grade_text(g)))
    if demo:
        marks.append(Line2D([], [], ls="none", marker="o", mfc="white", mec="black", ms=6,
                            label=f"hollow: {NOT_WATCHED} (the probe watched another signal)"))
    if missing:
        marks.append(Line2D([], [], ls="none", marker="x", color="black", mew=2,
                            label="× (strip below): repetitions without a value, with why"))
    if lines:
        fig.legend(handles=lines, loc="outside right upper", fontsize=8, frameon=False)
    if marks:  # as many columns as the longest label lets fit in the figure's width
        longest = max(len(h.get_label()) for h in marks)
        fits = int(fig.get_figwidth() / (0.075 * longest + 0.6))
        fig.legend(handles=marks, loc="outside lower center", ncols=max(1, min(len(marks), fits)),
                   fontsize=8, frameon=False)


def probe_label(probe: str) -> str:
    return (f"{probe} (independent probe)" if observer(probe).independent
            else f"{probe} (the program's own timestamps)")


def error_bins(abs_pct: np.ndarray) -> np.ndarray:
    """Log-spaced bin edges (in %) over |period error|: BINS_PER_DECADE per decade from the smallest
    non-zero value (at most MAX_DECADES below the largest) to the largest, so that the body and the
    tail each get their bins; smaller values (exact periods) fall into the first bin."""
    positive = abs_pct[abs_pct > 0]
    if not len(positive):
        return np.array([1e-4, 1e-3])
    hi = float(positive.max()) * 1.0001
    lo = max(float(positive.min()), hi / 10 ** MAX_DECADES)
    lo /= 1.0001
    n = max(1, int(np.ceil(np.log10(hi / lo) * BINS_PER_DECADE)))
    return np.geomspace(lo, hi, n + 1)


def _mark_groups(marks: dict[str, float | None]) -> list[tuple[float, str]]:
    """Marks that would draw on top of each other (within MARK_MERGE of each other) share a line
    and a label ("p99.9 4,900 % · max 5,010 %")."""
    groups: list[list[tuple[str, float]]] = []
    for label, ratio in sorted(((k, v) for k, v in marks.items() if v is not None and v > 0),
                               key=lambda kv: kv[1]):
        if groups and ratio / groups[-1][-1][1] < MARK_MERGE:
            groups[-1].append((label, ratio))
        else:
            groups.append([(label, ratio)])
    return [(g[-1][1], " · ".join(f"{label} {percent(r)}" for label, r in g)) for g in groups]


def histogram_figure(errors: dict[str, np.ndarray], title: str,
                     marks: dict[str, float] | None = None, note: str = "") -> Figure:
    """Histogram of |period error| per probe on log-spaced bins (log x, log count), late periods
    (longer than nominal) solid and early ones dotted; `marks` (label -> ratio: p50, p99, max of
    the first probe) as vertical lines with their values; `note` under the title."""
    fig = Figure(figsize=(6, 3.8), layout="constrained")
    ax = fig.subplots()
    shown = {probe: e * 100 for probe, e in errors.items() if len(e)}
    if shown:
        edges = error_bins(np.abs(np.concatenate(list(shown.values()))))
        for i, (probe, e) in enumerate(shown.items()):
            color = f"C{i}"
            clipped = np.clip(np.abs(e), edges[0], edges[-1])
            for side, sign, ls in (("late", e >= 0, "-"), ("early", e < 0, ":")):
                if sign.any():
                    ax.hist(clipped[sign], bins=edges, histtype="step", color=color, lw=1.2, ls=ls,
                            label=f"{probe_label(probe)}, {side}: {int(sign.sum()):,} periods")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlim(edges[0], edges[-1] * 1.5)
        ax.set_ylim(bottom=0.7)  # a single period in a bin stays in view
        for at, text in _mark_groups(marks or {}):
            ax.axvline(at * 100, color="dimgrey", lw=0.8, ls="--", gid="percentile")
            ax.annotate(text, (at * 100, 0.98), xycoords=("data", "axes fraction"), rotation=90,
                        va="top", ha="right", fontsize=7, color="dimgrey",
                        bbox={"boxstyle": "square,pad=0.1", "fc": "white", "ec": "none", "alpha": 0.8})
        fig.legend(fontsize=7, loc="outside lower center", frameon=False)
    ax.set_xlabel("|relative period error| [%, log-spaced bins]")
    ax.set_ylabel("periods [count]")
    percent_axis(ax.xaxis)
    if shown:
        few_decades(ax.xaxis)
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: count(v) if v >= 1 else ""))
    ax.yaxis.set_minor_formatter(NullFormatter())
    ax.set_title(title + (f"\n{note}" if note else ""), fontsize=9)
    ax.grid(True, alpha=0.3)
    return fig


def timeline_figure(series: dict[str, tuple[np.ndarray, np.ndarray]], period_ns: int,
                    title: str, note: str = "") -> Figure:
    """Period over time per probe, with the nominal period: periodic disturbances show up as
    stripes or combs. The independent probe as dots, the program's own view as crosses."""
    fig = Figure(figsize=(6, 3.4), layout="constrained")
    ax = fig.subplots()
    for i, (probe, (t_s, e)) in enumerate(series.items()):
        if len(e):
            mine = not observer(probe).independent  # the program's view underneath, the probe on top
            ax.plot(t_s, (1 + e) * period_ns, "x" if mine else ".", ms=3.5 if mine else 2.5,
                    color="C1" if mine else f"C{0 if i == 0 else i + 1}", alpha=0.45 if mine else 1.0,
                    zorder=1 if mine else 2, label=probe_label(probe),
                    rasterized=len(e) > 1000)  # keeps the inline SVG small
    ax.axhline(period_ns, color="black", lw=0.9, ls="--", label=f"nominal {duration(period_ns)}")
    periods = [(1 + e) * period_ns for _, e in series.values() if len(e)]
    top = max((float(p.max()) for p in periods), default=period_ns)
    low = min((float(p.min()) for p in periods), default=period_ns)
    if low > 0 and top / low > LOG_PERIOD_SPAN:  # outliers would flatten the band: log axis
        ax.set_yscale("log")
    ax.set_xlabel("time since the first edge")
    duration_axis(ax.xaxis, 1e9)  # seconds, through the formatter (never an offset or an exponent)
    ax.set_ylabel("period" + (" (log axis)" if ax.get_yscale() == "log" else ""))
    duration_axis(ax.yaxis)
    ax.set_title(title + (f"\n{note}" if note else ""), fontsize=9)
    ax.grid(True, alpha=0.3)
    if ax.get_yscale() == "log":
        few_decades(ax.yaxis)
    # under the panel: over it, the legend hid the periods at its corner (a stall's are there)
    fig.legend(fontsize=7, markerscale=3, loc="outside lower center", ncols=3, frameon=False)
    return fig
