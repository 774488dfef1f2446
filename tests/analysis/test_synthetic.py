"""The synthetic generators produce exactly the waves they promise."""

from __future__ import annotations

import numpy as np
import pytest

from jitterlab.analysis.synthetic import blind_intervals, observe, square_wave


def test_perfect_wave_is_an_exact_grid():
    t, level = square_wave(1_000, 6, start_ns=10)
    assert t.dtype == np.int64 and level.dtype == np.uint8
    assert list(t) == [10, 510, 1010, 1510, 2010, 2510]
    assert list(level) == [1, 0, 1, 0, 1, 0]
    assert list(square_wave(1_000, 3, first_level=0)[1]) == [0, 1, 0]


def test_delays_move_single_edges():
    t, _ = square_wave(1_000, 5, start_ns=0, delays={2: 30, 3: -20})
    assert list(t) == [0, 500, 1030, 1480, 2000]


def test_integer_drift_is_exact():
    t, _ = square_wave(1_000_000, 4, start_ns=0, drift_ppm=10.0)
    assert list(np.diff(t)) == [500_005] * 3


def test_jitter_is_seeded_and_bounded():
    a, _ = square_wave(1_000_000, 1_000, jitter_ns=3_000, seed=1)
    b, _ = square_wave(1_000_000, 1_000, jitter_ns=3_000, seed=1)
    c, _ = square_wave(1_000_000, 1_000, jitter_ns=3_000, seed=2)
    assert np.array_equal(a, b) and not np.array_equal(a, c)
    residual = a - square_wave(1_000_000, 1_000)[0]
    assert 2_000 < residual.std() < 4_000


def test_outliers_delay_a_fraction_of_edges():
    t, _ = square_wave(1_000_000, 100_000, outlier_rate=0.01, outlier_ns=100_000)
    late = np.count_nonzero(t - square_wave(1_000_000, 100_000)[0])
    assert 800 < late < 1_200


def test_reordering_edges_is_refused():
    with pytest.raises(ValueError, match="reorder"):
        square_wave(1_000, 5, delays={2: 600})


def test_blind_intervals_validate():
    assert blind_intervals((1, 2), (5, 9)).tolist() == [[1, 2], [5, 9]]
    assert blind_intervals().shape == (0, 2)
    for bad in (((5, 9), (1, 2)), ((1, 6), (5, 9)), ((3, 1),)):
        with pytest.raises(ValueError):
            blind_intervals(*bad)


def test_observe_drops_edges_and_catches_up_after_an_odd_count():
    t, level = square_wave(1_000, 10, start_ns=0)  # 0, 500, ..., 4500
    even_t, even_level = observe(t, level, blind_intervals((600, 1600)))  # loses 1000, 1500
    assert list(even_t) == [0, 500, 2000, 2500, 3000, 3500, 4000, 4500]
    assert list(even_level) == [1, 0, 1, 0, 1, 0, 1, 0]
    odd_t, odd_level = observe(t, level, blind_intervals((600, 1100), (3000, 3000)))
    assert list(odd_t) == [0, 500, 1100, 1500, 2000, 2500, 3000, 3500, 4000, 4500]
    assert list(odd_level) == [1, 0, 1, 0, 1, 0, 1, 0, 1, 0]
