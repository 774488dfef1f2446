"""Every command jitterlab prints for a person to run runs as printed: the suggestions of `run`,
`summary`, `show`, `report` (its lines and its page) and `doctor` are collected from their output on
a few stores (two label groups measured one after the other, runs that failed, imported captures,
squarewave runs with a machine's limits) and each jitterlab command among them is run as printed,
from the directory the person was in: `run` with --dry-run, the others on a copy of that directory
(a report writes its file there). Commands of other programs (sysctl, apt) are never run here; each
must name a program and be whole on its line (tests/report/test_layout.py)."""

from __future__ import annotations

import dataclasses
import html
import json
import os
import re
import shlex
import shutil
from pathlib import Path

import pytest

from jitterlab.analysis.synthetic import square_wave
from jitterlab.cli.main import main
from jitterlab.measure.benchmarks.base import Measurement
from jitterlab.model.records import Metric
from jitterlab.report.layout import COMMAND_WORDS, commands_in
from jitterlab.store.catalog import Store
from jitterlab.targets import fake
from tests.execution import fakes

# what the fake benchmark measures per label and repetition: spread enough to stay undecided
VALUES = {"A": [100.0, 180.0, 60.0], "B": [120.0, 70.0, 200.0], "": [100.0, 110.0, 90.0]}
PLACEHOLDER = re.compile(r"^[A-Z][A-Z_]+$")  # CAMPAIGN, FILE, METRIC: a value the person chooses


def _campaign(where: Path, name: str = "tiny") -> str:
    (where / f"{name}.toml").write_text("\n".join([
        "[campaign]", f'name = "{name}"', "repetitions = 3", 'duration = "10ms"', 'warmup = "1ms"',
        'load_warmup = "1ms"', 'run_timeout = "10s"',
        "[[target]]", 'name = "board"', 'kind = "fake"', f'workdir = "{where / "target"}"',
        "[matrix]", 'benchmark = "fake"', 'load = "fake"', ""]))
    return f"{name}.toml"


@pytest.fixture
def fake_values(monkeypatch):
    monkeypatch.setattr(fake, "OPENED", [])
    plan = fakes.register(monkeypatch)
    label: dict[str, str] = {"image": ""}
    monkeypatch.setattr(fakes.FakeBenchmark, "analyse", lambda self, ctx, measured: Measurement(
        [Metric("fake_value", VALUES[label["image"]][ctx.repetition], "")]))
    return plan, label


RAN: set[tuple[str, tuple[str, ...]]] = set()  # (directory, argv) that exited 0 already


def _out(capsys, argv: list[str], expect: tuple[int, ...] = (0,)) -> str:
    rc = main(argv)
    captured = capsys.readouterr()
    assert rc in expect, (argv, captured.err)
    if rc == 0:
        RAN.add((str(Path.cwd()), tuple(argv)))
    return captured.out + captured.err


def _page(path: Path) -> str:
    """The words of an HTML report, as a browser shows them."""
    text = re.sub(r"<(style|script|svg)\b.*?</\1>", " ", path.read_text(), flags=re.S)
    text = re.sub(r"</?code>", "`", text)  # where a command in the page begins and ends
    return html.unescape(re.sub(r"<[^>]+>", " ", text))


def _views(capsys, results: str = "results") -> str:
    """What summary, show (and one run in detail) and report print, and the report's page."""
    out = _out(capsys, ["summary", "--results", results])
    out += _out(capsys, ["show", "--results", results])
    store = Store(results, create=False)
    runs = store.runs()
    store.close()
    run_id = next((r.id for r in runs if r.status != "ok"), runs[-1].id)  # a failed one says why
    if re.fullmatch(r"[0-9a-f]+", run_id):  # the synthetic store's ids are not a run's
        out += _out(capsys, ["show", run_id, "--results", results])
    out += _out(capsys, ["report", "--results", results, "-o", "report.html"])
    return out + _page(Path("report.html"))


def _label_groups(where: Path, capsys, fake_values) -> str:
    """image=A, then image=B, of one campaign file: the README's A/B flow."""
    _, label = fake_values
    path = _campaign(where)
    out = ""
    for image in ("A", "B"):
        label["image"] = image
        out += _out(capsys, ["run", path, "--label", f"image={image}"])
    # a loop that may add no run stops at once, saying how to raise its bound
    out += _out(capsys, ["run", path, "--label", "image=B", "--resume", "--until-decided", "image=A..image=B",
                         "--max-runs", "0"])
    return out + _views(capsys)


def _failed_runs(where: Path, capsys, fake_values) -> str:
    plan, _ = fake_values
    plan.fail = ("board", "measure", 1)
    out = _out(capsys, ["run", _campaign(where, "flaky"), "--results", "store"], expect=(1,))
    return out + _views(capsys, "store")


def _imported(where: Path, capsys) -> str:
    t, level = square_wave(1_000_000, 400, jitter_ns=3_000, seed=5)
    (where / "cap.csv").write_text("".join(f"{x},{v}\n" for x, v in zip(t, level, strict=True)))
    out = ""
    for image in ("1.0", "1.1"):
        out += _out(capsys, ["import", "edges", "cap.csv", "--period", "1ms", "--label", f"image={image}"])
    return out + _views(capsys)


def _squarewave(where: Path, capsys, monkeypatch) -> str:
    from tests.report import conftest

    monkeypatch.setattr(conftest, "LOADS", ("cpu",))  # a smaller matrix: its figures take less time
    monkeypatch.setattr(conftest, "PERIODS", (conftest.MS,))
    conftest.build_store(where / "results").close()  # two campaigns (board-1.10, board-1.11), a failed run
    return _views(capsys) + _out(capsys, ["show", "--results", "results", "--campaign", "board-1.10"])


def _runs_as_printed(command: str, where: Path, scratch: Path, capsys) -> tuple[int, str]:
    """Exit status and error of a jitterlab command run from (a copy of) `where`."""
    argv = shlex.split(command)[1:]
    if argv[0] == "run":
        argv.append("--dry-run")  # the campaign and its options are checked; nothing is measured
    else:
        if scratch.exists():
            shutil.rmtree(scratch)
        shutil.copytree(where, scratch)  # a report or an export writes its file there
        where = scratch
    cwd = Path.cwd()
    try:
        os.chdir(where)
        rc = main(argv)
    finally:
        os.chdir(cwd)
    return rc, capsys.readouterr().err


def test_every_suggested_command_runs_as_printed(tmp_path, monkeypatch, capsys, fake_values):
    monkeypatch.delenv("JITTERLAB_RESULTS", raising=False)
    outputs: dict[str, str] = {}
    for name, make in (("ab", lambda d: _label_groups(d, capsys, fake_values)),
                       ("failed", lambda d: _failed_runs(d, capsys, fake_values)),
                       ("imported", lambda d: _imported(d, capsys)),
                       ("square", lambda d: _squarewave(d, capsys, monkeypatch))):
        where = tmp_path / name
        where.mkdir()
        monkeypatch.chdir(where)
        outputs[name] = make(where)
    monkeypatch.chdir(tmp_path)
    outputs["doctor"] = _out(capsys, ["doctor", "local"], expect=(0, 1))

    found = {(name, c) for name, text in outputs.items() for line in text.splitlines()
             for c in commands_in(line)}
    ours = sorted((n, c) for n, c in found if shlex.split(c)[0] == "jitterlab")
    # the flows print what was asked of them: a campaign, a label group to add runs to, figures
    assert ("ab", "jitterlab run tiny.toml --results results --resume --label image=B --until-decided "
                  "image=A..image=B") in ours
    assert ("ab", "jitterlab report --results results -o report.html") in ours
    assert ("ab", "jitterlab compare --results results --campaign tiny --baseline image=A "
                  "--candidate image=B --all") in ours  # the report's comparison: every row
    assert ("ab", "jitterlab run tiny.toml --results results --resume --label image=B --until-decided "
                  "image=A..image=B --max-runs 1") in ours  # the loop's bound raised, with its label
    assert ("failed", "jitterlab show --runs --results store") in ours
    assert ("failed", "jitterlab run flaky.toml --results store --resume --retry-failed") in ours
    assert ("square", "jitterlab show --results results --runs --campaign board-1.11") in ours  # the latest
    ran = []
    for name, command in ours:
        # a value left for the person to fill in (CAMPAIGN, FILE) where jitterlab knows it: none
        assert not any(PLACEHOLDER.match(word) for word in shlex.split(command)), (name, command)
        ran.append(command)
        if (str(tmp_path / name), tuple(shlex.split(command)[1:])) in RAN:
            continue  # the views above ran it as printed, from the same directory
        rc, err = _runs_as_printed(command, tmp_path / name, tmp_path / "copy", capsys)
        assert rc == 0, f"{name}: {command}: {err}"
    assert len(ran) >= 6, ran
    others = {c for _, c in found - set(ours)}  # another program's: never run here, named whole
    assert all(shlex.split(c)[0] in COMMAND_WORDS for c in others)
    assert "sysctl -w kernel.sched_rt_runtime_us=-1" in others or "rt_runtime_us=-1" not in outputs["doctor"]


def _verdict(results: str, capsys) -> tuple[str, int, int, float]:
    """compare's JSON of image=A..image=B: the watched row's verdict, runs per group and interval width."""
    import json

    assert main(["compare", "--results", results, "--baseline", "image=A", "--candidate", "image=B",
                 "--format", "json"]) == 0
    [row] = [r for r in json.loads(capsys.readouterr().out)["rows"] if r["tested"]]
    return row["verdict"], row["n_baseline"], row["n_candidate"], row["ci_high"] / row["ci_low"]


def test_every_follow_up_of_the_ab_flow_runs_as_printed_and_moves_the_verdict(tmp_path, monkeypatch, capsys):
    """The README's A/B flow: image=A measured, then image=B with --until-decided. Each command the
    flow prints for going on (the loop's last line, the summary's repetitions hint) is run as printed,
    for real: it measures the group it names, and the comparison moves (more runs in that group, a
    narrower interval) until it is decided."""
    monkeypatch.delenv("JITTERLAB_RESULTS", raising=False)
    monkeypatch.setattr(fake, "OPENED", [])
    fakes.register(monkeypatch)
    spread = [100.0, 150.0, 70.0, 120.0, 85.0, 110.0, 95.0, 130.0, 80.0, 105.0, 115.0, 90.0, 125.0, 75.0]
    values = {"A": spread, "B": [1.6 * v for v in spread[::-1]]}  # B is 60 % worse, in much noise
    image = {"now": "A"}
    monkeypatch.setattr(fakes.FakeBenchmark, "analyse", lambda self, ctx, measured: Measurement(
        [Metric("fake_value", values[image["now"]][ctx.repetition], "")]))
    monkeypatch.chdir(tmp_path)
    path = _campaign(tmp_path)
    assert main(["run", path, "--label", "image=A"]) == 0
    image["now"] = "B"
    out = _out(capsys, ["run", path, "--label", "image=B", "--until-decided", "image=A..image=B"])
    before = _verdict("results", capsys)
    assert before[:3] == ("undecided", 3, 6)  # B alone went as far as it helps, then named A
    # the summary's hint names the group behind too: the same command as the loop's last line
    summary = _out(capsys, ["summary", "--results", "results"])
    [hinted] = [c for line in summary.splitlines() if "add repetitions where undecided" in line
                for c in commands_in(line)]
    steps = []
    for _ in range(4):
        [*_, last] = out.rstrip().splitlines()
        follow = [c for c in commands_in(last) if shlex.split(c)[1] == "run"]
        if not follow:
            break
        [again] = follow  # the run ends on its answer: its last line names the group and its command
        assert steps or again == hinted
        image["now"] = "A" if "--label image=A" in again else "B"
        out = _out(capsys, shlex.split(again)[1:])
        after = _verdict("results", capsys)
        steps.append(again)
        grown = after[1] > before[1] if image["now"] == "A" else after[2] > before[2]
        assert grown and (after[0] != "undecided" or after[3] < before[3]), (again, before, after)
        before = after
    assert steps == [
        "jitterlab run tiny.toml --results results --resume --label image=A --until-decided image=A..image=B"]
    assert (before[0], before[2]) == ("worse", 6)  # decided by A's runs, B as it was
    assert "every watched verdict is decided" in out.rstrip().splitlines()[-1]



def _throttled_machine(tmp_path, monkeypatch):
    """A fake machine whose RT throttling is on (950000 of 1000000 µs, not in a container), in
    tmp_path as the working directory, with fake.toml's campaign of 3 repetitions under `none`."""
    from jitterlab.system import sysinfo
    from tests.execution.test_tuning_axis import _campaign, _tuned_machine

    monkeypatch.delenv("JITTERLAB_RESULTS", raising=False)
    machine = _tuned_machine(tmp_path, monkeypatch)
    snapshot = sysinfo.snapshot
    monkeypatch.setattr(sysinfo, "snapshot", lambda target: dataclasses.replace(
        snapshot(target), rt_runtime_us=950000, rt_period_us=1000000, container=None))
    monkeypatch.chdir(tmp_path)
    _campaign(tmp_path, tunings='"none"', reps=3)
    return machine


def _decides(capsys, measure: str, tmp_path, tuning: str) -> list:
    """`measure` (the printed command of `tuning`), run as printed, ends on its verdict per cell and
    stores runs under `none` and the tuning; the runs stored."""
    out = _out(capsys, shlex.split(measure)[1:])
    last = out.rstrip().splitlines()[-1]
    decided = r"(every watched verdict is decided|stopped after)"
    assert re.match(rf"--until-decided tuning=none\.\.tuning={tuning}: {decided} ", last), last
    assert re.search(r"^  (better|worse|same|undecided) .*fake_value .*\d+ vs \d+ runs", out, re.M), out
    stored = Store(tmp_path / "results", create=False).runs()
    assert {r.cell.tuning for r in stored} == {"none", tuning}
    return stored


def _decides_rt_unthrottled(capsys, measure: str, tmp_path, machine) -> None:
    """_decides for rt-unthrottled, leaving the machine's setting and journal as found."""
    from tests.execution.test_tuning_axis import SYSCTL

    _decides(capsys, measure, tmp_path, "rt-unthrottled")
    assert machine.read(SYSCTL) == "950000\n" and machine.journal() == []


def test_a_limits_tuning_command_runs_as_printed_and_ends_on_the_verdict_per_cell(tmp_path, monkeypatch,
                                                                                   capsys):
    """A limit whose fix a tuning applies (RT throttling: rt-unthrottled) names the command that
    measures it on the campaign; run as printed, for real on a fake machine, it measures the cells
    under the tuning beside the committed ones and ends on the verdict line (decided or not: the
    structure, not which)."""


    machine = _throttled_machine(tmp_path, monkeypatch)
    out = _out(capsys, ["run", "fake.toml", "--results", "results"])
    [measure] = [c for line in out.splitlines() if "measure it here (tuning rt-unthrottled)" in line
                 for c in commands_in(line)]
    assert measure == ("jitterlab run fake.toml --results results --resume --tuning none,rt-unthrottled "
                       "--until-decided tuning=none..tuning=rt-unthrottled")
    _decides_rt_unthrottled(capsys, measure, tmp_path, machine)


def test_a_causes_tuning_command_runs_as_printed_and_ends_on_the_verdict_per_cell(tmp_path, monkeypatch,
                                                                                  capsys):
    """A late period's cause whose remedy a tuning applies (IRQ 11 on the program's CPU: irq-away)
    names, in summary, show, explain and the report's page, the same command the limits block
    prints; run as printed, for real on a fake machine's IRQ files, it measures the cells under the
    tuning and ends on the verdict line, the IRQs' affinities put back."""
    from jitterlab.model.explanation import ATTACHMENT, DIRECT, Explanation
    from jitterlab.model.registry import Entry
    from jitterlab.tunings.base import TUNINGS
    from tests.execution.test_tuning_axis import _campaign, _tuned_machine
    from tests.support import US, explained_period

    monkeypatch.delenv("JITTERLAB_RESULTS", raising=False)
    machine = _tuned_machine(tmp_path, monkeypatch)
    irq = TUNINGS._entries["irq-away"]
    monkeypatch.setitem(TUNINGS._entries, "irq-away", Entry(irq.name, irq.help, irq.obj.at(machine.root)))
    before = machine.snapshot()
    explained = Explanation(aligned_by=DIRECT, residual_ns=0, events=100, lost_events=0, program_cpus=(1,),
                            pids=(700,), periods=(explained_period(3, 10**9, 700 * US, 200 * US, 0),))
    analyse = fakes.FakeBenchmark.analyse
    monkeypatch.setattr(fakes.FakeBenchmark, "analyse", lambda self, ctx, measured: dataclasses.replace(
        analyse(self, ctx, measured), attachments={ATTACHMENT: json.dumps(explained.as_json()).encode()}))
    monkeypatch.chdir(tmp_path)
    path = _campaign(tmp_path, tunings='"none"', reps=3)
    path.write_text(path.read_text().replace("[[target]]", 'cpus = { program = "0" }\n[[target]]'))
    _out(capsys, ["run", "fake.toml", "--results", "results"])
    wanted = ("jitterlab run fake.toml --results results --resume --tuning none,irq-away "
              "--until-decided tuning=none..tuning=irq-away")
    store = Store(tmp_path / "results", create=False)
    run_id = store.runs()[0].id
    store.close()
    views = [("summary",), ("show",), ("show", "--runs"), ("show", run_id), ("explain", run_id)]
    said = {view: [c for line in _out(capsys, [view[0], "--results", "results", *view[1:]]).splitlines()
                   if "measure it here (tuning irq-away)" in line for c in commands_in(line)]
            for view in views}
    assert said == {view: [wanted] for view in views}
    _out(capsys, ["report", "--results", "results", "-o", "report.html"])
    page = " ".join(_page(tmp_path / "report.html").split())
    assert f"measure it here (tuning irq-away): `{wanted}`" in page
    stored = _decides(capsys, wanted, tmp_path, "irq-away")
    assert {r.status for r in stored} == {"ok"}
    assert machine.snapshot() == before and machine.journal() == []


@pytest.mark.parametrize("refusing", [False, True])
def test_a_doctor_fix_a_tuning_applies_names_it_and_its_command_runs_as_printed(tmp_path, monkeypatch, capsys,
                                                                               refusing):
    """`doctor TARGET --campaign FILE`: under a fix a tuning applies (RT throttling: rt-unthrottled),
    the command that measures it on that campaign, the one the limits block prints; run as printed,
    for real on a fake machine, it ends on the verdict per cell. Where the tuning's check refuses on
    the target, doctor says why instead, and prints no command."""
    from tests.execution.test_tuning_axis import SYSCTL

    machine = _throttled_machine(tmp_path, monkeypatch)
    if refusing:
        machine.remove(SYSCTL)
    out = _out(capsys, ["doctor", "a", "--campaign", "fake.toml"], expect=(1,))
    lines = out.splitlines()
    [fix] = [i for i, line in enumerate(lines) if line.startswith("  - RT throttling: ")]
    under = lines[fix + 1].strip()
    if refusing:
        assert under.startswith("tuning rt-unthrottled applies it, but not on this target: "), under
        assert commands_in(under) == []
        return
    [measure] = commands_in(under)
    assert under.startswith("measure it here (tuning rt-unthrottled): ")
    assert measure == ("jitterlab run fake.toml --results results --resume --tuning none,rt-unthrottled "
                       "--until-decided tuning=none..tuning=rt-unthrottled")
    _decides_rt_unthrottled(capsys, measure, tmp_path, machine)
