"""Squarewave metrics: how far each observed period is from the nominal period.

Definitions (DESIGN.md, "Metric definitions"): edges t_0..t_{n-1} after the warm-up,
half periods d_j = t_{j+1} - t_j, periods P_i = t_{i+2} - t_i = d_i + d_{i+1},
e_i = (P_i - T)/T, h_j = (d_j - T/2)/(T/2). Relative errors are fractions (unit "ratio").

Percentiles use the nearest-rank method: pXX of |e| is the ceil(q*m)-th smallest of the m used
|e_i| (1-based), with the rank computed in exact integers. It is always an observed value, and
with fewer than 1/(1-q) periods it is the maximum (p9999 of 5000 periods = max |e|). This is
numpy's method="inverted_cdf", except that numpy computes q*m in floating point and answers one
rank higher when q*m is an integer it cannot represent exactly (q=0.999, m=10000).

Blind spans [s, e] are gaps between two polls of the observer. A span matters when it can have
falsified an edge: when an edge lies in [s, e] (the observer stamps the edge it catches up on
with the moment the span ends, so that timestamp may be late by up to e - s), or when the span
is at least a quarter period long (a pulse could hide in it). Short spans between edges -- a
VM's timer interrupts every few milliseconds -- change no timestamp and exclude nothing; they
still count in blind_time_ns. A period (half period) is excluded when [t_i, t_{i+2}]
([t_j, t_{j+1}]) touches a span that matters, endpoints included: s <= t_{i+2} and e >= t_i.

Speed: the edges are walked in cache-sized blocks; each block does a dozen in-cache numpy
operations and leaves |P_i - T| (uint32 ns) in one array for the percentile selection.
The Python loop runs once per block of 131072 edges, never per edge.
"""

from __future__ import annotations

import math

import numpy as np

from jitterlab.errors import RunFailed
from jitterlab.records import Metric

_BLOCK = 1 << 17  # periods per block: its few float arrays (1 MiB each) stay in L2/L3
_CAP = 2**32 - 1  # |P - T| is held as uint32 ns (4.29 s); larger values take an exact slow path
_QUANTILES = (  # name, q as an exact fraction num/den
    ("p50_rel_period_error", 1, 2),
    ("p99_rel_period_error", 99, 100),
    ("p999_rel_period_error", 999, 1000),
    ("p9999_rel_period_error", 9999, 10000),
)


def squarewave_metrics(
    t_ns: np.ndarray,
    level: np.ndarray,
    period_ns: int,
    *,
    warmup_ns: int,
    blind: np.ndarray | None = None,
    probe: str = "",
) -> list[Metric]:
    """All squarewave metrics of one observed edge series; RunFailed("unmeasurable") if none."""
    t_all = np.asarray(t_ns, dtype=np.int64)
    level_all = np.asarray(level)
    if t_all.ndim != 1 or level_all.shape != t_all.shape:
        raise ValueError(
            f"t_ns, level must be 1-d of equal length: {t_all.shape}, {level_all.shape}"
        )
    period = int(period_ns)
    if period <= 0:
        raise ValueError(f"period_ns must be > 0, got {period_ns}")
    if len(t_all) == 0:
        raise RunFailed("unmeasurable: the probe recorded no edges", status="unmeasurable")

    first_ns = int(t_all[0])
    warmup_cut_ns = max(int(warmup_ns), 2 * period)
    k0 = int(np.searchsorted(t_all, first_ns + warmup_cut_ns, side="left"))
    t = t_all[k0:]
    n = len(t)
    if n < 3:
        raise RunFailed(
            f"unmeasurable: {n} edges remain after the {warmup_cut_ns} ns warm-up "
            f"({len(t_all)} edges recorded over {int(t_all[-1]) - first_ns} ns; at least 3 are "
            "needed); run longer or use a shorter period",
            status="unmeasurable",
        )
    _check_alternates(level_all[k0:])

    blind_spans = _as_spans(blind)
    excl_p, excl_h, missed_edges, blind_time_ns = _blind_effects(t, blind_spans, period)
    n_periods_all = n - 2
    m = n_periods_all - len(excl_p)
    if m == 0:
        raise RunFailed(
            f"unmeasurable: all {n_periods_all} periods touch a blind interval (the probe was "
            f"blind {blind_time_ns} ns of {int(t[-1]) - int(t[0])} ns)",
            status="unmeasurable",
        )

    acc = _walk_blocks(t, period, excl_p, excl_h)
    pct = _percentiles(acc.absdev, m)
    if acc.saturated and max(pct) >= _CAP:
        pct = _percentiles_exact(t, period, excl_p, m)

    half = period / 2
    mean_dev = acc.sum_dev / m
    var = max(math.fsum(acc.sumsq_parts) / m - mean_dev * mean_dev, 0.0)
    # least squares of t_k on k: Sxx = sum (k - kbar)^2; Sxy comes from the blocks
    sxx = n * (n * n - 1) / 12
    slope = math.fsum(acc.sxy_parts) / 2 / sxx
    values = [
        ("max_rel_period_error", max(acc.pmax - period, period - acc.pmin) / period, "ratio"),
        ("max_delay", (acc.pmax - period) / period, "ratio"),
        ("max_early", (period - acc.pmin) / period, "ratio"),
        *((name, v / period, "ratio") for (name, _, _), v in zip(_QUANTILES, pct, strict=True)),
        ("mean_period_ns", period + mean_dev, "ns"),
        ("std_period_ns", math.sqrt(var), "ns"),
        ("min_period_ns", acc.pmin, "ns"),
        ("max_period_ns", acc.pmax, "ns"),
        ("max_half_period_error", max(acc.dmax - half, half - acc.dmin) / half, "ratio"),
        ("max_duty_error", max(2 * acc.qmax - 1, 1 - 2 * acc.qmin), "ratio"),
        ("drift_ppm", (slope - half) / half * 1e6, "ppm"),
        ("n_edges", n, "count"),
        ("n_periods", m, "count"),
        ("excluded_periods", len(excl_p), "count"),
        ("missed_edges", missed_edges, "count"),
        ("blind_time_ns", blind_time_ns, "ns"),
        ("warmup_ns", int(t[0]) - first_ns, "ns"),
    ]
    return [Metric(name, float(value), unit, probe) for name, value, unit in values]


def _check_alternates(level: np.ndarray) -> None:
    """Periods pair edges of equal polarity, so levels must alternate; say where they do not."""
    same = level[1:] == level[:-1]
    count = int(np.count_nonzero(same))
    if count:
        first = int(np.argmax(same))
        raise RunFailed(
            f"unmeasurable: the level does not alternate at {count} of {len(level)} analysed "
            f"edges (first at analysed edge {first + 1}); the probe lost edges without "
            "reporting a blind interval",
            status="unmeasurable",
        )


def _as_spans(blind: np.ndarray | None) -> np.ndarray:
    if blind is None:
        return np.empty((0, 2), dtype=np.int64)
    spans = np.asarray(blind, dtype=np.int64).reshape(-1, 2)
    if (spans[:, 1] < spans[:, 0]).any() or (spans[1:, 0] < spans[:-1, 1]).any():
        raise ValueError("blind intervals must be sorted, non-overlapping [start, end] pairs")
    return spans


def _blind_effects(
    t: np.ndarray, spans: np.ndarray, period: int
) -> tuple[np.ndarray, np.ndarray, int, int]:
    """Excluded period and half-period indices, missed edges, blind ns inside [t_0, t_{n-1}]."""
    empty = np.empty(0, dtype=np.int64)
    if len(spans) == 0:
        return empty, empty, 0, 0
    start, end = spans[:, 0], spans[:, 1]
    n = len(t)
    overlap = np.minimum(end, t[-1]) - np.maximum(start, t[0])
    blind_time_ns = int(overlap[overlap > 0].sum())
    holds_edge = np.searchsorted(t, end, side="right") > np.searchsorted(t, start, side="left")
    matters = holds_edge | (4 * (end - start) >= period)
    if not matters.any():
        return empty, empty, 0, blind_time_ns
    start, end = start[matters], end[matters]
    first_at_or_after_start = np.searchsorted(t, start, side="left")
    first_after_end = np.searchsorted(t, end, side="right")
    excl_p = _index_union(first_at_or_after_start - 2, first_after_end, n - 2)
    excl_h = _index_union(first_at_or_after_start - 1, first_after_end, n - 1)
    gaps = t[excl_h + 1] - t[excl_h]
    # round(gap / (T/2)) with halves rounded up, in exact integers
    missed = np.maximum((4 * gaps + period) // (2 * period) - 1, 0)
    return excl_p, excl_h, int(missed.sum()), blind_time_ns


def _index_union(lo: np.ndarray, hi: np.ndarray, size: int) -> np.ndarray:
    """Sorted unique indices in the union of [lo_r, hi_r) clipped to [0, size); lo, hi ascend."""
    lo = np.clip(lo, 0, size)
    hi = np.clip(hi, 0, size)
    covered = np.maximum.accumulate(hi)
    lo = np.maximum(lo, np.concatenate(([0], covered[:-1])))
    lengths = np.maximum(hi - lo, 0)
    offsets = np.cumsum(lengths) - lengths
    return np.arange(int(lengths.sum()), dtype=np.int64) + np.repeat(lo - offsets, lengths)


class _Accumulated:
    """What the block walk adds up; plain attributes, filled by _walk_blocks."""

    def __init__(self, n_periods: int) -> None:
        # |P_i - T| ns per period, saturated at _CAP; excluded periods hold 0 (see _percentiles)
        self.absdev = np.empty(n_periods, dtype=np.uint32)
        self.saturated = 0
        self.pmin = self.dmin = self.qmin = math.inf
        self.pmax = self.dmax = self.qmax = -math.inf
        self.sum_dev = 0  # exact int: sum of (P_i - T) over used periods
        self.sumsq_parts: list[float] = []
        self.sxy_parts: list[float] = []


def _walk_blocks(
    t: np.ndarray, period: int, excl_p: np.ndarray, excl_h: np.ndarray
) -> _Accumulated:
    """One pass over the edges in blocks; excluded entries are overwritten, never compressed.

    In a block with excluded periods (half periods), those entries are set to a used entry of
    the same block before min/max, which leaves min/max unchanged, and their deviation is set
    to 0, which adds nothing to the sums and puts a 0 into absdev that _percentiles skips.
    """
    n = len(t)
    n_periods = n - 2
    acc = _Accumulated(n_periods)
    block = min(_BLOCK, n_periods)
    buf_d = np.empty(block + 1)
    buf_p = np.empty(block)
    buf_q = np.empty(block)
    ramp = np.arange(block + 1, dtype=np.float64)
    ramp2 = ramp * ramp
    has_excl = len(excl_p) > 0 or len(excl_h) > 0
    ep = eh = excl_p[:0]
    for a in range(0, n_periods, block):
        b = min(a + block, n_periods)
        size = b - a
        owned = size + 1 if b == n_periods else size  # half periods this block accounts for
        # half periods a..b as float64: exact for gaps below 2^53 ns (104 days)
        d = np.subtract(t[a + 1 : b + 2], t[a : b + 1], out=buf_d[: size + 1], casting="unsafe")
        p = np.add(d[:-1], d[1:], out=buf_p[:size])
        # duty: with alternating levels |high/P - 1/2| / (1/2) = |2 d_i/P_i - 1|
        q = np.divide(d[:size], p, out=buf_q[:size])

        # drift: Sxy = sum_j d_j (j+1)(n-1-j) / 2 over all half periods (blind ones too);
        # with j = a + l: (A + l)(B - l) = AB + (B - A) l - l^2
        a1, b1 = a + 1, n - 1 - a
        s0 = int(t[a + owned]) - int(t[a])
        acc.sxy_parts.append(float(a1 * b1 * s0))
        acc.sxy_parts.append((b1 - a1) * float(np.dot(d[:owned], ramp[:owned])))
        acc.sxy_parts.append(-float(np.dot(d[:owned], ramp2[:owned])))

        d = d[:owned]
        if has_excl:
            lo, hi = np.searchsorted(excl_h, (a, a + owned))
            eh = excl_h[lo:hi] - a
            lo, hi = np.searchsorted(excl_p, (a, b))
            ep = excl_p[lo:hi] - a
            if len(eh) and len(eh) < owned:
                d[eh] = d[_first_not_in(eh)]
            if len(ep) and len(ep) < size:
                used_i = _first_not_in(ep)
                p[ep] = p[used_i]
                q[ep] = q[used_i]
        if len(eh) < owned:
            acc.dmin = min(acc.dmin, float(d.min()))
            acc.dmax = max(acc.dmax, float(d.max()))
        if len(ep) == size:
            acc.absdev[a:b] = 0
            continue
        pmin, pmax = float(p.min()), float(p.max())
        acc.pmin, acc.pmax = min(acc.pmin, pmin), max(acc.pmax, pmax)
        acc.qmin, acc.qmax = min(acc.qmin, float(q.min())), max(acc.qmax, float(q.max()))
        dev = np.subtract(p, period, out=p)
        if len(ep):
            dev[ep] = 0
            acc.sum_dev += round(float(dev.sum()))  # integer-valued, sums far below 2^53: exact
        else:  # telescoping: sum of P_i for i in [a, b) is exact in integers
            acc.sum_dev += int(t[b + 1]) + int(t[b]) - int(t[a + 1]) - int(t[a]) - size * period
        acc.sumsq_parts.append(float(np.dot(dev, dev)))
        if max(pmax - period, period - pmin) > _CAP:
            np.abs(dev, out=dev)
            acc.saturated += int(np.count_nonzero(dev >= _CAP))
            np.minimum(dev, _CAP, out=dev)
        np.abs(dev, out=acc.absdev[a:b], casting="unsafe")
    return acc


def _first_not_in(sorted_idx: np.ndarray) -> int:
    """The smallest index >= 0 missing from a sorted array of distinct indices."""
    gaps = np.flatnonzero(sorted_idx != np.arange(len(sorted_idx)))
    return int(gaps[0]) if len(gaps) else len(sorted_idx)


def _percentiles(absdev: np.ndarray, m: int) -> list[int]:
    """Nearest-rank percentiles of the m largest-ranked absdev (ns), selected in place.

    absdev holds len(absdev) - m extra zeros (excluded periods); zeros rank first, so the
    k-th smallest used value is the (k + zeros)-th smallest overall.
    """
    zeros = len(absdev) - m
    kth = [zeros + (m * num + den - 1) // den - 1 for _, num, den in _QUANTILES]
    values = []
    start = 0
    for k in kth:  # each selection only touches what lies above the previous one
        if k >= start:
            absdev[start:].partition(k - start)
            start = k + 1
        values.append(int(absdev[k]))
    return values


def _percentiles_exact(t: np.ndarray, period: int, excl_p: np.ndarray, m: int) -> list[int]:
    """Slow exact path for period errors beyond 4.29 s: int64 over the whole series."""
    absdev = t[2:] - t[:-2]
    absdev -= period
    absdev[excl_p] = 0
    np.abs(absdev, out=absdev)
    return _percentiles(absdev, m)
