"""The runner through `jitterlab run`, on fake targets with a fake benchmark and fake loads
(tests/execution/fakes.py): interrupts in every phase, a lost target, failing loads, retries,
resume, and loads kept up between runs. Nothing real runs; each test takes milliseconds."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from jitterlab.cli.main import main
from jitterlab.execution.loads import TargetLoads
from jitterlab.store.catalog import Store
from jitterlab.targets import fake
from tests.execution import fakes


@pytest.fixture
def plan(monkeypatch):
    monkeypatch.setattr(fake, "OPENED", [])
    return fakes.register(monkeypatch)


def campaign(tmp_path: Path, *, targets=("a",), reps=3, load="fake", name="fake") -> Path:
    lines = ["[campaign]", f'name = "{name}"', f"repetitions = {reps}", 'duration = "10ms"',
             'warmup = "1ms"', 'load_warmup = "1ms"', 'run_timeout = "1s"']
    for target in targets:
        lines += ["[[target]]", f'name = "{target}"', 'kind = "fake"',
                  f"workdir = {json.dumps(str(tmp_path / target))}"]
    lines += ["[matrix]", 'benchmark = "fake"', f"load = {json.dumps(load)}", ""]
    path = tmp_path / "fake.toml"
    path.write_text("\n".join(lines))
    return path


def run(path: Path, *extra: str) -> int:
    return main(["run", str(path), "--results", str(path.parent / "results"), *extra])


def runs(tmp_path: Path) -> list:
    return sorted(Store(tmp_path / "results", create=False).runs(), key=lambda r: (r.target, r.repetition))


def nothing_left_running() -> None:
    assert fake.OPENED, "no fake target was opened"
    for target in fake.OPENED:
        assert target.running() == [], (target.name, [p.argv for p in target.running()])
        assert target.closed


def test_runs_on_two_targets_are_committed_and_nothing_is_left_running(tmp_path, plan):
    assert run(campaign(tmp_path, targets=("a", "b"))) == 0
    stored = runs(tmp_path)
    assert [(r.target, r.repetition, r.status) for r in stored] == [
        (t, rep, "ok") for t in ("a", "b") for rep in range(3)]
    assert [r.metric("fake_value", "") for r in stored] == [0.0, 1.0, 2.0] * 2
    assert [(t, phase) for t, phase, rep in plan.events if rep == 0 and t == "a"] == [
        ("a", "prepare"), ("a", "measure"), ("a", "analyse")]
    nothing_left_running()


def test_a_load_the_next_run_uses_is_started_once_read_per_run_and_stopped_at_the_end(tmp_path, plan):
    assert run(campaign(tmp_path, reps=4)) == 0
    assert (plan.counts["start fake"], plan.counts["stop fake"]) == (1, 1)
    assert (plan.counts["mark fake"], plan.counts["snapshot fake"]) == (3, 3)  # each kept run read apart
    assert plan.counts["check fake"] >= 2 * 4  # before and after each measurement
    assert [r.metric("load_fake_ops_per_s", "") for r in runs(tmp_path)] == [100.0] * 4  # per-run reading
    [target] = fake.OPENED
    assert [c[0] for c in target.calls if c[0].startswith("fake-")].count("fake-load") == 1
    nothing_left_running()


def test_a_load_that_reports_only_when_it_stops_is_started_for_every_run(tmp_path, plan):
    assert run(campaign(tmp_path, reps=3, load="fake-oneshot")) == 0
    assert (plan.counts["start fake-oneshot"], plan.counts["stop fake-oneshot"]) == (3, 3)
    assert [r.metric("load_fake_ops_per_s", "") for r in runs(tmp_path)] == [99.0] * 3
    nothing_left_running()


def test_runs_with_other_loads_in_between_stop_and_start_the_load_again(tmp_path, plan):
    assert run(campaign(tmp_path, reps=2, load=["fake", "fake-oneshot"])) == 0
    # repetitions interleave the cells: fake, oneshot, fake, oneshot
    assert (plan.counts["start fake"], plan.counts["stop fake"]) == (2, 2)
    nothing_left_running()


def test_a_load_that_ends_a_round_runs_on_into_the_next_one_reversed(tmp_path, plan):
    # rounds: oneshot, fake | fake, oneshot | oneshot, fake: fake is started twice, not three times
    assert run(campaign(tmp_path, reps=3, load=["fake-oneshot", "fake"])) == 0
    assert (plan.counts["start fake"], plan.counts["stop fake"]) == (2, 2)
    assert plan.counts["snapshot fake"] == 1  # the run it ran on into is read apart
    nothing_left_running()


def test_a_load_that_dies_fails_its_run_and_is_restarted_for_the_next(tmp_path, plan):
    plan.load_dies = ("a", 1)
    assert run(campaign(tmp_path, reps=4)) == 1
    stored = runs(tmp_path)
    assert [r.status for r in stored] == ["ok", "failed", "ok", "ok"]
    assert stored[1].error == ("load fake was not running during the measurement: "
                               "fake load: its process is gone")
    assert (plan.counts["start fake"], plan.counts["stop fake"]) == (2, 2)
    nothing_left_running()


def test_a_load_that_cannot_start_fails_that_run_and_the_others_go_on(tmp_path, plan):
    plan.load_start_fails = {1}
    assert run(campaign(tmp_path, reps=3, load="fake-oneshot")) == 1
    stored = runs(tmp_path)
    assert [r.status for r in stored] == ["ok", "failed", "ok"]
    assert stored[1].error == "fake-oneshot load: cannot start (start #1)"
    assert [p for p, _, rep in plan.events if rep == 1] == []  # the benchmark was not even prepared
    nothing_left_running()


def _interrupting(monkeypatch, method: str, target: str, rep: int) -> None:
    """TargetLoads.<method> is interrupted at `rep` of `target` (the load phases, up and down)."""
    original = getattr(TargetLoads, method)

    def phase(self, *args):
        seen = [r for t, p, r in fakes.PLAN.events if t == self._target.name and p == "prepare"]
        if self._target.name == target and seen and seen[-1] == rep:
            fakes.interrupt_and_block(self._target)
        return original(self, *args)

    monkeypatch.setattr(TargetLoads, method, phase)


@pytest.mark.parametrize("phase", ["prepare", "up", "measure", "down", "analyse"])
def test_an_interrupt_in_any_phase_commits_nothing_of_that_run_keeps_the_earlier_and_stops_all(
        tmp_path, plan, monkeypatch, phase):
    if phase in ("up", "down"):
        _interrupting(monkeypatch, phase, "a", 2)
    else:
        plan.interrupt = ("a", phase, 2)
    path = campaign(tmp_path, targets=("a", "b"), reps=4)
    assert run(path) == 130
    stored = runs(tmp_path)
    mine = [(r.repetition, r.status) for r in stored if r.target == "a"]
    assert mine == [(0, "ok"), (1, "ok")]  # whole runs before; nothing of the interrupted one
    assert all(r.status == "ok" and r.metric("fake_value", "") == r.repetition for r in stored)
    assert plan.counts["start fake"] == plan.counts["stop fake"]  # the kept load too
    nothing_left_running()
    committed = {r.id for r in stored}

    monkeypatch.undo()  # no interrupt this time
    fakes.register(monkeypatch)
    monkeypatch.setattr(fake, "OPENED", [])
    assert run(path, "--resume") == 0
    again = runs(tmp_path)
    assert [(r.target, r.repetition) for r in again] == [(t, rep) for t in ("a", "b") for rep in range(4)]
    assert committed <= {r.id for r in again}  # nothing measured twice
    assert all(r.status == "ok" for r in again)
    nothing_left_running()


def test_a_lost_target_stores_its_remaining_runs_failed_and_the_others_go_on(tmp_path, plan):
    plan.lose = ("a", "measure", 1)
    assert run(campaign(tmp_path, targets=("a", "b"), reps=4)) == 1
    stored = runs(tmp_path)
    a = [r for r in stored if r.target == "a"]
    assert [r.status for r in a] == ["ok", "failed", "failed", "failed"]
    assert a[1].error == "the fake target's cable was pulled"
    assert all(r.error == "not run: the fake target's cable was pulled" for r in a[2:])
    assert [r.status for r in stored if r.target == "b"] == ["ok"] * 4
    assert not [e for e in plan.events if e[0] == "a" and e[2] >= 2]  # no run tried on a lost target
    nothing_left_running()


def test_a_target_lost_between_two_runs_fails_the_next_runs_not_the_campaign(tmp_path, plan):
    # the last phase of run 0 sends nothing, so run 0 is committed whole; the first command of run 1
    # (making its directory, before any phase) is the first to find the target gone
    plan.drop = ("a", "analyse", 0)
    assert run(campaign(tmp_path, targets=("a", "b"), reps=3)) == 1
    stored = runs(tmp_path)
    a = [r for r in stored if r.target == "a"]
    assert [r.status for r in a] == ["ok", "failed", "failed"]
    assert a[1].error == "the fake target's cable was pulled"
    assert a[2].error == "not run: the fake target's cable was pulled"
    assert [r.status for r in stored if r.target == "b"] == ["ok"] * 3
    assert not [e for e in plan.events if e[0] == "a" and e[2] >= 1]  # run 1 never reached a phase
    nothing_left_running()


def test_retry_failed_measures_again_only_the_failed_runs(tmp_path, plan, capsys):
    plan.fail = ("a", "analyse", 1)
    path = campaign(tmp_path, reps=3)
    assert run(path) == 1
    first = runs(tmp_path)
    assert [r.status for r in first] == ["ok", "failed", "ok"]
    assert first[1].error == "the fake benchmark failed in analyse"
    plan.fail = None
    capsys.readouterr()
    assert run(path, "--resume", "--retry-failed") == 0
    assert "1 run to measure, 2 already committed" in capsys.readouterr().out
    again = runs(tmp_path)
    assert [r.status for r in again] == ["ok"] * 3
    assert [r.id for r in again][0::2] == [r.id for r in first][0::2] and again[1].id != first[1].id
    nothing_left_running()


def test_a_failed_run_keeps_a_sustained_load_for_the_next_which_checks_it(tmp_path, plan):
    plan.fail = ("a", "measure", 1)
    assert run(campaign(tmp_path, reps=3)) == 1
    assert [r.status for r in runs(tmp_path)] == ["ok", "failed", "ok"]
    assert (plan.counts["start fake"], plan.counts["stop fake"]) == (1, 1)
    nothing_left_running()


def test_the_fake_kind_checks_its_options_like_the_others(tmp_path, plan, capsys):
    path = campaign(tmp_path)
    path.write_text(path.read_text().replace(f'workdir = "{tmp_path}/a"', 'workdir = "relative"'))
    assert run(path) == 2
    assert "workdir: must be an absolute path" in capsys.readouterr().err.replace("\n", "")
    path.write_text(path.read_text().replace('workdir = "relative"', 'workdri = "/tmp"'))
    assert run(path) == 2
    err = capsys.readouterr().err.replace("\n", "")
    assert "unknown option of a fake target; did you mean 'workdir'" in err
