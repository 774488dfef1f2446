"""The VISA resources this machine has, for the scpi probe's entry in `jitterlab doctor`: what
pyvisa-py finds on USB, GPIB and serial lines, and what they are as a person reads it."""

from __future__ import annotations


def resources() -> list[str]:
    """VISA resources pyvisa-py finds on USB, GPIB and serial lines. LAN discovery broadcasts to the
    network, so it is left out: a LAN instrument is named by its address."""
    try:
        import pyvisa_py.highlevel  # noqa: F401  (registers the session classes)
        from pyvisa_py.sessions import Session
    except ImportError:
        return ["(pyvisa-py is not installed: pip install 'jitterlab[instruments]' to use an instrument)"]
    found: list[str] = []
    for (interface, _), session in Session.iter_valid_session_classes():
        if "tcpip" in interface.name or "prlgx" in interface.name:
            continue
        try:
            found += session.list_resources()
        except Exception:  # a bus whose library is missing (pyusb, gpib-ctypes) lists nothing
            continue
    return sorted(set(found))


def instrument_among(found: list[str]) -> bool:
    """True when one of the resources is an instrument that names itself (on USB or GPIB)."""
    return any(r.startswith(("USB", "GPIB")) for r in found)


def described(found: list[str]) -> str:
    """VISA resources: an instrument on USB or GPIB names itself; a serial line (ASRL) is only a
    port (a console, a modem, or an instrument) until something asks it *IDN?."""
    if not found:
        return ("none on USB, GPIB or serial (instruments on the LAN are not searched: give their "
                "address as probes.scpi.resource)")
    if found[0].startswith("("):  # pyvisa-py missing: the sentence says so
        return found[0]
    ports = [r for r in found if r.startswith("ASRL")]
    instruments = [r for r in found if not r.startswith("ASRL")]
    parts = [f"{', '.join(instruments)} (instrument{'s' if len(instruments) > 1 else ''})"] if instruments \
        else []
    if ports:
        parts.append(f"{', '.join(ports)}: serial port{'s' if len(ports) > 1 else ''}, not identified (a "
                     "console or any device; an instrument there is given as probes.scpi.resource)")
    return "; ".join(parts)
