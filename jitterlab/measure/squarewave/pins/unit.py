"""The unit pin: a GPIO line of a real-time unit beside the target's Linux (a core of its SoC, an
MCU on a serial line, or one qemu emulates on the controller; the `unit` table of its [[target]]),
driven by the unit's firmware, not by Linux. Linux reaches the unit over a tty (UnitLine, which the
unit impl commands); outside observers watch its pin: an instrument wired to it (InstrumentInput),
or, for an emulated unit, the emulator's trace of its GPIO controller (TracedOutput). No observer on
the target can read it, and the unit's firmware timestamps nothing (the self probe refuses it).

Setting the pin up loads the unit's firmware the first time (the target keeps it loaded until it
closes, then puts back what ran before); [pins.unit] chatter sets how often Linux exchanges a
message with the unit during a run, to time the round trip under each load.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from jitterlab.measure.squarewave.cell import WaveCell
from jitterlab.measure.squarewave.pins.base import PINS, PinBase, PinHandle
from jitterlab.measure.squarewave.pins.offers import InstrumentInput, Offer, TracedOutput, describe, serves
from jitterlab.measure.squarewave.probes.base import PROBES
from jitterlab.model.errors import RunFailed, UserError, Where
from jitterlab.model.options import Options, key
from jitterlab.model.params import Param, duration
from jitterlab.model.records import Cell, RunSettings
from jitterlab.model.units import format_ns, parse_duration_ns
from jitterlab.programs.unit import LM3S6965EVB, UnitSpec, describe_timer, period_step_ns, timing
from jitterlab.targets.capabilities import CommandsUnit, Declared, has

NAME = "unit"
EXAMPLE = f'unit = {{kind = "emulated", profile = "{LM3S6965EVB.name}"}}'
MIN_CHATTER_NS = 1_000_000  # a message and its echo take ~1 ms on a 115200-baud line


def _exact(ns: int) -> str:
    """A period as a campaign writes it, or in ns where that would round it ("10000040ns")."""
    shown = format_ns(ns)
    return shown if parse_duration_ns(shown.replace(" ", ""), "period") == ns else f"{ns}ns"


def _chatter(value: object, where: str) -> int:
    """"off" (the default), or how often a message is exchanged: a duration of 1 ms or more."""
    if value == "off":
        return 0
    return int(duration(MIN_CHATTER_NS)(value, where))


@dataclass(frozen=True)
class UnitLine(Offer):
    """The line Linux commands a real-time unit over: a tty on the target, its speed, how often to
    exchange a timed message during the run (0: never), and what the unit is and runs (unit_*)."""

    what: ClassVar[str] = "a real-time unit's command line (a tty to its firmware)"
    tty: str
    baud: int
    chatter_ns: int = 0
    facts: dict[str, object] = field(default_factory=dict, compare=False, hash=False)

    @property
    def program_args(self) -> tuple[str, ...]:
        return ("--tty", self.tty, "--baud", str(self.baud))


@dataclass(frozen=True)
class UnitOptions(Options):
    chatter_ns: int = key("chatter")  # 0: never


class UnitPin(PinBase):
    offers = frozenset({UnitLine, InstrumentInput, TracedOutput})
    reads = CommandsUnit
    params = (
        Param("chatter", 'exchange a message with the unit this often during the run and time each round '
              'trip ("off", the default: never)', _chatter, '"10ms"', default="off",
              show=lambda ns: format_ns(int(ns)) if ns else "off"),
    )
    record = UnitOptions

    @classmethod
    def check_target(cls, cell: Cell, settings: RunSettings, where: Where, target: Declared) -> None:
        spec = target.unit
        if not isinstance(spec, UnitSpec):
            raise UserError(f"{where}.pin: pin {NAME!r} is a real-time unit's, and target {cell.target!r} "
                            f"has none; give its [[target]] one, e.g. {EXAMPLE}")
        wave, profile = WaveCell.of_cell(cell), spec.profile
        period_ns = wave.period_ns
        made = timing(profile, period_ns)
        if isinstance(made, str):
            step = period_step_ns(profile)
            shortest = 2 * profile.min_reload * 1_000_000_000 // profile.timer_hz
            raise UserError(f"{where}.period: unit {profile.name!r} of target {cell.target!r} cannot make a "
                            f"period of {_exact(period_ns)} with {describe_timer(profile)}: {made}; use a "
                            f"multiple of {format_ns(step)} from {format_ns(max(shortest, step))} on")
        # an emulated unit's pin is traced by the emulator; a real one is wired to an instrument
        forms = (TracedOutput,) if spec.emulated else (InstrumentInput,)
        probe = wave.probe
        wants = PROBES.get(probe, f"{where}.probe").needs
        if wants and not serves(wants, forms):
            fit = [e.name for e in PROBES if e.obj.needs and serves(e.obj.needs, forms)]
            raise UserError(f"{where}.probe: probe {probe!r} needs {describe(wants)}, and the {spec.loader} "
                            f"unit of target {cell.target!r} offers {describe(forms)}; use probe = "
                            + " or ".join(f'"{n}"' for n in fit))

    def setup(self) -> PinHandle:
        target = self.ctx.target
        unit = has(target, CommandsUnit)
        if unit is None:
            raise RunFailed(f"pin {NAME!r}: target {target.name!r} has no unit beside it; give its "
                            f"[[target]] one, e.g. {EXAMPLE}", status="unavailable")
        link = unit.unit_ready()
        line = UnitLine(link.tty, link.baud, UnitOptions.of(self.options()).chatter_ns, dict(link.facts))
        observed: Offer = (InstrumentInput() if link.trace is None
                           else TracedOutput(link.trace, link.trace_line))
        what = f"{link.facts.get('unit_profile', 'unit')} {link.facts.get('unit_pin', '')}".strip()
        return PinHandle(NAME, (line, observed), description=f"{what}, commanded over {link.tty}")

    def teardown(self) -> None:
        return None  # the unit keeps its firmware until the target closes


PINS.add(
    NAME,
    "a real-time unit's own GPIO line (the unit table of the [[target]]: emulated, serial or remoteproc), "
    "driven by its firmware (impl unit); watched from outside: emulator (an emulated unit), sigrok, scpi",
    UnitPin,
)
