"""Whether two groups of runs ran under different measured load, cell by cell. Every run stores what
its load did (load_*: the load's achieved rate, the machine's load average, its busy share), and a
verdict between groups whose loads differed may be the load's as much as the groups'.

A reading differs when the comparison would call its change one, were it watched: the sequential
test of analysis.sequential shows a change (this look's sequential p under ALPHA; no Holm over the
readings: it is a warning beside a verdict, not a verdict) and the change lies beyond the practical
threshold of the reading's kind (analysis.thresholds: rate 5 %, other 10 %), so a load that is only
steadier in one group, or a few per cent off, is not flagged. Fewer than MIN_RUNS runs in a group
can show nothing, as for a verdict.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from jitterlab.analysis.family import load_reading
from jitterlab.analysis.reading import reading
from jitterlab.analysis.sequential import ALPHA, MIN_RUNS, Look, balanced_runs
from jitterlab.analysis.stats import per_run_effect
from jitterlab.analysis.verdict import band
from jitterlab.model.reading import RATIO
from jitterlab.model.records import RunRecord


@dataclass(frozen=True)
class LoadDifference:
    """A load reading whose groups differ: each group's statistic (geometric mean, or mean where a
    value is 0) in `unit`, and the change (candidate / baseline - 1; NaN without a ratio)."""

    probe: str
    metric: str
    unit: str
    baseline: float
    candidate: float
    change: float
    p_sequential: float


def load_differences(a_runs: list[RunRecord], b_runs: list[RunRecord],
                     thresholds: dict[str, float]) -> list[LoadDifference]:
    """The load readings of one cell's two groups of runs that differ (see the module's docstring)."""
    keys = sorted({k for r in a_runs + b_runs for k in r.metrics if load_reading(k[1])})
    out = []
    for key in keys:
        a = [r.metrics[key] for r in a_runs if key in r.metrics]
        b = [r.metrics[key] for r in b_runs if key in r.metrics]
        if min(len(a), len(b)) < MIN_RUNS:
            continue
        how = reading(a[0])
        effect = per_run_effect(np.array([m.value for m in a]), np.array([m.value for m in b]), how.scale,
                                how.resolution)
        if effect.exact or not math.isfinite(effect.se):
            continue
        p = Look(effect.diff, effect.se, effect.df, balanced_runs(len(a), len(b))).p_sequential
        within = band(effect.scale, effect.baseline, thresholds[how.kind])
        if p >= ALPHA or (within is not None and within[0] <= effect.diff <= within[1]):
            continue
        if effect.scale == RATIO:
            change = math.expm1(effect.diff)
        else:
            change = effect.diff / effect.baseline if effect.baseline else math.nan
        out.append(LoadDifference(key[0], key[1], a[0].unit, effect.baseline, effect.candidate, change, p))
    return out
