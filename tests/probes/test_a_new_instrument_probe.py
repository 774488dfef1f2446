"""An instrument probe made inside this test, as a contributor would add one: one class and one
registration (in the package: its module under measure/squarewave/probes/ and an import line in
plugins.py). Nothing else names it, yet `jitterlab doctor` asks it what the controller has of its
instruments (its `instruments` trait) and lists it as usable when one is there, `jitterlab list`
shows it, and the campaign binds it to the pins an instrument's input can be wired to. This is the
"an instrument probe" row of docs/architecture.md's change costs."""

from __future__ import annotations

from typing import ClassVar

import pytest

from jitterlab import plugins
from jitterlab.cli.commands import doctor
from jitterlab.cli.main import main
from jitterlab.measure.squarewave.bindings import probes_observing
from jitterlab.measure.squarewave.pins.offers import InstrumentInput
from jitterlab.measure.squarewave.probes import sigrok, visa
from jitterlab.measure.squarewave.probes.base import Instruments, ProbeBase
from jitterlab.model.facts import SystemFacts
from jitterlab.model.registry import Entry
from jitterlab.targets.base import Target

COUNTERS: list[str] = []  # what the controller "has" in each test


class CounterProbe(ProbeBase):
    """A frequency counter on the controller (a stand-in: it is never started here)."""

    needs = (InstrumentInput,)
    location = "instrument"
    controller_tools: ClassVar[dict[str, str]] = {"countd": "counter-tools"}

    @classmethod
    def instruments(cls, controller: Target) -> Instruments:
        assert controller.run(["true"]).ok, "asked on the controller, as the others are"
        found = ", ".join(COUNTERS) or "none answered on the counters' bus"
        return Instruments("frequency counters", found, bool(COUNTERS))


@pytest.fixture
def counter(monkeypatch):
    monkeypatch.setitem(plugins.PROBES._entries, "counter",
                        Entry("counter", "a frequency counter on the controller", CounterProbe))
    monkeypatch.setattr(visa, "resources", lambda: [])  # the other instruments: none here
    monkeypatch.setattr(sigrok, "scan_devices", lambda controller: [])
    yield
    COUNTERS.clear()


def _findings() -> dict[str, str]:
    found = doctor.probe_findings(SystemFacts(n_cpus=2))
    assert all(f.informational and f.fix is None for f in found), "no instrument is nothing to fix"
    return {f.topic: f.state for f in found}


def test_doctor_asks_it_what_the_controller_has_and_lists_it_when_one_is_there(counter):
    none = _findings()
    assert none["frequency counters"] == "none answered on the counters' bus"
    assert "counter" not in none["probes"].split(", ")
    COUNTERS.append("HP 53131A on /dev/ttyUSB0")
    lab = _findings()
    assert lab["frequency counters"] == "HP 53131A on /dev/ttyUSB0"
    assert lab["probes"].split(", ")[-1] == "counter"
    # beside the instruments the other probes read, each under its own topic
    assert {"VISA resources", "logic analyzers", "frequency counters"} <= set(lab)


def test_list_shows_it_and_the_campaign_binds_it_to_an_instrument_input(counter, capsys):
    assert main(["list"]) == 0
    lines = [" ".join(line.split()) for line in capsys.readouterr().out.splitlines()]
    assert "counter a frequency counter on the controller" in lines
    assert "counter" in probes_observing("external") and "counter" not in probes_observing("vpin")
