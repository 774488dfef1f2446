"""Squarewave metrics asserted exactly on synthetic edges with hand-computed answers."""

from __future__ import annotations

import numpy as np
import pytest

from jitterlab.analysis.squarewave import squarewave_metrics
from jitterlab.analysis.synthetic import blind_intervals, observe, square_wave
from jitterlab.model.errors import RunFailed

T = 1_000  # ns; half period 500 ns keeps hand arithmetic readable
START = 1_000_000
NAMES_UNITS = {
    "max_rel_period_error": "ratio",
    "max_delay": "ratio",
    "max_early": "ratio",
    "p50_rel_period_error": "ratio",
    "p99_rel_period_error": "ratio",
    "p999_rel_period_error": "ratio",
    "p9999_rel_period_error": "ratio",
    "mean_period_ns": "ns",
    "std_period_ns": "ns",
    "min_period_ns": "ns",
    "max_period_ns": "ns",
    "max_half_period_error": "ratio",
    "max_duty_error": "ratio",
    "drift_ppm": "ppm",
    "n_edges": "count",
    "n_periods": "count",
    "excluded_periods": "count",
    "missed_edges": "count",
    "blind_time_ns": "ns",
    "warmup_ns": "ns",
    "max_rel_period_error_excluded_lower_bound": "ratio",
    "max_rel_period_error_bound": "ratio",
    "max_is_lower_bound": "flag",
    "unobserved_periods": "count",
    "max_rel_period_error_upper_bound": "ratio",
    **{f"{p}_rel_period_error_{side}_bound": "ratio" for p in ("p50", "p99", "p999", "p9999")
       for side in ("lower", "upper")},
}


def metrics(t_ns, level, period_ns=T, warmup_ns=0, blind=None) -> dict[str, float]:
    out = squarewave_metrics(t_ns, level, period_ns, warmup_ns=warmup_ns, blind=blind, probe="vpin")
    return {m.name: m.value for m in out}


def test_names_units_and_probe():
    t, level = square_wave(T, 100, start_ns=START)
    out = squarewave_metrics(t, level, T, warmup_ns=0, probe="self")
    assert {m.name: m.unit for m in out} == NAMES_UNITS
    assert {m.subject for m in out} == {"self"}


def test_perfect_wave():
    t, level = square_wave(T, 100, start_ns=START)
    got = metrics(t, level)
    for name in NAMES_UNITS:
        if NAMES_UNITS[name] in ("ratio", "flag") or name in ("drift_ppm", "std_period_ns"):
            assert got[name] == pytest.approx(0.0, abs=1e-12), name
    assert got["mean_period_ns"] == got["min_period_ns"] == got["max_period_ns"] == T
    # the warm-up is 2 periods = 4 edges; 96 edges remain, 94 periods
    assert (got["warmup_ns"], got["n_edges"], got["n_periods"]) == (2 * T, 96, 94)
    assert got["excluded_periods"] == got["missed_edges"] == got["blind_time_ns"] == 0


def test_one_delayed_edge():
    # 4 warm-up edges + 201 analysed; analysed edge 100 (the middle one) is 100 ns late, so
    # the least-squares slope, and with it the drift, does not move
    t, level = square_wave(T, 205, start_ns=START, delays={104: 100})
    got = metrics(t, level)
    assert got["max_delay"] == pytest.approx(0.1)  # P = 1100
    assert got["max_early"] == pytest.approx(0.1)  # P = 900
    assert got["max_rel_period_error"] == pytest.approx(0.1)
    assert (got["min_period_ns"], got["max_period_ns"]) == (900, 1100)
    assert got["max_half_period_error"] == pytest.approx(0.2)  # halves 600 and 400 vs 500
    assert got["max_duty_error"] == pytest.approx(0.2)  # high 600 of 1000 (or low 600)
    assert got["mean_period_ns"] == pytest.approx(T)
    assert got["std_period_ns"] == pytest.approx(np.sqrt(2 * 100**2 / 199))
    assert got["drift_ppm"] == pytest.approx(0.0, abs=1e-9)
    assert got["p50_rel_period_error"] == 0.0
    assert got["n_periods"] == 199


def test_duty_error_follows_the_level():
    # a steady 60/40 wave: high 600 ns, low 400 ns; starting low or high does not matter
    for first_level in (0, 1):
        half = np.where(np.arange(99) % 2 == (1 - first_level), 400, 600)
        t = np.concatenate(([START], START + np.cumsum(half)))
        level = ((np.arange(100) + first_level) % 2).astype(np.uint8)
        got = metrics(t, level)
        assert got["max_duty_error"] == pytest.approx(0.2)
        assert got["max_rel_period_error"] == 0.0
        assert got["max_half_period_error"] == pytest.approx(0.2)


def test_linear_drift():
    period = 1_000_000
    t, level = square_wave(period, 10_001, drift_ppm=10.0)  # every half period is 500_005 ns
    got = metrics(t, level, period)
    assert got["drift_ppm"] == pytest.approx(10.0, abs=1e-6)
    assert got["mean_period_ns"] == 1_000_010
    assert got["max_delay"] == pytest.approx(1e-5)
    assert got["max_early"] == pytest.approx(-1e-5)  # never early: every period is long
    assert got["std_period_ns"] == pytest.approx(0.0, abs=1e-6)


def test_negative_drift_over_a_long_series():
    period = 1_000_000
    t, level = square_wave(period, 1_000_001, start_ns=10**15, drift_ppm=-4.0)
    assert metrics(t, level, period)["drift_ppm"] == pytest.approx(-4.0, abs=1e-6)


def test_warmup_is_dropped_and_recorded():
    t, level = square_wave(T, 100, start_ns=START, delays={3: 400})  # a bad start-up edge
    got = metrics(t, level, warmup_ns=5_200)
    assert got["warmup_ns"] == 5_500  # first edge at or after START + 5200
    assert got["n_edges"] == 100 - 11
    assert got["max_rel_period_error"] == 0.0
    # a warm-up shorter than 2 periods is raised to 2 periods
    assert metrics(t, level, warmup_ns=10)["warmup_ns"] == 2 * T


def test_blind_span_with_two_missed_edges():
    t, level = square_wave(T, 64, start_ns=START)
    a = START + 2 * T  # first analysed edge
    blind = blind_intervals((a + 1_100, a + 2_400))  # the edges at a+1500 and a+2000 are lost
    seen_t, seen_level = observe(t, level, blind)
    assert list(seen_t[4:8] - a) == [0, 500, 1000, 2500]
    got = metrics(seen_t, seen_level, blind=blind)
    # periods 1 [a+500, a+2500] and 2 [a+1000, a+3000] touch the span; period 1 would be 2000 ns
    assert got["excluded_periods"] == 2
    assert got["n_periods"] == 58 - 2 - 2
    assert got["max_rel_period_error"] == 0.0
    assert got["missed_edges"] == 2  # the 1500 ns gap holds 3 half periods
    assert got["blind_time_ns"] == 1_300
    assert got["max_half_period_error"] == 0.0


def test_catch_up_edge_at_the_span_end_is_excluded():
    t, level = square_wave(T, 64, start_ns=START)
    a = START + 2 * T
    blind = blind_intervals((a + 1_100, a + 1_900))  # one edge lost: caught up at a+1900
    seen_t, seen_level = observe(t, level, blind)
    assert list(seen_t[4:9] - a) == [0, 500, 1000, 1900, 2000]
    got = metrics(seen_t, seen_level, blind=blind)
    # period 3 starts at the catch-up edge (t_3 == span end): touching includes the endpoint
    assert got["excluded_periods"] == 3
    assert got["max_rel_period_error"] == 0.0
    # the catch-up edge is the lost edge stamped late, not a missed one: 1000 ns from a+1000
    # to a+2000 are 2 half periods, and 2 edges were recorded in them
    assert got["missed_edges"] == 0
    assert got["blind_time_ns"] == 800


def test_blind_outside_the_analysed_window_only_counts_inside():
    t, level = square_wave(T, 64, start_ns=START)
    blind = blind_intervals((START - 5_000, START + 100), (int(t[-1]) - 200, int(t[-1]) + 9_000))
    got = metrics(t, level, blind=blind)
    assert got["blind_time_ns"] == 200  # the first span ends inside the warm-up
    assert got["excluded_periods"] == 1  # only the last period ends inside the second span


def test_percentiles_are_nearest_rank():
    # 100 isolated late edges, 10 j ns late for j = 1..100: each gives two periods with
    # |e| = 10 j / T; the other 9800 of the 10000 periods are exact
    period = 1_000_000
    delays = {104 + 50 * j: 10 * j for j in range(1, 101)}
    t, level = square_wave(period, 10_006, delays=delays)
    got = metrics(t, level, period)
    assert got["n_periods"] == 10_000
    # rank ceil(q m): p99 -> 9900 = 9800 + 2*50 -> j = 50; p999 -> 9990 -> j = 95;
    # p9999 -> 9999 -> j = 100
    assert got["p50_rel_period_error"] == 0.0
    assert got["p99_rel_period_error"] == 500 / period
    assert got["p999_rel_period_error"] == 950 / period
    assert got["p9999_rel_period_error"] == 1000 / period
    # numpy's method="inverted_cdf" is the same rule in floating point: 0.999 * 10000 comes
    # out a hair above 9990, so numpy answers rank 9991 (960 ns); the rule says rank 9990
    analysed = t[4:]
    absdev = np.abs(analysed[2:] - analysed[:-2] - period)
    assert np.percentile(absdev, 99.9, method="inverted_cdf") == 960
    assert nearest_rank(absdev, 999, 1000) == 950


def nearest_rank(values: np.ndarray, num: int, den: int) -> float:
    """The ceil(q m)-th smallest value, q = num/den, in exact integers."""
    return np.sort(values)[(len(values) * num + den - 1) // den - 1]


def test_period_errors_beyond_uint32_take_the_exact_path():
    period = 10_000_000_000  # 10 s; one edge 4.9 s late exceeds the 4.29 s uint32 range
    t, level = square_wave(period, 30, delays={10: 4_900_000_000})
    got = metrics(t, level, period)
    assert got["max_rel_period_error"] == pytest.approx(0.49)
    assert got["p9999_rel_period_error"] == 0.49


def reference(t, level, period, warmup_ns, blind, true_index):
    """The definitions written plainly, for comparison on random data; `true_index` is the
    index of each edge in the generated wave (what the drift fit must recover)."""
    cut = t >= t[0] + max(warmup_ns, 2 * period)
    t, true_index = t[cut], true_index[cut]
    p = (t[2:] - t[:-2]).astype(float)
    d = np.diff(t).astype(float)
    keep_p, keep_h = np.ones(len(p), bool), np.ones(len(d), bool)
    fit = np.ones(len(t), bool)
    for s, e in blind:
        if not (((t >= s) & (t <= e)).any() or 4 * (e - s) >= period):
            continue  # a short gap between edges falsifies no timestamp
        keep_p &= ~((s <= t[2:]) & (e >= t[:-2]))
        keep_h &= ~((s <= t[1:]) & (e >= t[:-1]))
        fit &= ~((t >= s) & (t <= e))  # a catch-up edge's stamp is only an upper bound
    e_rel = (p[keep_p] - period) / period
    slope = np.polyfit(true_index[fit], (t[fit] - t[0]).astype(float), 1)[0]
    out = {
        "max_rel_period_error": np.abs(e_rel).max(),
        "max_delay": e_rel.max(),
        "max_early": -e_rel.min(),
        "mean_period_ns": p[keep_p].mean(),
        "std_period_ns": p[keep_p].std(),
        "max_half_period_error": np.abs(d[keep_h] / (period / 2) - 1).max(),
        "max_duty_error": np.abs(2 * d[:-1][keep_p] / p[keep_p] - 1).max(),
        "drift_ppm": (slope / (period / 2) - 1) * 1e6,
        "n_periods": keep_p.sum(),
    }
    quantiles = ((1, 2, "p50"), (99, 100, "p99"), (999, 1000, "p999"), (9999, 10000, "p9999"))
    for num, den, name in quantiles:
        out[f"{name}_rel_period_error"] = nearest_rank(np.abs(e_rel), num, den)
    return out


@pytest.mark.parametrize("seed", range(16))
def test_matches_plain_definitions_on_random_waves(seed):
    """Seeds 12-15 have periods of 0.1-2 s whose outliers leave the exact integer range of the
    sum of squares (|P - T| >= 67 ms): those blocks take the float path."""
    rng = np.random.default_rng(seed)
    high = 10_000_000 if seed < 12 else 2_000_000_000
    period = int(rng.integers(high // 20, high)) // 2 * 2
    t, level = square_wave(
        period,
        int(rng.integers(50, 20_000)),
        jitter_ns=period / 40,
        seed=seed,
        drift_ppm=float(rng.normal(0, 50)),
        outlier_rate=0.01,
        outlier_ns=period // 5,
    )
    starts = np.sort(rng.choice(np.arange(t[5], t[-5], period // 3), 8, replace=False))
    spans = np.stack([starts, starts + rng.integers(0, 3 * period, 8)], axis=1)
    blind = spans[np.r_[True, spans[1:, 0] > spans[:-1, 1]]] if seed % 2 else np.empty((0, 2))
    seen_t, seen_level = observe(t, level, blind.astype(np.int64))
    # edges seen when they happened keep their index; catch-up edges are not in the fit
    true_index = np.searchsorted(t, seen_t)
    got = metrics(seen_t, seen_level, period, warmup_ns=3 * period, blind=blind)
    for name, value in reference(seen_t, seen_level, period, 3 * period, blind, true_index).items():
        tol = 1e-6 if name == "drift_ppm" else 1e-12
        assert got[name] == pytest.approx(value, rel=1e-9, abs=tol), name


@pytest.mark.parametrize(
    ("n_edges", "warmup_ns", "words"),
    [(0, 0, "no edges"), (5, 0, "1 edges remain"), (40, 19_000, "2 edges remain")],
)
def test_too_few_edges_is_unmeasurable(n_edges, warmup_ns, words):
    t, level = square_wave(T, n_edges, start_ns=START)
    with pytest.raises(RunFailed) as failure:
        squarewave_metrics(t, level, T, warmup_ns=warmup_ns)
    assert failure.value.status == "unmeasurable"
    assert words in failure.value.reason


def test_all_periods_blind_is_unmeasurable():
    t, level = square_wave(T, 40, start_ns=START)
    with pytest.raises(RunFailed) as failure:
        squarewave_metrics(t, level, T, warmup_ns=0, blind=blind_intervals((START, int(t[-1]))))
    assert failure.value.status == "unmeasurable"
    assert "all 34 periods touch a blind interval" in failure.value.reason


def test_levels_that_do_not_alternate_are_unmeasurable():
    t, level = square_wave(T, 40, start_ns=START)
    level[20] = level[19]
    with pytest.raises(RunFailed) as failure:
        squarewave_metrics(t, level, T, warmup_ns=0)
    assert failure.value.status == "unmeasurable"
    assert "does not alternate" in failure.value.reason


def test_three_edges_on_one_timestamp_have_no_duty_ratio():
    """A probe coarser than a glitch stamps three edges alike: that period has length 0 and no
    duty ratio; the others count."""
    t, level = square_wave(T, 40, start_ns=START)
    t[20] = t[21] = t[22]
    got = metrics(t, level, warmup_ns=0)
    assert got["max_early"] == 1.0  # P = 0
    assert got["max_duty_error"] == 1.0  # periods [t19, t21] and [t22, t24]: one half is 0


def test_edge_times_that_go_backwards_are_unmeasurable():
    t, level = square_wave(T, 40, start_ns=START)
    t[20] = t[19] - 1
    with pytest.raises(RunFailed) as failure:
        squarewave_metrics(t, level, T, warmup_ns=0)
    assert failure.value.status == "unmeasurable"
    assert "go backwards (a half period of -" in failure.value.reason


def test_short_blind_gap_between_edges_excludes_nothing():
    """A VM's timer interrupt blinds the observer for microseconds between edges: no edge moved."""
    period = 1_000_000
    t, level = square_wave(period, 41)
    gap = blind_intervals((int(t[20]) + 100_000, int(t[20]) + 110_000))  # 10 us, 0.1 ms after an edge
    got = metrics(t, level, period, warmup_ns=0, blind=gap)
    assert got["excluded_periods"] == 0
    assert got["blind_time_ns"] == 10_000
    assert got["missed_edges"] == 0


def test_blind_gap_holding_an_edge_or_a_quarter_period_excludes():
    period = 1_000_000
    t, level = square_wave(period, 41)
    on_edge = blind_intervals((int(t[20]) - 10_000, int(t[20])))  # the edge was caught late
    assert metrics(t, level, period, warmup_ns=0, blind=on_edge)["excluded_periods"] == 3
    long_gap = blind_intervals((int(t[20]) + 100_000, int(t[20]) + 350_000))  # T/4: could hide a pulse
    assert metrics(t, level, period, warmup_ns=0, blind=long_gap)["excluded_periods"] == 2


def test_a_percentile_of_a_blind_run_is_an_interval():
    # 3 late edges: 6 periods of |e| = 0.1; edges 600 and 601 lost: 2 excluded + 2 missed periods.
    # 990 used (984 at 0, 6 at 0.1), 994 true: p99's rank over them is ceil(984.06) = 985
    t, level = square_wave(T, 1000, start_ns=START, delays={100: 100, 200: 100, 300: 100})
    blind = blind_intervals((START + 600 * 500 - 100, START + 601 * 500 + 100))
    got = metrics(*observe(t, level, blind), blind=blind)
    assert (got["n_periods"], got["excluded_periods"], got["missed_edges"]) == (990, 2, 2)
    assert got["unobserved_periods"] == 4
    assert got["p99_rel_period_error"] == 0.0  # censored: rank 981 of the 990 used
    assert got["p99_rel_period_error_lower_bound"] == 0.0  # rank 985 - 4: the 4 all perfect
    assert got["p99_rel_period_error_upper_bound"] == pytest.approx(0.1)  # rank 985: all bad
    assert "max_rel_period_error_upper_bound" not in got  # the 4 unseen ones may be anything


def test_a_throttled_observer_leaves_p99_unbounded():
    # blind 50 us of a 1 ms run (as under RT throttling): 100 edges lost, 5 % of the periods
    t, level = square_wave(T, 2000, start_ns=START)
    blind = blind_intervals((START + 1000 * 500 - 100, START + 1100 * 500 - 100))
    got = metrics(*observe(t, level, blind), blind=blind)
    assert got["unobserved_periods"] == got["excluded_periods"] + got["missed_edges"] == 102
    assert got["p99_rel_period_error"] == got["max_rel_period_error"] == 0.0  # what was seen
    for name in ("p99", "p999", "p9999", "max"):  # past 1 - q unobserved: no upper bound
        assert f"{name}_rel_period_error_upper_bound" not in got, name
    assert got["p50_rel_period_error_upper_bound"] == 0.0  # half the periods cannot hide in 5 %


def test_nothing_unobserved_closes_every_interval():
    t, level = square_wave(T, 400, start_ns=START, delays={100: 100})
    got = metrics(t, level)
    assert got["unobserved_periods"] == 0
    for p in ("p50", "p99", "p999", "p9999"):
        name = f"{p}_rel_period_error"
        assert got[f"{name}_lower_bound"] == got[name] == got[f"{name}_upper_bound"], p
    assert got["max_rel_period_error_upper_bound"] == got["max_rel_period_error"] == pytest.approx(0.1)
