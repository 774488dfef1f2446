"""How a metric is read (analysis.reading): what a metric declares wins over its name, it survives the
store, and the tables by name only serve metrics that declare nothing, with the same answers as the
declarations for the metrics jitterlab makes (so declaring them changed no output)."""

from __future__ import annotations

import numpy as np
import pytest

from jitterlab.analysis.compare import Selector, compare
from jitterlab.analysis.latency import histogram_metrics
from jitterlab.analysis.reading import direction, reading, summary_rule
from jitterlab.analysis.squarewave import squarewave_metrics
from jitterlab.analysis.summary import summarize_metrics
from jitterlab.analysis.synthetic import square_wave
from jitterlab.model.fakes import cell, run_record
from jitterlab.model.reading import MAX, MEDIAN, RATIO, WORST
from jitterlab.model.records import Metric
from jitterlab.report.summaries import summarize
from jitterlab.store.catalog import Store


def test_a_new_metric_with_its_own_summary_rule_is_read_by_it_everywhere(tmp_path):
    """The change-cost of "a metric with its own summary rule" (docs/architecture.md): the one line
    that makes it. Nothing in the tables knows peak_latency_ns; by its name it would be a median."""
    assert summary_rule("peak_latency_ns") == MEDIAN
    store = Store(tmp_path / "r")
    cid = store.new_campaign("c", "fp", "c.toml", "", {})
    for image, values in (("a", (100.0, 900.0, 120.0)), ("b", (210.0, 1800.0, 250.0))):
        for i, v in enumerate(values):
            peak = Metric("peak_latency_ns", v, "ns", "", "lower", WORST, RATIO, MAX)  # the one line
            store.commit_run(run_record(cell("new-bench", {"size": 1}), id=f"{image}{i}", campaign_id=cid,
                                        repetition=i, labels={"image": image}, cell_key=f"{image}",
                                        metrics=[peak]))
    runs = store.runs()
    store.close()
    mine = [r.metrics[("", "peak_latency_ns")] for r in runs if r.labels["image"] == "a"]
    assert reading(mine[0]).summary == WORST and summarize_metrics(mine).value == 900.0  # the worst run
    [bench] = summarize(runs)  # the report's and the terminal's table of the benchmark
    assert {c.values["peak_latency_ns"].rule for c in bench.cells} == {WORST}
    assert sorted(c.values["peak_latency_ns"].value for c in bench.cells) == [900.0, 1800.0]
    [row] = compare(runs, Selector("image", "a"), Selector("image", "b")).rows
    assert row.rule == "geometric mean of run maxima"
    assert row.ratio == pytest.approx(row.candidate / row.baseline)


def test_the_declarations_agree_with_the_names_for_what_jitterlab_measures():
    t, level = square_wave(1_000_000, 400, jitter_ns=2_000, seed=1)
    made = [*squarewave_metrics(t, level, 1_000_000, warmup_ns=0, probe="vpin"),
            *histogram_metrics(np.array([0, 5, 90, 4, 1]), overflow=2, max_ns=9_000.0)]
    for m in made:
        assert m.summary and m.scale, m.name  # every one declares itself
        assert reading(m).summary == summary_rule(m.name), m.name
    squarewave = {m.name: m for m in made if m.subject == "vpin"}
    for name in ("max_rel_period_error", "p99_rel_period_error", "excluded_periods", "drift_ppm"):
        assert squarewave[name].direction == direction(name), name  # declared now, named before
    assert reading(Metric("max_early", -0.1, "ratio")).scale == "signed"
    assert reading(Metric("unobserved_edges", 3.0, "count")).scale == "count"
    assert reading(Metric("p99_rel_period_error", 0.1, "ratio")).stat == "p99"
    assert reading(Metric("p99_rel_period_error_upper_bound", 0.1, "ratio")).stat == ""
