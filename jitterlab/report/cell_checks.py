"""Each cell of a campaign as a check a test system reads: passed, failed or skipped, why, and its
headline figures, each with its own verdict. The engines' formats (JUnit, LAVA's test cases, KCIDB's
tests) share this one judgement.

The rule a squarewave cell is held to is the campaign's own envelope rule (its first, e.g. "max":
the worst |period error| of every run) at ENVELOPE_THRESHOLD: the cell passes when every
repetition holds it provably (analysis.envelope.verdict), fails when a repetition is over it or
did not run to the end, and is skipped when the probe's blindness leaves it unproven or the cell
never ran (unavailable). Each headline metric an envelope rule of the campaign judges (max, p99 ...)
is held to that rule the same way; every other metric, and every metric of a benchmark without an
envelope, passes when every run ended ok. A failure names the worst run: the one furthest over the
threshold, else the first that did not end ok.

Headline figures are summarized over the repetitions by the rule the metric declares
(analysis.summary.summarize_metrics: the worst run for maxima, the median of runs otherwise), as the
tables summarize them, and named by it (analysis.summary.figure_name).
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass

from jitterlab.analysis import envelope as env
from jitterlab.analysis.reading import reading
from jitterlab.analysis.summary import figure_name, summarize_metrics, worst
from jitterlab.campaign import cells
from jitterlab.model.records import RunRecord
from jitterlab.report.format import percent
from jitterlab.report.traits import own_metric, subject_of, traits_of

PASSED, FAILED, SKIPPED = "pass", "fail", "skip"
ENVELOPE_THRESHOLD = max(env.DEFAULT_THRESHOLDS)  # 10 %: the envelope's looser bound
_NAME_CHARS = re.compile(r"[^A-Za-z0-9_.-]+")


@dataclass(frozen=True)
class Judged:
    """A verdict: PASSED, FAILED or SKIPPED, why in one line, and the run it names (the worst)."""

    outcome: str
    reason: str
    run: str = ""


@dataclass(frozen=True)
class Headline:
    metric: str
    value: float  # summarized over the cell's runs by `rule`, in `unit`
    unit: str
    subject: str  # what the metric is of ("" the run; a square wave's observer)
    runs: int
    rule: str  # analysis.summary's WORST or MEDIAN, as the metric declares it
    worst_run: str  # the run with the worst value, in the metric's direction
    judged: Judged  # by the envelope rule that holds this metric, else by how the runs ended

    @property
    def name(self) -> str:
        """The figure by what it is: "p99_rel_period_error (median of runs)"."""
        return figure_name(self.metric, self.rule)


@dataclass(frozen=True)
class CellCheck:
    name: str  # the cell in words, with the labels that tell cells apart ("python 10ms idle [image=A]")
    benchmark: str
    target: str
    runs: tuple[RunRecord, ...]
    outcome: str  # PASSED, FAILED or SKIPPED
    reason: str  # one line: the rule and what the runs did
    headline: tuple[Headline, ...]
    held: dict[str, bool]  # squarewave: "max < 1 %" -> every run holds it provably
    worst_run: str = ""  # the run the outcome names (a failure's worst run)

    @property
    def slug(self) -> str:
        """The name in the characters test systems take in a test's name (LAVA: [A-Za-z0-9_.-])."""
        return slug(self.name)


def slug(text: str) -> str:
    return _NAME_CHARS.sub("_", text).strip("_") or "cell"


def cell_checks(runs: list[RunRecord]) -> list[CellCheck]:
    """One check per cell (and per value of the labels that tell cells apart), in run order."""
    identity = cells.identity_labels(runs)
    groups: dict[tuple, list[RunRecord]] = defaultdict(list)
    for r in runs:
        groups[(r.cell_key, *(str(r.labels.get(k, "")) for k in identity))].append(r)
    rules = env.rules_of(runs)
    return [_check(group, identity, rules) for group in groups.values()]


def _check(runs: list[RunRecord], identity: list[str], rules: tuple[str, ...]) -> CellCheck:
    first = runs[0]
    labels = cells.labels_text(first, identity)
    name = f"{first.target} {cells.label(first.cell)}" + (f" [{labels}]" if labels else "")
    held: dict[str, bool] = {}
    judges: dict[str, Judged] = {}  # a metric an envelope rule holds -> its verdict
    if traits_of(first).periodic:
        for rule in rules:
            for threshold in env.DEFAULT_THRESHOLDS:
                held[f"{rule} < {threshold * 100:g} %"] = all(
                    env.verdict(r, rule, threshold, subject_of(r)) == env.HELD for r in runs)
            judges[env.RULES[rule]] = envelope_judged(runs, rule)
        cell = judges[env.RULES[rules[0]]]
    else:
        cell = runs_judged(runs)
    headline = _headline(runs, judges)
    return CellCheck(name, first.benchmark, first.target, tuple(runs), cell.outcome, cell.reason,
                     headline, held, cell.run)


def rule_judging(run: RunRecord, metric: str) -> str | None:
    """The envelope rule of the run's campaign that judges `metric` ("max" for max_rel_period_error),
    None when none does (a metric no rule names, a benchmark without an envelope)."""
    if not traits_of(run).periodic:
        return None
    return next((rule for rule in env.rules_of([run]) if env.RULES[rule] == metric), None)


def envelope_judged(runs: list[RunRecord], rule: str) -> Judged:
    """The runs held to an envelope `rule` at ENVELOPE_THRESHOLD, each as its own observer saw it."""
    said = f"{rule} |period error| < {ENVELOPE_THRESHOLD * 100:g} % in every run"
    name = env.RULES[rule]
    verdicts = [env.verdict(r, rule, ENVELOPE_THRESHOLD, subject_of(r)) for r in runs]
    missed = [r for r, v in zip(runs, verdicts, strict=True) if v == env.NONE]
    if missed:
        over = [(r, value) for r in missed if r.status == "ok"
                and (value := r.metric(name, subject_of(r))) is not None]
        broken = [r for r in missed if r.status != "ok"]
        blank = [r for r in missed if r.status == "ok" and r.metric(name, subject_of(r)) is None]
        parts = []
        if over:
            bad, value = max(over, key=lambda rv: rv[1])
            parts.append(f"the worst run {bad.id} reached {percent(value)}"
                         + (f" ({len(over)} of {len(runs)} runs over it)" if len(over) > 1 else ""))
        if broken:
            parts.append(_ended(broken))
        if blank:
            parts.append(f"run {blank[0].id} has no value" + _more(blank))
        named = (max(over, key=lambda rv: rv[1])[0] if over else (broken or blank)[0]).id
        return Judged(FAILED, f"{said}: {'; '.join(parts)}", named)
    if all(v == env.UNAVAILABLE for v in verdicts):
        return Judged(SKIPPED, f"{said}: {_never_ran(runs)}")
    if env.UNPROVEN in verdicts:
        return Judged(SKIPPED, f"{said}: unproven, the probe was blind for part of a run (its seen periods "
                      "hold the rule, the unobserved ones may not)")
    return Judged(PASSED, f"{said}: held by {len(runs)} run(s)")


def runs_judged(runs: list[RunRecord]) -> Judged:
    """The runs of a cell without an envelope rule: passed when every run ended ok."""
    if all(r.status == "unavailable" for r in runs):
        return Judged(SKIPPED, _never_ran(runs))
    broken = [r for r in runs if r.status not in ("ok", "unavailable")]
    if broken:
        return Judged(FAILED, _ended(broken), broken[0].id)
    return Judged(PASSED, f"every run ended ok ({len(runs)}); {runs[0].benchmark} has no envelope rule")


def _never_ran(runs: list[RunRecord]) -> str:
    return f"never ran ({runs[0].error or 'the target lacks what the cell needs'})"


def _ended(broken: list[RunRecord]) -> str:
    bad = broken[0]
    return f"run {bad.id} {bad.status}: {bad.error or 'no reason stored'}" + _more(broken)


def _more(runs: list[RunRecord]) -> str:
    return f" (and {len(runs) - 1} more)" if len(runs) > 1 else ""


def _headline(runs: list[RunRecord], judges: dict[str, Judged]) -> tuple[Headline, ...]:
    from jitterlab.report.traits import headline_metrics

    out = []
    ok = [r for r in runs if r.status == "ok"]
    whole = runs_judged(runs)
    for name in headline_metrics(ok):
        found = [(r, m) for r in ok if (m := own_metric(r, name)) is not None]
        summary = summarize_metrics([m for _, m in found])
        if summary is None:
            continue
        first = found[0][1]
        bad = worst([m.value for _, m in found], name, reading(first).direction)
        worst_run = next(r.id for r, m in found if m.value == bad)
        judged = judges.get(name, whole)
        out.append(Headline(name, summary.value, first.unit, first.subject, summary.n, summary.rule,
                            worst_run, judged))
    return tuple(out)
