"""Trend series: exact medians and ranges per cell and x, natural order of label values."""

from __future__ import annotations

from functools import partial

import pytest

from jitterlab.analysis import trend as trends
from jitterlab.campaign.cells import names
from jitterlab.cli.main import main
from jitterlab.model.campaigns import CampaignEntry
from jitterlab.model.errors import UserError
from jitterlab.model.fakes import cell, run_record, squarewave_cell
from jitterlab.model.records import Metric
from jitterlab.report.traits import subject_of
from jitterlab.store.catalog import Store

trend = partial(trends.trend, subject_of=subject_of)  # a run's own figures: its observer's (its traits)

CAMPAIGNS = {1: CampaignEntry(1, "a", 2 * 86_400 * 10**9, 0, {}), 2: CampaignEntry(2, "a", 1, 0, {})}


def runs():
    out = []
    for i, (kernel, value, cid) in enumerate([("6.1", 0.2, 1), ("6.1", 0.4, 1), ("6.12", 0.1, 2),
                                               ("6.9", 0.3, 2), ("6.12", 0.5, 2)]):
        out.append(run_record(squarewave_cell("c-fifo"), id=f"r{i}", campaign_id=cid, repetition=i,
                              labels={"kernel": kernel},
                              metrics=[Metric("max_rel_period_error", value, "ratio", "vpin")]))
    out.append(run_record(squarewave_cell("c-fifo"), id="bad", status="failed", repetition=9,
                          labels={"kernel": "6.1"}))
    out.append(run_record(cell("sysbench-cpu", {"threads": 1}), id="s1", labels={"kernel": "6.1"},
                          metrics=[Metric("events_per_s", 1000.0, "events/s", "", "higher")]))
    return out


def test_points_per_label_value_in_natural_order():
    [series] = trend(runs(), CAMPAIGNS, "max_rel_period_error", "kernel", names=names())
    assert series.cell == "board squarewave impl=c-fifo period=1ms idle"  # defaults left out
    assert series.probe == "vpin" and series.unit == "ratio"
    assert [(p.x, p.median, p.low, p.high, p.n) for p in series.points] == [
        ("6.1", pytest.approx(0.3), 0.2, 0.4, 2), ("6.9", 0.3, 0.3, 0.3, 1), ("6.12", 0.3, 0.1, 0.5, 2)]


def test_without_the_benchmarks_every_key_is_named_as_stored():
    [series] = trend(runs(), CAMPAIGNS, "max_rel_period_error", "kernel")
    assert series.cell == "board squarewave impl=c-fifo period=1000000 pin=vpin probe=vpin idle"


def test_by_campaign_and_by_date_and_metrics_without_a_probe():
    [series] = trend(runs(), CAMPAIGNS, "max_rel_period_error", "campaign")
    assert [p.x for p in series.points] == ["a #2", "a #1"]  # by creation time
    [by_date] = trend(runs(), CAMPAIGNS, "max_rel_period_error", "date")
    assert [p.x for p in by_date.points] == ["1970-01-01", "1970-01-03"]
    [sysbench] = trend(runs(), CAMPAIGNS, "events_per_s", "kernel")
    assert sysbench.probe == "" and [p.median for p in sysbench.points] == [1000.0]


def test_nothing_to_draw_is_a_user_error():
    with pytest.raises(UserError, match=r"--trend nope: no successful run has this metric; they have: "
                                        r".*max_rel_period_error"):
        trend(runs(), CAMPAIGNS, "nope", "kernel")
    with pytest.raises(UserError, match=r"--trend max_rel_period_error --by nokey: no successful run has "
                                        r"both; --by takes time, date, campaign or a label key \(kernel"):
        trend(runs(), CAMPAIGNS, "max_rel_period_error", "nokey")


def test_cli_trend_report_and_export(tmp_path, capsys):
    store = Store(tmp_path / "r")
    cid = store.new_campaign("a", "fp", "c.toml", "", {})
    for r in runs():
        store.commit_run(r.__class__(**{**r.__dict__, "campaign_id": cid}))
    store.close()
    out = tmp_path / "trend.html"
    assert main(["report", "--results", str(tmp_path / "r"), "--trend", "max_rel_period_error",
                 "--by", "kernel", "-o", str(out)]) == 0
    html = out.read_text()
    assert 'data-figure="trend"' in html and "<svg" in html and "6.12" in html
    capsys.readouterr()
    assert main(["export", "--results", str(tmp_path / "r"), "--trend", "max_rel_period_error", "--by",
                 "kernel", "--format", "csv"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "cell,probe,x,median,min,max,runs,unit" and len(lines) == 4
    assert lines[1].endswith(",vpin,6.1,0.30000000000000004,0.2,0.4,2,ratio")


def _timed_runs():
    """Two cells measured at interleaved times (cell b before and between cell a's runs), a step
    in cell a from its 12th run on."""
    t0 = 1_764_000_000 * 10**9
    out = []
    for k in range(20):
        value = (2_000_000.0 if k >= 12 else 1_000_000.0) + 1000.0 * (k % 3)
        out.append(run_record(cell("cyclictest", {"threads": 1}), id=f"a{k}", repetition=k,
                              started_ns=t0 + k * 60 * 10**9,
                              metrics=[Metric("latency_max_ns", value, "ns")]))
        out.append(run_record(cell("cyclictest", {"threads": 2}), id=f"b{k}", repetition=k,
                              started_ns=t0 + k * 60 * 10**9 - 30 * 10**9,
                              metrics=[Metric("latency_max_ns", 1_500_000.0 + 1000.0 * (k % 2), "ns")]))
    return out


def test_by_time_each_point_knows_its_runs_and_when_and_the_step_is_a_change_point():
    a, b = trend(_timed_runs(), {}, "latency_max_ns", "time")
    assert a.points[0].runs == ("a0",) and a.points[1].at_ns - a.points[0].at_ns == 60 * 10**9
    [step] = a.changes
    assert step.index == 12 and a.sides(step)[0].runs == ("a11",) and a.sides(step)[1].runs == ("a12",)
    assert b.changes == ()


def test_the_time_axis_is_in_time_order_and_values_read_in_their_unit():
    from jitterlab.report.trend import trend_figure

    series = trend(_timed_runs(), {}, "latency_max_ns", "time")
    fig = trend_figure(series, "latency_max_ns", "time")
    ax = fig.axes[0]
    drawn = []  # (when, where) of every point of every line
    lines = [line for line in ax.lines if line.get_marker() == "o"]
    for s, line in zip(series, lines, strict=True):
        drawn += list(zip((p.at_ns for p in s.points), line.get_xdata(), strict=True))
    xs = [x for _, x in sorted(drawn)]
    assert xs == sorted(xs) and len(set(xs)) == 40  # a time axis: b's runs fall between a's
    assert ax.yaxis.get_major_formatter()(2_500_000, 0) == "2.5 ms"
    fig.canvas.draw()
    assert ax.yaxis.get_offset_text().get_text() == ""  # no "1e6" above the axis


def test_trend_page_lists_the_change_points_with_the_runs_on_both_sides(tmp_path):
    from jitterlab.report.trend import render

    html = render(trend(_timed_runs(), {}, "latency_max_ns", "time"), "latency_max_ns", "time",
                  tmp_path / "t.html").read_text()
    table = html[html.index('data-table="changes"'):]
    changes = table.split("</table>")[0]
    assert "<td>a11</td><td>a12</td>" in changes and "<td class=\"num\">+99.9 %</td>" in changes
    assert "1e6" not in html and "e+0" not in html


def test_cli_trend_lists_the_change_points_with_the_runs_on_both_sides(tmp_path, capsys):
    store = Store(tmp_path / "r")
    cid = store.new_campaign("a", "fp", "c.toml", "", {})
    for r in _timed_runs():
        store.commit_run(r.__class__(**{**r.__dict__, "campaign_id": cid}))
    store.close()
    assert main(["report", "--results", str(tmp_path / "r"), "--trend", "latency_max_ns", "--by", "time",
                 "-o", str(tmp_path / "t.html")]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1] == "change points: 1"
    assert lines[2].startswith("  board cyclictest threads=1 idle: ") and lines[2].endswith(
        ": 1.001 ms → 2.001 ms (+99.9 %, p < 0.0001); runs a11 | a12")
