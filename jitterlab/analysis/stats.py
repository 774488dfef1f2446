"""The statistics of a comparison: the effect of a candidate group against a baseline on the scale
the metric declares (model.reading), tails from the samples of all runs of each group with a
hierarchical bootstrap, Holm's adjustment for many tests. What a look at these numbers decides is
analysis.sequential's and analysis.verdict's. Why these tests: docs/reports.md ("How compare
decides")."""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from jitterlab.model.reading import COUNT, QUANTILE_OF, RATIO, SIGNED

ALPHA = 0.05
N_BOOTSTRAP = 2000
WELCH_LOG, WELCH, BOOTSTRAP, NO_TEST, RESOLVED = (
    "welch-t on log values", "welch-t", "hierarchical bootstrap", "none", "none: within resolution")
GEOMETRIC, DIFFERENCE = "ratio of geometric means", "difference of means"
FLOAT_NOISE = 1e-9  # relative: values this close are one value computed two ways


@dataclass(frozen=True)
class Effect:
    """How the candidate differs from the baseline: `diff` on the analysis scale (the log of the
    ratio of geometric means or of pooled quantiles for RATIO; the difference of means in the
    metric's unit for COUNT and SIGNED) with its standard error `se` and `df` degrees of freedom;
    `p_value` is the two-sided p of this one look as if it were the only one. `baseline` and
    `candidate` are each group's `statistic`, the values whose ratio or difference `diff` is;
    `samples` the samples per group a pooled statistic was taken of (0: one value per run);
    `exact`: every value of both groups lies within the metric's resolution: no change at all."""

    test: str
    effect: str
    statistic: str
    scale: str
    baseline: float
    candidate: float
    diff: float
    se: float
    df: float
    p_value: float
    samples: tuple[int, int] = (0, 0)
    exact: bool = False

    @property
    def sign(self) -> int:
        return _sign(self.diff)


def _sign(x: float) -> int:
    return 0 if x == 0 or math.isnan(x) else (1 if x > 0 else -1)


def welch_arrays(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Welch's statistic of mean(b) - mean(a) along the last axis (runs), for many comparisons at
    once: (difference, standard error, degrees of freedom). No spread at all: se 0."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    na, nb = a.shape[-1], b.shape[-1]
    diff = b.mean(axis=-1) - a.mean(axis=-1)
    va, vb = a.var(axis=-1, ddof=1) / na, b.var(axis=-1, ddof=1) / nb
    se2 = va + vb
    with np.errstate(divide="ignore", invalid="ignore"):
        df = se2 * se2 / (va * va / (na - 1) + vb * vb / (nb - 1))
    tiny = (se2 == 0) | (se2 <= 1e-24 * np.maximum(diff * diff, 1e-300))
    return diff, np.where(tiny, 0.0, np.sqrt(se2)), np.where(tiny, np.inf, df)


def p_of(diff: float, se: float, df: float) -> float:
    """Two-sided p of a t statistic; no spread: 1 when equal, 0 when apart."""
    from scipy import stats as sps  # loaded when a test is computed, not with the module

    if se == 0:
        return 1.0 if diff == 0 else 0.0
    return float(2 * sps.t.sf(abs(diff) / se, df))


def within_resolution(values: np.ndarray, resolution: float) -> bool:
    """Whether every value lies within the metric's resolution of every other (or within
    floating-point noise): a spread no measurement can show."""
    spread = float(np.ptp(values)) if len(values) else 0.0
    return spread < resolution or spread <= FLOAT_NOISE * float(np.abs(values).max(initial=0.0))


def per_run_effect(a: np.ndarray, b: np.ndarray, scale: str, resolution: float = 0.0) -> Effect:
    """Compare two groups of per-run values (one number per run) on `scale` (model.reading).

    RATIO (values > 0): Welch's t on log values: the difference of their means is the log of the
    ratio of geometric means. COUNT and SIGNED, or any zero or negative value: Welch's t on the
    values: the difference of means. Fewer than 2 runs in a group: no test (se nan)."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if scale == RATIO and not ((a > 0).all() and (b > 0).all()):
        scale = COUNT if (a >= 0).all() and (b >= 0).all() else SIGNED
    exact = within_resolution(np.concatenate([a, b]), resolution)
    if scale == RATIO:
        base, cand = geometric_mean(a), geometric_mean(b)
        test, effect, statistic = WELCH_LOG, GEOMETRIC, "geometric mean"
        xa, xb = np.log(a), np.log(b)
    else:
        base, cand = float(a.mean()), float(b.mean())
        test, effect, statistic = WELCH, DIFFERENCE, "mean"
        xa, xb = a, b
    if exact:
        return Effect(RESOLVED, effect, statistic, scale, base, cand, 0.0, 0.0, math.inf, 1.0, exact=True)
    if len(a) < 2 or len(b) < 2:
        diff = float(xb.mean() - xa.mean())
        return Effect(NO_TEST, effect, statistic, scale, base, cand, diff, math.nan, math.nan, math.nan)
    diff, se, df = (float(v) for v in welch_arrays(xa, xb))
    return Effect(test, effect, statistic, scale, base, cand, diff, se, df, p_of(diff, se, df))


def geometric_mean(values: np.ndarray) -> float:
    """The geometric mean of positive values, relative to the first so that equal values give
    exactly that value (41007000, not 41006999.99999999)."""
    first = float(values[0])
    return first * math.exp(float(np.log(values / first).mean()))


def mann_whitney_p(a: np.ndarray, b: np.ndarray) -> float:
    """Two-sided Mann-Whitney U p-value; 1.0 when the groups cannot be told apart at all."""
    from scipy import stats as sps  # loaded when a test is computed, not with the module

    if len(a) == 0 or len(b) == 0 or np.all(np.concatenate([a, b]) == a[0]):
        return 1.0
    p = float(sps.mannwhitneyu(a, b, alternative="two-sided").pvalue)
    return 1.0 if math.isnan(p) else p


def holm(p_values: list[float]) -> list[float]:
    """Holm's step-down adjustment: reject where the adjusted p < alpha keeps the chance of any
    false verdict among these tests at alpha. NaN (no test) stays NaN and does not count."""
    finite = sorted((p, i) for i, p in enumerate(p_values) if not math.isnan(p))
    m = len(finite)
    out = [math.nan] * len(p_values)
    running = 0.0
    for rank, (p, i) in enumerate(finite):
        running = max(running, min(1.0, (m - rank) * p))
        out[i] = running
    return out


# --- distributions pooled over runs ----------------------------------------------------------

THIN_TO = 1000  # order statistics kept per run for the bootstrap (the maximum always among them)
TAIL_SAMPLES = 10  # a pooled quantile q needs this many samples beyond it: 10 / (1 - q) per group


def thin(values: np.ndarray, counts: np.ndarray, m: int = THIN_TO) -> np.ndarray:
    """A run's distribution as at most `m` evenly spaced order statistics, sorted, the largest
    value always included: the shape (p99, max) is kept, the bootstrap stays cheap."""
    order = np.argsort(values, kind="stable")
    values, counts = np.asarray(values, np.float64)[order], np.asarray(counts, np.int64)[order]
    n = int(counts.sum())
    if n <= m:
        return np.repeat(values, counts)
    ranks = np.floor((np.arange(m) + 1) * n / m).astype(np.int64) - 1  # last rank is n - 1
    return values[np.searchsorted(np.cumsum(counts), ranks, side="right")]


def pooled_stat(values: np.ndarray, counts: np.ndarray, q: float) -> float:
    """The quantile q of a distribution given as (value, count): the smallest value with a share q
    of the samples at or below it (q = 1: the maximum)."""
    order = np.argsort(values, kind="stable")
    values, counts = np.asarray(values, np.float64)[order], np.asarray(counts, np.int64)[order]
    cum = np.cumsum(counts)
    return float(values[np.searchsorted(cum, q * cum[-1], side="left")])


def needed_samples(q: float) -> int:
    """Samples per group a pooled quantile q stands on: TAIL_SAMPLES beyond it, in exact arithmetic
    on the decimal q is written as (0.9999: 100,000; in floating point 1 - q is a hair short of
    1e-4 and the count rounds up to 100,001)."""
    return math.ceil(TAIL_SAMPLES / (1 - Fraction(str(q))))


def _resampled(runs: list[np.ndarray], rng: np.random.Generator, n: int, q: float,
               chunk: int = 100) -> np.ndarray:
    """The quantile q of n hierarchical resamples: the runs drawn with replacement, then the samples
    within each drawn run. A run drawn c times gives each of its samples a Poisson(c) weight (the
    Poisson bootstrap), so every resample is one row of weights over the sorted pooled values."""
    values = np.concatenate(runs)
    owner = np.concatenate([np.full(len(r), j) for j, r in enumerate(runs)])
    order = np.argsort(values, kind="stable")
    values, owner = values[order], owner[order]
    k = len(runs)
    out = np.empty(n)
    for start in range(0, n, chunk):
        m = min(chunk, n - start)
        picks = rng.multinomial(k, np.full(k, 1 / k), size=m)  # times each run is drawn
        weights = rng.poisson(picks[:, owner])
        empty = weights.sum(axis=1) == 0
        weights[empty, -1] = 1  # a resample needs a sample; vanishingly rare with runs of 1000s
        cum = np.cumsum(weights, axis=1)
        out[start:start + m] = values[np.argmax(cum >= q * cum[:, -1:], axis=1)]
    return out


def pooled_effect(a_runs: list[tuple[np.ndarray, np.ndarray]], b_runs: list[tuple[np.ndarray, np.ndarray]],
                  stat: str, rng: np.random.Generator, n_bootstrap: int = 400) -> Effect:
    """The quantile `stat` (model.reading: p99, p99.9, ...) of all samples of each group (runs
    given as (value, count)), compared as a log ratio whose variance is that of a hierarchical
    bootstrap of each group (runs, then samples within runs), so that run-to-run variation counts
    and one long run does not pass for many. A bootstrap over k runs sees (k-1)/k of their variance
    and its percentiles are far too narrow at 3 runs: the log ratio is judged with a t on the
    bootstrap variances, each corrected by k/(k-1), with the smaller group's k-1 degrees of freedom."""
    q = QUANTILE_OF[stat]
    ka, kb = len(a_runs), len(b_runs)
    sa = pooled_stat(np.concatenate([v for v, _ in a_runs]), np.concatenate([c for _, c in a_runs]), q)
    sb = pooled_stat(np.concatenate([v for v, _ in b_runs]), np.concatenate([c for _, c in b_runs]), q)
    samples = (int(sum(c.sum() for _, c in a_runs)), int(sum(c.sum() for _, c in b_runs)))
    name = f"pooled {stat}"
    if not (sa > 0 and sb > 0) or min(ka, kb) < 2:
        diff = math.log(sb / sa) if sa > 0 and sb > 0 else math.nan
        return Effect(NO_TEST, f"ratio of {name}", name, RATIO, sa, sb, diff, math.nan, math.nan, math.nan,
                      samples)
    boot_a = _resampled([thin(v, c) for v, c in a_runs], rng, n_bootstrap, q)
    boot_b = _resampled([thin(v, c) for v, c in b_runs], rng, n_bootstrap, q)
    diff = math.log(sb / sa)
    if not ((boot_a > 0).all() and (boot_b > 0).all()):
        return Effect(NO_TEST, f"ratio of {name}", name, RATIO, sa, sb, diff, math.nan, math.nan, math.nan,
                      samples)
    va = float(np.log(boot_a).var()) * ka / (ka - 1)
    vb = float(np.log(boot_b).var()) * kb / (kb - 1)
    se = math.sqrt(va + vb)
    # each bootstrap variance stands on its group's runs: Welch-Satterthwaite's degrees of freedom
    df = (va + vb) ** 2 / (va * va / (ka - 1) + vb * vb / (kb - 1)) if va + vb > 0 else math.inf
    return Effect(BOOTSTRAP, f"ratio of {name}", name, RATIO, sa, sb, diff, se, df, p_of(diff, se, df),
                  samples)
