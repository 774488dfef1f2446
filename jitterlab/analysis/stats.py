"""The statistics of a comparison: a test chosen by sample size and data, the effect with its
confidence interval, Holm's adjustment for many tests, and a hierarchical bootstrap for
distributions pooled over runs. Why these tests: docs/reports.md ("How compare decides")."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats as sps

ALPHA = 0.05
LARGE_GROUP = 8  # from this many runs in both groups on, Mann-Whitney U instead of Welch's t
N_BOOTSTRAP = 2000
WELCH_LOG, WELCH, MANN_WHITNEY, BOOTSTRAP, NO_TEST = (
    "welch-t on log values", "welch-t", "mann-whitney-u", "hierarchical bootstrap", "none")
GEOMETRIC, MEANS, MEDIANS = "ratio of geometric means", "ratio of means", "ratio of medians"
# the statistic of each group whose ratio an effect is: a row shows these values beside the change
STATISTIC = {GEOMETRIC: "geometric mean", MEANS: "mean", MEDIANS: "median"}


@dataclass(frozen=True)
class Effect:
    """The estimate of how the candidate differs (ratio candidate / baseline) with its 95 % CI,
    the test that judged it and its two-sided p-value; `sign` is +1, -1 or 0 (which way it moved).
    `baseline`/`candidate` are each group's `statistic`, the one whose ratio `ratio` is, so that
    the values shown and the change shown are always the same statistic."""

    test: str
    effect: str
    ratio: float
    ci_low: float
    ci_high: float
    p_value: float
    sign: int
    baseline: float = math.nan
    candidate: float = math.nan
    statistic: str = ""


def _ratio(num: float, den: float) -> float:
    if den == 0:
        return 1.0 if num == 0 else math.copysign(math.inf, num)
    return num / den


def per_run_effect(a: np.ndarray, b: np.ndarray, rng: np.random.Generator,
                   n_bootstrap: int = N_BOOTSTRAP) -> Effect:
    """Compare two groups of per-run values (one number per run).

    Small groups (fewer than LARGE_GROUP runs in either): Welch's t-test, on log values when every
    value is positive (timing errors and latencies are multiplicative: a change is a factor), else
    on the values; the CI is Welch's, so it excludes 1 exactly when p < 0.05. Larger groups: the
    Mann-Whitney U test (no distribution assumed) with a bootstrap CI of the ratio of medians.
    """
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    med_a, med_b = float(np.median(a)), float(np.median(b))
    if len(a) < 2 or len(b) < 2:
        ratio = _ratio(med_b, med_a)
        return Effect(NO_TEST, MEDIANS, ratio, math.nan, math.nan, math.nan, _sign(ratio - 1),
                      med_a, med_b, STATISTIC[MEDIANS])
    if min(len(a), len(b)) >= LARGE_GROUP:
        lo, hi = bootstrap_ratio_ci(a, b, rng, n_bootstrap)
        return Effect(MANN_WHITNEY, MEDIANS, _ratio(med_b, med_a), lo, hi, mann_whitney_p(a, b),
                      _sign(med_b - med_a), med_a, med_b, STATISTIC[MEDIANS])
    if (a > 0).all() and (b > 0).all():
        la, lb = np.log(a), np.log(b)
        diff, lo, hi, p = welch(la, lb)
        return Effect(WELCH_LOG, GEOMETRIC, math.exp(diff), math.exp(lo), math.exp(hi), p, _sign(diff),
                      geometric_mean(a), geometric_mean(b), STATISTIC[GEOMETRIC])
    diff, lo, hi, p = welch(a, b)
    base = float(a.mean())
    if base > 0:
        ratio, r_lo, r_hi = 1 + diff / base, 1 + lo / base, 1 + hi / base
    elif base == 0 and float(b.mean()) == 0 and lo == hi == 0:  # zero in every run of both: equal
        ratio, r_lo, r_hi = 1.0, 1.0, 1.0
    else:  # a zero (or negative) baseline has no meaningful ratio; the sign and p still do
        ratio, r_lo, r_hi = _ratio(float(b.mean()), base), math.nan, math.nan
    return Effect(WELCH, MEANS, ratio, r_lo, r_hi, p, _sign(diff), base, float(b.mean()), STATISTIC[MEANS])


def geometric_mean(values: np.ndarray) -> float:
    """The geometric mean of positive values, relative to the first so that equal values give
    exactly that value (41007000, not 41006999.99999999)."""
    first = float(values[0])
    return first * math.exp(float(np.log(values / first).mean()))


def _sign(x: float) -> int:
    return 0 if x == 0 or math.isnan(x) else (1 if x > 0 else -1)


def welch(a: np.ndarray, b: np.ndarray) -> tuple[float, float, float, float]:
    """Welch's unequal-variance t-test of mean(b) - mean(a): (difference, 95 % CI low, high,
    two-sided p). Two groups without any spread are equal (p = 1) or completely apart (p = 0)."""
    diff = float(b.mean() - a.mean())
    va, vb = float(a.var(ddof=1)) / len(a), float(b.var(ddof=1)) / len(b)
    se2 = va + vb
    if se2 == 0 or se2 <= 1e-24 * max(diff * diff, 1e-300):
        return diff, diff, diff, (1.0 if diff == 0 else 0.0)
    se = math.sqrt(se2)
    df = se2 * se2 / (va * va / (len(a) - 1) + vb * vb / (len(b) - 1))
    t = diff / se
    p = float(2 * sps.t.sf(abs(t), df))
    half = float(sps.t.ppf(1 - ALPHA / 2, df)) * se
    return diff, diff - half, diff + half, p


def mann_whitney_p(a: np.ndarray, b: np.ndarray) -> float:
    """Two-sided Mann-Whitney U p-value; 1.0 when the groups cannot be told apart at all."""
    if len(a) == 0 or len(b) == 0 or np.all(np.concatenate([a, b]) == a[0]):
        return 1.0
    p = float(sps.mannwhitneyu(a, b, alternative="two-sided").pvalue)
    return 1.0 if math.isnan(p) else p


def bootstrap_ratio_ci(a: np.ndarray, b: np.ndarray, rng: np.random.Generator,
                       n: int = N_BOOTSTRAP) -> tuple[float, float]:
    """Percentile bootstrap 95 % CI of median(b) / median(a); all resamples in one array op."""
    med_a = np.median(a[rng.integers(0, len(a), (n, len(a)))], axis=1)
    med_b = np.median(b[rng.integers(0, len(b), (n, len(b)))], axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = np.where(med_a == 0, np.where(med_b == 0, 1.0, np.inf), med_b / med_a)
    lo, hi = np.quantile(ratios, [0.025, 0.975], method="inverted_cdf")  # inf-safe
    return float(lo), float(hi)


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


def pooled_stat(values: np.ndarray, counts: np.ndarray, stat: str) -> float:
    """p99 (the smallest value with 99 % of the samples at or below it) or max of a distribution."""
    order = np.argsort(values, kind="stable")
    values, counts = np.asarray(values, np.float64)[order], np.asarray(counts, np.int64)[order]
    if stat == "max":
        return float(values[-1])
    cum = np.cumsum(counts)
    return float(values[np.searchsorted(cum, 0.99 * cum[-1], side="left")])


STATS = ("p99", "max")


def _resampled_stats(runs: list[np.ndarray], rng: np.random.Generator, n: int,
                     chunk: int = 100) -> dict[str, np.ndarray]:
    """p99 and max of n hierarchical resamples: the runs drawn with replacement, then the samples
    within each drawn run. A run drawn c times gives each of its samples a Poisson(c) weight (the
    Poisson bootstrap), so every resample is one row of weights over the sorted pooled values."""
    values = np.concatenate(runs)
    owner = np.concatenate([np.full(len(r), j) for j, r in enumerate(runs)])
    order = np.argsort(values, kind="stable")
    values, owner = values[order], owner[order]
    k = len(runs)
    out = {s: np.empty(n) for s in STATS}
    for start in range(0, n, chunk):
        m = min(chunk, n - start)
        picks = rng.multinomial(k, np.full(k, 1 / k), size=m)  # times each run is drawn
        weights = rng.poisson(picks[:, owner])
        empty = weights.sum(axis=1) == 0
        weights[empty, -1] = 1  # a resample needs a sample; vanishingly rare with runs of 1000s
        cum = np.cumsum(weights, axis=1)
        at_p99 = np.argmax(cum >= 0.99 * cum[:, -1:], axis=1)
        at_max = weights.shape[1] - 1 - np.argmax(weights[:, ::-1] > 0, axis=1)
        out["p99"][start:start + m] = values[at_p99]
        out["max"][start:start + m] = values[at_max]
    return out


def pooled_effects(a_runs: list[tuple[np.ndarray, np.ndarray]], b_runs: list[tuple[np.ndarray, np.ndarray]],
                   rng: np.random.Generator, n_bootstrap: int = 400
                   ) -> dict[str, tuple[float, float, Effect]]:
    """For p99 and max of all samples of each group (runs given as (value, count)): (baseline's,
    candidate's, the effect): the ratio, and a CI and p-value from the spread of a hierarchical
    bootstrap of each group (runs, then samples within runs), so that run-to-run variation counts
    and one long run does not pass for many. A bootstrap over k runs sees (k-1)/k of their
    variance, and its percentiles are far too narrow at 3 runs: the log-ratio is judged with a
    Welch t on the bootstrap variances, corrected by k/(k-1), with k-1 degrees of freedom each."""
    def pooled(runs, stat):
        return pooled_stat(np.concatenate([v for v, _ in runs]), np.concatenate([c for _, c in runs]), stat)

    ka, kb = len(a_runs), len(b_runs)
    boot_a = _resampled_stats([thin(v, c) for v, c in a_runs], rng, n_bootstrap)
    boot_b = _resampled_stats([thin(v, c) for v, c in b_runs], rng, n_bootstrap)
    out = {}
    for stat in STATS:
        sa, sb = pooled(a_runs, stat), pooled(b_runs, stat)
        lo = hi = p = math.nan
        if min(ka, kb) >= 2 and sa > 0 and sb > 0 and (boot_a[stat] > 0).all() and (boot_b[stat] > 0).all():
            va = float(np.log(boot_a[stat]).var()) * ka / (ka - 1)
            vb = float(np.log(boot_b[stat]).var()) * kb / (kb - 1)
            diff = math.log(sb / sa)
            if va + vb > 0:
                se = math.sqrt(va + vb)
                df = min(ka, kb) - 1  # conservative: the bootstrap variance is itself uncertain
                p = float(2 * sps.t.sf(abs(diff) / se, df))
                half = float(sps.t.ppf(1 - ALPHA / 2, df)) * se
                lo, hi = math.exp(diff - half), math.exp(diff + half)
            else:
                lo = hi = math.exp(diff)
                p = 1.0 if diff == 0 else 0.0
        out[stat] = (sa, sb, Effect(BOOTSTRAP, f"ratio of pooled {stat}", _ratio(sb, sa), lo, hi, p,
                                    _sign(sb - sa), sa, sb, f"pooled {stat}"))
    return out
