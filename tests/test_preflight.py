"""Preflight: missing tools and RT permission are reported before anything runs."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from jitterlab.campaign.file import load_campaign
from jitterlab.cli.main import main
from jitterlab.execution import preflight
from jitterlab.measure.squarewave.impls.base import IMPLS
from jitterlab.model.errors import UserError
from jitterlab.targets.base import CommandTimeout
from jitterlab.targets.capabilities import AnswersSlowly, CrossBuilt, HostKeyStatus, Wrapper
from jitterlab.targets.local import LocalTarget


def campaign_file(tmp_path: Path, impl: str, extra: str = "") -> Path:
    path = tmp_path / "c.toml"
    path.write_text(f"""
[campaign]
name = "pre"
duration = "100ms"
{extra}
[[target]]
name = "local"
kind = "local"
workdir = "{tmp_path / "w"}"
[matrix]
impl = ["{impl}"]
period = ["10ms"]
""")
    return path


def test_missing_tools_are_found_by_name():
    assert preflight._missing_tools(LocalTarget(), ["sh", "no-such-tool-xyz"]) == ["no-such-tool-xyz"]


def _fake_node(monkeypatch):
    entry = IMPLS._entries["node"]
    fake = dataclasses.replace(entry.obj, runtime_tools={"no-such-node-xyz": "nodejs"})
    monkeypatch.setitem(IMPLS._entries, "node", type(entry)(entry.name, entry.help, fake))


def test_missing_interpreter_makes_its_cells_unavailable(tmp_path, monkeypatch):
    _fake_node(monkeypatch)
    campaign = load_campaign(campaign_file(tmp_path, "node"))
    [session] = preflight.open_targets(campaign)
    try:
        [cell] = campaign.cells
        assert session.unavailable == {cell.key: "the target lacks no-such-node-xyz (apt install nodejs)"}
        [warning] = [w for w in session.warnings if "no-such-node-xyz" in w.message]
        assert "impl node cannot run on this target" in warning.message
        assert "apt install nodejs" in warning.remedy and "--retry-failed" in warning.remedy
    finally:
        session.target.close()


def test_unavailable_cells_are_stored_and_the_others_run(tmp_path, monkeypatch):
    from jitterlab.store.catalog import Store

    _fake_node(monkeypatch)
    path = campaign_file(tmp_path, "node", extra='[campaign.labels]\nk = "v"')
    path.write_text(path.read_text().replace('impl = ["node"]', 'impl = ["node", "python"]')
                    .replace("[matrix]", '[matrix]\nprobe = "self"'))
    assert main(["run", str(path), "--results", str(tmp_path / "r")]) == 1
    runs = {r.param("impl"): r for r in Store(tmp_path / "r", create=False).runs()}
    assert runs["node"].status == "unavailable"
    assert runs["node"].error == "the target lacks no-such-node-xyz (apt install nodejs)"
    assert runs["python"].status == "ok"


def test_missing_load_tool_stops_the_campaign(tmp_path, monkeypatch):
    from jitterlab.measure.loads.base import LOADS

    entry = LOADS._entries["cpu"]
    spec = entry.obj
    fake = dataclasses.replace(spec, tools={"no-such-stress-xyz": "stress-ng"})
    monkeypatch.setitem(LOADS._entries, "cpu", type(entry)(entry.name, entry.help, fake))
    path = campaign_file(tmp_path, "python")
    path.write_text(path.read_text().replace('period = ["10ms"]', 'period = ["10ms"]\nload = "cpu"'))
    with pytest.raises(UserError) as info:
        preflight.open_targets(load_campaign(path))
    expected = "target 'local': missing tools: no-such-stress-xyz (apt install stress-ng; needed by load cpu)"
    assert expected in str(info.value)


def _no_rt(monkeypatch):
    real = preflight.sysinfo.snapshot

    def snapshot(target):
        return dataclasses.replace(real(target), rt_permission=False)

    monkeypatch.setattr(preflight.sysinfo, "snapshot", snapshot)


def test_no_rt_permission_stops_c_fifo_before_anything_runs(tmp_path, monkeypatch, capsys):
    _no_rt(monkeypatch)
    results = tmp_path / "results"
    assert main(["run", str(campaign_file(tmp_path, "c-fifo")), "--results", str(results)]) == 2
    err = capsys.readouterr().err
    assert "does not permit SCHED_FIFO, which impl c-fifo needs" in err
    assert 'on_missing_rt = "fallback"' in err
    assert not results.exists()


def test_no_rt_permission_with_fallback_marks_the_run(tmp_path, monkeypatch):
    _no_rt(monkeypatch)
    campaign = load_campaign(campaign_file(tmp_path, "c-fifo", 'on_missing_rt = "fallback"'))
    [session] = preflight.open_targets(campaign)
    try:
        assert session.rt_permitted is False
    finally:
        session.target.close()


def test_no_rt_permission_does_not_matter_without_c_fifo(tmp_path, monkeypatch):
    _no_rt(monkeypatch)
    [session] = preflight.open_targets(load_campaign(campaign_file(tmp_path, "python")))
    try:
        assert session.rt_permitted is False
        # only the machine's general note: nothing says that an impl of this campaign needs SCHED_FIFO
        [fifo] = [w.message for w in session.warnings if "SCHED_FIFO" in w.message]
        assert fifo.startswith("processes cannot get SCHED_FIFO") and "python" not in fifo
    finally:
        session.target.close()


def _placement(tmp_path, cpus: str, n_cpus: int, load: str = "cpu"):
    path = campaign_file(tmp_path, "c-mmap", f"[campaign.cpus]\n{cpus}" if cpus else "")
    path.write_text(path.read_text().replace('period = ["10ms"]', f'period = ["10ms"]\nload = ["{load}"]'))
    campaign = load_campaign(path)
    warnings: list = []
    placement = preflight._placement(campaign, list(campaign.cells), n_cpus, warnings)
    return placement, [w.message for w in warnings]


def test_default_placement_gives_the_probe_the_last_cpu_and_warns_about_loads(tmp_path):
    placement, warnings = _placement(tmp_path, "", 4)
    assert (placement.program_cpus, placement.probe_cpu, placement.load_cpus) == ((0, 1, 2), 3, None)
    assert any("loads run on CPU 3 too" in w for w in warnings)


def test_explicit_placement_keeps_loads_off_the_probe(tmp_path):
    placement, warnings = _placement(tmp_path, 'program = "0"\nprobe = "3"\nload = "1-2"', 4)
    assert (placement.program_cpus, placement.probe_cpu, placement.load_cpus) == ((0,), 3, (1, 2))
    assert warnings == []


def test_placement_on_a_cpu_the_target_lacks(tmp_path):
    with pytest.raises(UserError, match="campaign.cpus.probe: CPU 7 does not exist on a target with 2 CPUs"):
        _placement(tmp_path, 'probe = "7"', 2)


def test_one_cpu_refuses_a_probe_that_needs_a_cpu_of_its_own(tmp_path):
    with pytest.raises(UserError, match=r"matrix.probe: probe vpin needs a CPU of its own beside the "
                       r"program, and this target has one CPU; use probe = \"self\", \"gpio-loopback\""):
        _placement(tmp_path, "", 1, load="idle")


def test_one_cpu_is_fine_for_a_probe_off_the_target(tmp_path):
    path = campaign_file(tmp_path, "c-mmap")
    path.write_text(path.read_text().replace('period = ["10ms"]', 'period = ["10ms"]\nprobe = "self"'))
    campaign = load_campaign(path)
    placement = preflight._placement(campaign, list(campaign.cells), 1, [])
    assert placement.probe_cpu is None


class _Board(Wrapper, HostKeyStatus, CrossBuilt):
    """This machine as a board reached without checking its host key, its programs built here."""

    @property
    def host_key_verified(self) -> bool:
        return False

    @property
    def host_key_unverified(self) -> tuple[str, str]:
        return "the board's host key is not verified", 'set known_hosts = "..." in its [[target]]'

    @property
    def cross_cc(self) -> str:
        return "no-such-cc-xyz"


def test_a_target_says_its_host_key_is_unchecked_and_a_cross_built_one_needs_no_compiler(tmp_path):
    campaign = load_campaign(campaign_file(tmp_path, "python"))
    spec = campaign.targets[0]
    target = LocalTarget("local", str(tmp_path / "w"))
    try:
        plain = preflight.preflight(campaign, spec, target)
        assert not [w for w in plain.warnings if "host key" in w.message]
        # make and cc are not looked for on a target whose programs are built on the controller
        target.run = _hiding(target.run, ("make", "cc"))  # type: ignore[method-assign]
        with pytest.raises(UserError, match=r"missing tools: cc \(apt install gcc; .*make \(apt"):
            preflight.preflight(campaign, spec, target)
        session = preflight.preflight(campaign, spec, _Board(target))
        [warning] = [w for w in session.warnings if "host key" in w.message]
        assert warning.message == "the board's host key is not verified"
        assert warning.remedy == 'set known_hosts = "..." in its [[target]]'
    finally:
        target.close()


def _hiding(run, tools):
    """target.run as if `tools` were not installed (the lookup of missing tools reports them)."""
    def hidden(argv, timeout_s=60.0):
        done = run(argv, timeout_s)
        if argv[:2] == ["sh", "-c"] and argv[2].startswith("for t; do command -v"):
            missing = [t for t in argv[4:] if t in tools] + done.stdout.split()
            return type(done)(done.argv, done.rc, "\n".join(missing) + "\n", done.stderr)
        return done
    return hidden


class _SlowHanging(Wrapper, AnswersSlowly):
    """A slow board (alive_timeout 45 s) whose commands hang past any timeout."""

    @property
    def alive_timeout_s(self) -> float:
        return 45.0

    def run(self, argv: list[str], timeout_s: float = 60.0):
        raise CommandTimeout(f"{argv[0]} ran past {timeout_s:g} s")


def test_a_target_that_hangs_in_preparation_is_lost_with_its_reason_not_a_traceback(tmp_path):
    campaign = load_campaign(campaign_file(tmp_path, "python"))
    target = _SlowHanging(LocalTarget("local", str(tmp_path / "w")))
    session = preflight._preflight_or_lost(campaign, campaign.targets[0], target)
    assert session.lost is not None and "longer than 180 s" in session.lost
    assert "raise alive_timeout in its [[target]]" in session.lost


def _probe_declaring(monkeypatch, **declared):
    """The self probe as a probe that declares what it needs of the target (`reads`) or of the
    controller (`controller_tools`): a campaign that loads, then meets a target that cannot serve it."""
    from jitterlab.measure.squarewave.probes.base import PROBES

    entry = PROBES._entries["self"]
    monkeypatch.setitem(PROBES._entries, "self",
                        type(entry)(entry.name, entry.help, type("Declaring", (entry.obj,), declared)))


def _self_probe_file(tmp_path: Path) -> Path:
    path = campaign_file(tmp_path, "python")
    path.write_text(path.read_text().replace("[matrix]", '[matrix]\nprobe = "self"'))
    return path


def test_a_probe_reading_what_the_target_lacks_is_unavailable_before_anything_is_built(tmp_path, monkeypatch):
    from jitterlab.execution import runner
    from jitterlab.measure.squarewave.impls.userspace import ProgramImpl
    from jitterlab.store.catalog import Store
    from jitterlab.targets.capabilities import RecordsGpioOutputs

    campaign = load_campaign(_self_probe_file(tmp_path))
    _probe_declaring(monkeypatch, reads=RecordsGpioOutputs)  # what a file's [[target]] could not tell
    [session] = preflight.open_targets(campaign)
    session.target.close()
    [cell] = campaign.cells
    why = ("target 'local' cannot record its GPIO outputs outside the board (an emulated board with a traced "
           "GPIO controller): probe self needs it")
    assert session.unavailable == {cell.key: why}
    [warning] = [w for w in session.warnings if w.message.startswith(why)]
    assert warning.remedy == ('measure those cells on a target that can: kind "qemu" with machine = '
                              '"virt-arm64" or "virt-armhf"')
    # run: nothing is built nor the impl prepared (a kernel module would be built there), and its
    # runs are stored unavailable with that line
    prepared = []
    monkeypatch.setattr(ProgramImpl, "prepare", lambda self, ctx: prepared.append(ctx.cell))
    monkeypatch.setattr(runner, "deploy", lambda target: pytest.fail("deployed"))
    sessions = preflight.open_targets(campaign)
    store = Store(tmp_path / "r")
    try:
        run = runner.Runner(campaign, store)
        outcome = run.execute(sessions, run.campaign_id())
        runs = store.runs()
    finally:
        store.close()
        for session in sessions:
            session.target.close()
    assert outcome.failed == outcome.done == campaign.repetitions and prepared == []
    assert {(r.status, r.error) for r in runs} == {("unavailable", why)}


def test_a_tool_the_controller_lacks_makes_its_cells_unavailable_in_one_line(tmp_path, monkeypatch):
    campaign = load_campaign(_self_probe_file(tmp_path))
    _probe_declaring(monkeypatch, controller_tools={"no-such-analyzer-xyz": "sigrok-cli"})
    [session] = preflight.open_targets(campaign)
    session.target.close()
    why = "the controller (this machine) lacks no-such-analyzer-xyz (apt install sigrok-cli)"
    assert session.unavailable == {campaign.cells[0].key: why}
    [warning] = [w for w in session.warnings if w.message.startswith(why)]
    assert warning.message == f"{why} (its cells' runs are stored as unavailable)"
    assert warning.remedy == ("apt install sigrok-cli on this machine, then jitterlab run --resume "
                              "--retry-failed")


def test_the_sigrok_probe_declares_sigrok_cli_on_the_controller():
    from jitterlab import plugins
    from jitterlab.model.fakes import squarewave_cell

    bench = plugins.BENCHMARKS.get("squarewave", "test")
    sigrok = squarewave_cell(probe="sigrok", pin="external")
    assert bench.controller_tools(sigrok) == {"sigrok-cli": "sigrok-cli"}
    assert bench.controller_tools(squarewave_cell(probe="vpin")) == {}
