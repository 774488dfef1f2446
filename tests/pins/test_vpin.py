"""The virtual pin sets itself up as a GPIO-value-like file and is removed on every path: with the
run's directory, which every run removes as it ends."""

from __future__ import annotations

from pathlib import Path

from jitterlab import plugins
from jitterlab.measure.context import Placement, RunContext
from jitterlab.measure.squarewave.bindings import probes_observing
from jitterlab.measure.squarewave.pins.offers import LevelPage, MappedLevel, Offer, ValueFile
from jitterlab.model.fakes import squarewave_cell
from jitterlab.model.records import RunSettings
from jitterlab.targets.local import LocalTarget
from jitterlab.targets.processes import remove_records, remove_scratch, scratch_dir


def context(tmp_path: Path) -> RunContext:
    target = LocalTarget(workdir=str(tmp_path / "w"))
    scratch = scratch_dir(target, "pintest0001")
    local = tmp_path / "local"
    local.mkdir()
    return RunContext(target, RunSettings(), squarewave_cell(), 0, scratch, local, "/b",
                      Placement(None, None), True)


def test_setup_makes_a_level_file_and_teardown_has_it_removed_with_the_run_directory(tmp_path):
    ctx = context(tmp_path)
    pin = plugins.PINS.get("vpin", "test")(ctx)
    handle = pin.setup()
    page = handle.get(LevelPage)
    path = Path(page.path)
    assert {type(o) for o in handle.offers} == set(type(pin).offers), "what the kind declares"
    assert handle.get(ValueFile).program_args == handle.get(MappedLevel).program_args == ("--pin", str(path))
    assert page.offset == 0 and path.read_bytes() == b"0\n"
    assert str(path).startswith("/dev/shm/jitterlab-")
    pin.teardown()
    pin.teardown()  # idempotent
    assert path.exists(), "no round trip of its own: removed with the run's directory"
    ctx.target.run(["mkdir", "-p", ctx.scratch])
    remove_scratch(ctx.target, ctx.scratch)
    assert not path.exists() and not Path(ctx.scratch).exists()


def test_teardown_before_setup_is_harmless(tmp_path):
    ctx = context(tmp_path)
    other = plugins.PINS.get("vpin", "test")(ctx)
    path = Path(other.setup().get(LevelPage).path)  # a level file where this pin would make its own
    try:
        pin = plugins.PINS.get("vpin", "test")(ctx)
        pin.teardown()
        assert path.read_bytes() == b"0\n", "a pin never set up removes nothing"
        handle = pin.setup()  # and can still be set up
        assert handle.get(LevelPage).path == str(path)
        pin.teardown()
        remove_records(ctx.target)  # where no run directory follows: with the target's records
        assert not path.exists()
    finally:
        other.teardown()
        remove_records(ctx.target)


def test_every_pin_offers_forms_and_is_observed_by_self_and_another_probe():
    for entry in plugins.PINS:
        assert entry.obj.offers and all(issubclass(o, Offer) for o in entry.obj.offers), entry.name
        observers = probes_observing(entry.name)
        assert "self" in observers and len(observers) > 1, entry.name
