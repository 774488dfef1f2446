"""iperf3 as the `net` load and the `iperf3` benchmark both drive it: peers, the one-off loopback
server, and the quirks of its JSON reports.

iperf3 (3.12) with --json exits 0 even when the test failed (connection refused, server busy):
the report's "error" key is what tells. It prints nothing until a test ends, so a server's
readiness is watched in /proc/net/tcp{,6} (its TCP control port listening).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable

from jitterlab.measure.tools.output import first_json
from jitterlab.model.errors import UserError
from jitterlab.model.records import ParamValue
from jitterlab.targets.base import CommandTimeout, Target
from jitterlab.targets.processes import describe_exit

CONNECT_TIMEOUT_MS = 3000
SERVER_IDLE_TIMEOUT_S = 30  # a one-off server gives up on a client that never came
START_TIMEOUT_S = 10.0
HOST = re.compile(r"^[A-Za-z0-9_.:%-]{1,253}$")  # a name or address, never an option
BITRATE = re.compile(r"^\d{1,15}(\.\d{1,9})?[KMG]?$")
_RATE_FACTOR = {"": 1, "K": 1000, "M": 1000**2, "G": 1000**3}  # iperf3 rates are decimal


def parse_bitrate(value: object, where: str) -> ParamValue:
    """Bits per second (decimal K/M/G like iperf3's -b) -> int; 0 means unlimited."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    if isinstance(value, str) and BITRATE.match(value):
        number, unit = (value[:-1], value[-1]) if value[-1] in _RATE_FACTOR else (value, "")
        return int(float(number) * _RATE_FACTOR[unit])
    raise UserError(f'{where}: expected bits per second like "100M", "1G" or 0 (unlimited), got {value!r}')


def show_bitrate(value: ParamValue) -> str:
    if value == "auto" or not isinstance(value, int) or value == 0:
        return "unlimited" if value == 0 else str(value)
    for unit, factor in (("G", 1000**3), ("M", 1000**2), ("K", 1000)):
        if value % factor == 0:
            return f"{value // factor}{unit}"
    return str(value)


def is_loopback(peer: str) -> bool:
    return peer in ("localhost", "::1") or peer.startswith("127.")


def json_error(text: str) -> str | None:
    """The "error" of an iperf3 JSON report (None: no report, or no error in it)."""
    data = first_json(text)
    error = data.get("error") if isinstance(data, dict) else None
    return str(error) if error else None


def server_argv(peer: str, port: int) -> list[str]:
    """A one-off server bound to the loopback address `peer` stands for, JSON report on exit."""
    bind = "::1" if peer == "::1" else "127.0.0.1"
    return ["iperf3", "-s", "-1", "-B", bind, "-p", str(port), "--json",
            "--idle-timeout", str(SERVER_IDLE_TIMEOUT_S)]


def is_listening(target: Target, port: int) -> bool:
    """A TCP socket on the target listens on `port` (state 0A in /proc/net/tcp{,6})."""
    text = target.run(["cat", "/proc/net/tcp", "/proc/net/tcp6"]).stdout
    want = f":{port:04X} 00000000:0000 0A"
    want6 = f":{port:04X} 00000000000000000000000000000000:0000 0A"
    return want in text or want6 in text


def await_listening(target: Target, port: int, alive_or_fail: Callable[[], None],
                    timeout_s: float = START_TIMEOUT_S) -> bool:
    """Poll until the server listens on `port` (True) or `timeout_s` passes (False);
    `alive_or_fail` raises when the server died meanwhile."""
    deadline = time.monotonic() + timeout_s
    while True:
        alive_or_fail()
        if is_listening(target, port):
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)


def peer_problem(target: Target, peer: str, port: int, udp: bool) -> str | None:
    """Why a one-second test from the target to an iperf3 server at peer:port fails (None: it works)."""
    argv = ["iperf3", "-c", peer, "-p", str(port), *(["-u", "-b", "1M"] if udp else []), "-t", "1",
            "--connect-timeout", str(CONNECT_TIMEOUT_MS), "--json"]
    try:
        done = target.run(argv, timeout_s=20.0)
    except CommandTimeout:
        return "no answer within 20s"
    error = json_error(done.stdout)
    if error:
        return error
    if not done.ok:
        return done.stderr.strip() or describe_exit(done.rc)
    return None
