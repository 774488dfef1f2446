"""What every figure of the report shares (matplotlib, Agg): axes that read like the tables (errors
in %, durations with their unit), step histograms on a log count axis, and the figure as inline
SVG (text kept as text, so a browser can search and test it) or as PNG/SVG files."""

from __future__ import annotations

import contextlib
import io
import warnings
from collections.abc import Iterator
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, NullFormatter

from jitterlab.report.format import _digits, duration

MAX_ROWS = 48  # rows of a chart with one row per cell; the tables hold the rest


def percent_axis(axis) -> None:
    """Tick labels of an axis whose values are in % ("0.1 %", "10 %"); no minor labels."""
    axis.set_major_formatter(FuncFormatter(lambda v, _: f"{_digits(v, 3)} %"))
    axis.set_minor_formatter(NullFormatter())


def duration_axis(axis, scale_ns: float = 1.0) -> None:
    """Tick labels of an axis whose values are durations of `scale_ns` ns each ("10 µs", "1 ms")."""
    axis.set_major_formatter(FuncFormatter(lambda v, _: duration(v * scale_ns, 3) if v > 0 else "0"))
    axis.set_minor_formatter(NullFormatter())


def log_histograms(curves: dict[str, np.ndarray], edges: np.ndarray | None, *, size: tuple[float, float],
                   xlabel: str, ylabel: str, title: str) -> Figure:
    """Step histograms with a log count axis, one line per labelled curve (OSADL latency-plot
    style); an empty figure with its axes when there is nothing to draw (edges None)."""
    fig = Figure(figsize=size, layout="constrained")
    ax = fig.subplots()
    if edges is not None:
        for i, (label, values) in enumerate(curves.items()):
            ax.hist(values, bins=edges, histtype="step", color=f"C{i % 10}", lw=1.2, label=label,
                    ls="-" if i == 0 else "--")
        ax.set_yscale("log")
        ax.legend(fontsize=8)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=9)
    ax.grid(True, alpha=0.3)
    return fig


def svg_text(fig: Figure) -> str:
    """The figure as an inline <svg> element (no XML prolog, no external references); text is
    kept as text so that it can be searched, copied and tested."""
    buf = io.StringIO()
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "jitterlab"}), quiet():
        fig.savefig(buf, format="svg", metadata={"Date": None})  # reproducible bytes
    text = buf.getvalue()
    return text[text.index("<svg"):]


def save(fig: Figure, stem: Path) -> list[Path]:
    """Write stem.png and stem.svg; returns both paths."""
    paths = []
    for ext in ("png", "svg"):
        path = stem.with_suffix(f".{ext}")
        with quiet():
            fig.savefig(path, format=ext, dpi=110)
        paths.append(path)
    return paths


@contextlib.contextmanager
def quiet() -> Iterator[None]:
    """matplotlib's own warnings (a log axis without positive values, ...) stay out of the
    terminal: what a figure cannot show is said in the figure or in the report's skipped list."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield
