"""report/limits.py: what RT throttling on the target likely did to each probe's blind time."""

from __future__ import annotations

import dataclasses

from jitterlab.model.facts import SystemFacts, TuningCheck
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


ISOLATED = "CPUs 1 are every online CPU: none would be left for the rest"
CHECKED = {**THROTTLED, "n_cpus": 2, "isolcpus": [], "tuning_checks": [
    {"tuning": "rt-unthrottled", "program_cpus": [1], "probe_cpus": [], "refused": None},
    {"tuning": "isolated", "program_cpus": [1], "probe_cpus": [], "refused": ISOLATED},
    {"tuning": "isolated", "program_cpus": [0], "probe_cpus": [1], "refused": "another reason"},
    {"tuning": "irq-away", "program_cpus": [1], "probe_cpus": [], "refused": "refused for these"},
    {"tuning": "irq-away", "program_cpus": [0], "probe_cpus": [1], "refused": None}]}


def test_the_tuning_checks_a_campaign_recorded_read_back_as_typed_facts():
    info = SystemFacts.from_json(CHECKED)
    assert info.tuning_checks is not None and info.tuning_checks[1] == TuningCheck(
        tuning="isolated", program_cpus=(1,), probe_cpus=(), refused=ISOLATED)
    assert info.as_json()["tuning_checks"] == CHECKED["tuning_checks"]
    # refused: for every CPUs it was asked for (the first reason); not refused: for some, or not asked
    assert info.tuning_refused("isolated") == ISOLATED
    assert info.tuning_refused("irq-away") is None and info.tuning_refused("rt-unthrottled") is None
    assert info.tuning_refused("governor-performance") is None
    assert SystemFacts.from_json(THROTTLED).tuning_checks is None  # an older store's: not asked


def test_a_limit_whose_tuning_the_machine_refused_says_why_instead_of_a_command():
    found = {x.tuning: x for x in limits.limits([run("vpin", 1e7)], lambda _: SystemFacts.from_json(CHECKED))}
    template = limits.measure_tuning("c.toml", "results", {})
    assert set(found) == {"rt-unthrottled", "isolated"}
    assert found["rt-unthrottled"].refused == ""
    assert limits.limit_measured_line(found["rt-unthrottled"], template) == (
        "measure it here (tuning rt-unthrottled): jitterlab run c.toml --results results --resume --tuning "
        "none,rt-unthrottled --until-decided tuning=none..tuning=rt-unthrottled")
    assert limits.limit_measured_line(found["isolated"], template) == (
        f"not measured by a tuning here: tuning isolated cannot be applied on board: {ISOLATED}")
    older = SystemFacts.from_json({**CHECKED, "tuning_checks": None})
    unchecked = limits.limits([run("vpin", 1e7)], lambda _: older)
    assert all(x.refused == "" for x in unchecked)  # a store that did not ask: proposed as before


def test_the_sysinfo_table_shows_the_tuning_checks_in_words():
    from jitterlab.report.terminal import sysinfo_text

    assert sysinfo_text("tuning_checks", CHECKED["tuning_checks"][:3]) == (
        f"rt-unthrottled (CPUs 1): can be applied; isolated (CPUs 1): refused, {ISOLATED}; "
        "isolated (CPUs 0-1): refused, another reason")


def test_a_cause_s_tuning_refused_on_every_target_shown_says_why_instead_of_a_command():
    """measure_of: a tuning refused (for every CPU set asked) on each target of the runs shown is
    not proposed under a cause's remedy; refused on one target of two, or never asked, it is."""
    board = run("vpin", 1e7)
    other = dataclasses.replace(board, id="r-other", sysinfo_id=2,
                                cell=dataclasses.replace(board.cell, target="pc"))
    accepting = SystemFacts.from_json({**CHECKED, "tuning_checks": [
        {"tuning": "isolated", "program_cpus": [1], "probe_cpus": [], "refused": None}]})
    facts = {1: SystemFacts.from_json(CHECKED), 2: accepting}
    alone = limits.measure_of(None, [board], facts.get, "results")
    assert alone.refused == {"isolated": f"tuning isolated cannot be applied on board: {ISOLATED}"}
    template = limits.measure_tuning("c.toml", "results", {})
    measure = limits.Measure(template, alone.refused)
    assert measure.line("isolated") == (
        f"not measured by a tuning here: tuning isolated cannot be applied on board: {ISOLATED}")
    assert measure.line("irq-away") == limits.measured_line("irq-away", template)  # refused for some CPUs
    assert limits.measure_of(None, [board, other], facts.get, "results").refused == {}
    assert limits.measure_of(None, [board], lambda _: SystemFacts.from_json(THROTTLED), "r").refused == {}
