"""Which impls drive which pins and which probes observe them, read from what pins offer and
impls and probes need (pins/offers.py): the campaign's refusal of an impossible combination, and
the lists a user (or `jitterlab doctor`) is shown. Works on the registered plug-ins, whatever
they are: nothing here names one."""

from __future__ import annotations

from jitterlab.measure.squarewave.impls.base import IMPLS
from jitterlab.measure.squarewave.pins.base import PINS
from jitterlab.measure.squarewave.pins.offers import Forms, describe, serves
from jitterlab.measure.squarewave.probes.base import PROBES


def pins_offering(needs: Forms) -> list[str]:
    """The registered pins that offer one of `needs`, by name."""
    return [e.name for e in PINS if serves(needs, e.obj.offers)]


def pins_driven_by(impl: str) -> list[str]:
    """The registered pins impl `impl` can drive."""
    return pins_offering(IMPLS.get(impl, "impl").needs)


def probes_observing(pin: str) -> list[str]:
    """The registered probes that can observe pin `pin`."""
    offers = PINS.get(pin, "pin").offers
    return [e.name for e in PROBES if serves(e.obj.needs, offers)]


def refusal(impl: str, pin: str, probe: str, where: str) -> tuple[str, str] | None:
    """Why the combination cannot be measured, as (the matrix key at fault, one line naming what
    is needed and who offers it), or None when impl and probe both bind to the pin. `where` is the
    matrix's prefix ("campaign.toml: matrix")."""
    offers = PINS.get(pin, f"{where}.pin").offers
    needs = IMPLS.get(impl, f"{where}.impl").needs
    hint = "(exclude the combination with [[exclude]])"
    if not serves(needs, offers):
        return "pin", (f"{where}.pin: impl {impl!r} cannot drive pin {pin!r}: it needs {describe(needs)}, "
                       f"which {_who(pins_offering(needs), 'pin')} {hint}")
    observer = PROBES.get(probe, f"{where}.probe")
    wants = observer.needs
    if not observer.independent and not IMPLS.get(impl, f"{where}.impl").timestamps:
        outside = [p for p in probes_observing(pin) if PROBES.get(p, "probe").independent]
        return "probe", (f"{where}.probe: probe {probe!r} cannot observe pin {pin!r} for impl {impl!r}: it "
                         "reads the program's own timestamps, and this impl has none (its wave is made by a "
                         "unit whose firmware counts its edges but timestamps none); observe the pin with "
                         f"{', '.join(outside)} {hint}")
    if not serves(wants, offers):
        return "probe", (f"{where}.probe: probe {probe!r} cannot observe pin {pin!r}: it needs "
                         f"{describe(wants)}, which {_who(pins_offering(wants), 'pin')}; pin {pin!r} can be "
                         f"observed by {', '.join(probes_observing(pin))} {hint}")
    return None


def _who(names: list[str], kind: str) -> str:
    if not names:
        return f"no registered {kind} offers"
    several = len(names) > 1
    return f"{kind}{'s' if several else ''} {', '.join(names)} {'offer' if several else 'offers'}"
