"""The external pin: the program gets a virtual pin file; only instruments (and self) may observe it,
and no observer is offered the file, since the instrument watches something else."""

from __future__ import annotations

from pathlib import Path

import pytest

from jitterlab import plugins
from jitterlab.measure.benchmarks.squarewave import Squarewave
from jitterlab.model.errors import UserError
from jitterlab.model.fakes import squarewave_cell
from jitterlab.model.records import RunSettings

from .test_vpin import context


def test_the_program_writes_a_pin_file_no_observer_may_map(tmp_path):
    pin = plugins.PINS.get("external", "test")(context(tmp_path))
    handle = pin.setup()
    path = Path(handle.program_args[1])
    assert handle.kind == "external" and handle.level_path is None
    assert path.read_bytes() == b"0\n" and "outside signal" in handle.description
    pin.teardown()
    assert not path.exists()
    pin.teardown()


def test_only_instruments_and_self_observe_it():
    bench = Squarewave()
    settings = RunSettings(options={"probes": {"scpi": {"resource": "x", "profile": "rigol"}}})
    for impl in ("python", "c-fifo"):  # a file pin and a mapped pin
        bench.check(squarewave_cell(impl, probe="scpi", pin="external"), settings, "c: matrix", "local")
    with pytest.raises(UserError, match="probe 'vpin' cannot observe pin 'external'; it can be observed by "
                       "scpi, self, sigrok"):
        bench.check(squarewave_cell(probe="vpin", pin="external"), settings, "c: matrix", "local")
