"""What every figure of the report shares (matplotlib, Agg): axes that read like the tables (errors
in %, durations with their unit), metric names in words for titles, and the figure as inline
SVG (text kept as text, so a browser can search and test it) or as PNG/SVG files."""

from __future__ import annotations

import contextlib
import io
import math
import warnings
from collections.abc import Collection, Iterator
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, LogLocator, MaxNLocator, NullFormatter

from jitterlab.report.format import TIME_UNITS, _digits, byte_unit, duration, format_value
from jitterlab.report.words import metric_words

MAX_ROWS = 48  # rows of a chart with one row per cell; the tables hold the rest
SHORT_LOG_SPAN = 2.5  # decades of a log axis below which 2× and 5× get labels too
LINEAR_TICKS = 6  # at most, on a linear axis
EMULATED_MARK = "emulated — functional evidence"


def percent_axis(axis) -> None:
    """Tick labels of an axis whose values are in % ("0.1 %", "10 %"); no minor labels."""
    axis.set_major_formatter(FuncFormatter(lambda v, _: f"{_digits(v, 3)} %"))
    axis.set_minor_formatter(NullFormatter())


def few_decades(axis) -> None:
    """On a log axis that spans less than SHORT_LOG_SPAN decades, label 2× and 5× the decades too: a
    span of 2 µs … 60 µs had one tick, "10 µs". Call after the axis's limits are set."""
    low, high = sorted(axis.get_view_interval())
    if low > 0 and math.log10(high / low) < SHORT_LOG_SPAN:
        axis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))


def linear_ticks(axis) -> None:
    """At most LINEAR_TICKS ticks on a linear axis whose labels carry their unit ("7,500 Mbit/s"):
    more ran into each other."""
    axis.set_major_locator(MaxNLocator(nbins=LINEAR_TICKS, steps=[1, 2, 2.5, 5, 10]))


def duration_axis(axis, scale_ns: float = 1.0) -> None:
    """Tick labels of an axis whose values are durations of `scale_ns` ns each ("10 µs", "1 ms")."""
    axis.set_major_formatter(FuncFormatter(lambda v, _: duration(v * scale_ns, 3) if v > 0 else "0"))
    axis.set_minor_formatter(NullFormatter())


_UNIT_WORDS = {"ratio": "%", "fraction": "%", "count": "count", "bool": "yes / no", "%": "%"}


def unit_words(unit: str, low: float | None = None, high: float | None = None) -> str:
    """The unit an axis of `unit` values reads in: for durations the units its ticks span from `low`
    to `high` ("µs … ms"), by the formatter's own choice."""
    if unit in TIME_UNITS:
        if low is None or high is None:
            return "time"
        spans = dict.fromkeys(duration(v * TIME_UNITS[unit]).split()[-1] for v in (max(low, 1e-9), high))
        return " … ".join(spans)
    if (sized := byte_unit(unit)) is not None:  # the ticks' SI units, whatever the tool's (MiB/s)
        if low is None or high is None:
            return sized[1]
        return " … ".join(dict.fromkeys(format_value(v, unit).split()[-1] for v in (max(low, 1e-9), high)))
    return _UNIT_WORDS.get(unit, unit or "number")


def axis_title(name: str, unit: str, low: float | None = None, high: float | None = None) -> str:
    """An axis title in words with its unit: "maximum latency [µs … ms]"."""
    return f"{metric_words(name)} [{unit_words(unit, low, high)}]"


def mark_emulated(fig: Figure, emulated: Collection[str], shown: Collection[str]) -> Figure:
    """Write across every panel of a figure that shows targets with an emulated CPU (`emulated`,
    of those `shown`) that its data is functional evidence, never timing evidence: a figure saved
    or pasted alone still says so. Panels whose gid ends in "-strip" (a row of marks under a
    panel) are left plain. Names the emulated targets when the figure shows others too."""
    marked = sorted(set(emulated) & set(shown))
    if not marked:
        return fig
    text = EMULATED_MARK if len(marked) == len(set(shown)) else f"{EMULATED_MARK}: {', '.join(marked)}"
    for ax in fig.axes:
        if not (ax.get_gid() or "").endswith("-strip"):
            ax.text(0.5, 0.5, text, transform=ax.transAxes, ha="center", va="center", rotation=12,
                    fontsize=13, fontweight="bold", color="#b03a2e", alpha=0.3, zorder=0.5,
                    gid="emulated-mark")
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
