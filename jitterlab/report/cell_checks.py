"""Each cell of a campaign as a check a test system reads: passed, failed or skipped, why, and its
headline numbers. The engines' formats (JUnit, LAVA's test cases) share this one judgement.

The rule a squarewave cell is held to is the campaign's own envelope rule (its first, e.g. "max":
the worst |period error| of every run) at ENVELOPE_THRESHOLD: the cell passes when every
repetition holds it provably (analysis.envelope.verdict), fails when a repetition is over it or
did not run to the end, and is skipped when the probe's blindness leaves it unproven or the cell
never ran (unavailable). A cell of another benchmark has no such rule: it passes when every run
ended ok. Headline numbers are summarized over the repetitions by the metric's rule
(analysis.summary: the worst run for maxima, the median otherwise).
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass

from jitterlab.analysis import envelope as env
from jitterlab.analysis.direction import direction_of
from jitterlab.analysis.summary import summarize
from jitterlab.campaign import cells
from jitterlab.model.records import RunRecord
from jitterlab.report.traits import own_metric, subject_of, traits_of

PASSED, FAILED, SKIPPED = "pass", "fail", "skip"
ENVELOPE_THRESHOLD = max(env.DEFAULT_THRESHOLDS)  # 10 %: the envelope's looser bound
_NAME_CHARS = re.compile(r"[^A-Za-z0-9_.-]+")


@dataclass(frozen=True)
class Headline:
    metric: str
    value: float  # summarized over the cell's runs, in `unit`
    unit: str
    subject: str
    runs: int


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
    if traits_of(first).periodic:
        for rule in rules:
            for threshold in env.DEFAULT_THRESHOLDS:
                held[f"{rule} < {threshold * 100:g} %"] = all(
                    env.verdict(r, rule, threshold, subject_of(r)) == env.HELD for r in runs)
        outcome, reason = _envelope_outcome(runs, rules[0])
    else:
        outcome, reason = _runs_outcome(runs)
    return CellCheck(name, first.benchmark, first.target, tuple(runs), outcome, reason,
                     _headline(runs), held)


def _envelope_outcome(runs: list[RunRecord], rule: str) -> tuple[str, str]:
    said = f"{rule} |period error| < {ENVELOPE_THRESHOLD * 100:g} % in every run"
    verdicts = [env.verdict(r, rule, ENVELOPE_THRESHOLD, subject_of(r)) for r in runs]
    if env.NONE in verdicts:
        bad = next(r for r, v in zip(runs, verdicts, strict=True) if v == env.NONE)
        if bad.status != "ok":
            return FAILED, f"{said}: run {bad.id} {bad.status}: {bad.error or 'no reason stored'}"
        value = bad.metric(env.RULES[rule], subject_of(bad))
        shown = "no value" if value is None else f"{value * 100:.3g} %"
        return FAILED, f"{said}: run {bad.id} reached {shown}"
    if all(v == env.UNAVAILABLE for v in verdicts):
        return SKIPPED, f"{said}: never ran ({runs[0].error or 'the target lacks what the cell needs'})"
    if env.UNPROVEN in verdicts:
        return SKIPPED, (f"{said}: unproven, the probe was blind for part of a run (its seen periods "
                         "hold the rule, the unobserved ones may not)")
    return PASSED, f"{said}: held by {len(runs)} run(s)"


def _runs_outcome(runs: list[RunRecord]) -> tuple[str, str]:
    if all(r.status == "unavailable" for r in runs):
        return SKIPPED, f"never ran ({runs[0].error or 'the target lacks what the cell needs'})"
    bad = next((r for r in runs if r.status not in ("ok", "unavailable")), None)
    if bad is not None:
        return FAILED, f"run {bad.id} {bad.status}: {bad.error or 'no reason stored'}"
    return PASSED, f"every run ended ok ({len(runs)}); {runs[0].benchmark} has no envelope rule"


def _headline(runs: list[RunRecord]) -> tuple[Headline, ...]:
    from jitterlab.report.traits import headline_metrics

    out = []
    ok = [r for r in runs if r.status == "ok"]
    for name in headline_metrics(ok):
        found = [own_metric(r, name) for r in ok]
        found = [m for m in found if m is not None]
        if not found:
            continue
        summary = summarize([m.value for m in found], name, direction_of(found[0]), found[0].unit)
        if summary is not None:
            out.append(Headline(name, summary.value, found[0].unit, found[0].subject, len(found)))
    return tuple(out)
