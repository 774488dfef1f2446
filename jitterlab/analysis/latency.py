"""Latency metrics (cyclictest, udp-echo, ...): from raw samples or from a 1 µs histogram.

Quantiles are the smallest observed value v with at least q*N samples <= v (numpy's
"inverted_cdf"), so a histogram and the samples it was made of give the same answer when the
samples are whole microseconds. Names: latency_{min,mean,max,std,p50,p99,p999,p9999}_ns and
latency_samples; a histogram adds latency_overflow (samples beyond its last bucket). latency_names
gives them before any sample exists (what a benchmark declares it can produce).
"""

from __future__ import annotations

import numpy as np

from jitterlab.model.errors import RunFailed
from jitterlab.model.reading import COUNT, LOWER, MAX, MEDIAN, NONE, P50, P99, P999, P9999, RATIO, WORST
from jitterlab.model.records import Metric

HISTOGRAM_UNIT = "count per 1us bucket"  # unit of a Samples series that holds histogram counts
QUANTILES = {"p50": 0.5, "p99": 0.99, "p999": 0.999, "p9999": 0.9999}
# the statistic of the run's latencies each value is (model.reading): tails are compared as tails
_STAT = {"max": MAX, "p50": P50, "p99": P99, "p999": P999, "p9999": P9999}
BUCKET_NS = 1000
STATS = ("min", "mean", "max", "std", *QUANTILES)  # each is {prefix}_{stat}_ns


def latency_names(prefix: str = "latency", *, histogram: bool = False) -> tuple[str, ...]:
    """Every name latency_metrics (histogram_metrics when `histogram`) can give under `prefix`."""
    overflow = (f"{prefix}_overflow",) if histogram else ()
    return (*(f"{prefix}_{stat}_ns" for stat in STATS), f"{prefix}_samples", *overflow)


def latency_metrics(samples_ns: np.ndarray, *, prefix: str = "latency", subject: str = "") -> list[Metric]:
    """Every latency metric of DESIGN.md from raw samples (ns)."""
    x = np.asarray(samples_ns, dtype=np.float64)
    if x.size == 0:
        raise RunFailed("unmeasurable: no latency samples", status="unmeasurable")
    values = {
        "min": float(x.min()),
        "mean": float(x.mean()),
        "max": float(x.max()),
        "std": float(x.std()),
        **{
            name: float(np.quantile(x, q, method="inverted_cdf"))
            for name, q in QUANTILES.items()
        },
    }
    return _metrics(values, x.size, prefix, subject)


def histogram_metrics(
    counts: np.ndarray,
    *,
    overflow: int = 0,
    min_ns: float | None = None,
    mean_ns: float | None = None,
    max_ns: float | None = None,
    prefix: str = "latency",
    subject: str = "",
) -> list[Metric]:
    """Latency metrics from counts per 1 µs bucket (bucket i holds latencies in [i, i+1) µs).

    min/mean/max come from the tool when it reports them (exact), else from the buckets. A
    quantile that falls among the overflow samples is the tool's max (the best bound known).
    """
    counts = np.asarray(counts, dtype=np.int64)
    if counts.ndim != 1 or (counts < 0).any() or overflow < 0:
        raise ValueError("histogram counts must be a 1-d array of non-negative integers")
    n = int(counts.sum()) + overflow
    if n == 0:
        raise RunFailed("unmeasurable: the latency histogram is empty", status="unmeasurable")
    edges_ns = np.arange(len(counts), dtype=np.float64) * BUCKET_NS
    cumulative = np.cumsum(counts)
    filled = np.flatnonzero(counts)
    bucket_max = float(edges_ns[filled[-1]]) if filled.size else float("nan")
    top = max_ns if max_ns is not None else bucket_max
    values = {
        "min": min_ns if min_ns is not None else float(edges_ns[filled[0]]) if filled.size else top,
        "mean": mean_ns if mean_ns is not None else float((counts * edges_ns).sum() / max(1, counts.sum())),
        "max": top,
    }
    for name, q in QUANTILES.items():
        i = int(np.searchsorted(cumulative, q * n, side="left"))
        values[name] = float(edges_ns[i]) if i < len(counts) else float(top)
    # std from the buckets (the tools do not report it); overflow samples counted at max
    if counts.sum():
        weights = np.append(counts, overflow).astype(np.float64)
        points = np.append(edges_ns, top if overflow else 0.0)
        mean = (weights * points).sum() / weights.sum()
        values["std"] = float(np.sqrt((weights * (points - mean) ** 2).sum() / weights.sum()))
    metrics = _metrics(values, n, prefix, subject)
    metrics.append(Metric(f"{prefix}_overflow", float(overflow), "count", subject, LOWER, WORST, COUNT))
    return metrics


def histogram(samples_ns: np.ndarray, n_buckets: int) -> tuple[np.ndarray, int]:
    """1 µs buckets of samples (ns): (counts[n_buckets], overflow)."""
    buckets = np.asarray(samples_ns, dtype=np.int64) // BUCKET_NS
    counts = np.bincount(np.clip(buckets, 0, n_buckets), minlength=n_buckets + 1)
    return counts[:n_buckets], int(counts[n_buckets])


def _metrics(values: dict[str, float], n: int, prefix: str, subject: str) -> list[Metric]:
    out = [
        Metric(f"{prefix}_{name}_ns", value, "ns", subject, LOWER, WORST if name == "max" else MEDIAN, RATIO,
               _STAT.get(name, ""))
        for name, value in values.items()
        if value is not None and np.isfinite(value)
    ]
    out.append(Metric(f"{prefix}_samples", float(n), "count", subject, NONE, MEDIAN, COUNT))
    return out
