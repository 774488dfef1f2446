"""The group-sequential design of every verdict (analysis.sequential), on known answers: published
designs' crossing probabilities, an independent multivariate-normal computation, the spending it
was built to, and its sequential p-values and intervals."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps

from jitterlab.analysis import sequential as seq


def test_published_designs_cross_with_their_level():
    """Jennison & Turnbull (2000), tables 2.1 and 2.3: Pocock's constant 2.413 and O'Brien &
    Fleming's 2.040 * sqrt(K / k), five equally spaced looks, are two-sided 5 % designs."""
    looks = [1.0, 2.0, 3.0, 4.0, 5.0]
    assert seq.crossing(looks, [2.413] * 5) == pytest.approx(0.05, abs=2e-4)
    obf = [2.040 * math.sqrt(5 / k) for k in range(1, 6)]
    assert seq.crossing(looks, obf) == pytest.approx(0.05, abs=2e-4)
    assert seq.crossing([1.0], [1.959964]) == pytest.approx(0.05, abs=1e-6)  # one look: the usual test


def test_the_crossing_probability_agrees_with_the_multivariate_normal():
    """Three looks at information 3, 4 and 6: z's correlations are sqrt(I_j / I_k); one minus the
    probability of staying inside every boundary, as scipy integrates it."""
    info, bounds = np.array([3.0, 4.0, 6.0]), np.array([2.5, 2.4, 2.2])
    cov = np.sqrt(np.minimum.outer(info, info) / np.maximum.outer(info, info))
    inside = sps.multivariate_normal(np.zeros(3), cov, seed=1).cdf(bounds, lower_limit=-bounds)
    assert seq.crossing(list(info), list(bounds)) == pytest.approx(1 - inside, abs=2e-4)


def test_the_design_spends_exactly_its_alpha_by_every_look():
    looks = list(range(seq.MIN_RUNS, 21))
    bounds = [seq.boundary(n) for n in looks]
    for k in (1, 5, 11, len(looks)):
        assert seq.crossing(looks[:k], bounds[:k]) == pytest.approx(seq.spent(looks[k - 1]), abs=2e-5)
    assert seq.spent(13) == pytest.approx(0.045) and seq.spent(10**9) == pytest.approx(0.05, abs=1e-9)
    assert seq.spent(3) == pytest.approx(0.05 * 0.9 * 3 / 13)
    # the first look stands alone: its boundary is the z of the alpha it spends
    assert seq.boundary(3) == pytest.approx(sps.norm.isf(seq.spent(3) / 2), abs=1e-9)
    # however many looks come, nothing beyond ALPHA is ever spent
    assert all(seq.spent(n) < seq.ALPHA for n in (13, 100, 10**6))


def test_sequential_p_values_and_intervals():
    c = seq.boundary(5)
    assert seq.sequential_p(c, 5) == pytest.approx(seq.ALPHA, rel=1e-6)
    assert seq.sequential_p(c + 0.5, 5) < seq.ALPHA < seq.sequential_p(c - 0.5, 5)
    assert seq.sequential_p(0.0, 5) == 1.0 and seq.sequential_p(math.inf, 5) < 1e-9
    # a t on the z scale by its p-value: t = 2.776 with 4 degrees of freedom is p = 0.05, z = 1.96
    assert float(seq.z_of_t(2.7764451, 4)) == pytest.approx(1.959964, abs=1e-5)
    look = seq.Look(diff=0.1, se=0.05, df=8.0, n_eff=5.0)
    assert look.half_width() == pytest.approx(float(sps.t.isf(sps.norm.sf(c), 8)) * 0.05)
    assert look.half_width(2 * seq.ALPHA) < look.half_width()  # the 90 % interval of equivalence
    # unequal groups: 3 and 5 runs carry the information of 3.75 and 3.75 runs
    assert seq.balanced_runs(3, 5) == pytest.approx(3.75)
    assert seq.boundary(3.75) > seq.boundary(3)  # a look between two of the design's, after the first
