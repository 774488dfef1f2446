"""What the figures show, read back from the matplotlib objects: histogram bins that show the body
and the tail, marks for missing values that hide no point, impls that do not pile up, graded blind
shares, runs whose probe watched another signal kept apart, latency plots split into panels,
axis titles in words with units."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from jitterlab.model.fakes import run_record, squarewave_cell
from jitterlab.model.records import Metric
from jitterlab.report.figures import squarewave as figures
from jitterlab.report.figures import standard as std_figures
from jitterlab.report.figures.base import axis_title, metric_words
from jitterlab.report.sections.squarewave import impl_namer, most_informative

MS = 1_000_000
US = 1_000


def _sw(impl, period_ns, err, *, excluded=0, used=1000, status="ok", watched=None, load="idle", rep=0):
    metrics = [] if status != "ok" else [
        Metric("max_rel_period_error", err, "ratio", "vpin"),
        Metric("excluded_periods", excluded, "count", "vpin"),
        Metric("n_periods", used, "count", "vpin")]
    if watched is not None:
        metrics.append(Metric("program_pin_watched", float(watched), "bool", "vpin"))
    return run_record(squarewave_cell(impl, period_ns, load=load, target="t"), status=status,
                      id=f"{impl}-{period_ns}-{load}-{rep}", cell_key=f"{impl}{period_ns}{load}",
                      repetition=rep, metrics=metrics, raw_path="raw/x.parquet")


def _panels(fig):
    return [ax for ax in fig.axes if ax.get_gid() != "no-value-strip"]


def _strips(fig):
    return [ax for ax in fig.axes if ax.get_gid() == "no-value-strip"]


def _edges(ax) -> np.ndarray:
    """The bin edges of the first step histogram of an axes (the x of its outline)."""
    return np.unique(ax.patches[0].get_xy()[:, 0])


def test_histogram_bins_are_log_spaced_and_show_the_body_and_the_tail():
    # 99 % of the periods within 0.1 .. 1 %, 1 % stalls at 5,000 % (c-fifo at 100 µs)
    body = np.geomspace(0.001, 0.01, 990)
    errors = np.concatenate([body * np.where(np.arange(990) % 2, 1, -1), np.full(10, 50.0)])
    marks = {"p50": 0.0032, "p99": 0.01, "p99.9": 50.0, "max": 50.0}
    fig = figures.histogram_figure({"vpin": errors}, "run r1", marks)
    ax = fig.axes[0]
    assert ax.get_xscale() == ax.get_yscale() == "log"
    edges = _edges(ax)
    ratios = edges[1:] / edges[:-1]
    assert ratios == pytest.approx(np.full(len(ratios), ratios[0]))  # log-spaced
    assert edges[0] <= 0.1 and edges[-1] >= 5000  # in %: the body and the tail
    assert (edges < 1.0).sum() >= 8  # the body up to p99 spreads over bins, not one bar
    # late and early apart (same probe, solid and dotted), with their counts
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert labels == ["vpin (independent probe), late: 505 periods",
                      "vpin (independent probe), early: 495 periods"]
    # the percentiles marked; marks on one spot share a line and a label
    texts = [t.get_text() for t in ax.texts]
    assert texts == ["p50 0.32 %", "p99 1 %", "p99.9 5,000 % · max 5,000 %"]
    assert len([line for line in ax.lines if line.get_gid() == "percentile"]) == 3
    assert [ax.xaxis.get_major_formatter()(v, 0) for v in (0.001, 1, 10000)] == ["0.001 %", "1 %", "10,000 %"]


def test_error_bins_cover_exact_periods_and_bound_the_decades():
    edges = figures.error_bins(np.array([0.0, 1e-9, 1.0, 100.0]))
    assert edges[-1] >= 100 and edges[0] == pytest.approx(100 / 10 ** figures.MAX_DECADES, rel=1e-3)
    assert edges[1] / edges[0] == pytest.approx(10 ** (1 / figures.BINS_PER_DECADE), rel=0.01)


def test_no_value_marks_sit_in_a_strip_and_hide_no_point():
    runs = [_sw("c-fifo", MS, 0.02), _sw("c-fifo", 10 * MS, 0.004), _sw("c-fifo", 100 * US, 30.0),
            _sw("python", 10 * MS, 0.05), _sw("python", MS, 0, status="failed"),
            _sw("node", MS, 0, status="timeout"), _sw("node", 10 * MS, 0.03)]
    fig = figures.envelope_figure(runs, "t")
    panel, = _panels(fig)
    strip, = _strips(fig)
    # the panel holds no × and no text: nothing covers a point
    assert not [line for line in panel.lines if line.get_marker() == "x"] and not panel.texts
    # one row per impl with a missing value: the two × at 1 ms do not hide each other
    assert [t.get_text() for t in strip.get_yticklabels()] == ["node", "python"]
    marks = sorted((float(line.get_xdata()[0]), float(line.get_ydata()[0])) for line in strip.lines)
    assert marks == [(MS / 1e9, 0.0), (MS / 1e9, 1.0)]
    assert [t.get_text() for t in strip.texts] == ["timeout", "failed"]
    # the highest point (3,000 %) has room above it
    assert panel.get_ylim()[1] >= 3000 * 2


def test_a_value_that_is_not_finite_is_a_no_value_mark_not_a_point_the_axis_cannot_hold():
    runs = [_sw("c-fifo", MS, float("inf")), _sw("c-fifo", 10 * MS, 0.004, rep=0),
            _sw("c-fifo", 10 * MS, float("nan"), rep=1)]
    points, missing = figures.envelope_points(runs, "idle", "c-fifo", lambda r: str(r.param("impl")))
    assert [(p.period_s, p.value_pct) for p in points] == [(10 * MS / 1e9, 0.4)]
    assert missing == [(MS / 1e9, "not finite"), (10 * MS / 1e9, "not finite")]
    fig = figures.envelope_figure(runs, "t")
    strip, = _strips(fig)
    assert [t.get_text() for t in strip.texts] == ["not finite", "not finite"]


def _xs(fig, impls) -> list[float]:
    return sorted(float(x) for line in _panels(fig)[0].lines if line.get_label() in impls
                  for x in line.get_xdata())


def test_impls_at_one_period_stand_side_by_side():
    impls = ["bash", "python", "node", "c-file", "c-mmap", "c-fifo"]
    fig = figures.envelope_figure([_sw(i, 100 * US, 0.4) for i in impls], "t")
    xs = _xs(fig, impls)
    assert len(xs) == 6
    steps = [b / a for a, b in itertools.pairwise(xs)]
    assert steps == pytest.approx([10 ** (figures.BAND_DECADES / 5)] * 5)  # evenly, filling the band
    assert xs[-1] / xs[0] == pytest.approx(10 ** figures.BAND_DECADES)  # ×0.89 … ×1.12 of 100 µs
    # few impls stand DODGE_DECADES apart, not spread over the band
    two = _xs(figures.envelope_figure([_sw(i, MS, 0.4) for i in impls[:2]], "t"), impls)
    assert two[1] / two[0] == pytest.approx(10 ** figures.DODGE_DECADES)


def test_many_impls_stay_at_their_period_and_clear_of_the_next():
    """20 impls used to spread over most of a decade: a marker at 1 ms drawn near 0.4 and 2.4 ms."""
    impls = [f"impl{i:02d}" for i in range(20)]
    fig = figures.envelope_figure([_sw(i, p, 0.4) for i in impls for p in (MS, 10 * MS)], "t")
    xs = _xs(fig, impls)
    at_1ms = [x for x in xs if x < 3e-3]
    assert len(at_1ms) == 20 and max(at_1ms) / min(at_1ms) == pytest.approx(10 ** figures.BAND_DECADES)
    bands = [p for p in _panels(fig)[0].patches if p.get_gid() == "period-band"]
    assert len(bands) == 2  # the band each period's impls stand in, drawn
    # periods closer than the band: it narrows to BAND_OF_GAP of their distance
    close = figures.envelope_figure([_sw(i, p, 0.4) for i in impls for p in (MS, 1_200_000)], "t")
    near = _xs(close, impls)
    gap = math.log10(1.2)
    assert max(near[:20]) / min(near[:20]) == pytest.approx(10 ** (figures.BAND_OF_GAP * gap))
    assert max(near[:20]) < min(near[20:])  # the two periods' impls never mingle
    ticks = _panels(close)[0].get_xticks()
    assert list(ticks) == pytest.approx([MS / 1e9, 1.2e-3])  # each period measured is a tick


def test_blind_share_is_graded():
    # 0.5 %, 2 %, 10 % and 40 % of the periods excluded: no ring, then three grades
    runs = [_sw("c-fifo", p, 0.01, excluded=e, used=1000 - e)
            for p, e in ((MS, 5), (2 * MS, 20), (5 * MS, 100), (10 * MS, 400))]
    fig = figures.envelope_figure(runs, "t")
    rings = {line.get_gid(): line for line in fig.axes[0].lines if (line.get_gid() or "").startswith("blind")}
    assert sorted(rings) == ["blind-0", "blind-1", "blind-2"]
    assert [float(rings[g].get_xdata()[0]) for g in sorted(rings)] == [0.002, 0.005, 0.01]
    sizes = [(rings[g].get_markersize(), rings[g].get_markeredgewidth()) for g in sorted(rings)]
    assert sizes == sorted(sizes) and len(set(sizes)) == 3  # wider and heavier as the share grows
    legend = [t.get_text() for lg in fig.legends for t in lg.get_texts()]
    assert {"probe blind 1 % – 5 % of periods", "probe blind 5 % – 20 % of periods",
            "probe blind ≥ 20 % of periods"} <= set(legend)


def test_runs_whose_probe_watched_another_signal_are_kept_apart():
    runs = [_sw("c-fifo", MS, 0.02, watched=1), _sw("c-fifo", MS, 0.9, watched=0, rep=1),  # worse, demo
            _sw("c-fifo", 10 * MS, 0.5, watched=0), _sw("c-fifo", 100 * US, 0.1)]
    fig = figures.envelope_figure(runs, "t")
    ax = fig.axes[0]
    line, = [x for x in ax.lines if x.get_label() == "c-fifo"]
    # the line joins the program's own values: 1 ms from the watched run, never the other signal's
    assert list(line.get_ydata()) == pytest.approx([10.0, 2.0])
    demo, = [x for x in ax.lines if x.get_gid() == "demo-signal"]
    assert float(demo.get_ydata()[0]) == pytest.approx(50.0) and demo.get_markerfacecolor() == "white"
    legend = [t.get_text() for lg in fig.legends for t in lg.get_texts()]
    assert "hollow: not the program's pin (the probe watched another signal)" in legend
    # the per-run figures pick the worst run that watched the program's pin
    picked = most_informative([_sw("c-fifo", MS, 0.02, watched=1), _sw("c-fifo", MS, 0.9, watched=0, rep=1)],
                              impl_namer([]))
    assert [r.id for r in picked] == [f"c-fifo-{MS}-idle-0"]


def _curve(scale: float) -> tuple[np.ndarray, np.ndarray]:
    return np.array([10_000.0, 50_000.0, 200_000.0]) * scale, np.array([900, 90, 10])


def test_latency_distributions_split_into_panels_when_curves_exceed_what_an_eye_can_follow():
    curves = {f"run {i}: priority={i} {load}": _curve(1 + i / 10) for load in ("idle", "cpu")
              for i in range(7)}
    groups = {label: label.split()[-1] for label in curves}
    fig = std_figures.ccdf_figure(curves, "cyclictest", {}, groups)
    panels = [ax for ax in fig.axes if ax.get_visible()]
    assert [ax.get_title() for ax in panels] == ["load idle (1 of 2)", "load idle (2 of 2)",
                                                 "load cpu (1 of 2)", "load cpu (2 of 2)"]
    coloured = [[t.get_text() for t in ax.get_legend().get_texts()] for ax in panels]
    assert [len(c) for c in coloured] == [4, 3, 4, 3]
    assert all(len(c) <= std_figures.MAX_CURVES for c in coloured)
    assert all(t.endswith(" idle (1,000 samples)") for c in coloured[:2] for t in c)
    # every panel shows the others in grey: same axes, comparable
    assert all(len(ax.lines) >= len(curves) for ax in panels)
    assert {ax.get_xlabel() for ax in panels[2:]} == {"latency [µs]"}
    assert panels[0].get_ylabel() == "samples at or above\nthe latency [%, CCDF]"
    few = std_figures.ccdf_figure(dict(list(curves.items())[:5]), "cyclictest", {}, groups)
    assert len(few.axes) == 1


@pytest.mark.parametrize(("name", "words"), [
    ("latency_max_ns", "maximum latency"), ("rtt_p99_ns", "99th percentile round-trip time"),
    ("p9999_rel_period_error", "99.99th percentile relative period error"),
    ("events_per_s", "events per second"), ("bandwidth_min_mib_per_s", "minimum bandwidth"),
    ("loss_ratio", "loss"), ("std_period_ns", "standard deviation of period")])
def test_metric_names_read_in_words(name, words):
    assert metric_words(name) == words


def test_axis_titles_carry_the_units_their_ticks_read_in():
    assert axis_title("latency_max_ns", "ns", 40_000, 40_200_000) == "maximum latency [µs … ms]"
    assert axis_title("latency_p50_ns", "ns", 40_000, 90_000) == "median latency [µs]"
    assert axis_title("loss_ratio", "ratio") == "loss [%]"
    assert axis_title("mbit_per_s", "Mbit/s") == "throughput [Mbit/s]"
    assert axis_title("lost_messages", "count") == "lost messages [count]"


def _tick_labels(axis) -> list[str]:
    low, high = sorted(axis.get_view_interval())
    return [axis.get_major_formatter()(v, 0) for v in axis.get_ticklocs() if low <= v <= high]


def test_a_log_axis_of_few_decades_labels_2_and_5_times_them_too():
    """A switch latency CCDF from 2 µs to 60 µs had one tick, "10 µs"."""
    curve = (np.array([2_000.0, 5_000.0, 60_000.0]), np.array([900, 90, 10]))
    fig = std_figures.ccdf_figure({"run a: idle": curve}, "switch")
    ticks = _tick_labels(fig.axes[0].xaxis)
    assert {"5 µs", "10 µs", "20 µs", "50 µs"} <= set(ticks)
    wide = (np.array([10_000.0, 1e6, 20e6]), np.array([900, 90, 10]))  # 3.3 decades: the decades only
    assert _tick_labels(std_figures.ccdf_figure({"run b: idle": wide}, "cyclictest").axes[0].xaxis) == [
        "10 µs", "100 µs", "1 ms", "10 ms"]


def test_the_ccdfs_marks_and_notes_cover_neither_the_legend_nor_the_axis_title():
    curve = (np.array([10_000.0, 50_000.0, 200_000.0]), np.array([900, 90, 10]))
    fig = std_figures.ccdf_figure({"run a: idle": curve}, "cyclictest", {"run a: idle": 3})
    ax = fig.axes[0]
    assert [t.get_text() for t in fig.texts] == ["cyclictest"]  # the note is the axis title's second line
    assert ax.get_xlabel() == ("latency [µs]\n▲ samples beyond the histogram, drawn at the run's recorded "
                               "maximum")
    marks = {t.get_text(): t for t in ax.texts}
    assert set(marks) == {"p99", "p99.99"}
    assert all(t.xy[0] == 1.0 and t.get_ha() == "left" for t in marks.values())  # right of the panel


def test_byte_rates_are_drawn_in_si_units_with_round_ticks_and_a_linear_axis_has_few():
    from jitterlab.analysis.summary import MEDIAN
    from jitterlab.report.summaries import BenchmarkSummary, CellSummary, Value

    values = [(3_250.0, 4_300.0), (3_300.0, 3_450.0)]  # MiB/s, as mbw gives them
    cells = [CellSummary("t", f"size={i}", "idle", "", [], {"bandwidth_mib_per_s": Value(
        (low + high) / 2, low, high, "MiB/s", 2, MEDIAN)}) for i, (low, high) in enumerate(values)]
    fig = std_figures.bars_figure(BenchmarkSummary("membw", ["bandwidth_mib_per_s"], cells),
                                  "bandwidth_mib_per_s")
    ax = fig.axes[0]
    ticks = _tick_labels(ax.xaxis)
    assert len(ticks) <= 7 and all(t.endswith(" GB/s") for t in ticks)
    assert all(len(t.split(" ")[0].rstrip("0").rstrip(".").split(".")[-1]) <= 2 for t in ticks)  # round
    assert ax.get_xlabel() == "bandwidth [GB/s]"


def test_the_timeline_legend_is_under_the_panel_not_over_its_points():
    t_s = np.linspace(0, 1, 200)
    fig = figures.timeline_figure({"vpin": (t_s, np.zeros(200)), "self": (t_s, np.zeros(200))}, MS, "run r")
    assert fig.axes[0].get_legend() is None and len(fig.legends) == 1
