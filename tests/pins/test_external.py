"""The external pin: the program gets a virtual pin file; only instruments (and self) may observe it,
and no observer is offered the file, since the instrument watches something else."""

from __future__ import annotations

from pathlib import Path

import pytest

from jitterlab import plugins
from jitterlab.measure.benchmarks.squarewave import Squarewave
from jitterlab.measure.squarewave.pins.offers import LevelPage, MappedLevel, OutsideSignal, ValueFile
from jitterlab.model.errors import UserError, Where
from jitterlab.model.fakes import squarewave_cell
from jitterlab.model.records import RunSettings
from jitterlab.targets.processes import remove_records

from .test_vpin import context


def test_the_program_writes_a_pin_file_no_observer_may_map(tmp_path):
    ctx = context(tmp_path)
    pin = plugins.PINS.get("external", "test")(ctx)
    handle = pin.setup()
    path = Path(handle.get(ValueFile).path)
    assert handle.kind == "external" and handle.get(LevelPage) is None and handle.get(OutsideSignal)
    assert handle.get(MappedLevel).path == str(path)
    assert {type(o) for o in handle.offers} == set(type(pin).offers), "what the kind declares"
    assert path.read_bytes() == b"0\n" and "outside signal" in handle.description
    pin.teardown()
    pin.teardown()
    remove_records(ctx.target)  # a pin's file goes with the run's directory, or the target's records
    assert not path.exists()


def test_only_instruments_and_self_observe_it():
    bench = Squarewave()
    settings = RunSettings(options={"probes": {"scpi": {"resource": "x", "profile": "rigol"}}})
    for impl in ("python", "c-fifo"):  # a file pin and a mapped pin
        cell = squarewave_cell(impl, probe="scpi", pin="external")
        bench.check(cell, settings, Where("c", ("matrix",)))
    with pytest.raises(UserError, match="^c: matrix.probe: probe 'vpin' cannot observe pin 'external': "
                       "it needs a level byte an observer can map and poll, which pin vpin offers; pin "
                       "'external' can be observed by scpi, self, sigrok "
                       r"\(exclude the combination with \[\[exclude\]\]\)$"):
        bench.check(squarewave_cell(probe="vpin", pin="external"), settings, Where("c", ("matrix",)))
