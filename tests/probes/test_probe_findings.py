"""`jitterlab doctor` lists the probes usable on a target: vpin only with a second CPU, sigrok
with an analyzer found on this machine (sigrok's demo device is no analyzer), scpi with an
instrument on USB or GPIB; none of it is something to fix, and what is no instrument (the demo
driver's simulator, a serial port nothing identified) says so."""

from __future__ import annotations

import shutil

import pytest

from jitterlab.cli.commands import doctor
from jitterlab.measure.squarewave.probes import sigrok, visa
from jitterlab.model.facts import SystemFacts


def _findings(monkeypatch, n_cpus: int, analyzers: list[str], resources: list[str]) -> dict[str, str]:
    monkeypatch.setattr(sigrok, "scan_devices", lambda controller: analyzers)
    monkeypatch.setattr(visa, "resources", lambda: resources)
    found = doctor.probe_findings(SystemFacts(n_cpus=n_cpus))
    assert all(f.fix is None and f.informational for f in found), "no instrument is nothing to fix"
    return {f.topic: f.state for f in found}


@pytest.mark.skipif(shutil.which("sigrok-cli") is None, reason="apt install sigrok-cli")
def test_probes_usable_with_instruments_and_without(monkeypatch):
    demo = ["demo - Demo device with 13 channels: D0 D1"]
    bare = _findings(monkeypatch, 1, demo, ["ASRL/dev/ttyS0::INSTR"])
    assert bare["probes"] == "self, (vpin needs a second CPU)"
    simulator = "sigrok's demo driver, a software simulator that watches no pin"
    assert bare["logic analyzers"] == f"none; only {simulator}"
    assert bare["VISA resources"].startswith("ASRL/dev/ttyS0::INSTR: serial port, not identified (")
    lab = _findings(monkeypatch, 4, ["fx2lafw - Saleae Logic with 8 channels: D0 D1 D2 D3 D4 D5 D6 D7"],
                    ["USB0::0x0AAD::0x0197::100938::INSTR"])
    assert lab["probes"] == "self, vpin, scpi, sigrok"
    assert lab["VISA resources"] == "USB0::0x0AAD::0x0197::100938::INSTR (instrument)"
    both = _findings(monkeypatch, 4, ["fx2lafw - Saleae Logic with 8 channels: D0", *demo], [])
    assert both["logic analyzers"] == f"fx2lafw - Saleae Logic with 8 channels: D0; and {simulator}"
    none = _findings(monkeypatch, 2, [], [])
    assert none["logic analyzers"] == "none found by sigrok-cli --scan"
    assert none["VISA resources"].startswith("none on USB, GPIB or serial")


def test_without_sigrok_cli_the_fix_is_named(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(visa, "resources", lambda: [])
    states = {f.topic: f.state for f in doctor.probe_findings(SystemFacts(n_cpus=2))}
    assert states["logic analyzers"] == ("sigrok-cli is not installed here (apt install sigrok-cli to use "
                                         "an analyzer)")
