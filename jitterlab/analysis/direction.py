"""Which way is better for a metric: "lower", "higher", or "none" for numbers that describe a run
rather than grade it (a longer mean period is neither good nor bad). What the metric declares, else
its name's (analysis.reading holds the table, with the rest of how a metric is read)."""

from __future__ import annotations

from jitterlab.analysis.reading import DEFAULT_DIRECTION, direction, reading
from jitterlab.model.records import Metric

__all__ = ["DEFAULT_DIRECTION", "direction", "direction_of"]


def direction_of(metric: Metric) -> str:
    """A metric's own direction, else the one its name gives."""
    return reading(metric).direction
