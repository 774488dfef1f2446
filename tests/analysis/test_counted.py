"""Counting checks for a program that timestamps nothing (a unit's firmware), and the round trips of
its chatter: exact on synthetic data."""

from __future__ import annotations

import numpy as np
import pytest

from jitterlab.analysis.chatter import chatter_metrics, parse_chatter
from jitterlab.analysis.counted import CountCheck
from jitterlab.model.errors import RunFailed


@pytest.mark.parametrize(("counted", "seen", "watched", "difference"), [
    (400, 400, True, None),
    (400, 381, True, "it saw 381 edges, 19 fewer than the 400 the unit counted"),
    (400, 379, False, "it saw 379 edges, 21 fewer than the 400 the unit counted"),
    (400, 424, True, "it saw 424 edges, 24 more than the 400 the unit counted"),
    (400, 425, False, "it saw 425 edges, 25 more than the 400 the unit counted"),
    (0, 0, False, None),
])
def test_a_count_is_the_program_s_within_the_alignment_s_shares(counted, seen, watched, difference):
    check = CountCheck(counted, seen)
    assert (check.watched, check.difference()) == (watched, difference)
    metrics = {m.name: (m.value, m.subject, m.direction) for m in check.metrics("sigrok")}
    assert metrics == {
        "counted_edges": (counted, "sigrok", "none"), "seen_edges": (seen, "sigrok", "none"),
        "unseen_edges": (max(counted - seen, 0), "sigrok", "lower"),
        "extra_edges": (max(seen - counted, 0), "sigrok", "lower")}


def test_the_chatter_log_gives_the_round_trips_statistics_and_the_lost():
    rtt, lost = parse_chatter("300000\n100000\n200000\n# lost=2\n", "chatter log x")
    assert rtt.tolist() == [300_000, 100_000, 200_000] and lost == 2
    got = {m.name: m.value for m in chatter_metrics(rtt, lost)}
    assert got == {"chatter_rtt_min_ns": 100_000, "chatter_rtt_mean_ns": 200_000,
                   "chatter_rtt_max_ns": 300_000, "chatter_rtt_p50_ns": 200_000,
                   "chatter_rtt_std_ns": pytest.approx(np.std([1e5, 2e5, 3e5])),
                   "chatter_rtt_p99_ns": 300_000, "chatter_rtt_p999_ns": 300_000,
                   "chatter_rtt_p9999_ns": 300_000, "chatter_rtt_samples": 3, "chatter_lost": 2}
    assert {m.name: m.value for m in chatter_metrics(np.empty(0, np.int64), 5)} == {"chatter_lost": 5}, \
        "no answer came back: only the count of those lost"


@pytest.mark.parametrize(("text", "why"), [
    ("100\n200\n", "truncated (no '# lost=N' line)"),
    ("", "truncated (no '# lost=N' line)"),
    ("100\n-5\n# lost=0\n", "garbled (a round trip is not a whole number of ns)"),
])
def test_a_chatter_log_that_is_not_whole_is_refused(text, why):
    with pytest.raises(RunFailed, match=rf"^chatter log x: {__import__('re').escape(why)}$"):
        parse_chatter(text, "chatter log x")
