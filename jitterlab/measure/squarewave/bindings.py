"""Which impls drive which pins and which probes observe them, read from what pins offer and
impls and probes need (pins/offers.py): a matrix's pairing of each impl with the pins it drives,
the campaign's refusal of an impossible combination, and the lists a user (or `jitterlab doctor`)
is shown. Works on the registered plug-ins, whatever they are: nothing here names one."""

from __future__ import annotations

from collections.abc import Iterable

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


def drives(impl: str, pin: str) -> bool:
    """True when impl `impl` can drive pin `pin`."""
    return serves(IMPLS.get(impl, "impl").needs, PINS.get(pin, "pin").offers)


def impls_driving(pin: str) -> list[str]:
    """The registered impls that can drive pin `pin`."""
    return [e.name for e in IMPLS if drives(e.name, pin)]


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


Pairs = Iterable[tuple[str, str]]  # (impl, pin)


def unpaired(named: Pairs, kept: Pairs, where: str) -> tuple[str, str] | None:
    """Why a matrix cannot pair each impl with the pins it drives, as (the matrix key at fault, one
    line): a pin that no impl of the matrix drives (checked first: the user named it to be
    measured), an impl that drives none of its pins; None when each has a partner. `named`: the
    (impl, pin) pairs the matrix's values make, `kept`: those its [[exclude]] rules leave (a value
    they drop altogether is not refused); `where` is the matrix's prefix ("campaign.toml: matrix")."""
    named, kept = list(dict.fromkeys(named)), list(dict.fromkeys(kept))
    for pin in dict.fromkeys(p for _, p in kept):
        mine = [i for i, p in named if p == pin]
        if any(drives(i, pin) for i in mine):
            continue
        drivers = impls_driving(pin)
        fix = (f"add an impl that drives it to matrix.impl ({', '.join(drivers)}) or remove it from "
               "matrix.pin" if drivers else "no registered impl drives it: remove it from matrix.pin")
        why = (f"no impl of the matrix ({', '.join(mine)}) can drive pin {pin!r}" if len(mine) > 1 else
               f"impl {mine[0]!r} cannot drive pin {pin!r}: {_needs(mine[0], where)}")
        return "pin", f"{where}.pin: {why}; {fix}"
    for impl in dict.fromkeys(i for i, _ in kept):
        theirs = [p for i, p in named if i == impl]
        if any(drives(impl, p) for p in theirs):
            continue
        what = f"pin {theirs[0]!r}" if len(theirs) == 1 else f"any of the matrix's pins ({', '.join(theirs)})"
        return "impl", (f"{where}.impl: impl {impl!r} cannot drive {what}: {_needs(impl, where)}; add a pin "
                        f"it drives to matrix.pin or remove {impl!r} from matrix.impl")
    return None


def _needs(impl: str, where: str) -> str:
    needs = IMPLS.get(impl, f"{where}.impl").needs
    return f"it needs {describe(needs)}, which {_who(pins_offering(needs), 'pin')}"


def pairing(pairs: Pairs, left_out: int) -> tuple[str, ...]:
    """What a matrix paired, for --dry-run: each impl with the pins it drives, and the pairs it left
    out (`left_out` cells); nothing when it left nothing out."""
    if not left_out:
        return ()
    pairs = list(dict.fromkeys(pairs))
    cells = f"{left_out} cell{'s' if left_out != 1 else ''}"
    return (f"each impl on the pins it drives: {_grouped(pairs, drives)}",
            f"left out, {cells} of an impl on a pin it cannot drive: "
            f"{_grouped(pairs, lambda i, p: not drives(i, p))}")


def _grouped(pairs: list[tuple[str, str]], keep) -> str:
    """"a, b on x, y; c on z": impls (in the matrix's order) grouped by the pins kept for them."""
    groups: dict[tuple[str, ...], list[str]] = {}
    for impl in dict.fromkeys(i for i, _ in pairs):
        pins = tuple(p for i, p in pairs if i == impl and keep(i, p))
        if pins:
            groups.setdefault(pins, []).append(impl)
    return "; ".join(f"{', '.join(impls)} on {', '.join(pins)}" for pins, impls in groups.items())
