"""Monitoring: one repetition per interval, committed as it ends, resumed after an interruption."""

from __future__ import annotations

import threading

import pytest

from jitterlab.campaign.file import load_campaign
from jitterlab.cli.main import main
from jitterlab.execution import monitor as monitor_module
from jitterlab.execution import preflight
from jitterlab.execution.monitor import Schedule, monitor
from jitterlab.execution.preflight import open_targets
from jitterlab.model.errors import UserError
from jitterlab.store.catalog import Store

CAMPAIGN = """
[campaign]
name = "mon"
duration = "100ms"
warmup = "20ms"
[[target]]
name = "local"
kind = "local"
workdir = "{workdir}"
[matrix]
impl = "python"
period = "10ms"
probe = "self"
"""
S = 1_000_000_000


def test_schedule_needs_room_for_a_pass(tmp_path):
    path = tmp_path / "m.toml"
    path.write_text(CAMPAIGN.format(workdir=tmp_path / "w"))
    campaign = load_campaign(path)
    schedule = Schedule.of(campaign, 10 * S, 3 * S)
    assert schedule.intervals == 4 and schedule.campaign(campaign).repetitions == 4
    assert schedule.campaign(campaign).labels == {"monitor_every": "3s", "monitor_intervals": "4"}
    with pytest.raises(UserError, match=r"--every 10ms: one pass over the campaign's cells takes about"):
        Schedule.of(campaign, 10 * S, 10_000_000)
    with pytest.raises(UserError, match=r"--for 1s: shorter than --every 2s"):
        Schedule.of(campaign, S, 2 * S)


def test_intervals_are_repetitions_and_resume_goes_on(tmp_path):
    path = tmp_path / "m.toml"
    path.write_text(CAMPAIGN.format(workdir=tmp_path / "w"))
    campaign = load_campaign(path)
    schedule = Schedule.of(campaign, 3 * S, S)
    store = Store(tmp_path / "r")
    stop, seen = threading.Event(), []

    def notice(text: str) -> None:
        seen.append(text)
        if len(seen) == 2:  # interrupted when the second interval is due
            stop.set()

    sessions = open_targets(campaign)
    try:
        assert monitor(campaign, store, sessions, schedule, resume=False, notice=notice, stop=stop) == (1, 0)
    finally:
        for s in sessions:
            s.target.close()
    [camp] = store.campaigns()
    assert [r.repetition for r in store.runs(camp.id)] == [0]
    sessions = open_targets(campaign)
    try:
        done = monitor(campaign, store, sessions, schedule, resume=True, notice=seen.append,
                       stop=threading.Event())
    finally:
        for s in sessions:
            s.target.close()
    assert done == (2, 0)
    assert [r.repetition for r in store.runs(camp.id)] == [0, 1, 2] and len(store.campaigns()) == 1
    assert [text.split(" at ")[0] for text in seen[-2:]] == ["interval 2/3", "interval 3/3"]


class _Session:
    """What open_targets hands back, as far as the command uses it: a target to close."""

    def __init__(self, closed: list[str], name: str) -> None:
        self.target = self
        self._closed, self.name = closed, name

    def close(self) -> None:
        self._closed.append(self.name)


def _fake_targets(monkeypatch, closed: list[str]) -> None:
    sessions = [_Session(closed, "vm"), _Session(closed, "rpi")]
    monkeypatch.setattr(preflight, "open_targets", lambda campaign: sessions)


def test_a_store_that_cannot_open_lets_the_opened_targets_go(tmp_path, monkeypatch, capsys):
    path = tmp_path / "m.toml"
    path.write_text(CAMPAIGN.format(workdir=tmp_path / "w"))
    (tmp_path / "r").write_text("a file where the results directory should be")
    closed: list[str] = []
    _fake_targets(monkeypatch, closed)
    assert main(["monitor", str(path), "--for", "2s", "--every", "1s", "--results", str(tmp_path / "r")]) == 2
    assert sorted(closed) == ["rpi", "vm"]  # a labgrid place, a booted VM: released
    assert f"--results {tmp_path / 'r'}" in capsys.readouterr().err.replace("\n", "")


def test_monitor_prints_escaped_and_an_interrupt_says_how_to_go_on(tmp_path, monkeypatch, capsys):
    path = tmp_path / "m\x1b]0;x\x07.toml"
    path.write_text(CAMPAIGN.format(workdir=tmp_path / "w"))
    closed: list[str] = []
    _fake_targets(monkeypatch, closed)

    def interrupted(campaign, store, sessions, schedule, *, resume, notice, stop, ended):
        notice("interval 1/2 \x1b[2J")
        raise KeyboardInterrupt

    monkeypatch.setattr(monitor_module, "monitor", interrupted)
    argv = ["monitor", str(path), "--for", "2s", "--every", "1s", "--results", str(tmp_path / "r")]
    assert main(argv) == 130
    out = capsys.readouterr().out.replace("\n", "")
    assert "\x1b" not in out and "\x07" not in out
    assert "mon: interval 1/2 \\x1b[2J" in out
    assert f"interrupted: go on with jitterlab monitor '{tmp_path}/m\\x1b]0;x\\x07.toml' --for 2s " \
           f"--every 1s --resume --results {tmp_path}/r" in out
    assert sorted(closed) == ["rpi", "vm"]


# --- intervals that end with their values and change points (fake target, fake benchmark) ---------

FLAT = [100.0, 101.0, 99.0, 100.5, 99.5, 100.2, 99.8, 100.1]


def _fake_monitoring(tmp_path, monkeypatch, values: list[float]):
    """A campaign of one fake cell whose interval k measures values[k]; the schedule of any
    --for/--every is len(values) intervals of 1 ms, so that the test waits for nothing."""
    from jitterlab.measure.benchmarks.base import Measurement
    from jitterlab.model.records import Metric
    from jitterlab.targets import fake
    from tests.execution import fakes

    monkeypatch.setattr(fake, "OPENED", [])
    fakes.register(monkeypatch)
    monkeypatch.setattr(fakes.FakeBenchmark, "analyse", lambda self, ctx, measured: Measurement(
        [Metric("fake_value", values[ctx.repetition], "")]))
    monkeypatch.setattr(monitor_module.Schedule, "of",
                        classmethod(lambda cls, campaign, for_ns, every_ns: cls(1_000_000, len(values))))
    path = tmp_path / "mon.toml"
    path.write_text("\n".join([
        "[campaign]", 'name = "mon"', 'duration = "10ms"', 'warmup = "1ms"', 'run_timeout = "1s"',
        "[[target]]", 'name = "a"', 'kind = "fake"', f'workdir = "{tmp_path / "a"}"',
        "[matrix]", 'benchmark = "fake"', 'load = "fake"', ""]))
    return ["monitor", str(path), "--for", "9s", "--every", "1s", "--results", str(tmp_path / "r")]


def test_each_interval_ends_with_its_values_and_the_newest_change_raises_an_alert(tmp_path, monkeypatch,
                                                                                 capsys):
    argv = _fake_monitoring(tmp_path, monkeypatch, [*FLAT, 300.0])
    assert main(argv) == 0
    out = capsys.readouterr().out.splitlines()
    heads = [line.split(" at ")[0] for line in out]  # the time, and a slow machine's "(… s late)" left out
    assert out[heads.index("mon: interval 1/9") + 1] == "  a fake fake: fake_value 100"
    assert out[heads.index("mon: interval 2/9") + 1] == "  a fake fake: fake_value 101"
    [alert] = [line for line in out if line.startswith("ALERT")]
    runs = {r.repetition: r.id for r in Store(tmp_path / "r").runs()}
    assert alert == (f"ALERT a fake fake fake_value: interval 9/9 starts a change: 100 → 300 (+200 %, "
                     f"p <0.0001); last run before {runs[7]}, first after {runs[8]}")
    assert out.index(alert) == heads.index("mon: interval 9/9") + 2  # after that interval's values
    assert out[-2:] == ["change points in the history so far:",
                        f"  a fake fake fake_value: from interval 9: 100 → 300 (+200 %); "
                        f"runs {runs[7]} | {runs[8]}"]


def test_fail_on_change_stops_with_exit_1_and_resume_goes_on_without_alerting_again(tmp_path, monkeypatch,
                                                                                   capsys):
    argv = _fake_monitoring(tmp_path, monkeypatch, [*FLAT[:5], 300.0, 301.0, 299.0])
    assert main([*argv, "--fail-on-change"]) == 1
    out = capsys.readouterr().out
    assert "ALERT a fake fake fake_value: interval 6/8 starts a change" in out
    assert "stopped: a change started (--fail-on-change); go on with jitterlab monitor" in out
    assert sorted(r.repetition for r in Store(tmp_path / "r").runs()) == [0, 1, 2, 3, 4, 5]
    assert main([*argv, "--fail-on-change", "--resume"]) == 0
    out = capsys.readouterr().out
    assert "ALERT" not in out and "mon: interval 8/8" in out
    assert sorted(r.repetition for r in Store(tmp_path / "r").runs()) == list(range(8))


# a +34 % step whose first value alone does not stand out (t-test p 0.006 against the history
# before it, the change-point threshold is 0.001) and whose second does (p 0.0004)
NEEDS_TWO = [100.0, 110.0, 92.0, 106.0, 94.0, 104.0, 135.0, 136.0, 134.0]


def test_a_change_that_needs_a_second_value_alerts_when_it_is_seen_naming_where_it_started(
        tmp_path, monkeypatch, capsys):
    argv = _fake_monitoring(tmp_path, monkeypatch, NEEDS_TWO)
    assert main(argv) == 0
    out = capsys.readouterr().out.splitlines()
    heads = [line.split(" at ")[0] for line in out]
    runs = {r.repetition: r.id for r in Store(tmp_path / "r").runs()}
    [alert] = [line for line in out if line.startswith("ALERT")]  # once: interval 9 sees it already known
    assert alert == (f"ALERT a fake fake fake_value: a change from interval 7, seen at interval 8/9: "
                     f"101 → 135.5 (+34.2 %, p 0.00036); last run before {runs[5]}, first after {runs[6]}")
    assert out.index(alert) == heads.index("mon: interval 8/9") + 2
    assert out[-1] == (f"  a fake fake fake_value: from interval 7: 101 → 135 (+33.7 %); "
                       f"runs {runs[5]} | {runs[6]}")


def test_fail_on_change_stops_at_the_interval_that_sees_a_change_that_needed_two_values(
        tmp_path, monkeypatch, capsys):
    argv = _fake_monitoring(tmp_path, monkeypatch, NEEDS_TWO)
    assert main([*argv, "--fail-on-change"]) == 1
    out = capsys.readouterr().out
    assert "ALERT a fake fake fake_value: a change from interval 7, seen at interval 8/9" in out
    assert sorted(r.repetition for r in Store(tmp_path / "r").runs()) == list(range(8))
    assert main([*argv, "--fail-on-change", "--resume"]) == 0  # known by now: no second alarm
    assert "ALERT" not in capsys.readouterr().out


# --- the options named, the lines labelled, the printed commands runnable ---------------------------


def test_resuming_with_another_schedule_names_for_and_every(tmp_path, monkeypatch, capsys):
    # it blamed the campaign file ("was run with other settings ... restore the old file")
    from jitterlab.execution.runner import Runner

    path = tmp_path / "m.toml"
    path.write_text(CAMPAIGN.format(workdir=tmp_path / "w"))
    store = Store(tmp_path / "r")
    Runner(Schedule.of(load_campaign(path), 3 * S, S).campaign(load_campaign(path)), store).campaign_id()
    store.close()
    _fake_targets(monkeypatch, [])
    argv = ["monitor", str(path), "--every", "1s", "--resume", "--results", str(tmp_path / "r")]
    assert main([*argv, "--for", "5s"]) == 2
    assert capsys.readouterr().err == (
        "error: --for 5s --every 1s: the monitoring of 'mon' that --resume goes on with measures every 1s "
        "for 3 intervals; resume it with --for 3s --every 1s, or leave out --resume to start another\n")


def test_fail_on_change_with_too_few_intervals_for_a_change_point_is_refused(tmp_path, monkeypatch, capsys):
    from jitterlab.analysis.changepoints import MIN_VALUES

    path = tmp_path / "m.toml"
    path.write_text(CAMPAIGN.format(workdir=tmp_path / "w"))
    closed: list[str] = []
    _fake_targets(monkeypatch, closed)
    argv = ["monitor", str(path), "--every", "1s", "--fail-on-change", "--results", str(tmp_path / "r")]
    assert main([*argv, "--for", "3s"]) == 2
    assert capsys.readouterr().err == (
        f"error: --fail-on-change with --for 3s --every 1s: 3 intervals, and a change point needs at least "
        f"{MIN_VALUES}; give --for 4s or more, or leave out --fail-on-change\n")
    assert closed == [] and not (tmp_path / "r").exists()  # refused before anything opened


def _two_probes(monkeypatch, values: list[float]) -> None:
    """Each interval k measures, like a squarewave cell with probe vpin, two metrics seen by two probes."""
    from jitterlab.measure.benchmarks.base import Measurement
    from jitterlab.model.records import Metric
    from tests.execution import fakes

    monkeypatch.setattr(fakes.FakeBenchmark, "analyse", lambda self, ctx, measured: Measurement([
        Metric("max_rel_period_error", values[ctx.repetition], "ratio", "vpin"),
        Metric("max_rel_period_error", values[ctx.repetition] / 2, "ratio", "self"),
        Metric("p99_rel_period_error", values[ctx.repetition] / 4, "ratio", "vpin"),
        Metric("p99_rel_period_error", values[ctx.repetition] / 8, "ratio", "self")]))


def test_each_interval_line_has_its_time_and_one_labelled_value_per_metric_and_probe(tmp_path, monkeypatch,
                                                                                      capsys):
    # "max_rel_period_error 388 %, max_rel_period_error 289 %, p99_rel_period_error 67.9 %, ...": each
    # metric twice, no probe named, no time
    import re

    argv = _fake_monitoring(tmp_path, monkeypatch, [3.88, 3.88, 3.88, 3.88, 30.0])
    _two_probes(monkeypatch, [3.88, 3.88, 3.88, 3.88, 30.0])
    assert main(argv) == 0
    out = capsys.readouterr().out.splitlines()
    heads = [line for line in out if line.startswith("mon: interval")]
    assert len(heads) == 5
    assert all(re.fullmatch(r"mon: interval \d/5 at \d{4}-\d\d-\d\d \d\d:\d\d:\d\d( \(.* late: .*\))?", h)
               for h in heads), heads
    first = out[out.index(heads[0]) + 1]
    assert first == ("  a fake fake: max_rel_period_error self 194 %, vpin 388 %; "
                     "p99_rel_period_error self 48.5 %, vpin 97 %")
    alerts = [line for line in out if line.startswith("ALERT")]
    assert alerts and all(" (probe vpin): " in a or " (probe self): " in a for a in alerts)


def test_every_command_monitor_prints_runs_as_printed(tmp_path, monkeypatch, capsys):
    # the closing hint dropped --results (and said METRIC): run as printed, it failed
    import shlex

    monkeypatch.chdir(tmp_path)
    argv = _fake_monitoring(tmp_path, monkeypatch, [*FLAT[:5], 300.0, 301.0, 299.0])
    argv[argv.index("--results") + 1] = str(tmp_path / "my results")  # not the default, and a space
    assert main([*argv, "--fail-on-change"]) == 1
    out = capsys.readouterr().out.splitlines()
    [resume] = [line.split("go on with ", 1)[1] for line in out if "go on with jitterlab" in line]
    [draw] = [line.split("draw them with ", 1)[1] for line in out if "draw them with jitterlab" in line]
    assert "--results" in resume and "--results" in draw
    for command in (resume, draw):
        words = shlex.split(command)
        assert words[0] == "jitterlab"
        assert main(words[1:]) == 0, command
    assert sorted(r.repetition for r in Store(tmp_path / "my results").runs()) == list(range(8))
    assert "trend report:" in capsys.readouterr().out
