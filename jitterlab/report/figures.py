"""The report's figures (matplotlib, Agg): built from stored data, returned as Figure objects."""

from __future__ import annotations

import io
from collections import defaultdict
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import numpy as np
from matplotlib.figure import Figure
from matplotlib.transforms import blended_transform_factory

from jitterlab.analysis.compare import Comparison, cell_text
from jitterlab.report.standard import BenchmarkSummary
from jitterlab.store.catalog import RunRecord
from jitterlab.store.raw import EdgeSeries

HEADLINE = "max_rel_period_error"
THRESHOLDS = (0.01, 0.10, 1.0)
_MAX_BARS = 24  # groups in the compare chart; the tables hold the rest


def period_errors(series: EdgeSeries, period_ns: int, warmup_ns: int,
                  blind: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(start time of each used period in s since the first edge, relative error e_i).

    The periods analysis.squarewave.squarewave_metrics uses, by its own period_split: the same
    warm-up and blind rule, so the figures and the headline agree. Empty when unmeasurable.
    """
    from jitterlab.analysis.squarewave import period_split
    from jitterlab.errors import RunFailed

    try:
        split = period_split(series.t_ns, series.level, period_ns, warmup_ns=warmup_ns,
                             blind=blind)
    except RunFailed:
        return np.empty(0), np.empty(0)
    return (split.start_ns[split.used] - series.t_ns[0]) / 1e9, split.rel_error[split.used]


def envelope_figure(runs: list[RunRecord], target: str) -> Figure:
    """The paper's figure: worst max_rel_period_error over repetitions vs period, log-log;
    one panel per load, one line per impl; cells without a value are marked with why."""
    runs = [r for r in runs if r.target == target and r.benchmark == "squarewave"]
    loads = sorted({r.load for r in runs})
    impls = sorted({r.impl for r in runs})
    fig = Figure(figsize=(4.2 * max(len(loads), 1) + 0.6, 3.8), layout="constrained")
    axes = fig.subplots(1, max(len(loads), 1), sharey=True, squeeze=False)[0]
    colors = {impl: f"C{i % 10}" for i, impl in enumerate(impls)}
    for ax, load in zip(axes, loads, strict=False):
        by_cell: dict[tuple[str, int], list[RunRecord]] = defaultdict(list)
        for r in runs:
            if r.load == load:
                by_cell[(r.impl, r.period_ns)].append(r)
        top = blended_transform_factory(ax.transData, ax.transAxes)
        for impl in impls:
            points, trouble = [], []
            for (i, period_ns), cell in sorted(by_cell.items()):
                if i != impl:
                    continue
                values = [v for r in cell if r.status == "ok" and (v := r.metric(HEADLINE)) is not None]
                bad = sorted({r.status for r in cell if r.status != "ok"})
                blind = any((r.metric("excluded_periods") or 0) > 0 for r in cell)
                if values:
                    points.append((period_ns / 1e9, max(values), blind))
                if bad:
                    trouble.append((period_ns / 1e9, "/".join(bad)))
            if points:
                x, y, blind = zip(*points, strict=True)
                ax.plot(x, y, "o-", color=colors[impl], label=impl, ms=4)
                bx = [p for p, b in zip(x, blind, strict=True) if b]
                by = [v for v, b in zip(y, blind, strict=True) if b]
                if bx:
                    ax.plot(bx, by, "s", mfc="none", mec="black", ms=8)
            for x_s, why in trouble:
                ax.plot([x_s], [0.97], "x", color=colors[impl], ms=8, mew=2, transform=top,
                        clip_on=False)
                ax.annotate(f"{impl}: {why}", (x_s, 0.93), xycoords=top, fontsize=6,
                            rotation=90, va="top", ha="center", color=colors[impl])
        for threshold in THRESHOLDS:
            ax.axhline(threshold, color="grey", lw=0.7, ls=":")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(f"{target} — load {load}", fontsize=10)
        ax.set_xlabel("period [s]")
        ax.grid(True, which="major", alpha=0.3)
    axes[0].set_ylabel("max relative period error")
    if impls:
        handles, labels = axes[0].get_legend_handles_labels()
        for ax in axes[1:]:
            for h, lab in zip(*ax.get_legend_handles_labels(), strict=True):
                if lab not in labels:
                    handles.append(h)
                    labels.append(lab)
        if handles:
            fig.legend(handles, labels, loc="outside right upper", fontsize=8,
                       title="impl\n(□ blind periods\n × no value)", title_fontsize=7)
    return fig


def _log_histograms(curves: dict[str, np.ndarray], edges: np.ndarray | None, *, size: tuple[float, float],
                    xlabel: str, ylabel: str, title: str) -> Figure:
    """Step histograms with a log count axis, one line per labelled curve (OSADL latency-plot
    style); an empty figure with its axes when there is nothing to draw (edges None)."""
    fig = Figure(figsize=size, layout="constrained")
    ax = fig.subplots()
    if edges is not None:
        for i, (label, values) in enumerate(curves.items()):
            ax.hist(values, bins=edges, histtype="step", color=f"C{i % 10}", lw=1.2, label=label)
        ax.set_yscale("log")
        ax.legend(fontsize=8)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=9)
    ax.grid(True, alpha=0.3)
    return fig


def histogram_figure(errors: dict[str, np.ndarray], title: str) -> Figure:
    """Period error histogram per probe with a log count axis."""
    curves = {f"{probe} ({len(e)} periods)": e * 100 for probe, e in errors.items() if len(e)}
    edges = None
    if curves:
        lo = min(float(e.min()) for e in curves.values())
        hi = max(float(e.max()) for e in curves.values())
        edges = np.linspace(lo, hi if hi > lo else lo + 1e-6, 101)
    return _log_histograms(curves, edges, size=(6, 3.2), xlabel="relative period error [%]",
                           ylabel="periods", title=title)


def timeline_figure(series: dict[str, tuple[np.ndarray, np.ndarray]], period_ns: int,
                    title: str) -> Figure:
    """Period over time per probe: periodic disturbances show up as stripes or combs."""
    fig = Figure(figsize=(6, 3.2), layout="constrained")
    ax = fig.subplots()
    for i, (probe, (t_s, e)) in enumerate(series.items()):
        if len(e):
            ax.plot(t_s, (1 + e) * period_ns / 1e3, ".", ms=1.5, color=f"C{i}", label=probe,
                    rasterized=len(e) > 1000)  # keeps the inline SVG small
    ax.axhline(period_ns / 1e3, color="grey", lw=0.7, ls=":")
    ax.set_xlabel("time since the first edge [s]")
    ax.set_ylabel("period [µs]")
    ax.set_title(title, fontsize=9)
    ax.grid(True, alpha=0.3)
    if series:
        ax.legend(fontsize=8, markerscale=6)
    return fig


def compare_figure(comparison: Comparison, metrics: list[str] | None = None) -> Figure:
    """Baseline and candidate side by side per cell x metric, normalised to the baseline
    (= 100 %), with the % change written on each candidate bar."""
    rows = [r for r in comparison.rows if metrics is None or r.metric in metrics]
    rows = [r for r in rows if r.ratio == r.ratio and abs(r.ratio) != float("inf")][:_MAX_BARS]
    fig = Figure(figsize=(max(4.0, 0.55 * len(rows) + 2), 4.2), layout="constrained")
    ax = fig.subplots()
    x = np.arange(len(rows))
    ax.bar(x - 0.2, [100] * len(rows), 0.4, label=str(comparison.baseline), color="C7")
    colors = {"better": "C2", "worse": "C3"}
    bars = ax.bar(x + 0.2, [r.ratio * 100 for r in rows], 0.4, label=str(comparison.candidate),
                  color=[colors.get(r.verdict, "C0") for r in rows])
    for bar, r in zip(bars, rows, strict=True):
        ax.annotate(f"{r.change_pct:+.0f} %", (bar.get_x() + bar.get_width() / 2, bar.get_height()),
                    ha="center", va="bottom", fontsize=7, xytext=(0, 2), textcoords="offset points")
    ax.set_xticks(x, [f"{cell_text(comparison, r)}\n{r.probe}:{r.metric}" for r in rows],
                  rotation=60, ha="right", fontsize=6)
    ax.set_ylabel(f"median, % of {comparison.baseline}")
    ax.set_title(f"{comparison.candidate} vs {comparison.baseline} "
                 "(green better, red worse, blue no significant change)", fontsize=9)
    ax.legend(fontsize=8)
    ax.grid(True, axis="y", alpha=0.3)
    return fig


def bars_figure(summary: BenchmarkSummary, metric: str) -> Figure:
    """One horizontal bar per cell: the median of `metric` over repetitions, whiskers min-max,
    × for a cell without a value."""
    cells = summary.cells[:_MAX_BARS * 2]
    fig = Figure(figsize=(7, 0.8 + 0.32 * max(len(cells), 1)), layout="constrained")
    ax = fig.subplots()
    unit = next((c.values[metric].unit for c in cells if metric in c.values), "")
    scale, shown_unit = (1e3, "µs") if unit == "ns" else (1.0, unit)
    y = np.arange(len(cells))
    for i, cell in enumerate(cells):
        v = cell.values.get(metric)
        if v is None:
            ax.plot([0], [i], "x", color="C3", ms=8, mew=2)
            ax.annotate(f" {cell.status}", (0, i), va="center", fontsize=7, color="C3")
            continue
        med, lo, hi = v.median / scale, v.low / scale, v.high / scale
        ax.barh(i, med, color="C0", alpha=0.8)
        ax.errorbar(med, i, xerr=[[med - lo], [hi - med]], fmt="none", ecolor="black", lw=1, capsize=3)
    ax.set_yticks(y, [c.name for c in cells], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel(f"{metric} [{shown_unit}]" if shown_unit else metric)
    ax.set_title(f"{summary.benchmark}: median over repetitions (whiskers: min-max)", fontsize=9)
    ax.grid(True, axis="x", alpha=0.3)
    return fig


def distribution_figure(samples_ns: dict[str, np.ndarray], title: str) -> Figure:
    """Latency distributions (1 µs bins, log count), one step line per run."""
    curves = {f"{name} ({len(v)})": v / 1e3 for name, v in samples_ns.items() if len(v)}
    edges = None
    if curves:
        hi_us = max(float(np.max(v)) for v in curves.values())
        edges = np.arange(0, np.ceil(hi_us) + 2)
        if len(edges) > 2001:  # very long tails: coarser bins keep the figure readable
            edges = np.linspace(0, np.ceil(hi_us) + 1, 2001)
    return _log_histograms(curves, edges, size=(7, 3.4), xlabel="latency [µs]", ylabel="samples",
                           title=title)


def svg_text(fig: Figure) -> str:
    """The figure as an inline <svg> element (no XML prolog, no external references)."""
    buf = io.StringIO()
    fig.savefig(buf, format="svg", metadata={"Date": None})  # reproducible bytes
    text = buf.getvalue()
    return text[text.index("<svg"):]


def save(fig: Figure, stem: Path) -> list[Path]:
    """Write stem.png and stem.svg; returns both paths."""
    paths = []
    for ext in ("png", "svg"):
        path = stem.with_suffix(f".{ext}")
        fig.savefig(path, format=ext, dpi=110)
        paths.append(path)
    return paths

