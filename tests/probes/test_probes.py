"""Probes describe where they run and what they need; the self probe hands back the program's edges;
the vpin probe refuses what it cannot see."""

from __future__ import annotations

import tomllib
from pathlib import Path

import numpy as np
import pytest

from jitterlab import plugins
from jitterlab.context import Placement, RunContext
from jitterlab.errors import RunFailed, UserError
from jitterlab.fakes import squarewave_cell
from jitterlab.pins.base import PinHandle
from jitterlab.probes.base import LOCATIONS
from jitterlab.probes.logs import SelfLog
from jitterlab.records import RunSettings
from jitterlab.targets.fake import FakeTarget


@pytest.mark.parametrize("name", plugins.PROBES.names())
def test_a_probe_says_where_it_runs_and_what_it_needs(name):
    probe = plugins.PROBES.get(name, "test")
    assert probe.location in LOCATIONS
    assert isinstance(probe.needs_cpu, bool) and isinstance(probe.independent, bool)
    assert not (probe.needs_cpu and probe.location != "target"), "only a probe on the target takes its CPU"
    required = {p.name: tomllib.loads(f"v = {p.example}")["v"] for p in probe.params if p.default is None}
    options = probe.validate(required, "probes.x")
    assert set(options) == {p.name for p in probe.params}, "every option gets a value, defaults filled in"


def test_self_probe_hands_back_the_programs_edges(tmp_path):
    ctx = RunContext(FakeTarget(), RunSettings(), squarewave_cell(probe="self"), 0, "/s", tmp_path, "/b",
                     Placement(None, None), True)
    own = SelfLog(np.array([1, 2, 3], dtype=np.int64), np.array([1, 0, 1], dtype=np.uint8),
                  "monotonic", "x", 0)
    probe = plugins.PROBES.get("self", "test")(ctx)
    probe.start(PinHandle("vpin", ()))
    capture = probe.stop(own)
    assert capture.t_ns.tolist() == [1, 2, 3] and capture.blind.shape == (0, 2)
    assert not plugins.PROBES.get("self", "test").independent


def test_vpin_probe_refuses_a_period_a_pulse_could_hide_in():
    vpin = plugins.PROBES.get("vpin", "test")
    settings = RunSettings(blind_threshold_ns=5_000)
    vpin.check(squarewave_cell(period_ns=10_000), settings, "c.toml: matrix")
    with pytest.raises(UserError, match=r"^c.toml: matrix.period: 9us is too short for the vpin probe"):
        vpin.check(squarewave_cell(period_ns=9_000), settings, "c.toml: matrix")


def test_vpin_probe_needs_a_level_byte(tmp_path):
    ctx = RunContext(FakeTarget(), RunSettings(), squarewave_cell(), 0, "/s", Path(tmp_path), "/b",
                     Placement(None, 1), True)
    probe = plugins.PROBES.get("vpin", "test")(ctx)
    with pytest.raises(RunFailed, match="cannot watch pin 'gpiod'"):
        probe.start(PinHandle("gpiod", ("--chip", "/dev/gpiochip0")))
    probe.close()
