"""Change points in a history: where the distribution of a metric's values changed, found by Apache
Otava (E-Divisive means over sliding windows, each candidate kept only when Student's t-test
between the segments on both sides gives p <= MAX_P; Fleming et al., "Hunter", ICPE 2023).

Pure: a series of values in their order (one per interval, label value or campaign) in, change
points out. A change point is the index of the first value after the change; `before` and
`after` are the means of the segments on its two sides (up to the neighbouring change points).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from jitterlab.model.errors import UserError

MAX_P = 0.001  # Otava's default: a change point is kept when its t-test gives p <= this
WINDOW = 50  # Otava's default sliding window (values)
MIN_VALUES = 4  # fewer values have no change point worth a t-test


@dataclass(frozen=True)
class ChangePoint:
    index: int  # the first value after the change
    before: float  # mean of the segment before it
    after: float  # mean of the segment after it
    p_value: float

    @property
    def ratio(self) -> float:
        """after / before (a change of +50 % is 1.5)."""
        if self.before == 0:
            return 1.0 if self.after == 0 else math.inf
        return self.after / self.before


def change_points(values: Sequence[float], *, max_p: float = MAX_P,
                  window: int = WINDOW) -> list[ChangePoint]:
    """The change points of `values` in order (indexes into values); none for fewer than MIN_VALUES
    or values that are not all finite."""
    series = [float(v) for v in values]
    if len(series) < MIN_VALUES or not all(math.isfinite(v) for v in series):
        return []
    try:  # numpy and scipy only; imported when used
        from otava.analysis import compute_change_points
    except ImportError:
        raise UserError("change points need Apache Otava's analysis module: pip install --no-deps "
                        "'apache-otava>=0.8,<0.9' (make setup does)") from None

    found, _weak = compute_change_points(series, window_len=max(window, 2), max_pvalue=max_p)
    return [ChangePoint(int(c.index), float(c.stats.mean_1), float(c.stats.mean_2), float(c.stats.pvalue))
            for c in sorted(found, key=lambda c: c.index)]


def starts_with_newest(points: Sequence[ChangePoint], n_values: int) -> ChangePoint | None:
    """The change point that the newest value starts (the last value stands apart from the history
    before it), if any."""
    return next((c for c in points if c.index == n_values - 1), None)
