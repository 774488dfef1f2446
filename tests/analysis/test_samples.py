"""Within-run distributions for figures and the pooled comparison, from a run's raw series."""

from __future__ import annotations

import numpy as np

from jitterlab.analysis.latency import histogram_metrics
from jitterlab.analysis.samples import distribution, overflow_count, period_errors
from jitterlab.analysis.synthetic import square_wave
from jitterlab.model.fakes import cell, run_record, squarewave_cell
from jitterlab.model.series import EdgeSeries, Samples, blind_series
from jitterlab.model.traits import PERIOD_ERRORS


def test_histogram_with_overflow_reaches_the_recorded_maximum():
    counts = np.zeros(100, dtype=np.int64)
    counts[[5, 20]] = [90, 7]
    # cyclictest stores the overflow per thread and overall: counted once, not twice
    metrics = [*histogram_metrics(counts, overflow=3, max_ns=2_500_000, subject="thread0"),
               *histogram_metrics(counts, overflow=3, max_ns=2_500_000)]
    run = run_record(cell("cyclictest", {"interval": 1_000_000}), raw_path="raw/r.parquet", metrics=metrics)
    assert overflow_count(run) == 3
    series = {"thread0.histogram_1us": Samples(counts, "count per 1us bucket")}
    values, weights = distribution(run, series)["latency"]
    assert list(values) == [5_000, 20_000, 2_500_000] and list(weights) == [90, 7, 3]


def test_raw_samples_as_values_and_counts():
    run = run_record(cell("udp-echo", {"size": 64}), raw_path="raw/u.parquet")
    values, weights = distribution(run, {"rtt": Samples(np.array([300, 100, 300, 200]), "ns")})["latency"]
    assert list(values) == [100, 200, 300] and list(weights) == [1, 1, 2]


def test_squarewave_errors_per_probe_skip_blind_periods_and_derived_series():
    t, level = square_wave(1_000_000, 40, jitter_ns=0, seed=1)
    t = t.copy()
    t[20] += 100_000  # one late edge: periods 18-19 and 20-21 (edge to same-polarity edge) are 10 % off
    run = run_record(squarewave_cell("c-fifo", 1_000_000), settings={"warmup_ns": 0})
    found = distribution(run, {"vpin": EdgeSeries(t, level)}, PERIOD_ERRORS, 1_000_000)
    values, weights = found["vpin"]
    used = len(period_errors(EdgeSeries(t, level), 1_000_000, 0)[1])  # the metrics' periods
    assert set(found) == {"vpin"} and list(values) == [0.0, 0.1] and list(weights) == [used - 2, 2]
    # a blind span over the late edge excludes the periods that touch it: only exact periods remain
    blind = blind_series(np.array([[t[20] - 1, t[20] + 1]]))
    found = distribution(run, {"vpin": EdgeSeries(t, level), "vpin.blind": blind}, PERIOD_ERRORS, 1_000_000)
    assert set(found) == {"vpin"} and list(found["vpin"][0]) == [0.0]


def test_no_series_no_distribution():
    assert distribution(run_record(cell("udp-echo", {"size": 64})), {}) == {}

