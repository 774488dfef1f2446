"""Which way is better for a metric: "lower", "higher", or "none" for numbers that describe a run
rather than grade it (a longer mean period is neither good nor bad). The one lookup that compare,
the report, the terminal and export all use.

A metric measured since stores kept directions carries its own (set by the benchmark that produced
it); the table below by name serves the others (older stores, analyses that name no direction).
The first matching pattern wins.
"""

from __future__ import annotations

import re

from jitterlab.model.records import Metric

_DIRECTIONS: list[tuple[str, str]] = [
    # drift has a sign: a ratio of medians of signed values does not grade it
    (r"^(n_edges|n_periods|warmup_ns|mean_period_ns|min_period_ns|max_period_ns|drift_ppm)$",
     "none"),
    (r"^load_ctxt", "none"),  # context switches an idle machine saw: a description, not a grade
    (r"^load_(bogo_ops_per_s|.*_per_s|.*mbit.*|.*throughput.*|.*ops.*)$", "higher"),
    (r"^load_", "none"),  # load_workers, load_loadavg_1m: what was asked/seen, not a grade
    (r"(_error|_delay|_early|^std_period_ns|latency|jitter)", "lower"),
    (r"(excluded|missed|blind|unobserved|overflow|^probe_poll)", "lower"),
    (r"(throughput|_per_s$|mbit|bandwidth|ops)", "higher"),
]
DEFAULT_DIRECTION = "lower"  # a timing tool mostly measures errors and latencies


def direction(metric: str) -> str:
    """"lower", "higher" (is better) or "none" (informational) for a metric name."""
    for pattern, way in _DIRECTIONS:
        if re.search(pattern, metric):
            return way
    return DEFAULT_DIRECTION


def direction_of(metric: Metric) -> str:
    """A metric's own direction, else the one its name gives."""
    return metric.direction or direction(metric.name)
