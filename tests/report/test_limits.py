"""report/limits.py: what RT throttling on the target likely did to each probe's blind time."""

from __future__ import annotations

from jitterlab.model.facts import SystemFacts
from jitterlab.model.records import Cell, Metric, RunRecord, StoredSettings
from jitterlab.report import limits

THROTTLED = {"rt_runtime_us": 950000, "rt_period_us": 1000000}


def _rt_throttling(target: str, stored: dict, runs: list[RunRecord]):
    """The limit read from a sysinfo stored with these keys."""
    return limits._rt_throttling(target, SystemFacts.from_json(stored), runs)


def run(probe: str, blind_ns: float, duration_ns: int = 1_000_000_000) -> RunRecord:
    cell = Cell("board", "squarewave", "idle", (("impl", "c-fifo"), ("probe", probe)))
    return RunRecord(f"r-{probe}", 1, cell, 0, StoredSettings(duration_ns=duration_ns), {}, "ok", None, 0,
                     1.0, None, None, 1,
                     {(probe, "blind_time_ns"): Metric("blind_time_ns", blind_ns, "ns", probe)})


def test_a_probe_polling_on_the_target_is_blind_while_throttled():
    likely = _rt_throttling("board", THROTTLED, [run("vpin", 1e7)]).likely
    assert likely == ("the polling probe (SCHED_FIFO) keeps its CPU through the throttled time: the periods "
                      "it was blind to then (its blind share, above) are measured, not excluded")


def test_a_probe_on_the_controller_is_not_blinded_by_the_targets_throttling():
    likely = _rt_throttling("board", THROTTLED, [run("register-poll", 5e6)]).likely
    assert "SCHED_FIFO" not in likely and "through the throttled time" not in likely
    assert ("probe register-poll runs on the controller, out of reach of the target's throttling: its "
            "0.5 % blind time (where its reads came late) stays") in likely


def test_both_kinds_are_told_apart():
    likely = _rt_throttling("board", THROTTLED, [run("vpin", 2e7), run("register-poll", 5e6)]).likely
    assert likely.startswith("the polling probe (SCHED_FIFO) keeps its CPU through the throttled time")
    assert "probe register-poll runs on the controller" in likely


def test_the_fix_fits_where_the_probe_ran_and_who_jitterlab_was():
    sysctl = "sysctl -w kernel.sched_rt_runtime_us=-1"
    outside = ("nothing for the probes, which run outside the target; for a program that keeps a real-time "
               "thread busy there (e.g. impl kmod-busy): ")
    as_root, user = {**THROTTLED, "user_id": 0}, {**THROTTLED, "user_id": 1000}
    assert _rt_throttling("board", as_root, [run("vpin", 1e7)]).fix == f"{sysctl} (until reboot)"
    assert _rt_throttling("board", user, [run("vpin", 1e7)]).fix == f"{sysctl} (as root; until reboot)"
    fix = _rt_throttling("board", as_root, [run("register-poll", 5e6)]).fix
    assert fix == f"{outside}{sysctl} (until reboot)"
    fix = _rt_throttling("board", user, [run("emulator", 5e6)]).fix
    assert fix == f"{outside}{sysctl} (as root; until reboot)"
    assert _rt_throttling("board", as_root, [run("vpin", 1e7), run("register-poll", 5e6)]).fix == (
        f"{sysctl} (until reboot)")  # one probe polled there


def test_what_the_runner_recorded_of_the_probes_wins_over_the_runs_shown():
    planned = {**THROTTLED, "user_id": 0, "rt_throttling": {"setting": "keep", "needed": False}}
    assert _rt_throttling("board", planned, [run("vpin", 1e7)]).fix.startswith("nothing for the probes")
