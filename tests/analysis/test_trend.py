"""Trend series: exact medians and ranges per cell and x, natural order of label values."""

from __future__ import annotations

import pytest

from jitterlab.analysis.trend import trend
from jitterlab.campaign.cells import names
from jitterlab.cli.main import main
from jitterlab.model.errors import UserError
from jitterlab.model.fakes import cell, run_record, squarewave_cell
from jitterlab.model.records import Metric
from jitterlab.store.catalog import Store

CAMPAIGNS = {1: {"name": "a", "created_ns": 2 * 86_400 * 10**9}, 2: {"name": "a", "created_ns": 1}}


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
    with pytest.raises(UserError, match="--trend nope --by kernel: no successful run has both"):
        trend(runs(), CAMPAIGNS, "nope", "kernel")


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
