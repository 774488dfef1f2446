"""An instrument's edges against a program that counted its edges but timestamped none (a real-time
unit's firmware: its wave is timed by its own timer, which no clock of Linux's reads).

With no times to align (analysis/alignment.py), the count is the check that the instrument watched
the program's pin: the pin is quiet before the wave starts and after it stops (the firmware leaves
it low and counts that last fall), so an instrument that watched it over the whole run saw exactly
the edges the firmware counted. It is the program's pin when the two agree within the alignment's
shares (MIN_MATCHED_SHARE of the counted edges seen, at most EXTRA_SHARE more plus QUIET_EDGES);
any difference at all is reported, since on a wire or in an emulator's trace there should be none.
"""

from __future__ import annotations

from dataclasses import dataclass

from jitterlab.analysis.alignment import EXTRA_SHARE, MIN_MATCHED_SHARE, QUIET_EDGES
from jitterlab.model.records import Metric

COUNT_NAMES = ("counted_edges", "seen_edges", "unseen_edges", "extra_edges")  # CountCheck.metrics', in order


@dataclass(frozen=True)
class CountCheck:
    counted: int  # edges the program made, by its own count
    seen: int  # edges the instrument saw

    @property
    def unseen(self) -> int:
        return max(self.counted - self.seen, 0)

    @property
    def extra(self) -> int:
        return max(self.seen - self.counted, 0)

    @property
    def watched(self) -> bool:
        """True when the instrument's edges are the program's pin's."""
        return (self.seen >= MIN_MATCHED_SHARE * self.counted
                and self.extra <= EXTRA_SHARE * self.counted + QUIET_EDGES and self.seen > 0)

    def difference(self) -> str | None:
        """What does not agree, in words; None when the counts are equal."""
        if self.seen == self.counted:
            return None
        more = (f"{self.unseen} fewer" if self.unseen else f"{self.extra} more")
        return f"it saw {self.seen} edges, {more} than the {self.counted} the unit counted"

    def metrics(self, probe: str) -> list[Metric]:
        counted, seen, unseen, extra = COUNT_NAMES
        return [
            Metric(counted, float(self.counted), "count", probe, "none"),
            Metric(seen, float(self.seen), "count", probe, "none"),
            Metric(unseen, float(self.unseen), "count", probe, "lower"),
            Metric(extra, float(self.extra), "count", probe, "lower"),
        ]
