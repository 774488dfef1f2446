"""A metric's name in words, for tables, figures and the end screen alike (no plotting imported:
the run's end screen and `show` word metrics without loading matplotlib)."""

from __future__ import annotations

import re

from jitterlab.report.format import _digits

# how a metric's name reads in words: statistic tokens lead ("latency_max_ns" -> "maximum latency")
_STATS = {"max": "maximum", "min": "minimum", "mean": "mean", "p50": "median", "std": "standard deviation of"}
_WORDS = {"rel": "relative", "rtt": "round-trip time", "irq": "IRQ", "cpu": "CPU", "hw": "hardware",
          "mb": "MB", "mib": "MiB", "mbit": "Mbit", "pps": "packets", "hwlat": "hardware latency",
          "ns": "", "us": "", "ms": "", "s": "", "percent": "", "ratio": ""}


def metric_words(name: str) -> str:
    """A metric's name in words: "latency_max_ns" -> "maximum latency", "rtt_p99_ns" -> "99th
    percentile round-trip time", "events_per_s" -> "events per second"."""
    tokens = name.split("_")
    if tokens[-3:-2] in (["mb"], ["mib"], ["mbit"]) and tokens[-2:] == ["per", "s"]:
        del tokens[-3:]  # a rate's unit is the axis's unit
    elif tokens[-2:] == ["per", "s"]:
        tokens[-1] = "second"
    stat = ""
    for i, token in enumerate(tokens):
        if token in _STATS or re.fullmatch(r"p\d+", token):
            stat = _STATS.get(token) or f"{_digits(float(token[1:3] + '.' + token[3:]), 4)}th percentile"
            del tokens[i]
            break
    words = [_WORDS.get(t, t) for t in tokens]
    return " ".join(w for w in [stat, *words] if w) or ("throughput" if name.endswith("_per_s") else name)
