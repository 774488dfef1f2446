"""How the squarewave benchmark wires one run, whatever its plug-ins: the order of their steps
among the run's phases, as execution/run.py drives them."""

from __future__ import annotations

import pytest

from jitterlab.execution.run import measure
from jitterlab.measure.benchmarks import squarewave
from jitterlab.measure.context import Placement, RunContext
from jitterlab.measure.squarewave.impls.base import ImplBase
from jitterlab.measure.squarewave.pins.base import PinHandle
from jitterlab.model.errors import RunFailed
from jitterlab.model.fakes import squarewave_cell
from jitterlab.model.records import RunSettings
from jitterlab.targets.fake import FakeTarget


def plugins_that_log(events: list[str], wave_fails: bool):
    class Impl(ImplBase):  # the optional parts of an impl from its base
        def prepare(self, ctx):
            events.append("impl.prepare")

        def run(self, ctx, pin):
            events.append("impl.run")
            if wave_fails:
                raise RunFailed("the wave stops here")
            return ""

    class Pin:
        def __init__(self, ctx):
            pass

        def setup(self):
            events.append("pin.setup")
            return PinHandle("gpiod", ())

        def teardown(self):
            events.append("pin.teardown")

    class Probe:
        def __init__(self, ctx):
            pass

        def start(self, pin):
            events.append("probe.start")

        def stop(self, own):
            events.append("probe.stop")
            return "capture"

        def close(self):
            events.append("probe.close")

    return Impl(), Pin, Probe


class Loads:
    """The runner's loads of the target, as far as the order goes."""

    def __init__(self, events: list[str]) -> None:
        self.events = events

    def start(self, cell, runs):
        self.events.append("loads start")

    def up(self):
        self.events.append("loads up")

    def down(self, keep):
        self.events.append("loads down")
        return []

    def after_failure(self, keep):
        self.events.append("loads after failure")

    def stop(self):
        self.events.append("loads stop")


def context(tmp_path) -> RunContext:
    return RunContext(FakeTarget(workdir=str(tmp_path), quiet=True), RunSettings(),
                      squarewave_cell("kmod-hrtimer"), 0, "/s", tmp_path, "/b", Placement(None, None), True)


def test_the_impl_prepares_before_the_pin_and_the_probe_start(monkeypatch, tmp_path):
    """A slow preparation (a kernel module built on the board) must not eat into the time the probe
    watches, which its own bound (duration + run_timeout) limits; all is undone after a failure."""
    events: list[str] = []
    monkeypatch.setattr(squarewave, "_parts", lambda cell: plugins_that_log(events, wave_fails=True))
    result = measure(squarewave.Squarewave(), context(tmp_path), Loads(events), keep=False, runs=1)
    assert (result.status, result.error) == ("failed", "the wave stops here")
    assert events == ["loads start", "impl.prepare", "pin.setup", "probe.start", "loads up", "impl.run",
                      "probe.close", "pin.teardown", "loads after failure"]


def test_the_loads_stop_when_the_wave_is_over_and_before_the_analysis(monkeypatch, tmp_path):
    events: list[str] = []
    monkeypatch.setattr(squarewave, "_parts", lambda cell: plugins_that_log(events, wave_fails=False))
    monkeypatch.setattr(squarewave, "_own_edges", lambda ctx, output: "own")
    monkeypatch.setattr(squarewave, "_measurement", lambda *args: events.append("analysis") or "done")
    result = measure(squarewave.Squarewave(), context(tmp_path), Loads(events), keep=False, runs=1)
    assert result.measurement == "done"
    assert events == ["loads start", "impl.prepare", "pin.setup", "probe.start", "loads up", "impl.run",
                      "probe.stop", "probe.close", "pin.teardown", "loads down", "analysis"]


def test_a_probe_that_cannot_start_tears_the_pin_down_and_the_loads_are_not_left_up(monkeypatch, tmp_path):
    events: list[str] = []
    impl, pin, probe = plugins_that_log(events, wave_fails=False)

    class Blind(probe):
        def start(self, handle):
            events.append("probe.start")
            raise RunFailed("no probe here")

    monkeypatch.setattr(squarewave, "_parts", lambda cell: (impl, pin, Blind))
    result = measure(squarewave.Squarewave(), context(tmp_path), Loads(events), keep=False, runs=1)
    assert result.error == "no probe here"
    assert events == ["loads start", "impl.prepare", "pin.setup", "probe.start", "probe.close",
                      "pin.teardown", "loads after failure"]  # a probe closes whatever it half-opened


def test_an_interrupt_while_measuring_undoes_everything_and_stops_the_loads(monkeypatch, tmp_path):
    events: list[str] = []
    impl, pin, probe = plugins_that_log(events, wave_fails=False)

    class Interrupted(type(impl)):
        def run(self, ctx, handle):
            events.append("impl.run")
            raise KeyboardInterrupt

    monkeypatch.setattr(squarewave, "_parts", lambda cell: (Interrupted(), pin, probe))
    with pytest.raises(KeyboardInterrupt):
        measure(squarewave.Squarewave(), context(tmp_path), Loads(events), keep=True, runs=2)
    assert events == ["loads start", "impl.prepare", "pin.setup", "probe.start", "loads up", "impl.run",
                      "probe.close", "pin.teardown", "loads stop"]
