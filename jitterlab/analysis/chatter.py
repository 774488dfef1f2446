"""The round trips of the messages Linux exchanged with a real-time unit during a run (the unit
impl's chatter), as the unit's control program logs them: one round trip in ns per line, in the
order they were made, then "# lost=N" (messages whose answer did not come within the interval).
Metrics: chatter_rtt_{min,mean,max,std,p50,p99,p999,p9999}_ns (analysis/latency.py's quantiles),
chatter_rtt_samples and chatter_lost."""

from __future__ import annotations

import re

import numpy as np

from jitterlab.analysis.latency import latency_metrics, latency_names
from jitterlab.model.errors import RunFailed
from jitterlab.model.records import Metric

_LOST = re.compile(r"^# lost=(\d+)$")
CHATTER_NAMES = (*latency_names("chatter_rtt"), "chatter_lost")  # what chatter_metrics can give


def parse_chatter(text: str, where: str) -> tuple[np.ndarray, int]:
    """(round trips in ns, messages lost); RunFailed naming `where` when the log is not whole."""
    lines = text.splitlines()
    lost = _LOST.match(lines[-1]) if lines else None
    if lost is None:
        raise RunFailed(f"{where}: truncated (no '# lost=N' line)")
    body = lines[:-1]
    if not all(line.isdigit() for line in body):
        raise RunFailed(f"{where}: garbled (a round trip is not a whole number of ns)")
    return np.array([int(line) for line in body], dtype=np.int64), int(lost[1])


def chatter_metrics(rtt_ns: np.ndarray, lost: int) -> list[Metric]:
    """The round trips' statistics (none when no message came back) and the count of those lost."""
    out = latency_metrics(rtt_ns, prefix="chatter_rtt") if len(rtt_ns) else []
    return [*out, Metric("chatter_lost", float(lost), "count", "", "lower")]
