"""Tunings as a matrix axis: the key read into cells, each run under its cell's tuning applied right
before it and put back after (an interrupt too), what it did stored with the run, and a tuning that
cannot be applied making its cells unavailable with the reason, at --dry-run already."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from jitterlab import plugins
from jitterlab.campaign.file import with_tunings
from jitterlab.execution.tuning import ATTACHMENT, read_record
from jitterlab.model.errors import UserError
from jitterlab.model.registry import Entry
from jitterlab.store.catalog import Store
from jitterlab.targets import fake
from jitterlab.tunings import files, journal
from jitterlab.tunings.base import TUNINGS
from tests.execution import fakes
from tests.execution.test_runner import run
from tests.support import campaign_from_toml
from tests.tunings.machine import Machine

SYSCTL = "proc/sys/kernel/sched_rt_runtime_us"


def test_the_tuning_key_is_an_axis_of_the_cells_and_none_keeps_a_cells_identity(monkeypatch):
    fakes.register(monkeypatch)
    plain = campaign_from_toml("fake", 'load = ["idle", "cpu"]')
    tuned = campaign_from_toml("fake", 'load = ["idle", "cpu"]\ntuning = ["none", "irq-away"]')
    assert [(c.load, c.tuning) for c in tuned.cells] == [
        ("idle", "none"), ("idle", "irq-away"), ("cpu", "none"), ("cpu", "irq-away")]
    assert [c.key for c in tuned.cells if c.tuning == "none"] == [c.key for c in plain.cells]
    assert tuned.cells[1].key.endswith(" tuning=irq-away")
    assert with_tunings(plain, "none,irq-away").cells == tuned.cells
    assert [c.tuning for c in with_tunings(tuned, "mlock").cells] == ["mlock", "mlock"]
    dropped = campaign_from_toml("fake", 'tuning = ["none", "irq-away"]\n[[exclude]]\ntuning = "irq-away"')
    assert [c.tuning for c in dropped.cells] == ["none"]


@pytest.mark.parametrize(("matrix", "option", "said"), [
    ('tuning = ["none", "irq-awy"]', None, "c.toml: matrix.tuning: unknown tuning 'irq-awy'; did you mean "
                                           "'irq-away'?"),
    ('tuning = ["none", "none"]', None, "c.toml: matrix.tuning: a value is listed twice"),
    ("tuning = 3", None, "c.toml: matrix.tuning: expected a tuning name (a string), got 3"),
    ("", "none,rt-unthrotled", "--tuning 'none,rt-unthrotled': unknown tuning 'rt-unthrotled'; did you "
                               "mean 'rt-unthrottled'?"),
    ("", "none,,mlock", "--tuning 'none,,mlock': give tuning names separated by commas"),
])
def test_an_unknown_tuning_is_refused_naming_the_key_and_the_closest_name(monkeypatch, matrix, option, said):
    fakes.register(monkeypatch)
    with pytest.raises(UserError) as err:
        campaign = campaign_from_toml("fake", matrix)
        with_tunings(campaign, option)
    assert str(err.value).startswith(said)


def _tuned_machine(tmp_path: Path, monkeypatch) -> Machine:
    """A fake machine whose rt-unthrottled tuning is the registry's, and fake targets whose tuning
    scripts act on its tree for real (nothing else runs)."""
    fakes.register(monkeypatch)
    monkeypatch.setattr(fake, "OPENED", [])
    machine = Machine(tmp_path)
    entry = TUNINGS._entries["rt-unthrottled"]
    monkeypatch.setitem(TUNINGS._entries, "rt-unthrottled",
                        Entry(entry.name, entry.help, entry.obj.at(machine.root)))

    def opened(name, options, where=None):
        target = fake.open_fake(name, options, where)
        real = target._local.run
        for script in (files._READ, files._WRITE, journal._KEEP, journal._LOOK):
            target.respond(["sh", "-c", script], response=real)
        target.respond(["rm", "-f", "--", f"{machine.root}{journal.JOURNAL_DIR}/"], response=real)
        target.respond(["rm", "-f", "--"], response=real)
        return target

    monkeypatch.setitem(plugins.TARGETS._entries, "fake", Entry("fake", "for tests", opened))
    return machine


def _campaign(tmp_path: Path, tunings: str = '["none", "rt-unthrottled"]', reps: int = 2) -> Path:
    path = tmp_path / "fake.toml"
    path.write_text("\n".join([
        "[campaign]", 'name = "tuned"', f"repetitions = {reps}", 'duration = "10ms"', 'warmup = "1ms"',
        'load_warmup = "1ms"', 'run_timeout = "1s"', "[[target]]", 'name = "a"', 'kind = "fake"',
        f"workdir = {json.dumps(str(tmp_path / 'a'))}", "[matrix]", 'benchmark = "fake"', 'load = "fake"',
        f"tuning = {tunings}", ""]))
    return path


def test_a_run_under_a_tuning_has_it_applied_and_stores_what_it_did_then_it_is_put_back(
        tmp_path, monkeypatch):
    machine = _tuned_machine(tmp_path, monkeypatch)
    before = machine.path(SYSCTL).read_bytes()
    seen: list[tuple[str, str, tuple]] = []
    measure = fakes._Measuring.measure

    def measuring(self):  # what the machine and the run's context hold while it measures
        seen.append((self.ctx.cell.tuning, machine.read(SYSCTL), tuple(a.tuning for a in self.ctx.tunings)))
        return measure(self)

    monkeypatch.setattr(fakes._Measuring, "measure", measuring)
    assert run(_campaign(tmp_path)) == 0
    plain, tuned = ("none", "950000\n", ()), ("rt-unthrottled", "-1\n", ("rt-unthrottled",))
    assert seen == [plain, tuned, tuned, plain]  # the second round in reverse
    assert machine.path(SYSCTL).read_bytes() == before and machine.journal() == []
    store = Store(tmp_path / "results", create=False)
    for r in store.runs():
        assert r.status == "ok"
        if r.cell.tuning == "none":
            assert ATTACHMENT not in r.attachments
            continue
        [applied], problems = read_record((tmp_path / "results" / r.attachments[ATTACHMENT]).read_bytes())
        assert (applied.tuning, problems) == ("rt-unthrottled", [])
        assert [(Path(s.path).name, s.before, s.after) for s in applied.changed] == [
            ("sched_rt_runtime_us", "950000\n", "-1\n")]


def test_an_interrupted_run_under_a_tuning_has_it_put_back(tmp_path, monkeypatch):
    machine = _tuned_machine(tmp_path, monkeypatch)
    fakes.PLAN.interrupt = ("a", "measure", 0)
    measure = fakes._Measuring.measure

    def measuring(self):
        if self.ctx.cell.tuning == "none":  # the interrupt comes while the tuned cell measures
            self.ctx.target.clock_s += 0.01
            return self.ctx.repetition
        return measure(self)

    monkeypatch.setattr(fakes._Measuring, "measure", measuring)
    assert run(_campaign(tmp_path)) == 130
    assert machine.read(SYSCTL) == "950000\n" and machine.journal() == []


def test_a_tuning_its_check_refuses_makes_its_cells_unavailable_with_why_at_dry_run_already(
        tmp_path, monkeypatch, capsys):
    machine = _tuned_machine(tmp_path, monkeypatch)
    machine.remove(SYSCTL)
    path = _campaign(tmp_path, reps=1)
    assert run(path, "--dry-run") == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "unavailable: a fake tuning=rt-unthrottled fake: tuning rt-unthrottled cannot be applied:" in out
    assert run(path) == 1  # a run not measured, as for a cell whose tool the target lacks
    stored = {r.cell.tuning: r for r in Store(tmp_path / "results", create=False).runs()}
    assert stored["none"].status == "ok" and stored["rt-unthrottled"].status == "unavailable"
    assert stored["rt-unthrottled"].error.startswith("tuning rt-unthrottled cannot be applied: ")


_JITTERLAB_ON_THE_MACHINE = """
import functools, sys
from pathlib import Path
sys.path.insert(0, {repo!r})
from jitterlab.model.registry import Entry
from jitterlab.tunings import journal
from jitterlab.tunings.base import TUNINGS
from tests.tunings.machine import Machine
machine = Machine(Path({tmp!r}), made=True)
entry = TUNINGS._entries["rt-unthrottled"]
TUNINGS._entries["rt-unthrottled"] = Entry(entry.name, entry.help, entry.obj.at(machine.root))
journal.restore_orphaned = functools.partial(journal.restore_orphaned, root=machine.root)
from jitterlab.cli.main import main
sys.exit(main(sys.argv[1:]))
"""


def test_jitterlab_killed_mid_cell_under_a_tuning_leaves_it_for_the_resumed_campaign_to_put_back(tmp_path):
    """A real `jitterlab run` on the local target, its tuning on a fake machine's file: SIGKILL while
    the tuned cell measures leaves the file changed and the journal entry; --resume puts it back
    before its first run, byte for byte, and measures the rest."""
    import signal
    import subprocess
    import sys

    from tests.support import eventually, local_campaign

    machine = Machine(tmp_path)
    before = machine.path(SYSCTL).read_bytes()
    go = tmp_path / "go"  # the command waits for it: long enough to be killed, at once when resumed
    wait = f"while [ ! -e {go} ]; do sleep 0.05; done; echo fps=1"
    metric = ('[[matrix.metric]]\nname = "fps"\nregex = \'fps=([0-9.]+)\'\nunit = "1/s"\n'
              'direction = "higher"\n')
    path = local_campaign(tmp_path, '[matrix]\nbenchmark = "command"\nname = "wait"\n'
                          f'argv = ["sh", "-c", {json.dumps(wait)}]\ntuning = ["rt-unthrottled"]\n{metric}',
                          name="killed", duration="1s", run_timeout="60s")
    script = _JITTERLAB_ON_THE_MACHINE.format(repo=str(Path(__file__).parents[2]), tmp=str(tmp_path))
    argv = [sys.executable, "-c", script, "run", str(path), "--results", str(tmp_path / "results")]
    killed = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              start_new_session=True)
    try:
        eventually(lambda: not (machine.read(SYSCTL) == "-1\n" and machine.journal()), timeout_s=60)
    finally:
        killed.send_signal(signal.SIGKILL)
        killed.wait(10)
    # killed while the entry was being rewritten, a half-written copy may lie beside it
    assert machine.read(SYSCTL) == "-1\n" and len([n for n in machine.journal() if n.endswith(".json")]) == 1
    go.touch()
    resumed = subprocess.run([*argv, "--resume"], capture_output=True, text=True, timeout=120,
                             input="")
    out = " ".join(resumed.stdout.split())
    assert "restored tuning rt-unthrottled left applied by a killed jitterlab run (1 file)" in out, (
        resumed.stdout, resumed.stderr)
    assert machine.path(SYSCTL).read_bytes() == before and machine.journal() == []
    [stored] = Store(tmp_path / "results", create=False).runs()
    assert (stored.status, stored.cell.tuning, stored.metric("fps")) == ("ok", "rt-unthrottled", 1.0)


def test_tunings_are_compared_as_groups_and_decided_until_a_verdict(tmp_path, monkeypatch, capsys):
    """`run --tuning none,T --until-decided tuning=none..tuning=T` ends on the verdict per cell, and
    the views pair each tuning with "none" as they pair a label's values."""
    from jitterlab.analysis.groups import label_pairs

    machine = _tuned_machine(tmp_path, monkeypatch)
    path = _campaign(tmp_path, tunings='"none"', reps=3)
    assert run(path, "--tuning", "none,rt-unthrottled", "--until-decided",
               "tuning=none..tuning=rt-unthrottled", "--max-runs", "2") == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "tuning=rt-unthrottled vs tuning=none" in out
    assert "--until-decided tuning=none..tuning=rt-unthrottled: " in out
    runs = Store(tmp_path / "results", create=False).runs()
    assert [(str(a), str(b)) for a, b in label_pairs(runs)] == [("tuning=none", "tuning=rt-unthrottled")]
    assert machine.read(SYSCTL) == "950000\n" and machine.journal() == []


def test_tune_tries_each_tuning_then_the_helpful_ones_together_and_leaves_nothing_applied(
        tmp_path, monkeypatch, capsys):
    """`tune` on a fake machine: rt-unthrottled and governor-performance (named with --tuning) each
    decided against none on the same cells, then both together; the table has one row per tuning
    tried with its verdict counts and cost; every file of the machine is as it was, byte for byte,
    and its journal empty."""
    from jitterlab.cli.main import main
    from jitterlab.measure.benchmarks.base import Measurement
    from jitterlab.model.records import Metric

    machine = _tuned_machine(tmp_path, monkeypatch)
    entry = TUNINGS._entries["governor-performance"]
    monkeypatch.setitem(TUNINGS._entries, "governor-performance",
                        Entry(entry.name, entry.help, entry.obj.at(machine.root)))
    before = machine.snapshot()
    # each tuning halves the fake value (lower is better): both help, and together more
    spread = [100.0, 104.0, 97.0, 102.0, 99.0, 101.0, 98.0, 103.0, 100.5, 99.5, 101.5, 98.5, 102.5]

    def analyse(self, ctx, measured) -> Measurement:
        factor = 0.5 ** len([t for t in ctx.tunings])
        return Measurement([Metric("fake_value", spread[ctx.repetition] * factor, "", direction="lower")])

    monkeypatch.setattr(fakes.FakeBenchmark, "analyse", analyse)
    path = _campaign(tmp_path, tunings='"none"', reps=3)
    assert main(["tune", str(path), "--results", str(tmp_path / "results"), "--tuning",
                 "rt-unthrottled,governor-performance", "--max-runs", "4"]) == 0
    out = capsys.readouterr().out
    assert "no cell breaks the envelope" in out  # the fake benchmark has none: every cell is tried
    tried = [line.split()[0] for line in out.splitlines() if line.startswith(("rt-", "governor-"))]
    assert tried == ["rt-unthrottled", "governor-performance", "rt-unthrottled+governor-performance"]
    for tuning, halved in (("rt-unthrottled", 50), ("governor-performance", 50),
                           ("rt-unthrottled+governor-performance", 75)):
        # better: 1 cell, by how much with its interval; worse 0, same 0, undecided 0; its cost
        interval = r"\[-[\d.]+ % – -[\d.]+ %\]"
        row = rf"^{re.escape(tuning)} +1: a fake fake: fake_value -{halved} % {interval} +0 +0 +0 +\w"
        assert re.search(row, out, re.M), (tuning, out)
    assert "a runaway real-time task can starve the machine" in " ".join(out.split())
    assert machine.snapshot() == before and machine.journal() == []
    tunings = {r.cell.tuning for r in Store(tmp_path / "results", create=False).runs()}
    assert tunings == {"none", "rt-unthrottled", "governor-performance",
                       "rt-unthrottled+governor-performance"}


def _kernel_state() -> dict[str, str]:
    """What the machine tunings here change: RT throttling, every IRQ's affinity and the default."""
    paths = [Path("/proc/sys/kernel/sched_rt_runtime_us"), Path("/proc/irq/default_smp_affinity"),
             *sorted(Path("/proc/irq").glob("*/smp_affinity_list"))]
    return {str(p): p.read_text() for p in paths if p.exists()}


def test_tunings_run_for_real_here_as_their_check_said_and_put_everything_back(tmp_path):
    """On this machine, for real: each tuning's cells run under it where its check allowed it
    (tuning.json stored) and are unavailable with the check's reason where it refused; afterwards
    the kernel's files read as before and no journal entry of this jitterlab is left."""
    import os

    from jitterlab.cli.main import main
    from jitterlab.model.tuning import Cpus
    from jitterlab.targets.local import LocalTarget
    from jitterlab.targets.processes import owner_tag
    from tests.support import local_campaign

    if (os.cpu_count() or 1) < 2:
        pytest.skip("irq-away needs a CPU beside the program's")
    tunings = ["cpu-dma-latency", "rt-unthrottled", "irq-away"]
    here = LocalTarget("local", str(tmp_path / "target"))
    said = {t: TUNINGS.get(t, "t").check(here, Cpus((0,))) for t in tunings}
    before = _kernel_state()
    metric = ('[[matrix.metric]]\nname = "fps"\nregex = \'fps=([0-9.]+)\'\nunit = "1/s"\n'
              'direction = "higher"\n')
    matrix = (f'[matrix]\nbenchmark = "command"\nname = "echo"\nargv = ["echo", "fps=1"]\n'
              f"tuning = {json.dumps(['none', *tunings])}\n{metric}")
    path = local_campaign(tmp_path, f'[campaign.cpus]\nprogram = "0"\n{matrix}', name="here", duration="1s")
    assert main(["run", str(path), "--results", str(tmp_path / "results")]) in (0, 1)
    runs = {r.cell.tuning: r for r in Store(tmp_path / "results", create=False).runs()}
    assert runs["none"].status == "ok"
    for tuning in tunings:
        r = runs[tuning]
        if r.status == "ok":
            assert said[tuning] is None, (tuning, said[tuning])
            [applied], problems = read_record((tmp_path / "results" / r.attachments[ATTACHMENT]).read_bytes())
            assert (applied.tuning, problems) == (tuning, [])
        else:  # refused as the check said (or: another jitterlab here has it applied meanwhile)
            assert r.status == "unavailable", (tuning, r.error)
            assert r.error.startswith(f"tuning {tuning} cannot be applied: "), r.error
            assert said[tuning] is not None or "another jitterlab" in r.error, (tuning, r.error)
    entries = [p.name for p in Path(journal.JOURNAL_DIR).glob("*.json")]
    assert not [e for e in entries if e.startswith(f"{owner_tag()}~")], entries
    if not entries:  # no other jitterlab here has a tuning applied now: the kernel reads as before
        assert _kernel_state() == before


@pytest.mark.parametrize("refusing", [False, True])
def test_a_campaign_records_the_machine_tunings_checks_and_the_summary_withholds_a_refused_one(
        tmp_path, monkeypatch, capsys, refusing):
    """Preflight asks every tuning that changes the machine (not the program's: timer-slack, mlock)
    for the CPUs of the target's cells and keeps the answers in the system facts its runs refer to;
    the summary's RT throttling limit then names the command measuring rt-unthrottled where its check
    passed there, and says why not, in one line and with no command, where it refused."""
    import dataclasses

    from jitterlab.cli.main import main
    from jitterlab.report.layout import commands_in
    from jitterlab.system import sysinfo

    machine = _tuned_machine(tmp_path, monkeypatch)
    snapshot = sysinfo.snapshot
    monkeypatch.setattr(sysinfo, "snapshot", lambda target: dataclasses.replace(
        snapshot(target), rt_runtime_us=950000, rt_period_us=1000000, container=None))
    if refusing:
        machine.remove(SYSCTL)
    monkeypatch.chdir(tmp_path)
    assert run(_campaign(tmp_path, tunings='"none"')) == 0
    store = Store(tmp_path / "results", create=False)
    [sid] = {r.sysinfo_id for r in store.runs()}
    checks = store.sysinfo(sid).tuning_checks
    assert checks is not None
    assert {c.tuning for c in checks} == {"irq-away", "cpu-dma-latency", "isolated", "rt-unthrottled",
                                          "governor-performance"}
    [rt] = [c for c in checks if c.tuning == "rt-unthrottled"]
    assert (rt.refused is not None) == refusing
    capsys.readouterr()
    assert main(["summary", "--results", "results"]) == 0
    out = capsys.readouterr().out
    said = [line.strip() for line in out.splitlines() if "rt-unthrottled" in line]
    if refusing:
        assert said == [f"not measured by a tuning here: tuning rt-unthrottled cannot be applied on a: "
                        f"{rt.refused}"], out
        assert commands_in(said[0]) == []
    else:
        assert [commands_in(line) for line in said] == [[
            f"jitterlab run {tmp_path / 'fake.toml'} --results results --resume --tuning none,rt-unthrottled "
            "--until-decided tuning=none..tuning=rt-unthrottled"]], out


def test_run_timings_time_applying_and_restoring_a_tuning_inside_its_run(tmp_path, monkeypatch):
    machine = _tuned_machine(tmp_path, monkeypatch)
    timings = tmp_path / "timings.jsonl"
    assert run(_campaign(tmp_path), "--timings", str(timings)) == 0
    lines = [json.loads(line) for line in timings.read_text().splitlines()]
    runs = sorted((p for p in lines if p["phase"] == "run"), key=lambda p: p["start_s"])
    tuned = sorted((p for p in lines if p["phase"].startswith("tuning ")), key=lambda p: p["start_s"])
    inside = [[p["phase"] for p in tuned if one["start_s"] <= p["start_s"] and p["end_s"] <= one["end_s"]]
              for one in runs]
    tuned_run = ["tuning apply", "tuning restore"]
    assert inside == [[], tuned_run, tuned_run, []]  # none, rt-unthrottled; then the round in reverse
    assert machine.journal() == []
