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

Only what is provable counts: a run holds when the *upper bound* of its statistic is below the
threshold (`p99_rel_period_error_upper_bound`, the worst the p99 can be with every unobserved
period at its worst; docs/metrics.md). A blind run whose bound is over the threshold, or
unbounded, does not hold even when its censored value is under it: the row says "unproven"
(the probe's blindness stopped it) rather than "none". A run stored before bounds existed (no
`unobserved_periods`) counts by its value only when it excluded and missed nothing.

A group whose runs all never ran (status unavailable: the target lacks what the cell needs)
is "unavailable", not "none"; a group with a run whose probe watched another signal than the
program's pin (`program_pin_watched` = 0: an instrument's own demo signal) contributes no
envelope and is "not the program's pin".
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from jitterlab.analysis.watched import NOT_WATCHED, watched_program_pin
from jitterlab.model.records import RunRecord

HEADLINE = "max_rel_period_error"
DEFAULT_THRESHOLDS = (0.01, 0.10)
RULES = {"max": "max_rel_period_error", "p99": "p99_rel_period_error",
         "p99.9": "p999_rel_period_error", "p99.99": "p9999_rel_period_error"}
DEFAULT_RULES = ("max", "p99")
# why a row holds no (shorter) period, per threshold; and the state of a whole row
HELD, NONE, UNPROVEN, UNAVAILABLE, NOT_THE_PIN = "held", "none", "unproven", "unavailable", NOT_WATCHED


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
    # threshold -> why no shorter period holds (NONE: a run failed the threshold or the run;
    # UNPROVEN: the probe's blindness leaves it unproven; UNAVAILABLE: never ran; HELD: every
    # measured period held)
    stopped_by: dict[float, str] = field(default_factory=dict)
    state: str = HELD  # UNAVAILABLE or NOT_THE_PIN: the whole row has no envelope

    def outcome(self, threshold: float) -> str:
        """HELD when a period holds the threshold, else why none does (NONE, UNPROVEN,
        UNAVAILABLE, NOT_THE_PIN)."""
        if self.state != HELD:
            return self.state
        if self.shortest_ns.get(threshold) is not None:
            return HELD
        return self.stopped_by.get(threshold, NONE)

    @property
    def rule_text(self) -> str:
        """"max of every run" / "p99 of every run": what must stay under the threshold."""
        return f"{self.rule} |period error| of every run"


def rules_of(runs: Iterable[RunRecord]) -> tuple[str, ...]:
    """The envelope rules the runs' campaigns chose, in their order (DEFAULT_RULES when none did)."""
    chosen: list[str] = []
    for r in runs:
        for rule in r.settings.envelope or ():
            if rule in RULES and rule not in chosen:
                chosen.append(rule)
    return tuple(chosen) or DEFAULT_RULES


def envelope(runs: list[RunRecord], thresholds: tuple[float, ...] = DEFAULT_THRESHOLDS, *,
             period_of: Callable[[RunRecord], int], subject_of: Callable[[RunRecord], str],
             rules: tuple[str, ...] = ("max",),
             impl_of: Callable[[RunRecord], str] | None = None) -> list[EnvelopeRow]:
    """Envelope rows of runs of a periodic benchmark (model.traits: the caller selects them), one
    per group and rule, in the order the groups first appear; `period_of` is a run's nominal period
    in ns (as its benchmark reads its cell), `subject_of` names the observer whose figures are a
    run's own (its benchmark's traits), `impl_of` a run's impl (the report appends the
    labels that tell cells apart, so two images stay apart)."""
    name = impl_of or (lambda r: str(r.param("impl")))
    groups: dict[tuple, dict[int, list[RunRecord]]] = defaultdict(lambda: defaultdict(list))
    for r in runs:
        groups[(r.target, name(r), r.load, subject_of(r))][period_of(r)].append(r)
    rows = []
    for key, by_period in groups.items():
        periods = sorted(by_period, reverse=True)
        every = [r for p in periods for r in by_period[p]]
        state = (NOT_THE_PIN if any(not watched_program_pin(r) for r in every)
                 else UNAVAILABLE if all(r.status == "unavailable" for r in every) else HELD)
        for rule in rules:
            shortest: dict[float, int | None] = {}
            stopped: dict[float, str] = {}
            for threshold in thresholds:
                best, stopped[threshold] = None, state
                for period_ns in periods if state == HELD else ():  # longest first, to the first miss
                    verdicts = {verdict(r, rule, threshold, key[3]) for r in by_period[period_ns]}
                    if verdicts != {HELD}:  # a failure outweighs blindness, blindness never-ran
                        stopped[threshold] = next(v for v in (NONE, UNPROVEN, UNAVAILABLE) if v in verdicts)
                        break
                    best = period_ns
                shortest[threshold] = best
            rows.append(EnvelopeRow(*key, rule, shortest, tuple(periods),
                                    min(len(v) for v in by_period.values()), stopped, state))
    return rows


def provable(run: RunRecord, rule: str, observer: str) -> float | None:
    """The largest the run's statistic under `rule`, as `observer` saw it, can be (its upper bound);
    None when no bound is proven (too much of the run was unobserved) or the run has no value."""
    bound = run.metric(f"{RULES[rule]}_upper_bound", observer)
    if bound is not None or run.metric("unobserved_periods", observer) is not None:
        return bound
    # stored before bounds: the value is the truth only when nothing was excluded or missed
    if (run.metric("excluded_periods", observer) or 0) or (run.metric("missed_edges", observer) or 0):
        return None
    return run.metric(RULES[rule], observer)


def verdict(run: RunRecord, rule: str, threshold: float, observer: str) -> str:
    """HELD, NONE (failed, or over the threshold), UNPROVEN (the seen periods are under it, the
    unobserved ones may not be) or UNAVAILABLE (the run never ran) for one run, as `observer` (the
    subject of its own figures) saw it."""
    if run.status == "unavailable":
        return UNAVAILABLE
    value = run.metric(RULES[rule], observer)
    if run.status != "ok" or value is None or value >= threshold:
        return NONE
    bound = provable(run, rule, observer)
    return HELD if bound is not None and bound < threshold else UNPROVEN


def records(rows: list[EnvelopeRow]) -> list[dict]:
    """The envelope for machines (export): one record per row and threshold, periods in ns
    (shortest_period_ns None when no period holds; `outcome` says why: "none", "unproven",
    "unavailable", "not the program's pin"; "held" when a period holds)."""
    return [{"target": e.target, "impl": e.impl, "load": e.load, "probe": e.probe, "rule": e.rule,
             "metric": RULES[e.rule], "threshold": threshold, "shortest_period_ns": shortest,
             "outcome": e.outcome(threshold), "periods_ns": list(e.periods_ns),
             "min_repetitions": e.min_repetitions}
            for e in rows for threshold, shortest in e.shortest_ns.items()]
