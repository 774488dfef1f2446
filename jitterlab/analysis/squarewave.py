"""Squarewave metrics: how far each observed period is from the nominal period.

Definitions (docs/metrics.md has them with worked examples): edges t_0..t_{n-1} after the
warm-up, half periods d_j = t_{j+1} - t_j, periods P_i = t_{i+2} - t_i = d_i + d_{i+1} (every
edge to the next edge of the same polarity: both polarities count), e_i = (P_i - T)/T,
h_j = (d_j - T/2)/(T/2). Relative errors are fractions (unit "ratio").

Percentiles use the nearest-rank method: pXX of |e| is the ceil(q*m)-th smallest of the m used
|e_i| (1-based), with the rank computed in exact integers. It is always an observed value, and
with fewer than 1/(1-q) periods it is the maximum (p9999 of 5000 periods = max |e|). This is
numpy's method="inverted_cdf", except that numpy computes q*m in floating point and answers one
rank higher when q*m is an integer it cannot represent exactly (q=0.999, m=10000).

A percentile over periods some of which were not observed is an interval (docs/metrics.md,
"Percentiles of a blind run"): with m used periods and U unobserved ones (excluded periods plus
missed edges: each hides one true period), the nearest rank r = ceil(q (m + U)) over every true
period lies between the (r - U)-th smallest used |e| (the unobserved ones all perfect; 0 when
r <= U) and the r-th (all worse than any used one), which exists only while r <= m: past that
share of unobserved periods the percentile is unbounded and its upper bound is not stored.

The blind rule (which periods are excluded, how many edges were missed, how late an excluded
period provably was) lives in analysis.blind. drift_ppm is the slope of a least-squares fit of
t_k against the *true* edge index k + M_k (M_k: edges missed before k), over the edges not
stamped inside a blind span that matters, relative to T/2: lost edges do not bend the line.

Times may be in ticks finer than a nanosecond (a 1 ps VCD): pass `ticks_per_ns` and give
t_ns, period_ns, warmup_ns and blind in ticks; metrics in ns are converted at the end.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from jitterlab.analysis.blind import Exclusions, as_spans, exclusions
from jitterlab.model.errors import RunFailed
from jitterlab.model.reading import (
    COUNT,
    LOWER,
    MAX,
    MEDIAN,
    NONE,
    P50,
    P99,
    P999,
    P9999,
    RATIO,
    SIGNED,
    WORST,
)
from jitterlab.model.records import Metric

_QUANTILES = (  # name, q as an exact fraction num/den
    ("p50_rel_period_error", 1, 2),
    ("p99_rel_period_error", 99, 100),
    ("p999_rel_period_error", 999, 1000),
    ("p9999_rel_period_error", 9999, 10000),
)


@dataclass(frozen=True)
class PeriodSplit:
    """Every period after the warm-up, and whether the metrics use it (the blind rule)."""

    start_ns: np.ndarray  # t_i, int64
    end_ns: np.ndarray  # t_{i+2}, int64
    rel_error: np.ndarray  # e_i = (P_i - T)/T as observed (doubtful where not used)
    used: np.ndarray  # bool


def squarewave_metrics(
    t_ns: np.ndarray,
    level: np.ndarray,
    period_ns: int,
    *,
    warmup_ns: int,
    blind: np.ndarray | None = None,
    probe: str = "",
    ticks_per_ns: int = 1,
) -> list[Metric]:
    """All squarewave metrics of one observed edge series; RunFailed("unmeasurable") if none."""
    t, lev, period, first_ns = _analysed(t_ns, level, period_ns, warmup_ns)
    n = len(t)
    ex = _checked_exclusions(t, lev, blind, period)
    n_periods_all = n - 2
    m = n_periods_all - ex.excluded_periods
    if m == 0:
        raise RunFailed(
            f"unmeasurable: all {n_periods_all} periods touch a blind interval (the probe was "
            f"blind {ex.blind_time_ns} ns of {int(t[-1]) - int(t[0])} ns)",
            status="unmeasurable",
        )
    missed_total = int(ex.missed_cum[-1]) if len(ex.missed_cum) else 0
    # numba is imported on the first analysis (or by Squarewave.warm, beside the targets' preflight),
    # not with the plug-ins: it was 40 % of `jitterlab run`'s start-up
    from jitterlab.analysis import squarewave_scan as scan

    hist = np.zeros(scan.N_BUCKETS, dtype=np.int64)
    intervals = (ex.period_lo, ex.period_hi, ex.half_lo, ex.half_hi, ex.fit_lo, ex.fit_hi,
                 ex.missed_at, ex.missed_cum)
    segs = scan.segments(n, *intervals)
    first = scan.first_edges(*intervals[:1], *intervals[2:])
    center = (n - 1 + missed_total) / 2
    # room for the rare large deviations; a run with more takes one more pass
    tail = np.empty(max(4096, n >> 8), dtype=np.int64)
    ints, floats = scan.scan(t, period, segs, first, center, hist, tail)
    pmin, pmax, dmin, dmax, sum_dev, _, used_h, _, n_tail = (int(v) for v in ints)
    duty, _, sumsq, su, sxu = (float(v) for v in floats)
    if used_h and dmin < 0:
        raise RunFailed(
            "unmeasurable: the edge times go backwards (a half period of "
            f"{dmin} ns); the probe's clock or its log is broken", status="unmeasurable")
    fitted, sx, sxx = scan.fit_moments(segs, first, center)
    ranks = [(m * num + den - 1) // den for _, num, den in _QUANTILES]
    unobserved = ex.excluded_periods + ex.missed_edges
    bounds = percentile_bounds(m, unobserved)
    wanted = ranks + [r for pair in bounds for r in pair if r]
    values_at = dict(zip(wanted, scan.percentiles(t, period, ex.period_lo, ex.period_hi, hist,
                                                  wanted, tail, n_tail), strict=True))
    pct = [values_at[r] for r in ranks]

    half = period / 2
    mean_dev = sum_dev / m
    var = max(sumsq / m - mean_dev * mean_dev, 0.0)
    denom = sxx - sx * sx / fitted if fitted else 0.0
    drift = (sxu - sx * su / fitted) / denom / half * 1e6 if denom > 0 else 0.0
    max_err = max(pmax - period, period - pmin) / period
    bound = max(0.0, (ex.excluded_lower_bound_ns - period) / period)
    half_err = max(dmax - half, half - dmin) / half if used_h else 0.0
    tick = 1 / ticks_per_ns
    values = [
        ("max_rel_period_error", max_err, "ratio"),
        ("max_delay", (pmax - period) / period, "ratio"),
        ("max_early", (period - pmin) / period, "ratio"),
        *((name, v / period, "ratio") for (name, _, _), v in zip(_QUANTILES, pct, strict=True)),
        ("mean_period_ns", (period + mean_dev) * tick, "ns"),
        ("std_period_ns", math.sqrt(var) * tick, "ns"),
        ("min_period_ns", pmin * tick, "ns"),
        ("max_period_ns", pmax * tick, "ns"),
        ("max_half_period_error", half_err, "ratio"),
        ("max_duty_error", duty, "ratio"),
        ("drift_ppm", drift, "ppm"),
        ("n_edges", n, "count"),
        ("n_periods", m, "count"),
        ("excluded_periods", ex.excluded_periods, "count"),
        ("missed_edges", ex.missed_edges, "count"),
        ("blind_time_ns", ex.blind_time_ns * tick, "ns"),
        ("warmup_ns", (int(t[0]) - first_ns) * tick, "ns"),
        ("max_rel_period_error_excluded_lower_bound", bound, "ratio"),
        ("max_rel_period_error_bound", max(max_err, bound), "ratio"),
        ("unobserved_periods", unobserved, "count"),
        *_bound_values(bounds, values_at, period),
    ]
    if unobserved == 0:  # every true period was measured: the maximum is known, not only bounded
        values.append(("max_rel_period_error_upper_bound", max_err, "ratio"))
    out = [Metric(name, float(value), unit, probe, *_reading(name)) for name, value, unit in values]
    blind = float(ex.excluded_periods > 0)
    out.append(Metric("max_is_lower_bound", blind, "flag", probe, NONE, WORST, COUNT))
    return out


# how each metric is read across runs (model.reading): direction, summary, scale, stat
_READINGS: dict[str, tuple[str, str, str, str]] = {
    "max_rel_period_error": (LOWER, WORST, RATIO, MAX),
    # signed: when every period is late, the earliest is late too and max_early is negative
    "max_delay": (LOWER, WORST, SIGNED, MAX),
    "max_early": (LOWER, WORST, SIGNED, MAX),
    **{name: (LOWER, MEDIAN, RATIO, stat) for (name, _, _), stat in zip(_QUANTILES, (P50, P99, P999, P9999),
                                                                       strict=True)},
    "mean_period_ns": (NONE, MEDIAN, RATIO, ""),
    "std_period_ns": (LOWER, MEDIAN, RATIO, ""),
    "min_period_ns": (NONE, WORST, RATIO, ""),
    "max_period_ns": (NONE, WORST, RATIO, MAX),
    "max_half_period_error": (LOWER, WORST, RATIO, ""),
    "max_duty_error": (LOWER, WORST, RATIO, ""),
    "drift_ppm": (NONE, MEDIAN, SIGNED, ""),
    "n_edges": (NONE, MEDIAN, COUNT, ""),
    "n_periods": (NONE, MEDIAN, COUNT, ""),
    "excluded_periods": (LOWER, WORST, COUNT, ""),
    "missed_edges": (LOWER, WORST, COUNT, ""),
    "blind_time_ns": (LOWER, WORST, COUNT, ""),  # a duration that is 0 in a run the probe always saw
    "warmup_ns": (NONE, MEDIAN, RATIO, ""),
    "unobserved_periods": (LOWER, WORST, COUNT, ""),
}
_BOUND = (LOWER, WORST, COUNT, "")  # a bound on a statistic: read for its worst, and it may be 0
_PERCENTILE_FLOOR = (LOWER, MEDIAN, COUNT, "")  # the least a blind run's percentile can be: typical
# every name squarewave_metrics can give (a run may lack the bounds that do not exist for it), and
# excluded_seen_by_self's: what a benchmark declares before measuring (tests hold them to the code)
METRIC_NAMES: tuple[str, ...] = (
    *_READINGS,
    "max_rel_period_error_excluded_lower_bound", "max_rel_period_error_bound",
    *(f"{name}_{side}_bound" for name, _, _ in _QUANTILES for side in ("lower", "upper")),
    "max_rel_period_error_upper_bound", "max_is_lower_bound",
)
EXCLUDED_SELF_NAMES = ("excluded_self_periods", "excluded_self_max_rel_period_error",
                       "max_rel_period_error_incl_excluded_self")


def _reading(name: str) -> tuple[str, str, str, str]:
    if name.startswith("p") and name.endswith("_lower_bound"):
        return _PERCENTILE_FLOOR
    return _READINGS.get(name, _BOUND)


def percentile_bounds(used: int, unobserved: int) -> list[tuple[int, int | None]]:
    """Per quantile of _QUANTILES, the ranks among the used periods (1-based) that bound its value
    over all used + unobserved periods: (lower, upper). lower 0: the bound is 0 (the unobserved
    periods may all be perfect and fill the rank); upper None: unbounded (they may all be worse
    than any used period and reach past the rank)."""
    total = used + unobserved
    out = []
    for _, num, den in _QUANTILES:
        rank = (total * num + den - 1) // den  # nearest rank over every true period
        out.append((max(rank - unobserved, 0), rank if rank <= used else None))
    return out


def _bound_values(bounds: list[tuple[int, int | None]], values_at: dict[int, int],
                  period: int) -> list[tuple[str, float, str]]:
    """(name, value, unit) of each percentile's lower bound and, where it exists, upper bound."""
    out = []
    for (name, _, _), (lower, upper) in zip(_QUANTILES, bounds, strict=True):
        out.append((f"{name}_lower_bound", values_at[lower] / period if lower else 0.0, "ratio"))
        if upper is not None:  # an unbounded percentile is not stored: no number is true
            out.append((f"{name}_upper_bound", values_at[upper] / period, "ratio"))
    return out


def period_split(
    t_ns: np.ndarray,
    level: np.ndarray,
    period_ns: int,
    *,
    warmup_ns: int,
    blind: np.ndarray | None = None,
) -> PeriodSplit:
    """The periods squarewave_metrics uses and those it excludes, under exactly its rules."""
    t, lev, period, _ = _analysed(t_ns, level, period_ns, warmup_ns)
    ex = _checked_exclusions(t, lev, blind, period)
    used = np.ones(len(t) - 2, dtype=bool)
    for lo, hi in zip(ex.period_lo, ex.period_hi, strict=True):  # one step per merged interval
        used[lo:hi] = False
    return PeriodSplit(t[:-2], t[2:], (t[2:] - t[:-2] - period) / period, used)


def excluded_seen_by_self(
    split: PeriodSplit, self_t_ns: np.ndarray, period_ns: int, *, probe: str
) -> list[Metric]:
    """What the program's own timestamps say about the periods the independent probe excluded.

    `split` is period_split() of the independent probe (e.g. vpin) and `self_t_ns` the edges
    the program logged in the same run, on the same clock. A self period [s_j, s_{j+2}] covers
    the excluded ones when it touches (endpoints included) any excluded period [t_i, t_{i+2}].
    Metrics (under `probe`, names marked _self): excluded_self_periods (how many self periods
    cover them), excluded_self_max_rel_period_error (their max |e|, per the program's clock)
    and max_rel_period_error_incl_excluded_self = max(the probe's own max |e| over its used
    periods, that figure). The two maxima are left out when no self period covers them.
    """
    period = int(period_ns)
    used_max = float(np.abs(split.rel_error[split.used]).max()) if split.used.any() else 0.0
    s = np.asarray(self_t_ns, dtype=np.int64)
    lo, hi = split.start_ns[~split.used], split.end_ns[~split.used]
    if len(lo) == 0 or len(s) < 3:
        count, worst = 0, None
    else:
        # self period j touches [lo, hi] iff s_j <= hi and s_{j+2} >= lo
        first = np.searchsorted(s[2:], lo, side="left")  # first j with s_{j+2} >= lo
        last = np.searchsorted(s[:-2], hi, side="right")  # j < last: s_j <= hi
        covered = np.zeros(len(s) - 1, dtype=np.int64)
        np.add.at(covered, first, 1)
        np.add.at(covered, np.maximum(last, first), -1)
        touch = np.cumsum(covered)[: len(s) - 2] > 0
        count = int(touch.sum())
        dev = np.abs(s[2:][touch] - s[:-2][touch] - period)
        worst = float(dev.max()) / period if count else None
    out = [Metric("excluded_self_periods", float(count), "count", probe)]
    if worst is not None:
        out += [Metric("excluded_self_max_rel_period_error", worst, "ratio", probe),
                Metric("max_rel_period_error_incl_excluded_self", max(used_max, worst), "ratio",
                       probe)]
    elif len(lo) == 0:
        out.append(Metric("max_rel_period_error_incl_excluded_self", used_max, "ratio", probe))
    return out


def _analysed(t_ns: np.ndarray, level: np.ndarray, period_ns: int,
              warmup_ns: int) -> tuple[np.ndarray, np.ndarray, int, int]:
    """The edges after the warm-up (at least 3), their levels, the period and the first edge."""
    t_all = np.ascontiguousarray(t_ns, dtype=np.int64)
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
    if len(t) < 3:
        raise RunFailed(
            f"unmeasurable: {len(t)} edges remain after the {warmup_cut_ns} ns warm-up "
            f"({len(t_all)} edges recorded over {int(t_all[-1]) - first_ns} ns; at least 3 are "
            "needed); run longer or use a shorter period",
            status="unmeasurable",
        )
    return t, level_all[k0:], period, first_ns


def _checked_exclusions(t: np.ndarray, level: np.ndarray, blind: np.ndarray | None,
                        period: int) -> Exclusions:
    """The blind rule's effects; a level that repeats outside every span is unmeasurable."""
    ex = exclusions(t, level, as_spans(blind), period)
    same = np.flatnonzero(level[1:] == level[:-1])  # half period j joins two equal levels
    if len(same):
        # the interval that could hold j is the first whose end lies beyond j
        k = np.searchsorted(ex.half_hi, same, side="right")
        lo = np.append(ex.half_lo, np.iinfo(np.int64).max)
        bad = same[lo[k] > same]
        if len(bad):
            raise RunFailed(
                f"unmeasurable: the level does not alternate at {len(bad)} of {len(level)} "
                f"analysed edges (first at analysed edge {int(bad[0]) + 1}); the probe lost "
                "edges without reporting a blind interval",
                status="unmeasurable",
            )
    return ex
