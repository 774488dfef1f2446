"""Operational envelope: per target x impl x load, the shortest period that keeps the error low.

A period holds a threshold when every repetition of it ran ok and its max_rel_period_error
stays below the threshold; a failed, timed-out or unmeasurable repetition does not hold.
The envelope is the shortest period p such that p and every longer measured period hold:
a program that meets 1 % at 100 µs but not at 1 ms is not one to trust at 100 µs.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass

from jitterlab.store.catalog import RunRecord

HEADLINE = "max_rel_period_error"
DEFAULT_THRESHOLDS = (0.01, 0.10)


@dataclass(frozen=True)
class EnvelopeRow:
    target: str
    impl: str
    load: str
    probe: str
    shortest_ns: dict[float, int | None]  # threshold (ratio) -> shortest period holding it
    periods_ns: tuple[int, ...]  # measured periods, longest first
    min_repetitions: int  # fewest repetitions of any period: an envelope on 1 run is weak


def envelope(runs: list[RunRecord], thresholds: tuple[float, ...] = DEFAULT_THRESHOLDS, *,
             impl_of: Callable[[RunRecord], str] | None = None) -> list[EnvelopeRow]:
    """Envelope rows of the squarewave runs, in the order their groups first appear; `impl_of`
    names a run's impl (the report appends labels that vary, so two images stay apart)."""
    name = impl_of or (lambda r: str(r.param("impl")))
    groups: dict[tuple, dict[int, list[RunRecord]]] = defaultdict(lambda: defaultdict(list))
    for r in runs:
        if r.benchmark == "squarewave":
            groups[(r.target, name(r), r.load, r.probe)][int(r.param("period"))].append(r)
    rows = []
    for key, by_period in groups.items():
        periods = sorted(by_period, reverse=True)
        shortest: dict[float, int | None] = {}
        for threshold in thresholds:
            best = None
            for period_ns in periods:  # longest first; stop at the first period that fails
                if not all(_holds(r, threshold) for r in by_period[period_ns]):
                    break
                best = period_ns
            shortest[threshold] = best
        rows.append(EnvelopeRow(*key, shortest, tuple(periods),
                                min(len(v) for v in by_period.values())))
    return rows


def _holds(run: RunRecord, threshold: float) -> bool:
    value = run.metric(HEADLINE)
    return run.status == "ok" and value is not None and value < threshold
