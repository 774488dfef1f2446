"""Where the two ends of a UDP benchmark (udp-echo, pps) meet when one of them is the controller:
the `host` key, read as a name or address, required unless the target is the controller (which
reaches itself), and numeric where the target sends to it (no name resolution there)."""

from __future__ import annotations

import ipaddress
import re

from jitterlab.model.errors import UserError, Where
from jitterlab.model.params import ParamValue
from jitterlab.targets.capabilities import ControllerMachine, Declared

_HOST = re.compile(r"^[A-Za-z0-9_.:%-]{1,253}$")


def parse_host(value: object, where: str) -> ParamValue:
    """The `host` key: "" (none given) or a host name or address."""
    if value == "":
        return ""
    if not isinstance(value, str) or not _HOST.match(value) or value.startswith("-"):
        raise UserError(f'{where}: expected a host name or address like "192.168.1.20", got {value!r}')
    return value


def need_host(host: str, target: Declared, where: Where, needs: str) -> None:
    """UserError "<matrix>.host: <needs>, e.g. ..." when no host is given and the target is not the
    controller: the two ends then meet over the network."""
    if not host and not target.offers(ControllerMachine):
        raise where.key("host").error(f'{needs}, e.g. host = "192.168.1.20"')


def numeric_host(host: str, where: Where, needs: str) -> None:
    """UserError "<matrix>.host: <needs>, got ..." when a given host is no numeric address."""
    if not host:
        return
    try:
        ipaddress.ip_address(host)
    except ValueError:
        raise where.key("host").error(f"{needs}, got {host!r}") from None
