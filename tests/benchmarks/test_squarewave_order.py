"""How the squarewave benchmark wires one run, whatever its plug-ins: the order of their steps."""

from __future__ import annotations

import pytest

from jitterlab.measure.benchmarks import squarewave
from jitterlab.measure.context import Placement, RunContext
from jitterlab.measure.squarewave.pins.base import PinHandle
from jitterlab.model.errors import RunFailed
from jitterlab.model.fakes import squarewave_cell
from jitterlab.model.records import RunSettings
from jitterlab.targets.fake import FakeTarget


def plugins_that_log(events: list[str], wave_fails: bool):
    class Impl:
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


def context(tmp_path, events: list[str]) -> RunContext:
    return RunContext(FakeTarget(workdir=str(tmp_path)), RunSettings(), squarewave_cell("kmod-hrtimer"), 0,
                      "/s", tmp_path, "/b", Placement(None, None), True,
                      loads_ready=lambda: events.append("loads ready"),
                      loads_done=lambda: events.append("loads done"))


def test_the_impl_prepares_before_the_pin_and_the_probe_start(monkeypatch, tmp_path):
    """A slow preparation (a kernel module built on the board) must not eat into the time the probe
    watches, which its own bound (duration + run_timeout) limits; all is undone after a failure."""
    events: list[str] = []
    monkeypatch.setattr(squarewave, "_parts", lambda cell: plugins_that_log(events, wave_fails=True))
    with pytest.raises(RunFailed, match="stops here"):
        squarewave.Squarewave().execute(context(tmp_path, events))
    assert events == ["impl.prepare", "pin.setup", "probe.start", "loads ready", "impl.run",
                      "probe.close", "pin.teardown"]  # a failed wave: the runner stops the loads


def test_the_loads_stop_when_the_wave_is_over_and_before_the_analysis(monkeypatch, tmp_path):
    events: list[str] = []
    monkeypatch.setattr(squarewave, "_parts", lambda cell: plugins_that_log(events, wave_fails=False))
    monkeypatch.setattr(squarewave, "_own_edges", lambda ctx, output: "own")
    monkeypatch.setattr(squarewave, "_measurement", lambda *args: events.append("analysis") or "done")
    assert squarewave.Squarewave().execute(context(tmp_path, events)) == "done"
    assert events == ["impl.prepare", "pin.setup", "probe.start", "loads ready", "impl.run",
                      "probe.stop", "probe.close", "pin.teardown", "loads done", "analysis"]
