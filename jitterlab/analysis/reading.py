"""How a metric is read: the one place that compare, the report, the terminal, export and the
summary rule ask (model.reading says what the words mean).

A metric carries its own reading since schema 4 (`Metric.direction`, `.summary`, `.scale`, `.stat`,
declared by what made it). What it leaves empty (a store written before, a plug-in that declares
only a direction) is read from its name by the tables below, the first matching pattern winning;
a new metric that declares itself never depends on them.
"""

from __future__ import annotations

import re

from jitterlab.analysis.thresholds import kind
from jitterlab.model.reading import (
    COUNT,
    HIGHER,
    LOWER,
    MAX,
    MEDIAN,
    NONE,
    P50,
    P99,
    P999,
    P9999,
    RATIO,
    SIGNED,
    WORST,
    Reading,
)
from jitterlab.model.records import Metric

_DIRECTIONS: list[tuple[str, str]] = [
    # drift has a sign: a ratio of medians of signed values does not grade it
    (r"^(n_edges|n_periods|warmup_ns|mean_period_ns|min_period_ns|max_period_ns|drift_ppm)$", NONE),
    (r"^load_ctxt", NONE),  # context switches an idle machine saw: a description, not a grade
    (r"^load_(bogo_ops_per_s|.*_per_s|.*mbit.*|.*throughput.*|.*ops.*)$", HIGHER),
    (r"^load_", NONE),  # load_workers, load_loadavg_1m: what was asked/seen, not a grade
    (r"(_error|_delay|_early|^std_period_ns|latency|jitter)", LOWER),
    (r"(excluded|missed|blind|unobserved|overflow|^probe_poll)", LOWER),
    (r"(throughput|_per_s$|mbit|bandwidth|ops)", HIGHER),
]
DEFAULT_DIRECTION = LOWER  # a timing tool mostly measures errors and latencies

_SUMMARIES: list[tuple[str, str]] = [
    (r"^load_", MEDIAN),  # what a load achieved: its typical level
    (r"(^|_)max(_|$)|_max_", WORST),
    (r"^min_period_ns$|_min_.*_per_s$|^bandwidth_min", WORST),  # the extreme low end
    (r"(^|_)(overflow|lost|loss|late|excluded|missed|blind|unobserved|drops|errors|retransmits)(_|$)",
     WORST),
    (r"^breaktrace_latency", WORST),
    (r"_upper_bound$", WORST),  # the worst a blind run's percentile can be: read for its worst
]

_SCALES: list[tuple[str, str]] = [
    # the earliest edge may come late and the latest early: these change sign
    (r"^(max_early|max_delay|drift_ppm|align_drift_ppm|align_offset_ns)$", SIGNED),
    # quantities that are 0 in a clean run: a ratio to 0 means nothing
    (r"(^|_)(overflow|lost|loss|late|excluded|missed|blind|unobserved|drops|errors|retransmits|events|gaps)"
     r"(_|$)|^not_preempted$", COUNT),
]

_STATS: list[tuple[str, str]] = [
    (r"_upper_bound$|_lower_bound$|_bound$|^max_is_", ""),  # bounds and flags: no statistic of samples
    (r"^p50_|_p50_ns$", P50),
    (r"^p99_|_p99_ns$", P99),
    (r"^p999_|_p999_ns$", P999),
    (r"^p9999_|_p9999_ns$", P9999),
    (r"^max_rel_period_error$|_max_ns$", MAX),
]

NS_RESOLUTION = 1.0  # timestamps are whole ns: a spread under 1 ns is none


def _first(table: list[tuple[str, str]], name: str, default: str) -> str:
    for pattern, value in table:
        if re.search(pattern, name):
            return value
    return default


def direction(name: str) -> str:
    """LOWER, HIGHER (is better) or NONE (informational) for a metric name."""
    return _first(_DIRECTIONS, name, DEFAULT_DIRECTION)


def summary_rule(name: str) -> str:
    """WORST or MEDIAN for a metric name."""
    return _first(_SUMMARIES, name, MEDIAN)


def reading(metric: Metric) -> Reading:
    """How `metric` is read: what it declares, the rest by its name and unit."""
    name = metric.name
    scale = metric.scale or _first(_SCALES, name, COUNT if metric.unit == "count" else RATIO)
    resolution = NS_RESOLUTION if metric.unit == "ns" else 1.0 if metric.unit == "count" else 0.0
    return Reading(direction=metric.direction or direction(name),
                   summary=metric.summary or summary_rule(name), scale=scale,
                   stat=metric.stat or _first(_STATS, name, ""), kind=kind(name), resolution=resolution)
