"""Change points (Apache Otava) on series with known steps."""

from __future__ import annotations

import pytest

from jitterlab.analysis.changepoints import ChangePoint, change_points, starts_with_newest

# a flat history with a little spread; no two values equal, so a t-test has variance to work with
FLAT = [100.0, 101.0, 99.0, 100.5, 99.5, 100.2, 99.8, 100.1, 99.9, 100.3]


def test_one_step_is_found_where_it_is_with_both_sides_means():
    values = FLAT + [v * 2 for v in FLAT]
    [c] = change_points(values)
    assert c.index == len(FLAT)
    assert c.before == pytest.approx(sum(FLAT) / len(FLAT))
    assert c.after == pytest.approx(2 * sum(FLAT) / len(FLAT))
    assert c.ratio == pytest.approx(2.0) and c.p_value <= 0.001


def test_two_steps_up_and_back_down():
    values = FLAT + [v * 3 for v in FLAT] + FLAT
    assert [c.index for c in change_points(values)] == [10, 20]


def test_no_step_no_change_point_and_too_few_values_none():
    assert change_points(FLAT) == []
    assert change_points([1.0, 5.0, 1.0]) == []
    assert change_points([1.0, float("nan"), 1.0, 1.0, 1.0]) == []


def test_the_newest_value_starting_a_change_is_told_apart_from_an_older_change():
    values = [*FLAT, 300.0]
    found = change_points(values)
    assert starts_with_newest(found, len(values)) == found[-1] and found[-1].index == 10
    older = FLAT + [v * 2 for v in FLAT]
    assert starts_with_newest(change_points(older), len(older)) is None


def test_ratio_of_a_zero_history():
    assert ChangePoint(3, 0.0, 0.0, 0.0).ratio == 1.0
