"""When a run's worst moment was, on series with a known answer: a square wave with one late period
at a known place (the same period the headline metric is), samples in the order measured, and a
histogram that keeps no order."""

from __future__ import annotations

import numpy as np
import pytest

from jitterlab.analysis.latency import HISTOGRAM_UNIT
from jitterlab.analysis.squarewave import squarewave_metrics
from jitterlab.analysis.worst import Unordered, WorstPeriod, WorstSample, worst_moments
from jitterlab.model.fakes import cell, run_record, squarewave_cell
from jitterlab.model.series import EdgeSeries, Samples, blind_series
from jitterlab.model.traits import LATENCIES, PERIOD_ERRORS

MS = 1_000_000


def late_wave(period_ns: int = MS, n_edges: int = 400, late_edge: int = 301, late_ns: int = 400_000):
    """Edges every half period; from `late_edge` on, every edge `late_ns` later: the period that
    ends at late_edge (it began at edge late_edge - 2) is late_ns long, the one after it exact
    again, and the one starting at late_edge - 1 also ends late (both contain the shift)."""
    t = np.arange(n_edges, dtype=np.int64) * (period_ns // 2) + 5_000_000_000
    t[late_edge:] += late_ns
    return t, (np.arange(n_edges) % 2).astype(np.uint8)


def test_the_worst_period_is_the_headline_one_placed_in_the_run():
    t, level = late_wave()
    run = run_record(squarewave_cell("c-fifo", MS), settings={"warmup_ns": 10 * MS}, raw_path="raw/r.parquet",
                     metrics=squarewave_metrics(t, level, MS, warmup_ns=10 * MS, probe="vpin"))
    [worst] = worst_moments(run, {"vpin": EdgeSeries(t, level)}, PERIOD_ERRORS, MS)
    assert isinstance(worst, WorstPeriod) and worst.probe == "vpin"
    assert worst.period_ns == 1.4 * MS and worst.rel_error == pytest.approx(0.4)
    assert worst.rel_error == pytest.approx(run.metric("max_rel_period_error", "vpin"))
    # the first late period begins at edge 299: 149.5 ms after the first edge; 20 warm-up edges
    # (10 ms) are left out, so it is period 299 - 20 + 1 = 280 of the 378 used
    assert worst.start_s == pytest.approx(0.1495) and (worst.index + 1, worst.of) == (280, 378)
    assert worst.span_s == pytest.approx((399 * MS // 2 + 400_000) / 1e9)


def test_a_period_the_probe_was_blind_to_is_not_the_worst():
    t, level = late_wave()
    blind = blind_series([(int(t[300]), int(t[301]))])  # the late periods touch the blind span
    run = run_record(squarewave_cell("c-fifo", MS), settings={"warmup_ns": 0})
    [worst] = worst_moments(run, {"vpin": EdgeSeries(t, level), "vpin.blind": blind}, PERIOD_ERRORS, MS)
    assert abs(worst.rel_error) < 0.01  # what is left is exact


def test_samples_in_order_place_their_largest_and_a_histogram_says_it_cannot():
    rtt = Samples(np.array([50_000, 60_000, 900_000, 55_000]), "ns")
    run = run_record(cell("udp-echo", {}))
    assert worst_moments(run, {"rtt": rtt}, LATENCIES) == [WorstSample("rtt", 900_000.0, 2, 4)]
    histogram = Samples(np.array([0, 3, 5, 1]), HISTOGRAM_UNIT)
    assert worst_moments(run, {"thread0.histogram_1us": histogram}, LATENCIES) == [
        Unordered("thread0.histogram_1us")]
    assert worst_moments(run, {"rtt": rtt}, "") == []  # neither periods nor latencies: nothing said
