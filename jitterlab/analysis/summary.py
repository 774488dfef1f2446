"""How the repetitions of a cell are summarized in one number: one rule per metric, used by the
terminal, the report, compare and export alike.

- worst-case metrics (a maximum, overflow, lost, late, excluded, missed, blind, errors ...): the
  worst run, in the metric's direction (the largest when lower is better, the smallest when higher
  is better). Averaging maxima invents a value no run produced (40.2 ms and 184 µs are not
  "20.19 ms"), and a worst case is what such a metric is read for.
- upper bounds (`p99_rel_period_error_upper_bound`: the worst a percentile of a blind run can
  be): the worst run, for the same reason.
- every other metric: the median over the runs, with the spread (min – max) beside it. For counts
  the lower median, so that a count stays a count some run produced.

The rule is declared here by metric name, like the direction in analysis.direction; the first
matching pattern wins.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

WORST, MEDIAN = "worst", "median"

_RULES: list[tuple[str, str]] = [
    (r"^load_", MEDIAN),  # what a load achieved: its typical level
    (r"(^|_)max(_|$)|_max_", WORST),
    (r"^min_period_ns$|_min_.*_per_s$|^bandwidth_min", WORST),  # the extreme low end
    (r"(^|_)(overflow|lost|loss|late|excluded|missed|blind|unobserved|drops|errors|retransmits)(_|$)",
     WORST),
    (r"^breaktrace_latency", WORST),
    (r"_upper_bound$", WORST),  # the worst a blind run's percentile can be: read for its worst
]


def rule(name: str) -> str:
    """WORST or MEDIAN for a metric name."""
    for pattern, which in _RULES:
        if re.search(pattern, name):
            return which
    return MEDIAN


@dataclass(frozen=True)
class Summary:
    """One number for a cell's runs, with the spread and how it was taken."""

    value: float
    low: float
    high: float
    n: int
    rule: str

    @property
    def spread(self) -> bool:
        return self.n > 1 and self.high != self.low


def worst(values: Sequence[float], name: str, direction: str) -> float:
    """The worst of `values` in the metric's direction (for a descriptive metric: the extreme
    its name points at, the largest unless the name says min)."""
    if direction == "higher" or (direction not in ("lower", "higher") and re.search(r"(^|_)min", name)):
        return min(values)
    return max(values)


def summarize(values: Sequence[float], name: str, direction: str, unit: str = "") -> Summary | None:
    """The cell summary of one metric over its runs' values; None when there are none."""
    xs = [float(v) for v in values]
    if not xs:
        return None
    which = rule(name)
    if which == WORST:
        value = worst(xs, name, direction)
    elif unit == "count":
        value = float(statistics.median_low(xs))
    else:
        value = float(statistics.median(xs))
    return Summary(value, min(xs), max(xs), len(xs), which)


def rule_text(which: str) -> str:
    """The rule as a table header says it: "worst run" or "median"."""
    return "worst run" if which == WORST else "median"
