"""Operational envelope: per target x impl x load x probe, the shortest period that keeps the
error low, by one or more rules.

A rule names the per-run statistic of |relative period error| that must stay below the
threshold: "max" (the paper's: the worst period of the run, max_rel_period_error), or a
percentile, "p99", "p99.9", "p99.99" (that share of the periods; a single stall of a noisy
machine does not sink it). A period holds a threshold under a rule when every repetition of it
ran ok and its statistic stays below the threshold; a failed, timed-out or unmeasurable
repetition does not hold. The envelope is the shortest period p such that p and every longer
measured period hold: a program that meets 1 % at 100 µs but not at 1 ms is not one to trust at
100 µs. The campaign chooses the rules (`[campaign] envelope = ["max", "p99"]`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from jitterlab.model.records import RunRecord

HEADLINE = "max_rel_period_error"
DEFAULT_THRESHOLDS = (0.01, 0.10)
RULES = {"max": "max_rel_period_error", "p99": "p99_rel_period_error",
         "p99.9": "p999_rel_period_error", "p99.99": "p9999_rel_period_error"}
DEFAULT_RULES = ("max", "p99")


@dataclass(frozen=True)
class EnvelopeRow:
    target: str
    impl: str
    load: str
    probe: str
    rule: str  # a key of RULES
    shortest_ns: dict[float, int | None]  # threshold (ratio) -> shortest period holding it
    periods_ns: tuple[int, ...]  # measured periods, longest first
    min_repetitions: int  # fewest repetitions of any period: an envelope on 1 run is weak

    @property
    def rule_text(self) -> str:
        """"max of every run" / "p99 of every run": what must stay under the threshold."""
        return f"{self.rule} |period error| of every run"


def rules_of(runs: Iterable[RunRecord]) -> tuple[str, ...]:
    """The envelope rules the runs' campaigns chose, in their order (DEFAULT_RULES when none did)."""
    chosen: list[str] = []
    for r in runs:
        for rule in r.settings.get("envelope") or ():
            if rule in RULES and rule not in chosen:
                chosen.append(rule)
    return tuple(chosen) or DEFAULT_RULES


def envelope(runs: list[RunRecord], thresholds: tuple[float, ...] = DEFAULT_THRESHOLDS, *,
             rules: tuple[str, ...] = ("max",),
             impl_of: Callable[[RunRecord], str] | None = None) -> list[EnvelopeRow]:
    """Envelope rows of the squarewave runs, one per group and rule, in the order the groups
    first appear; `impl_of` names a run's impl (the report appends the labels that tell cells
    apart, so two images stay apart)."""
    name = impl_of or (lambda r: str(r.param("impl")))
    groups: dict[tuple, dict[int, list[RunRecord]]] = defaultdict(lambda: defaultdict(list))
    for r in runs:
        if r.benchmark == "squarewave":
            groups[(r.target, name(r), r.load, r.probe)][int(r.param("period"))].append(r)
    rows = []
    for key, by_period in groups.items():
        periods = sorted(by_period, reverse=True)
        for rule in rules:
            shortest: dict[float, int | None] = {}
            for threshold in thresholds:
                best = None
                for period_ns in periods:  # longest first; stop at the first period that fails
                    if not all(_holds(r, RULES[rule], threshold) for r in by_period[period_ns]):
                        break
                    best = period_ns
                shortest[threshold] = best
            rows.append(EnvelopeRow(*key, rule, shortest, tuple(periods),
                                    min(len(v) for v in by_period.values())))
    return rows


def _holds(run: RunRecord, metric: str, threshold: float) -> bool:
    value = run.metric(metric)
    return run.status == "ok" and value is not None and value < threshold


def records(rows: list[EnvelopeRow]) -> list[dict]:
    """The envelope for machines (export): one record per row and threshold, periods in ns
    (shortest_period_ns None when no period holds)."""
    return [{"target": e.target, "impl": e.impl, "load": e.load, "probe": e.probe, "rule": e.rule,
             "metric": RULES[e.rule], "threshold": threshold, "shortest_period_ns": shortest,
             "periods_ns": list(e.periods_ns), "min_repetitions": e.min_repetitions}
            for e in rows for threshold, shortest in e.shortest_ns.items()]
