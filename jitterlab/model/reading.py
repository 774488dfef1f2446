"""How a metric is read across runs: which way is better, how a cell's repetitions are summarized in
one number, on what scale two groups of runs are compared, and which statistic of the run's own
samples the value is. A metric declares these when it is made (`Metric(..., summary=WORST,
scale=RATIO, stat=MAX)`) and the store keeps them beside its value; analysis.reading fills what a
metric leaves empty (stores written before it declared them) and is the one place every table,
chart, comparison and export asks.
"""

from __future__ import annotations

from dataclasses import dataclass

LOWER, HIGHER, NONE = "lower", "higher", "none"
DIRECTIONS = (LOWER, HIGHER, NONE)

# the summary of a cell's repetitions: the worst run (a maximum, a count of losses: what such a
# metric is read for; a median of maxima is a value no run produced), or the median with the spread
WORST, MEDIAN = "worst", "median"
SUMMARIES = (WORST, MEDIAN)

# the scale two groups are compared on:
# - RATIO: positive values that change by factors (errors, latencies, rates): the ratio of
#   geometric means, tested on log values, so an interval can never reach zero or below
# - COUNT: values >= 0 that may be 0 (lost, missed, overflow): the difference of means, shown
#   relative to the baseline's mean and never below -100 %
# - SIGNED: values of either sign (drift, how early the earliest edge came): the difference of
#   means in the metric's unit; a ratio of two negative means says nothing
RATIO, COUNT, SIGNED = "ratio", "count", "signed"
SCALES = (RATIO, COUNT, SIGNED)

# which statistic of the run's own samples (its periods, its latencies) the value is: a maximum,
# or a quantile; "" for anything else (a mean, a count, a spread). A tail (a quantile above the
# median) is compared on the samples of all runs of each group when they are stored; a maximum on
# the runs' maxima.
MAX, P50, P99, P999, P9999 = "max", "p50", "p99", "p99.9", "p99.99"
QUANTILE_OF = {P50: 0.5, P99: 0.99, P999: 0.999, P9999: 0.9999}
STATS = (MAX, *QUANTILE_OF)


@dataclass(frozen=True)
class Reading:
    """How one metric is read: `direction` (LOWER or HIGHER is better, NONE: a description),
    `summary` (WORST or MEDIAN), `scale` (RATIO, COUNT or SIGNED), `stat` (one of STATS or ""),
    `kind` (the practical threshold a "same" stays within: analysis.thresholds) and `resolution`
    (the smallest difference the metric can show in its unit; 0 when only floating-point noise)."""

    direction: str
    summary: str
    scale: str
    stat: str = ""
    kind: str = "other"
    resolution: float = 0.0

    @property
    def graded(self) -> bool:
        """Whether a better direction exists: a description (NONE) is shown, never graded."""
        return self.direction in (LOWER, HIGHER)

    @property
    def tail(self) -> bool:
        """A quantile above the median of the run's samples."""
        return self.stat in QUANTILE_OF and QUANTILE_OF[self.stat] > 0.5


# each declared field's words, and "" (left to the tables by name): what every Metric is checked against
DECLARED = {"direction": DIRECTIONS, "summary": SUMMARIES, "scale": SCALES, "stat": STATS}
_ALLOWED = tuple(frozenset(("", *words)) for words in DECLARED.values())


def undeclared(direction: str, summary: str, scale: str, stat: str) -> tuple[str, str] | None:
    """The first field whose value none of its words is, with that value; else None (every metric
    made or read passes here: a set lookup per field)."""
    for field, value, allowed in zip(DECLARED, (direction, summary, scale, stat), _ALLOWED, strict=True):
        if value not in allowed:
            return field, value
    return None


def check_declared(name: str, direction: str, summary: str, scale: str, stat: str) -> None:
    """ValueError naming the field when a metric declares a value none of these words is."""
    if (wrong := undeclared(direction, summary, scale, stat)) is not None:
        raise ValueError(f"metric {name}: {wrong[0]} {wrong[1]!r}")
