"""Probes describe where they run and what they need; the self probe hands back the program's edges;
the vpin probe refuses what it cannot see."""

from __future__ import annotations

import tomllib
from pathlib import Path

import numpy as np
import pytest

from jitterlab import plugins
from jitterlab.measure.context import Placement, RunContext
from jitterlab.measure.squarewave.pins.base import PinHandle
from jitterlab.measure.squarewave.probes.base import LOCATIONS
from jitterlab.measure.squarewave.probes.logs import SelfLog
from jitterlab.model.errors import RunFailed, UserError, Where
from jitterlab.model.fakes import squarewave_cell
from jitterlab.model.records import RunSettings
from jitterlab.targets.fake import FakeTarget


@pytest.mark.parametrize("name", plugins.PROBES.names())
def test_a_probe_says_where_it_runs_and_what_it_needs(name):
    probe = plugins.PROBES.get(name, "test")
    assert probe.location in LOCATIONS
    assert isinstance(probe.needs_cpu, bool) and isinstance(probe.independent, bool)
    assert not (probe.needs_cpu and probe.location != "target"), "only a probe on the target takes its CPU"
    # its options can be written from their own examples, and defaults fill the rest
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
    vpin.check(squarewave_cell(period_ns=10_000), settings, Where("c.toml", ("matrix",)))
    with pytest.raises(UserError, match=r"^c.toml: matrix.period: 9us is too short for the vpin probe"):
        vpin.check(squarewave_cell(period_ns=9_000), settings, Where("c.toml", ("matrix",)))


def test_vpin_probe_needs_a_level_byte(tmp_path):
    ctx = RunContext(FakeTarget(), RunSettings(), squarewave_cell(), 0, "/s", Path(tmp_path), "/b",
                     Placement(None, 1), True)
    probe = plugins.PROBES.get("vpin", "test")(ctx)
    with pytest.raises(RunFailed, match="cannot watch pin 'gpiod'"):
        probe.start(PinHandle("gpiod", ("--chip", "/dev/gpiochip0")))
    probe.close()


def test_gpio_loopback_capture_and_what_it_lost(tmp_path):
    """The watcher's capture (edges, blind spans) and stats become the probe's capture and metrics."""
    import json
    import struct

    from jitterlab.measure.squarewave.probes.gpio_loopback import GpioLoopbackProbe

    edges = [(1_000, 1), (6_000, 0), (11_000, 1), (21_000, 1)]  # the last is a lost falling edge
    kept, blind = edges[:3], [(11_000, 21_000)]
    capture = b"JLOBS001" + struct.pack("<QQ", len(kept), len(blind))
    capture += b"".join(struct.pack("<qq", *r) for r in kept + blind)
    target = FakeTarget(workdir=str(tmp_path / "w"))
    scratch = tmp_path / "s"
    scratch.mkdir()
    (scratch / "watch.bin").write_bytes(capture)
    (scratch / "watch.json").write_text(json.dumps({
        "events": 4, "edges": 3, "lost_events": 0, "same_polarity": 1, "overflow_edges": 0,
        "blind_intervals": 1, "clock": "monotonic"}))
    ctx = RunContext(target, RunSettings(), squarewave_cell(probe="gpio-loopback", pin="gpiod"), 0,
                     str(scratch), tmp_path, "/b", Placement(None, None), True)
    probe = GpioLoopbackProbe(ctx)
    probe._proc = type("P", (), {"stop": lambda self, grace_s=0: 0})()
    own = SelfLog(np.array([1, 2, 3, 4, 5], dtype=np.int64), np.array([1, 0, 1, 0, 1], dtype=np.uint8),
                  "monotonic", "c-gpiod", 0)
    got = probe.stop(own)
    assert got.t_ns.tolist() == [1_000, 6_000, 11_000] and got.level.tolist() == [1, 0, 1]
    assert got.blind.tolist() == [[11_000, 21_000]]
    metrics = {m.name: m.value for m in got.metrics}
    assert metrics["probe_same_polarity_events"] == 1 and metrics["unobserved_edges"] == 2
    assert any("lost 1 edge events" in w.message for w in got.warnings)
