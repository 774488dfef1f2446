"""Which impl x pin x probe combinations a campaign accepts: impls and probes bind to what a pin's
handle offers, and every combination is accepted or refused exactly as the rule tables below say
(the tables the pins and impls listed by name before they declared their bindings)."""

from __future__ import annotations

import itertools
import re

import pytest

from jitterlab import plugins
from jitterlab.measure.squarewave.bindings import pins_driven_by, probes_observing, refusal
from jitterlab.measure.squarewave.pins.base import PinHandle
from jitterlab.measure.squarewave.pins.offers import (
    BoardLine,
    ChipLine,
    InstrumentInput,
    LevelPage,
    MappedLevel,
    Offer,
    OutsideSignal,
    RegisterBlock,
    ValueFile,
    serves,
)
from jitterlab.measure.squarewave.probes.base import ProbeBase
from jitterlab.model.errors import UserError, Where
from jitterlab.model.fakes import squarewave_cell
from jitterlab.model.records import RunSettings
from jitterlab.model.registry import Entry

FILE_PINS = {"vpin", "sysfs", "external"}
MAPPED_PINS = {"vpin", "gpiomem", "external"}
KERNEL_PINS = {"gpiod"}  # sysfs holds its line exported: a kernel module's request would be refused
DRIVES = {
    "bash": FILE_PINS, "node": FILE_PINS, "c-file": FILE_PINS, "python": FILE_PINS | {"gpiod"},
    "c-gpiod": {"gpiod"}, "c-mmap": MAPPED_PINS, "c-fifo": MAPPED_PINS,
    "kmod-busy": KERNEL_PINS, "kmod-hrtimer": KERNEL_PINS, "kmod-rt": KERNEL_PINS,
    "unit": {"unit"},
}
UNTIMED = {"unit"}  # impls whose edge log has no times: the self probe has nothing to read
BOARD_PROBES = {"self", "gpio-loopback", "sigrok", "scpi", "emulator", "register-poll"}
OBSERVED_BY = {
    "vpin": {"vpin", "self"}, "external": {"sigrok", "scpi", "self"},
    "sysfs": BOARD_PROBES, "gpiod": BOARD_PROBES, "gpiomem": BOARD_PROBES,
    "unit": {"emulator", "sigrok", "scpi", "self"},
}
# options every pin and probe accepts, so that only the binding can refuse a combination
SETTINGS = RunSettings(duration_ns=10**9, options={
    "pins": {"gpiod": {"chip": "gpiochip0", "line": 2}, "sysfs": {"chip": "gpiochip0", "line": 2},
             "gpiomem": {"soc": "pl061", "line": 2, "device": ""}},
    "probes": {"sigrok": {"driver": "fx2lafw", "samplerate": 24_000_000},
               "scpi": {"resource": "TCPIP::192.0.2.1::INSTR", "profile": "rs-rto"},
               "gpio-loopback": {"line": 18}, "register-poll": {"soc": "pl061", "line": 2}},
})
REFUSAL = re.compile(r"^c\.toml: matrix\.(pin|probe): (impl|probe) '[\w-]+' cannot (drive|observe) pin ")


def verdict(impl: str, pin: str, probe: str) -> str:
    """"ok", "pin" (the impl cannot drive the pin) or "probe" (the probe cannot observe it)."""
    bench = plugins.BENCHMARKS.get("squarewave", "test")
    try:
        cell = squarewave_cell(impl, 10_000_000, pin=pin, probe=probe)
        bench.check(cell, SETTINGS, Where("c.toml", ("matrix",)))
    except UserError as exc:
        found = REFUSAL.match(str(exc))
        assert found and "\n" not in str(exc), f"{impl} x {pin} x {probe}: refused for another reason: {exc}"
        return found.group(1)
    return "ok"


def test_the_tables_name_every_registered_impl_pin_and_probe():
    assert set(DRIVES) == set(plugins.IMPLS.names())
    assert set(OBSERVED_BY) == set(plugins.PINS.names())
    assert set().union(*OBSERVED_BY.values()) == set(plugins.PROBES.names())


@pytest.mark.parametrize(("impl", "pin"), sorted(itertools.product(DRIVES, OBSERVED_BY)))
def test_every_combination_is_accepted_or_refused_as_the_tables_say(impl, pin):
    for probe in sorted(plugins.PROBES.names()):
        expected = ("pin" if pin not in DRIVES[impl] else "probe" if probe not in OBSERVED_BY[pin]
                    or (probe == "self" and impl in UNTIMED) else "ok")
        assert verdict(impl, pin, probe) == expected, f"{impl} x {pin} x {probe}"


def test_the_lists_a_user_is_shown_come_from_the_offers():
    assert probes_observing("vpin") == ["self", "vpin"]
    assert probes_observing("external") == ["scpi", "self", "sigrok"]
    assert probes_observing("gpiomem") == ["emulator", "gpio-loopback", "register-poll", "scpi", "self",
                                           "sigrok"]
    assert pins_driven_by("python") == ["external", "gpiod", "sysfs", "vpin"]
    assert pins_driven_by("kmod-rt") == ["gpiod"]


def test_the_self_probe_is_refused_for_an_impl_that_timestamps_nothing():
    assert refusal("unit", "unit", "self", Where("c.toml", ("matrix",))) == ("probe", (
        "c.toml: matrix.probe: probe 'self' cannot observe pin 'unit' for impl 'unit': it reads the "
        "program's own timestamps, and this impl has none (its wave is made by a unit whose firmware counts "
        "its edges but timestamps none); observe the pin with emulator, scpi, sigrok (exclude the "
        "combination with [[exclude]])"))
    assert refusal("unit", "unit", "emulator", Where("c.toml", ("matrix",))) is None


def test_a_new_probe_and_a_new_impl_bind_by_what_they_need(monkeypatch):
    """One class each, registered: nothing else names them, and the refusal names who offers what."""

    class Coprocessor(Offer):
        what = "a coprocessor's output line"

    class TraceProbe(ProbeBase):  # e.g. a trace unit that sees any real board line
        needs = (BoardLine,)

    class RprocImpl:
        needs = (Coprocessor,)
        realtime = True

    monkeypatch.setitem(plugins.PROBES._entries, "trace", Entry("trace", "test", TraceProbe))
    monkeypatch.setitem(plugins.IMPLS._entries, "rproc", Entry("rproc", "test", RprocImpl()))
    assert probes_observing("gpiod") == ["emulator", "gpio-loopback", "register-poll", "scpi", "self",
                                         "sigrok", "trace"]
    assert "trace" not in probes_observing("vpin") and pins_driven_by("rproc") == []
    assert refusal("c-gpiod", "gpiod", "trace", Where("c.toml", ("matrix",))) is None
    assert refusal("python", "vpin", "trace", Where("c.toml", ("matrix",))) == ("probe", (
        "c.toml: matrix.probe: probe 'trace' cannot observe pin 'vpin': it needs a board line that another "
        "GPIO input can be wired to, which pins gpiod, gpiomem, sysfs offer; pin 'vpin' can be observed by "
        "self, vpin (exclude the combination with [[exclude]])"))
    assert refusal("rproc", "gpiod", "self", Where("c.toml", ("matrix",))) == ("pin", (
        "c.toml: matrix.pin: impl 'rproc' cannot drive pin 'gpiod': it needs a coprocessor's output line, "
        "which no registered pin offers (exclude the combination with [[exclude]])"))


def test_a_handle_hands_the_consumer_its_first_choice_among_what_it_offers():
    handle = PinHandle("vpin", (ValueFile("/p"), MappedLevel("/p"), LevelPage("/p")))
    assert handle.bind((MappedLevel, RegisterBlock)) == MappedLevel("/p")
    assert handle.bind((RegisterBlock, ValueFile)) == ValueFile("/p")
    assert handle.bind((RegisterBlock,)) is None and handle.get(ChipLine) is None
    outside = PinHandle("external", (OutsideSignal(),))
    assert outside.get(InstrumentInput) == OutsideSignal(), "a derived form serves who needs its base"
    assert serves((InstrumentInput,), {OutsideSignal}) and not serves((OutsideSignal,), {InstrumentInput})
    assert serves((), set()), "a consumer that needs nothing binds to every pin"
