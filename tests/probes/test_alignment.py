"""The check that an analyzer's edges are the program's: the program's own wave passes with
realistic jitter, lags, a drifting clock and a few edges unpaired; an unrelated wave of the same
period, a wave with half the edges missing, and the demo device's captured wave fail, each with
the reason."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from jitterlab.analysis.alignment import MIN_MATCHED_SHARE, align
from jitterlab.analysis.logic import decode_binary, edges_ns

PERIOD = 1_000_000
HALF = PERIOD // 2
RATE_HZ = 24_000_000
MARGIN = 1_000_000_000
DATA = Path(__file__).parent.parent / "data" / "sigrok"


def _program(seed: int = 1, n: int = 10_000, wake_mean_ns: float = 15_000):
    """(wire times, logged times, levels, unpaired): a 1 ms program on CLOCK_MONOTONIC with
    exponential wake-up delays, a few late wake-ups, write-to-timestamp lags of a few µs and
    `unpaired` edges timestamped more than a quarter period after their write (preempted)."""
    rng = np.random.default_rng(seed)
    start = 5_000_000_000
    wire = start + np.arange(n, dtype=np.int64) * HALF + rng.exponential(wake_mean_ns, n).astype(np.int64)
    wire[1000::2000] += 400_000  # late wake-ups, still before the next edge's time
    lag = rng.exponential(3_000, n).astype(np.int64)
    late = np.arange(1501, n, 2000)[:5]
    lag[late] = 300_000  # more than a quarter period: these edges pair with nothing
    level = (np.arange(n) % 2 == 0).astype(np.uint8)  # rising first
    return wire, wire + lag, level, len(late)


def _capture(wire: np.ndarray, level: np.ndarray, drift_ppm: float = 80.0):
    """The wire as a 24 MHz analyzer sees it: its time 0 a margin before the first edge, its clock
    `drift_ppm` fast, times quantized to its samples."""
    t = (wire - wire[0] + MARGIN) * (1 + drift_ppm * 1e-6)
    index = (t * RATE_HZ // 1_000_000_000).astype(np.int64)
    return index * 1_000_000_000 // RATE_HZ, level


def test_the_programs_own_wave_passes_with_jitter_lags_drift_and_a_few_edges_unpaired():
    wire, logged, level, unpaired = _program()
    cap_t, cap_level = _capture(wire, level)
    # the pin was left high by the run before: the program sets it low, unlogged, 10 ms before its
    # first edge; and it made two edges it could not log
    cap_t = np.concatenate(([cap_t[0] - 10_000_000], cap_t))
    cap_level = np.concatenate(([0], cap_level)).astype(np.uint8)
    keep = np.ones(len(logged), bool)
    keep[[4000, 4001]] = False
    fit = align(cap_t, cap_level, logged[keep], level[keep], PERIOD, dropped=2)
    assert fit.failures == () and fit.watched
    assert fit.matched == len(logged) - 2 - unpaired and fit.program_edges == len(logged) - 2
    assert fit.outside == 1 and fit.extra == unpaired + 2
    assert fit.drift_ppm == pytest.approx(-80, abs=1)  # the analyzer's clock runs 80 ppm fast
    # at the program's first edge: its time minus the analyzer's, plus its median lag (~2 µs)
    assert 0 < fit.offset_ns - (logged[0] - cap_t[1]) < 5_000
    assert fit.residual_p50_ns < 5_000 and fit.residual_max_ns < PERIOD // 4


def test_an_unrelated_wave_of_the_same_period_fails():
    wire, logged, level, _ = _program()
    n_cap = (wire[-1] - wire[0] + 2 * MARGIN) // HALF
    rng = np.random.default_rng(7)
    other = (int(rng.integers(HALF)) + np.arange(n_cap, dtype=np.int64) * HALF) * (1 + 30e-6)
    fit = align(other.astype(np.int64), (np.arange(n_cap) % 2).astype(np.uint8), logged, level, PERIOD)
    assert not fit.watched
    assert any("before or after the program's run, when its pin is quiet" in f for f in fit.failures)


def test_an_unrelated_wave_only_during_the_run_fails_against_a_jittery_program():
    wire, logged, level, _ = _program(wake_mean_ns=150_000)  # python under load
    grid = wire[0] + np.arange(len(wire), dtype=np.int64) * HALF  # another source, started with it
    fit = align(grid, level, logged, level, PERIOD)
    assert not fit.watched, "an unrelated wave does not follow the program's late edges"


def test_a_wave_with_half_the_edges_missing_fails():
    wire, logged, level, _ = _program()
    cap_t, cap_level = _capture(wire, level)
    keep = (np.arange(len(cap_t)) // 2) % 2 == 0  # every other period is not there
    fit = align(cap_t[keep], cap_level[keep], logged, level, PERIOD)
    assert not fit.watched and fit.matched < MIN_MATCHED_SHARE * len(logged)
    assert fit.failures[0] == f"only {fit.matched} of the program's {len(logged)} edges have an edge of " \
        "the same level on the capture within a quarter period"


def test_a_wave_of_half_the_programs_rate_fails():
    wire, logged, level, _ = _program()
    slow, _ = _capture(wire[::2], level[::2])  # an edge at each of the program's rises: period 2 T
    fit = align(slow, (np.arange(len(slow)) % 2 == 0).astype(np.uint8), logged, level, PERIOD)
    assert not fit.watched and fit.matched <= len(logged) // 2


def test_the_demo_devices_captured_wave_is_not_a_program_that_ran_inside_the_capture():
    edges = decode_binary(DATA / "demo-incremental-1000.bin", unitsize=1, bit=4)  # 160 µs period
    cap_t = edges_ns(edges, 200_000)
    # a program of the same period that ran from 1.5 ms to 3.1 ms of the capture, in phase with it
    own = cap_t[(cap_t >= 1_500_000) & (cap_t < 3_100_000)] + 3_000
    own_level = edges.level[(cap_t >= 1_500_000) & (cap_t < 3_100_000)]
    fit = align(cap_t, edges.level, own, own_level, 160_000)
    assert fit.matched == len(own), "every program edge finds a partner: pairing alone proves nothing"
    assert not fit.watched and fit.outside > 4


def test_a_capture_and_a_program_with_no_level_in_common_in_their_first_edges():
    fit = align(np.array([10, 20]), np.array([1, 1]), np.array([0, 5]), np.array([0, 0]), 1000)
    assert not fit.watched and fit.matched == 0


def test_the_offset_and_the_spread_of_the_programs_lag_exactly():
    true_ns = np.arange(39, dtype=np.int64) * HALF + 5_000_000  # the wave on the wire
    level = (np.arange(39) % 2 == 0).astype(np.uint8)  # rising first
    lag = np.array([10_000, 20_000, 30_000] * 13)  # write -> timestamp, per edge
    clock_offset = 123_456_789  # the analyzer's time 0 is this far before the program's
    fit = align(true_ns - clock_offset, level, true_ns + lag, level, PERIOD)
    # the lags of the first and last thirds have one median (20 µs): no drift, offset + median lag
    assert fit.drift_ppm == 0 and fit.offset_ns == clock_offset + 20_000
    assert (fit.matched, fit.extra, fit.outside) == (39, 0, 0)
    assert fit.residual_p50_ns == 10_000 and fit.residual_max_ns == 10_000 and fit.watched


def test_an_early_edge_of_the_other_level_is_skipped():
    level = (np.arange(10) % 2).astype(np.uint8)  # the program's first edge falls
    own = np.arange(10, dtype=np.int64) * HALF
    fit = align(own[1:] - 7, level[1:], own, level, PERIOD)  # the analyzer missed the first edge
    assert fit.offset_ns == 7 and fit.matched == 9


def test_an_emulated_boards_clock_may_drift_more_than_two_crystals():
    from jitterlab.analysis.alignment import EMULATED_MAX_DRIFT_PPM

    period_ns = 100_000_000
    own = np.arange(40, dtype=np.int64) * (period_ns // 2)
    level = np.arange(40) % 2
    capture = (own * (1 + 20_000e-6)).astype(np.int64) + 5_000_000  # the capture clock runs 2 % fast
    strict = align(capture, level, own, level, period_ns)
    assert not strict.watched and any("drifts" in f and "±1000 ppm" in f for f in strict.failures)
    loose = align(capture, level, own, level, period_ns, max_drift_ppm=EMULATED_MAX_DRIFT_PPM)
    assert loose.watched and loose.matched == 40 and loose.failures == ()
    assert loose.drift_ppm == pytest.approx(-20_000.0)  # the lag shrinks by 2 % of the program's time
