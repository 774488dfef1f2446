"""`run --until-decided image=A..image=B` on an image campaign of fake boards (a fake target that logs
what an image campaign asks of a board; the fake benchmark measures per image and repetition what
the test says): rounds flash and boot each image again and add a repetition of the undecided cells
on both, until decided or --max-runs; --resume goes on with the rounds; groups that are not two of
the campaign's images are refused before anything is flashed."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from jitterlab.cli.main import main
from jitterlab.execution import farm
from jitterlab.measure.benchmarks.base import Measurement
from jitterlab.model.records import Metric
from jitterlab.report.layout import commands_in
from jitterlab.store.catalog import Store
from jitterlab.targets.capabilities import FlashesImages, Wrapper
from jitterlab.targets.fake import FakeTarget
from tests.execution import fakes

NOISY = [100.0, 200.0, 50.0, 150.0, 80.0, 120.0, 90.0, 160.0, 70.0, 110.0]


class Board(Wrapper, FlashesImages):
    """A fake target that logs the images it boots; `booted` is the image it runs."""

    def __init__(self, inner: FakeTarget, log: list[str]) -> None:
        super().__init__(inner)
        self.log = log
        self.booted = ""

    def install(self, image: str, boot_prompt: str, boot_timeout_s: float) -> float:
        self.booted = Path(image).stem
        self.log.append(f"boot {self.booted}")
        return 0.5

    def connect(self) -> None:
        pass

    def disconnect(self) -> None:
        pass


class Kinds:
    def __init__(self, opener) -> None:
        self.opener = opener

    def get(self, kind: str, where: str):
        return self.opener


@pytest.fixture
def lab(tmp_path, monkeypatch):
    """(boots logged, values[image][repetition] the fake benchmark measures: fake_value, lower is better)."""
    fakes.register(monkeypatch)
    log: list[str] = []
    boards: list[Board] = []

    def opener(name, options, where=None):
        boards.append(Board(FakeTarget(name, str(options["workdir"]), quiet=True), log))
        return boards[-1]

    monkeypatch.setattr(farm.plugins, "TARGETS", Kinds(opener))
    # the board as the runner sees it wraps the fake target: no fake clock to advance through it
    monkeypatch.setattr(fakes._Measuring, "measure", lambda self: self.program.stop() or self.ctx.repetition)
    table: dict[str, list[float]] = {}
    monkeypatch.setattr(fakes.FakeBenchmark, "analyse", lambda self, ctx, measured: Measurement(
        [Metric("fake_value", table[boards[0].booted][ctx.repetition], "")]))
    return log, table


def campaign(tmp_path: Path, reps: int = 2) -> Path:
    (tmp_path / "env.yaml").write_text("targets: {}\n")
    for image in ("A", "B"):
        (tmp_path / f"{image}.img").write_bytes(image.encode())
    path = tmp_path / "ab.toml"
    path.write_text(f"""[campaign]
name = "ab"
repetitions = {reps}
duration = "10ms"
warmup = "1ms"
load_warmup = "1ms"
run_timeout = "10s"
[[target]]
name = "bbb"
kind = "labgrid"
env = {json.dumps(str(tmp_path / "env.yaml"))}
workdir = {json.dumps(str(tmp_path / "w"))}
images = {{ "A" = {json.dumps(str(tmp_path / "A.img"))}, "B" = {json.dumps(str(tmp_path / "B.img"))} }}
[matrix]
benchmark = "fake"
load = "fake"
""")
    return path


def run(path: Path, *extra: str) -> int:
    return main(["run", str(path), "--results", str(path.parent / "r"), "--until-decided", "image=A..image=B",
                 *extra])


def stored(tmp_path: Path) -> list[tuple[str, int]]:
    return sorted((r.labels["image"], r.repetition) for r in Store(tmp_path / "r", create=False).runs())


def test_rounds_boot_each_image_again_until_the_verdict_is_decided(tmp_path, lab, capsys):
    log, values = lab
    values["A"] = [100.0, 101.0, 99.0, 100.5, 99.5]
    values["B"] = [200.0, 202.0, 198.0, 201.0, 199.0]  # 2x: worse once each image has 3 runs
    assert run(campaign(tmp_path)) == 0
    assert log == ["boot A", "boot B", "boot A", "boot B"]  # one round: each image booted again
    assert stored(tmp_path) == [(image, rep) for image in "AB" for rep in range(3)]
    out = capsys.readouterr().out
    assert "image=A: flashing and booting 1 board(s) again (repetition #3)" in out
    assert ("bbb: fake fake, 2 vs 2 runs: the candidate image=B gains run #3 and the baseline image=A "
            "gains run #3; fake_value undecided: no interval yet (3 runs per group needed)") in out
    assert out.rstrip().endswith("--until-decided image=A..image=B: every watched verdict is decided after "
                                 "2 extra runs in 1 round (1 worse; false better/worse ≤ 5 % however often "
                                 "you look)")
    assert "compare the images:" not in out  # the run ends on the comparison itself
    # each image's runs stay in its own campaign: compare reads them as after any image campaign
    store = Store(tmp_path / "r", create=False)
    assert sorted(dict(c.labels)["image"] for c in store.campaigns()) == ["A", "B"]


def test_the_run_bound_stops_the_rounds_and_resume_goes_on_with_them(tmp_path, lab, capsys):
    log, values = lab
    values["A"] = NOISY
    values["B"] = [v * 1.1 for v in NOISY]  # 10 % in this much noise: undecided for long
    path = campaign(tmp_path)
    assert run(path, "--max-runs", "4") == 0
    assert log == ["boot A", "boot B"] + ["boot A", "boot B"] * 2  # two rounds of 2 runs
    assert stored(tmp_path) == [(image, rep) for image in "AB" for rep in range(4)]
    out = capsys.readouterr().out
    assert "stopped after 4 extra runs in 2 rounds: 1 verdict still undecided (1 undecided); the next " \
           "round (2 runs) would pass --max-runs 4 (4 so far)" in out
    [again] = [c for line in out.splitlines() for c in commands_in(line) if "--max-runs 8" in c]
    assert again == (f"jitterlab run {path} --results {tmp_path}/r --resume --until-decided image=A..image=B "
                     "--max-runs 8")
    log.clear()
    assert main(shlex.split(again)[1:]) == 0  # as printed: the rounds go on, nothing measured twice
    assert log == ["boot A", "boot B"] * 2  # no image booted for the runs it has already
    assert stored(tmp_path) == [(image, rep) for image in "AB" for rep in range(6)]
    assert len(Store(tmp_path / "r", create=False).campaigns()) == 2


@pytest.mark.parametrize(("option", "says"), [
    (["--until-decided", "image=A..image=C"], "--until-decided image=A..image=C: no image has image=C (the "
                                              "campaign's images: image=A, image=B)"),
    (["--until-decided", "target=a..target=b"], "--until-decided target=a..target=b: an image campaign "
                                                "compares its images: select two by their label, e.g. "
                                                "--until-decided image=A..image=B"),
    (["--resume"], "--resume: an image campaign measures every image afresh; run it again (with "
                   "--until-decided, --resume goes on with its rounds)"),
])
def test_groups_that_are_not_two_images_are_refused_before_anything_is_flashed(tmp_path, lab, capsys, option,
                                                                                says):
    log, _ = lab
    path = campaign(tmp_path)
    assert main(["run", str(path), "--results", str(tmp_path / "r"), *option]) == 2
    assert capsys.readouterr().err.strip() == f"error: {says}"
    assert log == [] and not (tmp_path / "r").exists()


def test_an_unmeasurable_run_exits_1_without_a_command_to_measure_again(tmp_path, lab, monkeypatch, capsys):
    from jitterlab.model.errors import RunFailed

    log, values = lab
    values["A"] = values["B"] = [100.0, 101.0]

    def analyse(self, ctx, measured):
        if log[-1] == "boot B" and ctx.repetition == 1:
            raise RunFailed("too few edges: 1 (the program was starved)", status="unmeasurable")
        return Measurement([Metric("fake_value", values[log[-1][-1]][ctx.repetition], "")])

    monkeypatch.setattr(fakes.FakeBenchmark, "analyse", analyse)
    assert main(["run", str(campaign(tmp_path)), "--results", str(tmp_path / "r")]) == 1
    out = capsys.readouterr().out
    assert "measure the failed runs again" not in out  # nothing failed: the image starved the program
    assert "compare the images: jitterlab compare" in out


def test_a_round_that_would_pass_the_time_bound_is_not_started(tmp_path, lab, capsys):
    log, values = lab
    values["A"] = NOISY
    values["B"] = [v * 1.1 for v in NOISY]
    path = campaign(tmp_path)
    assert run(path, "--max-time", "1ms") == 0  # a round's runs alone take longer than that
    assert log == ["boot A", "boot B"]  # no image booted again
    assert stored(tmp_path) == [(image, rep) for image in "AB" for rep in range(2)]
    out = capsys.readouterr().out
    assert "--until-decided image=A..image=B: stopped after 0 extra runs in 0 rounds: 1 verdict still " \
           "undecided (1 undecided); the next round (about " in out
    assert ") would pass --max-time 1ms; go on: jitterlab run " in out
