"""report/limits.py: what RT throttling on the target likely did to each probe's blind time."""

from __future__ import annotations

from jitterlab.model.records import Cell, Metric, RunRecord
from jitterlab.report.limits import _rt_throttling

THROTTLED = {"rt_runtime_us": 950000, "rt_period_us": 1000000}


def run(probe: str, blind_ns: float, duration_ns: int = 1_000_000_000) -> RunRecord:
    cell = Cell("board", "squarewave", "idle", (("impl", "c-fifo"), ("probe", probe)))
    return RunRecord(f"r-{probe}", 1, cell, 0, {"duration_ns": duration_ns}, {}, "ok", None, 0, 1.0, None,
                     None, 1, {(probe, "blind_time_ns"): Metric("blind_time_ns", blind_ns, "ns", probe)})


def test_a_probe_polling_on_the_target_is_blind_while_throttled():
    likely = _rt_throttling("board", THROTTLED, [run("vpin", 1e7)]).likely
    assert likely.startswith("the polling probe (SCHED_FIFO) keeps its CPU: it was blind 1 % of the measured")


def test_a_probe_on_the_controller_is_not_blinded_by_the_targets_throttling():
    likely = _rt_throttling("board", THROTTLED, [run("register-poll", 5e6)]).likely
    assert "SCHED_FIFO" not in likely and "keeps its CPU: it was blind" not in likely
    assert ("probe register-poll runs on the controller, out of reach of the target's throttling: its "
            "0.5 % blind time (where its reads came late) stays") in likely


def test_both_kinds_are_told_apart():
    likely = _rt_throttling("board", THROTTLED, [run("vpin", 2e7), run("register-poll", 5e6)]).likely
    assert "it was blind 2 % of the measured time here (up to 2 % in a run)" in likely
    assert "probe register-poll runs on the controller" in likely
