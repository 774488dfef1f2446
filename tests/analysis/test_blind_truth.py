"""Lost edges, blind spans and the bounds they leave, asserted exactly on synthetic waves."""

from __future__ import annotations

import numpy as np
import pytest

from jitterlab.analysis.squarewave import excluded_seen_by_self, period_split, squarewave_metrics
from jitterlab.analysis.synthetic import blind_intervals, observe, square_wave
from jitterlab.model.errors import RunFailed
from jitterlab.model.series import EdgeSeries
from jitterlab.report.figures.squarewave import period_errors

START = 1_000_000_000


def metrics(t, level, period, warmup_ns=0, blind=None, probe="vpin") -> dict[str, float]:
    out = squarewave_metrics(t, level, period, warmup_ns=warmup_ns, blind=blind, probe=probe)
    return {m.name: m.value for m in out}


def lose(t, level, first, last):
    """Remove edges first..last (inclusive) and return the blind span that hid them."""
    keep = np.ones(len(t), bool)
    keep[first : last + 1] = False
    span = blind_intervals((int(t[first - 1]) + 1, int(t[last + 1]) - 1))
    return t[keep], level[keep], span


def test_lost_edges_do_not_bend_the_drift():
    # a perfect clock, T = 1 ms, edges 5000..5009 lost inside one blind span: the fit against
    # the observed index gave 1502 ppm
    period = 1_000_000
    t, level = square_wave(period, 10_000, start_ns=START)
    seen_t, seen_level, span = lose(t, level, 5000, 5009)
    got = metrics(seen_t, seen_level, period, blind=span)
    assert got["drift_ppm"] == pytest.approx(0.0, abs=1e-9)
    assert got["missed_edges"] == 10
    assert got["max_rel_period_error"] == 0.0


def test_two_thousand_lost_edges_with_a_real_drift():
    # 2 x 1000 lost edges (gave 316553 ppm); the clock runs 10 ppm slow and that is what is seen
    period = 1_000_000
    t, level = square_wave(period, 10_000, start_ns=START, drift_ppm=10.0)
    t1, l1, span1 = lose(t, level, 2000, 2999)
    keep = (t1 < t[6000]) | (t1 > t[6999])
    span2 = blind_intervals((int(t[5999]) + 1, int(t[7000]) - 1))
    got = metrics(t1[keep], l1[keep], period, blind=np.concatenate([span1, span2]))
    assert got["drift_ppm"] == pytest.approx(10.0, abs=1e-9)
    assert got["missed_edges"] == 2000


def test_a_level_repeat_inside_a_short_span_is_a_lost_edge():
    """An edge list that lost one edge: the equal levels prove it, however short the span."""
    period = 1_000
    t, level = square_wave(period, 60, start_ns=START)
    keep = np.arange(60) != 30
    seen_t, seen_level = t[keep], level[keep]
    span = blind_intervals((int(t[29]) + 1, int(t[29]) + 2))  # 1 ns, far below T/4
    got = metrics(seen_t, seen_level, period, blind=span)
    assert got["missed_edges"] == 1
    assert got["excluded_periods"] == 2  # the two periods that hold the 1000 ns gap
    assert got["max_rel_period_error"] == 0.0
    assert got["drift_ppm"] == pytest.approx(0.0, abs=1e-9)
    with pytest.raises(RunFailed, match="does not alternate"):
        metrics(seen_t, seen_level, period)  # no span says where: unmeasurable


def stalled_wave(stall_ns: int):
    """T = 10 ms, one half period of `stall_ns` (the program stalled) after edge 40."""
    period = 10_000_000
    half = np.full(99, period // 2, dtype=np.int64)
    half[40] = stall_ns
    t = np.concatenate(([START], START + np.cumsum(half)))
    return period, t, (np.arange(100) % 2).astype(np.uint8)


def test_a_stall_the_observer_shared_has_a_proven_lower_bound():
    # the program stalls 50 ms after edge 40; the observer watched 40 ms of it, then was blind
    # until the late edge came (caught up and stamped at the span's end)
    period, t, level = stalled_wave(50_000_000)
    span = blind_intervals((int(t[40]) + 40_000_000, int(t[41])))
    seen_t, seen_level = observe(t, level, span)
    got = metrics(seen_t, seen_level, period, blind=span)
    assert got["max_rel_period_error"] == 0.0  # every used period is perfect
    assert got["excluded_periods"] == 3
    # edge 41 was not there 40 ms after edge 40, so the period from edge 39 is >= 45 ms
    assert got["max_rel_period_error_excluded_lower_bound"] == pytest.approx(3.5)
    assert got["max_rel_period_error_bound"] == pytest.approx(3.5)
    assert got["max_is_lower_bound"] == 1.0
    # the truth: 55 ms periods, 4.5; the bound stays below it
    assert metrics(t, level, period)["max_rel_period_error"] == pytest.approx(4.5)


def test_blind_spans_over_a_perfect_wave_prove_nothing():
    # RT throttling: 50 ms blind every second at T = 1 ms, catch-up edges: no fault to prove
    period = 1_000_000
    t, level = square_wave(period, 20_000, start_ns=START)
    starts = START + np.arange(1, 10) * 1_000_000_000 + 123_457
    span = np.stack([starts, starts + 50_000_000], axis=1)
    got = metrics(*observe(t, level, span), period, blind=span)
    assert got["excluded_periods"] > 0 and got["max_is_lower_bound"] == 1.0
    assert got["max_rel_period_error_excluded_lower_bound"] == 0.0
    assert got["max_rel_period_error_bound"] == got["max_rel_period_error"] == 0.0
    assert got["missed_edges"] == 9 * 100  # each 50 ms span hid 100 edges (an even number)
    assert got["drift_ppm"] == pytest.approx(0.0, abs=1e-9)


def test_no_exclusion_no_lower_bound_flag():
    t, level = square_wave(1_000, 100, start_ns=START, delays={50: 100})
    got = metrics(t, level, 1_000)
    assert got["max_is_lower_bound"] == 0.0
    assert got["max_rel_period_error_bound"] == got["max_rel_period_error"] == pytest.approx(0.1)


@pytest.mark.parametrize("seed", range(20))
def test_the_bound_never_exceeds_the_truth(seed):
    """Random stalls and blind spans: the bound is <= the true worst error, and it is the
    used maximum or better."""
    rng = np.random.default_rng(seed)
    period = 1_000_000
    n = 2_000
    half = np.full(n - 1, period // 2, dtype=np.int64)
    stalls = rng.choice(np.arange(10, n - 10), 8, replace=False)
    half[stalls] += rng.integers(0, 20 * period, 8)
    t = START + np.concatenate(([0], np.cumsum(half)))
    level = (np.arange(n) % 2).astype(np.uint8)
    starts = np.sort(rng.choice(np.arange(t[10], t[-10], period // 7), 12, replace=False))
    spans = np.stack([starts, starts + rng.integers(0, 8 * period, 12)], axis=1)
    spans = spans[np.r_[True, spans[1:, 0] > spans[:-1, 1]]]
    seen_t, seen_level = observe(t, level, spans)
    try:
        got = metrics(seen_t, seen_level, period, blind=spans)
    except RunFailed:
        pytest.skip("every period excluded")
    truth = period_split(t, level, period, warmup_ns=int(seen_t[0] - t[0]))
    true_max = float(np.abs(truth.rel_error).max())
    assert got["max_rel_period_error_bound"] <= true_max + 1e-12
    assert got["max_rel_period_error_bound"] >= got["max_rel_period_error"]


def test_period_split_follows_the_metrics_rule():
    period = 1_000_000
    t, level = square_wave(period, 41, start_ns=START, delays={30: 200_000})
    # a 10 us gap between edges (excludes nothing) and one that holds edge 20 (excludes 3)
    spans = blind_intervals((int(t[10]) + 100_000, int(t[10]) + 110_000),
                            (int(t[20]) - 10_000, int(t[20])))
    split = period_split(t, level, period, warmup_ns=0, blind=spans)
    got = metrics(t, level, period, blind=spans)
    assert int(split.used.sum()) == got["n_periods"] == 35 - 3  # 37 edges after the warm-up
    assert int((~split.used).sum()) == got["excluded_periods"] == 3
    assert np.abs(split.rel_error[split.used]).max() == got["max_rel_period_error"] == 0.2
    assert list(split.start_ns[~split.used]) == list(t[4 + 14 : 4 + 17])
    # the report's figure draws exactly the used periods (it dropped the 10 us gap's too)
    t_s, e = period_errors(EdgeSeries(t, level), period, 0, spans)
    assert len(e) == got["n_periods"]
    assert np.array_equal(e, split.rel_error[split.used])
    assert t_s[0] == (t[4] - t[0]) / 1e9


def test_self_view_of_the_excluded_periods():
    # the stall of test_a_stall_the_observer_shared...: the program's own log has the truth
    period, t, level = stalled_wave(50_000_000)
    span = blind_intervals((int(t[40]) + 40_000_000, int(t[41])))
    seen_t, seen_level = observe(t, level, span)
    split = period_split(seen_t, seen_level, period, warmup_ns=0, blind=span)
    got = {m.name: (m.value, m.subject) for m in excluded_seen_by_self(split, t, period,
                                                                     probe="vpin")}
    # the span holds edge 41 (caught at t41): vpin excluded [t39, t41], [t40, t42], [t41, t43];
    # self periods 37..43 touch [t39, t43]; those from edges 39 and 40 hold the 50 ms stall
    assert got["excluded_self_periods"] == (7.0, "vpin")
    assert got["excluded_self_max_rel_period_error"] == (pytest.approx(4.5), "vpin")
    assert got["max_rel_period_error_incl_excluded_self"] == (pytest.approx(4.5), "vpin")


def test_self_view_without_exclusions_is_the_probe_max():
    t, level = square_wave(1_000, 100, start_ns=START, delays={50: 100})
    split = period_split(t, level, 1_000, warmup_ns=0)
    got = {m.name: m.value for m in excluded_seen_by_self(split, t, 1_000, probe="vpin")}
    assert got == {"excluded_self_periods": 0.0,
                   "max_rel_period_error_incl_excluded_self": pytest.approx(0.1)}


def test_percentiles_beyond_the_exact_buckets():
    """|P - T| of 0.1 ms .. 0.2 s (coarse and overflow buckets) still give exact ranks."""
    period = 1_000_000_000
    delays = {6 + 4 * j: 100_000 + 997 * j * j for j in range(1, 240)}
    delays[1000] = 300_000_000  # beyond the 67 ms coarse range
    t, level = square_wave(period, 1_010, start_ns=START, delays=delays)
    got = metrics(t, level, period)
    analysed = t[4:]
    absdev = np.sort(np.abs(analysed[2:] - analysed[:-2] - period))
    m = len(absdev)
    for name, num, den in (("p50", 1, 2), ("p99", 99, 100), ("p999", 999, 1000),
                           ("p9999", 9999, 10000)):
        assert got[f"{name}_rel_period_error"] == absdev[(m * num + den - 1) // den - 1] / period
    assert got["max_rel_period_error"] == 0.3


@pytest.mark.parametrize("n_edges", [3_000, 30_000])  # large deviations kept aside / 2nd pass
def test_percentiles_of_a_wave_with_mostly_large_deviations(n_edges):
    period = 10_000_000
    t, level = square_wave(period, n_edges, start_ns=START, jitter_ns=200_000, seed=4)
    got = metrics(t, level, period)
    analysed = t[4:]
    absdev = np.sort(np.abs(analysed[2:] - analysed[:-2] - period))
    assert (absdev >= 1 << 16).sum() > 4096 * (n_edges > 10_000)
    m = len(absdev)
    for name, num, den in (("p50", 1, 2), ("p99", 99, 100), ("p999", 999, 1000),
                           ("p9999", 9999, 10000)):
        assert got[f"{name}_rel_period_error"] == absdev[(m * num + den - 1) // den - 1] / period


def test_drift_with_deviations_beyond_the_integer_sums():
    """A 40-minute stall puts |t_k - t_0 - k T/2| beyond 2**40 ns: the float path agrees."""
    period = 1_000_000_000
    half = np.full(3_999, period // 2, dtype=np.int64)
    half[2_000] += 2_400 * period
    t = START + np.concatenate(([0], np.cumsum(half)))
    level = (np.arange(4_000) % 2).astype(np.uint8)
    got = metrics(t, level, period)
    k = np.arange(len(t) - 4)
    slope = np.polyfit(k, (t[4:] - t[4]).astype(float), 1)[0]
    assert got["drift_ppm"] == pytest.approx((slope / (period / 2) - 1) * 1e6, rel=1e-9)
