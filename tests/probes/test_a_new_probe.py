"""A probe made inside this test, as a contributor would add one: one class and one registration
(in the package: its module under measure/squarewave/probes/ and an import line in plugins.py).
Nothing else names it, yet the campaign binds it to the pins it can watch, refuses it on a target
that lacks what it reads, preflight looks for its controller tool, `jitterlab list` shows it,
`jitterlab doctor` lists it on a target that offers what it reads, and it reads the line it watches
from the pin it is bound to. This is the "a probe" row of docs/architecture.md's change costs."""

from __future__ import annotations

from typing import ClassVar

import numpy as np
import pytest

from jitterlab import plugins
from jitterlab.analysis.alignment import align
from jitterlab.campaign.file import load_campaign
from jitterlab.execution import preflight
from jitterlab.measure.context import Placement, RunContext
from jitterlab.measure.squarewave.bindings import probes_observing
from jitterlab.measure.squarewave.pins.base import PinHandle
from jitterlab.measure.squarewave.pins.offers import BoardLine
from jitterlab.measure.squarewave.probes.aligned import aligned_capture
from jitterlab.measure.squarewave.probes.base import Capture, ProbeBase
from jitterlab.measure.squarewave.probes.bound import bound_line
from jitterlab.measure.squarewave.probes.logs import SelfLog
from jitterlab.model.errors import UserError
from jitterlab.model.facts import SystemFacts
from jitterlab.model.fakes import squarewave_cell
from jitterlab.model.records import RunSettings
from jitterlab.model.registry import Entry
from jitterlab.model.socs import SOCS
from jitterlab.targets.capabilities import Capability
from jitterlab.targets.fake import FakeTarget
from jitterlab.targets.local import LocalTarget

CLOCK_OFFSET_NS = 1_000_000_000  # the tap's clock runs a second behind the program's


class TapsLines(Capability):
    """A board whose lines a tap on the controller can follow (a capability of the test's own)."""

    does = "have its lines tapped from outside"


class TapProbe(ProbeBase):
    """Watches a board line through what the target offers; its edges are the program's, on a clock
    of its own (a stand-in for an instrument)."""

    needs = (BoardLine,)
    location = "controller"
    reads = TapsLines
    controller_tools: ClassVar[dict[str, str]] = {"no-such-tap-xyz": "tap-tools"}

    def start(self, pin: PinHandle) -> None:
        self.line = bound_line(pin)  # what it is bound to: chip and line, or SoC and register line

    def stop(self, own: SelfLog) -> Capture:
        t_ns = own.t_ns - CLOCK_OFFSET_NS
        fit = align(t_ns, own.level, own.t_ns, own.level, self.period_ns)
        return aligned_capture("tap", t_ns, own.level, fit, edges=f"the tap's edges on line {self.line.line}",
                               fix="check the tap")


class TappedBoard(FakeTarget, TapsLines):
    pass


class TappedLocal(LocalTarget, TapsLines):
    pass


@pytest.fixture
def tap(monkeypatch):
    monkeypatch.setitem(plugins.PROBES._entries, "tap", Entry("tap", "a tap on a board line", TapProbe))


CAMPAIGN = """
[campaign]
name = "tap"
duration = "1s"
[[target]]
name = "board"
kind = "local"
workdir = "{workdir}"
[matrix]
impl = ["c-gpiod", "c-mmap"]
period = "10ms"
probe = "tap"
pin = ["gpiod", "gpiomem"]
[pins.gpiod]
line = 2
[pins.gpiomem]
soc = "pl061"
line = 2
"""


def test_it_binds_to_the_pins_it_can_watch(tap):
    assert "tap" in probes_observing("gpiod") and "tap" not in probes_observing("vpin")


def test_a_campaign_refuses_it_on_a_target_that_lacks_what_it_reads(tap, tmp_path):
    path = tmp_path / "c.toml"
    path.write_text(CAMPAIGN.format(workdir=tmp_path / "w"))
    with pytest.raises(UserError, match=r"c.toml: matrix.probe: probe 'tap' needs a target that can have "
                                        r"its lines tapped from outside; target 'board' \(kind \"local\"\) "
                                        r"cannot"):
        load_campaign(path)


def test_preflight_asks_the_opened_target_and_the_controller(tap, tmp_path, monkeypatch):
    path = tmp_path / "c.toml"
    path.write_text(CAMPAIGN.format(workdir=tmp_path / "w"))
    monkeypatch.setattr(TapProbe, "reads", None)  # the file loads; the target opened then lacks it
    campaign = load_campaign(path)
    monkeypatch.setattr(TapProbe, "reads", TapsLines)
    found = {}
    for kind in (LocalTarget, TappedLocal):
        target = kind("board", str(tmp_path / "w"))
        try:
            session = preflight.preflight(campaign, campaign.targets[0], target)
        finally:
            target.close()
        assert set(session.unavailable) == {c.key for c in campaign.cells}
        found[kind] = set(session.unavailable.values())
    assert found == {
        LocalTarget: {"target 'board' cannot have its lines tapped from outside: probe tap needs it"},
        TappedLocal: {"the controller (this machine) lacks no-such-tap-xyz (apt install tap-tools)"}}


def test_list_shows_it_and_doctor_finds_it_by_what_it_reads(tap, tmp_path, capsys, monkeypatch):
    from jitterlab.cli.commands import doctor
    from jitterlab.cli.main import main
    from jitterlab.measure.squarewave.probes import visa

    assert main(["list"]) == 0
    listed = [" ".join(line.split()) for line in capsys.readouterr().out.splitlines()]
    assert "tap a tap on a board line" in listed
    monkeypatch.setattr(visa, "resources", lambda: [])
    usable = {}
    for kind in (LocalTarget, TappedLocal):
        target = kind("board", str(tmp_path))
        try:
            usable[kind] = doctor.probe_findings(SystemFacts(n_cpus=2), target)[0].state
        finally:
            target.close()
    assert "tap (on a board line: pins " in usable[TappedLocal] and "tap" not in usable[LocalTarget]


def test_it_reads_the_line_from_the_pin_and_ends_like_every_aligned_probe(tap, tmp_path):
    cell = squarewave_cell("c-mmap", 10_000_000, probe="tap", pin="gpiomem")
    ctx = RunContext(TappedBoard(), RunSettings(), cell, 0, "/s", tmp_path, "/b", Placement(None, None), True,
                     controller=FakeTarget())
    probe = TapProbe(ctx)
    probe.start(PinHandle("gpiomem", (BoardLine(soc=SOCS["pl061"], soc_line=2),)))
    own = SelfLog(5_000_000_000 + np.arange(40, dtype=np.int64) * 5_000_000,
                  (np.arange(40) % 2 == 0).astype(np.uint8), "monotonic", "c-mmap", 0)
    capture = probe.stop(own)
    assert probe.line == BoardLine(soc=SOCS["pl061"], soc_line=2)
    assert capture.t_ns.tolist() == own.t_ns.tolist(), "put on the program's clock"
    metrics = {m.name: m.value for m in capture.metrics}
    assert metrics["program_pin_watched"] == 1 and metrics["align_offset_ns"] == CLOCK_OFFSET_NS
