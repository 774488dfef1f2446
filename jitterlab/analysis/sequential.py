"""Verdicts that stay honest however often you look: a group-sequential design with alpha spending.

Every comparison of two groups is treated as one look of a sequence that may go on: `compare` run
again after more repetitions, `summary` after every campaign, `run --until-decided` after every
round. Testing each look at 5 % gives a false better/worse more chances with every look (15 % of
loops on unchanged groups, bench/until_decided.py). Here the 5 % are *spent* over the looks instead
(Lan & DeMets 1983): by the balanced-equivalent run count n (runs per group; unequal groups count
as n = 2 / (1/n_a + 1/n_b), which carries the same information), alpha(n) of them are spent:

    alpha(n) = ALPHA * (REFERENCE_SHARE * min(n, REFERENCE_RUNS) / REFERENCE_RUNS
                        + (1 - REFERENCE_SHARE) * max(0, 1 - REFERENCE_RUNS / n))

linear in information up to the default loop's bound of 13 runs per group (3 + 10 extra), with a
tenth kept for whoever goes on beyond it, so the total never exceeds ALPHA however many looks come.
The design has a look at every run count from MIN_RUNS on (what the loop does: one run per group
per round); the boundary c(n) that |z| must reach at n is computed so that the chance of crossing
at any look up to n, with no change, is alpha(n) (the recursive integration of Armitage, McPherson
& Rowe 1969, as in Jennison & Turnbull 2000, ch. 19). Looking less often than the design only
makes a verdict more careful. A Welch t (or a bootstrap t) is put on the z scale through its
p-value, the "significance level" approach of Jennison & Turnbull ch. 11 for small groups.

From the boundaries: the sequential p-value of a look (the smallest level whose boundary |z|
reaches; Holm's adjustment over the tested rows uses these), the repeated confidence interval
(Jennison & Turnbull ch. 9: 95 % however often you look) and the equivalence test: "same" when the
repeated interval at level 2 * ALPHA lies inside the practical threshold (two one-sided tests,
Schuirmann 1987, each at ALPHA). Why this rule and what it costs: docs/reports.md.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache

import numpy as np

ALPHA = 0.05
MIN_RUNS = 3  # per group: the design's first look
REFERENCE_RUNS = 13  # runs per group by which REFERENCE_SHARE of ALPHA is spent: 3 + the default 10 extra
REFERENCE_SHARE = 0.9
GUARANTEE = "false better/worse ≤ 5 % however often you look"
_GRID = 97  # points of the integration grid per look (odd: Simpson's rule); J&T ch. 19 use ~12r
_LEVELS = np.unique(np.concatenate([np.logspace(-10, 0, 21), [ALPHA, 2 * ALPHA]]))  # sequential p-values
_ROOT_2PI = math.sqrt(2 * math.pi)


def spent(n: float, alpha: float = ALPHA) -> float:
    """The share of `alpha` spent by the look at n balanced-equivalent runs per group."""
    inside = REFERENCE_SHARE * min(n, REFERENCE_RUNS) / REFERENCE_RUNS
    beyond = (1 - REFERENCE_SHARE) * max(0.0, 1 - REFERENCE_RUNS / n)
    return alpha * (inside + beyond)


def balanced_runs(n_a: float, n_b: float) -> float:
    """The runs per group of two equal groups that carry the information of n_a and n_b runs."""
    return 2.0 / (1.0 / n_a + 1.0 / n_b)


class _Design:
    """Boundaries of the design for every level in _LEVELS at once, look by look (integer n from
    MIN_RUNS on), with the sub-density of the score S = z * sqrt(n) that has crossed no boundary."""

    def __init__(self) -> None:
        self.bounds: list[np.ndarray] = []  # look n = MIN_RUNS + i: c for each level
        self._states: list[tuple[np.ndarray, np.ndarray]] = []  # (grid, sub-density) after each look

    def upto(self, n: int) -> None:
        while MIN_RUNS + len(self.bounds) <= n:
            look = MIN_RUNS + len(self.bounds)
            before = self._states[-1] if self._states else None
            c = _next_bound(before, look - 1, look, _LEVELS)
            self.bounds.append(c)
            self._states.append(_after(before, look - 1, look, c))

    def at(self, n_eff: float) -> np.ndarray:
        """Boundaries (per level) of a look at n_eff runs per group: a look of the design, or one
        between two of its looks (unequal groups) after the looks before it."""
        below = math.floor(n_eff)
        self.upto(below)
        if n_eff == below:
            return self.bounds[below - MIN_RUNS]
        return _next_bound(self._states[below - MIN_RUNS], below, n_eff, _LEVELS)


def _next_bound(before: tuple[np.ndarray, np.ndarray] | None, n_before: float, n: float,
                levels: np.ndarray) -> np.ndarray:
    """Per level, the boundary at n whose crossing probability (from what crossed nothing up to
    n_before) is what the level's spending adds between the two looks."""
    from scipy import stats as sps  # loaded when a comparison is computed, not with the module

    first = before is None
    increment = np.array([spent(n, a) - (0.0 if first else spent(n_before, a)) for a in levels])
    if before is None:
        return sps.norm.isf(np.minimum(increment, 1.0) / 2)
    return _solve(*before, n - n_before, n, increment)


def _grid(c: np.ndarray, n: float) -> np.ndarray:
    return np.linspace(-1.0, 1.0, _GRID)[None, :] * (np.minimum(c, 12.0) * math.sqrt(n))[:, None]


def _after(before: tuple[np.ndarray, np.ndarray] | None, n_before: float, n: float,
           c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The grid and sub-density of the score at n inside the boundaries c."""
    from scipy import stats as sps  # loaded when a comparison is computed, not with the module

    y = _grid(c, n)
    if before is None:
        return y, sps.norm.pdf(y, scale=math.sqrt(n))
    return y, _moved(*before, y, n - n_before)


def crossing(informations: list[float], bounds: list[float]) -> float:
    """The chance, with no change, that |z| reaches its boundary at any of these looks (information
    levels increasing, any unit): the design's false-verdict rate, for a check on known designs."""
    from scipy import stats as sps  # loaded when a comparison is computed, not with the module

    x = f = None
    total = 0.0
    previous = 0.0
    for info, c in zip(informations, bounds, strict=True):
        c_arr = np.array([float(c)])
        if x is None:
            total += float(2 * sps.norm.sf(c))
            x, f = _grid(c_arr, info), sps.norm.pdf(_grid(c_arr, info), scale=math.sqrt(info))
        else:
            mass = _weights(x) * f
            sd, b = math.sqrt(info - previous), c * math.sqrt(info)
            total += float((mass * (sps.norm.sf((b - x) / sd) + sps.norm.cdf((-b - x) / sd))).sum())
            y = _grid(c_arr, info)
            x, f = y, _moved(x, f, y, info - previous)
        previous = info
    return total


def _weights(x: np.ndarray) -> np.ndarray:
    """Simpson's weights on each level's evenly spaced grid."""
    w = np.ones(x.shape[1])
    w[1:-1:2], w[2:-1:2] = 4.0, 2.0
    return w[None, :] * ((x[:, 1] - x[:, 0]) / 3.0)[:, None]


def _moved(x: np.ndarray, f: np.ndarray, y: np.ndarray, step: float) -> np.ndarray:
    """The sub-density at `y` after an increment of information `step` (independent, normal)."""
    mass = _weights(x) * f
    sd = math.sqrt(step)
    u = (y[:, :, None] - x[:, None, :]) / sd
    return np.einsum("li,lji->lj", mass, np.exp(-0.5 * u * u)) / (sd * _ROOT_2PI)


def _solve(x: np.ndarray, f: np.ndarray, step: float, n: float, increment: np.ndarray) -> np.ndarray:
    """Per level, the boundary c at information n whose crossing probability, from the sub-density
    (x, f) that has not crossed before, is `increment` (Newton's steps on all levels at once, kept
    inside a shrinking bracket)."""
    from scipy import stats as sps
    from scipy.special import ndtr

    mass = _weights(x) * f
    sd, root_n = math.sqrt(step), math.sqrt(n)
    lo, hi = np.zeros(len(increment)), np.full(len(increment), 40.0)
    c = np.clip(sps.norm.isf(np.minimum(increment, 1.0) / 2), 0.1, 39.0)  # as if the look stood alone
    for _ in range(40):
        upper, lower = (c[:, None] * root_n - x) / sd, (-c[:, None] * root_n - x) / sd
        excess = (mass * (ndtr(-upper) + ndtr(lower))).sum(axis=1) - increment
        slope = -(mass * (np.exp(-0.5 * upper ** 2) + np.exp(-0.5 * lower ** 2))).sum(axis=1) * (
            root_n / sd / _ROOT_2PI)
        lo, hi = np.where(excess > 0, c, lo), np.where(excess > 0, hi, c)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):  # a flat slope: bisect
            newton = c - excess / slope
        c_next = np.where((newton > lo) & (newton < hi), newton, (lo + hi) / 2)
        if np.all(np.abs(c_next - c) < 1e-10):
            return c_next
        c = c_next
    return c


@cache
def _design() -> _Design:
    return _Design()


def boundaries(n_eff: float) -> np.ndarray:
    """The boundary for |z| at a look with n_eff balanced-equivalent runs, for each of _LEVELS."""
    if n_eff < MIN_RUNS:
        raise ValueError(f"a look needs {MIN_RUNS} runs per group, not {n_eff}")
    return _design().at(n_eff)


@cache
def _cached(n_key: float) -> np.ndarray:
    return boundaries(n_key)


def boundary(n_eff: float, level: float = ALPHA) -> float:
    """c: |z| at or above it rejects "no change" at this look at `level` (ALPHA or 2 * ALPHA)."""
    c = _cached(round(n_eff, 6))
    return float(c[int(np.flatnonzero(np.isclose(_LEVELS, level))[0])])


def sequential_p(z: float, n_eff: float) -> float:
    """The smallest level whose boundary at this look |z| reaches (1.0 when none below 1 does)."""
    if not math.isfinite(z):
        return 1.0 if math.isnan(z) else float(_LEVELS[0])
    c = _cached(round(n_eff, 6))  # decreasing in the level
    z = abs(z)
    if z >= c[0]:
        return float(_LEVELS[0])
    if z <= c[-1]:
        return 1.0
    return float(np.exp(np.interp(-z, -c, np.log(_LEVELS))))


def z_of_t(t: float | np.ndarray, df: float | np.ndarray) -> np.ndarray:
    """A t statistic with `df` degrees of freedom on the z scale, by its two-sided p-value."""
    from scipy import stats as sps  # loaded when a comparison is computed, not with the module

    t, df = np.asarray(t, dtype=np.float64), np.asarray(df, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        z = np.where(np.isinf(t), np.inf, sps.norm.isf(sps.t.sf(np.abs(t), df)))
    return np.where(np.isnan(t), np.nan, z)


def t_of_z(z: float | np.ndarray, df: float | np.ndarray) -> np.ndarray:
    """The t quantile (df degrees of freedom) with the tail probability of the z quantile `z`."""
    from scipy import stats as sps  # loaded when a comparison is computed, not with the module

    return sps.t.isf(sps.norm.sf(np.asarray(z, dtype=np.float64)), np.asarray(df, dtype=np.float64))


@dataclass(frozen=True)
class Look:
    """One look at an estimate: `diff` on the analysis scale (a log ratio or a difference in the
    unit) with its standard error `se` and `df` degrees of freedom, at n_eff runs per group."""

    diff: float
    se: float
    df: float
    n_eff: float

    @property
    def z(self) -> float:
        if self.se == 0:
            return 0.0 if self.diff == 0 else math.copysign(math.inf, self.diff)
        return float(z_of_t(self.diff / self.se, self.df))

    def half_width(self, level: float = ALPHA) -> float:
        """Half the repeated confidence interval at `level` (95 % at ALPHA), on the analysis scale."""
        if self.se == 0:
            return 0.0
        return float(t_of_z(boundary(self.n_eff, level), self.df)) * self.se

    @property
    def p_sequential(self) -> float:
        return sequential_p(abs(self.z), self.n_eff)
