"""The verdict of one tested row, and of many at once for the bench: better or worse when the
sequential test shows a change (its p-value, adjusted with Holm's method over the tested rows, under
ALPHA); same when no change is possible at all (every value within the metric's resolution) or when
the repeated interval at 2 * ALPHA lies inside the practical threshold (two one-sided tests, the
equivalence of analysis.sequential); undecided otherwise. `compare` and `bench/until_decided.py`
reach their verdicts here, so the bench measures what users get."""

from __future__ import annotations

import math

import numpy as np

from jitterlab.analysis.reading import reading
from jitterlab.analysis.sequential import ALPHA, MIN_RUNS, Look, boundary, t_of_z, z_of_t
from jitterlab.analysis.stats import welch_arrays, within_resolution
from jitterlab.analysis.thresholds import DEFAULT_THRESHOLDS
from jitterlab.model.reading import HIGHER, RATIO
from jitterlab.model.records import Metric

BETTER, WORSE, SAME, UNDECIDED = "better", "worse", "same", "undecided"
VERDICTS = (WORSE, BETTER, UNDECIDED, SAME)
# which rule decided a row (compare's JSON: rows[].decided_by)
BY_TEST, BY_EQUIVALENCE, BY_RESOLUTION = "sequential test", "equivalence", "resolution"


def band(scale: str, baseline: float, threshold: float) -> tuple[float, float] | None:
    """The changes a "same" must stay within, on the analysis scale: a factor 1 / (1 + t) to 1 + t
    (a log ratio), or +-t of the baseline's mean (a difference); None when there is no baseline to
    be relative to (a mean of 0)."""
    if scale == RATIO:
        return -math.log1p(threshold), math.log1p(threshold)
    if baseline == 0 or not math.isfinite(baseline):
        return None
    return -threshold * abs(baseline), threshold * abs(baseline)


def decide(look: Look, p_adjusted: float, direction: str, within: tuple[float, float] | None,
           exact: bool = False) -> tuple[str, str]:
    """(verdict, the rule that decided it; "" when undecided) of a tested row."""
    if exact:
        return SAME, BY_RESOLUTION
    if math.isnan(p_adjusted) or not math.isfinite(look.diff):
        return UNDECIDED, ""
    if p_adjusted < ALPHA and look.diff != 0:
        return (BETTER if (look.diff > 0) == (direction == HIGHER) else WORSE), BY_TEST
    if within is not None and math.isfinite(look.se):
        half = look.half_width(2 * ALPHA)
        if within[0] <= look.diff - half and look.diff + half <= within[1]:
            return SAME, BY_EQUIVALENCE
    return UNDECIDED, ""


def verdicts_of_runs(a: np.ndarray, b: np.ndarray, metric: str, unit: str) -> np.ndarray:
    """The verdicts of many comparisons of one metric at once (rows of `a` and `b`: the runs of
    each group; all runs > 0, one per column), each as compare gives it when the metric is the
    only tested row: what bench/until_decided.py measures, without a comparison per trial."""
    how = reading(Metric(metric, 1.0, unit))
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    n_a, n_b = a.shape[1], b.shape[1]
    if min(n_a, n_b) < MIN_RUNS:
        return np.full(len(a), UNDECIDED, dtype=object)
    assert how.scale == RATIO and (a > 0).all() and (b > 0).all(), "the bench's metric: positive, a ratio"
    n_eff = 2.0 / (1.0 / n_a + 1.0 / n_b)
    diff, se, df = welch_arrays(np.log(a), np.log(b))
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(se == 0, np.where(diff == 0, 0.0, np.inf), z_of_t(diff / np.where(se == 0, 1, se), df))
    tested = np.abs(z) > boundary(n_eff, ALPHA)  # a sequential p under ALPHA: Holm over one row
    out = np.full(len(a), UNDECIDED, dtype=object)
    worse = (diff > 0) != (how.direction == HIGHER)
    out[tested & (diff != 0)] = np.where(worse, WORSE, BETTER)[tested & (diff != 0)]
    low, high = band(RATIO, 1.0, DEFAULT_THRESHOLDS[how.kind])  # type: ignore[misc]
    half = np.where(se == 0, 0.0, t_of_z(boundary(n_eff, 2 * ALPHA), df) * se)
    same = ~tested & (low <= diff - half) & (diff + half <= high)
    out[same] = SAME
    exact = np.array([within_resolution(np.concatenate([x, y]), how.resolution) for x, y in zip(a, b,
                                                                                                  strict=True)])
    out[exact] = SAME
    return out
