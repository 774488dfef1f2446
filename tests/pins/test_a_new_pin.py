"""A pin made inside this test, with a form of access of its own, as a contributor would add one:
the pin class, its options' record and its new Offer in one module, and one registration (in the
package: measure/squarewave/pins/<x>.py and an import line in plugins.py). Nothing else names it,
yet `jitterlab list` shows it, the campaign reads its [pins.NAME] table, pairs it with the impls
whose `needs` name its form (an impl made here: the program that speaks the new form is the one
change that uses it) and with the probes that watch an instrument's input, refuses the others in
one line, and a run drives it: set up, its form's data reaching the program as flags, the edges
analysed, torn down. This is the "a pin with a new offer" row of docs/architecture.md's change
costs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import pytest

from jitterlab import plugins
from jitterlab.campaign.file import load_campaign
from jitterlab.cli.main import main
from jitterlab.measure.context import Placement, RunContext
from jitterlab.measure.squarewave.impls.base import SELF_LOG, ImplBase, bound, common_flags
from jitterlab.measure.squarewave.pins.base import PinBase, PinHandle
from jitterlab.measure.squarewave.pins.offers import InstrumentInput, Offer
from jitterlab.model.errors import UserError, Where
from jitterlab.model.options import Options
from jitterlab.model.params import Param, integer, text
from jitterlab.model.registry import Entry
from jitterlab.targets.local import LocalTarget
from tests.support import local_campaign

PERIOD_NS = 10_000_000


# --- what the pin's module would hold -----------------------------------------------------------
@dataclass(frozen=True)
class ExpanderPort(Offer):
    """A bit of an I2C GPIO expander's output port: the program writes the port over /dev/i2c-N."""

    what: ClassVar[str] = "an I2C GPIO expander's output port"
    bus: str
    address: int
    bit: int

    @property
    def program_args(self) -> tuple[str, ...]:
        return ("--i2c", self.bus, "--address", hex(self.address), "--bit", str(self.bit))


@dataclass(frozen=True)
class ExpanderOptions(Options):
    bus: str
    address: int
    bit: int


class ExpanderPin(PinBase):
    offers = frozenset({ExpanderPort, InstrumentInput})
    params = (
        Param("bus", "the I2C bus the expander is on", text, '"/dev/i2c-1"'),
        Param("address", "its 7-bit address", integer(0x03, 0x77), "0x20"),
        Param("bit", "the port bit the line is", integer(0, 7), "3"),
    )
    record = ExpanderOptions
    torn_down = 0

    @classmethod
    def declare(cls, settings) -> PinHandle:
        opts = ExpanderOptions.of(cls.validate(settings.options_of("pins", "expander"),
                                               Where(keys=("pins", "expander"))))
        return PinHandle("expander", (ExpanderPort(opts.bus, opts.address, opts.bit), InstrumentInput()),
                         description=f"bit {opts.bit} of the expander at {opts.address:#x} on {opts.bus}")

    def setup(self) -> PinHandle:
        return self.declare(self.ctx.settings)

    def teardown(self) -> None:
        type(self).torn_down += 1


# --- the impl that speaks the new form (its own row: an impl) ------------------------------------
class I2cImpl(ImplBase):
    needs = (ExpanderPort,)
    realtime = False
    flags: ClassVar[list[str]] = []

    def tools(self) -> dict[str, str]:
        return {}

    def programs(self) -> dict[str, str]:
        return {}

    def prepare(self, ctx: RunContext) -> None:
        return None

    def run(self, ctx: RunContext, pin: PinHandle) -> str:
        type(self).flags[:] = common_flags(ctx, bound(ctx, self.needs, pin), allow_no_rt=True)
        edges = "".join(f"{1_000_000_000 + i * PERIOD_NS // 2} {(i + 1) % 2}\n" for i in range(200))
        log = f"# jitterlab-edges v1 clock=monotonic impl=i2c-c\n{edges}# end edges=200\n"
        ctx.target.run(["sh", "-c", 'printf "%s" "$1" > "$2"', "sh", log, f"{ctx.scratch}/{SELF_LOG}"])
        return ""


@pytest.fixture
def expander(monkeypatch):
    monkeypatch.setitem(plugins.PINS._entries, "expander",
                        Entry("expander", "a line of an I2C GPIO expander: [pins.expander] bus, address, bit",
                              ExpanderPin))
    monkeypatch.setitem(plugins.IMPLS._entries, "i2c-c", Entry("i2c-c", "C over /dev/i2c-N", I2cImpl()))
    monkeypatch.setattr(ExpanderPin, "torn_down", 0)


MATRIX = """
[matrix]
impl = ["i2c-c", "c-fifo"]
period = "10ms"
pin = ["expander", "vpin"]
probe = "{probe}"
[pins.expander]
bus = "/dev/i2c-1"
address = {address}
bit = 3
"""
SCPI = '[probes.scpi]\nresource = "TCPIP::192.0.2.1::INSTR"\nprofile = "rigol"\n'


def _campaign(tmp_path, probe: str = "self", address: str = "0x20"):
    matrix = MATRIX.format(probe=probe, address=address) + (SCPI if probe == "scpi" else "")
    return load_campaign(local_campaign(tmp_path, matrix, name="expander", duration="1s", warmup="20ms"))


def test_list_shows_it_with_its_options(expander, capsys):
    assert main(["list"]) == 0
    lines = [" ".join(line.split()) for line in capsys.readouterr().out.splitlines()]
    assert "expander a line of an I2C GPIO expander: [pins.expander] bus, address, bit" in lines


def test_the_campaign_pairs_it_with_what_speaks_its_form_and_refuses_the_rest(expander, tmp_path):
    campaign = _campaign(tmp_path)
    assert sorted((str(c.param("impl")), str(c.param("pin"))) for c in campaign.cells) == [
        ("c-fifo", "vpin"), ("i2c-c", "expander")]
    # an instrument watches its input: the refusal of the other pin names it among those that offer one
    with pytest.raises(UserError, match=r"c.toml: matrix.probe: probe 'scpi' cannot observe pin 'vpin': it "
                                        r"needs a signal an instrument's input is wired to, which pins "
                                        r"expander, external, "):
        _campaign(tmp_path, "scpi")
    with pytest.raises(UserError, match=r"c.toml: matrix.probe: probe 'vpin' cannot observe pin 'expander': "
                                        r"it needs a level byte an observer can map and poll"):
        _campaign(tmp_path, "vpin")
    with pytest.raises(UserError, match=r"c.toml: pins.expander.address: "):
        _campaign(tmp_path, address="0x80")


def test_a_run_drives_it_and_tears_it_down(expander, tmp_path):
    campaign = _campaign(tmp_path)
    [cell] = [c for c in campaign.cells if c.param("pin") == "expander"]
    bench = plugins.BENCHMARKS.get("squarewave", "test")
    target = LocalTarget("local", str(tmp_path / "target"))
    scratch = tmp_path / "target" / "run"
    scratch.mkdir(parents=True)
    ctx = RunContext(target, campaign.settings, cell, 0, str(scratch), tmp_path, "/unused",
                     Placement(None, None), rt_permitted=False, controller=target)
    try:
        measuring = bench.prepare(ctx)
        try:
            raw = measuring.measure()
        finally:
            measuring.close()
        measurement = bench.analyse(ctx, raw)
    finally:
        target.close()
    assert I2cImpl.flags[I2cImpl.flags.index("--i2c"):][:6] == ["--i2c", "/dev/i2c-1", "--address", "0x20",
                                                                 "--bit", "3"]
    metrics = {(m.subject, m.name): m.value for m in measurement.metrics}
    assert metrics[("self", "max_rel_period_error")] == 0.0 and ExpanderPin.torn_down == 1
