"""What blind spans do to an edge series: which periods they exclude, how many edges they hid,
and how late the excluded periods provably were. The one place the blind rule lives.

The rule (docs/metrics.md, "Blind spans"): a blind span [s, e] (inclusive, the observer's clock)
*matters* when an edge lies in it (a catch-up edge is stamped with the span's end, so it may be
late by up to e - s), when it is at least a quarter period long (a pulse could hide in it), or
when the level does not alternate across it (edges were lost in it, whatever its length). A
period [t_i, t_{i+2}] (half period [t_j, t_{j+1}]) is excluded when it touches a span that
matters, endpoints included. Spans that do not matter exclude nothing and still count as blind
time.

The model behind the bounds: outside the spans that matter the observer sees every edge when it
happens; an edge stamped inside a span happened in [s, its stamp]; hidden edges lie inside spans.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Exclusions:
    """Blind effects on edges t_0..t_{n-1}; interval arrays are merged [lo, hi) index ranges."""

    period_lo: np.ndarray  # excluded periods
    period_hi: np.ndarray
    half_lo: np.ndarray  # excluded half periods
    half_hi: np.ndarray
    fit_lo: np.ndarray  # edges stamped inside a span that matters: left out of the drift fit
    fit_hi: np.ndarray
    missed_at: np.ndarray  # edge index from which the true index is shifted by ...
    missed_cum: np.ndarray  # ... this many missed edges (cumulative, ascending)
    excluded_periods: int
    missed_edges: int
    blind_time_ns: int
    excluded_lower_bound_ns: int  # a true excluded period is at least this long (0: no bound)


def as_spans(blind: np.ndarray | None) -> np.ndarray:
    """Blind spans as an (n, 2) int64 array; ValueError unless sorted and non-overlapping."""
    if blind is None:
        return np.empty((0, 2), dtype=np.int64)
    spans = np.asarray(blind, dtype=np.int64).reshape(-1, 2)
    if (spans[:, 1] < spans[:, 0]).any() or (spans[1:, 0] < spans[:-1, 1]).any():
        raise ValueError("blind intervals must be sorted, non-overlapping [start, end] pairs")
    return spans


def exclusions(t: np.ndarray, level: np.ndarray, spans: np.ndarray, period: int) -> Exclusions:
    """Apply the blind rule to edges t (int64, after the warm-up) with levels `level`."""
    n = len(t)
    empty = np.empty(0, dtype=np.int64)
    blind_time = 0
    if len(spans):
        overlap = np.minimum(spans[:, 1], t[-1]) - np.maximum(spans[:, 0], t[0])
        blind_time = int(overlap[overlap > 0].sum())
    start, end = spans[:, 0], spans[:, 1]
    first_in = np.searchsorted(t, start, side="left")  # A: first edge >= s
    first_after = np.searchsorted(t, end, side="right")  # B: first edge > e
    holds_edge = first_after > first_in
    inner = (first_in > 0) & (first_in < n)
    repeats = np.zeros(len(spans), dtype=bool)
    idx = first_in[inner]
    repeats[inner] = level[idx] == level[idx - 1]
    matters = holds_edge | (4 * (end - start) >= period) | repeats
    if not matters.any():
        return Exclusions(empty, empty, empty, empty, empty, empty, empty, empty, 0, 0,
                          blind_time, 0)
    start, end = start[matters], end[matters]
    a_idx, b_idx = first_in[matters], first_after[matters]
    p_lo, p_hi = _merge(a_idx - 2, b_idx, n - 2, touching=True)
    h_lo, h_hi = _merge(a_idx - 1, b_idx, n - 1, touching=True)
    f_lo, f_hi = _merge(a_idx, b_idx, n, touching=True)
    missed_at, missed_cum = _missed(t, level, a_idx, b_idx, period)
    bound_ns = _lower_bound_ns(t, start, end, a_idx, b_idx)
    return Exclusions(p_lo, p_hi, h_lo, h_hi, f_lo, f_hi, missed_at, missed_cum,
                      int((p_hi - p_lo).sum()), int(missed_cum[-1]) if len(missed_cum) else 0,
                      blind_time, bound_ns)


def _merge(lo: np.ndarray, hi: np.ndarray, size: int, *, touching: bool) -> tuple[np.ndarray,
                                                                                 np.ndarray]:
    """Union of [lo_r, hi_r) clipped to [0, size) as disjoint sorted intervals; lo ascends.

    `touching` also merges intervals that only meet ([1, 3) and [3, 5) -> [1, 5)); without
    it they stay apart, as two stretches that share one boundary edge.
    """
    lo = np.clip(lo, 0, size)
    hi = np.clip(hi, 0, size)
    keep = hi > lo
    lo, hi = lo[keep], hi[keep]
    if len(lo) == 0:
        return lo, hi
    reach = np.maximum.accumulate(hi)
    new = np.ones(len(lo), dtype=bool)
    new[1:] = lo[1:] > reach[:-1] if touching else lo[1:] >= reach[:-1]
    starts = np.flatnonzero(new)
    ends = np.append(starts[1:], len(lo)) - 1
    return lo[starts], reach[ends]


def _missed(t: np.ndarray, level: np.ndarray, a_idx: np.ndarray, b_idx: np.ndarray,
            period: int) -> tuple[np.ndarray, np.ndarray]:
    """Edges a stretch of excluded half periods hid, assuming the wave kept its nominal period.

    A stretch runs from edge lo to edge hi (the edges before and after the spans). Its true
    number of half periods is the integer nearest to (t_hi - t_lo)/(T/2) with the parity the
    levels demand (equal levels: even), at least the number observed; the difference is the
    number of edges the probe missed. A catch-up edge is an observed edge, not a missed one.
    """
    n = len(t)
    lo, hi = _merge(a_idx - 1, b_idx, n - 1, touching=False)
    hi = np.minimum(hi, n - 1)
    gap = t[hi] - t[lo]
    observed = hi - lo
    parity = (level[hi] != level[lo]).astype(np.int64)
    # nearest integer of the given parity to 2 gap / T, halves rounded up, in exact integers
    true = 2 * ((2 * gap - parity * period + period) // (2 * period)) + parity
    least = observed + ((observed - parity) % 2)
    missed = np.maximum(true, least) - observed
    keep = missed > 0
    return hi[keep], np.cumsum(missed[keep])


def _lower_bound_ns(t: np.ndarray, start: np.ndarray, end: np.ndarray, a_idx: np.ndarray,
                    b_idx: np.ndarray) -> int:
    """The longest true period the spans that matter provably hide (0 when none is proven).

    Before span k: no true edge lies in (last edge before s_k, s_k), so the period that ends
    at the first true edge >= s_k began at or before the second-last true edge before s_k,
    which is at most max(t_{a-1}, e_{k-1}) (hidden edges of span k-1 are <= e_{k-1}):
    P >= s_k - max(t_{a-1}, e_{k-1}). After span k: the period that starts at the last true
    edge <= e_k ends at the second true edge after e_k, which is at least
    min(t_{b+1}, s_{k+1}): P >= min(t_{b+1}, s_{k+1}) - e_k. Each bound needs the edges it
    names inside the analysed window, and an observed edge beyond the span (a span at the end
    of the recording may be the program stopping, which proves nothing).
    """
    n = len(t)
    big = np.iinfo(np.int64).max
    prev_end = np.concatenate(([np.iinfo(np.int64).min], end[:-1]))
    next_start = np.concatenate((start[1:], [big]))
    best = 0
    a = a_idx - 1
    ok = (a >= 1) & (a_idx <= n - 1)
    if ok.any():
        lb = start[ok] - np.maximum(t[a[ok] - 1], prev_end[ok])
        best = max(best, int(lb.max()))
    ok = (b_idx >= 1) & (b_idx + 1 <= n - 1)
    if ok.any():
        lb = np.minimum(t[b_idx[ok] + 1], next_start[ok]) - end[ok]
        best = max(best, int(lb.max()))
    return best
