"""The summary rule: the worst run for worst-case metrics, the median for central ones."""

from __future__ import annotations

from jitterlab.analysis.summary import MEDIAN, WORST, rule, summarize


def test_rule_by_metric_name():
    for name in ("latency_max_ns", "max_rel_period_error", "latency_overflow", "lost_messages",
                 "late_replies", "excluded_periods", "missed_edges", "blind_time_ns", "loss_ratio",
                 "send_errors", "bandwidth_min_mib_per_s", "min_period_ns",
                 "p99_rel_period_error_upper_bound", "unobserved_periods"):
        assert rule(name) == WORST, name
    for name in ("latency_p99_ns", "latency_p50_ns", "rtt_p999_ns", "latency_min_ns", "std_period_ns",
                 "events_per_s", "messages", "drift_ppm", "load_net_loss_fraction", "latency_mean_ns"):
        assert rule(name) == MEDIAN, name


def test_worst_follows_the_direction_and_median_keeps_the_spread():
    top = summarize([40_200_000.0, 184_000.0], "latency_max_ns", "lower", "ns")
    assert (top.value, top.rule, top.low, top.high) == (40_200_000.0, WORST, 184_000.0, 40_200_000.0)
    assert summarize([900.0, 200.0, 500.0], "bandwidth_min_mib_per_s", "higher").value == 200.0
    assert summarize([4.0, 5.0], "latency_overflow", "lower", "count").value == 5.0  # not 4.5
    assert summarize([0.0, 1.0], "lost_messages", "lower", "count").value == 1.0  # not 0.5
    assert summarize([100.0, 90.0], "min_period_ns", "none", "ns").value == 90.0
    mid = summarize([60.0, 61.0, 62.0, 63.0], "rtt_p50_ns", "lower", "ns")
    assert (mid.value, mid.rule, mid.spread) == (61.5, MEDIAN, True)
    # a central count stays a count some run produced: the lower median
    assert summarize([1000.0, 1001.0], "messages", "none", "count").value == 1000.0
    assert summarize([], "latency_max_ns", "lower") is None
