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

A metric declares its rule (`Metric.summary`); one that does not is read by its name
(analysis.reading, which holds the table).
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from jitterlab.analysis.reading import reading, summary_rule
from jitterlab.model.reading import MEDIAN, WORST
from jitterlab.model.records import Metric

__all__ = ["MEDIAN", "WORST", "Summary", "figure_name", "rule", "rule_text", "summarize", "summarize_metrics",
           "worst"]


def rule(name: str) -> str:
    """WORST or MEDIAN for a metric name (a metric that declares its own: summarize_metrics)."""
    return summary_rule(name)


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


def summarize(values: Sequence[float], name: str, direction: str, unit: str = "",
              which: str | None = None) -> Summary | None:
    """The cell summary of one metric over its runs' values by the rule `which` (WORST or MEDIAN;
    None: the one its name gives); None when there are none."""
    xs = [float(v) for v in values]
    if not xs:
        return None
    which = which or rule(name)
    if which == WORST:
        value = worst(xs, name, direction)
    elif unit == "count":
        value = float(statistics.median_low(xs))
    else:
        value = float(statistics.median(xs))
    return Summary(value, min(xs), max(xs), len(xs), which)


def summarize_metrics(found: Sequence[Metric]) -> Summary | None:
    """The cell summary of one metric's values in its runs (`found`, the same metric of each run),
    by the rule and direction the metric declares; None when there are none."""
    if not found:
        return None
    how = reading(found[0])
    return summarize([m.value for m in found], found[0].name, how.direction, found[0].unit, how.summary)


RULE_WORDS = {WORST: "worst run", MEDIAN: "median of runs"}


def rule_text(which: str) -> str:
    """The rule in the words every view uses: "worst run" or "median of runs"."""
    return RULE_WORDS[which]


def figure_name(metric: str, which: str) -> str:
    """A cell's figure named by what it is, the same in every view: the metric (by its name, or in
    words where a table speaks in words) and the rule that summarized its runs,
    "p99_rel_period_error (median of runs)", "maximum latency (worst run)". A comparison's figures
    name their own statistic (analysis.compare: "pooled p99", "geometric mean of run maxima")."""
    return f"{metric} ({rule_text(which)})"
