"""`run --until-decided` on fake targets (tests/execution/fakes.py): extra repetitions only where the
verdict is undecided, said with why; it stops when decided, at --max-runs and at --max-time, and a
second invocation goes on without measuring anything twice."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

from jitterlab.cli.main import main
from jitterlab.execution import until_decided as loop
from jitterlab.execution.until_decided import decided
from jitterlab.measure.benchmarks.base import Measurement
from jitterlab.model.records import Metric
from jitterlab.report.layout import commands_in
from jitterlab.store.catalog import Store
from jitterlab.targets import fake
from tests.execution import fakes

NOISY = [100.0, 200.0, 50.0, 150.0, 80.0, 120.0, 90.0, 160.0, 70.0, 110.0]


@pytest.fixture
def values(monkeypatch):
    """values[target][repetition]: what the fake benchmark measures (fake_value, lower is better)."""
    monkeypatch.setattr(fake, "OPENED", [])
    fakes.register(monkeypatch)
    table: dict[str, list[float]] = {}
    monkeypatch.setattr(fakes.FakeBenchmark, "analyse", lambda self, ctx, measured: Measurement(
        [Metric("fake_value", table[ctx.target.name][ctx.repetition], "")]))
    return table


def campaign(tmp_path: Path, *, duration: str = "10ms", reps: int = 2) -> Path:
    lines = ["[campaign]", 'name = "ud"', f"repetitions = {reps}", f'duration = "{duration}"',
             'warmup = "1ms"', 'load_warmup = "1ms"', 'run_timeout = "10s"']
    for target in ("standard", "rt"):
        lines += ["[[target]]", f'name = "{target}"', 'kind = "fake"',
                  f"workdir = {json.dumps(str(tmp_path / target))}"]
    lines += ["[matrix]", 'benchmark = "fake"', 'load = "fake"', ""]
    path = tmp_path / "ud.toml"
    path.write_text("\n".join(lines))
    return path


def run(path: Path, *extra: str) -> int:
    return main(["run", str(path), "--results", str(path.parent / "results"),
                 "--until-decided", "target=standard..target=rt", *extra])


def printed(text: str) -> list[str]:
    """The commands the text tells a person to run, line by line."""
    return [c for line in text.splitlines() for c in commands_in(line)]


def stored(tmp_path: Path) -> list[tuple[str, int]]:
    return sorted((r.target, r.repetition) for r in Store(tmp_path / "results", create=False).runs())


def test_the_old_and_the_new_verdicts_read_alike():
    assert [decided(v) for v in ("better", "worse", "same", "undecided", "no significant change")] == [
        True, True, True, False, False]


def test_extra_runs_go_to_the_undecided_cells_until_decided_and_say_why(tmp_path, values, capsys):
    values["standard"] = [100.0, 101.0, 99.0, 100.5]
    values["rt"] = [200.0, 202.0, 198.0, 201.0]  # 2x: worse once each group has 3 runs
    assert run(campaign(tmp_path)) == 0
    assert stored(tmp_path) == [(t, rep) for t in ("rt", "standard") for rep in range(3)]
    out = capsys.readouterr().out
    # the compared cell once per round: which group gains a run, and every watched row that asks
    assert ("rt: fake fake, 2 vs 2 runs: the candidate target=rt gains run #3 and the baseline "
            "target=standard gains run #3; fake_value undecided: no interval yet (3 runs per group "
            "needed)") in out
    assert out.count("fake fake, 2 vs 2 runs") == 1 and "rt: [1/1] fake fake #3" in out
    # the run ends on its answer: what was decided, with its interval, then why the loop stopped
    *_, title, decided, last = out.rstrip().splitlines()
    assert title == "target=rt vs target=standard"
    assert re.fullmatch(r"  worse   fake fake  fake_value  \+100 % \[\+[\d.]+ % – \+[\d.]+ %\]  — 3 vs 3 "
                        r"runs, ≤ 5 % false better/worse, however often you look", decided), decided
    assert last == ("--until-decided target=standard..target=rt: every watched verdict is decided after 2 "
                    "extra runs in 1 round (1 worse; false better/worse ≤ 5 % however often you look)")


def test_the_run_bound_stops_it_and_a_second_invocation_goes_on_without_duplicates(tmp_path, values, capsys):
    values["standard"] = NOISY
    values["rt"] = [v * 1.1 for v in NOISY]  # a 10 % change in this much noise: undecided for long
    path = campaign(tmp_path)
    assert run(path, "--max-runs", "4") == 0
    assert stored(tmp_path) == [(t, rep) for t in ("rt", "standard") for rep in range(4)]
    out = capsys.readouterr().out
    assert "stopped after 4 extra runs in 2 rounds: 1 verdict still undecided (1 undecided); the next " \
           "round (2 runs) would pass --max-runs 4 (4 so far)" in out
    assert "fake_value undecided: +10 % [" in out  # the current CI of the row that asks
    # the bound raised, in a command that runs as printed: as long again
    [again] = [c for c in printed(out) if "--max-runs 8" in c]
    assert again == (f"jitterlab run {path} --results {tmp_path}/results --resume --until-decided "
                     "target=standard..target=rt --max-runs 8")
    assert main(shlex.split(again)[1:]) == 0
    assert stored(tmp_path) == [(t, rep) for t in ("rt", "standard") for rep in range(6)]
    assert len(Store(tmp_path / "results", create=False).campaigns()) == 1


def test_an_interrupted_round_is_finished_first_on_resume(tmp_path, values, capsys):
    values["standard"] = NOISY
    values["rt"] = [v * 1.1 for v in NOISY]
    fakes.PLAN.interrupt = ("rt", "measure", 2)  # Ctrl-C while rt measures its first extra run
    path = campaign(tmp_path)
    assert run(path, "--max-runs", "4", "--watch", "fake_value") == 130
    before = stored(tmp_path)
    assert ("rt", 2) not in before and ("rt", 1) in before
    fakes.PLAN.interrupt = None
    # "continue with" goes on with the same loop: its groups, what it watches, its bounds
    [again] = {c for c in printed(capsys.readouterr().out) if "--resume" in c}  # said as it stops, once
    assert again == (f"jitterlab run {path} --results {tmp_path}/results --resume --until-decided "
                     "target=standard..target=rt --watch fake_value --max-runs 4")
    assert main(shlex.split(again)[1:]) == 0
    assert stored(tmp_path) == [(t, rep) for t in ("rt", "standard") for rep in range(4)]


def test_the_time_bound_counts_the_rounds_measured_and_the_next_ones_estimate(tmp_path, values, monkeypatch,
                                                                             capsys):
    values["standard"] = NOISY
    values["rt"] = [v * 1.1 for v in NOISY]
    # time on the fake targets' clock: a 2 s run takes 2 s there and nothing here
    monkeypatch.setattr(loop, "now", lambda: max((t.clock_s for t in fake.OPENED), default=0.0))
    assert run(campaign(tmp_path, duration="2s"), "--max-time", "6s") == 0
    assert stored(tmp_path) == [(t, rep) for t in ("rt", "standard") for rep in range(4)]  # 2 rounds
    out = capsys.readouterr().out
    assert "stopped after 4 extra runs in 2 rounds" in out and "would pass --max-time 6s" in out


def test_bad_selectors_and_groups_the_campaign_does_not_measure_are_refused_before_measuring(tmp_path, values,
                                                                                            capsys):
    path = campaign(tmp_path)
    assert main(["run", str(path), "--results", str(tmp_path / "results"),
                 "--until-decided", "target=rt"]) == 2
    assert "--until-decided 'target=rt': write BASELINE..CANDIDATE" in capsys.readouterr().err
    assert main(["run", str(path), "--results", str(tmp_path / "results"),
                 "--until-decided", "target=x..target=y"]) == 2
    assert "this campaign measures neither group" in capsys.readouterr().err
    assert main(["run", str(path), "--results", str(tmp_path / "results"), "--max-runs", "3"]) == 2
    assert "--max-runs: only with --until-decided" in capsys.readouterr().err
    assert main(["run", str(path), "--dry-run", "--until-decided", "target=x..target=y"]) == 2
    assert "this campaign measures neither group" in capsys.readouterr().err
    assert fake.OPENED == []  # refused before any target was opened


def test_an_earlier_campaign_as_baseline_with_too_few_runs_is_named_with_the_command_that_measures_it(
        tmp_path, values, capsys):
    values["standard"] = [100.0, 101.0, 99.0, 100.5, 99.5]
    values["rt"] = [101.0, 100.0, 99.5, 100.2, 99.8]
    path = campaign(tmp_path)
    results = str(tmp_path / "results")
    assert main(["run", str(path), "--results", results, "--label", "image=a"]) == 0
    values["standard"] = values["rt"] = [200.0, 202.0, 198.0, 201.0, 199.0]
    argv = ["run", str(path), "--results", results, "--label", "image=b",
            "--until-decided", "image=a..image=b"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    # image=a has 2 runs per cell: no test until it has 3, and this campaign cannot add them; image=b
    # gains a test's 3 runs, then the loop says which group needs runs and the command that measures it
    assert "fake fake, 2 vs 2 runs: the candidate image=b gains run #3 (the baseline image=a, measured by " \
           "another campaign, stays at 2)" in out
    said = (f"--until-decided image=a..image=b: stopped after 2 extra runs in 1 round: 2 verdicts still "
            f"undecided (2 undecided); the baseline image=a needs runs (2 rows at 2 vs 3 runs: a verdict "
            f"needs 3 in each) and this command measures only image=b: with the target as it was for "
            f"image=a, go on with: jitterlab run {path} --results {results} --resume --label image=a "
            "--until-decided image=a..image=b")
    assert out.rstrip().endswith(said)  # the run ends on its answer
    assert len(Store(tmp_path / "results", create=False).runs()) == 10
    # as printed, it adds to image=a's campaign and the verdict moves: decided
    values["standard"] = values["rt"] = [100.0, 101.0, 99.0, 100.5, 99.5]
    [again] = [c for c in printed(out) if "--label image=a" in c]
    assert main(shlex.split(again)[1:]) == 0
    out = capsys.readouterr().out
    assert "fake fake, 2 vs 3 runs: the baseline image=a gains run #3 (the candidate image=b, measured by " \
           "another campaign, stays at 3)" in out
    assert "every watched verdict is decided after 2 extra runs in 1 round (2 worse;" in out
    runs = Store(tmp_path / "results", create=False).runs()
    assert sorted((r.labels["image"], r.repetition) for r in runs if r.target == "rt") == [
        *(("a", rep) for rep in range(3)), *(("b", rep) for rep in range(3))]


def test_an_earlier_campaign_as_baseline_only_this_campaign_grows(tmp_path, values, capsys):
    values["standard"] = values["rt"] = [100.0, 101.0, 99.0, 100.5]
    results = str(tmp_path / "results")
    assert main(["run", str(campaign(tmp_path, reps=3)), "--results", results, "--label", "image=a"]) == 0
    values["standard"] = values["rt"] = [200.0, 202.0, 198.0, 201.0]
    assert main(["run", str(campaign(tmp_path)), "--results", results, "--label", "image=b",
                 "--until-decided", "image=a..image=b"]) == 0
    out = capsys.readouterr().out
    assert "every watched verdict is decided after 2 extra runs in 1 round (2 worse; " in out
    # only the candidate's cells gain runs: the baseline is an earlier campaign, said so
    assert out.count("3 vs 2 runs: the candidate image=b gains run #3 (the baseline image=a, measured by "
                     "another campaign, stays at 3);") == 2  # each target's cell once
    assert "the baseline image=a gains" not in out
    runs = Store(tmp_path / "results", create=False).runs()
    assert sorted((r.labels["image"], r.target, r.repetition) for r in runs) == [
        (image, t, rep) for image in "ab" for t in ("rt", "standard") for rep in range(3)]


@pytest.mark.parametrize("argv", [["--watch", "load_bogo_ops_per_s"],
                                  ["--watch", "fake_value", "--watch", "load_avg_1m"],
                                  ["--watch", "load_nope_per_s", "--dry-run"]])
def test_a_watched_load_reading_is_refused_before_anything_is_measured(tmp_path, values, capsys, argv):
    """A load's reading is stored beside the runs and never compared: watched, it could never be decided."""
    assert run(campaign(tmp_path), *argv) == 2
    err = capsys.readouterr().err.strip()
    readings = ", ".join(m for m in argv if m.startswith("load_"))
    assert err == (f"error: --watch {readings}: a load's reading (load_*) tells what the load did "
                   "and is never compared, so it gets no verdict; watch a metric of the benchmarks, or "
                   "leave out --watch to watch each benchmark's headline metrics")
    assert not (tmp_path / "results").exists()  # refused before the store or any target was opened


@pytest.mark.parametrize("name", ["fake_bound"])
def test_a_watched_metric_only_the_runs_can_tell_of_is_found_after_the_first_round(tmp_path, values, capsys,
                                                                                   monkeypatch, name):
    """What the benchmark declares it can produce but these runs did not (a bound some runs have) is
    checked once the runs are in; the runs are kept."""
    monkeypatch.setattr(fakes.FakeBenchmark, "metrics", ("fake_value", "fake_bound"))
    values["standard"] = values["rt"] = [100.0, 101.0, 99.0]
    assert run(campaign(tmp_path), "--watch", name) == 2
    err = capsys.readouterr().err
    assert f"--watch {name}: no such metric in the runs compared; they have: fake_value" in err
    assert stored(tmp_path) == [(t, rep) for t in ("rt", "standard") for rep in range(2)]
    assert err.rstrip().endswith(f"; the campaign's runs are stored: go on with jitterlab run "
                                 f"{tmp_path}/ud.toml --results {tmp_path}/results --resume --until-decided "
                                 "target=standard..target=rt (each benchmark's headline metrics), or add "
                                 "--watch with one of them"), err
    [again] = printed(err)
    assert main(shlex.split(again)[1:]) == 0  # as printed: the headline metrics watched


def test_the_end_of_a_labelled_loop_names_its_labels(tmp_path, values, capsys):
    values["standard"] = values["rt"] = NOISY
    results = str(tmp_path / "results")
    assert main(["run", str(campaign(tmp_path, reps=6)), "--results", results, "--label", "image=a"]) == 0
    values["standard"] = values["rt"] = [v * 1.1 for v in NOISY]
    assert main(["run", str(campaign(tmp_path)), "--results", results, "--label", "image=b",
                 "--until-decided", "image=a..image=b", "--max-runs", "2"]) == 0
    [again] = [c for c in printed(capsys.readouterr().out) if "--max-runs" in c]
    # --resume finds the campaign by its labels: without --label image=b it would measure neither group
    assert again == (f"jitterlab run {tmp_path}/ud.toml --results {results} --resume --label image=b "
                     "--until-decided image=a..image=b --max-runs 4")
    assert main(shlex.split(again)[1:]) == 0
    assert len(Store(results, create=False).campaigns()) == 2


@pytest.mark.parametrize(("option", "says"), [
    (["--until-decided", "target=standard..target=rt..target=x"],
     "--until-decided 'target=standard..target=rt..target=x': write two groups, BASELINE..CANDIDATE"),
    (["--until-decided", "target=..target=rt"],
     "--until-decided 'target=..target=rt': the baseline 'target=' has no value; write KEY=VALUE"),
    (["--until-decided", "target=standard..target= "],
     "--until-decided 'target=standard..target= ': the candidate 'target= ' has no value"),
    # one side measured here is not enough when the other can never be: no cell has it, no label names it
    (["--until-decided", "target=standard..target=nope"],
     "--until-decided target=standard..target=nope: no cell of this campaign has target=nope (its cells have "
     "target rt, standard)"),
    (["--until-decided", "target=standard..kernel=6.12"],
     "--until-decided target=standard..kernel=6.12: kernel is neither a label of this campaign nor a key "
     "of its cells (target, benchmark, load)"),
    (["--until-decided", "target=standard..target=rt", "--max-time", ""],
     "--max-time: cannot read duration ''"),
    (["--until-decided", "target=standard..target=rt", "--watch", ""],
     "jitterlab run: argument --watch: give a metric's name"),
    (["--until-decided", "target=standard..target=rt", "--watch", " "],
     "jitterlab run: argument --watch: give a metric's name"),
])
@pytest.mark.parametrize("dry_run", [[], ["--dry-run"]], ids=["run", "dry-run"])
def test_until_decided_options_that_cannot_work_are_refused_before_measuring(tmp_path, values, capsys, option,
                                                                             says, dry_run):
    values["standard"] = values["rt"] = [100.0, 101.0, 99.0]
    assert main(["run", str(campaign(tmp_path)), "--results", str(tmp_path / "results"), *option,
                 *dry_run]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {says}") and "\n" not in err.strip(), err
    assert fake.OPENED == [] and not (tmp_path / "results").exists()


@pytest.mark.parametrize(("watched", "says"), [
    (["fake_valeu"],
     "--watch fake_valeu: no benchmark of this campaign produces such a metric; did you mean "
     "'fake_value'? its benchmark fake can produce fake_value; watch one of these, or leave out --watch "
     "to watch each benchmark's headline metrics"),
    (["fake_value", "nope", "zap"],
     "--watch nope, zap: no benchmark of this campaign produces such a metric; its benchmark fake can "
     "produce fake_value; watch one of these, or leave out --watch to watch each benchmark's headline "
     "metrics"),
])
@pytest.mark.parametrize("dry_run", [[], ["--dry-run"]], ids=["run", "dry-run"])
def test_a_watch_no_benchmark_of_the_campaign_produces_is_refused_before_any_target_opens(
        tmp_path, values, capsys, watched, says, dry_run):
    """The benchmarks declare what their cells can produce (Benchmark.metric_names): a name none of
    them does is refused before anything is measured, with the names they can."""
    path = campaign(tmp_path)
    assert run(path, *(w for name in watched for w in ("--watch", name)), *dry_run) == 2
    assert capsys.readouterr().err == f"error: {says}\n"
    assert fake.OPENED == [] and not (tmp_path / "results").exists()


TWO_IMPLS = """[campaign]
name = "ud2"
duration = "1s"
[[target]]
name = "a"
kind = "fake"
[[target]]
name = "b"
kind = "fake"
[matrix]
impl = ["c-fifo", "python"]
period = ["10ms", "1ms"]
probe = "self"
[[exclude]]
target = "a"
impl = "python"
[[exclude]]
target = "b"
impl = "c-fifo"
"""


@pytest.mark.parametrize(("groups", "says"), [
    # what compare refuses once the runs are in: groups sharing runs, groups without a common cell
    ("period=1ms..period=1000000", "both groups hold 2 cell(s) of this campaign (e.g. a squarewave "
     "impl=c-fifo period=1ms probe=self idle): a run would be compared with itself"),
    ("impl=c-fifo..target=a", "both groups hold 2 cell(s) of this campaign"),
    ("target=a..target=b", "no cell of one group has a counterpart in the other (target set aside), so "
     "nothing could be compared"),
    # an earlier image's runs have the cells too: they would be in both groups
    ("image=x..target=a", "select both groups by the label image (two of its values), or both by the "
     "cells: a cell selector takes the runs of every image"),
])
def test_groups_compare_would_refuse_are_refused_before_measuring(tmp_path, capsys, groups, says):
    path = tmp_path / "c.toml"
    path.write_text(TWO_IMPLS)
    assert main(["run", str(path), "--dry-run", "--label", "image=y", "--until-decided", groups]) == 2
    assert capsys.readouterr().err.startswith(f"error: --until-decided {groups}: {says}")
    path.write_text(TWO_IMPLS.replace('[[exclude]]\ntarget = "b"\nimpl = "c-fifo"\n', ""))
    if groups.startswith("target"):  # with a cell both targets measure, the same groups are fine
        assert main(["run", str(path), "--dry-run", "--until-decided", groups]) == 0


def test_the_default_bound_is_each_invocations_so_a_loop_run_again_goes_on(tmp_path, values, capsys):
    """Without --max-runs, each invocation may add 10 runs per cell: the same command run again (the
    summary's hint, which gives no bound) goes on instead of stopping at once; --max-runs N is in all."""
    values["standard"] = NOISY * 3
    values["rt"] = [v * 1.1 for v in NOISY * 3]  # undecided for long
    path = campaign(tmp_path)
    assert run(path) == 0
    out = capsys.readouterr().out
    assert "stopped after 20 extra runs in 10 rounds: 1 verdict still undecided (1 undecided); the next " \
           "round (2 runs) would pass this run's default bound of 10 extra runs per cell (20 in all, 20 so " \
           "far); raise it: " in out
    assert stored(tmp_path)[-1] == ("standard", 11)
    assert main(["run", str(path), "--results", str(tmp_path / "results"), "--resume",
                 "--until-decided", "target=standard..target=rt", "--max-time", "1s"]) == 0
    assert len(stored(tmp_path)) > 24  # went on, within its time bound this time
    went_on = len(stored(tmp_path)) - 4
    assert run(path, "--resume", "--max-runs", "20") == 0  # in all: used up already
    assert f"(2 runs) would pass --max-runs 20 ({went_on} so far); raise it: " in capsys.readouterr().out
