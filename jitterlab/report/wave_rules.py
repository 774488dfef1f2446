"""What the square-wave tables and figures share, without plotting (the run's end screen reads them
without loading matplotlib): the headline, the order of loads, a run's unobserved periods."""

from __future__ import annotations

from collections.abc import Iterable

from jitterlab.model.records import RunRecord
from jitterlab.report.traits import subject_of

HEADLINE = "max_rel_period_error"
LOAD_ORDER = ("idle", "cpu", "net")  # the paper's order; other loads follow by name


def ordered_loads(loads: Iterable[str]) -> list[str]:
    """idle, cpu, net, then the others by name."""
    found = set(loads)
    return [x for x in LOAD_ORDER if x in found] + sorted(found - set(LOAD_ORDER))


def unobserved(r: RunRecord, probe: str | None = None) -> int:
    """Periods the probe did not observe in the run (excluded or hidden by missed edges); runs
    stored before unobserved_periods count their excluded periods and missed edges. `probe`: the
    run's own observer unless named."""
    probe = subject_of(r) if probe is None else probe
    value = r.metric("unobserved_periods", probe)
    if value is None:
        value = (r.metric("excluded_periods", probe) or 0) + (r.metric("missed_edges", probe) or 0)
    return int(value)
