"""How fast bytes went: rounds of the same number of bytes, each timed, as MB/s (10^6 bytes)."""

from __future__ import annotations

import statistics

from jitterlab.model.records import Metric


def rate_names(what: str, *, count: str) -> tuple[str, str, str, str]:
    """The names rate_metrics gives, in its order."""
    return f"{what}_mb_per_s", f"{what}_min_mb_per_s", f"{what}_max_mb_per_s", count


def rate_metrics(what: str, seconds: list[float], n_bytes: int, *, count: str) -> list[Metric]:
    """`<what>_mb_per_s` (the median round), `<what>_min_mb_per_s` (the slowest), `_max_` (the
    fastest), and the number of rounds as `count`."""
    mb_per_s = [n_bytes / 1e6 / s for s in seconds]
    median, slowest, fastest, rounds = rate_names(what, count=count)
    return [
        Metric(median, statistics.median(mb_per_s), "MB/s", "", "higher"),
        Metric(slowest, min(mb_per_s), "MB/s", "", "higher"),
        Metric(fastest, max(mb_per_s), "MB/s", "", "higher"),
        Metric(rounds, float(len(seconds)), "count", "", "none"),
    ]
