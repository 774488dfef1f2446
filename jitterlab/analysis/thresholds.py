"""The practical thresholds of a comparison: the smallest change that matters, per kind of metric.

A comparison may call two groups "same" only when the 95 % CI of their ratio lies inside the band
(1 / (1 + t), 1 + t): any change larger than t, either way, is excluded by the data. The kinds,
and why their defaults (docs/reports.md, "Three verdicts"):

- timing (relative period errors, latencies, jitter, pooled p99/max): 20 %. Timing tails of
  identical runs on Linux differ by 10-30 % from run to run; a smaller change is below what a
  handful of repetitions can tell apart, and rarely decides a design.
- rate (throughput, events/s, Mbit/s): 5 %. Rates are steady from run to run.
- loss (excluded, missed, blind, overflow, lost counts and times): 50 %. They are small counts
  that jump by whole units.
- other: 10 %.

The first matching pattern wins; a metric's kind never depends on its direction.
"""

from __future__ import annotations

import math
import re

from jitterlab.model.errors import UserError

TIMING, RATE, LOSS, OTHER = "timing", "rate", "loss", "other"
KINDS = (TIMING, RATE, LOSS, OTHER)
DEFAULT_THRESHOLDS: dict[str, float] = {TIMING: 0.20, RATE: 0.05, LOSS: 0.50, OTHER: 0.10}
_PERCENT = re.compile(r"[0-9]+(\.[0-9]*)?|\.[0-9]+")

_KIND_PATTERNS: list[tuple[str, str]] = [
    (r"(excluded|missed|blind|unobserved|overflow|(^|_)lost|loss|drops|retransmits|errors$)", LOSS),
    (r"(^pooled_|_error|_delay|_early|^std_period_ns|latency|jitter|_ns$)", TIMING),
    (r"(throughput|_per_s$|mbit|bandwidth|ops|_per_sec)", RATE),
]


def kind(metric: str) -> str:
    """TIMING, RATE, LOSS or OTHER for a metric name."""
    for pattern, which in _KIND_PATTERNS:
        if re.search(pattern, metric):
            return which
    return OTHER


def parse_thresholds(texts: list[str] | None, option: str = "--threshold") -> dict[str, float]:
    """The thresholds by kind from `PCT` (every kind) or `KIND=PCT` words ("10%", "timing=15%",
    "rate=2"), over the defaults; a fraction of 1 (100 %) or more is refused."""
    out = dict(DEFAULT_THRESHOLDS)
    for text in texts or []:
        key, sep, value = text.rpartition("=")
        key = key.strip()
        if sep and key not in KINDS:
            raise UserError(f"{option} {text!r}: no kind {key!r}; give PCT or KIND=PCT with KIND one of "
                            f"{', '.join(KINDS)}, e.g. {option} timing=10%")
        number = value.strip().removesuffix("%").strip()
        # float() also reads 1_0, 1e1 and other scripts' digits: a typo would become a threshold
        pct = float(number) if _PERCENT.fullmatch(number) else math.nan
        if not (math.isfinite(pct) and 0 < pct < 100):
            raise UserError(f"{option} {text!r}: give a change in percent above 0 and below 100 in digits, "
                            f"e.g. {option} 10% or {option} timing=12.5%")
        if pct < 1 and not value.strip().endswith("%"):  # 0.2: a fraction (20 %) or 0.2 %?
            fraction = f"{key}=" if sep else ""
            raise UserError(f"{option} {text!r}: the threshold is in percent, so this reads as {pct:g} %; "
                            f"write the unit: {option} {fraction}{pct * 100:g}% (a fraction of {pct:g}) or "
                            f"{option} {fraction}{pct:g}%")
        for k in ([key] if sep else KINDS):
            out[k] = pct / 100
    return out


def within(ci_low: float, ci_high: float, threshold: float) -> bool:
    """Whether a CI of a ratio excludes every change larger than `threshold` (either way)."""
    if not (math.isfinite(ci_low) and math.isfinite(ci_high)):
        return False
    return ci_low >= 1 / (1 + threshold) and ci_high <= 1 + threshold
